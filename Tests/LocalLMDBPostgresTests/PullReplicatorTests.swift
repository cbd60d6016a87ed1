import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// A new local database in a temporary directory, closed and removed after `body`.
func withReplica<R>(_ body: (LocalDatabase, URL) async throws -> R) async throws -> R {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-pull-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await closing(try LocalDatabase(directory: directory)) { try await body($0, directory) }
}

/// Waits (for at most 30 s) until `condition` holds, looking every 10 ms.
func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// Whether `body` fails with `readOnlyReplica`.
func refusedAsReplica(_ body: () async throws -> Void) async -> Bool {
    do {
        try await body()
        return false
    } catch let error as LocalDatabaseError {
        if case .readOnlyReplica = error { return true }
        return false
    } catch {
        return false
    }
}

extension PostgresTests {
    @Suite("Pull replication", .serialized)
    struct PullReplicatorTests {
        @Test("The server's commits reach the replica: writes, replacements, odd ids, deletes, type deletes, clears")
        func replicatesEveryKindOfChange() async throws {
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase { store in
                    try await store.write(contentsOf: (0..<30).map { Record(id: "e\($0)", data: Entry(sequence: $0, payload: "p\($0)")) })
                    try await store.write(Record(id: "n1", data: Note(text: "first")))
                    let replicator = PullReplicator(from: store, to: replica)
                    #expect(try await replicator.catchUp() == 0)
                    #expect(replicator.progress.fullCopies == 1)
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))

                    try await store.write(Record(id: "n1", data: Note(text: "second")))
                    _ = try await store.delete(id: "e3")
                    let odd = "\u{0}quote' \"; DROP TABLE x; --" + String(repeating: "é", count: 400)
                    try await store.write(Record(id: odd, data: Note(text: "odd")))
                    #expect(try await replicator.catchUp() == 3)
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    let n1: Note? = try await replica.read(id: "n1")
                    #expect(n1?.text == "second")
                    let oddNote: Note? = try await replica.read(id: odd)
                    #expect(oddNote?.text == "odd")

