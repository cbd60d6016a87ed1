import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// An engine the faces reach only through the seam's existential (`FaceEngine.other`), as a
/// second engine is reached: LMDB's session underneath, every crossing counted by operation.
/// If a face went around the seam, its calls would not be counted (and it could not compile:
/// the faces see nothing of `Session` but `EngineWriter`).
///
/// `readsOnlyThroughTransaction` gives it the shape the seam documents for an engine whose
/// reads wait (a server's): it never reads on the caller's thread.
final class SeamEngine: EngineWriter {
    let inner: Session
    let readsOnlyThroughTransaction: Bool
    let crossings = Locked<[String: Int]>([:])

    init(directory: URL, readsOnlyThroughTransaction: Bool = false) throws(DatabaseError) {
        inner = try Session(directory: directory, configuration: EngineConfiguration())
        self.readsOnlyThroughTransaction = readsOnlyThroughTransaction
    }

    func count(_ name: String) -> Int { crossings.withLock { $0[name, default: 0] } }
    private func cross(_ name: String) { crossings.withLock { $0[name, default: 0] += 1 } }

    var databaseSerial: UInt64 { inner.databaseSerial }
    var maxKeySize: Int { inner.maxKeySize }
    var encryption: StoreEncryption? { inner.encryption }
    func storageStatistics() -> StorageStatistics? { inner.storageStatistics() }
    func readerSlots(clearingStale: Bool) -> (slots: [ReaderSlotInfo], cleared: Int)? { inner.readerSlots(clearingStale: clearingStale) }
    var notifier: ChangeNotifier { inner.notifier }
    var path: String { inner.path }
    var configuration: EngineConfiguration { inner.configuration }
    var busyTimeout: Duration { inner.busyTimeout }
    var transactionActive: Bool { inner.transactionActive }
    var synchronizes: Bool { inner.synchronizes }

    nonisolated(nonsending) func backup(to destination: URL, compact: Bool, progress: BackupListener?) async throws(DatabaseError) {
        cross("backup")
        try await inner.backup(to: destination, compact: compact, progress: progress)
    }
    func backupBlocking(to destination: URL, compact: Bool, progress: BackupListener?) throws(DatabaseError) {
        cross("backupBlocking")
        try inner.backupBlocking(to: destination, compact: compact, progress: progress)
    }

