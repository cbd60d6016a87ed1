import LocalLMDB
import LocalLMDBLMDB
import LocalLMDBPostgresEngine
import PostgresNIO

/// A store of `Storable` objects on a PostgreSQL server: `LocalDatabase`'s API (`ObjectDatabase`),
/// for data that several machines share.
///
/// ```swift
/// let database = try await PostgresStore(
///     configuration: .init(host: "db.internal", username: "app", password: secret, database: "app", tls: .disable),
///     name: "school")
/// try await database.write(Record(id: "andre", data: person))
/// let person: Person? = try await database.read(id: "andre")
/// ```
///
/// Models, JSON, Legacy renames, class names and errors are `LocalDatabase`'s: a record is the
/// same bytes on both engines, which is what lets the replicators copy commits between them
/// (see *Outgrowing one machine*). Each named store has its own tables on the server, created or
/// migrated when it is first opened, and any number of processes may open one store at once.
///
/// Differences from `LocalDatabase`, each a typed error rather than a silent change:
/// - a transaction holds one connection and is PostgreSQL's (read committed). Writes of records by
///   key from every process run side by side; every other write, and a transaction from its
///   start, runs alone, as all writes do on LMDB, so an open transaction makes other writers wait
///   (for at most their busy timeout, then `busy`); reads are never held up;
/// - queries run on the store's indexes on the server (the same definitions, tuples, results and
///   order as LMDB's), which every write keeps in its transaction; a unique index's check is made
///   on a batch's final state (the last write of each id);
/// - encryption at rest, backups and exports, integrity checks, per-class statistics and the
///   synchronous face are not offered (`LocalDatabaseError.unsupported`).
///
/// Connections: the database opens at most `connections` connections from `configuration`, on
/// SwiftNIO's event loops, and closes them in `close()`.
public final class PostgresStore: ObjectDatabase {
    /// The face, on the PostgreSQL engine.
    let face: LocalDatabase
    package let engine: PostgresEngine

    /// The store's name on the server.
    public let name: String

    /// Connects to the server and opens (creating or migrating its tables if needed) the store `name`.
    /// - Parameters:
    ///   - configuration: postgres-nio's connection configuration: host, port, user, password,
    ///     database and TLS.
    ///   - name: The store's name: any string (it is never part of a statement).
    ///   - connections: The most connections the database opens (reads run side by side on them).
    ///   - busyTimeout: How long a call waits for a free connection before `busy`.
    ///   - eventLoopGroup: Where connections run; SwiftNIO's shared group by default.
    ///   - logger: Where postgres-nio logs; nowhere by default.
    /// - Throws: `LocalDatabaseError.server` when the server cannot be reached or refuses,
    ///   `.unsupportedFormat` when the store was made by a newer version of LocalLMDB.
    public init(
        configuration: PostgresConnection.Configuration, name: String, connections: Int = 8,
        busyTimeout: Duration = LocalDatabase.defaultBusyTimeout,
        eventLoopGroup: any EventLoopGroup = PostgresConnection.defaultEventLoopGroup,
        logger: Logger? = nil
    ) async throws {
        var options = PostgresEngine.Options()
        options.connections = connections
        options.busyTimeout = busyTimeout
        if let logger { options.logger = logger }
        do throws(DatabaseError) {
            engine = try await PostgresEngine.open(configuration: configuration, store: name, options: options, eventLoopGroup: eventLoopGroup)
        } catch { throw LocalDatabaseError(error) }
        face = LocalDatabase(engine: engine)
        self.name = name
    }

    /// Makes the store `name` one user's: creates or migrates its tables (as opening it does), then
    /// lets the PostgreSQL role `role` (that user's devices' credentials) open it, and nothing else
    /// of the server's stores.
    ///
    /// Run it with the store owner's credentials (`configuration`: a role that may create roles and
    /// owns, or will own, the stores' tables), once per store and role, and again after upgrading
    /// LocalLMDB (it migrates the tables, which `role` may not). `role` must exist (`CREATE ROLE
    /// alice LOGIN PASSWORD …`) and must not be able to create tables in the stores' schema; it
    /// gets its store's rows to read and write, never the tables' definitions, and sees no other
    /// store's records, log or row of `locallmdb_stores`. See *Outgrowing one machine* for what
    /// such a role can and cannot do.
    /// - Throws: `LocalDatabaseError.server` when the role does not exist, may create tables in the
    ///   stores' schema, a table of the store belongs to another role, or the server refuses.
    public static func provision(
        _ name: String, for role: String, configuration: PostgresConnection.Configuration,
        eventLoopGroup: any EventLoopGroup = PostgresConnection.defaultEventLoopGroup
    ) async throws {
        do throws(DatabaseError) {
            try await PostgresEngine.provision(store: name, role: role, granting: true, configuration: configuration, eventLoopGroup: eventLoopGroup)
        } catch { throw LocalDatabaseError(error) }
    }

