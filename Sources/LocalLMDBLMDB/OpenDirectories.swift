import Foundation

/// The directories whose LMDB environment is open in this process, by file identity.
///
/// LMDB forbids opening one environment twice in a process: closing either copy releases the
/// process's locks on the lock file under the other. `Engine` shares one environment per
/// directory, but an engine being deinitialized is already unreachable while its environment is
/// still closing; an open of the same directory in that moment waits here until the close has
/// finished. Directories are told apart by device and inode, so two paths to one directory (a
/// bind mount, a symbolic link, another spelling on a case-insensitive volume) are one.
package final class OpenDirectories: @unchecked Sendable {
    static let shared = OpenDirectories()

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var open: Set<FileIdentity> = []
    private var waiters = 0

    /// How many claims are waiting for a directory to be released (for tests).
    package var waitingClaims: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiters
    }

    /// Claims `directory`, waiting up to `timeout` for a previous environment on it to close.
    func claim(_ directory: FileIdentity, path: String, timeout: TimeInterval = 30) throws(DatabaseError) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while open.contains(directory) {
            waiters += 1
            let signalled = condition.wait(until: deadline)
            waiters -= 1
            guard signalled else {
                throw .incompatibleOptions(path: path, reason: "the previous environment on this directory did not close")
            }
        }
        open.insert(directory)
    }

    /// Releases `directory` once its environment is closed.
    func release(_ directory: FileIdentity) {
        condition.lock()
        open.remove(directory)
        condition.broadcast()
        condition.unlock()
    }
}
