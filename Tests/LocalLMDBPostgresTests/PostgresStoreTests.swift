import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// The PostgreSQL store on its own: names and values a caller may give, several writers at once,
/// schema versions, the change log, and a server that goes away.
extension PostgresTests {
    @Suite("PostgreSQL store", .serialized)
    struct PostgresStoreTests {
        @Test("Store names with SQL metacharacters, quotes and NUL bytes are names, never SQL")
        func hostileStoreNames() async throws {
            let names = ["x'; DROP TABLE locallmdb_stores; --", "\"; DELETE FROM pg_class; \u{0}", "\u{0}", "name with spaces $1 \\"]
            for name in names {
                let store = name + UUID().uuidString
                try await PostgresServer.withDatabase(store: store) { database in
                    #expect(database.name == store)
                    try await database.write(Record(id: "a", data: Note(text: store)))
                }
                // Reopened, the same store holds the record: the name was stored as it is.
                try await PostgresServer.withDatabase(store: store) { database in
                    let note: Note? = try await database.read(id: "a")
                    #expect(note?.text == store)
                }
            }
            try await PostgresServer.withConnection { connection in
                let rows = try await connection.query("SELECT count(*) FROM locallmdb_stores", logger: Logger(label: "tests"))
                for try await count in rows.decode(Int.self) { #expect(count >= names.count) }
            }
        }

        @Test("A store an earlier version made gets its classes' spelling keys, and the spelling rule holds with rows that lack one")
        func spellingKeysOfAnEarlierStore() async throws {
            let store = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: store) { database in
                try await database.write(Record(id: "a", data: PgSpellingA.Café(a: 1)))
                try await database.write(Record(id: "n", data: Note(text: "n")))
            }
            let logger = Logger(label: "tests")
            func classesTable(_ connection: PostgresConnection) async throws -> String {
                var prefix = ""
                let rows = try await connection.query("SELECT prefix FROM locallmdb_stores WHERE name = \(ByteBuffer(bytes: Array(store.utf8)))", logger: logger)
                for try await found in rows.decode(String.self) { prefix = found }
                try #require(!prefix.isEmpty)
                return prefix + "_classes"
            }
            func missingKeys(_ connection: PostgresConnection, _ table: String) async throws -> Int {
                var missing = -1
                let rows = try await connection.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE spelling_key IS NULL"), logger: logger)
                for try await count in rows.decode(Int.self) { missing = count }
                return missing
            }
            // As an earlier version left it: no column.
            try await PostgresServer.withConnection { connection in
                let table = try await classesTable(connection)
                _ = try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE \(table) DROP COLUMN spelling_key"), logger: logger)
            }
            try await PostgresServer.withDatabase(store: store) { database in
                try await PostgresServer.withConnection { connection in
                    let table = try await classesTable(connection)
                    #expect(try await missingKeys(connection, table) == 0)
                }
                await #expect(throws: LocalDatabaseError.self) { try await database.write(Record(id: "b", data: PgSpellingB.Café(b: 2))) }
                // A row an earlier version writes while this one runs has no key: it is still checked.
                try await PostgresServer.withConnection { connection in
                    let table = try await classesTable(connection)
                    _ = try await connection.query(PostgresQuery(unsafeSQL: "UPDATE \(table) SET spelling_key = NULL"), logger: logger)
                    #expect(try await missingKeys(connection, table) == 2)
                }
                await #expect(throws: LocalDatabaseError.self) { try await database.write(Record(id: "b", data: PgSpellingB.Café(b: 2))) }
                try await database.write(Record(id: "c", data: Course(id: "c", title: "t", credits: 1, tags: [])))
                #expect(try await database.count() == 3)
            }
        }

        @Test("A 10 MB value is stored and read back intact")
        func largeValue() async throws {
            try await PostgresServer.withDatabase { database in
                var generator = SplitMix(seed: 7)
                let text = String((0..<(10 << 20)).map { _ in Character(UnicodeScalar(UInt8(97 + generator.next() % 26))) })
                try await database.write(Record(id: "big", data: Note(text: text)))
                let note: Note? = try await database.read(id: "big")
                #expect(note?.text == text)
            }
        }

