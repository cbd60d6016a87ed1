import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One dedicated OS thread that runs closures (`submit`) in order: every write of an engine.
///
/// Why: an LMDB write transaction must end on the thread that began it (its writer lock is a
/// mutex owned by that thread), while a task resumes on any thread of the cooperative pool
/// after an `await`. Running every write transaction's work here keeps a transaction on its
/// thread across its owner's awaits, so it can span tasks; callers reach it through `Session`
/// and are resumed from it. The thread may block on the cross-process writer locks without
/// starving the cooperative pool.
package final class WriterThread: @unchecked Sendable {
    private typealias Work = @Sendable () -> Void

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var queue: [Work] = []
    /// Closures waiting for a moment, earliest first.
    private var delayed: [(deadline: ContinuousClock.Instant, body: @Sendable () -> Void)] = []
    private var stopping = false

    /// The thread's id. Written once by the thread before `init` returns, read-only after.
    private nonisolated(unsafe) var threadID: pthread_t

    package init(name: String) {
        threadID = pthread_self()
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            threadID = pthread_self()
            started.signal()
            runLoop()
        }
        thread.name = name
        thread.start()
        started.wait()
    }

    /// True on the writer thread.
    package var isCurrent: Bool {
        pthread_equal(threadID, pthread_self()) != 0
    }

    /// How many closures wait to run now (not counting delayed ones): for tests.
    var queuedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count
    }

    /// Runs `body` on the thread, after everything already queued.
    package func submit(_ body: @escaping @Sendable () -> Void) {
        push(body)
    }

    /// Runs `body` on the thread once `delay` has passed (or later, behind queued work).
    func submit(after delay: Duration, _ body: @escaping @Sendable () -> Void) {
        let deadline = ContinuousClock.now + delay
        condition.lock()
        let index = delayed.firstIndex { $0.deadline > deadline } ?? delayed.endIndex
        delayed.insert((deadline, body), at: index)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread exit once its queue is empty.
    package func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func push(_ work: @escaping Work) {
        condition.lock()
        queue.append(work)
        condition.signal()
        condition.unlock()
    }

    private func runLoop() {
        while true {
            condition.lock()
            while true {
                let now = ContinuousClock.now
                while let first = delayed.first, first.deadline <= now {
                    queue.append(first.body)
                    delayed.removeFirst()
                }
                if !queue.isEmpty || (stopping && delayed.isEmpty) { break }
                if let first = delayed.first {
                    let wait = now.duration(to: first.deadline)
                    _ = condition.wait(until: Date(timeIntervalSinceNow: wait.timeInterval))
                } else {
                    condition.wait()
                }
            }
            if queue.isEmpty {
                condition.unlock()
                return
            }
            let batch = queue
            queue.removeAll(keepingCapacity: true)
            condition.unlock()
            for work in batch { work() }
        }
    }
}
