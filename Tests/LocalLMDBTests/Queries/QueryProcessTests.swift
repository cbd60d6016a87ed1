import Foundation
@testable import LocalLMDB
import LocalLMDBTestSupport
import Testing

@Suite("Queries across processes")
struct QueryProcessTests {
    @Test func anotherProcessesWritesKeepTheIndexAndReachLiveQueries() async throws {
        try await withDatabase { database, directory in
            _ = try await database.write(contentsOf: (0..<3).map { Record(id: "main-\($0)", data: Ticket(queue: "main", priority: $0, title: "here")) })
            let query = Query(Ticket.self).filter("queue", .equals("shared")).sorted(by: "priority", descending: true)
            var live = database.observe(query).makeAsyncIterator()
            #expect(try await live.next()?.isEmpty == true)
            #expect(try runHelper(["write-tickets", directory.path, "shared", "5"]).lines == ["done"])
            // The other process's commit reaches the live query, whose index it kept.
            #expect(try await live.next()?.map(\.priority) == [4, 3, 2, 1, 0])
            #expect(try await database.readIDs(query.limit(2)) == ["shared-4", "shared-3"])
            // And this process's writes are in the index the other process queries.
            _ = try await database.write(Record(id: "main-9", data: Ticket(queue: "shared", priority: 9, title: "here")))
            #expect(try runHelper(["count-queue", directory.path, "shared"]).lines == ["6"])
            #expect(try runHelper(["count-queue", directory.path, "main"]).lines == ["3"])
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }
}
