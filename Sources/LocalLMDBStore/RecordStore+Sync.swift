import LocalLMDBLMDB

/// The local side of two-way synchronization: each record's stamp (`syncrows`), the local writes
/// not yet sent in the order they were made (`syncpending`), and the local writes that lost to
/// later ones (`syncconflicts`). `meta` holds the device's name (`sync.device`: its presence
/// turns synchronization on), the server position reached (`sync.position`), the clock's last
/// time (`sync.clock`) and the last conflict's number (`sync.conflicts`).
///
/// Invariants, kept by `RecordStore.apply` on a synchronized database:
/// - every record written or deleted by a local write has a row stamped by that write, later
///   than every stamp the database issued or received before it, and pending;
/// - a row is pending exactly when `syncpending` holds the entry (its time, its key);
/// - a row's stamp only grows: a server version is applied only when its stamp is later than
///   the row's (so a write never comes back older, and a device's own write coming back
///   changes nothing), and a pending local write it replaces is recorded in the conflict log
///   in the same transaction.
extension RecordStore {
    static let syncDeviceKey = Array("sync.device".utf8)
    static let syncPositionKey = Array("sync.position".utf8)
    static let syncClockKey = Array("sync.clock".utf8)
    static let syncConflictKey = Array("sync.conflicts".utf8)

    /// The device this database synchronizes as; nil when it does not synchronize.
    package func syncDevice(in transaction: Transaction) throws(DatabaseError) -> String? {
        guard let device = try Self.read(Self.syncDeviceKey, meta, in: transaction) else { return nil }
        synchronizesSeen.withLock { $0 = true }
        return String(decoding: device, as: UTF8.self)
    }

    /// Whether this process has seen the database synchronize (at open, or in a transaction
    /// since): the writes it encodes then carry what their models know (`KnownMembers`). A
    /// process that opened the database before another turned synchronization on learns it at
    /// its next write; that one write stores whole documents.
    package var synchronizes: Bool { synchronizesSeen.withLock { $0 } }

    private func syncDatabases() throws(DatabaseError) -> (rows: DatabaseHandle, pending: DatabaseHandle, conflicts: DatabaseHandle) {
        guard let syncRows, let syncPending, let syncConflicts else {
            throw .unsupported(operation: "Synchronizing", reason: "the database was opened read-only")
        }
        return (syncRows, syncPending, syncConflicts)
    }

    /// Turns synchronization on as `device` (`.enableSync`): every record stored becomes a
    /// pending local write. Returns the records made pending (0 when it was on already).
    /// - Throws: `transactionFailed` when it synchronizes as another device; `unsupported` for an
    ///   encrypted database, a replica, or a device name that is empty, longer than 255 bytes or
    ///   holds a zero byte.
    func enableSync(device: String, in transaction: Transaction, changes: inout ChangeSet) throws(DatabaseError) -> Int {
        _ = try syncDatabases()
        try checkNotEncryptedForSync()
        if let recorded = try syncDevice(in: transaction) {
            guard recorded.utf8.elementsEqual(device.utf8) else {
                throw .transactionFailed(reason: "the database synchronizes as device '\(recorded)', not '\(device)'")
            }
            return 0
        }
        guard !device.isEmpty, device.utf8.count <= 255, !device.utf8.contains(0) else {
            throw .unsupported(operation: "Synchronizing as device '\(device)'", reason: "a device's name is 1 to 255 bytes, none of them zero")
        }
        if let state = try replicaState(in: transaction) {
            throw .unsupported(operation: "Synchronizing", reason: "the database is a read replica of '\(state.source)'")
        }
        try Self.write(Array(device.utf8), at: Self.syncDeviceKey, meta, in: transaction)
        // The next writes' models learn what they read (set early, should this transaction not
        // commit, the cost is that learning alone).
        synchronizesSeen.withLock { $0 = true }
        // Versions that do not stamp writes refuse the database from now on.
        let layout = try Self.read(Array("format".utf8), meta, in: transaction)?.first ?? 0
        if layout < Self.syncLayoutVersion { try Self.write([Self.syncLayoutVersion], at: Array("format".utf8), meta, in: transaction) }
        var ids: [String] = []
        try transaction.withCursor(records) { cursor throws(DatabaseError) in
            try cursor.forEach { key, value throws(DatabaseError) in
                guard let stored = try? RecordValue(parsing: value) else {
                    throw .corruptRecord(id: RecordDecoding.displayID(key), reason: "its header cannot be read")
                }
                ids.append(stored.id(key: key))
            }
        }
        try stamp(ids.map { ($0, false) }, device: device, in: transaction)
        try setStatus(of: ids, to: Self.notSynced, in: transaction, changes: &changes)
        return ids.count
    }

