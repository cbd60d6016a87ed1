import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// Records written in a transaction are acknowledged at once and applied on the writer thread
/// together (`WriteBuffer`): what the transaction must still guarantee.
@Suite("Writes buffered in a transaction")
struct TransactionBufferTests {
    @Test func readsInTheTransactionSeeEveryWriteAtOnce() async throws {
        try await withDatabase { database, _ in
            try await database.startTransaction()
            for index in 0..<50 {
                try await database.write(Record(id: "e\(index)", data: Entry(sequence: index, payload: "p")))
                let entry: Entry? = try await database.read(id: "e\(index)")
                #expect(entry?.sequence == index)
                #expect(try await database.count(Entry.self) == index + 1)
            }
            let all: [Entry] = try await database.read()
            #expect(all.count == 50)
            #expect(try await database.readIDs(Entry.self).count == 50)
            try await database.commitTransaction()
            #expect(try await database.count() == 50)
        }
    }

    @Test func theOrderOfOperationsIsKept() async throws {
        try await withDatabase { database, _ in
            try await database.startTransaction()
            try await database.write(Record(id: "a", data: Note(text: "first")))
            try await database.write(Record(id: "a", data: Note(text: "second")))
            #expect(try await database.delete(id: "a"))
            try await database.write(Record(id: "a", data: Note(text: "third")))
            try await database.write(Record(id: "b", data: Note(text: "gone")))
            #expect(try await database.clearDatabase() == 2)
            try await database.write(Record(id: "c", data: Note(text: "last")))
            try await database.write(Record(id: "c", data: Note(text: "really last")))
            try await database.commitTransaction()
            #expect(try await database.readIDs(Note.self) == ["c"])
            let note: Note? = try await database.read(id: "c")
            #expect(note?.text == "really last")
        }
    }

    @Test func rollbackCloseAndOverrideDropBufferedWrites() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            let database = try LocalDatabase(directory: path)
            try await database.write(Record(id: "kept", data: Note(text: "committed")))
            try await database.startTransaction()
            for index in 0..<10 { try await database.write(Record(id: "r\(index)", data: Note(text: "rolled back"))) }
            try await database.rollbackTransaction()
            #expect(try await database.readIDs(Note.self) == ["kept"])

            try await database.startTransaction()
            for index in 0..<10 { try await database.write(Record(id: "o\(index)", data: Note(text: "overridden"))) }
            try await database.startTransaction(override: true)
            try await database.write(Record(id: "new", data: Note(text: "in the new transaction")))
            try await database.commitTransaction()
            #expect(try await database.readIDs(Note.self) == ["kept", "new"])

            try await database.startTransaction()
            for index in 0..<10 { try await database.write(Record(id: "c\(index)", data: Note(text: "closed"))) }
            await database.close()
            let reopened = try LocalDatabase(directory: path)
            #expect(try await reopened.readIDs(Note.self) == ["kept", "new"])
        }
    }

    @Test func aClassConflictIsTheConflictingWritesOwnErrorEvenAfterBufferedWrites() async throws {
        try await withDatabase { database, _ in
            try await database.startTransaction()
            try await database.write(Record(id: "a", data: ConflictA.Widget(size: 1)))
            try await database.write(Record(id: "a2", data: ConflictA.Widget(size: 2)))  // buffered: its class is claimed
            await expectError(\.isClassNameConflict) { try await database.write(Record(id: "b", data: ConflictB.Widget(color: "red"))) }
            try await database.write(Record(id: "a3", data: ConflictA.Widget(size: 3)))
            try await database.commitTransaction()
            #expect(try await database.readIDs(ConflictA.Widget.self) == ["a", "a2", "a3"])
        }
    }

    /// A buffered write was acknowledged, so when it cannot be applied (here: the map is at its
    /// largest), its caller cannot be told: the transaction fails, at the latest at its commit,
    /// and nothing of it is kept.
    @Test func aBufferedWriteThatCannotBeAppliedFailsTheWholeTransaction() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(
                directory: directory.appendingPathComponent("db"),
                configuration: DatabaseConfiguration(maximumMapSize: 4 << 20))
            try await database.write(Record(id: "before", data: Note(text: "committed")))
            try await database.startTransaction()
            var failure: LocalDatabaseError?
            do {
                for index in 0..<80 {
                    try await database.write(Record(id: "big\(index)", data: Note(text: String(repeating: "x", count: 100_000))))
                }
                try await database.commitTransaction()
            } catch {
                failure = error as? LocalDatabaseError
            }
            guard case .transactionFailed? = failure else {
                Issue.record("expected transactionFailed, got \(String(describing: failure))")
                return
            }
            #expect(database.transactionActive)
            await expectError({ if case .transactionFailed = $0 { true } else { false } }) { try await database.commitTransaction() }
            try await database.rollbackTransaction()
            #expect(try await database.readIDs(Note.self) == ["before"])
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    /// Only single records are buffered: a batch in a transaction is applied at once, so one
    /// that cannot be stored fails alone, and the transaction goes on.
    @Test func aBatchInATransactionFailsAloneRatherThanFailingTheTransaction() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(
                directory: directory.appendingPathComponent("db"),
                configuration: DatabaseConfiguration(maximumMapSize: 4 << 20))
            try await database.startTransaction()
            try await database.write(Record(id: "small", data: Note(text: "fits")))  // claims Note
            await expectError(\.isMapFull) {
                try await database.write(contentsOf: [Record(id: "huge", data: Note(text: String(repeating: "h", count: 8 << 20)))])
            }
            try await database.write(Record(id: "second", data: Note(text: "fits too")))
            try await database.commitTransaction()
            #expect(try await database.readIDs(Note.self) == ["second", "small"])
        }
    }

    /// A transaction begun while its database closes must not outlive it: begin fails with
    /// `closed`, or its transaction is rolled back by the close. Either way the directory stays
    /// usable (an orphaned write transaction would make every later write wait for ever).
    @Test func aBeginRacingCloseLeavesNoTransactionBehind() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            for _ in 0..<100 {
                let database = try LocalDatabase(directory: path)
                async let begun: Void = database.startTransaction()
                await database.close()
                _ = try? await begun
            }
            let after = try LocalDatabase(directory: path, busyTimeout: .seconds(5))
            try await withTimeout(seconds: 20) {
                try await after.write(Record(id: "after", data: Note(text: "the directory is free")))
            }
            #expect(try await after.count() == 1)
        }
    }

    @Test func manyTasksWritingInOneTransactionAreAllCommitted() async throws {
        try await withDatabase { database, _ in
            try await database.startTransaction()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        for index in 0..<500 {
                            try await database.write(Record(id: "t\(task)-\(index)", data: Entry(sequence: index, payload: "p")))
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await database.count() == 4000)
            try await database.commitTransaction()
            #expect(try await database.count(Entry.self) == 4000)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func theSynchronousFaceBuffersToo() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory.appendingPathComponent("db"))
            #expect(database.startTransaction())
            for index in 0..<5000 { #expect(database.write(Record(id: "s\(index)", data: Entry(sequence: index, payload: "p")))) }
            #expect(database.count() == 5000)
            #expect(database.rollbackTransaction())
            #expect(database.count() == 0)
            #expect(database.startTransaction())
            for index in 0..<5000 { database.write(Record(id: "s\(index)", data: Entry(sequence: index, payload: "p"))) }
            #expect(database.commitTransaction())
            #expect(database.count() == 5000)
        }
    }
}
