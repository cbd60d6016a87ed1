import Foundation

/// One face's connection to an engine: its identity as a transaction owner, its busy timeout,
/// and whether it is closed or has a transaction open.
///
/// Every rule a face needs about where an operation runs lives here, once, with an `async`
/// entry point for the actor and a blocking one for the synchronous face:
/// - writes, `begin`, `commit` and `rollback` run on the engine's writer thread (LMDB's write
///   transaction belongs to the thread that began it);
/// - reads run in this session's open transaction (on the writer thread) when it has one, and
///   otherwise in a read-only snapshot on the caller's thread, never through the writer;
/// - a blocking call that would wait for itself fails at once with `wouldDeadlock`;
/// - nothing runs after `close()`.
final class Session: Sendable {
    typealias Owner = TransactionCoordinator.Owner

    let engine: DatabaseEngine
    let owner: Owner
    let busyTimeout: Duration

    private struct State {
        var inTransaction = false
        var closed = false
    }

    private let state = Locked(State())
    private static let owners = Locked<Owner>(0)

    /// Opens (or joins) the engine for `directory`.
    init(directory: URL, configuration: DatabaseConfiguration) throws(LocalDatabaseError) {
        engine = try DatabaseEngine.attach(directory: directory, configuration: configuration)
        busyTimeout = configuration.busyTimeout
        owner = Self.owners.withLock { count in
            count += 1
            return count
        }
    }

    /// Whether this session has a transaction open, as of its last begin, commit or rollback.
    var transactionActive: Bool {
        state.withLock { $0.inTransaction }
    }

    /// Throws `closed` after `close()`; returns whether a transaction is open.
    private func checkOpen() throws(LocalDatabaseError) -> Bool {
        let (closed, inTransaction) = state.withLock { ($0.closed, $0.inTransaction) }
        guard !closed else { throw .closed }
        return inTransaction
    }

    private func checkWritable() throws(LocalDatabaseError) {
        _ = try checkOpen()
        guard !engine.configuration.readOnly else { throw .readOnly }
    }

    /// Records on the writer thread whether the transaction is open, after it may have changed.
    private func updateTransactionState(_ coordinator: TransactionCoordinator) {
        let open = coordinator.hasTransaction(owner: owner)
        state.withLock { $0.inTransaction = open }
    }

    // MARK: Writing

    /// Applies `operation`: in this session's transaction, or else in the next group commit.
    nonisolated(nonsending) func perform(_ operation: WriteOperation) async throws(LocalDatabaseError) -> Int {
        try checkWritable()
        return try await onWriterThread(performing(operation))
    }

    /// `perform`, blocking the calling thread.
    func performBlocking(_ operation: WriteOperation, _ name: String) throws(LocalDatabaseError) -> Int {
        try checkWritable()
        return try blockingOnWriterThread(name, performing(operation))
    }

    private func performing(_ operation: WriteOperation) -> WriterJob<Int> {
        let (owner, busyTimeout) = (owner, busyTimeout)
        return { coordinator, done in coordinator.perform(operation, owner: owner, busyTimeout: busyTimeout, completion: done) }
    }

    // MARK: Transactions

    /// Begins a transaction (see `TransactionCoordinator.begin`).
    nonisolated(nonsending) func begin(override: Bool) async throws(LocalDatabaseError) {
        try checkWritable()
        try await onWriterThread(beginning(override: override))
    }

    /// `begin`, blocking the calling thread.
    func beginBlocking(override: Bool) throws(LocalDatabaseError) {
        try checkWritable()
        try blockingOnWriterThread("startTransaction", beginning(override: override))
    }

    private func beginning(override: Bool) -> WriterJob<Void> {
        { [self] coordinator, done in
            coordinator.begin(owner: owner, override: override, busyTimeout: busyTimeout) { [self] result in
                updateTransactionState(coordinator)
                done(result)
            }
        }
    }

    /// Commits this session's transaction.
    nonisolated(nonsending) func commit() async throws(LocalDatabaseError) {
        _ = try checkOpen()
        try await onWriterThread(ending(commit: true))
    }

    /// Rolls back this session's transaction.
    nonisolated(nonsending) func rollback() async throws(LocalDatabaseError) {
        _ = try checkOpen()
        try await onWriterThread(ending(commit: false))
    }

    /// `commit` or `rollback`, blocking the calling thread.
    func endBlocking(commit: Bool) throws(LocalDatabaseError) {
        _ = try checkOpen()
        try blockingOnWriterThread(commit ? "commitTransaction" : "rollbackTransaction", ending(commit: commit))
    }

    private func ending(commit: Bool) -> WriterJob<Void> {
        { [self] coordinator, done in
            let result = Result { () throws(LocalDatabaseError) in
                if commit { try coordinator.commit(owner: owner) } else { try coordinator.rollback(owner: owner) }
            }
            updateTransactionState(coordinator)
            done(result)
        }
    }

    // MARK: Reading

    /// Whether a read must go through this session's open transaction (`readInTransaction`);
    /// when not, it runs in a `snapshot` on the calling thread.
    ///
    /// The faces ask, then call the snapshot's concrete read directly: the snapshot path is the
    /// hot one, and reaching it through a generic `SessionRead` (or an `async` generic function)
    /// costs witness-table and metadata look-ups on every call (measured: +0.5 µs per read by id).
    func readsInTransaction() throws(LocalDatabaseError) -> Bool {
        try checkOpen()
    }

    /// `readsInTransaction`, for a blocking read: also fails fast when the read would wait for
    /// itself (see `Session`).
    func readsInTransactionBlocking(_ name: String) throws(LocalDatabaseError) -> Bool {
        let inTransaction = try checkOpen()
        try checkNotRestoring(name)
        return inTransaction
    }

