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
    /// - Throws: `transactionFailed` when the recorded position is not `expected`; nothing is
    ///   applied then.
    package nonisolated(nonsending) func applyReplicated(
        _ operations: [WriteOperation], classRows: [StoredClass], source: String, expected: String?, position: String
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
                if !classRows.isEmpty {
                    _ = try run(
                        PostgresQuery(
                            unsafeSQL: """
                                INSERT INTO \(schema.classes) (name_key, row) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                                ON CONFLICT (name_key) DO NOTHING
                                """,
                            binds: binds(
                                classRows.map { ByteBuffer(bytes: StorageKey($0.name, maxKeySize: maxKeySize).bytes) },
                                classRows.map { ByteBuffer(bytes: $0.encoded) })),
                        on: connection, "replicating")
                }
                var changes = ChangeSet()
                for operation in operations { _ = try apply(operation, on: connection, changes: &changes) }
                _ = try run(
                    PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO \(schema.replication) (source, position) VALUES ($1, $2)
                            ON CONFLICT (source) DO UPDATE SET position = EXCLUDED.position
                            """,
                        binds: binds(source, position)),
                    on: connection, "replicating")
                let sequence = try logAndCommit(changes, on: connection)
                pool.release(connection)
                if let sequence { notifier.committed(sequence) }
            } catch {
                let broken = (try? run("ROLLBACK", on: connection, "rolling back")) == nil
                pool.release(connection, broken: broken)
                throw error
            }
        }
    }
}
