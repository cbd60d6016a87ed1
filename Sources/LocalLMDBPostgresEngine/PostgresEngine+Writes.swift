import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

// Applying the faces' `WriteOperation`s in SQL. All of it runs on the engine's thread.
extension PostgresEngine {
    /// Commits `writes` (each one atomic write of one or more operations) in one transaction;
    /// when that fails before the commit was sent, commits each alone, so each gets its own
    /// result. Returns one result per write, in order.
    ///
    /// Writes of records by key run side by side with other processes' (`WritersLock.shared`),
    /// so two groups can lock the same records in opposite orders; the server then aborts one
    /// (a deadlock, SQLSTATE 40P01), which runs again alone (`alone`: the exclusive lock).
    func commitGroup(_ writes: [[WriteOperation]], alone: Bool = false) -> [Result<Int, DatabaseError>] {
        // Puts into a store without indexes, in one round trip when nothing needs a look first.
        if !alone, let results = fastPut(writes) { return results }
        let connection: PostgresConnection
        do throws(DatabaseError) {
            connection = try leaseBlocking("writing")
        } catch {
            return writes.map { _ in .failure(error) }
        }
        var commitSent = false
        var lock = alone ? WritersLock.exclusive : writersLock(for: writes)
        do throws(DatabaseError) {
            // Records by key side by side with other processes' (as the cached catalog says);
            // when the catalog read under the lock says otherwise (a unique index defined
            // meanwhile), again, alone.
            try begin(on: connection, "writing", lock: lock)
            if lock == .shared, writersLock(for: writes) == .exclusive {
                _ = try run("ROLLBACK", on: connection, "writing")
                lock = .exclusive
                try begin(on: connection, "writing", lock: lock)
            }
            var changes = ChangeSet()
            var counts: [Int] = []
            for operations in writes {
                var count = 0
                for operation in operations { count += try apply(operation, on: connection, changes: &changes) }
                counts.append(count)
            }
            commitSent = true
            let logged = try logAndCommit(changes, on: connection)
            pool.release(connection)
            if logged { notifier.wakeAll() }
            return counts.map { .success($0) }
        } catch {
            let broken = (try? run("ROLLBACK", on: connection, "rolling back")) == nil
            pool.release(connection, broken: broken)
            // A shared group the server aborted as one side of a deadlock: again, alone.
            if lock == .shared, !commitSent, Self.isDeadlock(error) { return commitGroup(writes, alone: true) }
            // A commit whose answer was lost may have happened: it is not repeated. Nor is a group
            // that the server could not be reached for, or that waited out its bound: only a
            // group that a statement was refused in is retried write by write.
            guard writes.count > 1, !commitSent, Self.isRefusal(error) else { return writes.map { _ in .failure(error) } }
            return writes.flatMap { commitGroup([$0]) }
        }
    }

    /// Begins a write transaction on `connection`, taking the store's writers' lock first
    /// (`WritersLock`), then reading the store's row (its index catalog's version, schema version
    /// and migration entry, which change only under the exclusive lock). A lock held by others
    /// makes the transaction wait, for at most the busy timeout (`lock_timeout`, set when the pool
    /// connects; then `busy`). Group commit makes one transaction carry many writes.
    /// With `synchronizing`, the transaction is a device's push (`pushSync`).
    func begin(on connection: PostgresConnection, _ operation: String, lock: WritersLock = .exclusive, synchronizing: Bool = false) throws(DatabaseError) {
        _ = try run(StoreSchema.beginWrite, on: connection, operation)
        _ = try run(schema.writersLock(lock, synchronizing: synchronizing), on: connection, operation)
        guard let locked = StoreSchema.Locked(try run(schema.lockQuery, on: connection, operation)) else {
            throw .server(operation: operation, message: "the store is no longer listed on the server")
        }
        // A newer version of LocalLMDB migrated the store since it was opened: this one would
        // write it without keeping what the newer one added.
        guard locked.schemaVersion <= StoreSchema.migratedVersion else {
            throw .unsupportedFormat(found: Int(locked.schemaVersion), supported: StoreSchema.migratedVersion)
        }
        recordedMigrations = .read(locked.migrations)
        if catalog?.version != locked.indexVersion { try loadCatalog(version: locked.indexVersion, on: connection, operation) }
    }

