import LocalLMDBLMDB
import LocalLMDBStore
import PostgresNIO

// Writes of records by key in one round trip (`StoreSchema.putProcedure`). All of it runs on the
// engine's thread.
extension PostgresEngine {
    /// Commits `writes` with one call of the store's put procedure, when every operation is a put,
    /// the store has no index, and the client holds all the procedure checks (the index catalog's
    /// version and the migration entry its last write transaction read, and every claimed class
    /// as a claim that recorded nothing found it). Returns nil when the writes are not such, or
    /// the procedure refused them before anything was kept: `commitGroup` then writes them.
    ///
    /// The results are `commitGroup`'s: the same records stored, the same log entry, the same
    /// counts. A call whose answer was lost may have committed: it is not repeated.
    func fastPut(_ writes: [[WriteOperation]]) -> [Result<Int, DatabaseError>]? {
        guard hasPutProcedure != false, let catalog, catalog.byClass.isEmpty, case let .read(entry) = recordedMigrations else { return nil }
        var rows = RecordRows()
        var classOfKey: [[UInt8]: String] = [:]
        var claimedKeys: [ByteBuffer] = []
        var claimedRows: [ByteBuffer] = []
        var claimed = Set<ExactID>()
        var changes = ChangeSet()
        var counts: [Int] = []
        for operations in writes {
            var count = 0
            for operation in operations {
                guard case let .put(records, classes) = operation else { return nil }
                for storedClass in classes where claimed.insert(ExactID(storedClass.name)).inserted {
                    guard let claim = unchangedClaims[ExactID(storedClass.name)], claim.claiming == storedClass.encoded else { return nil }
                    claimedKeys.append(ByteBuffer(bytes: StorageKey(storedClass.name, maxKeySize: maxKeySize).bytes))
                    claimedRows.append(ByteBuffer(bytes: claim.stored))
                }
                var moves = false
                rows.add(records) { key, className in
                    // A record moving between classes within the writes: its log entry needs `commitGroup`.
                    if let earlier = classOfKey[key], !earlier.hasSameUTF8(as: className) { moves = true }
                    classOfKey[key] = className
                }
                guard !moves else { return nil }
                changes.append(written: records, leaving: [])
                count += records.count
            }
            counts.append(count)
        }
        // Nothing to write, or a migration refuses the writes: `commitGroup` says so.
        guard !changes.isEmpty, (try? checkMigrations()) != nil else { return nil }
        let connection: PostgresConnection
        do throws(DatabaseError) {
            connection = try leaseBlocking("writing")
        } catch {
            return writes.map { _ in .failure(error) }
        }
        do throws(DatabaseError) {
            if hasPutProcedure == nil {
                hasPutProcedure = try run(schema.putProcedureExistsQuery, on: connection, "writing").rows.first.flatMap { try? $0.decode(Bool.self) } ?? false
                guard hasPutProcedure == true else {
                    pool.release(connection)
                    return nil
                }
            }
            _ = try run(
                PostgresQuery(
                    unsafeSQL: "CALL \(schema.putProcedure)($1, $2, $3, $4, $5::bytea[], $6::bytea[], $7::bytea[], $8::bytea[], $9::bytea[], $10::bytea[], $11, $12)",
                    binds: binds(
                        schema.nameBytes, catalog.version, entry != nil, ByteBuffer(bytes: entry ?? []), claimedKeys, claimedRows,
                        rows.keys, rows.classKeys, rows.classNames, rows.values, ByteBuffer(bytes: ChangeLog.encode(changes)), schema.prefix)),
                on: connection, "writing")
            pool.release(connection)
            notifier.wakeAll()
            return counts.map { .success($0) }
        } catch {
            pool.release(connection, broken: connection.isClosed)
            guard Self.isRefusal(error), case let .server(operation, message) = error else { return writes.map { _ in .failure(error) } }
            // The notification, sent after the commit, refused (its queue full): the records
            // were kept, but an error is no proof of that, and writing them again would log them twice.
            if message.contains("SQLSTATE 54000") {
                let doubt = DatabaseError.server(operation: operation, message: message + "; the write may or may not have committed")
                return writes.map { _ in .failure(doubt) }
            }
            // Refused before its commit (by the procedure's checks, or by the server): nothing was
            // kept, and `commitGroup` writes the general way, reading everything again.
            if message.contains("SQLSTATE 42883") {
                hasPutProcedure = nil  // Gone: asked again.
            } else if message.contains("SQLSTATE 42501") || message.contains("SQLSTATE 2D000") {
                hasPutProcedure = false  // Not this role's to call, or not callable here: the general way from now on.
            }
            return nil
        }
    }

    /// Remembers the claims of `storedClasses` over `stored` (rows and their bytes) that record
    /// nothing, for `fastPut`.
    func rememberClaims(_ storedClasses: [StoredClass], over stored: [(row: StoredClass, bytes: [UInt8])]) {
        for storedClass in storedClasses {
            guard let existing = stored.first(where: { $0.row.name.hasSameUTF8(as: storedClass.name) }) else { continue }
            unchangedClaims[ExactID(storedClass.name)] = (storedClass.encoded, existing.bytes)
        }
    }
}
