import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// A batch of 64 records or more is put in key order, not in the order given. Records with the
/// same id must still be applied in the order given: the last one written wins, as it did.
@Suite("Batches put in key order")
struct BatchOrderTests {
    @Test func repeatedIdsInABatchKeepTheLastWriteAndTheIndexFollowsClassChanges() async throws {
        try await withDatabase { database, _ in
            let longID = String(repeating: "long-id-", count: 80)  // over 511 bytes: stored under a digest
            var records: [Record<Person>] = (0..<300).map { index in
                Record(id: "person-\(String(index, radix: 7))-\(index * 7919 % 300)", data: Person(firstName: "P\(index)", lastName: "L"))
            }
            // The same short id three times, a hashed id twice, and an id written first as a
            // Teacher and then, later in the same batch, as a Person (its class changes).
            records[10] = Record(id: "repeated", data: Person(firstName: "first", lastName: "R"))
            records[150] = Record(id: "repeated", data: Person(firstName: "second", lastName: "R"))
            records[290] = Record(id: "repeated", data: Person(firstName: "third", lastName: "R"))
            records[5] = Record(id: longID, data: Person(firstName: "early", lastName: "H"))
            records[200] = Record(id: longID, data: Person(firstName: "late", lastName: "H"))
            records[20] = Record(id: "switching", data: Teacher(firstName: "teacher", lastName: "S", salary: 1))
            records[250] = Record(id: "switching", data: Person(firstName: "person", lastName: "S"))
            // And the reverse: first a Person, then a Teacher.
            records[30] = Record(id: "promoted", data: Person(firstName: "person", lastName: "T"))
            records[260] = Record(id: "promoted", data: Teacher(firstName: "teacher", lastName: "T", salary: 2))
            try await database.write(contentsOf: records)

            let repeated: Person? = try await database.read(id: "repeated")
            #expect(repeated?.firstName == "third")
            let hashed: Person? = try await database.read(id: longID)
            #expect(hashed?.firstName == "late")
            let switching: Person? = try await database.read(id: "switching")
            #expect(switching?.firstName == "person")
            #expect(switching.map { type(of: $0) == Person.self } == true)
            let promoted: Person? = try await database.read(id: "promoted")
            #expect((promoted as? Teacher)?.salary == 2)

            let distinctIDs = Set(records.map(\.id))
            #expect(try await database.count() == distinctIDs.count)
            #expect(try await database.count(Teacher.self) == 1)
            #expect(try await database.count(Person.self) == distinctIDs.count - 1)
            #expect(Set(try await database.readIDs(Teacher.self)) == ["promoted"])
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
        }
    }

    /// The same, through a batch that replaces records already stored (the put that refuses to
    /// overwrite finds them and takes the path that reads the stored class first).
    @Test func aBatchOverStoredRecordsKeepsTheLastWriteAndOneIndexEntryEach() async throws {
        try await withDatabase { database, _ in
            let ids = (0..<100).map { "stored-\($0)" }
            try await database.write(contentsOf: ids.map { Record(id: $0, data: Teacher(firstName: $0, lastName: "old", salary: 0)) })
            var records = ids.map { Record<Person>(id: $0, data: Person(firstName: $0, lastName: "new")) }
            records.append(Record(id: "stored-7", data: Teacher(firstName: "stored-7", lastName: "newest", salary: 7)))
            try await database.write(contentsOf: records)

            #expect(try await database.count() == 100)
            #expect(Set(try await database.readIDs(Teacher.self)) == ["stored-7"])
            let seven: Person? = try await database.read(id: "stored-7")
            #expect(seven?.lastName == "newest")
            let eight: Person? = try await database.read(id: "stored-8")
            #expect(eight?.lastName == "new")
            #expect(eight.map { type(of: $0) == Person.self } == true)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }
}
