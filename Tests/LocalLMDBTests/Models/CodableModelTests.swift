import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

// MARK: Models

struct CbAddress: Codable, Equatable {
    var street: String
    var zip: String
}

struct CbPerson: Codable, Persistable, Equatable, Identifiable {
    var id: String
    var name: String
    var age: Int
    var address: CbAddress?
    var tags: [String]
    var object: String
}

/// Custom coding keys: renamed members, one renamed to `object`, one property left out.
struct CbRenamed: Codable, Persistable, Equatable {
    var firstName: String
    var kind: String
    var notStored = 7

    enum CodingKeys: String, CodingKey {
        case firstName = "first_name"
        case kind = "object"
    }
}

/// Writes and reads itself with every container the coding protocols offer.
struct CbHandCoded: Codable, Persistable, Equatable {
    var x: Int
    var y: Double
    var items: [String]
    var meta: [String: Int]
    var note: String?

    init(x: Int, y: Double, items: [String], meta: [String: Int], note: String?) {
        (self.x, self.y, self.items, self.meta, self.note) = (x, y, items, meta, note)
    }

    enum Keys: String, CodingKey {
        case point, items, object, meta, note, count
    }

    enum PointKeys: String, CodingKey {
        case x, y
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var point = container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
        try point.encode(x, forKey: .x)
        try point.encode(y, forKey: .y)
        try container.encode(items.count, forKey: .count)
        var list = container.nestedUnkeyedContainer(forKey: .items)
        for item in items { try list.encode(item) }
        var inner = list.nestedUnkeyedContainer()  // an array inside the array
        try inner.encode(x)
        try inner.encodeNil()
        var keyed = list.nestedContainer(keyedBy: PointKeys.self)  // an object inside the array
        try keyed.encode(y, forKey: .y)
        var elementSuper = list.superEncoder().singleValueContainer()  // a value for the element's place
        try elementSuper.encode("element super")
        try container.encode("custom", forKey: .object)
        var dynamic = container.superEncoder().container(keyedBy: AnyKey.self)  // member "super"
        for (key, value) in meta { try dynamic.encode(value, forKey: AnyKey(stringValue: key)) }
        var metaValue = container.superEncoder(forKey: .meta).singleValueContainer()
        try metaValue.encode(meta)
        try container.encodeIfPresent(note, forKey: .note)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let point = try container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
        x = try point.decode(Int.self, forKey: .x)
        y = try point.decode(Double.self, forKey: .y)
        let count = try container.decode(Int.self, forKey: .count)
        var list = try container.nestedUnkeyedContainer(forKey: .items)
        var items: [String] = []
        for _ in 0..<count { items.append(try list.decode(String.self)) }
        self.items = items
        var inner = try list.nestedUnkeyedContainer()
        guard try inner.decode(Int.self) == x, try inner.decodeNil(), inner.isAtEnd else {
            throw DecodingError.dataCorrupted(.init(codingPath: inner.codingPath, debugDescription: "inner array"))
        }
        let keyed = try list.nestedContainer(keyedBy: PointKeys.self)
        guard try keyed.decode(Double.self, forKey: .y).bitPattern == y.bitPattern else {
            throw DecodingError.dataCorrupted(.init(codingPath: keyed.codingPath, debugDescription: "keyed element"))
        }
        guard try list.superDecoder().singleValueContainer().decode(String.self) == "element super", list.isAtEnd,
              list.count == count + 3 else {
            throw DecodingError.dataCorrupted(.init(codingPath: list.codingPath, debugDescription: "element super"))
        }
        guard try container.decode(String.self, forKey: .object) == "custom" else {
            throw DecodingError.dataCorrupted(.init(codingPath: container.codingPath, debugDescription: "object"))
        }
        let dynamic = try container.superDecoder().container(keyedBy: AnyKey.self)
        var fromSuper: [String: Int] = [:]
        for key in dynamic.allKeys { fromSuper[key.stringValue] = try dynamic.decode(Int.self, forKey: key) }
        meta = try container.superDecoder(forKey: .meta).singleValueContainer().decode([String: Int].self)
        guard fromSuper == meta else {
            throw DecodingError.dataCorrupted(.init(codingPath: container.codingPath, debugDescription: "super \(fromSuper)"))
        }
        note = try container.decodeIfPresent(String.self, forKey: .note)
    }
}

