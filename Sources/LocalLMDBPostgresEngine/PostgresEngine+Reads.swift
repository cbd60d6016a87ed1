import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

// Reads: the faces' reads run against what was fetched (`FetchedRecords`), fetching what they
// want and running again until they want nothing.
extension PostgresEngine {
    package func readOutsideTransaction<Read: SessionRead>(_ read: Read) throws(DatabaseError) -> Read.Value? { nil }

    package func readsSnapshotOnCallersThread() throws(DatabaseError) -> Bool { false }

    package func readRecord<Value>(
        _ key: StorageKey, id: String, _ restore: (DecodedRecord?, ClassLookup) throws(DatabaseError) -> Value
    ) throws(DatabaseError) -> Value {
        // Never called: `readsSnapshotOnCallersThread` is false.
        throw .unsupported(operation: "A read on the caller's thread", reason: "the PostgreSQL engine reads through readInTransaction")
    }

    package nonisolated(nonsending) func readInTransaction<Read: SessionRead>(_ read: Read) async throws(DatabaseError) -> Read.Value {
        try checkOpen()
        if transactionActive {
            // In the session's transaction, behind its writes, on its connection; when the
            // transaction ended before the read reached the thread, from the committed state.
            let inTransaction = try await onThread { [self] () throws(DatabaseError) -> (Read.Detached, FetchedRecords)? in
                guard let transaction else { return nil }
                return try readRounds(read, on: transaction.connection)
            }
            if let (detached, fetched) = inTransaction {
                return try withExtendedLifetime(fetched) { () throws(DatabaseError) in
                    try read.restore(detached, classes: ClassLookup(database: databaseSerial, fetched: fetched, readingRecords: false))
                }
            }
        }
        return try await readCommitted(read, withToken: false).value
    }

    package func readBlocking<Read: SessionRead>(_ read: Read, _ name: String) throws(DatabaseError) -> Read.Value {
        throw .unsupported(operation: name, reason: "the PostgreSQL engine offers the asynchronous API (LocalDatabase's) only")
    }

    package nonisolated(nonsending) func readWithToken<Read: SnapshotRead>(_ read: Read) async throws(DatabaseError) -> (Read.Value, LogPosition) {
        try checkOpen()
        let (value, token) = try await readCommitted(read, withToken: true)
        return (value, token ?? LogPosition(logID: schema.logID, sequence: 0))
    }

