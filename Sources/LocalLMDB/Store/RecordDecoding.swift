/// Parses stored values into `DecodedRecord`s: the class name from the header and the checked
/// JSON document. Bytes and names only: `RecordEncoding` makes values from models, and
/// `DecodedRecord.instantiate` makes models from stored objects.
enum RecordDecoding {
    /// Parses and checks a stored value; the object reads its JSON in place, so the result is
    /// valid only during the read transaction `value` came from. Errors name the record by the
    /// id in the value or else by its `key`.
    static func decode(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(LocalDatabaseError) -> DecodedRecord {
        try decode(value: value, id: nil) { stored in stored?.id(key: key) ?? displayID(key) }
    }

    /// `decode(key:value:)` for a record read by `id`, which errors name.
    static func decode(value: UnsafeRawBufferPointer, id: String) throws(LocalDatabaseError) -> DecodedRecord {
        try decode(value: value, id: id) { _ in id }
    }

    private static func decode(
        value: UnsafeRawBufferPointer, id: String?, name: (RecordValue?) -> String
    ) throws(LocalDatabaseError) -> DecodedRecord {
        value.prefetch()
        let stored: RecordValue
        do throws(RecordValueError) {
            stored = try RecordValue(parsing: value)
        } catch {
            throw .corruptRecord(id: name(nil), reason: error.description)
        }
        do throws(LocalDatabaseError) {
            let object = try EncodedObject.validating(stored.json, owner: nil)
            return DecodedRecord(id: id, typeName: stored.typeNameString, object: object)
        } catch {
            throw .corruptRecord(id: name(stored), reason: error.description)
        }
    }

    /// A readable name for a record key whose value could not be parsed.
    static func displayID(_ key: UnsafeRawBufferPointer) -> String {
        guard key.isHashedKey else { return String(decoding: key, as: UTF8.self) }
        return "<sha256 " + key.dropFirst().map { String($0, radix: 16) }.joined() + ">"
    }
}

/// A record's checked contents, ready to become a model object.
struct DecodedRecord {
    /// The record's id, when the reader knows it (reads by type do not build id strings).
    let id: String?
    let typeName: String
    let object: EncodedObject

    /// A copy with bytes of its own, to carry out of the read transaction.
    func detached() -> Detached {
        Detached(stored: DecodedRecord(id: id, typeName: typeName, object: object.owned()))
    }

    /// A stored object whose bytes it owns. Sendable because those bytes are never written
    /// after they are copied, and nothing in it points into LMDB's map.
    struct Detached: @unchecked Sendable {
        let stored: DecodedRecord
    }
}
