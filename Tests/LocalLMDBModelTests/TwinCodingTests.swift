import Foundation
import LocalLMDBModels
import LocalLMDBTestSupport
import Testing

/// The generated coding against synthesized `Codable` on the same models: the same bytes both
/// ways, over generated values with the edge values of <doc:StoredValues>.
@Suite struct TwinCodingTests {
    /// Values a generator draws from, edges first.
    struct Values {
        var random: SplitMix

        static let strings = ["", "a", "object", "~object", "NaN", "-Infinity", "Infinity", "\u{0}", "a\u{0}b", "\"\\/\u{1}\u{1F}",
                              "é", "e\u{301}", "日本語", "🦊", "\u{FFFF}", String(repeating: "x", count: 300)]
        static let doubles: [Double] = [0, -0.0, 1, -1, 0.1, .pi, 1e308, -1e308, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
                                        .infinity, -.infinity, .nan, 1e16, 123456789012345680, Double(bitPattern: 1), 0.30000000000000004]
        static let integers: [Int] = [0, 1, -1, .max, .min, 1 << 53, (1 << 53) + 1, -(1 << 53) - 1, 42]
        static let seconds: [Double] = [0, -0.0005, 1_744_520_305.123, 253_402_300_800, -62_167_219_200.001, 1e15, -1e15, 0.000_000_1]

        mutating func pick<T>(_ choices: [T]) -> T { choices[Int(random.next() % UInt64(choices.count))] }
        mutating func chance() -> Bool { random.next() % 3 != 0 }
        mutating func string() -> String {
            chance() ? pick(Self.strings) : String((0..<Int(random.next() % 12)).map { _ in Character(Unicode.Scalar(UInt8(random.next() % 0x7F))) })
        }
        mutating func int() -> Int { chance() ? pick(Self.integers) : Int(bitPattern: UInt(random.next())) }
        mutating func double() -> Double {
            chance() ? pick(Self.doubles) : Double(bitPattern: random.next())
        }
        mutating func date() -> Date {
            Date(timeIntervalSince1970: chance() ? pick(Self.seconds) : Double(Int64(bitPattern: random.next()) >> 12) / 1000)
        }
        mutating func array<T>(_ element: (inout Values) -> T) -> [T] {
            (0..<Int(random.next() % 4)).map { _ in element(&self) }
        }
        mutating func optional<T>(_ value: (inout Values) -> T) -> T? { chance() ? value(&self) : nil }
    }

    static func person(_ values: inout Values) -> Plain.Person {
        func address(_ values: inout Values) -> Plain.Address {
            Plain.Address(street: values.string(), city: values.string(), postcode: values.optional { $0.string() })
        }
        func badge(_ values: inout Values) -> Plain.Badge { Plain.Badge(title: values.string(), level: values.int()) }
        var scores: [String: Int] = [:]
        // One entry at most: a dictionary's order is its instance's (so two equal dictionaries may
        // encode in two orders, with or without the macro).
        if values.chance() { scores[values.string()] = values.int() }
        let finite = values.double()
        return Plain.Person(
            name: values.string(), age: values.int(), height: values.double(), active: values.chance(), born: values.date(),
            nickname: values.optional { $0.string() }, rank: values.optional { $0.int() }, weight: values.optional { $0.double() },
            flag: values.optional { $0.chance() }, lastSeen: values.optional { $0.date() }, tags: values.array { $0.string() },
            numbers: values.array { $0.int() }, ratios: values.array { $0.double() }, switches: values.array { $0.chance() },
            maybeTags: values.optional { $0.array { $0.string() } }, address: address(&values), oldAddress: values.optional(address),
            addresses: values.array(address), badge: badge(&values), badges: values.optional { $0.array(badge) }, scores: scores,
            level: values.chance() ? .low : .high, id: UUID(), homepage: values.optional { _ in URL(fileURLWithPath: "/a b/c") },
            balance: finite.isFinite ? Decimal(finite) : (Decimal(string: "-3.14159265358979323846") ?? 0), avatar: Data(values.string().utf8),
            small: Int8(truncatingIfNeeded: values.int()), huge: UInt64(truncatingIfNeeded: values.int()),
            ratio: Float(bitPattern: UInt32(truncatingIfNeeded: values.random.next())), object: values.string(), renamed: values.string(),
            nested: values.array { $0.array { $0.optional { $0.int() } } })
    }

