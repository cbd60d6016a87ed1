import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A model whose initializer calls back into the synchronous database being read, as an app
/// might by mistake; it records what that call returned.
final class CallsBack: Storable {
    nonisolated(unsafe) static var database: SerializationDatabase?
    let text: String
    let countSeen: Int
    init(text: String) {
        self.text = text
        countSeen = 0
    }
    required init(dataObject: DataObject) {
        text = dataObject.get("text")
        countSeen = CallsBack.database?.count() ?? -1
    }
    func toDataObject() -> DataObject { DataObject(self).add(key: "text", value: text) }
}

@Suite("SerializationDatabase", .serialized)
struct SerializationDatabaseTests {
    func open(_ directory: URL, busyTimeout: Duration = .seconds(30)) throws -> SerializationDatabase {
        try SerializationDatabase(directory: directory.appendingPathComponent("db"), configuration: DatabaseConfiguration(busyTimeout: busyTimeout))
    }

    /// SwiftSerialization's README, with only the construction changed.
    @Test func theSeedExamplesBehaveAsDocumented() async throws {
        try await withTemporaryDirectory { directory in
            let database = try open(directory)
            let person = Person(firstName: "Andre", lastName: "Pham")
            #expect(database.write(Record(data: person)))
            #expect(database.write(Record(id: "myID", data: person)))
            let readPerson: Person? = database.read(id: "myID")
            #expect(readPerson?.firstName == "Andre")
            let readPeople: [Person] = database.read()
            #expect(readPeople.count == 2)
            let readPeopleIDs: [String] = database.readIDs(Person.self)
            #expect(readPeopleIDs.contains("myID") && readPeopleIDs.count == 2)
            #expect(database.count() == 2)
            #expect(database.count(Person.self) == 2)
            #expect(database.delete(id: "myID"))
            #expect(!database.delete(id: "myID"))
            #expect(database.delete(Person.self) == 1)
            database.write(Record(data: makeStudent("Sam")))
            #expect(database.clearDatabase() == 1)

            let person1 = Person(firstName: "One", lastName: "A")
            let person2 = Person(firstName: "Two", lastName: "B")
            database.startTransaction()
            let person1Saved = database.write(Record(data: person1))
            let person2Saved = database.write(Record(data: person2))
            if person1Saved && person2Saved {
                database.commitTransaction()
            } else {
                database.rollbackTransaction()
            }
            #expect(database.count(Person.self) == 2)
            #expect(database.startTransaction())
            database.write(Record(id: "gone", data: person1))
            #expect(database.count() == 3)  // the transaction's reads see its writes
            #expect(database.rollbackTransaction())
            #expect(database.count() == 2)
            #expect(!database.commitTransaction())
            #expect(database.lastError == .noActiveTransaction)

            // Subclasses and nested objects, from another thread.
            let student: Student? = await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    database.write(Record(id: "s", data: makeStudent("Kim")))
                    continuation.resume(returning: database.read(id: "s") as Student?)
                }
            }
            #expect(student?.teacher.salary == 98_000.25 && student?.homework.count == 2)
        }
    }

    @Test func aTransactionStartedOnOneThreadIsWrittenFromFiveAndCommittedFromASixth() async throws {
        try await withTemporaryDirectory { directory in
            let database = try open(directory)
            let started = await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: database.startTransaction()) }.start()
            }
            #expect(started && database.transactionActive)
            let writes = Locked(0)
            await withTaskGroup(of: Void.self) { group in
                for writer in 0..<5 {
                    group.addTask {
                        await withCheckedContinuation { continuation in
                            Thread {
                                for index in 0..<40 where database.write(Record(id: "t\(writer)-\(index)", data: Entry(sequence: index, payload: "p"))) {
                                    writes.withLock { $0 += 1 }
                                }
                                continuation.resume()
                            }.start()
                        }
                    }
                }
            }
            #expect(writes.withLock { $0 } == 200)
            // Another database on the directory sees none of it before the commit.
            let other = try open(directory)
            #expect(other.count() == 0)
            let committed = await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: database.commitTransaction()) }.start()
            }
            #expect(committed && !database.transactionActive)
            #expect(other.count(Entry.self) == 200)
        }
    }

    @Test func callsThatWouldWaitForThemselvesFailFast() async throws {
        try await withTemporaryDirectory { directory in
            let database = try open(directory)
            #expect(database.write(Record(id: "n", data: CallsBack(text: "hello"))))
            // From a model's init(dataObject:) during a read of the same database.
            CallsBack.database = database
            defer { CallsBack.database = nil }
            let read: CallsBack? = database.read(id: "n")
            #expect(read?.text == "hello" && read?.countSeen == 0)
            guard case .wouldDeadlock? = database.lastError else {
                Issue.record("expected wouldDeadlock, got \(String(describing: database.lastError))")
                return
            }
            // On the database's writer thread.
            let engine = try database.opened.get().engine
            let written = await withCheckedContinuation { continuation in
                engine.thread.submit { continuation.resume(returning: database.write(Record(id: "w", data: Note(text: "x")))) }
            }
            #expect(!written)
            guard case .wouldDeadlock? = database.lastError else {
                Issue.record("expected wouldDeadlock, got \(String(describing: database.lastError))")
                return
            }
            #expect(database.write(Record(id: "w", data: Note(text: "x"))))  // elsewhere, fine
        }
    }

    @Test func bothFacesShareOneEnvironmentAndItsTransactionRules() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            let actor = try LocalDatabase(directory: path, busyTimeout: .milliseconds(200))
            let sync = try open(directory, busyTimeout: .milliseconds(200))
            try await actor.startTransaction()
            try await actor.write(Record(id: "a", data: Note(text: "from the actor")))
            // The synchronous face waits for the actor's transaction, for its busy timeout.
            let refused = await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: sync.write(Record(id: "s", data: Note(text: "x")))) }.start()
            }
            #expect(!refused)
            #expect(sync.lastError?.isBusy == true)
            #expect(sync.count() == 0)
            try await actor.commitTransaction()
            #expect(sync.readIDs(Note.self) == ["a"])
            // And the other way round.
            #expect(sync.startTransaction())
            await expectError(\.isBusy) { try await actor.write(Record(id: "b", data: Note(text: "x"))) }
            #expect(sync.write(Record(id: "s", data: Note(text: "from the synchronous face"))))
            #expect(sync.commitTransaction())
            #expect(try await actor.readIDs(Note.self) == ["a", "s"])
        }
    }

    @Test func closeIsIdempotentAndLaterCallsFail() async throws {
        try await withTemporaryDirectory { directory in
            let database = try open(directory)
            #expect(database.write(Record(id: "n", data: Note(text: "x"))))
            database.close()
            database.close()
            #expect(database.count() == 0)
            #expect(database.lastError == .closed)
            #expect(!database.write(Record(id: "m", data: Note(text: "y"))))
            let reopened = try open(directory)
            #expect(reopened.readIDs(Note.self) == ["n"])
        }
    }

    @Test func theDefaultInitializerDoesNotThrowAndKeepsTheFailure() throws {
        // In a child process, so this process's default directory is left alone.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("LocalLMDB-notadir-\(UUID().uuidString)")
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(at: file) }
        // XDG_DATA_HOME is a file, so the default directory cannot be created.
        let failed = try runHelper(["default-serialization"], environment: ["XDG_DATA_HOME": file.path])
        #expect(failed.lines.first?.hasPrefix("false 0 Cannot use database directory") == true, "\(failed.lines)")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("LocalLMDB-home-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let worked = try runHelper(["default-serialization"], environment: ["XDG_DATA_HOME": home.path])
        #expect(worked.lines == ["true 1 none"])
    }
}