    func readOutsideTransaction<Read: SessionRead>(_ read: Read) throws(DatabaseError) -> Read.Value? {
        cross("readOutsideTransaction")
        return readsOnlyThroughTransaction ? nil : try inner.readOutsideTransaction(read)
    }
    nonisolated(nonsending) func readInTransaction<Read: SessionRead>(_ read: Read) async throws(DatabaseError) -> Read.Value {
        cross("readInTransaction")
        return try await inner.readInTransaction(read)
    }
    func readBlocking<Read: SessionRead>(_ read: Read, _ name: String) throws(DatabaseError) -> Read.Value {
        cross("readBlocking")
        return try inner.readBlocking(read, name)
    }
    func readsSnapshotOnCallersThread() throws(DatabaseError) -> Bool {
        cross("readsSnapshotOnCallersThread")
        return readsOnlyThroughTransaction ? false : try inner.readsSnapshotOnCallersThread()
    }
    func readRecord<Value>(
        _ key: StorageKey, id: String, _ restore: (DecodedRecord?, ClassLookup) throws(DatabaseError) -> Value
    ) throws(DatabaseError) -> Value {
        cross("readRecord")
        return try inner.readRecord(key, id: id, restore)
    }
    func changeToken() throws(DatabaseError) -> LogPosition {
        cross("changeToken")
        return try inner.changeToken()
    }
    func changeFeedBlocking(since token: LogPosition, limit: Int) throws(DatabaseError) -> LoggedCommits {
        cross("changeFeedBlocking")
        return try inner.changeFeedBlocking(since: token, limit: limit)
    }
    nonisolated(nonsending) func changeFeed(since token: LogPosition, limit: Int) async throws(DatabaseError) -> LoggedCommits {
        cross("changeFeed")
        return try await inner.changeFeed(since: token, limit: limit)
    }
    nonisolated(nonsending) func readWithToken<Read: SnapshotRead>(_ read: Read) async throws(DatabaseError) -> (Read.Value, LogPosition) {
        cross("readWithToken")
        return try await inner.readWithToken(read)
    }
    nonisolated(nonsending) func perform(_ operation: WriteOperation) async throws(DatabaseError) -> Int {
        cross("perform")
        return try await inner.perform(operation)
    }
    func performBlocking(_ operation: WriteOperation, _ name: String) throws(DatabaseError) -> Int {
        cross("performBlocking")
        return try inner.performBlocking(operation, name)
    }
    nonisolated(nonsending) func perform(batchOf total: Int, _ produce: BatchProducer) async throws(DatabaseError) -> Int {
        cross("performBatch")
        return try await inner.perform(batchOf: total, produce)
    }
    func performBlocking(batchOf total: Int, _ produce: BatchProducer) throws(DatabaseError) -> Int {
        cross("performBatchBlocking")
        return try inner.performBlocking(batchOf: total, produce)
    }
    nonisolated(nonsending) func begin(override: Bool) async throws(DatabaseError) {
        cross("begin")
        try await inner.begin(override: override)
    }
    func beginBlocking(override: Bool) throws(DatabaseError) {
        cross("beginBlocking")
        try inner.beginBlocking(override: override)
    }
    nonisolated(nonsending) func commit() async throws(DatabaseError) {
        cross("commit")
        try await inner.commit()
    }
    nonisolated(nonsending) func rollback() async throws(DatabaseError) {
        cross("rollback")
        try await inner.rollback()
    }
    func endBlocking(commit: Bool) throws(DatabaseError) {
        cross(commit ? "commitBlocking" : "rollbackBlocking")
        try inner.endBlocking(commit: commit)
    }
    nonisolated(nonsending) func close() async {
        cross("close")
        await inner.close()
    }
    func closeBlocking() {
        cross("closeBlocking")
        inner.closeBlocking()
    }
    func closeWhenDropped() { inner.closeWhenDropped() }
    func knowMigrations(_ names: Set<String>) { inner.knowMigrations(names) }
    nonisolated(nonsending) func migrationState() async throws(DatabaseError) -> MigrationState {
        cross("migrationState")
        return try await inner.migrationState()
    }
    nonisolated(nonsending) func tryLockMigrations() async throws(DatabaseError) -> (any MigrationLease)? {
        cross("tryLockMigrations")
        return try await inner.tryLockMigrations()
    }
}

@Suite("Engine seam")
struct EngineSeamTests {
    @Test func theActorFaceRunsWhollyThroughTheSeam() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SeamEngine(directory: directory)
            let database = LocalDatabase(engine: engine)
            #expect(database.directory.path == engine.inner.path)

            #expect(try await database.write(Record(id: "a", data: Note(text: "first"))))
            let notes = (1...300).map { Record(id: "n\($0)", data: Note(text: "note \($0)")) }
            #expect(try await database.write(contentsOf: notes) == 300)
            let read: Note? = try await database.read(id: "a")
            #expect(read?.text == "first")
            let absent: Note? = try await database.read(id: "nobody")
            #expect(absent == nil)
            let all: [Note] = try await database.read()
            #expect(all.count == 301)
            #expect(try await database.readIDs(Note.self).count == 301)
            #expect(try await database.count() == 301)
            #expect(try await database.count(Note.self) == 301)
            #expect(try await database.verifyIntegrity().isConsistent)
            #expect(engine.count("perform") == 1 && engine.count("performBatch") == 1)
            #expect(engine.count("readsSnapshotOnCallersThread") == 2 && engine.count("readRecord") == 2)
            #expect(engine.count("readOutsideTransaction") == 5)

