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
            #expect(replayedClasses(log.commits) == (try await storedClasses(databases[0])))
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

        @Test("A store whose log was numbered in its commits (versions 4 and 5) keeps its numbers, an older writer in flight finishes first, commits after them are numbered on")
        func olderLogsAreMigrated() async throws {
            for (older, opened) in [(4, StoreSchema.version), (5, StoreSchema.migratedVersion)] {
                let store = PostgresServer.uniqueStore()
                try await PostgresServer.withDatabase(store: store) { database in
                    for index in 0..<5 { try await database.write(Record(id: "r\(index)", data: Note(text: "\(index)"))) }
                    _ = try await database.trimChangeLog(keeping: 3)
                }
                let prefix = StoreSchema.prefix(for: store)
                let name = ByteBuffer(bytes: Array(store.utf8))
                let logger = Logger(label: "tests")
                // The log as version 4 kept it: numbered in the commits (the last number in the
                // store's row), no ticks.
                try await PostgresServer.withConnection { connection in
                    for statement in [
                        "ALTER TABLE \(prefix)_log DROP COLUMN tick",
                        "DROP INDEX \(prefix)_log_sequence",
                        "ALTER TABLE \(prefix)_log ALTER COLUMN sequence SET NOT NULL, ADD PRIMARY KEY (sequence)",
                        "DROP SEQUENCE \(prefix)_ticks",
                        "DROP TABLE \(prefix)_sequencer",
                    ] {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query("UPDATE locallmdb_stores SET version = \(older), sequence = 5 WHERE name = \(name)", logger: logger)
                }
                try await PostgresServer.withConnection { writer in
                    // A writer of version 4 in flight (its shared writers' lock taken) as this
                    // version opens the store: the migration waits for its commit.
                    try await writer.query("BEGIN", logger: logger)
                    let schema = StoreSchema(name: store, prefix: prefix, logID: "")
                    try await writer.query(schema.writersLock(.shared), logger: logger)
                    let opening = Task { try await PostgresStore(configuration: PostgresServer.configuration(), name: store) }
                    #expect(try await PostgresServer.someoneWaitsForALock())
                    // Its commit, as version 4 made one: the store's row's next number, then its entry.
                    try await writer.query(
                        PostgresQuery(
                            unsafeSQL: """
                                WITH next AS (UPDATE locallmdb_stores SET sequence = sequence + 1 WHERE name = $1 RETURNING sequence)
                                INSERT INTO \(prefix)_log (sequence, changes) SELECT next.sequence, changes FROM next, \(prefix)_log WHERE \(prefix)_log.sequence = 3
                                """,
                            binds: binds(name)),
                        logger: logger)
                    try await writer.query("COMMIT", logger: logger)
                    let database = try await opening.value
                    try await closing(database) { database in
                        let engine = database.engine
                        let kept = try await engine.changeFeed(since: LogPosition(logID: engine.schema.logID, sequence: 2), limit: 10)
                        #expect(kept.commits.map(\.position.sequence) == [3, 4, 5, 6])
                        #expect(kept.commits.map(\.changes) == [2, 3, 4, 2].map { [.written(id: "r\($0)", className: "Note")] })
                        // More commits than the largest tick the log had: their ticks come after it.
                        for index in 0..<8 { try await database.write(Record(id: "after\(index)", data: Note(text: "new"))) }
                        let after = try await engine.changeFeed(since: kept.position, limit: 20)
                        #expect(after.commits.map(\.position.sequence) == Array(7...14))
                        #expect(after.commits.map(\.changes) == (0..<8).map { [.written(id: "after\($0)", className: "Note")] })
                        #expect(try await database.count() == 13)
                    }
                }
                let version = try await PostgresServer.withConnection { connection in
                    let rows = try await connection.query("SELECT version FROM locallmdb_stores WHERE name = \(name)", logger: Logger(label: "tests"))
                    for try await version in rows.decode(Int.self) { return version }
                    return 0
                }
                #expect(version == opened, "a store of version \(older)")
            }
        }

        @Test("Reading the log waits for no writer: a transaction holding the store's row (an index's definition) leaves feeds and tokens free")
        func readersWaitForNoWriter() async throws {
            let store = PostgresServer.uniqueStore()
            try await closing(PostgresStore(configuration: PostgresServer.configuration(), name: store, busyTimeout: .seconds(2))) { database in
                try await database.write(Record(id: "a", data: Note(text: "1")))
                try await PostgresServer.withConnection { connection in
                    let logger = Logger(label: "tests")
                    // What a transaction that defines an index or migrates holds until it ends.
                    try await connection.query("BEGIN", logger: logger)
                    try await connection.query(
                        "SELECT 1 FROM locallmdb_stores WHERE name = \(ByteBuffer(bytes: Array(store.utf8))) FOR UPDATE", logger: logger)
                    try await database.write(Record(id: "b", data: Note(text: "2")))
                    let token = try await database.changeToken()
                    let feed = try await database.engine.changeFeed(since: LogPosition(logID: database.engine.schema.logID, sequence: 0), limit: 10)
                    #expect(feed.commits.count == 2)
                    #expect(feed.position.sequence == 2)
                    #expect(try await database.changes(since: token).commits.isEmpty)
                    try await connection.query("COMMIT", logger: logger)
                }
            }
        }

        @Test("A backlog larger than a batch is numbered in several transactions, every entry once, in tick order")
        func aBacklogIsNumberedInBatches() async throws {
            try await PostgresServer.withDatabase { database in
                let engine = database.engine
                let log = engine.schema.log
                try await database.write(Record(id: "a", data: Note(text: "1")))
                _ = try await database.changeToken()
                let backlog = 2 * Int(LogSequencer.batch) + 17
                // Commits no one read: entries with ticks and no numbers.
                _ = try await PostgresServer.withConnection { connection in
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "INSERT INTO \(log) (changes) SELECT changes FROM \(log), generate_series(1, \(backlog)) WHERE sequence = 1"),
                        logger: Logger(label: "tests"))
                }
                let token = try await engine.currentChangeToken()
                #expect(token.sequence == UInt64(backlog + 1))
                try await PostgresServer.withConnection { connection in
                    let rows = try await connection.query(
                        PostgresQuery(unsafeSQL: """
                            SELECT count(*), count(DISTINCT sequence), min(sequence), max(sequence), count(DISTINCT xmin::text),
                                bool_and(sequence = rank) FROM (SELECT sequence, xmin, rank() OVER (ORDER BY tick) AS rank FROM \(log)) AS numbered
                            """),
                        logger: Logger(label: "tests"))
                    for try await (count, distinct, first, last, transactions, inTickOrder) in rows.decode((Int, Int, Int, Int, Int, Bool).self) {
                        #expect(count == backlog + 1 && distinct == count && first == 1 && last == backlog + 1)
                        #expect(inTickOrder)
                        // The first entry's transaction, and one per batch.
                        #expect(transactions == 1 + 3)
                    }
                }
            }
        }
    }
}

/// Each record's class after replaying `commits` in order (deleted records absent).
func replayedClasses(_ commits: [LoggedCommit]) -> [String: String] {
    var replayed: [String: String] = [:]
    for change in commits.flatMap(\.changes) {
        switch change {
        case let .written(id, className): replayed[id] = className
        case let .deleted(id, _): replayed[id] = nil
        case let .typeDeleted(className): replayed = replayed.filter { $0.value != className }
        case .cleared: replayed = [:]
        }
    }
    return replayed
}

/// Each record's class as `database` stores them (the tests' `Note` and `Entry`).
func storedClasses(_ database: PostgresStore) async throws -> [String: String] {
    var stored: [String: String] = [:]
    for id in try await database.readIDs(Note.self) { stored[id] = "Note" }
    for id in try await database.readIDs(Entry.self) { stored[id] = "Entry" }
    return stored
}
