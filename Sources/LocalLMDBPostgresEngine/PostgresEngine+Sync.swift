import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

// What a synchronizer asks of the store: its synchronization tables, a device's push, and the
// versions of records with their stamps.
extension PostgresEngine {
    var syncSchema: SyncSchema { SyncSchema(schema: schema) }

    /// The store's change log id (a position of another log is not one of this store's).
    package var changeLogID: String { schema.logID }

    /// Makes the store's synchronization tables and trigger when it lacks them (idempotent; needs
    /// the store's owner). Returns whether it made them.
    /// - Throws: `server` when the role may not make them (a provisioned device: its owner must
    ///   provision the store again, or enable synchronization).
    package nonisolated(nonsending) func enableSync() async throws(DatabaseError) -> Bool {
        try checkOpen()
        return try await onThread { [self] () throws(DatabaseError) -> Bool in
            let connection = try leaseBlocking("setting up synchronization")
            do throws(DatabaseError) {
                if try syncTablesExist(on: connection) {
                    // A store made by an earlier version lacks the push procedure: added when this
                    // role may (another opening at once may race it: pushes then go the general way).
                    try? syncSchema.addPushProcedure { query throws(DatabaseError) in try run(query, on: connection, "setting up synchronization") }
                    hasPushProcedure = nil
                    pool.release(connection)
                    return false
                }
                // The exclusive writers' lock: a write in flight ends before the trigger exists,
                // and every later one is stamped.
                try begin(on: connection, "setting up synchronization")
                for statement in syncSchema.creation { _ = try run(PostgresQuery(unsafeSQL: statement), on: connection, "setting up synchronization") }
                _ = try run(syncSchema.createPushProcedure, on: connection, "setting up synchronization")
                hasPushProcedure = nil
                // A provisioned store's group role gets the new tables' rows too (else the trigger
                // would refuse its every write). The column exists only once a store was provisioned.
                let access = try run(
                    PostgresQuery(
                        unsafeSQL: "SELECT to_jsonb(s) ->> 'access_role' FROM locallmdb_stores s WHERE name = $1", binds: binds(schema.nameBytes)),
                    on: connection, "setting up synchronization")
                if let group = access.rows.first.flatMap({ try? $0.decode(String?.self) }) ?? nil {
                    guard StoreAccess.isGroupRoleName(group) else {
                        throw DatabaseError.server(operation: "setting up synchronization", message: "the store's access role \(group.debugDescription) is not one provisioning makes")
                    }
                    for statement in syncSchema.grants(to: group) { _ = try run(PostgresQuery(unsafeSQL: statement), on: connection, "setting up synchronization") }
                }
                _ = try run("COMMIT", on: connection, "setting up synchronization")
                pool.release(connection)
                return true
            } catch {
                let broken = (try? run("ROLLBACK", on: connection, "rolling back")) == nil
                pool.release(connection, broken: broken)
                if case let .server(_, message) = error, message.contains("SQLSTATE 42501") {
                    throw .server(
                        operation: "setting up synchronization",
                        message: "the store is not set up for synchronization, and this role may not set it up: its owner provisions it (PostgresStore.provision) or enables synchronization (PostgresStore.enableSync) [\(message)]")
                }
                throw error
            }
        }
    }

    private func syncTablesExist(on connection: PostgresConnection) throws(DatabaseError) -> Bool {
        let result = try run(syncSchema.existsQuery, on: connection, "setting up synchronization")
        return result.rows.first.flatMap { try? $0.decode(Bool.self) } ?? false
    }

    /// Applies a device's writes in one transaction, each by the rule every device applies (last
    /// writer wins): a write replaces the server's version when its stamp is later, and is
    /// refused otherwise. A refused write, and a server version replaced by a write made without
    /// having seen it (its base is not that version), are kept in the conflict log. Returns the
    /// server's versions of the refused writes' records (the device applies them: they win).
    package nonisolated(nonsending) func pushSync(_ push: SyncPush) async throws(DatabaseError) -> [SyncVersion] {
        try checkOpen()
        guard !push.writes.isEmpty else { return [] }
        // In one round trip, when every write simply replaces its record's version: from this
        // task when it can, else from the thread.
        let fromTask = await pushFromTask(push)
        if fromTask == .pushed { return [] }
        return try await onThread { [self] () throws(DatabaseError) -> [SyncVersion] in
            if fromTask == .untried, try fastPush(push) { return [] }
            // Side by side with other pushes and writes by key, unless the store has a unique
            // index (as the catalog the thread holds says; `pushSync(_:lock:on:)` looks again).
            var lock = catalogHasUniqueIndex ? WritersLock.exclusive : .shared
            while true {
                let connection = try leaseBlocking("synchronizing")
                do throws(DatabaseError) {
                    let refused = try pushSync(push, lock: lock, on: connection)
                    pool.release(connection)
                    return refused
                } catch {
                    let broken = (try? run("ROLLBACK", on: connection, "rolling back")) == nil
                    pool.release(connection, broken: broken)
                    // One side of a deadlock with a write by key (the server aborted the push:
                    // nothing of it was kept; a deadlock is found while waiting for a lock, never
                    // at the commit): again, alone.
                    guard lock == .shared, Self.isDeadlock(error) else { throw error }
                    lock = .exclusive
                }
            }
        }
    }

