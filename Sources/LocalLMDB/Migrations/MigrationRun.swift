import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// One run of a migrator over one database (`LocalDatabase.migrate(with:)`).
///
/// The rules it keeps, with the store's (`MigrationState`):
/// - One migrator at a time: it holds the engine's `MigrationLease` (LMDB's `MigrationLock`, a
///   server's advisory lock) from before it reads the recorded state until it returns. Another
///   waits for the lease, at most the busy timeout.
/// - Each batch is one `.migrate` write: the step's writes for up to `batchSize` records, and
///   the new state (the step and the position after the batch's last record; the migration
///   completed, with its last batch). The write expects the state this run last saw, so a batch
///   is never applied twice, nor over another process's.
/// - A step walks its class's records in the order of their keys, after the recorded position:
///   a record the step rewrites under its own id stays behind the position, and the step may not
///   write other records of the class it walks, so each record is transformed exactly once.
/// - Batches read records on the calling task and run the steps' functions there (never on the
///   writer thread); only the encoded writes cross to it.
struct MigrationRun {
    let database: LocalDatabase
    let migrator: DatabaseMigrator
    let progress: ((MigrationProgress) -> Void)?
    var engine: FaceEngine { database.engine }

    /// Runs the migrations the database has not had; returns their names.
    nonisolated(nonsending) func run() async throws -> [String] {
        if let problem = migrator.problem { throw DatabaseError.invalidMigration(reason: problem) }
        guard !engine.configuration.readOnly else { throw DatabaseError.readOnly }
        guard !engine.transactionActive else { throw DatabaseError.transactionAlreadyActive }
        // Known from now on, even while this run waits for another migrator: the process writes
        // only once the database has had exactly these.
        let names = Set(migrator.migrationNames)
        engine.writer.knowMigrations(names)
        let lease = try await Self.lease(engine, timeout: engine.busyTimeout)
        do {
            // A batch a killed migrator committed but did not publish is seen before the state is read.
            try await engine.publishCommits()
            var state = try await engine.writer.migrationState()
            if let unknown = state.names.first(where: { !names.contains($0) }) { throw DatabaseError.unknownMigration(name: unknown) }
            var pending = migrator.migrations.filter { !state.completed.contains($0.name) }
            // The migration under way goes on first, wherever it is registered.
            if let running = state.running, let at = pending.firstIndex(where: { $0.name == running.name }) {
                pending.insert(pending.remove(at: at), at: 0)
            }
            var completed: [String] = []
            for migration in pending {
                try await run(migration, state: &state)
                completed.append(migration.name)
            }
            await lease.release()
            return completed
        } catch {
            await lease.release()
            throw error
        }
    }

