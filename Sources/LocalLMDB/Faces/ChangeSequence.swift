import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// The commits made to a database from a point on, as they become durable: an `AsyncSequence`
/// of `CommittedChanges` (from `changes()` or `changes(of:)`).
///
/// Each commit comes once, in commit order, after it is durable, whichever process or database
/// value made it; rolled-back work never appears, and a transaction is one commit. The sequence
/// reads the database's change log itself, so a slow consumer holds no backlog in memory: it
/// reads on from where it is. If it falls so far behind that the log no longer holds its
/// position (see `DatabaseConfiguration.changeLogCommits`), iterating throws
/// `LocalDatabaseError.changesUnavailable`. Other processes' commits arrive within about 100 ms
/// (the log is polled every 50 ms while anyone observes).
///
/// Cancelling the task that iterates ends the sequence (`next()` returns nil), and dropping the
/// iterator releases everything it held.
public struct ChangeSequence: AsyncSequence, Sendable {
    public typealias Element = CommittedChanges
    public typealias Failure = LocalDatabaseError

    let source: Result<FaceEngine, DatabaseError>
    let start: Result<LogPosition, DatabaseError>
    /// The class names whose changes to keep; nil for every change.
    let classNames: [String]?

    /// An iterator starting where the sequence was made.
    public func makeAsyncIterator() -> Iterator {
        Iterator(source: source, token: start, classNames: classNames)
    }

    /// Reads the change log on from its position.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = CommittedChanges
        public typealias Failure = LocalDatabaseError

        private let source: Result<FaceEngine, DatabaseError>
        private var token: Result<LogPosition, DatabaseError>
        private let classNames: [String]?
        private let subscription: ChangeSubscription?
        /// Read but not yet returned.
        private var pending: [LoggedCommit] = []
        /// The most commits read from the log at once.
        private static let pageSize = 256

        init(source: Result<FaceEngine, DatabaseError>, token: Result<LogPosition, DatabaseError>, classNames: [String]?) {
            (self.source, self.token, self.classNames) = (source, token, classNames)
            subscription = (try? source.get()).map { ChangeSubscription($0.notifier) }
        }

        /// The next commit with changes the sequence keeps; nil once the task is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(LocalDatabaseError) -> CommittedChanges? {
            do throws(DatabaseError) {
                let engine = try source.get()
                guard let subscription else { return nil }
                while !Task.isCancelled {
                    if !pending.isEmpty { return CommittedChanges(pending.removeFirst()) }
                    let version = subscription.notifier.version
                    let feed = try await engine.changeFeed(since: try token.get(), limit: Self.pageSize)
                    token = .success(feed.position)
                    pending = feed.commits.compactMap(keep)
                    if pending.isEmpty, feed.commits.isEmpty {
                        guard await subscription.notifier.wait(after: version) else { return nil }
                    }
                }
                return nil
            } catch { throw LocalDatabaseError(error) }
        }

        public mutating func next() async throws(LocalDatabaseError) -> CommittedChanges? {
            try await next(isolation: nil)
        }

        /// `commit` with only the changes kept; nil when none is.
        private func keep(_ commit: LoggedCommit) -> LoggedCommit? {
            guard let classNames else { return commit }
            let kept = commit.changes.filter { $0.concerns(classNames: classNames) }
            return kept.isEmpty ? nil : LoggedCommit(position: commit.position, changes: kept)
        }
    }
}

/// A value read from a database, then read again after each commit that may have changed it:
/// an `AsyncSequence` (from `observe(_:id:)` and `observeAll(_:)`).
///
/// The first element is the current value; each later one is read after a durable commit (of
/// any process or database value) that changed what it depends on. Each element is read in one
/// snapshot, in the isolation of the task that iterates, so models need not be `Sendable`. A
/// consumer slower than the commits gets the latest value, never a backlog. Cancelling the task
/// that iterates ends the sequence; dropping the iterator releases everything it held.
///
/// It reads committed state: the open transaction of the database it came from is not seen
/// until it commits.
public struct DatabaseObservation<Value>: AsyncSequence, Sendable {
    public typealias Element = Value
    public typealias Failure = LocalDatabaseError

    let source: Result<FaceEngine, DatabaseError>
    /// What to read, or why it cannot be read (an empty id).
    let read: Result<any SnapshotRead<Observed<Value>>, DatabaseError>
    let isRelevant: @Sendable (LoggedChange) -> Bool

    /// An iterator whose first element is the current value.
    public func makeAsyncIterator() -> Iterator {
        Iterator(observation: self)
    }

    /// Reads the value, then again after each commit that may have changed it.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = Value
        public typealias Failure = LocalDatabaseError

        private let observation: DatabaseObservation<Value>
        private let subscription: ChangeSubscription?
        /// The state the last value was read in; nil before the first.
        private var token: LogPosition?
        /// The notifier's version before the last read of the log.
        private var seen: UInt64 = 0
        /// The digest of the last value, for reads that give one: a value read again with the
        /// same digest is not given again.
        private var digest: UInt64?

        init(observation: DatabaseObservation<Value>) {
            self.observation = observation
            subscription = (try? observation.source.get()).map { ChangeSubscription($0.notifier) }
        }

        /// The current value first; then the value after the next commit that may have changed
        /// it; nil once the task is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(LocalDatabaseError) -> Value? {
            do throws(DatabaseError) {
                return try await following(isolation: actor)
            } catch { throw LocalDatabaseError(error) }
        }

        /// `next`, with the lower layers' errors.
        private mutating func following(isolation actor: isolated (any Actor)?) async throws(DatabaseError) -> Value? {
            let engine = try observation.source.get()
            guard let subscription, !Task.isCancelled else { return nil }
            guard var token else { return try await read(engine, subscription, unlessUnchanged: false) }
            while true {
                guard await subscription.notifier.wait(after: seen), !Task.isCancelled else { return nil }
                seen = subscription.notifier.version
                let changed: Bool
                do throws(DatabaseError) {
                    let feed = try await engine.changeFeed(since: token)
                    token = feed.position
                    self.token = token
                    changed = feed.commits.contains { $0.changes.contains(where: observation.isRelevant) }
                } catch {
                    // Behind the log (or it was made anew): read again, to be sure.
                    guard case .changesUnavailable = error else { throw error }
                    changed = true
                }
                if changed, let value = try await read(engine, subscription, unlessUnchanged: true) { return value }
            }
        }

        public mutating func next() async throws(LocalDatabaseError) -> Value? {
            try await next(isolation: nil)
        }

        /// The value now; nil when `unlessUnchanged` and its digest is the last one's.
        private nonisolated(nonsending) mutating func read(
            _ engine: FaceEngine, _ subscription: ChangeSubscription, unlessUnchanged: Bool
        ) async throws(DatabaseError) -> Value? {
            seen = subscription.notifier.version
            let read = try observation.read.get()
            let (observed, token) = try await engine.readWithToken(read)
            self.token = token
            if unlessUnchanged, let new = observed.digest, new == digest { return nil }
            digest = observed.digest
            return observed.value
        }
    }
}

/// A value an observation read, and a digest of what it was read from when the read gives one
/// (equal digests: the same value).
struct Observed<Value> {
    let value: Value
    let digest: UInt64?
}

/// A read whose values an observation gives after every relevant commit, as they are.
struct EveryValue<Read: SnapshotRead>: SnapshotRead {
    let read: Read

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Observed<Read.Value> {
        Observed(value: try read.snapshot(snapshot), digest: nil)
    }
}
