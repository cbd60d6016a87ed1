import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

/// Every value kind in every position a model can hold it: alone, optional (present and nil),
/// in an array and as a dictionary value (under ordinary keys and the reserved-looking ones).
struct CbBox<V: Codable & CbSame>: Codable, Persistable {
    var value: V
    var optional: V?
    var absent: V?
    var array: [V]
    var dictionary: [String: V]

    init(_ value: V) {
        self.value = value
        optional = value
        absent = nil
        array = [value, value]
        dictionary = ["k": value, "object": value, "~object": value, "": value, "ключ ✓": value]
    }

    func same(_ other: CbBox<V>) -> Bool {
        value.same(other.value) && optional.same(other.optional) && other.absent == nil
            && array.same(other.array) && dictionary.same(other.dictionary)
    }
}

/// One kind of value and the values of it to round-trip.
struct CbValueCase: Sendable, CustomTestStringConvertible {
    let name: String
    let check: @Sendable () async throws -> Void
    var testDescription: String { name }

    init<V: Codable & CbSame & Sendable>(_ name: String, _ values: [V]) {
        self.name = name
        check = { try await Self.roundTrip(values) }
    }

    /// Each value boxed, through JSON text in memory, then written by each face and read back by both.
    static func roundTrip<V: Codable & CbSame & Sendable>(_ values: [V], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await withBothFaces { database, sync in
            for (index, value) in values.enumerated() {
                let box = CbBox(value)
                let text = try #require(try box._storedFields().toRawString(), "\(value)")
                let fromText = try CbBox<V>._restore(from: DataObject(validating: text))
                #expect(box.same(fromText), "\(value) through its JSON text \(text)")

                try await database.write(Record(id: "actor-\(index)", data: box))
                #expect(sync.write(Record(id: "sync-\(index)", data: box)), "\(value): \(String(describing: sync.lastError))")
                for id in ["actor-\(index)", "sync-\(index)"] {
                    let viaActor = try #require(try await database.read(id: id) as CbBox<V>?)
                    #expect(box.same(viaActor), "\(value) written as \(id), read by LocalDatabase: \(viaActor.value)")
                    let viaSync = try #require(sync.read(id: id) as CbBox<V>?, "\(String(describing: sync.lastError))")
                    #expect(box.same(viaSync), "\(value) written as \(id), read by SerializationDatabase: \(viaSync.value)")
                }
            }
            let all: [CbBox<V>] = try await database.read()
            #expect(all.count == 2 * values.count)
            #expect((sync.read() as [CbBox<V>]).count == 2 * values.count)
            #expect(try await database.count(CbBox<V>.self) == 2 * values.count)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }
}

struct CbPoint: Codable, Equatable, CbSame {
    var x: Int
    var y: Double
    var label: String?
}

struct CbLine: Codable, Equatable, CbSame {
    var from: CbPoint
    var to: CbPoint
    var via: [CbPoint]
    var object: String
}

enum CbColor: String, Codable, CbSame {
    case red
    case green = "vert"
    case object
}

enum CbLevel: Int, Codable, CbSame {
    case low = -1
    case high = 100
}

enum CbEvent: Codable, Equatable, CbSame {
    case started
    case moved(to: CbPoint, speed: Double)
    case renamed(String)
    case tagged(String, Int)
    case object(Int?)
}

/// The integers at their extremes, and around zero.
private func extremes<I: FixedWidthInteger>(_ type: I.Type) -> [I] {
    var values: [I] = [I.min, I.max, 0, 1, I.max - 1]
    if I.isSigned { values += [-1, I.min + 1] }
    return values
}

private let floats: [Float] = [
    0, -0.0, 0.1, 1, -1, .pi, 16_777_215, 1e-7, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNormalMagnitude,
    .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .infinity, -.infinity, .nan, -.nan, Float(nan: 0x123, signaling: false),
]

private let doubles: [Double] = [
    0, -0.0, 0.1, 1.0 / 3, -2.5, 1e22, 9_007_199_254_740_991, 123_456.789e-300, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
    .leastNormalMagnitude, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .infinity, -.infinity, .nan, -.nan,
    Double(nan: 0x1234, signaling: true), -Double(nan: 0xBEEF, signaling: false), Double(Int64.max), Double(Int64.min),
]

private let decimals: [Decimal] = [
    0, 1, -1,
    Decimal(string: "12345678901234567890123456789012345678")!,  // 38 digits: every one kept
    Decimal(string: "-3.1415926535897932384626433832795028841")!,
    Decimal(string: "0.1")!,
    Decimal(sign: .plus, exponent: -120, significand: 7),
    Decimal(sign: .minus, exponent: -128, significand: 123_456_789),
    Decimal(sign: .plus, exponent: 100, significand: 5),
    .greatestFiniteMagnitude, .leastFiniteMagnitude, .nan,
]

private let dates: [Date] = [
    Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_744_520_305.123), Date(timeIntervalSince1970: -0.001),
    Date(timeIntervalSince1970: 0.0004), Date(timeIntervalSince1970: 1_744_520_305.1236),
    Date(timeIntervalSince1970: 253_402_300_800),  // 10000-01-01
    Date(timeIntervalSince1970: 253_402_300_799.999), Date(timeIntervalSince1970: -62_167_219_200.001),
    .distantPast, .distantFuture,
]

private let strings: [String] = [
    "", "hello", "日本語 🇯🇵 e\u{301} \u{FEFF}", "quote\" backslash\\ slash/ \n\r\t\u{8}\u{C}", "\u{0}", "a\u{0}b\u{0}",
    "\u{1}\u{1F}\u{7F}\u{80}\u{2028}\u{2029}", "NaN", "Infinity", "object", "~object", String(repeating: "long ", count: 4000),
]

private let urls: [URL] = [
    URL(string: "https://example.com/a/b?q=1&r=%20x#frag")!, URL(string: "file:///tmp/with%20space/f.txt")!,
    URL(string: "mailto:ada@example.com")!, URL(string: "urn:isbn:0451450523")!,
    URL(string: "https://user:pw@host.example:8080/p;params?x=%E2%9C%93")!, URL(fileURLWithPath: "/var/tmp/dir", isDirectory: true),
]

private let valueCases: [CbValueCase] = [
    CbValueCase("String", strings),
    CbValueCase("Bool", [true, false]),
    CbValueCase("Int", extremes(Int.self)),
    CbValueCase("Int8", extremes(Int8.self)),
    CbValueCase("Int16", extremes(Int16.self)),
    CbValueCase("Int32", extremes(Int32.self)),
    CbValueCase("Int64", extremes(Int64.self)),
    CbValueCase("UInt", extremes(UInt.self)),
    CbValueCase("UInt8", extremes(UInt8.self)),
    CbValueCase("UInt16", extremes(UInt16.self)),
    CbValueCase("UInt32", extremes(UInt32.self)),
    CbValueCase("UInt64", extremes(UInt64.self) + [UInt64(Int64.max), UInt64(Int64.max) + 1]),
    CbValueCase("Float", floats),
    CbValueCase("Double", doubles),
    CbValueCase("Decimal", decimals),
    CbValueCase("Date", dates),
    CbValueCase("Data", [Data(), Data([0, 1, 2, 0xFF, 0xFE]), Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 37) })]),
    CbValueCase("URL", urls),
    CbValueCase("UUID", [UUID(), UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!]),
    CbValueCase("Int? (present; nil is the Int?? case below)", [0, Int.min] as [Int?]),
    CbValueCase("[Int?]", [[], [nil], [1, nil, 3], [nil, nil]] as [[Int?]]),
    CbValueCase("[[Int]]", [[], [[]], [[1], [2, 3], []]] as [[[Int]]]),
    CbValueCase("[[String: [Double]]]", [[["a": [1.5, -.infinity]], [:]]]),
    CbValueCase("[String: Int]", [
        [:], ["object": 1, "~object": 2, "~~object": 3, "": 4, "日本": 5, "a\"b\\c": 6, "a.b[0]": 7, "\u{0}": 8, "objec": 9, "xobject": 10],
    ]),
    CbValueCase("[Int: String]", [[:], [0: "zero", -5: "minus five", Int.max: "max", Int.min: "min"]]),
    CbValueCase("[UUID: Int] (stored as a key, value array)", [[:], [UUID(): 1, UUID(): 2]]),
    CbValueCase("[Double: String]", [[0.5: "half", -0.0: "minus zero", .infinity: "inf"]]),
    CbValueCase("Set<String>", [Set<String>(), Set(["a", "object", ""])]),
    CbValueCase("[String: Int?]", [["some": 1, "none": nil]] as [[String: Int?]]),
    CbValueCase("nested struct", [
        CbLine(from: CbPoint(x: 1, y: 2.5, label: nil), to: CbPoint(x: -3, y: .infinity, label: "end"), via: [], object: "line"),
        CbLine(from: CbPoint(x: 0, y: 0, label: ""), to: CbPoint(x: 0, y: -0.0, label: "object"), via: [CbPoint(x: 9, y: 9, label: nil)], object: ""),
    ]),
    CbValueCase("String raw enum", [CbColor.red, .green, .object]),
    CbValueCase("Int raw enum", [CbLevel.low, .high]),
    CbValueCase("enum with associated values", [
        CbEvent.started, .moved(to: CbPoint(x: 1, y: 2, label: "p"), speed: 3.5), .renamed("x"), .tagged("t", -1), .object(nil), .object(5),
    ]),
]

