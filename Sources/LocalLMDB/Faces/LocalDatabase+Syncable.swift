import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

extension LocalDatabase {
    /// Sets the stored sync status of the records of `T` under `ids`, in their stored bytes: the
    /// models are not encoded again (fields their code does not know are kept), their other
    /// fields are unchanged, and the change is a write like any other (indexes, change log,
    /// observers; inside this database's transaction when one is open). Ids with no record of `T`
    /// are skipped.
    /// - Returns: The number of records changed.
    @discardableResult
    public nonisolated(nonsending) func setSyncStatus<T: Syncable>(_ status: SyncStatus, forIDs ids: [String], of type: T.Type) async throws -> Int {
        do throws(DatabaseError) {
            try await IndexDeclarations.ensure(T.self, in: engine)
            return try await engine.perform(try SyncStatusWrite.operation(status, ids: ids, of: type, maxKeySize: engine.maxKeySize))
        } catch { throw LocalDatabaseError(error) }
    }

    /// Sets the stored sync status of `model`'s record (see `setSyncStatus(_:forIDs:of:)`); the
    /// model itself is not changed. Returns whether a record of its type was there.
    @discardableResult
    public nonisolated(nonsending) func setSyncStatus<T: Syncable & Identifiable>(_ status: SyncStatus, for model: T) async throws -> Bool where T.ID: RecordIdentifier {
        try await setSyncStatus(status, forIDs: [model.id.recordID], of: T.self) > 0
    }

    /// Sets the stored sync status of `models`' records, in one write.
    @discardableResult
    public nonisolated(nonsending) func setSyncStatus<T: Syncable & Identifiable>(_ status: SyncStatus, for models: [T]) async throws -> Int where T.ID: RecordIdentifier {
        try await setSyncStatus(status, forIDs: models.map(\.id.recordID), of: T.self)
    }

    /// The stored sync status of the record of `T` under `id`, read without decoding the model;
    /// nil when there is no such record.
    public nonisolated(nonsending) func syncStatus<T: Syncable>(of type: T.Type, id: String) async throws -> SyncStatus? {
        do throws(DatabaseError) {
            return try await engine.read(try SyncStatusWrite.read(of: type, id: id, maxKeySize: engine.maxKeySize))
        } catch { throw LocalDatabaseError(error) }
    }

    /// The stored sync status of `model`'s record; nil when there is none.
    public nonisolated(nonsending) func syncStatus<T: Syncable & Identifiable>(for model: T) async throws -> SyncStatus? where T.ID: RecordIdentifier {
        try await syncStatus(of: T.self, id: model.id.recordID)
    }

    /// The records of `T` with the stored sync status `status` (GarageStorage's
    /// `retrieveAll(withStatus:)`), by id, from the status's index.
    public nonisolated(nonsending) func read<T: Syncable>(withStatus status: SyncStatus) async throws -> [T] {
        try await read(Query(T.self).filter(T.syncStatusKey, .equals(status.rawValue)))
    }

    /// The ids of the records of every type with the stored sync status `status`, by class
    /// name: what has not been synced yet, whatever its type. Covers the `Syncable` types this
    /// database has stored the status index of (the first write or query of a type stores it,
    /// in any process).
    public nonisolated(nonsending) func readIDs(withStatus status: SyncStatus) async throws -> [String: [String]] {
        do throws(DatabaseError) {
            return try await engine.read(ReadIDsWithStatus(status: status))
        } catch { throw LocalDatabaseError(error) }
    }
}

extension SerializationDatabase {
    /// Sets the stored sync status of the records of `T` under `ids` (see
    /// `LocalDatabase.setSyncStatus(_:forIDs:of:)`). Returns how many were changed; 0 on failure.
    @discardableResult
    public func setSyncStatus<T: Syncable>(_ status: SyncStatus, forIDs ids: [String], of type: T.Type) -> Int {
        run(0) { engine throws(DatabaseError) in
            try IndexDeclarations.ensureBlocking(T.self, in: engine, "setSyncStatus")
            return try engine.performBlocking(try SyncStatusWrite.operation(status, ids: ids, of: type, maxKeySize: engine.maxKeySize), "setSyncStatus")
        }
    }

    /// The stored sync status of the record of `T` under `id`; nil when there is none, or on failure.
    public func syncStatus<T: Syncable>(of type: T.Type, id: String) -> SyncStatus? {
        run(nil) { engine throws(DatabaseError) in
            try engine.readBlocking(try SyncStatusWrite.read(of: type, id: id, maxKeySize: engine.maxKeySize), "syncStatus")
        }
    }

    /// The records of `T` with the stored sync status `status`; `[]` on failure.
    public func read<T: Syncable>(withStatus status: SyncStatus) -> [T] {
        read(Query(T.self).filter(T.syncStatusKey, .equals(status.rawValue)))
    }

    /// The ids of the records of every type with the stored sync status `status`, by class name
    /// (see `LocalDatabase.readIDs(withStatus:)`); `[:]` on failure.
    public func readIDs(withStatus status: SyncStatus) -> [String: [String]] {
        run([:]) { engine throws(DatabaseError) in try engine.readBlocking(ReadIDsWithStatus(status: status), "readIDs") }
    }
}

/// The store operations behind the sync status methods.
enum SyncStatusWrite {
    static func operation<T: Syncable>(_ status: SyncStatus, ids: [String], of type: T.Type, maxKeySize: Int) throws(DatabaseError) -> WriteOperation {
        var keys: [StorageKey] = []
        for id in ids { keys.append(try RecordEncoding.recordKey(id, maxKeySize: maxKeySize)) }
        return .setMember(keys: keys, classNames: RecordEncoding.classNames(type), member: T.syncStatusKey, json: Array(String(status.rawValue).utf8))
    }

    static func read<T: Syncable>(of type: T.Type, id: String, maxKeySize: Int) throws(DatabaseError) -> ReadSyncStatus {
        ReadSyncStatus(key: try RecordEncoding.recordKey(id, maxKeySize: maxKeySize), id: id, classNames: RecordEncoding.classNames(type))
    }
}
