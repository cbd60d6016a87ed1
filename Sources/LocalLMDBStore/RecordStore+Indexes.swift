import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON

// Secondary indexes' upkeep: every write changes a record's entries in the same transaction
// as the record (see `StoredIndex` for the layout). Invariant: each record of a class with
// stored indexes has exactly the entries `IndexDefinition.tuples` gives for its stored bytes in
// each of them, and every entry names such a record (`verify` checks it).
extension RecordStore {
    /// The stored indexes by class name, as `transaction` sees them.
    package func storedIndexes(in transaction: Transaction) throws(DatabaseError) -> [String: [StoredIndex]] {
        try indexCatalog.indexes(self, in: transaction)
    }

    /// The stored index of `className` named `name`, if any (from the catalog, which one
    /// look-up finds current).
    package func storedIndex(className: String, name: String, in transaction: Transaction) throws(DatabaseError) -> StoredIndex? {
        try storedIndexes(in: transaction)[className]?.first { $0.definition.name == name }
    }

    // MARK: Entries of one record

    /// The entry keys a stored value has in `index`; nil when the value cannot be read as
    /// LocalLMDB wrote it (its header or its checksum is damaged): its entries cannot be known.
    func entryKeys(ofValue value: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, in index: StoredIndex) -> [[UInt8]]? {
        entries(ofValue: value, key: key, in: index)?.map(\.key)
    }

    /// `entryKeys`, each with whether a unique index holds it to being the only one (not when a
    /// field of it is missing).
    func entries(ofValue value: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, in index: StoredIndex) -> [(key: [UInt8], isUnique: Bool)]? {
        indexedObject(value, key: key, verified: true).map { entries(of: $0, in: index) }
    }

    /// The object a stored value holds, for computing its entries (opened, in an encrypted
    /// store); nil when the value cannot be read as LocalLMDB wrote it. `key` is the record's
    /// key. `verified` checks its checksum: a value read from the store (a value being written
    /// was made by this process, and is checked once, here, by none).
    func indexedObject(_ value: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, verified: Bool) -> EncodedObject? {
        guard let stored = try? RecordValue(parsing: value), !verified || stored.checksum == nil || stored.isIntact,
              let document = try? stored.document(key: key, encryption: encryption),
              document.bytes.first == UInt8(ascii: "{") else { return nil }
        return EncodedObject(bytes: document.bytes, owner: document.owner)
    }

    /// The entries `object` has in `index`.
    func entries(of object: EncodedObject, in index: StoredIndex) -> [(key: [UInt8], isUnique: Bool)] {
        let maxKeySize = self.maxKeySize
        // The tuples are written after the index's number: each is its whole entry key.
        return index.definition.entries(of: object, after: index.keyPrefix).map { entry in
            (StoredIndex.entryKey(whole: entry.tuple, maxKeySize: maxKeySize), index.definition.isUnique && !entry.hasMissing)
        }
    }

    /// Adds the entries of the value `value` of the record under `recordKey`, refusing a second
    /// record under a key of a unique index.
    /// `counting` false leaves a counted index's runs as they are: for a build, which makes them
    /// all at its end.
    func addEntries(
        ofValue value: UnsafeRawBufferPointer, of index: StoredIndex, record recordKey: UnsafeRawBufferPointer, counting: Bool = true,
        in transaction: Transaction
    ) throws(DatabaseError) {
        // A damaged value has no entries (`verifyIntegrity` reports it).
        try addEntries(entries(ofValue: value, key: recordKey, in: index) ?? [], of: index, record: recordKey, counting: counting, in: transaction)
    }

