/// The asynchronous database API that every engine offers: `LocalDatabase` (LMDB, one
/// machine) and `PostgresStore` (the `LocalLMDBPostgres` product: PostgreSQL, shared by many)
/// conform, so code written against it runs on either unchanged:
///
/// ```swift
/// func enroll(_ student: Student, in database: some ObjectDatabase) async throws {
///     try await database.startTransaction()
///     try await database.write(Record(id: student.id, data: student))
///     try await database.commitTransaction()
/// }
/// ```
///
/// Each method means what `LocalDatabase`'s method of the same name means, and throws
/// `LocalDatabaseError`. Models are encoded and decoded in the caller's isolation on every
/// engine, so they need not be `Sendable`.
public protocol ObjectDatabase: AnyObject, Sendable {
    /// Writes a record, replacing any record with the same id. Returns `true` once it is stored.
    @discardableResult nonisolated(nonsending) func write<T: Persistable>(_ record: Record<T>) async throws -> Bool
    /// Writes `records` in one transaction (or in the open one). Returns how many were written.
    @discardableResult nonisolated(nonsending) func write<T: Persistable>(contentsOf records: [Record<T>]) async throws -> Int
    /// Writes `model` under its own id.
    @discardableResult nonisolated(nonsending) func write<T: Persistable & Identifiable>(_ model: T) async throws -> Bool
    where T.ID: RecordIdentifier
    /// Writes `models` under their own ids, in one transaction (or in the open one).
    @discardableResult nonisolated(nonsending) func write<T: Persistable & Identifiable>(contentsOf models: [T]) async throws -> Int
    where T.ID: RecordIdentifier
    /// The object stored under `id`, as `T` or a subclass of it; nil when there is none.
    nonisolated(nonsending) func read<T: Persistable>(id: String) async throws -> T?
    /// The object stored under `id`'s record id.
    nonisolated(nonsending) func read<T: Persistable & Identifiable>(_ type: T.Type, id: T.ID) async throws -> T?
    where T.ID: RecordIdentifier
    /// Every object stored as `T`.
    nonisolated(nonsending) func read<T: Persistable>() async throws -> [T]
    /// The ids of every record stored as `T`.
    nonisolated(nonsending) func readIDs<T: Persistable>(_ allOf: T.Type) async throws -> [String]
    /// The number of records.
    nonisolated(nonsending) func count() async throws -> Int
    /// The number of records stored as `T`.
    nonisolated(nonsending) func count<T: Persistable>(_ allOf: T.Type) async throws -> Int
    /// Deletes the record `id` (whatever its class). Returns whether one was deleted.
    @discardableResult nonisolated(nonsending) func delete(id: String) async throws -> Bool
    /// Deletes the record stored under `model`'s id.
    @discardableResult nonisolated(nonsending) func delete<T: Persistable & Identifiable>(_ model: T) async throws -> Bool
    where T.ID: RecordIdentifier
    /// Deletes every record stored as `T`. Returns how many were deleted.
    @discardableResult nonisolated(nonsending) func delete<T: Persistable>(_ allOf: T.Type) async throws -> Int
    /// Deletes every record. Returns how many were deleted.
    @discardableResult nonisolated(nonsending) func clearDatabase() async throws -> Int
    /// Begins this database's transaction; with `override`, rolls back one already open first.
    nonisolated(nonsending) func startTransaction(override: Bool) async throws
    /// Commits this database's transaction, durably.
    nonisolated(nonsending) func commitTransaction() async throws
    /// Rolls this database's transaction back.
    nonisolated(nonsending) func rollbackTransaction() async throws
    /// Whether this database has a transaction open.
    var transactionActive: Bool { get }
    /// Closes the database: later calls fail with `closed`; an open transaction is rolled back.
    nonisolated(nonsending) func close() async
    /// The object stored under `id`, then again after each commit (of any process) that changed
    /// its stored bytes (wrote other bytes or deleted it); see `DatabaseObservation`.
    func observe<T: Persistable>(_ type: T.Type, id: String) -> DatabaseObservation<T?>
    /// Every object stored as `T`, then again after each commit (of any process) that changed
    /// records of `T`; see `DatabaseObservation`.
    func observeAll<T: Persistable>(_ type: T.Type) -> DatabaseObservation<[T]>

    // Queries (see `Query`): the same results, in the same order, on every engine.

    /// The objects `query` selects, in its order, after its offset, at most its limit.
    nonisolated(nonsending) func read<T: Persistable>(_ query: Query<T>) async throws -> [T]
    /// The first object `query` selects; nil when it selects none.
    nonisolated(nonsending) func first<T: Persistable>(_ query: Query<T>) async throws -> T?
    /// The ids of the records `query` selects, in its order.
    nonisolated(nonsending) func readIDs<T: Persistable>(_ query: Query<T>) async throws -> [String]
    /// The number of records `query` selects, without decoding them.
    nonisolated(nonsending) func count<T: Persistable>(_ query: Query<T>) async throws -> Int
    /// Whether `query` selects any record.
    nonisolated(nonsending) func exists<T: Persistable>(_ query: Query<T>) async throws -> Bool
    /// One page of `query`'s results (its limit, 100 when it has none) and the cursor to continue after it.
    nonisolated(nonsending) func readPage<T: Persistable>(_ query: Query<T>) async throws -> QueryPage<T>
    /// Every object `query` selects, read in batches of `batchSize` from consistent snapshots.
    func stream<T: Persistable>(_ query: Query<T>, batchSize: Int) -> QueryStream<T>
    /// The objects `query` selects, then again after each commit that changed them.
    func observe<T: Persistable>(_ query: Query<T>) -> DatabaseObservation<[T]>
    /// Removes a stored index of `T` (declared again, it is built again at its next use).
    @discardableResult nonisolated(nonsending) func dropIndex<T: Persistable>(_ index: Index, of type: T.Type) async throws -> Bool
    /// Stores and builds `T`'s declared indexes now, telling `progress` as each is built.
    nonisolated(nonsending) func prepareIndexes<T: Persistable>(
        of type: T.Type, progress: @escaping @Sendable (IndexBuildProgress) -> Void
    ) async throws

    /// Deletes the record of `T` under `id`, and with `includingReferenced` every record its
    /// references reach, in one write. Returns the number of records deleted.
    @discardableResult nonisolated(nonsending) func delete<T: Persistable>(_ type: T.Type, id: String, includingReferenced: Bool) async throws -> Int

    // Sync status (`Syncable`), GarageStorage's way.

    /// Sets the stored sync status of the records of `T` under `ids`, without decoding them.
    @discardableResult nonisolated(nonsending) func setSyncStatus<T: Syncable>(_ status: SyncStatus, forIDs ids: [String], of type: T.Type) async throws -> Int
    /// The stored sync status of the record of `T` under `id`; nil when there is none.
    nonisolated(nonsending) func syncStatus<T: Syncable>(of type: T.Type, id: String) async throws -> SyncStatus?
    /// The records of `T` with the stored sync status `status`, from the status's index.
    nonisolated(nonsending) func read<T: Syncable>(withStatus status: SyncStatus) async throws -> [T]
    /// The ids of the records with the stored sync status `status`, by class name.
    nonisolated(nonsending) func readIDs(withStatus status: SyncStatus) async throws -> [String: [String]]
}

extension ObjectDatabase {
    /// Begins a transaction, rolling back one that is open (`startTransaction(override: true)`).
    public nonisolated(nonsending) func startTransaction() async throws {
        try await startTransaction(override: true)
    }
}

extension LocalDatabase: ObjectDatabase {}
