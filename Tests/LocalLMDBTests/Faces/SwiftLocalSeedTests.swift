import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// SwiftLocal's README, with only the construction changed, behaves as it says.
@Suite("SwiftLocal's examples")
struct SwiftLocalSeedTests {
    @Test func theSeedExamplesBehaveAsDocumented() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let person = Person(firstName: "Andre", lastName: "Pham")
            try await database.write(Record(data: person))
            try await database.write(Record(id: "myID", data: person))
            let readPerson: Person? = try await database.read(id: "myID")
            let readPeople: [Person] = try await database.read()
            let readPeopleIDs: [String] = try await database.readIDs(Person.self)
            #expect(readPerson?.firstName == "Andre" && readPeople.count == 2 && readPeopleIDs.count == 2)
            let count = try await database.count()
            let peopleCount = try await database.count(Person.self)
            #expect(count == 2 && peopleCount == 2)
            try await database.delete(id: "myID")
            #expect(try await database.delete(Person.self) == 1)
            try await database.write(Record(data: person))
            #expect(try await database.clearDatabase() == 1)

            let person1 = Person(firstName: "One", lastName: "A")
            let person2 = Person(firstName: "Two", lastName: "B")
            try await database.startTransaction()
            let person1Saved = try await database.write(Record(data: person1))
            let person2Saved = try await database.write(Record(data: person2))
            if person1Saved && person2Saved {
                try await database.commitTransaction()
            } else {
                try await database.rollbackTransaction()
            }
            #expect(try await database.count(Person.self) == 2)
            #expect(!database.transactionActive)

            let fromTask = Task {
                let readPerson: Person? = try await database.read(id: "missing")
                return await MainActor.run { readPerson == nil }
            }
            #expect(try await fromTask.value)
        }
    }
}