                    _ = try await store.delete(Entry.self)
                    #expect(try await replicator.catchUp() == 1)
                    #expect(try await replica.count(Entry.self) == 0)
                    try await store.write(Record(id: "e1", data: Entry(sequence: 1, payload: "back")))
                    _ = try await store.clearDatabase()
                    try await store.write(Record(id: "last", data: Note(text: "after the clear")))
                    try await replicator.catchUp()
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    #expect(try await replica.count() == 1)
                    #expect(replicator.progress.fullCopies == 1)
                    #expect(try await replicator.catchUp() == 0)
                    #expect(replicator.progress.lag == 0)
                    // A new replicator resumes from the position the replica holds.
                    for index in 0..<3 { try await store.write(Record(id: "resumed\(index)", data: Note(text: "r"))) }
                    let second = PullReplicator(from: store, to: replica, commitsPerTransaction: 1)
                    #expect(try await second.catchUp() == 3)
                    #expect(second.progress.lag == 0)
                    #expect(second.progress.fullCopies == 0)
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                }
            }
        }

        @Test("Ids that differ only in Unicode normalization are two records, and both reach the replica")
        func canonicallyEquivalentIDsAreTwoRecords() async throws {
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase { store in
                    try await store.write(Record(id: "before", data: Note(text: "0")))
                    let replicator = PullReplicator(from: store, to: replica)
                    try await replicator.catchUp()
                    _ = try await store.write(contentsOf: [
                        Record(id: "\u{E9}", data: Note(text: "precomposed")), Record(id: "e\u{301}", data: Note(text: "decomposed")),
                    ])
                    try await replicator.catchUp()
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    #expect(try await replica.count() == 3)
                    #expect(try await store.delete(id: "\u{E9}"))
                    try await store.write(Record(id: "e\u{301}", data: Note(text: "decomposed, again")))
                    try await replicator.catchUp()
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    #expect((try await replica.read(id: "e\u{301}") as Note?)?.text == "decomposed, again")
                    #expect(try await replica.read(id: "\u{E9}") as Note? == nil)
                }
            }
        }

        @Test("A server holding a class name in two Unicode normalizations is copied as it is")
        func classNamesInTwoNormalizationsAreCopied() async throws {
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase { store in
                    try await store.write(Record(id: "a", data: PgSpellingA.Café(a: 1)))
                    // The other spelling, recorded as a server written before the rule would have.
                    let other = StoredClass(name: "Cafe\u{301}", mangledName: "$sOther4CafeC", qualifiedName: "Other.Cafe\u{301}")
                    try await PostgresServer.withConnection { connection in
                        _ = try await connection.query(
                            PostgresQuery(
                                unsafeSQL: "INSERT INTO \(store.engine.schema.classes) (name_key, row) VALUES ($1, $2)",
                                binds: binds(ByteBuffer(bytes: Array("Cafe\u{301}".utf8)), ByteBuffer(bytes: other.encoded))),
                            logger: Logger(label: "tests"))
                    }
                    let replicator = PullReplicator(from: store, to: replica)
                    try await replicator.catchUp()
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    #expect((try await replica.read(id: "a") as PgSpellingA.Café?)?.a == 1)
                }
            }
        }

        @Test("A replica refuses local writes, on every path, with a typed error, and changes nothing; detached, it is writable")
        func replicaRefusesWrites() async throws {
            try await withReplica { replica, directory in
                try await PostgresServer.withDatabase { store in
                    try await store.write(Record(id: "a", data: Note(text: "server")))
                    let replicator = PullReplicator(from: store, to: replica)
                    try await replicator.catchUp()
                    let before = try await storedBytes(local: replica)

                    #expect(await refusedAsReplica { try await replica.write(Record(id: "b", data: Note(text: "local"))) })
                    #expect(await refusedAsReplica { try await replica.write(contentsOf: [Record(id: "a", data: Note(text: "local"))]) })
                    #expect(await refusedAsReplica { _ = try await replica.delete(id: "a") })
                    #expect(await refusedAsReplica { _ = try await replica.delete(Note.self) })
                    #expect(await refusedAsReplica { _ = try await replica.clearDatabase() })
                    // A transaction's buffered write is refused at its commit.
                    try await replica.startTransaction()
                    let buffered = await refusedAsReplica {
                        try await replica.write(Record(id: "t", data: Note(text: "in a transaction")))
                        try await replica.commitTransaction()
                    }
                    #expect(buffered)
                    if replica.transactionActive { try await replica.rollbackTransaction() }
                    // Another database on the same files (another process would be the same).
                    let other = try LocalDatabase(directory: directory)
                    #expect(await refusedAsReplica { try await other.write(Record(id: "c", data: Note(text: "other"))) })
                    await other.close()
                    // The synchronous face, and a JSON Lines import (streamed in parts).
                    let serialization = try SerializationDatabase(directory: directory)
                    #expect(!serialization.write(Record(id: "s", data: Note(text: "sync"))))
                    #expect(serialization.lastError == .readOnlyReplica(source: store.name))
                    serialization.close()
                    let lines = directory.deletingLastPathComponent().appendingPathComponent("replica-\(UUID().uuidString).jsonl")
                    defer { try? FileManager.default.removeItem(at: lines) }
                    try Data(#"{"id":"imported","class":"Note","value":{"text":"line"}}"#.utf8).write(to: lines)
                    #expect(await refusedAsReplica { _ = try await replica.importLines(from: lines) })
                    #expect(try await storedBytes(local: replica) == before)

                    // The server's writes still arrive.
                    try await store.write(Record(id: "d", data: Note(text: "server 2")))
                    #expect(try await replicator.catchUp() == 1)
                    #expect(try await replica.count() == 2)

                    // Detached: writable, and no longer followed (its records are its own now).
                    #expect(try await replicator.detach())
                    try await replica.write(Record(id: "mine", data: Note(text: "local")))
                    await #expect(throws: LocalDatabaseError.self) { try await replicator.catchUp() }
                    #expect(try await replica.count() == 3)
                }
            }
        }

        @Test("A database with records of its own is never made a replica; another source's replica is refused")
        func refusesToReplaceLocalData() async throws {
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase { store in
                    try await store.write(Record(id: "s", data: Note(text: "server")))
                    try await replica.write(Record(id: "mine", data: Note(text: "precious")))
                    do {
                        try await PullReplicator(from: store, to: replica).catchUp()
                        Issue.record("a database with records was made a replica")
                    } catch let error as LocalDatabaseError {
                        guard case .unsupported = error else { throw error }
                    }
                    // run() stops with it too: no retry would change it.
                    do {
                        try await PullReplicator(from: store, to: replica).run()
                        Issue.record("run() into a database with records returned")
                    } catch let error as LocalDatabaseError {
                        guard case .unsupported = error else { throw error }
                    }
                    let mine: Note? = try await replica.read(id: "mine")
                    #expect(mine?.text == "precious")
                    #expect(try await replica.count() == 1)
                }
            }
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase { first in
                    try await PostgresServer.withDatabase { second in
                        try await first.write(Record(id: "one", data: Note(text: "1")))
                        try await PullReplicator(from: first, to: replica).catchUp()
                        await #expect(throws: LocalDatabaseError.self) { try await PullReplicator(from: second, to: replica).catchUp() }
                        #expect(try await storedBytes(local: replica) == storedBytes(store: first))
                    }
                }
            }
        }

        @Test("A store whose name holds NUL, quotes and SQL is pulled, and the replica resumes from the state it recorded")
        func oddSourceName() async throws {
            try await withReplica { replica, _ in
                let name = "nul\u{0}inside'; DROP TABLE locallmdb_stores; --\u{0}" + UUID().uuidString
                try await PostgresServer.withDatabase(store: name) { store in
                    try await store.write(Record(id: "a", data: Note(text: "1")))
                    try await PullReplicator(from: store, to: replica).catchUp()
                    try await store.write(Record(id: "b", data: Note(text: "2")))
                    let resumed = PullReplicator(from: store, to: replica)
                    #expect(try await resumed.catchUp() == 1)
                    #expect(resumed.progress.fullCopies == 0)
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    #expect(await refusedAsReplica { try await replica.write(Record(id: "c", data: Note(text: "3"))) })
                    #expect(try await resumed.detach())
                }
            }
        }

        @Test("A replica declares its own indexes and answers queries on them, kept exact by each replicated run")
        func replicaQueries() async throws {
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase { store in
                    try await store.write(contentsOf: (0..<40).map { Record(id: "t\($0)", data: Ticket(queue: "q\($0 % 4)", priority: $0, title: "")) })
                    let replicator = PullReplicator(from: store, to: replica)
                    try await replicator.catchUp()
                    let query = Query(Ticket.self).filter("queue", .equals("q1")).sorted(by: "priority", descending: true).limit(3)
                    #expect(try await replica.read(query).map(\.priority) == [37, 33, 29])
                    _ = try await store.delete(id: "t37")
                    try await store.write(Record(id: "t2", data: Ticket(queue: "q1", priority: 99, title: "moved")))
                    try await replicator.catchUp()
                    #expect(try await replica.read(query).map(\.priority) == [99, 33, 29])
                    #expect(try await replica.count(Query(Ticket.self).filter("queue", .equals("q2"))) == 9)
                    #expect(try await replica.verifyIntegrity().isConsistent)
                }
            }
        }

        @Test("A replica's unique index does not refuse what its source stored: values swapped in one run arrive")
        func replicaUniqueIndexFollowsTheSource() async throws {
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase { store in
                    try await store.write(contentsOf: [
                        Record(id: "a", data: PgAccount(email: "x", bio: "", tags: [])), Record(id: "b", data: PgAccount(email: "y", bio: "", tags: [])),
                    ])
                    let replicator = PullReplicator(from: store, to: replica)
                    try await replicator.catchUp()
                    #expect(try await replica.readIDs(Query(PgAccount.self).filter("email", .equals("x"))) == ["a"])
                    // One batch on the server swaps them (its check is on the batch's final state).
                    try await store.write(contentsOf: [
                        Record(id: "a", data: PgAccount(email: "y", bio: "", tags: [])), Record(id: "b", data: PgAccount(email: "x", bio: "", tags: [])),
                    ])
                    try await replicator.catchUp()
                    #expect(try await replica.readIDs(Query(PgAccount.self).filter("email", .equals("x"))) == ["b"])
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    #expect(try await replica.verifyIntegrity().isConsistent)
                }
            }
        }

        @Test("A replicated run never joins a transaction open on the replica: it is refused until the transaction ends")
        func replicaTransactionOpen() async throws {
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase { store in
                    try await store.write(Record(id: "a", data: Note(text: "1")))
                    let replicator = PullReplicator(from: store, to: replica)
                    try await replicator.catchUp()
                    try await store.write(Record(id: "b", data: Note(text: "2")))
                    try await replica.startTransaction()
                    do {
                        try await replicator.catchUp()
                        Issue.record("a run was applied inside the replica's open transaction")
                    } catch let error as LocalDatabaseError {
                        guard case .transactionAlreadyActive = error else { throw error }
                    }
                    // The server's commit not yet applied is the lag.
                    #expect(replicator.progress.lag == 1)
                    try await replica.rollbackTransaction()
                    #expect(try await replicator.catchUp() == 1)
                    #expect(try await replica.count() == 2)
                }
            }
        }

        @Test("A replica behind a trimmed log is copied afresh: records deleted meanwhile go, the copy reports progress")
        func trimmedLogFullCopy() async throws {
            try await withReplica { replica, _ in
                try await PostgresServer.withDatabase { store in
                    try await store.write(contentsOf: (0..<100).map { Record(id: "e\($0)", data: Entry(sequence: $0, payload: "p")) })
                    let replicator = PullReplicator(from: store, to: replica, commitsPerTransaction: 1)
                    try await replicator.catchUp()
                    for index in 0..<10 { _ = try await store.delete(id: "e\(index)") }
                    try await store.write(contentsOf: (100..<12_000).map { Record(id: "e\($0)", data: Entry(sequence: $0, payload: "p")) })
                    // The whole log goes: the replica's position is out of reach.
                    #expect(try await store.trimChangeLog(keeping: 0) > 0)
                    let observed = Locked<[PullReplicator.FullCopy]>([])
                    let watcher = Task {
                        while !Task.isCancelled {
                            if let copy = replicator.progress.fullCopy { observed.withLock { $0.append(copy) } }
                            await Task.yield()
                        }
                    }
                    try await replicator.catchUp()
                    watcher.cancel()
                    _ = await watcher.result
                    #expect(replicator.progress.fullCopies == 2)
                    #expect(replicator.progress.fullCopy == nil)
                    #expect(try await replica.count() == 11_990)
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    // Progress went forward, towards the store's count.
                    let seen = observed.withLock { $0 }
                    #expect(seen.allSatisfy { $0.total == 11_990 && $0.fetched <= $0.total })
                    #expect(seen.map(\.fetched) == seen.map(\.fetched).sorted())

                    // Trimmed to the last commit, with the replica two behind: copied again.
                    for index in 0..<3 { try await store.write(Record(id: "late\(index)", data: Entry(sequence: index, payload: "late"))) }
                    #expect(try await store.trimChangeLog(keeping: 1) == 2)
                    try await replicator.catchUp()
                    #expect(replicator.progress.fullCopies == 3)
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                }
            }
        }

        @Test("run() follows other servers' commits; observers of the replica hear them; cancelled, it stops")
        func runFollows() async throws {
            try await withReplica { replica, _ in
                let name = PostgresServer.uniqueStore()
                try await PostgresServer.withDatabase(store: name) { store in
                    try await PostgresServer.withDatabase(store: name) { otherServer in
                        let replicator = PullReplicator(from: store, to: replica)
                        let task = Task { try await replicator.run() }
                        let heard = Task {
                            for try await notes in replica.observeAll(Note.self) where notes.count == 20 { return true }
                            return false
                        }
                        for index in 0..<20 { try await otherServer.write(Record(id: "r\(index)", data: Note(text: "\(index)"))) }
                        #expect(try await eventually { try await replica.count() == 20 })
                        #expect(try await heard.value)
                        task.cancel()
                        _ = await task.result
                        #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    }
                }
            }
        }

        @Test("The server stopping and starting under both replicators: retried with a recorded error, then caught up")
        func serverRestartDuringReplication() async throws {
            try await withReplica { replica, _ in
                try await withReplica { local, _ in
                    try await PostgresServer.withDatabase { store in
                        let push = PushReplicator(from: local, to: store)
                        let pull = PullReplicator(from: store, to: replica)
                        try await local.write(Record(id: "before", data: Note(text: "1")))
                        let pushing = Task { try await push.run() }
                        let pulling = Task { try await pull.run() }
                        #expect(try await eventually { try await replica.count() == 1 })
                        try PostgresServer.control("stop")
                        var serverWasBack = false
                        defer { if !serverWasBack { try? PostgresServer.control("start") } }
                        for index in 0..<10 { try await local.write(Record(id: "during\(index)", data: Note(text: "2"))) }
                        #expect(try await eventually { push.progress.lastError != nil })
                        try PostgresServer.control("start")
                        serverWasBack = true
                        try await local.write(Record(id: "after", data: Note(text: "3")))
                        #expect(try await eventually { try await replica.count() == 12 })
                        #expect(try await eventually { push.progress.lastError == nil && pull.progress.lastError == nil })
                        pushing.cancel()
                        pulling.cancel()
                        #expect(try await storedBytes(store: store) == storedBytes(local: local))
                        #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                        _ = await (pushing.result, pulling.result)
                    }
                }
            }
        }

        @Test("A replicator killed between writing a run and publishing it: the next one reads the position the run left, and goes on")
        func unpublishedRunIsFollowed() async throws {
            let helper = try replicationHelper()
            // This process keeps the replica open throughout, so LMDB's lock file, where readers
            // learn the last commit, outlives the killed replicator (as in an app that runs one).
            try await withReplica { replica, directory in
                let name = PostgresServer.uniqueStore()
                try await PostgresServer.withDatabase(store: name) { store in
                    try await store.write(Record(id: "a", data: Note(text: "1")))
                    let process = try ChildProcess(
                        helper.path, ["pull-unpublish", directory.path, name], environment: helperEnvironment(try PostgresServer.address.get()), output: .pipe)
                    #expect(process.waitUntilExit() == .signal(SIGKILL))
                    #expect(process.output?.readText().hasPrefix("unpublished ") == true)
                    try await store.write(Record(id: "b", data: Note(text: "2")))
                    // Before: this replicator read the position before the killed run's, and its
                    // write found the run's: "another replicator of the same source ran".
                    let replicator = PullReplicator(from: store, to: replica)
                    #expect(try await replicator.catchUp() == 1)
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                }
            }
        }

        @Test("SIGKILL the pull replicator at 20 random moments while 4 servers write: the replica ends with exactly the server's data")
        func killedReplicator() async throws {
            let helper = try replicationHelper()
            try await withReplica { _, directory in
                let storeName = PostgresServer.uniqueStore()
                try await PostgresServer.withDatabase(store: storeName) { store in
                    let writing = Task {
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            for writer in 0..<4 {
                                group.addTask {
                                    try await PostgresServer.withDatabase(store: storeName, connections: 1) { server in
                                        var index = 0
                                        while !Task.isCancelled {
                                            try await server.write(Record(id: "w\(writer)-\(index % 50)", data: Entry(sequence: index, payload: "w\(writer)")))
                                            if index % 7 == 0 { _ = try await server.delete(id: "w\(writer)-\((index + 13) % 50)") }
                                            index += 1
                                        }
                                    }
                                }
                            }
                            try await group.waitForAll()
                        }
                    }
                    let positions = try await runKilledHelper(helper, mode: "pull", directory: directory, store: storeName, seed: 21)
                    writing.cancel()
                    _ = await writing.result
                    // The replica, opened afresh, is whole, and a last replicator catches it up.
                    try await closing(try LocalDatabase(directory: directory)) { replica in
                        #expect(try await replica.verifyIntegrity().isConsistent)
                        let final = PullReplicator(from: store, to: replica)
                        try await final.catchUp()
                        #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                        #expect(final.progress.fullCopies == 0 || positions.isEmpty)
                    }
                    let sequences = positions.compactMap { PushReplicator.position(parsing: $0)?.sequence }
                    #expect(sequences == sequences.sorted())
                    #expect(sequences.count > 0)
                }
            }
        }
    }
}
