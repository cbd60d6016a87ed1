import Foundation
@testable import LocalLMDB
import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A referenced model whose initializer reads a graph of references from another database, on
/// the same thread, while the outer read's graph is in use: the nested read must get a graph of
/// its own (the thread's spare is taken out while a read uses it).
final class NestedReader: Codable, Persistable, Identifiable {
    nonisolated(unsafe) static var other: SerializationDatabase?
    let id: String
    var name: String
    /// What the nested read found: the car's owner and drivers, by name.
    var seen: [String] = []
    init(id: String, name: String) { (self.id, self.name) = (id, name) }
    private enum Keys: String, CodingKey { case id, name }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        if let car: Car = NestedReader.other?.read(id: "car") {
            seen = [car.owner.model?.name ?? "-"] + car.drivers.map { $0.model?.name ?? "-" }
        }
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
    }
}

struct NestedReaders: Codable, Persistable {
    var readers: [Reference<NestedReader>]
}

/// A referenced model whose deinitializer reads a reference from JSON of its own making, in a
/// data object and with `JSONDecoder`: run when the read that built it releases it, after the
/// read has ended.
final class DecodesWhenReleased: Codable, Persistable, Identifiable {
    nonisolated(unsafe) static var decodedAfterRead = 0
    let id: String
    init(id: String) { self.id = id }
    deinit {
        // Outside a read, a reference read from JSON is not resolved: its model stays nil.
        let fromDataObject = DataObject(rawString: #"{"object":"X","owner":{"$ref":"o"}}"#).reference(Owner.self, forKey: "owner")
        let fromJSON = try? JSONDecoder().decode(Reference<Owner>.self, from: Data(#"{"$ref":"o"}"#.utf8))
        if fromDataObject?.model == nil, fromJSON?.model == nil { DecodesWhenReleased.decodedAfterRead += 1 }
    }
}

/// A parent that reads its reference and keeps only the id: the read's graph holds the model
/// until the read ends.
struct KeepsOnlyTheID: Codable, Persistable {
    var childID: String
    private enum Keys: String, CodingKey { case child }
    init(child: DecodesWhenReleased) { childID = child.id }
    init(from decoder: any Decoder) throws {
        childID = try decoder.container(keyedBy: Keys.self).decode(Reference<DecodesWhenReleased>.self, forKey: .child).id
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(Reference<DecodesWhenReleased>(id: childID), forKey: .child)
    }
}

/// A record that refers to itself (`me`) and to an observer, which refers back to it.
final class SelfLinked: Codable, Persistable, Identifiable {
    let id: String
    var me: Reference<SelfLinked>?
    var observer: Reference<LinkObserver>?
    init(id: String) { self.id = id }
}

/// Notes, while it is decoded, whether the record it refers to already has its link to itself:
/// the boxes that met a record while it was being built are filled once it is built, before
/// the records after it are.
final class LinkObserver: Codable, Persistable, Identifiable {
    let id: String
    var linked: Reference<SelfLinked>
    var sawSelfLink = false
    init(id: String, linked: Reference<SelfLinked>) { (self.id, self.linked) = (id, linked) }
    private enum Keys: String, CodingKey { case id, linked }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        id = try container.decode(String.self, forKey: .id)
        linked = try container.decode(Reference<SelfLinked>.self, forKey: .linked)
        sawSelfLink = linked.model?.me?.model === linked.model && linked.model != nil
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(id, forKey: .id)
        try container.encode(linked, forKey: .linked)
    }
}

struct LinkRoot: Codable, Persistable {
    var linked: Reference<SelfLinked>
}

/// How a read finds the records its references have met (`ReadGraph`): ids compared by their
/// bytes through a fingerprint, and a graph reused by the thread's next read.
@Suite("References: the read graph")
struct ReadGraphTests {
    /// Ids of the same length whose first and last 8 bytes agree have the same fingerprint, and
    /// are still two records: the scan compares their bytes.
    @Test func idsWithTheSameFingerprintAreTwoRecords() async throws {
        let first = "prefix01-A-suffix01"
        let second = "prefix01-B-suffix01"
        #expect(ExactID.fingerprint(of: first) == ExactID.fingerprint(of: second))
        #expect(!first.hasSameUTF8(as: second))
        try await withTemporaryDirectory { root in
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            try await database.write(Record(Owner(id: first, name: "A")))
            try await database.write(Record(Owner(id: second, name: "B")))
            let car = Car(
                plate: "c", owner: Reference(id: first), previousOwner: Reference(id: second),
                drivers: [Reference(id: second), Reference(id: first), Reference(id: second)])
            try await database.write(Record(id: "car", data: car))
            let read = try #require(try await database.read(id: "car") as Car?)
            #expect(read.owner.model?.name == "A")
            #expect(read.previousOwner?.model?.name == "B")
            #expect(read.drivers.map { $0.model?.name } == ["B", "A", "B"])
            #expect(read.drivers[0].model === read.previousOwner?.model)
            #expect(read.drivers[1].model === read.owner.model)
            #expect(read.drivers[0].model !== read.drivers[1].model)
        }
    }

    /// The fingerprint and the byte equality agree with the bytes, for short, long, empty and
    /// canonically equivalent ids.
    @Test func fingerprintsAndByteEqualityFollowTheBytes() {
        let ids = ["", "a", "a\u{0}", "ab", "abcdefg", "abcdefgh", "abcdefgh1", "\u{E9}", "e\u{301}", "prefix01-A-suffix01", String(repeating: "x", count: 600)]
        for left in ids {
            for right in ids {
                let same = Array(left.utf8) == Array(right.utf8)
                #expect(left.hasSameUTF8(as: right) == same, "\(left.debugDescription) vs \(right.debugDescription)")
                #expect((ExactID(left) == ExactID(right)) == same)
                if same { #expect(ExactID.fingerprint(of: left) == ExactID.fingerprint(of: right)) }
            }
        }
        // Fewer than 8 bytes: the fingerprint tells every one apart.
        let short = ["", "a", "a\u{0}", "ab", "abcdefg", "\u{E9}", "e\u{301}"]
        #expect(Set(short.map(ExactID.fingerprint(of:))).count == short.count)
    }

    /// A record whose own link to itself was met while it was built has that link filled before
    /// the records after it are built (as when each slot kept its own waiting boxes).
    @Test func boxesThatMetARecordWhileItWasBuiltAreFilledBeforeTheNextRecord() async throws {
        try await withTemporaryDirectory { root in
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            let linked = SelfLinked(id: "a")
            linked.me = Reference(id: "a")
            linked.observer = Reference(id: "c")
            try await database.write(Record(linked))
            try await database.write(Record(LinkObserver(id: "c", linked: Reference(id: "a"))))
            try await database.write(Record(id: "root", data: LinkRoot(linked: Reference(id: "a"))))
            let read = try #require(try await database.read(id: "root") as LinkRoot?)
            let model = try #require(read.linked.model)
            #expect(model.me?.model === model)
            #expect(model.observer?.model?.linked.model === model)
            #expect(model.observer?.model?.sawSelfLink == true)
        }
    }

    /// A read of a few records with many references to them leaves the thread no spare graph
    /// holding room for all those references: the waiting boxes count against the spare's limit.
    @Test func manyReferencesToFewRecordsLeaveNoLargeSpareGraph() async throws {
        try await withTemporaryDirectory { root in
            let database = try SerializationDatabase(directory: root.appendingPathComponent("db"))
            #expect(database.write(contentsOf: (0..<3).map { Record(Owner(id: "owner-\($0)", name: "name \($0)")) }) == 3)
            let drivers = (0..<5000).map { Reference<Owner>(id: "owner-\($0 % 3)") }
            #expect(database.write(Record(id: "car", data: Car(plate: "many", owner: Reference(id: "owner-0"), previousOwner: nil, drivers: drivers))))
            // The synchronous face reads on this thread, whose scratch is then the one to look at.
            let car: Car? = database.read(id: "car")
            #expect(car?.drivers.count == 5000)
            // One instance per owner.
            #expect(Set(car?.drivers.compactMap { $0.model.map(ObjectIdentifier.init) } ?? []).count == 3)
            let room = ReadScratch.current.spareGraphRoom
            #expect((room?.waiting ?? 0) <= ReadGraph.spareLimit, "the spare graph holds room for \(room?.waiting ?? 0) waiting boxes")
            // A small graph read afterwards is kept as the spare.
            #expect(database.write(Record(id: "small", data: Car(plate: "small", owner: Reference(id: "owner-1"), previousOwner: nil, drivers: [Reference(id: "owner-2")]))))
            let small: Car? = database.read(id: "small")
            #expect(small?.drivers.first?.model?.name == "name 2")
            #expect(ReadScratch.current.spareGraphRoom != nil)
            database.close()
        }
    }

    /// Graphs of many references (past the scan, and past the size a thread keeps for its next
    /// read) and of few, read in turn and from several tasks at once, each come back whole.
    @Test func largeAndSmallGraphsReadInTurn() async throws {
        try await withTemporaryDirectory { root in
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            let owners = (0..<200).map { Owner(id: "owner-\($0)", name: "name \($0)") }
            try await database.write(contentsOf: owners.map { Record($0) })
            let sizes = [0, 1, 3, 15, 16, 17, 63, 64, 65, 200]
            for size in sizes {
                let drivers = (0..<size).map { Reference<Owner>(id: "owner-\(($0 * 7) % 200)") }
                let car = Car(plate: "\(size)", owner: Reference(id: "owner-\(size % 200)"), previousOwner: nil, drivers: drivers)
                try await database.write(Record(id: "car-\(size)", data: car))
            }
            func check(_ size: Int) async throws {
                let car = try #require(try await database.read(id: "car-\(size)") as Car?)
                #expect(car.owner.model?.name == "name \(size % 200)")
                #expect(car.drivers.map { $0.model?.name } == (0..<size).map { "name \(($0 * 7) % 200)" })
                // One instance per id within the read.
                for (index, driver) in car.drivers.enumerated() where ((index * 7) % 200) == size % 200 {
                    #expect(driver.model === car.owner.model)
                }
            }
            for size in sizes + sizes.reversed() { try await check(size) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask { for round in 0..<20 { try await check(sizes[(task + round) % sizes.count]) } }
                }
                try await group.waitForAll()
            }
        }
    }

    /// Models only the read's graph held are released once the read has ended: code their
    /// deinitializers run sees no read under way (a reference it decodes is not resolved, and
    /// the graph being emptied is not touched).
    @Test func modelsTheGraphHeldAreReleasedAfterTheRead() async throws {
        try await withTemporaryDirectory { root in
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            try await database.write(Record(Owner(id: "o", name: "owner")))
            try await database.write(Record(DecodesWhenReleased(id: "child")))
            try await database.write(Record(id: "parent", data: KeepsOnlyTheID(child: DecodesWhenReleased(id: "child"))))
            let before = DecodesWhenReleased.decodedAfterRead
            for _ in 0..<3 {
                let parent = try #require(try await database.read(id: "parent") as KeepsOnlyTheID?)
                #expect(parent.childID == "child")
            }
            #expect(DecodesWhenReleased.decodedAfterRead - before >= 3)
        }
    }

    /// A referenced model whose initializer reads another database's references, on the same
    /// thread, while the outer read's graph waits: both reads resolve their own references.
    @Test func aNestedReadGetsAGraphOfItsOwn() async throws {
        try await withTemporaryDirectory { root in
            let other = try SerializationDatabase(directory: root.appendingPathComponent("other"))
            other.write(Record(Owner(id: "o1", name: "inner owner")))
            other.write(Record(Owner(id: "o2", name: "inner driver")))
            other.write(Record(id: "car", data: Car(plate: "p", owner: Reference(id: "o1"), previousOwner: nil, drivers: [Reference(id: "o2"), Reference(id: "o1")])))
            NestedReader.other = other
            defer { NestedReader.other = nil }
            let database = try LocalDatabase(directory: root.appendingPathComponent("db"))
            let readers = (0..<5).map { NestedReader(id: "r\($0)", name: "reader \($0)") }
            try await database.write(contentsOf: readers.map { Record($0) })
            try await database.write(Record(id: "all", data: NestedReaders(readers: (readers + readers.reversed()).map { Reference($0) })))
            for _ in 0..<3 {
                let read = try #require(try await database.read(id: "all") as NestedReaders?)
                #expect(read.readers.map { $0.model?.name } == (readers + readers.reversed()).map(\.name))
                #expect(read.readers[0].model === read.readers[9].model)
                for reader in read.readers {
                    #expect(reader.model?.seen == ["inner owner", "inner driver", "inner owner"])
                }
                // The thread's next plain read of the other database still resolves its references.
                let car: Car? = other.read(id: "car")
                #expect(car?.drivers.map { $0.model?.name } == ["inner driver", "inner owner"])
            }
        }
    }
}
