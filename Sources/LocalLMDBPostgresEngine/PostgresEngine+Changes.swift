import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

// The change feed: the store's log table, one row per commit, numbered in commit order by the
// log's sequencer (`LogSequencer`), which every read of the feed runs first.
extension PostgresEngine {
    /// Numbers the log's committed entries (`LogSequencer`) on `connection`, suspending; returns
    /// the store's last sequence number.
    nonisolated(nonsending) func numberLog(on connection: PostgresConnection) async throws(DatabaseError) -> UInt64 {
        let function = numberFunction.withLock { $0 }
        do throws(DatabaseError) {
            return try await LogSequencer.run(schema, function: function) { (query: PostgresQuery) async throws(DatabaseError) -> PostgresQueryResult in
                try await connection.send(query, logger: logger, within: queryTimeout).value("numbering the change log", busyTimeout: busyTimeout)
            }
        } catch {
            try giveUpNumberFunction(after: error, used: function)
            return try await numberLog(on: connection)
        }
    }

    /// Numbers the log's committed entries (`LogSequencer`) on `connection`, blocking (on the
    /// thread only); returns the store's last sequence number.
    func numberLogBlocking(on connection: PostgresConnection) throws(DatabaseError) -> UInt64 {
        let function = numberFunction.withLock { $0 }
        do throws(DatabaseError) {
            return try LogSequencer.run(schema, function: function) { (query: PostgresQuery) throws(DatabaseError) -> PostgresQueryResult in
                try run(query, on: connection, "numbering the change log")
            }
        } catch {
            try giveUpNumberFunction(after: error, used: function)
            return try numberLogBlocking(on: connection)
        }
    }

    /// Throws `error`, which a read of the log met (having called the log's functions when
    /// `used`), unless it says the functions are gone or cannot serve this store's connections:
    /// the statements' way from then on (the caller reads again so).
    func giveUpNumberFunction(after error: DatabaseError, used: Bool) throws(DatabaseError) {
        guard used, Self.routineVerdict(error) != nil else { throw error }
        numberFunction.withLock { $0 = false }
    }

    /// The store's last sequence number, every committed entry numbered (`LogSequencer`), read
    /// with a connection of its own (the notifier's poll, and `changeToken()`: blocking).
    static func lastSequence(pool: ConnectionPool, schema: StoreSchema, logger: Logger) throws(DatabaseError) -> UInt64 {
        let connection: PostgresConnection
        do {
            connection = try pool.lease().wait()
        } catch {
            throw ServerCall.databaseError(error, "numbering the change log")
        }
        do throws(DatabaseError) {
            let last = try LogSequencer.run(schema) { (query: PostgresQuery) throws(DatabaseError) -> PostgresQueryResult in
                do {
                    return try connection.send(query, logger: logger, within: .seconds(10)).wait()
                } catch {
                    throw ServerCall.databaseError(error, "numbering the change log")
                }
            }
            pool.release(connection)
            return last
        } catch {
            pool.release(connection, broken: true)
            throw error
        }
    }

