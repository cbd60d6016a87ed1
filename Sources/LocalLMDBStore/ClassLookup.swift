import LocalLMDBLMDB

/// Where one read looks up stored classes: the class table of the database it reads, in the
/// read's snapshot (or, for objects restored after their snapshot ended, in a fresh one); and,
/// in the read's own snapshot, the records that references name (`record(id:)`).
///
/// For an engine whose records come from a server, the lookups answer from the records and
/// class rows the read fetched (`FetchedRecords`) instead.
///
/// Lives for one read (see `ReadScratch.reading`); holds nothing that is reference counted.
@usableFromInline package struct ClassLookup {
    /// Identifies the database for the per-thread caches: unique for the life of the process.
    @usableFromInline package let database: UInt64
    /// LMDB's class table; nil when the lookups answer from `fetched`.
    @usableFromInline let table: ClassTable?
    /// What a server engine's read fetched: unowned, as the read holds it alive.
    @usableFromInline unowned(unsafe) let fetched: FetchedRecords?
    /// Whether `record(id:)` reads `fetched`'s records: not when restoring what a read detached
    /// (its references were prefetched; one that was not cannot be fetched any more).
    @usableFromInline let readsFetchedRecords: Bool
    /// The read's snapshot, or nil when lookups open their own.
    @usableFromInline let transaction: Transaction?
    /// The records database, for `record(id:)`.
    @usableFromInline let records: DatabaseHandle
    /// The store's encryption, for `record(id:)`: unowned, as the table's environment is (the
    /// read holds the store alive).
    @usableFromInline unowned(unsafe) let encryption: StoreEncryption?

    @inlinable package init(
        database: UInt64, table: ClassTable, transaction: Transaction?, records: DatabaseHandle, encryption: StoreEncryption?
    ) {
        self.database = database
        self.table = table
        self.transaction = transaction
        self.records = records
        self.encryption = encryption
        fetched = nil
        readsFetchedRecords = false
    }

    /// The lookups of a read that answers from `fetched` (which must outlive the lookup);
    /// `readingRecords` false for a restoration after the read (see `readsFetchedRecords`).
    package init(database: UInt64, fetched: FetchedRecords, readingRecords: Bool = true) {
        self.database = database
        self.fetched = fetched
        readsFetchedRecords = readingRecords
        table = nil
        transaction = nil
        records = 0
        encryption = nil
    }

    /// Whether `record(id:)` can read: the lookups run in the read's own snapshot.
    package var readsRecords: Bool { transaction != nil || readsFetchedRecords }

    /// The record `id`, read in place in the read's snapshot (valid while it lasts); nil when
    /// there is none, or when this lookup has no snapshot of its own (`readsRecords`).
    package func record(id: String) throws(DatabaseError) -> DecodedRecord? {
        if let fetched {
            guard readsFetchedRecords, !id.isEmpty else { return nil }
            return try fetched.record(StorageKey(id, maxKeySize: fetched.maxKeySize), id: id)
        }
        guard let transaction, let table, !id.isEmpty else { return nil }
        let key = StorageKey(id, maxKeySize: table.environment.maxKeySize)
        guard let value = try RecordStore.value(key, records: records, in: transaction) else { return nil }
        return try RecordDecoding.decode(value: value, id: id, encryption: encryption)
    }

    /// Whether what the lookups find may be remembered by the thread's caches: they run in a
    /// read-only snapshot, so a class row they find is committed. False inside an open write
    /// transaction (its rows may be rolled back), and false for fresh snapshots: those restore
    /// objects read in a session's open transaction, whose own writes may be about to change
    /// the owner they would remember.
    package var seesCommittedState: Bool { transaction.map { !$0.isWrite } ?? false }

    /// The row for the stored class name `name`.
    package func row(named name: String) throws(DatabaseError) -> StoredClass? {
        if let fetched { return fetched.classRow(named: name) }
        guard let table else { return nil }
        return try table.row(named: name, in: transaction)
    }

    /// Who owns `storedClass.name`, compared with `storedClass`'s type.
    package func ownership(of storedClass: StoredClass) throws(DatabaseError) -> ClassTable.Ownership {
        if let transaction, let table { return try table.ownership(of: storedClass, in: transaction) }
        return try row(named: storedClass.name).map { $0.hasSameOwner(as: storedClass) ? .same : .other($0) } ?? .none
    }
}