    /// Whether `error` is the server aborting the transaction as one side of a deadlock.
    static func isDeadlock(_ error: DatabaseError) -> Bool {
        if case let .server(_, message) = error { return message.contains("SQLSTATE 40P01") }
        return false
    }

    /// Whether `error` is the server (or a rule) refusing a statement, as opposed to the server
    /// being unreachable or too slow: a group with a refused write is retried write by write.
    static func isRefusal(_ error: DatabaseError) -> Bool {
        switch error {
        case .busy: return false
        case let .server(_, message): return message.contains("SQLSTATE") && !message.contains("SQLSTATE 57P") && !message.contains("SQLSTATE 08")
        default: return true
        }
    }

    /// Applies `operations` in the session's transaction, as one savepoint: a refused write
    /// leaves the transaction as it was.
    func applyInTransaction(_ operations: [WriteOperation], _ open: OpenTransaction) throws(DatabaseError) -> Int {
        let connection = open.connection
        _ = try run("SAVEPOINT locallmdb_write", on: connection, "writing")
        var changes = ChangeSet()
        do throws(DatabaseError) {
            var count = 0
            for operation in operations { count += try apply(operation, on: connection, changes: &changes) }
            _ = try run("RELEASE SAVEPOINT locallmdb_write", on: connection, "writing")
            open.changes.append(contentsOf: changes)
            return count
        } catch {
            _ = try? run("ROLLBACK TO SAVEPOINT locallmdb_write", on: connection, "writing")
            // The write may have changed the index catalog (declared an index) before it was
            // refused: read it again as the transaction now sees it.
            // When it cannot be read, the transaction's later writes fail (`storedIndexes`) rather
            // than keep entries of an index that is not there.
            // So may the migration entry (a migration's batch).
            catalog = nil
            recordedMigrations = .unknown
            if let result = try? run(schema.lockQuery, on: connection, "writing"), let locked = StoreSchema.Locked(result) {
                recordedMigrations = .read(locked.migrations)
                try? loadCatalog(version: locked.indexVersion, on: connection, "writing")
            } else {
                // Unknown: the transaction's later writes are refused rather than checked against nothing.
                recordedMigrations = .unknown
            }
            throw error
        }
    }

    /// Writes the change log's entry for `changes`, as the transaction's last statement (its tick,
    /// which orders it: see `StoreSchema`), commits, and then announces the commit on the store's
    /// channel (`announce`). The entry's number is the sequencer's to give (`LogSequencer`): the
    /// commit holds no lock another commit waits for while the server flushes it. Returns whether
    /// an entry was written (false when nothing changed).
    func logAndCommit(_ changes: ChangeSet, on connection: PostgresConnection) throws(DatabaseError) -> Bool {
        if !changes.isEmpty {
            let entry = ByteBuffer(bytes: ChangeLog.encode(changes))
            let result = try run(
                PostgresQuery(unsafeSQL: "INSERT INTO \(schema.log) (changes) VALUES ($1) RETURNING tick", binds: binds(entry)),
                on: connection, "committing")
            guard result.rows.first != nil else {
                throw .server(operation: "committing", message: "the change log's entry was not written")
            }
        }
        let committed = try run("COMMIT", on: connection, "committing")
        // PostgreSQL answers a COMMIT of a transaction that had failed with ROLLBACK.
        guard committed.metadata.command == "COMMIT" else {
            throw .transactionFailed(reason: "the server rolled the transaction back (a statement in it had failed)")
        }
        if !changes.isEmpty { announce(on: connection) }
        return !changes.isEmpty
    }

    /// Notifies the store's channel that a commit was made (`ChangeListener`), in a transaction of
    /// its own that does not wait for the disk (it stores nothing; the commit it announces was
    /// flushed before). A transaction that notifies holds the server's notification lock, one for
    /// the whole database, until its commit ends: notifying in the write's own transaction made
    /// every notifying commit wait for the flushes of the ones before it. A notification that
    /// fails (the server's queue full, the connection lost) is not the write's failure: it only
    /// wakes, and observers also poll.
    func announce(on connection: PostgresConnection) {
        _ = try? run(
            PostgresQuery(
                unsafeSQL: "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, '')", binds: binds(schema.prefix)),
            on: connection, "announcing")
    }

