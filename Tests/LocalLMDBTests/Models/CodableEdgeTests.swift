import Foundation
import LocalLMDB
import Testing

struct EdgeAddress: Codable, Equatable {
    var street: String
    var zip: UInt64
}

struct EdgePerson: Codable, Persistable, Equatable {
    var name: String
    var age: Int
    var object: String
    var born: Date
    var address: EdgeAddress?
    var tags: [String]
    var scores: [String: Double]
    var price: Decimal
}

struct EdgeNestedOptional: Codable, Persistable, Equatable {
    var value: Int??
    var list: [Int??]
}

/// A model whose `encode(to:)` writes the member `x` several times, one way after another
/// (`steps`, from the one at `start`), in its top container or, with `inner`, in a container
/// nested under `inner`. Only the encoding is compared (with `JSONEncoder`'s): it reads back nothing.
struct EdgeRewrites: Codable, Persistable {
    enum Key: String, CodingKey { case x, y, inner }

    /// One way of writing `x`.
    enum Step: CaseIterable {
        case value, null, encodable, nestedKeyed, nestedUnkeyed, superKeyed, superSingle
        /// A nested keyed container for `x` that is written to again after the next step.
        case nestedKeptOpen
    }

    var steps: [Step]
    var start = 0
    var inner = false

    init(_ steps: [Step], from start: Int = 0, inner: Bool = false) {
        self.steps = steps
        self.start = start
        self.inner = inner
    }

    /// Where `JSONEncoder` would stop the process: a nested container asked for a member that
    /// holds another kind of value (it continues one of the same kind). There, the last write
    /// wins: what is stored is what `JSONEncoder` stores for the steps from the last such one.
    static func lastReplacingStep(_ steps: [Step]) -> Int {
        enum Kind { case none, scalar, object, array }
        var start = 0
        var kind = Kind.none
        for (index, step) in steps.enumerated() {
            switch (step, kind) {
            case (.nestedKeyed, .scalar), (.nestedKeyed, .array), (.nestedKeptOpen, .scalar), (.nestedKeptOpen, .array),
                 (.nestedUnkeyed, .scalar), (.nestedUnkeyed, .object):
                start = index
            default:
                break
            }
            switch step {
            case .value, .null, .superSingle: kind = .scalar
            case .encodable, .nestedKeyed, .superKeyed, .nestedKeptOpen: kind = .object
            case .nestedUnkeyed: kind = .array
            }
        }
        return start
    }

    init(from decoder: any Decoder) throws {
        steps = []
    }

    func encode(to encoder: any Encoder) throws {
        var top = encoder.container(keyedBy: Key.self)
        if inner {
            var nested = top.nestedContainer(keyedBy: Key.self, forKey: .inner)
            try write(into: &nested)
        } else {
            try write(into: &top)
        }
    }

    private func write(into container: inout KeyedEncodingContainer<Key>) throws {
        var keptOpen: KeyedEncodingContainer<Key>?
        for (index, step) in steps.enumerated() where index >= start {
            try Self.write(step, index, into: &container, keptOpen: &keptOpen)
            if step != .nestedKeptOpen, var open = keptOpen {
                try open.encode(-1, forKey: .y)  // After `x` was written again: lost.
                keptOpen = nil
            }
        }
    }

    /// Each step in a function of its own, so that what it opened is released when it returns
    /// (`JSONEncoder`'s super encoders write their value into their parent when released).
    private static func write(_ step: Step, _ index: Int, into container: inout KeyedEncodingContainer<Key>, keptOpen: inout KeyedEncodingContainer<Key>?) throws {
        switch step {
        case .value:
            try container.encode(index, forKey: .x)
        case .null:
            try container.encodeNil(forKey: .x)
        case .encodable:
            try container.encode(["index": index], forKey: .x)
        case .nestedKeyed:
            var nested = container.nestedContainer(keyedBy: Key.self, forKey: .x)
            try nested.encode(index, forKey: .y)
        case .nestedUnkeyed:
            var nested = container.nestedUnkeyedContainer(forKey: .x)
            try nested.encode(index)
        case .superKeyed:
            let superEncoder = container.superEncoder(forKey: .x)
            var nested = superEncoder.container(keyedBy: Key.self)
            try nested.encode(index, forKey: .y)
        case .superSingle:
            let superEncoder = container.superEncoder(forKey: .x)
            var single = superEncoder.singleValueContainer()
            try single.encode("super \(index)")
        case .nestedKeptOpen:
            var nested = container.nestedContainer(keyedBy: Key.self, forKey: .x)
            try nested.encode(index, forKey: .y)
            keptOpen = nested
        }
    }
}

