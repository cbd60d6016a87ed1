import Foundation
import LocalLMDBLMDB
import LocalLMDBStore
import PostgresNIO

// Writes of records by key in one round trip (`StoreSchema.putProcedure`): from the engine's
// thread (`fastPut`, a group commit's), or from the writer's own task (`putFromTask`), which
// then makes no hop through the thread.
extension PostgresEngine {
    /// Commits `writes` with one call of the store's put procedure, when every operation is a put,
    /// the store has no index, and the client holds all the procedure checks (the index catalog's
    /// version and the migration entry its last write transaction read, and every claimed class
    /// as a claim that recorded nothing found it). Returns nil when the writes are not such, or
    /// the procedure refused them before anything was kept: `commitGroup` then writes them.
    /// On the thread only.
    ///
    /// The results are `commitGroup`'s: the same records stored, the same log entry, the same
    /// counts. A call whose answer was lost may have committed: it is not repeated.
    func fastPut(_ writes: [[WriteOperation]]) -> [Result<Int, DatabaseError>]? {
        guard hasPutProcedure != false, let basis = putBasis, let call = putCall(writes, basis: basis) else { return nil }
        let connection: PostgresConnection
        do throws(DatabaseError) {
            connection = try leaseBlocking("writing")
        } catch {
            return writes.map { _ in .failure(error) }
        }
        do throws(DatabaseError) {
            guard try hasRoutine(&hasPutProcedure, exists: schema.putProcedureExistsQuery, on: connection, "writing") else {
                pool.release(connection)
                return nil
            }
            _ = try run(call.query, on: connection, "writing")
            pool.release(connection)
            notifier.wakeAll()
            return call.counts.map { .success($0) }
        } catch {
            pool.release(connection, broken: connection.isClosed)
            Self.note(error, about: &hasPutProcedure)
            guard let failure = Self.putFailure(error) else { return nil }
            return writes.map { _ in .failure(failure) }
        }
    }

    /// Commits `operations` (one atomic write) with one call of the put procedure, from the
    /// caller's task, on an idle connection: no hop through the thread. Returns nil, having kept
    /// nothing, when that cannot be (the thread has not published a basis, a session's
    /// transaction is open, no connection is idle, the engine is closing) or the procedure
    /// refused the write before its commit (`putFailure`): the caller then submits it to the
    /// thread, whose group commit writes it the general way, reading everything again (and
    /// learning why). A write refused so while the engine closes fails with `closed`.
    ///
    /// The basis may be one the thread has just replaced: the procedure checks every part of it
    /// on the server, so a stale one is refused there, never written against.
    nonisolated(nonsending) func putFromTask(_ operations: [WriteOperation]) async -> Result<Int, DatabaseError>? {
        guard let basis = publishedPutBasis.withLock({ $0 }), let call = putCall([operations], basis: basis),
              let connection = leaseForWriteFromTask()
        else { return nil }
        do throws(DatabaseError) {
            _ = try await sendFromTask(call.query, on: connection, "writing")
            notifier.wakeAll()
            return .success(call.counts.first ?? 0)
        } catch {
            return Self.putFailure(error).map { .failure($0) }
        }
    }

    /// An idle connection for a write from a task, the write counted as started
    /// (`sendFromTask` ends it); nil, counting nothing, when the engine is closing, a session's
    /// transaction is open or no connection is idle (the write then goes through the thread).
    func leaseForWriteFromTask() -> PostgresConnection? {
        let started = shared.withLock { shared -> Bool in
            guard !shared.closed, !shared.transactionActive else { return false }
            shared.writesFromTasks += 1
            return true
        }
        guard started else { return nil }
        guard let connection = pool.leaseIdle() else {
            endWriteFromTask()
            return nil
        }
        return connection
    }

    /// Sends `query`, a write from a task, on `connection` (`leaseForWriteFromTask`) and waits
    /// for its answer. The answer releases the connection and ends the write's count on the
    /// event loop as it comes, not once the task resumes: a closing engine waits for that, which
    /// never needs a free thread of the caller's pool (user tasks may occupy them all).
    nonisolated(nonsending) func sendFromTask(_ query: PostgresQuery, on connection: PostgresConnection, _ operation: String) async throws(DatabaseError) -> PostgresQueryResult {
        let answer = connection.send(query, logger: logger, within: queryTimeout)
        answer.whenComplete { [self] _ in
            // A connection the answer closed (lost, or past the time limit) is dropped.
            pool.release(connection)
            endWriteFromTask()
        }
        return try await answer.value(operation, busyTimeout: busyTimeout)
    }

