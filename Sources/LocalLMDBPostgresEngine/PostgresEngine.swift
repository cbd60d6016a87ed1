import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

/// The PostgreSQL engine: the seam's other side (`EngineWriter`) for one named store on a
/// server, so that `LocalDatabase`'s face (through `PostgresStore`) runs on it unchanged.
///
/// - Records are the bytes LMDB's store keeps (`StoreSchema`): the faces encode and decode
///   them exactly as on LMDB, Legacy renames and the class table's rules included.
/// - Writes outside a transaction are grouped: those that arrive while a commit is in flight
///   share the next one (group commit), on one dedicated thread (`thread`) that drives the
///   server's connections through SwiftNIO's event loops and blocks on them: nothing waits for
///   a free thread of Swift's cooperative pool. A group that fails is retried write by write,
///   so one refused write fails alone. An asynchronous write of records by key that finds an
///   idle connection, once the thread has published what the store's put procedure checks,
///   calls the procedure from its own task instead (`putFromTask`), suspending on the server's
///   answer.
/// - A session's transaction (`begin` … `commit`) holds one connection for its life, on the
///   same thread; each write in it is a savepoint, so a refused write leaves it usable.
/// - Reads run in the caller's task: the faces' reads run against what was fetched
///   (`FetchedRecords`), in one statement, or in one repeatable-read transaction when a read
///   needs more than one (references), so every read sees one committed state.
package final class PostgresEngine: EngineWriter, @unchecked Sendable {
    /// What the engine is opened with.
    package struct Options: Sendable {
        /// The most connections the engine opens.
        package var connections = 8
        /// How long a call waits for a connection (and a write for its commit to start).
        package var busyTimeout = Duration.seconds(30)
        /// How long a statement may go unanswered before its connection is given up.
        package var queryTimeout = Duration.seconds(120)
        /// Where postgres-nio logs: errors only, by default.
        package var logger: Logger = {
            var logger = Logger(label: "LocalLMDBPostgres")
            logger.logLevel = .error
            return logger
        }()

        package init() {}
    }

    let pool: ConnectionPool
    let schema: StoreSchema
    let logger: Logger
    /// How long a statement may go unanswered (`Options.queryTimeout`).
    let queryTimeout: Duration
    /// Every write's thread (see the type's documentation).
    let thread: WriterThread
    package let databaseSerial: UInt64
    /// LMDB's key limit, so that a record's key is the same bytes on both engines.
    package static let maxKeySize = 511
    package var maxKeySize: Int { Self.maxKeySize }
    package let notifier: ChangeNotifier
    /// Hears other processes' commits announced (`LISTEN`/`NOTIFY`).
    let listener: ChangeListener
    package let path: String
    package let configuration: EngineConfiguration
    package var busyTimeout: Duration { configuration.busyTimeout }
    package var encryption: StoreEncryption? { nil }

    /// State shared by the callers and the thread.
    struct Shared {
        var transactionActive = false
        var closed = false
        /// Writes waiting for the next group commit.
        var pending: [PendingWrite] = []
        var drainScheduled = false
        /// Writes from callers' tasks with an answer to come (`putFromTask`).
        var writesFromTasks = 0
        /// Signalled by the last of them to end once the engine is closing.
        var writesFromTasksEnded: DispatchSemaphore?
    }

    /// A write outside a transaction, waiting for its group.
    struct PendingWrite {
        let operations: [WriteOperation]
        let done: @Sendable (Result<Int, DatabaseError>) -> Void
    }

    /// A session's open transaction: its connection and what it changed so far. Confined to `thread`.
    final class OpenTransaction {
        let connection: PostgresConnection
        var changes = ChangeSet()

        init(connection: PostgresConnection) {
            self.connection = connection
        }
    }

    let shared = Locked(Shared())
    /// Confined to `thread`.
    nonisolated(unsafe) var transaction: OpenTransaction?
    /// The index catalog as the thread's last write transaction saw it, with its version
    /// (`StoreSchema`): current once `begin` has compared the version. Confined to `thread`.
    nonisolated(unsafe) var catalog: (version: Int64, byClass: [String: [StoredIndex]])? {
        didSet { publishPutBasis() }
    }
    /// The store's migration entry as the thread's write transaction holds it: read with the
    /// store's row by `begin`, advanced by a migration's batch. Confined to `thread`.
    nonisolated(unsafe) var recordedMigrations = RecordedMigrations.unknown {
        didSet { publishPutBasis() }
    }
    /// Claims that recorded nothing (`claim`), by class name: the claiming row's bytes and the
    /// stored row's (`fastPut`). Confined to `thread`.
    nonisolated(unsafe) var unchangedClaims: [ExactID: (claiming: [UInt8], stored: [UInt8])] = [:] {
        didSet { publishPutBasis() }
    }
    /// Whether the store has its put procedure (`StoreSchema.putProcedure`); nil until asked.
    /// Confined to `thread`.
    nonisolated(unsafe) var hasPutProcedure: Bool? {
        didSet { publishPutBasis() }
    }
    /// Whether the store has its push procedure (`SyncSchema.pushProcedure`); nil until asked.
    /// Confined to `thread`, which publishes it for pushes from callers' tasks (`pushFromTask`).
    nonisolated(unsafe) var hasPushProcedure: Bool? {
        didSet { publishedPushProcedure.withLock { [hasPushProcedure] in $0 = hasPushProcedure == true } }
    }
    /// Whether the thread last found the store with its push procedure (`hasPushProcedure`).
    let publishedPushProcedure = Locked(false)
    /// Whether the log is numbered by the store's numbering function (`StoreSchema.numberFunction`):
    /// true once the store was found with it, false from a call that found it gone or unusable.
    let numberFunction: Locked<Bool>
    /// Pushes made by the push procedure (`fastPush`, `pushFromTask`), for diagnostics.
    let procedurePushes = Locked(0)
    /// The thread's basis for the put procedure's checks, as it last published it
    /// (`publishPutBasis`, whenever a part of it changes), for writes from callers' tasks
    /// (`putFromTask`); nil while the store has no procedure or the basis is unknown.
    let publishedPutBasis = Locked<PutBasis?>(nil)
    /// The migrations this process knows, for the check of every write (`MigrationCatalog`).
    let migrations = MigrationCatalog()

    /// Serials of server engines start high, apart from LMDB's engines' (which count from 1).
    private static let serials = Locked<UInt64>(1 << 62)

    private init(pool: ConnectionPool, schema: StoreSchema, options: Options, path: String) {
        self.pool = pool
        self.schema = schema
        self.logger = options.logger
        queryTimeout = options.queryTimeout
        self.path = path
        var configuration = EngineConfiguration()
        configuration.busyTimeout = options.busyTimeout
        self.configuration = configuration
        thread = WriterThread(name: "LocalLMDB PostgreSQL writer")
        hasPutProcedure = schema.hadPutProcedure
        numberFunction = Locked(schema.hadNumberFunction ?? false)
        databaseSerial = Self.serials.withLock { serial in
            serial += 1
            return serial
        }
        // Other processes' commits are announced by the server (`ChangeListener`), and found by
        // polling the store's last sequence number every second as a safety net, on the
        // notifier's own thread, while anyone observes.
        let listener = ChangeListener(
            configuration: pool.configuration, channel: schema.prefix, eventLoopGroup: pool.eventLoopGroup, logger: options.logger)
        self.listener = listener
        notifier = ChangeNotifier(
            latest: { [pool, schema, logger] in try? Self.lastSequence(pool: pool, schema: schema, logger: logger) },
            settle: { listener.ensureListening() },
            pollInterval: .seconds(1))
        listener.wake(notifier)
    }

    /// Connects to the server, creates or migrates the store `store`, and returns its engine.
    package static func open(
        configuration: PostgresConnection.Configuration, store: String, options: Options, eventLoopGroup: any EventLoopGroup
    ) async throws(DatabaseError) -> PostgresEngine {
        // Lock waits end with the busy timeout (SQLSTATE 55P03, which is `busy`), set once per
        // connection as it starts rather than in every transaction.
        var configuration = configuration
        let busy = options.busyTimeout.components
        let milliseconds = busy.seconds >= Int64(Int32.max) / 1000 ? Int64(Int32.max) : max(1, busy.seconds * 1000 + busy.attoseconds / 1_000_000_000_000_000)
        configuration.options.additionalStartupParameters.append(("lock_timeout", String(milliseconds)))
        let pool = ConnectionPool(
            configuration: configuration, limit: options.connections, waitLimit: options.busyTimeout, logger: options.logger,
            eventLoopGroup: eventLoopGroup)
        let schema: StoreSchema
        do throws(DatabaseError) {
            let connection = try await pool.lease().value("connecting")
            do throws(DatabaseError) {
                schema = try await StoreSchema.open(
                    store, on: connection, logger: options.logger, within: options.queryTimeout, busyTimeout: options.busyTimeout,
                    maxKeySize: Self.maxKeySize)
                pool.release(connection)
            } catch {
                pool.release(connection, broken: true)
                throw error
            }
        } catch {
            _ = try? await pool.close().get()
            throw error
        }
        let address = "postgres://\(configuration.username)@\(configuration.host ?? "?"):\(configuration.port ?? 5432)/\(configuration.database ?? configuration.username)"
        return PostgresEngine(pool: pool, schema: schema, options: options, path: address + "#" + store)
    }

    // MARK: Running on the thread

    /// `job`'s result, run on the thread; the caller suspends meanwhile.
    func onThread<T: Sendable>(_ job: @escaping @Sendable () throws(DatabaseError) -> T) async throws(DatabaseError) -> T {
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<T, DatabaseError>, Never>) in
            thread.submit { continuation.resume(returning: Result { () throws(DatabaseError) in try job() }) }
        }
        return try result.get()
    }

    /// `job`'s result, run on the thread; the calling thread blocks meanwhile.
    func blockingOnThread<T: Sendable>(_ job: @escaping @Sendable () throws(DatabaseError) -> T) throws(DatabaseError) -> T {
        if thread.isCurrent { return try job() }
        let box = Locked<Result<T, DatabaseError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        thread.submit {
            box.withLock { $0 = Result { () throws(DatabaseError) in try job() } }
            done.signal()
        }
        done.wait()
        // The job ran before the semaphore was signalled, so the box holds its result.
        let result = box.withLock { $0 }
        assert(result != nil, "a job signalled without a result")
        return try (result ?? .failure(.closed)).get()
    }

    /// Throws `wouldDeadlock` on one of SwiftNIO's event loops, where blocking on a future would
    /// stop the loop that must answer it (postgres-nio's `wait()` traps there).
    static func checkMayBlock(_ operation: String) throws(DatabaseError) {
        if MultiThreadedEventLoopGroup.currentEventLoop != nil {
            throw .wouldDeadlock(operation: operation, reason: "it blocks, and this is a SwiftNIO event loop: use the asynchronous API")
        }
    }

    /// Runs `query` on `connection`, blocking (on the thread only).
    func run(_ query: PostgresQuery, on connection: PostgresConnection, _ operation: String) throws(DatabaseError) -> PostgresQueryResult {
        do {
            return try connection.send(query, logger: logger, within: queryTimeout).wait()
        } catch {
            throw ServerCall.databaseError(error, operation, busyTimeout: busyTimeout)
        }
    }

    /// A leased connection: an idle one at once, else the next one the pool gives.
    nonisolated(nonsending) func leased(_ operation: String) async throws(DatabaseError) -> PostgresConnection {
        if let connection = pool.leaseIdle() { return connection }
        return try await pool.lease().value(operation)
    }

    /// A leased connection, blocking (on the thread, or the notifier's).
    func leaseBlocking(_ operation: String) throws(DatabaseError) -> PostgresConnection {
        try Self.checkMayBlock(operation)
        do {
            return try pool.lease().wait()
        } catch {
            throw ServerCall.databaseError(error, operation)
        }
    }

    /// Throws `closed` once the engine is closed.
    func checkOpen() throws(DatabaseError) {
        if shared.withLock({ $0.closed }) { throw .closed }
    }

    // MARK: EngineWriter: facts

    package var transactionActive: Bool { shared.withLock { $0.transactionActive } }

    /// A store is the server: it keeps no stamps of its own to merge against (devices do).
    package var synchronizes: Bool { false }

    package func storageStatistics() -> StorageStatistics? { nil }

    package func readerSlots(clearingStale: Bool) -> (slots: [ReaderSlotInfo], cleared: Int)? { nil }

    package nonisolated(nonsending) func backup(to destination: URL, compact: Bool, progress: BackupListener?) async throws(DatabaseError) {
        throw .unsupported(operation: "A backup", reason: "back up a PostgreSQL store with the server's tools (pg_dump), or replicate it into a LocalDatabase")
    }

    package func backupBlocking(to destination: URL, compact: Bool, progress: BackupListener?) throws(DatabaseError) {
        throw .unsupported(operation: "A backup", reason: "back up a PostgreSQL store with the server's tools (pg_dump), or replicate it into a LocalDatabase")
    }

    // MARK: EngineWriter: writes

    package nonisolated(nonsending) func perform(_ operation: WriteOperation) async throws(DatabaseError) -> Int {
        try checkOpen()
        // Records by key, straight from this task when it can be (one round trip, no hop).
        if case .put = operation, let result = await putFromTask([operation]) { return try result.get() }
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Int, DatabaseError>, Never>) in
            submit([operation]) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    package func performBlocking(_ operation: WriteOperation, _ name: String) throws(DatabaseError) -> Int {
        try checkOpen()
        return try blockingSubmit([operation])
    }

    package nonisolated(nonsending) func perform(batchOf total: Int, _ produce: BatchProducer) async throws(DatabaseError) -> Int {
        try checkOpen()
        let operations = try Self.parts(of: produce)
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Int, DatabaseError>, Never>) in
            submit(operations) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    package func performBlocking(batchOf total: Int, _ produce: BatchProducer) throws(DatabaseError) -> Int {
        try checkOpen()
        return try blockingSubmit(try Self.parts(of: produce))
    }

    /// The puts `produce` makes, in parts of at most 10,000 records or 16 MB.
    private static func parts(of produce: BatchProducer) throws(DatabaseError) -> [WriteOperation] {
        var operations: [WriteOperation] = []
        try produce((records: 10_000, bytes: 16 << 20), { operation throws(DatabaseError) in operations.append(operation) }, {})
        return operations
    }

    private func blockingSubmit(_ operations: [WriteOperation]) throws(DatabaseError) -> Int {
        let box = Locked<Result<Int, DatabaseError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit(operations) { result in
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        let result = box.withLock { $0 }
        assert(result != nil, "a write signalled without a result")
        return try (result ?? .failure(.closed)).get()
    }

    /// Sends `operations` (one atomic write) to the thread: into the session's transaction when
    /// one is open, else into the next group commit. `done` is called once, from the thread.
    func submit(_ operations: [WriteOperation], _ done: @escaping @Sendable (Result<Int, DatabaseError>) -> Void) {
        enum Route { case transaction, group(schedule: Bool), closed }
        let route = shared.withLock { shared -> Route in
            if shared.closed { return .closed }
            if shared.transactionActive { return .transaction }
            shared.pending.append(PendingWrite(operations: operations, done: done))
            defer { shared.drainScheduled = true }
            return .group(schedule: !shared.drainScheduled)
        }
        switch route {
        case .closed:
            done(.failure(.closed))
        case .transaction:
            thread.submit { [self] in
                done(Result { () throws(DatabaseError) in
                    guard let transaction else {
                        // The transaction ended before this write reached the thread: commit it alone.
                        return try (commitGroup([operations]).first ?? .failure(.closed)).get()
                    }
                    return try applyInTransaction(operations, transaction)
                })
            }
        case .group(schedule: true):
            thread.submit { [self] in drain() }
        case .group(schedule: false):
            break
        }
    }

    /// Commits every pending write, as one group.
    private func drain() {
        let group = shared.withLock { shared -> [PendingWrite] in
            defer {
                shared.pending = []
                shared.drainScheduled = false
            }
            return shared.pending
        }
        guard !group.isEmpty else { return }
        let results = commitGroup(group.map(\.operations))
        assert(results.count == group.count, "a group commit answered \(results.count) writes of \(group.count)")
        for (write, result) in zip(group, results) { write.done(result) }
    }

    // MARK: EngineWriter: transactions

    package nonisolated(nonsending) func begin(override: Bool) async throws(DatabaseError) {
        try checkOpen()
        try await onThread { [self] () throws(DatabaseError) in try beginOnThread(override: override) }
    }

    package func beginBlocking(override: Bool) throws(DatabaseError) {
        try checkOpen()
        try blockingOnThread { [self] () throws(DatabaseError) in try beginOnThread(override: override) }
    }

    package nonisolated(nonsending) func commit() async throws(DatabaseError) {
        try await onThread { [self] () throws(DatabaseError) in try endOnThread(commit: true) }
    }

    package nonisolated(nonsending) func rollback() async throws(DatabaseError) {
        try await onThread { [self] () throws(DatabaseError) in try endOnThread(commit: false) }
    }

    package func endBlocking(commit: Bool) throws(DatabaseError) {
        try blockingOnThread { [self] () throws(DatabaseError) in try endOnThread(commit: commit) }
    }

    private func beginOnThread(override: Bool) throws(DatabaseError) {
        if transaction != nil {
            guard override else { throw .transactionAlreadyActive }
            try endOnThread(commit: false)
        }
        let connection = try leaseBlocking("beginning a transaction")
        do throws(DatabaseError) {
            try begin(on: connection, "beginning a transaction")
        } catch {
            pool.release(connection, broken: true)
            throw error
        }
        transaction = OpenTransaction(connection: connection)
        shared.withLock { $0.transactionActive = true }
    }

    private func endOnThread(commit: Bool) throws(DatabaseError) {
        guard let open = transaction else { throw .noActiveTransaction }
        transaction = nil
        shared.withLock { $0.transactionActive = false }
        do throws(DatabaseError) {
            if commit {
                let logged = try logAndCommit(open.changes, on: open.connection)
                pool.release(open.connection)
                if logged { notifier.wakeAll() }
            } else {
                _ = try run("ROLLBACK", on: open.connection, "rolling back a transaction")
                pool.release(open.connection)
            }
        } catch {
            pool.release(open.connection, broken: true)
            throw error
        }
    }

    // MARK: EngineWriter: closing

    // The thread runs until the engine is deinitialized, not only until it is closed: a call
    // made after the close still reaches it, and fails with `closed` there, rather than waiting
    // for a thread that has ended.

    package nonisolated(nonsending) func close() async {
        _ = try? await onThread { [self] () throws(DatabaseError) in closeOnThread() }
    }

    package func closeBlocking() {
        _ = try? blockingOnThread { [self] () throws(DatabaseError) in closeOnThread() }
    }

    package func closeWhenDropped() {
        thread.submit { [self] in closeOnThread() }
    }

    /// Rolls back the session's transaction, refuses later calls, and closes the connections
    /// once the writes already queued are committed.
    private func closeOnThread() {
        if transaction != nil { try? endOnThread(commit: false) }
        let alreadyClosed = shared.withLock { shared -> Bool in
            defer { shared.closed = true }
            return shared.closed
        }
        guard !alreadyClosed else { return }
        drain()
        waitForWritesFromTasks()
        listener.close()
        _ = try? pool.close().wait()
    }

    deinit {
        thread.stop()
    }
}
