import Foundation
import LocalLMDBModels
import LocalLMDBTestSupport
import Testing

@StoredValue
struct Place: Equatable, Sendable {
    var street: String
    var city: String
}

@StoredModel
struct Member: Equatable, Sendable {
    @Indexed(unique: true) var email: String
    @Indexed(counted: true) var age: Int
    @Indexed var tags: [String]
    @Indexed var joined: Date
    var place: Place
    var nickname: String?
    var level: Int = 1
}

/// `Member` again, for the one test that has it take its stored name over from `Before.Upgraded`.
@StoredModel
struct Upgraded: Equatable, Sendable {
    @Indexed(unique: true) var email: String
    @Indexed(counted: true) var age: Int
    @Indexed var tags: [String]
    @Indexed var joined: Date
    var place: Place
    var nickname: String?
    var level: Int = 1
}

/// The same record shape written by hand-written `Codable` before the macro (no `level` yet).
enum Before {
    struct Place: Codable, Equatable {
        var street: String
        var city: String
    }

    struct Upgraded: Codable, Persistable {
        var email: String
        var age: Int
        var tags: [String]
        var joined: Date
        var place: Place
        var nickname: String?
    }
}

@StoredModel
final class Journal {
    var title: String
    var pages: Int
    var notes: [String] = []

    init(title: String, pages: Int) {
        self.title = title
        self.pages = pages
    }
}

/// A fresh temporary directory, removed when `body` returns.
nonisolated(nonsending) func withDirectory<R>(_ body: (URL) async throws -> R) async throws -> R {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("LocalLMDBModelTests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

@Suite struct TypedModelDatabaseTests {
    static func member(_ index: Int) -> Member {
        Member(
            email: "m\(index)@example.com", age: 20 + index % 50, tags: index % 2 == 0 ? ["even", "t\(index % 5)"] : ["odd"],
            joined: Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 86_400.5), place: Place(street: "\(index) Main", city: "C\(index % 7)"),
            nickname: index % 3 == 0 ? nil : "n\(index)", level: index % 4)
    }

    static func upgraded(_ member: Member, level: Int) -> Upgraded {
        Upgraded(email: member.email, age: member.age, tags: member.tags, joined: member.joined, place: member.place, nickname: member.nickname, level: level)
    }

    /// Written and read through both faces; the records are the bytes synthesized `Codable`
    /// stores, so a database written before the macro reads unchanged after it, and back.
    @Test func bothFacesAndDatabasesWrittenBeforeTheMacro() async throws {
        try await withDirectory { directory in
            // Registered before its first use: the macro'd type takes the name over (an app changes
            // one type; here there are two).
            try StoredClasses.register(Upgraded.self)
            // The app before the macro: synthesized `Codable`, and no `level` yet.
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let members = (0..<200).map(Self.member)
            let before = members.map {
                Before.Upgraded(email: $0.email, age: $0.age, tags: $0.tags, joined: $0.joined, place: .init(street: $0.place.street, city: $0.place.city), nickname: $0.nickname)
            }
            try await database.write(contentsOf: before.enumerated().map { Record(id: "m\($0.offset)", data: $0.element) })
            let beforeJSON = try #require(try await database.storedDocument(id: "m1")?.json)
            // The same app with the macro.
            for (index, member) in members.enumerated() {
                let read: Upgraded? = try await database.read(id: "m\(index)")
                // Read with the declared default for the field the old records lack.
                #expect(read == Self.upgraded(member, level: 1))
            }
            // Written back by the macro: the old bytes and the new field, nothing else changed.
            try await database.write(contentsOf: members.enumerated().map { Record(id: "m\($0.offset)", data: Self.upgraded($0.element, level: 1)) })
            let typedJSON = try #require(try await database.storedDocument(id: "m1")?.json)
            #expect(typedJSON == String(beforeJSON.dropLast()) + ",\"level\":1}")
            let all: [Upgraded] = try await database.read()
            #expect(all.count == 200)

            let sync = try SerializationDatabase(directory: directory.appendingPathComponent("sync"))
            sync.write(Record(id: "s", data: members[3]))
            #expect(sync.read(id: "s") as Member? == members[3])
            #expect(sync.storedDocument(id: "s")?.json.contains("\"email\":\"m3@example.com\"") == true)
        }
    }

    /// `@Indexed` declares today's indexes: unique is enforced, queries use them.
    @Test func indexedPropertiesAreIndexes() async throws {
        #expect(Member.indexes.map(\.description) == [
            Index.on("email", unique: true), Index.on("age", counted: true), Index.each("tags"), Index.on(.date("joined")),
        ].map(\.description))
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let members = (0..<120).map(Self.member)
            try await database.write(contentsOf: members.enumerated().map { Record(id: "m\($0.offset)", data: $0.element) })
            await #expect(throws: LocalDatabaseError.self) {
                try await database.write(Record(id: "dup", data: Self.member(7)))
            }
            // Key paths name the stored fields, nested ones too.
            let thirty = try await database.read(Query(Member.self).filter(\.age, .equals(30)).sorted(by: \.email))
            #expect(thirty == members.filter { $0.age == 30 }.sorted { $0.email < $1.email })
            let even = try await database.count(Query(Member.self).filter(\.tags, .equals("even")))
            #expect(even == 60)
            let inC3 = try await database.readIDs(Query(Member.self).filter(\.place.city, .equals("C3")))
            #expect(Set(inC3) == Set(members.indices.filter { members[$0].place.city == "C3" }.map { "m\($0)" }))
            let latest = try await database.read(Query(Member.self).sorted(by: \.joined, descending: true).limit(3))
            #expect(latest == Array(members.reversed().prefix(3)))
            // A key path that names no stored property: a typed error when the query runs.
            await #expect(throws: LocalDatabaseError.self) {
                try await database.read(Query(Member.self).filter(\.email.count, .equals(3)))
            }
        }
    }

    @Test func aFinalClassModel() async throws {
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let journal = Journal(title: "Log", pages: 12)
            journal.notes = ["a", "b"]
            try await database.write(Record(id: "j", data: journal))
            let read = try #require(try await database.read(id: "j") as Journal?)
            #expect(read.title == "Log" && read.pages == 12 && read.notes == ["a", "b"])
        }
    }

    @Test("On a synchronized database, a macro model's write keeps the members it does not know and removes its nil optional")
    func macroModelKeepsUnknownMembers() async throws {
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            _ = try await database.enableSync(device: "d")
            let file = directory.appendingPathComponent("newer.jsonl")
            let line = #"{"id":"b","class":"Badge","value":{"object":"Badge","label":"l","detail":"d","color":"red"}}"#
            try Data((line + "\n").utf8).write(to: file)
            #expect(try await database.importLines(from: file) == 1)
            try await database.write(Record(id: "b", data: Badge(label: "m", detail: nil)))
            let json = try #require(try await database.storedDocument(id: "b")).json
            #expect(json == #"{"object":"Badge","label":"m","color":"red"}"#)
            await database.close()
        }
    }
}

/// A badge as an older version of the app knows it.
@StoredModel
struct Badge {
    var label: String
    var detail: String?
}
