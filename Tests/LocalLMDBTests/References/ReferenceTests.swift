import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
import Testing

// Models of the tests: owners are identified classes, cars refer to them.

final class Owner: Codable, Persistable, Identifiable {
    let id: String
    var name: String
    init(id: String, name: String) { (self.id, self.name) = (id, name) }
}

struct Car: Codable, Persistable {
    var plate: String
    var owner: Reference<Owner>
    var previousOwner: Reference<Owner>?
    var drivers: [Reference<Owner>]
    static let indexes: [Index] = [.on("owner.$ref")]
}

/// People who may point at each other (and at themselves).
final class Sibling: Codable, Persistable, Identifiable {
    let id: String
    var name: String
    var sibling: Reference<Sibling>?
    var twins: [Reference<Sibling>]
    init(id: String, name: String, sibling: Reference<Sibling>? = nil, twins: [Reference<Sibling>] = []) {
        (self.id, self.name, self.sibling, self.twins) = (id, name, sibling, twins)
    }
}

class Vehicle: Codable, Persistable, Identifiable {
    let id: String
    var wheels: Int
    init(id: String, wheels: Int) { (self.id, self.wheels) = (id, wheels) }
}

final class Truck: Vehicle {
    var load: Int
    init(id: String, load: Int) {
        self.load = load
        super.init(id: id, wheels: 6)
    }
    private enum Keys: String, CodingKey { case load, `super` }
    required init(from decoder: any Decoder) throws {
        load = try decoder.container(keyedBy: Keys.self).decode(Int.self, forKey: .load)
        try super.init(from: decoder.container(keyedBy: Keys.self).superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(load, forKey: .load)
        try super.encode(to: container.superEncoder())
    }
}

struct Depot: Codable, Persistable {
    var vehicles: [Reference<Vehicle>]
}

/// A hand-written model with references.
final class Kennel: Storable {
    var name: String
    var keeper: Reference<Owner>?
    var helpers: [Reference<Owner>]
    init(name: String, keeper: Reference<Owner>?, helpers: [Reference<Owner>]) {
        (self.name, self.keeper, self.helpers) = (name, keeper, helpers)
    }
    required init(dataObject: DataObject) {
        name = dataObject.get("name", onFail: "")
        keeper = dataObject.reference(Owner.self, forKey: "keeper")
        helpers = dataObject.get("helpers") ?? []
    }
    func toDataObject() -> DataObject {
        let object = DataObject(self).add(key: "name", value: name).add(key: "helpers", value: helpers)
        if let keeper { object.add(key: "keeper", reference: keeper) }
        return object
    }
}

/// A link of a chain of records.
struct Link: Codable, Persistable {
    var number: Int
    var next: Reference<Link>?
}

func car(_ plate: String, owner: Owner, previous: Owner? = nil, drivers: [Owner] = []) -> Car {
    Car(plate: plate, owner: Reference(owner), previousOwner: previous.map { Reference($0) }, drivers: drivers.map { Reference($0) })
}

@Suite("References between identified models")
struct ReferenceTests {
    /// Writing a parent writes its referenced children as records of their own, in the same
    /// write; the parent stores their ids; reading resolves them; a child is read by itself.
    @Test func writingAParentStoresItsChildrenAndReadingResolvesThem() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let database = try LocalDatabase(directory: directory)
                let ada = Owner(id: "ada", name: "Ada")
                let bob = Owner(id: "bob", name: "Bob")
                try await database.write(Record(id: "car", data: car("L1", owner: ada, previous: bob, drivers: [bob, ada])))
                #expect(try await database.count() == 3)
                let read: Car? = try await database.read(id: "car")
                #expect(read?.owner.id == "ada")
                #expect(read?.owner.model?.name == "Ada")
                #expect(read?.previousOwner?.model?.name == "Bob")
                #expect(read?.drivers.map(\.id) == ["bob", "ada"])
                // One id, one instance, within the read.
                #expect(read?.drivers[1].model === read?.owner.model)
                #expect(read?.drivers[0].model === read?.previousOwner?.model)
                let alone: Owner? = try await database.read(id: "bob")
                #expect(alone?.name == "Bob")
                // Children are records of their type.
                #expect(Set(try await database.readIDs(Owner.self)) == ["ada", "bob"])
            }
            let stored = try #require(rawGet(directory, "records", "car"))
            let text = String(decoding: stored, as: UTF8.self)
            #expect(text.contains(#""owner":{"$ref":"ada"}"#))
            #expect(!text.contains("Ada"))
        }
    }

    /// Two parents that share a child see one record: a change made through one is seen by
    /// the other (GarageStorage's promise), unlike nested copies.
    @Test func parentsSharingAChildSeeItsChanges() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let ada = Owner(id: "ada", name: "Ada")
            try await database.write(contentsOf: [Record(id: "c1", data: car("L1", owner: ada)), Record(id: "c2", data: car("L2", owner: ada))])
            #expect(try await database.count() == 3)
            ada.name = "Ada Lovelace"
            try await database.write(Record(id: "c1", data: car("L1", owner: ada)))
            let second: Car? = try await database.read(id: "c2")
            #expect(second?.owner.model?.name == "Ada Lovelace")
            // Writing the child by itself changes what both parents read.
            try await database.write(Owner(id: "ada", name: "Countess"))
            let cars: [Car] = try await database.read()
            #expect(cars.map { $0.owner.model?.name } == ["Countess", "Countess"])
            #expect(cars[0].owner.model === cars[1].owner.model)
        }
    }

    /// A reference made with an id alone stores the link and leaves the record as it is.
    @Test func aReferenceByIDWritesNoChild() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            try await database.write(Owner(id: "ada", name: "Ada"))
            try await database.write(Record(id: "car", data: Car(plate: "L1", owner: Reference(id: "ada"), previousOwner: nil, drivers: [])))
            #expect(try await database.count() == 2)
            let read: Car? = try await database.read(id: "car")
            #expect(read?.owner.model?.name == "Ada")
        }
    }

    /// Cycles end when written and come back linked when read: siblings pointing at each other,
    /// a record pointing at itself; by id, by type, and in a transaction.
    @Test func cyclesComeBackLinked() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let ann = Sibling(id: "ann", name: "Ann")
            let ben = Sibling(id: "ben", name: "Ben", sibling: Reference(ann))
            ann.sibling = Reference(ben)
            ann.twins = [Reference(ann), Reference(ben)]
            try await database.write(ann)
            #expect(try await database.count() == 2)

            let read = try #require(try await database.read(id: "ann") as Sibling?)
            let readBen = try #require(read.sibling?.model)
            #expect(readBen.name == "Ben")
            #expect(readBen.sibling?.model === read)
            #expect(read.twins[0].model === read)
            #expect(read.twins[1].model === readBen)

            let all: [Sibling] = try await database.read()
            #expect(all.map(\.id) == ["ann", "ben"])
            #expect(all[0].sibling?.model === all[1])
            #expect(all[1].sibling?.model === all[0])

            try await database.startTransaction()
            let inside = try #require(try await database.read(id: "ben") as Sibling?)
            #expect(inside.sibling?.model?.sibling?.model === inside)
            let allInside: [Sibling] = try await database.read()
            #expect(allInside[0].sibling?.model === allInside[1])
            try await database.rollbackTransaction()
            for sibling in [ann, ben] { sibling.sibling = nil; sibling.twins = [] }  // Let the cycle go.
            for sibling in [read, readBen] + all + allInside { sibling.sibling = nil; sibling.twins = [] }
        }
    }

    /// A read of several records in which the first refers to nothing and a later one refers to
    /// it gets the first's one instance (the read starts over noting its records).
    @Test func aReferenceToARecordReadEarlierInTheSameReadIsThatInstance() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let first = Sibling(id: "a-first", name: "First")
            try await database.write(first)
            try await database.write(Sibling(id: "b-second", name: "Second", sibling: Reference(id: "a-first")))
            let all: [Sibling] = try await database.read()
            #expect(all.map(\.id) == ["a-first", "b-second"])
            #expect(all[1].sibling?.model === all[0])
            // Queries too.
            let queried = try await database.read(Query(Sibling.self))
            #expect(queried[1].sibling?.model === queried[0])
        }
    }

    /// A reference to a missing record: an error naming the parent, the field and the id for a
    /// required reference (in an array too), nil for an optional one.
    @Test func missingRecords() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let ada = Owner(id: "ada", name: "Ada")
            let bob = Owner(id: "bob", name: "Bob")
            try await database.write(Record(id: "car", data: car("L1", owner: ada, previous: bob, drivers: [ada])))
            #expect(try await database.delete(id: "bob"))
            let read: Car? = try await database.read(id: "car")
            #expect(read?.previousOwner == nil)
            #expect(read?.owner.model?.name == "Ada")

            try await database.write(Record(id: "car", data: car("L1", owner: ada, drivers: [ada, bob])))
            #expect(try await database.delete(id: "bob"))
            await #expect(throws: LocalDatabaseError.missingReference(id: "car", field: "drivers[1]", referencedID: "bob")) {
                _ = try await database.read(id: "car") as Car?
            }
            #expect(try await database.delete(id: "ada"))
            await #expect(throws: LocalDatabaseError.missingReference(id: "car", field: "owner", referencedID: "ada")) {
                _ = try await database.read() as [Car]
            }
            // The record is intact: writing the owner back makes it readable.
            try await database.write(ada)
            try await database.write(bob)
            #expect((try await database.read(id: "car") as Car?)?.drivers.count == 2)
        }
    }

    /// Deleting a parent leaves its children; the cascading delete removes what it reaches, in
    /// one transaction, ending at cycles.
    @Test func deletingKeepsChildrenUnlessCascading() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let ada = Owner(id: "ada", name: "Ada")
            try await database.write(Record(id: "car", data: car("L1", owner: ada)))
            #expect(try await database.delete(id: "car"))
            #expect(try await database.readIDs(Owner.self) == ["ada"])

            let ann = Sibling(id: "ann", name: "Ann")
            let ben = Sibling(id: "ben", name: "Ben", sibling: Reference(ann))
            ann.sibling = Reference(ben)
            try await database.write(ann)
            try await database.write(Sibling(id: "cat", name: "Cat", sibling: Reference(id: "nobody")))
            try await database.write(Record(id: "car", data: car("L1", owner: ada)))
            let token = try database.changeToken()
            #expect(try await database.delete(Sibling.self, id: "ann", includingReferenced: true) == 2)
            #expect(try await database.readIDs(Sibling.self) == ["cat"])
            // A reference to a missing record: the optional property reads nil, and nothing else goes.
            #expect(try await database.delete(Sibling.self, id: "cat", includingReferenced: true) == 1)
            #expect(try await database.delete(Car.self, id: "car", includingReferenced: true) == 2)
            #expect(try await database.count() == 0)
            #expect(try await database.delete(Car.self, id: "car", includingReferenced: true) == 0)
            let changes = try database.changes(since: token).commits.flatMap(\.changes)
            #expect(changes.count == 5)
            #expect(changes.contains(.deleted(id: "ada", className: "Owner")))
            ann.sibling = nil
            ben.sibling = nil
        }
    }

    /// In a transaction, a parent written with its children is read back with them (before
    /// commit), and a rollback takes back the children too.
    @Test func transactionsWriteAndReadChildrenTogether() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            try await database.startTransaction()
            try await database.write(Record(id: "car", data: car("L1", owner: Owner(id: "ada", name: "Ada"))))
            let read: Car? = try await database.read(id: "car")
            #expect(read?.owner.model?.name == "Ada")
            let all: [Car] = try await database.read()
            #expect(all.first?.owner.model?.name == "Ada")
            let page = try await database.read(Query(Car.self).filter("owner.$ref", .equals("ada")))
            #expect(page.first?.owner.model?.name == "Ada")
            try await database.rollbackTransaction()
            #expect(try await database.count() == 0)
        }
    }

    /// Subclasses are restored as their stored class; a renamed child class still resolves.
    @Test func subclassesAndRenamedClasses() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            try await database.write(Record(id: "depot", data: Depot(vehicles: [Reference(Truck(id: "t1", load: 9)), Reference(Vehicle(id: "v1", wheels: 4))])))
            let depot = try #require(try await database.read(id: "depot") as Depot?)
            #expect((depot.vehicles[0].model as? Truck)?.load == 9)
            #expect(depot.vehicles[1].model?.wheels == 4)
            // A reference asking for a class the record is not: a type mismatch naming the record.
            try await database.write(Record(id: "odd", data: Car(plate: "X", owner: Reference(id: "t1"), previousOwner: nil, drivers: [])))
            await #expect(throws: LocalDatabaseError.typeMismatch(id: "t1", requested: "Owner", stored: "Truck")) {
                _ = try await database.read(id: "odd") as Car?
            }
        }
    }

    /// A child stored under a class's old name resolves after a rename (`Legacy`).
    @Test func legacyRenamesOfTheChildClass() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            try await database.write(Record(id: "car", data: Car(plate: "L1", owner: Reference(id: "old"), previousOwner: nil, drivers: [])))
            try await database.importLines(from: try linesFile(directory, [#"{"id":"old","class":"OwnerBeforeRename","value":{"object":"OwnerBeforeRename","id":"old","name":"Old"}}"#]))
            Legacy.addClassRefactor(old: "OwnerBeforeRename", new: "Owner")
            let read: Car? = try await database.read(id: "car")
            #expect(read?.owner.model?.name == "Old")
        }
    }

    /// Hand-written models store and read references with `DataObject`.
    @Test func handWrittenModels() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let ada = Owner(id: "ada", name: "Ada")
            try await database.write(Record(id: "k", data: Kennel(name: "K", keeper: Reference(ada), helpers: [Reference(Owner(id: "bob", name: "Bob")), Reference(ada)])))
            #expect(try await database.count() == 3)
            let kennel = try #require(try await database.read(id: "k") as Kennel?)
            #expect(kennel.keeper?.model?.name == "Ada")
            #expect(kennel.helpers.map { $0.model?.name } == ["Bob", "Ada"])
            #expect(kennel.helpers[1].model === kennel.keeper?.model)
            #expect(try await database.delete(id: "ada"))
            // `reference(_:forKey:)` is optional; `get` of an array is required.
            await #expect(throws: LocalDatabaseError.missingReference(id: "k", field: "helpers[1]", referencedID: "ada")) {
                _ = try await database.read(id: "k") as Kennel?
            }
        }
    }

    /// Index on a reference's id: queries find the parents of a child.
    @Test func queriesOnAReferencesID() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let ada = Owner(id: "ada", name: "Ada")
            let bob = Owner(id: "bob", name: "Bob")
            try await database.write(contentsOf: [
                Record(id: "c1", data: car("L1", owner: ada)), Record(id: "c2", data: car("L2", owner: bob)), Record(id: "c3", data: car("L3", owner: ada)),
            ])
            let adas = try await database.read(Query(Car.self).filter("owner.$ref", .equals("ada")))
            #expect(adas.map(\.plate) == ["L1", "L3"])
            #expect(adas[0].owner.model === adas[1].owner.model)
        }
    }

    /// A child's write is a change of the child's type; observers of the parent's type hear the
    /// parent's writes only.
    @Test func childWritesAreChangesOfTheirType() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let token = try database.changeToken()
            try await database.write(Record(id: "car", data: car("L1", owner: Owner(id: "ada", name: "Ada"))))
            let changes = try database.changes(since: token).commits.flatMap(\.changes)
            #expect(changes == [.written(id: "car", className: "Car"), .written(id: "ada", className: "Owner")])
        }
    }

    /// Batches in parts: a child shared by many parents is written once per part; every parent
    /// resolves it.
    @Test func batchesShareChildren() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let ada = Owner(id: "ada", name: "Ada")
            let records = (0..<5000).map { Record(id: "car\($0)", data: car("P\($0)", owner: $0 % 2 == 0 ? ada : Owner(id: "o\($0)", name: "O\($0)"))) }
            try await database.write(contentsOf: records)
            #expect(try await database.count(Owner.self) == 2501)
            let cars: [Car] = try await database.read()
            #expect(cars.count == 5000)
            #expect(cars.allSatisfy { $0.owner.model?.id == $0.owner.id })
        }
    }

    /// A chain of 20,000 records linked by references is read without deep recursion, and
    /// deleted by a cascading delete.
    @Test func longChains() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let count = 20_000
            try await database.write(contentsOf: (0..<count).map { Record(id: "l\($0)", data: Link(number: $0, next: $0 + 1 < count ? Reference(id: "l\($0 + 1)") : nil)) })
            var link = try #require(try await database.read(id: "l0") as Link?)
            var seen = 1
            while let next = link.next?.model {
                link = next
                seen += 1
            }
            #expect(seen == count)
            #expect(try await database.delete(Link.self, id: "l0", includingReferenced: true) == count)
        }
    }

    /// References work the same on an encrypted database (the stored ids are inside the
    /// sealed document) and on the synchronous face.
    @Test func encryptedDatabasesAndTheSynchronousFace() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = DatabaseConfiguration()
            configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: .random(id: "k")))
            do {
                let database = try LocalDatabase(directory: directory, configuration: configuration)
                let ann = Sibling(id: "ann", name: "Ann")
                ann.sibling = Reference(Sibling(id: "ben", name: "Ben", sibling: Reference(ann)))
                try await database.write(ann)
                let read = try #require(try await database.read(id: "ben") as Sibling?)
                #expect(read.sibling?.model?.sibling?.model === read)
                #expect(try await database.delete(Sibling.self, id: "ann", includingReferenced: true) == 2)
                ann.sibling = nil
                read.sibling = nil
            }
            let sync = try SerializationDatabase(directory: directory.appendingPathComponent("sync"))
            let ada = Owner(id: "ada", name: "Ada")
            #expect(sync.write(Record(id: "car", data: car("S1", owner: ada))))
            let read: Car? = sync.read(id: "car")
            #expect(read?.owner.model?.name == "Ada")
            #expect(sync.delete(Car.self, id: "car", includingReferenced: true) == 2)
        }
    }
}

/// A model whose own data looks like a reference: a dictionary with a `"$ref"` key.
struct Lookalike: Codable, Persistable {
    var tags: [String: String]
    var owner: Reference<Owner>?
}

/// A child whose encoding fails.
struct Unencodable: Codable, Persistable, Identifiable {
    var id: String
    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(id, .init(codingPath: encoder.codingPath, debugDescription: "refused"))
    }
}
