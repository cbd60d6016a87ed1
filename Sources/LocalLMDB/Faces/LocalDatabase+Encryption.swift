import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine

extension LocalDatabase {
    /// Seals every record not yet sealed under the current key (`DatabaseEncryption`'s
    /// `currentKeyID`) afresh under it: key rotation, or the encryption of a database that was
    /// not encrypted (opened with `encryptingExistingValues`). Online: each batch of
    /// `batchSize` records is one write transaction, and other writes and every read go on
    /// between them. Once it has visited as many records as there were when it began, one last
    /// write transaction walks every record, seals any value still not under the current key
    /// (written meanwhile under an older key by another process), and makes the database forget
    /// the older keys (from then on it opens with the current key alone) and accept no
    /// unencrypted value.
    ///
    /// Crash-safe: until it finishes, the database keeps accepting every key it was sealed
    /// under, so a process killed half-way leaves every record readable with the keys it had;
    /// call this again to go on (records already under the current key are only read).
    /// Cancelling the task stops it between batches, with the same guarantee.
    ///
    /// Rotate when every process that writes the database uses the new key: a process still
    /// sealing under a retired key has its writes refused (`encryptionFailed`).
    /// - Parameters:
    ///   - batchSize: Records visited per transaction (at least 1).
    ///   - progress: Called after each batch, on the calling task.
    /// - Returns: How many records were sealed afresh.
    /// - Throws: `encryptionRequired` when the database is not encrypted;
    ///   `transactionAlreadyActive` inside this database's transaction (a transaction would hold
    ///   every batch until it commits); `undecryptableRecord` for a value that does not open
    ///   (nothing of that batch is written, and nothing unreadable is ever sealed), or
    ///   `corruptRecord` for a damaged one; `CancellationError`.
    @discardableResult
    public nonisolated(nonsending) func reencrypt(
        batchSize: Int = 1000, progress: ((ReencryptionProgress) -> Void)? = nil
    ) async throws -> Int {
        guard engine.encryption != nil else { throw LocalDatabaseError.encryptionRequired(path: engine.path) }
        guard !engine.transactionActive else { throw LocalDatabaseError.transactionAlreadyActive }
        let total = try await count()
        var resealed = 0
        var after: [UInt8]?
        var visited = 0
        // One pass, as long as the database was when it began: records written meanwhile are
        // sealed under the current key, or sealed by the last step below, so a writer that keeps
        // adding records after the pass's position cannot keep it going.
        repeat {
            try Task.checkCancellation()
            let mark = ResealMark()
            resealed += try await performPublishing(.reseal(after: after, limit: max(1, batchSize), reached: mark))
            after = mark.reached
            visited += mark.visited
            progress?(ReencryptionProgress(recordsVisited: visited, recordsReencrypted: resealed, recordCount: total))
        } while after != nil && visited < total
        try Task.checkCancellation()
        return resealed + (try await performPublishing(.finishResealing))
    }

    /// `engine.perform`, its error made public.
    private nonisolated(nonsending) func performPublishing(_ operation: WriteOperation) async throws -> Int {
        do throws(DatabaseError) {
            return try await engine.perform(operation)
        } catch { throw LocalDatabaseError(error) }
    }

    /// What the database's encryption entry says: the keys its values may be sealed under,
    /// and whether some may be unencrypted; nil for an unencrypted database.
    public nonisolated(nonsending) func encryptionState() async throws -> EncryptionState? {
        do throws(DatabaseError) {
            return try await engine.read(ReadEncryptionState())
        } catch { throw LocalDatabaseError(error) }
    }
}

/// The database's encryption entry.
struct ReadEncryptionState: PlainRead {
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> EncryptionState? {
        try snapshot.encryptionKeys().map { EncryptionState(keyIDs: $0.keyIDs, mayHoldUnencryptedValues: $0.acceptsUnencryptedValues) }
    }
}
