import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// The rows of `sql` (one integer column) on the tests' server.
private func integers(_ sql: String) async throws -> [Int] {
    try await PostgresServer.withConnection { connection in
        var found: [Int] = []
        for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "tests")).decode(Int.self) {
            found.append(value)
        }
        return found
    }
}

extension PostgresTests {
    /// Writes by key through the store's put procedure (`StoreSchema.putProcedure`): each check it
    /// makes sends the write the general way when what the writer holds is no longer true.
    @Suite("The put procedure", .serialized)
    struct PutProcedureTests {
        @Test("A store has its put procedure; writes through it store and log what the general way does")
        func writesThroughTheProcedure() async throws {
            let name = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: name)
            try await PostgresServer.withDatabase(store: name) { store in
                #expect(try await integers("SELECT count(*)::int8 FROM pg_proc WHERE proname = '\(prefix)_put2' AND prokind = 'p'") == [1])
                let start = try await store.engine.currentChangeToken()
                // The first writes record the class and learn that its claim records nothing; then
                // writes go through the procedure.
                for index in 0..<5 { try await store.write(Record(id: "n\(index)", data: Note(text: "v\(index)"))) }
                try await store.write(contentsOf: (5..<8).map { Record(id: "n\($0)", data: Note(text: "v\($0)")) })
                try await store.write(Record(id: "n0", data: Note(text: "again")))
                // Taken and new keys in one batch, a key twice (the last wins).
                try await store.write(contentsOf: [
                    Record(id: "n1", data: Note(text: "first")), Record(id: "n8", data: Note(text: "new")),
                    Record(id: "n1", data: Note(text: "mixed")),
                ])
                #expect(try await noteTexts(store, (0..<9).map { "n\($0)" }) == ["again", "mixed"] + (2..<8).map { "v\($0)" } + ["new"])
                #expect(try await store.count(Note.self) == 9)
                let feed = try await store.engine.changeFeed(since: start, limit: 100)
                let written = feed.commits.flatMap(\.changes).compactMap { change -> String? in
                    if case let .written(id, className) = change { return "\(id) \(className)" }
                    return nil
                }
                #expect(written == (0..<8).map { "n\($0) Note" } + ["n0 Note", "n1 Note", "n8 Note", "n1 Note"])
            }
        }

