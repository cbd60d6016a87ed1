import LocalLMDBLMDB
import LocalLMDBStore
import PostgresNIO

// A device's push in one round trip (`SyncSchema.pushProcedure`). All of it runs on the engine's thread.
extension PostgresEngine {
    /// Pushes `push` with one call of the store's push procedure, when every write in it is a put,
    /// it records no class, the store has no index, and the client holds what the procedure checks
    /// of the store (`putBasis`). Returns false when the push is not such, or the procedure
    /// refused it before anything was kept (a write that does not simply replace its record's
    /// version: a conflict or a tie): `pushSync` then pushes it the general way, which decides and
    /// logs it. Its result is the general way's for such a push: no version refused.
    /// A call that failed in any way returns false too: the general way settles the push, which
    /// is idempotent by its stamps (a push that was kept finds its stamps there, and changes and
    /// logs nothing).
    func fastPush(_ push: SyncPush) throws(DatabaseError) -> Bool {
        guard hasPushProcedure != false, push.classRows.isEmpty, !push.writes.isEmpty, let basis = putBasis,
              (try? checkMigrations(entry: basis.migrationEntry)) != nil
        else { return false }
        var rows = RecordRows()
        rows.add(push.records) { _, _ in }
        guard rows.keys.count == push.writes.count, push.records.count == push.writes.count else { return false }
        var ids: [ByteBuffer] = [], times: [Int64] = [], baseTimes: [Int64] = [], baseDevices: [String] = []
        for (index, write) in push.writes.enumerated() {
            // Every write a put, its record at its own index, keyed as the write.
            guard write.record == index, rows.keys[index] == ByteBuffer(bytes: write.key) else { return false }
            ids.append(ByteBuffer(string: write.id))
            times.append(Int64(bitPattern: write.time))
            baseTimes.append(Int64(bitPattern: write.base.time))
            baseDevices.append(write.base.device)
        }
        var changes = ChangeSet()
        changes.append(written: push.records, leaving: [])
        let entry = basis.migrationEntry
        let connection = try leaseBlocking("synchronizing")
        do throws(DatabaseError) {
            if hasPushProcedure == nil {
                let exists = SyncSchema(schema: schema).pushProcedureExistsQuery
                hasPushProcedure = try run(exists, on: connection, "synchronizing").rows.first.flatMap { try? $0.decode(Bool.self) } ?? false
                guard hasPushProcedure == true else {
                    pool.release(connection)
                    return false
                }
            }
            _ = try run(
                PostgresQuery(
                    unsafeSQL: """
                        CALL \(SyncSchema(schema: schema).pushProcedure)($1, $2, $3, $4, $5, $6::bytea[], $7::bytea[], $8::int8[], $9::int8[],
                            $10::text[], $11::bytea[], $12::bytea[], $13::bytea[], $14, $15)
                        """,
                    binds: binds(
                        schema.nameBytes, basis.indexVersion, entry != nil, ByteBuffer(bytes: entry ?? []), push.device,
                        rows.keys, ids, times, baseTimes, baseDevices, rows.classKeys, rows.classNames, rows.values,
                        ByteBuffer(bytes: ChangeLog.encode(changes)), schema.prefix)),
                on: connection, "synchronizing")
            pool.release(connection)
            notifier.wakeAll()
            procedurePushes += 1
            return true
        } catch {
            pool.release(connection, broken: connection.isClosed)
            switch Self.routineVerdict(error) {
            case .gone: hasPushProcedure = nil  // Asked again.
            case .unusable: hasPushProcedure = false  // The general way from now on.
            case nil: break
            }
            // Even an error that may have come after the commit (a cancel, a full notification
            // queue): the general way settles it, since a push is idempotent by its stamps (one
            // that was kept finds its stamps there, and changes and logs nothing).
            return false
        }
    }
}