/// `{"x": 42}`, written after a nested container for `x`, as the issue reported it: the model's
/// own decoding reads it back.
struct EdgeValueAfterNested: Codable, Persistable, Equatable {
    enum Key: String, CodingKey { case x }
    var x: Int

    init(x: Int) {
        self.x = x
    }

    init(from decoder: any Decoder) throws {
        x = try decoder.container(keyedBy: Key.self).decode(Int.self, forKey: .x)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        var nested = container.nestedContainer(keyedBy: Key.self, forKey: .x)
        try nested.encode(1, forKey: .x)
        try container.encode(x, forKey: .x)
    }
}

/// A generic property wrapper that encodes its value through a single value container, as
/// most do: a nil optional there is `null`.
@propertyWrapper
struct EdgeWrapped<Value: Codable & Equatable>: Codable, Equatable {
    var wrappedValue: Value

    init(wrappedValue: Value) {
        self.wrappedValue = wrappedValue
    }

    init(from decoder: any Decoder) throws {
        wrappedValue = try decoder.singleValueContainer().decode(Value.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue)
    }
}

struct EdgeWrappedModel: Codable, Persistable, Equatable {
    @EdgeWrapped var note: String?
    @EdgeWrapped var count: Int?
    @EdgeWrapped var address: EdgeAddress?
    var list: [EdgeWrapped<Int?>]
}

