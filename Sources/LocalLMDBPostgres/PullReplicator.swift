import LocalLMDB
import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine
import LocalLMDBPostgresEngine

/// Keeps a `LocalDatabase` a read replica of a `PostgresStore`: it follows the store's change
/// log and applies each run of commits locally, so many machines read at LMDB's speed what one
/// server holds.
///
/// ```swift
/// let replica = try LocalDatabase(directory: replicaDirectory)   // a new database
/// let replicator = PullReplicator(from: server, to: replica)
/// let task = Task { try await replicator.run() }   // until cancelled
/// let students: [Student] = try await replica.read()
/// ```
///
/// - **A replica is read-only**: from its first replicated run on, every write to it (any face,
///   any process, the command-line tool) fails with `LocalDatabaseError.readOnlyReplica`, and
///   changes nothing: its records change only as the server's do, so the replicator never
///   overwrites a local write. Write to the server; `detach()` makes the records the database's
///   own again. Reads, queries, indexes declared on the replica, observation and the change feed
///   work as on any database (a replicated run is one local commit).
/// - **Once in effect**: each run is applied in one local write transaction that also records
///   the server position it reaches, and that is refused if the recorded position moved (two
///   replicators of one replica cannot interleave). A replicator that stops (a crash, a kill, a
///   lost connection) resumes from the position the replica holds.
/// - **Order**: a run's deletions are applied in order, then the records it wrote, with the
///   values the server holds when they are read; the replica never goes back to an older state.
/// - **Full copies**: the replica's first run, and a run whose position the server's log no
///   longer reaches (`PostgresStore.trimChangeLog(keeping:)`, or a store dropped and made again),
///   copies every record of the store from one snapshot and replaces the replica's records with
///   them, in one local transaction, reporting its progress (`progress.fullCopy`); the copy is held
///   in memory until it is applied. A database that holds records and is no replica is never made
///   one (`unsupported`): its records would be lost.
/// - **Mirroring**: a replica's own unique indexes do not refuse what the server stored, and a run
///   never joins a transaction the app has open on the replica (`transactionAlreadyActive`
///   until it ends; `run()` retries).
public final class PullReplicator: Sendable {
    /// Where a replicator has got to.
    public struct Progress: Sendable, Equatable {
        /// Runs of commits applied since this replicator was made (full copies included).
        public var transactions = 0
        /// Server commits applied since this replicator was made.
        public var commits = 0
        /// Records written to the replica since this replicator was made.
        public var records = 0
        /// Full copies made since this replicator was made.
        public var fullCopies = 0
        /// The full copy under way; nil when none is.
        public var fullCopy: FullCopy?
        /// The server position the replica holds, as of the last look.
        public var position: String?
        /// Server commits not yet applied, as of the last look (the server's last commit when
        /// the pass began, less the replica's position).
        public var lag: UInt64 = 0
        /// The last error `run()` retried after; nil once a pass succeeds.
        public var lastError: LocalDatabaseError?
    }

    /// A full copy's progress.
    public struct FullCopy: Sendable, Equatable {
        /// Records fetched from the server so far.
        public var fetched: Int
        /// Records the store holds in the snapshot copied.
        public var total: Int
    }

    let store: PostgresStore
    let local: LocalDatabase
    /// The name of the followed store in the replica's state: a replica follows one source.
    public let source: String
    /// The most server commits applied in one local transaction.
    public let commitsPerTransaction: Int
    private let state = Locked(Progress())

    /// A replicator of `store` into `local`.
    /// - Parameters:
    ///   - source: The name the replica records as its source; by default, the store's name.
    ///   - commitsPerTransaction: The most server commits applied in one local transaction.
    public init(from store: PostgresStore, to local: LocalDatabase, source: String? = nil, commitsPerTransaction: Int = 256) {
        self.store = store
        self.local = local
        self.source = source ?? store.name
        self.commitsPerTransaction = max(1, commitsPerTransaction)
    }

    /// Where the replicator has got to.
    public var progress: Progress { state.withLock { $0 } }

    /// Applies every server commit made so far to the replica. Returns the number of server
    /// commits applied (a full copy counts none).
    /// - Throws: `LocalDatabaseError`: `server` when the server cannot be reached (nothing is
    ///   lost: call again); `unsupported` when the local database holds records and is no
    ///   replica; `transactionFailed` when it is another source's replica, or another replicator
    ///   moved its position.
    @discardableResult
    public nonisolated(nonsending) func catchUp() async throws -> Int {
        do throws(DatabaseError) {
            return try await catchUpTyped()
        } catch { throw LocalDatabaseError(error) }
    }

