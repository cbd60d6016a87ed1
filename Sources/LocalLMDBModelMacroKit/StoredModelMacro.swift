import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// What the two model macros share: one reads the declaration and generates its members and its
/// extension, the other differs in its conformance alone.
public protocol ModelMacro: MemberMacro, ExtensionMacro {
    /// The macro's name, which is its conformance's: `StoredModel` or `StoredValue`.
    static var name: String { get }
}

extension ModelMacro {
    /// Whether the type is a record type (its indexes are generated).
    static var isRecord: Bool { name == "StoredModel" }

    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        // Nothing is generated for a declaration with errors: its diagnostics are all the user sees.
        guard let model = ModelDeclaration(declaration, macro: name, in: context), model.diagnostics.isEmpty else { return [] }
        return ModelCodeGenerator(model: model, isRecord: isRecord).members()
    }

    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        // Diagnosed by the member expansion, which reads the same declaration.
        guard let model = ModelDeclaration(declaration, macro: name, in: context, diagnose: false), model.diagnostics.isEmpty else {
            return []
        }
        return [ModelCodeGenerator(model: model, isRecord: isRecord).extension(of: type, conformance: name)]
    }
}

/// `@StoredModel`: a record type's `StoredModel` conformance, its coding generated.
public struct StoredModelMacro: ModelMacro {
    public static let name = "StoredModel"
}

/// `@StoredValue`: a nested value's `StoredValue` conformance, its coding generated.
public struct StoredValueMacro: ModelMacro {
    public static let name = "StoredValue"
}

/// `@Indexed` and `@NotStored`: markers the model macros read; they add nothing themselves.
public struct MarkerMacro: MarkerMacroExpansion {}

/// What a marker macro expands to: nothing.
public protocol MarkerMacroExpansion: PeerMacro {}

extension MarkerMacroExpansion {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `#StoredIndex`: read by `@StoredModel` from the type's body; it adds nothing itself, and is
/// an error anywhere else (where no one would read it).
public struct StoredIndexMacro: StoredIndexMacroExpansion {}

/// What `#StoredIndex` expands to: nothing, and an error outside a `@StoredModel` type.
public protocol StoredIndexMacroExpansion: DeclarationMacro {}

extension StoredIndexMacroExpansion {
    public static func expansion(of node: some FreestandingMacroExpansionSyntax, in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        let inModel = context.lexicalContext.first.map { enclosing in
            enclosing.asProtocol(WithAttributesSyntax.self)?.attributes.contains { element in
                let name = element.as(AttributeSyntax.self)?.attributeName.trimmedDescription ?? ""
                return name == "StoredModel" || name.hasSuffix(".StoredModel")
            } ?? false
        } ?? false
        if !inModel { context.diagnose(Diagnostic(node: Syntax(node), message: ModelDiagnostic.storedIndexOutsideModel)) }
        return []
    }
}

/// The members a model macro adds: the generated coding, the stored properties' table, the
/// indexes `@Indexed` declares, and `CodingKeys` when properties are left out.
struct ModelCodeGenerator {
    let model: ModelDeclaration
    let isRecord: Bool

    /// The members in the type's body: a class's initializer (a designated initializer cannot be
    /// declared in an extension), the indexes, and `CodingKeys`.
    func members() -> [DeclSyntax] {
        var members: [DeclSyntax] = []
        if model.isClass { members.append(initializer()) }
        members += bodyMembers()
        return members
    }

    /// The extension: the conformance, a struct's initializer (in an extension, so the struct
    /// keeps its memberwise initializer), the writes and the stored properties' table.
    func `extension`(of type: some TypeSyntaxProtocol, conformance: String) -> ExtensionDeclSyntax {
        var members: [DeclSyntax] = []
        if !model.isClass { members.append(initializer()) }
        members += extensionMembers(typeName: type.trimmedDescription)
        let body = members.map { $0.formatted().description }.joined(separator: "\n\n")
        return ExtensionDeclSyntax(DeclSyntax("extension \(type.trimmed): LocalLMDB.\(raw: conformance) {\n\(raw: body)\n}"))
            ?? ExtensionDeclSyntax(extendedType: type.trimmed, memberBlock: MemberBlockSyntax(members: []))
    }

    private func initializer() -> DeclSyntax {
        let access = model.access
        var reads = ""
        for property in model.properties where !property.isConstant {
            let key = Self.literal(property.key)
            let member = "self.\(property.spelled)"
            // The type read is inferred from the property's: named here, a type nested beside
            // the model would not be found from the extension a struct's initializer is in.
            if property.isOptional {
                reads += "    \(member) = try object._readIfPresent(\(key))\n"
            } else if let value = property.defaultValue {
                if model.isClass {
                    // A class's initializer is in its body, where the expression means what it
                    // means in the declaration.
                    reads += "    \(member) = try object._read(\(key), default: \(value.trimmedDescription))\n"
                } else {
                    // A struct's initializer has given the property its default already; it is
                    // read into a local first (an autoclosure may not capture `self` yet).
                    let local = "__default_\(property.name)"
                    reads += "    let \(local) = \(member)\n    \(member) = try object._read(\(key), default: \(local))\n"
                }
            } else {
                reads += "    \(member) = try object._read(\(key))\n"
            }
        }
        return """
            /// Restores a value from its stored fields (generated by the macro).
            \(raw: access)init(_storedFields object: LocalLMDB.DataObject) throws {
            \(raw: reads)}
            """
    }

