import Foundation
import LocalLMDB
import LocalLMDBLMDB
import LocalLMDBTestSupport
import Synchronization
import Testing

/// A note whose documents the tests reshape: `text`, and `visits` counting the transforms.
final class MigNote: Storable {
    let text: String
    let visits: Int

    init(text: String, visits: Int = 0) {
        self.text = text
        self.visits = visits
    }

    required init(dataObject: DataObject) {
        text = dataObject.get("text")
        visits = dataObject.get("visits")
    }

    func toDataObject() -> DataObject {
        DataObject(self).add(key: "text", value: text).add(key: "visits", value: visits)
    }
}

/// A note a migration finds under its current class name and under a legacy one.
final class LegacyWalked: Storable {
    let text: String
    let visits: Int

    init(text: String, visits: Int = 0) {
        self.text = text
        self.visits = visits
    }

    required init(dataObject: DataObject) {
        text = dataObject.get("text")
        visits = dataObject.get("visits")
    }

    func toDataObject() -> DataObject {
        DataObject(self).add(key: "text", value: text).add(key: "visits", value: visits)
    }
}

/// The note after "rename text": its field is `body`.
final class MigMemo: Storable {
    let body: String

    init(body: String) { self.body = body }
    required init(dataObject: DataObject) { body = dataObject.get("body") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "body", value: body) }
}

/// Counts calls from `@Sendable` step functions.
final class Counter: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

private func noteID(_ number: Int) -> String { String(format: "note-%05d", number) }

/// A migrator whose one migration, `name`, adds one to each note's visits (and uppercases its
/// text), counting its calls in `counter`; with `failAt`, it throws at that note.
func visitingMigrator(_ name: String = "visit", batchSize: Int, counter: Counter, failAt: String? = nil) -> DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration(name, batchSize: batchSize, steps: [
        .transform(MigNote.self) { record in
            if record.id == failAt { throw StepFailure() }
            counter.add()
            let text: String = record.document.get("text")
            let visits: Int = record.document.get("visits")
            return .replace(with: MigNote(text: text.uppercased(), visits: visits + 1))
        },
    ])
    return migrator
}

private struct StepFailure: Error, CustomStringConvertible {
    var description: String { "the step refused this note" }
}

func writeNotes(_ database: LocalDatabase, count: Int) async throws {
    _ = try await database.write(contentsOf: (0..<count).map { Record(id: noteID($0), data: MigNote(text: "note \($0)")) })
}

/// Whether `error` is the `LocalDatabaseError` `matches` accepts.
private func isError(_ error: any Error, _ matches: (LocalDatabaseError) -> Bool) -> Bool {
    (error as? LocalDatabaseError).map(matches) ?? false
}

