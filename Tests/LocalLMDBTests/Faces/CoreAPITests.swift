import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

@Suite("Core API")
struct CoreAPITests {
    @Test func writeThenReadByID() async throws {
        try await withDatabase { database, _ in
            let person = Person(firstName: "Andre", lastName: "Pham")
            let stored = try await database.write(Record(id: "myID", data: person))
            #expect(stored)
            // The object stays usable after writing it.
            #expect(person.firstName == "Andre")
            let read: Person? = try await database.read(id: "myID")
            #expect(read?.firstName == "Andre")
            #expect(read?.lastName == "Pham")
            let missing: Person? = try await database.read(id: "nobody")
            #expect(missing == nil)
        }
    }

    @Test func randomIDsAreGenerated() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(data: Note(text: "a")))
            try await database.write(Record(data: Note(text: "b")))
            let ids = try await database.readIDs(Note.self)
            #expect(ids.count == 2)
            #expect(Set(ids).count == 2)
            #expect(ids.allSatisfy { UUID(uuidString: $0) != nil })
        }
    }

    @Test func readAllReadIDsAndCounts() async throws {
        try await withDatabase { database, _ in
            for index in 0..<25 {
                try await database.write(Record(id: "p\(index)", data: Person(firstName: "P\(index)", lastName: "L")))
            }
            for index in 0..<7 {
                try await database.write(Record(id: "n\(index)", data: Note(text: "note \(index)")))
            }
            let people: [Person] = try await database.read()
            #expect(people.count == 25)
            #expect(Set(people.map(\.firstName)) == Set((0..<25).map { "P\($0)" }))
            #expect(Set(try await database.readIDs(Person.self)) == Set((0..<25).map { "p\($0)" }))
            #expect(try await database.count() == 32)
            #expect(try await database.count(Person.self) == 25)
            #expect(try await database.count(Note.self) == 7)
            #expect(try await database.count(Teacher.self) == 0)
            let notes: [Note] = try await database.read()
            #expect(notes.map(\.text).sorted() == (0..<7).map { "note \($0)" })
        }
    }

    @Test func writingAnExistingIDReplacesIt() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "x", data: Person(firstName: "Old", lastName: "L")))
            try await database.write(Record(id: "x", data: Person(firstName: "New", lastName: "L")))
            let read: Person? = try await database.read(id: "x")
            #expect(read?.firstName == "New")
            #expect(try await database.count() == 1)
            #expect(try await database.count(Person.self) == 1)
        }
    }

    @Test func writingAnExistingIDWithAnotherTypeMovesItsIndexEntry() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "x", data: Person(firstName: "A", lastName: "B")))
            try await database.write(Record(id: "x", data: Note(text: "now a note")))
            #expect(try await database.count(Person.self) == 0)
            #expect(try await database.count(Note.self) == 1)
            #expect(try await database.readIDs(Person.self).isEmpty)
            #expect(try await database.readIDs(Note.self) == ["x"])
            let people: [Person] = try await database.read()
            #expect(people.isEmpty)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func deleteByID() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "x", data: Note(text: "t")))
            #expect(try await database.delete(id: "x"))
            #expect(try await database.delete(id: "x") == false)
            #expect(try await database.count() == 0)
            #expect(try await database.count(Note.self) == 0)
            let read: Note? = try await database.read(id: "x")
            #expect(read == nil)
        }
    }

    @Test func deleteByTypeLeavesOtherTypesAndSubclasses() async throws {
        try await withDatabase { database, _ in
            for index in 0..<5 { try await database.write(Record(data: Person(firstName: "\(index)", lastName: ""))) }
            for index in 0..<3 { try await database.write(Record(data: Note(text: "\(index)"))) }
            try await database.write(Record(id: "s", data: makeStudent("Sam")))
            #expect(try await database.delete(Person.self) == 5)
            #expect(try await database.delete(Person.self) == 0)
            #expect(try await database.count() == 4)
            #expect(try await database.count(Note.self) == 3)
            #expect(try await database.count(Student.self) == 1)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func clearDatabaseReturnsTheNumberDeleted() async throws {
        try await withDatabase { database, _ in
            for index in 0..<12 { try await database.write(Record(data: Note(text: "\(index)"))) }
            try await database.write(Record(data: Person(firstName: "a", lastName: "b")))
            #expect(try await database.clearDatabase() == 13)
            #expect(try await database.count() == 0)
            #expect(try await database.count(Note.self) == 0)
            #expect(try await database.readIDs(Note.self).isEmpty)
            #expect(try await database.clearDatabase() == 0)
            // Still usable afterwards.
            try await database.write(Record(id: "again", data: Note(text: "x")))
            #expect(try await database.count(Note.self) == 1)
        }
    }

    @Test func subclassesAreReadAsThemselves() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "s", data: makeStudent("Sam", debt: 10.5)))
            let asPerson: Person? = try await database.read(id: "s")
            let student = try #require(asPerson as? Student)
            #expect(student.firstName == "Sam")
            #expect(student.debt == 10.5)
            #expect(student.teacher.salary == 98_000.25)
            #expect(student.homework.map(\.answers) == ["42", "unknown"])
            #expect(student.homework.map(\.grade) == [7, nil])
            #expect(student.subjectNames == ["Maths", "Physics"])
            let asStudent: Student? = try await database.read(id: "s")
            #expect(asStudent?.firstName == "Sam")
        }
    }

    @Test func readingAnotherClassIsATypeMismatch() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "n", data: Note(text: "t")))
            await #expect(throws: LocalDatabaseError.typeMismatch(id: "n", requested: "Person", stored: "Note")) {
                let _: Person? = try await database.read(id: "n")
            }
            // A superclass record is not a subclass.
            try await database.write(Record(id: "p", data: Person(firstName: "a", lastName: "b")))
            await #expect(throws: LocalDatabaseError.typeMismatch(id: "p", requested: "Student", stored: "Person")) {
                let _: Student? = try await database.read(id: "p")
            }
        }
    }

    @Test func emptyIDsAreRefused() async throws {
        try await withDatabase { database, _ in
            await #expect(throws: LocalDatabaseError.emptyID) {
                try await database.write(Record(id: "", data: Note(text: "t")))
            }
            await #expect(throws: LocalDatabaseError.emptyID) {
                let _: Note? = try await database.read(id: "")
            }
            await #expect(throws: LocalDatabaseError.emptyID) {
                try await database.delete(id: "")
            }
            let count = try await database.count()
            #expect(count == 0)
        }
    }

    @Test func idsLongerThanTheKeyLimitWork() async throws {
        try await withDatabase { database, _ in
            let long = String(repeating: "é", count: 400)  // 800 bytes of UTF-8
            let longer = long + "!"
            try await database.write(Record(id: long, data: Note(text: "one")))
            try await database.write(Record(id: longer, data: Note(text: "two")))
            let one: Note? = try await database.read(id: long)
            let two: Note? = try await database.read(id: longer)
            #expect(one?.text == "one")
            #expect(two?.text == "two")
            #expect(Set(try await database.readIDs(Note.self)) == [long, longer])
            #expect(try await database.delete(id: long))
            #expect(try await database.readIDs(Note.self) == [longer])
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func unicodeAndBinaryLikeIDs() async throws {
        try await withDatabase { database, _ in
            let ids = ["日本語", "emoji 🎉", "nul\u{0}byte", "tab\tnewline\n", String(repeating: "x", count: 511)]
            for id in ids { try await database.write(Record(id: id, data: Note(text: id))) }
            for id in ids {
                let note: Note? = try await database.read(id: id)
                #expect(note?.text == id)
            }
            #expect(Set(try await database.readIDs(Note.self)) == Set(ids))
        }
    }

    @Test func reopeningKeepsEverything() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            do {
                let database = try LocalDatabase(directory: url)
                try await database.write(Record(id: "s", data: makeStudent("Sam")))
                for index in 0..<100 { try await database.write(Record(id: "n\(index)", data: Note(text: "\(index)"))) }
            }
            let reopened = try LocalDatabase(directory: url)
            #expect(try await reopened.count() == 101)
            #expect(try await reopened.count(Note.self) == 100)
            let student: Person? = try await reopened.read(id: "s")
            #expect(student is Student)
        }
    }

    @Test func droppingAndReopeningAtOnceIsSafe() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            for round in 0..<150 {
                // The last database on a directory closes its environment on the writer thread
                // while this loop opens the next one. (Whether a reopen waits for that close is
                // tested on OpenPaths itself: a double open harms file locks, not this loop.)
                let database = try LocalDatabase(directory: url)
                try await database.write(Record(id: "r\(round)", data: Note(text: "\(round)")))
                #expect(try await database.count() == round + 1)
            }
        }
    }

    @Test func databasesOnOneDirectoryShareTheirData() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            let first = try LocalDatabase(directory: url)
            let second = try LocalDatabase(directory: url)
            try await first.write(Record(id: "a", data: Note(text: "from first")))
            let read: Note? = try await second.read(id: "a")
            #expect(read?.text == "from first")
            #expect(throws: LocalDatabaseError.self) {
                _ = try LocalDatabase(directory: url, durability: .none)
            }
        }
    }

    @Test func aFileWhereTheDirectoryShouldBeIsAnError() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("file")
            try Data("not a directory".utf8).write(to: file)
            #expect {
                _ = try LocalDatabase(directory: file)
            } throws: { error in
                guard case .invalidDirectory = error as? LocalDatabaseError else { return false }
                return true
            }
            #expect(try String(contentsOf: file, encoding: .utf8) == "not a directory")
        }
    }

    @Test func filesAreOwnerOnly() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("nested/db")
            let database = try LocalDatabase(directory: url)
            try await database.write(Record(id: "a", data: Note(text: "t")))
            let manager = FileManager.default
            let directoryMode = try manager.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
            let dataMode = try manager.attributesOfItem(atPath: url.appendingPathComponent("data.mdb").path)[.posixPermissions] as? Int
            let lockMode = try manager.attributesOfItem(atPath: url.appendingPathComponent("lock.mdb").path)[.posixPermissions] as? Int
            #expect(directoryMode == 0o700)
            #expect(dataMode == 0o600)
            #expect(lockMode == 0o600)
        }
    }

    @Test func theDefaultDirectoryFollowsXDGDataHome() {
        let path = LocalDatabase.defaultDirectory.path
        #expect(path.hasSuffix("LocalLMDB/default"))
        if let dataHome = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], dataHome.hasPrefix("/") {
            #expect(path.hasPrefix(dataHome))
        }
    }
}

