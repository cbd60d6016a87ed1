import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine

/// The engine under a face, which the face reaches only through the seam (`EngineWriter`):
/// LMDB's `Session`, or any other engine (the PostgreSQL one).
///
/// An enum rather than an existential: LMDB's generic reads and writes stay specialized for each
/// model type (through an existential they would run unspecialized, a cost the hot paths
/// measure), and another engine is called through its protocol witness. Each operation below
/// forwards to the seam's operation of the same name (`read` is `EngineReader`'s extension);
/// the rare ones go through `writer`, the existential, for either case.
enum FaceEngine: Sendable {
    case lmdb(Session)
    case other(any EngineWriter)

    /// The engine as the seam's existential: for the rare calls that need no specialization.
    var writer: any EngineWriter {
        switch self {
        case let .lmdb(session): session
        case let .other(engine): engine
        }
    }

    // MARK: Facts

    var maxKeySize: Int {
        switch self {
        case let .lmdb(session): session.maxKeySize
        case let .other(engine): engine.maxKeySize
        }
    }

    var transactionActive: Bool { writer.transactionActive }
    var synchronizes: Bool { writer.synchronizes }
    var databaseSerial: UInt64 { writer.databaseSerial }
    var busyTimeout: Duration { writer.busyTimeout }
    var path: String { writer.path }
    var configuration: EngineConfiguration { writer.configuration }
    var notifier: ChangeNotifier { writer.notifier }
    var encryption: StoreEncryption? { writer.encryption }

    // MARK: Reading

    /// Shows this process's readers a commit a dead writer of another process left unpublished
    /// (`Session.publishCommits`); a server engine's readers always see the last commit.
    nonisolated(nonsending) func publishCommits() async throws(DatabaseError) {
        if case let .lmdb(session) = self { try await session.publishCommits() }
    }

    @inline(__always)
    nonisolated(nonsending) func read<Read: SessionRead>(_ read: Read) async throws(DatabaseError) -> Read.Value {
        switch self {
        case let .lmdb(session): try await session.read(read)
        case let .other(engine): try await engine.read(read)
        }
    }

    @inline(__always)
    func readsSnapshotOnCallersThread() throws(DatabaseError) -> Bool {
        switch self {
        case let .lmdb(session): try session.readsSnapshotOnCallersThread()
        case let .other(engine): try engine.readsSnapshotOnCallersThread()
        }
    }

    @inline(__always)
    func readRecord<Value>(
        _ key: StorageKey, id: String, _ restore: (DecodedRecord?, ClassLookup) throws(DatabaseError) -> Value
    ) throws(DatabaseError) -> Value {
        switch self {
        case let .lmdb(session): try session.readRecord(key, id: id, restore)
        case let .other(engine): try engine.readRecord(key, id: id, restore)
        }
    }

    nonisolated(nonsending) func readInTransaction<Read: SessionRead>(_ read: Read) async throws(DatabaseError) -> Read.Value {
        switch self {
        case let .lmdb(session): try await session.readInTransaction(read)
        case let .other(engine): try await engine.readInTransaction(read)
        }
    }

    func readBlocking<Read: SessionRead>(_ read: Read, _ name: String) throws(DatabaseError) -> Read.Value {
        switch self {
        case let .lmdb(session): try session.readBlocking(read, name)
        case let .other(engine): try engine.readBlocking(read, name)
        }
    }

    nonisolated(nonsending) func readWithToken<Read: SnapshotRead>(_ read: Read) async throws(DatabaseError) -> (Read.Value, LogPosition) {
        switch self {
        case let .lmdb(session): try await session.readWithToken(read)
        case let .other(engine): try await engine.readWithToken(read)
        }
    }

    func changeToken() throws(DatabaseError) -> LogPosition { try writer.changeToken() }

    func changeFeedBlocking(since token: LogPosition, limit: Int = .max) throws(DatabaseError) -> LoggedCommits {
        try writer.changeFeedBlocking(since: token, limit: limit)
    }

    nonisolated(nonsending) func changeFeed(since token: LogPosition, limit: Int = .max) async throws(DatabaseError) -> LoggedCommits {
        try await writer.changeFeed(since: token, limit: limit)
    }

    // MARK: Writing

    nonisolated(nonsending) func perform(_ operation: WriteOperation) async throws(DatabaseError) -> Int {
        switch self {
        case let .lmdb(session): try await session.perform(operation)
        case let .other(engine): try await engine.perform(operation)
        }
    }

    func performBlocking(_ operation: WriteOperation, _ name: String) throws(DatabaseError) -> Int {
        switch self {
        case let .lmdb(session): try session.performBlocking(operation, name)
        case let .other(engine): try engine.performBlocking(operation, name)
        }
    }

    nonisolated(nonsending) func perform(batchOf total: Int, _ produce: BatchProducer) async throws(DatabaseError) -> Int {
        switch self {
        case let .lmdb(session): try await session.perform(batchOf: total, produce)
        case let .other(engine): try await engine.perform(batchOf: total, produce)
        }
    }

    func performBlocking(batchOf total: Int, _ produce: BatchProducer) throws(DatabaseError) -> Int {
        switch self {
        case let .lmdb(session): try session.performBlocking(batchOf: total, produce)
        case let .other(engine): try engine.performBlocking(batchOf: total, produce)
        }
    }

    // MARK: Transactions and closing (not hot: through the existential)

    nonisolated(nonsending) func begin(override: Bool) async throws(DatabaseError) { try await writer.begin(override: override) }
    func beginBlocking(override: Bool) throws(DatabaseError) { try writer.beginBlocking(override: override) }
    nonisolated(nonsending) func commit() async throws(DatabaseError) { try await writer.commit() }
    nonisolated(nonsending) func rollback() async throws(DatabaseError) { try await writer.rollback() }
    func endBlocking(commit: Bool) throws(DatabaseError) { try writer.endBlocking(commit: commit) }
    nonisolated(nonsending) func close() async { await writer.close() }
    func closeBlocking() { writer.closeBlocking() }
    func closeWhenDropped() { writer.closeWhenDropped() }
}
