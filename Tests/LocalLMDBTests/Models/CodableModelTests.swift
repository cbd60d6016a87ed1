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

    @Test func aStorableAndCodableTypeIsStoredByItsStorableMethods() async throws {
        let text = try #require(try CbDualModel(value: 5)._storedFields().toRawString())
        #expect(text == #"{"object":"CbDualModel","storable_value":5}"#)
        let holder = CbHoldsDual(dual: CbDualModel(value: 1), duals: [CbDualModel(value: 2)])
        let holderTree = try #require(jsonTree(try holder._storedFields().toRawString()))
        #expect(holderTree["dual"] as? NSDictionary == ["object": "CbDualModel", "storable_value": 1])
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "m", data: CbDualModel(value: 5)))
            let read = try #require(try await database.read(id: "m") as CbDualModel?)
            #expect(read.value == 5 && read.madeBy == "dataObject")
            #expect(sync.write(Record(id: "h", data: holder)))
            let readHolder = try #require(try await database.read(id: "h") as CbHoldsDual?)
            #expect(readHolder.dual.value == 1 && readHolder.dual.madeBy == "dataObject")
            #expect(readHolder.duals.map(\.value) == [2] && readHolder.duals.map(\.madeBy) == ["dataObject"])
        }
    }

    @Test func everyOperationOfLocalDatabaseWorks() async throws {
        try await withDatabase { database, _ in
            #expect(try await database.write(Record(id: "ada", data: Self.ada)))
            #expect(try await database.write(contentsOf: [Record(id: "bob", data: Self.bob), Record(id: "cy", data: Self.bob)]) == 2)
            try await database.write(Record(id: "note", data: Note(text: "hand-written")))
            #expect(try await database.read(id: "ada") == Self.ada)
            #expect(try await database.read(id: "missing") as CbPerson? == nil)
            #expect(try await database.read() == [Self.ada, Self.bob, Self.bob])
            #expect(try await database.readIDs(CbPerson.self) == ["ada", "bob", "cy"])
            #expect(try await database.count(CbPerson.self) == 3)
            #expect(try await database.count() == 4)
            #expect(try await database.delete(id: "cy"))
            #expect(!(try await database.delete(id: "cy")))
            #expect(try await database.delete(CbPerson.self) == 2)
            #expect(try await database.count(CbPerson.self) == 0)
            #expect(try await database.readIDs(Note.self) == ["note"])
            // Replacing a record of another class with a Codable model.
            try await database.write(Record(id: "note", data: Self.ada))
            #expect(try await database.count(Note.self) == 0)
            #expect(try await database.read(id: "note") == Self.ada)
            #expect(try await database.clearDatabase() == 1)
            #expect(try await database.count() == 0)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func everyOperationOfSerializationDatabaseWorks() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory)
            #expect(database.write(Record(id: "ada", data: Self.ada)))
            #expect(database.write(contentsOf: [Record(id: "bob", data: Self.bob)]) == 1)
            #expect(database.read(id: "ada") == Self.ada)
            #expect(database.read() == [Self.ada, Self.bob])
            #expect(database.readIDs(CbPerson.self) == ["ada", "bob"])
            #expect(database.count(CbPerson.self) == 2 && database.count() == 2)
            #expect(database.delete(id: "bob"))
            #expect(database.delete(CbPerson.self) == 1)
            #expect(database.startTransaction())
            #expect(database.write(Record(id: "t", data: Self.bob)))
            #expect(database.read(id: "t") == Self.bob)
            #expect(database.rollbackTransaction())
            #expect(database.read(id: "t") as CbPerson? == nil)
            #expect(database.startTransaction())
            #expect(database.write(Record(id: "t", data: Self.bob)))
            #expect(database.commitTransaction())
            #expect(database.read(id: "t") == Self.bob)
            #expect(database.clearDatabase() == 1)
            #expect(database.lastError == nil)
        }
    }

    @Test func transactionsCommitAndRollBackCodableWrites() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "ada", data: Self.ada))
            try await database.startTransaction()
            try await database.write(Record(id: "bob", data: Self.bob))
            var older = Self.ada
            older.age = 37
            try await database.write(Record(id: "ada", data: older))
            #expect(try await database.read(id: "bob") == Self.bob)
            #expect(try await database.read(id: "ada") == older)
            #expect(try await database.count(CbPerson.self) == 2)
            #expect(try await database.read() == [older, Self.bob])
            try await database.rollbackTransaction()
            #expect(try await database.read(id: "bob") as CbPerson? == nil)
            #expect(try await database.read(id: "ada") == Self.ada)

            // A class first written inside a transaction, nested: resolved inside it, gone with it.
            try await database.startTransaction()
            let drawing = CbDrawing(title: "t", main: CbSquare(name: "s", side: 1), shapes: [CbCircle(name: "c", radius: 2)], optionalShape: nil, byName: [:])
            try await database.write(Record(id: "drawing", data: drawing))
            let inside = try #require(try await database.read(id: "drawing") as CbDrawing?)
            #expect((inside.shapes.first as? CbCircle)?.radius == 2 && (inside.main as? CbSquare)?.side == 1)
            try await database.rollbackTransaction()
            #expect(try await database.read(id: "drawing") as CbDrawing? == nil)
            #expect(try await database.count() == 1)

            try await database.startTransaction()
            try await database.write(contentsOf: [Record(id: "bob", data: Self.bob), Record(id: "ada", data: older)])
            #expect(try await database.delete(id: "bob"))
            try await database.write(Record(id: "bob2", data: Self.bob))
            try await database.commitTransaction()
            #expect(try await database.readIDs(CbPerson.self) == ["ada", "bob2"])
            #expect(try await database.read(id: "ada") == older)
        }
    }

    @Test func aRenamedCodableTypeReadsRecordsStoredUnderItsOldName() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "old", data: CbLegacyOld(title: "first")))
            try await database.write(Record(id: "new", data: CbLegacyNew(title: "second", extra: 2)))
            Legacy.addClassRefactor(old: "CbLegacyOld", new: "CbLegacyNew")
            defer { Legacy.removeClassRefactor(old: "CbLegacyOld") }
            let old = try #require(try await database.read(id: "old") as CbLegacyNew?)
            #expect(old.title == "first" && old.extra == nil)
            let all: [CbLegacyNew] = try await database.read()
            #expect(all.map(\.title) == ["second", "first"])
            #expect(try await database.readIDs(CbLegacyNew.self) == ["new", "old"])
            #expect(try await database.count(CbLegacyNew.self) == 2)
            #expect(try await database.delete(CbLegacyNew.self) == 2)
            #expect(try await database.count() == 0)
        }
    }

    @Test func identifiableModelsNeedNoRecordOnEitherFace() async throws {
        try await withBothFaces { (database, sync) async throws in
            // String ids.
            #expect(try await database.write(Self.ada))
            #expect(try await database.write(contentsOf: [Self.bob]) == 1)
            #expect(try await database.read(CbPerson.self, id: "ada") == Self.ada)
            #expect(try await database.read(id: "bob") == Self.bob)
            #expect(sync.read(CbPerson.self, id: "bob") == Self.bob)
            #expect(try await database.delete(Self.ada))
            #expect(!(try await database.delete(Self.ada)))
            #expect(sync.delete(Self.bob))
            #expect(Record(Self.ada).id == "ada")

            // Int ids: the decimal digits.
            let numbered = [CbIntKeyed(id: 42, text: "a"), CbIntKeyed(id: -7, text: "b"), CbIntKeyed(id: Int.min, text: "c")]
            #expect(try await database.write(contentsOf: numbered) == 3)
            #expect(try await database.read(CbIntKeyed.self, id: -7) == numbered[1])
            #expect(try await database.read(id: "42") == numbered[0])
            #expect(sync.read(CbIntKeyed.self, id: Int.min) == numbered[2])
            #expect(Set(try await database.readIDs(CbIntKeyed.self)) == ["42", "-7", String(Int.min)])
            #expect(sync.write(CbIntKeyed(id: 42, text: "replaced")))
            #expect(try await database.read(CbIntKeyed.self, id: 42)?.text == "replaced")
            #expect(try await database.delete(numbered[0]))
            #expect(sync.write(contentsOf: [CbIntKeyed(id: 1, text: "x")]) == 1)
            #expect(try await database.count(CbIntKeyed.self) == 3)

            // Later models win over earlier ones with the same id.
            #expect(try await database.write(contentsOf: [CbIntKeyed(id: 5, text: "first"), CbIntKeyed(id: 5, text: "second")]) == 2)
            #expect(try await database.read(CbIntKeyed.self, id: 5)?.text == "second")
            #expect(try await database.count(CbIntKeyed.self) == 4)

            // UUID ids: the uuidString.
            let uuid = UUID()
            let keyed = CbUUIDKeyed(id: uuid, text: "u")
            #expect(sync.write(keyed))
            #expect(try await database.read(CbUUIDKeyed.self, id: uuid) == keyed)
            #expect(try await database.read(id: uuid.uuidString) == keyed)
            #expect(sync.delete(keyed))
            #expect(try await database.read(CbUUIDKeyed.self, id: uuid) == nil)

            // UInt64 ids beyond Int64.
            let big = CbUInt64Keyed(id: .max, text: "big")
            #expect(try await database.write(big))
            #expect(try await database.read(id: "18446744073709551615") == big)
        }
    }

    @Test func keysChosenAtRunTimeAreReadInAnyOrder() async throws {
        let model = CbDynamicModel(values: ["object": "o", "~object": "t", "": "empty", "z": "last", "a": "first", "ключ": "к"])
        let text = try #require(try model._storedFields().toRawString())
        #expect(jsonTree(text) == ["object": "CbDynamicModel", "~object": "o", "~~object": "t", "": "empty", "z": "last", "a": "first", "ключ": "к"] as NSDictionary)
        try await withDatabase { database, _ in
            try await database.write(Record(id: "d", data: model))
            #expect(try await database.read(id: "d") == model)
        }
    }

    @Test func readingPastTheEndOfAnArrayNamesTheElement() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "p", data: CbRawRecord(#"{"object":"CbReadsPastTheEnd","items":[1,2,3]}"#)))
            let error = await caughtError { _ = try await database.read(id: "p") as CbReadsPastTheEnd? }
            #expect(error?.decodingFailure?.path == "items[3]", "\(String(describing: error))")
        }
    }

    @Test func aModelWithNoFieldsIsJustItsClassName() async throws {
        #expect(try CbEmptyModel()._storedFields().toRawString() == #"{"object":"CbEmptyModel"}"#)
        try await withBothFaces { database, sync in
            try await database.write(contentsOf: [Record(id: "1", data: CbEmptyModel()), Record(id: "2", data: CbEmptyModel())])
            #expect(try await database.read() == [CbEmptyModel(), CbEmptyModel()])
            #expect(sync.count(CbEmptyModel.self) == 2)
        }
    }

    /// Two `Codable` types with one short name are never merged: the second to be used in a
    /// database gets `classNameConflict`.
    @Test func twoCodableTypesWithOneShortNameConflict() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "a", data: CbSpaceA.CbItem(a: 1)))
            await expectError({ $0.isClassNameConflict }) { try await database.write(Record(id: "b", data: CbSpaceB.CbItem(b: 2))) }
            await expectError({ $0.isClassNameConflict }) { _ = try await database.read(id: "a") as CbSpaceB.CbItem? }
            #expect((try await database.read(id: "a") as CbSpaceA.CbItem?)?.a == 1)
            #expect(try await database.count() == 1)
        }
    }

    @Test func everyIdentifierTypeGivesItsRecordID() async throws {
        try await withBothFaces { database, sync in
            try await database.write(CbIDModel(id: Int32.min))
            try await database.write(CbIDModel(id: Int64.max))
            try await database.write(CbIDModel(id: UInt.max))
            #expect(sync.write(CbIDModel(id: UInt32.max)))
            #expect(sync.write(CbIDModel(id: "string-id")))
            #expect(try await database.read(CbIDModel<Int32>.self, id: .min) == CbIDModel(id: Int32.min))
            #expect(try await database.read(id: String(Int64.max)) == CbIDModel(id: Int64.max))
            #expect(sync.read(CbIDModel<UInt>.self, id: .max) == CbIDModel(id: UInt.max))
            #expect(try await database.read(id: "4294967295") == CbIDModel(id: UInt32.max))
            #expect(try await database.read(CbIDModel<String>.self, id: "string-id") == CbIDModel(id: "string-id"))
            #expect("sub-string-id".dropFirst(4).recordID == "string-id")
            #expect(try await database.count() == 5)
        }
    }

    /// These decoders read the record in place, from LMDB's map, valid only during the read:
    /// a decoder or container kept past `init(from:)` refuses to read (a clean `DecodingError`)
    /// rather than read whatever those bytes hold by then.
    @Test func aDecoderKeptPastInitFromRefusesToReadRatherThanReadStaleBytes() async throws {
        try await withDatabase { database, _ in
            let original = String(repeating: "first ", count: 20)
            try await database.write(Record(id: "a", data: CbKeepsDecoders(name: original)))
            let read = try #require(try await database.read(id: "a") as CbKeepsDecoders?)
            #expect(read.name == original)
            for version in 0..<6 {
                try await database.write(Record(id: "a", data: CbKeepsDecoders(name: String(repeating: "v\(version) ", count: 40))))
            }
            for outcome in [
                Result { try read.nameDecoder?.singleValueContainer().decode(String.self) },
                Result { try read.decoder?.container(keyedBy: CbKeepsDecoders.CodingKeys.self).decode(String.self, forKey: .name) },
            ] {
                guard case let .failure(error) = outcome, case DecodingError.dataCorrupted = error else {
                    Issue.record("expected a DecodingError, got \(outcome)")
                    continue
                }
            }
        }
    }

    /// A thread reuses the top decoder of its last decode when nothing else holds it: a
    /// decoder or container a model kept is never reused, and stays ended through the decodes
    /// that follow on the thread (which reuse theirs, and decode what they read).
    @Test func aKeptDecoderOrContainerIsNotReusedByTheThreadsNextDecodes() throws {
        func fields(_ json: String) -> DataObject { DataObject(rawString: json) }
        let keptContainer = try CbKeepsContainer._restore(from: fields(#"{"object":"CbKeepsContainer","name":"first"}"#))
        let keptDecoders = try CbKeepsDecoders._restore(from: fields(#"{"object":"CbKeepsDecoders","name":"second"}"#))
        #expect(keptContainer.name == "first" && keptDecoders.name == "second")
        for index in 0..<4 {
            let person = CbPerson(id: "\(index)", name: "n\(index)", age: index, address: CbAddress(street: "s\(index)", zip: "z"), tags: ["t\(index)"], object: "o")
            #expect(try CbPerson._restore(from: fields(try #require(try person._storedFields().toRawString()))) == person)
            let again = try CbKeepsDecoders._restore(from: fields(#"{"object":"CbKeepsDecoders","name":"again \#(index)"}"#))
            #expect(again.name == "again \(index)")
            // Kept, so never another decode's decoder (which would make it live again meanwhile).
            #expect(try #require(again.decoder) as AnyObject !== (try #require(keptDecoders.decoder) as AnyObject))
        }
        for outcome in [
            Result { try keptContainer.container?.decode(String.self, forKey: .name) },
            Result { try keptDecoders.decoder?.container(keyedBy: CbKeepsDecoders.CodingKeys.self).decode(String.self, forKey: .name) },
            Result { try keptDecoders.nameDecoder?.singleValueContainer().decode(String.self) },
        ] {
            guard case let .failure(error) = outcome, case DecodingError.dataCorrupted = error else {
                Issue.record("expected a DecodingError, got \(outcome)")
                continue
            }
        }
    }

    @Test func anEmptyIDIsRefusedOnBothFaces() async throws {
        try await withBothFaces { (database, sync) async throws in
            let nameless = CbPerson(id: "", name: "n", age: 0, address: nil, tags: [], object: "")
            await expectError({ $0 == .emptyID }) { try await database.write(nameless) }
            await expectError({ $0 == .emptyID }) { try await database.write(contentsOf: [Self.ada, nameless]) }
            await expectError({ $0 == .emptyID }) { _ = try await database.read(CbPerson.self, id: "") }
            await expectError({ $0 == .emptyID }) { try await database.delete(nameless) }
            #expect(!sync.write(nameless))
            #expect(sync.lastError == .emptyID)
            #expect(sync.write(contentsOf: [Self.ada, nameless]) == 0)
            #expect(sync.read(CbPerson.self, id: "") == nil)
            #expect(!sync.delete(nameless))
            #expect(try await database.count() == 0)
        }
    }
}
