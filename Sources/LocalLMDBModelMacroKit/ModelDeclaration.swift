import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// A type declaration a model macro is attached to, read for what the generated coding needs:
/// its stored properties in declaration order, their stored keys (`CodingKeys` honoured), and
/// the diagnostics for what cannot be stored.
struct ModelDeclaration {
    let name: String
    /// `public `, `package ` or nothing: the access of the generated members.
    let access: String
    let isClass: Bool
    /// Whether it has generic parameters (a static stored property cannot be declared in it).
    let isGeneric: Bool
    var properties: [ModelProperty] = []
    /// Whether the type declares its own `CodingKeys`.
    var hasCodingKeys = false
    /// Whether it declares `static var indexes` itself.
    var declaresIndexes = false
    /// The `#StoredIndex` declarations in its body.
    var storedIndexes: [MacroExpansionDeclSyntax] = []
    /// Names of properties left out of the stored form (`@NotStored`, or missing from `CodingKeys`).
    var notStored: [String] = []
    var diagnostics: [Diagnostic] = []

    init?(_ declaration: some DeclGroupSyntax, macro: String, in context: some MacroExpansionContext, diagnose: Bool = true) {
        if let structure = declaration.as(StructDeclSyntax.self) {
            name = structure.name.text
            isClass = false
            isGeneric = structure.genericParameterClause != nil
        } else if let type = declaration.as(ClassDeclSyntax.self) {
            name = type.name.text
            isClass = true
            isGeneric = type.genericParameterClause != nil
            if !type.modifiers.contains(where: { $0.name.tokenKind == .keyword(.final) }) {
                diagnostics.append(Diagnostic(
                    node: Syntax(type.classKeyword), message: ModelDiagnostic.nonFinalClass, fixIt: Self.finalFixIt(type)))
            }
            // A superclass is named first, but so may a protocol be: only `NSObject` is known
            // to be a class here (any other superclass fails to compile: its `init(from:)` is
            // not the generated code's).
            if let inherited = type.inheritanceClause?.inheritedTypes.first, inherited.type.trimmedDescription == "NSObject" {
                diagnostics.append(Diagnostic(node: Syntax(inherited), message: ModelDiagnostic.subclass))
            }
        } else {
            if diagnose { context.diagnose(Diagnostic(node: Syntax(declaration), message: ModelDiagnostic.notAStructOrFinalClass(macro))) }
            return nil
        }
        let modifiers = declaration.modifiers.map(\.name.text)
        access = modifiers.contains("public") || modifiers.contains("open") ? "public " : modifiers.contains("package") ? "package " : ""
        readMembers(declaration.memberBlock)
        if diagnose { for diagnostic in diagnostics { context.diagnose(diagnostic) } }
    }

