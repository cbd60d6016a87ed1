import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

/// What a whole-store read (`PostgresEngine.readPaged`) found besides its rows.
struct PagedSnapshot {
    /// The change log's position the snapshot was read at.
    var position: LogPosition
    /// Every class row of the store.
    var classRows: [StoredClass]
}

extension PostgresEngine {
    /// Reads a store whole in one snapshot, page by page in key order: the full copies of a
    /// replica (`allSourceRecords`) and of a synchronizing device (`allSyncVersions`).
    ///
    /// Begins a snapshot that gives the change log's position (`beginSnapshotWithToken`), counts
    /// the rows `countSQL` counts (the total `progress` is told), reads the class rows, then asks
    /// `page` for the rows after the last key read (nil: from the first), `pageSize` at most, and
    /// hands each page, with the snapshot's position and class rows, to `take`, which returns the
    /// last row's key, until a page comes back short. (`take` may suspend: the next page is not
    /// asked for until it returns.)
    /// The snapshot ends with the read, on every path; a connection a failed rollback left in
    /// doubt is not reused.
    nonisolated(nonsending) func readPaged(
        _ operation: String, pageSize: Int, countSQL: String,
        page: (_ after: ByteBuffer?, _ limit: Int64) -> PostgresQuery,
        take: nonisolated(nonsending) (PostgresQueryResult, PagedSnapshot) async throws(DatabaseError) -> ByteBuffer?,
        progress: (_ fetched: Int, _ total: Int) -> Void
    ) async throws(DatabaseError) -> PagedSnapshot {
        try checkOpen()
        let connection = try await leased(operation)
        func send(_ query: PostgresQuery) async throws(DatabaseError) -> PostgresQueryResult {
            try await connection.send(query, logger: logger, within: queryTimeout).value(operation)
        }
        let snapshot: PagedSnapshot
        do throws(DatabaseError) {
            let position = try await beginSnapshotWithToken(on: connection, operation)
            let total = Int((try? (try await send(PostgresQuery(unsafeSQL: countSQL))).rows.first?.decode(Int64.self)) ?? 0)
            snapshot = PagedSnapshot(position: position, classRows: try await classRows(on: connection, operation))
            progress(0, total)
            let limit = Int64(max(1, pageSize))
            var fetched = 0
            var last: ByteBuffer?
            while true {
                let rows = try await send(page(last, limit))
                let lastKey = try await take(rows, snapshot)
                fetched += rows.rows.count
                progress(fetched, max(total, fetched))
                guard rows.rows.count == Int(limit), let lastKey else { break }
                last = lastKey
            }
            _ = try await send("COMMIT")
        } catch {
            let broken = (try? await connection.send("ROLLBACK", logger: logger, within: queryTimeout).get()) == nil
            pool.release(connection, broken: broken)
            throw error
        }
        pool.release(connection)
        return snapshot
    }

    /// Every class row of the store, read on `connection` (in its transaction, if one is open).
    nonisolated(nonsending) func classRows(on connection: PostgresConnection, _ operation: String) async throws(DatabaseError) -> [StoredClass] {
        let result = try await connection.send(PostgresQuery(unsafeSQL: "SELECT row FROM \(schema.classes)"), logger: logger, within: queryTimeout)
            .value(operation)
        var rows: [StoredClass] = []
        for row in result.rows {
            guard let buffer = try? row.decode(ByteBuffer.self), let stored = buffer.withUnsafeReadableBytes({ StoredClass(parsing: $0) }) else {
                throw .corruptRecord(id: "class row", reason: "the server's class row cannot be read")
            }
            rows.append(stored)
        }
        return rows
    }
}