    /// Counts a write from a task as ended, and tells a closing engine waiting for the last one.
    func endWriteFromTask() {
        let closing = shared.withLock { shared -> DispatchSemaphore? in
            shared.writesFromTasks -= 1
            assert(shared.writesFromTasks >= 0, "more writes from tasks ended than started")
            return shared.writesFromTasks == 0 ? shared.writesFromTasksEnded : nil
        }
        closing?.signal()
    }

    /// Waits until every write from a task has its answer (the engine is marked closed: no new
    /// one starts), for at most the query timeout each is bounded by. On the thread, closing.
    func waitForWritesFromTasks() {
        let ended = shared.withLock { shared -> DispatchSemaphore? in
            assert(shared.closed, "writes from tasks are waited for by a closing engine")
            guard shared.writesFromTasks > 0 else { return nil }
            let ended = DispatchSemaphore(value: 0)
            shared.writesFromTasksEnded = ended
            return ended
        }
        guard let ended else { return }
        let limit = queryTimeout.components
        let seconds = limit.seconds >= Int64(Int32.max) ? Int(Int32.max) : Int(limit.seconds) + 1
        _ = ended.wait(timeout: .now() + .seconds(seconds))
    }

    /// What a failed call of the procedure means: nil when it was refused before its commit
    /// (nothing was kept, and the general way writes instead), else the error to answer the
    /// write with. Only the states the procedure's statements raise before its commit count as
    /// refusals: its own checks (`LL001`), a deadlock or serialization failure, a missing or
    /// forbidden procedure (class 42), a transaction it may not commit in (`2D000`) or may not
    /// write in (class 25: a server whose transactions are read-only by default, which the
    /// general way's transactions override), and data or integrity errors (classes 21, 22, 23). A lock wait past the busy timeout is `busy`, with
    /// nothing kept. Anything else (a cancel, a notification queue full: raised by the commit of
    /// the notification's transaction, after the records' commit) may have followed the commit,
    /// so the write is answered as in doubt, never written again.
    static func putFailure(_ error: DatabaseError) -> DatabaseError? {
        guard case let .server(operation, message) = error, isRefusal(error) else { return error }
        if let state = sqlState(in: message), refusedBeforeCommit(state) { return nil }
        return .server(operation: operation, message: message + "; the write may or may not have committed")
    }

    /// Whether SQLSTATE `state`, raised by a call of the put procedure, was raised before its commit.
    static func refusedBeforeCommit(_ state: Substring) -> Bool {
        if [StoreSchema.putFallbackState, StoreSchema.procedureUnusableState, "40P01", "40001", "2D000"].contains(String(state)) { return true }
        return ["42", "21", "22", "23", "25"].contains(String(state.prefix(2)))
    }

    /// What a failed call of a routine of the store (the put and push procedures, the log's
    /// numbering function) says of the routine: `gone` (SQLSTATE 42883: dropped, or never made),
    /// `unusable` (`procedureUnusable`), or nil (nothing: the call failed for another reason).
    static func routineVerdict(_ error: DatabaseError) -> RoutineVerdict? {
        guard case let .server(_, message) = error, isRefusal(error) else { return nil }
        if message.contains("SQLSTATE 42883") { return .gone }
        return procedureUnusable(message) ? .unusable : nil
    }

    /// Whether the store has the routine `flag` stands for (`hasPutProcedure`, `hasPushProcedure`),
    /// asking the server (`exists`) when it is not known. On the thread.
    func hasRoutine(_ flag: inout Bool?, exists: PostgresQuery, on connection: PostgresConnection, _ operation: String) throws(DatabaseError) -> Bool {
        if flag == nil { flag = try run(exists, on: connection, operation).rows.first.flatMap { try? $0.decode(Bool.self) } ?? false }
        return flag == true
    }

    /// Notes in `flag` what a failed call of its routine says of it (`routineVerdict`): gone, it is
    /// asked again (nil); unusable, the general way from now on (false). On the thread.
    static func note(_ error: DatabaseError, about flag: inout Bool?) {
        switch routineVerdict(error) {
        case .gone: flag = nil
        case .unusable: flag = false
        case nil: break
        }
    }