    /// `pushSync` in one transaction on `connection`, holding the writers' lock as `lock` says.
    ///
    /// Shared: a push locks its `_sync` rows, all in one statement in key order, and then the
    /// records of those keys, so two pushes meeting on a key wait for each other and never
    /// deadlock. A plain write locks its record before the trigger locks its `_sync` row: a push
    /// and a write meeting on a key may deadlock, and the server then aborts one, which runs
    /// again alone (`commitGroup`, `pushSync`). A store with a unique index takes the exclusive
    /// lock (a push's puts are checked against every record).
    private func pushSync(_ push: SyncPush, lock: WritersLock, on connection: PostgresConnection) throws(DatabaseError) -> [SyncVersion] {
        let operation = "synchronizing"
        let owners = push.classRows.map {
            StoredClass(name: $0.name, mangledName: $0.mangledName, qualifiedName: $0.qualifiedName, adopts: true, copied: true)
        }
        try begin(on: connection, operation, lock: lock, synchronizing: true)
        // The catalog read under the lock has a unique index (defined meanwhile): again, alone.
        if lock == .shared, catalogHasUniqueIndex {
            _ = try run("ROLLBACK", on: connection, operation)
            try begin(on: connection, operation, lock: .exclusive, synchronizing: true)
        }
        let keys = push.writes.map { ByteBuffer(bytes: $0.key) }
        // Every key gets a row (stamp 0: never written), and every row is locked and read, in key
        // order, in one statement: a row there already is "updated" to itself (which locks it and
        // returns it as it is), a missing one inserted. Pushes of overlapping keys wait for each
        // other instead of deadlocking.
        var current: [[UInt8]: SyncVersion] = [:]
        for row in try run(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO \(syncSchema.sync) AS s (key, stamp, device, deleted) SELECT k, 0, '', true FROM unnest($1::bytea[]) AS k ORDER BY k
                    ON CONFLICT (key) DO UPDATE SET key = s.key
                    RETURNING s.key, s.stamp, s.device, s.deleted, s.id
                    """,
                binds: binds(keys)),
            on: connection, operation
        ).rows {
            guard let (key, stamp, device, deleted, id) = try? row.decode((ByteBuffer, Int64, String, Bool, ByteBuffer?).self) else {
                throw .server(operation: operation, message: "a synchronization row cannot be read")
            }
            let keyBytes = Array(buffer: key)
            current[keyBytes] = SyncVersion(
                key: keyBytes, id: id.map { String(buffer: $0) }, stamp: SyncStamp(time: UInt64(bitPattern: stamp), device: device), deleted: deleted)
        }
        var winners: [Int] = []
        var superseded: [Int] = []
        var refused: [Int] = []
        for (index, write) in push.writes.enumerated() {
            guard let stored = current[write.key] else {
                throw .server(operation: operation, message: "a synchronization row was not locked")
            }
            let stamp = SyncStamp(time: write.time, device: push.device)
            if stamp > stored.stamp {
                winners.append(index)
                if stored.stamp.time != 0, stored.stamp != write.base, stored.stamp.device != push.device { superseded.append(index) }
            } else if stamp < stored.stamp {
                refused.append(index)
            }
            // Equal: the write is there already (a push whose acknowledgement was lost).
        }
        // The stored values of the versions that lose: for the conflict log, and for the device.
        let losingKeys = (superseded + refused).map { ByteBuffer(bytes: push.writes[$0].key) }
        var stored: [[UInt8]: (className: ByteBuffer, value: ByteBuffer)] = [:]
        if !losingKeys.isEmpty {
            for row in try run(
                PostgresQuery(unsafeSQL: "SELECT key, class_name, value FROM \(schema.records) WHERE key = ANY($1::bytea[])", binds: binds(losingKeys)),
                on: connection, operation
            ).rows {
                if let (key, className, value) = try? row.decode((ByteBuffer, ByteBuffer, ByteBuffer).self) {
                    stored[Array(buffer: key)] = (className, value)
                }
            }
        }
        // The winners, as writes of the store.
        var changes = ChangeSet()
        if !owners.isEmpty {
            try checkSpelling(of: owners, on: connection)
            _ = try run(recordClassesQuery(owners, update: false), on: connection, operation)
        }
        let clashing = try applyWinners(push, winners, on: connection, changes: &changes)
        winners.removeAll { clashing.contains($0) }
        superseded.removeAll { clashing.contains($0) }
        try recordConflicts(push, superseded: superseded, refused: refused, current: current, stored: stored, on: connection)
        let reasserted = try reassert(push, clashing, current: current, on: connection, changes: &changes)
        if !winners.isEmpty {
            let written = winners.map { push.writes[$0] }
            _ = try run(
                PostgresQuery(
                    unsafeSQL: """
                        UPDATE \(syncSchema.sync) AS s SET stamp = v.stamp, device = $5, deleted = v.deleted, id = v.id
                        FROM unnest($1::bytea[], $2::int8[], $3::bool[], $4::bytea[]) AS v(key, stamp, deleted, id) WHERE s.key = v.key
                        """,
                    binds: binds(
                        written.map { ByteBuffer(bytes: $0.key) }, written.map { Int64(bitPattern: $0.time) }, written.map { $0.record == nil },
                        written.map { ByteBuffer(string: $0.id) }, push.device)),
                on: connection, operation)
        }
        if changes.isEmpty {
            // Nothing changed (every write refused, or there already): the conflicts are kept.
            let committed = try run("COMMIT", on: connection, operation)
            guard committed.metadata.command == "COMMIT" else { throw .transactionFailed(reason: "the server rolled the push back") }
        } else if try logAndCommit(changes, on: connection) {
            notifier.wakeAll()
        }
        return refused.map { index in
            let write = push.writes[index]
            var version = current[write.key] ?? SyncVersion(key: write.key, stamp: SyncStamp(time: 0, device: ""), deleted: true)
            version.id = version.id ?? write.id
            version.value = version.deleted ? nil : stored[write.key].map { Array(buffer: $0.value) }
            return version
        } + reasserted
    }

    /// Applies the winning writes, each deletion and each put; returns the puts refused because
    /// they would give a unique index's value to a second record (their writes are undone: each
    /// attempt runs under a savepoint, and the last put a clash names is left out of the next).
    private func applyWinners(
        _ push: SyncPush, _ winners: [Int], on connection: PostgresConnection, changes: inout ChangeSet
    ) throws(DatabaseError) -> [Int] {
        func applyAccepted(_ accepted: [Int], changes: inout ChangeSet) throws(DatabaseError) {
            let puts = accepted.compactMap { push.writes[$0].record }
            if !puts.isEmpty { _ = try apply(.put(push.records.selecting(puts), classes: []), on: connection, changes: &changes) }
            for index in accepted where push.writes[index].record == nil {
                let id = push.writes[index].id
                if try apply(.delete(StorageKey(id, maxKeySize: maxKeySize)), on: connection, changes: &changes) == 0 {
                    // A deletion of a record the store does not hold (deleted already, by an
                    // earlier version) still changes its stamp: the log names it, so that every
                    // device receives the later tombstone. (No class: no record was there.)
                    changes.append(.deleted(id: id, className: ""))
                }
            }
        }
        // A store with no unique index (the catalog, read under the writers' lock, cannot gain
        // one before the push commits: indexes are defined under the exclusive lock) refuses no
        // put for a clash: no savepoint is needed.
        guard catalogHasUniqueIndex else {
            try applyAccepted(winners, changes: &changes)
            return []
        }
        var clashing: [Int] = []
        for _ in 0...winners.count {
            let accepted = winners.filter { !clashing.contains($0) }
            _ = try run("SAVEPOINT locallmdb_push", on: connection, "synchronizing")
            var attempt = ChangeSet()
            do throws(DatabaseError) {
                try applyAccepted(accepted, changes: &attempt)
                _ = try run("RELEASE SAVEPOINT locallmdb_push", on: connection, "synchronizing")
                changes.append(contentsOf: attempt)
                return clashing
            } catch {
                guard case let .uniqueIndexViolation(_, _, ids) = error else { throw error }
                _ = try run("ROLLBACK TO SAVEPOINT locallmdb_push", on: connection, "synchronizing")
                guard let culprit = accepted.last(where: { push.writes[$0].record != nil && ids.contains(push.writes[$0].id) }) else {
                    throw error
                }
                clashing.append(culprit)
            }
        }
        throw .server(operation: "synchronizing", message: "a push's unique index clashes did not end")
    }

    /// For writes refused by a unique index (`applyWinners`): the server's version of each record
    /// (its current value, or a tombstone when it holds none) is stamped again, just after the
    /// refused write, by the server (device `""`), logged so that every device receives it, and
    /// the refused write kept in the conflict log. Returns the versions, for the pushing device.
    private func reassert(
        _ push: SyncPush, _ clashing: [Int], current: [[UInt8]: SyncVersion], on connection: PostgresConnection, changes: inout ChangeSet
    ) throws(DatabaseError) -> [SyncVersion] {
        guard !clashing.isEmpty else { return [] }
        var stored: [[UInt8]: (className: ByteBuffer, value: ByteBuffer)] = [:]
        for row in try run(
            PostgresQuery(
                unsafeSQL: "SELECT key, class_name, value FROM \(schema.records) WHERE key = ANY($1::bytea[])",
                binds: binds(clashing.map { ByteBuffer(bytes: push.writes[$0].key) })),
            on: connection, "synchronizing"
        ).rows {
            if let (key, className, value) = try? row.decode((ByteBuffer, ByteBuffer, ByteBuffer).self) { stored[Array(buffer: key)] = (className, value) }
        }
        var versions: [SyncVersion] = []
        var winning = current
        for index in clashing {
            let write = push.writes[index]
            let stamp = SyncStamp(time: write.time &+ 1, device: "")
            if let record = stored[write.key] {
                changes.append(.written(id: write.id, className: String(buffer: record.className)))
                versions.append(SyncVersion(key: write.key, id: write.id, stamp: stamp, deleted: false, value: Array(buffer: record.value)))
            } else {
                changes.append(.deleted(id: write.id, className: ""))
                versions.append(SyncVersion(key: write.key, id: write.id, stamp: stamp, deleted: true, value: nil))
            }
            winning[write.key] = versions[versions.count - 1]
        }
        try recordConflicts(push, superseded: [], refused: clashing, current: winning, stored: [:], on: connection)
        _ = try run(
            PostgresQuery(
                unsafeSQL: """
                    UPDATE \(syncSchema.sync) AS s SET stamp = v.stamp, device = '', deleted = v.deleted, id = v.id
                    FROM unnest($1::bytea[], $2::int8[], $3::bool[], $4::bytea[]) AS v(key, stamp, deleted, id) WHERE s.key = v.key
                    """,
                binds: binds(
                    versions.map { ByteBuffer(bytes: $0.key) }, versions.map { Int64(bitPattern: $0.stamp.time) }, versions.map(\.deleted),
                    versions.map { ByteBuffer(string: $0.id ?? "") })),
            on: connection, "synchronizing")
        return versions
    }

    /// Adds the losing versions of a push to the store's conflict log: the server versions
    /// `superseded` writes replaced without having seen them, and the `refused` writes.
    private func recordConflicts(
        _ push: SyncPush, superseded: [Int], refused: [Int], current: [[UInt8]: SyncVersion],
        stored: [[UInt8]: (className: ByteBuffer, value: ByteBuffer)], on connection: PostgresConnection
    ) throws(DatabaseError) {
        guard !superseded.isEmpty || !refused.isEmpty else { return }
        // Absent class names and values (a deletion's) go as empty byte strings, stored as null.
        var keys: [ByteBuffer] = [], ids: [ByteBuffer] = [], classNames: [ByteBuffer] = [], values: [ByteBuffer] = []
        var loserStamps: [Int64] = [], loserDevices: [String] = [], loserDeleted: [Bool] = []
        var winnerStamps: [Int64] = [], winnerDevices: [String] = [], winnerDeleted: [Bool] = []
        for index in superseded {
            let write = push.writes[index]
            guard let server = current[write.key] else { continue }
            keys.append(ByteBuffer(bytes: write.key))
            ids.append(ByteBuffer(string: write.id))
            classNames.append((server.deleted ? nil : stored[write.key]?.className) ?? ByteBuffer())
            values.append((server.deleted ? nil : stored[write.key]?.value) ?? ByteBuffer())
            loserStamps.append(Int64(bitPattern: server.stamp.time))
            loserDevices.append(server.stamp.device)
            loserDeleted.append(server.deleted)
            winnerStamps.append(Int64(bitPattern: write.time))
            winnerDevices.append(push.device)
            winnerDeleted.append(write.record == nil)
        }
        for index in refused {
            let write = push.writes[index]
            guard let server = current[write.key] else { continue }
            keys.append(ByteBuffer(bytes: write.key))
            ids.append(ByteBuffer(string: write.id))
            var className: ByteBuffer?
            var value: ByteBuffer?
            if let record = write.record {
                push.records.selecting([record]).forEachRecord { (_: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer, bytes: UnsafeRawBufferPointer, name: String, _: StorageKey) in
                    className = ByteBuffer(string: name)
                    value = ByteBuffer(bytes: bytes)
                }
            }
            classNames.append(className ?? ByteBuffer())
            values.append(value ?? ByteBuffer())
            loserStamps.append(Int64(bitPattern: write.time))
            loserDevices.append(push.device)
            loserDeleted.append(write.record == nil)
            winnerStamps.append(Int64(bitPattern: server.stamp.time))
            winnerDevices.append(server.stamp.device)
            winnerDeleted.append(server.deleted)
        }
        // Entries are numbered in the order their pushes commit (pushes run side by side): a
        // reader that saw an entry never misses an earlier-numbered one committed later.
        _ = try run(schema.conflictLogLock, on: connection, "synchronizing")
        _ = try run(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO \(syncSchema.conflicts) (key, id, class_name, value, loser_stamp, loser_device, loser_deleted,
                        winner_stamp, winner_device, winner_deleted)
                    SELECT k, i, nullif(c, ''::bytea), nullif(v, ''::bytea), ls, ld, lx, ws, wd, wx
                    FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::bytea[], $5::int8[], $6::text[], $7::bool[],
                        $8::int8[], $9::text[], $10::bool[]) AS t(k, i, c, v, ls, ld, lx, ws, wd, wx)
                    """,
                binds: binds(keys, ids, classNames, values, loserStamps, loserDevices, loserDeleted, winnerStamps, winnerDevices, winnerDeleted)),
            on: connection, "synchronizing")
    }

    /// The store's conflict log after number `after`, at most `limit` entries, in order.
    package nonisolated(nonsending) func serverConflicts(after: Int64, limit: Int) async throws(DatabaseError) -> [SyncConflictRecord] {
        try checkOpen()
        let connection = try await leased("reading the conflict log")
        let result: PostgresQueryResult
        do throws(DatabaseError) {
            result = try await connection.send(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT number, key, id, class_name, value, loser_stamp, loser_device, loser_deleted, winner_stamp, winner_device,
                            winner_deleted, (extract(epoch FROM found_at) * 1000)::int8
                        FROM \(syncSchema.conflicts) WHERE number > $1 ORDER BY number LIMIT $2
                        """,
                    binds: binds(after, Int64(max(0, limit)))),
                logger: logger, within: queryTimeout
            ).value("reading the conflict log")
        } catch {
            pool.release(connection, broken: connection.isClosed)
            throw error
        }
        pool.release(connection)
        var records: [SyncConflictRecord] = []
        for row in result.rows {
            guard let (number, key, id, className, value, loserStamp, loserDevice, loserDeleted, winnerStamp, winnerDevice, winnerDeleted, foundAt) =
                try? row.decode((Int64, ByteBuffer, ByteBuffer?, ByteBuffer?, ByteBuffer?, Int64, String, Bool, Int64, String, Bool, Int64).self)
            else {
                throw .server(operation: "reading the conflict log", message: "an entry cannot be read")
            }
            records.append(SyncConflictRecord(
                number: UInt64(number), id: id.map { String(buffer: $0) } ?? String(buffer: key), className: className.map { String(buffer: $0) } ?? "",
                loser: SyncStamp(time: UInt64(bitPattern: loserStamp), device: loserDevice),
                winner: SyncStamp(time: UInt64(bitPattern: winnerStamp), device: winnerDevice), loserDeleted: loserDeleted,
                winnerDeleted: winnerDeleted, foundAt: UInt64(max(0, foundAt)), value: value.map { Array(buffer: $0) } ?? []))
        }
        return records
    }
}
