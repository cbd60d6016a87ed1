import Foundation

/// A task executor with a thread of its own: tasks that prefer it are not delayed by the
/// cooperative pool, which other tests running at once (or a test's own tasks) may keep busy.
/// Its jobs run in the order they come, one at a time.
public final class DedicatedThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// The jobs waiting. Guarded by `condition`.
    private var jobs: [UnownedJob] = []

    public init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let batch = jobs
                jobs.removeAll()
                condition.unlock()
                for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            }
        }
        thread.name = "test executor"
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.lock()
        jobs.append(unowned)
        condition.signal()
        condition.unlock()
    }
}
