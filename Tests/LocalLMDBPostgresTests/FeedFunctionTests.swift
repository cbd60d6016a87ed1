import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// Runs `sql` on the tests' server.
private func execute(_ sql: String) async throws {
    try await PostgresServer.withConnection { connection in
        _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "tests"))
    }
}

/// The ids written by `feed`'s commits, in order.
private func writtenIDs(_ feed: LoggedCommits) -> [String] {
    feed.commits.flatMap(\.changes).compactMap { change -> String? in
        if case let .written(id, _) = change { return id }
        return nil
    }
}

extension PostgresTests {
    /// The change log's numbering and feed functions (`LogSequencer.createFunction`,
    /// `createFeedFunction`): a feed numbered and read in one call, the same as the statements
    /// read it, and the statements' way whenever the functions cannot serve.
    @Suite("The log's feed function", .serialized)
    struct FeedFunctionTests {
        @Test("A store has its numbering and feed functions; a feed read through them lists what the statements list, every commit once, in order")
        func sameAsTheStatements() async throws {
            let name = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: name)
            try await PostgresServer.withDatabase(store: name) { store in
                #expect(store.engine.numberFunction.withLock { $0 })
                let start = try await store.engine.currentChangeToken()
                // Writers from several tasks: commits numbered by whichever read comes first.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<4 {
                        group.addTask {
                            for index in 0..<25 { try await store.write(Record(id: "t\(task)-\(index)", data: Note(text: "v"))) }
                        }
                    }
                    for _ in 0..<10 {
                        group.addTask { _ = try await store.engine.changeFeed(since: start, limit: 7) }
                    }
                    try await group.waitForAll()
                }
                let throughFunction = try await store.engine.changeFeed(since: start, limit: 1_000)
                #expect(throughFunction.reachesEnd)
                store.engine.numberFunction.withLock { $0 = false }
                let throughStatements = try await store.engine.changeFeed(since: start, limit: 1_000)
                #expect(writtenIDs(throughFunction) == writtenIDs(throughStatements))
                #expect(throughFunction.commits.map(\.position) == throughStatements.commits.map(\.position))
                #expect(Set(writtenIDs(throughFunction)).count == 100)
                // Consecutive numbers (a group of writes may share a commit).
                let count = UInt64(throughFunction.commits.count)
                #expect(count > 0 && throughFunction.commits.map(\.position.sequence) == Array((start.sequence + 1)..<(start.sequence + 1 + count)))
                let counts = try await PostgresServer.withConnection { connection in
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "SELECT count(*) FILTER (WHERE proname = '\(prefix)_number1'), count(*) FILTER (WHERE proname = '\(prefix)_feed1') FROM pg_proc"),
                        logger: Logger(label: "tests")
                    ).collect().first?.decode((Int, Int).self)
                }
                #expect(counts?.0 == 1 && counts?.1 == 1)
            }
        }

        @Test("The feed function dropped: the feed is read the statements' way from then on, nothing missed")
        func functionGone() async throws {
            let name = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: name)
            try await PostgresServer.withDatabase(store: name) { store in
                let start = try await store.engine.currentChangeToken()
                for index in 0..<5 { try await store.write(Record(id: "n\(index)", data: Note(text: "v"))) }
                try await execute("DROP FUNCTION \(prefix)_feed1(bigint, bigint)")
                try await execute("DROP FUNCTION \(prefix)_number1()")
                for index in 5..<8 { try await store.write(Record(id: "n\(index)", data: Note(text: "v"))) }
                let feed = try await store.engine.changeFeed(since: start, limit: 100)
                #expect(writtenIDs(feed) == (0..<8).map { "n\($0)" })
                #expect(feed.reachesEnd)
                #expect(store.engine.numberFunction.withLock { $0 } == false)
            }
        }

        @Test("A server whose transactions are not read committed by default: the numbering function refuses (its numbering would not see another's), and the feed is read the statements' way")
        func notReadCommitted() async throws {
            var configuration = try PostgresServer.configuration()
            configuration.options.additionalStartupParameters.append(("default_transaction_isolation", "repeatable read"))
            let name = PostgresServer.uniqueStore()
            try await closing(PostgresStore(configuration: configuration, name: name, connections: 2)) { store in
                let start = try await store.engine.currentChangeToken()
                for index in 0..<4 { try await store.write(Record(id: "n\(index)", data: Note(text: "v"))) }
                let feed = try await store.engine.changeFeed(since: start, limit: 100)
                #expect(writtenIDs(feed) == (0..<4).map { "n\($0)" })
                #expect(store.engine.numberFunction.withLock { $0 } == false)
            }
        }

        @Test("A backlog larger than a batch: the feed function numbers one batch a call and says more may wait; the next read numbers the rest")
        func backlogLargerThanABatch() async throws {
            let name = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: name)
            try await PostgresServer.withDatabase(store: name) { store in
                try await store.write(Record(id: "first", data: Note(text: "v")))
                let start = try await store.engine.currentChangeToken()
                // Entries committed and not numbered yet, more than a batch (copies of the first's).
                let backlog = Int(LogSequencer.batch) + 1
                try await execute("INSERT INTO \(prefix)_log (changes) SELECT changes FROM \(prefix)_log, generate_series(1, \(backlog)) WHERE sequence = \(start.sequence)")
                let first = try await store.engine.changeFeed(since: start, limit: 10)
                #expect(first.commits.count == 10)
                #expect(!first.reachesEnd)
                let all = try await store.engine.changeFeed(since: start, limit: backlog + 10)
                #expect(all.commits.count == backlog)
                #expect(all.reachesEnd)
                #expect(all.commits.last?.position.sequence == start.sequence + UInt64(backlog))
            }
        }
    }
}
