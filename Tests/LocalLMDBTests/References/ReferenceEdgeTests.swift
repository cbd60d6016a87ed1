import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
import Testing

struct HoldsUnencodable: Codable, Persistable {
    var child: Reference<Unencodable>
}

/// A model whose `encode(to:)` stores a reference as a string of JSON made by `JSONEncoder`.
struct EncodesItsOwnJSON: Codable, Persistable {
    var owner: Reference<Owner>
    private enum Keys: String, CodingKey { case owner }
    init(owner: Reference<Owner>) { self.owner = owner }
    init(from decoder: any Decoder) throws {
        let text = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .owner)
        owner = try JSONDecoder().decode(Reference<Owner>.self, from: Data(text.utf8))
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(String(decoding: try JSONEncoder().encode(owner), as: UTF8.self), forKey: .owner)
    }
}

/// A hand-written model whose initializer reads a reference out of JSON it holds as text.
final class RawHolder: Storable {
    let raw: String
    let owner: Reference<Owner>?
    init(raw: String) { (self.raw, owner) = (raw, nil) }
    required init(dataObject: DataObject) {
        raw = dataObject.get("raw", onFail: "")
        owner = DataObject(rawString: raw).reference(Owner.self, forKey: "owner")
    }
    func toDataObject() -> DataObject { DataObject(self).add(key: "raw", value: raw) }
}

@Suite("References: adversarial cases")
struct ReferenceEdgeTests {
    /// Data that looks like a reference is kept as it is, read as the dictionary it is, and
    /// never followed by a cascading delete.
    @Test func lookalikesAreNotReferences() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            try await database.write(Owner(id: "victim", name: "Victim"))
            try await database.write(Record(id: "l", data: Lookalike(tags: ["$ref": "victim"], owner: Reference(Owner(id: "ada", name: "Ada")))))
            let read: Lookalike? = try await database.read(id: "l")
            #expect(read?.tags == ["$ref": "victim"])
            #expect(read?.owner?.model?.name == "Ada")
            #expect(try await database.delete(Lookalike.self, id: "l", includingReferenced: true) == 2)
            #expect(try await database.readIDs(Owner.self) == ["victim"])
        }
    }

    /// Ids with quotes, backslashes, control characters, non-ASCII text, and over LMDB's key
    /// size, round-trip as references.
    @Test func oddAndLongIDs() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let ids = ["we\"ird\\id\n\u{01}", "ünïcødé 🚗", String(repeating: "long-", count: 200)]
            let owners = ids.map { Owner(id: $0, name: "N-" + $0) }
            try await database.write(Record(id: "car", data: Car(plate: "X", owner: Reference(owners[0]), previousOwner: Reference(owners[1]), drivers: owners.map { Reference($0) })))
            let read = try #require(try await database.read(id: "car") as Car?)
            #expect(read.owner.model?.name == "N-" + ids[0])
            #expect(read.previousOwner?.model?.name == "N-" + ids[1])
            #expect(read.drivers.map { $0.model?.id } == ids)
            #expect(Set(try await database.readIDs(Owner.self)) == Set(ids))
            #expect(try await database.delete(Car.self, id: "car", includingReferenced: true) == 4)
        }
    }

    /// A write whose child cannot be stored stores nothing; an empty id is refused by name.
    @Test func aFailingChildFailsTheWholeWrite() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            await #expect(throws: LocalDatabaseError.self) {
                try await database.write(Record(id: "p", data: HoldsUnencodable(child: Reference(Unencodable(id: "c")))))
            }
            await #expect(throws: LocalDatabaseError.unencodableValue(id: "car", path: "owner", reason: "a reference's id is empty")) {
                try await database.write(Record(id: "car", data: Car(plate: "X", owner: Reference(id: ""), previousOwner: nil, drivers: [])))
            }
            #expect(try await database.count() == 0)
            // The failed encodes left nothing behind: the next write stores its own child only.
            try await database.write(Record(id: "car", data: car("L", owner: Owner(id: "ada", name: "Ada"))))
            #expect(try await database.count() == 2)
        }
    }

    /// A reference a model encodes with an encoder of its own is not the record's reference: its
    /// model is not written (it would replace the record under that id), and decoded with a
    /// decoder of its own, it has no model.
    @Test func referencesEncodedByOtherEncodersWriteNothing() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            try await database.write(Owner(id: "ada", name: "Stored"))
            try await database.write(Record(id: "p", data: EncodesItsOwnJSON(owner: Reference(Owner(id: "ada", name: "Stale copy")))))
            #expect(try await database.count() == 2)
            #expect((try await database.read(id: "ada") as Owner?)?.name == "Stored")
            let read: EncodesItsOwnJSON? = try await database.read(id: "p")
            #expect(read?.owner.id == "ada")
            #expect(read?.owner.model == nil)
        }
    }

    /// A reference a model's initializer reads from JSON of its own making: resolved in a read's
    /// snapshot; in a transaction, where the records were carried out without it, the read
    /// throws (it neither crashes nor gives nil, even through `reference(_:forKey:)`'s nil).
    @Test func referencesInJSONAModelMakes() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            try await database.write(Owner(id: "ada", name: "Ada"))
            try await database.write(Record(id: "h", data: RawHolder(raw: #"{"owner":{"$ref":"ada"}}"#)))
            #expect((try await database.read(id: "h") as RawHolder?)?.owner?.model?.name == "Ada")
            try await database.startTransaction()
            await #expect(throws: LocalDatabaseError.self) { _ = try await database.read(id: "h") as RawHolder? }
            try await database.rollbackTransaction()
        }
    }

    /// Outside a database, a reference encodes as its id and decodes without a model.
    @Test func foreignCoders() throws {
        let value = Car(plate: "X", owner: Reference(Owner(id: "ada", name: "Ada")), previousOwner: nil, drivers: [])
        let json = try JSONEncoder().encode(value)
        #expect(String(decoding: json, as: UTF8.self).contains(#""owner":{"$ref":"ada"}"#))
        let decoded = try JSONDecoder().decode(Car.self, from: json)
        #expect(decoded.owner.id == "ada")
        #expect(decoded.owner.model == nil)
    }

    /// The cascading delete follows only what the models read as references, as they are in its
    /// transaction: a child the parent stopped referring to is kept.
    @Test func cascadingDeleteFollowsTheCommittedReferences() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let ada = Owner(id: "ada", name: "Ada")
            let bob = Owner(id: "bob", name: "Bob")
            try await database.write(Record(id: "car", data: car("L", owner: ada, drivers: [bob])))
            // In a transaction: the delete sees the transaction's own writes.
            try await database.startTransaction()
            try await database.write(Record(id: "car", data: car("L", owner: ada)))
            #expect(try await database.delete(Car.self, id: "car", includingReferenced: true) == 2)
            try await database.commitTransaction()
            #expect(try await database.readIDs(Owner.self) == ["bob"])
        }
    }
}

/// A JSON Lines file of `lines` in `directory`.
func linesFile(_ directory: URL, _ lines: [String]) throws -> URL {
    let url = directory.appendingPathComponent("lines-\(UUID().uuidString).jsonl")
    try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: url)
    return url
}
