import Foundation

/// The directories whose LMDB environment is open in this process.
///
/// LMDB forbids opening one environment twice in a process: closing either copy releases the
/// process's locks on the lock file under the other. `Engine` shares one environment per path,
/// but an engine being deinitialized is already unreachable while its environment is still
/// closing; an open of the same path in that moment waits here until the close has finished.
final class OpenPaths: @unchecked Sendable {
    static let shared = OpenPaths()

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var paths: Set<String> = []

    /// Claims `path`, waiting up to `timeout` for a previous environment on it to close.
    func claim(_ path: String, timeout: TimeInterval = 30) throws(LocalDatabaseError) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while paths.contains(path) {
            guard condition.wait(until: deadline) else {
                throw .incompatibleOptions(path: path, reason: "the previous environment on this directory did not close")
            }
        }
        paths.insert(path)
    }

    /// Releases `path` once its environment is closed.
    func release(_ path: String) {
        condition.lock()
        paths.remove(path)
        condition.broadcast()
        condition.unlock()
    }
}
