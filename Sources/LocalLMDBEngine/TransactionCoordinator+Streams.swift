import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// Batches written while their callers still encode them (`BatchStream`).
extension TransactionCoordinator {
    /// How long the writer waits for a batch's caller to make progress (encode more records or
    /// send a part) before it lets go of the batch: far longer than encoding a few records takes.
    static let streamPatience = Duration.milliseconds(250)

    /// Writes `stream` in a transaction of its own, applying its parts as they come, after the
    /// writes already pending; `completion` runs once it is durable, has failed, or has been let
    /// go of (`notWritten`: when a user transaction is open, which the caller's session must
    /// see to, or when the caller makes no progress for `streamPatience`). After `completion`
    /// the writer no longer reads `stream`.
    func performStream(_ stream: BatchStream, completion: @escaping @Sendable (BatchStream.Outcome) -> Void) {
        defer { assert(invariantsHold(), "the transaction coordinator broke its invariants") }
        do throws(DatabaseError) {
            guard thread.isCurrent else { throw .wrongThread(operation: "write") }
        } catch {
            return completion(.failed(error))
        }
        guard !hasUserTransaction else { return completion(.notWritten) }
        flushPending()  // Writes queued before this one commit before it.
        do throws(DatabaseError) {
            guard let count = try commitStream(stream) else {
                streamsLetGo.withLock { $0 += 1 }
                return completion(.notWritten)
            }
            completion(.written(count))
        } catch {
            completion(.failed(error))
        }
    }

    /// Applies `stream`'s parts in one new transaction as they come and commits it (see
    /// `commitNew`). Returns the number of records written; nil, with nothing written, when a
    /// part did not come in time.
    private func commitStream(_ stream: BatchStream) throws(DatabaseError) -> Int? {
        try commitNew(reserving: stream.estimatedGrowth) { transaction, changes throws(DatabaseError) -> Int? in
            var written = 0
            var index = 0
            while true {
                switch stream.part(at: index, patience: Self.streamPatience) {
                case let .put(operation):
                    written += try store.apply(operation, in: transaction, changes: &changes)
                    index += 1
                case .end:
                    return written
                case let .abandoned(error):
                    throw error
                case .late:
                    return nil
                }
            }
        }
    }
}
