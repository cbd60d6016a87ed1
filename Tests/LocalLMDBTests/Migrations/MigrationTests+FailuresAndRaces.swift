import Foundation
import LocalLMDB
import LocalLMDBLMDB
import LocalLMDBTestSupport
import Synchronization
import Testing

// Migrations that meet damage, invalid migrators, and other migrators and processes at once.
extension MigrationTests {
    /// A damaged `migrations` entry (a migration both completed and under way) is a typed error
    /// at the next migrator, never a trap, and nothing is migrated.
    @Test func aDamagedMigrationEntryIsATypedError() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let database = try LocalDatabase(directory: directory)
                try await writeNotes(database, count: 3)
                await database.close()
            }
            // Version 1; "visit" completed; then "visit" under way, at step 0, from the start.
            let name = Array("visit".utf8)
            rawPut(directory, "meta", [(Array("migrations".utf8), [1, 1, UInt8(name.count)] + name + [1, UInt8(name.count)] + name + [0, 0])])
            let database = try LocalDatabase(directory: directory)
            var migrator = visitingMigrator(batchSize: 2, counter: Counter())
            migrator.registerMigration("second", steps: [.deleteClass("MigNote")])
            await #expect(throws: LocalDatabaseError.invalidMigration(reason: "the database records the migration 'visit' under way while 'second' is to run")) {
                try await database.migrate(with: migrator)
            }
            #expect(try await database.count(MigNote.self) == 3)
            await database.close()
        }
    }

    @Test func invalidMigratorsRunNothing() async throws {
        try await withDatabase { database, _ in
            try await writeNotes(database, count: 3)
            var twice = DatabaseMigrator()
            twice.registerMigration("a", steps: [.deleteClass("MigNote")])
            twice.registerMigration("a", steps: [])
            await #expect(throws: LocalDatabaseError.invalidMigration(reason: "the migration 'a' is registered twice")) {
                try await database.migrate(with: twice)
            }
            var empty = DatabaseMigrator()
            empty.registerMigration("", steps: [])
            await #expect(throws: LocalDatabaseError.invalidMigration(reason: "a migration's name must not be empty")) {
                try await database.migrate(with: empty)
            }
            #expect(try await database.count(MigNote.self) == 3)
            #expect(try await database.migrationStatus() == MigrationStatus(completed: [], underWay: nil))
            // Nor inside a transaction.
            try await database.startTransaction()
            await #expect(throws: LocalDatabaseError.transactionAlreadyActive) {
                try await database.migrate(with: visitingMigrator(batchSize: 2, counter: Counter()))
            }
            try await database.rollbackTransaction()
        }
    }

    @Test func twoMigratorsAtOnceTransformEachRecordOnce() async throws {
        try await withTemporaryDirectory { directory in
            let first = try LocalDatabase(directory: directory)
            // Four batches: the second migrator waits for them, at most its busy timeout (made
            // long: durable commits take seconds each on a disk the suite's heavier tests load).
            try await writeNotes(first, count: 70)
            let second = try LocalDatabase(directory: directory, busyTimeout: .seconds(600))
            let counter = Counter()
            async let a = first.migrate(with: visitingMigrator(batchSize: 20, counter: counter))
            async let b = second.migrate(with: visitingMigrator(batchSize: 20, counter: counter))
            let (ranA, ranB) = try await (a, b)
            #expect(ranA.count + ranB.count == 1)
            #expect(counter.count == 70)
            #expect(try await first.count(MigNote.self) == 70)
            let notes: [MigNote] = try await first.read()
            #expect(notes.allSatisfy { $0.visits == 1 })
            await first.close()
            await second.close()
        }
    }

    /// A helper process migrating 200,000 records in batches, killed with SIGKILL at a random
    /// moment, round after round, then a migrator in this process finishing: every record is
    /// transformed exactly once (its visits are 1), none is lost, the index is exact and the
    /// database consistent after each kill.
    @Test func aBatchedMigrationKilledAtRandomMomentsTransformsEachRecordOnce() async throws {
        try await withTemporaryDirectory { root in
            let directory = root.appendingPathComponent("db")
            let total = 200_000
            do {
                let database = try LocalDatabase(directory: directory)
                _ = try await database.write(contentsOf: (0..<total).map {
                    Record(id: MigrationWorkload.id($0), data: PersonV1(name: MigrationWorkload.name($0)))
                })
                await database.close()
            }
            var migrated = 0
            for round in 1...3 {
                let batchSize = Int.random(in: 2_000...8_000)
                let freshLines = Int.random(in: 1...6)
                let (process, output) = try launchHelper(["migrate-batches", directory.path, String(batchSize)])
                let run: WatchedRun
                do {
                    run = try await withTimeout(seconds: 300) {
                        await onThread(stackSize: 1 << 20) { killAfterLines(process, output, count: freshLines) { progressWritten($0) != nil } }
                    }
                } catch {
                    process.send(SIGKILL)
                    throw error
                }
                let context = "round \(round) (batches of \(batchSize), killed at progress line \(freshLines)), last lines \(run.lines.suffix(3))"
                if !run.lines.contains(where: { $0.hasPrefix("done ") }) {
                    #expect(run.termination == .signal(SIGKILL), "\(context)")
                }

                // Every record there once, none transformed twice: the first step counts a visit
                // in place, the second moves the record to `PersonV2` keeping the count.
                let database = try LocalDatabase(directory: directory)
                let old: [PersonV1] = try await database.read()
                let new: [PersonV2] = try await database.read()
                #expect(old.count + new.count == total, "\(context)")
                #expect(old.allSatisfy { $0.visits <= 1 }, "\(context): \(old.filter { $0.visits > 1 }.count) visited twice")
                #expect(new.allSatisfy { $0.visits == 1 }, "\(context)")
                // Progress is never lost: what a round moved stays moved.
                #expect(new.count >= migrated, "\(context)")
                migrated = new.count
                // The index is exact: a query by `last` finds what a filter finds.
                let family5 = try await database.count(Query(PersonV2.self).filter("last", .equals("Family5")))
                #expect(family5 == new.filter { $0.last == "Family5" }.count, "\(context)")
                #expect(try await database.verifyIntegrity().isConsistent, "\(context)")
                await database.close()
                if migrated == total { break }
            }
            // This process finishes it.
            let database = try LocalDatabase(directory: directory)
            try await database.migrate(with: MigrationWorkload.migrator(batchSize: 5_000))
            let people: [PersonV2] = try await database.read()
            #expect(people.count == total)
            #expect(people.allSatisfy { $0.visits == 1 })
            #expect(Set(people.map { $0.first + " " + $0.last }) == Set((0..<total).map(MigrationWorkload.name)))
            #expect(try await database.count(PersonV1.self) == 0)
            #expect(try await database.migrationStatus() == MigrationStatus(completed: ["split names"], underWay: nil))
            #expect(try await database.verifyIntegrity().isConsistent)
            await database.close()
        }
    }

    /// Two processes open one database with a pending migration at once: one runs it, the other
    /// waits for it, and both see the migrated records.
    @Test func twoProcessesOpeningAtOnceRunTheMigrationOnce() async throws {
        try await withTemporaryDirectory { root in
            let directory = root.appendingPathComponent("db")
            let total = 5_000
            do {
                let database = try LocalDatabase(directory: directory)
                _ = try await database.write(contentsOf: (0..<total).map {
                    Record(id: MigrationWorkload.id($0), data: PersonV1(name: MigrationWorkload.name($0)))
                })
                await database.close()
            }
            let children = try (0..<2).map { _ in try launchHelper(["migrate-batches", directory.path, "500"]) }
            var done: [Int] = []
            for (process, output) in children {
                let lines = try await withTimeout(seconds: 300) {
                    await onThread { () -> [String] in
                        var lines: [String] = []
                        var pending: [UInt8] = []
                        while true {
                            let chunk = output.readSome()
                            if chunk.isEmpty { break }
                            pending += chunk
                        }
                        for line in String(decoding: pending, as: UTF8.self).split(separator: "\n") { lines.append(String(line)) }
                        _ = process.waitUntilExit()
                        return lines
                    }
                }
                let last = try #require(lines.last { $0.hasPrefix("done ") }, "\(lines.suffix(3))")
                done.append(Int(last.dropFirst(5)) ?? -1)
            }
            // One ran the migration; the other found it done.
            #expect(done.sorted() == [0, 1])
            let database = try LocalDatabase(directory: directory)
            let people: [PersonV2] = try await database.read()
            #expect(people.count == total)
            #expect(people.allSatisfy { $0.visits == 1 })
            await database.close()
        }
    }
}

/// The records written that a `migrate-batches` progress line reports.
fileprivate func progressWritten(_ line: String) -> Int? {
    let parts = line.split(separator: " ")
    guard parts.count == 3, parts[0] == "progress" else { return nil }
    return Int(parts[2])
}