        @Test("An index another process defines meanwhile: the procedure refuses the write, which then keeps the index's entries")
        func indexDefinedElsewhere() async throws {
            let name = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: name)
            try await PostgresServer.withDatabase(store: name) { a in
                for index in 0..<4 { try await a.write(Record(id: "n\(index)", data: Note(text: "before"))) }
                try await PostgresServer.withDatabase(store: name) { b in
                    let text = IndexDefinition(fields: [.init(path: ["text"], kind: .automatic)], isUnique: false, isMultiEntry: false)
                    _ = try await b.engine.perform(.defineIndexes(className: "Note", [text]))
                }
                // `a` still holds the catalog without the index.
                try await a.write(Record(id: "late", data: Note(text: "after")))
                #expect(try await integers("SELECT count(*)::int8 FROM \(prefix)_entries WHERE key = 'late'::bytea") == [1])
                #expect(try await integers("SELECT count(*)::int8 FROM \(prefix)_entries") == [5])
            }
        }

        @Test("A record written as another class: the procedure refuses it, and the log says which class it left")
        func recordMovesToAnotherClass() async throws {
            try await PostgresServer.withDatabase { store in
                for index in 0..<3 {
                    try await store.write(Record(id: "x", data: Note(text: "\(index)")))
                    try await store.write(Record(id: "e\(index)", data: Entry(sequence: index, payload: "")))
                }
                let start = try await store.engine.currentChangeToken()
                try await store.write(Record(id: "x", data: Entry(sequence: 9, payload: "moved")))
                let changes = try await store.engine.changeFeed(since: start, limit: 10).commits.flatMap(\.changes)
                #expect(changes.map { "\($0)" } == ["\(LoggedChange.deleted(id: "x", className: "Note"))", "\(LoggedChange.written(id: "x", className: "Entry"))"])
                #expect(try await store.count(Note.self) == 0)
                #expect(try await store.count(Entry.self) == 4)
            }
        }

        @Test("A class another type claimed meanwhile: the procedure refuses the write, which the claim rule then refuses too")
        func classClaimedElsewhere() async throws {
            let name = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: name)
            try await PostgresServer.withDatabase(store: name) { store in
                for index in 0..<3 { try await store.write(Record(id: "n\(index)", data: Note(text: "v"))) }
                // Another app's type takes the name over (as an adopting type of another process would).
                let other = StoredClass(name: "Note", mangledName: "7Another4NoteC", qualifiedName: "Another.Note", adopts: false, copied: false)
                try await PostgresServer.withConnection { connection in
                    _ = try await connection.query(
                        PostgresQuery(
                            unsafeSQL: "UPDATE \(prefix)_classes SET row = $1 WHERE name_key = $2",
                            binds: binds(ByteBuffer(bytes: other.encoded), ByteBuffer(bytes: StorageKey("Note", maxKeySize: store.engine.maxKeySize).bytes))),
                        logger: Logger(label: "tests"))
                }
                await #expect {
                    try await store.write(Record(id: "late", data: Note(text: "refused")))
                } throws: { error in
                    if case .classNameConflict = error as? LocalDatabaseError { return true }
                    return false
                }
                #expect(try await integers("SELECT count(*)::int8 FROM \(prefix)_records WHERE key = 'late'::bytea") == [0])
            }
        }

        @Test("A store whose procedure is gone (or was never made) is written the general way; an opening that may create it adds it")
        func procedureGone() async throws {
            let name = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: name)
            try await PostgresServer.withDatabase(store: name) { store in
                for index in 0..<3 { try await store.write(Record(id: "n\(index)", data: Note(text: "v"))) }
                try await PostgresServer.withConnection { connection in
                    _ = try await connection.query(PostgresQuery(unsafeSQL: "DROP PROCEDURE \(prefix)_put2"), logger: Logger(label: "tests"))
                }
                for index in 3..<6 { try await store.write(Record(id: "n\(index)", data: Note(text: "v"))) }
                #expect(try await store.count(Note.self) == 6)
            }
            #expect(try await integers("SELECT count(*)::int8 FROM pg_proc WHERE proname = '\(prefix)_put2'") == [0])
            try await PostgresServer.withDatabase(store: name) { store in
                try await store.write(Record(id: "n6", data: Note(text: "v")))
                #expect(try await store.count(Note.self) == 7)
            }
            #expect(try await integers("SELECT count(*)::int8 FROM pg_proc WHERE proname = '\(prefix)_put2'") == [1])
        }

        @Test("An open whose role may create in the schema, but does not own the earlier procedure (_put1), makes _put2 and leaves _put1 to its owner")
        func anEarlierProcedureOfAnotherRole() async throws {
            let role = try await PostgresTests.StoreAccessTests.makeRole("put")
            let name = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: name)
            _ = try await PostgresServer.withDatabase(store: name) { store in try await store.write(Record(id: "n0", data: Note(text: "v"))) }
            try await PostgresStore.provision(name, for: role.name, configuration: PostgresServer.configuration())
            try await PostgresServer.withConnection { connection in
                let logger = Logger(label: "tests")
                // The earlier version's procedure, owned by the tests' role; the current one gone.
                _ = try await connection.query(PostgresQuery(unsafeSQL: """
                    CREATE PROCEDURE \(prefix)_put1\(StoreSchema.putSignature)
                    LANGUAGE plpgsql AS $$ BEGIN END $$
                    """), logger: logger)
                _ = try await connection.query(PostgresQuery(unsafeSQL: "DROP PROCEDURE \(prefix)_put2"), logger: logger)
                let grant = try await connection.query("SELECT format('GRANT CREATE ON SCHEMA public TO %I', \(role.name))", logger: logger)
                for try await statement in grant.decode(String.self) { _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            }
            try await closing(PostgresStore(configuration: PostgresTests.StoreAccessTests.configuration(role), name: name, connections: 2)) { store in
                try await store.write(Record(id: "n1", data: Note(text: "v")))
                #expect(try await store.count(Note.self) == 2)
            }
            #expect(try await integers("SELECT count(*)::int8 FROM pg_proc WHERE proname = '\(prefix)_put2'") == [1])
            #expect(try await integers("SELECT count(*)::int8 FROM pg_proc WHERE proname = '\(prefix)_put1'") == [1])
        }

        @Test("A server whose transactions are not read committed by default: the put procedure refuses (the push procedure makes the same check), and writes go the general way")
        func notReadCommitted() async throws {
            var configuration = try PostgresServer.configuration()
            configuration.options.additionalStartupParameters.append(("default_transaction_isolation", "repeatable read"))
            let name = PostgresServer.uniqueStore()
            try await closing(PostgresStore(configuration: configuration, name: name, connections: 2)) { store in
                for index in 0..<4 { try await store.write(Record(id: "n\(index)", data: Note(text: "v"))) }
                #expect(try await store.count(Note.self) == 4)
                // The procedure said it cannot serve these connections: the general way from now on.
                let known = try await store.engine.onThread { [engine = store.engine] () throws(DatabaseError) -> Bool? in engine.hasPutProcedure }
                #expect(known == false)
                #expect(store.engine.publishedPutBasis.withLock { $0 } == nil)
            }
        }

        @Test("A failed call is written again the general way only for errors raised before its commit; others answer the write as in doubt")
        func failuresBeforeAndAfterTheCommit() {
            func server(_ state: String) -> DatabaseError { .server(operation: "writing", message: "something (SQLSTATE \(state))") }
            for state in ["LL001", "LL002", "40P01", "40001", "42883", "42501", "2D000", "25006", "21000", "22021", "23505"] {
                #expect(PostgresEngine.putFailure(server(state)) == nil, "\(state)")
            }
            // A cancel or a full notification queue may come from the commit of the notification's
            // transaction, after the records' commit.
            for state in ["57014", "54000", "XX000", "53100"] {
                guard case let .server(_, message) = PostgresEngine.putFailure(server(state)) else {
                    Issue.record("\(state) was taken for a refusal")
                    continue
                }
                #expect(message.hasSuffix("may or may not have committed"))
            }
            #expect(PostgresEngine.putFailure(.busy(timeout: .seconds(1))) == .busy(timeout: .seconds(1)))
            #expect(PostgresEngine.putFailure(server("08006")).map { "\($0)" }?.contains("08006") == true)
        }
    }
}

/// The texts of the notes `ids` on `store`, in order ("" for a missing one).
private func noteTexts(_ store: PostgresStore, _ ids: [String]) async throws -> [String] {
    var texts: [String] = []
    for id in ids {
        let note: Note? = try await store.read(id: id)
        texts.append(note?.text ?? "")
    }
    return texts
}
