import LocalLMDBJSON
import LocalLMDBLMDB
import Foundation

/// The record layout, over one environment:
///
/// - `records`: record key → `RecordValue` (class name, full id when hashed, JSON).
/// - `types`: `MDB_DUPSORT`, class-name key → record key, one duplicate per record.
/// - `meta`: `"format"` → the layout version; the change log's identity and size.
/// - `classes`: class-name key → class name, a zero byte, the class's mangled Swift name.
/// - `spellings`: `MDB_DUPSORT`, the key of a class name's canonical form → its `classes` key.
/// - `changes`: what each commit changed (`ChangeLog`), written by the commit itself.
/// - `indexes` and `entries`: secondary indexes' definitions and entries (`StoredIndex`).
///
/// Invariant: every write changes `records` and `types` in the same transaction, so each record
/// has exactly one index entry, under its stored class name, and each index entry has a record.
///
/// All methods are synchronous and run inside a transaction the caller provides.
@usableFromInline package struct RecordStore: Sendable {
    /// The layout written: 2 since records carry checksums (`RecordValue`). A database of
    /// layout 1 is read as it is and marked 2 when it is first opened for writing, as records
    /// of format 2 go into it from then on (and an earlier version of LocalLMDB, which cannot
    /// read them, then refuses it with `unsupportedFormat` rather than failing record by record).
    static let layoutVersion: UInt8 = 2
    /// The layout of a database with secondary indexes: an earlier version of LocalLMDB, which
    /// would write records without maintaining their entries, refuses it (`unsupportedFormat`).
    static let indexedLayoutVersion: UInt8 = 3
    /// The layout of a database with a counted index (`RangeCounts`): an earlier version,
    /// which would change its entries without their counts, refuses it (`unsupportedFormat`).
    static let countedLayoutVersion: UInt8 = 5
    /// The layout of a database that synchronizes (`RecordStore+Sync.swift`): an earlier
    /// version, which would write records without stamping them (writes no device would ever
    /// receive), refuses it (`unsupportedFormat`).
    static let syncLayoutVersion: UInt8 = 7
    /// The layouts read.
    static let readableLayouts: [[UInt8]] = [[1], [2], [3], [4], [5], [6], [7]]
    /// The newest layout this version writes (`syncLayoutVersion`).
    static let newestLayoutVersion: UInt8 = 7

    package let environment: Environment
    package let records: DatabaseHandle
    let types: DatabaseHandle
    let meta: DatabaseHandle
    let classes: DatabaseHandle
    /// Nil only for a database opened read-only that has no change log yet (made by an
    /// earlier version, and not opened for writing since).
    package let changeLog: ChangeLog?
    /// Secondary indexes' definitions and entries; nil only for a database opened read-only
    /// that has never been opened for writing by a version with indexes.
    let indexes: DatabaseHandle?
    let entries: DatabaseHandle?
    /// The entries of counted indexes, counted by runs of keys (`RangeCounts`).
    let counts: DatabaseHandle?
    /// Each class name's canonical form → its `classes` key (`ClassSpellings.swift`); nil for
    /// a database opened read-only, which records no class names.
    let spellings: DatabaseHandle?
    /// Two-way synchronization's rows, pending writes and conflicts (`RecordStore+Sync.swift`);
    /// nil for a database opened read-only that has never been opened for writing by a version
    /// that synchronizes.
    let syncRows: DatabaseHandle?
    let syncPending: DatabaseHandle?
    let syncConflicts: DatabaseHandle?
    package let indexCatalog = IndexCatalog()
    /// The migrations this process knows, for the check of every write (`MigrationState`).
    package let migrations = MigrationCatalog()
    /// The encryption of values at rest; nil for an unencrypted database.
    package let encryption: StoreEncryption?
    /// The environment's key limit, read once (an `Int`, where the environment is a reference
    /// every access would retain).
    let maxKeySize: Int
    /// Whether the database synchronizes, as this process last saw it: read at open, and set by
    /// every write transaction that finds a device recorded (so a process learns at its next
    /// write that another one turned synchronization on). Never cleared: a database synchronizes
    /// for its whole life.
    let synchronizesSeen: Locked<Bool>

    /// Opens the five databases, creating them and recording the layout version if new (unless
    /// `readOnly`: then they must exist).
    /// `encryption` is checked against the database's (`establish`).
    package init(
        environment: Environment, readOnly: Bool = false, changeLogLimits: ChangeLog.Limits, encryption: StoreEncryption? = nil
    ) throws(DatabaseError) {
        self.environment = environment
        self.encryption = encryption
        maxKeySize = environment.maxKeySize
        if readOnly {
            let handles = try environment.openExistingDatabases([
                ("records", false), ("types", true), ("meta", false), ("classes", false),
            ])
            let meta = handles[2]
            let (stored, logID, device) = try environment.withReadTransaction { transaction throws(DatabaseError) in
                try Self.establish(encryption, path: environment.directoryPath, meta: meta, records: handles[0], in: transaction, writable: false)
                return (
                    try Self.read(Array("format".utf8), meta, in: transaction), try Self.read(ChangeLog.logIDKey, meta, in: transaction),
                    try Self.read(Self.syncDeviceKey, meta, in: transaction))
            }
            synchronizesSeen = Locked(device != nil)
            guard let stored, Self.readableLayouts.contains(stored) else {
                throw DatabaseError.unsupportedFormat(found: Int(stored?.first ?? 0), supported: Int(Self.newestLayoutVersion))
            }
            (records, types, self.meta, classes) = (handles[0], handles[1], meta, handles[3])
            if let indexHandles = try? environment.openExistingDatabases([("indexes", false), ("entries", true)]) {
                (indexes, entries) = (indexHandles[0], indexHandles[1])
            } else {
                (indexes, entries) = (nil, nil)
            }
            counts = try? environment.openExistingDatabases([("counts", false)]).first
            spellings = nil
            if let syncHandles = try? environment.openExistingDatabases([("syncrows", false), ("syncpending", false), ("syncconflicts", false)]) {
                (syncRows, syncPending, syncConflicts) = (syncHandles[0], syncHandles[1], syncHandles[2])
            } else {
                (syncRows, syncPending, syncConflicts) = (nil, nil, nil)
            }
            if let logID, let changes = try? environment.openExistingDatabases([("changes", false)]).first {
                changeLog = ChangeLog(changes: changes, meta: meta, limits: changeLogLimits, logID: String(decoding: logID, as: UTF8.self))
            } else {
                changeLog = nil
            }
            return
        }
        let write = try environment.beginWrite()
        let transaction = write.transaction
        do throws(DatabaseError) {
            records = try environment.openDatabase("records", dupSort: false, in: transaction)
            types = try environment.openDatabase("types", dupSort: true, in: transaction)
            let meta = try environment.openDatabase("meta", dupSort: false, in: transaction)
            self.meta = meta
            synchronizesSeen = Locked(try Self.read(Self.syncDeviceKey, meta, in: transaction) != nil)
            classes = try environment.openDatabase("classes", dupSort: false, in: transaction)
            let changes = try environment.openDatabase("changes", dupSort: false, in: transaction)
            indexes = try environment.openDatabase("indexes", dupSort: false, in: transaction)
            entries = try environment.openDatabase("entries", dupSort: true, in: transaction)
            counts = try environment.openDatabase("counts", dupSort: false, in: transaction)
            spellings = try environment.openDatabase("spellings", dupSort: true, in: transaction)
            syncRows = try environment.openDatabase("syncrows", dupSort: false, in: transaction)
            syncPending = try environment.openDatabase("syncpending", dupSort: false, in: transaction)
            syncConflicts = try environment.openDatabase("syncconflicts", dupSort: false, in: transaction)
            let formatKey = Array("format".utf8)
            if let stored = try Self.read(formatKey, meta, in: transaction) {
                guard Self.readableLayouts.contains(stored) else {
                    throw DatabaseError.unsupportedFormat(found: Int(stored.first ?? 0), supported: Int(Self.newestLayoutVersion))
                }
                if stored == [1] { try Self.write([Self.layoutVersion], at: formatKey, meta, in: transaction) }
            } else {
                try Self.write([Self.layoutVersion], at: formatKey, meta, in: transaction)
            }
            // The change log's identity, made once (also for a database an earlier version made):
            // an open that finds everything in place writes nothing.
            let logID: String
            if let stored = try Self.read(ChangeLog.logIDKey, meta, in: transaction) {
                logID = String(decoding: stored, as: UTF8.self)
            } else {
                logID = UUID().uuidString
                try Self.write(Array(logID.utf8), at: ChangeLog.logIDKey, meta, in: transaction)
            }
            changeLog = ChangeLog(changes: changes, meta: meta, limits: changeLogLimits, logID: logID)
            try Self.establish(encryption, path: environment.directoryPath, meta: meta, records: records, in: transaction, writable: true)
        } catch {
            write.abort()
            throw error
        }
        try write.commit()
    }

    static func read(_ key: [UInt8], _ database: DatabaseHandle, in transaction: Transaction) throws(DatabaseError) -> [UInt8]? {
        try key.withBytes { key throws(DatabaseError) in try transaction.get(database, key).map { Array($0) } }
    }

    static func write(_ value: [UInt8], at key: [UInt8], _ database: DatabaseHandle, in transaction: Transaction) throws(DatabaseError) {
        try key.withBytes { key throws(DatabaseError) in
            try value.withBytes { value throws(DatabaseError) in _ = try transaction.put(database, key, value) }
        }
    }


    // MARK: Writing

    /// Applies one operation, adding what it changed to `changes` (for the change log).
    /// Returns the number of records written or deleted.
    /// - Throws: `readOnlyReplica` for an operation that changes records of a replica
    ///   (`ReplicaState`); `unknownMigration` / `migrationInProgress` for one that changes
    ///   records of a database with a migration this process does not know, or one under way
    ///   (`MigrationState`); as each operation throws.
    package func apply(_ operation: WriteOperation, in transaction: Transaction, changes: inout ChangeSet) throws(DatabaseError) -> Int {
        switch operation {
        case let .replicate(operations, expected, state):
            return try replicate(operations, expected: expected, state: state, in: transaction, changes: &changes)
        case let .detachReplica(source):
            return try detachReplica(source: source, in: transaction)
        case let .migrate(operations, expected, state):
            // A migration's writes are local writes: a synchronized database sends them.
            guard let device = try syncDevice(in: transaction) else {
                return try migrate(operations, expected: expected, state: state, in: transaction, changes: &changes)
            }
            let start = changes.entries.count
            let count = try migrate(operations, expected: expected, state: state, in: transaction, changes: &changes)
            let writes = Self.writes(in: changes.entries[start...])
            try stamp(writes, device: device, in: transaction)
            try setStatus(of: writes.filter { !$0.1 }.map(\.0), to: Self.notSynced, in: transaction, changes: &changes)
            return count
        case let .enableSync(device):
            return try enableSync(device: device, in: transaction, changes: &changes)
        case let .synchronize(run):
            return try synchronize(run, in: transaction, changes: &changes)
        default:
            if operation.changesRecords {
                try checkNotReplica(in: transaction)
                try checkMigrations(in: transaction)
                if let device = try syncDevice(in: transaction) {
                    return try applyStamping(operation, device: device, in: transaction, changes: &changes)
                }
            }
            return try applyUnchecked(operation, in: transaction, changes: &changes)
        }
    }

    /// `apply`, without the replica check. Without `checkingUniqueness`, unique indexes take a
    /// second record under one value (a replica's: its source decided what is stored).
    func applyUnchecked(
        _ operation: WriteOperation, in transaction: Transaction, changes: inout ChangeSet, checkingUniqueness: Bool = true
    ) throws(DatabaseError) -> Int {
        switch operation {
        case .replicate, .detachReplica, .migrate, .enableSync, .synchronize:
            return try apply(operation, in: transaction, changes: &changes)
        case let .put(records, classes):
            try checkSealingKeyListed(in: transaction, refused: records.firstID ?? "")
            try claim(classes, in: transaction)
            let indexes = try storedIndexes(in: transaction)
            // A record that changes class leaves its old class: observers of that class must
            // hear it, in its place among the batch's writes (see `ChangeSet.append(written:leaving:)`).
            var left: [(index: Int, className: String)] = []
            for index in Self.keyOrder(records) {
                try records.withRecord(at: index) { record throws(DatabaseError) in
                    if let previous = try put(
                        record, of: records.types[record.type], indexes: indexes, checkingUniqueness: checkingUniqueness, in: transaction) {
                        left.append((index, previous))
                    }
                }
            }
            changes.append(written: records, leaving: left)
            return records.count
        case let .delete(key):
            guard let className = try delete(key, indexes: try storedIndexes(in: transaction), in: transaction) else { return 0 }
            changes.append(.deleted(id: key.id, className: className))
            return 1
        case let .deleteReaching(key, following):
            return try deleteReaching(key, following: following, in: transaction, changes: &changes)
        case let .deleteTypes(typeKeys, names, owner):
            try checkOwner(owner, in: transaction)
            let indexes = try storedIndexes(in: transaction)
            for name in names {
                for index in indexes[name] ?? [] { try dropEntries(of: index, in: transaction) }
            }
            let deleted = try deleteAll(typeKeys: typeKeys, in: transaction)
            if deleted > 0 { for name in names { changes.append(.typeDeleted(className: name)) } }
            return deleted
        case .clear:
            let count = try transaction.entryCount(records)
            try transaction.empty(records)
            try transaction.empty(types)
            if let entries { try transaction.empty(entries) }
            // No entries left: counted indexes have no runs (`RangeCounts`).
            if let counts { try transaction.empty(counts) }
            if count > 0 { changes.append(.cleared) }
            return count
        case let .defineIndexes(className, definitions, progress):
            return try define(definitions, className: className, in: transaction, progress: progress)
        case let .dropIndex(className, name):
            return try dropIndex(className: className, name: name, in: transaction) ? 1 : 0
        case let .setMember(keys, classNames, member, json):
            let patched = try patched(keys, classNames: classNames, member: member, json: json, in: transaction)
            guard !patched.isEmpty else { return 0 }
            return try applyUnchecked(.put(patched, classes: []), in: transaction, changes: &changes)
        case let .reseal(after, limit, reached):
            // The documents are unchanged: nothing for the change log or the indexes.
            let (last, visited, resealed) = try reseal(after: after, limit: limit, in: transaction)
            reached.set(last, visited: visited)
            return resealed
        case .finishResealing:
            return try finishResealing(in: transaction)
        }
    }

    /// Writes the id of the transaction to `meta` (`"published"`): a change that touches no
    /// record, for a commit whose only purpose is to publish the one before it.
    package func markPublished(in transaction: Transaction) throws(DatabaseError) -> Bool {
        try Self.write(ChangeLog.uint64(UInt64(transaction.id)), at: Array("published".utf8), meta, in: transaction)
        return true
    }

    /// Records `changes` as the commit's entry in the change log (see `ChangeLog.append`).
    package func logChanges(_ changes: ChangeSet, in transaction: Transaction) throws(DatabaseError) -> UInt64? {
        try changeLog?.append(changes, in: transaction)
    }

    /// The order to put `records` in: about the order of their keys, so that the B-trees are
    /// walked from one page to the next rather than at random (a large batch of random ids
    /// went at a third of the speed). Records with the same key keep their order, so the
    /// last one written wins, as in the given order. Small batches keep the given order.
    static func keyOrder(_ records: RecordBatch) -> [Int] {
        guard records.count >= 64 else { return Array(records.indices) }
        // Sorted by the key's first 8 bytes (big-endian, so integers compare as the bytes do),
        // then by position: exact for the ids that differ there, stable for equal keys.
        var order = records.indices.map { index in
            (prefix: records.withRecord(at: index) { record in
                var prefix: UInt64 = 0
                for offset in 0..<8 { prefix = prefix << 8 | UInt64(offset < record.key.count ? record.key[offset] : 0) }
                return prefix
            }, index: index)
        }
        order.sort { $0.prefix != $1.prefix ? $0.prefix < $1.prefix : $0.index < $1.index }
        return order.map(\.index)
    }

    /// Puts `record` of the class `type`; returns the class name it was stored under before,
    /// when that was another.
    private func put(
        _ record: RecordBatch.Record, of type: RecordBatch.RecordClass, indexes: [String: [StoredIndex]], checkingUniqueness: Bool,
        in transaction: Transaction
    ) throws(DatabaseError) -> String? {
        let key = record.key
        var previousClass: String?
        let newIndexes = indexes.isEmpty ? [] : indexes[type.name] ?? []
        // A new record (the common case in a batch) goes in with one search of the tree: a put
        // that refuses to overwrite. Only when the id is taken is the stored record looked at:
        // its type index entry moves when its class changes, its secondary index entries are
        // replaced when their values change, then its value is replaced.
        if try !transaction.put(records, key, record.value, mode: .keepExisting) {
            // The old entries, read before the old value is overwritten.
            var oldEntries: [(index: StoredIndex, keys: [[UInt8]])] = []
            switch try storedTypeKey(key, in: transaction) {
            case let .some(previousType, previousName):
                if previousType != type.key {
                    try removeIndexEntry(type: previousType, record: key, in: transaction)
                    previousClass = previousName
                }
                if let old = indexes.isEmpty ? nil : indexes[previousName], !old.isEmpty, let value = try transaction.get(records, key) {
                    for index in old {
                        if let keys = entryKeys(ofValue: value, key: key, in: index) {
                            oldEntries.append((index, keys))
                        } else {
                            // A damaged old value: its entries are found by walking the index.
                            try removeAllEntries(record: key, of: [index], in: transaction)
                        }
                    }
                }
            case .unreadable:
                try removeAllIndexEntries(record: key, in: transaction)
                try removeAllEntries(record: key, of: indexes.values.flatMap { $0 }, in: transaction)
            case .none:
                break
            }
            try transaction.put(records, key, record.value)
            let object = newIndexes.isEmpty ? nil : indexedObject(record.value, key: key, verified: false)
            for index in newIndexes {
                var newEntries: [(key: [UInt8], isUnique: Bool)] = []
                if let object { newEntries = entries(of: object, in: index) }
                if let old = oldEntries.firstIndex(where: { $0.index == index }) {
                    // Unchanged values keep their entries.
                    if oldEntries[old].keys == newEntries.map(\.key) {
                        oldEntries.remove(at: old)
                        continue
                    }
                    try removeEntries(oldEntries[old].keys, of: index, record: key, in: transaction)
                    oldEntries.remove(at: old)
                }
                try addEntries(newEntries, of: index, record: key, checkingUniqueness: checkingUniqueness, in: transaction)
            }
            for (index, keys) in oldEntries { try removeEntries(keys, of: index, record: key, in: transaction) }
        } else if !newIndexes.isEmpty, let object = indexedObject(record.value, key: key, verified: false) {
            for index in newIndexes {
                try addEntries(entries(of: object, in: index), of: index, record: key, checkingUniqueness: checkingUniqueness, in: transaction)
            }
        }
        try type.key.withBytes { typeKey throws(DatabaseError) in
            try transaction.put(types, typeKey, key, mode: .keepExistingPair)
        }
        return previousClass
    }

    /// Deletes the record under `key`; returns its class name (empty when its header is
    /// unreadable), or nil when there was none.
    func delete(_ key: StorageKey, indexes: [String: [StoredIndex]], in transaction: Transaction) throws(DatabaseError) -> String? {
        try key.withBytes { key throws(DatabaseError) in
            let className: String
            switch try storedTypeKey(key, in: transaction) {
            case let .some(previousType, name):
                try removeIndexEntry(type: previousType, record: key, in: transaction)
                if let old = indexes.isEmpty ? nil : indexes[name], let value = try transaction.get(records, key) {
                    for index in old {
                        if let keys = entryKeys(ofValue: value, key: key, in: index) {
                            try removeEntries(keys, of: index, record: key, in: transaction)
                        } else {
                            try removeAllEntries(record: key, of: [index], in: transaction)
                        }
                    }
                }
                className = name
            case .unreadable:
                try removeAllIndexEntries(record: key, in: transaction)
                try removeAllEntries(record: key, of: indexes.values.flatMap { $0 }, in: transaction)
                className = ""
            case .none:
                return nil
            }
            return try transaction.delete(records, key) ? className : nil
        }
    }

    /// Deletes the record under `key` and every record its references reach among `following`
    /// (each once, so a cycle ends); returns how many were deleted. The references are read
    /// here, in the transaction: a record that a concurrent write stopped referring to is kept,
    /// and one it added a reference to is kept too (it is not in `following`). A record on the
    /// way that cannot be read (corrupt, or sealed under a key this store lacks) fails the
    /// operation, deleting nothing.
    private func deleteReaching(
        _ key: StorageKey, following: Set<ExactID>, in transaction: Transaction, changes: inout ChangeSet
    ) throws(DatabaseError) -> Int {
        let indexes = try storedIndexes(in: transaction)
        var waiting = [key]
        var seen: Set<ExactID> = [ExactID(key.id)]
        var deleted = 0
        while let next = waiting.popLast() {
            let id = next.id
            if let value = try value(next, in: transaction) {
                let record = try RecordDecoding.decode(value: value, id: id, encryption: encryption)
                for referenced in RecordReference.referencedIDs(in: record.object)
                where following.contains(ExactID(referenced)) && seen.insert(ExactID(referenced)).inserted {
                    waiting.append(StorageKey(referenced, maxKeySize: maxKeySize))
                }
            }
            guard let className = try delete(next, indexes: indexes, in: transaction) else { continue }
            changes.append(.deleted(id: id, className: className))
            deleted += 1
        }
        return deleted
    }

    private func deleteAll(typeKeys: [StorageKey], in transaction: Transaction) throws(DatabaseError) -> Int {
        var deleted = 0
        for typeKey in typeKeys {
            var recordKeys: [[UInt8]] = []
            try transaction.withCursor(types) { cursor throws(DatabaseError) in
                try typeKey.withBytes { typeBytes throws(DatabaseError) in
                    try cursor.forEachDuplicate(of: typeBytes) { recordKeys.append(Array($0)) }
                }
            }
            for recordKey in recordKeys {
                let removed = try recordKey.withBytes { key throws(DatabaseError) in
                    try transaction.delete(records, key)
                }
                if removed { deleted += 1 }
            }
            try typeKey.withBytes { typeBytes throws(DatabaseError) in
                _ = try transaction.delete(types, typeBytes)
            }
        }
        return deleted
    }

    /// What is known of the class of the record stored under a key.
    private enum StoredType {
        case none
        /// The class's index key and name.
        case some(StorageKey, String)
        /// A record is there, but its header is corrupt.
        case unreadable
    }

    private func storedTypeKey(_ key: UnsafeRawBufferPointer, in transaction: Transaction) throws(DatabaseError) -> StoredType {
        guard let existing = try transaction.get(records, key) else { return .none }
        guard let stored = try? RecordValue(parsing: existing) else { return .unreadable }
        let name = stored.classNameString
        return .some(StorageKey(name, maxKeySize: environment.maxKeySize), name)
    }

    /// Removes every index entry pointing at `record`, whatever its class: the fallback for a
    /// record whose header is corrupt. Walks the whole index, so only that rare path uses it.
    private func removeAllIndexEntries(record: UnsafeRawBufferPointer, in transaction: Transaction) throws(DatabaseError) {
        try transaction.withCursor(types) { cursor throws(DatabaseError) in
            var entry = try cursor.get(.first)
            while let current = entry {
                if current.value.elementsEqual(record) {
                    try cursor.deleteCurrent()
                }
                // After a delete, MDB_NEXT returns the pair that moved under the cursor.
                entry = try cursor.get(.next)
            }
        }
    }

    private func removeIndexEntry(type: StorageKey, record: UnsafeRawBufferPointer, in transaction: Transaction) throws(DatabaseError) {
        try type.withBytes { typeBytes throws(DatabaseError) in
            _ = try transaction.delete(types, typeBytes, value: record)
        }
    }
}