/// A class hierarchy: subclasses encode the base class's fields through `superEncoder` (in a
/// member `super`) or into the same container.
class CbShape: Codable, Persistable {
    var name: String
    init(name: String) { self.name = name }

    enum CodingKeys: String, CodingKey {
        case name
    }

    required init(from decoder: any Decoder) throws {
        name = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .name)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
    }
}

final class CbCircle: CbShape {
    var radius: Double
    init(name: String, radius: Double) {
        self.radius = radius
        super.init(name: name)
    }

    enum CircleKeys: String, CodingKey {
        case radius
    }

    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CircleKeys.self)
        radius = try container.decode(Double.self, forKey: .radius)
        try super.init(from: container.superDecoder())
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CircleKeys.self)
        try container.encode(radius, forKey: .radius)
        try super.encode(to: container.superEncoder())
    }
}

/// Flattened: the base's fields and the subclass's share one object.
final class CbSquare: CbShape {
    var side: Int
    init(name: String, side: Int) {
        self.side = side
        super.init(name: name)
    }

    enum SquareKeys: String, CodingKey {
        case side
    }

    required init(from decoder: any Decoder) throws {
        side = try decoder.container(keyedBy: SquareKeys.self).decode(Int.self, forKey: .side)
        try super.init(from: decoder)
    }

    override func encode(to encoder: any Encoder) throws {
        try super.encode(to: encoder)
        var container = encoder.container(keyedBy: SquareKeys.self)
        try container.encode(side, forKey: .side)
    }
}

/// Holds models that are stored with their own class names.
struct CbDrawing: Codable, Persistable {
    var title: String
    var main: CbShape
    var shapes: [CbShape]
    var optionalShape: CbShape?
    var byName: [String: CbShape]
}

/// Both `Storable` and `Codable`: stored by its `Storable` methods, under keys of their own.
final class CbDualModel: Storable, Codable {
    let value: Int
    /// How this instance was made: "init", "dataObject" or "decoder".
    let madeBy: String

    init(value: Int) {
        self.value = value
        madeBy = "init"
    }

    required init(dataObject: DataObject) {
        value = dataObject.get("storable_value")
        madeBy = "dataObject"
    }

    func toDataObject() -> DataObject { DataObject(self).add(key: "storable_value", value: value) }

    enum CodingKeys: String, CodingKey {
        case value
    }

    init(from decoder: any Decoder) throws {
        value = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .value)
        madeBy = "decoder"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value, forKey: .value)
    }
}

/// A `Codable` model holding a `Storable & Codable` one: the nested one is stored as `Storable`.
struct CbHoldsDual: Codable, Persistable {
    var dual: CbDualModel
    var duals: [CbDualModel]
}

struct CbIntKeyed: Codable, Persistable, Identifiable, Equatable {
    var id: Int
    var text: String
}

struct CbUUIDKeyed: Codable, Persistable, Identifiable, Equatable {
    var id: UUID
    var text: String
}

struct CbUInt64Keyed: Codable, Persistable, Identifiable, Equatable {
    var id: UInt64
    var text: String
}

struct CbLegacyOld: Codable, Persistable {
    var title: String
}

struct CbLegacyNew: Codable, Persistable {
    var title: String
    var extra: Int?
}

/// Fields under keys chosen at run time, at the top level of the record (`object` among them).
struct CbDynamicModel: Codable, Persistable, Equatable {
    var values: [String: String]

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(values: [String: String]) { self.values = values }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (key, value) in values.sorted(by: { $0.key < $1.key }) { try container.encode(value, forKey: Key(stringValue: key)) }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var values: [String: String] = [:]
        // In reverse order of storage, so every lookup walks round the members.
        for key in container.allKeys.reversed() {
            guard container.contains(key) else { throw DecodingError.keyNotFound(key, .init(codingPath: [], debugDescription: "contains")) }
            values[key.stringValue] = try container.decode(String.self, forKey: key)
        }
        self.values = values
    }
}