    /// Refuses to synchronize an encrypted database: its values would leave it in the clear (and
    /// received values would be stored unsealed).
    func checkNotEncryptedForSync() throws(DatabaseError) {
        if encryption != nil {
            throw .unsupported(operation: "Synchronizing", reason: "an encrypted database's values are not sent to a server")
        }
    }

    /// Applies `operation` (a local write that changes records) and stamps every record it
    /// wrote or deleted as a pending write of `device`. A model's records keep the members of
    /// the documents they replace that the model does not know (`keepingUnknownMembers`).
    func applyStamping(
        _ operation: WriteOperation, device: String, in transaction: Transaction, changes: inout ChangeSet
    ) throws(DatabaseError) -> Int {
        // Whole classes and the whole database are deleted by key ranges: their ids are read first.
        var deletedFirst: [String] = []
        switch operation {
        case let .deleteTypes(typeKeys, _, _):
            deletedFirst = try storedIDs(typeKeys: typeKeys, in: transaction)
        case .clear:
            deletedFirst = try storedIDs(typeKeys: nil, in: transaction)
        default:
            break
        }
        var operation = operation
        if case let .put(records, classes) = operation, let merged = try keepingUnknownMembers(records, in: transaction) {
            operation = .put(merged, classes: classes)
        }
        let start = changes.entries.count
        let count = try applyUnchecked(operation, in: transaction, changes: &changes)
        var writes = deletedFirst.map { ($0, true) }
        writes += Self.writes(in: changes.entries[start...])
        try stamp(writes, device: device, in: transaction)
        try setStatus(of: writes.filter { !$0.1 }.map(\.0), to: Self.notSynced, in: transaction, changes: &changes)
        return count
    }

    /// Whether the record under `key` holds a `Syncable` status (an integer from 0 to 3, the
    /// raw values of `SyncStatus`) other than `status`: a model's own member of that name
    /// holding anything else is left alone.
    private func holdsSyncStatus(_ key: StorageKey, other status: Int, in transaction: Transaction) throws(DatabaseError) -> Bool {
        try key.withBytes { keyBytes throws(DatabaseError) -> Bool in
            guard let value = try transaction.get(records, keyBytes), let object = indexedObject(value, key: keyBytes, verified: false),
                  let member = object.member(named: "syncStatus", from: nil),
                  let (stored, _) = Int.read(object.scanner, at: member.value)
            else { return false }
            return (0...3).contains(stored) && stored != status
        }
    }

    /// `SyncStatus` raw values the synchronizer keeps in `Syncable` records' `syncStatus`.
    static let notSynced = 1
    static let synced = 3

    /// The class names whose records carry a `Syncable` status: those with its index (one
    /// field, `syncStatus`).
    func statusClasses(in transaction: Transaction) throws(DatabaseError) -> [String] {
        try storedIndexes(in: transaction).compactMap { name, indexes in
            indexes.contains { $0.definition.fields.map(\.path) == [["syncStatus"]] && !$0.definition.isUnique } ? name : nil
        }
    }

