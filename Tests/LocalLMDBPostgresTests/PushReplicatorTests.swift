import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// Every record of `local` and of `store`, key by key, as stored bytes: equal when the store
/// holds exactly the local data.
func storedBytes(local: LocalDatabase) async throws -> [[UInt8]: [UInt8]] {
    let (records, _) = try await local.replicatedRecords(ids: nil)
    var bytes: [[UInt8]: [UInt8]] = [:]
    for part in records.parts {
        part.forEachRecord { (key: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, _: String, _: StorageKey) in
            bytes[Array(key)] = Array(value)
        }
    }
    return bytes
}

func storedBytes(store: PostgresStore) async throws -> [[UInt8]: [UInt8]] {
    try await PostgresServer.withConnection { connection in
        var bytes: [[UInt8]: [UInt8]] = [:]
        let rows = try await connection.query(
            PostgresQuery(unsafeSQL: "SELECT key, value FROM \(store.engine.schema.records)"), logger: Logger(label: "tests"))
        for try await (key, value) in rows.decode((ByteBuffer, ByteBuffer).self) { bytes[Array(buffer: key)] = Array(buffer: value) }
        return bytes
    }
}

private func withLocal<R>(_ body: (LocalDatabase, URL) async throws -> R) async throws -> R {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-push-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let local = try LocalDatabase(directory: directory)
    do {
        let result = try await body(local, directory)
        await local.close()
        return result
    } catch {
        await local.close()
        throw error
    }
}

/// Runs the replication helper (`mode DIR STORE`) 20 times, each killed with SIGKILL at a random
/// moment 20 to 300 ms after it started (from `seed`); returns the positions it printed.
struct HelperMissing: Error, CustomStringConvertible {
    var description: String { "LocalLMDBPostgresHelper is not built" }
}

/// The replication tests' child process (`LocalLMDBPostgresHelper`), built beside the tests.
func replicationHelper() throws -> URL {
    guard let helper = executableBesideTests(named: "LocalLMDBPostgresHelper") else { throw HelperMissing() }
    return helper
}

/// The environment that tells the replication helper where the tests' server is.
func helperEnvironment(_ address: PostgresServer.Address) -> [String: String] {
    var environment: [String: String] = [:]
    environment["LOCALLMDB_POSTGRES_HOST"] = address.host
    environment["LOCALLMDB_POSTGRES_PORT"] = String(address.port)
    environment["LOCALLMDB_POSTGRES_USER"] = address.user
    environment["LOCALLMDB_POSTGRES_PASSWORD"] = address.password
    environment["LOCALLMDB_POSTGRES_DATABASE"] = address.database
    return environment
}

func runKilledHelper(_ helper: URL, mode: String, directory: URL, store: String, seed: UInt64) async throws -> [String] {
    let address = try PostgresServer.address.get()
    var generator = SplitMix(seed: seed)
    var positions: [String] = []
    for round in 0..<20 {
        let process = try ChildProcess(helper.path, [mode, directory.path, store], environment: helperEnvironment(address), output: .pipe)
        // Until a run has recorded a position, each round lets the child live 150 ms longer: a
        // slow start (ThreadSanitizer, a loaded machine) must not leave every kill before the first.
        let grace = positions.isEmpty ? round * 150 : 0
        try await Task.sleep(for: .milliseconds(20 + Int(generator.next() % 280) + grace))
        process.send(SIGKILL)
        process.waitUntilExit()
        let lines = (process.output?.readText() ?? "").split(separator: "\n")
        positions += lines.filter { $0.hasPrefix("position ") }.map { String($0.dropFirst("position ".count)) }
    }
    return positions
}