    /// Runs `body` in a read-only snapshot on the calling thread.
    func snapshot<R>(_ body: (Transaction) throws(LocalDatabaseError) -> R) throws(LocalDatabaseError) -> R {
        try engine.environment.withReadTransaction(body)
    }

    /// Runs `read` in this session's open transaction, or in a snapshot if it has none by now.
    nonisolated(nonsending) func readInTransaction<Read: SessionRead>(_ read: Read) async throws(LocalDatabaseError) -> Read.Value {
        if let detached = try await onWriterThread(readingInTransaction(read)) {
            return try read.restore(detached)
        }
        return try engine.environment.withReadTransaction { transaction throws(LocalDatabaseError) in try read.snapshot(transaction) }
    }

    /// `readInTransaction`, blocking the calling thread.
    func readInTransactionBlocking<Read: SessionRead>(_ read: Read, _ name: String) throws(LocalDatabaseError) -> Read.Value {
        if let detached = try blockingOnWriterThread(name, readingInTransaction(read)) {
            return try read.restore(detached)
        }
        return try engine.environment.withReadTransaction { transaction throws(LocalDatabaseError) in try read.snapshot(transaction) }
    }

    private func readingInTransaction<Read: SessionRead>(_ read: Read) -> WriterJob<Read.Detached?> {
        let owner = owner
        return { coordinator, done in
            done(Result { () throws(LocalDatabaseError) in
                try coordinator.readInTransaction(owner: owner) { transaction throws(LocalDatabaseError) in
                    try read.inTransaction(transaction)
                }
            })
        }
    }

    // MARK: Closing

    /// Closes the session: later calls fail with `closed`; writes already submitted are
    /// committed first, an open transaction is rolled back, and the engine closes if this was
    /// its last session. Idempotent.
    nonisolated(nonsending) func close() async {
        guard markClosed() else { return }
        try? await onWriterThread(detaching())
        engine.detach()
    }

    /// `close`, blocking the calling thread (on the writer thread itself, it does not wait).
    func closeBlocking() {
        guard markClosed() else { return }
        if engine.thread.isCurrent {
            engine.coordinator.detach(owner: owner)
        } else {
            try? blockingOnWriterThread("close", detaching())
        }
        engine.detach()
    }

    /// For a face deinitialized without `close()`: the same, without waiting.
    func closeWhenDropped() {
        guard markClosed() else { return }
        let (engine, owner) = (engine, owner)
        engine.thread.submit {
            engine.coordinator.detach(owner: owner)
            engine.detach()
        }
    }

    private func markClosed() -> Bool {
        state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
    }

    private func detaching() -> WriterJob<Void> {
        { [self] coordinator, done in
            coordinator.detach(owner: owner)
            updateTransactionState(coordinator)
            done(.success(()))
        }
    }

    // MARK: Reaching the writer thread

    /// Work for the writer thread, which passes its outcome to the completion (now or later).
    typealias WriterJob<R> = @Sendable (TransactionCoordinator, @escaping @Sendable (Result<R, LocalDatabaseError>) -> Void) -> Void

    /// Runs `job` on the writer thread and awaits its outcome, without blocking a thread: the
    /// caller is resumed straight from the writer thread, one hop each way.
    private nonisolated(nonsending) func onWriterThread<R: Sendable>(_ job: @escaping WriterJob<R>) async throws(LocalDatabaseError) -> R {
        let coordinator = engine.coordinator
        let thread = engine.thread
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<R, LocalDatabaseError>, Never>) in
            thread.submit { job(coordinator) { continuation.resume(returning: $0) } }
        }
        return try result.get()
    }

    /// Runs `job` on the writer thread and blocks the calling thread until its outcome.
    /// - Throws: `wouldDeadlock` when called on the writer thread itself, which would wait for
    ///   itself for ever.
    private func blockingOnWriterThread<R: Sendable>(_ name: String, _ job: @escaping WriterJob<R>) throws(LocalDatabaseError) -> R {
        guard !engine.thread.isCurrent else {
            throw .wouldDeadlock(operation: name, reason: "it was called on the database's writer thread, which it needs")
        }
        try checkNotRestoring(name)
        let coordinator = engine.coordinator
        let outcome = Locked<Result<R, LocalDatabaseError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        engine.thread.submit {
            job(coordinator) { result in
                outcome.withLock { $0 = result }
                done.signal()
            }
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw .wrongThread(operation: name) }
        return try result.get()
    }

    /// Throws `wouldDeadlock` when this thread is restoring objects read from this database: a
    /// blocking call from a model's `init(dataObject:)` there could wait on the writer while
    /// the read holds what the writer needs (the map's resize lock).
    private func checkNotRestoring(_ name: String) throws(LocalDatabaseError) {
        if ReadScratch.current.isRestoring(from: engine.serial) {
            throw .wouldDeadlock(operation: name, reason: "it was called while a read of the same database restores objects (from init(dataObject:))")
        }
    }
}

/// A read of models, as a face asks `Session` to run it: either inside a snapshot on the
/// caller's thread, or inside the session's open transaction on the writer thread (producing
/// `Sendable` bytes) and then restored on the caller's thread. A struct, so the generic read
/// paths are specialized and allocate no closures.
protocol SessionRead: Sendable {
    associatedtype Detached: Sendable
    associatedtype Value
    /// Inside the session's write transaction, on the writer thread.
    func inTransaction(_ transaction: Transaction) throws(LocalDatabaseError) -> Detached
    /// On the caller's thread, after `inTransaction`.
    func restore(_ detached: Detached) throws(LocalDatabaseError) -> Value
    /// Inside a read-only snapshot, on the caller's thread.
    func snapshot(_ transaction: Transaction) throws(LocalDatabaseError) -> Value
}
