/// Turns model records into the write operations the engine applies, in the caller's
/// isolation, before anything is sent to the writer thread.
enum RecordEncoding {
    /// Encodes `record` for storage. `classes` gathers the stored classes of the record's
    /// object and of every object nested in it, each once, for the write to claim.
    static func encode<T: Persistable>(
        _ record: Record<T>, maxKeySize: Int, classes: inout [StoredClass]
    ) throws(LocalDatabaseError) -> RecordBytes {
        guard !record.id.isEmpty else { throw .emptyID }
        let fields = ReadScratch.current.collectingClasses(into: &classes) { Result { try record.data._storedFields() } }
        let dataObject: DataObject
        switch fields {
        case let .success(success): dataObject = success
        case let .failure(error): throw ModelCoding.encodingError(error, id: record.id)
        }
        let typeName = dataObject.className ?? TypeRegistry.name(of: type(of: record.data))
        let key = StorageKey(record.id, maxKeySize: maxKeySize)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        RecordValue.appendHeader(typeName: typeName, fullID: key.isHashed ? record.id : nil, to: &bytes)
        let headerSize = bytes.count
        var value = try encodedValue(of: dataObject, appendingTo: bytes, id: record.id)
        RecordValue.sealChecksum(in: &value, headerSize: headerSize)
        return RecordBytes(key: key, typeName: typeName, typeKey: StorageKey(typeName, maxKeySize: maxKeySize), value: value)
    }

    /// `dataObject`'s JSON appended to `bytes`.
    /// - Throws: `unencodableValue` when a value in it cannot be stored.
    private static func encodedValue(of dataObject: DataObject, appendingTo bytes: [UInt8], id: String) throws(LocalDatabaseError) -> [UInt8] {
        guard let value = dataObject.encoded(appendingTo: bytes) else {
            let failure = dataObject.encodingFailure ?? (path: "", reason: "it cannot be encoded")
            throw .unencodableValue(id: id, path: failure.path, reason: failure.reason)
        }
        return value
    }

    /// The operation writing `record`.
    static func put<T: Persistable>(_ record: Record<T>, maxKeySize: Int) throws(LocalDatabaseError) -> WriteOperation {
        var classes: [StoredClass] = []
        let encoded = try encode(record, maxKeySize: maxKeySize, classes: &classes)
        return .put([encoded], classes: classes)
    }

    /// The operation writing `records` in order, or nil when there are none.
    static func put<T: Persistable>(contentsOf records: [Record<T>], maxKeySize: Int) throws(LocalDatabaseError) -> WriteOperation? {
        var classes: [StoredClass] = []
        let encoded = try records.map { record throws(LocalDatabaseError) in
            try encode(record, maxKeySize: maxKeySize, classes: &classes)
        }
        return encoded.isEmpty ? nil : .put(encoded, classes: classes)
    }

    /// The operation deleting every record stored as `type` (its current and legacy names).
    static func deleteAll<T: Persistable>(_ type: T.Type, maxKeySize: Int) -> WriteOperation {
        let names = Legacy.allNames(of: TypeRegistry.name(of: type))
        return .deleteTypes(names.map { StorageKey($0, maxKeySize: maxKeySize) }, names: names, owner: TypeRegistry.storedClass(of: type))
    }

    /// The key of the record `id`.
    static func recordKey(_ id: String, maxKeySize: Int) throws(LocalDatabaseError) -> StorageKey {
        guard !id.isEmpty else { throw .emptyID }
        return StorageKey(id, maxKeySize: maxKeySize)
    }

    /// `type`'s current class name and every legacy name of it.
    static func classNames<T: Persistable>(_ type: T.Type) -> [String] {
        Legacy.allNames(of: TypeRegistry.name(of: type))
    }

    /// The index keys of `type`'s current class name and every legacy name of it.
    static func typeKeys<T: Persistable>(_ type: T.Type, maxKeySize: Int) -> [StorageKey] {
        Legacy.allNames(of: TypeRegistry.name(of: type)).map { StorageKey($0, maxKeySize: maxKeySize) }
    }
}

extension DecodedRecord {
    /// The model object: as the stored class when it is `T` or a subclass of it.
    /// - Throws: `typeMismatch` when the stored class is another one, `unresolvableClass` when
    ///   this process cannot find it, `classNameConflict` when `T`'s name belongs to another
    ///   type in the database; the same for any nested object.
    func instantiate<T: Persistable>(as requested: T.Type, context: ReadContext?) throws(LocalDatabaseError) -> T {
        let scratch = ReadScratch.current
        var type = requested
        switch ObjectDecoding.resolve(storedName: typeName, requested: requested, context: context, scratch: scratch) {
        case .requested:
            break
        case let .stored(stored):
            guard let resolved = stored as? T.Type else {
                throw .typeMismatch(id: id ?? "", requested: TypeRegistry.name(of: requested, scratch: scratch), stored: typeName)
            }
            type = resolved
        case let .failure(failure):
            throw failure.error(id: id ?? "")
        }
        return try scratch.reading(in: context) { () throws(LocalDatabaseError) in
            try scratch.restore(type, from: object, id: id ?? "", storedName: typeName)
        }
    }

}
