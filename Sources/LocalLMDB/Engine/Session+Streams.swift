import Foundation

/// Sends a batch's parts, as `Session.perform(streaming:_:)` gives them to its producer.
typealias PartSender = (WriteOperation) throws(LocalDatabaseError) -> Void

// Large batches, written while they are still being encoded (`BatchStream`).
extension Session {
    /// Writes, in one transaction, the records of the puts that `produce` makes and gives to
    /// its first argument, in order; returns how many were written. `produce` calls its second
    /// argument every few hundred records, to show it is making progress. Outside a
    /// transaction the writer thread applies each put as it comes while `produce` makes the
    /// next, and commits after the last; in a transaction, on the writer thread, or when the
    /// writer let go of the batch (`BatchStream`), the puts are written whole, as one put.
    /// When `produce` throws, nothing is written and its error is thrown.
    /// - Parameter total: The number of records `produce` will send, for sizing the map.
    nonisolated(nonsending) func perform(
        streaming total: Int, _ produce: (_ send: PartSender, _ progress: () -> Void) throws(LocalDatabaseError) -> Void
    ) async throws(LocalDatabaseError) -> Int {
        try checkWritable()
        let outcome = WriteOutcome()
        let whole: WriteOperation?
        switch try streamParts(total: total, outcome: outcome, produce) {
        case let .sent(stream):
            switch await outcome.value {
            case let .written(count): return count
            case let .failed(error): throw error
            case .notWritten: whole = stream.merged()
            }
        case let .abandoned(error):
            _ = await outcome.value  // The writer has let go of the batch.
            throw error
        case let .whole(operation):
            whole = operation
        }
        guard let whole else { return 0 }
        return try await perform(whole)
    }

    /// `perform(streaming:_:)`, blocking the calling thread.
    func performBlocking(
        streaming total: Int, _ produce: (_ send: PartSender, _ progress: () -> Void) throws(LocalDatabaseError) -> Void
    ) throws(LocalDatabaseError) -> Int {
        try checkWritable()
        try checkNotRestoring("write")
        let outcome = WriteOutcome()
        let whole: WriteOperation?
        switch try streamParts(total: total, outcome: outcome, produce) {
        case let .sent(stream):
            switch outcome.wait() {
            case let .written(count): return count
            case let .failed(error): throw error
            case .notWritten: whole = stream.merged()
            }
        case let .abandoned(error):
            _ = outcome.wait()  // The writer has let go of the batch.
            throw error
        case let .whole(operation):
            whole = operation
        }
        guard let whole else { return 0 }
        return try performBlocking(whole, "write")
    }

    /// What became of a batch's parts (`streamParts`).
    private enum Streamed {
        /// Queued on the writer thread with the first part, and finished: the write reports to
        /// the `WriteOutcome`.
        case sent(BatchStream)
        /// Queued, then abandoned because producing a later part threw this error: the
        /// `WriteOutcome` reports once the writer has let go.
        case abandoned(LocalDatabaseError)
        /// Not queued (the session has a transaction open, or this is the writer thread): the
        /// parts as one put, to write as any other; nil when there were none.
        case whole(WriteOperation?)
    }

    /// Runs `produce`, sending its puts to a `BatchStream` and queuing the stream's write on the
    /// writer thread with the first put, when the batch may be streamed. Throws `produce`'s
    /// error, or what queuing threw (`closed`, `readOnly`; encoding then stops), when nothing
    /// was queued.
    private func streamParts(
        total: Int, outcome: WriteOutcome, _ produce: (_ send: PartSender, _ progress: () -> Void) throws(LocalDatabaseError) -> Void
    ) throws(LocalDatabaseError) -> Streamed {
        let stream = BatchStream()
        // nil until the first part decides: true once queued, false when written whole.
        var streaming: Bool? = engine.thread.isCurrent ? false : nil
        do throws(LocalDatabaseError) {
            try produce({ part throws(LocalDatabaseError) in
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

/// The outcome of a batch queued on the writer thread in parts, awaited (or waited for) once
/// the caller has sent them all.
final class WriteOutcome: @unchecked Sendable {
    typealias Outcome = TransactionCoordinator.StreamOutcome

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
        waiting?.resume(returning: outcome)
        done.signal()
    }

    /// The outcome, once known. Awaited by one task at a time.
    var value: Outcome {
        get async {
            await withCheckedContinuation { continuation in
                let known = lock.withLock {
                    if result == nil { waiter = continuation }
                    return result
                }
                if let known { continuation.resume(returning: known) }
            }
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