    private mutating func readMembers(_ members: MemberBlockSyntax) {
        var codingKeys: [(name: String, key: String)]?
        for member in members.members {
            if let enumeration = member.decl.as(EnumDeclSyntax.self), enumeration.name.text == "CodingKeys" {
                codingKeys = Self.codingKeys(enumeration)
                hasCodingKeys = true
            }
            if let variable = member.decl.as(VariableDeclSyntax.self) {
                readVariable(variable)
            }
            if let expansion = member.decl.as(MacroExpansionDeclSyntax.self), expansion.macroName.text == "StoredIndex" {
                storedIndexes.append(expansion)
            }
            if let function = member.decl.as(FunctionDeclSyntax.self), function.name.text == "encode",
               function.signature.parameterClause.parameters.first?.firstName.text == "to" {
                diagnostics.append(Diagnostic(node: Syntax(function.name), message: ModelDiagnostic.ownCoding))
            }
            if let initializer = member.decl.as(InitializerDeclSyntax.self),
               initializer.signature.parameterClause.parameters.first?.firstName.text == "from" {
                diagnostics.append(Diagnostic(node: Syntax(initializer.initKeyword), message: ModelDiagnostic.ownCoding))
            }
            // Stored properties the macro would not see whatever the build configuration.
            if let conditional = member.decl.as(IfConfigDeclSyntax.self), conditional.description.contains("var ") || conditional.description.contains("let ") {
                diagnostics.append(Diagnostic(node: Syntax(conditional), message: ModelDiagnostic.conditionalMembers))
            }
        }
        if let codingKeys {
            // Synthesized `Codable` writes the members in the order of `CodingKeys`' cases.
            var kept: [ModelProperty] = []
            for (name, key) in codingKeys {
                guard var property = properties.first(where: { $0.name == name }) else {
                    if notStored.contains(name) {
                        diagnostics.append(Diagnostic(node: Syntax(members), message: ModelDiagnostic.notStoredButCoded(name)))
                    }
                    continue
                }
                property.key = key
                kept.append(property)
            }
            for property in properties where !codingKeys.contains(where: { $0.name == property.name }) {
                notStored.append(property.name)
                if property.defaultValue == nil, !property.isOptional {
                    diagnostics.append(Diagnostic(node: property.node, message: ModelDiagnostic.notStoredNeedsDefault(property.name)))
                }
            }
            properties = kept
        }
        var seen: [String: String] = [:]
        for property in properties {
            if let first = seen[property.key] {
                diagnostics.append(Diagnostic(node: property.node, message: ModelDiagnostic.duplicateKey(property.key, first, property.name)))
            }
            seen[property.key] = property.name
        }
        if declaresIndexes, let indexed = properties.first(where: { $0.indexed != nil })?.indexed {
            diagnostics.append(Diagnostic(node: Syntax(indexed), message: ModelDiagnostic.indexesTwice))
        }
        if declaresIndexes, let first = storedIndexes.first {
            diagnostics.append(Diagnostic(node: Syntax(first), message: ModelDiagnostic.indexesTwice))
        }
        // A key path's first property must be stored (a nested one's are checked when the
        // index is made: the nested type is not visible here).
        for expansion in storedIndexes {
            for argument in expansion.arguments where argument.label == nil {
                guard let keyPath = argument.expression.as(KeyPathExprSyntax.self),
                      let first = keyPath.components.first?.component.as(KeyPathPropertyComponentSyntax.self)?.declName.baseName.text
                else { continue }
                let name = first.trimmingCharacters(in: "`")
                if !properties.contains(where: { $0.name == name }) {
                    diagnostics.append(Diagnostic(node: Syntax(argument), message: ModelDiagnostic.storedIndexNotStored(name)))
                }
            }
        }
    }

    /// The cases of a `CodingKeys` enum: each case's name and stored key (its raw value, when a
    /// string literal gives one).
    static func codingKeys(_ enumeration: EnumDeclSyntax) -> [(name: String, key: String)] {
        var keys: [(name: String, key: String)] = []
        for member in enumeration.memberBlock.members {
            guard let cases = member.decl.as(EnumCaseDeclSyntax.self) else { continue }
            for element in cases.elements {
                let name = element.name.text.trimmingCharacters(in: "`")
                if let literal = element.rawValue?.value.as(StringLiteralExprSyntax.self), let text = literal.representedLiteralValue {
                    keys.append((name, text))
                } else {
                    keys.append((name, name))
                }
            }
        }
        return keys
    }

    private static func attribute(_ name: String, in attributes: AttributeListSyntax) -> AttributeSyntax? {
        for element in attributes {
            if let attribute = element.as(AttributeSyntax.self),
               attribute.attributeName.trimmedDescription == name || attribute.attributeName.trimmedDescription.hasSuffix(".\(name)") {
                return attribute
            }
        }
        return nil
    }

