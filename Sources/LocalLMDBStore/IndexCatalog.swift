import LocalLMDBLMDB

/// The stored indexes of one database, by class name, as the last write transaction found them.
///
/// The `meta` key `"indexes"` holds a version that every change of the `indexes` database
/// replaces, in the same transaction, with 16 random bytes; a transaction compares it (one
/// look-up) and reloads the catalog when another process or database changed it. So every
/// process maintains every stored index, declared by its code or not. Versions never repeat,
/// so a catalog loaded in a write transaction that is then rolled back is never taken for the
/// committed one.
package final class IndexCatalog: Sendable {
    struct Loaded {
        var version: [UInt8]
        var byClass: [String: [StoredIndex]]
    }

    private let loaded = Locked<Loaded?>(nil)

    package init() {}

    static let versionKey = Array("indexes".utf8)

    /// The stored indexes by class name, as `transaction` sees them.
    func indexes(_ store: RecordStore, in transaction: Transaction) throws(DatabaseError) -> [String: [StoredIndex]] {
        guard let catalog = store.indexes else { return [:] }
        // Valid for the transaction: compared in place, copied only when the catalog is loaded.
        let stored = try Self.versionKey.withBytes { key throws(DatabaseError) in try transaction.get(store.meta, key) }
        guard let stored else {
            // No index yet: remembered once (`mayHaveUniqueIndex` can then say no).
            loaded.withLock { current in
                if current?.version.isEmpty != true { current = Loaded(version: [], byClass: [:]) }
            }
            return [:]
        }
        let known = loaded.withLock { current -> [String: [StoredIndex]]? in
            guard let current, current.version.withUnsafeBytes({ $0.hasSameBytes(as: stored) }) else { return nil }
            return current.byClass
        }
        if let known { return known }
        let version = Array(stored)
        var byClass: [String: [StoredIndex]] = [:]
        try transaction.withCursor(catalog) { cursor throws(DatabaseError) in
            try cursor.forEach { key, value in
                guard let index = StoredIndex(key: key, value: value) else { return }
                byClass[index.className, default: []].append(index)
            }
        }
        loaded.withLock { $0 = Loaded(version: version, byClass: byClass) }
        return byClass
    }

    /// Whether a write of `className` may meet a unique index, as the last transaction that
    /// looked saw the catalog (true before any did). A write that may is not acknowledged
    /// before it is applied: it could be refused. (An index another process makes meanwhile is
    /// found when the write is applied, in its transaction, which then fails as a whole.)
    package func mayHaveUniqueIndex(_ className: String) -> Bool {
        guard let current = loaded.withLock({ $0 }) else { return true }
        return current.byClass[className]?.contains { $0.definition.isUnique } ?? false
    }
}
