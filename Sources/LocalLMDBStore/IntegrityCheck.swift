import LocalLMDBJSON
import LocalLMDBLMDB

/// What `RecordStore.verify(in:)` found: the store's form of the public `IntegrityReport`
/// (see there for what each problem means).
@usableFromInline package struct IntegrityCheck: Sendable, Equatable {
    /// One inconsistency.
    package enum Problem: Sendable, Equatable {
        case missingIndexEntry(id: String, type: String)
        case orphanedIndexEntry(type: String, id: String)
        case misfiledIndexEntry(id: String, indexedAs: String, storedAs: String)
        case undecodableRecord(id: String, reason: String)
        case missingSecondaryIndexEntry(id: String, index: String)
        case orphanedSecondaryIndexEntry(index: String, id: String)
        case wrongIndexCounts(index: String)
    }

    package let recordCount: Int
    package let indexEntryCount: Int
    /// Every problem found, records first.
    package let problems: [Problem]
}

extension RecordStore {
    /// Walks both databases in `transaction` and reports every disagreement.
    package func verify(in transaction: Transaction) throws(DatabaseError) -> IntegrityCheck {
        var problems: [IntegrityCheck.Problem] = []
        var recordCount = 0
        try transaction.withCursor(records) { records throws(DatabaseError) in
            try transaction.withCursor(types) { index throws(DatabaseError) in
                try records.forEach { key, value throws(DatabaseError) in
                    recordCount += 1
                    let stored: DecodedRecord
                    do throws(DatabaseError) {
                        stored = try RecordDecoding.decode(key: key, value: value, validating: true, encryption: encryption)
                    } catch {
                        let reason = if case let .corruptRecord(_, reason) = error { reason } else { error.description }
                        problems.append(.undecodableRecord(id: RecordDecoding.displayID(key), reason: reason))
                        return
                    }
                    let id = (try? RecordValue(parsing: value))?.id(key: key) ?? RecordDecoding.displayID(key)
                    let typeKey = StorageKey(stored.className, maxKeySize: maxKeySize)
                    let indexed = try typeKey.withBytes { typeBytes throws(DatabaseError) in
                        try index.get(.keyAndValue, key: typeBytes, value: key) != nil
                    }
                    if !indexed { problems.append(.missingIndexEntry(id: id, type: stored.className)) }
                }
            }
        }
        var indexCount = 0
        try transaction.withCursor(types) { index throws(DatabaseError) in
            try index.forEach { typeKey, recordKey throws(DatabaseError) in
                indexCount += 1
                let className = RecordDecoding.displayID(typeKey)
                guard let value = try transaction.get(records, recordKey) else {
                    problems.append(.orphanedIndexEntry(type: className, id: RecordDecoding.displayID(recordKey)))
                    return
                }
                guard let stored = try? RecordValue(parsing: value) else { return }  // reported above
                let storedKey = StorageKey(stored.classNameString, maxKeySize: maxKeySize)
                if !storedKey.bytes.elementsEqual(typeKey) {
                    problems.append(.misfiledIndexEntry(id: stored.id(key: recordKey), indexedAs: className, storedAs: stored.classNameString))
                }
            }
        }
        try verifySecondaryIndexes(in: transaction, problems: &problems)
        return IntegrityCheck(recordCount: recordCount, indexEntryCount: indexCount, problems: problems)
    }
}

extension RecordStore {
    /// Compares each stored index's entries with those its class's records have.
    private func verifySecondaryIndexes(in transaction: Transaction, problems: inout [IntegrityCheck.Problem]) throws(DatabaseError) {
        guard let entries else { return }
        for index in try storedIndexes(in: transaction).values.flatMap({ $0 }).sorted(by: { $0.number < $1.number }) {
            let name = index.className + ": " + index.definition.name
            var expected: Set<[UInt8]> = []  // entry key, a zero-length separator byte count, record key
            var recordKeys: [[UInt8]] = []
            try transaction.withCursor(types) { cursor throws(DatabaseError) in
                try StorageKey(index.className, maxKeySize: maxKeySize).withBytes { classBytes throws(DatabaseError) in
                    try cursor.forEachDuplicate(of: classBytes) { recordKeys.append(Array($0)) }
                }
            }
            for recordKey in recordKeys {
                try recordKey.withBytes { recordBytes throws(DatabaseError) in
                    guard let value = try transaction.get(records, recordBytes) else { return }
                    for key in entryKeys(ofValue: value, key: recordBytes, in: index) ?? [] { expected.insert(Self.pair(key, recordKey)) }
                }
            }
            var found: Set<[UInt8]> = []
            let prefix = index.keyPrefix
            try transaction.withCursor(entries) { cursor throws(DatabaseError) in
                var entry = try prefix.withBytes { prefix throws(DatabaseError) in try cursor.get(.keyAtLeast, key: prefix) }
                while let current = entry, current.key.starts(with: prefix) {
                    let pair = Self.pair(Array(current.key), Array(current.value))
                    found.insert(pair)
                    if !expected.contains(pair) {
                        problems.append(.orphanedSecondaryIndexEntry(index: name, id: try recordID(current.value, in: transaction)))
                    }
                    entry = try cursor.get(.next)
                }
            }
            if index.definition.isCounted, try !runsAgree(with: index, in: transaction) {
                problems.append(.wrongIndexCounts(index: name))
            }
            for pair in expected.subtracting(found).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                let recordKey = Array(pair[(((Int(pair[0]) << 8) | Int(pair[1])) + 2)...])
                problems.append(.missingSecondaryIndexEntry(id: try recordKey.withBytes { key throws(DatabaseError) in try recordID(key, in: transaction) }, index: name))
            }
        }
    }

    /// Whether the runs of a counted index are what its entries are (see `RangeCounts`): a
    /// first run when it has entries, each run's number the count of its entries, none empty
    /// but the first.
    private func runsAgree(with index: StoredIndex, in transaction: Transaction) throws(DatabaseError) -> Bool {
        // A read-only process opened before the runs' database existed cannot see them.
        guard let entries, counts != nil else { return true }
        let stored = try runs(of: index, in: transaction)
        let prefix = index.keyPrefix
        var lengths = [Int](repeating: 0, count: stored.count)
        var entryCount = 0
        var outside = false
        try transaction.withCursor(entries) { cursor throws(DatabaseError) in
            var entry = try prefix.withBytes { prefix throws(DatabaseError) in try cursor.get(.keyAtLeast, key: prefix) }
            var run = -1
            while let current = entry, prefix.withBytes({ current.key.startsWithBytes(of: $0) }) {
                while run + 1 < stored.count, stored[run + 1].key.withBytes({ current.key.compareBytes(with: $0) >= 0 }) { run += 1 }
                let duplicates = try cursor.duplicateCount()
                entryCount += duplicates
                if run >= 0 { lengths[run] += duplicates } else { outside = true }
                entry = try cursor.get(.nextKey)
            }
        }
        if entryCount == 0 { return stored.allSatisfy { $0.length == 0 } }
        guard !outside, stored.first?.key == prefix else { return false }
        for (offset, run) in stored.enumerated() {
            guard run.length == lengths[offset], offset == 0 || lengths[offset] > 0 else { return false }
        }
        return true
    }

    /// An entry key and a record key as one value: the entry key's length (2 bytes), the entry key, the record key.
    private static func pair(_ entryKey: [UInt8], _ recordKey: [UInt8]) -> [UInt8] {
        [UInt8(entryKey.count >> 8), UInt8(entryKey.count & 0xFF)] + entryKey + recordKey
    }
}
