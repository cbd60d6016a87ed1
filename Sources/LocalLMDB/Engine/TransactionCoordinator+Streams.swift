/// Batches written while their callers still encode them (`BatchStream`).
extension TransactionCoordinator {
    /// How long the writer waits for a batch's next part before it lets go of the batch (and
    /// writes it whole once its caller has finished): far longer than encoding a part takes.
    static let streamPatience = Duration.milliseconds(250)

    /// Writes `stream` in a transaction of its own, applying its parts as they come, after the
    /// writes already pending; `completion` runs once it is durable (or failed). When a
    /// transaction is open, or the caller is slow to send a part, the batch is written whole,
    /// as one ordinary write, once its caller has finished.
    func performStream(_ stream: BatchStream, owner: Owner, busyTimeout: Duration, completion: @escaping Completion) {
        do throws(LocalDatabaseError) {
            guard thread.isCurrent else { throw .wrongThread(operation: "write") }
        } catch {
            return completion(.failure(error))
        }
        guard !hasUserTransaction else {
            return writeWhole(stream, owner: owner, busyTimeout: busyTimeout, completion: completion)
        }
        flush()  // Writes queued before this one commit before it.
        do throws(LocalDatabaseError) {
            guard let count = try commitStream(stream) else {
                return writeWhole(stream, owner: owner, busyTimeout: busyTimeout, completion: completion)
            }
            completion(.success(count))
        } catch {
            completion(.failure(error))
        }
    }

    /// Once `stream` is complete: writes it as one put (`perform`), or reports why it was
    /// abandoned.
    private func writeWhole(_ stream: BatchStream, owner: Owner, busyTimeout: Duration, completion: @escaping Completion) {
        stream.whenComplete { [self] in
            thread.submit { [self] in
                switch stream.merged() {
                case let .failure(error): completion(.failure(error))
                case .success(nil): completion(.success(0))
                case let .success(operation?): perform(operation, owner: owner, busyTimeout: busyTimeout, completion: completion)
                }
            }
        }
    }

    /// Applies `stream`'s parts in one new transaction as they come and commits it (see
    /// `commitNew`). Returns the number of records written; nil, with nothing written, when a
    /// part did not come in time.
    private func commitStream(_ stream: BatchStream) throws(LocalDatabaseError) -> Int? {
        try commitNew(reserving: stream.estimatedGrowth) { transaction, changes throws(LocalDatabaseError) -> Int? in
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