    /// What a failed call says of the routine called (`routineVerdict`).
    enum RoutineVerdict {
        /// The routine does not exist (ask again later: its owner's next open makes it).
        case gone
        /// The routine cannot serve this store's connections: the general way from then on.
        case unusable
    }

    /// Whether a server error's `message` says the put and push procedures cannot serve this
    /// store's connections: not this role's to call, not callable here, read-only by default, or
    /// not read committed. Writes then take the general way from then on.
    static func procedureUnusable(_ message: String) -> Bool {
        ["42501", "2D000", "25006", StoreSchema.procedureUnusableState].contains { message.contains("SQLSTATE \($0)") }
    }

    /// The SQLSTATE a `server` error's message names (`ServerCall`: "… (SQLSTATE 12345)").
    static func sqlState(in message: String) -> Substring? {
        guard let range = message.range(of: "SQLSTATE ", options: .backwards) else { return nil }
        let state = message[range.upperBound...].prefix(5)
        return state.count == 5 ? state : nil
    }

    /// The thread's basis for the procedure's checks: nil while the index catalog or the
    /// migration entry is unknown, or the store has an index (whose entries the procedure does
    /// not write). On the thread only.
    var putBasis: PutBasis? {
        guard let catalog, catalog.byClass.isEmpty, case let .read(entry) = recordedMigrations else { return nil }
        return PutBasis(indexVersion: catalog.version, migrationEntry: entry, claims: unchangedClaims)
    }

    /// Publishes the thread's basis for `putFromTask`, when the store has the procedure. Called
    /// by the thread whenever a part of it changes.
    func publishPutBasis() {
        let basis = hasPutProcedure == true ? putBasis : nil
        publishedPutBasis.withLock { $0 = basis }
    }

    /// The procedure's call for `writes` against `basis`: nil when an operation is not a put, a
    /// claimed class is not in the basis as claimed, a record moves between classes within the
    /// writes (its log entry needs `commitGroup`), nothing is written, or a migration refuses the
    /// writes (`commitGroup` then says why). Reads no state of the thread's.
    func putCall(_ writes: [[WriteOperation]], basis: PutBasis) -> PutCall? {
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
                    guard let claim = basis.claims[ExactID(storedClass.name)], claim.claiming == storedClass.encoded else { return nil }
                    claimedKeys.append(ByteBuffer(bytes: StorageKey(storedClass.name, maxKeySize: maxKeySize).bytes))
                    claimedRows.append(ByteBuffer(bytes: claim.stored))
                }
                var moves = false
                rows.add(records) { key, className in
                    if let earlier = classOfKey[key], !earlier.hasSameUTF8(as: className) { moves = true }
                    classOfKey[key] = className
                }
                guard !moves else { return nil }
                changes.append(written: records, leaving: [])
                count += records.count
            }
            counts.append(count)
        }
        guard !changes.isEmpty, (try? checkMigrations(entry: basis.migrationEntry)) != nil else { return nil }
        let entry = basis.migrationEntry
        let query = PostgresQuery(
            unsafeSQL: "CALL \(schema.putProcedure)($1, $2, $3, $4, $5::bytea[], $6::bytea[], $7::bytea[], $8::bytea[], $9::bytea[], $10::bytea[], $11, $12)",
            binds: binds(
                schema.nameBytes, basis.indexVersion, entry != nil, ByteBuffer(bytes: entry ?? []), claimedKeys, claimedRows,
                rows.keys, rows.classKeys, rows.classNames, rows.values, ByteBuffer(bytes: ChangeLog.encode(changes)), schema.prefix))
        return PutCall(query: query, counts: counts)
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

/// What a put by key needs of the engine thread's state for the put procedure's checks: the
/// index catalog's version (of a catalog with no index), the migration entry, and the claims
/// that recorded nothing, by class name (the claiming row's bytes and the stored row's).
struct PutBasis: Sendable {
    let indexVersion: Int64
    let migrationEntry: [UInt8]?
    let claims: [ExactID: (claiming: [UInt8], stored: [UInt8])]
}

/// A call of the put procedure, and the records each of its writes counts.
struct PutCall: Sendable {
    let query: PostgresQuery
    let counts: [Int]
}
