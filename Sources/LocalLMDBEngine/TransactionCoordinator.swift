import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// Every write to one environment: user transactions and group-committed writes.
///
/// Confinement: every member is used only on `thread`, the engine's `WriterThread`; each entry
/// point checks this and reports `wrongThread` otherwise. `Session` is the only caller.
///
/// The transaction rules, kept here alone:
/// - A user transaction belongs to one session (its owner) and stays open across awaits and
///   threads until its owner commits or rolls it back (or closes, or is deinitialized).
/// - While it is open, other sessions' writes and `begin`s wait for it, each for at most its
///   busy timeout, after which it fails with `busy`.
/// - Its operations are journaled. When one fails (the map is full, a class name conflict, …),
///   the transaction is rebuilt without it: abort, grow the map if needed, begin again, replay
///   the journal. If it cannot be rebuilt, the transaction *fails*: its writes, reads and commit
///   are refused with `transactionFailed` until its owner rolls it back. It never turns into
///   automatic commits.
/// - A commit that fails keeps none of the transaction's changes and ends it.
/// - Writes outside a user transaction wait in `pending`; one flush commits all of them in one
///   durable transaction (group commit) and then completes each.
package final class TransactionCoordinator: @unchecked Sendable {
    /// A session's identity as a transaction owner: unique for the life of the process.
    typealias Owner = UInt64
    /// Receives the outcome of a write: the number of records written or deleted, or the error.
    typealias Completion = @Sendable (Result<Int, DatabaseError>) -> Void
    /// Receives the outcome of a `begin`.
    typealias BeginCompletion = @Sendable (Result<Void, DatabaseError>) -> Void

    /// A reference type, so that appending to the journal never copies it.
    final class UserTransaction {
        let owner: Owner
        /// The LMDB transaction; nil once the user transaction has failed.
        var write: WriteTransaction?
        var journal: [WriteOperation] = []
        /// What the journal changed, for the change log.
        var changes = ChangeSet()
        /// Why the transaction failed, when it has.
        var failure: DatabaseError?
        /// LMDB's id for the transaction's commit. Every LMDB transaction it is rebuilt in must
        /// have the same: another id means another writer committed in between, and replaying
        /// the journal over that commit could undo it.
        let transactionID: Int
        /// The cross-process writer lock, held from begin to end, across rebuilds: no other
        /// LocalLMDB process commits while the transaction is open (see `WriterLock`).
        let writerLock: WriterLockHold

        init(owner: Owner, write: consuming WriteTransaction, writerLock: WriterLockHold) {
            self.owner = owner
            self.transactionID = write.transaction.id
            self.writerLock = writerLock
            self.write = .some(write)
        }

        /// The open LMDB transaction; `transactionFailed` when the user transaction has failed.
        func transaction() throws(DatabaseError) -> Transaction {
            guard let transaction = write?.transaction else { throw .transactionFailed(reason: failure?.description ?? "") }
            return transaction
        }
    }

    struct PendingWrite {
        let operation: WriteOperation
        let completion: Completion
        /// Identifies a write waiting for another owner's transaction, for its busy timeout.
        var waiter: UInt64 = 0
    }

    /// An owner waiting for another owner's transaction to end before beginning its own.
    private struct WaitingBegin {
        let owner: Owner
        let completion: BeginCompletion
        let waiter: UInt64
        let busyTimeout: Duration
    }

    /// How many writes wait for another owner's transaction to end. Writer thread only.
    package var writesWaitingForATransaction: Int { pending.count { $0.waiter != 0 } }

    /// How many batches in parts the writer let go of, their next part late (for tests).
    package let streamsLetGo = Locked(0)

    // Internal, not private, for the extension in TransactionCoordinator+Streams.swift.
    let thread: WriterThread
    let store: RecordStore
    var environment: Environment { store.environment }

    var user: UserTransaction?
    private var waitingToBegin: [WaitingBegin] = []
    var pending: [PendingWrite] = []
    /// The last id given to something waiting for another owner's transaction.
    private var lastWaiter: UInt64 = 0
    /// A delayed flush is waiting to run.
    var delayedFlushScheduled = false
    /// Group commits so far. A delayed flush runs only if no flush came first: otherwise it
    /// would commit, alone, the first write of the next group.
    var flushCount: UInt64 = 0
    /// How many writes a group commit is expected to carry: the largest recent group, decaying
    /// by one per commit. A flush waits (briefly) for that many, since concurrent writers come
    /// back together after each commit; a lone writer is never delayed for long.
    var lastGroupSize = 1
    /// The longest a write waits for others to join its group: about half a durable commit.
    static let groupWait = Duration.microseconds(150)
    /// How often a failing transaction is rebuilt (growing the map) before giving up.
    static let maxAttempts = 40

    init(thread: WriterThread, store: RecordStore) {
        self.thread = thread
        self.store = store
    }

    /// The coordinator's invariants, checked in debug builds when each step the writer thread
    /// runs (`begin`, `perform`, `commit`, `rollback`, `flush`, ...) ends: an open transaction
    /// has its LMDB transaction exactly when it has not failed; with none open, no begin and no
    /// write waits for one; a group is expected to hold at least one write.
    func invariantsHold() -> Bool {
        if let open = user {
            guard (open.write == nil) == (open.failure != nil) else { return false }
        } else {
            guard waitingToBegin.isEmpty, !pending.contains(where: { $0.waiter != 0 }) else { return false }
        }
        return lastGroupSize >= 1
    }

    func checkThread(_ operation: String) throws(DatabaseError) {
        guard thread.isCurrent else { throw .wrongThread(operation: operation) }
    }

    // MARK: User transactions

    /// True when any owner has a transaction open.
    var hasUserTransaction: Bool { user != nil }

    /// True when `owner` has a transaction open (failed or not).
    func hasTransaction(owner: Owner) -> Bool {
        thread.isCurrent && user?.owner == owner
    }

    /// True when `owner` has a transaction open that has failed.
    func hasFailedTransaction(owner: Owner) -> Bool {
        guard thread.isCurrent, let open = user, open.owner == owner else { return false }
        return open.write == nil
    }

    /// Begins a transaction for `owner`, completing once it is open. Waits while another
    /// owner's transaction is open, for at most `busyTimeout`. An open transaction of `owner`'s
    /// is rolled back when `override` is true, and left intact (with an error) otherwise.
    func begin(owner: Owner, override: Bool, busyTimeout: Duration, completion: @escaping BeginCompletion) {
        defer { assert(invariantsHold(), "the transaction coordinator broke its invariants") }
        beginning(owner: owner, override: override, busyTimeout: busyTimeout, completion: completion)
    }

    /// `begin`, inside another step.
    private func beginning(owner: Owner, override: Bool, busyTimeout: Duration, completion: @escaping BeginCompletion) {
        do throws(DatabaseError) {
            try checkThread("startTransaction")
        } catch {
            return completion(.failure(error))
        }
        if let open = user {
            guard open.owner == owner else {
                let waiter = nextWaiter(busyTimeout)
                waitingToBegin.append(WaitingBegin(owner: owner, completion: completion, waiter: waiter, busyTimeout: busyTimeout))
                return
            }
            guard override else { return completion(.failure(.transactionAlreadyActive)) }
            open.write.take()?.abort()
            user = nil
        }
        flushPending()
        do throws(DatabaseError) {
            let writerLock = try environment.holdWriterLock()
            user = UserTransaction(owner: owner, write: try environment.beginWrite(), writerLock: writerLock)
            completion(.success(()))
        } catch {
            completion(.failure(error))
            transactionEnded()
        }
    }

    /// Applies `operation` in `owner`'s transaction; nil when `owner` has none open.
    ///
    /// A failed operation leaves no trace: the transaction is aborted and rebuilt from its
    /// journal (in the map grown first, when the map was full, and the operation tried again).
    func applyInTransaction(_ operation: WriteOperation, owner: Owner) throws(DatabaseError) -> Int? {
        try checkThread("write")
        guard let open = user, open.owner == owner else { return nil }
        do throws(DatabaseError) {
            return try retryingWhenTheMapFills { () throws(DatabaseError) -> Int in
                if open.write == nil, open.failure == nil { try rebuild(open) }  // After growing the map.
                do throws(DatabaseError) {
                    let result = try store.apply(operation, in: try open.transaction(), changes: &open.changes)
                    open.journal.append(operation)
                    return result
                } catch {
                    if case .transactionFailed = error { throw error }
                    open.write.take()?.abort()
                    throw error
                }
            }
        } catch {
            // The operation failed for good (or the map is at its maximum): the transaction goes
            // on without it, unless it cannot be rebuilt.
            if open.write == nil, open.failure == nil { try rebuild(open) }
            throw error
        }
    }

    /// Rebuilds `open`'s aborted transaction from its journal.
    /// - Throws: `transactionFailed`, and the transaction stays failed until its owner rolls
    ///   it back, when it cannot be rebuilt.
    private func rebuild(_ open: UserTransaction) throws(DatabaseError) {
        assert(open.write == nil, "rebuilding a transaction that is still open")
        do throws(DatabaseError) {
            open.write = try rebuild(open.journal, expecting: open.transactionID, changes: &open.changes)
        } catch {
            open.failure = error
            throw .transactionFailed(reason: error.description)
        }
    }

    /// Applies writes that `owner` made in its transaction and that were acknowledged before
    /// reaching this thread (`Session` buffers them). Their callers were told they succeeded,
    /// so a failure cannot be reported to them: it fails the whole transaction, whose commit
    /// then throws, and whose changes the owner must roll back.
    /// - Throws: `transactionFailed` when the writes fail, or when `owner`'s transaction is no
    ///   longer open (the writes cannot be kept).
    func applyAcknowledged(_ operation: WriteOperation, owner: Owner) throws(DatabaseError) {
        defer { assert(invariantsHold(), "the transaction coordinator broke its invariants") }
        do throws(DatabaseError) {
            guard try applyInTransaction(operation, owner: owner) != nil else {
                throw .transactionFailed(reason: "the transaction ended before its writes were applied")
            }
        } catch {
            if case .transactionFailed = error { throw error }
            if let open = user, open.owner == owner {
                open.write.take()?.abort()
                open.failure = error
            }
            throw .transactionFailed(reason: "a write made in it failed when applied: \(error.description)")
        }
    }

    /// Commits `owner`'s transaction.
    /// - Throws: `noActiveTransaction`; `transactionFailed` when it has failed (it stays open,
    ///   failed, for its owner to roll back); the commit's error, when the commit fails (none of
    ///   its changes are kept and it is over).
    func commit(owner: Owner) throws(DatabaseError) {
        defer { assert(invariantsHold(), "the transaction coordinator broke its invariants") }
        try checkThread("commitTransaction")
        guard let open = user, open.owner == owner else { throw .noActiveTransaction }
        guard let current = open.write.take() else { throw .transactionFailed(reason: open.failure?.description ?? "") }
        user = nil
        defer { transactionEnded() }
        // The open LMDB transaction first; after a full map, the transaction rebuilt in a larger one.
        var first: WriteTransaction? = consume current
        try retryingWhenTheMapFills { () throws(DatabaseError) in
            let write: WriteTransaction
            if let open = first.take() {
                write = open
            } else {
                write = try rebuild(open.journal, expecting: open.transactionID, changes: &open.changes)
            }
            let logged: UInt64?
            do throws(DatabaseError) {
                logged = try store.logChanges(open.changes, in: write.transaction)
            } catch {
                write.abort()
                throw error
            }
            try write.commit()
            if let logged { didCommit?(logged) }
        }
    }

    /// Runs `attempt`, and again after growing the map each time it fails because the map is
    /// full, at most `maxAttempts` times: the one place where a failed write grows the map and
    /// tries again. `attempt` must leave nothing behind when it throws (its LMDB transaction
    /// ended), so that the map can grow.
    func retryingWhenTheMapFills<R: ~Copyable>(
        _ attempt: () throws(DatabaseError) -> R
    ) throws(DatabaseError) -> R {
        var grown = 0
        while true {
            do throws(DatabaseError) {
                return try attempt()
            } catch where error.isMapFull && grown < Self.maxAttempts {
                try environment.growMap()
                grown += 1
            }
        }
    }

    /// Publishes a commit that reached the data file but that this process's readers are not
    /// shown, because its writer died before publishing it (see
    /// `Environment.hasUnpublishedCommit`): taking LMDB's writer lock recovers the dead owner's
    /// lock, and LMDB then publishes the last commit; should that not do it, a commit of its own
    /// (with no change to any record) publishes it with its own. Does nothing while a user
    /// transaction of this process is open: beginning it took the lock, which published it.
    func publishCommits() {
        guard thread.isCurrent, user == nil, environment.hasUnpublishedCommit else { return }
        if let write = try? environment.beginWrite() { write.abort() }
        guard environment.hasUnpublishedCommit else { return }
        _ = try? commitNew(reserving: 0) { transaction, _ throws(DatabaseError) in try store.markPublished(in: transaction) }
    }

    /// Called on this thread after each commit that added to the change log.
    var didCommit: (@Sendable (UInt64) -> Void)?

    /// Rolls back `owner`'s transaction, failed or not.
    func rollback(owner: Owner) throws(DatabaseError) {
        defer { assert(invariantsHold(), "the transaction coordinator broke its invariants") }
        try checkThread("rollbackTransaction")
        guard let open = user, open.owner == owner else { throw .noActiveTransaction }
        user = nil
        open.write.take()?.abort()
        transactionEnded()
    }

    /// Rolls back `owner`'s transaction if it has one, and commits the writes waiting for a
    /// group commit: for a session that closes or is deinitialized.
    func detach(owner: Owner) {
        defer { assert(invariantsHold(), "the transaction coordinator broke its invariants") }
        guard thread.isCurrent else { return }
        if let open = user, open.owner == owner {
            user = nil
            open.write.take()?.abort()
            transactionEnded()
        }
        flushPending()
    }

    /// Runs `body` in `owner`'s open transaction; nil when it has none.
    func readInTransaction<R>(owner: Owner, _ body: (Transaction) throws(DatabaseError) -> R) throws(DatabaseError) -> R? {
        try checkThread("read")
        guard let open = user, open.owner == owner else { return nil }
        return try body(try open.transaction())
    }

    /// Makes the next rebuild of a user transaction fail with this error: for tests of what a
    /// failed transaction does, which real faults (another process changing the database
    /// between the abort and the replay) cause too rarely to test.
    var failNextRebuild: DatabaseError?
    /// Runs once, before the next rebuild of a user transaction begins its new LMDB transaction:
    /// for tests in which another process commits in that gap.
    var beforeRebuild: (() -> Void)?

    /// Begins a new write transaction and replays `journal` into it; `changes` becomes what the
    /// journal changed.
    /// - Throws: `transactionFailed` when the new transaction's id is not `transactionID`:
    ///   another writer committed since the journal was first applied, and the journal, which
    ///   read the state before that commit (a count deleted, a record replaced), must not be
    ///   replayed over it. The caller's transaction then fails; nothing of it is written.
    private func rebuild(
        _ journal: [WriteOperation], expecting transactionID: Int, changes: inout ChangeSet
    ) throws(DatabaseError) -> WriteTransaction {
        if let fault = failNextRebuild {
            failNextRebuild = nil
            throw fault
        }
        if let hook = beforeRebuild {
            beforeRebuild = nil
            hook()
        }
        return try retryingWhenTheMapFills { () throws(DatabaseError) -> WriteTransaction in
            let write = try environment.beginWrite()
            guard write.transaction.id == transactionID else {
                let found = write.transaction.id
                write.abort()
                throw .transactionFailed(
                    reason: "another writer committed while the transaction was rebuilt to grow the map "
                        + "(transaction \(found - 1) committed after \(transactionID - 1)); replaying it could undo that commit")
            }
            do throws(DatabaseError) {
                var replayed = ChangeSet()
                for operation in journal { _ = try store.apply(operation, in: write.transaction, changes: &replayed) }
                changes = replayed
                return write
            } catch {
                write.abort()
                throw error
            }
        }
    }

    /// After a user transaction ends: commit the writes that waited for it, then open the next
    /// waiting owner's transaction.
    private func transactionEnded() {
        flushPending()
        while user == nil, !waitingToBegin.isEmpty {
            let next = waitingToBegin.removeFirst()
            beginning(owner: next.owner, override: false, busyTimeout: next.busyTimeout, completion: next.completion)
        }
    }

    /// A new waiter id, which fails with `busy` unless it stops waiting within `busyTimeout`.
    func nextWaiter(_ busyTimeout: Duration) -> UInt64 {
        lastWaiter += 1
        let waiter = lastWaiter
        thread.submit(after: busyTimeout) { [self] in expire(waiter, busyTimeout: busyTimeout) }
        return waiter
    }

    /// Fails `waiter` with `busy` if it is still waiting for another owner's transaction.
    private func expire(_ waiter: UInt64, busyTimeout: Duration) {
        guard user != nil else { return }  // Not blocked any more: it is about to be served.
        if let index = waitingToBegin.firstIndex(where: { $0.waiter == waiter }) {
            waitingToBegin.remove(at: index).completion(.failure(.busy(timeout: busyTimeout)))
        } else if let index = pending.firstIndex(where: { $0.waiter == waiter }) {
            pending.remove(at: index).completion(.failure(.busy(timeout: busyTimeout)))
        }
    }
}
