import CLMDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A live LMDB transaction, read-only or read-write.
///
/// Ownership: `Environment` begins and ends every transaction; this type only performs
/// operations inside one. It is not `Sendable`: a transaction is used on one thread at a time,
/// and a write transaction only on the thread that began it (LMDB's writer lock is a mutex owned
/// by that thread), which every mutating call checks.
@usableFromInline package struct Transaction {
    /// The `MDB_txn*`. Valid until the environment commits, aborts or resets it.
    @usableFromInline let handle: OpaquePointer
    /// True for write transactions.
    @usableFromInline package let isWrite: Bool
    /// The thread that began a write transaction.
    @usableFromInline let ownerThread: pthread_t

    @inlinable init(handle: OpaquePointer, isWrite: Bool) {
        self.handle = handle
        self.isWrite = isWrite
        self.ownerThread = pthread_self()
    }

    /// LMDB's id of the transaction: for a read transaction, the last commit it sees; for a
    /// write transaction, the id its commit will have (one more than the last commit).
    @inlinable package var id: Int { mdb_txn_id(handle) }

    /// Throws unless the calling thread may use this transaction for writing.
    @inlinable func checkWriterThread(_ operation: @autoclosure () -> String) throws(DatabaseError) {
        if isWrite && pthread_equal(ownerThread, pthread_self()) == 0 {
            throw .wrongThread(operation: operation())
        }
    }

    /// The value stored under `key`, pointing into the map: valid until the transaction ends
    /// or (in a write transaction) the next write.
    @inlinable package func get(_ database: MDB_dbi, _ key: UnsafeRawBufferPointer) throws(DatabaseError) -> UnsafeRawBufferPointer? {
        var keyValue = MDB_val(key)
        var dataValue = MDB_val()
        let code = mdb_get(handle, database, &keyValue, &dataValue)
        if code == MDB_NOTFOUND { return nil }
        try LMDBStatus.check(code, "get")
        return dataValue.bytes
    }

    /// Stores `value` under `key`. Returns false when `mode` forbade the write (the key, or
    /// the pair, exists).
    @discardableResult
    @inlinable package func put(_ database: DatabaseHandle, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, mode: PutMode = .upsert) throws(DatabaseError) -> Bool {
        try checkWriterThread("put")
        var keyValue = MDB_val(key)
        var dataValue = MDB_val(value)
        let code = mdb_put(handle, database, &keyValue, &dataValue, mode.flags)
        if code == MDB_KEYEXIST { return false }
        try LMDBStatus.check(code, "put")
        return true
    }

    /// Deletes `key` (all of its duplicates when `value` is nil, else just that pair).
    /// Returns false when there was nothing to delete.
    @discardableResult
    @inlinable package func delete(_ database: MDB_dbi, _ key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer? = nil) throws(DatabaseError) -> Bool {
        try checkWriterThread("delete")
        var keyValue = MDB_val(key)
        let code: Int32
        if let value {
            var dataValue = MDB_val(value)
            code = mdb_del(handle, database, &keyValue, &dataValue)
        } else {
            code = mdb_del(handle, database, &keyValue, nil)
        }
        if code == MDB_NOTFOUND { return false }
        try LMDBStatus.check(code, "delete")
        return true
    }

    /// The number of entries (counting duplicates) in `database`, from `mdb_stat`: O(1).
    @inlinable package func entryCount(_ database: MDB_dbi) throws(DatabaseError) -> Int {
        var stat = MDB_stat()
        try LMDBStatus.check(mdb_stat(handle, database, &stat), "stat")
        return stat.ms_entries
    }

    /// Removes every entry of `database`, keeping the database itself.
    @inlinable package func empty(_ database: MDB_dbi) throws(DatabaseError) {
        try checkWriterThread("drop")
        try LMDBStatus.check(mdb_drop(handle, database, 0), "drop")
    }

    /// Runs `body` with a cursor on `database`, closed when `body` returns.
    @inlinable package func withCursor<R>(_ database: MDB_dbi, _ body: (Cursor) throws(DatabaseError) -> R) throws(DatabaseError) -> R {
        var cursor: OpaquePointer?
        try LMDBStatus.check(mdb_cursor_open(handle, database, &cursor), "cursor open")
        guard let cursor else { throw LMDBStatus.error(EINVAL, "cursor open") }
        defer { mdb_cursor_close(cursor) }
        return try body(Cursor(handle: cursor, transaction: self))
    }
}

extension MDB_val {
    /// A value describing `buffer`. LMDB does not write through it.
    @inlinable init(_ buffer: UnsafeRawBufferPointer) {
        self.init(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress))
    }

    /// The bytes this value points at.
    @inlinable var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: mv_data, count: mv_size)
    }
}
