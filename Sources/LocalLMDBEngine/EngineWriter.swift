import LocalLMDBLMDB
import LocalLMDBStore

/// The engine seam, its writing half: writes, transactions and closing, each with an
/// asynchronous entry point for `LocalDatabase` and a blocking one for `SerializationDatabase`.
/// GRDB's `DatabaseWriter` is the model; the faces hold their engine as an `EngineWriter` and
/// ask nothing else of it.
///
/// Writes cross the seam as `WriteOperation`s (bytes already encoded in the caller's isolation),
/// so an engine never sees a model.
package protocol EngineWriter: EngineReader {
    /// The directory (or, for a server, the address) the database lives in.
    var path: String { get }
    /// The configuration the engine was opened with.
    var configuration: EngineConfiguration { get }
    /// How long a write or `begin` waits for another session's transaction.
    var busyTimeout: Duration { get }
    /// Whether this session has a transaction open, as of its last begin, commit or rollback.
    var transactionActive: Bool { get }
    /// Whether the database synchronizes with a server, as far as this process knows: the faces
    /// then send, with each model's records, the members the model reads (`KnownMembers`).
    var synchronizes: Bool { get }

    /// Applies `operation`, durably when no transaction is open; returns the records it wrote or deleted.
    nonisolated(nonsending) func perform(_ operation: WriteOperation) async throws(DatabaseError) -> Int
    /// `perform`, blocking the calling thread; `name` is the calling method's, for errors.
    func performBlocking(_ operation: WriteOperation, _ name: String) throws(DatabaseError) -> Int

    /// Writes a batch of `total` records that `produce` encodes, in parts the engine asks for
    /// (so a large batch is never held whole); one commit, or nothing when `produce` throws.
    nonisolated(nonsending) func perform(batchOf total: Int, _ produce: BatchProducer) async throws(DatabaseError) -> Int
    /// `perform(batchOf:_:)`, blocking the calling thread.
    func performBlocking(batchOf total: Int, _ produce: BatchProducer) throws(DatabaseError) -> Int

    /// Begins this session's transaction; with `override`, rolls back one already open first.
    nonisolated(nonsending) func begin(override: Bool) async throws(DatabaseError)
    /// `begin`, blocking the calling thread.
    func beginBlocking(override: Bool) throws(DatabaseError)
    /// Commits this session's transaction, durably.
    nonisolated(nonsending) func commit() async throws(DatabaseError)
    /// Rolls this session's transaction back.
    nonisolated(nonsending) func rollback() async throws(DatabaseError)
    /// `commit` (or, when not `commit`, `rollback`), blocking the calling thread.
    func endBlocking(commit: Bool) throws(DatabaseError)

    // MARK: Migrations (`MigrationState`)

    /// Tells the engine the migrations this process's migrator registers: from then on its
    /// writes go into a database whose recorded migrations are exactly these
    /// (`MigrationCatalog.checkWrite`).
    func knowMigrations(_ names: Set<String>)
    /// The database's migration state, as last committed.
    nonisolated(nonsending) func migrationState() async throws(DatabaseError) -> MigrationState
    /// The right to run the database's migrations, when no migrator holds it (in any process);
    /// nil when one does. Answers at once: the caller waits, with its bound, between tries.
    nonisolated(nonsending) func tryLockMigrations() async throws(DatabaseError) -> (any MigrationLease)?

    /// Closes the session: later calls fail with `closed`; writes already submitted are
    /// committed first and an open transaction is rolled back. Idempotent.
    nonisolated(nonsending) func close() async
    /// `close`, blocking the calling thread.
    func closeBlocking()
    /// For a face deinitialized without `close()`: the same, without waiting.
    func closeWhenDropped()
}
