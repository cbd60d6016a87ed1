import CLMDB

/// An LMDB cursor, valid only inside `Transaction.withCursor`'s closure.
struct Cursor {
    let handle: OpaquePointer
    let transaction: Transaction

    /// Positions the cursor with `operation` and returns the pair there, or nil at the end.
    /// `key` is the search key for the `MDB_SET…` operations.
    func get(_ operation: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil)
        throws(LocalDatabaseError) -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?
    {
        var keyValue = key.map(MDB_val.init) ?? MDB_val()
        var dataValue = value.map(MDB_val.init) ?? MDB_val()
        let code = mdb_cursor_get(handle, &keyValue, &dataValue, operation)
        if code == MDB_NOTFOUND { return nil }
        try LMDBStatus.check(code, "cursor get")
        return (keyValue.bytes, dataValue.bytes)
    }

    /// Deletes the pair at the cursor.
    func deleteCurrent() throws(LocalDatabaseError) {
        try transaction.checkWriterThread("cursor delete")
        try LMDBStatus.check(mdb_cursor_del(handle, 0), "cursor delete")
    }

    /// The number of duplicates of the current key: O(1) for a `MDB_DUPSORT` database.
    func duplicateCount() throws(LocalDatabaseError) -> Int {
        var count = 0
        try LMDBStatus.check(mdb_cursor_count(handle, &count), "cursor count")
        return count
    }

    /// Calls `body` with each duplicate value stored under `key`, in sorted order.
    func forEachDuplicate(of key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(LocalDatabaseError) -> Void) throws(LocalDatabaseError) {
        guard var entry = try get(MDB_SET_KEY, key: key) else { return }
        while true {
            try body(entry.value)
            guard let next = try get(MDB_NEXT_DUP) else { return }
            entry = next
        }
    }

    /// Calls `body` with every pair in the database, in key order.
    func forEach(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(LocalDatabaseError) -> Void) throws(LocalDatabaseError) {
        var entry = try get(MDB_FIRST)
        while let current = entry {
            try body(current.key, current.value)
            entry = try get(MDB_NEXT)
        }
    }
}
