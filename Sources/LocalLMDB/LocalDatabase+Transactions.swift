extension LocalDatabase {
    /// True while this database has a transaction open.
    public var transactionActive: Bool {
        engine.writer.hasTransaction(owner: owner)
    }

    /// Begins a transaction.
    ///
    /// Changes made during it are visible to this database's reads at once, and become durable
    /// together on `commitTransaction()`, or are all undone by `rollbackTransaction()`. The
    /// transaction may span any number of awaits and tasks. While it is open, writes through
    /// other `LocalDatabase` values on the same directory wait for it to end, and
    /// `startTransaction` on them waits too, each for at most its database's `busyTimeout`.
    /// - Parameter override: When a transaction of this database is already open, roll it back
    ///   and begin anew (`true`, the default), or throw and leave it intact (`false`).
    /// - Throws: `LocalDatabaseError.transactionAlreadyActive` when `override` is false and a
    ///   transaction is open; `.busy` when another database's transaction stays open longer
    ///   than `busyTimeout`; `.storage` if LMDB fails.
    public func startTransaction(override: Bool = true) async throws {
        defer { updateTransactionFlag() }
        try await withCheckedThrowingContinuation { continuation in
            engine.writer.begin(owner: owner, override: override, busyTimeout: busyTimeout, continuation: continuation)
        }
    }

    /// Commits the open transaction: all its changes become durable together.
    /// - Throws: `LocalDatabaseError.noActiveTransaction` when none is open; `.storage` if the
    ///   commit fails, in which case none of the transaction's changes are kept.
    public func commitTransaction() async throws {
        defer { updateTransactionFlag() }
        try engine.writer.commit(owner: owner)
    }

    /// Rolls back the open transaction: all its changes are undone.
    /// - Throws: `LocalDatabaseError.noActiveTransaction` when none is open.
    public func rollbackTransaction() async throws {
        defer { updateTransactionFlag() }
        try engine.writer.rollback(owner: owner)
    }
}
