import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import Foundation

/// Sends a batch's parts, as `Session.perform(batchOf:_:)` gives them to its producer.
package typealias PartSender = (WriteOperation) throws(DatabaseError) -> Void
/// The most records, and the bytes of values after which, a part of a batch holds.
package typealias PartLimits = (records: Int, bytes: Int)
/// Encodes a batch as puts within the limits given, sending each, and calling its last
/// argument every few hundred records to show it is making progress.
package typealias BatchProducer = (_ limits: PartLimits, _ send: PartSender, _ progress: () -> Void) throws(DatabaseError) -> Void

// Large batches, written while they are still being encoded (`BatchStream`).
extension Session {
    /// Writes, in one transaction, the `total` records of the puts that `produce` makes, in
    /// order; returns how many were written. A batch of more than
    /// `DatabaseConfiguration.batchPartRecords` is made in parts of that many: outside a
    /// transaction the writer thread applies each part as it comes while `produce` makes the
    /// next, and commits after the last; in a transaction, on the writer thread, or when the
    /// writer let go of the batch (`BatchStream`), the parts are written whole, as one put. A
    /// smaller batch is made whole and written as any other put. When `produce` throws,
    /// nothing is written and its error is thrown.
    package nonisolated(nonsending) func perform(batchOf total: Int, _ produce: BatchProducer) async throws(DatabaseError) -> Int {
        let whole: WriteOperation?
        if let partRecords = try partRecords(forBatchOf: total) {
            let outcome = BatchStream.PendingOutcome()
            switch try streamParts(total: total, limits: (partRecords, BatchStream.partBytes), outcome: outcome, produce) {
            case let .sent(stream):
                if let count = try await outcome.value.written() { return count }
                whole = stream.merged()
            case let .abandoned(error):
                _ = await outcome.value  // The writer has let go of the batch.
                throw error
            case let .whole(operation):
                whole = operation
            }
        } else {
            whole = try Self.made(produce)
        }
        guard let whole else { return 0 }
        return try await perform(whole)
    }

    /// `perform(batchOf:_:)`, blocking the calling thread.
    package func performBlocking(batchOf total: Int, _ produce: BatchProducer) throws(DatabaseError) -> Int {
        let whole: WriteOperation?
        if let partRecords = try partRecords(forBatchOf: total) {
            try checkNotRestoring("write")
            let outcome = BatchStream.PendingOutcome()
            switch try streamParts(total: total, limits: (partRecords, BatchStream.partBytes), outcome: outcome, produce) {
            case let .sent(stream):
                if let count = try outcome.wait().written() { return count }
                whole = stream.merged()
            case let .abandoned(error):
                _ = outcome.wait()  // The writer has let go of the batch.
                throw error
            case let .whole(operation):
                whole = operation
            }
        } else {
            whole = try Self.made(produce)
        }
        guard let whole else { return 0 }
        return try performBlocking(whole, "write")
    }

    /// The size of the parts a batch of `total` records is made in; nil when it is made whole.
    /// A batch made in parts throws `closed` or `readOnly` here, before anything is encoded (a
    /// whole one when it is written, as any other put).
    private func partRecords(forBatchOf total: Int) throws(DatabaseError) -> Int? {
        let partRecords = engine.configuration.batchPartRecords
        guard total > partRecords else { return nil }
        try checkWritable()
        return partRecords
    }

    /// The batch `produce` makes, whole; nil when it has no records.
    private static func made(_ produce: BatchProducer) throws(DatabaseError) -> WriteOperation? {
        var whole: WriteOperation?
        try produce((.max, .max), { whole = $0 }, {})
        return whole
    }

    /// What became of a batch's parts (`streamParts`).
    private enum SentParts {
        /// Queued on the writer thread with the first part, and finished: the write reports to
        /// the `BatchStream.PendingOutcome`.
        case sent(BatchStream)
        /// Queued, then abandoned because producing a later part threw this error: the
        /// `BatchStream.PendingOutcome` reports once the writer has let go.
        case abandoned(DatabaseError)
        /// Not queued (the session has a transaction open, or this is the writer thread): the
        /// parts as one put, to write as any other; nil when there were none.
        case whole(WriteOperation?)
    }

    /// Runs `produce`, sending its puts to a `BatchStream` and queuing the stream's write on the
    /// writer thread with the first put, when the batch may be streamed. Throws `produce`'s
    /// error, or what queuing threw (`closed`, `readOnly`; encoding then stops), when nothing
    /// was queued.
    private func streamParts(
        total: Int, limits: PartLimits, outcome: BatchStream.PendingOutcome, _ produce: BatchProducer
    ) throws(DatabaseError) -> SentParts {
        let stream = BatchStream()
        // nil until the first part decides: true once queued, false when written whole.
        var streaming: Bool? = engine.thread.isCurrent ? false : nil
        do throws(DatabaseError) {
            try produce(limits, { part throws(DatabaseError) in
                stream.send(part, total: total)
                if streaming == nil {
                    streaming = try submitOutsideTransaction { coordinator in
                        coordinator.performStream(stream) { outcome.complete($0) }
                    }
                }
            }, {
                if streaming == true { stream.noteProgress() }
            })
        } catch {
            stream.abandon(error)
            guard streaming == true else { throw error }
            return .abandoned(error)
        }
        guard streaming == true else { return .whole(stream.merged()) }
        stream.finish()
        return .sent(stream)
    }
}

extension BatchStream {
    /// The outcome of a batch queued on the writer thread in parts, awaited (or waited for) once
    /// the caller has sent them all.
    final class PendingOutcome: @unchecked Sendable {
        typealias Outcome = BatchStream.Outcome

        // Guarded by `lock`.
        private let lock = NSLock()
        private var result: Outcome?
        private var waiter: CheckedContinuation<Outcome, Never>?
        private let done = DispatchSemaphore(value: 0)

        /// Records the outcome (once), resuming whoever waits for it.
        func complete(_ outcome: Outcome) {
            let waiting = lock.withLock {
                result = outcome
                defer { waiter = nil }
                return waiter
            }
            if let waiting {
                PoolDemand.resuming()
                waiting.resume(returning: outcome)
            }
            done.signal()
        }

        /// The outcome, once known. Awaited by one task at a time.
        var value: Outcome {
            get async {
                let outcome = await withCheckedContinuation { continuation in
                    let known = lock.withLock {
                        if result == nil { waiter = continuation }
                        return result
                    }
                    if let known {
                        PoolDemand.resuming()
                        continuation.resume(returning: known)
                    }
                }
                PoolDemand.running()
                return outcome
            }
        }

        /// Blocks until the outcome is known.
        func wait() -> Outcome {
            done.wait()
            done.signal()  // Later waits return at once.
            // Never nil: `done` is signalled only after `result` is set.
            return lock.withLock { result } ?? .failed(.wrongThread(operation: "write"))
        }
    }
}
