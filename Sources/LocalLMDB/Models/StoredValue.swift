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

/// One stored property of a `StoredValue` type: its key path, its stored key, and how an index
/// or a query compares it. Made by the macros' generated code.
public struct StoredProperty<Root>: @unchecked Sendable {
    // Key paths are immutable once made; `PartialKeyPath` is not declared `Sendable`.
    /// The property's key path.
    public let keyPath: PartialKeyPath<Root>
    /// The property's stored key (its coding key).
    public let key: String
    /// The property's value type, when it is a `StoredValue` too: its own properties are fields
    /// below this one (`address.city`).
    let nested: (any StoredValue.Type)?
    /// Whether the property holds dates (an index compares them chronologically).
    let isDate: Bool
    /// Whether the property holds an array (an index takes each element).
    let isArray: Bool

    /// A stored property; for the macros' generated code.
    public init<Value>(_ keyPath: KeyPath<Root, Value>, key: String) {
        self.keyPath = keyPath
        self.key = key
        let shape = FieldShape(Value.self)
        nested = shape.nested
        isDate = shape.isDate
        isArray = shape.isArray
    }
}

/// What a property's type says of its stored field: the date and array kinds, and a nested
/// `StoredValue` type, seen through optionals.
struct FieldShape {
    var nested: (any StoredValue.Type)?
    var isDate = false
    var isArray = false

    init(_ type: Any.Type) {
        var type = type
        while let optional = type as? any OptionalProtocol.Type { type = optional.wrappedType }
        if let array = type as? any ArrayProtocol.Type {
            isArray = true
            type = array.elementType
            while let optional = type as? any OptionalProtocol.Type { type = optional.wrappedType }
        }
        isDate = type == Date.self
        nested = type as? any StoredValue.Type
    }
}

/// `Optional`, seen from code that holds only its metatype.
protocol OptionalProtocol {
    static var wrappedType: Any.Type { get }
}

extension Optional: OptionalProtocol {
    static var wrappedType: Any.Type { Wrapped.self }
}

/// `Array`, seen from code that holds only its metatype.
protocol ArrayProtocol {
    static var elementType: Any.Type { get }
}

extension Array: ArrayProtocol {
    static var elementType: Any.Type { Element.self }
}