    /// `typeName`: the type as the extension names it (qualified for a nested type, which the
    /// extension's body does not see by its own name).
    private func extensionMembers(typeName: String) -> [DeclSyntax] {
        let access = model.access
        var members: [DeclSyntax] = []
        var writes = ""
        for property in model.properties {
            let key = Self.literal(property.key)
            let method = property.isOptional ? "_writeIfPresent" : "_write"
            writes += "    try object.\(method)(self.\(property.spelled), forKey: \(key))\n"
        }
        members.append("""
            /// Writes the stored fields into `object` (generated by the macro).
            \(raw: access)func _writeFields(to object: LocalLMDB.DataObject) throws {
            \(raw: writes)}
            """)
        let table = model.properties.map { "LocalLMDB.StoredProperty(\\\(typeName).\($0.spelled), key: \(Self.literal($0.key)))" }
        members.append("""
            /// The stored properties: key paths and stored keys (generated by the macro).
            \(raw: access)static var _storedProperties: [LocalLMDB.StoredProperty<\(raw: typeName)>] {
                [\(raw: table.joined(separator: ", "))]
            }
            """)
        return members
    }

    private func bodyMembers() -> [DeclSyntax] {
        let access = model.access
        var members: [DeclSyntax] = []
        let indexes = model.properties.compactMap(index) + model.storedIndexes.map(index)
        if isRecord, !indexes.isEmpty, !model.declaresIndexes {
            // Made once (the store reads them at every write and query), except in a generic
            // type, which cannot hold a static stored property.
            if model.isGeneric {
                members.append("""
                    /// The indexes `@Indexed` and `#StoredIndex` declare (generated by the macro).
                    \(raw: access)static var indexes: [LocalLMDB.Index] {
                        [\(raw: indexes.joined(separator: ", "))]
                    }
                    """)
            } else {
                members.append("""
                    /// The indexes `@Indexed` and `#StoredIndex` declare (generated by the macro).
                    \(raw: access)static let indexes: [LocalLMDB.Index] = [\(raw: indexes.joined(separator: ", "))]
                    """)
            }
        }
        if !model.hasCodingKeys, !model.properties.isEmpty {
            // Synthesized `Codable` then stores what the generated coding stores, and a
            // `CodingKeys` declared elsewhere (in an extension, which the macro cannot see) is
            // a redeclaration the compiler refuses rather than keys the two codings disagree on.
            let cases = model.properties.map { "case \($0.spelled)" }.joined(separator: "\n")
            members.append("""
                enum CodingKeys: String, CodingKey {
                \(raw: cases)
                }
                """)
        }
        return members
    }

    /// The `Index` an `@Indexed` property declares: one entry per element for an array, dates
    /// compared chronologically.
    func index(_ property: ModelProperty) -> String? {
        guard let attribute = property.indexed else { return nil }
        let field = property.isDate ? "LocalLMDB.IndexField.date(\(Self.literal(property.key)))" : Self.literal(property.key)
        var options = ""
        if let unique = ModelDeclaration.argument("unique", of: attribute) { options += ", unique: \(unique)" }
        if property.isArray { return "LocalLMDB.Index.each(\(field)\(options))" }
        if let counted = ModelDeclaration.argument("counted", of: attribute) { options += ", counted: \(counted)" }
        return "LocalLMDB.Index.on(\(field)\(options))"
    }

    /// The `Index` a `#StoredIndex` declares: `Index.on` by key path, each rooted at the model
    /// (by name: `Self` is not allowed in a stored property's initializer of a class).
    func index(_ declaration: MacroExpansionDeclSyntax) -> String {
        var arguments: [String] = []
        for argument in declaration.arguments {
            if let label = argument.label?.text {
                arguments.append("\(label): \(argument.expression.trimmedDescription)")
            } else if let keyPath = argument.expression.as(KeyPathExprSyntax.self), keyPath.root == nil {
                arguments.append("\\\(model.name)\(keyPath.components.trimmedDescription)")
            } else {
                arguments.append(argument.expression.trimmedDescription)
            }
        }
        return "LocalLMDB.Index.on(\(arguments.joined(separator: ", ")))"
    }

    /// `text` as a Swift string literal.
    static func literal(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    escaped += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    escaped.unicodeScalars.append(scalar)
                }
            }
        }
        return escaped + "\""
    }
}