    /// Makes this store's synchronization tables and trigger, when it lacks them (see
    /// *Syncing devices*): run it once with the credentials of the role that owns the store's
    /// tables (`provision(_:for:configuration:eventLoopGroup:)` does it too). A `Synchronizer`
    /// calls it on its first pass, so a store opened by its owner needs nothing more. Returns
    /// whether it made them.
    /// - Throws: `LocalDatabaseError.server` when this role may not make them.
    @discardableResult
    public nonisolated(nonsending) func enableSync() async throws -> Bool {
        do throws(DatabaseError) {
            return try await engine.enableSync()
        } catch { throw LocalDatabaseError(error) }
    }

    /// Takes the store `name` back from the role `role` (`provision(_:for:configuration:eventLoopGroup:)`'s
    /// grant), and checks that the role is no longer a member of the store's group: its sessions
    /// lose the store at their next statement, except one that switched to the group role itself
    /// (`SET ROLE`), which keeps it until it ends.
    /// - Throws: `LocalDatabaseError.server` when the role does not exist, is still a member (a
    ///   membership another role granted), or the server refuses.
    public static func revoke(
        _ name: String, from role: String, configuration: PostgresConnection.Configuration,
        eventLoopGroup: any EventLoopGroup = PostgresConnection.defaultEventLoopGroup
    ) async throws {
        do throws(DatabaseError) {
            try await PostgresEngine.provision(store: name, role: role, granting: false, configuration: configuration, eventLoopGroup: eventLoopGroup)
        } catch { throw LocalDatabaseError(error) }
    }

    /// The prefix of the tables of the store named `name` on the server (`locallmdb_` and 16
    /// hexadecimal digits of a digest of the name), for administration: its tables are the
    /// prefix followed by `_records`, `_classes`, `_log`, `_replication`, `_indexes` and `_entries`.
    public static func tablePrefix(of name: String) -> String {
        PostgresEngine.tablePrefix(of: name)
    }

    /// The server and store, as `postgres://user@host:port/database#store`.
    public var address: String { engine.path }

    // MARK: ObjectDatabase

    @discardableResult
    public nonisolated(nonsending) func write<T: Persistable>(_ record: Record<T>) async throws -> Bool {
        try await face.write(record)
    }

    @discardableResult
    public nonisolated(nonsending) func write<T: Persistable>(contentsOf records: [Record<T>]) async throws -> Int {
        try await face.write(contentsOf: records)
    }

    @discardableResult
    public nonisolated(nonsending) func write<T: Persistable & Identifiable>(_ model: T) async throws -> Bool where T.ID: RecordIdentifier {
        try await face.write(model)
    }

    @discardableResult
    public nonisolated(nonsending) func write<T: Persistable & Identifiable>(contentsOf models: [T]) async throws -> Int
    where T.ID: RecordIdentifier {
        try await face.write(contentsOf: models)
    }

    public nonisolated(nonsending) func read<T: Persistable>(id: String) async throws -> T? {
        try await face.read(id: id)
    }

    public nonisolated(nonsending) func read<T: Persistable & Identifiable>(_ type: T.Type, id: T.ID) async throws -> T?
    where T.ID: RecordIdentifier {
        try await face.read(type, id: id)
    }

    public nonisolated(nonsending) func read<T: Persistable>() async throws -> [T] {
        try await face.read()
    }

    public nonisolated(nonsending) func readIDs<T: Persistable>(_ allOf: T.Type) async throws -> [String] {
        try await face.readIDs(allOf)
    }

    public nonisolated(nonsending) func count() async throws -> Int {
        try await face.count()
    }