@Suite("Codable edge cases") struct CodableEdgeTests {
    /// A nil optional that a property wrapper encodes through `singleValueContainer()` is stored
    /// as `null`, as `JSONEncoder` stores it, and reads back as nil; through a data object too.
    /// (An optional holding a nil optional is still refused: see the test below.)
    @Test func aNilOptionalInAPropertyWrapperIsStoredAsNull() async throws {
        let empty = EdgeWrappedModel(note: nil, count: nil, address: nil, list: [EdgeWrapped(wrappedValue: nil), EdgeWrapped(wrappedValue: 2)])
        let full = EdgeWrappedModel(note: "n", count: 1, address: EdgeAddress(street: "Main", zip: 1), list: [])
        let text = try #require(try empty._storedFields().toRawString())
        #expect(text == #"{"object":"EdgeWrappedModel","note":null,"count":null,"address":null,"list":[null,2]}"#)
        let stored = try #require(jsonTree(text)?.mutableCopy() as? NSMutableDictionary)
        stored.removeObject(forKey: "object")
        #expect(stored == jsonTree(String(decoding: try JSONEncoder().encode(empty), as: UTF8.self)))
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "empty", data: empty))
            try await database.write(Record(id: "full", data: full))
            #expect(try await database.read(id: "empty") == empty)
            #expect(try await database.read(id: "full") == full)
            #expect(sync.read(id: "empty") == empty)
        }
        let fields = DataObject(rawString: #"{"object":"X"}"#).add(key: "wrapped", value: EdgeWrapped<Int?>(wrappedValue: nil))
        #expect(fields.toRawString() == #"{"object":"X","wrapped":null}"#)
        #expect(fields.get("wrapped") == EdgeWrapped<Int?>(wrappedValue: nil))
    }

    /// The last write of a member wins, however each was made (a value, `null`, an `Encodable`,
    /// a nested keyed or unkeyed container, a super encoder), and a nested container asked for
    /// a member holding the same kind continues it: for every pair of ways (and the first again
    /// after them), at the top and in a nested container, what `JSONEncoder` stores, and the
    /// last write where it would stop the process instead.
    @Test func theLastWriteOfAMemberWinsAsWithJSONEncoder() throws {
        let ways = EdgeRewrites.Step.allCases
        var checked = 0
        for inner in [false, true] {
            for first in ways {
                for second in ways {
                    for steps in [[first, second], [first, second, first]] {
                        let model = EdgeRewrites(steps, inner: inner)
                        let stored = try #require(jsonTree(try model._storedFields().toRawString())?.mutableCopy() as? NSMutableDictionary)
                        stored.removeObject(forKey: "object")
                        let oracle = EdgeRewrites(steps, from: EdgeRewrites.lastReplacingStep(steps), inner: inner)
                        let expected = try #require(jsonTree(String(decoding: try JSONEncoder().encode(oracle), as: UTF8.self)))
                        #expect(stored == expected, "\(steps), inner: \(inner)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 2 * 8 * 8 * 2)
    }

    /// The case the issue reported: written, consistent, and read back by the model itself.
    @Test func aValueWrittenAfterANestedContainerIsStoredAndReadBack() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "x", data: EdgeValueAfterNested(x: 42)))
            #expect(try await database.read(id: "x") == EdgeValueAfterNested(x: 42))
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func aCodableModelRoundTripsThroughReadByIDAndReadAll() async throws {
        try await withDatabase { database, _ in
            let person = EdgePerson(
                name: "Ada", age: 36, object: "x", born: Date(timeIntervalSince1970: 1_000_000.123),
                address: EdgeAddress(street: "Main", zip: UInt64.max), tags: ["a", "b"], scores: ["m": 1.5, "object": 2],
                price: try #require(Decimal(string: "3.14159265358979323846264338327950288")))
            try await database.write(Record(id: "ada", data: person))
            let read: EdgePerson? = try await database.read(id: "ada")
            #expect(read == person)
            let all: [EdgePerson] = try await database.read()
            #expect(all == [person])
        }
    }

    /// JSON has one `null`: `.some(nil)` of a nested optional would read back as nil, so it is
    /// refused when written, and nothing is stored. `nil` and `.some(value)` round-trip.
    @Test func aNestedOptionalHoldingNilIsRefusedNotFlattened() async throws {
        try await withDatabase { database, _ in
            let kept = EdgeNestedOptional(value: .some(5), list: [.some(1), .none])
            try await database.write(Record(id: "kept", data: kept))
            #expect(try await database.read(id: "kept") == kept)
            let absent = EdgeNestedOptional(value: .none, list: [])
            try await database.write(Record(id: "absent", data: absent))
            #expect(try await database.read(id: "absent") == absent)

            for (id, refused) in [("field", EdgeNestedOptional(value: .some(nil), list: [])),
                                  ("element", EdgeNestedOptional(value: 1, list: [2, .some(nil)]))] {
                await expectError({
                    if case let .unencodableValue(errorID, path, _) = $0 { return errorID == id && !path.isEmpty }
                    return false
                }) { try await database.write(Record(id: id, data: refused)) }
            }
            #expect(try await database.count() == 2)
        }
    }

    /// A data object made from JSON text and then edited is written out again from its tree:
    /// numbers that a Double cannot hold exactly (beyond 2^64, more digits than 17, exponents)
    /// must come back as they were, not rounded.
    @Test func editingADataObjectKeepsNumbersItDidNotTouch() throws {
        let numbers = [
            "18446744073709551615", "-9223372036854775809", "123456789012345678901234567890",
            "0.1000000000000000000001", "1e300", "1.50", "-0.0",
        ]
        for number in numbers {
            let dataObject = DataObject(rawString: "{\"object\":\"X\",\"n\":\(number)}")
            dataObject.add(key: "edited", value: true)
            let text = try #require(dataObject.toRawString())
            #expect(text.contains("\"n\":\(number)"), "\(number) became \(text)")
            let decimal: Decimal? = dataObject.get("n")
            #expect(decimal == Decimal(string: number))
        }
    }
}
