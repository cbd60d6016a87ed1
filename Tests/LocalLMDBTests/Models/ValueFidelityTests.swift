import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// A model with a field named "object" (which the stored JSON uses for the class name), at the
/// top level and in a nested object.
final class FidelityAnnotation: Storable {
    let object: String
    let tilde: String
    let nested: FidelityAnnotation?
    init(object: String, tilde: String, nested: FidelityAnnotation?) {
        self.object = object
        self.tilde = tilde
        self.nested = nested
    }
    required init(dataObject: DataObject) {
        object = dataObject.get("object")
        tilde = dataObject.get("~object")
        nested = dataObject.getObjectOptional("nested", type: FidelityAnnotation.self)
    }
    func toDataObject() -> DataObject {
        DataObject(self).add(key: "object", value: object).add(key: "~object", value: tilde).add(key: "nested", value: nested)
    }
}

/// Doubles and dates, alone and in arrays.
final class FidelityValues: Storable {
    let number: Double
    let numbers: [Double]
    let optionalNumbers: [Double?]
    let date: Date
    let dates: [Date]
    init(number: Double, numbers: [Double], optionalNumbers: [Double?], date: Date, dates: [Date]) {
        (self.number, self.numbers, self.optionalNumbers, self.date, self.dates) = (number, numbers, optionalNumbers, date, dates)
    }
    required init(dataObject: DataObject) {
        number = dataObject.get("number", onFail: -42)
        numbers = dataObject.get("numbers")
        optionalNumbers = dataObject.get("optionalNumbers")
        date = dataObject.get("date", onFail: Date(timeIntervalSince1970: -42))
        dates = dataObject.get("dates")
    }
    func toDataObject() -> DataObject {
        DataObject(self).add(key: "number", value: number).add(key: "numbers", value: numbers)
            .add(key: "optionalNumbers", value: optionalNumbers).add(key: "date", value: date).add(key: "dates", value: dates)
    }
}

/// Nested `depth` levels deep: objects of itself.
final class FidelityChain: Storable {
    let next: FidelityChain?
    init(depth: Int) {
        next = depth > 1 ? FidelityChain(depth: depth - 1) : nil
    }
    required init(dataObject: DataObject) {
        next = dataObject.getObjectOptional("next", type: FidelityChain.self)
    }
    func toDataObject() -> DataObject { DataObject(self).add(key: "next", value: next) }
    var depth: Int { 1 + (next?.depth ?? 0) }
}

@Suite("Value fidelity")
struct ValueFidelityTests {
    @Test func aFieldNamedObjectIsAFieldLikeAnyOther() async throws {
        try await withDatabase { database, _ in
            let inner = FidelityAnnotation(object: "Note", tilde: "~~", nested: nil)
            try await database.write(Record(id: "a", data: FidelityAnnotation(object: "Note", tilde: "~", nested: inner)))
            try await database.write(Record(id: "n", data: Note(text: "a real note")))
            let read: FidelityAnnotation? = try await database.read(id: "a")
            #expect(read?.object == "Note" && read?.tilde == "~")
            #expect(read?.nested?.object == "Note" && read?.nested?.tilde == "~~")
            #expect(try await database.count(FidelityAnnotation.self) == 1)
            #expect(try await database.readIDs(Note.self) == ["n"])
            #expect(try await database.verifyIntegrity().isConsistent)
            // Through the JSON text too.
            let text = try #require(FidelityAnnotation(object: "x", tilde: "y", nested: inner).toDataObject().toRawString())
            let again = FidelityAnnotation(dataObject: DataObject(rawString: text))
            #expect(again.object == "x" && again.tilde == "y" && again.nested?.object == "Note")
        }
    }