extension PostgresTests {
    @Suite("Push replication", .serialized)
    struct PushReplicatorTests {
        @Test("Commits reach the server in order: writes, replacements, deletes, type deletes, clears")
        func replicatesEveryKindOfChange() async throws {
            try await withLocal { local, _ in
                try await PostgresServer.withDatabase { store in
                    try await local.write(contentsOf: (0..<30).map { Record(id: "e\($0)", data: Entry(sequence: $0, payload: "p\($0)")) })
                    try await local.write(Record(id: "n1", data: Note(text: "first")))
                    let replicator = PushReplicator(from: local, to: store)
                    try await replicator.catchUp()
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                    #expect(replicator.progress.fullCopies == 1)

                    try await local.write(Record(id: "n1", data: Note(text: "second")))
                    try await local.delete(id: "e3")
                    try await local.write(Record(id: "n2", data: Note(text: "\u{0}quote' \"")))
                    #expect(try await replicator.catchUp() == 3)
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                    let n1: Note? = try await store.read(id: "n1")
                    #expect(n1?.text == "second")

                    try await local.delete(Entry.self)
                    #expect(try await replicator.catchUp() == 1)
                    #expect(try await store.count(Entry.self) == 0)
                    try await local.write(Record(id: "e1", data: Entry(sequence: 1, payload: "back")))
                    _ = try await local.clearDatabase()
                    try await local.write(Record(id: "last", data: Note(text: "after the clear")))
                    try await replicator.catchUp()
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                    #expect(try await store.count() == 1)
                    #expect(replicator.progress.lag == 0)
                    // Caught up: nothing more to apply, and applying again changes nothing.
                    #expect(try await replicator.catchUp() == 0)
                }
            }
        }

        @Test("A pushed class name that the server holds in another Unicode normalization is refused, and nothing is pushed")
        func aClassNameInAnotherNormalizationIsRefused() async throws {
            try await withLocal { local, _ in
                try await PostgresServer.withDatabase { store in
                    try await store.write(Record(id: "server", data: PgSpellingB.Café(b: 1)))
                    try await local.write(Record(id: "local", data: PgSpellingA.Café(a: 2)))
                    let replicator = PushReplicator(from: local, to: store)
                    do {
                        try await replicator.catchUp()
                        Issue.record("a second spelling of a class name reached the server")
                    } catch let error as LocalDatabaseError {
                        guard case let .classRegistration(type: _, reason: reason) = error else {
                            Issue.record("expected classRegistration, got \(error)")
                            return
                        }
                        #expect(reason.contains("another Unicode normalization"))
                    }
                    #expect(try await store.count() == 1)
                    #expect((try await store.read(id: "server") as PgSpellingB.Café?)?.b == 1)
                    #expect((try await local.read(id: "local") as PgSpellingA.Café?)?.a == 2)
                }
            }
        }

        @Test("Ids that differ only in Unicode normalization are two records, and both reach the server")
        func canonicallyEquivalentIDsAreTwoRecords() async throws {
            try await withLocal { local, _ in
                try await PostgresServer.withDatabase { store in
                    try await local.write(Record(id: "before", data: Note(text: "0")))
                    let replicator = PushReplicator(from: local, to: store)
                    try await replicator.catchUp()
                    // One commit writes both; the next deletes one of them.
                    _ = try await local.write(contentsOf: [
                        Record(id: "\u{E9}", data: Note(text: "precomposed")), Record(id: "e\u{301}", data: Note(text: "decomposed")),
                    ])
                    try await replicator.catchUp()
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                    #expect(try await store.count() == 3)
                    #expect((try await store.read(id: "e\u{301}") as Note?)?.text == "decomposed")
                    #expect((try await store.read(id: "\u{E9}") as Note?)?.text == "precomposed")
                    #expect(try await local.delete(id: "\u{E9}"))
                    try await local.write(Record(id: "e\u{301}", data: Note(text: "decomposed, again")))
                    try await replicator.catchUp()
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                    #expect((try await store.read(id: "e\u{301}") as Note?)?.text == "decomposed, again")
                    #expect(try await store.read(id: "\u{E9}") as Note? == nil)
                }
            }
        }

        @Test("A new replicator resumes from the position the server holds: nothing applied twice")
        func resumesFromTheServersPosition() async throws {
            try await withLocal { local, _ in
                try await PostgresServer.withDatabase { store in
                    try await local.write(Record(id: "a", data: Note(text: "1")))
                    try await PushReplicator(from: local, to: store).catchUp()
                    for index in 0..<5 { try await local.write(Record(id: "b\(index)", data: Note(text: "\(index)"))) }
                    let second = PushReplicator(from: local, to: store)
                    #expect(try await second.catchUp() == 5)
                    #expect(second.progress.fullCopies == 0)
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                    // The server's change log holds each replicated commit once.
                    let feed = try store.engine.changeFeedBlocking(since: LogPosition(logID: store.engine.schema.logID, sequence: 0), limit: .max)
                    let written = feed.commits.flatMap(\.changes).filter { if case .written = $0 { true } else { false } }
                    #expect(written.count == 6)
                }
            }
        }

