// The reads both faces offer, each a `SessionRead` written against `RecordSnapshot`: what to
// do in a snapshot on the caller's thread, or in the session's open transaction and then on the
// caller's thread. The faces run them through their engine (`EngineReader.read`, `readBlocking`);
// a read by id on the actor face restores the record `EngineReader.readRecord` hands it
// instead, its hot path (`LocalDatabase.readRecord`: no `ReadByID` value to build).
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Throws `classNameConflict` when the stored name of the type `type` belongs to another type
/// in the database.
func checkOwner(_ type: ObjectIdentifier, _ classes: ClassLookup) throws(DatabaseError) {
    if let conflict = try ObjectDecoding.conflict(for: type, context: classes) {
        throw conflict.error(id: "")
    }
}

/// The object stored under an id, as `T` or a subclass of it.
struct ReadByID<T: Persistable>: SessionRead {
    let id: String
    let key: StorageKey

    init(_ id: String, maxKeySize: Int) throws(DatabaseError) {
        self.init(id, key: try RecordEncoding.recordKey(id, maxKeySize: maxKeySize))
    }

    init(_ id: String, key: StorageKey) {
        self.id = id
        self.key = key
    }

    /// The record carried out of a transaction, with the records its references reach.
    typealias Detached = (record: DecodedRecord.Detached, referenced: ReferencedRecords?)?

    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Detached {
        guard let record = try snapshot.record(key, id: id) else { return nil }
        return (record.detached(), try ReferencedRecords.reached(from: [record], in: snapshot.classes))
    }

    func restore(_ detached: Detached, classes: ClassLookup) throws(DatabaseError) -> T? {
        guard let detached else { return nil }
        return try detached.record.stored.instantiate(as: T.self, context: classes, prefetched: detached.referenced)
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> T? {
        // The object is built inside the snapshot, from the stored bytes in place.
        try snapshot.record(key, id: id)?.instantiate(as: T.self, context: snapshot.classes)
    }
}

/// Every object stored as `T` (its current and legacy class names).
struct ReadAll<T: Persistable>: SessionRead {
    let classKeys: [StorageKey]

    init(maxKeySize: Int) {
        classKeys = RecordEncoding.typeKeys(T.self, maxKeySize: maxKeySize)
    }

    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> DetachedRecords {
        try checkOwner(ObjectIdentifier(T.self), snapshot.classes)
        // Ids are made for every record here: reads in a transaction copy each record anyway.
        return try DetachedRecords(snapshot.records(ofClasses: classKeys) { stored, id in (stored, id()) }, in: snapshot.classes)
    }

    func restore(_ detached: DetachedRecords, classes: ClassLookup) throws(DatabaseError) -> [T] {
        try Self.restoreAll(detached, classes: classes)
    }

    /// Models of records read in a transaction and carried out of it: one read, whose nested
    /// classes are looked up in `classes`.
    static func restoreAll(_ detached: DetachedRecords, classes: ClassLookup) throws(DatabaseError) -> [T] {
        let scratch = ReadScratch.current
        return try scratch.reading(in: classes, prefetched: detached.referenced, records: ObjectIdentifier(T.self)) { () throws(DatabaseError) in
            try detached.records.map { object, id throws(DatabaseError) in
                try scratch.restore(T.self, from: object.stored.object, id: id, storedName: object.stored.className)
            }
        }
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [T] {
        let classes = snapshot.classes
        try checkOwner(ObjectIdentifier(T.self), classes)
        let scratch = ReadScratch.current
        return try scratch.reading(in: classes, records: ObjectIdentifier(T.self)) { () throws(DatabaseError) in
            try snapshot.records(ofClasses: classKeys) { stored, id throws(DatabaseError) in
                try scratch.restore(T.self, from: stored.object, id: id(), storedName: stored.className)
            }
        }
    }
}

/// Records read in a transaction, copied out of it with the records their references reach.
struct DetachedRecords: Sendable {
    let records: [(object: DecodedRecord.Detached, id: String)]
    let referenced: ReferencedRecords?

    /// `records` copied, and what they refer to in `classes`' snapshot.
    init(_ records: [(DecodedRecord, String)], in classes: ClassLookup) throws(DatabaseError) {
        self.records = records.map { ($0.0.detached(), $0.1) }
        referenced = try ReferencedRecords.reached(from: records.map(\.0), in: classes)
    }
}

/// A read that builds no models: ids, counts, the integrity walk. Runs the same in a snapshot
/// and in the session's transaction.
protocol PlainRead: SessionRead where Detached == Value, Value: Sendable {}

extension PlainRead {
    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Value { try self.snapshot(snapshot) }
    func restore(_ detached: Value, classes: ClassLookup) -> Value { detached }
}

/// The ids of the records stored as a type. Not generic (nor is `CountOf`): a generic read built
/// in a face's unspecialized generic method costs a metadata look-up per call.
struct ReadIDs: PlainRead {
    let type: ObjectIdentifier
    let classKeys: [StorageKey]

    init<T: Persistable>(_ type: T.Type, maxKeySize: Int) {
        self.type = ObjectIdentifier(type)
        classKeys = RecordEncoding.typeKeys(type, maxKeySize: maxKeySize)
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [String] {
        try checkOwner(type, snapshot.classes)
        return try snapshot.ids(ofClasses: classKeys)
    }
}

/// The number of records stored as a type.
struct CountOf: PlainRead {
    let type: ObjectIdentifier
    let classKeys: [StorageKey]

    init<T: Persistable>(_ type: T.Type, maxKeySize: Int) {
        self.type = ObjectIdentifier(type)
        classKeys = RecordEncoding.typeKeys(type, maxKeySize: maxKeySize)
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Int {
        try checkOwner(type, snapshot.classes)
        return try snapshot.count(ofClasses: classKeys)
    }
}

/// The number of records.
struct CountAll: PlainRead {
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Int {
        try snapshot.count()
    }
}

/// The integrity walk.
struct VerifyIntegrity: PlainRead {
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> IntegrityReport {
        IntegrityReport(try snapshot.verify())
    }
}