    /// Follows the store until the task is cancelled: catches up, then applies the server's
    /// commits as they are made (at once: the server announces each commit; or within a second,
    /// the store's poll). A pass that fails for a while (the server restarting, a lost
    /// connection: `server`; `busy`; a transaction open on the replica; a full disk or map) is
    /// retried after a pause that doubles from 50 ms up to 5 s; the error is in
    /// `progress.lastError` meanwhile.
    /// - Throws: `LocalDatabaseError` for any other error, which no retry would change.
    public nonisolated(nonsending) func run() async throws {
        try await follow(store.engine.notifier) { () throws(DatabaseError) in
            _ = try await catchUpTyped()
        } failed: { error in
            state.withLock { $0.lastError = error }
        }
    }

    /// Ends replication: the replica's records become its own, and writable; a replicator of
    /// this source refuses it from then on (it holds records and is no replica). Returns
    /// whether it was a replica. Stop `run()` first: a run applied after this is refused.
    /// - Throws: `LocalDatabaseError.transactionFailed` when it is another source's replica.
    @discardableResult
    public nonisolated(nonsending) func detach() async throws -> Bool {
        do throws(DatabaseError) {
            return try await local.detachReplica(source: source)
        } catch { throw LocalDatabaseError(error) }
    }

    private nonisolated(nonsending) func catchUpTyped() async throws(DatabaseError) -> Int {
        var recorded = try await local.replicaState()
        if let recorded, recorded.source != source {
            throw .transactionFailed(reason: "the database is a replica of '\(recorded.source)', not of '\(source)'")
        }
        var applied = 0
        let serverLast = try await store.engine.currentChangeToken()
        while true {
            guard let current = recorded, let position = PushReplicator.position(parsing: current.position) else {
                recorded = try await fullCopy(expected: recorded?.position)
                continue
            }
            state.withLock {
                $0.position = current.position
                $0.lag = position.logID == serverLast.logID && serverLast.sequence > position.sequence ? serverLast.sequence - position.sequence : 0
            }
            let feed: LoggedCommits
            do throws(DatabaseError) {
                feed = try await store.engine.changeFeed(since: position, limit: commitsPerTransaction)
            } catch {
                guard case .changesUnavailable = error else { throw error }
                recorded = try await fullCopy(expected: current.position)
                continue
            }
            guard !feed.commits.isEmpty else {
                state.withLock { $0.lag = 0 }
                return applied
            }
            recorded = try await apply(feed, expected: current.position)
            applied += feed.commits.count
        }
    }

    /// Applies `feed`'s commits in one local transaction; returns the state recorded.
    private nonisolated(nonsending) func apply(_ feed: LoggedCommits, expected: String) async throws(DatabaseError) -> ReplicaState {
        let keySize = local.storageKeySize
        let run = ReplicatedRun(feed.commits, maxKeySize: keySize)
        let fetched = run.written.isEmpty ? SourceRecords() : try await store.engine.sourceRecords(ids: run.written)
        let (parts, found) = try local.replicaParts(fetched)
        let operations = run.deletions + run.absent(found: found, maxKeySize: keySize) + puts(parts, classRows: fetched.classRows)
        let next = try replicaState(at: feed.position)
        try await local.applyReplicated(operations, expected: expected, state: next)
        state.withLock {
            $0.transactions += 1
            $0.commits += feed.commits.count
            $0.records += found.count
            $0.position = next.position
        }
        return next
    }

    /// Replaces the replica's records with every record of the store, read in one snapshot;
    /// returns the state recorded.
    private nonisolated(nonsending) func fullCopy(expected: String?) async throws(DatabaseError) -> ReplicaState {
        defer { state.withLock { $0.fullCopy = nil } }
        let fetched = try await store.engine.allSourceRecords(pageSize: 10_000) { [state] fetched, total in
            state.withLock { $0.fullCopy = FullCopy(fetched: fetched, total: total) }
        }
        let (parts, found) = try local.replicaParts(fetched)
        guard let position = fetched.position else {
            throw .changesUnavailable(token: "", reason: "the store's position was not read with its records")
        }
        let next = try replicaState(at: position)
        try await local.applyReplicated([.clear] + puts(parts, classRows: fetched.classRows), expected: expected, state: next)
        state.withLock {
            $0.fullCopies += 1
            $0.transactions += 1
            $0.records += found.count
            $0.position = next.position
        }
        return next
    }

    /// The puts of `parts`, after recording `classRows`: the server's owners of its class names
    /// are the replica's (they adopt), and its names are copied as the server spells them.
    private func puts(_ parts: [RecordBatch], classRows: [StoredClass]) -> [WriteOperation] {
        let owners = classRows.map { StoredClass(name: $0.name, mangledName: $0.mangledName, qualifiedName: $0.qualifiedName, adopts: true, copied: true) }
        return [.put(RecordBatch(), classes: owners)] + parts.map { .put($0, classes: []) }
    }

    private func replicaState(at position: LogPosition) throws(DatabaseError) -> ReplicaState {
        guard let next = ReplicaState(source: source, position: position.description) else {
            throw .changesUnavailable(token: position.description, reason: "the server's change log position holds a zero byte")
        }
        return next
    }
}