@Suite("Codable value round trips")
struct CodableValueTests {
    @Test(arguments: valueCases)
    func everyValueKindComesBackThroughBothFaces(_ valueCase: CbValueCase) async throws {
        try await valueCase.check()
    }

    /// The forms the value table of `CodableValues.swift` promises, read from the stored JSON.
    @Test func valuesAreStoredInTheDocumentedForms() throws {
        struct CbForms: Codable, Persistable {
            var date = Date(timeIntervalSince1970: 1_262_729_990.5)
            var data = Data([0, 1, 2, 0xFF])
            var url = URL(string: "https://example.com/a?b=c")!
            var uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
            var decimal = Decimal(string: "3.14159265358979323846264338327950288")!
            var decimalNaN = Decimal.nan
            var big = UInt64.max
            var float: Float = 0.1
            var nan = Double.nan
            var infinity = Double.infinity
            var negativeInfinity = -Double.infinity
            var color = CbColor.green
            var level = CbLevel.high
            var missing: Int? = nil
            var object = "field"
        }
        let text = try #require(try CbForms()._storedFields().toRawString())
        #expect(text.hasPrefix(#"{"object":"CbForms","#))
        #expect(text.contains(#""date":"2010-01-05T22:19:50.500Z""#))
        #expect(text.contains(#""data":"\#(Data([0, 1, 2, 0xFF]).base64EncodedString())""#))
        #expect(text.contains(#""url":"https://example.com/a?b=c""#))
        #expect(text.contains(#""uuid":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F""#))
        #expect(text.contains(#""decimal":3.14159265358979323846264338327950288,"#))
        #expect(text.contains(#""decimalNaN":"NaN""#))
        #expect(text.contains(#""big":\#(UInt64.max),"#))
        #expect(text.contains(#""float":\#(Float(0.1).description),"#))
        #expect(text.contains(#""nan":"NaN""#) && text.contains(#""infinity":"Infinity""#) && text.contains(#""negativeInfinity":"-Infinity""#))
        #expect(text.contains(#""color":"vert""#) && text.contains(#""level":100"#))
        #expect(!text.contains("missing"))  // synthesized code omits nil optionals
        #expect(text.contains(#""~object":"field""#))
        // Fields follow in the order they were encoded.
        let order = ["\"date\"", "\"data\"", "\"url\"", "\"uuid\"", "\"decimal\"", "\"big\"", "\"float\"", "\"~object\""]
        let positions = order.compactMap { text.range(of: $0)?.lowerBound }
        #expect(positions.count == order.count && positions == positions.sorted())
    }

