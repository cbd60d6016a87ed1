import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

extension PostgresTests {
    /// Pushes hold the store's writers' lock shared (`PostgresEngine.pushSync`): they run beside
    /// each other and beside writes by key.
    @Suite("Pushes side by side", .serialized)
    struct SidePushTests {
        @Test("A push runs while a write by key's transaction holds the store's writers' lock: pushes hold it shared")
        func aPushRunsBesideAWriteByKey() async throws {
            let store = PostgresServer.uniqueStore()
            let logger = Logger(label: "tests")
            try await withDevice("A", store: store) { a, server, syncA in
                try await a.write(Record(id: "k0", data: Note(text: "a")))
                #expect(try await syncA.synchronize() == 1)
                try await PostgresServer.withConnection { other in
                    // A write by key's transaction, holding the writers' lock shared, and open.
                    _ = try await other.query("BEGIN", logger: logger)
                    _ = try await other.query(server.engine.schema.writersLock(.shared), logger: logger)
                    try await a.write(Record(id: "k1", data: Note(text: "a")))
                    // Under the exclusive lock, the push would wait for that transaction to end.
                    #expect(try await syncA.synchronize() == 1)
                    _ = try await other.query("COMMIT", logger: logger)
                }
                #expect(try await storedBytes(local: a) == storedBytes(store: server))
            }
        }

        @Test("A push and a write by key on the server that lock one record in opposite orders: the server aborts the push, which runs again alone")
        func aDeadlockedPushRunsAgainAlone() async throws {
            let store = PostgresServer.uniqueStore()
            let logger = Logger(label: "tests")
            try await withDevice("A", store: store) { a, server, syncA in
                try await a.write(contentsOf: [Record(id: "k0", data: Note(text: "a0")), Record(id: "k1", data: Note(text: "a1"))])
                #expect(try await syncA.synchronize() == 2)
                try await a.write(contentsOf: [Record(id: "k0", data: Note(text: "b0")), Record(id: "k1", data: Note(text: "b1"))])
                let records = server.engine.schema.records
                try await PostgresServer.withConnection { other in
                    // A write by key locks the record "k1" first.
                    _ = try await other.query("BEGIN", logger: logger)
                    _ = try await other.query(server.engine.schema.writersLock(.shared), logger: logger)
                    _ = try await other.query(PostgresQuery(unsafeSQL: "SELECT key FROM \(records) WHERE key = 'k1'::bytea FOR UPDATE"), logger: logger)
                    // The push locks the stamps' rows of "k0" and "k1", then waits for the record "k1".
                    let push = Task { try await syncA.synchronize() }
                    #expect(try await PostgresServer.someoneWaitsForALock())
                    // The write's trigger now waits for the stamp's row of "k1": a deadlock, which the
                    // server breaks by aborting the push (it has waited longer); the write goes on.
                    _ = try await other.query(PostgresQuery(unsafeSQL: "UPDATE \(records) SET value = value WHERE key = 'k1'::bytea"), logger: logger)
                    _ = try await other.query("COMMIT", logger: logger)
                    #expect(try await push.value == 2)
                }
                // The write on the server was stamped by its clock before the push ran again, later
                // than the device's write of "k1": that write lost, and is in the conflict log.
                #expect(try await syncA.synchronize() == 0)
                #expect(try await noteText(a, "k0") == "b0")
                #expect(try await noteText(a, "k1") == "a1")
                #expect(try await syncA.serverConflicts().map(\.recordID) == ["k1"])
                #expect(try await storedBytes(local: a) == storedBytes(store: server))
            }
        }
    }
}
