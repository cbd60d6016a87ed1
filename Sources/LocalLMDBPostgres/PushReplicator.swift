import LocalLMDB
import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine
import LocalLMDBPostgresEngine

/// Copies a `LocalDatabase`'s commits to a `PostgresStore`, in order, as they happen: apps that
/// keep their data on the device and sync it up to a server.
///
/// ```swift
/// let replicator = PushReplicator(from: local, to: server)
/// let task = Task { try await replicator.run() }   // until cancelled
/// ```
///
/// How it keeps every commit once:
/// - it follows the local change log (`changes(since:)`), and applies each run of commits to the
///   server in one transaction that also records, in the store's `replication` table, the local
///   position they reach. A replicator that stops (a crash, a kill, a lost connection) resumes from
///   the position the server holds, so a commit is applied once in effect: never lost, never
///   applied twice;
/// - a run of commits is applied as its deletions, in order, then the records it wrote, with the
///   values they hold locally when it is applied: the server never goes back to an older state,
///   and once the replicator has caught up by following the log, the store holds exactly the local
///   records (the same bytes; see the full copy below for the exception);
/// - when the server holds no position for this source yet, or the local change log no longer
///   holds the commits after it (trimmed while the replicator was away), every local record is
///   copied, with the position it was read at. A full copy writes every local record and deletes
///   none on the server (the store may hold other sources' records), so a record deleted locally
///   while the log was out of reach stays on the server (`progress.fullCopies` tells); a replicated
///   `delete(T.self)` or `clearDatabase()`, though, deletes on the server what it deleted locally:
///   every record of the class, or every record of the store;
/// - two replicators of one source cannot interleave: a transaction whose recorded position moved
///   under it applies nothing (the store refuses it); the replicator then reads the position again
///   and goes on from it, as after a replicator of the same source that was killed with its last
///   transaction in flight, which the server completed. A position that moved back (another
///   source's log under this name) fails the pass (`transactionFailed`);
/// - a migration (`LocalDatabase.migrate(with:)`) is never pushed half-way: while one is under way
///   locally, nothing is pushed; once it has completed, everything up to the last local commit
///   goes in one transaction (however many commits that is: its memory is a full copy's), which
///   also records the local migrations as the store's, so apps on the store that do not know them
///   write nothing (<doc:Migrations>). A store running a migration of its own, or one that has had
///   a migration the local database has not, refuses the push (`migrationInProgress`,
///   `unknownMigration`).
///
/// The conflict rule, for records written both locally and on the server: the last commit to reach
/// the server wins (a replicated write replaces the server's record; a server write replaces the
/// replicated one until the record is written locally again). The server's change log records
/// every replicated commit, so nothing is replaced without a record of it.
public final class PushReplicator: Sendable {
    /// Where a replicator has got to.
    public struct Progress: Sendable, Equatable {
        /// Runs of commits applied since this replicator was made.
        public var transactions = 0
        /// Local commits applied since this replicator was made.
        public var commits = 0
        /// Records written to the server since this replicator was made.
        public var records = 0
        /// Full copies made since this replicator was made.
        public var fullCopies = 0
        /// The local position the server holds, as of the last look.
        public var position: String?
        /// Local commits not yet applied, as of the last look.
        public var lag: UInt64 = 0
        /// The last error `run()` retried after; nil once a pass succeeds.
        public var lastError: LocalDatabaseError?
    }

    let local: LocalDatabase
    let store: PostgresStore
    /// The name the server records this replicator's position under.
    public let source: String
    /// The most local commits applied in one transaction.
    public let commitsPerTransaction: Int
    private let state = Locked(Progress())

    /// A replicator of `local` into `store`.
    /// - Parameters:
    ///   - source: The name the server records the position under; by default, one made from the
    ///     local database's change log id, so each local database has its own.
    ///   - commitsPerTransaction: The most local commits applied in one server transaction.
    public init(from local: LocalDatabase, to store: PostgresStore, source: String? = nil, commitsPerTransaction: Int = 256) {
        self.local = local
        self.store = store
        self.source = source ?? "push:" + ((try? local.changePosition().logID) ?? "unknown")
        self.commitsPerTransaction = max(1, commitsPerTransaction)
    }

    /// Where the replicator has got to.
    public var progress: Progress { state.withLock { $0 } }

    /// Applies every local commit made so far to the server. Returns the number of local commits applied.
    /// - Throws: `LocalDatabaseError` (`server` when the server cannot be reached; nothing is lost:
    ///   call again); `migrationInProgress` while a migration is under way on the local database
    ///   (nothing of it is pushed until it completes) or on the store.
    @discardableResult
    public nonisolated(nonsending) func catchUp() async throws -> Int {
        do throws(DatabaseError) {
            return try await catchUpTyped()
        } catch { throw LocalDatabaseError(error) }
    }

    /// Follows the local database until the task is cancelled: catches up, then applies each new
    /// commit as it is made (this process's at once, other processes' within 50 ms). A pass that
    /// fails for a while (the server restarting, a lost connection: `server`; `busy`; a full disk
    /// or map) is retried after a pause that doubles from 50 ms up to 5 s; the error is in
    /// `progress.lastError` meanwhile.
    /// - Throws: `LocalDatabaseError` for any other error, which no retry would change (the
    ///   local database closed, a second replicator of the same source, an encrypted database).
    public nonisolated(nonsending) func run() async throws {
        try await follow(local.changeNotifier) { () throws(DatabaseError) in
            _ = try await catchUpTyped()
        } failed: { error in
            state.withLock { $0.lastError = error }
        }
    }

