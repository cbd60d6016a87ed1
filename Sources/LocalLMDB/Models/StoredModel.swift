/// A record type whose stored form the `@StoredModel` macro (product `LocalLMDBModels`)
/// generates: a `Persistable` model coded straight to and from the stored JSON, in exactly the
/// bytes its synthesized `Codable` coding gives, so adding or removing the macro changes no
/// stored record.
///
/// ```swift
/// import LocalLMDBModels
///
/// @StoredModel
/// struct User {
///     @Indexed(unique: true) var email: String
///     @Indexed var age: Int
///     var address: Address
/// }
/// ```
///
/// See <doc:Models>.
public protocol StoredModel: StoredValue, Persistable {}

extension StoredModel {
    /// The class name, then the fields `_writeFields(to:)` writes.
    public func _storedFields() throws -> DataObject {
        let object = DataObject(self)
        try _writeFields(to: object)
        return object
    }

    /// `init(_storedFields:)`.
    public static func _restore(from dataObject: DataObject) throws -> Self {
        try Self(_storedFields: dataObject)
    }
}
