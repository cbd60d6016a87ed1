import Foundation
@testable import LocalLMDB
import LocalLMDBPostgres
import LocalLMDBTestSupport
import Testing

/// Identified models that refer to each other, for the shared suite.
final class PgPerson: Codable, Persistable, Identifiable {
    let id: String
    var name: String
    var friend: Reference<PgPerson>?
    init(id: String, name: String, friend: Reference<PgPerson>? = nil) { (self.id, self.name, self.friend) = (id, name, friend) }
}

struct PgTeam: Codable, Persistable {
    var members: [Reference<PgPerson>]
    var captain: Reference<PgPerson>
}

/// Odd values in indexed fields, for the shared suite.
struct PgOddValue: Codable, Persistable {
    static let indexes: [Index] = [.on("number"), .on(.date("when")), .on("label")]
    var number: Double
    var when: Date
    var label: String
}

/// A syncable model for the shared suite.
struct PgReading: Codable, Syncable, Identifiable, Equatable {
    var id: String
    var value: Double
    var syncStatus: SyncStatus = .notSynced
}

/// A `Codable` model for the shared suite, identified by its own id.
struct Course: Codable, Persistable, Identifiable, Equatable {
    var id: String
    var title: String
    var credits: Int
    var tags: [String]
}

// Two types whose short names are one word in two Unicode normalizations: "Caf\u{E9}" (precomposed)
// and "Cafe\u{301}" (decomposed). Swift keeps identifiers' bytes, so their class names differ in
// bytes and are equal as `String`s. (An editor that normalizes this file would make them one name:
// the test checks the bytes first.)
enum PgSpellingA { struct Café: Codable, Persistable { var a: Int } }
enum PgSpellingB { struct Café: Codable, Persistable { var b: Int } }

// Classes named for the Legacy test alone: Legacy's registry is process-wide.
final class PgWidgetV1: Storable {
    let label: String
    init(label: String) { self.label = label }
    required init(dataObject: DataObject) { label = dataObject.get("label") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "label", value: label) }
}

final class PgWidgetV2: Storable {
    let title: String
    init(title: String) { self.title = title }
    required init(dataObject: DataObject) { title = dataObject.get("title", legacyKeys: ["label"]) }
    func toDataObject() -> DataObject { DataObject(self).add(key: "title", value: title) }
}

private func student(_ name: String, debt: Double = 10) -> Student {
    let student = Student(
        firstName: name, lastName: "Lopez", debt: debt, teacher: Teacher(firstName: "Ana", lastName: "Ruiz", salary: 1200.5),
        subjectNames: ["math", "art"])
    student.giveHomework(Homework(answers: "42", grade: 9))
    return student
}

// Generic code over `ObjectDatabase`, as an app writes it: the shared suite runs it on both engines.
private func enroll(_ students: [String], in database: some ObjectDatabase) async throws {
    try await database.startTransaction()
    for name in students { try await database.write(Record(id: name, data: student(name))) }
    try await database.commitTransaction()
}

/// The same tests on every engine: code written against `ObjectDatabase` behaves the same on
/// LMDB and on PostgreSQL.
extension PostgresTests {
    @Suite("Shared engine suite", .serialized)
    struct SharedEngineTests {
        @Test("Writes, reads by id and by type, ids, counts and deletes", arguments: TestEngine.allCases)
        func crud(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                #expect(try await database.write(Record(id: "andre", data: student("Andre", debt: 12.25))))
                let read: Student? = try await database.read(id: "andre")
                #expect(read?.firstName == "Andre")
                #expect(read?.debt == 12.25)
                #expect(read?.teacher.salary == 1200.5)
                #expect(read?.homework.first?.grade == 9)
                #expect(read?.subjectNames == ["math", "art"])
                let missing: Student? = try await database.read(id: "nobody")
                #expect(missing == nil)

                #expect(try await database.write(contentsOf: (0..<50).map { Record(id: "s\($0)", data: student("S\($0)")) }) == 50)
                #expect(try await database.write(Record(id: "note", data: Note(text: "hello"))))
                let all: [Student] = try await database.read()
                #expect(all.count == 51)
                #expect(Set(try await database.readIDs(Student.self)) == Set(["andre"] + (0..<50).map { "s\($0)" }))
                #expect(try await database.count() == 52)
                #expect(try await database.count(Student.self) == 51)
                #expect(try await database.count(Note.self) == 1)

                #expect(try await database.delete(id: "andre"))
                #expect(try await !database.delete(id: "andre"))
                #expect(try await database.delete(Student.self) == 50)
                #expect(try await database.count() == 1)
                #expect(try await database.clearDatabase() == 1)
                #expect(try await database.count() == 0)
            }
        }

