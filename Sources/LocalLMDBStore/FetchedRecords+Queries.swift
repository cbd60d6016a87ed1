import LocalLMDBLMDB
import LocalLMDBJSON

/// A walk of a server engine's index entries: the entries of the indexes numbered `numbers`
/// whose tuples are in any of `ranges`, past `after` in the walk's order, in the order of their
/// tuples then record keys (descending when `descending`), at most `limit` of them (all when
/// nil). What `IndexQuery` asks of the stored entries, as a server answers it in one statement.
package struct EntryScan: Sendable, Hashable {
    /// The indexes walked: one per class name of the query (the model's current and legacy ones).
    package var numbers: [UInt32]
    /// The tuples wanted: ascending, disjoint, not empty (`IndexQuery.rangesAfterCursor`).
    package var ranges: [IndexRange]
    package var descending: Bool
    package var after: IndexCursor?
    package var limit: Int?

    /// Whether entry `left` comes before `right` in the walk's order.
    package func precedes(_ left: (tuple: [UInt8], key: [UInt8]), _ right: (tuple: [UInt8], key: [UInt8])) -> Bool {
        let (first, second) = descending ? (right, left) : (left, right)
        return first.tuple != second.tuple ? first.tuple.lexicographicallyPrecedes(second.tuple) : first.key.lexicographicallyPrecedes(second.key)
    }
}

extension IndexRange {
    /// The range as half-open byte bounds (`from <= tuple < to`; nil: unbounded), as a server
    /// compares bytes; nil when it holds no tuple. The same tuples as `contains`: the tuples
    /// that begin with a bound's values are those from its bytes up to its `end` (see `IndexRange`).
    package var byteBounds: (from: [UInt8]?, to: [UInt8]?)? {
        let from = lower.map { $0.inclusive ? $0.bytes : $0.end }
        let to = upper.map { $0.inclusive ? $0.end : $0.bytes }
        if let from, let to, !from.lexicographicallyPrecedes(to) { return nil }
        return (from, to)
    }
}

extension FetchedRecords.Wanted {
    /// Wanting the index catalog and nothing else: a query's first fetch.
    package static let catalogAlone: Self = {
        var wanted = Self()
        wanted.catalog = true
        return wanted
    }()
}

// What a read found of a server's indexes (filled by the engine).
extension FetchedRecords {
    /// Whether the index catalog was fetched.
    package var hasCatalog: Bool { catalog != nil }

    /// Sets the stored indexes, from the server's rows of `StoredIndex`'s catalog (key, value);
    /// rows this version does not read are left out.
    package func setCatalog(_ rows: [(key: [UInt8], value: [UInt8])]) {
        var byClass: [String: [StoredIndex]] = [:]
        for (key, value) in rows {
            let parsed = key.withBytes { key in value.withBytes { value in StoredIndex(key: key, value: value) } }
            if let index = parsed { byClass[index.className, default: []].append(index) }
        }
        catalog = byClass
    }

    /// Adds what `scan` found: its entries (tuple and record key), in any order (sorted here);
    /// their records' values are `add`ed with them.
    package func addScan(_ scan: EntryScan, _ found: [(tuple: [UInt8], key: [UInt8])]) {
        scans[scan] = (found.sorted { scan.precedes($0, $1) }, scan.limit.map { found.count < $0 } ?? true)
    }

    /// Sets the number of distinct records `scan` names.
    package func setScanCount(_ scan: EntryScan, _ count: Int) {
        scanCounts[scan] = count
    }

    /// The stored indexes by class name; nil (and wanted) when not fetched.
    func indexCatalog() -> [String: [StoredIndex]]? {
        guard let catalog else {
            wanted.catalog = true
            return nil
        }
        return catalog
    }

    /// What `scan` found; nil (and wanted) when not fetched.
    func entries(_ scan: EntryScan) -> (entries: [(tuple: [UInt8], key: [UInt8])], complete: Bool)? {
        guard let found = scans[scan] else {
            wanted.scans.insert(scan)
            return nil
        }
        return found
    }

