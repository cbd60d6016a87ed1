import LocalLMDBModelMacroKit
import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that holds LocalLMDB's model macros.
///
/// The compiler finds a macro by its module's name and its type's (`#externalMacro` in
/// `LocalLMDBModels`), so the types it names are declared here, each taking its expansion from
/// `LocalLMDBModelMacroKit`, where the expansion tests reach the same code under the same names.
@main
struct LocalLMDBModelMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [StoredModelMacro.self, StoredValueMacro.self, MarkerMacro.self, StoredIndexMacro.self]
}

/// `@StoredModel` (`LocalLMDBModelMacroKit.StoredModelMacro`).
public struct StoredModelMacro: ModelMacro {
    public static let name = LocalLMDBModelMacroKit.StoredModelMacro.name
}

/// `@StoredValue` (`LocalLMDBModelMacroKit.StoredValueMacro`).
public struct StoredValueMacro: ModelMacro {
    public static let name = LocalLMDBModelMacroKit.StoredValueMacro.name
}

/// `@Indexed` and `@NotStored` (`LocalLMDBModelMacroKit.MarkerMacro`).
public struct MarkerMacro: MarkerMacroExpansion {}

/// `#StoredIndex` (`LocalLMDBModelMacroKit.StoredIndexMacro`).
public struct StoredIndexMacro: StoredIndexMacroExpansion {}