    /// The engine's migration lease, waited for at most `timeout` (polling: the wait holds no thread).
    private static nonisolated(nonsending) func lease(_ engine: FaceEngine, timeout: Duration) async throws -> any MigrationLease {
        let deadline = ContinuousClock.now + timeout
        var pause = Duration.milliseconds(1)
        while true {
            if let lease = try await engine.writer.tryLockMigrations() { return lease }
            guard ContinuousClock.now < deadline else { throw DatabaseError.busy(timeout: timeout) }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    /// Runs `migration` from where `state` says it is, batch by batch, advancing `state`.
    private nonisolated(nonsending) func run(_ migration: DatabaseMigrator.Migration, state: inout MigrationState) async throws {
        let units = migration.units
        if state.running == nil {
            // Under way before its first record is read: from this commit on, only its batches
            // change records, so no record can be written behind its position.
            var next = state
            next.running = MigrationState.Running(name: migration.name, step: 0, position: [])
            _ = try await engine.perform(.migrate([], expected: state, state: next))
            state = next
        }
        // Another migration under way here means a damaged entry (one both completed and under
        // way: `run()` puts the one under way first): a typed error, never a trap.
        guard let running = state.running, running.name == migration.name else {
            throw DatabaseError.invalidMigration(
                reason: "the database records the migration '\(state.running?.name ?? "")' under way while '\(migration.name)' is to run")
        }
        guard running.step <= units.count else {
            throw DatabaseError.invalidMigration(
                reason: "the database records the migration '\(migration.name)' at its step \(running.step + 1), and the migrator registers \(units.count) steps (class walks and actions) for it")
        }
        var (step, position) = (running.step, running.position)
        while true {
            guard step < units.count else {
                // Every step done (or none): the migration is recorded completed.
                var next = state
                next.completed.append(migration.name)
                next.running = nil
                _ = try await engine.perform(.migrate([], expected: state, state: next))
                state = next
                // This commit adds nothing to the change log, so it wakes no observer: this
                // process's (a push replicator waiting for the migration to complete) are woken here.
                engine.notifier.wakeAll()
                return
            }
            let walk: MigrationStep.Walk
            switch units[step] {
            case let .walk(unit):
                walk = unit
            case let .action(action):
                // Done once: its writes are committed with the step's completion.
                try Task.checkCancellation()
                let operations: [WriteOperation]
                do {
                    operations = try await action.run(database)
                } catch let error as CancellationError {
                    throw error
                } catch {
                    throw DatabaseError.migrationFailed(name: migration.name, id: "", reason: "the step threw \(error)")
                }
                var next = state
                next.running = MigrationState.Running(name: migration.name, step: step + 1, position: [])
                let written: Int
                do {
                    written = try await engine.perform(.migrate(operations, expected: state, state: next))
                } catch {
                    if case .migrationConflict = error { throw error }
                    throw DatabaseError.migrationFailed(name: migration.name, id: "", reason: "its writes cannot be stored: \(error)")
                }
                state = next
                progress?(MigrationProgress(
                    migration: migration.name, step: step, stepCount: units.count, recordsVisited: 0, recordsWritten: written))
                step += 1
                position = []
                continue
            }
            var visited = 0
            var written = 0
            while true {
                try Task.checkCancellation()
                let classKey = StorageKey(walk.className, maxKeySize: engine.maxKeySize)
                let records = try await engine.read(ReadMigrationPage(classKey: classKey, after: position.isEmpty ? nil : position, limit: migration.batchSize))
                let batch = try encode(records, of: migration.name, walk)
                // A record stored under another record's id must not replace one of the class
                // walked (it would leave the walk untransformed, or transformed twice).
                if !batch.foreignKeys.isEmpty {
                    let classes = try await engine.read(ReadClassNames(keys: batch.foreignKeys.map(\.key)))
                    for (index, stored) in classes.enumerated() where stored.map({ Array($0.utf8) == Array(walk.className.utf8) }) ?? false {
                        throw DatabaseError.migrationFailed(
                            name: migration.name, id: batch.foreignKeys[index].source,
                            reason: "a record it stores would replace the record under '\(batch.foreignKeys[index].key.id)', of the class '\(walk.className)' the step walks")
                    }
                }
                // The indexes the written models declare, as a write of them would make them.
                for type in batch.types { try await Self.ensureIndexes(type, engine) }
                var next = state
                let last = records.count < migration.batchSize ? nil : records.last?.key
                if let last {
                    next.running = MigrationState.Running(name: migration.name, step: step, position: last)
                } else {
                    next.running = MigrationState.Running(name: migration.name, step: step + 1, position: [])
                }
                written += try await engine.perform(.migrate(batch.operations, expected: state, state: next))
                state = next
                visited += records.count
                progress?(MigrationProgress(
                    migration: migration.name, step: step, stepCount: units.count, recordsVisited: visited, recordsWritten: written))
                guard let last else { break }
                position = last
            }
            step += 1
            position = []
        }
    }

    /// What `encode` makes of a page: the writes, the types of the models stored, and the keys
    /// written that are not the key of the record whose transform wrote them.
    struct EncodedBatch {
        var operations: [WriteOperation] = []
        var types: [any Persistable.Type] = []
        var foreignKeys: [(key: StorageKey, source: String)] = []
    }

    /// The writes of `walk` for `records` (deletes first, then one put of every record stored).
    private func encode(_ records: [MigrationPage.Record], of migration: String, _ walk: MigrationStep.Walk) throws -> EncodedBatch {
        let (maxKeySize, encryption) = (engine.maxKeySize, engine.encryption)
        let walked = Array(walk.className.utf8)
        var types: [ObjectIdentifier: any Persistable.Type] = [:]
        var deletes: [WriteOperation] = []
        var batch = RecordBatch()
        var classes = ClassList()
        var header: [UInt8] = []
        var written: Set<ExactID> = []
        // The record each entry of `batch` was stored for (a model's references add entries).
        var sources: [(id: String, key: [UInt8])] = []
        for record in records {
            let id = record.id
            let migrating = MigratingRecord(id: id, className: record.stored.stored.className, document: DataObject(encoded: record.stored.stored.object))
            let result: MigrationResult
            do {
                result = try walk.transform.body(migrating)
            } catch {
                throw DatabaseError.migrationFailed(name: migration, id: id, reason: "the step threw \(error)")
            }
            switch result.kind {
            case .keep:
                continue
            case .delete:
                deletes.append(.delete(try RecordEncoding.recordKey(id, maxKeySize: maxKeySize)))
            case let .records(replacements):
                var keepsKey = false
                for replacement in replacements {
                    let newID = replacement.id ?? id
                    let before = batch.count
                    do throws(DatabaseError) {
                        switch replacement.content {
                        case let .model(model):
                            types[ObjectIdentifier(Swift.type(of: model))] = Swift.type(of: model)
                            try Self.encode(model, id: newID, into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption,
                                            classes: &classes, written: &written)
                        case let .document(document):
                            guard let name = document.className, !name.isEmpty else {
                                throw .migrationFailed(name: migration, id: id, reason: "a document it returned names no class (its member \"object\")")
                            }
                            guard let bytes = document.encoded() else {
                                let detail = document.encodingFailure.map { " at '\($0.path)': \($0.reason)" } ?? ""
                                throw .migrationFailed(name: migration, id: id, reason: "a document it returned cannot be stored" + detail)
                            }
                            guard !newID.isEmpty else { throw DatabaseError.emptyID }
                            try bytes.withBytes { bytes throws(DatabaseError) in
                                try RecordEncoding.encode(
                                    id: newID, className: name, document: bytes, into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption)
                            }
                        }
                    } catch {
                        if case .migrationFailed = error { throw error }
                        throw DatabaseError.migrationFailed(name: migration, id: id, reason: error.description)
                    }
                    for _ in before..<batch.count { sources.append((id: id, key: record.key)) }
                    keepsKey = keepsKey || StorageKey(newID, maxKeySize: maxKeySize).bytes == record.key
                }
                if !keepsKey { deletes.append(.delete(try RecordEncoding.recordKey(id, maxKeySize: maxKeySize))) }
            }
        }
        assert(sources.count == batch.count, "every stored entry has its source")
        // The rules on what a step stores, checked on the bytes of keys and class names.
        var foreignKeys: [(key: StorageKey, source: String)] = []
        var index = 0
        var broken: (source: String, reason: String)?
        batch.forEachRecord { key, id, _, className, _ in
            defer { index += 1 }
            guard broken == nil, index < sources.count else { return }
            let source = sources[index]
            guard !key.elementsEqual(source.key) else { return }
            if Array(className.utf8) == walked {
                broken = (source.id, "a step over '\(walk.className)' may store records of '\(walk.className)' under the record's own id only (transform into another class, then rename it)")
            } else {
                let shown = id.isEmpty ? String(decoding: key, as: UTF8.self) : String(decoding: id, as: UTF8.self)
                foreignKeys.append((StorageKey(shown, maxKeySize: maxKeySize), source.id))
            }
        }
        if let broken { throw DatabaseError.migrationFailed(name: migration, id: broken.source, reason: broken.reason) }
        return EncodedBatch(
            operations: batch.isEmpty ? deletes : deletes + [.put(batch, classes: classes.classes)], types: Array(types.values), foreignKeys: foreignKeys)
    }

    /// `RecordEncoding.encode` for a model of any type.
    private static func encode<T: Persistable>(
        _ model: T, id: String, into batch: inout RecordBatch, header: inout [UInt8], maxKeySize: Int, encryption: StoreEncryption?,
        classes: inout ClassList, written: inout Set<ExactID>
    ) throws(DatabaseError) {
        try RecordEncoding.encode(
            Record(id: id, data: model), into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption, classes: &classes,
            written: &written)
    }

    private static nonisolated(nonsending) func ensureIndexes<T: Persistable>(_ type: T.Type, _ engine: FaceEngine) async throws(DatabaseError) {
        try await IndexDeclarations.ensure(type, in: engine)
    }
}

/// The next records a migration step visits (`RecordSnapshot.records(ofClass:after:limit:_:)`),
/// each with its key and id, read in place then detached.
struct ReadMigrationPage: PlainRead {
    let classKey: StorageKey
    let after: [UInt8]?
    let limit: Int

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [MigrationPage.Record] {
        try snapshot.records(ofClass: classKey, after: after, limit: limit) { record, key, id in
            MigrationPage.Record(key: key, id: id(), stored: record.detached())
        }
    }
}

/// `ReadMigrationPage`'s records.
enum MigrationPage {
    struct Record: Sendable {
        let key: [UInt8]
        let id: String
        let stored: DecodedRecord.Detached
    }
}

/// The class name stored under each key, nil where none is stored.
struct ReadClassNames: PlainRead {
    let keys: [StorageKey]

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [String?] {
        try keys.map { key throws(DatabaseError) in try snapshot.record(key, id: key.id)?.className }
    }
}

extension LocalDatabase {
    /// Runs the migrations of `migrator` that this database has not had, in the order they are
    /// registered (one a killed migrator left under way first, from where it stopped), and
    /// records each in the commit of its last batch. See <doc:Migrations>.
    ///
    /// Call it right after opening the database, before writing: until it has run, this
    /// process writes nothing into a database that has had migrations, and while a migration
    /// is under way, only the migration writes records (`migrationInProgress`). Another
    /// migrator running on the database, in this process or another, is waited for (at most
    /// the busy timeout); then the migrations it completed are not run again.
    ///
    /// Cancelling the task stops the run between batches; the migration under way goes on
    /// from there at the next call (meanwhile writes are refused).
    /// - Parameters:
    ///   - migrator: The app's migrations, every one it has ever shipped, in order.
    ///   - progress: Called after each batch, on the calling task.
    /// - Returns: The names of the migrations this call completed, in order.
    /// - Throws: `unknownMigration` when the database has had a migration `migrator` does not
    ///   register (nothing is migrated, and this process cannot write); `invalidMigration`;
    ///   `migrationFailed` when a step throws or returns what cannot be stored (its batch is
    ///   rolled back); `busy` when another migrator runs longer than the busy timeout;
    ///   `migrationConflict`; `readOnly`; `transactionAlreadyActive`; `CancellationError`.
    @discardableResult
    public nonisolated(nonsending) func migrate(
        with migrator: DatabaseMigrator, progress: ((MigrationProgress) -> Void)? = nil
    ) async throws -> [String] {
        do {
            return try await MigrationRun(database: self, migrator: migrator, progress: progress).run()
        } catch let error as DatabaseError {
            throw LocalDatabaseError(error)
        }
    }

    /// The database's migration state as last committed (a push replicator's: see `PushReplicator`).
    package nonisolated(nonsending) func migrationState() async throws(DatabaseError) -> MigrationState {
        try await engine.publishCommits()
        return try await engine.writer.migrationState()
    }

    /// The migrations this database has had, in the order they completed, and the one under
    /// way (run or left by a migrator), if any.
    public nonisolated(nonsending) func migrationStatus() async throws -> MigrationStatus {
        do throws(DatabaseError) {
            try await engine.publishCommits()
            let state = try await engine.writer.migrationState()
            return MigrationStatus(completed: state.completed, underWay: state.running?.name)
        } catch { throw LocalDatabaseError(error) }
    }
}

/// Which migrations a database has had (`LocalDatabase.migrationStatus()`).
public struct MigrationStatus: Sendable, Equatable {
    /// The migrations completed, in the order they completed.
    public let completed: [String]
    /// The migration under way, if any.
    public let underWay: String?

    /// A status: for comparisons.
    public init(completed: [String], underWay: String?) {
        self.completed = completed
        self.underWay = underWay
    }
}
