import CLMDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open LMDB environment: one directory holding `data.mdb` and `lock.mdb`.
///
/// Ownership: the `MDB_env*` is opened in `init` and closed in `deinit`; `Engine` keeps exactly
/// one `Environment` per directory in the process, as LMDB requires.
///
/// Concurrency: LMDB environments are thread-safe. Every transaction holds `resizeLock` shared
/// for its whole life, and the map is resized only under the exclusive side, so
/// `mdb_env_set_mapsize` never runs while a transaction of this process is active.
/// Read transactions use `MDB_NOTLS`, so they belong to no thread and are pooled after use.
final class Environment: @unchecked Sendable {
    /// The environment's directory.
    let path: String
    /// The directory, held open while the environment is.
    let directory: DirectoryHandle
    /// LMDB's largest key (and `MDB_DUPSORT` value) in bytes: 511 in the default build.
    let maxKeySize: Int

    private let handle: OpaquePointer
    private let resizeLock = ReadWriteLock()
    /// Read transactions that were reset after use, ready for `mdb_txn_renew`.
    private let idleReaders = ReaderPool()
    /// The map never grows by more than this at once: beyond it, growth is linear.
    private static let maxGrowthStep = 1 << 30
    /// When stale reader slots were last cleared. Slots of processes that died mid-read pin old
    /// pages, so the file would grow instead of reusing them; checking costs a system call per
    /// slot, so write transactions check at most once a second (and the map checks before growing).
    private let lastReaderCheck = Locked(ContinuousClock.now)

    /// Opens (creating if needed) the environment in `directory`.
    init(directory: DirectoryHandle, syncFlags: Int32, initialMapSize: Int, maxDatabases: Int) throws(LocalDatabaseError) {
        let path = directory.path
        try OpenDirectories.shared.claim(directory.identity, path: path)
        var env: OpaquePointer?
        let created = mdb_env_create(&env)
        guard created == MDB_SUCCESS, let env else {
            OpenDirectories.shared.release(directory.identity)
            throw LMDBStatus.error(created == MDB_SUCCESS ? ENOMEM : created, "env create")
        }
        do {
            try LockFile.prepare(in: path)
            try LMDBStatus.check(mdb_env_set_maxdbs(env, UInt32(maxDatabases)), "set max databases")
            try LMDBStatus.check(mdb_env_set_maxreaders(env, 256), "set max readers")
            try LMDBStatus.check(mdb_env_set_mapsize(env, initialMapSize), "set map size")
            let flags = UInt32(MDB_NOTLS | syncFlags)
            try LMDBStatus.check(mdb_env_open(env, path, flags, 0o600), "open '\(path)'")
        } catch {
            mdb_env_close(env)
            OpenDirectories.shared.release(directory.identity)
            throw error
        }
        // Free reader slots left behind by processes that died mid-read.
        var stale: Int32 = 0
        mdb_reader_check(env, &stale)
        self.handle = env
        self.path = path
        self.directory = directory
        self.maxKeySize = Int(mdb_env_get_maxkeysize(env))
    }

    deinit {
        idleReaders.drain { mdb_txn_abort($0) }
        mdb_env_close(handle)
        OpenDirectories.shared.release(directory.identity)
    }

    /// Opens (creating if needed) the named database. Only called while opening the store.
    func openDatabase(_ name: String, dupSort: Bool, in transaction: Transaction) throws(LocalDatabaseError) -> MDB_dbi {
        var dbi: MDB_dbi = 0
        let flags = UInt32(MDB_CREATE | (dupSort ? MDB_DUPSORT : 0))
        try LMDBStatus.check(mdb_dbi_open(transaction.handle, name, flags, &dbi), "open database '\(name)'")
        return dbi
    }

    // MARK: Read transactions

    /// Runs `body` in a read-only snapshot on the calling thread.
    func withReadTransaction<R>(_ body: (Transaction) throws(LocalDatabaseError) -> R) throws(LocalDatabaseError) -> R {
        let transaction = try beginRead()
        defer { endRead(transaction) }
        return try body(transaction)
    }

