import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import Foundation

/// One face's connection to an engine: its identity as a transaction owner, its busy timeout,
/// and whether it is closed or has a transaction open.
///
/// Every rule a face needs about where an operation runs lives here, once, with an `async`
/// entry point for the actor and a blocking one for the synchronous face:
/// - writes, `begin`, `commit` and `rollback` run on the engine's writer thread (LMDB's write
///   transaction belongs to the thread that began it), except that records written in this
///   session's open transaction are acknowledged at once and buffered (`WriteBuffer`), and go
///   to the writer thread together, ahead of the session's next operation that goes there;
/// - reads run in this session's open transaction (on the writer thread) when it has one, and
///   otherwise in a read-only snapshot on the caller's thread, never through the writer;
/// - a blocking call that would wait for itself fails at once with `wouldDeadlock`;
/// - nothing runs after `close()`.
@usableFromInline package final class Session: EngineWriter {
    typealias Owner = TransactionCoordinator.Owner

    @usableFromInline let engine: DatabaseEngine
    let owner: Owner
    package let busyTimeout: Duration

    struct State {
        var inTransaction = false
        var closed = false
        /// Records written in the open transaction and not sent to the writer thread yet.
        var buffer = WriteBuffer()
        /// Stored classes that writes applied in the open transaction have claimed, by their
        /// names' bytes: a write of these alone cannot meet a class-name conflict, so it may be
        /// buffered. Any other goes to the writer thread at once, and a conflict is that write's
        /// error alone. (A dictionary: a transaction may claim many classes, and every write
        /// looks its own up.)
        var claimed: [ExactID: StoredClass] = [:]
        /// The open transaction has failed (it refuses everything until rolled back).
        var failed = false
        /// Commits and rollbacks queued for the writer thread and not finished yet. While any
        /// is, reads go through the writer thread, behind it: a read must never fall back to a
        /// snapshot from before the commit of writes it was told were made (read-your-writes
        /// holds before, during and after the commit).
        var endingInFlight = 0
        /// Changes whenever a transaction begins or ends, so that a job's report about the
        /// transaction it ran in is not taken for a later one's.
        var generation: UInt64 = 0

        /// Whether a put of `records` (using `classes`) may be acknowledged and buffered.
        func mayBuffer(_ records: RecordBatch, classes: [StoredClass]) -> Bool {
            inTransaction && !failed && buffer.hasRoom(for: records) && classes.allSatisfy { claimed[ExactID($0.name)] == $0 }
        }

        /// The state's invariants, checked in debug builds after every change (`withState`): a
        /// failed transaction is an open one; outside a transaction nothing is buffered or
        /// claimed; no more transaction ends finished than began.
        func invariantsHold() -> Bool {
            (!failed || inTransaction) && (inTransaction || (buffer.isEmpty && claimed.isEmpty)) && endingInFlight >= 0
        }

        /// Forgets what was known of the transaction: one begins or ends.
        mutating func transactionChanged() {
            buffer = WriteBuffer()
            claimed = [:]
            failed = false
            generation &+= 1
        }
    }

    private let state = Locked(State())
    /// `state`'s `closed` (bit 0), `inTransaction` (bit 1) and `endingInFlight > 0` (bit 2), stored under its lock after every
    /// change (`withState`): reads check them with one atomic load, taking no lock and writing
    /// nothing that other threads read.
    private let flags = AtomicLines(lines: 1)
    private static let owners = Locked<Owner>(0)

    /// Opens (or joins) the engine for `directory`.
    package init(directory: URL, configuration: EngineConfiguration) throws(DatabaseError) {
        engine = try DatabaseEngine.attach(directory: directory, configuration: configuration)
        busyTimeout = configuration.busyTimeout
        owner = Self.owners.withLock { count in
            count += 1
            return count
        }
    }

    // MARK: The engine's facts

    @inlinable package var databaseSerial: UInt64 { engine.serial }
    @inlinable package var maxKeySize: Int { engine.readTarget.maxKeySize }
    package var encryption: StoreEncryption? { engine.store.encryption }
    package var notifier: ChangeNotifier { engine.notifier }
    package var path: String { engine.path }
    package var configuration: EngineConfiguration { engine.configuration }

    /// Runs `body` with the state under its lock, then publishes its flags.
    private func withState<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        try state.withLock { state throws(E) in
            defer {
                assert(state.invariantsHold(), "a session's state broke its invariants")
                flags.store((state.closed ? 1 : 0) | (state.inTransaction ? 2 : 0) | (state.endingInFlight > 0 ? 4 : 0), line: 0)
            }
            return try body(&state)
        }
    }

    /// Whether this session has a transaction open, as of its last begin, commit or rollback.
    package var transactionActive: Bool {
        flags.load(line: 0) & 2 != 0
    }

    package var synchronizes: Bool { engine.store.synchronizes }

    /// Throws `closed` after `close()`; returns whether a transaction is open or ending (reads
    /// must then go through the writer thread).
    @inline(__always)
    func checkOpen() throws(DatabaseError) -> Bool {
        let flags = flags.load(line: 0)
        guard flags & 1 == 0 else { throw .closed }
        return flags & 6 != 0
    }

    /// Throws `closed` after `close()`, `readOnly` for a read-only database. (Jobs that go to the
    /// writer thread check again under the lock, as they are queued.)
    func checkWritable() throws(DatabaseError) {
        _ = try checkOpen()
        guard !engine.configuration.readOnly else { throw .readOnly }
    }

    /// Records on the writer thread whether the transaction is open, after it may have changed.
    private func updateTransactionState(_ coordinator: TransactionCoordinator) {
        let open = coordinator.hasTransaction(owner: owner)
        withState { state in
            if state.inTransaction != open { state.transactionChanged() }
            state.inTransaction = open
            state.failed = coordinator.hasFailedTransaction(owner: owner)
        }
    }

    /// Records on the writer thread, after a job of the transaction `generation`, whether it
    /// has failed, and the classes a write applied in it claimed.
    private func noteTransaction(_ coordinator: TransactionCoordinator, generation: UInt64, claimed classes: [StoredClass]) {
        guard coordinator.hasTransaction(owner: owner) else { return }
        let failed = coordinator.hasFailedTransaction(owner: owner)
        withState { state in
            guard state.generation == generation else { return }
            state.failed = failed
            guard !failed else { return }
            // Claims are by name: a type that took a name over (by registration) unclaims the one before.
            for storedClass in classes { state.claimed[ExactID(storedClass.name)] = storedClass }
        }
    }

    // MARK: Writing

    /// Applies `operation`: in this session's transaction, or else in the next group commit.
    ///
    /// Records written in the open transaction are acknowledged without going to the writer
    /// thread (one hop each way per record was most of their cost): they wait in the buffer and
    /// are applied, in order, ahead of the session's next operation that goes there (any other
    /// write, a read in the transaction, the commit), or when the buffer is full. A failure
    /// applying them fails the transaction (see `TransactionCoordinator.applyAcknowledged`).
    package nonisolated(nonsending) func perform(_ operation: WriteOperation) async throws(DatabaseError) -> Int {
        if let count = try acknowledge(operation) { return count }
        return try await onWriterThread { state throws(DatabaseError) in try self.performing(operation, &state) }
    }

    /// `perform`, blocking the calling thread.
    package func performBlocking(_ operation: WriteOperation, _ name: String) throws(DatabaseError) -> Int {
        if let count = try acknowledge(operation) { return count }
        return try blockingOnWriterThread(name) { state throws(DatabaseError) in try self.performing(operation, &state) }
    }

    /// Buffers `operation` and gives its count when it is a put in the open transaction and the
    /// buffer has room; nil when it must go to the writer thread.
    private func acknowledge(_ operation: WriteOperation) throws(DatabaseError) -> Int? {
        // Single records only: a batch is one hop anyway, and applied at once it fails alone.
        guard case let .put(records, classes) = operation, records.count == 1 else {
            try checkWritable()
            return nil
        }
        return try withState { state throws(DatabaseError) -> Int? in
            try Self.checkWritable(state, engine)
            guard state.mayBuffer(records, classes: classes),
                  !records.containsClassName(where: engine.store.indexCatalog.mayHaveUniqueIndex) else { return nil }
            state.buffer.append(records, classes: classes)
            return records.count
        }
    }

    /// The job applying `operation` after the buffered records (under the state lock).
    private func performing(_ operation: WriteOperation, _ state: inout State) throws(DatabaseError) -> WriterJob<Int> {
        try Self.checkWritable(state, engine)
        // A replicated run commits alone: never as part of a transaction the session's user may roll back.
        // So does a migration's batch.
        if operation.isReplication || operation.isMigration, state.inTransaction { throw .transactionAlreadyActive }
        let (owner, busyTimeout, generation) = (owner, busyTimeout, state.generation)
        let buffered = state.buffer.take()
        let classes: [StoredClass]
        if case let .put(_, putClasses) = operation { classes = putClasses } else { classes = [] }
        return { [self] coordinator, done in
            do throws(DatabaseError) {
                try applyBuffered(buffered, coordinator, generation: generation)
            } catch {
                return done(.failure(error))
            }
            coordinator.perform(operation, owner: owner, busyTimeout: busyTimeout) { [self] result in
                noteTransaction(coordinator, generation: generation, claimed: (try? result.get()) == nil ? [] : classes)
                done(result)
            }
        }
    }

    /// Queues `job` on the writer thread when this session may write and has no transaction
    /// open; false (nothing queued) when it has one.
    func submitOutsideTransaction(_ job: @escaping @Sendable (TransactionCoordinator) -> Void) throws(DatabaseError) -> Bool {
        try withState { state throws(DatabaseError) in
            try Self.checkWritable(state, engine)
            guard !state.inTransaction else { return false }
            let coordinator = engine.coordinator
            engine.thread.submit { job(coordinator) }
            return true
        }
    }

    /// On the writer thread: applies the records acknowledged in the transaction `generation`,
    /// and records whether that failed it.
    func applyBuffered(
        _ buffered: WriteOperation?, _ coordinator: TransactionCoordinator, generation: UInt64
    ) throws(DatabaseError) {
        guard let buffered else { return }
        defer { noteTransaction(coordinator, generation: generation, claimed: []) }
        try coordinator.applyAcknowledged(buffered, owner: owner)
    }

    private static func checkWritable(_ state: State, _ engine: DatabaseEngine) throws(DatabaseError) {
        guard !state.closed else { throw .closed }
        guard !engine.configuration.readOnly else { throw .readOnly }
    }

    // MARK: Transactions

    /// Begins a transaction (see `TransactionCoordinator.begin`).
    package nonisolated(nonsending) func begin(override: Bool) async throws(DatabaseError) {
        try checkWritable()
        try await onWriterThread { state throws(DatabaseError) in try self.beginning(override: override, &state) }
    }

    /// `begin`, blocking the calling thread.
    package func beginBlocking(override: Bool) throws(DatabaseError) {
        try checkWritable()
        try blockingOnWriterThread("startTransaction") { state throws(DatabaseError) in try self.beginning(override: override, &state) }
    }

    private func beginning(override: Bool, _ state: inout State) throws(DatabaseError) -> WriterJob<Void> {
        // Checked under the lock, as the job is queued: a begin racing `close()` must not open a
        // transaction behind the close's, which nobody would end.
        try Self.checkWritable(state, engine)
        // Overriding rolls back the open transaction, buffered records included; without
        // `override`, an open transaction stays as it is (and `begin` fails).
        if override { state.transactionChanged() }
        return { [self] coordinator, done in
            coordinator.begin(owner: owner, override: override, busyTimeout: busyTimeout) { [self] result in
                updateTransactionState(coordinator)
                done(result)
            }
        }
    }

    /// Commits this session's transaction.
    package nonisolated(nonsending) func commit() async throws(DatabaseError) {
        try await onWriterThread { state throws(DatabaseError) in try self.ending(commit: true, &state) }
    }

    /// Rolls back this session's transaction.
    package nonisolated(nonsending) func rollback() async throws(DatabaseError) {
        try await onWriterThread { state throws(DatabaseError) in try self.ending(commit: false, &state) }
    }

    /// `commit` or `rollback`, blocking the calling thread.
    package func endBlocking(commit: Bool) throws(DatabaseError) {
        try blockingOnWriterThread(commit ? "commitTransaction" : "rollbackTransaction") { state throws(DatabaseError) in
            try self.ending(commit: commit, &state)
        }
    }

    /// The job ending the transaction, with the buffered records applied first for a commit and
    /// dropped for a rollback. From now on this session's writes go to the writer thread (behind
    /// this job), until the job says whether the transaction is still open (a failed commit).
    private func ending(commit: Bool, _ state: inout State) throws(DatabaseError) -> WriterJob<Void> {
        guard !state.closed else { throw .closed }
        let buffered = state.buffer.take()
        state.inTransaction = false
        state.transactionChanged()
        state.endingInFlight += 1
        return { [self] coordinator, done in
            let result = Result { () throws(DatabaseError) in
                if commit {
                    if let buffered { try coordinator.applyAcknowledged(buffered, owner: owner) }
                    try coordinator.commit(owner: owner)
                } else {
                    try coordinator.rollback(owner: owner)
                }
            }
            updateTransactionState(coordinator)
            withState { $0.endingInFlight -= 1 }
            done(result)
        }
    }

    package func storageStatistics() -> StorageStatistics? {
        engine.environment.storageStatistics()
    }

    package func readerSlots(clearingStale: Bool) -> (slots: [ReaderSlotInfo], cleared: Int)? {
        let cleared = clearingStale ? engine.environment.clearStaleReaderSlots() : 0
        return (engine.environment.readerSlots(), cleared)
    }

    // MARK: Migrations

    /// Tells the store the migrations this process's migrator registers: from then on its
    /// writes go into a database whose recorded migrations are all among them (`MigrationState`).
    package func knowMigrations(_ names: Set<String>) {
        engine.store.migrations.know(names)
    }

    /// The database's migration state, read in a read transaction of its own on the calling thread.
    package nonisolated(nonsending) func migrationState() async throws(DatabaseError) -> MigrationState {
        let store = engine.store
        return try store.environment.withReadTransaction { transaction throws(DatabaseError) in try store.migrationState(in: transaction) }
    }

    /// The directory's `MigrationLock`, when no migrator holds it.
    package nonisolated(nonsending) func tryLockMigrations() async throws(DatabaseError) -> (any MigrationLease)? {
        try MigrationLock.tryAcquire(directory: engine.environment.directoryPath).map { FileMigrationLease($0) }
    }

    // MARK: Closing

    /// Closes the session: later calls fail with `closed`; writes already submitted are
    /// committed first, an open transaction is rolled back, and the engine closes if this was
    /// its last session. Idempotent.
    package nonisolated(nonsending) func close() async {
        guard markClosed() else { return }
        try? await onWriterThread { _ in self.detaching() }
        engine.detach()
    }

    /// `close`, blocking the calling thread (on the writer thread itself, it does not wait).
    package func closeBlocking() {
        guard markClosed() else { return }
        if engine.thread.isCurrent {
            engine.coordinator.detach(owner: owner)
        } else {
            try? blockingOnWriterThread("close") { _ in self.detaching() }
        }
        engine.detach()
    }

    /// For a face deinitialized without `close()`: the same, without waiting.
    package func closeWhenDropped() {
        guard markClosed() else { return }
        let (engine, owner) = (engine, owner)
        engine.thread.submit {
            engine.coordinator.detach(owner: owner)
            engine.detach()
        }
    }

    /// Marks the session closed; false when it already was. Buffered records are dropped: the
    /// transaction they belong to is rolled back.
    private func markClosed() -> Bool {
        let closing = withState { state in
            defer {
                state.closed = true
                state.transactionChanged()
            }
            return !state.closed
        }
        // Observers of this session, waiting for a commit, find out at once.
        if closing { engine.notifier.wakeAll() }
        return closing
    }

    private func detaching() -> WriterJob<Void> {
        { [self] coordinator, done in
            coordinator.detach(owner: owner)
            updateTransactionState(coordinator)
            done(.success(()))
        }
    }

    /// Makes a commit that another process's writer left unpublished as it died visible to this
    /// process's readers (`Environment.hasUnpublishedCommit`), by taking LMDB's writer lock on
    /// the writer thread (`TransactionCoordinator.publishCommits`). Without one, nothing: no hop.
    ///
    /// For a reader that then checks what it read against a write transaction, which always sees
    /// the last commit: the pull replicator's position.
    package nonisolated(nonsending) func publishCommits() async throws(DatabaseError) {
        guard engine.store.environment.hasUnpublishedCommit else { return }
        try await onWriterThread { _ throws(DatabaseError) -> WriterJob<Void> in
            { coordinator, done in
                coordinator.publishCommits()
                done(.success(()))
            }
        }
    }

    // MARK: Reaching the writer thread

    /// Work for the writer thread, which passes its outcome to the completion (now or later).
    typealias WriterJob<R> = @Sendable (TransactionCoordinator, @escaping @Sendable (Result<R, DatabaseError>) -> Void) -> Void

    /// Runs the job `prepare` makes on the writer thread and awaits its outcome, without
    /// blocking a thread: the caller is resumed straight from the writer thread, one hop each way.
    ///
    /// `prepare` runs under the session's lock, and the job is queued before the lock is let go:
    /// so jobs reach the writer thread in the order they took buffered records from the session.
    nonisolated(nonsending) func onWriterThread<R: Sendable>(
        _ prepare: (inout State) throws(DatabaseError) -> WriterJob<R>
    ) async throws(DatabaseError) -> R {
        let coordinator = engine.coordinator
        let thread = engine.thread
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<R, DatabaseError>, Never>) in
            do throws(DatabaseError) {
                try withState { state throws(DatabaseError) in
                    let job = try prepare(&state)
                    thread.submit {
                        job(coordinator) { result in
                            PoolDemand.resuming()
                            continuation.resume(returning: result)
                        }
                    }
                }
            } catch {
                PoolDemand.resuming()
                continuation.resume(returning: .failure(error))
            }
        }
        PoolDemand.running()
        return try result.get()
    }

    /// Runs `job` on the writer thread and blocks the calling thread until its outcome.
    /// - Throws: `wouldDeadlock` when called on the writer thread itself, which would wait for
    ///   itself for ever.
    func blockingOnWriterThread<R: Sendable>(
        _ name: String, _ prepare: (inout State) throws(DatabaseError) -> WriterJob<R>
    ) throws(DatabaseError) -> R {
        guard !engine.thread.isCurrent else {
            throw .wouldDeadlock(operation: name, reason: "it was called on the database's writer thread, which it needs")
        }
        try checkNotRestoring(name)
        let coordinator = engine.coordinator
        let thread = engine.thread
        let outcome = Locked<Result<R, DatabaseError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        try withState { state throws(DatabaseError) in
            let job = try prepare(&state)
            thread.submit {
                job(coordinator) { result in
                    outcome.withLock { $0 = result }
                    done.signal()
                }
            }
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw .wrongThread(operation: name) }
        return try result.get()
    }

    /// Throws `wouldDeadlock` when this thread is restoring objects read from this database: a
    /// blocking call from a model's `init(dataObject:)` there could wait on the writer while
    /// the read holds what the writer needs (a place in the map's transaction gate).
    func checkNotRestoring(_ name: String) throws(DatabaseError) {
        if RestoringThread.current.isRestoring(from: engine.serial) {
            throw .wouldDeadlock(operation: name, reason: "it was called while a read of the same database restores objects (from init(dataObject:))")
        }
    }
}
