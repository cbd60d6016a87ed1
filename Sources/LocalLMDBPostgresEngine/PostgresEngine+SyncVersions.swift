import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

// Reading the server's versions for synchronizers: the versions of given records, and every
// version, a page at a time, from one snapshot (a full copy).
extension PostgresEngine {
    /// The versions of the records under the keys of `ids` (those with a row), with every class
    /// row (read by the first statement, in its snapshot), in statements of at most 10,000 ids
    /// each; without `values`, their stamps alone (no value, no class row). The values of the
    /// versions `omitting` stamped (a device's own writes, which it holds already) are left out:
    /// those are marked `omitted`. Without `omitting`, every value is read (the server's own
    /// writes, stamped by its trigger with no device, included).
    package nonisolated(nonsending) func syncVersions(ids: [String], values: Bool = true, omitting device: String? = nil) async throws(DatabaseError) -> SyncFetched {
        var fetched = SyncFetched()
        try await readByKeys(of: ids, "reading records to synchronize") { keys, first, _ in
            // Each row: key, stamp, device, whether the record is gone, id, value, whether it is a class row.
            guard values else {
                return PostgresQuery(
                    unsafeSQL: "SELECT s.key, s.stamp, s.device, s.deleted, s.id, NULL::bytea, false FROM \(syncSchema.sync) s WHERE s.key = ANY($1::bytea[]) AND s.stamp <> 0",
                    binds: binds(keys))
            }
            return PostgresQuery(
                unsafeSQL: """
                    SELECT s.key, s.stamp, s.device, s.deleted OR r.key IS NULL, s.id, \(device == nil ? "r.value" : "CASE WHEN s.device = $2 THEN NULL ELSE r.value END"), false
                    FROM \(syncSchema.sync) s LEFT JOIN \(schema.records) r ON r.key = s.key WHERE s.key = ANY($1::bytea[]) AND s.stamp <> 0
                    """ + (first ? " UNION ALL SELECT NULL, 0, '', false, NULL, row, true FROM \(schema.classes)" : ""),
                binds: device.map { binds(keys, $0) } ?? binds(keys))
        } add: { result throws(DatabaseError) in
            try Self.addVersions(result, to: &fetched, values: values)
        }
        return fetched
    }

    /// Every record's version (tombstones included), from one snapshot, `pageSize` rows at a time
    /// in key order, each page handed to `take` with the snapshot's change log position and every
    /// class row (the next page is fetched once `take` returns); `progress` is told the rows
    /// fetched so far and how many there are. Returns the position and the class rows.
    package nonisolated(nonsending) func syncVersionPages(
        pageSize: Int, progress: @Sendable (_ fetched: Int, _ total: Int) -> Void,
        take: nonisolated(nonsending) (_ page: SyncFetched) async throws(DatabaseError) -> Void
    ) async throws(DatabaseError) -> SyncFetched {
        let snapshot = try await readPaged(
            "reading records to synchronize", pageSize: pageSize, countSQL: "SELECT count(*) FROM \(syncSchema.sync)",
            page: { last, limit in
                // The page's lower bound on both tables: bounding the stamps alone, the server's
                // merge join read the records from the first key on for every page (a full copy
                // cost in proportion to the square of the store's size).
                PostgresQuery(
                    unsafeSQL: """
                        SELECT s.key, s.stamp, s.device, s.deleted OR r.key IS NULL, s.id, r.value, false FROM \(syncSchema.sync) s
                        LEFT JOIN \(schema.records) r ON r.key = s.key AND \(last == nil ? "true" : "r.key > $2")
                        WHERE s.stamp <> 0 AND \(last == nil ? "true" : "s.key > $2")
                        ORDER BY s.key LIMIT $1
                        """,
                    binds: last.map { binds(limit, $0) } ?? binds(limit))
            },
            take: { rows, snapshot throws(DatabaseError) in
                var page = SyncFetched()
                page.position = snapshot.position
                page.classRows = snapshot.classRows
                try Self.addVersions(rows, to: &page)
                // The last row's key, read before the page is handed on.
                let last = rows.rows.reversed().first.flatMap { try? $0.decode(ByteBuffer.self) }
                try await take(page)
                return last
            },
            progress: progress)
        var found = SyncFetched()
        found.position = snapshot.position
        found.classRows = snapshot.classRows
        return found
    }

    /// Adds the rows of `result` to `fetched`: versions, and class rows (the seventh column:
    /// key, stamp, device, whether the record is gone, id, value, whether the row is a class's).
    private static func addVersions(_ result: PostgresQueryResult, to fetched: inout SyncFetched, values: Bool = true) throws(DatabaseError) {
        for row in result.rows {
            guard let (key, stamp, device, gone, id, value, isClass) = try? row.decode((ByteBuffer?, Int64, String, Bool, ByteBuffer?, ByteBuffer?, Bool).self) else {
                throw .server(operation: "reading records to synchronize", message: "a synchronization row cannot be read")
            }
            if isClass {
                guard let value, let stored = value.withUnsafeReadableBytes({ StoredClass(parsing: $0) }) else {
                    throw .corruptRecord(id: "class row", reason: "the server's class row cannot be read")
                }
                fetched.classRows.append(stored)
                continue
            }
            guard let key else { throw .server(operation: "reading records to synchronize", message: "a synchronization row has no key") }
            // A row says what the record is; a record without a row is one a write stamped
            // by the trigger has not committed yet (the row is written with it), so never seen.
            fetched.versions.append(SyncVersion(
                key: Array(buffer: key), id: id.map { String(buffer: $0) }, stamp: SyncStamp(time: UInt64(bitPattern: stamp), device: device),
                deleted: gone, value: gone ? nil : value.map { Array(buffer: $0) }, omitted: values && !gone && value == nil))
        }
    }
}
