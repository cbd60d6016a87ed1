import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

@Suite("Live queries")
struct LiveQueryTests {
    @Test func aQueryIsObservedAndGivenAgainOnlyWhenItsResultsChange() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: QueryTests.customers())
            let query = Query(Customer.self).filter("address.city", .equals("London")).sorted(by: "age").limit(2)
            var results = database.observe(query).makeAsyncIterator()
            #expect(try await results.next()?.map(\.name) == ["Ada", "Ken"])
            // Commits that leave the page as it was are not given: the next value is the change.
            try await database.write(Record(id: "p1", data: Customer(name: "Pat", city: "Paris")))
            try await database.write(Record(id: "c2", data: Customer(name: "Alan", email: "alan@x", age: 41, city: "London")))
            try await database.write(Record(id: "y", data: Customer(name: "Young", age: 20, city: "London")))
            #expect(try await results.next()?.map(\.name) == ["Young", "Ada"])
            // A change of contents alone is a change.
            try await database.write(Record(id: "y", data: Customer(name: "Younger", age: 20, city: "London")))
            #expect(try await results.next()?.map(\.name) == ["Younger", "Ada"])
        }
    }
}

@Suite("Keyset paging and streams")
struct QueryPagingTests {
    static func items(_ range: ClosedRange<Int>) -> [Record<OracleItem>] {
        range.map { Record(id: String(format: "k%04d", $0), data: OracleItem(group: $0 % 2 == 0 ? "even" : "odd", rank: $0 % 7, labels: [], weight: Double($0))) }
    }

    @Test func pagesFollowOneAnotherWhileRecordsAreWritten() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: Self.items(1...100))
            let query = Query(OracleItem.self).filter("group", .equals("even")).sorted(by: "rank", descending: true).limit(7)
            let expected = try await database.readIDs(query.limit(1000))
            var seen: [String] = []
            var cursor: QueryCursor?
            var pages = 0
            repeat {
                let page = try await database.readPage(query.after(cursor))
                seen += page.records.map { String(format: "k%04d", Int($0.weight)) }
                cursor = page.next
                pages += 1
                // Between pages, records are added and removed before the position: no effect on what follows.
                _ = try await database.write(Record(id: "z\(pages)", data: OracleItem(group: "even", rank: 99, labels: [], weight: -1)))
                _ = try await database.delete(id: "k0090")  // given already
            } while cursor != nil
            #expect(seen == expected)
            #expect(pages == 8)  // 50 records, 7 a page
            // A cursor survives a round trip through Codable.
            let page = try await database.readPage(query)
            let data = try JSONEncoder().encode(page.next)
            let decoded = try JSONDecoder().decode(QueryCursor.self, from: data)
            #expect(try await database.readPage(query.after(decoded)).records.count == 7)
        }
    }

    @Test func aStreamReadsEveryRecordInBatches() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: Self.items(1...1000))
            var weights: [Double] = []
            for try await item in database.stream(Query(OracleItem.self).filter("weight", .atLeast(100)).sorted(by: "weight"), batchSize: 64) {
                weights.append(item.weight)
            }
            #expect(weights == (100...1000).map(Double.init))
            var all = 0
            for try await _ in database.stream(Query(OracleItem.self).offset(10).limit(500), batchSize: 33) { all += 1 }
            #expect(all == 500)
            // By id, the whole type.
            var ids: [Double] = []
            for try await item in database.stream(Query(OracleItem.self), batchSize: 100) { ids.append(item.weight) }
            #expect(ids == (1...1000).map(Double.init))
        }
    }
}
