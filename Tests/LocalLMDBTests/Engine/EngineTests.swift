import CLMDB
import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

@Suite("Engine")
struct EngineTests {
    /// Makes the next rebuild of a transaction on `database`'s engine fail.
    func failNextRebuild(_ database: LocalDatabase) async {
        let engine = database.session.engine
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            engine.thread.submit {
                engine.coordinator.failNextRebuild = .storage(operation: "injected", code: EIO, message: "injected fault")
                continuation.resume()
            }
        }
    }

    @Test func aFailedTransactionStaysFailedUntilRolledBack() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "before", data: Note(text: "committed")))
            try await database.startTransaction()
            try await database.write(Record(id: "inside", data: Note(text: "in the transaction")))
            try await database.write(Record(id: "a", data: ConflictA.Widget(size: 1)))
            // An operation fails in the transaction (a class name conflict), and the transaction
            // cannot be rebuilt without it.
            await failNextRebuild(database)
            await expectError({ if case .transactionFailed = $0 { true } else { false } }) {
                try await database.write(Record(id: "b", data: ConflictB.Widget(color: "red")))
            }
            // Its writes are refused, not committed on their own; so are its reads and commit.
            await expectError({ if case .transactionFailed = $0 { true } else { false } }) {
                try await database.write(Record(id: "after", data: Note(text: "must not be committed")))
            }
            await expectError({ if case .transactionFailed = $0 { true } else { false } }) { _ = try await database.count() }
            await expectError({ if case .transactionFailed = $0 { true } else { false } }) { try await database.commitTransaction() }
            #expect(database.transactionActive)
            try await database.rollbackTransaction()
            #expect(!database.transactionActive)
            #expect(try await database.readIDs(Note.self) == ["before"])
            try await database.write(Record(id: "later", data: Note(text: "a normal write")))
            #expect(try await database.readIDs(Note.self) == ["before", "later"])
        }
    }

    @Test func anOperationThatFailsInATransactionIsUndoneAlone() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(
                directory: directory.appendingPathComponent("db"),
                configuration: DatabaseConfiguration(maximumMapSize: 4 << 20))
            try await database.startTransaction()
            try await database.write(Record(id: "small", data: Note(text: "fits")))
            // Too big for the largest map allowed: that write fails, the transaction goes on.
            await expectError(\.isMapFull) {
                try await database.write(Record(id: "huge", data: Note(text: String(repeating: "h", count: 8 << 20))))
            }
            try await database.write(Record(id: "second", data: Note(text: "fits too")))
            try await database.commitTransaction()
            #expect(try await database.readIDs(Note.self) == ["second", "small"])
            // Outside a transaction, the same: an error, nothing stored, the database usable.
            await expectError(\.isMapFull) {
                try await database.write(Record(id: "huge", data: Note(text: String(repeating: "h", count: 8 << 20))))
            }
            #expect(try await database.count() == 2)
        }
    }

    @Test func closeFinishesWritesRollsBackAndReleasesTheDirectory() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            let database = try LocalDatabase(directory: path)
            let writes = (0..<20).map { index in
                Task { try await database.write(Record(id: "w\(index)", data: Entry(sequence: index, payload: "p"))) }
            }
            try await Task.sleep(for: .milliseconds(20))
            await database.close()
            await database.close()  // again: nothing happens
            var succeeded = 0
            for write in writes {
                do {
                    _ = try await write.value
                    succeeded += 1
                } catch let error as LocalDatabaseError {
                    #expect(error == .closed)
                }
            }
            await expectError({ $0 == .closed }) { _ = try await database.count() }
            await expectError({ $0 == .closed }) { try await database.write(Record(id: "late", data: Note(text: "x"))) }
            // The environment is closed: LMDB may open the directory again in this process.
            var env: OpaquePointer?
            #expect(mdb_env_create(&env) == 0)
            mdb_env_set_maxdbs(env, 8)
            #expect(mdb_env_open(env, path.path, 0, 0o600) == 0)
            mdb_env_close(env)
            let reopened = try LocalDatabase(directory: path)
            #expect(try await reopened.count() == succeeded)
            // A transaction open at close is rolled back.
            try await reopened.startTransaction()
            try await reopened.write(Record(id: "uncommitted", data: Note(text: "x")))
            await reopened.close()
            let third = try LocalDatabase(directory: path)
            #expect(try await third.count(Note.self) == 0)
        }
    }

    @Test func aReadOnlyOpenReadsWhileAnotherProcessHoldsTheWriteLock() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            #expect(try runHelper(["write-count", path.path, "r", "5"]).lines == ["done"])
            let (holder, output) = try launchHelper(["hold-writer", path.path])
            defer {
                holder.send(SIGKILL)
                holder.waitUntilExit()
            }
            #expect(String(decoding: output.readSome(), as: UTF8.self) == "holding\n")
            let readOnly = try LocalDatabase(directory: path, configuration: DatabaseConfiguration(readOnly: true))
            #expect(try await readOnly.count(Entry.self) == 5)
            let entries: [Entry] = try await readOnly.read()
            #expect(entries.count == 5)
            await expectError({ $0 == .readOnly }) { try await readOnly.write(Record(id: "x", data: Note(text: "x"))) }
            await expectError({ $0 == .readOnly }) { try await readOnly.startTransaction() }
            // A writable open in this process meanwhile is refused: one environment, one mode.
            #expect(throws: LocalDatabaseError.self) { try LocalDatabase(directory: path) }
            await readOnly.close()
        }
    }

    @Test func aReadOnlyOpenOfNothingIsAnError() throws {
        #expect(throws: LocalDatabaseError.self) {
            try LocalDatabase(directory: URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)"), configuration: DatabaseConfiguration(readOnly: true))
        }
    }

    @Test func idsOfRecordsWithCorruptHeadersAreErrorsNotSkipped() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            let longID = String(repeating: "long-", count: 150)  // stored under a digest
            let database = try LocalDatabase(directory: path)
            try await database.write(Record(id: longID, data: Note(text: "x")))
            try await database.write(Record(id: "short", data: Note(text: "y")))
            await database.close()
            // Corrupt the long record's header with raw LMDB, as a disk fault might.
            rawPut(path, "records", [(StorageKey(longID, maxKeySize: 511).bytes, [9, 9, 9])])

            let reopened = try LocalDatabase(directory: path)
            let isCorrupt: (LocalDatabaseError) -> Bool = { if case .corruptRecord = $0 { true } else { false } }
            await expectError(isCorrupt) { _ = try await reopened.readIDs(Note.self) }
            await expectError(isCorrupt) { let _: [Note] = try await reopened.read() }
            let short: Note? = try await reopened.read(id: "short")
            #expect(short?.text == "y")
        }
    }
}

extension LocalDatabaseError {
    var isMapFull: Bool {
        if case let .storage(_, code, _) = self { return code == MDB_MAP_FULL }
        return false
    }
}
