import Foundation
@testable import LocalLMDB
import Testing

/// Ids that differ only in Unicode normalization ("\u{E9}" and "e\u{301}") are two records, as
/// LMDB keys them by their bytes; Swift's `String` equality calls them equal. Every set and
/// dictionary of ids that references rely on must keep them apart.
@Suite("References: canonically equivalent ids are two records")
struct CanonicalIDTests {
    static let precomposed = "\u{E9}"
    static let decomposed = "e\u{301}"

    /// A read resolves each reference to its own record: one instance per id, by its bytes.
    @Test func aReadResolvesEachToItsOwnRecord() async throws {
        try await withTemporaryDirectory { root in
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            try await database.write(Record(Owner(id: Self.precomposed, name: "precomposed")))
            try await database.write(Record(Owner(id: Self.decomposed, name: "decomposed")))
            let car = Car(
                plate: "c", owner: Reference(id: Self.precomposed), previousOwner: Reference(id: Self.decomposed),
                drivers: [Reference(id: Self.decomposed), Reference(id: Self.precomposed)])
            try await database.write(Record(id: "car", data: car))
            for read in [
                try #require(try await database.read(id: "car") as Car?),
                try #require((try await database.read() as [Car]).first),
            ] {
                #expect(read.owner.model?.name == "precomposed")
                #expect(read.previousOwner?.model?.name == "decomposed")
                #expect(read.drivers.map { $0.model?.name } == ["decomposed", "precomposed"])
                #expect(read.owner.model !== read.previousOwner?.model)
                #expect(read.drivers[0].model === read.previousOwner?.model)
            }
        }
    }

    /// Inside a transaction, where a read gathers the records its references reach before
    /// restoring them, a document naming both forms reaches both.
    @Test func aReadInATransactionReachesBothForms() async throws {
        try await withTemporaryDirectory { root in
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            try await database.write(Record(Owner(id: Self.precomposed, name: "precomposed")))
            try await database.write(Record(Owner(id: Self.decomposed, name: "decomposed")))
            let car = Car(plate: "c", owner: Reference(id: Self.precomposed), previousOwner: Reference(id: Self.decomposed), drivers: [])
            try await database.write(Record(id: "car", data: car))
            try await database.startTransaction()
            let read = try #require(try await database.read(id: "car") as Car?)
            let all: [Car] = try await database.read()
            try await database.commitTransaction()
            for read in [read, try #require(all.first)] {
                #expect(read.owner.model?.name == "precomposed")
                #expect(read.previousOwner?.model?.name == "decomposed")
            }
        }
    }

    /// References compare, and hash, by the bytes of the ids they name.
    @Test func referencesToTheTwoFormsDiffer() {
        let references: [Reference<Owner>] = [Reference(id: Self.precomposed), Reference(id: Self.decomposed)]
        #expect(references[0] != references[1])
        #expect(Set(references).count == 2)
        #expect(references[0] == Reference(id: "\u{E9}"))
    }

    /// In a batch, a record given under one form does not stop the model a reference holds
    /// under the other form from being stored.
    @Test func aBatchStoresTheModelOfTheOtherForm() async throws {
        try await withTemporaryDirectory { root in
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            _ = try await database.write(contentsOf: [
                Record(id: Self.precomposed, data: Car(plate: "given", owner: Reference(id: "nobody"), previousOwner: nil, drivers: [])),
                Record(id: "car", data: Car(plate: "c", owner: Reference(Owner(id: Self.decomposed, name: "referenced")), previousOwner: nil, drivers: [])),
            ])
            #expect((try await database.read(id: Self.decomposed) as Owner?)?.name == "referenced")
            #expect(try await database.readIDs(Car.self).count == 2)
            #expect((try await database.read(id: "car") as Car?)?.owner.model?.name == "referenced")
        }
    }

    /// A cascading delete follows both forms when the parent names both.
    @Test func aCascadingDeleteFollowsBothForms() async throws {
        try await withTemporaryDirectory { root in
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            try await database.write(Record(Owner(id: Self.precomposed, name: "precomposed")))
            try await database.write(Record(Owner(id: Self.decomposed, name: "decomposed")))
            let car = Car(plate: "c", owner: Reference(id: Self.decomposed), previousOwner: Reference(id: Self.precomposed), drivers: [])
            try await database.write(Record(id: "car", data: car))
            #expect(try await database.delete(Car.self, id: "car", includingReferenced: true) == 3)
            #expect(try await database.count() == 0)
        }
    }

    /// A cascading delete deletes the records the parent reaches, and not their other form.
    @Test func aCascadingDeleteKeepsTheOtherForm() async throws {
        try await withTemporaryDirectory { root in
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            try await database.write(Record(Owner(id: Self.precomposed, name: "precomposed")))
            try await database.write(Record(Owner(id: Self.decomposed, name: "decomposed")))
            try await database.write(Record(id: "car", data: Car(plate: "c", owner: Reference(id: Self.decomposed), previousOwner: nil, drivers: [])))
            #expect(try await database.delete(Car.self, id: "car", includingReferenced: true) == 2)
            #expect(try await database.read(id: Self.decomposed) as Owner? == nil)
            #expect((try await database.read(id: Self.precomposed) as Owner?)?.name == "precomposed")
        }
    }
}