        @Test("A replicator whose position moved under it is refused, and applies nothing")
        func twoReplicatorsOfOneSource() async throws {
            try await withLocal { local, _ in
                try await PostgresServer.withDatabase { store in
                    try await local.write(Record(id: "a", data: Note(text: "1")))
                    try await PushReplicator(from: local, to: store, source: "s").catchUp()
                    await #expect(throws: DatabaseError.self) {
                        try await store.engine.applyReplicated([], classRows: [], source: "s", expected: nil, position: "x:1", migrations: MigrationState())
                    }
                }
            }
        }

        @Test("run() follows new commits as they are made, and stops when cancelled")
        func runFollows() async throws {
            try await withLocal { local, _ in
                try await PostgresServer.withDatabase { store in
                    let replicator = PushReplicator(from: local, to: store)
                    let task = Task { try await replicator.run() }
                    for index in 0..<20 { try await local.write(Record(id: "r\(index)", data: Note(text: "\(index)"))) }
                    let target = try local.changePosition().description
                    let deadline = ContinuousClock.now + .seconds(30)
                    while replicator.progress.position != target && ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    #expect(replicator.progress.position == target)
                    task.cancel()
                    _ = await task.result
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                }
            }
        }

        /// Another replicator of the same source commits between this one's reading of the
        /// position and its transaction (as a replicator killed with its last transaction in
        /// flight does, when the server completes it): this one applies nothing of its stale run,
        /// reads the position again, and goes on from it.
        @Test("A position moved by another replicator of the source while this one waited: read again, no error")
        func aPositionMovedMeanwhileIsReadAgain() async throws {
            try await withLocal { local, _ in
                try await PostgresServer.withDatabase { store in
                    try await local.write(Record(id: "a", data: Note(text: "a")))
                    let replicator = PushReplicator(from: local, to: store, source: "moved")
                    try await replicator.catchUp()
                    try await local.write(Record(id: "b", data: Note(text: "b")))
                    let last = try local.changePosition().description
                    let logger = Logger(label: "tests")
                    try await PostgresServer.withConnection { other in
                        // Holds every writer off while this replicator reads the position and waits.
                        _ = try await other.query("BEGIN", logger: logger)
                        _ = try await other.query(store.engine.schema.writersLock(.exclusive), logger: logger)
                        let pass = Task { try await replicator.catchUp() }
                        #expect(try await PostgresServer.someoneWaitsForALock())
                        // "Another replicator" records the last position meanwhile.
                        _ = try await other.query(
                            PostgresQuery(
                                unsafeSQL: "UPDATE \(store.engine.schema.replication) SET position = $1 WHERE source = $2",
                                binds: { var binds = PostgresBindings(); binds.append(last); binds.append("moved"); return binds }()),
                            logger: logger)
                        _ = try await other.query("COMMIT", logger: logger)
                        #expect(try await pass.value == 0)
                    }
                    #expect(replicator.progress.position == last)
                    // Nothing of the stale run was applied (the other replicator "had" applied it).
                    #expect(try await store.count(Note.self) == 1)
                }
            }
        }

        @Test("SIGKILL the replicator at 20 random moments while 4 writers commit: the server ends with exactly the local data")
        func killedReplicator() async throws {
            let helper = try replicationHelper()
            try await withLocal { local, directory in
                let storeName = PostgresServer.uniqueStore()
                try await PostgresServer.withDatabase(store: storeName) { store in
                    let writing = Task {
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            for writer in 0..<4 {
                                group.addTask {
                                    var index = 0
                                    while !Task.isCancelled {
                                        try await local.write(Record(id: "w\(writer)-\(index % 50)", data: Entry(sequence: index, payload: "w\(writer)")))
                                        if index % 7 == 0 { try await local.delete(id: "w\(writer)-\((index + 13) % 50)") }
                                        index += 1
                                        try await Task.sleep(for: .milliseconds(2))
                                    }
                                }
                            }
                            try await group.waitForAll()
                        }
                    }
                    let positions = try await runKilledHelper(helper, mode: "push", directory: directory, store: storeName, seed: 20)
                    writing.cancel()
                    _ = await writing.result
                    // A last replicator catches up with the writers' final state.
                    let final = PushReplicator(from: local, to: store, source: "kill-test")
                    try await final.catchUp()
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                    #expect(final.progress.position == (try local.changePosition()).description)
                    // Positions recorded went forward only, through every run.
                    let sequences = positions.compactMap { PushReplicator.position(parsing: $0)?.sequence }
                    #expect(sequences == sequences.sorted())
                    #expect(sequences.count > 0)
                }
            }
        }
    }
}