    /// Applies one operation on `connection`, inside its transaction, adding what changed to
    /// `changes`; returns the records written or deleted.
    func apply(_ operation: WriteOperation, on connection: PostgresConnection, changes: inout ChangeSet) throws(DatabaseError) -> Int {
        if operation.changesRecords { try checkMigrations() }
        return try applyUnchecked(operation, on: connection, changes: &changes)
    }

    /// `apply`, without the migrations' check (a migration's own writes).
    func applyUnchecked(_ operation: WriteOperation, on connection: PostgresConnection, changes: inout ChangeSet) throws(DatabaseError) -> Int {
        switch operation {
        case let .put(records, classes):
            try claim(classes, on: connection)
            return try put(records, on: connection, changes: &changes)
        case let .delete(key):
            let result = try run(
                PostgresQuery(unsafeSQL: "DELETE FROM \(schema.records) WHERE key = $1 RETURNING class_name", binds: binds(ByteBuffer(bytes: key.bytes))),
                on: connection, "deleting")
            guard let row = result.rows.first, let className = try? row.decode(ByteBuffer.self) else { return 0 }
            try deleteEntries(keys: [ByteBuffer(bytes: key.bytes)], on: connection)
            changes.append(.deleted(id: key.id, className: String(buffer: className)))
            return 1
        case let .deleteTypes(typeKeys, names, owner):
            let existing = try classRows([StorageKey(owner.name, maxKeySize: maxKeySize).bytes], on: connection, lock: false)
            try owner.checkOwner(existing: existing.first)
            let result = try run(
                PostgresQuery(unsafeSQL: "DELETE FROM \(schema.records) WHERE class_key = ANY($1)", binds: binds(typeKeys.map { ByteBuffer(bytes: $0.bytes) })),
                on: connection, "deleting")
            let deleted = result.metadata.rows ?? 0
            try deleteEntries(classNames: names, on: connection)
            if deleted > 0 { for name in names { changes.append(.typeDeleted(className: name)) } }
            return deleted
        case .clear:
            let result = try run(PostgresQuery(unsafeSQL: "DELETE FROM \(schema.records)"), on: connection, "clearing")
            try deleteAllEntries(on: connection)
            let deleted = result.metadata.rows ?? 0
            if deleted > 0 { changes.append(.cleared) }
            return deleted
        case let .deleteReaching(key, following):
            return try deleteReaching(key, following: following, on: connection, changes: &changes)
        case let .defineIndexes(className, definitions, progress):
            return try define(definitions, className: className, progress: progress, on: connection)
        case let .dropIndex(className, name):
            return try dropIndex(className: className, name: name, on: connection) ? 1 : 0
        case let .setMember(keys, classNames, member, json):
            // The records are locked and read, patched in their bytes, and put back.
            let rows = try run(
                PostgresQuery(
                    unsafeSQL: "SELECT key, value FROM \(schema.records) WHERE key = ANY($1::bytea[]) ORDER BY key FOR UPDATE",
                    binds: binds(keys.map { ByteBuffer(bytes: $0.bytes) })),
                on: connection, "writing"
            ).rows
            var values: [[UInt8]: ByteBuffer] = [:]
            for row in rows {
                if let (key, value) = try? row.decode((ByteBuffer, ByteBuffer).self) { values[Array(buffer: key)] = value }
            }
            var batch = RecordBatch()
            for key in keys {
                guard let value = values[key.bytes] else { continue }
                try value.withUnsafeReadableBytes { value throws(DatabaseError) in
                    try RecordStore.patch(
                        value, key: key, classNames: classNames, member: member, json: json, encryption: nil, into: &batch, maxKeySize: maxKeySize)
                }
            }
            guard !batch.isEmpty else { return 0 }
            return try put(batch, on: connection, changes: &changes)
        case .reseal, .finishResealing:
            throw .unsupported(operation: "Encryption", reason: "the PostgreSQL engine does not encrypt values")
        case .replicate, .detachReplica:
            throw .unsupported(operation: "Replicating into a PostgreSQL store", reason: "a PostgreSQL store is followed by replicas, never one itself")
        case .enableSync, .synchronize:
            throw .unsupported(operation: "Synchronizing a PostgreSQL store as a device", reason: "devices synchronize with a PostgreSQL store; a store is not a device")
        case let .migrate(operations, expected, state):
            return try migrate(operations, expected: expected, state: state, on: connection, changes: &changes)
        }
    }

