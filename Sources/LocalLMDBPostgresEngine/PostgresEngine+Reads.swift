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
                token = try await beginSnapshotWithToken(on: connection, "reading")
                inSnapshot = true
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
                    // A fetch of the index catalog alone (a query's first) does not count: the next
                    // statement reads the catalog again with the entries it walks, so what the
                    // read uses of both is one state, and a query costs two statements, not a
                    // transaction of four.
                    var asked = fetched.wanted
                    let catalogAlone = asked == FetchedRecords.Wanted.catalogAlone
                    if !catalogAlone && fetched.hasCatalog { asked.catalog = true }
                    try fill(fetched, asked, try await connection.send(fetchQuery(asked), logger: logger, within: queryTimeout).value("reading"))
                    if catalogAlone { continue }
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
        if wanted.catalog {
            parts.append("SELECT 4::int4, catalog_key, NULL::bytea, catalog_value FROM \(schema.indexes)")
        }
        // Index walks: rows `(16 + 2 × ordinal, key, tuple, value)`, counts `(17 + 2 × ordinal, …, count)`,
        // ordinals in the order of `Array(wanted.scans)`, as `fill` reads them back.
        for (ordinal, scan) in Array(wanted.scans).enumerated() {
            let (condition, order) = Self.entryCondition(scan, &bindings)
            let limit = scan.limit.map { " LIMIT \($0)" } ?? ""
            parts.append(
                "(SELECT \(16 + 2 * ordinal)::int4, e.key, e.tuple, r.value FROM \(schema.entries) e LEFT JOIN \(schema.records) r ON r.key = e.key"
                    + " WHERE \(condition) ORDER BY \(order)\(limit))")
        }
        for (ordinal, scan) in Array(wanted.scanCounts).enumerated() {
            let (condition, _) = Self.entryCondition(scan, &bindings)
            parts.append("SELECT \(17 + 2 * ordinal)::int4, NULL::bytea, NULL::bytea, int8send(count(DISTINCT e.key)) FROM \(schema.entries) e WHERE \(condition)")
        }
        // Steps of class walks: rows `(-1 - ordinal, key, class_key, value)`, ordinals in the order
        // of `Array(wanted.classWalks)`. bytea compares as LMDB orders keys (bytes, then length).
        for (ordinal, walk) in Array(wanted.classWalks).enumerated() {
            bindings.append(ByteBuffer(bytes: walk.classKey))
            var condition = "class_key = $\(bindings.count)::bytea"
            if let after = walk.after {
                bindings.append(ByteBuffer(bytes: after))
                condition += " AND key > $\(bindings.count)::bytea"
            }
            parts.append(
                "(SELECT \(-1 - ordinal)::int4, key, class_key, value FROM \(schema.records) WHERE \(condition) ORDER BY key LIMIT \(max(0, walk.limit)))")
        }
        return PostgresQuery(unsafeSQL: parts.joined(separator: " UNION ALL "), binds: bindings)
    }

    /// The condition an entry `e` of `scan` meets, and the order of its walk, with the values
    /// bound as parameters. The B-tree orders `head` (a tuple's first 1,024 bytes): each bound
    /// on `tuple` comes with the bound it implies on `head`, which the B-tree can use.
    static func entryCondition(_ scan: EntryScan, _ bindings: inout PostgresBindings) -> (condition: String, order: String) {
        func bind(_ bytes: [UInt8]) -> String {
            bindings.append(ByteBuffer(bytes: bytes))
            return "$\(bindings.count)::bytea"
        }
        bindings.append(scan.numbers.map { Int32(bitPattern: $0) })
        var condition = "e.number = ANY($\(bindings.count)::int4[])"
        var ranges: [String] = []
        for range in scan.ranges {
            guard let (from, to) = range.byteBounds else { continue }
            var bounds: [String] = []
            if let from {
                let bound = bind(from)
                bounds.append("e.head >= substring(\(bound) from 1 for 1024) AND e.tuple >= \(bound)")
            }
            if let to {
                let bound = bind(to)
                bounds.append("e.head <= substring(\(bound) from 1 for 1024) AND e.tuple < \(bound)")
            }
            ranges.append(bounds.isEmpty ? "true" : bounds.joined(separator: " AND "))
        }
        condition += ranges.isEmpty ? " AND false" : " AND ((" + ranges.joined(separator: ") OR (") + "))"
        if let after = scan.after {
            let tuple = bind(after.tuple)
            let key = bind(after.recordKey)
            condition += scan.descending
                ? " AND e.head <= substring(\(tuple) from 1 for 1024) AND (e.tuple, e.key) < (\(tuple), \(key))"
                : " AND e.head >= substring(\(tuple) from 1 for 1024) AND (e.tuple, e.key) > (\(tuple), \(key))"
        }
        let direction = scan.descending ? "DESC" : "ASC"
        return (condition, "e.head \(direction), e.tuple \(direction), e.key \(direction)")
    }

    /// Adds the rows `result` fetched for `wanted` to `fetched`.
    func fill(_ fetched: FetchedRecords, _ wanted: FetchedRecords.Wanted, _ result: PostgresQueryResult) throws(DatabaseError) {
        var members: [[UInt8]: [[UInt8]]] = [:]
        var catalog: [(key: [UInt8], value: [UInt8])] = []
        let scans = Array(wanted.scans)
        let scanCounts = Array(wanted.scanCounts)
        var walked = [[(tuple: [UInt8], key: [UInt8])]](repeating: [], count: scans.count)
        let classWalks = Array(wanted.classWalks)
        var stepped = [[[UInt8]]](repeating: [], count: classWalks.count)
        for row in result.rows {
            let columns: (Int32, ByteBuffer?, ByteBuffer?, ByteBuffer?)
            do {
                columns = try row.decode((Int32, ByteBuffer?, ByteBuffer?, ByteBuffer?).self)
            } catch {
                throw ServerCall.databaseError(error, "reading")
            }
            let (kind, key, classKey, value) = columns
            switch kind {
            case ..<0:
                let ordinal = Int(-1 - kind)
                guard ordinal < classWalks.count, let key, let value else { continue }
                let keyBytes = Array(buffer: key)
                value.withUnsafeReadableBytes { fetched.add(key: keyBytes, value: $0) }
                stepped[ordinal].append(keyBytes)
            case 0, 1:
                guard let key, let value else { continue }
                let keyBytes = Array(buffer: key)
                value.withUnsafeReadableBytes { fetched.add(key: keyBytes, value: $0) }
                if kind == 1, let classKey { members[Array(buffer: classKey), default: []].append(keyBytes) }
            case 2:
                value?.withUnsafeReadableBytes { fetched.addClassRow($0) }
            case 3:
                if var value, let count = value.readInteger(as: Int64.self) { fetched.setCount(Int(count)) }
            case 4:
                if let key, let value { catalog.append((Array(buffer: key), Array(buffer: value))) }
            case 16...:
                let ordinal = Int(kind - 16) / 2
                if kind % 2 == 0, ordinal < scans.count, let key, let tuple = classKey {
                    let keyBytes = Array(buffer: key)
                    if let value {
                        value.withUnsafeReadableBytes { fetched.add(key: keyBytes, value: $0) }
                    } else {
                        fetched.add(key: keyBytes, value: nil)
                    }
                    walked[ordinal].append((Array(buffer: tuple), keyBytes))
                } else if kind % 2 == 1, ordinal < scanCounts.count, var value, let count = value.readInteger(as: Int64.self) {
                    fetched.setScanCount(scanCounts[ordinal], Int(count))
                }
            default:
                continue
            }
        }
        if wanted.catalog { fetched.setCatalog(catalog) }
        for (ordinal, scan) in scans.enumerated() { fetched.addScan(scan, walked[ordinal]) }
        for (ordinal, walk) in classWalks.enumerated() { fetched.addClassWalk(walk, stepped[ordinal]) }
        for key in wanted.keys where !fetched.hasFetched(key: key) { fetched.add(key: key, value: nil) }
        for classKey in wanted.classKeys { fetched.setMembers(ofClassKey: classKey, members[classKey] ?? []) }
    }
}
