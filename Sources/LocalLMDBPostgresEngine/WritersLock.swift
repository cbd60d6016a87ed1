import LocalLMDBLMDB
import LocalLMDBStore

/// How a write transaction holds its store's writers' lock (`StoreSchema.writersLock`), taken
/// first in every write transaction, from every process.
///
/// - `shared`: writes of records by key (`put`, `delete`, `setMember`) into classes without a
///   unique index, and devices' pushes into stores without one (`pushSync`). They run side by
///   side: two that meet on a record wait for each other on the record's row (locked before its
///   index entries are touched; a push locks its stamps' rows first, all in key order), and the
///   later commit takes the later tick, so the log's order is the order they were applied in
///   (`LogSequencer`). A push and a write by key meeting on a record lock its two rows in
///   opposite orders and may deadlock: the server aborts one, which runs again under the
///   exclusive lock.
/// - `exclusive`: every other write, which must see no write in flight: a deletion of every
///   record of a class or of the store (a concurrent insert would be logged before it and
///   survive it), deletions that follow references, index definitions (the catalog), a unique
///   index's check (two records under one value, neither seeing the other), migrations and
///   replicated runs (the store's migration state), and a session's transaction, whose writes
///   are not known when it begins.
///
/// No write transaction locks the store's row: the log's numbers are given after the commits,
/// by the log's sequencer (`LogSequencer`).
enum WritersLock: Equatable {
    case shared
    case exclusive
}

extension PostgresEngine {
    /// Whether the catalog the thread holds has a unique index (true while it is unknown).
    var catalogHasUniqueIndex: Bool {
        catalog.map { $0.byClass.values.contains { $0.contains(where: \.definition.isUnique) } } ?? true
    }

    /// The lock `writes` need, as the catalog the thread holds says (`catalog`: the last write
    /// transaction's; nil before the first, which takes the exclusive lock).
    func writersLock(for writes: [[WriteOperation]]) -> WritersLock {
        guard let catalog else { return .exclusive }
        for operations in writes {
            for operation in operations {
                switch operation {
                case let .put(records, _):
                    var unique = false
                    records.forEachRecord { (_: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer, className: String, _: StorageKey) in
                        if !unique, catalog.byClass[className]?.contains(where: \.definition.isUnique) == true { unique = true }
                    }
                    if unique { return .exclusive }
                case .delete:
                    continue
                case let .setMember(_, classNames, _, _):
                    if classNames.contains(where: { catalog.byClass[$0]?.contains(where: \.definition.isUnique) == true }) { return .exclusive }
                default:
                    return .exclusive
                }
            }
        }
        return .shared
    }
}