    /// Numbers the log (`LogSequencer`), then begins a repeatable-read snapshot on `connection`,
    /// and returns the position of the last numbered commit it sees. A feed from it misses none
    /// of the commits after the snapshot; it may list again commits that ended while the read
    /// began (committed before the snapshot, numbered after it), whose changes the snapshot
    /// shows already: a change delivered twice, never one missed. (Exactness would need the
    /// numbering and the snapshot to be one moment, so every read with a token would hold the
    /// sequencer's lock for as long as it reads.) Ends no snapshot it fails in.
    nonisolated(nonsending) func beginSnapshotWithToken(on connection: PostgresConnection, _ operation: String) async throws(DatabaseError) -> LogPosition {
        // Numbering first only narrows what a feed from the token may list again: a sequencer
        // that stays busy past the busy timeout does not fail the read.
        do throws(DatabaseError) {
            _ = try await numberLog(on: connection)
        } catch {
            guard case .busy = error else { throw error }
        }
        _ = try await connection.send("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger, within: queryTimeout).value(operation)
        do throws(DatabaseError) {
            let result = try await connection.send(schema.sequenceQuery, logger: logger, within: queryTimeout).value("reading the change token")
            guard let (last, _) = LogSequencer.lastAndPending(result) else {
                throw .changesUnavailable(token: "", reason: "the store is no longer listed on the server")
            }
            return LogPosition(logID: schema.logID, sequence: last)
        } catch {
            _ = try? await connection.send("ROLLBACK", logger: logger, within: queryTimeout).get()
            throw error
        }
    }

    /// The position after the last commit, suspending (not blocking) while the server answers.
    package nonisolated(nonsending) func currentChangeToken() async throws(DatabaseError) -> LogPosition {
        try checkOpen()
        let connection = try await leased("reading the change token")
        let last: UInt64
        do throws(DatabaseError) {
            last = try await numberLog(on: connection)
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
        return LogPosition(logID: schema.logID, sequence: last)
    }

    package func changeToken() throws(DatabaseError) -> LogPosition {
        try Self.checkMayBlock("changeToken")
        return LogPosition(logID: schema.logID, sequence: try Self.lastSequence(pool: pool, schema: schema, logger: logger))
    }

    package func changeFeedBlocking(since token: LogPosition, limit: Int) throws(DatabaseError) -> LoggedCommits {
        let query = try changesQuery(since: token, limit: limit)
        let connection = try leaseBlocking("reading changes")
        let result: PostgresQueryResult
        do throws(DatabaseError) {
            _ = try numberLogBlocking(on: connection)
            result = try run(query, on: connection, "reading changes")
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
        return try commits(result, since: token)
    }

    /// The commits after `token`, at most `limit`: with the store's feed function
    /// (`LogSequencer.createFeedFunction`), numbered and read in one call; else numbered
    /// (`numberLog`), then read.
    package nonisolated(nonsending) func changeFeed(since token: LogPosition, limit: Int) async throws(DatabaseError) -> LoggedCommits {
        let query = try changesQuery(since: token, limit: limit)
        let connection = try await leased("reading changes")
        let result: PostgresQueryResult
        do throws(DatabaseError) {
            if numberFunction.withLock({ $0 }), let read = try await feedThroughFunction(query, on: connection) {
                result = read
            } else {
                _ = try await numberLog(on: connection)
                result = try await connection.send(query, logger: logger, within: queryTimeout).value("reading changes")
            }
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
        return try commits(result, since: token)
    }

    /// `query`'s rows (`changesQuery`), numbered and read by the store's feed function; nil when
    /// the function is gone or cannot serve this store's connections (the statements' way from
    /// then on).
    private nonisolated(nonsending) func feedThroughFunction(_ query: PostgresQuery, on connection: PostgresConnection) async throws(DatabaseError) -> PostgresQueryResult? {
        do throws(DatabaseError) {
            return try await connection.send(
                PostgresQuery(unsafeSQL: "SELECT * FROM \(schema.feedFunction)($1, $2)", binds: query.binds), logger: logger, within: queryTimeout
            ).value("reading changes", busyTimeout: busyTimeout)
        } catch {
            try giveUpNumberFunction(after: error, used: true)
            return nil
        }
    }

    /// The log's rows after `after` (at most `limit`), and a last row with the last sequence
    /// number (as `-last - 1`) and `more` (whether entries may wait for a number), in one
    /// statement (`commits` reads them).
    static func changesSQL(_ schema: StoreSchema, after: String, limit: String, more: String) -> String {
        """
        SELECT sequence, changes, false FROM (SELECT sequence, changes FROM \(schema.log) WHERE sequence > \(after) ORDER BY sequence LIMIT \(limit)) AS entries
        UNION ALL SELECT -last - 1, NULL, \(more) FROM \(schema.sequencer)
        """
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
            unsafeSQL: Self.changesSQL(schema, after: "$1", limit: "$2", more: "false"),
            binds: binds(Int64(token.sequence), Int64(min(limit, Int(Int32.max)))))
    }

    /// The commits in `result` (as `changesQuery` reads them), after `token`.
    private func commits(_ result: PostgresQueryResult, since token: LogPosition) throws(DatabaseError) -> LoggedCommits {
        var commits: [LoggedCommit] = []
        var last: UInt64?
        var more = false
        for row in result.rows {
            guard let (sequence, bytes, waiting) = try? row.decode((Int64, ByteBuffer?, Bool).self) else { continue }
            if sequence < 0 {
                last = UInt64(-(sequence + 1))
                more = waiting
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
        let position = commits.last?.position ?? LogPosition(logID: schema.logID, sequence: token.sequence)
        return LoggedCommits(commits: commits, position: position, reachesEnd: position.sequence == last && !more)
    }
}
