import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Turns model records into the write operations the engine applies, in the caller's
/// isolation, before anything is sent to the writer thread.
enum RecordEncoding {
    /// Encodes `record` for storage, appending it to `batch`. `classes` gathers the stored
    /// classes of the record's object and of every object nested in it, each once, for the
    /// write to claim. `header` is scratch space, reused from record to record. With
    /// `encryption`, the value is sealed (`StoreEncryption.sealedValue`).
    ///
    /// The models the record's references hold (`Reference`) are appended after it, and theirs
    /// after them, each id once per `written`: so a cycle ends, and a model two records refer
    /// to is written once. `written` holds the ids of the models this write has stored for
    /// references, and of the records given to it that held them. `givenEarlier` says whether
    /// the write was given a record of that id before this one (in any part of a batch): a
    /// model a reference holds never replaces a record the write was given, whatever the order
    /// (a record given after it replaces it, as any later record of a batch does).
    /// `learnsMembers` (for a database that synchronizes): each record carries what its model
    /// reads (`MemberKnowledge`), so the write keeps the stored fields the model does not know.
    static func encode<T: Persistable>(
        _ record: Record<T>, into batch: inout RecordBatch, header: inout [UInt8], maxKeySize: Int, encryption: StoreEncryption?,
        classes: inout ClassList, written: inout Set<ExactID>, learnsMembers: Bool = false, givenEarlier: (String) -> Bool = { _ in false }
    ) throws(DatabaseError) {
        let scratch = EncodeScratch.current
        let start = scratch.referencedCount
        // What a failed encode noted is dropped with it.
        defer { _ = scratch.takeReferences(from: start) }
        try encode(record, into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption, classes: &classes, learnsMembers: learnsMembers)
        // A model stored earlier for a reference is replaced by this record: the later one.
        guard scratch.referencedCount > start else { return }
        written.insert(ExactID(record.id))
        var waiting = Array(scratch.takeReferences(from: start))
        var next = 0
        while next < waiting.count {
            let (id, model) = waiting[next]
            next += 1
            guard !givenEarlier(id), written.insert(ExactID(id)).inserted else { continue }
            let mark = scratch.referencedCount
            try encodeReferenced(
                model, id: id, into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption, classes: &classes, learnsMembers: learnsMembers)
            waiting.append(contentsOf: scratch.takeReferences(from: mark))
        }
    }

    /// `encode` for a model a reference holds, as the record `id`.
    private static func encodeReferenced<M: Persistable>(
        _ model: M, id: String, into batch: inout RecordBatch, header: inout [UInt8], maxKeySize: Int, encryption: StoreEncryption?,
        classes: inout ClassList, learnsMembers: Bool
    ) throws(DatabaseError) {
        try encode(
            Record(id: id, data: model), into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption, classes: &classes,
            learnsMembers: learnsMembers)
    }

    /// Encodes `record` alone (its references' models are `encode(_:into:…written:)`'s).
    private static func encode<T: Persistable>(
        _ record: Record<T>, into batch: inout RecordBatch, header: inout [UInt8], maxKeySize: Int, encryption: StoreEncryption?,
        classes: inout ClassList, learnsMembers: Bool
    ) throws(DatabaseError) {
        guard !record.id.isEmpty else { throw .emptyID }
        let scratch = EncodeScratch.current
        let fields = scratch.collectingClasses(into: &classes) { Result { try record.data._storedFields() } }
        let dataObject: DataObject
        switch fields {
        case let .success(success): dataObject = success
        case let .failure(error): throw ModelCoding.encodingError(error, id: record.id)
        }
        let className = dataObject.className ?? TypeRegistry.name(of: type(of: record.data))
        let known = learnsMembers ? MemberKnowledge.members(of: type(of: record.data), fields: dataObject, scratch: scratch) : nil
        let key = StorageKey(record.id, maxKeySize: maxKeySize)
        let fullID = key.isHashed ? record.id : nil
        header.removeAll(keepingCapacity: true)
        RecordValue.appendHeader(className: className, fullID: fullID, to: &header)
        let headerSize = header.count
        var sealingFailure: DatabaseError?
        let encoded = dataObject.withEncoded(prefix: header) { value in
            guard let value else { return false }
            do throws(DatabaseError) {
                try append(value, headerSize: headerSize, key: key, id: record.id, fullID: fullID, className: className,
                           maxKeySize: maxKeySize, encryption: encryption, known: known, to: &batch)
            } catch {
                sealingFailure = error
            }
            return true
        }
        if let sealingFailure { throw sealingFailure }
        guard encoded else {
            // Nothing found on a second look: the write ran out of stack (see `StackGuard`).
            let failure = dataObject.encodingFailure ?? (path: "", reason: StackGuard.refusal)
            throw .unencodableValue(id: record.id, path: failure.path, reason: failure.reason)
        }
    }

