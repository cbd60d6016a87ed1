import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

// Hand-written models and `Codable` models share one stored format: each reads what the other
// writes, and for equal data both write the same bytes. `DataObject`'s typed `add` and `get`
// store every value kind in the form the `Codable` encoder gives it.

/// An enum with a raw value that is not `Codable`.
enum CbPlainRaw: Int {
    case one = 1
    case two = 2
}

/// Every value kind, stored by hand.
final class CbHandTwin: Storable, Equatable {
    var name = "", age = 0, score = 0.0, flag = false, born = Date(timeIntervalSince1970: 0)
    var tags: [String] = [], maybe: [Int?] = [], note: String?
    var uuid = UUID(), link = URL(string: "x:")!, blob = Data(), price = Decimal(0), big = UInt64(0), small = Int8(0), ratio = Float(0)
    var color = CbColor.red, level = CbLevel.low, meta: [String: Int] = [:], point = CbPoint(x: 0, y: 0, label: nil)
    var member: CbErrMember?, event = CbEvent.started, lines: [CbLine] = [], plain = CbPlainRaw.one

    init() {}

    required init(dataObject: DataObject) {
        name = dataObject.get("name")
        age = dataObject.get("age")
        score = dataObject.get("score")
        flag = dataObject.get("flag")
        born = dataObject.get("born", onFail: Date(timeIntervalSince1970: -1))
        tags = dataObject.get("tags")
        maybe = dataObject.get("maybe")
        note = dataObject.get("note")
        uuid = dataObject.get("uuid", onFail: UUID())
        link = dataObject.get("link", onFail: URL(string: "failed:")!)
        blob = dataObject.get("blob", onFail: Data([0xEE]))
        price = dataObject.get("price", onFail: Decimal(-1))
        big = dataObject.get("big", onFail: 1)
        small = dataObject.get("small", onFail: 1)
        ratio = dataObject.get("ratio", onFail: 1)
        color = dataObject.get("color", onFail: .red)
        level = dataObject.get("level", onFail: .low)
        meta = dataObject.get("meta", onFail: [:])
        point = dataObject.get("point", onFail: CbPoint(x: -1, y: -1, label: "failed"))
        member = dataObject.get("member")
        event = dataObject.get("event", onFail: .started)
        lines = dataObject.get("lines", onFail: [])
        plain = dataObject.get("plain", onFail: .one)
    }

    func toDataObject() -> DataObject {
        DataObject(self).add(key: "name", value: name).add(key: "age", value: age).add(key: "score", value: score)
            .add(key: "flag", value: flag).add(key: "born", value: born).add(key: "tags", value: tags).add(key: "maybe", value: maybe)
            .add(key: "note", value: note).add(key: "uuid", value: uuid).add(key: "link", value: link).add(key: "blob", value: blob)
            .add(key: "price", value: price).add(key: "big", value: big).add(key: "small", value: small).add(key: "ratio", value: ratio)
            .add(key: "color", value: color).add(key: "level", value: level).add(key: "meta", value: meta).add(key: "point", value: point)
            .add(key: "member", value: member).add(key: "event", value: event).add(key: "lines", value: lines).add(key: "plain", value: plain)
    }

    static func == (lhs: CbHandTwin, rhs: CbHandTwin) -> Bool {
        lhs.name == rhs.name && lhs.age == rhs.age && lhs.score.bitPattern == rhs.score.bitPattern && lhs.flag == rhs.flag
            && lhs.born == rhs.born && lhs.tags == rhs.tags && lhs.maybe == rhs.maybe && lhs.note == rhs.note && lhs.uuid == rhs.uuid
            && lhs.link == rhs.link && lhs.blob == rhs.blob && lhs.price == rhs.price && lhs.big == rhs.big && lhs.small == rhs.small
            && lhs.ratio.bitPattern == rhs.ratio.bitPattern && lhs.color == rhs.color && lhs.level == rhs.level && lhs.meta == rhs.meta
            && lhs.point == rhs.point && lhs.member?.name == rhs.member?.name && lhs.event == rhs.event && lhs.lines == rhs.lines
            && lhs.plain == rhs.plain
    }
}

/// The same fields, in the same order, by `Codable`.
struct CbCodableTwin: Codable, Persistable, Equatable {
    var name: String, age: Int, score: Double, flag: Bool, born: Date
    var tags: [String], maybe: [Int?], note: String?
    var uuid: UUID, link: URL, blob: Data, price: Decimal, big: UInt64, small: Int8, ratio: Float
    var color: CbColor, level: CbLevel, meta: [String: Int], point: CbPoint
    var member: CbErrMember?, event: CbEvent, lines: [CbLine], plain: Int

