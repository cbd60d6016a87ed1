// The reads both faces offer, each a `SessionRead`: what to do in a snapshot on the caller's
// thread, or in the session's transaction on the writer thread and then on the caller's thread.
// The faces run them with `Session.readOutsideTransaction` then `readInTransaction` (async), or
// `Session.readBlocking`; a read by id on the actor face runs `ReadByID.snapshot` itself, its hot path.
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Where restoring objects of one database looks up stored classes.
private func readContext(_ store: RecordStore, _ database: UInt64, _ transaction: Transaction?) -> ReadContext {
    ReadContext(database: database, classes: store.classTable, transaction: transaction)
}

/// Throws `classNameConflict` when the stored name of the type `type` belongs to another type
/// in the database.
private func checkOwner(_ type: ObjectIdentifier, _ store: RecordStore, _ database: UInt64, _ transaction: Transaction) throws(DatabaseError) {
    if let conflict = try ObjectDecoding.conflict(for: type, context: readContext(store, database, transaction)) {
        throw conflict.error(id: "")
    }
}

/// The object stored under an id, as `T` or a subclass of it.
struct ReadByID<T: Persistable>: SessionRead {
    let id: String
    let key: StorageKey
    let store: RecordStore
    let database: UInt64

    init(_ id: String, in engine: DatabaseEngine) throws(DatabaseError) {
        try self.init(id, key: RecordEncoding.recordKey(id, maxKeySize: engine.maxKeySize), in: engine)
    }

    init(_ id: String, key: StorageKey, in engine: DatabaseEngine) {
        self.id = id
        self.key = key
        store = engine.store
        database = engine.serial
    }

    /// The snapshot read, without a `ReadByID` value: the hot path of `LocalDatabase.read(id:)`
    /// (building the generic struct costs a metadata look-up per read).
    /// It takes the engine's plain values, not the engine: a closure that reads `engine` from
    /// the session retains it, a reference count every reading thread would write.
    static func snapshot(
        _ id: String, key: StorageKey, in engine: DatabaseEngine.ReadTarget, _ transaction: Transaction
    ) throws(DatabaseError) -> T? {
        // The object is built inside the snapshot, from the stored bytes in place.
        guard let value = try RecordStore.value(key, records: engine.records, in: transaction) else { return nil }
        return try RecordDecoding.decode(value: value, id: id)
            .instantiate(as: T.self, context: ReadContext(database: engine.serial, classes: engine.classTable, transaction: transaction))
    }

    func inTransaction(_ transaction: Transaction) throws(DatabaseError) -> DecodedRecord.Detached? {
        try store.value(key, in: transaction).map { value throws(DatabaseError) in
            try RecordDecoding.decode(value: value, id: id).detached()
        }
    }

    func restore(_ detached: DecodedRecord.Detached?) throws(DatabaseError) -> T? {
        try detached?.stored.instantiate(as: T.self, context: readContext(store, database, nil))
    }

    func snapshot(_ transaction: Transaction) throws(DatabaseError) -> T? {
        guard let value = try store.value(key, in: transaction) else { return nil }
        return try RecordDecoding.decode(value: value, id: id).instantiate(as: T.self, context: readContext(store, database, transaction))
    }
}

/// Every object stored as `T` (its current and legacy class names).
struct ReadAll<T: Persistable>: SessionRead {
    let typeKeys: [StorageKey]
    let store: RecordStore
    let database: UInt64

    init(in engine: DatabaseEngine) {
        typeKeys = RecordEncoding.typeKeys(T.self, maxKeySize: engine.maxKeySize)
        store = engine.store
        database = engine.serial
    }

    func inTransaction(_ transaction: Transaction) throws(DatabaseError) -> [(object: DecodedRecord.Detached, id: String)] {
        try checkOwner(ObjectIdentifier(T.self), store, database, transaction)
        // Ids are made for every record here: reads in a transaction copy each record anyway.
        return try store.objects(typeKeys: typeKeys, in: transaction) { stored, id in (stored.detached(), id()) }
    }

    func restore(_ detached: [(object: DecodedRecord.Detached, id: String)]) throws(DatabaseError) -> [T] {
        let scratch = ReadScratch.current
        return try scratch.reading(in: readContext(store, database, nil)) { () throws(DatabaseError) in
            try detached.map { object, id throws(DatabaseError) in
                try scratch.restore(T.self, from: object.stored.object, id: id, storedName: object.stored.className)
            }
        }
    }

    func snapshot(_ transaction: Transaction) throws(DatabaseError) -> [T] {
        try checkOwner(ObjectIdentifier(T.self), store, database, transaction)
        let scratch = ReadScratch.current
        return try scratch.reading(in: readContext(store, database, transaction)) { () throws(DatabaseError) in
            try store.objects(typeKeys: typeKeys, in: transaction) { stored, id throws(DatabaseError) in
                try scratch.restore(T.self, from: stored.object, id: id(), storedName: stored.className)
            }
        }
    }
}

/// A read of the store that builds no models: ids, counts, the integrity walk.
struct StoreRead<Value: Sendable>: SessionRead {
    let body: @Sendable (Transaction) throws(DatabaseError) -> Value

    func inTransaction(_ transaction: Transaction) throws(DatabaseError) -> Value { try body(transaction) }
    func restore(_ detached: Value) -> Value { detached }
    func snapshot(_ transaction: Transaction) throws(DatabaseError) -> Value { try body(transaction) }
}

extension StoreRead {
    /// The ids of the records stored as `type`.
    static func ids<T: Persistable>(of type: T.Type, in engine: DatabaseEngine) -> StoreRead<[String]> {
        let (typeKeys, store) = (RecordEncoding.typeKeys(type, maxKeySize: engine.maxKeySize), engine.store)
        let (database, type) = (engine.serial, ObjectIdentifier(type))
        return StoreRead<[String]> { transaction throws(DatabaseError) in
            try checkOwner(type, store, database, transaction)
            return try store.ids(typeKeys: typeKeys, in: transaction)
        }
    }

    /// The number of records.
    static func countAll(in engine: DatabaseEngine) -> StoreRead<Int> {
        let store = engine.store
        return StoreRead<Int> { transaction throws(DatabaseError) in try store.count(in: transaction) }
    }

    /// The number of records stored as `type`.
    static func count<T: Persistable>(of type: T.Type, in engine: DatabaseEngine) -> StoreRead<Int> {
        let store = engine.store
        let (typeKeys, database) = (RecordEncoding.typeKeys(type, maxKeySize: engine.maxKeySize), engine.serial)
        let type = ObjectIdentifier(type)
        return StoreRead<Int> { transaction throws(DatabaseError) in
            try checkOwner(type, store, database, transaction)
            return try store.count(typeKeys: typeKeys, in: transaction)
        }
    }

    /// The integrity walk.
    static func integrity(in engine: DatabaseEngine) -> StoreRead<IntegrityReport> {
        let store = engine.store
        return StoreRead<IntegrityReport> { transaction throws(DatabaseError) in IntegrityReport(try store.verify(in: transaction)) }
    }
}