    @Test func nonFiniteDoublesComeBackExactlyAndKeepTheirPositions() async throws {
        try await withDatabase { database, _ in
            let oddNaN = -Double(nan: 0x1234, signaling: true)
            let values = FidelityValues(
                number: .nan, numbers: [1, .nan, 2, .infinity, 3, -.infinity, -0.0, oddNaN, .greatestFiniteMagnitude, .leastNonzeroMagnitude],
                optionalNumbers: [nil, .infinity, nil, .nan], date: Date(timeIntervalSince1970: 0), dates: [])
            try await database.write(Record(id: "v", data: values))
            let read = try #require(try await database.read(id: "v") as FidelityValues?)
            #expect(read.number.isNaN)
            #expect(read.numbers.map(\.bitPattern) == values.numbers.map(\.bitPattern))
            #expect(read.optionalNumbers.map { $0?.bitPattern } == values.optionalNumbers.map { $0?.bitPattern })
            // Only the exact spellings are doubles.
            for spelling in ["nan", "NaN:0x7FF8000000000001", "NaN:0x7ff8000000000000", "NaN:0x3ff0000000000000", "Infinity "] {
                #expect(DataObject(rawString: "{\"v\":\"\(spelling)\"}").get("v", onFail: 7.0) == 7, "\(spelling)")
            }
            let infinite = FidelityValues(number: -.infinity, numbers: [], optionalNumbers: [], date: Date(), dates: [])
            let text = try #require(infinite.toDataObject().toRawString())
            #expect(FidelityValues(dataObject: DataObject(rawString: text)).number == -.infinity)
        }
    }

    @Test func datesOfAnyYearComeBackExactly() async throws {
        let seconds: [Double] = [
            253_402_300_800, 253_402_300_799.999, -62_167_219_200, -62_167_219_200.001, -62_198_755_200, 1e15, -1e15, 1e18, -1e18,
            9.3e15, 0, -0.0005, 1_744_520_305.123, Date.distantPast.timeIntervalSince1970, Date.distantFuture.timeIntervalSince1970,
            // Beyond 2^53 ms, where `t * 1000` is no longer exact (this one came back a second off), and Int64's ends.
            7_875_734_051_324_096, 12_345_678_901_234.567, -9.223_372_036_854_775_808e18, 9_223_372_036_854_774_784,
        ]
        var generator = SplitMix(seed: 7)
        let random = (0..<200).map { _ in Double(Int64(bitPattern: generator.next()) >> 10) / 1000 }
        let dates = (seconds + random).map { Date(timeIntervalSince1970: $0) }
        // Exactly: the very same `timeIntervalSinceReferenceDate` (sub-millisecond parts included).
        let expected = dates
        try await withDatabase { database, _ in
            let values = FidelityValues(number: 1, numbers: [], optionalNumbers: [], date: dates[0], dates: dates)
            try await database.write(Record(id: "d", data: values))
            let read = try #require(try await database.read(id: "d") as FidelityValues?)
            #expect(read.date.timeIntervalSinceReferenceDate.bitPattern == expected[0].timeIntervalSinceReferenceDate.bitPattern)
            for (index, date) in read.dates.enumerated()
            where date.timeIntervalSinceReferenceDate.bitPattern != expected[index].timeIntervalSinceReferenceDate.bitPattern {
                Issue.record("\(dates[index].timeIntervalSince1970) came back as \(date.timeIntervalSince1970)")
            }
            #expect(read.dates.count == dates.count)
        }
        let text = try #require(FidelityValues(number: 1, numbers: [], optionalNumbers: [], date: dates[0], dates: []).toDataObject().toRawString())
        #expect(text.contains("\"+010000-01-01T00:00:00.000Z\""))
        #expect(FidelityValues(dataObject: DataObject(rawString: text)).date == expected[0])
    }

