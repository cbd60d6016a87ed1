import CLMDB

/// An LMDB cursor, valid only inside `Transaction.withCursor`'s closure.
@usableFromInline package struct Cursor {
    @usableFromInline let handle: OpaquePointer
    @usableFromInline let transaction: Transaction

    @inlinable init(handle: OpaquePointer, transaction: Transaction) {
        self.handle = handle
        self.transaction = transaction
    }

    /// Positions the cursor with `operation` and returns the pair there, or nil at the end.
    /// `key` (and `value`) are what `.key` (and `.keyAndValue`) look for.
    @inlinable package func get(_ position: CursorPosition, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil)
        throws(DatabaseError) -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?
    {
        var keyValue = key.map(MDB_val.init) ?? MDB_val()
        var dataValue = value.map(MDB_val.init) ?? MDB_val()
        let code = mdb_cursor_get(handle, &keyValue, &dataValue, position.operation)
        if code == MDB_NOTFOUND { return nil }
        try LMDBStatus.check(code, "cursor get")
        return (keyValue.bytes, dataValue.bytes)
    }

    /// Deletes the pair at the cursor.
    @inlinable package func deleteCurrent() throws(DatabaseError) {
        try transaction.checkWriterThread("cursor delete")
        try LMDBStatus.check(mdb_cursor_del(handle, 0), "cursor delete")
    }

    /// The number of duplicates of the current key: O(1) for a `MDB_DUPSORT` database.
    @inlinable package func duplicateCount() throws(DatabaseError) -> Int {
        var count = 0
        try LMDBStatus.check(mdb_cursor_count(handle, &count), "cursor count")
        return count
    }

    /// Calls `body` with each duplicate value stored under `key`, in sorted order.
    @inlinable package func forEachDuplicate(of key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(DatabaseError) -> Void) throws(DatabaseError) {
        guard var entry = try get(.key, key: key) else { return }
        while true {
            try body(entry.value)
            guard let next = try get(.nextDuplicate) else { return }
            entry = next
        }
    }

    /// Calls `body` with every pair in the database, in key order.
    @inlinable package func forEach(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(DatabaseError) -> Void) throws(DatabaseError) {
        var entry = try get(.first)
        while let current = entry {
            try body(current.key, current.value)
            entry = try get(.next)
        }
    }
}
