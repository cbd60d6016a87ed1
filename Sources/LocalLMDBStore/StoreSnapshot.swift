import LocalLMDBLMDB

/// LMDB's `RecordSnapshot`: the store's layout read in one LMDB transaction (a read-only
/// snapshot, or the session's open write transaction).
@usableFromInline package struct StoreSnapshot: RecordSnapshot {
    @usableFromInline let store: RecordStore
    @usableFromInline let transaction: Transaction
    @usableFromInline package let classes: ClassLookup

    /// The snapshot `transaction` gives of `store`; `database` identifies it for the caches.
    @usableFromInline package init(_ store: RecordStore, database: UInt64, in transaction: Transaction) {
        self.store = store
        self.transaction = transaction
        classes = ClassLookup(
            database: database, table: store.classTable, transaction: transaction, records: store.records, encryption: store.encryption)
    }

    @usableFromInline package var maxKeySize: Int { store.maxKeySize }

    @usableFromInline package func record(_ key: StorageKey, id: String) throws(DatabaseError) -> DecodedRecord? {
        try store.value(key, in: transaction).map { value throws(DatabaseError) in try RecordDecoding.decode(value: value, id: id, encryption: store.encryption) }
    }

    @usableFromInline package func records<R>(
        ofClasses classKeys: [StorageKey], _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R] {
        try store.objects(typeKeys: classKeys, in: transaction, transform)
    }

    @usableFromInline package func records<R>(
        ofClass classKey: StorageKey, after: [UInt8]?, limit: Int,
        _ transform: (DecodedRecord, _ key: [UInt8], _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R] {
        try store.objects(typeKey: classKey, after: after, limit: limit, in: transaction, transform)
    }

    @usableFromInline package func ids(ofClasses classKeys: [StorageKey]) throws(DatabaseError) -> [String] {
        try store.ids(typeKeys: classKeys, in: transaction)
    }

    @usableFromInline package func count(ofClasses classKeys: [StorageKey]) throws(DatabaseError) -> Int {
        try store.count(typeKeys: classKeys, in: transaction)
    }

    @usableFromInline package func indexDefinitions(ofClassNamed className: String) throws(DatabaseError) -> [IndexDefinition] {
        try store.storedIndexes(in: transaction)[className]?.map(\.definition) ?? []
    }

    @usableFromInline package func classCounts() throws(DatabaseError) -> [(className: String, records: Int)] {
        try store.classCounts(in: transaction)
    }

    @usableFromInline package func count() throws(DatabaseError) -> Int {
        try store.count(in: transaction)
    }

    @usableFromInline package func verify() throws(DatabaseError) -> IntegrityCheck {
        try store.verify(in: transaction)
    }

    @usableFromInline package func records<R>(
        matching query: IndexQuery, _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R] {
        try page(matching: query, transform).records
    }

    @usableFromInline package func page<R>(
        matching query: IndexQuery, _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> (records: [R], last: IndexCursor?) {
        let page = try store.page(matching: query, in: transaction)
        let keys = page.keys
        var results: [R] = []
        results.reserveCapacity(keys.count)
        for key in keys {
            try key.withBytes { key throws(DatabaseError) in
                // The record is there: the snapshot that found its entry holds it.
                guard let value = try transaction.get(store.records, key) else { return }
                let stored = try RecordDecoding.decode(key: key, value: value, encryption: store.encryption)
                results.append(try transform(stored) { (try? RecordValue(parsing: value))?.id(key: key) ?? RecordDecoding.displayID(key) })
            }
        }
        return (results, page.last)
    }

    @usableFromInline package func positionedRecords<R>(
        matching query: IndexQuery, _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [(record: R, position: IndexCursor)] {
        var query = query
        query.keepsPositions = true
        let page = try store.page(matching: query, in: transaction)
        assert(page.tuples.count == page.keys.count, "a page keeping positions has one tuple per key")
        var results: [(record: R, position: IndexCursor)] = []
        results.reserveCapacity(page.keys.count)
        for (key, tuple) in zip(page.keys, page.tuples) {
            try key.withBytes { key throws(DatabaseError) in
                guard let value = try transaction.get(store.records, key) else { return }
                let stored = try RecordDecoding.decode(key: key, value: value, encryption: store.encryption)
                let record = try transform(stored) { (try? RecordValue(parsing: value))?.id(key: key) ?? RecordDecoding.displayID(key) }
                results.append((record, IndexCursor(tuple: tuple, recordKey: Array(key))))
            }
        }
        return results
    }

    @usableFromInline package func ids(matching query: IndexQuery) throws(DatabaseError) -> [String] {
        var ids: [String] = []
        for key in try store.recordKeys(matching: query, in: transaction) {
            ids.append(try key.withBytes { key throws(DatabaseError) in try store.recordID(key, in: transaction) })
        }
        return ids
    }

    @usableFromInline package func classNames(indexedBy definition: IndexDefinition) throws(DatabaseError) -> [String] {
        try store.storedIndexes(in: transaction).filter { $0.value.contains { $0.definition == definition } }.keys.sorted()
    }

    @usableFromInline package func count(matching query: IndexQuery) throws(DatabaseError) -> Int {
        try store.count(matching: query, in: transaction)
    }

    @usableFromInline package func encryptionKeys() throws(DatabaseError) -> (keyIDs: [String], acceptsUnencryptedValues: Bool)? {
        try store.encryptionKeys(in: transaction)
    }

    @usableFromInline package func replicaState() throws(DatabaseError) -> ReplicaState? {
        try store.replicaState(in: transaction)
    }

    @usableFromInline package func syncPending(limit: Int) throws(DatabaseError) -> SyncPending {
        try store.syncPending(limit: limit, in: transaction)
    }

    @usableFromInline package func syncConflicts(after: UInt64, limit: Int) throws(DatabaseError) -> [SyncConflictRecord] {
        try store.syncConflicts(after: after, limit: limit, in: transaction)
    }

    @usableFromInline package func syncRow(id: String) throws(DatabaseError) -> SyncRow? {
        try store.syncRow(id: id, in: transaction)
    }

    @usableFromInline package func forEachDocument(
        ofClasses classKeys: [StorageKey]?, _ body: (_ id: String, _ className: String, _ document: UnsafeRawBufferPointer) throws(DatabaseError) -> Void
    ) throws(DatabaseError) {
        try store.forEachDocument(typeKeys: classKeys, in: transaction, body)
    }
}
