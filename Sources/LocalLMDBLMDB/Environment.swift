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
/// Concurrency: LMDB environments are thread-safe. Every transaction is counted in `gate` for
/// its whole life, and the map is resized (and the environment closed) only with the gate shut
/// and no transaction active, so `mdb_env_set_mapsize` never runs while a transaction of this
/// process is active. Read transactions use `MDB_NOTLS`, so they belong to no thread and are
/// pooled in the gate after use. A read takes no lock and writes nothing another thread uses.
@usableFromInline package final class Environment: @unchecked Sendable {
    /// The environment's directory.
    let path: String
    /// The environment's directory, for errors of the layers above.
    package var directoryPath: String { path }
    /// The directory, held open while the environment is.
    let directory: DirectoryHandle
    /// LMDB's largest key (and `MDB_DUPSORT` value) in bytes: 511 in the default build.
    package let maxKeySize: Int

    @usableFromInline let handle: OpaquePointer
    /// Counts the transactions of this process, pools idle read transactions, and is shut
    /// while the map is resized or the environment closes.
    @usableFromInline let gate: TransactionGate
    /// The map never grows by more than this at once: beyond it, growth is linear.
    private static let maxGrowthStep = 1 << 30
    /// When stale reader slots were last cleared. Slots of processes that died mid-read pin old
    /// pages, so the file would grow instead of reusing them; checking costs a system call per
    /// slot, so write transactions check at most once a second (and the map checks before growing).
    private let lastReaderCheck = Locked(ContinuousClock.now)
    /// The map never grows beyond this.
    private let maximumMapSize: Int
    /// LocalLMDB's cross-process writer lock, taken before LMDB's (nil when read-only).
    private let writerLock: WriterLock?
    /// How long a write transaction waits for another process's writer lock.
    private let writerLockTimeout: Duration

    /// Opens (creating if needed, unless `readOnly`) the environment in `directory`.
    package init(
        directory: DirectoryHandle, sync: SyncMode, readOnly: Bool, initialMapSize: Int, maximumMapSize: Int,
        maxReaders: Int, maxDatabases: Int, writerLockTimeout: Duration = .seconds(30)
    ) throws(DatabaseError) {
        let path = directory.path
        try OpenDirectories.shared.claim(directory.identity, path: path)
        var env: OpaquePointer?
        let created = mdb_env_create(&env)
        guard created == MDB_SUCCESS, let env else {
            OpenDirectories.shared.release(directory.identity)
            throw LMDBStatus.error(created == MDB_SUCCESS ? ENOMEM : created, "env create")
        }
        do {
            do throws(DatabaseError) {
                try LockFile.prepare(in: path, readers: maxReaders)
            } catch where readOnly && [EROFS, EACCES, EPERM].contains(error.lmdbCode ?? 0) {
                // A read-only volume: LMDB reads without a lock file of its own there.
            }
            try LMDBStatus.check(mdb_env_set_maxdbs(env, UInt32(maxDatabases)), "set max databases")
            try LMDBStatus.check(mdb_env_set_maxreaders(env, UInt32(clamping: maxReaders)), "set max readers")
            try LMDBStatus.check(mdb_env_set_mapsize(env, min(initialMapSize, maximumMapSize)), "set map size")
            let flags = UInt32(MDB_NOTLS | sync.environmentFlags | (readOnly ? MDB_RDONLY : 0))
            try LMDBStatus.check(mdb_env_open(env, path, flags, 0o600), "open '\(path)'")
            try Self.closeDataFileOnExec(env)
            try DataFileCheck.check(env, path: path)
            writerLock = readOnly ? nil : try WriterLock(directory: path)
        } catch {
            mdb_env_close(env)
            OpenDirectories.shared.release(directory.identity)
            throw error
        }
        // Free reader slots left behind by processes that died mid-read.
        var stale: Int32 = 0
        mdb_reader_check(env, &stale)
        self.handle = env
        self.gate = TransactionGate(maxReaders: maxReaders)
        self.path = path
        self.directory = directory
        self.maximumMapSize = maximumMapSize
        self.writerLockTimeout = writerLockTimeout
        self.maxKeySize = Int(mdb_env_get_maxkeysize(env))
    }

    deinit {
        close()
    }

    /// Closes the environment once every transaction of this process on it has ended; later
    /// transactions fail with `closed`. Idempotent. Called on a thread with a transaction of
    /// this environment open (which would wait for itself), it does nothing.
    package func close() {
        let closedNow = gate.withGateShut {
            guard !gate.isClosed else { return false }
            gate.markClosed()
            gate.drainIdle { mdb_txn_abort($0) }
            mdb_env_close(handle)
            writerLock?.closeFile()
            return true
        }
        if closedNow == true { OpenDirectories.shared.release(directory.identity) }
    }

    /// Opens (creating if needed) the named database. Only called while opening the store.
    package func openDatabase(_ name: String, dupSort: Bool, in transaction: Transaction) throws(DatabaseError) -> MDB_dbi {
        var dbi: MDB_dbi = 0
        let flags = UInt32(MDB_CREATE | (dupSort ? MDB_DUPSORT : 0))
        try LMDBStatus.check(mdb_dbi_open(transaction.handle, name, flags, &dbi), "open database '\(name)'")
        return dbi
    }

    /// Opens existing named databases read-only, in a read transaction that is committed so
    /// that the handles stay valid. Only called while opening a read-only store.
    package func openExistingDatabases(_ names: [(name: String, dupSort: Bool)]) throws(DatabaseError) -> [MDB_dbi] {
        var txn: OpaquePointer?
        try LMDBStatus.check(mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn), "begin read transaction")
        guard let txn else { throw LMDBStatus.error(EINVAL, "begin read transaction") }
        var handles: [MDB_dbi] = []
        for (name, dupSort) in names {
            var dbi: MDB_dbi = 0
            let code = mdb_dbi_open(txn, name, UInt32(dupSort ? MDB_DUPSORT : 0), &dbi)
            guard code == MDB_SUCCESS else {
                mdb_txn_abort(txn)
                throw LMDBStatus.error(code, "open database '\(name)'")
            }
            handles.append(dbi)
        }
        try LMDBStatus.check(mdb_txn_commit(txn), "commit read transaction")
        return handles
    }

    // MARK: Read transactions

    /// Runs `body` in a read-only snapshot on the calling thread.
    package func withReadTransaction<R>(_ body: (Transaction) throws(DatabaseError) -> R) throws(DatabaseError) -> R {
        let (transaction, ticket) = try beginRead()
        defer { endRead(transaction, ticket) }
        return try body(transaction)
    }

    /// `withReadTransaction`, through a reference that is used without being retained (a
    /// method call through a stored reference retains and releases it: a reference count that
    /// every reading thread would write). `environment` must be kept alive by the caller.
    @inlinable @inline(__always)
    package static func withReadTransaction<R>(
        in environment: Unmanaged<Environment>, _ body: (Transaction) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> R {
        let (transaction, ticket) = try environment._withUnsafeGuaranteedRef { $0.beginReadOutcome() }.get()
        defer { environment._withUnsafeGuaranteedRef { $0.endRead(transaction, ticket) } }
        return try body(transaction)
    }

    @inlinable @inline(__always)
    func beginReadOutcome() -> Result<(Transaction, TransactionGate.Ticket), DatabaseError> {
        Result { () throws(DatabaseError) in try beginRead() }
    }

    @inlinable
    func beginRead() throws(DatabaseError) -> (Transaction, TransactionGate.Ticket) {
        while true {
            let ticket = gate.enter()
            guard !gate.isClosed else {
                gate.leave(ticket)
                throw .closed
            }
            var code = MDB_NOTFOUND
            var txn: OpaquePointer?
            if let idle = gate.takeIdle(ticket) {
                (code, txn) = renew(idle)
            } else {
                code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
                // The reader slots may all be held by idle transactions pooled by other threads.
                if code == MDB_READERS_FULL, let idle = gate.takeAnyIdle() { (code, txn) = renew(idle) }
            }
            if code == MDB_SUCCESS, let txn {
                return (Transaction(handle: txn, isWrite: false), ticket)
            }
            gate.leave(ticket)
            guard code == MDB_MAP_RESIZED else { throw LMDBStatus.error(code, "begin read transaction") }
            try adoptMapSize()
        }
    }

    /// Renews a pooled read transaction; aborts it when that fails.
    @usableFromInline
    func renew(_ idle: OpaquePointer) -> (Int32, OpaquePointer?) {
        let code = mdb_txn_renew(idle)
        guard code == MDB_SUCCESS else {
            mdb_txn_abort(idle)
            return (code, nil)
        }
        return (code, idle)
    }

    @inlinable @inline(__always)
    func endRead(_ transaction: Transaction, _ ticket: TransactionGate.Ticket) {
        mdb_txn_reset(transaction.handle)
        if !gate.putIdle(transaction.handle, ticket) { mdb_txn_abort(transaction.handle) }
        gate.leave(ticket)
    }

    // MARK: Write transactions

    /// Makes the next write transaction check for the reader slots of dead processes, as it
    /// does once the check is a second old (for tests, which need not wait that second).
    package func forgetReaderCheck() {
        lastReaderCheck.withLock { $0 = .now - .seconds(2) }
    }

    /// Begins a write transaction on the calling thread, which alone may use and end it.
    /// Grows the map first when it is more than three quarters used.
    /// - Throws: `closed` once the environment is closed (its handle is gone: nothing below may
    ///   touch it). The engine closes the environment only after its writer thread has stopped.
    package func beginWrite() throws(DatabaseError) -> WriteTransaction {
        guard !gate.isClosed else { throw .closed }
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
        guard let writerLock else { throw LMDBStatus.error(EACCES, "begin write transaction in a read-only environment") }
        while true {
            try writerLock.acquire(timeout: writerLockTimeout)
            let ticket = gate.enter()
            guard !gate.isClosed else {
                gate.leave(ticket)
                writerLock.release()
                throw .closed
            }
            var txn: OpaquePointer?
            let code = mdb_txn_begin(handle, nil, 0, &txn)
            if code == MDB_SUCCESS, let txn {
                return WriteTransaction(Transaction(handle: txn, isWrite: true), ticket: ticket, in: self)
            }
            gate.leave(ticket)
            writerLock.release()
            guard code == MDB_MAP_RESIZED else { throw LMDBStatus.error(code, "begin write transaction") }
            try adoptMapSize()
        }
    }

    /// A hold of the cross-process writer lock (see `WriterLock`), for a user transaction to
    /// keep across the ends and beginnings of its LMDB transactions: while it is held, no other
    /// LocalLMDB process begins a write transaction.
    /// - Throws: `busy` when another process holds the lock for longer than the timeout.
    package func holdWriterLock() throws(DatabaseError) -> WriterLockHold {
        guard let writerLock else { throw LMDBStatus.error(EACCES, "begin write transaction in a read-only environment") }
        return try WriterLockHold(writerLock, timeout: writerLockTimeout)
    }

    /// The holds of the writer lock this process has: for tests.
    var writerLockHolds: Int { writerLock?.holdCount ?? 0 }

    /// Commits a write transaction; it is over either way, and it leaves the gate. Only
    /// `WriteTransaction` calls this, once per transaction, on the thread that began it.
    func commitWrite(_ transaction: Transaction, _ ticket: TransactionGate.Ticket) throws(DatabaseError) {
        defer {
            gate.leave(ticket)
            writerLock?.release()
        }
        try LMDBStatus.check(mdb_txn_commit(transaction.handle), "commit")
    }

    /// Aborts a write transaction, which leaves the gate. Only `WriteTransaction` calls this,
    /// once per transaction, on the thread that began it.
    func abortWrite(_ transaction: Transaction, _ ticket: TransactionGate.Ticket) {
        mdb_txn_abort(transaction.handle)
        gate.leave(ticket)
        writerLock?.release()
    }

    // MARK: The memory map

    /// The id of the last committed write transaction: it grows by one per commit.
    var lastTransactionID: Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return info.me_last_txnid
    }

    /// Whether the data file holds a commit that this process's readers are not shown: its
    /// writer wrote the commit's meta page but died before publishing the transaction id in the
    /// lock file, which readers take it from. (For a moment it is also true of a live writer
    /// between the two steps.) The next write transaction of any process publishes it.
    package var hasUnpublishedCommit: Bool { unpublishedCommit != nil }

    /// The id of the commit `hasUnpublishedCommit` finds; nil when there is none.
    package var unpublishedCommit: Int? {
        guard let published = try? withReadTransaction({ transaction in transaction.id }) else { return nil }
        let last = lastTransactionID
        return last > published ? last : nil
    }

    /// The map's size and the bytes the data file uses of it.
    var usage: (mapSize: Int, used: Int) {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(handle, &info)
        mdb_env_stat(handle, &stat)
        return (info.me_mapsize, (info.me_last_pgno + 1) * Int(stat.ms_psize))
    }

    /// Grows the map ahead of a write transaction expected to add about `bytes`, so that it
    /// does not fill midway (a full map aborts the transaction, which is then redone in a
    /// larger map: a large batch in a small map was written five or six times over): to a third
    /// more than the need, when the need passes three quarters of the map. The caller must have
    /// no transaction open.
    /// - Throws: As `growMap`, when the map must grow and cannot.
    package func reserve(bytes: Int) throws(DatabaseError) {
        let usage = usage
        let needed = usage.used + bytes
        guard bytes > 0, needed > usage.mapSize / 4 * 3 else { return }
        try growMap(atLeast: needed + needed / 3)
    }

    /// Enlarges the map: doubling it, by at most `maxGrowthStep`, or to `minimum` (rounded up to
    /// a MiB) when that is more; never beyond the maximum. The caller must have no transaction
    /// open (it waits for every other thread's transactions to end).
    /// - Throws: `MDB_MAP_FULL` when the map is at its maximum.
    package func growMap(atLeast minimum: Int = 0) throws(DatabaseError) {
        clearStaleReaders()
        let grown: Void? = try gate.withGateShut { () throws(DatabaseError) in
            guard !gate.isClosed else { throw .closed }
            let current = usage.mapSize
            guard current < maximumMapSize else { throw LMDBStatus.error(MDB_MAP_FULL, "grow map beyond its maximum of \(maximumMapSize) bytes") }
            let megabyte = 1 << 20
            let wanted = max(current + min(current, Self.maxGrowthStep), (minimum + megabyte - 1) / megabyte * megabyte)
            let newSize = min(wanted, maximumMapSize)
            try LMDBStatus.check(mdb_env_set_mapsize(handle, newSize), "grow map to \(newSize) bytes")
        }
        if grown == nil { throw Self.resizeWithinTransaction }
    }

    /// The map cannot change while the calling thread itself has a transaction open (a
    /// model's initializer reading the database it is being read from, as the map fills).
    private static let resizeWithinTransaction = LMDBStatus.error(
        MDB_MAP_FULL, "resize the map while this thread has a transaction of the same database open")

    /// Frees the reader slots of processes that died mid-read. Returns how many.
    @discardableResult
    func clearStaleReaders() -> Int {
        var cleared: Int32 = 0
        mdb_reader_check(handle, &cleared)
        return Int(cleared)
    }

    /// Adopts the larger map another process set (`MDB_MAP_RESIZED`).
    @usableFromInline func adoptMapSize() throws(DatabaseError) {
        let adopted: Void? = gate.withGateShut {
            guard !gate.isClosed else { return }
            _ = mdb_env_set_mapsize(handle, 0)
        }
        if adopted == nil { throw Self.resizeWithinTransaction }
    }

    /// Marks the data file's descriptor close-on-exec, as LMDB marks its others. LMDB leaves this
    /// one open across `exec` (for `mdb_env_get_fd`), so every process a program started after
    /// opening a database would hold the file open, writable, for its whole life: its space
    /// kept after the database is deleted, its volume unable to be remounted read-only, its
    /// pages writable by a program that never opened it. (A process started by another thread
    /// in the moment between the open and this call still inherits it: LMDB offers no way to
    /// open the file close-on-exec.)
    private static func closeDataFileOnExec(_ env: OpaquePointer) throws(DatabaseError) {
        var descriptor: mdb_filehandle_t = -1
        try LMDBStatus.check(mdb_env_get_fd(env, &descriptor), "get the data file's descriptor")
        let flags = fcntl(descriptor, F_GETFD)
        guard flags >= 0, fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) == 0 else {
            throw LMDBStatus.error(errno, "mark the data file close-on-exec")
        }
    }

    /// The environment's flags (`MDB_NOSYNC`, `MDB_NOMETASYNC`, `MDB_NOTLS`, …).
    var flags: UInt32 {
        var flags: UInt32 = 0
        mdb_env_get_flags(handle, &flags)
        return flags
    }

    /// Flushes the data file to disk (for `Durability.none` users who want a checkpoint).
    func sync() throws(DatabaseError) {
        try LMDBStatus.check(mdb_env_sync(handle, 1), "sync")
    }
}