    /// `Date()` and any date between milliseconds come back as the very same date, through a
    /// hand-written model, a `Codable` one and JSON text: they were rounded to the millisecond,
    /// silently. Dates on a whole millisecond keep SwiftLocal's three digits.
    @Test func datesBetweenMillisecondsComeBackExactly() async throws {
        struct Stamped: Codable, Persistable {
            var when: Date
            var all: [Date]
        }
        var generator = SplitMix(seed: 11)
        let random = (0..<300).map { _ in
            Date(timeIntervalSinceReferenceDate: Double(Int64(bitPattern: generator.next()) >> 30) + Double(generator.next() % 1_000_000_007) / 1_000_000_007)
        }
        let dates = [
            Date(), Date(timeIntervalSince1970: 0.0001), Date(timeIntervalSince1970: -0.0001), Date(timeIntervalSince1970: 1e-9),
            Date(timeIntervalSinceReferenceDate: 1e15 + 0.125), Date(timeIntervalSinceReferenceDate: -1e12 - 0.3),
            Date(timeIntervalSinceReferenceDate: 0.5e-300), Date(timeIntervalSince1970: 1_744_520_305.1234567),
        ] + random
        func same(_ lhs: [Date], _ rhs: [Date]) -> Bool {
            lhs.map(\.timeIntervalSinceReferenceDate.bitPattern) == rhs.map(\.timeIntervalSinceReferenceDate.bitPattern)
        }
        try await withDatabase { database, _ in
            let values = FidelityValues(number: 1, numbers: [], optionalNumbers: [], date: dates[0], dates: dates)
            try await database.write(Record(id: "hand", data: values))
            let read = try #require(try await database.read(id: "hand") as FidelityValues?)
            #expect(same([read.date] + read.dates, [dates[0]] + dates))
            try await database.write(Record(id: "codable", data: Stamped(when: dates[0], all: dates)))
            let stamped = try #require(try await database.read(id: "codable") as Stamped?)
            #expect(same([stamped.when] + stamped.all, [dates[0]] + dates))
        }
        for date in dates {
            let text = try #require(DataObject(Homework(answers: "", grade: nil)).add(key: "d", value: date).toRawString())
            let back: Date? = DataObject(rawString: text).get("d")
            #expect(back.map { same([$0], [date]) } == true, "\(date.timeIntervalSinceReferenceDate) as \(text)")
        }
        let whole = try #require(DataObject(Homework(answers: "", grade: nil)).add(key: "d", value: Date(timeIntervalSince1970: 1_744_520_305.123)).toRawString())
        #expect(whole.contains(#""2025-04-13T04:58:25.123Z""#))
    }

    @Test func datesThatCannotBeStoredAreRefusedAtWriteTime() async throws {
        try await withDatabase { database, _ in
            for seconds in [Double.nan, .infinity, -.infinity, 1e300] {
                let values = FidelityValues(number: 1, numbers: [], optionalNumbers: [], date: Date(), dates: [Date(), Date(timeIntervalSince1970: seconds)])
                await expectError({ $0 == .unencodableValue(id: "bad", path: "dates[1]", reason: $0.unencodableReason) }) {
                    try await database.write(Record(id: "bad", data: values))
                }
                #expect(values.toDataObject().toRawString() == nil)
            }
            let count = try await database.count()
            #expect(count == 0)
        }
    }

    @Test func nestingBeyondTheReadersLimitIsRefusedAtWriteTime() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "ok", data: FidelityChain(depth: 512)))
            let deepest: FidelityChain? = try await database.read(id: "ok")
            #expect(deepest?.depth == 512)
            await expectError({ if case .unencodableValue(id: "deep", _, _) = $0 { true } else { false } }) {
                try await database.write(Record(id: "deep", data: FidelityChain(depth: 513)))
            }
            await expectError({ if case .unencodableValue = $0 { true } else { false } }) {
                try await database.write(contentsOf: [Record(id: "fine", data: FidelityChain(depth: 2)), Record(id: "deep", data: FidelityChain(depth: 2000))])
            }
            // Nothing of the refused writes is stored, and the type still reads.
            let all: [FidelityChain] = try await database.read()
            #expect(all.map(\.depth) == [512])
        }
    }
}

extension LocalDatabaseError {
    var unencodableReason: String {
        if case let .unencodableValue(_, _, reason) = self { return reason }
        return ""
    }
}

/// Builds a data object with a date that cannot be stored, then reads a field of it before
/// returning it, which turns its fields into bytes.
final class FidelityPeeking: Storable {
    init() {}
    required init(dataObject: DataObject) {}
    func toDataObject() -> DataObject {
        let object = DataObject(self).add(key: "when", value: Date(timeIntervalSince1970: .nan)).add(key: "name", value: "x")
        _ = object.get("name") as String
        return object
    }
}

