import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import Foundation

/// A large batch of records sent to the writer thread in parts while its caller is still
/// encoding the rest, so that encoding (on the caller's thread) and writing (on the writer
/// thread) overlap. It is still one put in one transaction: the writer applies the parts in
/// order as they come and commits after the last (`TransactionCoordinator.commitStream`).
///
/// The writer waits for a part only while the caller makes progress (`noteProgress`): a
/// caller whose encoding waits, in turn, for the writer (a model that writes to the database
/// while it is encoded, or takes a lock that a writing thread holds) must not stall it for
/// ever. Then the writer lets go, and the caller writes the whole batch as one put once it has
/// finished (`merged`).
///
/// Confinement: the caller sends, notes progress, finishes or abandons; the writer thread
/// reads parts. All of it goes through `condition`. Parts are kept until the batch is written,
/// so that the writer can apply them again (after growing the map), or the caller write them
/// whole.
package final class BatchStream: @unchecked Sendable {
    /// What the writer finds when it asks for a part.
    enum Part {
        /// The put at the index asked for.
        case put(WriteOperation)
        /// There are no more parts.
        case end
        /// The caller abandoned the batch, for this reason.
        case abandoned(DatabaseError)
        /// The part did not come, and the caller made no progress, within the patience given.
        case late
    }

    /// A batch of more records than this is sent in parts of at most this many records (the
    /// default of `DatabaseConfiguration.batchPartRecords`).
    package static let partRecords = 65_536
    /// The most bytes of values a part holds (a part ends after the record that reaches it).
    static let partBytes = 32 << 20

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var parts: [WriteOperation] = []
    private var finished = false
    private var abandonment: DatabaseError?
    private var progress = 0
    private var growth = 0

    /// The map space the whole batch is expected to need (from its first part's size).
    var estimatedGrowth: Int { condition.withLock { growth } }

    /// Adds the next part. The first one sets the estimate of the whole batch's size, for
    /// `total` records.
    func send(_ part: WriteOperation, total: Int) {
        condition.withLock {
            if parts.isEmpty, case let .put(records, _) = part, !records.isEmpty {
                growth = part.estimatedGrowth / records.count * total
            }
            parts.append(part)
            progress += 1
            condition.broadcast()
        }
    }

    /// Notes that the caller is still encoding (it calls this every few hundred records).
    func noteProgress() {
        condition.withLock { progress += 1 }
    }

    /// Marks the batch complete: no more parts come.
    func finish() {
        condition.withLock {
            finished = true
            condition.broadcast()
        }
    }

    /// Abandons the batch for `error`: nothing of it is written.
    func abandon(_ error: DatabaseError) {
        condition.withLock {
            abandonment = error
            condition.broadcast()
        }
    }

    /// The part at `index`, waiting for it as long as the caller makes progress at least once
    /// every `patience`.
    func part(at index: Int, patience: Duration) -> Part {
        condition.withLock {
            var seen = progress
            var deadline = Date().addingTimeInterval(patience.timeInterval)
            while true {
                if let abandonment { return .abandoned(abandonment) }
                if index < parts.count { return .put(parts[index]) }
                if finished { return .end }
                if !condition.wait(until: deadline) {
                    guard progress != seen else { return .late }
                    seen = progress
                    deadline = Date().addingTimeInterval(patience.timeInterval)
                }
            }
        }
    }

    /// The whole batch as one put (once the caller has sent every part); nil when it has none.
    func merged() -> WriteOperation? {
        condition.withLock {
            var records = RecordBatch()
            var classes = ClassList()
            for case let .put(part, partClasses) in parts {
                records.append(contentsOf: part)
                classes.add(partClasses)
            }
            return records.isEmpty ? nil : .put(records, classes: classes.classes)
        }
    }
}

extension BatchStream {
    /// What became of a batch sent in parts.
    enum Outcome: Sendable {
        /// Written and durable: this many records.
        case written(Int)
        /// Not written, for this reason.
        case failed(DatabaseError)
        /// Not written, and let go of: a transaction was open, or the caller was slow. The
        /// caller writes the batch whole, as any other write, once it has encoded all of it.
        case notWritten

        /// The number of records written; nil when the caller is to write the batch whole.
        /// - Throws: The reason it failed.
        func written() throws(DatabaseError) -> Int? {
            switch self {
            case let .written(count): return count
            case let .failed(error): throw error
            case .notWritten: return nil
            }
        }
    }
}