            // In a transaction, reads go through the engine's transaction: by id too.
            try await database.startTransaction()
            #expect(database.transactionActive)
            #expect(try await database.write(Record(id: "b", data: Note(text: "in the transaction"))))
            let inside: Note? = try await database.read(id: "b")
            #expect(inside?.text == "in the transaction")
            #expect(try await database.count(Note.self) == 302)
            let inTransaction: [Note] = try await database.read()
            #expect(inTransaction.count == 302)
            #expect(try await database.readIDs(Note.self).contains("b"))
            #expect(try await database.verifyIntegrity().recordCount == 302)
            #expect(engine.count("readInTransaction") == 5)
            try await database.rollbackTransaction()
            #expect(!database.transactionActive)
            let rolledBack: Note? = try await database.read(id: "b")
            #expect(rolledBack == nil)
            try await database.startTransaction()
            #expect(try await database.delete(id: "a"))
            try await database.commitTransaction()
            #expect(engine.count("begin") == 2 && engine.count("rollback") == 1 && engine.count("commit") == 1)
            #expect(try await database.delete(Note.self) == 300)
            #expect(try await database.count() == 0)

            // The change feed and observations cross it as well.
            let token = try database.changeToken()
            #expect(try await database.write(Record(id: "c", data: Note(text: "observed"))))
            let feed = try database.changes(since: token)
            #expect(feed.commits.count == 1)
            for try await observed in database.observe(Note.self, id: "c") {
                #expect(observed?.text == "observed")
                break
            }
            for try await all in database.observeAll(Note.self) {
                #expect(all.map(\.text) == ["observed"])
                break
            }
            var commits = database.changes().makeAsyncIterator()
            #expect(try await database.write(Record(id: "d", data: Note(text: "sequenced"))))
            let next = try await commits.next()
            #expect(next?.changes == [.written(id: "d", className: "Note")])
            #expect(engine.count("readWithToken") == 2)
            #expect(engine.count("changeToken") >= 2 && engine.count("changeFeedBlocking") == 1 && engine.count("changeFeed") >= 1)

            await database.close()
            #expect(engine.count("close") == 1)
            await #expect(throws: LocalDatabaseError.self) { _ = try await database.count() }
        }
    }

    @Test func theSynchronousFaceRunsWhollyThroughTheSeam() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SeamEngine(directory: directory)
            let database = SerializationDatabase(engine: engine)
            #expect(database.write(Record(id: "a", data: Note(text: "first"))))
            #expect(database.write(contentsOf: [Record(id: "b", data: Note(text: "second"))]) == 1)
            let read: Note? = database.read(id: "a")
            #expect(read?.text == "first")
            let all: [Note] = database.read()
            #expect(all.map(\.text).sorted() == ["first", "second"])
            #expect(database.count() == 2 && database.count(Note.self) == 2)
            #expect(database.startTransaction())
            #expect(database.delete(id: "a"))
            #expect(database.count() == 1)
            #expect(database.rollbackTransaction())
            #expect(database.count() == 2)
            #expect(database.clearDatabase() == 2)
            #expect(engine.count("performBlocking") == 3 && engine.count("performBatchBlocking") == 1)
            #expect(engine.count("readBlocking") == 6)
            #expect(engine.count("beginBlocking") == 1 && engine.count("rollbackBlocking") == 1)
            database.close()
            #expect(engine.count("closeBlocking") == 1)
        }
    }

    @Test func anEngineThatNeverReadsOnTheCallersThreadServesEveryRead() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SeamEngine(directory: directory, readsOnlyThroughTransaction: true)
            let database = LocalDatabase(engine: engine)
            #expect(try await database.write(contentsOf: (1...3).map { Record(id: "n\($0)", data: Note(text: "\($0)")) }) == 3)
            let one: Note? = try await database.read(id: "n1")
            #expect(one?.text == "1")
            let all: [Note] = try await database.read()
            #expect(all.map(\.text) == ["1", "2", "3"])
            #expect(try await database.count() == 3)
            #expect(try await database.count(Note.self) == 3)
            #expect(try await database.readIDs(Note.self) == ["n1", "n2", "n3"])
            #expect(try await database.verifyIntegrity().isConsistent)
            #expect(engine.count("readRecord") == 0)
            #expect(engine.count("readInTransaction") == 6)
            await database.close()
        }
    }
}