    /// Sets the stored `syncStatus` of the records `ids` that are of a class with the status's
    /// index to `status`, in their bytes (the model is not decoded), unless it is that already.
    func setStatus(of ids: [String], to status: Int, in transaction: Transaction, changes: inout ChangeSet) throws(DatabaseError) {
        guard !ids.isEmpty else { return }
        let classes = try statusClasses(in: transaction)
        guard !classes.isEmpty else { return }
        var seen = Set<ExactID>()
        var keys: [StorageKey] = []
        for id in ids where seen.insert(ExactID(id)).inserted {
            let key = StorageKey(id, maxKeySize: maxKeySize)
            if try holdsSyncStatus(key, other: status, in: transaction) { keys.append(key) }
        }
        guard !keys.isEmpty else { return }
        let batch = try patched(keys, classNames: classes, member: "syncStatus", json: Array(String(status).utf8), in: transaction)
        guard !batch.isEmpty else { return }
        _ = try applyUnchecked(.put(batch, classes: []), in: transaction, changes: &changes)
    }

    /// The ids written (false) and deleted (true) by change-set entries, in order.
    static func writes(in entries: ArraySlice<ChangeSet.Entry>) -> [(String, Bool)] {
        var writes: [(String, Bool)] = []
        for entry in entries {
            switch entry {
            case let .written(records):
                for index in records.indices {
                    records.withRecord(at: index) { writes.append((String(decoding: $0.id, as: UTF8.self), false)) }
                }
            case let .change(.written(id, _)):
                writes.append((id, false))
            case let .change(.deleted(id, _)):
                writes.append((id, true))
            case .change(.typeDeleted), .change(.cleared):
                // Their ids were read before the deletion (`applyStamping`).
                break
            }
        }
        return writes
    }

