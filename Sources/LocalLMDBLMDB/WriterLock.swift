#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The C library's `close`, under a name `WriterLock`'s members do not shadow.
private func closeDescriptor(_ descriptor: Int32) -> Int32 { close(descriptor) }

/// LocalLMDB's cross-process writer lock: an exclusive `flock` on `writer.lock` in the database
/// directory, taken before LMDB's own writer lock and held over a whole user transaction.
///
/// Why a second lock: LMDB's writer lock is held by an LMDB write transaction, and the map can
/// only be resized with no transaction of the process active. A user transaction that fills
/// the map must therefore end its LMDB transaction, grow the map and replay its journal in a
/// new one; without this lock another process could commit in that gap, and the replay (a
/// `delete(T.self)`, say) would then run over that process's acknowledged writes. Every
/// LocalLMDB writer takes this lock before LMDB's, so none commits while another process's user
/// transaction is open, growing or not. (A writer that does not take it, such as `mdb_load`,
/// is caught by the transaction id check in `TransactionCoordinator`: the replay fails rather
/// than run over its commit.)
///
/// Holds are counted per process: the file is locked by the first hold and unlocked by the
/// last. The kernel releases a `flock` when its process dies, so a killed writer never leaves
/// the lock taken.
///
/// Invariant: `holds >= 0`, and the file is locked exactly while `holds > 0` and it is open.
package final class WriterLock: @unchecked Sendable {
    /// The lock file's name in the database directory.
    static let fileName = "writer.lock"

    /// The lock file's descriptor; -1 once closed (`close()`).
    private var descriptor: Int32
    private let path: String
    /// Guards `holds` and `descriptor`, and the file's locking and unlocking.
    private let mutex = NSLock()
    private var holds = 0

    /// Opens (creating if needed, 0600) the lock file in `directory`.
    init(directory: String) throws(DatabaseError) {
        path = directory + "/" + Self.fileName
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.failure(errno, "open writer lock '\(path)'") }
        self.descriptor = descriptor
    }

    deinit {
        assert(holds == 0, "the writer lock was still held when its environment closed")
        if descriptor >= 0 { _ = closeDescriptor(descriptor) }
    }

    /// Closes the lock file, with its environment: a closed environment keeps no file open for
    /// writing, however long something refers to it. Later holds fail with `closed`.
    func closeFile() {
        mutex.lock()
        defer { mutex.unlock() }
        guard descriptor >= 0 else { return }
        // Closing the descriptor also gives back a lock still held (by a transaction the
        // environment's closing ended).
        _ = closeDescriptor(descriptor)
        descriptor = -1
    }

    /// Takes one hold, locking the file if this process holds it no other way, and waiting for
    /// another process's hold for at most `timeout`.
    /// - Throws: `busy` after `timeout`; `storage` when the file cannot be locked.
    func acquire(timeout: Duration) throws(DatabaseError) {
        mutex.lock()
        defer { mutex.unlock() }
        assert(holds >= 0)
        guard descriptor >= 0 else { throw .closed }
        if holds == 0 { try lockFile(timeout: timeout) }
        holds += 1
    }

    /// Gives back one hold; the last unlocks the file.
    func release() {
        mutex.lock()
        defer { mutex.unlock() }
        assert(holds > 0, "the writer lock was released more often than acquired")
        guard holds > 0 else { return }
        holds -= 1
        if holds == 0, descriptor >= 0 { _ = flock(descriptor, LOCK_UN) }
    }

    /// The number of holds: for tests.
    var holdCount: Int {
        mutex.lock()
        defer { mutex.unlock() }
        return holds
    }

    /// Locks the file, polling: `flock` itself cannot wait with a bound.
    private func lockFile(timeout: Duration) throws(DatabaseError) {
        let deadline = ContinuousClock.now + timeout
        var pause: UInt32 = 20
        while true {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return }
            let code = errno
            if code == EINTR { continue }
            guard code == EWOULDBLOCK || code == EAGAIN else { throw Self.failure(code, "lock '\(path)'") }
            guard ContinuousClock.now < deadline else { throw .busy(timeout: timeout) }
            usleep(pause)
            pause = min(pause * 2, 2_000)
        }
    }

    private static func failure(_ code: Int32, _ operation: String) -> DatabaseError {
        .storage(operation: operation, code: code, message: String(cString: strerror(code)))
    }
}

/// One hold of a `WriterLock`, given back when this object goes: a user transaction keeps one
/// for its whole life, across the ends and beginnings of its LMDB transactions.
package final class WriterLockHold {
    private let lock: WriterLock

    init(_ lock: WriterLock, timeout: Duration) throws(DatabaseError) {
        try lock.acquire(timeout: timeout)
        self.lock = lock
    }

    deinit {
        lock.release()
    }
}
