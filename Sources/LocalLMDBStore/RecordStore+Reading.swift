import LocalLMDBJSON
import LocalLMDBLMDB
import Foundation

// Reading records, counts, ids and documents in a transaction.
extension RecordStore {
    /// The stored value under `key`, if any.
    package func value(_ key: StorageKey, in transaction: Transaction) throws(DatabaseError) -> UnsafeRawBufferPointer? {
        try Self.value(key, records: records, in: transaction)
    }

    /// `value(_:in:)` given the records database alone: the hot path of a read by id, which
    /// must not copy the store (a copy retains what it holds: a shared reference count
    /// written by every read, from every thread).
    @inlinable
    package static func value(_ key: StorageKey, records: DatabaseHandle, in transaction: Transaction) throws(DatabaseError) -> UnsafeRawBufferPointer? {
        try key.withBytes { bytes throws(DatabaseError) in try transaction.get(records, bytes) }
    }

    /// The number of records: O(1).
    package func count(in transaction: Transaction) throws(DatabaseError) -> Int {
        try transaction.entryCount(records)
    }

    /// The number of records stored under any of `typeKeys`: O(1) per key.
    package func count(typeKeys: [StorageKey], in transaction: Transaction) throws(DatabaseError) -> Int {
        try transaction.withCursor(types) { cursor throws(DatabaseError) in
            var total = 0
            for typeKey in typeKeys {
                let found = try typeKey.withBytes { key throws(DatabaseError) in try cursor.get(.key, key: key) }
                if found != nil { total += try cursor.duplicateCount() }
            }
            return total
        }
    }

    /// Each class name records are stored under, with how many, in the byte order of the
    /// names' keys (a name too long for a key is found in the class table by its key).
    package func classCounts(in transaction: Transaction) throws(DatabaseError) -> [(className: String, records: Int)] {
        var counts: [(className: String, records: Int)] = []
        try transaction.withCursor(types) { cursor throws(DatabaseError) in
            var found = try cursor.get(.first)
            while let (key, _) = found {
                let name: String
                if key.isHashedKey {
                    name = try transaction.get(classTable.database, key).flatMap(StoredClass.init(parsing:))?.name
                        ?? RecordDecoding.displayID(key)
                } else {
                    name = String(decoding: key, as: UTF8.self)
                }
                counts.append((name, try cursor.duplicateCount()))
                found = try cursor.get(.nextKey)
            }
        }
        return counts
    }

    /// Calls `body` with the key and value of each record stored under any of `typeKeys`,
    /// type by type, in key order.
    func forEachRecord(
        typeKeys: [StorageKey], in transaction: Transaction,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws(DatabaseError) -> Void
    ) throws(DatabaseError) {
        try transaction.withCursor(types) { index throws(DatabaseError) in
            try transaction.withCursor(records) { recordsCursor throws(DatabaseError) in
                // The index lists a type's records in key order, the order of the records
                // database: when the type holds most records, the next record is the one after
                // the last, one cursor step instead of a search. That step is taken before the
                // current record is handled, so the next one's bytes load in the meantime.
                var ahead: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?
                for typeKey in typeKeys {
                    try typeKey.withBytes { typeBytes throws(DatabaseError) in
                        try index.forEachDuplicate(of: typeBytes) { recordKey throws(DatabaseError) in
                            let found: UnsafeRawBufferPointer?
                            if let ahead, ahead.key.hasSameBytes(as: recordKey) {
                                found = ahead.value
                            } else {
                                found = try recordsCursor.get(.key, key: recordKey)?.value
                            }
                            ahead = found == nil ? nil : try recordsCursor.get(.next)
                            ahead?.value.prefetch()
                            // An index entry without its record is reported by verifyIntegrity; reads skip it.
                            if let found { try body(recordKey, found) }
                        }
                    }
                }
            }
        }
    }

    /// `transform` applied to each record stored under any of `typeKeys`, checked and read in
    /// place (so only for the life of `transaction`).
    /// `transform` is also given a function that makes the record's id.
    package func objects<R>(
        typeKeys: [StorageKey], in transaction: Transaction,
        _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R] {
        var objects: [R] = []
        objects.reserveCapacity(try count(typeKeys: typeKeys, in: transaction))
        try forEachRecord(typeKeys: typeKeys, in: transaction) { key, value throws(DatabaseError) in
            let stored = try RecordDecoding.decode(key: key, value: value, encryption: encryption)
            objects.append(try transform(stored) { (try? RecordValue(parsing: value))?.id(key: key) ?? RecordDecoding.displayID(key) })
        }
        return objects
    }

