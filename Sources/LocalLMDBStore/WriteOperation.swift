import LocalLMDBLMDB
import LocalLMDBJSON

/// Told of an index build's progress, on the writer thread: the class name, the index's name,
/// the records indexed so far and the records to index.
package typealias IndexBuildListener = @Sendable (_ className: String, _ index: String, _ indexed: Int, _ total: Int) -> Void

/// One change to the store. Every operation keeps `records` and `types` in agreement.
package enum WriteOperation: Sendable {
    /// Insert or replace records, in order, after claiming the stored classes they use
    /// (`RecordStore.claim`).
    case put(RecordBatch, classes: [StoredClass])
    /// Delete the record under a key.
    case delete(StorageKey)
    /// Delete the record under a key and every record its references reach, transitively,
    /// among `following`: an id is followed when a stored document on the way names it
    /// (`RecordReference`, read in the transaction) and it is one of `following` (the ids a
    /// typed read found to be references).
    case deleteReaching(StorageKey, following: Set<ExactID>)
    /// Delete every record stored under any of these type keys (of the class names `names`),
    /// the first of which is `owner`'s name: refused when another type owns that name
    /// (`RecordStore.checkOwner`).
    case deleteTypes([StorageKey], names: [String], owner: StoredClass)
    /// Delete every record.
    case clear
    /// Store these indexes of the class name, each one not stored yet, and build them from the
    /// records stored under it (`RecordStore.define`), telling `progress` as it goes.
    case defineIndexes(className: String, [IndexDefinition], progress: IndexBuildListener? = nil)
    /// Remove the index of the class name with this name, and its entries.
    case dropIndex(className: String, name: String)
    /// Set the top-level member `member` of each record under `keys` stored as one of
    /// `classNames` to the JSON value `json`, in the stored bytes (the model is not decoded:
    /// fields its code does not know are kept). Records of other classes are left alone.
    case setMember(keys: [StorageKey], classNames: [String], member: String, json: [UInt8])
    /// Seal afresh, under the sealing key, the values of up to `limit` records after the key
    /// `after` (from the first when nil), in key order; `reached` is told the last key visited
    /// (nil when none was left). Needs an encrypted store.
    case reseal(after: [UInt8]?, limit: Int, reached: ResealMark)
    /// End re-encryption when every value is sealed under the sealing key
    /// (`RecordStore.finishResealing`): gives how many are not.
    case finishResealing
    /// Apply a run of a replica's source's changes (`operations`, none of them a replication)
    /// and record the replica's new `state`, provided the recorded state's position is
    /// `expected` (nil: the database is no replica yet, and holds no record): see
    /// `ReplicaState`. The only write that changes a replica's records.
    case replicate([WriteOperation], expected: String?, state: ReplicaState)
    /// Stop being a replica of `source`: the records become the database's own.
    case detachReplica(source: String)
    /// Apply a batch of a migration's writes (`operations`: puts and deletes) and record the
    /// database's new migration `state`, provided the recorded state is `expected`: see
    /// `MigrationState`. The only write that changes records while a migration is under way.
    case migrate([WriteOperation], expected: MigrationState, state: MigrationState)
    /// Turn two-way synchronization on as `device`: from then on, every local write is stamped
    /// and pending until a synchronizer sends it (`RecordStore+Sync.swift`).
    case enableSync(device: String)
    /// Apply a run of a synchronized server's versions and acknowledgements (`SyncRun`): the
    /// only write that brings other devices' changes into a synchronized database.
    case synchronize(SyncRun)
}

/// Where a `reseal` operation stopped: the last record key it visited, nil when it found none.
/// Set by the writer thread in the transaction (again, if the transaction is retried); read
/// once the operation has committed.
package final class ResealMark: Sendable {
    private let state = Locked<(reached: [UInt8]?, visited: Int)>((nil, 0))

    package init() {}

    /// The last key visited; nil when none was left.
    package var reached: [UInt8]? { state.withLock { $0.reached } }
    /// How many records were visited.
    package var visited: Int { state.withLock { $0.visited } }

    func set(_ key: [UInt8]?, visited: Int) { state.withLock { $0 = (key, visited) } }
}

extension WriteOperation {
    /// A generous estimate of the map space the operation's new pages take: each record's
    /// value and key, its entry in the type index, its id in the change log, and B-tree pages
    /// left part-empty by inserts in random key order (counted as twice the bytes). 0 for
    /// deletes, which free pages.
    package var estimatedGrowth: Int {
        switch self {
        case let .put(records, _):
            return 2 * (records.valueBytes + 2 * records.keyBytes + records.classNameBytes + 64 * records.count)
        case let .replicate(operations, _, _), let .migrate(operations, _, _):
            return operations.reduce(0) { $0 + $1.estimatedGrowth }
        case let .synchronize(run):
            return 2 * (run.records.valueBytes + 4 * run.records.keyBytes + 64 * run.changes.count)
        default:
            return 0
        }
    }

    /// Whether the operation is a replication's own (`.replicate`, `.detachReplica`).
    package var isReplication: Bool {
        switch self {
        case .replicate, .detachReplica: true
        default: false
        }
    }

    /// Whether the operation is a migration's batch (`.migrate`).
    package var isMigration: Bool {
        if case .migrate = self { return true }
        return false
    }

    /// Whether the operation may change records (or their documents): refused on a replica, and
    /// checked against the database's migrations. (`.replicate` and `.migrate` check their own.)
    package var changesRecords: Bool {
        switch self {
        case .put, .delete, .deleteReaching, .deleteTypes, .clear, .setMember: true
        case .defineIndexes, .dropIndex, .reseal, .finishResealing, .replicate, .detachReplica, .migrate, .enableSync, .synchronize: false
        }
    }
}

