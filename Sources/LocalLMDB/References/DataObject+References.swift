// References in hand-written (`Storable`) models: stored with `add(key:value:)`, as any
// `Encodable` value is, and read with `reference(_:forKey:legacyKeys:)`.
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

extension DataObject {
    /// Stores `reference` under `key` (`{"$ref": id}`). Writing the model this data object
    /// describes also writes the model the reference holds, as the record `reference.id`.
    /// The same as `add(key:value:)`, which also stores optional references and arrays of them.
    @discardableResult public func add<T: Persistable>(key: String, reference: Reference<T>) -> Self {
        add(key: key, value: reference)
    }

    /// The reference under `key` (or the first of `legacyKeys` present), resolved by the read
    /// restoring this object; nil when the field is missing or is not a reference, and when the
    /// record it names is not stored.
    ///
    /// `get(_:)` reads a reference too (`let owner: Reference<Owner>? = dataObject.get("owner")`),
    /// as a required one: a reference to a missing record makes the read throw
    /// `LocalDatabaseError.missingReference`. So does an array (`[Reference<Owner>]`).
    public func reference<T: Persistable>(_ type: T.Type, forKey key: String, legacyKeys: [String] = []) -> Reference<T>? {
        let scratch = ReadScratch.current
        scratch.decodingOptionalReference = true
        defer { scratch.decodingOptionalReference = false }
        return get(key, legacyKeys: legacyKeys)
    }
}