@Suite("Batch writes")
struct BatchWriteTests {
    @Test func writeContentsOfStoresEveryRecordInOneGo() async throws {
        try await withDatabase { database, _ in
            let records = (0..<500).map { Record(id: "b\($0)", data: Note(text: "\($0)")) }
            #expect(try await database.write(contentsOf: records) == 500)
            #expect(try await database.count(Note.self) == 500)
            let note: Note? = try await database.read(id: "b499")
            #expect(note?.text == "499")
            #expect(try await database.write(contentsOf: [Record<Note>]()) == 0)
        }
    }

    @Test func anEmptyIDInABatchWritesNothing() async throws {
        try await withDatabase { database, _ in
            let records = [Record(id: "ok", data: Note(text: "a")), Record(id: "", data: Note(text: "b"))]
            await #expect(throws: LocalDatabaseError.emptyID) { try await database.write(contentsOf: records) }
            let count = try await database.count()
            #expect(count == 0)
        }
    }

    @Test func batchesJoinAnOpenTransaction() async throws {
        try await withDatabase { database, _ in
            try await database.startTransaction()
            try await database.write(contentsOf: [Record(id: "x", data: Note(text: "1")), Record(id: "x", data: Note(text: "2"))])
            let inside: Note? = try await database.read(id: "x")
            #expect(inside?.text == "2")
            try await database.rollbackTransaction()
            #expect(try await database.count() == 0)
        }
    }
}
