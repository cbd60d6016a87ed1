import CLMDB

/// The result of `LocalDatabase.verifyIntegrity()`: every disagreement between the records and
/// the type index, and every record whose bytes cannot be decoded.
public struct IntegrityReport: Sendable, Equatable, CustomStringConvertible {
    /// One inconsistency.
    public enum Problem: Sendable, Equatable, CustomStringConvertible {
        /// A record has no entry in the type index, so reads by type miss it.
        case missingIndexEntry(id: String, type: String)
        /// The type index lists a record that does not exist.
        case orphanedIndexEntry(type: String, id: String)
        /// The type index lists a record under a class other than the one it is stored as.
        case misfiledIndexEntry(id: String, indexedAs: String, storedAs: String)
        /// A record's stored bytes cannot be decoded.
        case undecodableRecord(id: String, reason: String)

        /// A sentence describing the problem.
        public var description: String {
            switch self {
            case let .missingIndexEntry(id, type): return "record '\(id)' (\(type)) is missing from the type index"
            case let .orphanedIndexEntry(type, id): return "the type index lists '\(id)' under \(type), but there is no such record"
            case let .misfiledIndexEntry(id, indexed, stored): return "record '\(id)' is indexed as \(indexed) but stored as \(stored)"
            case let .undecodableRecord(id, reason): return "record '\(id)' cannot be decoded: \(reason)"
            }
        }
    }

    /// The number of records.
    public let recordCount: Int
    /// The number of entries in the type index.
    public let indexEntryCount: Int
    /// Every problem found, records first.
    public let problems: [Problem]

    /// True when the index and the records agree and every record decodes.
    public var isConsistent: Bool { problems.isEmpty }

    /// A summary line, followed by one line per problem.
    public var description: String {
        let summary = "\(recordCount) records, \(indexEntryCount) index entries"
        guard !problems.isEmpty else { return summary + ": consistent" }
        return summary + ", \(problems.count) problems:\n" + problems.map { "- \($0)" }.joined(separator: "\n")
    }
}

extension RecordStore {
    /// Walks both databases in `transaction` and reports every disagreement.
    func verify(in transaction: Transaction) throws(LocalDatabaseError) -> IntegrityReport {
        var problems: [IntegrityReport.Problem] = []
        var recordCount = 0
        try transaction.withCursor(records) { records throws(LocalDatabaseError) in
            try transaction.withCursor(types) { index throws(LocalDatabaseError) in
                try records.forEach { key, value throws(LocalDatabaseError) in
                    recordCount += 1
                    let stored: DecodedRecord
                    do throws(LocalDatabaseError) {
                        stored = try RecordDecoding.decode(key: key, value: value, validating: true)
                    } catch {
                        let reason = if case let .corruptRecord(_, reason) = error { reason } else { error.description }
                        problems.append(.undecodableRecord(id: RecordDecoding.displayID(key), reason: reason))
                        return
                    }
                    let id = (try? RecordValue(parsing: value))?.id(key: key) ?? RecordDecoding.displayID(key)
                    let typeKey = StorageKey(stored.typeName, maxKeySize: environment.maxKeySize)
                    let indexed = try typeKey.withBytes { typeBytes throws(LocalDatabaseError) in
                        try index.get(MDB_GET_BOTH, key: typeBytes, value: key) != nil
                    }
                    if !indexed { problems.append(.missingIndexEntry(id: id, type: stored.typeName)) }
                }
            }
        }
        var indexCount = 0
        try transaction.withCursor(types) { index throws(LocalDatabaseError) in
            try index.forEach { typeKey, recordKey throws(LocalDatabaseError) in
                indexCount += 1
                let typeName = RecordDecoding.displayID(typeKey)
                guard let value = try transaction.get(records, recordKey) else {
                    problems.append(.orphanedIndexEntry(type: typeName, id: RecordDecoding.displayID(recordKey)))
                    return
                }
                guard let stored = try? RecordValue(parsing: value) else { return }  // reported above
                let storedKey = StorageKey(stored.typeNameString, maxKeySize: environment.maxKeySize)
                if !storedKey.bytes.elementsEqual(typeKey) {
                    problems.append(.misfiledIndexEntry(id: stored.id(key: recordKey), indexedAs: typeName, storedAs: stored.typeNameString))
                }
            }
        }
        return IntegrityReport(recordCount: recordCount, indexEntryCount: indexCount, problems: problems)
    }
}