    static func == (lhs: CbCodableTwin, rhs: CbCodableTwin) -> Bool {
        lhs.name == rhs.name && lhs.age == rhs.age && lhs.score.bitPattern == rhs.score.bitPattern && lhs.flag == rhs.flag
            && lhs.born == rhs.born && lhs.tags == rhs.tags && lhs.maybe == rhs.maybe && lhs.note == rhs.note && lhs.uuid == rhs.uuid
            && lhs.link == rhs.link && lhs.blob == rhs.blob && lhs.price == rhs.price && lhs.big == rhs.big && lhs.small == rhs.small
            && lhs.ratio.bitPattern == rhs.ratio.bitPattern && lhs.color == rhs.color && lhs.level == rhs.level && lhs.meta == rhs.meta
            && lhs.point == rhs.point && lhs.member?.name == rhs.member?.name && lhs.event == rhs.event && lhs.lines == rhs.lines
            && lhs.plain == rhs.plain
    }
}

/// Holds a `Storable & Codable` value added with `add(key:value:)`.
final class CbHoldsDualByHand: Storable {
    let dual: CbDualModel
    let duals: [CbDualModel]
    let optionalDual: CbDualModel?
    init(dual: CbDualModel, duals: [CbDualModel], optionalDual: CbDualModel?) {
        (self.dual, self.duals, self.optionalDual) = (dual, duals, optionalDual)
    }
    required init(dataObject: DataObject) {
        dual = dataObject.getObject("dual", type: CbDualModel.self)
        duals = dataObject.getObjectArray("duals", type: CbDualModel.self)
        optionalDual = dataObject.getObjectOptional("optionalDual", type: CbDualModel.self)
    }
    func toDataObject() -> DataObject {
        DataObject(self).add(key: "dual", value: dual).add(key: "duals", value: duals).add(key: "optionalDual", value: optionalDual)
    }
}

/// Adds a value whose `encode(to:)` throws.
final class CbAddsBadValue: Storable {
    init() {}
    required init(dataObject: DataObject) {}
    func toDataObject() -> DataObject { DataObject(self).add(key: "fine", value: 1).add(key: "bad", value: CbBadInner(x: 1)) }
}

@Suite("Stored values: hand-written and Codable models share one format")
struct StoredValueTests {
    static func sample() -> (hand: CbHandTwin, codable: CbCodableTwin) {
        let hand = CbHandTwin()
        hand.name = "Ada \"object\" 日本"
        hand.age = -36
        hand.score = 0.1
        hand.flag = true
        hand.born = Date(timeIntervalSince1970: 1_262_729_990.25)
        hand.tags = ["a", "", "object"]
        hand.maybe = [1, nil, 3]
        hand.note = "note"
        hand.uuid = UUID()
        hand.link = URL(string: "https://example.com/x?y=1#z")!
        hand.blob = Data([0, 1, 0xFF])
        hand.price = Decimal(string: "-12345678901234567890.123456789")!
        hand.big = .max
        hand.small = .min
        hand.ratio = 0.1
        hand.color = .green
        hand.level = .high
        hand.meta = ["object": 1, "b": 2]
        hand.point = CbPoint(x: 3, y: -.infinity, label: nil)
        hand.member = CbErrMember(name: "m")
        hand.event = .moved(to: CbPoint(x: 1, y: 2, label: "l"), speed: 2.5)
        hand.lines = [CbLine(from: hand.point, to: CbPoint(x: 0, y: 0, label: "to"), via: [], object: "o")]
        hand.plain = .two
        let codable = CbCodableTwin(
            name: hand.name, age: hand.age, score: hand.score, flag: hand.flag, born: hand.born, tags: hand.tags, maybe: hand.maybe,
            note: hand.note, uuid: hand.uuid, link: hand.link, blob: hand.blob, price: hand.price, big: hand.big, small: hand.small,
            ratio: hand.ratio, color: hand.color, level: hand.level, meta: hand.meta, point: hand.point, member: hand.member,
            event: hand.event, lines: hand.lines, plain: hand.plain.rawValue)
        return (hand, codable)
    }

    /// `text` with its class name member changed from `from` to `to`.
    static func renamed(_ text: String, from: String, to: String) -> String {
        let old = #"{"object":"\#(from)","#
        #expect(text.hasPrefix(old))
        return #"{"object":"\#(to)","# + text.dropFirst(old.count)
    }

