import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

// Group commit: the writes of many callers, applied and committed in one write transaction.
extension TransactionCoordinator {
    /// Applies `operation` in `owner`'s open transaction, or else queues it for the next group
    /// commit. `completion` runs on this thread once the result is known (for a group commit,
    /// once the commit is durable). A write that waits for another owner's transaction fails
    /// with `busy` after `busyTimeout`.
    func perform(_ operation: WriteOperation, owner: Owner, busyTimeout: Duration, completion: @escaping Completion) {
        defer { assert(invariantsHold(), "the transaction coordinator broke its invariants") }
        do throws(DatabaseError) {
            if let result = try applyInTransaction(operation, owner: owner) {
                return completion(.success(result))
            }
        } catch {
            return completion(.failure(error))
        }
        guard user == nil else {
            // Another owner's transaction is open: wait for it, for a bounded time.
            pending.append(PendingWrite(operation: operation, completion: completion, waiter: nextWaiter(busyTimeout)))
            return
        }
        pending.append(PendingWrite(operation: operation, completion: completion))
        if pending.count >= lastGroupSize {
            // The group is complete: commit behind the jobs already queued (their writes join it).
            thread.submit { [self] in flush() }
        } else if !delayedFlushScheduled {
            // Wait a moment for the writers of the last group to come back.
            delayedFlushScheduled = true
            let scheduledAfter = flushCount
            thread.submit(after: Self.groupWait) { [self] in
                guard flushCount == scheduledAfter else { return }
                delayedFlushScheduled = false
                flush()
            }
        }
    }

    /// Commits every pending write in one transaction (each alone if the group fails).
    func flush() {
        defer { assert(invariantsHold(), "the transaction coordinator broke its invariants") }
        flushPending()
    }

    /// `flush`, inside another step.
    func flushPending() {
        guard user == nil, !pending.isEmpty else { return }
        let batch = pending
        pending.removeAll()
        flushCount += 1
        delayedFlushScheduled = false
        lastGroupSize = max(batch.count, lastGroupSize - 1)
        do throws(DatabaseError) {
            let results = try commitTransaction(batch.map(\.operation))
            for (write, result) in zip(batch, results) { write.completion(.success(result)) }
        } catch {
            guard batch.count > 1 else { return batch[0].completion(.failure(error)) }
            // One write may have spoiled the group: commit each alone, so only it fails.
            for write in batch {
                write.completion(Result { () throws(DatabaseError) in try commitTransaction([write.operation])[0] })
            }
        }
    }

    /// Applies `operations` in one new transaction and commits it, growing the map as needed.
    private func commitTransaction(_ operations: [WriteOperation]) throws(DatabaseError) -> [Int] {
        let results = try commitNew(reserving: operations.reduce(0) { $0 + $1.estimatedGrowth }) { transaction, changes throws(DatabaseError) in
            try operations.map { operation throws(DatabaseError) in try store.apply(operation, in: transaction, changes: &changes) }
        }
        return results ?? []  // Never nil: applying operations never gives up.
    }

    /// Runs `apply` in a new transaction and commits it with the change log's entry for what
    /// it changed, after reserving map space for `bytes`. When the map fills, grows it and runs
    /// `apply` again in a new transaction. Returns what `apply` returned; nil, with nothing
    /// written, when `apply` gives up (returns nil).
    func commitNew<R>(
        reserving bytes: Int, _ apply: (Transaction, inout ChangeSet) throws(DatabaseError) -> R?
    ) throws(DatabaseError) -> R? {
        try checkThread("commit")
        // Failing to grow here only means growing later, as the map fills.
        try? environment.reserve(bytes: bytes)
        return try retryingWhenTheMapFills { () throws(DatabaseError) -> R? in
            let write = try environment.beginWrite()
            var changes = ChangeSet()
            let result: R
            let logged: UInt64?
            do throws(DatabaseError) {
                guard let applied = try apply(write.transaction, &changes) else {
                    write.abort()
                    return nil
                }
                result = applied
                logged = try store.logChanges(changes, in: write.transaction)
            } catch {
                write.abort()
                throw error
            }
            try write.commit()
            if let logged { didCommit?(logged) }
            return result
        }
    }
}