    /// The ids of the records under `typeKeys` (every record when nil).
    private func storedIDs(typeKeys: [StorageKey]?, in transaction: Transaction) throws(DatabaseError) -> [String] {
        var ids: [String] = []
        func add(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws(DatabaseError) {
            if let stored = try? RecordValue(parsing: value) {
                ids.append(stored.id(key: key))
            } else if key.first != StorageKey.hashMarker {
                // A damaged record (deleting it is the cure): its key is its id.
                ids.append(String(decoding: key, as: UTF8.self))
            }
            // A damaged record under a digest key has no id to stamp a tombstone under.
        }
        guard let typeKeys else {
            try transaction.withCursor(records) { cursor throws(DatabaseError) in try cursor.forEach(add) }
            return ids
        }
        for typeKey in typeKeys {
            var keys: [[UInt8]] = []
            try transaction.withCursor(types) { cursor throws(DatabaseError) in
                try typeKey.withBytes { bytes throws(DatabaseError) in try cursor.forEachDuplicate(of: bytes) { keys.append(Array($0)) } }
            }
            for key in keys {
                try key.withBytes { key throws(DatabaseError) in
                    if let value = try transaction.get(records, key) { try add(key, value) }
                }
            }
        }
        return ids
    }

    /// Stamps `writes` (ids, and whether each was deleted) as one pending local write of `device`.
    func stamp(_ writes: [(id: String, deleted: Bool)], device: String, in transaction: Transaction) throws(DatabaseError) {
        guard !writes.isEmpty else { return }
        let sync = try syncDatabases()
        let time = SyncClock.next(after: try clock(in: transaction))
        try Self.write(ChangeLog.uint64(time), at: Self.syncClockKey, meta, in: transaction)
        for (id, deleted) in writes {
            let key = StorageKey(id, maxKeySize: maxKeySize).bytes
            let old = try syncRow(key: key, in: transaction)
            if let old, old.pending { try deletePending(time: old.stamp.time, key: key, in: transaction) }
            let base = old.map { $0.pending ? $0.base : $0.stamp } ?? SyncStamp(time: 0, device: "")
            try write(SyncRow(stamp: SyncStamp(time: time, device: device), base: base, deleted: deleted, pending: true, id: id), key: key, in: transaction)
            try Self.write([], at: SyncRow.pendingKey(time: time, key: key), sync.pending, in: transaction)
        }
    }

    private func clock(in transaction: Transaction) throws(DatabaseError) -> UInt64 {
        try Self.read(Self.syncClockKey, meta, in: transaction).map { $0.withUnsafeBytes { ChangeLog.sequence($0) } } ?? 0
    }

    /// The row of the record under `key`.
    func syncRow(key: [UInt8], in transaction: Transaction) throws(DatabaseError) -> SyncRow? {
        let sync = try syncDatabases()
        return try key.withBytes { bytes throws(DatabaseError) -> SyncRow? in
            guard let raw = try transaction.get(sync.rows, bytes) else { return nil }
            guard let row = SyncRow(parsing: raw) else {
                throw .corruptRecord(id: RecordDecoding.displayID(bytes), reason: "its synchronization row cannot be read")
            }
            return row
        }
    }

    private func write(_ row: SyncRow, key: [UInt8], in transaction: Transaction) throws(DatabaseError) {
        guard let encoded = row.encoded else {
            throw .unsupported(operation: "Synchronizing as device '\(row.stamp.device.prefix(64))…'", reason: "a device's name is at most 255 bytes")
        }
        try Self.write(encoded, at: key, try syncDatabases().rows, in: transaction)
    }

    private func deletePending(time: UInt64, key: [UInt8], in transaction: Transaction) throws(DatabaseError) {
        let pending = try syncDatabases().pending
        let removed = try SyncRow.pendingKey(time: time, key: key).withBytes { bytes throws(DatabaseError) in
            try transaction.delete(pending, bytes)
        }
        assert(removed, "a pending row had no entry in syncpending")
    }

    /// Applies a run of the server's versions and acknowledgements (`.synchronize`; see `SyncRun`).
    /// Returns the records written or deleted.
    /// - Throws: `transactionFailed` when the database does not synchronize as `run.device`, or
    ///   its recorded position is not `run.expected` (another synchronizer ran);
    ///   `migrationInProgress` while a local migration is under way.
    func synchronize(_ run: SyncRun, in transaction: Transaction, changes: inout ChangeSet) throws(DatabaseError) -> Int {
        _ = try syncDatabases()
        guard let device = try syncDevice(in: transaction) else {
            throw .transactionFailed(reason: "the database does not synchronize")
        }
        guard device.utf8.elementsEqual(run.device.utf8) else {
            throw .transactionFailed(reason: "the database synchronizes as device '\(device)', not '\(run.device)'")
        }
        try checkNotEncryptedForSync()
        try checkMigrations(in: transaction)
        if let position = run.position {
            let recorded = try Self.read(Self.syncPositionKey, meta, in: transaction).map { String(decoding: $0, as: UTF8.self) }
            guard recorded == run.expected else {
                throw .transactionFailed(
                    reason: "the database has synchronized to \(recorded ?? "nothing"), not to \(run.expected ?? "nothing"): another synchronizer ran")
            }
            try Self.write(Array(position.utf8), at: Self.syncPositionKey, meta, in: transaction)
        }
        try claim(run.classes, in: transaction)
        var clock = try clock(in: transaction)
        let indexes = try storedIndexes(in: transaction)
        var puts: [Int] = []
        var count = 0
        for change in run.changes {
            clock = max(clock, change.stamp.time)
            let old = try syncRow(key: change.key, in: transaction)
            if let old, old.stamp >= change.stamp { continue }
            var resolved = change.id ?? old?.id
            if resolved == nil { resolved = try storedID(key: change.key, in: transaction) }
            guard let id = resolved else {
                // A deletion of a record this database never held, under a digest key: nothing
                // to delete, and no local write of it to keep from coming back.
                continue
            }
            let key = StorageKey(id, maxKeySize: maxKeySize)
            assert(key.bytes == change.key, "a change's id is not its key's")
            if let old, old.pending {
                try recordConflict(key: change.key, loser: old, winner: change.stamp, winnerDeleted: change.record == nil, in: transaction)
                try deletePending(time: old.stamp.time, key: change.key, in: transaction)
            }
            try write(
                SyncRow(stamp: change.stamp, base: change.stamp, deleted: change.record == nil, pending: false, id: id),
                key: change.key, in: transaction)
            if let record = change.record {
                puts.append(record)
            } else if let className = try delete(key, indexes: indexes, in: transaction) {
                changes.append(.deleted(id: id, className: className))
                count += 1
            }
        }
        var synced: [String] = []
        if !puts.isEmpty {
            // The server decided what is stored: its unique indexes are not checked again here.
            let received = run.records.selecting(puts)
            count += try applyUnchecked(.put(received, classes: []), in: transaction, changes: &changes, checkingUniqueness: false)
            received.forEachRecord { (_: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer, _: String, _: StorageKey) in
                synced.append(String(decoding: id, as: UTF8.self))
            }
        }
        try Self.write(ChangeLog.uint64(clock), at: Self.syncClockKey, meta, in: transaction)
        for acknowledged in run.acknowledged {
            let key = StorageKey(acknowledged.id, maxKeySize: maxKeySize).bytes
            guard var row = try syncRow(key: key, in: transaction), row.pending, row.stamp.time == acknowledged.time, row.stamp.device.utf8.elementsEqual(device.utf8)
            else { continue }
            try deletePending(time: row.stamp.time, key: key, in: transaction)
            row.pending = false
            row.base = row.stamp
            try write(row, key: key, in: transaction)
            if !row.deleted { synced.append(row.id) }
        }
        // Received records and acknowledged writes are synced: their statuses set in one pass.
        try setStatus(of: synced, to: Self.synced, in: transaction, changes: &changes)
        return count
    }

    /// The id of the record under `key`: the key itself when it is not a digest, else the id
    /// its stored record holds; nil when neither is known.
    private func storedID(key: [UInt8], in transaction: Transaction) throws(DatabaseError) -> String? {
        if key.first != StorageKey.hashMarker { return String(decoding: key, as: UTF8.self) }
        return try key.withBytes { bytes throws(DatabaseError) -> String? in
            guard let stored = try transaction.get(records, bytes), let value = try? RecordValue(parsing: stored) else { return nil }
            return value.id(key: bytes)
        }
    }

    /// Keeps the pending local write `loser` (the record under `key` as stored now) in the
    /// conflict log, as replaced by `winner`.
    private func recordConflict(
        key: [UInt8], loser: SyncRow, winner: SyncStamp, winnerDeleted: Bool, in transaction: Transaction
    ) throws(DatabaseError) {
        let conflicts = try syncDatabases().conflicts
        var value: [UInt8] = []
        var className = ""
        if !loser.deleted {
            try key.withBytes { bytes throws(DatabaseError) in
                if let stored = try transaction.get(records, bytes) {
                    value = Array(stored)
                    className = Self.className(ofValue: value) ?? ""
                }
            }
        }
        let number = (try Self.read(Self.syncConflictKey, meta, in: transaction).map { $0.withUnsafeBytes { ChangeLog.sequence($0) } } ?? 0) + 1
        let record = SyncConflictRecord(
            number: number, id: loser.id, className: className, loser: loser.stamp, winner: winner, loserDeleted: loser.deleted,
            winnerDeleted: winnerDeleted, foundAt: SyncClock.milliseconds(of: SyncClock.wallTime()), value: value)
        try Self.write(record.encoded, at: ChangeLog.uint64(number), conflicts, in: transaction)
        try Self.write(ChangeLog.uint64(number), at: Self.syncConflictKey, meta, in: transaction)
    }

    /// The class name a stored value's header holds; nil when the header cannot be read.
    static func className(ofValue value: [UInt8]) -> String? {
        value.withUnsafeBytes { raw -> String? in
            guard let parsed = try? RecordValue(parsing: raw) else { return nil }
            return parsed.classNameString
        }
    }

    // MARK: Reading

    /// The device, the position reached, the last conflict's number, and the first `limit`
    /// pending local writes in the order they were made, with their stored values.
    package func syncPending(limit: Int, in transaction: Transaction) throws(DatabaseError) -> SyncPending {
        var pending = SyncPending()
        pending.device = try syncDevice(in: transaction)
        guard pending.device != nil, let syncPending, syncRows != nil else { return pending }
        try checkNotEncryptedForSync()
        pending.position = try Self.read(Self.syncPositionKey, meta, in: transaction).map { String(decoding: $0, as: UTF8.self) }
        pending.lastConflict = try Self.read(Self.syncConflictKey, meta, in: transaction).map { $0.withUnsafeBytes { ChangeLog.sequence($0) } } ?? 0
        pending.total = try transaction.entryCount(syncPending)
        var keys: [[UInt8]] = []
        try transaction.withCursor(syncPending) { cursor throws(DatabaseError) in
            var entry = try cursor.get(.first)
            while let current = entry, keys.count < limit {
                guard current.key.count > 8 else { throw .corruptRecord(id: "syncpending", reason: "an entry is too short") }
                keys.append(Array(UnsafeRawBufferPointer(rebasing: current.key[8...])))
                entry = try cursor.get(.next)
            }
        }
        let statusClasses = try statusClasses(in: transaction)
        for key in keys {
            guard let row = try syncRow(key: key, in: transaction), row.pending else {
                throw .corruptRecord(id: key.withBytes { RecordDecoding.displayID($0) }, reason: "a pending write has no pending synchronization row")
            }
            var value: [UInt8]?
            var className: String?
            if !row.deleted {
                guard let stored = try Self.read(key, records, in: transaction) else {
                    throw .corruptRecord(id: row.id, reason: "a pending write of the record has no record")
                }
                value = stored
                className = Self.className(ofValue: stored)
                if let name = className, statusClasses.contains(name) {
                    // The server's copy is synced: that is what it holds once received.
                    var patched = RecordBatch()
                    try stored.withBytes { bytes throws(DatabaseError) in
                        try Self.patch(
                            bytes, key: StorageKey(row.id, maxKeySize: maxKeySize), classNames: [name], member: "syncStatus",
                            json: Array(String(Self.synced).utf8), encryption: encryption, into: &patched, maxKeySize: maxKeySize)
                    }
                    patched.forEachRecord { (_: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer, bytes: UnsafeRawBufferPointer, _: String, _: StorageKey) in
                        value = Array(bytes)
                    }
                }
            }
            pending.writes.append(SyncPending.Write(id: row.id, stamp: row.stamp, base: row.base, className: className, value: value))
        }
        return pending
    }

    /// The conflicts recorded after number `after`, at most `limit` of them, in order.
    package func syncConflicts(after: UInt64, limit: Int, in transaction: Transaction) throws(DatabaseError) -> [SyncConflictRecord] {
        guard let syncConflicts else { return [] }
        var found: [SyncConflictRecord] = []
        try transaction.withCursor(syncConflicts) { cursor throws(DatabaseError) in
            var entry = try ChangeLog.uint64(after &+ 1).withBytes { bytes throws(DatabaseError) in try cursor.get(.keyAtLeast, key: bytes) }
            if after == .max { entry = nil }
            while let current = entry, found.count < limit {
                let number = ChangeLog.sequence(current.key)
                guard let record = SyncConflictRecord(number: number, parsing: current.value) else {
                    throw .corruptRecord(id: "conflict \(number)", reason: "the conflict log's entry cannot be read")
                }
                found.append(record)
                entry = try cursor.get(.next)
            }
        }
        return found
    }

    /// The synchronization row of the record `id`; nil when it has none (or the database does not synchronize).
    package func syncRow(id: String, in transaction: Transaction) throws(DatabaseError) -> SyncRow? {
        guard syncRows != nil else { return nil }
        return try syncRow(key: StorageKey(id, maxKeySize: maxKeySize).bytes, in: transaction)
    }
}
