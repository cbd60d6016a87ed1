import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import Foundation

/// Wakes the observers of one engine when the change log may have grown: at once after this
/// process's commits (`committed`), and, while anyone observes, by polling the log every
/// `pollInterval` for other processes' commits. Observers then read the log themselves, so a
/// wake-up carries no data, and a missed or extra one changes nothing but timing.
///
/// Costs nothing when no one observes: the commit hook bumps a counter, and no poller runs.
package final class ChangeNotifier: Sendable {
    /// How often the log is checked for other processes' commits while anyone observes, by default.
    package static let defaultPollInterval = Duration.milliseconds(50)
    /// How often this notifier checks the log while anyone observes.
    let pollInterval: Duration

    private struct State {
        /// Bumped on every wake-up.
        var version: UInt64 = 0
        /// The newest log entry seen, by commit or by polling.
        var lastSequence: UInt64 = 0
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        var nextWaiter: UInt64 = 0
        var subscribers = 0
        var poller: Poller?
    }

    private let state = Locked(State())
    /// The newest sequence number in the log, read in a snapshot (nil when it cannot be read).
    private let latest: @Sendable () -> UInt64?
    /// Called before each poll: makes visible a commit that a writer that died mid-commit left
    /// unpublished (see `TransactionCoordinator.publishCommits`), so that observers see it
    /// within the poll's delay rather than at the next write of some process.
    private let settle: @Sendable () -> Void

    /// A notifier that polls `latest` (on the poller's own thread, never a pool thread) while
    /// anyone observes, calling `settle` before each poll. Any engine makes one: LMDB's reads its
    /// change log; a server engine would ask its server.
    /// An engine told of other processes' commits some other way (a server's notifications)
    /// polls less often, as a safety net: `pollInterval`.
    package init(
        latest: @escaping @Sendable () -> UInt64?, settle: @escaping @Sendable () -> Void = {},
        pollInterval: Duration = ChangeNotifier.defaultPollInterval
    ) {
        self.latest = latest
        self.settle = settle
        self.pollInterval = pollInterval
    }

    /// The current version: wake-ups after it make `wait(after:)` return.
    package var version: UInt64 { state.withLock { $0.version } }

    /// After a commit (of this process; or of another, as a server announced it) that added
    /// entry `sequence` to the log.
    package func committed(_ sequence: UInt64) {
        wake { $0.lastSequence = max($0.lastSequence, sequence) }
    }

    /// Wakes every observer to look again: after a database on this engine closed, so that
    /// its observers find out (their next read throws `closed`).
    package func wakeAll() {
        wake()
    }

    private func wake(_ update: (inout State) -> Void = { _ in }) {
        let waiters = state.withLock { state in
            update(&state)
            state.version &+= 1
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters {
            PoolDemand.resuming()
            waiter.continuation.resume()
        }
    }

    /// How many waits are pending now (for tests: a wait that has begun).
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits until the version is past `version`; false when the task was cancelled.
    package func wait(after version: UInt64) async -> Bool {
        let id = state.withLock { state in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    guard state.version == version, !Task.isCancelled else { return true }
                    state.waiters.append((id, continuation))
                    return false
                }
                if resumeNow {
                    PoolDemand.resuming()
                    continuation.resume()
                }
            }
            PoolDemand.running()
        } onCancel: {
            let waiter = state.withLock { state in
                state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
            }
            if let waiter {
                PoolDemand.resuming()
                waiter.continuation.resume()
            }
        }
        return !Task.isCancelled
    }

    // MARK: Subscribers

    /// One more observer: the poller runs while there is any. It polls first at once, on its
    /// own thread (a server's `latest` waits for an answer, which the subscriber's thread must
    /// not): a commit made before it started is then found, and at worst wakes observers once
    /// more than needed.
    func subscribe() {
        let start = state.withLock { state -> Poller? in
            state.subscribers += 1
            guard state.poller == nil else { return nil }
            let poller = Poller()
            state.poller = poller
            return poller
        }
        // A thread of its own, not a task: a starved cooperative pool must not delay it.
        start?.start(every: pollInterval) { [weak self] in self?.poll() }
    }

    /// One observer fewer: the last one stops the poller.
    func unsubscribe() {
        let poller = state.withLock { state -> Poller? in
            state.subscribers -= 1
            guard state.subscribers == 0 else { return nil }
            defer { state.poller = nil }
            return state.poller
        }
        poller?.stop()
    }

    /// The number of observers, and whether the poller runs: for tests.
    var activity: (subscribers: Int, polling: Bool) {
        state.withLock { ($0.subscribers, $0.poller != nil) }
    }

    private func poll() {
        settle()
        guard let sequence = latest() else { return }
        let grown = state.withLock { state in
            guard sequence != state.lastSequence else { return false }
            state.lastSequence = sequence
            return true
        }
        if grown { wake() }
    }
}

/// An observer's registration with a notifier, for as long as it lives.
package final class ChangeSubscription: Sendable {
    package let notifier: ChangeNotifier

    package init(_ notifier: ChangeNotifier) {
        self.notifier = notifier
        notifier.subscribe()
    }

    deinit {
        notifier.unsubscribe()
    }
}

/// A thread that calls a function at once, then at an interval, until stopped.
///
/// Unchecked: `stopped` is only touched with `condition` locked.
package final class Poller: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false

    func start(every interval: Duration, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            body()
            while true {
                condition.lock()
                if !stopped { _ = condition.wait(until: Date(timeIntervalSinceNow: interval.timeInterval)) }
                let stop = stopped
                condition.unlock()
                if stop { return }
                body()
            }
        }
        thread.name = "LocalLMDB change poller"
        thread.start()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }
}