    /// Deletes the record under `key` and every record its stored references reach among
    /// `following` (as LMDB's store does: `WriteOperation.deleteReaching`), a level of the graph
    /// per statement. Returns the records deleted.
    private func deleteReaching(
        _ key: StorageKey, following: Set<ExactID>, on connection: PostgresConnection, changes: inout ChangeSet
    ) throws(DatabaseError) -> Int {
        var level = [key]
        var seen: Set<ExactID> = [ExactID(key.id)]
        var deleted = 0
        while !level.isEmpty {
            let result = try run(
                PostgresQuery(
                    unsafeSQL: "DELETE FROM \(schema.records) WHERE key = ANY($1::bytea[]) RETURNING key, class_name, value",
                    binds: binds(level.map { ByteBuffer(bytes: $0.bytes) })),
                on: connection, "deleting")
            var found: [[UInt8]: (className: String, value: ByteBuffer)] = [:]
            for row in result.rows {
                if let (key, className, value) = try? row.decode((ByteBuffer, ByteBuffer, ByteBuffer).self) {
                    found[Array(buffer: key)] = (String(buffer: className), value)
                }
            }
            try deleteEntries(keys: level.map { ByteBuffer(bytes: $0.bytes) }, on: connection)
            var next: [StorageKey] = []
            for key in level {
                guard let (className, value) = found[key.bytes] else { continue }
                let referenced = try value.withUnsafeReadableBytes { value throws(DatabaseError) in
                    RecordReference.referencedIDs(in: try RecordDecoding.decode(value: value, id: key.id, encryption: nil).object)
                }
                for id in referenced where following.contains(ExactID(id)) && seen.insert(ExactID(id)).inserted {
                    next.append(StorageKey(id, maxKeySize: maxKeySize))
                }
                changes.append(.deleted(id: key.id, className: className))
                deleted += 1
            }
            level = next
        }
        return deleted
    }

    /// The stored class rows for the class keys `keys` (absent ones left out), optionally
    /// locked until the transaction ends.
    private func classRows(_ keys: [[UInt8]], on connection: PostgresConnection, lock: Bool) throws(DatabaseError) -> [StoredClass] {
        try classRowsAsStored(keys, on: connection, lock: lock).map(\.row)
    }

    /// `classRows`, each with the bytes it is stored as.
    private func classRowsAsStored(
        _ keys: [[UInt8]], on connection: PostgresConnection, lock: Bool
    ) throws(DatabaseError) -> [(row: StoredClass, bytes: [UInt8])] {
        let result = try run(
            PostgresQuery(
                unsafeSQL: "SELECT row FROM \(schema.classes) WHERE name_key = ANY($1)" + (lock ? " FOR UPDATE" : ""),
                binds: binds(keys.map { ByteBuffer(bytes: $0) })),
            on: connection, "reading classes")
        return result.rows.compactMap { row in
            guard let buffer = try? row.decode(ByteBuffer.self), let parsed = buffer.withUnsafeReadableBytes({ StoredClass(parsing: $0) }) else {
                return nil
            }
            return (parsed, Array(buffer: buffer))
        }
    }

    /// Takes the transaction-level lock under which class names are recorded, so that no other
    /// server records one until this transaction ends.
    private func lockClasses(on connection: PostgresConnection) throws(DatabaseError) {
        _ = try run(
            PostgresQuery(unsafeSQL: "SELECT pg_advisory_xact_lock(hashtext($1))", binds: binds(schema.prefix)), on: connection, "recording classes")
    }

