import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

extension PostgresTests {
    /// The change log numbered after the commits (`LogSequencer`): every commit once, in an order
    /// consistent with the rows they wrote, none missed by a feed or a token.
    @Suite("PostgreSQL log sequencer", .serialized)
    struct LogSequencerTests {
        @Test("Feeds followed while writers of three engines commit side by side list every commit once, as the log keeps them")
        func followersSeeTheLog() async throws {
            let store = PostgresServer.uniqueStore()
            let databases = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
                for _ in 0..<5 { group.addTask { try await PostgresStore(configuration: PostgresServer.configuration(), name: store, connections: 3) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let writing = Locked<Int>(3)
            let followed = try await withThrowingTaskGroup(of: [LoggedCommit].self) { group in
                for writer in 0..<3 {
                    let database = databases[writer]
                    group.addTask {
                        defer { writing.withLock { $0 -= 1 } }
                        // Writes of records by key (the writers' shared lock): side by side, on
                        // overlapping ids, moving them between classes.
                        try await withThrowingTaskGroup(of: Void.self) { writes in
                            for lane in 0..<4 {
                                writes.addTask {
                                    for index in 0..<40 {
                                        let id = "k\((index * 7 + lane) % 10)"
                                        if (index + writer + lane) % 2 == 0 {
                                            try await database.write(Record(id: id, data: Note(text: "\(writer)-\(lane)-\(index)")))
                                        } else {
                                            try await database.write(Record(id: id, data: Entry(sequence: index, payload: "\(writer)")))
                                        }
                                        if index % 13 == 12 { _ = try await database.delete(id: id) }
                                    }
                                }
                            }
                            try await writes.waitForAll()
                        }
                        return []
                    }
                }
                // Two followers, in other engines, each numbering the log as it reads.
                for follower in 3..<5 {
                    let engine = databases[follower].engine
                    group.addTask {
                        var position = LogPosition(logID: engine.schema.logID, sequence: 0)
                        var seen: [LoggedCommit] = []
                        while true {
                            let done = writing.withLock { $0 == 0 }
                            let feed = try await engine.changeFeed(since: position, limit: 7)
                            seen += feed.commits
                            position = feed.position
                            if done && feed.commits.isEmpty { return seen }
                            // Caught up: a pause before looking again (the writers' turn on two cores).
                            if feed.commits.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
                        }
                    }
                }
                return try await group.reduce(into: [[LoggedCommit]]()) { if !$1.isEmpty { $0.append($1) } }
            }
            let engine = databases[0].engine
            let log = try await engine.changeFeed(since: LogPosition(logID: engine.schema.logID, sequence: 0), limit: .max)
            // Every commit numbered once, consecutively (group commit made fewer commits than writes).
            #expect(log.commits.count > 3)
            #expect(log.commits.map(\.position.sequence) == Array(1...UInt64(log.commits.count)))
            #expect(followed.count == 2)
            for seen in followed {
                #expect(seen.map(\.position) == log.commits.map(\.position))
                #expect(seen.map(\.changes) == log.commits.map(\.changes))
            }
            // Commits that wrote the same record are in the order they were applied: replaying
            // the log gives each record's class as stored.
            var replayed: [String: String] = [:]
            for change in log.commits.flatMap(\.changes) {
                switch change {
                case let .written(id, className): replayed[id] = className
                case let .deleted(id, _): replayed[id] = nil
                case let .typeDeleted(className): replayed = replayed.filter { $0.value != className }
                case .cleared: replayed = [:]
                }
            }
            var stored: [String: String] = [:]
            for id in try await databases[0].readIDs(Note.self) { stored[id] = "Note" }
            for id in try await databases[0].readIDs(Entry.self) { stored[id] = "Entry" }
            #expect(replayed == stored)
            for database in databases { await database.close() }
        }

        @Test("A commit that took its tick first but ended last is numbered last, and neither a feed nor a token passes it meanwhile")
        func aLateCommitIsNumberedLate() async throws {
            try await PostgresServer.withDatabase { database in
                let engine = database.engine
                let schema = engine.schema
                try await database.write(Record(id: "a", data: Note(text: "first")))
                let start = try await database.changeToken()
                try await PostgresServer.withConnection { connection in
                    let logger = Logger(label: "tests")
                    // A commit in flight: its log entry appended (its tick taken), not committed.
                    _ = try await connection.query("BEGIN", logger: logger)
                    _ = try await connection.query(
                        PostgresQuery(unsafeSQL: "INSERT INTO \(schema.log) (changes) SELECT changes FROM \(schema.log) WHERE sequence = 1"),
                        logger: logger)
                    // A writer after it, from a larger tick, commits without waiting for it.
                    try await database.write(Record(id: "b", data: Note(text: "second")))
                    let feed = try await engine.changeFeed(since: LogPosition(logID: schema.logID, sequence: 1), limit: 10)
                    #expect(feed.commits.map(\.changes) == [[.written(id: "b", className: "Note")]])
                    let token = try await database.changeToken()
                    #expect(try await database.changes(since: token).commits.isEmpty)
                    // A copy read with its token (a replica's full copy) sees a and b, and not the commit in flight.
                    let copy = try await engine.allSourceRecords(pageSize: 100) { _, _ in }
                    #expect(copy.records.count == 2)
                    let readToken = try #require(copy.position)
                    #expect(readToken.sequence == 2)
                    _ = try await connection.query("COMMIT", logger: logger)
                    // Numbered after the commit that ended before it, and listed after every token
                    // read meanwhile.
                    #expect(try await database.changes(since: token).commits.map(\.changes) == [[.written(id: "a", className: "Note")]])
                    let late = try await engine.changeFeed(since: readToken, limit: 10)
                    #expect(late.commits.map(\.changes) == [[.written(id: "a", className: "Note")]])
                    #expect(late.commits.map(\.position.sequence) == [3])
                    #expect(try await database.changes(since: start).commits.count == 2)
                }
            }
        }

        @Test("A store whose log was numbered in its commits (versions 4 and 5) keeps its numbers; commits after them are numbered on")
        func olderLogsAreMigrated() async throws {
            for (older, opened) in [(4, StoreSchema.version), (5, StoreSchema.migratedVersion)] {
                let store = PostgresServer.uniqueStore()
                try await PostgresServer.withDatabase(store: store) { database in
                    for index in 0..<5 { try await database.write(Record(id: "r\(index)", data: Note(text: "\(index)"))) }
                    _ = try await database.trimChangeLog(keeping: 3)
                }
                let prefix = StoreSchema.prefix(for: store)
                let name = ByteBuffer(bytes: Array(store.utf8))
                // The log as version 4 kept it: numbered in the commits, no ticks.
                try await PostgresServer.withConnection { connection in
                    let logger = Logger(label: "tests")
                    for statement in [
                        "ALTER TABLE \(prefix)_log DROP COLUMN tick",
                        "DROP INDEX \(prefix)_log_sequence",
                        "ALTER TABLE \(prefix)_log ALTER COLUMN sequence SET NOT NULL, ADD PRIMARY KEY (sequence)",
                        "DROP SEQUENCE \(prefix)_ticks",
                    ] {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query("UPDATE locallmdb_stores SET version = \(older) WHERE name = \(name)", logger: logger)
                }
                try await PostgresServer.withDatabase(store: store) { database in
                    let engine = database.engine
                    let kept = try await engine.changeFeed(since: LogPosition(logID: engine.schema.logID, sequence: 2), limit: 10)
                    #expect(kept.commits.map(\.position.sequence) == [3, 4, 5])
                    #expect(kept.commits.map(\.changes) == (2..<5).map { [.written(id: "r\($0)", className: "Note")] })
                    try await database.write(Record(id: "after", data: Note(text: "new")))
                    let after = try await engine.changeFeed(since: kept.position, limit: 10)
                    #expect(after.commits.map(\.position.sequence) == [6])
                    #expect(after.commits.map(\.changes) == [[.written(id: "after", className: "Note")]])
                    #expect(try await database.count() == 6)
                }
                let version = try await PostgresServer.withConnection { connection in
                    let rows = try await connection.query("SELECT version FROM locallmdb_stores WHERE name = \(name)", logger: Logger(label: "tests"))
                    for try await version in rows.decode(Int.self) { return version }
                    return 0
                }
                #expect(version == opened, "a store of version \(older)")
            }
        }
    }
}
