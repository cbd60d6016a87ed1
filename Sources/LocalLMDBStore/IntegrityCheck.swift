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
                        stored = try RecordDecoding.decode(key: key, value: value, validating: true)
                    } catch {
                        let reason = if case let .corruptRecord(_, reason) = error { reason } else { error.description }
                        problems.append(.undecodableRecord(id: RecordDecoding.displayID(key), reason: reason))
                        return
                    }
                    let id = (try? RecordValue(parsing: value))?.id(key: key) ?? RecordDecoding.displayID(key)
                    let typeKey = StorageKey(stored.className, maxKeySize: environment.maxKeySize)
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
                let storedKey = StorageKey(stored.classNameString, maxKeySize: environment.maxKeySize)
                if !storedKey.bytes.elementsEqual(typeKey) {
                    problems.append(.misfiledIndexEntry(id: stored.id(key: recordKey), indexedAs: className, storedAs: stored.classNameString))
                }
            }
        }
        return IntegrityCheck(recordCount: recordCount, indexEntryCount: indexCount, problems: problems)
    }
}