    public nonisolated(nonsending) func count<T: Persistable>(_ allOf: T.Type) async throws -> Int {
        try await face.count(allOf)
    }

    @discardableResult
    public nonisolated(nonsending) func delete(id: String) async throws -> Bool {
        try await face.delete(id: id)
    }

    @discardableResult
    public nonisolated(nonsending) func delete<T: Persistable & Identifiable>(_ model: T) async throws -> Bool where T.ID: RecordIdentifier {
        try await face.delete(model)
    }

    @discardableResult
    public nonisolated(nonsending) func delete<T: Persistable>(_ allOf: T.Type) async throws -> Int {
        try await face.delete(allOf)
    }

    @discardableResult
    public nonisolated(nonsending) func clearDatabase() async throws -> Int {
        try await face.clearDatabase()
    }

    public nonisolated(nonsending) func startTransaction(override: Bool) async throws {
        try await face.startTransaction(override: override)
    }

    public nonisolated(nonsending) func commitTransaction() async throws {
        try await face.commitTransaction()
    }

    public nonisolated(nonsending) func rollbackTransaction() async throws {
        try await face.rollbackTransaction()
    }

    public var transactionActive: Bool { face.transactionActive }

    // MARK: Queries

    /// The objects `query` selects (`LocalDatabase.read(_:)`): answered from the store's
    /// indexes on the server (`IndexDefinition`'s tuples, compared as bytes: the same results
    /// and order as on LMDB), declared by the model and built at its first use.
    public nonisolated(nonsending) func read<T: Persistable>(_ query: Query<T>) async throws -> [T] {
        try await face.read(query)
    }

    /// The first object `query` selects.
    public nonisolated(nonsending) func first<T: Persistable>(_ query: Query<T>) async throws -> T? {
        try await face.first(query)
    }

    /// The ids of the records `query` selects, in its order.
    public nonisolated(nonsending) func readIDs<T: Persistable>(_ query: Query<T>) async throws -> [String] {
        try await face.readIDs(query)
    }

    /// The number of records `query` selects, counted by the server.
    public nonisolated(nonsending) func count<T: Persistable>(_ query: Query<T>) async throws -> Int {
        try await face.count(query)
    }

    /// Whether `query` selects any record.
    public nonisolated(nonsending) func exists<T: Persistable>(_ query: Query<T>) async throws -> Bool {
        try await face.exists(query)
    }

    /// One page of `query`'s results and the cursor to continue after it (`LocalDatabase.readPage(_:)`).
    public nonisolated(nonsending) func readPage<T: Persistable>(_ query: Query<T>) async throws -> QueryPage<T> {
        try await face.readPage(query)
    }

    /// Every object `query` selects, in batches (`LocalDatabase.stream(_:batchSize:)`).
    public nonisolated func stream<T: Persistable>(_ query: Query<T>, batchSize: Int = 256) -> QueryStream<T> {
        face.stream(query, batchSize: batchSize)
    }

    /// The objects `query` selects, then again after each commit that changed them.
    public nonisolated func observe<T: Persistable>(_ query: Query<T>) -> DatabaseObservation<[T]> {
        face.observe(query)
    }

    /// Removes a stored index of `T` and its entries.
    @discardableResult
    public nonisolated(nonsending) func dropIndex<T: Persistable>(_ index: Index, of type: T.Type) async throws -> Bool {
        try await face.dropIndex(index, of: type)
    }

    /// Stores and builds `T`'s declared indexes now, telling `progress` as each is built.
    public nonisolated(nonsending) func prepareIndexes<T: Persistable>(
        of type: T.Type, progress: @escaping @Sendable (IndexBuildProgress) -> Void
    ) async throws {
        try await face.prepareIndexes(of: type, progress: progress)
    }

    // MARK: References

    /// Deletes the record of `T` under `id`, and with `includingReferenced` every record its
    /// references reach (`LocalDatabase.delete(_:id:includingReferenced:)`), in one transaction.
    @discardableResult
    public nonisolated(nonsending) func delete<T: Persistable>(_ type: T.Type, id: String, includingReferenced: Bool) async throws -> Int {
        try await face.delete(type, id: id, includingReferenced: includingReferenced)
    }

    // MARK: Sync status