    private nonisolated(nonsending) func catchUpTyped() async throws(DatabaseError) -> Int {
        var applied = 0
        var recorded = try await store.engine.replicationPosition(source: source)
        while true {
            // A migration under way is pushed once it has completed: until then a pass fails with
            // `migrationInProgress`, which `run()` retries after a pause (its completing commit
            // adds nothing to the change log, so no commit would wake it). A completed migration
            // the store has not had goes in one transaction, with the local migration state.
            let migrations = try await local.migrationState()
            if let running = migrations.running { throw .migrationInProgress(name: running.name) }
            let whole = try await store.engine.migrationState().completed != migrations.completed
            let localLast = try local.changePosition()
            guard let position = recorded.flatMap(Self.position(parsing:)), position.logID == localLast.logID else {
                if let copied = try await fullCopy(expected: recorded, migrations: migrations) {
                    recorded = copied
                } else {
                    recorded = try await store.engine.replicationPosition(source: source)
                }
                continue
            }
            state.withLock {
                $0.position = recorded
                $0.lag = localLast.sequence > position.sequence ? localLast.sequence - position.sequence : 0
            }
            let feed: LoggedCommits
            do throws(DatabaseError) {
                feed = try await local.changeFeed(since: position, limit: whole ? .max : commitsPerTransaction)
            } catch {
                guard case .changesUnavailable = error else { throw error }
                if let copied = try await fullCopy(expected: recorded, migrations: migrations) {
                    recorded = copied
                } else {
                    recorded = try await store.engine.replicationPosition(source: source)
                }
                continue
            }
            guard !feed.commits.isEmpty else {
                // Nothing to push, but a migration to record (one that changed no record).
                if whole, let recorded {
                    guard try await applyReplicated(
                        [], classRows: [], expected: recorded, position: recorded, migrations: migrations)
                    else {
                        continue
                    }
                }
                return applied
            }
            guard let reached = try await apply(feed, expected: recorded, migrations: migrations) else {
                recorded = try await store.engine.replicationPosition(source: source)
                continue
            }
            recorded = reached
            applied += feed.commits.count
        }
    }

    /// `store.engine.applyReplicated`; false when nothing was applied because the store's position
    /// for this source is no longer `expected` but one it reached later: another replicator of
    /// this source committed meanwhile, typically one killed while its last transaction was in
    /// flight, which the server completed after this one read the position. The caller reads the
    /// position again and goes on from it (every commit is still applied once in effect).
    private nonisolated(nonsending) func applyReplicated(
        _ operations: [WriteOperation], classRows: [StoredClass], expected: String?, position: String, migrations: MigrationState
    ) async throws(DatabaseError) -> Bool {
        do {
            try await store.engine.applyReplicated(
                operations, classRows: classRows, source: source, expected: expected, position: position, migrations: migrations)
            return true
        } catch {
            guard case .transactionFailed = error else { throw error }
            let now = try await store.engine.replicationPosition(source: source)
            guard let now, now != expected, let moved = Self.position(parsing: now),
                  expected.flatMap(Self.position(parsing:)).map({ $0.logID != moved.logID || $0.sequence < moved.sequence }) ?? true
            else { throw error }
            return false
        }
    }

    /// Applies `feed`'s commits in one transaction; returns the position recorded, or nil when the
    /// local migration state is no longer `migrations` (a migration committed a batch since it
    /// was read: the caller reads again, so no part of a migration is pushed alone), or when the
    /// store's position moved meanwhile (`applyReplicated`: the caller reads it again).
    private nonisolated(nonsending) func apply(
        _ feed: LoggedCommits, expected: String?, migrations: MigrationState
    ) async throws(DatabaseError) -> String? {
        let keySize = store.engine.maxKeySize
        let run = ReplicatedRun(feed.commits, maxKeySize: keySize)
        let (records, _) = try await local.replicatedRecords(ids: run.written)
        guard try await local.migrationState() == migrations else { return nil }
        var deletions = run.deletions
        for id in records.absent { deletions.append(.delete(StorageKey(id, maxKeySize: keySize))) }
        let operations = deletions + records.parts.map { WriteOperation.put($0, classes: []) }
        let position = feed.position.description
        guard try await applyReplicated(operations, classRows: records.classRows, expected: expected, position: position, migrations: migrations)
        else { return nil }
        state.withLock {
            $0.transactions += 1
            $0.commits += feed.commits.count
            $0.records += records.count
            $0.position = position
        }
        return position
    }

    /// Copies every local record, with the position it was read at; returns the position
    /// recorded, or nil when the local migration state is no longer `migrations`, or the store's
    /// position moved meanwhile (as `apply`).
    private nonisolated(nonsending) func fullCopy(expected: String?, migrations: MigrationState) async throws(DatabaseError) -> String? {
        let (records, position) = try await local.replicatedRecords(ids: nil)
        guard try await local.migrationState() == migrations else { return nil }
        let recorded = position.description
        guard try await applyReplicated(
            records.parts.map { .put($0, classes: []) }, classRows: records.classRows, expected: expected, position: recorded,
            migrations: migrations)
        else { return nil }
        state.withLock {
            $0.fullCopies += 1
            $0.transactions += 1
            $0.records += records.count
            $0.position = recorded
        }
        return recorded
    }

    /// The position a `LogPosition.description` names (`logID:sequence[:commit]`).
    static func position(parsing text: String) -> LogPosition? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3, let sequence = UInt64(parts[1]) else { return nil }
        let commit = parts.count == 3 ? UInt64(parts[2], radix: 16) : 0
        guard let commit else { return nil }
        return LogPosition(logID: String(parts[0]), sequence: sequence, commit: commit)
    }
}
