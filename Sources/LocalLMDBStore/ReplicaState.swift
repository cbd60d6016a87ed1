import LocalLMDBLMDB

/// What makes a database a read replica: the source it follows (a server store's name, as the
/// pull replicator gives it) and the position in the source's change log its records reflect.
/// Stored in `meta` under `"replica"` as `source \0 position`: the position (a change log
/// position's text) holds no zero byte (`ReplicaState.init` refuses one), so the last zero byte
/// ends the source, which may hold any (a server store's name may).
///
/// Invariant (kept by `RecordStore.apply`): while a database holds a replica state, its records
/// change only through `.replicate`, which checks and advances the position in the same
/// transaction; every other write is refused with `readOnlyReplica`. So the records are always
/// the source's at the recorded position (or later, for records a run fetched after it: the
/// replicator applies each record's current value, never an older one), and no local write is
/// ever overwritten by the source without having been refused first.
@usableFromInline package struct ReplicaState: Sendable, Equatable {
    /// The source followed.
    package let source: String
    /// The source's change log position the records reflect (`LogPosition.description`).
    package let position: String

    static let metaKey = Array("replica".utf8)

    /// A state; nil when the position holds a zero byte (it could not be stored unambiguously).
    package init?(source: String, position: String) {
        guard !position.utf8.contains(0) else { return nil }
        self.source = source
        self.position = position
    }

    /// Parses a stored state; nil when it is not one.
    init?(parsing bytes: UnsafeRawBufferPointer) {
        guard let zero = bytes.lastIndex(of: 0) else { return nil }
        self.init(
            source: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<zero]), as: UTF8.self),
            position: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(zero + 1)...]), as: UTF8.self))
    }

    /// The stored form.
    var encoded: [UInt8] { Array(source.utf8) + [0] + Array(position.utf8) }
}

extension RecordStore {
    /// The replica state, if this database is a read replica.
    package func replicaState(in transaction: Transaction) throws(DatabaseError) -> ReplicaState? {
        try ReplicaState.metaKey.withBytes { key throws(DatabaseError) -> ReplicaState? in
            guard let bytes = try transaction.get(meta, key) else { return nil }
            guard let state = ReplicaState(parsing: bytes) else {
                throw .corruptRecord(id: "replica", reason: "the database's replica state cannot be read")
            }
            return state
        }
    }

    /// Refuses a write that would change records of a replica: only its replicator changes them.
    func checkNotReplica(in transaction: Transaction) throws(DatabaseError) {
        if let state = try replicaState(in: transaction) { throw .readOnlyReplica(source: state.source) }
    }

    /// Applies a run of the source's changes (`.replicate`): checks that the recorded state is
    /// `expected` (nil: the database is not a replica yet, and then it must hold no record, so
    /// that becoming a replica deletes nothing of its own), applies `operations`, and records
    /// `state`. Returns the records written or deleted.
    /// - Throws: `transactionFailed` when the recorded state is not `expected` (another
    ///   replicator, or another source); `unsupported` for a database with records of its own.
    func replicate(
        _ operations: [WriteOperation], expected: String?, state: ReplicaState, in transaction: Transaction, changes: inout ChangeSet
    ) throws(DatabaseError) -> Int {
        if let device = try syncDevice(in: transaction) {
            throw .unsupported(operation: "Replicating into a database that synchronizes", reason: "it synchronizes as device '\(device)'")
        }
        let recorded = try replicaState(in: transaction)
        if let recorded, recorded.source != state.source {
            throw .transactionFailed(reason: "the database is a replica of '\(recorded.source)', not of '\(state.source)'")
        }
        guard recorded?.position == expected else {
            throw .transactionFailed(
                reason: "the replica of '\(state.source)' is at \(recorded?.position ?? "its start"), not at \(expected ?? "its start"): another replicator of the same source ran")
        }
        if recorded == nil, try transaction.entryCount(records) > 0 {
            throw .unsupported(
                operation: "Making a database that holds records a replica",
                reason: "a replica holds only its source's records, so its own would be deleted; replicate into a new database")
        }
        var count = 0
        for operation in operations {
            assert(!operation.isReplication, "a run of replicated changes holds no replication")
            // A replica mirrors: its unique indexes do not refuse what its source stored (a source's
            // run may move a value from one record to another in an order a check would refuse).
            count += try applyUnchecked(operation, in: transaction, changes: &changes, checkingUniqueness: false)
        }
        try Self.write(state.encoded, at: ReplicaState.metaKey, meta, in: transaction)
        return count
    }

    /// Ends replication (`.detachReplica`): the database's records become its own, and writable.
    /// Returns 1 when it was a replica of `source`, 0 when it was no replica.
    /// - Throws: `transactionFailed` when it is a replica of another source.
    func detachReplica(source: String, in transaction: Transaction) throws(DatabaseError) -> Int {
        guard let recorded = try replicaState(in: transaction) else { return 0 }
        guard recorded.source == source else {
            throw .transactionFailed(reason: "the database is a replica of '\(recorded.source)', not of '\(source)'")
        }
        try ReplicaState.metaKey.withBytes { key throws(DatabaseError) in _ = try transaction.delete(meta, key) }
        return 1
    }
}

/// Records as a source engine stores them (each record's key and complete `RecordValue`), for
/// a replica: the replica checks and re-encodes each one before storing it.
package struct SourceRecords: Sendable {
    /// Each record's key and stored value, in no particular order.
    package var records: [(key: [UInt8], value: [UInt8])] = []
    /// Every class row of the source.
    package var classRows: [StoredClass] = []
    /// The source's position the records were read at; nil when they were read outside one
    /// snapshot of its log (the run's own position applies).
    package var position: LogPosition?

    package init() {}
}

extension SourceRecords {
    /// Calls `body` with the id, class name and document of each record, each one checked
    /// (its checksum and JSON) as an integrity check would: a source's bytes are not trusted.
    /// - Throws: `corruptRecord` naming the record when one is not a record.
    package func forEachRecord(
        _ body: (_ id: String, _ className: String, _ document: UnsafeRawBufferPointer) throws(DatabaseError) -> Void
    ) throws(DatabaseError) {
        for (key, value) in records {
            try key.withBytes { key throws(DatabaseError) in
                try value.withBytes { value throws(DatabaseError) in
                    let stored = try RecordDecoding.decode(key: key, value: value, validating: true, encryption: nil)
                    let id: String
                    do throws(RecordValueError) {
                        id = try RecordValue(parsing: value).id(key: key)
                    } catch {
                        throw .corruptRecord(id: RecordDecoding.displayID(key), reason: error.description)
                    }
                    try withExtendedLifetime(stored.object.owner) { () throws(DatabaseError) in
                        try body(id, stored.className, stored.object.extent)
                    }
                }
            }
        }
    }
}
