import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

// What the replicators ask of the store: where a source has got to, and applying a source's
// commits together with its new position, in one transaction.
extension PostgresEngine {
    /// The position `source` last recorded in this store; nil when it has recorded none.
    package nonisolated(nonsending) func replicationPosition(source: String) async throws(DatabaseError) -> String? {
        try checkOpen()
        let connection = try await leased("reading the replication position")
        let result: PostgresQueryResult
        do throws(DatabaseError) {
            result = try await connection.send(
                PostgresQuery(unsafeSQL: "SELECT position FROM \(schema.replication) WHERE source = $1", binds: binds(source)), logger: logger, within: queryTimeout
            ).value("reading the replication position")
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
        return result.rows.first.flatMap { try? $0.decode(String.self) }
    }

    /// Applies `operations` (a source's commits, in order) in one transaction that also records
    /// `position` as `source`'s, provided `source`'s recorded position is still `expected` (nil:
    /// none): a commit is applied once, and two replicators of one source cannot interleave.
    /// `classRows` are recorded first, for names the store has no owner for (the store's owner
    /// of a name wins). Its changes enter the store's change log as one commit.
    ///
    /// `migrations` is the source's migration state, recorded as the store's when it has
    /// completed migrations the store has not had (see `recordReplicated`). The operations are
    /// applied without the check of this process's migrations: the source's own rules made them.
    /// - Throws: `transactionFailed` when the recorded position is not `expected`; nothing is
    ///   applied then. `migrationInProgress` while the store runs a migration of its own;
    ///   `unknownMigration` when the store has had a migration the source has not.
    package nonisolated(nonsending) func applyReplicated(
        _ operations: [WriteOperation], classRows: [StoredClass], source: String, expected: String?, position: String,
        migrations: MigrationState
    ) async throws(DatabaseError) {
        try checkOpen()
        try await onThread { [self] () throws(DatabaseError) in
            let connection = try leaseBlocking("replicating")
            do throws(DatabaseError) {
                try begin(on: connection, "replicating")
                let recorded = try run(
                    PostgresQuery(unsafeSQL: "SELECT position FROM \(schema.replication) WHERE source = $1 FOR UPDATE", binds: binds(source)),
                    on: connection, "replicating")
                let found = recorded.rows.first.flatMap { try? $0.decode(String.self) }
                guard found == expected else {
                    throw DatabaseError.transactionFailed(
                        reason: "the replication of '\(source)' is at \(found ?? "its start") on the server, not at \(expected ?? "its start"): another replicator of the same source ran")
                }
                try recordReplicated(migrations, on: connection)
                if !classRows.isEmpty {
                    try checkSpelling(of: classRows, on: connection)
                    _ = try run(recordClassesQuery(classRows, update: false), on: connection, "replicating")
                }
                // The entries of every record the run writes go first, so that its unique indexes
                // are checked against the run's final state, whichever part a record is in.
                var written: [ByteBuffer] = []
                for case let .put(records, _) in operations {
                    records.forEachRecord { (key: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer, _: String, _: StorageKey) in
                        written.append(ByteBuffer(bytes: key))
                    }
                }
                if !written.isEmpty { try deleteEntries(keys: written, on: connection) }
                var changes = ChangeSet()
                for operation in operations { _ = try applyUnchecked(operation, on: connection, changes: &changes) }
                _ = try run(
                    PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO \(schema.replication) (source, position) VALUES ($1, $2)
                            ON CONFLICT (source) DO UPDATE SET position = EXCLUDED.position
                            """,
                        binds: binds(source, position)),
                    on: connection, "replicating")
                let logged = try logAndCommit(changes, on: connection)
                pool.release(connection)
                if logged { notifier.wakeAll() }
            } catch {
                let broken = (try? run("ROLLBACK", on: connection, "rolling back")) == nil
                pool.release(connection, broken: broken)
                throw error
            }
        }
    }
}

// What a pull replicator reads: records as stored, with every class row.
extension PostgresEngine {
    /// The records stored under the keys of `ids` (those that hold one) and every class row,
    /// in statements of at most 10,000 ids each.
    package nonisolated(nonsending) func sourceRecords(ids: [String]) async throws(DatabaseError) -> SourceRecords {
        var fetched = SourceRecords()
        try await readByKeys(of: ids, "reading records to replicate") { keys, first, last in
            let classes = last ? " UNION ALL SELECT 2::int4, name_key, row FROM \(schema.classes)" : ""
            return PostgresQuery(unsafeSQL: "SELECT 0::int4, key, value FROM \(schema.records) WHERE key = ANY($1::bytea[])" + classes, binds: binds(keys))
        } add: { result throws(DatabaseError) in
            try Self.add(result, to: &fetched)
        }
        return fetched
    }

    /// Reads the rows of the keys of `ids` on one connection, in statements of at most 10,000
    /// keys each: `statement` makes each (told whether it is the first, the last), `add` takes
    /// each one's rows.
    nonisolated(nonsending) func readByKeys(
        of ids: [String], _ operation: String, statement: (_ keys: [ByteBuffer], _ first: Bool, _ last: Bool) -> PostgresQuery,
        add: (PostgresQueryResult) throws(DatabaseError) -> Void
    ) async throws(DatabaseError) {
        try checkOpen()
        let connection = try await leased(operation)
        do throws(DatabaseError) {
            var start = 0
            repeat {
                let end = min(start + 10_000, ids.count)
                let keys = ids[start..<end].map { ByteBuffer(bytes: StorageKey($0, maxKeySize: maxKeySize).bytes) }
                let query = statement(keys, start == 0, end == ids.count)
                start = end
                try add(try await connection.send(query, logger: logger, within: queryTimeout).value(operation))
            } while start < ids.count
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
    }

    /// Every record, every class row and the change log's position they reflect, from one
    /// snapshot (a repeatable-read transaction), fetched `pageSize` records at a time in key
    /// order; `progress` is told the records fetched so far and how many there are.
    package nonisolated(nonsending) func allSourceRecords(
        pageSize: Int, progress: @Sendable (_ fetched: Int, _ total: Int) -> Void
    ) async throws(DatabaseError) -> SourceRecords {
        var fetched = SourceRecords()
        let snapshot = try await readPaged(
            "reading records to replicate", pageSize: pageSize, countSQL: "SELECT count(*) FROM \(schema.records)",
            page: { last, limit in
                guard let last else {
                    return PostgresQuery(unsafeSQL: "SELECT 0::int4, key, value FROM \(schema.records) ORDER BY key LIMIT $1", binds: binds(limit))
                }
                return PostgresQuery(
                    unsafeSQL: "SELECT 0::int4, key, value FROM \(schema.records) WHERE key > $1 ORDER BY key LIMIT $2", binds: binds(last, limit))
            },
            take: { page, _ throws(DatabaseError) in
                try Self.add(page, to: &fetched)
                return fetched.records.last.map { ByteBuffer(bytes: $0.key) }
            },
            progress: progress)
        fetched.position = snapshot.position
        fetched.classRows = snapshot.classRows
        return fetched
    }

    /// Adds the rows of `result` (`kind, key, value`: kind 0 a record, 2 a class row) to `fetched`.
    private static func add(_ result: PostgresQueryResult, to fetched: inout SourceRecords) throws(DatabaseError) {
        for row in result.rows {
            let columns: (Int32, ByteBuffer, ByteBuffer)
            do {
                columns = try row.decode((Int32, ByteBuffer, ByteBuffer).self)
            } catch {
                throw ServerCall.databaseError(error, "reading records to replicate")
            }
            switch columns.0 {
            case 0:
                fetched.records.append((Array(buffer: columns.1), Array(buffer: columns.2)))
            case 2:
                guard let row = columns.2.withUnsafeReadableBytes({ StoredClass(parsing: $0) }) else {
                    throw .corruptRecord(id: String(buffer: columns.1), reason: "the server's class row cannot be read")
                }
                fetched.classRows.append(row)
            default:
                continue
            }
        }
    }

    /// Deletes the change log's entries but the last `keeping`: a replica or change feed behind
    /// them then starts over from a full copy. Returns the entries deleted.
    package nonisolated(nonsending) func trimChangeLog(keeping: Int) async throws(DatabaseError) -> Int {
        try checkOpen()
        let connection = try await leased("trimming the change log")
        let result: PostgresQueryResult
        func send(_ query: PostgresQuery) async throws(DatabaseError) -> PostgresQueryResult {
            try await connection.send(query, logger: logger, within: queryTimeout).value("trimming the change log", busyTimeout: busyTimeout)
        }
        do throws(DatabaseError) {
            // Its own transaction at read committed, whatever the server's default: under
            // repeatable read or serializable, two trims at once would fail (SQLSTATE 40001).
            // The committed entries numbered first: the ones kept are the last numbered.
            _ = try await numberLog(on: connection)
            _ = try await send(StoreSchema.beginWrite)
            result = try await send(
                PostgresQuery(
                    unsafeSQL: "DELETE FROM \(schema.log) WHERE sequence <= (SELECT last FROM \(schema.sequencer)) - $1",
                    binds: binds(Int64(max(0, keeping)))))
            _ = try await send("COMMIT")
        } catch {
            let rolledBack = connection.isClosed ? false : ((try? await send("ROLLBACK")) != nil)
            pool.release(connection, broken: !rolledBack)
            throw error
        }
        pool.release(connection)
        return result.metadata.rows ?? 0
    }
}