    /// The distinct records `scan` names; nil (and wanted) when not fetched.
    func entryCount(_ scan: EntryScan) -> Int? {
        guard let count = scanCounts[scan] else {
            wanted.scanCounts.insert(scan)
            return nil
        }
        return count
    }

    /// The value stored under `key`: nil (and wanted) when not fetched, `.some(nil)` when absent.
    func storedValue(_ key: [UInt8]) -> UnsafeRawBufferPointer?? {
        guard let value = value(fetchedUnder: key) else {
            wanted.keys.insert(key)
            return nil
        }
        return .some(value)
    }
}

// Queries on a server's indexes: the same results, in the same order, as on LMDB
// (`RecordStore.page(matching:)`): the entries the indexes hold are the same tuples, compared as
// the same bytes.
extension FetchedSnapshot {
    /// The page of records `query` selects: nil when something it needs was not fetched (then
    /// wanted: the run's result is thrown away).
    func page(_ query: IndexQuery) throws(DatabaseError) -> IndexQuery.Page? {
        guard let numbers = try indexNumbers(query) else { return try scannedPage(query) }
        guard !numbers.isEmpty else { return nil }
        let ranges = query.rangesAfterCursor.filter { $0.byteBounds != nil }
        guard !ranges.isEmpty else { return IndexQuery.Page(query) }
        // Enough entries for the page; a multi-entry index may name a record more than once,
        // so it asks for more, and more again while the page is short.
        // (Sums past `Int.max` ask for every entry.)
        var limit = query.limit.flatMap { Self.sum(max(0, query.offset), max(0, $0)) }
        if query.definition.isMultiEntry { limit = limit.flatMap { Self.sum($0, $0).flatMap { Self.sum($0, 16) } } }
        while true {
            let scan = EntryScan(numbers: numbers, ranges: ranges, descending: query.descending, after: query.after, limit: limit)
            guard let found = fetched.entries(scan) else { return nil }
            var page = IndexQuery.Page(query)
            for entry in found.entries {
                guard entry.key.withBytes({ page.take(entry.tuple, $0) }) else { break }
            }
            if page.isFull || found.complete { return page }
            limit = limit.flatMap { Self.sum($0, $0).flatMap { Self.sum($0, $0) } }
        }
    }

    /// `a + b`; nil past `Int.max`.
    private static func sum(_ a: Int, _ b: Int) -> Int? {
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : total
    }

    /// The numbers of the stored indexes of `query`'s definition, one per class name; nil when
    /// a class name has none (its records are read instead); empty when the catalog is wanted.
    private func indexNumbers(_ query: IndexQuery) throws(DatabaseError) -> [UInt32]? {
        guard let catalog = fetched.indexCatalog() else { return [] }
        var numbers: [UInt32] = []
        for className in query.classNames {
            guard let index = catalog[className]?.first(where: { $0.definition.name == query.definition.name }),
                  index.definition == query.definition else { return nil }
            numbers.append(index.number)
        }
        return numbers
    }

    /// No stored index: every record of the classes, its tuples computed from its bytes (as
    /// `RecordStore`'s scan does); nil when the records are wanted.
    private func scannedPage(_ query: IndexQuery) throws(DatabaseError) -> IndexQuery.Page? {
        let classKeys = query.classNames.map { StorageKey($0, maxKeySize: fetched.maxKeySize) }
        let members = fetched.members(ofClasses: classKeys)
        guard fetched.wanted.classKeys.isEmpty else { return nil }
        var matches: [(tuple: [UInt8], key: [UInt8])] = []
        for (key, value) in members {
            let stored = try key.withBytes { key throws(DatabaseError) in try RecordDecoding.decode(key: key, value: value, encryption: nil) }
            for tuple in query.definition.tuples(of: stored.object) where tuple.withBytes({ query.matches($0) }) {
                matches.append((tuple, key))
            }
        }
        return RecordStore.page(matches, query)
    }