        @Test("Several connections writing at once: every write counted, the log in commit order")
        func concurrentWriters() async throws {
            let store = PostgresServer.uniqueStore()
            let writers = 4
            let perWriter = 100
            let databases = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
                for _ in 0..<writers { group.addTask { try await PostgresStore(configuration: PostgresServer.configuration(), name: store, connections: 2) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (writer, database) in databases.enumerated() {
                    group.addTask {
                        for index in 0..<perWriter {
                            try await database.write(Record(id: "w\(writer)-\(index)", data: Entry(sequence: index, payload: "w\(writer)")))
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await databases[0].count(Entry.self) == writers * perWriter)
            // The log: consecutive sequence numbers, every write once.
            let feed = try databases[0].engine.changeFeedBlocking(since: LogPosition(logID: databases[0].engine.schema.logID, sequence: 0), limit: .max)
            #expect(feed.commits.map(\.position.sequence) == Array(1...UInt64(feed.commits.count)))
            let written = feed.commits.flatMap(\.changes).compactMap { change -> String? in
                if case let .written(id, _) = change { return id }
                return nil
            }
            #expect(written.count == writers * perWriter)
            #expect(Set(written).count == writers * perWriter)
            for database in databases { await database.close() }
        }

        /// A server (or role, or database) whose defaults are stricter than PostgreSQL's own: the
        /// store's write transactions serialize on its row lock, and under repeatable read or
        /// serializable a writer that waited for that lock would fail (SQLSTATE 40001) once the
        /// writer before it committed, as would two trims of the log at once; an opener that waited
        /// for the creation lock would not see the tables the one before it made; and nothing
        /// could be written by default read-only. The engine's transactions choose read
        /// committed and read-write themselves.
        @Test(
            "Writers, trims and openers from several pools at once on a server whose defaults are stricter",
            arguments: [
                ("default_transaction_isolation", "repeatable read"), ("default_transaction_isolation", "serializable"),
                ("default_transaction_read_only", "on"),
            ])
        func concurrentWritersUnderStricterDefaults(setting: String, value: String) async throws {
            let store = PostgresServer.uniqueStore()
            let configuration = try {
                var configuration = try PostgresServer.configuration()
                configuration.options.additionalStartupParameters.append((setting, value))
                return configuration
            }()
            let writers = 4
            let perWriter = 40
            // Opened at once too: creating the store's tables is a write transaction of its own.
            let databases = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
                for _ in 0..<writers { group.addTask { try await PostgresStore(configuration: configuration, name: store, connections: 2) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // The setting reaches the server: a connection made with it reports it.
            let probe = try await PostgresConnection.connect(configuration: configuration, id: 2, logger: Logger(label: "tests"))
            let shown = try await probe.query(PostgresQuery(unsafeSQL: "SHOW " + setting), logger: Logger(label: "tests")).collect()
            try await probe.close()
            #expect(try shown.first?.decode(String.self) == value)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (writer, database) in databases.enumerated() {
                    group.addTask {
                        for index in 0..<perWriter {
                            try await database.write(Record(id: "w\(writer)-\(index)", data: Entry(sequence: index, payload: "w\(writer)")))
                            if index % 10 == 9 { _ = try await database.trimChangeLog(keeping: 5) }
                        }
                        try await database.write(contentsOf: (0..<5).map { Record(id: "b\(writer)-\($0)", data: Entry(sequence: $0, payload: "b")) })
                    }
                }
                try await group.waitForAll()
            }
            for database in databases { #expect(try await database.count(Entry.self) == writers * (perWriter + 5)) }
            for database in databases { await database.close() }
        }

        /// Opening a store while another holds a transaction on the stores' table (as a write
        /// transaction that defines an index or migrates does, on its row) neither waits for it nor
        /// makes writers wait behind it.
        @Test("A store opens while a transaction elsewhere holds its row of the stores' table")
        func opensWhileAWriteTransactionIsOpen() async throws {
            let first = PostgresServer.uniqueStore()
            _ = try await PostgresServer.withDatabase(store: first) { database in
                try await database.write(Record(id: "a", data: Entry(sequence: 1, payload: "a")))
            }
            try await PostgresServer.withConnection { connection in
                let logger = Logger(label: "tests")
                _ = try await connection.query("BEGIN", logger: logger)
                _ = try await connection.query("SELECT sequence FROM locallmdb_stores FOR UPDATE", logger: logger).collect()
                let started = ContinuousClock.now
                let second = try await PostgresStore(
                    configuration: PostgresServer.configuration(), name: PostgresServer.uniqueStore(), connections: 1, busyTimeout: .seconds(3))
                #expect(ContinuousClock.now - started < .seconds(3))
                try await closing(second) { second in
                    try await second.write(Record(id: "b", data: Entry(sequence: 2, payload: "b")))
                    #expect(try await second.count(Entry.self) == 1)
                }
                _ = try await connection.query("COMMIT", logger: logger)
            }
        }

        @Test("Replaying the change log gives the store's records, with writers changing classes, deleting and clearing at once")
        func logReplaysToTheStore() async throws {
            let store = PostgresServer.uniqueStore()
            let databases = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
                for _ in 0..<3 { group.addTask { try await PostgresStore(configuration: PostgresServer.configuration(), name: store, connections: 2) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<2 {
                    let database = databases[writer]
                    group.addTask {
                        for index in 0..<80 {
                            let id = "k\(index % 8)"
                            if (index + writer) % 2 == 0 {
                                try await database.write(Record(id: id, data: Note(text: "\(writer)-\(index)")))
                            } else {
                                try await database.write(Record(id: id, data: Entry(sequence: index, payload: "\(writer)")))
                            }
                        }
                    }
                }
                let deleter = databases[2]
                group.addTask {
                    for index in 0..<24 {
                        switch index % 3 {
                        case 0: _ = try await deleter.delete(Entry.self)
                        case 1: _ = try await deleter.delete(id: "k\(index % 8)")
                        default: _ = try await deleter.clearDatabase()
                        }
                        try await Task.sleep(for: .milliseconds(3))
                    }
                }
                try await group.waitForAll()
            }
            let engine = databases[0].engine
            let feed = try engine.changeFeedBlocking(since: LogPosition(logID: engine.schema.logID, sequence: 0), limit: .max)
            #expect(feed.commits.map(\.position.sequence) == Array(1...UInt64(max(1, feed.commits.count))))
            #expect(replayedClasses(feed.commits) == (try await storedClasses(databases[0])))
            for database in databases { await database.close() }
        }

        @Test("Concurrent writes of one database share commits (group commit)")
        func groupCommit() async throws {
            try await PostgresServer.withDatabase { database in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<64 { group.addTask { try await database.write(Record(id: "g\(index)", data: Note(text: "\(index)"))) } }
                    try await group.waitForAll()
                }
                #expect(try await database.count() == 64)
                let feed = try database.engine.changeFeedBlocking(since: LogPosition(logID: database.engine.schema.logID, sequence: 0), limit: .max)
                #expect(feed.commits.flatMap(\.changes).count == 64)
                #expect(feed.commits.count < 64)
            }
        }

        @Test("A refused write in a group fails alone; a refused write in a transaction leaves it usable")
        func refusedWrites() async throws {
            try await PostgresServer.withDatabase { database in
                // Another type owns the class name "Note" on the server.
                let owner = StoredClass(name: "Note", mangledName: "$sOtherModule4NoteC", qualifiedName: "OtherModule.Note")
                try await PostgresServer.withConnection { connection in
                    _ = try await connection.query(
                        PostgresQuery(
                            unsafeSQL: "INSERT INTO \(database.engine.schema.classes) (name_key, row) VALUES ($1, $2)",
                            binds: binds(ByteBuffer(string: "Note"), ByteBuffer(bytes: owner.encoded))),
                        logger: Logger(label: "tests"))
                }
                // Writes at once, so they share commits: the Notes are refused, the Entries kept.
                let results = await withTaskGroup(of: (Bool, LocalDatabaseError?).self) { group in
                    for index in 0..<40 {
                        group.addTask {
                            do {
                                if index % 2 == 0 {
                                    try await database.write(Record(id: "note\(index)", data: Note(text: "x")))
                                } else {
                                    try await database.write(Record(id: "entry\(index)", data: Entry(sequence: index, payload: "p")))
                                }
                                return (index % 2 == 0, nil)
                            } catch {
                                return (index % 2 == 0, error as? LocalDatabaseError)
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                for (isNote, error) in results {
                    if isNote {
                        guard case .classNameConflict(name: "Note", storedBy: "OtherModule.Note", requestedBy: _)? = error else {
                            Issue.record("a Note write was not refused: \(String(describing: error))")
                            continue
                        }
                    } else {
                        #expect(error == nil)
                    }
                }
                #expect(try await database.count(Entry.self) == 20)
                #expect(try await database.count() == 20)

                try await database.startTransaction()
                try await database.write(Record(id: "t1", data: Entry(sequence: 1, payload: "in")))
                await #expect(throws: LocalDatabaseError.self) {
                    try await database.write(Record(id: "refused", data: Note(text: "x")))
                }
                try await database.write(Record(id: "t2", data: Entry(sequence: 2, payload: "in")))
                try await database.commitTransaction()
                #expect(try await database.count(Entry.self) == 22)
                #expect(try await database.count() == 22)
            }
        }

        @Test("A store of an older schema version is migrated; one of a newer version is refused")
        func schemaVersions() async throws {
            let store = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: store) { database in
                _ = try await database.write(Record(id: "a", data: Note(text: "kept")))
            }
            let prefix = StoreSchema.prefix(for: store)
            let name = ByteBuffer(bytes: Array(store.utf8))
            try await PostgresServer.withConnection { connection in
                let logger = Logger(label: "tests")
                // Version 1: no index of records by class.
                try await connection.query(PostgresQuery(unsafeSQL: "DROP INDEX \(prefix)_records_class"), logger: logger)
                try await connection.query("UPDATE locallmdb_stores SET version = 1 WHERE name = \(name)", logger: logger)
            }
            try await PostgresServer.withDatabase(store: store) { database in
                let note: Note? = try await database.read(id: "a")
                #expect(note?.text == "kept")
            }
            try await PostgresServer.withConnection { connection in
                let logger = Logger(label: "tests")
                let rows = try await connection.query("SELECT version FROM locallmdb_stores WHERE name = \(name)", logger: logger)
                for try await version in rows.decode(Int.self) { #expect(version == StoreSchema.version) }
                let indexes = try await connection.query(
                    "SELECT count(*) FROM pg_indexes WHERE indexname = \(prefix + "_records_class")", logger: logger)
                for try await count in indexes.decode(Int.self) { #expect(count == 1) }
                // Version 2: no secondary indexes' tables.
                try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE \(prefix)_indexes, \(prefix)_entries"), logger: logger)
                try await connection.query("UPDATE locallmdb_stores SET version = 2 WHERE name = \(name)", logger: logger)
            }
            try await PostgresServer.withDatabase(store: store) { database in
                try await database.write(Record(id: "t", data: Ticket(queue: "q", priority: 1, title: "")))
                #expect(try await database.readIDs(Query(Ticket.self).filter("queue", .equals("q"))) == ["t"])
                // A newer version migrating the store while this one has it open: this one's writes
                // are refused from then on (they would not keep what the newer one added).
                _ = try await PostgresServer.withConnection { connection in
                    try await connection.query("UPDATE locallmdb_stores SET version = 99 WHERE name = \(name)", logger: Logger(label: "tests"))
                }
                await #expect(throws: LocalDatabaseError.unsupportedFormat(found: 99, supported: StoreSchema.migratedVersion)) {
                    try await database.write(Record(id: "late", data: Note(text: "refused")))
                }
            }
            await #expect(throws: LocalDatabaseError.unsupportedFormat(found: 99, supported: StoreSchema.migratedVersion)) {
                _ = try await PostgresStore(configuration: PostgresServer.configuration(), name: store)
            }
        }

        @Test("Calls after close fail with closed at once, writes, transactions and reads alike")
        func callsAfterClose() async throws {
            let database = try await PostgresStore(configuration: PostgresServer.configuration(), name: PostgresServer.uniqueStore())
            try await database.write(Record(id: "a", data: Note(text: "1")))
            await database.close()
            await database.close()  // Idempotent.
            let start = ContinuousClock.now
            await #expect(throws: LocalDatabaseError.closed) { try await database.write(Record(id: "b", data: Note(text: "2"))) }
            await #expect(throws: LocalDatabaseError.closed) { try await database.startTransaction() }
            await #expect(throws: LocalDatabaseError.closed) {
                let _: Note? = try await database.read(id: "a")
            }
            await #expect(throws: LocalDatabaseError.self) { try await database.commitTransaction() }
            #expect(ContinuousClock.now - start < .seconds(5))
        }

        @Test("The server stopping and starting: typed errors meanwhile, then it works again")
        func serverRestart() async throws {
            try await PostgresServer.withDatabase { database in
                try await database.write(Record(id: "before", data: Note(text: "1")))
                try await database.startTransaction()
                try await database.write(Record(id: "in-transaction", data: Note(text: "2")))
                try PostgresServer.control("stop")
                var serverWasBack = false
                defer { if !serverWasBack { try? PostgresServer.control("start") } }
                // The transaction's connection is gone: its commit fails with a typed error.
                do {
                    try await database.commitTransaction()
                    Issue.record("a commit without a server succeeded")
                } catch let error as LocalDatabaseError {
                    guard case .server = error else {
                        Issue.record("expected a server error, got \(error)")
                        return
                    }
                }
                #expect(!database.transactionActive)
                await #expect(throws: LocalDatabaseError.self) {
                    let _: Note? = try await database.read(id: "before")
                }
                await #expect(throws: LocalDatabaseError.self) {
                    try await database.write(Record(id: "during", data: Note(text: "3")))
                }
                try PostgresServer.control("start")
                serverWasBack = true
                // New connections replace the broken ones.
                try await database.write(Record(id: "after", data: Note(text: "4")))
                let before: Note? = try await database.read(id: "before")
                #expect(before?.text == "1")
                let lost: Note? = try await database.read(id: "in-transaction")
                #expect(lost == nil)
                #expect(try await database.count() == 2)
            }
        }
    }
}