    /// The stored class names with the canonical form of any of `names` (their other
    /// spellings, or themselves), found by the classes' `spelling_key` (`StoredClass.spellingKey`),
    /// and every name a row without one holds (written by an earlier version): a lookup, at a
    /// cost that does not grow with the number of classes stored.
    private func storedClassNames(spelledLike names: [String], on connection: PostgresConnection) throws(DatabaseError) -> [String] {
        let keys = Set(names.map { StoredClass.spellingKey(of: $0, maxKeySize: maxKeySize) })
        return try run(
            PostgresQuery(
                unsafeSQL: "SELECT row FROM \(schema.classes) WHERE spelling_key = ANY($1) OR spelling_key IS NULL",
                binds: binds(keys.map { ByteBuffer(bytes: $0) })),
            on: connection, "reading classes"
        ).rows.compactMap { row in
            (try? row.decode(ByteBuffer.self)).flatMap { buffer in buffer.withUnsafeReadableBytes { StoredClass(parsing: $0)?.name } }
        }
    }

    /// The statement that records class rows: `$1` their keys, `$2` the rows, `$3` their
    /// spelling keys; an existing row is replaced (`update`) or kept.
    func recordClassesQuery(_ rows: [StoredClass], update: Bool) -> PostgresQuery {
        PostgresQuery(
            unsafeSQL: """
                INSERT INTO \(schema.classes) (name_key, row, spelling_key) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[])
                ON CONFLICT (name_key) DO \(update ? "UPDATE SET row = EXCLUDED.row" : "NOTHING")
                """,
            binds: binds(
                rows.map { ByteBuffer(bytes: StorageKey($0.name, maxKeySize: maxKeySize).bytes) },
                rows.map { ByteBuffer(bytes: $0.encoded) },
                rows.map { ByteBuffer(bytes: StoredClass.spellingKey(of: $0.name, maxKeySize: maxKeySize)) }))
    }

    /// The spelling rule (`StoredClass.checkSpelling(againstStored:)`) for class rows a push
    /// replicator copies from a local database: a name the server does not hold may not be one
    /// it holds in another Unicode normalization. (Rows the source holds in both spellings are
    /// copied as they are: the server mirrors them.) Takes the lock `claim` takes, so no write
    /// records a name meanwhile.
    func checkSpelling(of classRows: [StoredClass], on connection: PostgresConnection) throws(DatabaseError) {
        try lockClasses(on: connection)
        let stored = try storedClassNames(spelledLike: classRows.map(\.name), on: connection)
        let present = Set(stored.map(ExactID.init))
        let byForm = Dictionary(grouping: stored) { StoredClass.spellingKey(of: $0, maxKeySize: maxKeySize) }
        for row in classRows where !present.contains(ExactID(row.name)) {
            try row.checkSpelling(againstStored: byForm[StoredClass.spellingKey(of: row.name, maxKeySize: maxKeySize)] ?? [])
        }
    }

    /// Records each class's owner (the claim rule, `StoredClass.claim(over:)`). The common case,
    /// every class already owned by its type, costs one read; a class to record is recorded
    /// under a transaction-level lock, after reading its row again, so two servers' first writes
    /// of one name under different types cannot both win.
    private func claim(_ storedClasses: [StoredClass], on connection: PostgresConnection) throws(DatabaseError) {
        guard !storedClasses.isEmpty else { return }
        let keys = storedClasses.map { StorageKey($0.name, maxKeySize: maxKeySize).bytes }
        // By the names' bytes, as the rows are keyed: names in two Unicode normalizations are two rows.
        func toWrite(_ rows: [StoredClass]) throws(DatabaseError) -> (writes: [StoredClass], new: [StoredClass]) {
            let byName = Dictionary(rows.map { (ExactID($0.name), $0) }) { first, _ in first }
            var writes: [StoredClass] = []
            var new: [StoredClass] = []
            for storedClass in storedClasses {
                let existing = byName[ExactID(storedClass.name)]
                guard try storedClass.claim(over: existing) else { continue }
                writes.append(storedClass)
                if existing == nil { new.append(storedClass) }
            }
            return (writes, new)
        }
        let stored = try classRowsAsStored(keys, on: connection, lock: false)
        guard !(try toWrite(stored.map(\.row))).writes.isEmpty else {
            // Nothing to record: the same claim over the same rows records nothing again (`fastPut`).
            rememberClaims(storedClasses, over: stored)
            return
        }
        try lockClasses(on: connection)
        let (writes, new) = try toWrite(try classRows(keys, on: connection, lock: true))
        guard !writes.isEmpty else { return }
        if !new.isEmpty {
            // Under the lock: no other server records a name meanwhile. Each new name against
            // the stored and new names of its canonical form.
            let names = new.map(\.name)
            let stored = try storedClassNames(spelledLike: names, on: connection)
            let byForm = Dictionary(grouping: stored + names) { StoredClass.spellingKey(of: $0, maxKeySize: maxKeySize) }
            for storedClass in new {
                try storedClass.checkSpelling(againstStored: byForm[StoredClass.spellingKey(of: storedClass.name, maxKeySize: maxKeySize)] ?? [])
            }
        }
        _ = try run(recordClassesQuery(writes, update: true), on: connection, "recording classes")
    }