    /// `transform` applied to the records under `keys`, in order; nil when one is wanted.
    private func records<R>(
        _ keys: [[UInt8]], _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R]? {
        var results: [R] = []
        results.reserveCapacity(keys.count)
        var missing = false
        for key in keys {
            guard let value = fetched.storedValue(key) else {
                missing = true
                continue
            }
            guard let value, !missing else { continue }
            let stored = try key.withBytes { key throws(DatabaseError) in try RecordDecoding.decode(key: key, value: value, encryption: nil) }
            results.append(try transform(stored) { Self.id(key: key, value: value) })
        }
        return missing ? nil : results
    }

    package func records<R>(
        matching query: IndexQuery, _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R] {
        try page(matching: query, transform).records
    }

    package func page<R>(
        matching query: IndexQuery, _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> (records: [R], last: IndexCursor?) {
        guard let page = try page(query), let records = try records(page.keys, transform) else { return ([], nil) }
        return (records, page.last)
    }

    package func positionedRecords<R>(
        matching query: IndexQuery, _ transform: (DecodedRecord, _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [(record: R, position: IndexCursor)] {
        var query = query
        query.keepsPositions = true
        guard let page = try page(query), let records = try records(page.keys, transform) else { return [] }
        assert(page.tuples.count == page.keys.count && records.count == page.keys.count, "one tuple and one record per key")
        return zip(records, zip(page.tuples, page.keys)).map { ($0, IndexCursor(tuple: $1.0, recordKey: $1.1)) }
    }

    package func ids(matching query: IndexQuery) throws(DatabaseError) -> [String] {
        guard let page = try page(query) else { return [] }
        return try records(page.keys) { _, id in id() } ?? []
    }

    package func count(matching query: IndexQuery) throws(DatabaseError) -> Int {
        // Counted by the server when nothing is skipped or cut: the distinct records named.
        if query.offset == 0, query.limit == nil, let numbers = try indexNumbers(query) {
            guard !numbers.isEmpty else { return 0 }
            let ranges = query.rangesAfterCursor.filter { $0.byteBounds != nil }
            guard !ranges.isEmpty else { return 0 }
            return fetched.entryCount(EntryScan(numbers: numbers, ranges: ranges, descending: query.descending, after: query.after, limit: nil)) ?? 0
        }
        return try page(query)?.keys.count ?? 0
    }

    package func classNames(indexedBy definition: IndexDefinition) throws(DatabaseError) -> [String] {
        (fetched.indexCatalog() ?? [:]).filter { $0.value.contains { $0.definition == definition } }.keys.sorted()
    }

    package func indexDefinitions(ofClassNamed className: String) throws(DatabaseError) -> [IndexDefinition] {
        fetched.indexCatalog()?[className]?.map(\.definition) ?? []
    }
}

extension IndexDefinition {
    /// The entries (tuple, and whether a field of it is missing) that a stored value, under
    /// the record key `key`, has in this index; nil when the value cannot be read as LocalLMDB
    /// wrote it (its entries cannot be known: `RecordStore.indexedObject`). For a server engine,
    /// whose values are never encrypted.
    package func entries(ofStoredValue value: UnsafeRawBufferPointer, key: [UInt8]) -> [(tuple: [UInt8], hasMissing: Bool)]? {
        key.withBytes { key in
            guard let stored = try? RecordValue(parsing: value), stored.checksum == nil || stored.isIntact,
                  let document = try? stored.document(key: key, encryption: nil),
                  document.bytes.first == UInt8(ascii: "{") else { return nil }
            return entries(of: EncodedObject(bytes: document.bytes, owner: document.owner))
        }
    }
}

extension RecordDecoding {
    /// The id of the record stored under `key` with `value`: the key itself, or for a hashed key
    /// the id its value keeps (its display form when the value cannot be read).
    package static func id(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> String {
        (try? RecordValue(parsing: value))?.id(key: key) ?? displayID(key)
    }
}