    @Test func equalDataIsStoredAsTheSameBytes() throws {
        let (hand, codable) = Self.sample()
        let handText = try #require(hand.toDataObject().toRawString())
        let codableText = try #require(try codable._storedFields().toRawString())
        #expect(Self.renamed(handText, from: "CbHandTwin", to: "CbCodableTwin") == codableText)
        // The nested model carries its class name either way.
        #expect(codableText.contains(#""member":{"object":"CbErrMember","name":"m"}"#))
    }

    @Test func eachKindReadsWhatTheOtherWrites() throws {
        let (hand, codable) = Self.sample()
        let fromHand = try CbCodableTwin._restore(from: hand.toDataObject())
        #expect(fromHand == codable)
        let fromCodable = CbHandTwin(dataObject: try codable._storedFields())
        #expect(fromCodable == hand)
        // Through JSON text.
        let handText = try #require(hand.toDataObject().toRawString())
        #expect(try CbCodableTwin._restore(from: DataObject(validating: handText)) == codable)
        let codableText = try #require(try codable._storedFields().toRawString())
        #expect(CbHandTwin(dataObject: DataObject(rawString: codableText)) == hand)
    }

    @Test func eachKindReadsTheOthersRecordsFromADatabase() async throws {
        let (hand, codable) = Self.sample()
        try await withBothFaces { database, sync in
            // The bytes each kind stores, under the other's class name.
            let handText = try #require(hand.toDataObject().toRawString())
            try await database.write(Record(id: "byHand", data: CbRawRecord(Self.renamed(handText, from: "CbHandTwin", to: "CbCodableTwin"))))
            let codableText = try #require(try codable._storedFields().toRawString())
            try await database.write(Record(id: "byCodable", data: CbRawRecord(Self.renamed(codableText, from: "CbCodableTwin", to: "CbHandTwin"))))
            #expect(try await database.read(id: "byHand") == codable)
            #expect(sync.read(id: "byHand") == codable)
            #expect(try await database.read(id: "byCodable") as CbHandTwin? == hand)
            #expect(sync.read(id: "byCodable") as CbHandTwin? == hand)
            // And each reads its own.
            try await database.write(Record(id: "hand", data: hand))
            #expect(sync.write(Record(id: "codable", data: codable)))
            #expect(try await database.read(id: "hand") as CbHandTwin? == hand)
            #expect(try await database.read(id: "codable") == codable)
        }
    }

    /// A hand-written model renamed to a `Codable` one: its records read through the new type.
    @Test func aHandWrittenModelReplacedByACodableOneKeepsItsRecords() async throws {
        final class CbReplacedByHand: Storable {
            let title: String
            let when: Date
            init(title: String, when: Date) { (self.title, self.when) = (title, when) }
            required init(dataObject: DataObject) { (title, when) = (dataObject.get("title"), dataObject.get("when")) }
            func toDataObject() -> DataObject { DataObject(self).add(key: "title", value: title).add(key: "when", value: when) }
        }
        struct CbReplacedByCodable: Codable, Persistable {
            var title: String
            var when: Date
        }
        try await withDatabase { database, _ in
            let when = Date(timeIntervalSince1970: 1_000.5)
            try await database.write(Record(id: "old", data: CbReplacedByHand(title: "t", when: when)))
            Legacy.addClassRefactor(old: "CbReplacedByHand", new: "CbReplacedByCodable")
            defer { Legacy.removeClassRefactor(old: "CbReplacedByHand") }
            let read = try #require(try await database.read(id: "old") as CbReplacedByCodable?)
            #expect(read.title == "t" && read.when == when)
            #expect(try await database.count(CbReplacedByCodable.self) == 1)
            // Written back, it is stored under the new name.
            try await database.write(Record(id: "old", data: read))
            #expect(try await database.readIDs(CbReplacedByCodable.self) == ["old"])
            #expect(try await database.count(CbReplacedByHand.self) == 0)
        }
    }

    /// A nil optional: hand-written code stores `null`, synthesized `Codable` code leaves the
    /// member out; each reads the other's as nil.
    @Test func nilOptionalsReadAsNilEitherWay() throws {
        let (hand, codable) = Self.sample()
        hand.note = nil
        hand.member = nil
        var withoutNote = codable
        withoutNote.note = nil
        withoutNote.member = nil
        let handText = try #require(hand.toDataObject().toRawString())
        #expect(handText.contains(#""note":null"#) && handText.contains(#""member":null"#))
        let codableText = try #require(try withoutNote._storedFields().toRawString())
        #expect(!codableText.contains(#""note""#) && !codableText.contains(#""member""#))
        #expect(try CbCodableTwin._restore(from: DataObject(validating: handText)) == withoutNote)
        let fromCodable = CbHandTwin(dataObject: DataObject(rawString: codableText))
        #expect(fromCodable == hand)
    }

