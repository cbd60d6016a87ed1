import Foundation
import LocalLMDB
import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine
import LocalLMDBPostgresEngine

/// Synchronizes a `LocalDatabase` with a `PostgresStore` both ways: local writes are always
/// accepted (online or not) and sent when the server can be reached, in the order they were
/// made; other devices' writes (and the server's own) are received and applied locally; every
/// device ends with the same records as the server (see <doc:SyncingDevices>).
///
/// ```swift
/// let sync = Synchronizer(local, with: server, device: "alice-phone")
/// let task = Task { try await sync.run() }    // until cancelled
/// for try await conflict in sync.conflicts() { … }   // local writes that lost
/// ```
///
/// The rule, the same on every device and on the server: **the last writer wins**, by the
/// writes' stamps (`SyncStampValue`: a hybrid logical clock, then the device's name). A stamp is
/// given when the write commits locally, later than every stamp the device has made or received,
/// so a write made after seeing another always wins over it, and concurrent writes (made without
/// seeing each other) are ordered by their clocks, ties by device. Deletions are stamped too and
/// kept as tombstones, so an older write never brings a deleted record back.
///
/// Nothing is lost silently: a local write that loses (to a later write received, or refused by
/// the server) is kept in the database's conflict log (`LocalDatabase.syncConflicts`), and
/// reported by `conflicts()`; the server keeps its own log of every version that lost
/// (`serverConflicts`), including a version another device's later write replaced without having
/// seen it.
///
/// Each pass pulls the server's commits after the position the database recorded (falling back
/// to a full copy, with progress, when the server's log no longer reaches back), pushes the
/// pending local writes, `writesPerPush` per server transaction, then pulls again. A pass resumes
/// from what the database recorded: a kill at any point sends or applies nothing twice in
/// effect (the rule is idempotent: a version already held changes nothing).
public final class Synchronizer: Sendable {
    /// Where a synchronizer has got to.
    public struct Progress: Sendable, Equatable {
        /// Server transactions that received local writes, since this synchronizer was made.
        public var pushes = 0
        /// Local writes sent.
        public var pushed = 0
        /// Local writes the server refused (a later write held the record).
        public var refused = 0
        /// Local transactions that applied the server's versions.
        public var pulls = 0
        /// Server versions received (applied or not).
        public var received = 0
        /// Full copies made.
        public var fullCopies = 0
        /// The full copy under way: rows fetched and rows to fetch.
        public var fullCopy: PullReplicator.FullCopy?
        /// The server position the database has reached, as of the last look.
        public var position: String?
        /// Local writes not yet sent, as of the last look.
        public var pending = 0
        /// The last error `run()` retried after (its sending or its receiving); nil once every
        /// side that failed has succeeded since.
        public var lastError: LocalDatabaseError?
    }

    let local: LocalDatabase
    let store: PostgresStore
    /// The name this device's writes are stamped with.
    public let device: String
    /// The most local writes sent in one server transaction.
    public let writesPerPush: Int
    /// The most server commits received in one local transaction.
    public let commitsPerPull: Int
    let state = Locked(Progress())
    let prepared = Locked(false)
    /// The server position reached: past the recorded one when the commits after it brought
    /// nothing newer than the database holds (recorded with the next run that changes something;
    /// lost to a kill, they are only read again).
    let reached = Locked<String?>(nil)
    /// Class names the server is known to hold rows for (a push sends only new ones).
    let knownClasses = Locked(Set<String>())
    /// One receiver, one sender, one preparation and one conflict report at a time (`run()`'s
    /// two sides and `synchronize()` may run together). A receiver and a sender run at once:
    /// every local transaction they make is checked against what the database recorded when it
    /// commits, as for two processes of one database synchronizing together.
    private let receiving = PassGate()
    private let sending = PassGate()
    private let preparing = PassGate()
    private let reporting = PassGate()
    /// The last error each side of `run()` retried after, nil once that side's pass succeeds.
    private let failures = Locked<(sending: LocalDatabaseError?, receiving: LocalDatabaseError?)>((nil, nil))
    private let listeners = Locked<(next: Int, seen: UInt64, continuations: [Int: AsyncStream<SyncConflict>.Continuation])>((0, 0, [:]))

    /// A synchronizer of `local` with `store`.
    /// - Parameters:
    ///   - device: The device's name, stamped on its writes (1 to 255 bytes, no zero byte):
    ///     by default the local change log's id, unique to the database. A database
    ///     synchronizes as one device for its whole life.
    ///   - writesPerPush: The most local writes sent in one server transaction.
    ///   - commitsPerPull: The most server commits applied in one local transaction.
    public init(_ local: LocalDatabase, with store: PostgresStore, device: String? = nil, writesPerPush: Int = 500, commitsPerPull: Int = 256) {
        self.local = local
        self.store = store
        self.device = device ?? ((try? local.changePosition().logID) ?? "unknown")
        self.writesPerPush = max(1, writesPerPush)
        self.commitsPerPull = max(1, commitsPerPull)
    }

    /// Where the synchronizer has got to.
    public var progress: Progress { state.withLock { $0 } }

    /// One pass: receives the server's commits, sends every pending local write, receives again.
    /// Returns the local writes sent.
    /// - Throws: `LocalDatabaseError` (`server` when the server cannot be reached: nothing is
    ///   lost, the writes stay pending; `migrationInProgress` while a local migration runs).
    @discardableResult
    public nonisolated(nonsending) func synchronize() async throws -> Int {
        do throws(DatabaseError) {
            try await receive()
            let sent = try await send()
            try await receive()
            return sent
        } catch { throw LocalDatabaseError(error) }
    }

