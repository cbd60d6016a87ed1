import Foundation
import LocalLMDB
import Testing

struct SmokeAddress: Codable, Equatable {
    var street: String
    var zip: UInt64
}

struct SmokePerson: Codable, Persistable, Equatable {
    var name: String
    var age: Int
    var object: String
    var born: Date
    var address: SmokeAddress?
    var tags: [String]
    var scores: [String: Double]
    var price: Decimal
}

@Suite struct CodableSmokeTests {
    @Test func roundTrip() async throws {
        try await withDatabase { database, _ in
            let person = SmokePerson(
                name: "Ada", age: 36, object: "x", born: Date(timeIntervalSince1970: 1_000_000.123),
                address: SmokeAddress(street: "Main", zip: UInt64.max), tags: ["a", "b"], scores: ["m": 1.5],
                price: Decimal(string: "3.14159265358979323846264338327950288")!)
            try await database.write(Record(id: "ada", data: person))
            let read: SmokePerson? = try await database.read(id: "ada")
            #expect(read == person)
            let all: [SmokePerson] = try await database.read()
            #expect(all == [person])
        }
    }
}
