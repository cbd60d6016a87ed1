import Foundation

/// A value whose stored form the `@StoredValue` or `@StoredModel` macro (product
/// `LocalLMDBModels`) generates: its fields written to and read from the stored JSON directly,
/// with no `Encoder` or `Decoder`, in exactly the bytes its synthesized `Codable` coding gives.
///
/// Declare it with the macro rather than by hand:
///
/// ```swift
/// import LocalLMDBModels
///
/// @StoredValue
/// struct Address {
///     var street: String
///     var city: String
/// }
/// ```
///
/// A `StoredValue` nested in a model is stored as a JSON object of its fields, as the `Codable`
/// coding stores it; a `StoredModel` (a record type) is stored with its class name besides. See
/// <doc:Models>.
public protocol StoredValue: Codable {
    /// Writes the value's fields into `object`, in declaration order (generated).
    func _writeFields(to object: DataObject) throws
    /// Restores a value from its stored fields (generated).
    /// - Throws: `DecodingError` naming the field that is missing or of another kind.
    init(_storedFields object: DataObject) throws
    /// The stored properties: each one's key path, and its stored key (generated).
    static var _storedProperties: [StoredProperty<Self>] { get }
}

/// One stored property of a `StoredValue` type: its key path, its stored key, and the nested
/// `StoredValue` type whose properties are fields below it. Made by the macros' generated code.
public struct StoredProperty<Root>: @unchecked Sendable {
    // Key paths are immutable once made; `PartialKeyPath` is not declared `Sendable`.
    /// The property's key path.
    public let keyPath: PartialKeyPath<Root>
    /// The property's stored key (its coding key).
    public let key: String
    /// The property's value type, when it is a `StoredValue` too: its own properties are fields
    /// below this one (`address.city`).
    let nested: (any StoredValue.Type)?

    /// The `StoredValue` type a property of type `type` holds, seen through optionals (nil when
    /// it holds none). Arrays are not followed: a key path cannot name their elements.
    static func nestedValue(_ type: Any.Type) -> (any StoredValue.Type)? {
        var type = type
        while let optional = type as? any OptionalProtocol.Type { type = optional.wrappedType }
        return type as? any StoredValue.Type
    }

    /// A stored property; for the macros' generated code.
    public init<Value>(_ keyPath: KeyPath<Root, Value>, key: String) {
        self.keyPath = keyPath
        self.key = key
        nested = StoredProperty.nestedValue(Value.self)
    }
}

/// `Optional`, seen from code that holds only its metatype, or holds it as a value of a generic type.
protocol OptionalProtocol {
    static var wrappedType: Any.Type { get }
    /// The wrapped value, if any.
    var wrappedValue: Any? { get }
}

extension Optional: OptionalProtocol {
    static var wrappedType: Any.Type { Wrapped.self }
    var wrappedValue: Any? { self.map { $0 as Any } }
}
