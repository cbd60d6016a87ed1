import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

/// The store's migration entry as a write transaction holds it (`PostgresEngine.recordedMigrations`).
enum RecordedMigrations {
    /// Read with the store's row: `MigrationState`'s bytes, nil when the store has had no migration.
    case read([UInt8]?)
    /// Not read (no transaction yet, or a refused write left it unknown): every write is refused.
    case unknown
}

// Migrations on a server's store: the same rules as LMDB's (`MigrationCatalog`), the entry kept in
// the store's row of `locallmdb_stores` (`StoreSchema.migrationsQuery`), one migrator at a time
// by an advisory lock of the server's.
extension PostgresEngine {
    package func knowMigrations(_ names: Set<String>) {
        migrations.know(names)
    }

    package nonisolated(nonsending) func migrationState() async throws(DatabaseError) -> MigrationState {
        try checkOpen()
        let operation = "reading the migration state"
        let connection = try await leased(operation)
        let entry: [UInt8]?
        do throws(DatabaseError) {
            let result = try await connection.send(schema.migrationsQuery, logger: logger, within: queryTimeout).value(operation)
            guard let row = result.rows.first else {
                throw .server(operation: operation, message: "the store is no longer listed on the server")
            }
            let column: ByteBuffer?
            do {
                column = try row.decode(ByteBuffer?.self)
            } catch {
                throw ServerCall.databaseError(error, operation)
            }
            entry = column.map { Array(buffer: $0) }
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
        guard let entry else { return MigrationState() }
        return try Self.parse(entry)
    }

    /// The lock is held by a connection of its own, outside the pool: the run goes on reading
    /// and writing through the pool, whatever its size.
    package nonisolated(nonsending) func tryLockMigrations() async throws(DatabaseError) -> (any MigrationLease)? {
        try checkOpen()
        let operation = "locking the store's migrations"
        let connection = try await ServerCall.run(operation, busyTimeout: busyTimeout) {
            try await PostgresConnection.connect(
                on: pool.eventLoopGroup.any(), configuration: pool.configuration, id: Int.random(in: 1_000_000...Int(Int32.max)), logger: logger
            ).get()
        }
        let lease = ServerMigrationLease(connection: connection, key: schema.migrationLockKey, logger: logger, limit: queryTimeout)
        do throws(DatabaseError) {
            let result = try await connection.send(
                "SELECT pg_try_advisory_lock(\(schema.migrationLockKey))", logger: logger, within: queryTimeout
            ).value(operation)
            guard let row = result.rows.first else { throw .server(operation: operation, message: "the server did not answer the lock") }
            let locked: Bool
            do {
                locked = try row.decode(Bool.self)
            } catch {
                throw ServerCall.databaseError(error, operation)
            }
            guard locked else {
                await lease.release()
                return nil
            }
            return lease
        } catch {
            // Closing the connection ends its session, which frees a lock it may hold.
            await lease.release()
            throw error
        }
    }

    /// Refuses a write that changes records unless the store has had exactly the migrations this
    /// process knows (`MigrationCatalog.checkWrite`), as the transaction's row says.
    func checkMigrations() throws(DatabaseError) {
        guard case let .read(entry) = recordedMigrations else {
            throw .transactionFailed(reason: "the store's migration entry could not be read again after a refused write")
        }
        try checkMigrations(entry: entry)
    }

    /// Refuses a write into a store whose migration entry is `entry` when this process's
    /// migrations forbid it (`MigrationCatalog.checkWrite`).
    func checkMigrations(entry: [UInt8]?) throws(DatabaseError) {
        if let entry {
            try entry.withBytes { entry throws(DatabaseError) in try migrations.checkWrite(into: entry) }
        } else {
            try migrations.checkWrite(into: nil)
        }
    }

    /// Applies a migration's batch (`.migrate`, as `RecordStore.migrate` on LMDB): checks that the
    /// recorded state is `expected`, applies `operations` and records `state`, in the transaction.
    func migrate(
        _ operations: [WriteOperation], expected: MigrationState, state: MigrationState, on connection: PostgresConnection,
        changes: inout ChangeSet
    ) throws(DatabaseError) -> Int {
        guard case let .read(entry) = recordedMigrations else {
            throw .transactionFailed(reason: "the store's migration entry could not be read again after a refused write")
        }
        let recorded = try entry.map { entry throws(DatabaseError) in try Self.parse(entry) } ?? MigrationState()
        try migrations.checkBatch(recorded: recorded, expected: expected, state: state)
        var count = 0
        for operation in operations {
            assert(!operation.isReplication && !operation.isMigration, "a migration's batch holds plain writes")
            count += try applyUnchecked(operation, on: connection, changes: &changes)
        }
        let encoded = state.encoded
        _ = try run(schema.recordMigrations(encoded), on: connection, "migrating")
        recordedMigrations = .read(encoded)
        return count
    }

    /// Records `source` (a push replicator's source's migration state, none under way) as the
    /// store's, in the transaction, when it has completed migrations the store has not had: the
    /// store then holds the source's migrated records and refuses writes of the old shapes,
    /// as the source does.
    /// - Throws: `migrationInProgress` while the store runs a migration of its own (replicated
    ///   writes would land between its batches); `unknownMigration` when the store has had a
    ///   migration the source has not (the source's records would be of older shapes).
    func recordReplicated(_ source: MigrationState, on connection: PostgresConnection) throws(DatabaseError) {
        guard case let .read(entry) = recordedMigrations else {
            throw .transactionFailed(reason: "the store's migration entry could not be read")
        }
        let recorded = try entry.map { entry throws(DatabaseError) in try Self.parse(entry) } ?? MigrationState()
        if let running = recorded.running { throw .migrationInProgress(name: running.name) }
        assert(source.running == nil, "a push replicator pushes no migration under way")
        if let running = source.running { throw .migrationInProgress(name: running.name) }
        guard source.completed != recorded.completed else { return }
        guard source.completed.starts(with: recorded.completed) else {
            throw .unknownMigration(name: recorded.completed.first { !source.completed.contains($0) } ?? recorded.completed.last ?? "")
        }
        let encoded = source.encoded
        _ = try run(schema.recordMigrations(encoded), on: connection, "replicating")
        recordedMigrations = .read(encoded)
    }

    /// The state `entry` holds.
    /// - Throws: `corruptRecord` when it is damaged.
    static func parse(_ entry: [UInt8]) throws(DatabaseError) -> MigrationState {
        guard let state = entry.withBytes({ MigrationState(parsing: $0) }) else {
            throw .corruptRecord(id: "locallmdb_stores.migrations", reason: "the store's migration entry is damaged")
        }
        return state
    }
}

/// A server's migration lease: a session-level advisory lock, held by a connection of its own
/// (outside the engine's pool) until `release` closes it, which ends its session and so frees
/// the lock. A process that dies, or a connection that breaks, ends the session too.
final class ServerMigrationLease: MigrationLease {
    private let connection: Locked<PostgresConnection?>
    private let key: Int64
    private let logger: Logger
    private let limit: Duration

    init(connection: PostgresConnection, key: Int64, logger: Logger, limit: Duration) {
        self.connection = Locked(connection)
        self.key = key
        self.logger = logger
        self.limit = limit
    }

    deinit {
        // Dropped without `release`: closed all the same, kept alive until it is (postgres-nio
        // asserts that a connection is closed before it goes).
        if let connection = connection.withLock({ $0 }) { ConnectionPool.close(connection) }
    }

    nonisolated(nonsending) func release() async {
        let held = connection.withLock { held in
            defer { held = nil }
            return held
        }
        guard let held else { return }
        // Unlocked first, so the lock is free at once even if the close takes a while.
        _ = try? await held.send("SELECT pg_advisory_unlock(\(key))", logger: logger, within: limit).get()
        _ = try? await ConnectionPool.close(held).get()
    }
}