    /// The stored bytes of a plain person, and of the typed person restored from them.
    @Test(arguments: 0..<8)
    func sameBytesBothWays(seed: Int) throws {
        var values = Values(random: SplitMix(seed: UInt64(seed)))
        for _ in 0..<250 {
            let plain = Self.person(&values)
            let plainBytes = try plain._storedFields().rawData
            #expect(!plainBytes.isEmpty)
            // Plain bytes, read by the generated code, written again by it: the same bytes.
            let typed = try Typed.Person._restore(from: DataObject(validating: String(decoding: plainBytes, as: UTF8.self)))
            let typedBytes = try typed._storedFields().rawData
            #expect(typedBytes == plainBytes, "\(String(decoding: typedBytes, as: UTF8.self))\n≠\n\(String(decoding: plainBytes, as: UTF8.self))")
            // And the other way: the generated bytes, read by synthesized `Codable`, written again.
            let back = try Plain.Person._restore(from: DataObject(validating: String(decoding: typedBytes, as: UTF8.self)))
            #expect(try back._storedFields().rawData == typedBytes)
        }
    }

    /// The generated reads fail where the `Codable` decoder fails, with the same path.
    @Test func readsFailAsCodableDoes() throws {
        var values = Values(random: SplitMix(seed: 99))
        let text = String(decoding: try Self.person(&values)._storedFields().rawData, as: UTF8.self)
        // Each edit gives a field another value; the old one moves to a member no model reads.
        let edits: [(String, String)] = [
            ("age", "\"x\""), ("name", "5"), ("tags", "[\"a\",1]"), ("born", "\"yesterday\""), ("address", "{\"street\":7}"),
            ("address", "{\"street\":\"s\"}"), ("badge", "{\"title\":\"t\",\"level\":\"high\"}"), ("height", "null"),
            ("numbers", "[1.5]"), ("switches", "{}"), ("level", "\"medium\""), ("small", "300"), ("oldAddress", "[]"),
        ].map { ("\"\($0.0)\":", "\"\($0.0)\":\($0.1),\"unread\":") }
        // A field missing altogether.
        let missing = [("\"age\":", "\"agee\":"), ("\"address\":", "\"addresss\":")]
        for (from, to) in edits + missing {
            let edited = text.replacingOccurrences(of: from, with: to)
            #expect(edited != text)
            let object = try DataObject(validating: edited)
            let plainError = #expect(throws: (any Error).self) { try Plain.Person._restore(from: object) }
            let typedError = #expect(throws: (any Error).self) { try Typed.Person._restore(from: DataObject(validating: edited)) }
            #expect(Self.path(plainError) == Self.path(typedError), "\(from): \(String(describing: plainError)) vs \(String(describing: typedError))")
        }
    }

    static func path(_ error: (any Error)?) -> String {
        guard let error = error as? DecodingError else { return "not a DecodingError: \(String(describing: error))" }
        let context: DecodingError.Context
        var path: [any CodingKey] = []
        switch error {
        case let .keyNotFound(key, found): (context, path) = (found, [key])
        case let .valueNotFound(_, found), let .typeMismatch(_, found), let .dataCorrupted(found): context = found
        @unknown default: return "?"
        }
        return (context.codingPath + path).map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }
}

extension TwinCodingTests {
    /// Optionals the spelling hides, reordered `CodingKeys`, defaults first, keywords as names:
    /// the same bytes as `Codable`, both ways (found by review: the first four stored other bytes).
    @Test func whatTheSpellingHides() throws {
        for note in [nil, "n"] as [String?] {
            for count in [nil, 3] as [Int?] {
                for tail in [nil, [], [1, 2]] as [[Int]?] {
                    let plain = PlainEdges.Edge(level: 2, first: "f", note: note, count: count, default: 4, tail: tail)
                    let bytes = try plain._storedFields().rawData
                    let typed = TypedEdges.Edge(level: 2, first: "f", note: note, count: count, default: 4, tail: tail)
                    #expect(try typed._storedFields().rawData == bytes, "\(String(decoding: bytes, as: UTF8.self))")
                    let text = String(decoding: bytes, as: UTF8.self)
                    let read = try TypedEdges.Edge._restore(from: DataObject(validating: text))
                    #expect(read == typed)
                    #expect(try PlainEdges.Edge._restore(from: DataObject(validating: text)) == plain)
                }
            }
        }
        // A missing optional is nil; a missing field with a default is the default.
        let read = try TypedEdges.Edge._restore(from: DataObject(validating: #"{"object":"Edge","1st":"x","default":1}"#))
        #expect(read == TypedEdges.Edge(level: 7, first: "x", note: nil, count: nil, default: 1, tail: nil))
        let sparse = TypedEdges.Sparse(class: "k", kept: 1, scratch: [9])
        let sparseBytes = try sparse._storedFields().rawData
        #expect(sparseBytes == (try PlainEdges.Sparse(class: "k", kept: 1)._storedFields().rawData))
        #expect(try TypedEdges.Sparse._restore(from: DataObject(validating: String(decoding: sparseBytes, as: UTF8.self))).scratch == [])
    }
}
