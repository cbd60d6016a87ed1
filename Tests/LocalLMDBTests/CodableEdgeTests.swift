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

@Suite("Codable edge cases") struct CodableEdgeTests {
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
