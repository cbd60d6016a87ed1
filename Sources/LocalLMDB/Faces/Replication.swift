import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// What a replicator copies out of a database: records as stored (ready to put into another
/// engine's store, the same bytes), the class rows of their classes, and the ids asked for that
/// hold no record.
package struct ReplicatedRecords: Sendable {
    /// The records, as puts of at most 10,000 records or about 16 MB each (a server takes one
    /// statement's parameters whole).
    package var parts: [RecordBatch] = []
    /// The number of records in `parts`.
    package var count: Int { parts.reduce(0) { $0 + $1.count } }
    /// The rows of the class names the records are stored under.
    package var classRows: [StoredClass] = []
    /// The ids asked for that hold no record (deleted since), each once.
    package var absent: [String] = []
}

/// Records encoded for another engine's store (or a replica), in parts of at most 10,000 records
/// or about 16 MB each: a server takes one statement's parameters whole.
struct ReplicatedParts {
    private(set) var parts: [RecordBatch] = []
    private var part = RecordBatch()
    private var header: [UInt8] = []
    let maxKeySize: Int
    let encryption: StoreEncryption?
    /// Whether parts end at 10,000 records or about 16 MB (false: one part).
    let splitting: Bool

    init(maxKeySize: Int, encryption: StoreEncryption?, splitting: Bool = true) {
        self.maxKeySize = maxKeySize
        self.encryption = encryption
        self.splitting = splitting
    }

    /// Encodes the record `id` (`document`, stored as `className`) into the current part.
    mutating func append(id: String, className: String, document: UnsafeRawBufferPointer) throws(DatabaseError) {
        if splitting, part.count >= 10_000 || part.valueBytes >= 16 << 20 {
            parts.append(part)
            part = RecordBatch()
        }
        try RecordEncoding.encode(
            id: id, className: className, document: document, into: &part, header: &header, maxKeySize: maxKeySize, encryption: encryption)
    }

    /// Every part, the last one included.
    consuming func finished() -> [RecordBatch] {
        if !part.isEmpty { parts.append(part) }
        return parts
    }
}

/// The read behind `replicatedRecords`: the records `ids` (every record when nil), re-encoded
/// from their documents as they are.
struct ReadReplicatedRecords: PlainRead {
    let ids: [String]?
    let maxKeySize: Int

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> ReplicatedRecords {
        var records = ReplicatedRecords()
        var parts = ReplicatedParts(maxKeySize: maxKeySize, encryption: nil)
        var classNames = Set<String>()
        func add(id: String, className: String, document: UnsafeRawBufferPointer) throws(DatabaseError) {
            try parts.append(id: id, className: className, document: document)
            classNames.insert(className)
        }
        if let ids {
            // Each id once, by its bytes: canonically equivalent ids are two records.
            var asked = Set<ExactID>()
            for id in ids where asked.insert(ExactID(id)).inserted {
                guard !id.isEmpty, let record = try snapshot.record(StorageKey(id, maxKeySize: maxKeySize), id: id) else {
                    records.absent.append(id)
                    continue
                }
                try add(id: id, className: record.className, document: record.object.bytes)
            }
        } else {
            try snapshot.forEachDocument(ofClasses: nil) { id, className, document throws(DatabaseError) in
                try add(id: id, className: className, document: document)
            }
        }
        records.parts = parts.finished()
        for name in classNames.sorted() {
            if let row = try snapshot.classes.row(named: name) { records.classRows.append(row) }
        }
        return records
    }
}

extension LocalDatabase {
    /// For replicators: the records `ids` as stored (every record when nil), and the change
    /// log's position they were read at, from one snapshot of the committed state.
    /// - Throws: `unsupported` for an encrypted database (its records would leave it in the
    ///   clear), and as reads do.
    package nonisolated(nonsending) func replicatedRecords(ids: [String]?) async throws(DatabaseError) -> (ReplicatedRecords, LogPosition) {
        guard engine.encryption == nil else {
            throw .unsupported(operation: "Replicating an encrypted database", reason: "its records would be sent in the clear")
        }
        return try await engine.readWithToken(ReadReplicatedRecords(ids: ids, maxKeySize: engine.maxKeySize))
    }

    /// For replicators: the commits after `position` (at most `limit`), in order.
    package nonisolated(nonsending) func changeFeed(since position: LogPosition, limit: Int) async throws(DatabaseError) -> LoggedCommits {
        try await engine.changeFeed(since: position, limit: limit)
    }

    /// For replicators: the database's change log id and last position.
    package nonisolated func changePosition() throws(DatabaseError) -> LogPosition {
        try engine.changeToken()
    }

    /// For replicators: where this database's commits are announced.
    package nonisolated var changeNotifier: ChangeNotifier { engine.notifier }

    /// The maximum key size of this database's engine.
    package nonisolated var storageKeySize: Int { engine.maxKeySize }
}

/// The read behind `replicaState()`.
struct ReadReplicaState: PlainRead {
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> ReplicaState? {
        try snapshot.replicaState()
    }
}

extension LocalDatabase {
    /// For pull replicators: what this database follows, when it is a read replica, as of the
    /// last commit: one a replicator killed mid-commit left unpublished is published first, so
    /// the position read is the one the next run's write transaction checks (else the next
    /// replicator would take it for another one's and stop).
    package nonisolated(nonsending) func replicaState() async throws(DatabaseError) -> ReplicaState? {
        try await engine.publishCommits()
        return try await engine.read(ReadReplicaState())
    }

    /// For pull replicators: a source's records as puts into this database, in parts of at most
    /// 10,000 records or about 16 MB, each record checked and encoded afresh for this database
    /// (its key size; sealed when it is encrypted); and the ids found.
    /// - Throws: `corruptRecord` for a source record that is not one.
    package nonisolated func replicaParts(_ source: SourceRecords) throws(DatabaseError) -> (parts: [RecordBatch], ids: Set<ExactID>) {
        var parts = ReplicatedParts(maxKeySize: engine.maxKeySize, encryption: engine.encryption)
        var ids = Set<ExactID>()
        try source.forEachRecord { id, className, document throws(DatabaseError) in
            try parts.append(id: id, className: className, document: document)
            ids.insert(ExactID(id))
        }
        return (parts.finished(), ids)
    }

    /// For pull replicators: applies `operations` (a run of the source's changes) in one write
    /// transaction that records `state`, provided the recorded state's position is `expected`
    /// (`WriteOperation.replicate`).
    package nonisolated(nonsending) func applyReplicated(
        _ operations: [WriteOperation], expected: String?, state: ReplicaState
    ) async throws(DatabaseError) {
        _ = try await engine.perform(.replicate(operations, expected: expected, state: state))
    }

    /// For pull replicators: ends this database's replication of `source`. Returns whether it
    /// was a replica.
    package nonisolated(nonsending) func detachReplica(source: String) async throws(DatabaseError) -> Bool {
        try await engine.perform(.detachReplica(source: source)) > 0
    }
}
