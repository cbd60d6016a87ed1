import LocalLMDBLMDB
import LocalLMDBJSON

/// The records, class rows and counts that one read on a server engine (PostgreSQL) fetched,
/// and what else the read asked for: its snapshot (`FetchedSnapshot`) answers from here.
///
/// A server engine cannot answer the faces' synchronous reads while they run, so it runs a
/// read against what it has fetched; what the read asks for and is not here is noted as
/// wanted (`wanted`) and answered as absent. When the read ends with anything wanted, its
/// result is thrown away: the engine fetches what was wanted and runs the read again, until a
/// run wants nothing. A read is a pure function of its snapshot, so the last run's result is
/// the read's result over what was fetched; the engine fetches in one statement, or in one
/// repeatable-read transaction when it takes more than one, so what was fetched is one state.
///
/// Used by one read at a time, on one thread at a time. Values are kept in memory it owns, so
/// a `DecodedRecord` read in place stays valid for as long as this object lives.
@usableFromInline package final class FetchedRecords: @unchecked Sendable {
    /// What a run asked for that was not fetched.
    package struct Wanted: Sendable, Equatable {
        /// Records by key.
        package var keys: Set<[UInt8]> = []
        /// Every record of these class keys.
        package var classKeys: Set<[UInt8]> = []
        /// The number of records.
        package var count = false
        /// The stored indexes (`StoredIndex` catalog rows).
        package var catalog = false
        /// Walks of index entries, with the records they name.
        package var scans: Set<EntryScan> = []
        /// Counts of the distinct records index walks name.
        package var scanCounts: Set<EntryScan> = []
        /// Steps of walks through one class's records (a migration's).
        package var classWalks: Set<ClassWalk> = []

        package var isEmpty: Bool {
            keys.isEmpty && classKeys.isEmpty && !count && !catalog && scans.isEmpty && scanCounts.isEmpty && classWalks.isEmpty
        }

        package init() {}

        /// Adds what `other` wants.
        package mutating func formUnion(_ other: Wanted) {
            keys.formUnion(other.keys)
            classKeys.formUnion(other.classKeys)
            count = count || other.count
            catalog = catalog || other.catalog
            scans.formUnion(other.scans)
            scanCounts.formUnion(other.scanCounts)
            classWalks.formUnion(other.classWalks)
        }
    }

    /// The longest id or class name stored as its own key (`StorageKey`).
    package let maxKeySize: Int
    /// The values fetched by key; a key fetched and not found maps to nil.
    private var values: [[UInt8]: UnsafeMutableRawBufferPointer?] = [:]
    /// The record keys of each class fetched whole, in byte order.
    private var classMembers: [[UInt8]: [[UInt8]]] = [:]
    /// The number of records, once fetched.
    private var total: Int?
    /// Every class row, by name (always fetched with the first records).
    private var classRows: [String: StoredClass] = [:]
    /// The stored indexes by class name, once fetched.
    var catalog: [String: [StoredIndex]]?
    /// The entries each walk found (tuple and record key, in the walk's order), and whether it
    /// found all there are (fewer than it asked for).
    var scans: [EntryScan: (entries: [(tuple: [UInt8], key: [UInt8])], complete: Bool)] = [:]
    /// The distinct records each counted walk names.
    var scanCounts: [EntryScan: Int] = [:]
    /// The record keys each step of a class walk found, in byte order.
    var classWalks: [ClassWalk: [[UInt8]]] = [:]
    /// What the current run asked for and did not find.
    package internal(set) var wanted = Wanted()

    package init(maxKeySize: Int) {
        self.maxKeySize = maxKeySize
    }

    deinit {
        for case let value? in values.values { value.deallocate() }
    }

    // MARK: Filling (the engine)

    /// Adds a fetched value (nil: the key holds no record).
    package func add(key: [UInt8], value: UnsafeRawBufferPointer?) {
        guard !values.keys.contains(key) else { return }
        // `updateValue`, as assigning nil through the subscript would remove the key.
        values.updateValue(value.map { bytes in
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
            if let base = bytes.baseAddress, !bytes.isEmpty { copy.baseAddress?.copyMemory(from: base, byteCount: bytes.count) }
            return UnsafeMutableRawBufferPointer(rebasing: copy[0..<bytes.count])
        }, forKey: key)
    }

    /// Whether everything in `wanted` has been fetched: a run that wants only such things
    /// would want them forever (the engine stops it with an error instead).
    package func hasFetched(_ wanted: Wanted) -> Bool {
        wanted.keys.allSatisfy(hasFetched(key:)) && wanted.classKeys.allSatisfy(hasFetched(classKey:)) && (!wanted.count || hasCount)
            && (!wanted.catalog || catalog != nil) && wanted.scans.allSatisfy { scans[$0] != nil }
            && wanted.scanCounts.allSatisfy { scanCounts[$0] != nil } && wanted.classWalks.allSatisfy { classWalks[$0] != nil }
    }

    /// Notes that `keys` (already added) are every record of the class key `classKey`.
    package func setMembers(ofClassKey classKey: [UInt8], _ keys: [[UInt8]]) {
        classMembers[classKey] = keys.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Sets the number of records.
    package func setCount(_ count: Int) {
        total = count
    }

    /// Adds a class row (as stored: `StoredClass.encoded`); rows that do not parse are left out.
    package func addClassRow(_ row: UnsafeRawBufferPointer) {
        if let storedClass = StoredClass(parsing: row) { classRows[storedClass.name] = storedClass }
    }

    /// Forgets what the last run wanted, before the next run.
    package func startRun() {
        wanted = Wanted()
    }

    /// Whether `key` was fetched (present or absent).
    package func hasFetched(key: [UInt8]) -> Bool { values.keys.contains(key) }

    /// Whether every record of `classKey` was fetched.
    package func hasFetched(classKey: [UInt8]) -> Bool { classMembers.keys.contains(classKey) }

    /// Whether the count was fetched.
    package var hasCount: Bool { total != nil }

    // MARK: Answering (the snapshot)

    /// The value fetched under `key`: nil when not fetched, `.some(nil)` when absent.
    func value(fetchedUnder key: [UInt8]) -> UnsafeRawBufferPointer?? {
        guard let fetched = values[key] else { return nil }
        return .some(fetched.map { UnsafeRawBufferPointer($0) })
    }

    /// The record under `key`; nil (and wanted) when not fetched.
    func record(_ key: StorageKey, id: String) throws(DatabaseError) -> DecodedRecord? {
        let bytes = key.bytes
        guard let fetched = values[bytes] else {
            wanted.keys.insert(bytes)
            return nil
        }
        guard let value = fetched else { return nil }
        return try RecordDecoding.decode(value: UnsafeRawBufferPointer(value), id: id, encryption: nil)
    }

    /// The row for the class name `name`.
    func classRow(named name: String) -> StoredClass? { classRows[name] }

    /// The keys and values of every record of `classKeys`, class by class; those not fetched are wanted.
    func members(ofClasses classKeys: [StorageKey]) -> [(key: [UInt8], value: UnsafeRawBufferPointer)] {
        var found: [(key: [UInt8], value: UnsafeRawBufferPointer)] = []
        for classKey in classKeys {
            let bytes = classKey.bytes
            guard let keys = classMembers[bytes] else {
                wanted.classKeys.insert(bytes)
                continue
            }
            for key in keys {
                if case let value?? = values[key] { found.append((key, UnsafeRawBufferPointer(value))) }
            }
        }
        return found
    }

    /// The number of records; 0 (and wanted) when not fetched.
    func count() -> Int {
        guard let total else {
            wanted.count = true
            return 0
        }
        return total
    }
}

/// A server engine's `RecordSnapshot`: the records one read fetched (`FetchedRecords`). The
/// reads the faces make of every engine are served (queries: `FetchedRecords+Queries`); the
/// LMDB-only ones (the integrity walk, exports) throw `unsupported`.
package struct FetchedSnapshot: RecordSnapshot {
    package var maxKeySize: Int { fetched.maxKeySize }

    package let fetched: FetchedRecords
    package let classes: ClassLookup

    /// A snapshot of `fetched`; `database` identifies the database for the caches.
    package init(_ fetched: FetchedRecords, database: UInt64) {
        self.fetched = fetched
        classes = ClassLookup(database: database, fetched: fetched)
    }

    package func record(_ key: StorageKey, id: String) throws(DatabaseError) -> DecodedRecord? {
        try fetched.record(key, id: id)
    }

    package func records<R>(
        ofClasses classKeys: [StorageKey], _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R] {
        var results: [R] = []
        for (key, value) in fetched.members(ofClasses: classKeys) {
            let stored = try key.withBytes { key throws(DatabaseError) in try RecordDecoding.decode(key: key, value: value, encryption: nil) }
            results.append(try transform(stored) { Self.id(key: key, value: value) })
        }
        return results
    }

    package func ids(ofClasses classKeys: [StorageKey]) throws(DatabaseError) -> [String] {
        fetched.members(ofClasses: classKeys).map { Self.id(key: $0.key, value: $0.value) }
    }

    package func count(ofClasses classKeys: [StorageKey]) throws(DatabaseError) -> Int {
        fetched.members(ofClasses: classKeys).count
    }

    package func count() throws(DatabaseError) -> Int { fetched.count() }

    /// The id of the record stored under `key` with `value` (`RecordDecoding.id`).
    static func id(key: [UInt8], value: UnsafeRawBufferPointer) -> String {
        key.withBytes { key in RecordDecoding.id(key: key, value: value) }
    }

    private func unsupported(_ operation: String) -> DatabaseError {
        .unsupported(operation: operation, reason: "the PostgreSQL engine does not offer it yet")
    }

    package func verify() throws(DatabaseError) -> IntegrityCheck { throw unsupported("Verifying integrity") }

    package func forEachDocument(
        ofClasses classKeys: [StorageKey]?, _ body: (_ id: String, _ className: String, _ document: UnsafeRawBufferPointer) throws(DatabaseError) -> Void
    ) throws(DatabaseError) { throw unsupported("An export") }


    package func classCounts() throws(DatabaseError) -> [(className: String, records: Int)] { throw unsupported("Counting records by class") }

    package func encryptionKeys() throws(DatabaseError) -> (keyIDs: [String], acceptsUnencryptedValues: Bool)? { nil }

    /// A server's store is never a replica.
    package func replicaState() throws(DatabaseError) -> ReplicaState? { nil }

    /// A server's store is not a device: it synchronizes nothing of its own.
    package func syncPending(limit: Int) throws(DatabaseError) -> SyncPending { SyncPending() }

    package func syncConflicts(after: UInt64, limit: Int) throws(DatabaseError) -> [SyncConflictRecord] { [] }

    package func syncRow(id: String) throws(DatabaseError) -> SyncRow? { nil }
}
