import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// One run of a migrator over one database (`LocalDatabase.migrate(with:)`).
///
/// The rules it keeps, with the store's (`MigrationState`):
/// - One migrator at a time: it holds the directory's `MigrationLock` from before it reads the
///   recorded state until it returns. Another waits for the lock, at most the busy timeout.
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
    let engine: FaceEngine
    let migrator: DatabaseMigrator
    let progress: ((MigrationProgress) -> Void)?

    /// Runs the migrations the database has not had; returns their names.
    nonisolated(nonsending) func run() async throws -> [String] {
        if let problem = migrator.problem { throw DatabaseError.invalidMigration(reason: problem) }
        guard case let .lmdb(session) = engine else {
            throw DatabaseError.unsupported(operation: "Migrations", reason: "this version migrates LMDB databases only")
        }
        guard !engine.configuration.readOnly else { throw DatabaseError.readOnly }
        guard !engine.transactionActive else { throw DatabaseError.transactionAlreadyActive }
        let lock = try await Self.lock(session.directoryPath, timeout: engine.busyTimeout)
        defer { withExtendedLifetime(lock) {} }
        let names = Set(migrator.migrationNames)
        session.knowMigrations(names)
        // A batch a killed migrator committed but did not publish is seen before the state is read.
        try await engine.publishCommits()
        var state = try session.migrationState()
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
        return completed
    }

    /// The migration lock of `directory`, waited for at most `timeout` (polling: the wait holds
    /// no thread).
    private static func lock(_ directory: String, timeout: Duration) async throws -> MigrationLock {
        let deadline = ContinuousClock.now + timeout
        var pause = Duration.milliseconds(1)
        while true {
            if let lock = try MigrationLock.tryAcquire(directory: directory) { return lock }
            guard ContinuousClock.now < deadline else { throw DatabaseError.busy(timeout: timeout) }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    /// Runs `migration` from where `state` says it is, batch by batch, advancing `state`.
    private nonisolated(nonsending) func run(_ migration: DatabaseMigrator.Migration, state: inout MigrationState) async throws {
        var step = 0
        var position: [UInt8] = []
        if let running = state.running {
            assert(running.name == migration.name, "the migration under way runs first")
            guard running.step <= migration.steps.count else {
                throw DatabaseError.invalidMigration(
                    reason: "the database records the migration '\(migration.name)' at its step \(running.step + 1), and the migrator registers \(migration.steps.count) steps for it")
            }
            (step, position) = (running.step, running.position)
        }
        guard step < migration.steps.count else {
            // No step (left): the migration is recorded, alone.
            var next = state
            next.completed.append(migration.name)
            next.running = nil
            _ = try await engine.perform(.migrate([], expected: state, state: next))
            state = next
            return
        }
        while step < migration.steps.count {
            let migrationStep = migration.steps[step]
            var visited = 0
            var written = 0
            while true {
                try Task.checkCancellation()
                let page = try await engine.read(ReadMigrationPage(query: try query(migrationStep.className, after: position, limit: migration.batchSize)))
                let (operations, types) = try encode(page.records, of: migration.name, migrationStep)
                // The indexes the written models declare, as a write of them would make them.
                for type in types { try await Self.ensureIndexes(type, engine) }
                var next = state
                let last = page.records.count < migration.batchSize ? nil : page.last
                if let last {
                    next.running = MigrationState.Running(name: migration.name, step: step, position: last.encoded)
                } else if step + 1 < migration.steps.count {
                    next.running = MigrationState.Running(name: migration.name, step: step + 1, position: [])
                } else {
                    next.completed.append(migration.name)
                    next.running = nil
                }
                written += try await engine.perform(.migrate(operations, expected: state, state: next))
                state = next
                visited += page.records.count
                progress?(MigrationProgress(
                    migration: migration.name, step: step, stepCount: migration.steps.count, recordsVisited: visited, recordsWritten: written))
                guard let last else { break }
                position = last.encoded
            }
            step += 1
            position = []
        }
    }

    /// The store's query for the next `limit` records of `className` after `position` (the
    /// encoded cursor of the last record a batch visited; empty for the first).
    private func query(_ className: String, after position: [UInt8], limit: Int) throws(DatabaseError) -> IndexQuery {
        var query = try QueryPlan.indexQuery(
            QueryPlan.Shape(conditions: [], order: nil, offset: 0, limit: limit), classNames: [className], declaredIndexes: [])
        if !position.isEmpty {
            guard let cursor = IndexCursor(encoded: position) else {
                throw DatabaseError.corruptRecord(id: "meta \"migrations\"", reason: "the recorded position of the migration under way is damaged")
            }
            query.after = cursor
        }
        return query
    }

    /// The writes of `step` for `records` (deletes first, then one put of every record stored),
    /// and the types of the models it stores.
    private func encode(
        _ records: [(id: String, record: DecodedRecord.Detached)], of migration: String, _ step: MigrationStep
    ) throws -> (operations: [WriteOperation], types: [any Persistable.Type]) {
        guard case let .transform(className, transform) = step.kind else { return ([], []) }
        var types: [ObjectIdentifier: any Persistable.Type] = [:]
        let (maxKeySize, encryption) = (engine.maxKeySize, engine.encryption)
        var deletes: [WriteOperation] = []
        var batch = RecordBatch()
        var classes = ClassList()
        var header: [UInt8] = []
        var written: Set<ExactID> = []
        for (id, stored) in records {
            let record = MigratingRecord(id: id, className: stored.stored.className, document: DataObject(encoded: stored.stored.object))
            let result: MigrationResult
            do {
                result = try transform.body(record)
            } catch {
                throw DatabaseError.migrationFailed(name: migration, id: id, reason: "the step threw \(error)")
            }
            switch result.kind {
            case .keep:
                continue
            case .delete:
                deletes.append(.delete(try RecordEncoding.recordKey(id, maxKeySize: maxKeySize)))
            case let .records(replacements):
                var keepsID = false
                for replacement in replacements {
                    let newID = replacement.id ?? id
                    keepsID = keepsID || newID == id
                    do throws(DatabaseError) {
                        switch replacement.content {
                        case let .model(model):
                            types[ObjectIdentifier(Swift.type(of: model))] = Swift.type(of: model)
                            let name = TypeRegistry.storedClass(of: Swift.type(of: model)).name
                            if name == className, newID != id { throw .migrationFailed(name: migration, id: id, reason: Self.sameClassRule(className)) }
                            try Self.encode(model, id: newID, into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption,
                                            classes: &classes, written: &written)
                        case let .document(document):
                            guard let name = document.className, !name.isEmpty else {
                                throw .migrationFailed(name: migration, id: id, reason: "a document it returned names no class (its member \"object\")")
                            }
                            if name == className, newID != id { throw .migrationFailed(name: migration, id: id, reason: Self.sameClassRule(className)) }
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
                }
                if !keepsID { deletes.append(.delete(try RecordEncoding.recordKey(id, maxKeySize: maxKeySize))) }
            }
        }
        return (batch.isEmpty ? deletes : deletes + [.put(batch, classes: classes.classes)], Array(types.values))
    }

    private static nonisolated(nonsending) func ensureIndexes<T: Persistable>(_ type: T.Type, _ engine: FaceEngine) async throws(DatabaseError) {
        try await IndexDeclarations.ensure(type, in: engine)
    }

    private static func sameClassRule(_ className: String) -> String {
        "a step over '\(className)' may store records of '\(className)' under the record's own id only (transform into another class, then rename it)"
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
}

/// The next records a migration step visits, each with its id, read in place then detached.
struct ReadMigrationPage: PlainRead {
    let query: IndexQuery

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> MigrationPage {
        let (records, last) = try snapshot.page(matching: query) { record, id in (id: id(), record: record.detached()) }
        return MigrationPage(records: records, last: last)
    }
}

/// `ReadMigrationPage`'s records, and the cursor after the last.
struct MigrationPage: Sendable {
    let records: [(id: String, record: DecodedRecord.Detached)]
    let last: IndexCursor?
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
            return try await MigrationRun(engine: engine, migrator: migrator, progress: progress).run()
        } catch let error as DatabaseError {
            throw LocalDatabaseError(error)
        }
    }

    /// The migrations this database has had, in the order they completed, and the one under
    /// way (run or left by a migrator), if any.
    public nonisolated(nonsending) func migrationStatus() async throws -> MigrationStatus {
        guard case let .lmdb(session) = engine else { return MigrationStatus(completed: [], underWay: nil) }
        do throws(DatabaseError) {
            try await engine.publishCommits()
            let state = try session.migrationState()
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
