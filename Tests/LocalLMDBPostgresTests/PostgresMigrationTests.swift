import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBTestSupport
import PostgresNIO
import Synchronization
import Testing

/// Counts calls from `@Sendable` step functions.
private final class StepCounter: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

private struct Refused: Error, CustomStringConvertible {
    var description: String { "refused" }
}

/// `MigrationWorkload`'s people, version 1, `total` of them, written to `store`.
private func writePeople(_ store: PostgresStore, count total: Int) async throws {
    for start in stride(from: 0, to: total, by: 10_000) {
        _ = try await store.write(contentsOf: (start..<min(total, start + 10_000)).map {
            Record(id: MigrationWorkload.id($0), data: PersonV1(name: MigrationWorkload.name($0)))
        })
    }
}

/// A migrator whose one migration, "visit", counts a visit on each `PersonV1` (in `counter`);
/// with `failAt`, its step throws at that record.
private func visiting(batchSize: Int, counter: StepCounter, failAt: String? = nil) -> DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("visit", batchSize: batchSize, steps: [
        .transform(PersonV1.self) { record in
            if record.id == failAt { throw Refused() }
            counter.add()
            let name: String = record.document.get("name")
            let visits: Int = record.document.get("visits")
            return .replace(with: PersonV1(name: name, visits: visits + 1))
        },
    ])
    return migrator
}

/// The store's row in `locallmdb_stores`: its schema version, and whether it has a migration entry.
private func storeRow(_ store: PostgresStore) async throws -> (version: Int, migrated: Bool) {
    try await PostgresServer.withConnection { connection in
        let rows = try await connection.query(
            "SELECT version, migrations IS NOT NULL FROM locallmdb_stores WHERE name = \(ByteBuffer(bytes: Array(store.name.utf8)))",
            logger: Logger(label: "tests"))
        for try await (version, migrated) in rows.decode((Int, Bool).self) { return (version, migrated) }
        return (0, false)
    }
}

/// Checks every record of the workload after migrations of `total` people: each there once, each
/// visited at most once (exactly once when moved), and the index of `PersonV2` exact.
private func checkPeople(_ store: PostgresStore, total: Int, _ context: String) async throws -> Int {
    let old: [PersonV1] = try await store.read()
    let new: [PersonV2] = try await store.read()
    #expect(old.count + new.count == total, "\(context)")
    #expect(old.allSatisfy { $0.visits <= 1 }, "\(context): \(old.filter { $0.visits > 1 }.count) visited twice")
    #expect(new.allSatisfy { $0.visits == 1 }, "\(context)")
    let family5 = try await store.count(Query(PersonV2.self).filter("last", .equals("Family5")))
    #expect(family5 == new.filter { $0.last == "Family5" }.count, "\(context)")
    return new.count
}

extension PostgresTests {
    @Suite("Migrations on PostgreSQL", .serialized)
    struct PostgresMigrationTests {
        @Test("A migration runs once, in batches, recorded in the store's row, which older versions then refuse")
        func aMigrationRunsOnceInBatches() async throws {
            try await PostgresServer.withDatabase { store in
                try await writePeople(store, count: 250)
                var reports: [MigrationProgress] = []
                var migrator = MigrationWorkload.migrator(batchSize: 100)
                // A custom step reads the migrated records through the store and writes a summary.
                migrator.registerMigration("summary", steps: [
                    .custom { database, writes in
                        let people: [PersonV2] = try await database.read()
                        try writes.write(Record(id: "summary", data: Note(text: "\(people.count) people")))
                    },
                    .renameField("visits", to: "seen", in: "PersonV2"),
                ])
                #expect(try await store.migrate(with: migrator) { reports.append($0) } == ["split names", "summary"])
                // Batches of 100 in each walk: 100, 200, then 250 (short: the walk's last).
                #expect(reports.filter { $0.migration == "split names" }.map(\.recordsVisited) == [100, 200, 250, 100, 200, 250])
                #expect(try await store.migrationStatus() == MigrationStatus(completed: ["split names", "summary"], underWay: nil))
                #expect(try await store.count(PersonV1.self) == 0)
                let people: [PersonV2] = try await store.read()
                #expect(people.count == 250)
                #expect(Set(people.map { $0.first + " " + $0.last }) == Set((0..<250).map(MigrationWorkload.name)))
                let summary: Note? = try await store.read(id: "summary")
                #expect(summary?.text == "250 people")
                // The renamed field is stored under its new name.
                #expect(try await store.count(Query(PersonV2.self).filter("seen", .equals(1))) == 250)
                #expect(try await storeRow(store) == (StoreSchema.migratedVersion, true))

                // Again: nothing runs; writes go on for a process that knows the migrations.
                #expect(try await store.migrate(with: migrator).isEmpty)
                #expect(try await store.write(Record(id: "after", data: Note(text: "after"))))
            }
        }