    private mutating func readVariable(_ variable: VariableDeclSyntax) {
        let modifiers = variable.modifiers.map(\.name.text)
        if modifiers.contains("static") || modifiers.contains("class") {
            if variable.bindings.contains(where: { $0.pattern.trimmedDescription == "indexes" }) { declaresIndexes = true }
            return
        }
        let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
        let notStoredAttribute = Self.attribute("NotStored", in: variable.attributes)
        let indexed = Self.attribute("Indexed", in: variable.attributes)
        // Any other attribute on a stored property is a property wrapper (its `Codable` form is
        // the wrapper's, which the generated coding does not write) or unknown to the macro.
        if notStoredAttribute == nil, let other = variable.attributes.compactMap({ $0.as(AttributeSyntax.self) }).first(where: {
            let name = $0.attributeName.trimmedDescription
            return !["Indexed", "NotStored", "MainActor", "available", "objc", "nonobjc", "preconcurrency"].contains(name)
                && !name.hasSuffix(".Indexed") && !name.hasSuffix(".NotStored")
        }), !variable.bindings.allSatisfy({ $0.accessorBlock.map(Self.isComputed) ?? false }) {
            diagnostics.append(Diagnostic(
                node: Syntax(other), message: ModelDiagnostic.wrapper(other.attributeName.trimmedDescription), fixIt: Self.notStoredFixIt(variable)))
            return
        }
        // A type annotation written once for several names (`var a, b: Int`) applies to each
        // name before it that has no initializer.
        var pendingType: TypeSyntax?
        var read: [ModelProperty] = []
        for binding in variable.bindings.reversed() {
            guard let identifier = binding.pattern.as(IdentifierPatternSyntax.self) else {
                diagnostics.append(Diagnostic(node: Syntax(binding.pattern), message: ModelDiagnostic.pattern))
                continue
            }
            let name = identifier.identifier.text.trimmingCharacters(in: "`")
            if let annotation = binding.typeAnnotation?.type {
                pendingType = annotation
            } else if binding.initializer != nil {
                pendingType = nil
            }
            if let accessors = binding.accessorBlock, Self.isComputed(accessors) {
                if indexed != nil { diagnostics.append(Diagnostic(node: Syntax(binding), message: ModelDiagnostic.indexedNotStored(name))) }
                continue
            }
            if notStoredAttribute != nil {
                notStored.append(name)
                if binding.initializer == nil, !(pendingType.map(ModelProperty.isOptional) ?? false) {
                    diagnostics.append(Diagnostic(node: Syntax(binding), message: ModelDiagnostic.notStoredNeedsDefault(name)))
                }
                if indexed != nil { diagnostics.append(Diagnostic(node: Syntax(binding), message: ModelDiagnostic.indexedNotStored(name))) }
                continue
            }
            if modifiers.contains("lazy") {
                diagnostics.append(Diagnostic(node: Syntax(variable), message: ModelDiagnostic.lazy(name), fixIt: Self.notStoredFixIt(variable)))
                continue
            }
            guard let type = pendingType ?? binding.initializer.flatMap({ Self.literalType($0.value) }) else {
                diagnostics.append(Diagnostic(node: Syntax(binding), message: ModelDiagnostic.noType(name)))
                continue
            }
            if Self.isUnstorable(type) {
                diagnostics.append(Diagnostic(
                    node: Syntax(type), message: ModelDiagnostic.unstorableType(name, type.trimmedDescription),
                    fixIt: Self.notStoredFixIt(variable)))
                continue
            }
            if let indexed, ModelProperty.isOptional(type) == false, Self.isArrayType(type), Self.argument("counted", of: indexed) == "true" {
                diagnostics.append(Diagnostic(node: Syntax(indexed), message: ModelDiagnostic.multiEntryCounted))
            }
            read.append(ModelProperty(
                name: name, spelled: identifier.identifier.text, type: type.trimmed, key: name, isOptional: ModelProperty.isOptional(type),
                defaultValue: binding.initializer?.value.trimmed, isConstant: isLet && binding.initializer != nil,
                indexed: indexed, node: Syntax(binding)))
        }
        properties += read.reversed()
    }

    static func isArrayType(_ type: TypeSyntax) -> Bool {
        type.is(ArrayTypeSyntax.self) || type.as(IdentifierTypeSyntax.self)?.name.text == "Array"
    }

    /// The value of an attribute's labelled argument, as written.
    static func argument(_ label: String, of attribute: AttributeSyntax) -> String? {
        guard case let .argumentList(arguments) = attribute.arguments else { return nil }
        return arguments.first(where: { $0.label?.text == label })?.expression.trimmedDescription
    }