/// Reads one more element than an array holds.
struct CbReadsPastTheEnd: Codable, Persistable {
    var items: [Int]
    enum CodingKeys: String, CodingKey { case items }
    init(items: [Int]) { self.items = items }
    init(from decoder: any Decoder) throws {
        var list = try decoder.container(keyedBy: CodingKeys.self).nestedUnkeyedContainer(forKey: .items)
        var items: [Int] = []
        for _ in 0...(list.count ?? 0) { items.append(try list.decode(Int.self)) }
        self.items = items
    }
}

struct CbEmptyModel: Codable, Persistable, Equatable {}

enum CbSpaceA {
    struct CbItem: Codable, Persistable { var a: Int }
}

enum CbSpaceB {
    struct CbItem: Codable, Persistable { var b: Int }
}

struct CbIDModel<ID: RecordIdentifier & Codable & Hashable & Sendable>: Codable, Persistable, Identifiable, Equatable {
    var id: ID
}

/// Keeps decoders past its `init(from:)`, to decode again later (as a lazily decoding model
/// might): its own, and one for a nested value.
/// Keeps the keyed container its `init(from:)` read from.
final class CbKeepsContainer: Codable, Persistable {
    let name: String
    let container: KeyedDecodingContainer<CodingKeys>?

    enum CodingKeys: String, CodingKey { case name }

    init(name: String) {
        self.name = name
        container = nil
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        self.container = container
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
    }
}

final class CbKeepsDecoders: Codable, Persistable {
    let name: String
    let decoder: (any Decoder)?
    let nameDecoder: (any Decoder)?

    enum CodingKeys: String, CodingKey { case name }

    init(name: String) {
        self.name = name
        decoder = nil
        nameDecoder = nil
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        self.decoder = decoder
        nameDecoder = try container.superDecoder(forKey: .name)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
    }
}

// MARK: Tests

@Suite("Codable models")
struct CodableModelTests {
    static let ada = CbPerson(id: "ada", name: "Ada", age: 36, address: CbAddress(street: "Main", zip: "01234"), tags: ["a", "b"], object: "x")
    static let bob = CbPerson(id: "bob", name: "Bob", age: 7, address: nil, tags: [], object: "")

