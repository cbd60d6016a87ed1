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
        /// The last error `run()` retried after; nil once a pass succeeds.
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
    private let state = Locked(Progress())
    private let prepared = Locked(false)
    /// The server position reached: past the recorded one when the commits after it brought
    /// nothing newer than the database holds (recorded with the next run that changes something;
    /// lost to a kill, they are only read again).
    private let reached = Locked<String?>(nil)
    /// Class names the server is known to hold rows for (a push sends only new ones).
    private let knownClasses = Locked(Set<String>())
    /// One pass at a time (`run()` and `synchronize()` may be called together).
    private let gate = PassGate()
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
            return try await pass(receivingAfter: true)
        } catch { throw LocalDatabaseError(error) }
    }

    /// Synchronizes until the task is cancelled: a pass, then another after each local commit
    /// and each server commit (other processes' within 50 ms). A pass that fails for a while (the
    /// server unreachable or restarting, a lock, a full disk) is retried after a pause that
    /// doubles from 50 ms up to 5 s; the error is in `progress.lastError` meanwhile, and local
    /// writes go on being accepted.
    /// - Throws: `LocalDatabaseError` for an error no retry would change (the database closed,
    ///   synchronizing as another device, an encrypted database).
    public nonisolated(nonsending) func run() async throws {
        let localSubscription = ChangeSubscription(local.changeNotifier)
        let serverSubscription = ChangeSubscription(store.engine.notifier)
        defer {
            withExtendedLifetime((localSubscription, serverSubscription)) {}
            finishListeners()
        }
        var pause = Duration.milliseconds(50)
        while !Task.isCancelled {
            let versions = (local.changeNotifier.version, store.engine.notifier.version)
            do throws(DatabaseError) {
                _ = try await pass(receivingAfter: false)
                state.withLock { $0.lastError = nil }
                pause = .milliseconds(50)
            } catch {
                guard isTransient(error) else { throw LocalDatabaseError(error) }
                state.withLock { $0.lastError = LocalDatabaseError(error) }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
                continue
            }
            let local = local.changeNotifier
            let server = store.engine.notifier
            // Whichever side commits first wakes the next pass.
            await withTaskGroup(of: Void.self) { group in
                group.addTask { _ = await local.wait(after: versions.0) }
                group.addTask { _ = await server.wait(after: versions.1) }
                await group.next()
                group.cancelAll()
            }
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

    /// A pass: receives, sends, and (`receivingAfter`) receives again. `run()` leaves the last
    /// part to its next pass, which the server's commits (its own push's among them) start.
    /// Passes of one synchronizer run one at a time.
    private nonisolated(nonsending) func pass(receivingAfter: Bool) async throws(DatabaseError) -> Int {
        await gate.enter()
        defer { gate.leave() }
        return try await passAlone(receivingAfter: receivingAfter)
    }

    private nonisolated(nonsending) func passAlone(receivingAfter: Bool) async throws(DatabaseError) -> Int {
        try await prepare()
        try await pull()
        let sent = try await push()
        if receivingAfter { try await pull() }
        try await reportConflicts()
        return sent
    }

    /// Turns synchronization on, locally and on the server, once.
    private nonisolated(nonsending) func prepare() async throws(DatabaseError) {
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

    /// Receives the server's commits after the recorded position, a run at a time. The stamps
    /// of the records a run names are read first; only versions newer than the database's are
    /// fetched and applied (a device's own writes come back with stamps it holds already).
    private nonisolated(nonsending) func pull() async throws(DatabaseError) {
        while true {
            let recorded = try await local.syncPending(limit: 0).position
            guard let recorded, let recordedPosition = PushReplicator.position(parsing: recorded),
                  recordedPosition.logID == store.engine.changeLogID
            else {
                try await fullCopy(expected: recorded)
                continue
            }
            var position = recordedPosition
            if let ahead = reached.withLock({ $0 }).flatMap(PushReplicator.position(parsing:)), ahead.logID == position.logID,
               ahead.sequence > position.sequence {
                position = ahead
            }
            state.withLock { $0.position = position.description }
            let feed: LoggedCommits
            do throws(DatabaseError) {
                feed = try await store.engine.changeFeed(since: position, limit: commitsPerPull)
            } catch {
                guard case .changesUnavailable = error else { throw error }
                try await fullCopy(expected: recorded)
                continue
            }
            guard !feed.commits.isEmpty else { return }
            var ids: [String] = []
            var seen = Set<ExactID>()
            var whole = false
            for commit in feed.commits {
                for change in commit.changes {
                    switch change {
                    case let .written(id, _), let .deleted(id, _):
                        if seen.insert(ExactID(id)).inserted { ids.append(id) }
                    case .typeDeleted, .cleared:
                        // The ids are not in the log: every version is read again.
                        whole = true
                    }
                }
            }
            if whole {
                try await fullCopy(expected: recorded)
                continue
            }
            let newer = try await newerIDs(ids)
            guard !newer.isEmpty else {
                reached.withLock { $0 = feed.position.description }
                state.withLock { $0.position = feed.position.description }
                // The log held nothing after these when it was read: a later commit wakes `run()`.
                if feed.reachesEnd { return }
                continue
            }
            let fetched = try await store.engine.syncVersions(ids: newer)
            let run = try syncRun(fetched, knownIDs: newer, expected: recorded, position: feed.position.description)
            do throws(DatabaseError) {
                try await apply(run)
            } catch {
                // The recorded position moved (a process of the same database synchronized
                // meanwhile): read it again and go on from there.
                guard case .transactionFailed = error, try await local.syncPending(limit: 0).position != recorded else { throw error }
                continue
            }
            reached.withLock { $0 = nil }
            state.withLock {
                $0.pulls += 1
                $0.received += fetched.versions.count
                $0.position = feed.position.description
            }
            if feed.reachesEnd { return }
        }
    }

    /// The ids among `ids` whose server stamp is later than the database's.
    private nonisolated(nonsending) func newerIDs(_ ids: [String]) async throws(DatabaseError) -> [String] {
        guard !ids.isEmpty else { return [] }
        let server = try await store.engine.syncVersions(ids: ids, values: false)
        var serverStamps: [[UInt8]: SyncStamp] = [:]
        for version in server.versions { serverStamps[version.key] = version.stamp }
        let localStamps = try await local.syncStamps(ofIDs: ids)
        var newer: [String] = []
        for (id, localStamp) in zip(ids, localStamps) {
            guard let stamp = serverStamps[StorageKey(id, maxKeySize: store.engine.maxKeySize).bytes] else { continue }
            if localStamp.map({ stamp > $0 }) ?? true { newer.append(id) }
        }
        return newer
    }

    /// Receives every version the server holds, a page of 10,000 at a time: each page is applied
    /// in a local transaction while the next one is fetched (at most one page waits, so memory
    /// stays bounded however large the store); then a last transaction records the position they
    /// were read at. Interrupted, the copy records no position, and the next pass copies again
    /// (a version already held changes nothing).
    private nonisolated(nonsending) func fullCopy(expected: String?) async throws(DatabaseError) {
        defer { state.withLock { $0.fullCopy = nil } }
        var applying: Task<Void, any Error>?
        var received = 0
        let snapshot: SyncFetched
        do throws(DatabaseError) {
            snapshot = try await store.engine.syncVersionPages(pageSize: 10_000) { [state] fetched, total in
                state.withLock { $0.fullCopy = PullReplicator.FullCopy(fetched: fetched, total: total) }
            } take: { page throws(DatabaseError) in
                received += page.versions.count
                try await Self.finish(applying)
                // Made into a local run (its records encoded afresh and checked) and applied
                // while the next page is fetched.
                applying = Task { [self, local] in
                    _ = try await local.applySync(try syncRun(page, knownIDs: [], expected: nil, position: nil))
                }
            }
            try await Self.finish(applying)
        } catch {
            // No apply outlives the pass (passes run one at a time).
            _ = try? await Self.finish(applying)
            throw error
        }
        guard let position = snapshot.position else {
            throw .changesUnavailable(token: "", reason: "the store's position was not read with its records")
        }
        var last = SyncFetched()
        last.classRows = snapshot.classRows
        try await apply(try syncRun(last, knownIDs: [], expected: expected, position: position.description))
        state.withLock {
            $0.fullCopies += 1
            $0.received += received
            $0.position = position.description
        }
    }

    /// Waits for `task` (a page's local transaction), giving back its error.
    private static func finish(_ task: Task<Void, any Error>?) async throws(DatabaseError) {
        guard let task else { return }
        do {
            try await task.value
        } catch let error as DatabaseError {
            throw error
        } catch {
            throw .transactionFailed(reason: "a page of the full copy was not applied: \(error)")
        }
    }

    /// Sends the pending local writes, `writesPerPush` at a time, in the order they were made.
    nonisolated(nonsending) func push() async throws(DatabaseError) -> Int {
        var sent = 0
        var rounds = 0
        var allowed = 1
        while rounds < allowed {
            let pending = try await local.syncPending(limit: writesPerPush)
            state.withLock { $0.pending = pending.total }
            if rounds == 0 { allowed = pending.total / writesPerPush + 2 }
            rounds += 1
            guard !pending.writes.isEmpty else { break }
            var push = SyncPush(device: device)
            var source = SourceRecords()
            for write in pending.writes {
                if let value = write.value { source.records.append((StorageKey(write.id, maxKeySize: store.engine.maxKeySize).bytes, value)) }
            }
            let encoded = try local.syncRecords(source, maxKeySize: store.engine.maxKeySize)
            var next = 0
            for write in pending.writes {
                var record: Int?
                if write.value != nil {
                    record = next
                    next += 1
                }
                push.writes.append(SyncPush.Write(
                    key: StorageKey(write.id, maxKeySize: store.engine.maxKeySize).bytes, id: write.id, time: write.stamp.time,
                    base: write.base, record: record))
            }
            push.records = encoded.records
            let known = knownClasses.withLock { $0 }
            push.classRows = pending.classRows.filter { !known.contains($0.name) }
            let refused = try await store.engine.pushSync(push)
            knownClasses.withLock { $0.formUnion(push.classRows.map(\.name)) }
            var run = SyncRun(device: device)
            run.acknowledged = pending.writes.map { SyncRun.Acknowledged(id: $0.id, time: $0.stamp.time) }
            // A position reached in memory is recorded with the acknowledgement (a device that
            // mostly writes would otherwise never record it).
            if let ahead = reached.withLock({ $0 }), ahead != pending.position {
                run.expected = pending.position
                run.position = ahead
            }
            if !refused.isEmpty {
                var fetched = SyncFetched()
                fetched.versions = refused
                fetched.classRows = []
                let refusedRun = try syncRun(fetched, knownIDs: [], expected: nil, position: nil)
                run.changes = refusedRun.changes
                run.records = refusedRun.records
            }
            do throws(DatabaseError) {
                try await apply(run)
            } catch {
                guard case .transactionFailed = error, run.position != nil else { throw error }
                // The position moved meanwhile: the acknowledgement alone.
                run.expected = nil
                run.position = nil
                try await apply(run)
            }
            if run.position != nil { reached.withLock { if $0 == run.position { $0 = nil } } }
            sent += pending.writes.count
            state.withLock {
                $0.pushes += 1
                $0.pushed += pending.writes.count
                $0.refused += refused.count
            }
        }
        return sent
    }

    /// The local run for `fetched`: each version keyed for this database, its record encoded
    /// afresh (and checked: a server's bytes are not trusted).
    private func syncRun(_ fetched: SyncFetched, knownIDs: [String], expected: String?, position: String?) throws(DatabaseError) -> SyncRun {
        var run = SyncRun(device: device)
        run.expected = expected
        run.position = position
        run.classes = fetched.classRows.map {
            StoredClass(name: $0.name, mangledName: $0.mangledName, qualifiedName: $0.qualifiedName, adopts: true, copied: true)
        }
        var source = SourceRecords()
        for version in fetched.versions where !version.deleted {
            if let value = version.value { source.records.append((version.key, value)) }
        }
        let encoded = try local.syncRecords(source)
        run.records = encoded.records
        var idOfKey: [[UInt8]: String] = [:]
        for id in knownIDs { idOfKey[StorageKey(id, maxKeySize: local.storageKeySize).bytes] = id }
        var next = 0
        for version in fetched.versions {
            if !version.deleted, version.value != nil {
                let id = encoded.ids[next]
                run.changes.append(SyncRun.Change(key: StorageKey(id, maxKeySize: local.storageKeySize).bytes, id: id, stamp: version.stamp, record: next))
                next += 1
            } else {
                run.changes.append(SyncRun.Change(key: version.key, id: version.id ?? idOfKey[version.key], stamp: version.stamp, record: nil))
            }
        }
        return run
    }

    private nonisolated(nonsending) func apply(_ run: SyncRun) async throws(DatabaseError) {
        _ = try await local.applySync(run)
    }

    /// Tells `conflicts()`' listeners of the conflicts recorded since the last look.
    private nonisolated(nonsending) func reportConflicts() async throws(DatabaseError) {
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