@Suite("Migrations")
struct MigrationTests {
    /// A custom step reads the database as the earlier steps left it and commits its writes
    /// with its completion: when it throws, nothing of it is stored and the next run runs it
    /// again; once completed, it never runs again. Writes other than its own are refused.
    @Test func aCustomStepCommitsItsWritesOnceWithItsCompletion() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: (0..<10).map { Record(id: noteID($0), data: MigNote(text: "n\($0)", visits: $0)) })
            let calls = Counter()
            let failFirst = Mutex(true)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("summarize", batchSize: 3, steps: [
                .renameField("text", to: "body", in: "MigNote"),
                .custom { database, writes in
                    calls.add()
                    // The earlier step's records, as it committed them.
                    let renamed = try await database.count(Query(MigNote.self).filter("body", .atLeast("")))
                    #expect(renamed == 10)
                    try writes.write(Record(id: "summary", data: MigMemo(body: "\(renamed) notes")))
                    try writes.write(contentsOf: [Record(id: "extra", data: MigMemo(body: "extra"))])
                    try writes.delete(id: noteID(3))
                    try writes.delete(id: "extra")
                    try writes.write(MigMemo(body: "from a document").toDataObject(), id: "document")
                    // Only the migration writes while it is under way.
                    await #expect(throws: LocalDatabaseError.migrationInProgress(name: "summarize")) {
                        _ = try await database.write(Record(id: "direct", data: MigMemo(body: "direct")))
                    }
                    if failFirst.withLock({ flag in defer { flag = false }; return flag }) { throw StepFailure() }
                },
            ])
            await #expect(throws: LocalDatabaseError.migrationFailed(name: "summarize", id: "", reason: "the step threw the step refused this note")) {
                try await database.migrate(with: migrator)
            }
            #expect(try await database.migrationStatus() == MigrationStatus(completed: [], underWay: "summarize"))
            let before: MigMemo? = try await database.read(id: "summary")
            #expect(before == nil)
            #expect(try await database.count(Query(MigNote.self)) == 10)

            #expect(try await database.migrate(with: migrator) == ["summarize"])
            #expect(calls.count == 2)
            let summary: MigMemo? = try await database.read(id: "summary")
            #expect(summary?.body == "10 notes")
            let fromDocument: MigMemo? = try await database.read(id: "document")
            #expect(fromDocument?.body == "from a document")
            let extra: MigMemo? = try await database.read(id: "extra")
            #expect(extra == nil)
            #expect(try await database.count(Query(MigNote.self)) == 9)
            #expect(try await database.migrate(with: migrator).isEmpty)
            #expect(calls.count == 2)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    /// Index steps: one drops a stored index (the next preparation builds it again), one builds
    /// the indexes a type declares during the migration (none is left to build after it).
    @Test func indexStepsDropAndBuildIndexes() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: (0..<500).map { Record(id: "t\($0)", data: Ticket(queue: "q\($0 % 5)", priority: $0, title: "")) })
            let index = Index.on("queue", "priority", counted: true)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("drop", steps: [.dropIndex(index, of: Ticket.self)])
            #expect(try await database.migrate(with: migrator) == ["drop"])
            let rebuilt = Locked<[IndexBuildProgress]>([])
            try await database.prepareIndexes(of: Ticket.self) { progress in rebuilt.withLock { $0.append(progress) } }
            #expect(rebuilt.withLock { $0 }.last?.recordsIndexed == 500, "the step dropped the index")

            migrator.registerMigration("drop and build", steps: [.dropIndex(index, of: Ticket.self), .prepareIndexes(of: Ticket.self)])
            #expect(try await database.migrate(with: migrator) == ["drop and build"])
            let after = Locked<[IndexBuildProgress]>([])
            try await database.prepareIndexes(of: Ticket.self) { progress in after.withLock { $0.append(progress) } }
            #expect(after.withLock { $0 }.isEmpty, "the step built the index")
            #expect(try await database.count(Query(Ticket.self).filter("queue", .equals("q2"))) == 100)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    /// A step reads the stored document as the old shape's model, Codable or hand-written; a
    /// document the model cannot read fails the step, naming the record, and stores nothing.
    @Test func aStepDecodesTheOldModel() async throws {
        struct OldCodable: Codable, Persistable { var text: String; var count: Int }
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: (0..<5).map { Record(id: noteID($0), data: MigNote(text: "n\($0)", visits: $0)) })
            _ = try await database.write(contentsOf: (0..<5).map { Record(id: "c\($0)", data: OldCodable(text: "c\($0)", count: $0)) })
            var migrator = DatabaseMigrator()
            migrator.registerMigration("decode", batchSize: 2, steps: [
                .transform(MigNote.self) { record in
                    let old = try record.decode(MigNote.self)
                    return .replace(with: MigMemo(body: "\(old.text)/\(old.visits)"))
                },
                .transform(OldCodable.self) { record in
                    let old = try record.decode(OldCodable.self)
                    return .replace(with: MigMemo(body: "\(old.text)+\(old.count)"))
                },
            ])
            #expect(try await database.migrate(with: migrator) == ["decode"])
            let memos: [MigMemo] = try await database.read()
            #expect(Set(memos.map(\.body)) == Set((0..<5).map { "n\($0)/\($0)" } + (0..<5).map { "c\($0)+\($0)" }))

            // A record the model cannot read (a memo has no `text` nor `count`): the step fails on it.
            _ = try await database.write(Record(id: "bad", data: MigMemo(body: "x")))
            var failing = migrator
            failing.registerMigration("decode again", steps: [
                .transform(MigMemo.self) { record in .replace(with: MigMemo(body: try record.decode(OldCodable.self).text)) },
            ])
            let error = await #expect(throws: LocalDatabaseError.self) { try await database.migrate(with: failing) }
            #expect(error.map { if case .migrationFailed("decode again", "bad", _) = $0 { true } else { false } } == true, "\(String(describing: error))")
            let kept: MigMemo? = try await database.read(id: "bad")
            #expect(kept?.body == "x")
        }
    }

    @Test func aMigrationRunsOnceAndIsRecorded() async throws {
        try await withDatabase { database, _ in
            try await writeNotes(database, count: 250)
            let counter = Counter()
            var reports: [MigrationProgress] = []
            let completed = try await database.migrate(with: visitingMigrator(batchSize: 100, counter: counter)) { reports.append($0) }
            #expect(completed == ["visit"])
            #expect(counter.count == 250)
            // Batches of 100: 100, 200, then 250 (the last batch, short, completes the migration).
            #expect(reports.map(\.recordsVisited) == [100, 200, 250])
            #expect(reports.last?.recordsWritten == 250)
            #expect(try await database.migrationStatus() == MigrationStatus(completed: ["visit"], underWay: nil))
            let notes: [MigNote] = try await database.read()
            #expect(notes.count == 250)
            #expect(notes.allSatisfy { $0.visits == 1 && $0.text == $0.text.uppercased() })

            // Again: nothing runs.
            #expect(try await database.migrate(with: visitingMigrator(batchSize: 100, counter: counter)).isEmpty)
            #expect(counter.count == 250)
            // Writes go on, for a process that knows the migration.
            #expect(try await database.write(Record(id: "after", data: MigNote(text: "after"))))
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func aFailingStepRollsBackItsBatchAndTheNextRunGoesOnFromIt() async throws {
        try await withDatabase { database, _ in
            try await writeNotes(database, count: 95)
            let counter = Counter()
            // Batches of 10: the note 42 is in the fifth (40–49), so the first four commit.
            let failing = visitingMigrator(batchSize: 10, counter: counter, failAt: noteID(42))
            await #expect(throws: LocalDatabaseError.migrationFailed(name: "visit", id: noteID(42), reason: "the step threw the step refused this note")) {
                try await database.migrate(with: failing)
            }
            #expect(try await database.migrationStatus() == MigrationStatus(completed: [], underWay: "visit"))
            var notes: [MigNote] = try await database.read()
            #expect(notes.filter { $0.visits == 1 }.count == 40)
            #expect(notes.filter { $0.visits == 0 }.count == 55)

            // While it is under way, no other write changes records.
            await #expect(throws: LocalDatabaseError.migrationInProgress(name: "visit")) {
                try await database.write(Record(id: "during", data: MigNote(text: "during")))
            }
            await #expect(throws: LocalDatabaseError.migrationInProgress(name: "visit")) {
                try await database.delete(id: noteID(1))
            }

            // Fixed, it goes on from the fifth batch: every note transformed exactly once.
            let fixed = visitingMigrator(batchSize: 10, counter: counter)
            #expect(try await database.migrate(with: fixed) == ["visit"])
            notes = try await database.read()
            #expect(notes.count == 95)
            #expect(notes.allSatisfy { $0.visits == 1 }, "\(notes.filter { $0.visits != 1 }.map(\.text))")
            #expect(counter.count == 95 + 2)  // The failed batch's two notes before 42 ran twice, their writes rolled back.
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func aDatabaseWithAMigrationThisProcessDoesNotKnowIsReadNotWritten() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let database = try LocalDatabase(directory: directory)
                try await writeNotes(database, count: 5)
                var newer = visitingMigrator(batchSize: 2, counter: Counter())
                newer.registerMigration("newer", steps: [.renameField("text", to: "body", in: "MigNote")])
                #expect(try await database.migrate(with: newer) == ["visit", "newer"])
                await database.close()
            }
            // An older app: its migrator lacks "newer". It reads, and writes nothing.
            let database = try LocalDatabase(directory: directory)
            #expect(try await database.count(MigNote.self) == 5)
            // Before any migrator ran, this process knows no migration at all.
            await #expect(throws: LocalDatabaseError.migratorNotRun(migration: "visit")) {
                try await database.write(Record(id: "old", data: MigNote(text: "old")))
            }
            await #expect(throws: LocalDatabaseError.unknownMigration(name: "newer")) {
                try await database.migrate(with: visitingMigrator(batchSize: 2, counter: Counter()))
            }
            await #expect(throws: LocalDatabaseError.unknownMigration(name: "newer")) {
                try await database.write(Record(id: "old", data: MigNote(text: "old")))
            }
            await #expect(throws: LocalDatabaseError.unknownMigration(name: "newer")) {
                try await database.delete(MigNote.self)
            }
            #expect(try await database.count(MigNote.self) == 5)
            await database.close()
            // The database refuses versions of LocalLMDB that know nothing of migrations.
            #expect(rawGet(directory, "meta", Array("format".utf8)) == [6])
        }
    }

    /// The synchronous face has no migrator: it writes into a migrated database once a
    /// `LocalDatabase` on the same directory (the same environment) has run the migrator, and
    /// never before.
    @Test func theSynchronousFaceWritesOnceALocalDatabaseOnItsDirectoryHasMigrated() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let database = try LocalDatabase(directory: directory)
                try await writeNotes(database, count: 3)
                try await database.migrate(with: visitingMigrator(batchSize: 2, counter: Counter()))
                await database.close()
            }
            do {
                let alone = try SerializationDatabase(directory: directory)
                #expect(!alone.write(Record(id: "alone", data: MigNote(text: "alone"))))
                #expect(alone.lastError == .migratorNotRun(migration: "visit"))
                let database = try LocalDatabase(directory: directory)
                try await database.migrate(with: visitingMigrator(batchSize: 2, counter: Counter()))
                #expect(alone.write(Record(id: "after", data: MigNote(text: "after"))))
                #expect(try await database.count(MigNote.self) == 4)
                await database.close()
                alone.close()
            }
        }
    }

    @Test func renamesDeletesAndSplitsAreRewrittenForGood() async throws {
        try await withDatabase { database, _ in
            try await writeNotes(database, count: 30)
            _ = try await database.write(contentsOf: (0..<7).map { Record(id: "student-\($0)", data: makeStudent("S\($0)")) })
            let token = try database.changeToken()
            var migrator = DatabaseMigrator()
            migrator.registerMigration("notes become memos", batchSize: 8, steps: [
                .renameField("text", to: "body", in: "MigNote"),
                .renameClass("MigNote", to: "MigMemo"),
            ])
            migrator.registerMigration("students go", batchSize: 3, steps: [.deleteClass("Student")])
            migrator.registerMigration("memos split", batchSize: 4, steps: [
                .transform(MigMemo.self) { record in
                    let body: String = record.document.get("body")
                    // Into another class under new ids, the memo itself kept (its own id).
                    return .records([
                        MigratedRecord(id: record.id, model: MigMemo(body: body)),
                        MigratedRecord(id: record.id + "-copy", model: PersonV1(name: body)),
                    ])
                },
            ])
            #expect(try await database.migrate(with: migrator).count == 3)
            let memos: [MigMemo] = try await database.read()
            #expect(Set(memos.map(\.body)) == Set((0..<30).map { "note \($0)" }))
            #expect(try await database.count(MigNote.self) == 0)
            #expect(try await database.count(Student.self) == 0)
            #expect(try await database.count(PersonV1.self) == 30)
            let raw = try #require(try await database.storedDocument(id: noteID(3)))
            #expect(!raw.json.contains("\"text\""))
            #expect(raw.className == "MigMemo")
            // The change feed saw the migration's commits as changes like any other.
            let feed = try database.changes(since: token)
            let changes = feed.commits.flatMap(\.changes)
            #expect(changes.contains(.written(id: noteID(3), className: "MigMemo")))
            #expect(changes.contains(.deleted(id: "student-2", className: "Student")))
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func aStepMayNotWriteNewRecordsOfTheClassItWalks() async throws {
        try await withDatabase { database, _ in
            try await writeNotes(database, count: 3)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("doubles", steps: [
                .transform(MigNote.self) { record in .records([MigratedRecord(id: record.id + "b", model: MigNote(text: "b"))]) },
            ])
            let error = await #expect(throws: LocalDatabaseError.self) { try await database.migrate(with: migrator) }
            #expect(error.map { isError($0) { if case .migrationFailed(_, noteID(0), let reason) = $0 { reason.contains("own id") } else { false } } } == true,
                    "\(String(describing: error))")
            #expect(try await database.count(MigNote.self) == 3)
        }
        try await withDatabase { database, _ in
            try await writeNotes(database, count: 3)
            // Nor a record of another class under the id of a record of the class it walks (that
            // record would leave the walk): here the next note's.
            var overwriting = DatabaseMigrator()
            overwriting.registerMigration("overwrites", steps: [
                .transform(MigNote.self) { record in
                    .records([MigratedRecord(id: record.id, model: MigNote(text: "kept")),
                              MigratedRecord(id: record.id == noteID(0) ? noteID(1) : record.id + "-other", model: MigMemo(body: "m"))])
                },
            ])
            let replaced = await #expect(throws: LocalDatabaseError.self) { try await database.migrate(with: overwriting) }
            #expect(replaced.map { isError($0) { if case .migrationFailed(_, noteID(0), let reason) = $0 { reason.contains("would replace") } else { false } } } == true,
                    "\(String(describing: replaced))")
            #expect(try await database.count(MigNote.self) == 3)
            #expect(try await database.count(MigMemo.self) == 0)
        }
    }

    /// A process whose migrator knows a migration the database has not had writes nothing until
    /// it has run (its records would be of the new shape, which the migration would transform).
    @Test func aProcessWithAPendingMigrationWritesNothingUntilItHasRun() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory, busyTimeout: .milliseconds(300))
            try await writeNotes(database, count: 4)
            do {
                // Another migrator holds the lock past the busy timeout.
                let held = try #require(try MigrationLock.tryAcquire(directory: directory.path))
                await #expect(throws: LocalDatabaseError.busy(timeout: .milliseconds(300))) {
                    try await database.migrate(with: visitingMigrator(batchSize: 2, counter: Counter()))
                }
                await #expect(throws: LocalDatabaseError.migrationPending(name: "visit")) {
                    try await database.write(Record(id: "new", data: MigNote(text: "new")))
                }
                withExtendedLifetime(held) {}
            }
            #expect(try await database.migrate(with: visitingMigrator(batchSize: 2, counter: Counter())) == ["visit"])
            #expect(try await database.write(Record(id: "new", data: MigNote(text: "new"))))
            await database.close()
        }
    }

    /// `transform(T.self)` walks the type's current class name, then its legacy names: every
    /// record stored as the type is transformed once.
    @Test func aTypesTransformWalksItsLegacyNamesToo() async throws {
        try await withDatabase { database, _ in
            Legacy.addClassRefactor(old: "LegacyWalkedBefore", new: "LegacyWalked")
            // Three records under the current name, three under the old one (as an earlier version
            // of the app stored them), written as documents.
            var store = DatabaseMigrator()
            store.registerMigration("store", steps: [])
            _ = try await database.migrate(with: store)
            _ = try await database.write(contentsOf: (0..<6).map { Record(id: "w\($0)", data: LegacyWalked(text: "w\($0)")) })
            var rename = store
            rename.registerMigration("half to the old name", batchSize: 2, steps: [
                .transform("LegacyWalked") { record in
                    guard record.id < "w3" else { return .keep }
                    return .replace(with: DataObject(rawString: #"{"object":"LegacyWalkedBefore","text":"\#(record.id)","visits":0}"#))
                },
            ])
            _ = try await database.migrate(with: rename)
            #expect(try await database.statistics().types.map(\.className).sorted() == ["LegacyWalked", "LegacyWalkedBefore"])
            let counter = Counter()
            var visit = rename
            visit.registerMigration("visit", batchSize: 2, steps: [
                .transform(LegacyWalked.self) { record in
                    counter.add()
                    let text: String = record.document.get("text")
                    let visits: Int = record.document.get("visits")
                    return .replace(with: LegacyWalked(text: text, visits: visits + 1))
                },
            ])
            #expect(try await database.migrate(with: visit) == ["visit"])
            #expect(counter.count == 6)
            let notes: [LegacyWalked] = try await database.read()
            #expect(notes.count == 6)
            #expect(notes.allSatisfy { $0.visits == 1 })
            #expect(try await database.statistics().types.map(\.className) == ["LegacyWalked"])
        }
    }
}