extension ValueFidelityTests {
    @Test func aValueThatCannotBeStoredIsRefusedEvenAfterItsObjectWasReadFrom() async throws {
        try await withDatabase { database, _ in
            await expectError({ if case .unencodableValue(id: "p", path: "when", _) = $0 { true } else { false } }) {
                try await database.write(Record(id: "p", data: FidelityPeeking()))
            }
            #expect(FidelityPeeking().toDataObject().toRawString() == nil)
            let count = try await database.count()
            #expect(count == 0)
        }
    }
}

/// A JSON passthrough value, decoded as the usual `AnyCodable` does: as a `Double` if it can
/// be one, else as a `String`.
enum FidelityAny: Codable {
    case number(Double)
    case text(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else {
            self = .text(try container.decode(String.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case let .number(number): try container.encode(number)
        case let .text(text): try container.encode(text)
        }
    }

    /// The same case with the same text, or a double with the same bits.
    func same(_ other: FidelityAny) -> Bool {
        switch (self, other) {
        case let (.number(number), .number(otherNumber)): number.bitPattern == otherNumber.bitPattern
        case let (.text(text), .text(otherText)): text == otherText
        default: false
        }
    }
}

/// Passthrough values alone, in an array and in a dictionary, and a member read by trying
/// `Double` first in a keyed container.
struct FidelityPassthrough: Codable, Persistable {
    var value: FidelityAny
    var values: [FidelityAny]
    var byName: [String: FidelityAny]
    var member: FidelityAny

    enum CodingKeys: String, CodingKey { case value, values, byName, member }

    init(value: FidelityAny, values: [FidelityAny], byName: [String: FidelityAny], member: FidelityAny) {
        (self.value, self.values, self.byName, self.member) = (value, values, byName, member)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        value = try container.decode(FidelityAny.self, forKey: .value)
        values = try container.decode([FidelityAny].self, forKey: .values)
        byName = try container.decode([String: FidelityAny].self, forKey: .byName)
        if let number = try? container.decode(Double.self, forKey: .member) {
            member = .number(number)
        } else {
            member = .text(try container.decode(String.self, forKey: .member))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value, forKey: .value)
        try container.encode(values, forKey: .values)
        try container.encode(byName, forKey: .byName)
        switch member {
        case let .number(number): try container.encode(number, forKey: .member)
        case let .text(text): try container.encode(text, forKey: .member)
        }
    }
}

/// Doubles and strings side by side in a hand-written model.
final class FidelityTexts: Storable {
    let number: Double
    let text: String
    let texts: [String]
    init(number: Double, text: String, texts: [String]) {
        (self.number, self.text, self.texts) = (number, text, texts)
    }
    required init(dataObject: DataObject) {
        number = dataObject.get("number", onFail: -42)
        text = dataObject.get("text", onFail: "?")
        texts = dataObject.get("texts")
    }
    func toDataObject() -> DataObject {
        DataObject(self).add(key: "number", value: number).add(key: "text", value: text).add(key: "texts", value: texts)
    }
}

/// The model the records of old versions are read as: `Double` fields.
struct FidelityDoubles: Codable, Persistable {
    var number: Double
    var numbers: [Double]
    var optionalNumber: Double?
}

extension ValueFidelityTests {
    /// Strings spelt as the stored forms of NaN and the infinities.
    static let nonFiniteSpellings = ["NaN", "Infinity", "-Infinity", "NaN:0x7ff8000000000001", "NaN:0xfff0000000001234"]
    /// The doubles stored in those forms, and a finite one.
    static let nonFiniteNumbers = [Double.nan, .infinity, -.infinity, Double(bitPattern: 0x7FF8_0000_0000_0001), Double(bitPattern: 0xFFF0_0000_0000_1234), 1.5]

    /// A `String` is never read as a `Double`: one spelt as a stored NaN or infinity stays text
    /// for a model that tries `Double` first (as `JSONDecoder` refuses such a string as a
    /// `Double`), and the doubles themselves come back as doubles, bit for bit.
    @Test func aStringSpeltAsANonFiniteDoubleStaysAString() async throws {
        let texts = Self.nonFiniteSpellings.map(FidelityAny.text)
        let numbers = Self.nonFiniteNumbers.map(FidelityAny.number)
        let all = texts + numbers
        try await withBothFaces { database, sync in
            for (index, value) in all.enumerated() {
                let model = FidelityPassthrough(
                    value: value, values: all, byName: Dictionary(uniqueKeysWithValues: all.enumerated().map { ("k\($0)", $1) }), member: value)
                try await database.write(Record(id: "p\(index)", data: model))
                for read in [try await database.read(id: "p\(index)") as FidelityPassthrough?, sync.read(id: "p\(index)") as FidelityPassthrough?] {
                    let read = try #require(read)
                    #expect(read.value.same(value) && read.member.same(value), "\(value) read as \(read.value), \(read.member)")
                    #expect(read.values.count == all.count && zip(read.values, all).allSatisfy { $0.same($1) }, "\(read.values)")
                    #expect(all.indices.allSatisfy { read.byName["k\($0)"]?.same(all[$0]) == true }, "\(read.byName)")
                }
            }
            // Hand-written models: a string is not a `Double`, and a double not a string's text.
            for (spelling, number) in zip(Self.nonFiniteSpellings, Self.nonFiniteNumbers) {
                try await database.write(Record(id: "h", data: FidelityTexts(number: number, text: spelling, texts: Self.nonFiniteSpellings)))
                let read = try #require(try await database.read(id: "h") as FidelityTexts?)
                #expect(read.number.bitPattern == number.bitPattern && read.text == spelling && read.texts == Self.nonFiniteSpellings)
                let stored = read.toDataObject()
                #expect(stored.get("text") as Double? == nil, "\(spelling)")
                #expect((stored.get("texts") as [Double]).isEmpty && (stored.get("texts") as [Double?]).allSatisfy { $0 == nil })
            }
        }
        // Other JSON readers read the same strings.
        let text = try #require(try FidelityPassthrough(value: texts[1], values: texts, byName: [:], member: texts[0])._storedFields().toRawString())
        let foreign = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(foreign["value"] as? String == "Infinity" && foreign["member"] as? String == "NaN")
        #expect(foreign["values"] as? [String] == Self.nonFiniteSpellings)
    }

    /// Records written before strings and doubles were told apart, with NaN and the infinities
    /// stored as their plain spellings, still read as doubles where a model declares `Double`;
    /// and a data object read and then changed writes them back as doubles.
    @Test func nonFiniteDoublesStoredByEarlierVersionsStillReadAsDoubles() async throws {
        let json = #"{"object":"FidelityDoubles","number":"Infinity","numbers":["NaN","-Infinity","NaN:0x7ff8000000000001",2],"optionalNumber":"-Infinity"}"#
        try await withDatabase { database, _ in
            try await database.write(Record(id: "old", data: CbRawRecord(json)))
            let read = try #require(try await database.read(id: "old") as FidelityDoubles?)
            #expect(read.number == .infinity && read.optionalNumber == -.infinity)
            #expect(read.numbers.map(\.bitPattern) == [Double.nan, -.infinity, Double(bitPattern: 0x7FF8_0000_0000_0001), 2].map(\.bitPattern))
        }
        let old = DataObject(rawString: json)
        #expect(old.get("number", onFail: 0.0) == .infinity)
        #expect((old.get("numbers") as [Double]).count == 4)
        // Changed, its fields are written again from a tree: the doubles stay doubles, strings strings.
        old.add(key: "note", value: "Infinity")
        let changed = DataObject(rawString: try #require(old.toRawString()))
        #expect(changed.get("number", onFail: 0.0) == .infinity && changed.get("optionalNumber", onFail: 0.0) == -.infinity)
        #expect((changed.get("numbers") as [Double]).count == 4)
        #expect(changed.get("note") as Double? == nil && changed.get("note", onFail: "") == "Infinity")
    }
}
