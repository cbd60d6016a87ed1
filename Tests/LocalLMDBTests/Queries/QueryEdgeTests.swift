import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A model with a Bool index.
struct Flagged: Codable, Persistable {
    static let indexes: [Index] = [.on("flag", "n")]
    var flag: Bool
    var n: Int
}

@Suite("Query edge cases")
struct QueryEdgeTests {
    @Test func anEmptyListMatchesNothing() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: QueryTests.customers())
            #expect(try await database.count(Query(Customer.self).filter("address.city", .isIn([String]()))) == 0)
            #expect(try await database.readIDs(Query(Customer.self).filter("name", .isIn([String]()))).isEmpty)
        }
    }

    @Test func booleanRangesCoverBothValues() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: [Record(id: "f", data: Flagged(flag: false, n: 1)), Record(id: "t", data: Flagged(flag: true, n: 2))])
            #expect(try await database.readIDs(Query(Flagged.self).filter("flag", .greaterThan(false))) == ["t"])
            #expect(try await database.readIDs(Query(Flagged.self).filter("flag", .atLeast(false))) == ["f", "t"])
            #expect(try await database.readIDs(Query(Flagged.self).filter("flag", .lessThan(true))) == ["f"])
            await expectError({ if case .invalidQuery = $0 { true } else { false } }) {
                _ = try await database.read(Query(Flagged.self).filter("n", .atLeast(1)).filter("n", .lessThan("m")))
            }
        }
    }

    @Test func longValuesSharingAStemAreFoundAndOrderedByValue() async throws {
        try await withDatabase { database, _ in
            let x480 = String(repeating: "x", count: 480), x600 = String(repeating: "x", count: 600)
            _ = try await database.write(contentsOf: [
                Record(id: "a", data: Customer(name: "A", email: x480 + "z")),
                Record(id: "b", data: Customer(name: "B", email: x600 + "b")),
                Record(id: "c", data: Customer(name: "C", email: x600)),
                Record(id: "d", data: Customer(name: "D", email: x600 + "a")),
                Record(id: "e", data: Customer(name: "E", email: String(repeating: "x", count: 470))),
            ])
            #expect(try await database.readIDs(Query(Customer.self).filter("email", .equals(x600))) == ["c"])
            #expect(try await database.readIDs(Query(Customer.self).filter("email", .equals(x480 + "z"))) == ["a"])
            #expect(try await database.readIDs(Query(Customer.self).filter("email", .atLeast("x")).sorted(by: "email")) == ["e", "c", "d", "b", "a"])
            #expect(try await database.readIDs(Query(Customer.self).filter("email", .atLeast("x")).sorted(by: "email", descending: true)) == ["a", "b", "d", "c", "e"])
            #expect(try await database.readIDs(Query(Customer.self).filter("email", .between(x600, x600 + "a"))) == ["c", "d"])
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func aUniqueViolationInATransactionIsThrownByTheWrite() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: QueryTests.customers())
            try await database.startTransaction()
            try await database.write(Record(id: "n", data: Customer(name: "N", email: "n@x")))
            await expectError({ if case .uniqueIndexViolation = $0 { true } else { false } }) {
                try await database.write(Record(id: "dup", data: Customer(name: "Dup", email: "ada@x")))
            }
        }
    }

    @Test func anOrderAfterSeveralValuesIsRefusedOrServedExactly() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: QueryTests.customers())
            await expectError({ if case .invalidQuery = $0 { true } else { false } }) {
                _ = try await database.read(Query(Customer.self).filter("address.city", .isIn(["London", "Austin"])).sorted(by: "age"))
            }
            let byCity = try await database.readIDs(Query(Customer.self).filter("address.city", .isIn(["London", "Austin"])).sorted(by: "address.city", descending: true))
            #expect(byCity == ["c2", "c6", "c1", "c4"])
        }
    }

    @Test func aDroppedIndexIsGoneUntilItsTypeDeclaresItAgain() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: [Record(id: "p1", data: Product(sku: "s", name: "one", price: 1))])
            #expect(try await database.dropIndex(.on("sku", unique: true), of: Product.self))
            #expect(try await !database.dropIndex(.on("sku", unique: true), of: Product.self))
            // Without the index, a second record with the value is stored (as by code that no longer declares it)...
            let maxKeySize = database.engine.maxKeySize
            _ = try await database.engine.perform(RecordEncoding.put(Record(id: "p2", data: Product(sku: "s", name: "two", price: 2)), maxKeySize: maxKeySize, encryption: nil))
            // ...and the type, which still declares it, cannot store it again: both ids are named.
            await expectError({ $0 == .uniqueIndexViolation(className: "Product", index: "sku unique", ids: ["p1", "p2"]) }) {
                _ = try await database.read(Query(Product.self).filter("sku", .equals("s")))
            }
        }
    }
}