    /// Adds `entries` for the record under `recordKey`, refusing a second record under a key of
    /// a unique index.
    func addEntries(
        _ newEntries: [(key: [UInt8], isUnique: Bool)], of index: StoredIndex, record recordKey: UnsafeRawBufferPointer,
        checkingUniqueness: Bool = true, counting: Bool = true, in transaction: Transaction
    ) throws(DatabaseError) {
        guard let entries else { return }
        for (key, isUnique) in newEntries {
            try key.withBytes { key throws(DatabaseError) in
                if isUnique && checkingUniqueness {
                    try transaction.withCursor(entries) { cursor throws(DatabaseError) in
                        guard var entry = try cursor.get(.key, key: key) else { return }
                        while true {
                            if !entry.value.hasSameBytes(as: recordKey) {
                                throw .uniqueIndexViolation(
                                    className: index.className, index: index.definition.name,
                                    ids: [try recordID(entry.value, in: transaction), try recordID(recordKey, in: transaction)])
                            }
                            guard let next = try cursor.get(.nextDuplicate) else { return }
                            entry = next
                        }
                    }
                }
                if try transaction.put(entries, key, recordKey, mode: .keepExistingPair), counting {
                    try countChange(of: index, entryKey: key, by: 1, in: transaction)
                }
            }
        }
    }

    /// Removes `keys` of `index` of the record under `recordKey`.
    func removeEntries(_ keys: [[UInt8]], of index: StoredIndex, record recordKey: UnsafeRawBufferPointer, in transaction: Transaction) throws(DatabaseError) {
        guard let entries else { return }
        for key in keys {
            try key.withBytes { key throws(DatabaseError) in
                if try transaction.delete(entries, key, value: recordKey) {
                    try countChange(of: index, entryKey: key, by: -1, in: transaction)
                }
            }
        }
    }

    /// Removes every entry of `indexes` naming `recordKey`, whatever its key: for a record whose
    /// stored bytes cannot be parsed. Walks the indexes, so only that rare path uses it.
    func removeAllEntries(record recordKey: UnsafeRawBufferPointer, of indexes: [StoredIndex], in transaction: Transaction) throws(DatabaseError) {
        guard let entries, !indexes.isEmpty else { return }
        var removed: [(index: StoredIndex, key: [UInt8])] = []
        try transaction.withCursor(entries) { cursor throws(DatabaseError) in
            var entry = try cursor.get(.first)
            while let current = entry {
                if current.value.hasSameBytes(as: recordKey),
                   let index = indexes.first(where: { index in index.keyPrefix.withBytes { current.key.startsWithBytes(of: $0) } }) {
                    removed.append((index, Array(current.key)))
                    try cursor.deleteCurrent()
                    entry = try cursor.get(.next)  // After a delete, the pair that moved under the cursor.
                } else {
                    entry = try cursor.get(.next)
                }
            }
        }
        // Counted after every delete: a change that finds the runs wrong makes them again from
        // the entries left, which the later changes of that index must then not repeat.
        var rebuilt: Set<UInt32> = []
        for (index, key) in removed where !rebuilt.contains(index.number) {
            if try key.withBytes({ key throws(DatabaseError) in try countChange(of: index, entryKey: key, by: -1, in: transaction) }) {
                rebuilt.insert(index.number)
            }
        }
    }

    /// The record id under `recordKey`: the key itself, or for a hashed key the id its value keeps.
    func recordID(_ recordKey: UnsafeRawBufferPointer, in transaction: Transaction) throws(DatabaseError) -> String {
        guard recordKey.first == StorageKey.hashMarker else { return String(decoding: recordKey, as: UTF8.self) }
        guard let value = try transaction.get(records, recordKey), let stored = try? RecordValue(parsing: value) else {
            return RecordDecoding.displayID(recordKey)
        }
        return stored.id(key: recordKey)
    }

    // MARK: Whole indexes

    /// Deletes every entry of `index` (and its runs: `RangeCounts`).
    func dropEntries(of index: StoredIndex, in transaction: Transaction) throws(DatabaseError) {
        guard let entries else { return }
        try dropRuns(of: index, in: transaction)
        try Self.deletePairs(startingWith: index.keyPrefix, in: entries, transaction)
    }

    /// Deletes every pair of `database` whose key starts with `prefix` (all their duplicates).
    static func deletePairs(startingWith prefix: [UInt8], in database: DatabaseHandle, _ transaction: Transaction) throws(DatabaseError) {
        try transaction.withCursor(database) { cursor throws(DatabaseError) in
            var pair = try prefix.withBytes { prefix throws(DatabaseError) in try cursor.get(.keyAtLeast, key: prefix) }
            while let current = pair, prefix.withBytes({ current.key.startsWithBytes(of: $0) }) {
                try cursor.deleteCurrent()
                pair = try cursor.get(.next)  // After a delete, the pair that moved under the cursor.
            }
        }
    }