    /// Sets the stored sync status of the records of `T` under `ids`, in their stored bytes
    /// (`LocalDatabase.setSyncStatus(_:forIDs:of:)`). Returns the number of records changed.
    @discardableResult
    public nonisolated(nonsending) func setSyncStatus<T: Syncable>(_ status: SyncStatus, forIDs ids: [String], of type: T.Type) async throws -> Int {
        try await face.setSyncStatus(status, forIDs: ids, of: type)
    }

    /// The stored sync status of the record of `T` under `id`; nil when there is none.
    public nonisolated(nonsending) func syncStatus<T: Syncable>(of type: T.Type, id: String) async throws -> SyncStatus? {
        try await face.syncStatus(of: type, id: id)
    }

    /// The records of `T` with the stored sync status `status`, from the status's index.
    public nonisolated(nonsending) func read<T: Syncable>(withStatus status: SyncStatus) async throws -> [T] {
        try await face.read(withStatus: status)
    }

    /// The ids of the records with the stored sync status `status`, by class name.
    public nonisolated(nonsending) func readIDs(withStatus status: SyncStatus) async throws -> [String: [String]] {
        try await face.readIDs(withStatus: status)
    }

    // MARK: Changes and observation

    /// The object stored under `id`, then again after each commit (of any server process) that
    /// changed its stored bytes (wrote other bytes or deleted it); see `DatabaseObservation`. Other processes' commits are seen as
    /// the server announces them (`LISTEN`/`NOTIFY`), and by a poll every second while anyone observes.
    public nonisolated func observe<T: Persistable>(_ type: T.Type, id: String) -> DatabaseObservation<T?> {
        face.observe(type, id: id)
    }

    /// Every object stored as `T`, then again after each commit that changed records of `T`;
    /// see `DatabaseObservation`.
    public nonisolated func observeAll<T: Persistable>(_ type: T.Type) -> DatabaseObservation<[T]> {
        face.observeAll(type)
    }

    /// The position after the store's last commit (`LocalDatabase.changeToken()`, read from the
    /// server without blocking a thread).
    public nonisolated(nonsending) func changeToken() async throws -> ChangeToken {
        do throws(DatabaseError) {
            return ChangeToken(try await engine.currentChangeToken())
        } catch { throw LocalDatabaseError(error) }
    }

    /// Every commit after `token`, oldest first, and the token to ask from next time
    /// (`LocalDatabase.changes(since:)`).
    /// - Throws: `LocalDatabaseError.changesUnavailable` when the log no longer holds the
    ///   commits after `token` (`trimChangeLog(keeping:)`) or `token` is another store's.
    public nonisolated(nonsending) func changes(since token: ChangeToken) async throws -> ChangeFeed {
        do throws(DatabaseError) {
            return try await face.changesAsync(since: token)
        } catch { throw LocalDatabaseError(error) }
    }

    /// The commits made from now on, each once, in order (`LocalDatabase.changes()`).
    public nonisolated(nonsending) func changes() async throws -> ChangeSequence {
        do throws(DatabaseError) {
            return face.changes(after: try await engine.currentChangeToken(), classNamesOf: nil)
        } catch { throw LocalDatabaseError(error) }
    }

    /// The commits made from now on that changed records stored as `T`, with only those
    /// changes (`LocalDatabase.changes(of:)`).
    public nonisolated(nonsending) func changes<T: Persistable>(of type: T.Type) async throws -> ChangeSequence {
        do throws(DatabaseError) {
            return face.changes(after: try await engine.currentChangeToken(), classNamesOf: type)
        } catch { throw LocalDatabaseError(error) }
    }

    // MARK: The change log

    /// Deletes the store's change log entries but the last `keeping`. The log grows by one entry
    /// per commit until trimmed: trim it on a schedule, keeping what the slowest replica needs.
    /// A pull replica whose position is older than what is kept starts over with a full copy
    /// (`PullReplicator`); push replicators do not read this log.
    /// - Returns: The entries deleted.
    @discardableResult
    public nonisolated(nonsending) func trimChangeLog(keeping: Int) async throws -> Int {
        do throws(DatabaseError) {
            return try await engine.trimChangeLog(keeping: keeping)
        } catch { throw LocalDatabaseError(error) }
    }

    public nonisolated(nonsending) func close() async {
        await face.close()
    }
}
