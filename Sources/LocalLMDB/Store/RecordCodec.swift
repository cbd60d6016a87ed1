/// Converts between `Record`s and stored bytes.
///
/// Encoding happens in the caller's isolation before anything is sent to the writer thread;
/// decoding parses stored bytes into `StoredObject`s inside a read transaction, and the
/// caller instantiates model objects from them afterwards.
enum RecordCodec {
    /// Encodes `record` for storage. `classes` gathers the stored classes of the record's
    /// object and of every object nested in it, each once, for the write to claim.
    static func encode<T: Storable>(
        _ record: Record<T>, maxKeySize: Int, classes: inout [StoredClass]
    ) throws(LocalDatabaseError) -> EncodedRecord {
        guard !record.id.isEmpty else { throw .emptyID }
        let dataObject = ReadScratch.current.collectingClasses(into: &classes) { record.data.toDataObject() }
        let typeName = dataObject.className ?? TypeRegistry.name(of: type(of: record.data))
        let key = StorageKey(record.id, maxKeySize: maxKeySize)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        StoredValue.appendHeader(typeName: typeName, fullID: key.isHashed ? record.id : nil, to: &bytes)
        return EncodedRecord(
            key: key, typeName: typeName,
            typeKey: StorageKey(typeName, maxKeySize: maxKeySize),
            value: dataObject.encoded(appendingTo: bytes))
    }

    /// Parses and checks a stored value; the object reads its JSON in place, so the result is
    /// valid only during the read transaction `value` came from. Errors name the record by the
    /// id in the value or else by its `key`.
    static func decode(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(LocalDatabaseError) -> StoredObject {
        try decode(value: value, id: nil) { stored in stored?.id(key: key) ?? displayID(key) }
    }

    /// `decode(key:value:)` for a record read by `id`, which errors name.
    static func decode(value: UnsafeRawBufferPointer, id: String) throws(LocalDatabaseError) -> StoredObject {
        try decode(value: value, id: id) { _ in id }
    }

    private static func decode(
        value: UnsafeRawBufferPointer, id: String?, name: (StoredValue?) -> String
    ) throws(LocalDatabaseError) -> StoredObject {
        value.prefetch()
        let stored: StoredValue
        do throws(StoredValueError) {
            stored = try StoredValue(parsing: value)
        } catch {
            throw .corruptRecord(id: name(nil), reason: error.description)
        }
        do throws(LocalDatabaseError) {
            let object = try EncodedObject.validating(stored.json, owner: nil)
            return StoredObject(id: id, typeName: stored.typeNameString, object: object)
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
struct StoredObject {
    /// The record's id, when the reader knows it (reads by type do not build id strings).
    let id: String?
    let typeName: String
    let object: EncodedObject

    /// The model object: as the stored class when it is `T` or a subclass of it.
    /// - Throws: `typeMismatch` when the stored class is another one, `unresolvableClass` when
    ///   this process cannot find it, `classNameConflict` when `T`'s name belongs to another
    ///   type in the database; the same for any nested object.
    func instantiate<T: Storable>(as requested: T.Type, context: ReadContext?) throws(LocalDatabaseError) -> T {
        let scratch = ReadScratch.current
        let type: T.Type
        switch ObjectDecoding.resolve(storedName: typeName, as: requested, context: context) {
        case let .success(resolved): type = resolved
        case let .failure(failure): throw failure.error(id: id ?? "")
        }
        return try scratch.reading(in: context) { () throws(LocalDatabaseError) in
            let object = scratch.restore(type, from: object)
            try scratch.throwFailure(id: id)
            return object
        }
    }

    /// A copy with bytes of its own, to carry out of the read transaction.
    func detached() -> Detached {
        Detached(stored: StoredObject(id: id, typeName: typeName, object: object.owned()))
    }

    /// A stored object whose bytes it owns. Sendable because those bytes are never written
    /// after they are copied, and nothing in it points into LMDB's map.
    struct Detached: @unchecked Sendable {
        let stored: StoredObject
    }
}
