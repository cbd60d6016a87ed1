import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// A type whose values a database stores: a `Storable` model (fields written by hand), or a
/// `Codable` type that declares `Persistable` (fields written by its `Codable` conformance).
///
/// ```swift
/// struct Person: Codable, Persistable {
///     var name: String
///     var age: Int
/// }
/// try await database.write(Record(id: "ada", data: Person(name: "Ada", age: 36)))
/// let ada: Person? = try await database.read(id: "ada")
/// ```
///
/// Every database method takes either kind, and both are stored in one format: a JSON object
/// whose member `"object"` names the class, under the type's short Swift name. A model can move
/// from one kind to the other without migrating its records (see <doc:CodableModels>).
///
/// Conform a type to `Storable` or to `Codable` and `Persistable`; a type that is both `Storable`
/// and `Codable` is stored by its `Storable` methods. The two requirements below are how
/// LocalLMDB reaches either kind; they are implemented for you, and are not for calling.
public protocol Persistable {
    /// The fields to store. Implemented by LocalLMDB for `Storable` and `Codable` types.
    func _storedFields() throws -> DataObject
    /// Restores a value from stored fields. Implemented by LocalLMDB for `Storable` and `Codable` types.
    static func _restore(from dataObject: DataObject) throws -> Self
    /// The secondary indexes of the type's records, which queries (`Query`) use: none by default.
    static var indexes: [Index] { get }
}

extension Persistable {
    /// No secondary indexes.
    public static var indexes: [Index] { [] }
}

extension Storable {
    /// `toDataObject()`.
    public func _storedFields() throws -> DataObject { toDataObject() }
    /// `init(dataObject:)`.
    public static func _restore(from dataObject: DataObject) throws -> Self { self.init(dataObject: dataObject) }
}

extension Persistable where Self: Encodable {
    /// The value's `Encodable` fields, after its class name.
    public func _storedFields() throws -> DataObject { try ModelEncoder.dataObject(encoding: self) }
}

extension Persistable where Self: Decodable {
    /// The value decoded by its `Decodable` conformance.
    public static func _restore(from dataObject: DataObject) throws -> Self { try ModelDecoder.decode(self, from: dataObject) }
}

// A `Storable` type that is also `Codable` is stored by its `Storable` methods, as SwiftLocal did.
extension Storable where Self: Encodable {
    /// `toDataObject()`.
    public func _storedFields() throws -> DataObject { toDataObject() }
}

extension Storable where Self: Decodable {
    /// `init(dataObject:)`.
    public static func _restore(from dataObject: DataObject) throws -> Self { self.init(dataObject: dataObject) }
}
