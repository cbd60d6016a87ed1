import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that holds LocalLMDB's model macros.
@main
struct LocalLMDBModelMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [StoredModelMacro.self, StoredValueMacro.self, MarkerMacro.self, StoredIndexMacro.self]
}
