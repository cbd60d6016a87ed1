import LocalLMDBLMDB
import LocalLMDBStore
import PostgresNIO

// A device's push in one round trip (`SyncSchema.pushProcedure`): from the engine's thread
// (`fastPush`), or from the pushing task (`pushFromTask`).
extension PostgresEngine {
    /// Pushes `push` with one call of the store's push procedure, when every write in it is a put,
    /// it records no class, the store has no index, and the client holds what the procedure checks
    /// of the store (`putBasis`). Returns false when the push is not such, or the procedure
    /// refused it before anything was kept (a write that does not simply replace its record's
    /// version: a conflict or a tie): `pushSync` then pushes it the general way, which decides and
    /// logs it. Its result is the general way's for such a push: no version refused.
    /// A call that failed in any way returns false too: the general way settles the push, which
    /// is idempotent by its stamps (a push that was kept finds its stamps there, and changes and
    /// logs nothing). On the thread.
    func fastPush(_ push: SyncPush) throws(DatabaseError) -> Bool {
        guard hasPushProcedure != false, let basis = putBasis, let call = pushCall(push, basis: basis) else { return false }
        let connection = try leaseBlocking("synchronizing")
        do throws(DatabaseError) {
            guard try hasRoutine(&hasPushProcedure, exists: syncSchema.pushProcedureExistsQuery, on: connection, "synchronizing") else {
                pool.release(connection)
                return false
            }
            _ = try run(call, on: connection, "synchronizing")
            pool.release(connection)
            notifier.wakeAll()
            procedurePushes.withLock { $0 += 1 }
            return true
        } catch {
            pool.release(connection, broken: connection.isClosed)
            Self.note(error, about: &hasPushProcedure)
            // Even an error that may have come after the commit (a cancel, a full notification
            // queue): the general way settles it, since a push is idempotent by its stamps (one
            // that was kept finds its stamps there, and changes and logs nothing).
            return false
        }
    }

    /// What `pushFromTask` did.
    enum PushFromTask {
        /// The procedure made the push.
        case pushed
        /// The procedure refused the push before keeping anything (a conflict, a tie): the
        /// general way decides it.
        case refused
        /// Nothing was tried, or the call failed otherwise: the thread settles the push
        /// (`fastPush`, then the general way), learning why.
        case untried
    }

    /// `fastPush` from the caller's task, on an idle connection: no hop through the thread, when
    /// the thread has published that the store has the procedure and the basis of its checks
    /// (`publishedPushProcedure`, `publishedPutBasis`: a stale basis is refused on the server),
    /// no session's transaction is open and the engine is not closing (counted with the writes
    /// from tasks, which `close()` waits for).
    nonisolated(nonsending) func pushFromTask(_ push: SyncPush) async -> PushFromTask {
        guard publishedPushProcedure.withLock({ $0 }), let basis = publishedPutBasis.withLock({ $0 }),
              let call = pushCall(push, basis: basis), let connection = leaseForWriteFromTask()
        else { return .untried }
        do throws(DatabaseError) {
            _ = try await sendFromTask(call, on: connection, "synchronizing")
            notifier.wakeAll()
            procedurePushes.withLock { $0 += 1 }
            return .pushed
        } catch {
            guard case let .server(_, message) = error, Self.sqlState(in: message) == Substring(StoreSchema.putFallbackState) else { return .untried }
            return .refused
        }
    }

    /// The procedure's call for `push` against `basis`: nil when the push is not one it takes
    /// (a write that is not a put, a class to record, no write) or a migration refuses it.
    /// Reads no state of the thread's.
    func pushCall(_ push: SyncPush, basis: PutBasis) -> PostgresQuery? {
        guard push.classRows.isEmpty, !push.writes.isEmpty, (try? checkMigrations(entry: basis.migrationEntry)) != nil else { return nil }
        var rows = RecordRows()
        rows.add(push.records) { _, _ in }
        guard rows.keys.count == push.writes.count, push.records.count == push.writes.count else { return nil }
        var ids: [ByteBuffer] = [], times: [Int64] = [], baseTimes: [Int64] = [], baseDevices: [String] = []
        for (index, write) in push.writes.enumerated() {
            // Every write a put, its record at its own index, keyed as the write.
            guard write.record == index, rows.keys[index] == ByteBuffer(bytes: write.key) else { return nil }
            ids.append(ByteBuffer(string: write.id))
            times.append(Int64(bitPattern: write.time))
            baseTimes.append(Int64(bitPattern: write.base.time))
            baseDevices.append(write.base.device)
        }
        var changes = ChangeSet()
        changes.append(written: push.records, leaving: [])
        let entry = basis.migrationEntry
        return PostgresQuery(
            unsafeSQL: """
                CALL \(SyncSchema(schema: schema).pushProcedure)($1, $2, $3, $4, $5, $6::bytea[], $7::bytea[], $8::int8[], $9::int8[],
                    $10::text[], $11::bytea[], $12::bytea[], $13::bytea[], $14, $15)
                """,
            binds: binds(
                schema.nameBytes, basis.indexVersion, entry != nil, ByteBuffer(bytes: entry ?? []), push.device,
                rows.keys, ids, times, baseTimes, baseDevices, rows.classKeys, rows.classNames, rows.values,
                ByteBuffer(bytes: ChangeLog.encode(changes)), schema.prefix))
    }
}