    /// `read`'s value from the committed state, in the caller's task: one statement when one
    /// fetch answers the read, else one repeatable-read transaction (with the change token,
    /// when asked for, read in it).
    private nonisolated(nonsending) func readCommitted<Read: SnapshotRead>(
        _ read: Read, withToken: Bool
    ) async throws(DatabaseError) -> (value: Read.Value, token: LogPosition?) {
        let connection = try await leased("reading")
        var inSnapshot = false
        let outcome: (Result<Read.Value, DatabaseError>, LogPosition?)
        do throws(DatabaseError) {
            var fetched = FetchedRecords(maxKeySize: maxKeySize)
            var wanted = FetchedRecords.Wanted()
            var token: LogPosition?
            var fetches = 0
            if withToken {
                _ = try await connection.send("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger, within: queryTimeout).value("reading")
                inSnapshot = true
                token = try await changeToken(on: connection)
            }
            while true {
                fetched.startRun()
                let result = Result { () throws(DatabaseError) in try read.snapshot(FetchedSnapshot(fetched, database: databaseSerial)) }
                if fetched.wanted.isEmpty {
                    if inSnapshot { _ = try await connection.send("COMMIT", logger: logger, within: queryTimeout).value("reading") }
                    outcome = (result, token)
                    break
                }
                try Self.checkProgress(fetched)
                wanted.formUnion(fetched.wanted)
                if fetches > 0 && !inSnapshot {
                    // A second fetch: everything is fetched again in one snapshot.
                    _ = try await connection.send("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger, within: queryTimeout).value("reading")
                    inSnapshot = true
                    fetched = FetchedRecords(maxKeySize: maxKeySize)
                    try fill(fetched, wanted, try await connection.send(fetchQuery(wanted), logger: logger, within: queryTimeout).value("reading"))
                } else {
                    try fill(fetched, fetched.wanted, try await connection.send(fetchQuery(fetched.wanted), logger: logger, within: queryTimeout).value("reading"))
                }
                fetches += 1
            }
        } catch {
            let broken: Bool
            if inSnapshot {
                broken = (try? await connection.send("ROLLBACK", logger: logger, within: queryTimeout).get()) == nil
            } else {
                broken = connection.isClosed
            }
            pool.release(connection, broken: broken)
            throw error
        }
        pool.release(connection)
        return (try outcome.0.get(), outcome.1)
    }

    /// `read` run in the open transaction on `connection` (on the thread), fetching until it
    /// wants nothing more; the records it fetched, which its restoration reads.
    func readRounds<Read: SessionRead>(_ read: Read, on connection: PostgresConnection) throws(DatabaseError) -> (Read.Detached, FetchedRecords) {
        let fetched = FetchedRecords(maxKeySize: maxKeySize)
        while true {
            fetched.startRun()
            let result = Result { () throws(DatabaseError) in try read.inTransaction(FetchedSnapshot(fetched, database: databaseSerial)) }
            if fetched.wanted.isEmpty { return (try result.get(), fetched) }
            try Self.checkProgress(fetched)
            let wanted = fetched.wanted
            try fill(fetched, wanted, try run(fetchQuery(wanted), on: connection, "reading"))
        }
    }

    /// Throws when the run just made wants only what was fetched already: it would never end.
    static func checkProgress(_ fetched: FetchedRecords) throws(DatabaseError) {
        assert(!fetched.hasFetched(fetched.wanted), "a read wants what it was given")
        if fetched.hasFetched(fetched.wanted) {
            throw .transactionFailed(reason: "a read on the PostgreSQL engine asked again for records it was given")
        }
    }

    /// The statement that fetches `wanted`, with every class row: rows of
    /// `(kind, key, class_key, value)`, kind 0 a record by key, 1 a record of a class, 2 a
    /// class row, 3 the count.
    func fetchQuery(_ wanted: FetchedRecords.Wanted) -> PostgresQuery {
        var parts: [String] = []
        var bindings = PostgresBindings()
        if !wanted.keys.isEmpty {
            bindings.append(wanted.keys.map { ByteBuffer(bytes: $0) })
            parts.append("SELECT 0::int4, key, class_key, value FROM \(schema.records) WHERE key = ANY($\(bindings.count)::bytea[])")
        }
        if !wanted.classKeys.isEmpty {
            bindings.append(wanted.classKeys.map { ByteBuffer(bytes: $0) })
            parts.append("SELECT 1::int4, key, class_key, value FROM \(schema.records) WHERE class_key = ANY($\(bindings.count)::bytea[])")
        }
        parts.append("SELECT 2::int4, name_key, NULL::bytea, row FROM \(schema.classes)")
        if wanted.count {
            parts.append("SELECT 3::int4, NULL::bytea, NULL::bytea, int8send(count(*)) FROM \(schema.records)")
        }
        return PostgresQuery(unsafeSQL: parts.joined(separator: " UNION ALL "), binds: bindings)
    }

    /// Adds the rows `result` fetched for `wanted` to `fetched`.
    func fill(_ fetched: FetchedRecords, _ wanted: FetchedRecords.Wanted, _ result: PostgresQueryResult) throws(DatabaseError) {
        var members: [[UInt8]: [[UInt8]]] = [:]
        for row in result.rows {
            let columns: (Int32, ByteBuffer?, ByteBuffer?, ByteBuffer?)
            do {
                columns = try row.decode((Int32, ByteBuffer?, ByteBuffer?, ByteBuffer?).self)
            } catch {
                throw ServerCall.databaseError(error, "reading")
            }
            let (kind, key, classKey, value) = columns
            switch kind {
            case 0, 1:
                guard let key, let value else { continue }
                let keyBytes = Array(buffer: key)
                value.withUnsafeReadableBytes { fetched.add(key: keyBytes, value: $0) }
                if kind == 1, let classKey { members[Array(buffer: classKey), default: []].append(keyBytes) }
            case 2:
                value?.withUnsafeReadableBytes { fetched.addClassRow($0) }
            case 3:
                if var value, let count = value.readInteger(as: Int64.self) { fetched.setCount(Int(count)) }
            default:
                continue
            }
        }
        for key in wanted.keys where !fetched.hasFetched(key: key) { fetched.add(key: key, value: nil) }
        for classKey in wanted.classKeys { fetched.setMembers(ofClassKey: classKey, members[classKey] ?? []) }
    }
}