        @Test("A failing step rolls back its batch; meanwhile every process's other writes are refused; the next run goes on")
        func aFailingStepRollsBackItsBatch() async throws {
            let name = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: name) { (store: PostgresStore) async throws in
              // Another process, whose writes by key go through the store's put procedure by the
              // time the migration starts (it holds the migration entry it last read: none).
              try await PostgresServer.withDatabase(store: name) { (other: PostgresStore) async throws in
                for index in 0..<3 { try await other.write(Record(id: "other-\(index)", data: Note(text: "before"))) }
                try await writePeople(store, count: 95)
                let counter = StepCounter()
                // Batches of 10 in key order ("person-0", "person-1", "person-10", …): the fifth fails.
                let ids = (0..<95).map(MigrationWorkload.id).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                await #expect(throws: LocalDatabaseError.migrationFailed(name: "visit", id: ids[42], reason: "the step threw refused")) {
                    try await store.migrate(with: visiting(batchSize: 10, counter: counter, failAt: ids[42]))
                }
                #expect(try await store.migrationStatus() == MigrationStatus(completed: [], underWay: "visit"))
                var people: [PersonV1] = try await store.read()
                #expect(people.filter { $0.visits == 1 }.count == 40)
                await #expect(throws: LocalDatabaseError.migrationInProgress(name: "visit")) {
                    try await store.write(Record(id: "during", data: Note(text: "during")))
                }
                // Another process (another engine, its own connections) is refused too.
                await #expect(throws: LocalDatabaseError.migrationInProgress(name: "visit")) {
                    try await other.write(Record(id: "other-during", data: Note(text: "during")))
                }
                await #expect(throws: LocalDatabaseError.migrationInProgress(name: "visit")) {
                    try await other.delete(id: ids[0])
                }
                #expect(try await other.count(PersonV1.self) == 95)
                #expect(try await other.count(Note.self) == 3)
                #expect(try await store.migrate(with: visiting(batchSize: 10, counter: counter)) == ["visit"])
                people = try await store.read()
                #expect(people.count == 95)
                #expect(people.allSatisfy { $0.visits == 1 })
                #expect(counter.count == 95 + 2)  // The failed batch's two records before the failure ran twice, rolled back.
              }
            }
        }

        @Test("A process that does not know a migration the store has had reads and writes nothing")
        func anAppThatDoesNotKnowAMigrationCannotWrite() async throws {
            let name = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: name) { (store: PostgresStore) async throws in
                try await writePeople(store, count: 5)
                var newer = MigrationWorkload.migrator(batchSize: 2)
                newer.registerMigration("newer", steps: [.renameClass("Note", to: "Memo")])
                #expect(try await store.migrate(with: newer) == ["split names", "newer"])
            }
            // An older app: its migrator lacks "newer".
            try await PostgresServer.withDatabase(store: name) { (older: PostgresStore) async throws in
                #expect(try await older.count(PersonV2.self) == 5)
                await #expect(throws: LocalDatabaseError.migratorNotRun(migration: "split names")) {
                    try await older.write(Record(id: "old", data: PersonV1(name: "Old One")))
                }
                await #expect(throws: LocalDatabaseError.unknownMigration(name: "newer")) {
                    try await older.migrate(with: MigrationWorkload.migrator(batchSize: 2))
                }
                await #expect(throws: LocalDatabaseError.unknownMigration(name: "newer")) {
                    try await older.write(Record(id: "old", data: PersonV1(name: "Old One")))
                }
                await #expect(throws: LocalDatabaseError.unknownMigration(name: "newer")) {
                    try await older.delete(PersonV2.self)
                }
                #expect(try await older.count(PersonV2.self) == 5)
            }
        }

        @Test("Two migrators at once take turns: the second waits, then finds the work done")
        func twoMigratorsTakeTurns() async throws {
            let name = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: name) { (first: PostgresStore) async throws in
                try await writePeople(first, count: 300)
                try await PostgresServer.withDatabase(store: name) { (second: PostgresStore) async throws in
                    let counter = StepCounter()
                    async let a = first.migrate(with: visiting(batchSize: 20, counter: counter))
                    async let b = second.migrate(with: visiting(batchSize: 20, counter: counter))
                    let (ranA, ranB) = try await (a, b)
                    #expect(ranA.count + ranB.count == 1)
                    #expect(counter.count == 300)
                    let people: [PersonV1] = try await second.read()
                    #expect(people.count == 300)
                    #expect(people.allSatisfy { $0.visits == 1 })
                }
            }
        }

        @Test("A migrator process killed at random moments: the next goes on from its last batch, each record transformed once")
        func aKilledMigratorGoesOnFromItsLastBatch() async throws {
            let helper = try replicationHelper()
            let address = try PostgresServer.address.get()
            let name = PostgresServer.uniqueStore()
            let total = 20_000
            try await PostgresServer.withDatabase(store: name) { (store: PostgresStore) async throws in
                try await writePeople(store, count: total)
            }
            var generator = SplitMix(seed: 39)
            var moved = 0
            var killedHalfway = 0
            for round in 1...4 {
                let batchSize = 500 + Int(generator.next() % 1_500)
                let process = try ChildProcess(
                    helper.path, ["migrate", name, String(batchSize)], environment: helperEnvironment(address), output: .pipe)
                // Until a round has moved records, each lets the child live longer (a slow start).
                let wait = 100 + Int(generator.next() % 900) + (moved == 0 ? round * 400 : 0)
                try await Task.sleep(for: .milliseconds(wait))
                process.send(SIGKILL)
                process.waitUntilExit()
                let lines = (process.output?.readText() ?? "").split(separator: "\n")
                let context = "round \(round) (batches of \(batchSize), killed after \(wait) ms), last lines \(lines.suffix(2))"
                try await PostgresServer.withDatabase(store: name) { (store: PostgresStore) async throws in
                    let now = try await checkPeople(store, total: total, context)
                    #expect(now >= moved, "\(context)")
                    moved = now
                }
                if lines.contains(where: { $0.hasPrefix("done ") }) { break }
                if lines.contains(where: { $0.hasPrefix("progress ") }) { killedHalfway += 1 }
            }
            // At least one kill came after a batch had committed and before the migration's end.
            #expect(killedHalfway > 0)
            // This process finishes it: the killed migrators' locks died with their sessions.
            try await PostgresServer.withDatabase(store: name) { (store: PostgresStore) async throws in
                try await store.migrate(with: MigrationWorkload.migrator(batchSize: 5_000))
                #expect(try await checkPeople(store, total: total, "finished") == total)
                #expect(try await store.migrationStatus() == MigrationStatus(completed: ["split names"], underWay: nil))
            }
        }

        @Test("A pull replica receives a migration's records as commits like any other, and cannot migrate itself")
        func aPullReplicaReceivesTheMigratedRecords() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-pg-migrate-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let replica = try LocalDatabase(directory: directory)
            try await closing(replica) { replica in
                try await PostgresServer.withDatabase { store in
                    try await writePeople(store, count: 120)
                    let replicator = PullReplicator(from: store, to: replica)
                    try await replicator.catchUp()
                    #expect(try await replica.count(PersonV1.self) == 120)
                    try await store.migrate(with: MigrationWorkload.migrator(batchSize: 50))
                    try await replicator.catchUp()
                    #expect(replicator.progress.fullCopies == 1)
                    #expect(try await replica.count(PersonV1.self) == 0)
                    let people: [PersonV2] = try await replica.read()
                    #expect(people.count == 120)
                    #expect(people.allSatisfy { $0.visits == 1 })
                    #expect(try await storedBytes(local: replica) == storedBytes(store: store))
                    await #expect(throws: LocalDatabaseError.self) {
                        try await replica.migrate(with: MigrationWorkload.migrator(batchSize: 50))
                    }
                }
            }
        }

        @Test("A push replicator never pushes half a migration: nothing while one is under way, then all of it in one transaction, with the migrations")
        func aPushReplicatorPushesAMigrationWhole() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-pg-migrate-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            try await closing(try LocalDatabase(directory: directory)) { local in
                try await PostgresServer.withDatabase { store in
                    _ = try await local.write(contentsOf: (0..<120).map { Record(id: MigrationWorkload.id($0), data: PersonV1(name: MigrationWorkload.name($0))) })
                    let replicator = PushReplicator(from: local, to: store, commitsPerTransaction: 2)
                    try await replicator.catchUp()
                    let before = replicator.progress.transactions

                    // Under way locally (its fifth batch of 10 fails): nothing is pushed.
                    let counter = StepCounter()
                    let ids = (0..<120).map(MigrationWorkload.id).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                    await #expect(throws: LocalDatabaseError.self) {
                        try await local.migrate(with: visiting(batchSize: 10, counter: counter, failAt: ids[42]))
                    }
                    await #expect(throws: LocalDatabaseError.migrationInProgress(name: "visit")) { try await replicator.catchUp() }
                    #expect(replicator.progress.transactions == before)
                    var pushed: [PersonV1] = try await store.read()
                    #expect(pushed.count == 120 && pushed.allSatisfy { $0.visits == 0 })
                    #expect(try await store.migrationStatus() == MigrationStatus(completed: [], underWay: nil))

                    // Completed: every commit of it (12 batches of records) in one transaction.
                    #expect(try await local.migrate(with: visiting(batchSize: 10, counter: counter)) == ["visit"])
                    #expect(try await replicator.catchUp() >= 12)
                    #expect(replicator.progress.transactions == before + 1)
                    pushed = try await store.read()
                    #expect(pushed.count == 120 && pushed.allSatisfy { $0.visits == 1 })
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                    #expect(try await store.migrationStatus() == MigrationStatus(completed: ["visit"], underWay: nil))
                    // An app on the store that does not know the migration writes nothing there.
                    _ = try await PostgresServer.withDatabase(store: store.name) { (older: PostgresStore) async throws in
                        await #expect(throws: LocalDatabaseError.migratorNotRun(migration: "visit")) {
                            try await older.write(Record(id: "old", data: PersonV1(name: "Old One")))
                        }
                    }

                    // Later commits follow the log again, two a transaction.
                    for index in 0..<5 { try await local.write(Record(id: "later\(index)", data: Note(text: "\(index)"))) }
                    #expect(try await replicator.catchUp() == 5)
                    #expect(replicator.progress.transactions == before + 1 + 3)
                    #expect(try await storedBytes(store: store) == storedBytes(local: local))
                }
            }
        }

        @Test("run() pushes a migration once it completes, whichever commit woke it last; one that changed no record is recorded too")
        func aRunningPushReplicatorPushesAMigrationOnceItCompletes() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-pg-migrate-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            try await closing(try LocalDatabase(directory: directory)) { local in
                try await PostgresServer.withDatabase(connections: 1) { store in
                    _ = try await local.write(contentsOf: (0..<30).map { Record(id: MigrationWorkload.id($0), data: PersonV1(name: MigrationWorkload.name($0))) })
                    let replicator = PushReplicator(from: local, to: store)
                    let running = Task { try await replicator.run() }
                    #expect(try await eventually { try await store.count(PersonV1.self) == 30 })
                    // Under way (fails at its second batch), then completed by a run whose last
                    // commit adds nothing to the change log.
                    let counter = StepCounter()
                    let ids = (0..<30).map(MigrationWorkload.id).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                    await #expect(throws: LocalDatabaseError.self) {
                        try await local.migrate(with: visiting(batchSize: 10, counter: counter, failAt: ids[15]))
                    }
                    #expect(try await local.migrate(with: visiting(batchSize: 10, counter: counter)) == ["visit"])
                    #expect(try await eventually { try await store.migrationStatus().completed == ["visit"] })
                    let people: [PersonV1] = try await store.read()
                    #expect(people.count == 30 && people.allSatisfy { $0.visits == 1 })
                    // A migration that changes no record: recorded on the store all the same.
                    var migrator = visiting(batchSize: 10, counter: counter)
                    migrator.registerMigration("nothing", steps: [.custom { _, _ in }])
                    #expect(try await local.migrate(with: migrator) == ["nothing"])
                    #expect(try await eventually { try await store.migrationStatus().completed == ["visit", "nothing"] })
                    running.cancel()
                    _ = await running.result
                    // A store with one connection migrates too (its migration lock has a connection of its own).
                    var own = DatabaseMigrator()
                    own.registerMigration("visit", batchSize: 10, steps: [])
                    own.registerMigration("nothing", steps: [])
                    own.registerMigration("on the server", steps: [.transform(PersonV1.self) { _ in .keep }])
                    #expect(try await store.migrate(with: own) == ["on the server"])
                }
            }
        }

        @Test("A store that has had a migration the local database has not refuses its pushes")
        func aStoreMigratedAheadRefusesPushes() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-pg-migrate-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            try await closing(try LocalDatabase(directory: directory)) { local in
                try await PostgresServer.withDatabase { store in
                    try await writePeople(store, count: 3)
                    try await store.migrate(with: MigrationWorkload.migrator(batchSize: 10))
                    try await local.write(Record(id: "n", data: Note(text: "n")))
                    await #expect(throws: LocalDatabaseError.unknownMigration(name: "split names")) {
                        try await PushReplicator(from: local, to: store).catchUp()
                    }
                    #expect(try await store.count(Note.self) == 0)
                }
            }
        }
    }
}