    /// Stores each definition of `className` not stored yet and builds it from the records
    /// stored as `className`. Returns the number of indexes made.
    /// - Throws: `uniqueIndexViolation` when two records have one value in a unique index (the
    ///   transaction is abandoned: nothing is stored).
    func define(
        _ definitions: [IndexDefinition], className: String, in transaction: Transaction, progress: IndexBuildListener? = nil
    ) throws(DatabaseError) -> Int {
        guard let indexes else { throw .readOnly }
        var made = 0
        for definition in definitions {
            let catalogKey = StoredIndex.catalogKey(className: className, name: definition.name)
            let exists = try catalogKey.withBytes { key throws(DatabaseError) in try transaction.get(indexes, key) != nil }
            if exists { continue }
            let index = StoredIndex(number: try nextIndexNumber(in: transaction), className: className, definition: definition)
            try Self.write(index.catalogValue, at: catalogKey, indexes, in: transaction)
            try build(index, in: transaction, progress: progress)
            if definition.isCounted { try rebuildRuns(of: index, in: transaction) }
            made += 1
        }
        if made > 0 { try catalogChanged(in: transaction) }
        return made
    }

    /// Removes the index of `className` named `name` and its entries; false when there is none.
    func dropIndex(className: String, name: String, in transaction: Transaction) throws(DatabaseError) -> Bool {
        guard let indexes, let index = try storedIndex(className: className, name: name, in: transaction) else { return false }
        try dropEntries(of: index, in: transaction)
        _ = try StoredIndex.catalogKey(className: className, name: name).withBytes { key throws(DatabaseError) in
            try transaction.delete(indexes, key)
        }
        try catalogChanged(in: transaction)
        return true
    }

    /// Adds the entries of every record stored as `index.className` (a counted index's runs are
    /// made after: `define`).
    private func build(_ index: StoredIndex, in transaction: Transaction, progress: IndexBuildListener?) throws(DatabaseError) {
        let classKey = StorageKey(index.className, maxKeySize: maxKeySize)
        var recordKeys: [[UInt8]] = []
        try transaction.withCursor(types) { cursor throws(DatabaseError) in
            try classKey.withBytes { classBytes throws(DatabaseError) in
                try cursor.forEachDuplicate(of: classBytes) { recordKeys.append(Array($0)) }
            }
        }
        let name = index.definition.name
        progress?(index.className, name, 0, recordKeys.count)
        for (done, recordKey) in recordKeys.enumerated() {
            try recordKey.withBytes { recordKey throws(DatabaseError) in
                guard let value = try transaction.get(records, recordKey) else { return }
                try addEntries(ofValue: value, of: index, record: recordKey, counting: false, in: transaction)
            }
            if (done + 1) % 4096 == 0 { progress?(index.className, name, done + 1, recordKeys.count) }
        }
        progress?(index.className, name, recordKeys.count, recordKeys.count)
    }

    private func nextIndexNumber(in transaction: Transaction) throws(DatabaseError) -> UInt32 {
        let counterKey = Array("indexes.next".utf8)
        let stored = try Self.read(counterKey, meta, in: transaction)
        let number = stored.map { $0.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } } ?? 1
        guard number < UInt32.max else { throw .storage(operation: "define index", code: 0, message: "no index numbers left") }
        try Self.write(withUnsafeBytes(of: (number + 1).bigEndian, Array.init), at: counterKey, meta, in: transaction)
        return number
    }

    /// Gives the catalog a new version, and the database the layout with indexes.
    private func catalogChanged(in transaction: Transaction) throws(DatabaseError) {
        var version = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: UUID().uuid) { version = Array($0) }
        try Self.write(version, at: IndexCatalog.versionKey, meta, in: transaction)
        // Never lowers the layout: an encrypted database keeps its own.
        let layout = try Self.read(Array("format".utf8), meta, in: transaction)?.first ?? 0
        let needed = try storedIndexes(in: transaction).values.contains { $0.contains { $0.definition.isCounted } }
            ? Self.countedLayoutVersion : Self.indexedLayoutVersion
        if layout < needed {
            try Self.write([needed], at: Array("format".utf8), meta, in: transaction)
        }
    }
}
