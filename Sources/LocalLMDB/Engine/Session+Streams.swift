import Foundation

// Large batches, written while they are still being encoded (`BatchStream`).
extension Session {
    /// Writes, in one transaction, the records of the puts that `produce` makes and gives to
    /// `send`, in order; returns how many were written. Outside a transaction the writer
    /// thread applies each put as it comes while `produce` makes the next, and commits after
    /// the last; in a transaction (or on the writer thread) they are applied as one put. When
    /// `produce` throws, nothing is written and its error is thrown.
    /// - Parameter total: The number of records `produce` will send, for sizing the map.
    nonisolated(nonsending) func perform(
        streaming total: Int, _ produce: (_ send: (WriteOperation) -> Void) throws(LocalDatabaseError) -> Void
    ) async throws(LocalDatabaseError) -> Int {
        let outcome = WriteOutcome()
        switch try streamParts(total: total, outcome: outcome, produce) {
        case .sent: return try await outcome.value.get()
        case let .abandoned(error):
            _ = await outcome.value  // The writer has let go of the batch.
            throw error
        case let .whole(operation):
            guard let operation else { return 0 }
            return try await perform(operation)
        }
    }

    /// `perform(streaming:_:)`, blocking the calling thread.
    func performBlocking(
        streaming total: Int, _ produce: (_ send: (WriteOperation) -> Void) throws(LocalDatabaseError) -> Void
    ) throws(LocalDatabaseError) -> Int {
        try checkNotRestoring("write")
        let outcome = WriteOutcome()
        switch try streamParts(total: total, outcome: outcome, produce) {
        case .sent: return try outcome.wait().get()
        case let .abandoned(error):
            _ = outcome.wait()  // The writer has let go of the batch.
            throw error
        case let .whole(operation):
            guard let operation else { return 0 }
            return try performBlocking(operation, "write")
        }
    }

    /// What became of a batch's parts (`streamParts`).
    private enum Streamed {
        /// Queued on the writer thread with the first part: its outcome goes to the `WriteOutcome`.
        case sent
        /// Queued, then abandoned because producing a later part threw this error: the
        /// `WriteOutcome` reports once the writer has let go.
        case abandoned(LocalDatabaseError)
        /// Not queued (the session has a transaction open, or this is the writer thread): the
        /// parts as one put, to write as any other; nil when there were none.
        case whole(WriteOperation?)
    }

    /// Runs `produce`, sending its puts to a `BatchStream` and queuing the stream's write on the
    /// writer thread with the first put, when the batch may be streamed. Throws what queuing it
    /// threw (`closed`, `readOnly`), or `produce`'s error when nothing was queued.
    private func streamParts(
        total: Int, outcome: WriteOutcome, _ produce: (_ send: (WriteOperation) -> Void) throws(LocalDatabaseError) -> Void
    ) throws(LocalDatabaseError) -> Streamed {
        let stream = BatchStream()
        var queued: Result<Bool, LocalDatabaseError>?
        let mayStream = !engine.thread.isCurrent
        let (owner, busyTimeout) = (owner, busyTimeout)
        do throws(LocalDatabaseError) {
            try produce { part in
                stream.send(part, total: total)
                guard queued == nil else { return }
                queued = mayStream ? Result { () throws(LocalDatabaseError) in
                    try submitOutsideTransaction { coordinator in
                        coordinator.performStream(stream, owner: owner, busyTimeout: busyTimeout) { outcome.complete($0) }
                    }
                } : .success(false)
            }
        } catch {
            stream.abandon(error)
            guard case .success(true)? = queued else { throw error }
            return .abandoned(error)
        }
        switch queued {
        case .success(true)?:
            stream.finish()
            return .sent
        case let .failure(error)?:
            stream.abandon(error)
            throw error
        case nil, .success(false)?:
            stream.finish()
            return .whole(try stream.merged().get())
        }
    }
}

/// The outcome of a write queued on the writer thread, awaited (or waited for) later.
final class WriteOutcome: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var result: Result<Int, LocalDatabaseError>?
    private var waiter: CheckedContinuation<Result<Int, LocalDatabaseError>, Never>?
    private let done = DispatchSemaphore(value: 0)

    func complete(_ outcome: Result<Int, LocalDatabaseError>) {
        let waiting = lock.withLock {
            result = outcome
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume(returning: outcome)
        done.signal()
    }

    var value: Result<Int, LocalDatabaseError> {
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
    func wait() -> Result<Int, LocalDatabaseError> {
        done.wait()
        done.signal()  // Later waits return at once.
        return lock.withLock { result } ?? .failure(.wrongThread(operation: "write"))
    }
}
