import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// The pushes `server`'s engine made through the store's push procedure.
private func procedurePushes(_ server: PostgresStore) async throws -> Int {
    server.engine.procedurePushes.withLock { $0 }
}

extension PostgresTests {
    /// A device's push in one call of the store's push procedure (`SyncSchema.pushProcedure`)
    /// when every write simply replaces its record's version; the general way otherwise.
    @Suite("The push procedure", .serialized)
    struct PushProcedureTests {
        @Test("Once the engine's thread has found the procedure, a push goes from the pushing task: made while the thread is held busy")
        func pushesFromTheTask() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, serverA, syncA in
                // The first pushes go through the thread, which reads the store's row and finds the procedure.
                for index in 0..<2 {
                    try await a.write(Record(id: "n\(index)", data: Note(text: "a")))
                    #expect(try await syncA.synchronize() == 1)
                }
                let before = try await procedurePushes(serverA)
                // The thread held until released (for at most 10 s).
                let release = DispatchSemaphore(value: 0)
                let held = Locked(false)
                let (entered, enter) = AsyncStream<Void>.makeStream()
                let busy = Task {
                    try await serverA.engine.onThread { () throws(DatabaseError) in
                        held.withLock { $0 = true }
                        enter.yield()
                        _ = release.wait(timeout: .now() + 10)
                        held.withLock { $0 = false }
                    }
                }
                for await _ in entered { break }
                try await a.write(Record(id: "n2", data: Note(text: "a")))
                #expect(try await syncA.synchronize() == 1)
                // Made while the thread was still held.
                #expect(held.withLock { $0 })
                #expect(try await procedurePushes(serverA) == before + 1)
                release.signal()
                try await busy.value
                let stored: Note? = try await serverA.read(id: "n2")
                #expect(stored?.text == "a")
            }
        }

        @Test("Writes over no version, the device's own, or the version it saw go through the procedure, and end as the general way ends them")
        func simpleReplacementsGoThroughTheProcedure() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, serverA, syncA in
                try await withDevice("B", store: store) { b, serverB, syncB in
                    let start = try await serverA.engine.currentChangeToken()
                    // The first push reads the store's row: the general way.
                    try await a.write(contentsOf: (0..<4).map { Record(id: "n\($0)", data: Note(text: "a\($0)")) })
                    #expect(try await syncA.synchronize() == 4)
                    // New records, and one over the device's own version.
                    try await a.write(contentsOf: [Record(id: "n0", data: Note(text: "a0 again")), Record(id: "n4", data: Note(text: "a4"))])
                    #expect(try await syncA.synchronize() == 2)
                    #expect(try await procedurePushes(serverA) == 1)
                    // Over the version another device wrote, having received it.
                    #expect(try await syncB.synchronize() == 0)
                    try await b.write(Record(id: "n1", data: Note(text: "b1")))
                    try await b.write(Record(id: "n5", data: Note(text: "b5")))
                    #expect(try await syncB.synchronize() == 2)
                    #expect(try await syncA.synchronize() == 0)
                    #expect(try await noteText(a, "n1") == "b1")
                    #expect(try await noteText(a, "n0") == "a0 again")
                    #expect(try await storedBytes(local: a) == storedBytes(store: serverA))
                    #expect(try await storedBytes(local: b) == storedBytes(store: serverB))
                    #expect(try await syncA.serverConflicts().isEmpty)
                    // B's next push goes through the procedure (its engine has read the store's row).
                    let pushesOfB = try await procedurePushes(serverB)
                    try await b.write(Record(id: "n2", data: Note(text: "b2")))
                    #expect(try await syncB.synchronize() == 1)
                    #expect(try await procedurePushes(serverB) == pushesOfB + 1)
                    // The log says what the general way's would: each write once, in order.
                    let feed = try await serverA.engine.changeFeed(since: start, limit: 100)
                    let written = feed.commits.flatMap(\.changes).compactMap { change -> String? in
                        if case let .written(id, _) = change { return id }
                        return nil
                    }
                    #expect(written == ["n0", "n1", "n2", "n3", "n0", "n4", "n1", "n5", "n2"])
                }
            }
        }

        @Test("A write that replaces a version it did not see goes the general way: decided and logged there")
        func conflictsGoTheGeneralWay() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, serverA, syncA in
                try await withDevice("B", store: store) { b, serverB, syncB in
                    try await a.write(Record(id: "warm", data: Note(text: "a")))
                    #expect(try await syncA.synchronize() == 1)
                    #expect(try await syncB.synchronize() == 0)
                    try await b.write(Record(id: "warm", data: Note(text: "b")))
                    #expect(try await syncB.synchronize() == 1)
                    let before = try await procedurePushes(serverB)
                    // A writes "k" and pushes it; B, not having received it, writes "k" later
                    // (once the clock has passed A's stamp): B's push replaces a version it did not see.
                    try await a.write(Record(id: "k", data: Note(text: "a")))
                    #expect(try await syncA.synchronize() == 1)
                    let stampOfA = try #require(try await a.syncStamps(ofIDs: ["k"]).first ?? nil)
                    while UInt64(Date().timeIntervalSince1970 * 1000) << 16 <= stampOfA.time { try await Task.sleep(for: .milliseconds(1)) }
                    try await b.write(Record(id: "k", data: Note(text: "b")))
                    #expect(try await syncB.synchronize() == 1)
                    #expect(try await procedurePushes(serverB) == before)
                    #expect(try await syncA.synchronize() == 0)
                    #expect(try await noteText(a, "k") == "b")
                    #expect(try await noteText(b, "k") == "b")
                    // A's version, superseded by a write that had not seen it, is in the server's log.
                    #expect(try await syncA.serverConflicts().map(\.recordID) == ["k"])
                    #expect(try await storedBytes(local: b) == storedBytes(store: serverB))
                }
            }
        }

        @Test("A store made before the procedure existed gets it from the next enableSync of a role that may create it; without it, pushes go the general way")
        func aStoreWithoutTheProcedure() async throws {
            let store = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: store)
            try await withDevice("A", store: store) { a, server, syncA in
                try await a.write(Record(id: "n0", data: Note(text: "a")))
                #expect(try await syncA.synchronize() == 1)
                // As a store of the earlier version: its procedure, `push1`, and not this one's.
                try await PostgresServer.withConnection { connection in
                    _ = try await connection.query(PostgresQuery(unsafeSQL: "DROP PROCEDURE \(prefix)_push2"), logger: Logger(label: "tests"))
                    _ = try await connection.query(
                        PostgresQuery(unsafeSQL: "CREATE PROCEDURE \(prefix)_push1\(SyncSchema.pushSignature) LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the earlier version'; END $$"),
                        logger: Logger(label: "tests"))
                }
                for index in 1..<3 {
                    try await a.write(Record(id: "n\(index)", data: Note(text: "a")))
                    #expect(try await syncA.synchronize() == 1)
                }
                #expect(try await storedBytes(local: a) == storedBytes(store: server))
                #expect(try await procedurePushes(server) == 0)
            }
            try await withDevice("A", store: store) { a, server, syncA in
                // A new synchronizer's first pass enables synchronization: the procedure is made.
                try await a.write(Record(id: "n3", data: Note(text: "a")))
                #expect(try await syncA.synchronize() >= 1)
                try await a.write(Record(id: "n4", data: Note(text: "a")))
                #expect(try await syncA.synchronize() == 1)
                #expect(try await procedurePushes(server) == 1)
                // The earlier version's procedure, owned by this role, is gone.
                #expect(try await earlierProcedureIsGone())
                // Made again (a process of the earlier version enabling synchronization): the
                // next synchronizer's first pass drops it, though the store has this one.
                try await PostgresServer.withConnection { connection in
                    _ = try await connection.query(
                        PostgresQuery(unsafeSQL: "CREATE PROCEDURE \(prefix)_push1\(SyncSchema.pushSignature) LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the earlier version'; END $$"),
                        logger: Logger(label: "tests"))
                }
                #expect(try await !earlierProcedureIsGone())
            }
            try await withDevice("A", store: store) { a, server, syncA in
                try await a.write(Record(id: "n5", data: Note(text: "a")))
                #expect(try await syncA.synchronize() >= 1)
                #expect(try await earlierProcedureIsGone())
                #expect(try await storedBytes(local: a) == storedBytes(store: server))
            }
            /// Whether the store lacks `push1`.
            func earlierProcedureIsGone() async throws -> Bool {
                try await PostgresServer.withConnection { connection in
                    let rows = try await connection.query(
                        PostgresQuery(unsafeSQL: "SELECT to_regprocedure($1) IS NULL", binds: binds(prefix + "_push1" + SyncSchema.pushSignature)),
                        logger: Logger(label: "tests"))
                    var gone = false
                    for try await row in rows { gone = try row.decode(Bool.self) }
                    return gone
                }
            }
        }

        @Test("A push finds each stamp row by its key, even by a plan made while the store was small and kept by the session (the earlier procedure scanned every stamp row on each push)")
        func pushesFindStampRowsByKey() async throws {
            let store = PostgresServer.uniqueStore()
            let prefix = StoreSchema.prefix(for: store)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-sync-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            try await closing(try LocalDatabase(directory: directory)) { a in
                // One connection: every push is made in the session read below.
                try await closing(try await PostgresStore(configuration: PostgresServer.configuration(), name: store, connections: 1)) { server in
                    let syncA = Synchronizer(a, with: server, device: "A")
                    // The first pushes go through the thread, which finds the procedure.
                    for index in 0..<2 {
                        try await a.write(Record(id: "n\(index)", data: Note(text: "a")))
                        #expect(try await syncA.synchronize() == 1)
                    }
                    let engine = server.engine
                    /// Runs `sql` in the pool's one session, and returns its first row's first value.
                    func inSession(_ sql: String) async throws -> Int64? {
                        try await engine.onThread { () throws(DatabaseError) -> Int64? in
                            let connection = try engine.leaseBlocking("testing")
                            defer { engine.pool.release(connection) }
                            return try engine.run(PostgresQuery(unsafeSQL: sql), on: connection, "testing").rows.first.flatMap { try? $0.decode(Int64?.self) }
                        }
                    }
                    /// The scans of the store's stamp rows so far (the session's counts published first).
                    func scans() async throws -> Int64? {
                        _ = try await inSession("SELECT 0::bigint FROM (SELECT pg_stat_force_next_flush()) AS flushed")
                        return try await inSession("SELECT seq_scan FROM pg_stat_user_tables WHERE relid = to_regclass('\(prefix)_sync')")
                    }
                    // The session's counts are published on demand from PostgreSQL 15 on
                    // (`pg_stat_force_next_flush`); an older server is not checked.
                    guard try await inSession("SELECT current_setting('server_version_num')::bigint").map({ $0 >= 150_000 }) == true else { return }
                    // Generic plans from the next call on: the plans a session keeps after five.
                    _ = try await inSession("SELECT 0::bigint FROM (SELECT set_config('plan_cache_mode', 'force_generic_plan', false)) AS set")
                    let before = try await scans()
                    let pushed = try await procedurePushes(server)
                    for index in 2..<12 {
                        try await a.write(Record(id: "n\(index)", data: Note(text: "a")))
                        #expect(try await syncA.push() == 1)
                    }
                    #expect(try await procedurePushes(server) == pushed + 10)
                    let after = try await scans()
                    #expect(before != nil)
                    #expect(after == before)
                    #expect(try await storedBytes(local: a) == storedBytes(store: server))
                }
            }
        }
    }
}
