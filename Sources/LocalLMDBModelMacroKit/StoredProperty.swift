import SwiftSyntax

/// A stored property of a model as the macros see it in the source: what the generated coding
/// writes and reads.
struct ModelProperty {
    /// The property's name.
    let name: String
    /// The name as written in the source (in backticks when it is a keyword), for generated code.
    let spelled: String
    /// Its declared type, as written, or the type of its literal default value.
    let type: TypeSyntax
    /// Its stored key: the name, or the raw value of its `CodingKeys` case.
    var key: String
    /// Whether its type is written as an optional (`T?`, `T!`, `Optional<T>`): a missing field is
    /// nil, and nil is not stored, as `encodeIfPresent` and `decodeIfPresent` do.
    let isOptional: Bool
    /// The declared default value, if any.
    let defaultValue: ExprSyntax?
    /// A `let` with a value: written, not read (as synthesized `Codable` does).
    let isConstant: Bool
    /// Its `@Indexed` attribute, if any.
    let indexed: AttributeSyntax?
    /// The declaration, for diagnostics.
    let node: Syntax

    /// The type without its optional: `Int` for `Int?`.
    var wrappedType: TypeSyntax {
        if let optional = type.as(OptionalTypeSyntax.self) { return optional.wrappedType }
        if let optional = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return optional.wrappedType }
        if let optional = Self.optionalArgument(type) { return optional }
        return type
    }

    /// `T` of `Optional<T>` or `Swift.Optional<T>`.
    static func optionalArgument(_ type: TypeSyntax) -> TypeSyntax? {
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.name.text == "Optional",
           let argument = identifier.genericArgumentClause?.arguments.first {
            return TypeSyntax(argument.argument)
        }
        if let member = type.as(MemberTypeSyntax.self), member.baseType.trimmedDescription == "Swift", member.name.text == "Optional",
           let argument = member.genericArgumentClause?.arguments.first {
            return TypeSyntax(argument.argument)
        }
        return nil
    }

    static func isOptional(_ type: TypeSyntax) -> Bool {
        type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) || optionalArgument(type) != nil
    }

    /// Whether the (unwrapped) type is an array, written `[T]` or `Array<T>`.
    var isArray: Bool {
        let type = wrappedType
        if type.is(ArrayTypeSyntax.self) { return true }
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.name.text == "Array" { return true }
        return false
    }

    /// Whether the (unwrapped) type, or an array's element, is written `Date` or `Foundation.Date`.
    var isDate: Bool {
        var type = wrappedType
        if let array = type.as(ArrayTypeSyntax.self) { type = array.element }
        let text = type.trimmedDescription
        return text == "Date" || text == "Foundation.Date"
    }
}