    /// `transform` applied to up to `limit` records stored under `typeKey` whose keys come after
    /// the record key `after` (from the first when nil), in key order: a walk of one class in
    /// steps, each a seek in `types` (`MDB_GET_BOTH_RANGE`), whatever the class's size.
    package func objects<R>(
        typeKey: StorageKey, after: [UInt8]?, limit: Int, in transaction: Transaction,
        _ transform: (DecodedRecord, _ key: [UInt8], _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R] {
        var objects: [R] = []
        guard limit > 0 else { return objects }
        try transaction.withCursor(types) { index throws(DatabaseError) in
            try typeKey.withBytes { typeBytes throws(DatabaseError) in
                var entry = try Self.firstTypeEntry(typeBytes, after: after, index)
                while let (_, recordKey) = entry, objects.count < limit {
                    // An index entry without its record is reported by verifyIntegrity; reads skip it.
                    if let value = try transaction.get(records, recordKey) {
                        let stored = try RecordDecoding.decode(key: recordKey, value: value, encryption: encryption)
                        objects.append(try transform(stored, Array(recordKey)) { (try? RecordValue(parsing: value))?.id(key: recordKey) ?? RecordDecoding.displayID(recordKey) })
                    }
                    entry = try index.get(.nextDuplicate)
                }
            }
        }
        return objects
    }

    /// Positions `index`, a cursor on `types`, at the first record key stored under the class key
    /// `typeBytes` that comes after `after` (at the first when nil): one seek
    /// (`MDB_GET_BOTH_RANGE`), whatever the class's size. Nil when there is none.
    static func firstTypeEntry(
        _ typeBytes: UnsafeRawBufferPointer, after: [UInt8]?, _ index: Cursor
    ) throws(DatabaseError) -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        guard let after else { return try index.get(.key, key: typeBytes) }
        let entry = try after.withBytes { value throws(DatabaseError) in try index.get(.keyAndValueAtLeast, key: typeBytes, value: value) }
        if let found = entry, found.value.elementsEqual(after) { return try index.get(.nextDuplicate) }
        return entry
    }

    /// Calls `body` with the id, class name and document (opened and checked, as a read would)
    /// of each record stored under any of `typeKeys`, type by type, or of every record when
    /// `typeKeys` is nil; in key order. The document is valid during the call only.
    package func forEachDocument(
        typeKeys: [StorageKey]?, in transaction: Transaction,
        _ body: (_ id: String, _ className: String, _ document: UnsafeRawBufferPointer) throws(DatabaseError) -> Void
    ) throws(DatabaseError) {
        func visit(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws(DatabaseError) {
            let stored = try RecordDecoding.decode(key: key, value: value, encryption: encryption)
            let id = (try? RecordValue(parsing: value))?.id(key: key) ?? RecordDecoding.displayID(key)
            try withExtendedLifetime(stored.object.owner) { () throws(DatabaseError) in try body(id, stored.className, stored.object.extent) }
        }
        guard let typeKeys else {
            return try transaction.withCursor(records) { cursor throws(DatabaseError) in try cursor.forEach(visit) }
        }
        try forEachRecord(typeKeys: typeKeys, in: transaction, visit)
    }

    /// The ids of the records stored under any of `typeKeys`.
    package func ids(typeKeys: [StorageKey], in transaction: Transaction) throws(DatabaseError) -> [String] {
        var ids: [String] = []
        try transaction.withCursor(types) { cursor throws(DatabaseError) in
            for typeKey in typeKeys {
                try typeKey.withBytes { typeBytes throws(DatabaseError) in
                    try cursor.forEachDuplicate(of: typeBytes) { recordKey throws(DatabaseError) in
                        guard recordKey.isHashedKey else {
                            ids.append(String(decoding: recordKey, as: UTF8.self))
                            return
                        }
                        // A hashed key's id is in the value: one that cannot be parsed is
                        // reported as `read()` reports it, never skipped. (An index entry with
                        // no record is skipped by both, and reported by `verify`.)
                        guard let value = try transaction.get(records, recordKey) else { return }
                        do throws(RecordValueError) {
                            ids.append(try RecordValue(parsing: value).id(key: recordKey))
                        } catch {
                            throw .corruptRecord(id: RecordDecoding.displayID(recordKey), reason: error.description)
                        }
                    }
                }
            }
        }
        return ids
    }
}
