import LocalLMDBLMDB

/// A consistent view of one database's records, as every read sees it: the reads the faces
/// make (`SnapshotRead`) are written against this protocol, so an engine other than LMDB's
/// serves them by providing its own snapshot.
///
/// A snapshot is used on one thread, for the life of one read. What it returns that points
/// into storage (`DecodedRecord`) is valid only for that life; `DecodedRecord.detached()`
/// copies it out.
@usableFromInline package protocol RecordSnapshot {
    /// Where nested objects' stored classes are looked up, in this snapshot.
    var classes: ClassLookup { get }

    /// The longest key the engine stores (`StorageKey`s of longer names are shortened to it).
    var maxKeySize: Int { get }

    /// The record stored under `key`, read in place; `id` names it in errors.
    func record(_ key: StorageKey, id: String) throws(DatabaseError) -> DecodedRecord?

    /// `transform` applied to each record stored under any of the class keys `classKeys`
    /// (class by class; within one, in the byte order of record keys). `transform` is also
    /// given a function that makes the record's id.
    func records<R>(
        ofClasses classKeys: [StorageKey], _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R]

    /// `transform` applied to up to `limit` records stored under `classKey` whose keys come
    /// after the record key `after` (from the first when nil), in the byte order of record keys;
    /// `transform` is also given the record's key. A walk of one class in steps (a migration's).
    func records<R>(
        ofClass classKey: StorageKey, after: [UInt8]?, limit: Int,
        _ transform: (DecodedRecord, _ key: [UInt8], _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R]

    /// The ids of the records stored under any of `classKeys`, in the order of `records`.
    func ids(ofClasses classKeys: [StorageKey]) throws(DatabaseError) -> [String]

    /// The number of records stored under any of `classKeys`, without reading them.
    func count(ofClasses classKeys: [StorageKey]) throws(DatabaseError) -> Int

    /// The number of records.
    func count() throws(DatabaseError) -> Int

    /// Walks every record and index entry and reports each disagreement.
    func verify() throws(DatabaseError) -> IntegrityCheck

    /// `transform` applied to each record `query` selects, in its order (its offset and limit applied).
    func records<R>(
        matching query: IndexQuery, _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R]

    /// `records(matching:_:)`, and the position of the last record, to continue after it
    /// (nil when there is none).
    func page<R>(
        matching query: IndexQuery, _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> (records: [R], last: IndexCursor?)

    /// `records(matching:_:)`, each with its position in the query's order: a read that goes on
    /// after any of them (`IndexQuery.after`), not only after the last.
    func positionedRecords<R>(
        matching query: IndexQuery, _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [(record: R, position: IndexCursor)]

    /// The ids of the records `query` selects, in its order.
    func ids(matching query: IndexQuery) throws(DatabaseError) -> [String]

    /// The number of records `query` selects, without reading them.
    func count(matching query: IndexQuery) throws(DatabaseError) -> Int

    /// The class names that have a stored index of `definition`, in name order.
    func classNames(indexedBy definition: IndexDefinition) throws(DatabaseError) -> [String]

    /// Calls `body` with the id, class name and document of each record stored under any of
    /// `classKeys` (every record when nil), as read would check them; the document is valid
    /// during the call only.
    func forEachDocument(
        ofClasses classKeys: [StorageKey]?, _ body: (_ id: String, _ className: String, _ document: UnsafeRawBufferPointer) throws(DatabaseError) -> Void
    ) throws(DatabaseError)

    /// The definitions of the indexes stored for the class name `className`.
    func indexDefinitions(ofClassNamed className: String) throws(DatabaseError) -> [IndexDefinition]

    /// Each class name records are stored under, with how many.
    func classCounts() throws(DatabaseError) -> [(className: String, records: Int)]

    /// The ids of the keys the database's values may be sealed under, and whether some values
    /// may still be unencrypted; nil for an unencrypted database.
    func encryptionKeys() throws(DatabaseError) -> (keyIDs: [String], acceptsUnencryptedValues: Bool)?

    /// What the database follows, when it is a read replica (`ReplicaState`); nil otherwise.
    func replicaState() throws(DatabaseError) -> ReplicaState?

    /// Two-way synchronization's local state: the device, the server position reached, and the
    /// first `limit` pending local writes (`RecordStore.syncPending`); empty for a database that
    /// does not synchronize.
    func syncPending(limit: Int) throws(DatabaseError) -> SyncPending

    /// The local writes that lost to later ones, recorded after number `after` (at most `limit`).
    func syncConflicts(after: UInt64, limit: Int) throws(DatabaseError) -> [SyncConflictRecord]

    /// The synchronization row of the record `id`, if it has one.
    func syncRow(id: String) throws(DatabaseError) -> SyncRow?
}