        @Test("Codable models by their own ids", arguments: TestEngine.allCases)
        func codable(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                let courses = (0..<20).map { Course(id: "c\($0)", title: "Course \($0) \u{1F600}", credits: $0, tags: ["a", "b\($0)"]) }
                #expect(try await database.write(contentsOf: courses) == 20)
                #expect(try await database.read(Course.self, id: "c7") == courses[7])
                #expect(try await database.write(Course(id: "c7", title: "changed", credits: -1, tags: [])))
                #expect(try await database.read(Course.self, id: "c7")?.title == "changed")
                let all: [Course] = try await database.read()
                #expect(all.count == 20)
                #expect(try await database.delete(courses[3]))
                #expect(try await database.count(Course.self) == 19)
            }
        }

        @Test("A transaction spans awaits: commit keeps its writes, rollback drops them", arguments: TestEngine.allCases)
        func transactions(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                try await enroll(["a", "b", "c"], in: database)
                #expect(try await database.count(Student.self) == 3)

                try await database.startTransaction()
                #expect(database.transactionActive)
                try await database.write(Record(id: "d", data: student("D")))
                try await Task.sleep(for: .milliseconds(5))
                #expect(try await database.delete(id: "a"))
                // Reads in the transaction see its writes.
                let d: Student? = try await database.read(id: "d")
                #expect(d?.firstName == "D")
                #expect(try await database.count(Student.self) == 3)
                try await database.rollbackTransaction()
                #expect(!database.transactionActive)
                #expect(try await database.count(Student.self) == 3)
                let a: Student? = try await database.read(id: "a")
                #expect(a != nil)
                let gone: Student? = try await database.read(id: "d")
                #expect(gone == nil)
            }
        }

        @Test("Errors are the same typed errors", arguments: TestEngine.allCases)
        func typedErrors(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                try await database.write(Record(id: "n", data: Note(text: "x")))
                await #expect(throws: LocalDatabaseError.self) {
                    let _: Student? = try await database.read(id: "n")
                }
                do {
                    let _: Student? = try await database.read(id: "n")
                } catch let error as LocalDatabaseError {
                    guard case .typeMismatch(id: "n", requested: _, stored: _) = error else {
                        Issue.record("expected typeMismatch, got \(error)")
                        return
                    }
                }
                await #expect(throws: LocalDatabaseError.emptyID) {
                    try await database.write(Record(id: "", data: Note(text: "x")))
                }
                await #expect(throws: LocalDatabaseError.noActiveTransaction) {
                    try await database.commitTransaction()
                }
                try await database.startTransaction()
                await #expect(throws: LocalDatabaseError.transactionAlreadyActive) {
                    try await database.startTransaction(override: false)
                }
                try await database.rollbackTransaction()
            }
        }

        @Test("A class name that is a stored one in another Unicode normalization is refused at write", arguments: TestEngine.allCases)
        func classNamesInTwoNormalizations(engine: TestEngine) async throws {
            let precomposed = String(describing: PgSpellingA.Café.self)
            let decomposed = String(describing: PgSpellingB.Café.self)
            try #require(precomposed == decomposed && Array(precomposed.utf8) != Array(decomposed.utf8))
            try await engine.withDatabase { database in
                try await database.write(Record(id: "a", data: PgSpellingA.Café(a: 1)))
                do {
                    try await database.write(Record(id: "b", data: PgSpellingB.Café(b: 2)))
                    Issue.record("a second spelling of a stored class name was recorded")
                } catch let error as LocalDatabaseError {
                    guard case let .classRegistration(type: _, reason: reason) = error else {
                        Issue.record("expected classRegistration, got \(error)")
                        return
                    }
                    #expect(reason.contains("another Unicode normalization") && reason.contains("43 61 66 65 cc 81"))
                }
                // In a transaction too, and the transaction stays usable.
                try await database.startTransaction()
                await #expect(throws: LocalDatabaseError.self) {
                    try await database.write(Record(id: "c", data: PgSpellingB.Café(b: 3)))
                }
                try await database.write(Record(id: "d", data: PgSpellingA.Café(a: 4)))
                try await database.commitTransaction()
                // What was stored is kept and reads as it was written.
                #expect((try await database.read(id: "a") as PgSpellingA.Café?)?.a == 1)
                #expect((try await database.read(id: "d") as PgSpellingA.Café?)?.a == 4)
                #expect(try await database.count() == 2)
                #expect(Set(try await database.readIDs(PgSpellingA.Café.self)) == ["a", "d"])
            }
        }

        @Test("Legacy renames: records of a renamed class read, count and delete as the new one", arguments: TestEngine.allCases)
        func legacyRenames(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                try await database.write(Record(id: "old", data: PgWidgetV1(label: "kept")))
                try await database.write(Record(id: "new", data: PgWidgetV2(title: "fresh")))
                Legacy.addClassRefactor(old: "PgWidgetV1", new: "PgWidgetV2")
                defer { Legacy.removeClassRefactor(old: "PgWidgetV1") }
                let old: PgWidgetV2? = try await database.read(id: "old")
                #expect(old?.title == "kept")
                let all: [PgWidgetV2] = try await database.read()
                #expect(Set(all.map(\.title)) == ["kept", "fresh"])
                #expect(try await database.count(PgWidgetV2.self) == 2)
                #expect(try await database.delete(PgWidgetV2.self) == 2)
                #expect(try await database.count() == 0)
            }
        }

        @Test("Odd ids: quotes, SQL, NUL bytes, non-ASCII, and ids longer than a key", arguments: TestEngine.allCases)
        func oddIDs(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                let ids = [
                    "'; DROP TABLE locallmdb_stores; --", "\"quoted\"", "nul\u{0}inside", "\u{0}", "e\u{301}", "\u{E9}", "$1", "back\\slash",
                    String(repeating: "long", count: 300),
                ]
                for (index, id) in ids.enumerated() { try await database.write(Record(id: id, data: Note(text: "n\(index)"))) }
                for (index, id) in ids.enumerated() {
                    let note: Note? = try await database.read(id: id)
                    #expect(note?.text == "n\(index)", "id \(id.debugDescription)")
                }
                #expect(Set(try await database.readIDs(Note.self)) == Set(ids))
                #expect(try await database.count() == ids.count)
            }
        }
    

        @Test("Observation through the protocol: the current value, then each commit's, of this and other connections", arguments: TestEngine.allCases)
        func observation(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                try await database.write(Record(id: "a", data: Note(text: "first")))
                let seen = Task {
                    var texts: [[String]] = []
                    for try await notes in database.observeAll(Note.self) {
                        texts.append(notes.map(\.text).sorted())
                        if texts.last == ["first", "second"] { break }
                    }
                    return texts
                }
                var single = database.observe(Note.self, id: "a").makeAsyncIterator()
                #expect(try await single.next()??.text == "first")
                try await database.write(Record(id: "b", data: Note(text: "second")))
                let texts = try await seen.value
                #expect(texts.first == ["first"] || texts.first == ["first", "second"])
                #expect(texts.last == ["first", "second"])
                try await database.write(Record(id: "a", data: Note(text: "changed")))
                #expect(try await single.next()??.text == "changed")
            }
        }
    

        @Test("Sync status: written with the model, set in the stored bytes, read through its index", arguments: TestEngine.allCases)
        func syncStatus(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                try await database.write(contentsOf: [PgReading(id: "r1", value: 1), PgReading(id: "r2", value: 2, syncStatus: .syncing)])
                #expect(try await database.syncStatus(of: PgReading.self, id: "r2") == .syncing)
                #expect(try await database.syncStatus(of: PgReading.self, id: "nobody") == nil)
                let notSynced: [PgReading] = try await database.read(withStatus: .notSynced)
                #expect(notSynced.map(\.id) == ["r1"])
                #expect(try await database.setSyncStatus(.synced, forIDs: ["r1", "r2", "nobody"], of: PgReading.self) == 2)
                #expect(try await database.readIDs(withStatus: .synced) == ["PgReading": ["r1", "r2"]])
                let r1: PgReading? = try await database.read(id: "r1")
                #expect(r1 == PgReading(id: "r1", value: 1, syncStatus: .synced))
            }
        }
    

        @Test("References: children stored as records, one instance per id, cycles linked, cascading deletes", arguments: TestEngine.allCases)
        func references(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                let ada = PgPerson(id: "ada", name: "Ada")
                let bob = PgPerson(id: "bob", name: "Bob", friend: Reference(ada))
                ada.friend = Reference(bob)
                try await database.write(Record(id: "team", data: PgTeam(members: [Reference(ada), Reference(bob)], captain: Reference(ada))))
                #expect(try await database.count(PgPerson.self) == 2)
                let team: PgTeam? = try await database.read(id: "team")
                let captain = try #require(team?.captain.model)
                #expect(captain === team?.members.first?.model)
                #expect(captain.friend?.model?.friend?.model === captain)
                // A child changed alone is seen through the parent.
                try await database.write(PgPerson(id: "bob", name: "Robert", friend: Reference(id: "ada")))
                let again: PgTeam? = try await database.read(id: "team")
                #expect(again?.members.last?.model?.name == "Robert")
                #expect(try await database.delete(PgTeam.self, id: "team", includingReferenced: true) == 3)
                #expect(try await database.count() == 0)
            }
        }
    

        @Test("Odd values order alike on both engines: NaN, ±0, ±∞, far dates, strings that read as numbers", arguments: TestEngine.allCases)
        func oddValues(engine: TestEngine) async throws {
            try await engine.withDatabase { database in
                let values: [(String, Double, Date, String)] = [
                    ("nan", .nan, Date(timeIntervalSince1970: 253_402_300_800), "10"),  // year 10000
                    ("negzero", -0.0, Date(timeIntervalSince1970: -62_200_000_000), "9"),  // before year 1
                    ("zero", 0, Date(timeIntervalSince1970: 0.000_001), "1e3"),
                    ("inf", .infinity, Date(timeIntervalSince1970: 0), "-1"),
                    ("neginf", -.infinity, Date(timeIntervalSince1970: 1_700_000_000.5), "NaN"),
                    ("huge", 1e300, Date(timeIntervalSince1970: -1), "0010"),
                ]
                for (id, number, when, label) in values {
                    try await database.write(Record(id: id, data: PgOddValue(number: number, when: when, label: label)))
                }
                // NaN after every number; -0.0 equal to 0 (then by id).
                #expect(try await database.readIDs(Query(PgOddValue.self).sorted(by: "number")) == ["neginf", "negzero", "zero", "huge", "inf", "nan"])
                #expect(try await database.readIDs(Query(PgOddValue.self).filter("number", .equals(0.0))) == ["negzero", "zero"])
                // As documented: NaN sorts after every number, so a range upward takes it (unlike Swift's >=).
                #expect(try await database.readIDs(Query(PgOddValue.self).filter("number", .atLeast(1.0))) == ["huge", "inf", "nan"])
                #expect(try await database.count(Query(PgOddValue.self).filter("number", .atLeast(1.0))) == 3)
                // Dates in time order, whatever the year.
                #expect(try await database.readIDs(Query(PgOddValue.self).sorted(by: "when")) == ["negzero", "huge", "inf", "zero", "neginf", "nan"])
                // Strings by their UTF-8 bytes, never as numbers.
                #expect(try await database.readIDs(Query(PgOddValue.self).sorted(by: "label")) == ["inf", "huge", "nan", "zero", "negzero", "neginf"])
                #expect(try await database.readIDs(Query(PgOddValue.self).filter("label", .equals("10"))) == ["nan"])
                let nan: PgOddValue? = try await database.read(id: "nan")
                #expect(nan?.number.isNaN == true)
            }
        }
    }
}
