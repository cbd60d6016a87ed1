import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBEngine

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
        /// A record lacks an entry it should have in a secondary index (`index`: its class and
        /// fields), so queries on the index miss it.
        case missingSecondaryIndexEntry(id: String, index: String)
        /// A secondary index has an entry that no record's values give: queries on it would
        /// find the record `id` for a value it does not have.
        case orphanedSecondaryIndexEntry(index: String, id: String)
        /// A counted index's numbers of entries (`Index.on(_:unique:counted:)`) are not what its
        /// entries are, so counts of ranges on it may be wrong (its queries are not: they read the
        /// entries). Dropping the index and declaring it again makes the numbers again.
        case wrongIndexCounts(index: String)

        /// A sentence describing the problem.
        public var description: String {
            switch self {
            case let .missingIndexEntry(id, type): return "record '\(id)' (\(type)) is missing from the type index"
            case let .orphanedIndexEntry(type, id): return "the type index lists '\(id)' under \(type), but there is no such record"
            case let .misfiledIndexEntry(id, indexed, stored): return "record '\(id)' is indexed as \(indexed) but stored as \(stored)"
            case let .undecodableRecord(id, reason): return "record '\(id)' cannot be decoded: \(reason)"
            case let .missingSecondaryIndexEntry(id, index): return "record '\(id)' is missing from the index \(index)"
            case let .orphanedSecondaryIndexEntry(index, id): return "the index \(index) lists '\(id)' for a value it does not have"
            case let .wrongIndexCounts(index): return "the counts of the index \(index) do not match its entries"
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


extension IntegrityReport {
    /// The report of the store's check.
    init(_ check: IntegrityCheck) {
        recordCount = check.recordCount
        indexEntryCount = check.indexEntryCount
        problems = check.problems.map { problem in
            switch problem {
            case let .missingIndexEntry(id, type): return .missingIndexEntry(id: id, type: type)
            case let .orphanedIndexEntry(type, id): return .orphanedIndexEntry(type: type, id: id)
            case let .misfiledIndexEntry(id, indexedAs, storedAs): return .misfiledIndexEntry(id: id, indexedAs: indexedAs, storedAs: storedAs)
            case let .undecodableRecord(id, reason): return .undecodableRecord(id: id, reason: reason)
            case let .missingSecondaryIndexEntry(id, index): return .missingSecondaryIndexEntry(id: id, index: index)
            case let .orphanedSecondaryIndexEntry(index, id): return .orphanedSecondaryIndexEntry(index: index, id: id)
            case let .wrongIndexCounts(index): return .wrongIndexCounts(index: index)
            }
        }
    }
}
