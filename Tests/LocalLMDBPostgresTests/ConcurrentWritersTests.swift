import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// The store's change log's sequence numbers, in order, once every entry is numbered (by a
/// change token's read), as the table holds them.
private func logSequences(_ store: PostgresStore) async throws -> [Int64] {
    _ = try await store.changeToken()
    return try await PostgresServer.withConnection { connection in
        let rows = try await connection.query(
            PostgresQuery(unsafeSQL: "SELECT sequence FROM \(store.engine.schema.log) ORDER BY sequence"), logger: Logger(label: "tests"))
        var sequences: [Int64] = []
        for try await sequence in rows.decode(Int64.self) { sequences.append(sequence) }
        return sequences
    }
}

extension PostgresTests {
    @Suite("Concurrent writers of one store", .serialized)
    struct ConcurrentWritersTests {
        /// A raw connection holding the writers' lock as a write of records by key holds it
        /// (shared): another such write goes on at once, every other kind waits for it, then
        /// fails with `busy`.
        @Test("Writes of records by key share the writers' lock; a class deletion, an index, a transaction wait for it")
        func writesByKeyShareTheLock() async throws {
            let name = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: name) { store in
                try await store.write(Record(id: "a", data: Note(text: "a")))
                _ = try await store.count(Query(PgAccount.self))  // its indexes, defined before the lock is held
                let busyStore = try await PostgresStore(configuration: PostgresServer.configuration(), name: name, busyTimeout: .milliseconds(300))
                try await closing(busyStore) { busy in
                    try await busy.write(Record(id: "warm", data: Note(text: "warm")))  // reads the catalog once
                    try await PostgresServer.withConnection { connection in
                        _ = try await connection.query("BEGIN", logger: Logger(label: "tests"))
                        _ = try await connection.query(store.engine.schema.writersLock(.shared), logger: Logger(label: "tests"))
                        // Records by key: side by side with the transaction in flight.
                        #expect(try await busy.write(Record(id: "b", data: Note(text: "b"))))
                        #expect(try await busy.delete(id: "a"))
                        // Everything else waits for it, at most the busy timeout.
                        await #expect(throws: LocalDatabaseError.busy(timeout: .milliseconds(300))) { try await busy.delete(Note.self) }
                        await #expect(throws: LocalDatabaseError.busy(timeout: .milliseconds(300))) { try await busy.clearDatabase() }
                        await #expect(throws: LocalDatabaseError.busy(timeout: .milliseconds(300))) {
                            try await busy.write(Record(id: "u", data: PgAccount(email: "u@x", bio: "", tags: [])))
                        }
                        await #expect(throws: LocalDatabaseError.busy(timeout: .milliseconds(300))) { try await busy.startTransaction() }
                        _ = try await connection.query("COMMIT", logger: Logger(label: "tests"))
                    }
                    try await busy.delete(Note.self)
                    #expect(try await busy.count() == 0)
                }
            }
        }

        /// Four engines (four processes' worth of connections) writing, replacing and deleting
        /// overlapping records at once, with class deletions among them: the log's sequence numbers
        /// are consecutive, and a replica that follows the log ends with exactly the store's bytes,
        /// so the log's order is the order the writes were applied in.
        @Test("Concurrent writers: consecutive sequence numbers, and the log replays to the store's state", arguments: [11, 12, 13] as [UInt64])
        func concurrentWritersLogInTheirOrder(seed: UInt64) async throws {
            let name = PostgresServer.uniqueStore()
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase(store: name) { store in
                    let replicator = PullReplicator(from: store, to: replica)
                    try await replicator.catchUp()
                    let writers = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
                        for _ in 0..<4 { group.addTask { try await PostgresStore(configuration: PostgresServer.configuration(), name: name, connections: 2) } }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                    do {
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            for (index, writer) in writers.enumerated() {
                                group.addTask {
                                    var random = SplitMix(seed: seed &* 31 &+ UInt64(index))
                                    for step in 0..<120 {
                                        let id = "r\(random.next() % 40)"
                                        switch random.next() % 20 {
                                        case 0: _ = try await writer.delete(Entry.self)
                                        case 1...4: _ = try await writer.delete(id: id)
                                        case 5...7:
                                            let ids = (0..<3).map { _ in "r\(random.next() % 40)" }
                                            _ = try await writer.write(contentsOf: ids.map { Record(id: $0, data: Entry(sequence: step, payload: "w\(index)")) })
                                        default: try await writer.write(Record(id: id, data: Entry(sequence: step, payload: "w\(index)")))
                                        }
                                    }
                                }
                            }
                            try await group.waitForAll()
                        }
                    } catch {
                        for writer in writers { await writer.close() }
                        throw error
                    }
                    for writer in writers { await writer.close() }
                    let sequences = try await logSequences(store)
                    #expect(sequences == Array(1...Int64(sequences.count)))
                    try await replicator.catchUp()
                    #expect(replicator.progress.fullCopies == 1)
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                }
            }
        }

        /// Writers of one unique value under different ids at once, from four engines: one is
        /// stored, the others are refused (a unique index's check runs alone).
        @Test("Concurrent writers of one unique value: exactly one is stored")
        func concurrentUniqueValues() async throws {
            let name = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: name) { store in
                _ = try await store.count(Query(PgAccount.self))
                for round in 0..<5 {
                    let writers = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
                        for _ in 0..<4 { group.addTask { try await PostgresStore(configuration: PostgresServer.configuration(), name: name, connections: 1) } }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                    let stored = await withTaskGroup(of: Bool.self) { group in
                        for (index, writer) in writers.enumerated() {
                            group.addTask {
                                (try? await writer.write(Record(id: "a\(round)-\(index)", data: PgAccount(email: "same\(round)@x", bio: "", tags: [])))) ?? false
                            }
                        }
                        return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
                    }
                    for writer in writers { await writer.close() }
                    #expect(stored == 1, "round \(round)")
                    #expect(try await store.count(Query(PgAccount.self).filter("email", .equals("same\(round)@x"))) == 1, "round \(round)")
                }
            }
        }

        /// A write by key that the server aborts as one side of a deadlock (another transaction
        /// holding the writers' lock shared locks its records in the other order) runs again,
        /// alone, and is stored: callers never see the deadlock.
        @Test("A shared write aborted in a deadlock runs again alone and succeeds")
        func aDeadlockedWriteRunsAgainAlone() async throws {
            let name = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: name) { store in
                try await store.write(contentsOf: [Record(id: "k1", data: Note(text: "1")), Record(id: "k2", data: Note(text: "2"))])
                let records = store.engine.schema.records
                let logger = Logger(label: "tests")
                try await PostgresServer.withConnection { other in
                    // Another writer, mid-transaction: it holds the shared lock and "k2".
                    _ = try await other.query("BEGIN", logger: logger)
                    _ = try await other.query(store.engine.schema.writersLock(.shared), logger: logger)
                    _ = try await other.query(PostgresQuery(unsafeSQL: "SELECT key FROM \(records) WHERE key = 'k2'::bytea FOR UPDATE"), logger: logger)
                    // This write locks "k1", then waits for "k2".
                    let write = Task { try await store.write(contentsOf: [Record(id: "k1", data: Note(text: "1b")), Record(id: "k2", data: Note(text: "2b"))]) }
                    #expect(try await PostgresServer.someoneWaitsForALock())
                    // The other writer now waits for "k1": a deadlock, which the server breaks by
                    // aborting the write (it has waited longer); the other writer then goes on.
                    _ = try await other.query(PostgresQuery(unsafeSQL: "SELECT key FROM \(records) WHERE key = 'k1'::bytea FOR UPDATE"), logger: logger)
                    _ = try await other.query("COMMIT", logger: logger)
                    #expect(try await write.value == 2)
                }
                let k1: Note? = try await store.read(id: "k1")
                let k2: Note? = try await store.read(id: "k2")
                #expect(k1?.text == "1b" && k2?.text == "2b")
            }
        }
    }
}