    /// Synchronizes until the task is cancelled, sending and receiving independently: local
    /// writes are sent after each local commit, and the server's commits received after each
    /// server commit (other processes' within 50 ms), so that neither waits for the other's
    /// round trips. A side that fails for a while (the server unreachable or restarting, a lock,
    /// a full disk) is retried after a pause that doubles from 50 ms up to 5 s; the error is in
    /// `progress.lastError` meanwhile, and local writes go on being accepted.
    /// - Throws: `LocalDatabaseError` for an error no retry would change (the database closed,
    ///   synchronizing as another device, an encrypted database).
    public nonisolated(nonsending) func run() async throws {
        defer { finishListeners() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.follow(.sending) }
            group.addTask { try await self.follow(.receiving) }
            // The first error ends the group, which cancels the other side.
            try await group.waitForAll()
        }
    }

    /// One side of `run()`.
    private enum Side {
        case sending, receiving
    }

    /// Runs one side of `run()`: a pass, then another after each commit of its side's notifier.
    private nonisolated(nonsending) func follow(_ side: Side) async throws {
        let notifier = side == .sending ? local.changeNotifier : store.engine.notifier
        try await LocalLMDBPostgres.follow(notifier) { () async throws(DatabaseError) in
            switch side {
            case .sending: _ = try await send()
            case .receiving: try await receive()
            }
        } failed: { error in
            let last = failures.withLock { failures in
                if side == .sending { failures.sending = error } else { failures.receiving = error }
                return failures.sending ?? failures.receiving
            }
            state.withLock { $0.lastError = last }
        }
    }

    /// The local writes that lose from now on (to a later write received, or refused by the
    /// server), as the synchronizer finds them. Ends when `run()` ends, however it ends.
    public func conflicts() -> AsyncStream<SyncConflict> {
        let (stream, continuation) = AsyncStream<SyncConflict>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let id = listeners.withLock { listeners in
            listeners.next += 1
            listeners.continuations[listeners.next] = continuation
            return listeners.next
        }
        continuation.onTermination = { [listeners] _ in _ = listeners.withLock { $0.continuations.removeValue(forKey: id) } }
        return stream
    }

    /// The server's log of versions that lost, after entry `after` (0: from the first), at most
    /// `limit`, in order: refused pushes, and versions replaced by a device's write made without
    /// having seen them.
    public nonisolated(nonsending) func serverConflicts(after: UInt64 = 0, limit: Int = 1_000) async throws -> [SyncConflict] {
        do throws(DatabaseError) {
            return try await store.engine.serverConflicts(after: Int64(clamping: after), limit: limit).map(SyncConflict.init)
        } catch { throw LocalDatabaseError(error) }
    }

    // MARK: A pass

    /// Receives the server's commits, one receiver at a time (`run()`'s receiving side and
    /// `synchronize()` may be called together), then reports the conflicts found.
    private nonisolated(nonsending) func receive() async throws(DatabaseError) {
        try await prepare()
        do {
            await receiving.enter()
            defer { receiving.leave() }
            try await pull()
        }
        try await reportConflicts()
    }

    /// Sends the pending local writes, one sender at a time, then reports the conflicts found.
    /// Returns the local writes sent.
    private nonisolated(nonsending) func send() async throws(DatabaseError) -> Int {
        try await prepare()
        let sent: Int
        do {
            await sending.enter()
            defer { sending.leave() }
            sent = try await push()
        }
        try await reportConflicts()
        return sent
    }

    /// Turns synchronization on, locally and on the server, once.
    private nonisolated(nonsending) func prepare() async throws(DatabaseError) {
        guard !prepared.withLock({ $0 }) else { return }
        await preparing.enter()
        defer { preparing.leave() }
        guard !prepared.withLock({ $0 }) else { return }
        guard local.storageKeySize == store.engine.maxKeySize else {
            throw .unsupported(operation: "Synchronizing", reason: "the database's and the server's longest keys differ")
        }
        // Locally first: from then on every local write is stamped and kept for sending, even
        // while the server cannot be reached.
        _ = try await local.enableSync(device: device)
        _ = try await store.engine.enableSync()
        let seen = try await local.syncPending(limit: 0).lastConflict
        listeners.withLock { $0.seen = max($0.seen, seen) }
        prepared.withLock { $0 = true }
    }

    nonisolated(nonsending) func apply(_ run: SyncRun) async throws(DatabaseError) {
        _ = try await local.applySync(run)
    }

    /// Tells `conflicts()`' listeners of the conflicts recorded since the last look.
    private nonisolated(nonsending) func reportConflicts() async throws(DatabaseError) {
        await reporting.enter()
        defer { reporting.leave() }
        let seen = listeners.withLock { $0.seen }
        let last = try await local.syncPending(limit: 0).lastConflict
        guard last > seen else { return }
        let found = try await local.syncConflictRecords(after: seen, limit: Int(min(last - seen, 10_000)))
        let continuations = listeners.withLock { listeners -> [AsyncStream<SyncConflict>.Continuation] in
            listeners.seen = max(listeners.seen, found.last?.id ?? seen)
            return Array(listeners.continuations.values)
        }
        for conflict in found {
            for continuation in continuations { continuation.yield(conflict) }
        }
    }

    func finishListeners() {
        let continuations = listeners.withLock { listeners in
            defer { listeners.continuations = [:] }
            return Array(listeners.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
