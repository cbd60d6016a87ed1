import Foundation
import LocalLMDBLMDB

// The `spellings` database (`MDB_DUPSORT`): the key of each stored class name's canonical form
// (`StoredClass.spellingKey`) → the `classes` key of each stored name that has that form. The
// spelling rule (`StoredClass.checkSpelling(againstStored:)`) compares a name about to be
// recorded with the stored names of its canonical form alone: a lookup, at a cost that does not
// grow with the number of classes stored.
//
// Invariant: one entry per `classes` row, written in the transaction that writes the row. Rows
// are never removed, and an earlier version of LocalLMDB records rows without entries, so the
// entries are a subset of the rows, and equal counts (O(1) each) mean the same set: a write
// that records a name first checks the counts and, when they differ, makes the database again
// from `classes` (once, in that write's transaction).
extension StoredClass {
    /// The `spellings` key of `name`: the storage key of its canonical composition (NFC), the
    /// same for every spelling Swift's `String` calls equal. Used by both engines.
    package static func spellingKey(of name: String, maxKeySize: Int) -> [UInt8] {
        StorageKey(name.precomposedStringWithCanonicalMapping, maxKeySize: maxKeySize).bytes
    }
}

extension RecordStore {
    /// The stored class names with `name`'s canonical form (its other spellings, or itself).
    func storedNames(spelledLike name: String, in transaction: Transaction) throws(DatabaseError) -> [String] {
        // A store opened read-only records no names; were it asked, every name is the answer.
        guard let spellings else { return try classTable.names(in: transaction) }
        try completeSpellings(spellings, in: transaction)
        var names: [String] = []
        let classes = self.classes
        try StoredClass.spellingKey(of: name, maxKeySize: maxKeySize).withBytes { key throws(DatabaseError) in
            try transaction.withCursor(spellings) { cursor throws(DatabaseError) in
                try cursor.forEachDuplicate(of: key) { rowKey throws(DatabaseError) in
                    if let row = try transaction.get(classes, rowKey), let stored = StoredClass(parsing: row) { names.append(stored.name) }
                }
            }
        }
        return names
    }

    /// Adds the entry of the class row `name`, which this transaction records.
    func recordSpelling(of name: String, in transaction: Transaction) throws(DatabaseError) {
        guard let spellings else { return }
        let rowKey = StorageKey(name, maxKeySize: maxKeySize).bytes
        try Self.addSpelling(name, rowKey: rowKey, to: spellings, maxKeySize: maxKeySize, in: transaction)
    }

    /// Makes `spellings` again from `classes` when it lacks entries (see above).
    private func completeSpellings(_ spellings: DatabaseHandle, in transaction: Transaction) throws(DatabaseError) {
        let rows = try transaction.entryCount(classes)
        let entries = try transaction.entryCount(spellings)
        assert(entries <= rows, "the spellings database has an entry for a name that is not stored")
        guard entries != rows else { return }
        try transaction.empty(spellings)
        let maxKeySize = self.maxKeySize
        try transaction.withCursor(classes) { cursor throws(DatabaseError) in
            var entry = try cursor.get(.first)
            while let (rowKey, row) = entry {
                // A row that does not parse (a damaged file) still gets its entry, under its key's
                // text, so the counts stay equal.
                let name = StoredClass(parsing: row)?.name ?? String(decoding: rowKey, as: UTF8.self)
                try Self.addSpelling(name, rowKey: Array(rowKey), to: spellings, maxKeySize: maxKeySize, in: transaction)
                entry = try cursor.get(.next)
            }
        }
    }

    private static func addSpelling(
        _ name: String, rowKey: [UInt8], to spellings: DatabaseHandle, maxKeySize: Int, in transaction: Transaction
    ) throws(DatabaseError) {
        try StoredClass.spellingKey(of: name, maxKeySize: maxKeySize).withBytes { key throws(DatabaseError) in
            try rowKey.withBytes { value throws(DatabaseError) in _ = try transaction.put(spellings, key, value) }
        }
    }
}
