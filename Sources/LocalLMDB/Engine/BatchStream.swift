import Foundation

/// A large batch of records sent to the writer thread in parts while its caller is still
/// encoding the rest, so that encoding (on the caller's thread) and writing (on the writer
/// thread) overlap. It is still one put in one transaction: the writer applies the parts in
/// order as they come and commits after the last (`TransactionCoordinator.commitStream`).
///
/// The writer waits for a part only so long (`patience`): a caller whose encoding waits, in
/// turn, for the writer (a model that writes to the database while it is encoded, or takes a
/// lock that a writing thread holds) must not stall it for ever. Then the writer lets go, and
/// writes the whole batch as one put once the caller has finished (`merged`).
///
/// Confinement: the caller sends, finishes or abandons; the writer thread reads parts. Both go
/// through `condition`. Parts are kept until the batch is written, so that the writer can
/// apply them again (after growing the map, or when it let go).
final class BatchStream: @unchecked Sendable {
    enum Part {
        /// The put at the index asked for.
        case put(WriteOperation)
        /// There are no more parts.
        case end
        /// The caller abandoned the batch, for this reason.
        case abandoned(LocalDatabaseError)
        /// The part did not come within the patience given.
        case late
    }

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var parts: [WriteOperation] = []
    private var finished = false
    private var abandonment: LocalDatabaseError?
    private var onCompletion: [@Sendable () -> Void] = []
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
            condition.broadcast()
        }
    }

    /// Marks the batch complete: no more parts come.
    func finish() {
        complete { finished = true }
    }

    /// Abandons the batch for `error`: nothing of it is written.
    func abandon(_ error: LocalDatabaseError) {
        complete { abandonment = error }
    }

    private func complete(_ change: () -> Void) {
        let callbacks = condition.withLock {
            change()
            condition.broadcast()
            defer { onCompletion = [] }
            return onCompletion
        }
        for callback in callbacks { callback() }
    }

    /// The part at `index`, waiting at most `patience` for it.
    func part(at index: Int, patience: Duration) -> Part {
        let deadline = Date().addingTimeInterval(patience.timeInterval)
        return condition.withLock {
            while true {
                if let abandonment { return .abandoned(abandonment) }
                if index < parts.count { return .put(parts[index]) }
                if finished { return .end }
                guard condition.wait(until: deadline) else {
                    return index < parts.count ? .put(parts[index]) : finished ? .end : .late
                }
            }
        }
    }

    /// Runs `body` once the batch is finished or abandoned: at once (on this thread) when it
    /// is, else on the thread that completes it.
    func whenComplete(_ body: @escaping @Sendable () -> Void) {
        let now = condition.withLock {
            guard finished || abandonment != nil else {
                onCompletion.append(body)
                return false
            }
            return true
        }
        if now { body() }
    }

    /// The whole batch as one put, once complete; the reason it was abandoned, if it was.
    func merged() -> Result<WriteOperation?, LocalDatabaseError> {
        condition.withLock {
            if let abandonment { return .failure(abandonment) }
            var records = RecordBatch()
            var classes: [StoredClass] = []
            for case let .put(part, partClasses) in parts {
                records.append(contentsOf: part)
                for storedClass in partClasses where !classes.contains(storedClass) { classes.append(storedClass) }
            }
            return .success(records.isEmpty ? nil : .put(records, classes: classes))
        }
    }
}
