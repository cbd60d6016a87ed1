import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
import LocalLMDBTestSupport
import LocalLMDBLMDB
import PostgresNIO
import Testing

/// A model with a unique index and one on a long text, for the server's indexes.
struct PgAccount: Codable, Persistable, Equatable {
    static let indexes: [Index] = [.on("email", unique: true), .on("bio"), .each("tags")]
    var email: String?
    var bio: String
    var tags: [String]
}

/// Whether `body` fails with `uniqueIndexViolation` naming `ids`, in either order.
func refusedAsDuplicate(_ ids: Set<String>, _ body: () async throws -> Void) async -> Bool {
    do {
        try await body()
        return false
    } catch let error as LocalDatabaseError {
        if case let .uniqueIndexViolation(_, _, found) = error { return Set(found) == ids }
        return false
    } catch {
        return false
    }
}

extension PostgresTests {
    @Suite("PostgreSQL queries", .serialized)
    struct PostgresQueryTests {
        @Test("Random histories agree with an in-memory filter on the server's indexes, as on LMDB", arguments: 1...10)
        func oracle(seed: UInt64) async throws {
            try await PostgresServer.withDatabase { store in
                let problems = try await QueryOracle.run(seed: seed, steps: 40, on: store)
                #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
            }
        }

        @Test("A unique index refuses a second record, in a batch and against the store, storing nothing of the write")
        func uniqueIndex() async throws {
            try await PostgresServer.withDatabase { store in
                try await store.write(Record(id: "a", data: PgAccount(email: "x@y", bio: "", tags: [])))
                #expect(await refusedAsDuplicate(["a", "b"]) {
                    try await store.write(Record(id: "b", data: PgAccount(email: "x@y", bio: "", tags: [])))
                })
                #expect(await refusedAsDuplicate(["c", "d"]) {
                    try await store.write(contentsOf: [
                        Record(id: "c", data: PgAccount(email: "same", bio: "", tags: [])),
                        Record(id: "d", data: PgAccount(email: "same", bio: "", tags: [])),
                    ])
                })
                #expect(try await store.count() == 1)
                // Missing values are exempt; rewriting a record with its own value is no clash.
                try await store.write(contentsOf: [
                    Record(id: "n1", data: PgAccount(email: nil, bio: "", tags: [])), Record(id: "n2", data: PgAccount(email: nil, bio: "", tags: [])),
                ])
                try await store.write(Record(id: "a", data: PgAccount(email: "x@y", bio: "again", tags: [])))
                // In a transaction, the refused write leaves the rest of it.
                try await store.startTransaction()
                try await store.write(Record(id: "t", data: PgAccount(email: "t@t", bio: "", tags: [])))
                #expect(await refusedAsDuplicate(["a", "u"]) {
                    try await store.write(Record(id: "u", data: PgAccount(email: "x@y", bio: "", tags: [])))
                })
                try await store.commitTransaction()
                #expect(try await store.readIDs(Query(PgAccount.self).filter("email", .equals("t@t"))) == ["t"])
                #expect(try await store.count(PgAccount.self) == 4)
            }
        }

        @Test("Values longer than a B-tree entry are indexed whole: equality, order and prefixes past 1,024 bytes")
        func longValues() async throws {
            try await PostgresServer.withDatabase { store in
                let stem = String(repeating: "s", count: 3_000)
                let bios = ["\(stem)b", "\(stem)a", "\(stem)c", String(repeating: "t", count: 10_000), "short"]
                for (index, bio) in bios.enumerated() { try await store.write(Record(id: "r\(index)", data: PgAccount(email: nil, bio: bio, tags: [bio])) ) }
                #expect(try await store.readIDs(Query(PgAccount.self).sorted(by: "bio")) == ["r4", "r1", "r0", "r2", "r3"])
                #expect(try await store.readIDs(Query(PgAccount.self).sorted(by: "bio", descending: true).limit(2)) == ["r3", "r2"])
                #expect(try await store.readIDs(Query(PgAccount.self).filter("bio", .equals("\(stem)a"))) == ["r1"])
                #expect(try await store.count(Query(PgAccount.self).filter("bio", .hasPrefix(stem))) == 3)
                #expect(try await store.readIDs(Query(PgAccount.self).filter("tags", .equals(bios[3]))) == ["r3"])
                // Limits and offsets as large as they come (no sum of them may overflow).
                #expect(try await store.readIDs(Query(PgAccount.self).sorted(by: "bio").offset(1).limit(Int.max)) == ["r1", "r0", "r2", "r3"])
                #expect(try await store.readIDs(Query(PgAccount.self).sorted(by: "tags").offset(Int.max).limit(Int.max)).isEmpty)
                #expect(try await store.count(Query(PgAccount.self).sorted(by: "tags").offset(Int.max - 1).limit(Int.max)) == 0)
                // Keyset paging through the long values.
                var ids: [String] = []
                var cursor: QueryCursor?
                repeat {
                    let page = try await store.readPage(Query(PgAccount.self).sorted(by: "bio").limit(2).after(cursor))
                    ids += page.records.map { account in bios.firstIndex(of: account.bio).map { "r\($0)" } ?? "?" }
                    cursor = page.next
                } while cursor != nil && ids.count < 10
                #expect(ids == ["r4", "r1", "r0", "r2", "r3"])
            }
        }

        @Test("Indexes are built over records already stored, with progress; dropped, then built again at the next use")
        func buildAndDrop() async throws {
            try await PostgresServer.withDatabase { store in
                _ = try await store.write(contentsOf: (0..<500).map { Record(id: "t\($0)", data: Ticket(queue: "q\($0 % 5)", priority: $0, title: "")) })
                #expect(try await store.dropIndex(.on("queue", "priority", counted: true), of: Ticket.self))
                #expect(try await !store.dropIndex(.on("queue", "priority", counted: true), of: Ticket.self))
                let reports = Locked<[IndexBuildProgress]>([])
                try await store.prepareIndexes(of: Ticket.self) { progress in reports.withLock { $0.append(progress) } }
                let seen = reports.withLock { $0 }
                #expect(seen.last?.recordsIndexed == 500)
                #expect(seen.allSatisfy { $0.recordCount == 500 && $0.className == "Ticket" })
                #expect(try await store.count(Query(Ticket.self).filter("queue", .equals("q3"))) == 100)
                let top = try await store.read(Query(Ticket.self).filter("queue", .equals("q3")).sorted(by: "priority", descending: true).limit(2))
                #expect(top.map(\.priority) == [498, 493])
            }
        }

        @Test("Another process's writes keep the indexes exact: a second store on the same tables, and a live query")
        func otherWritersKeepIndexes() async throws {
            let name = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: name) { store in
                try await PostgresServer.withDatabase(store: name) { other in
                    let query = Query(Ticket.self).filter("queue", .equals("live")).sorted(by: "priority")
                    #expect(try await store.read(query).isEmpty)
                    let heard = Task {
                        for try await tickets in store.observe(query) where tickets.map(\.priority) == [1, 2] { return true }
                        return false
                    }
                    try await other.write(Record(id: "a", data: Ticket(queue: "live", priority: 2, title: "")))
                    try await other.write(Record(id: "b", data: Ticket(queue: "live", priority: 1, title: "")))
                    #expect(try await heard.value)
                    _ = try await other.delete(id: "a")
                    #expect(try await store.read(query).map(\.priority) == [1])
                    var streamed: [Int] = []
                    for try await ticket in store.stream(Query(Ticket.self), batchSize: 1) { streamed.append(ticket.priority) }
                    #expect(streamed == [1])
                }
            }
        }
    }
}