    /// Puts `records` (the last of each key wins, as on LMDB), logging each write, and each
    /// record that left its previous class, in the batch's order (`ChangeSet.append(written:leaving:)`).
    /// Rows are locked in key order, so two servers' batches over the same keys wait for each
    /// other instead of deadlocking.
    private func put(_ records: RecordBatch, on connection: PostgresConnection, changes: inout ChangeSet) throws(DatabaseError) -> Int {
        var rows = RecordRows()
        var order: [[UInt8]] = []
        var batchClasses: [String] = []
        rows.add(records) { key, className in
            order.append(key)
            batchClasses.append(className)
        }
        let (keys, classKeys, classNames, values) = (rows.keys, rows.classKeys, rows.classNames, rows.values)
        // New keys go in at once. Keys taken are then locked and read by a statement of their
        // own, which sees every commit made before it (a statement's snapshot would miss a row
        // another server inserted meanwhile, and the class it left), then replaced.
        let inserted = try run(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO \(schema.records) (key, class_key, class_name, value)
                    SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::bytea[]) AS t(key, class_key, class_name, value) ORDER BY key
                    ON CONFLICT (key) DO NOTHING RETURNING key
                    """,
                binds: binds(keys, classKeys, classNames, values)),
            on: connection, "writing")
        var insertedKeys = Set<[UInt8]>()
        for row in inserted.rows {
            if let key = try? row.decode(ByteBuffer.self) { insertedKeys.insert(Array(buffer: key)) }
        }
        let taken = keys.indices.filter { !insertedKeys.contains(Array(buffer: keys[$0])) }
        var oldRows: [PostgresRow] = []
        if !taken.isEmpty {
            let takenKeys = taken.map { keys[$0] }
            oldRows = try run(
                PostgresQuery(
                    unsafeSQL: "SELECT key, class_name FROM \(schema.records) WHERE key = ANY($1::bytea[]) ORDER BY key FOR UPDATE",
                    binds: binds(takenKeys)),
                on: connection, "writing"
            ).rows
            // An upsert: a taken key deleted by another server meanwhile is inserted again.
            _ = try run(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO \(schema.records) (key, class_key, class_name, value)
                        SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::bytea[]) AS t(key, class_key, class_name, value) ORDER BY key
                        ON CONFLICT (key) DO UPDATE SET class_key = EXCLUDED.class_key, class_name = EXCLUDED.class_name, value = EXCLUDED.value
                        """,
                    binds: binds(takenKeys, taken.map { classKeys[$0] }, taken.map { classNames[$0] }, taken.map { values[$0] })),
                on: connection, "writing")
        }
        // Each key's class before the batch, then as the batch moves it.
        var current: [[UInt8]: String] = [:]
        for row in oldRows {
            guard let (key, className) = try? row.decode((ByteBuffer, ByteBuffer).self) else { continue }
            current[Array(buffer: key)] = String(buffer: className)
        }
        var left: [(index: Int, className: String)] = []
        for (index, key) in order.enumerated() {
            if let previous = current[key], !previous.hasSameUTF8(as: batchClasses[index]) {
                left.append((index, previous))
            }
            current[key] = batchClasses[index]
        }
        changes.append(written: records, leaving: left)
        try replaceEntries(of: keys.indices.map { (Array(buffer: keys[$0]), String(buffer: classNames[$0]), values[$0]) }, on: connection)
        return records.count
    }
}

/// Bindings for `values`, in order.
func binds(_ values: any PostgresDynamicTypeEncodable...) -> PostgresBindings {
    var bindings = PostgresBindings(capacity: values.count)
    for value in values { bindings.append(value) }
    return bindings
}