    private func beginRead() throws(LocalDatabaseError) -> Transaction {
        while true {
            resizeLock.lockShared()
            var code: Int32
            var txn: OpaquePointer?
            if let idle = idleReaders.take() {
                code = mdb_txn_renew(idle)
                if code == MDB_SUCCESS {
                    txn = idle
                } else {
                    mdb_txn_abort(idle)
                }
            } else {
                code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
            }
            if code == MDB_SUCCESS, let txn {
                return Transaction(handle: txn, isWrite: false)
            }
            resizeLock.unlock()
            guard code == MDB_MAP_RESIZED else { throw LMDBStatus.error(code, "begin read transaction") }
            adoptMapSize()
        }
    }

    private func endRead(_ transaction: Transaction) {
        mdb_txn_reset(transaction.handle)
        resizeLock.unlock()
        if !idleReaders.put(transaction.handle) { mdb_txn_abort(transaction.handle) }
    }

    // MARK: Write transactions

    /// Begins a write transaction on the calling thread, which must commit or abort it.
    /// Grows the map first when it is more than three quarters used.
    func beginWrite() throws(LocalDatabaseError) -> Transaction {
        let now = ContinuousClock.now
        if lastReaderCheck.withLock({ last in
            guard now - last > .seconds(1) else { return false }
            last = now
            return true
        }) {
            clearStaleReaders()
        }
        let usage = usage
        if usage.used > usage.mapSize / 4 * 3 {
            try growMap()
        }
        while true {
            resizeLock.lockShared()
            var txn: OpaquePointer?
            let code = mdb_txn_begin(handle, nil, 0, &txn)
            if code == MDB_SUCCESS, let txn {
                return Transaction(handle: txn, isWrite: true)
            }
            resizeLock.unlock()
            guard code == MDB_MAP_RESIZED else { throw LMDBStatus.error(code, "begin write transaction") }
            adoptMapSize()
        }
    }

    /// Commits a write transaction begun by `beginWrite`. The transaction is over either way.
    func commit(_ transaction: Transaction) throws(LocalDatabaseError) {
        try transaction.checkWriterThread("commit")
        defer { resizeLock.unlock() }
        try LMDBStatus.check(mdb_txn_commit(transaction.handle), "commit")
    }

    /// Aborts a write transaction begun by `beginWrite`.
    func abort(_ transaction: Transaction) throws(LocalDatabaseError) {
        try transaction.checkWriterThread("abort")
        mdb_txn_abort(transaction.handle)
        resizeLock.unlock()
    }

    // MARK: The memory map

    /// The id of the last committed write transaction: it grows by one per commit.
    var lastTransactionID: Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return info.me_last_txnid
    }

    /// The map's size and the bytes the data file uses of it.
    var usage: (mapSize: Int, used: Int) {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(handle, &info)
        mdb_env_stat(handle, &stat)
        return (info.me_mapsize, (info.me_last_pgno + 1) * Int(stat.ms_psize))
    }

    /// Enlarges the map: doubling it, by at most `maxGrowthStep`. The caller must have no
    /// transaction open (it waits for every other thread's transactions to end).
    func growMap() throws(LocalDatabaseError) {
        clearStaleReaders()
        try resizeLock.withExclusive { () throws(LocalDatabaseError) in
            let current = usage.mapSize
            let newSize = current + min(current, Self.maxGrowthStep)
            try LMDBStatus.check(mdb_env_set_mapsize(handle, newSize), "grow map to \(newSize) bytes")
        }
    }

    /// Frees the reader slots of processes that died mid-read. Returns how many.
    @discardableResult
    func clearStaleReaders() -> Int {
        var cleared: Int32 = 0
        mdb_reader_check(handle, &cleared)
        return Int(cleared)
    }

    /// Adopts the larger map another process set (`MDB_MAP_RESIZED`).
    private func adoptMapSize() {
        resizeLock.withExclusive {
            _ = mdb_env_set_mapsize(handle, 0)
        }
    }

    /// The environment's flags (`MDB_NOSYNC`, `MDB_NOMETASYNC`, `MDB_NOTLS`, …).
    var flags: UInt32 {
        var flags: UInt32 = 0
        mdb_env_get_flags(handle, &flags)
        return flags
    }

    /// Flushes the data file to disk (for `Durability.none` users who want a checkpoint).
    func sync() throws(LocalDatabaseError) {
        try LMDBStatus.check(mdb_env_sync(handle, 1), "sync")
    }
}
