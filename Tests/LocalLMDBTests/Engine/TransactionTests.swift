import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

@Suite("Transactions")
struct TransactionTests {
    @Test func changesAreVisibleAtOnceAndCommitKeepsThem() async throws {
        try await withDatabase { database, _ in
            #expect(database.transactionActive == false)
            try await database.startTransaction()
            #expect(database.transactionActive)
            let first = try await database.write(Record(id: "a", data: Note(text: "1")))
            let second = try await database.write(Record(id: "b", data: Note(text: "2")))
            #expect(first && second)
            let inside: Note? = try await database.read(id: "a")
            #expect(inside?.text == "1")
            #expect(try await database.count() == 2)
            #expect(try await database.count(Note.self) == 2)
            try await database.commitTransaction()
            #expect(database.transactionActive == false)
            #expect(try await database.count(Note.self) == 2)
        }
    }

    @Test func rollbackUndoesEveryKindOfChange() async throws {
        try await withDatabase { database, _ in
            for index in 0..<10 { try await database.write(Record(id: "n\(index)", data: Note(text: "\(index)"))) }
            for index in 0..<4 { try await database.write(Record(id: "p\(index)", data: Person(firstName: "\(index)", lastName: ""))) }
            let before = try await database.verifyIntegrity()

            try await database.startTransaction()
            try await database.write(Record(id: "new", data: Note(text: "new")))
            try await database.write(Record(id: "n0", data: Note(text: "changed")))
            #expect(try await database.delete(id: "n1"))
            #expect(try await database.delete(Person.self) == 4)
            #expect(try await database.count() == 10)
            #expect(try await database.clearDatabase() == 10)
            #expect(try await database.count() == 0)
            try await database.rollbackTransaction()

            #expect(try await database.count() == 14)
            #expect(try await database.count(Person.self) == 4)
            let n0: Note? = try await database.read(id: "n0")
            #expect(n0?.text == "0")
            let added: Note? = try await database.read(id: "new")
            #expect(added == nil)
            #expect(try await database.verifyIntegrity() == before)
        }
    }

    @Test func startingWithOverrideRollsBackTheOpenTransaction() async throws {
        try await withDatabase { database, _ in
            try await database.startTransaction()
            try await database.write(Record(id: "lost", data: Note(text: "x")))
            try await database.startTransaction(override: true)
            #expect(try await database.count() == 0)
            try await database.write(Record(id: "kept", data: Note(text: "y")))
            try await database.commitTransaction()
            #expect(try await database.readIDs(Note.self) == ["kept"])
        }
    }

    @Test func startingWithoutOverrideThrowsAndKeepsTheOpenTransaction() async throws {
        try await withDatabase { database, _ in
            try await database.startTransaction()
            try await database.write(Record(id: "kept", data: Note(text: "x")))
            await #expect(throws: LocalDatabaseError.transactionAlreadyActive) {
                try await database.startTransaction(override: false)
            }
            #expect(database.transactionActive)
            #expect(try await database.count() == 1)
            try await database.commitTransaction()
            #expect(try await database.readIDs(Note.self) == ["kept"])
        }
    }

    @Test func commitOrRollbackWithoutATransactionThrows() async throws {
        try await withDatabase { database, _ in
            await #expect(throws: LocalDatabaseError.noActiveTransaction) { try await database.commitTransaction() }
            await #expect(throws: LocalDatabaseError.noActiveTransaction) { try await database.rollbackTransaction() }
            try await database.startTransaction()
            try await database.commitTransaction()
            await #expect(throws: LocalDatabaseError.noActiveTransaction) { try await database.commitTransaction() }
        }
    }

    @Test func aTransactionSpansSleepsAndTasks300Times() async throws {
        try await withDatabase { database, _ in
            // The bound catches a hang; a ThreadSanitizer run on two busy cores has taken over 120 s.
            try await withTimeout(seconds: 400) {
                for round in 0..<300 {
                    try await database.startTransaction()
                    try await Task.sleep(nanoseconds: 50_000)
                    _ = try await Task.detached {
                        try await database.write(Record(id: "r\(round)", data: Note(text: "\(round)")))
                    }.value
                    try await Task.sleep(nanoseconds: 50_000)
                    try await Task.detached {
                        if round % 3 == 0 {
                            try await database.rollbackTransaction()
                        } else {
                            try await database.commitTransaction()
                        }
                    }.value
                }
            }
            #expect(try await database.count(Note.self) == 200)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func otherDatabasesOnTheDirectorySeeOnlyCommittedStateAndWait() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            let owner = try LocalDatabase(directory: url)
            let other = try LocalDatabase(directory: url)
            try await owner.startTransaction()
            try await owner.write(Record(id: "uncommitted", data: Note(text: "x")))
            #expect(try await other.count() == 0)
            #expect(other.transactionActive == false)

            // The other database's write waits for the transaction to end.
            let waitingWrite = Task { try await other.write(Record(id: "other", data: Note(text: "y"))) }
            #expect(await waitForWaitingWrites(1, on: owner))
            #expect(try await owner.count() == 1)
            try await owner.commitTransaction()
            _ = try await waitingWrite.value
            #expect(Set(try await other.readIDs(Note.self)) == ["uncommitted", "other"])
        }
    }

    @Test func aDatabaseDroppedMidTransactionRollsBack() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            let keeper = try LocalDatabase(directory: url)
            do {
                let dropped = try LocalDatabase(directory: url)
                try await dropped.startTransaction()
                try await dropped.write(Record(id: "abandoned", data: Note(text: "x")))
            }
            // The abandoned transaction must not block writers.
            try await withTimeout(seconds: 30) {
                try await keeper.write(Record(id: "after", data: Note(text: "y")))
            }
            #expect(try await keeper.readIDs(Note.self) == ["after"])
        }
    }
}
