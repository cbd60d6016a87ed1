import LocalLMDBLMDB

/// The right to run a database's migrations, held by one migrator at a time, in any process
/// (`EngineWriter.tryLockMigrations()`): on LMDB, a file lock in the database directory
/// (`MigrationLock`); on a server, a lock of the server's held by one of its sessions. A
/// migrator killed while it holds the right frees it: the kernel closes its descriptor, the
/// server ends its session.
package protocol MigrationLease: AnyObject, Sendable {
    /// Gives the right back. Idempotent.
    nonisolated(nonsending) func release() async
}

/// LMDB's lease: the directory's `MigrationLock`, held until `release` (or deinitialization).
final class FileMigrationLease: MigrationLease {
    private let lock: Locked<MigrationLock?>

    init(_ lock: MigrationLock) {
        self.lock = Locked(lock)
    }

    nonisolated(nonsending) func release() async {
        // Dropping the lock closes its descriptor, which unlocks the file.
        let held = lock.withLock { held in
            defer { held = nil }
            return held
        }
        withExtendedLifetime(held) {}
    }
}
