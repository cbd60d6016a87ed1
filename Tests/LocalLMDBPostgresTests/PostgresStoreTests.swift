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
                // A class name owned by another type is refused: `Note`'s name claimed for `Entry`.
                try await database.write(Record(id: "n", data: Note(text: "x")))
                try await database.startTransaction()
                try await database.write(Record(id: "t1", data: Note(text: "1")))
                await #expect(throws: LocalDatabaseError.self) {
                    try await database.write(Record(id: "", data: Note(text: "empty id")))
                }
                try await database.write(Record(id: "t2", data: Note(text: "2")))
                try await database.commitTransaction()
                #expect(try await database.count(Note.self) == 3)
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
                try await connection.query("UPDATE locallmdb_stores SET version = 99 WHERE name = \(name)", logger: logger)
            }
            await #expect(throws: LocalDatabaseError.unsupportedFormat(found: 99, supported: StoreSchema.version)) {
                _ = try await PostgresStore(configuration: PostgresServer.configuration(), name: store)
            }
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
