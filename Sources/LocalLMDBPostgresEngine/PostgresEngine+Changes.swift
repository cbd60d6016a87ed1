import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

// The change feed: the store's log table, one row per commit, in commit order.
extension PostgresEngine {
    /// The position after the last commit, read on `connection` (in its transaction, if any).
    func changeToken(on connection: PostgresConnection) async throws(DatabaseError) -> LogPosition {
        let result = try await connection.send(
            schema.sequenceQuery(locking: false), logger: logger, within: queryTimeout).value("reading the change token")
        guard let row = result.rows.first, let sequence = try? row.decode(Int64.self) else {
            throw .changesUnavailable(token: "", reason: "the store is no longer listed on the server")
        }
        return LogPosition(logID: schema.logID, sequence: UInt64(sequence))
    }

    /// The position after the last commit, suspending (not blocking) while the server answers.
    package nonisolated(nonsending) func currentChangeToken() async throws(DatabaseError) -> LogPosition {
        try checkOpen()
        let connection = try await leased("reading the change token")
        let token: LogPosition
        do throws(DatabaseError) {
            token = try await changeToken(on: connection)
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
        return token
    }

    package func changeToken() throws(DatabaseError) -> LogPosition {
        try Self.checkMayBlock("changeToken")
        do {
            guard let sequence = try Self.lastSequence(pool: pool, schema: schema, logger: logger) else {
                throw DatabaseError.changesUnavailable(token: "", reason: "the store is no longer listed on the server")
            }
            return LogPosition(logID: schema.logID, sequence: sequence)
        } catch {
            throw ServerCall.databaseError(error, "reading the change token")
        }
    }

    package func changeFeedBlocking(since token: LogPosition, limit: Int) throws(DatabaseError) -> LoggedCommits {
        let query = try changesQuery(since: token, limit: limit)
        let connection = try leaseBlocking("reading changes")
        let result: PostgresQueryResult
        do throws(DatabaseError) {
            result = try run(query, on: connection, "reading changes")
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
        return try commits(result, since: token)
    }

    package nonisolated(nonsending) func changeFeed(since token: LogPosition, limit: Int) async throws(DatabaseError) -> LoggedCommits {
        let query = try changesQuery(since: token, limit: limit)
        let connection = try await leased("reading changes")
        let result: PostgresQueryResult
        do throws(DatabaseError) {
            result = try await connection.send(query, logger: logger, within: queryTimeout).value("reading changes")
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
        return try commits(result, since: token)
    }

    /// The log's rows after `token` (at most `limit`), and the last sequence number, in one statement.
    private func changesQuery(since token: LogPosition, limit: Int) throws(DatabaseError) -> PostgresQuery {
        guard token.logID == schema.logID else {
            throw .changesUnavailable(token: token.description, reason: "the token is another store's (or another database's)")
        }
        guard token.sequence <= UInt64(Int64.max) else {
            throw .changesUnavailable(token: token.description, reason: "the token is past the store's last commit")
        }
        return PostgresQuery(
            unsafeSQL: """
                SELECT sequence, changes FROM (SELECT sequence, changes FROM \(schema.log) WHERE sequence > $1 ORDER BY sequence LIMIT $2) AS entries
                UNION ALL SELECT -sequence - 1, NULL FROM locallmdb_stores WHERE name = $3
                """,
            binds: binds(Int64(token.sequence), Int64(min(limit, Int(Int32.max))), schema.nameBytes))
    }

    /// The commits in `result` (as `changesQuery` reads them), after `token`.
    private func commits(_ result: PostgresQueryResult, since token: LogPosition) throws(DatabaseError) -> LoggedCommits {
        var commits: [LoggedCommit] = []
        var last: UInt64?
        for row in result.rows {
            guard let (sequence, bytes) = try? row.decode((Int64, ByteBuffer?).self) else { continue }
            if sequence < 0 {
                last = UInt64(-(sequence + 1))
                continue
            }
            guard let bytes, let changes = bytes.withUnsafeReadableBytes({ ChangeLog.decode($0) }) else {
                throw .changesUnavailable(token: token.description, reason: "the log entry of commit \(sequence) cannot be read")
            }
            commits.append(LoggedCommit(position: LogPosition(logID: schema.logID, sequence: UInt64(sequence)), changes: changes))
        }
        guard let last else { throw .changesUnavailable(token: token.description, reason: "the store is no longer listed on the server") }
        guard token.sequence <= last else {
            throw .changesUnavailable(token: token.description, reason: "the token is past the store's last commit")
        }
        // The log no longer holds the first commit after the token (trimmed), or none of them.
        if commits.first.map({ $0.position.sequence != token.sequence + 1 }) ?? (token.sequence < last) {
            throw .changesUnavailable(token: token.description, reason: "the log no longer holds the commits after it")
        }
        return LoggedCommits(commits: commits, position: commits.last?.position ?? LogPosition(logID: schema.logID, sequence: token.sequence))
    }
}