    /// A signalling Float NaN loses its signalling bit: a Float NaN is stored through `Double(self)`,
    /// and the conversion quiets it (Double NaNs keep every bit, signalling ones included).
    @Test func aSignallingFloatNaNKeepsItsBits() throws {
        struct CbSignalling: Codable, Persistable {
            var value: Float
        }
        let value = Float(nan: 0x12, signaling: true)
        let text = try #require(try CbSignalling(value: value)._storedFields().toRawString())
        let read = try CbSignalling._restore(from: DataObject(validating: text))
        #expect(read.value.isNaN)
        #expect(read.value.bitPattern == value.bitPattern, "stored as \(text)")
    }

    /// `Int??`: JSON has one `null`, so a present `.some(nil)` would read back as plain nil (as
    /// with Foundation's coders). It is refused when written instead; the others round-trip.
    @Test func aNestedOptionalHoldingNilIsRefused() async throws {
        struct CbDoubleOptional: Codable, Persistable {
            var inner: Int??
        }
        try await withDatabase { database, _ in
            for (id, value) in [("none", Int??.none), ("someSome", Int??.some(4))] {
                try await database.write(Record(id: id, data: CbDoubleOptional(inner: value)))
            }
            let none = try #require(try await database.read(id: "none") as CbDoubleOptional?)
            #expect(none.inner == Int??.none)
            let someSome = try #require(try await database.read(id: "someSome") as CbDoubleOptional?)
            #expect(someSome.inner == Int??.some(4))
            await expectError({ $0.unencodable?.id == "someNone" }) {
                try await database.write(Record(id: "someNone", data: CbDoubleOptional(inner: .some(nil))))
            }
            #expect(try await database.count() == 2)
        }
    }

    /// A value written by hand in a JSON form other than the one stored (a whole-number double
    /// `2.0` for an integer, `1e2`) reads when it is exact, and is refused when it is not.
    @Test func numbersConvertOnlyWhenExact() async throws {
        struct CbNumbers: Codable, Persistable {
            var int: Int
            var small: UInt8
            var double: Double
            var float: Float
        }
        try await withDatabase { database, _ in
            try await database.write(Record(id: "exact", data: CbRawRecord(#"{"object":"CbNumbers","int":2.0,"small":1e2,"double":3,"float":-0}"#)))
            let exact = try #require(try await database.read(id: "exact") as CbNumbers?)
            #expect(exact.int == 2 && exact.small == 100 && exact.double == 3 && exact.float == 0)
            try await database.write(Record(id: "inexact", data: CbRawRecord(#"{"object":"CbNumbers","int":2.5,"small":1,"double":3,"float":0}"#)))
            let error = await caughtError { _ = try await database.read(id: "inexact") as CbNumbers? }
            #expect(error?.decodingFailure?.path == "int")
        }
    }
}