    @Test func customCodingKeysAndAFieldNamedObject() async throws {
        let model = CbRenamed(firstName: "Ada", kind: "person", notStored: 99)
        let text = try #require(try model._storedFields().toRawString())
        #expect(jsonTree(text) == ["object": "CbRenamed", "first_name": "Ada", "~object": "person"] as NSDictionary)
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "r", data: model))
            let read = try #require(try await database.read(id: "r") as CbRenamed?)
            #expect(read == CbRenamed(firstName: "Ada", kind: "person", notStored: 7))
            #expect(sync.read(id: "r") == read)
            #expect(try await database.readIDs(CbRenamed.self) == ["r"])
        }
    }

    @Test func everyKindOfContainerWritesAndReadsBack() async throws {
        let model = CbHandCoded(x: -4, y: 2.5, items: ["one", "", "object"], meta: ["object": 1, "b": 2, "": 3], note: nil)
        let text = try #require(try model._storedFields().toRawString())
        let tree = try #require(jsonTree(text))
        #expect(tree["point"] as? NSDictionary == ["x": -4, "y": 2.5])
        #expect(tree["items"] as? NSArray == ["one", "", "object", [-4, NSNull()], ["y": 2.5], "element super"] as NSArray)
        #expect(tree["~object"] as? String == "custom")
        #expect(tree["super"] as? NSDictionary == ["~object": 1, "b": 2, "": 3])
        #expect(tree["meta"] as? NSDictionary == ["~object": 1, "b": 2, "": 3])
        #expect(tree["note"] == nil)
        // Members keep the order they were encoded in, placeholders included.
        let keys = ["\"point\"", "\"count\"", "\"items\"", "\"~object\"", "\"super\"", "\"meta\""]
        let positions = keys.compactMap { text.range(of: $0)?.lowerBound }
        #expect(positions.count == keys.count && positions == positions.sorted(), "\(text)")
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "h", data: model))
            #expect(try await database.read(id: "h") == model)
            var withNote = model
            withNote.note = "n"
            #expect(sync.write(Record(id: "h2", data: withNote)))
            #expect(sync.read(id: "h2") == withNote)
            #expect(try await database.read(id: "h2") == withNote)
        }
    }

    @Test func aSubclassIsStoredAndReadWholeAsItself() async throws {
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "c", data: CbCircle(name: "round", radius: 2.5) as CbShape))
            try await database.write(Record(id: "s", data: CbSquare(name: "boxy", side: 3)))
            try await database.write(Record(id: "b", data: CbShape(name: "plain")))

            let circleText = try #require(try CbCircle(name: "round", radius: 2.5)._storedFields().toRawString())
            #expect(jsonTree(circleText) == ["object": "CbCircle", "radius": 2.5, "super": ["name": "round"]] as NSDictionary)
            let squareText = try #require(try CbSquare(name: "boxy", side: 3)._storedFields().toRawString())
            #expect(jsonTree(squareText) == ["object": "CbSquare", "name": "boxy", "side": 3] as NSDictionary)

            let circle = try #require(try await database.read(id: "c") as CbShape?)
            #expect((circle as? CbCircle)?.radius == 2.5 && circle.name == "round")
            let square = try #require(sync.read(id: "s") as CbShape?)
            #expect((square as? CbSquare)?.side == 3 && square.name == "boxy")
            let plain = try #require(try await database.read(id: "b") as CbShape?)
            #expect(type(of: plain) == CbShape.self && plain.name == "plain")
            // Subclasses are stored under their own class names.
            #expect(try await database.readIDs(CbShape.self) == ["b"])
            #expect(try await database.readIDs(CbCircle.self) == ["c"])
            #expect(try await database.count(CbSquare.self) == 1)
            // Asking for a sibling class is a type mismatch.
            await expectError({ $0 == .typeMismatch(id: "c", requested: "CbSquare", stored: "CbCircle") }) {
                _ = try await database.read(id: "c") as CbSquare?
            }
        }
    }

    /// A subclass this process has never used, written by another process, is found by the
    /// database's record of its type and restored whole, alone and nested.
    @Test func aCodableSubclassWrittenByAnotherProcessIsRestoredWhole() async throws {
        try await withDatabase { database, directory in
            #expect(try await database.count() == 0)  // open before the other process writes
            #expect(try runHelper(["write-codable-drawing", directory.path]).lines == ["done"])
            let shape = try #require(try await database.read(id: "c") as CodableShape?)
            #expect(String(describing: type(of: shape)) == "CodableCircle" && shape.name == "round")
            #expect((shape as? CodableCircle)?.radius == 2.5)
            let drawing = try #require(try await database.read(id: "d") as CodableDrawing?)
            #expect(drawing.shapes.map { String(describing: type(of: $0)) } == ["CodableShape", "CodableCircle"])
            #expect((drawing.shapes.last as? CodableCircle)?.radius == 7)
            // Written back, the nested subclass keeps its fields.
            try await database.write(Record(id: "d", data: drawing))
            let again = try #require(try await database.read(id: "d") as CodableDrawing?)
            #expect((again.shapes.last as? CodableCircle)?.radius == 7)
        }
    }

    @Test func nestedModelsKeepTheirClasses() async throws {
        let drawing = CbDrawing(
            title: "d", main: CbCircle(name: "main", radius: 1), shapes: [CbSquare(name: "s", side: 2), CbShape(name: "p"), CbCircle(name: "c", radius: 3)],
            optionalShape: CbSquare(name: "o", side: 4), byName: ["object": CbCircle(name: "k", radius: 5)])
        let text = try #require(try drawing._storedFields().toRawString())
        let tree = try #require(jsonTree(text))
        #expect((tree["main"] as? NSDictionary)?["object"] as? String == "CbCircle")
        #expect(((tree["byName"] as? NSDictionary)?["~object"] as? NSDictionary)?["object"] as? String == "CbCircle")
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "d", data: drawing))
            for read in [try await database.read(id: "d") as CbDrawing?, sync.read(id: "d") as CbDrawing?] {
                let read = try #require(read)
                #expect((read.main as? CbCircle)?.radius == 1)
                #expect(read.shapes.map { String(describing: type(of: $0)) } == ["CbSquare", "CbShape", "CbCircle"])
                #expect(read.shapes.map(\.name) == ["s", "p", "c"])
                #expect((read.optionalShape as? CbSquare)?.side == 4)
                #expect((read.byName["object"] as? CbCircle)?.radius == 5)
            }
        }
    }

}