    /// A nested model of an unrelated class, read by a hand-written model with the typed `get`,
    /// fails the read as `getObjectOptional` does (it is never restored as another class).
    @Test func aTypedGetOfANestedModelOfAnotherClassFailsTheRead() async throws {
        final class CbGetsMember: Storable {
            let member: CbErrMember?
            let viaGetObject: CbDualModel?
            init() { (member, viaGetObject) = (nil, nil) }
            required init(dataObject: DataObject) {
                member = dataObject.get("member")
                viaGetObject = dataObject.getObjectOptional("dual", type: CbDualModel.self)
            }
            func toDataObject() -> DataObject { DataObject(self) }
        }
        try await withDatabase { database, _ in
            try await database.write(Record(id: "other", data: CbErrOther(x: 1)))
            try await database.write(Record(id: "fine", data: CbRawRecord(#"{"object":"CbGetsMember","member":{"object":"CbErrMember","name":"m"}}"#)))
            #expect((try await database.read(id: "fine") as CbGetsMember?)?.member?.name == "m")
            // A nested object without a class name is read as the class asked for.
            try await database.write(Record(id: "plain", data: CbRawRecord(#"{"object":"CbGetsMember","member":{"name":"p"}}"#)))
            #expect((try await database.read(id: "plain") as CbGetsMember?)?.member?.name == "p")
            try await database.write(Record(id: "typed", data: CbRawRecord(#"{"object":"CbGetsMember","member":{"object":"CbErrOther","x":1}}"#)))
            await expectError({ $0 == .typeMismatch(id: "typed", requested: "CbErrMember", stored: "CbErrOther") }) {
                _ = try await database.read(id: "typed") as CbGetsMember?
            }
            try await database.write(Record(id: "storable", data: CbRawRecord(#"{"object":"CbGetsMember","dual":{"object":"CbErrOther","x":1}}"#)))
            await expectError({ $0 == .typeMismatch(id: "storable", requested: "CbDualModel", stored: "CbErrOther") }) {
                _ = try await database.read(id: "storable") as CbGetsMember?
            }
        }
    }

    @Test func aCodableModelRegisteredUnderANameOfItsOwnIsStoredUnderIt() async throws {
        struct CbRegisteredModel: Codable, Persistable, Equatable {
            var value: Int
        }
        try StoredClasses.register(CbRegisteredModel.self, as: "Registered.Codable.Model")
        let text = try #require(try CbRegisteredModel(value: 1)._storedFields().toRawString())
        #expect(text == #"{"object":"Registered.Codable.Model","value":1}"#)
        try await withDatabase { database, _ in
            try await database.write(Record(id: "r", data: CbRegisteredModel(value: 1)))
            #expect(try await database.read(id: "r") == CbRegisteredModel(value: 1))
            #expect(try await database.readIDs(CbRegisteredModel.self) == ["r"])
        }
    }

    @Test func richerValuesRoundTripThroughAddAndGet() throws {
        let (hand, _) = Self.sample()
        let text = try #require(hand.toDataObject().toRawString())
        #expect(CbHandTwin(dataObject: DataObject(rawString: text)) == hand)
        #expect(CbHandTwin(dataObject: hand.toDataObject()) == hand)
        // Each value alone, in a data object of its own.
        let object = DataObject(CbHandTwin())
            .add(key: "i64", value: Int64.min).add(key: "u", value: UInt.max).add(key: "f", value: Float.infinity)
            .add(key: "d", value: Decimal.nan).add(key: "nilUUID", value: nil as UUID?).add(key: "someURL", value: URL(string: "a:b") as URL?)
            .add(key: "dict", value: ["object": Date(timeIntervalSince1970: 0)]).add(key: "set", value: Set([3]))
            .add(key: "object", value: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)
        let again = DataObject(rawString: try #require(object.toRawString()))
        for data in [object, again] {
            #expect(data.get("i64") as Int64? == Int64.min)
            #expect(data.get("u") as UInt? == UInt.max)
            #expect(data.get("f") as Float? == Float.infinity)
            #expect((data.get("d") as Decimal?)?.isNaN == true)
            #expect(data.get("nilUUID") as UUID? == nil)
            #expect(data.get("someURL") as URL? == URL(string: "a:b"))
            #expect(data.get("dict") as [String: Date]? == ["object": Date(timeIntervalSince1970: 0)])
            #expect(data.get("set") as Set<Int>? == Set([3]))
            #expect(data.get("object") as UUID? == UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
            #expect(data.className == "CbHandTwin")
        }
        #expect(try #require(object.toRawString()).contains(#""nilUUID":null"#))
    }

    @Test func missingOrMistypedRicherValuesGiveNilOrOnFail() throws {
        let json = #"""
        {"object":"X","uuid":"not-a-uuid","url":7,"blob":"***","price":"abc","small":300,"negative":-1,"ratio":"fast",
         "color":"purple","level":5,"point":{"x":1},"plain":9,"flag":1,"when":"yesterday","list":[1,"two"],"nested":{"object":"Y"}}
        """#
        let data = try DataObject(validating: json)
        #expect(data.get("uuid") as UUID? == nil)
        #expect(data.get("uuid", onFail: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!).uuidString.hasSuffix("1"))
        #expect(data.get("url") as URL? == nil)
        #expect(data.get("blob") as Data? == nil)
        #expect(data.get("price") as Decimal? == nil)
        #expect(data.get("price", onFail: Decimal(5)) == 5)
        #expect(data.get("small") as UInt8? == nil && data.get("small") as Int8? == nil)
        #expect(data.get("small") as Int16? == 300)
        #expect(data.get("negative") as UInt64? == nil && data.get("negative", onFail: UInt32(9)) == 9)
        #expect(data.get("ratio") as Float? == nil)
        #expect(data.get("color") as CbColor? == nil && data.get("color", onFail: CbColor.object) == .object)
        #expect(data.get("level") as CbLevel? == nil && data.get("level", onFail: CbLevel.high) == .high)
        #expect(data.get("point") as CbPoint? == nil)
        #expect(data.get("plain") as CbPlainRaw? == nil && data.get("plain", onFail: CbPlainRaw.two) == .two)
        #expect(data.get("flag") as Bool? == nil)
        #expect(data.get("when") as Date? == nil)
        #expect(data.get("list") as [Int]? == nil)  // the generic get is all or nothing
        #expect(data.get("list") as [Int] == [1])  // SwiftLocal's array get leaves mistyped elements out
        #expect(data.get("missing") as UUID? == nil && data.get("missing") as [String: Int]? == nil)
        #expect(data.get("missing", onFail: ["k": 1]) == ["k": 1])
        // Legacy keys.
        #expect(data.get("renamed", legacyKeys: ["missing", "small"]) as Int16? == 300)
        // A class of its own nested where a plain struct is asked for decodes by its fields.
        #expect(data.get("nested") as [String: String]? == [:])
    }

    @Test func aStorableAndCodableValueIsAddedAsStorable() async throws {
        let holder = CbHoldsDualByHand(dual: CbDualModel(value: 1), duals: [CbDualModel(value: 2), CbDualModel(value: 3)], optionalDual: nil)
        let tree = try #require(jsonTree(holder.toDataObject().toRawString()))
        #expect(tree["dual"] as? NSDictionary == ["object": "CbDualModel", "storable_value": 1])
        #expect(tree["duals"] as? NSArray == [["object": "CbDualModel", "storable_value": 2], ["object": "CbDualModel", "storable_value": 3]])
        #expect(tree["optionalDual"] is NSNull)
        try await withDatabase { database, _ in
            try await database.write(Record(id: "h", data: holder))
            let read = try #require(try await database.read(id: "h") as CbHoldsDualByHand?)
            #expect(read.dual.value == 1 && read.dual.madeBy == "dataObject")
            #expect(read.duals.map(\.value) == [2, 3] && read.optionalDual == nil)
        }
    }

    @Test func aValueThatCannotBeEncodedMakesTheWriteThrowNamingItsKey() async throws {
        #expect(CbAddsBadValue().toDataObject().toRawString() == nil)
        try await withBothFaces { (database, sync) async throws in
            await expectError({ $0.unencodable?.id == "bad" && $0.unencodable?.path == "bad" }) {
                try await database.write(Record(id: "bad", data: CbAddsBadValue()))
            }
            #expect(!sync.write(Record(id: "bad", data: CbAddsBadValue())))
            #expect(sync.lastError?.unencodable?.path == "bad")
            #expect(try await database.count() == 0)
        }
    }
}
