/// A record ready for storage: encoded in the caller's isolation, then handed to the writer
/// thread as plain bytes.
struct RecordBytes: Sendable {
    /// The key in `records`.
    let key: StorageKey
    /// The stored class name.
    let typeName: String
    /// The key in `types` for `typeName`.
    let typeKey: StorageKey
    /// The complete `RecordValue` bytes.
    let value: [UInt8]
}

/// One change to the store. Every operation keeps `records` and `types` in agreement.
enum WriteOperation: Sendable {
    /// Insert or replace records, in order, after claiming the stored classes they use
    /// (`RecordStore.claim`).
    case put([RecordBytes], classes: [StoredClass])
    /// Delete the record under a key.
    case delete(StorageKey)
    /// Delete every record stored under any of these type keys (of the class names `names`),
    /// the first of which is `owner`'s name: refused when another type owns that name
    /// (`RecordStore.checkOwner`).
    case deleteTypes([StorageKey], names: [String], owner: StoredClass)
    /// Delete every record.
    case clear
}

extension WriteOperation {
    /// A generous estimate of the map space the operation's new pages take: each record's
    /// value and key, its entry in the type index, its id in the change log, and B-tree pages
    /// left part-empty by inserts in random key order (counted as twice the bytes). 0 for
    /// deletes, which free pages.
    var estimatedGrowth: Int {
        guard case let .put(records, _) = self else { return 0 }
        var bytes = 0
        for record in records {
            let keySize = record.key.withBytes { $0.count }
            bytes += record.value.count + 2 * keySize + record.typeName.utf8.count + 64
        }
        return 2 * bytes
    }
}