    /// Appends to `batch` the stored value of the record `id` whose header (`headerSize` bytes,
    /// room for the checksum included) and document `value` holds: with its checksum, or sealed
    /// with `encryption`. The one place a value's final form is made from its document.
    /// `known`: the members the model that wrote it reads (nil for a whole document).
    private static func append(
        _ value: UnsafeMutableRawBufferPointer, headerSize: Int, key: StorageKey, id: String, fullID: String?, className: String,
        maxKeySize: Int, encryption: StoreEncryption?, known: KnownMembers? = nil, to batch: inout RecordBatch
    ) throws(DatabaseError) {
        guard let encryption else {
            RecordValue.sealChecksum(in: value, headerSize: headerSize)
            batch.append(
                key: key, fullID: fullID, className: className, maxKeySize: maxKeySize, value: UnsafeRawBufferPointer(value), known: known)
            return
        }
        let sealed = try className.withUTF8Bytes { classBytes throws(DatabaseError) in
            try id.withUTF8Bytes { idBytes throws(DatabaseError) in
                try encryption.sealedValue(
                    json: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(value)[headerSize...]),
                    className: classBytes, fullID: fullID == nil ? UnsafeRawBufferPointer(start: nil, count: 0) : idBytes, id: idBytes)
            }
        }
        sealed.withBytes { batch.append(key: key, fullID: fullID, className: className, maxKeySize: maxKeySize, value: $0) }
    }

    /// Encodes the record `id` of class `className` whose document is `document` (already
    /// checked: strict JSON, an object, no key repeated), appending it to `batch`: an imported
    /// record, stored with its document's bytes as they are.
    static func encode(
        id: String, className: String, document: UnsafeRawBufferPointer, into batch: inout RecordBatch, header: inout [UInt8],
        maxKeySize: Int, encryption: StoreEncryption?
    ) throws(DatabaseError) {
        let key = StorageKey(id, maxKeySize: maxKeySize)
        let fullID = key.isHashed ? id : nil
        header.removeAll(keepingCapacity: true)
        RecordValue.appendHeader(className: className, fullID: fullID, to: &header)
        let headerSize = header.count
        header.append(contentsOf: document)
        defer { header.removeSubrange(headerSize...) }
        let result: Result<Void, DatabaseError> = header.withUnsafeMutableBytes { value in
            Result { () throws(DatabaseError) in
                try append(value, headerSize: headerSize, key: key, id: id, fullID: fullID, className: className,
                           maxKeySize: maxKeySize, encryption: encryption, to: &batch)
            }
        }
        try result.get()
    }

    /// The operation writing `record` (`learnsMembers`: see `encode`).
    static func put<T: Persistable>(
        _ record: Record<T>, maxKeySize: Int, encryption: StoreEncryption?, learnsMembers: Bool = false
    ) throws(DatabaseError) -> WriteOperation {
        var classes = ClassList()
        var batch = RecordBatch()
        var header: [UInt8] = []
        var written: Set<ExactID> = []
        try encode(
            record, into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption, classes: &classes, written: &written,
            learnsMembers: learnsMembers)
        return .put(batch, classes: classes.classes)
    }

    /// `parts` calls `progress` after every this many records.
    static let progressInterval = 256

    /// Encodes `records` in order as puts of at most `partLimits.records` records (a part also
    /// ends after the record that brings its values to `partLimits.bytes`), giving each to
    /// `send`, and calling `progress` every `progressInterval` records.
    static func put<T: Persistable>(
        contentsOf records: [Record<T>], maxKeySize: Int, encryption: StoreEncryption?, learnsMembers: Bool, partLimits: PartLimits,
        parts send: (WriteOperation) throws(DatabaseError) -> Void, progress: () -> Void
    ) throws(DatabaseError) {
        var classes = ClassList()
        var batch = RecordBatch()
        var header: [UInt8] = []
        header.reserveCapacity(64)
        var written: Set<ExactID> = []
        // Where each id is first given, made when a first reference is met: the whole batch's,
        // since a model a reference holds must not replace a record given in an earlier part.
        var firstGiven: [ExactID: Int]?
        for (index, record) in records.enumerated() {
            try encode(
                record, into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption, classes: &classes,
                written: &written, learnsMembers: learnsMembers,
                givenEarlier: { id in
                    if firstGiven == nil {
                        var first: [ExactID: Int] = [:]
                        first.reserveCapacity(records.count)
                        for (position, given) in records.enumerated() where first[ExactID(given.id)] == nil {
                            first[ExactID(given.id)] = position
                        }
                        firstGiven = first
                    }
                    return firstGiven?[ExactID(id)].map { $0 < index } ?? false
                })
            if batch.count >= partLimits.records || batch.valueBytes >= partLimits.bytes {
                try send(.put(batch, classes: classes.classes))
                batch = RecordBatch()
                classes = ClassList()
                written = []
            }
            if index % progressInterval == progressInterval - 1 { progress() }
        }
        if !batch.isEmpty { try send(.put(batch, classes: classes.classes)) }
    }

    /// The operation deleting every record stored as `type` (its current and legacy names).
    static func deleteAll<T: Persistable>(_ type: T.Type, maxKeySize: Int) -> WriteOperation {
        let names = Legacy.allNames(of: TypeRegistry.name(of: type))
        return .deleteTypes(names.map { StorageKey($0, maxKeySize: maxKeySize) }, names: names, owner: TypeRegistry.storedClass(of: type))
    }

    /// The key of the record `id`.
    static func recordKey(_ id: String, maxKeySize: Int) throws(DatabaseError) -> StorageKey {
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
    ///
    /// Its references resolve in `context`'s snapshot, or among `prefetched` for a record carried
    /// out of its transaction.
    /// `reached` is told the ids of the records restored (see `ReadScratch.reading`).
    func instantiate<T: Persistable>(
        as requested: T.Type, context: ClassLookup?, prefetched: ReferencedRecords? = nil, reached: ((_ ids: [String]) -> Void)? = nil
    ) throws(DatabaseError) -> T {
        let scratch = ReadScratch.current
        var type = requested
        switch ObjectDecoding.resolve(storedName: className, requested: requested, context: context, scratch: scratch.classes) {
        case .requested:
            break
        case let .stored(stored):
            guard let resolved = stored as? T.Type else {
                throw .typeMismatch(id: id ?? "", requested: TypeRegistry.name(of: requested, scratch: scratch.classes), stored: className)
            }
            type = resolved
        case let .failure(failure):
            throw failure.error(id: id ?? "")
        }
        return try scratch.reading(in: context, prefetched: prefetched, reached: reached) { () throws(DatabaseError) in
            try scratch.restore(type, from: object, id: id ?? "", storedName: className)
        }
    }

}
