#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock a process holds while it runs a database's migrations: an exclusive `flock` on
/// `migration.lock` in the database directory, through a descriptor of its own, so that two
/// migrators never run at once, in one process or in several. The kernel releases it when
/// its holder dies: a migrator killed half-way leaves the lock free, and the next one goes on
/// from the position the database recorded.
///
/// Invariant: the file is locked exactly while this object lives (`deinit` closes the
/// descriptor, which unlocks it).
package final class MigrationLock: Sendable {
    /// The lock file's name in the database directory.
    static let fileName = "migration.lock"

    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// The lock, when no other holder has it; nil when one has (try again later: `flock`
    /// cannot wait with a bound, and the caller must not block a thread to wait).
    /// - Throws: `storage` when the file cannot be opened or locked.
    package static func tryAcquire(directory: String) throws(DatabaseError) -> MigrationLock? {
        let path = directory + "/" + fileName
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure(errno, "open the migration lock '\(path)'") }
        while true {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return MigrationLock(descriptor: descriptor) }
            let code = errno
            if code == EINTR { continue }
            close(descriptor)
            guard code == EWOULDBLOCK || code == EAGAIN else { throw failure(code, "lock '\(path)'") }
            return nil
        }
    }

    private static func failure(_ code: Int32, _ operation: String) -> DatabaseError {
        .storage(operation: operation, code: code, message: String(cString: strerror(code)))
    }
}
