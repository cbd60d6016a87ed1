#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread read-write lock.
///
/// `Environment` holds it shared for the life of every transaction and exclusively while it
/// changes the memory map's size, because LMDB requires that no transaction is active in the
/// process during `mdb_env_set_mapsize`. A thread never waits for the exclusive side while it
/// holds the shared side.
final class ReadWriteLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    func lockShared() { pthread_rwlock_rdlock(lock) }
    func lockExclusive() { pthread_rwlock_wrlock(lock) }
    func unlock() { pthread_rwlock_unlock(lock) }

    /// Runs `body` holding the lock exclusively.
    func withExclusive<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lockExclusive()
        defer { unlock() }
        return try body()
    }
}
