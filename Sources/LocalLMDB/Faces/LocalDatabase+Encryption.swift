import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine

extension LocalDatabase {
    /// Seals every record not yet sealed under the current key (`DatabaseEncryption`'s
    /// `currentKeyID`) afresh under it: key rotation, or the encryption of a database that was
    /// not encrypted (opened with `encryptingExistingValues`). Online: each batch of
    /// `batchSize` records is one write transaction, and other writes and every read go on
    /// between them. When every value is under the current key, the database forgets the
    /// older keys (from then on it opens with the current key alone) and accepts no
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
    ///   (nothing of that batch is written); `CancellationError`.
    @discardableResult
    public nonisolated(nonsending) func reencrypt(
        batchSize: Int = 1000, progress: ((ReencryptionProgress) -> Void)? = nil
    ) async throws -> Int {
        guard engine.encryption != nil else { throw LocalDatabaseError.encryptionRequired(path: engine.path) }
        guard !engine.transactionActive else { throw LocalDatabaseError.transactionAlreadyActive }
        let total = try await count()
        var resealed = 0
        // Values sealed under an older key by another process meanwhile send it round again.
        for _ in 0..<3 {
            var after: [UInt8]?
            var visited = 0
            repeat {
                try Task.checkCancellation()
                let mark = ResealMark()
                resealed += try await performPublishing(.reseal(after: after, limit: max(1, batchSize), reached: mark))
                after = mark.reached
                visited += mark.visited
                progress?(ReencryptionProgress(recordsVisited: visited, recordsReencrypted: resealed, recordCount: total))
            } while after != nil
            if try await performPublishing(.finishResealing) == 0 { return resealed }
        }
        throw LocalDatabaseError.encryptionFailed(
            id: "", reason: "values kept being sealed under an older key while re-encrypting: another process still writes with it")
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
