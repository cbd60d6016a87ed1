import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

extension LocalDatabase {
    /// True while this database has a transaction open (also one that failed and awaits its
    /// rollback). Readable without `await`.
    public nonisolated var transactionActive: Bool {
        engine.transactionActive
    }

    /// Begins a transaction.
    ///
    /// Changes made during it are visible to this database's reads at once, and become durable
    /// together on `commitTransaction()`, or are all undone by `rollbackTransaction()`. The
    /// transaction may span any number of awaits and tasks. While it is open, writes through
    /// other databases on the same directory wait for it to end, and `startTransaction` on
    /// them waits too, each for at most its database's `busyTimeout`.
    ///
    /// Records written one by one in a transaction are acknowledged at once and applied
    /// together before the next operation that needs them (see <doc:ConcurrencyAndTransactions>):
    /// if one cannot be applied, the transaction fails, at the latest at its commit.
    ///
    /// An operation that fails inside the transaction is undone alone; the rest of the
    /// transaction is intact. If the transaction itself cannot go on, it *fails*: its writes,
    /// reads and commit throw `LocalDatabaseError.transactionFailed` until it is rolled back.
    /// - Parameter override: When a transaction of this database is already open, roll it back
    ///   and begin anew (`true`, the default), or throw and leave it intact (`false`).
    /// - Throws: `LocalDatabaseError.transactionAlreadyActive` when `override` is false and a
    ///   transaction is open; `.busy` when another database's transaction stays open longer
    ///   than `busyTimeout`; `.readOnly`, `.closed`, `.storage`.
    public nonisolated(nonsending) func startTransaction(override: Bool = true) async throws {
        do throws(DatabaseError) {
            try await engine.begin(override: override)
        } catch { throw LocalDatabaseError(error) }
    }

    /// Commits the open transaction: all its changes become durable together.
    /// - Throws: `LocalDatabaseError.noActiveTransaction` when none is open;
    ///   `.transactionFailed` when it failed (roll it back); `.storage` if the commit fails, in
    ///   which case none of the transaction's changes are kept and it is over.
    public nonisolated(nonsending) func commitTransaction() async throws {
        do throws(DatabaseError) {
            try await engine.commit()
        } catch { throw LocalDatabaseError(error) }
    }

    /// Rolls back the open transaction: all its changes are undone.
    /// - Throws: `LocalDatabaseError.noActiveTransaction` when none is open.
    public nonisolated(nonsending) func rollbackTransaction() async throws {
        do throws(DatabaseError) {
            try await engine.rollback()
        } catch { throw LocalDatabaseError(error) }
    }
}