    /// A fix-it that makes `type` final: `final` after its modifiers, or before `class` (taking
    /// the keyword's leading trivia, the line break after the attributes) when it has none.
    static func finalFixIt(_ type: ClassDeclSyntax) -> FixIt {
        let message = ModelFixIt(message: "make the class final")
        if type.modifiers.isEmpty {
            let modifiers = DeclModifierListSyntax([
                DeclModifierSyntax(name: .keyword(.final, leadingTrivia: type.classKeyword.leadingTrivia, trailingTrivia: .space)),
            ])
            return FixIt(message: message, changes: [
                .replace(oldNode: Syntax(type.modifiers), newNode: Syntax(modifiers)),
                .replace(oldNode: Syntax(type.classKeyword), newNode: Syntax(type.classKeyword.with(\.leadingTrivia, []))),
            ])
        }
        var modifiers = type.modifiers
        modifiers.append(DeclModifierSyntax(name: .keyword(.final), trailingTrivia: .space))
        return FixIt(message: message, changes: [.replace(oldNode: Syntax(type.modifiers), newNode: Syntax(modifiers))])
    }

    /// A fix-it that marks `variable` `@NotStored`.
    static func notStoredFixIt(_ variable: VariableDeclSyntax) -> FixIt {
        var attributes = variable.attributes
        attributes.append(.attribute(AttributeSyntax(
            attributeName: IdentifierTypeSyntax(name: .identifier("NotStored")), trailingTrivia: .space)))
        // The declaration's leading trivia (its line break and indentation) goes before the
        // attribute, now its first token.
        var fixed = variable.with(\.leadingTrivia, []).with(\.attributes, attributes)
        fixed.leadingTrivia = variable.leadingTrivia
        return FixIt(message: ModelFixIt(message: "leave it out of the stored form with @NotStored"), changes: [
            .replace(oldNode: Syntax(variable), newNode: Syntax(fixed)),
        ])
    }

    /// Whether an accessor block makes a computed property (observers alone keep it stored).
    static func isComputed(_ accessors: AccessorBlockSyntax) -> Bool {
        switch accessors.accessors {
        case .getter: return true
        case let .accessors(list):
            return list.contains { ![.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind) }
        }
    }

    /// The type of a literal default value, for a property declared without a type.
    static func literalType(_ value: ExprSyntax) -> TypeSyntax? {
        if value.is(StringLiteralExprSyntax.self) { return "String" }
        if value.is(IntegerLiteralExprSyntax.self) { return "Int" }
        if value.is(FloatLiteralExprSyntax.self) { return "Double" }
        if value.is(BooleanLiteralExprSyntax.self) { return "Bool" }
        if let prefix = value.as(PrefixOperatorExprSyntax.self), prefix.operator.text == "-" {
            return literalType(prefix.expression)
        }
        return nil
    }

    /// Types with no stored form: functions, tuples, metatypes, `Any`, existentials.
    static func isUnstorable(_ type: TypeSyntax) -> Bool {
        if let optional = type.as(OptionalTypeSyntax.self) { return isUnstorable(optional.wrappedType) }
        if let optional = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return isUnstorable(optional.wrappedType) }
        if let array = type.as(ArrayTypeSyntax.self) { return isUnstorable(array.element) }
        if let dictionary = type.as(DictionaryTypeSyntax.self) { return isUnstorable(dictionary.key) || isUnstorable(dictionary.value) }
        if let attributed = type.as(AttributedTypeSyntax.self) { return isUnstorable(attributed.baseType) }
        if type.is(FunctionTypeSyntax.self) || type.is(MetatypeTypeSyntax.self) || type.is(CompositionTypeSyntax.self) { return true }
        if let tuple = type.as(TupleTypeSyntax.self) {
            // `(Int)` is `Int`.
            if tuple.elements.count == 1, let only = tuple.elements.first, only.firstName == nil { return isUnstorable(only.type) }
            return true
        }
        if type.is(SomeOrAnyTypeSyntax.self) { return true }
        if let identifier = type.as(IdentifierTypeSyntax.self), ["Any", "AnyObject"].contains(identifier.name.text) { return true }
        return false
    }
}

extension String {
    func trimmingCharacters(in character: Character) -> String {
        var text = Substring(self)
        while text.first == character { text = text.dropFirst() }
        while text.last == character { text = text.dropLast() }
        return String(text)
    }
}
