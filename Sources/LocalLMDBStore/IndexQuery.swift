import LocalLMDBLMDB
import LocalLMDBJSON

/// A query of one class's records by the values of some fields, in the order of `IndexKey`
/// tuples of those fields: bytes and names, made by the faces from a model's query.
///
/// It runs on the stored index with `definition`'s name when each of `classNames` has it, and
/// otherwise by reading every record of those classes and computing its tuples: the results,
/// and their order, are the same either way.
@usableFromInline package struct IndexQuery: Sendable, Hashable {
    /// The class names whose records are queried: the model's current name, then its legacy ones.
    package var classNames: [String]
    /// The index: the fields whose tuples the ranges bound and the order follows.
    package var definition: IndexDefinition
    /// The tuples wanted: any of these ranges, which are in ascending order and disjoint. Empty
    /// for every record.
    package var ranges: [IndexRange]
    package var descending: Bool
    package var offset: Int
    package var limit: Int?
    /// Where the results start: after this position, in the query's order (keyset paging).
    package var after: IndexCursor?
    /// Whether a page keeps the position of every record it takes (`Page.tuples`), not only the
    /// last's: for reads that continue after any record of a page (`RecordSnapshot.positionedRecords`).
    package var keepsPositions = false

    package init(classNames: [String], definition: IndexDefinition, ranges: [IndexRange], descending: Bool, offset: Int, limit: Int?) {
        self.classNames = classNames
        self.definition = definition
        self.ranges = ranges
        self.descending = descending
        self.offset = offset
        self.limit = limit
    }

    /// Whether an entry comes after `after` in the order of a query, descending or not.
    static func isPast(_ after: IndexCursor?, descending: Bool, _ tuple: UnsafeRawBufferPointer, _ recordKey: UnsafeRawBufferPointer) -> Bool {
        guard let after else { return true }
        let order: Bool
        if !tuple.elementsEqual(after.tuple) {
            order = after.tuple.lexicographicallyPrecedes(tuple)
        } else if !recordKey.elementsEqual(after.recordKey) {
            order = after.recordKey.lexicographicallyPrecedes(recordKey)
        } else {
            return false
        }
        return order != descending
    }

    /// `ranges`, cut where the cursor is: the scan starts there rather than skipping up to it.
    var rangesAfterCursor: [IndexRange] {
        let ranges = self.ranges.isEmpty ? [IndexRange(lower: nil, upper: nil)] : self.ranges
        guard let after else { return ranges }
        return ranges.compactMap { range in
            var range = range
            let position = after.tuple
            if !descending {
                guard position.withBytes({ range.isBelowUpper($0) }) else { return nil }
                if position.withBytes({ range.isAboveLower($0) }) { range.lower = .init(position, inclusive: true) }
            } else {
                guard position.withBytes({ range.isAboveLower($0) }) else { return nil }
                if position.withBytes({ range.isBelowUpper($0) }) { range.upper = .init(position, inclusive: true) }
            }
            return range
        }
    }
}

/// A position in a query's results: the tuple and record key of the last one given.
@usableFromInline package struct IndexCursor: Sendable, Hashable {
    package var tuple: [UInt8]
    package var recordKey: [UInt8]

    package init(tuple: [UInt8], recordKey: [UInt8]) {
        self.tuple = tuple
        self.recordKey = recordKey
    }

    /// `[tuple length: varint][tuple][record key]`.
    package var encoded: [UInt8] {
        var bytes: [UInt8] = []
        Varint.append(tuple.count, to: &bytes)
        return bytes + tuple + recordKey
    }

    package init?(encoded bytes: [UInt8]) {
        var offset = 0
        let parsed: IndexCursor? = bytes.withBytes { raw in
            // Any bytes (an app hands a cursor back): a length past the end is none.
            guard let tuple = Varint.lengthPrefixed(in: raw, at: &offset) else { return nil }
            return IndexCursor(tuple: Array(tuple), recordKey: Array(raw[offset...]))
        }
        guard let parsed else { return nil }
        self = parsed
    }
}

extension IndexQuery {

    /// Whether `tuple` is wanted (the cursor aside).
    func matches(_ tuple: UnsafeRawBufferPointer) -> Bool {
        ranges.isEmpty || ranges.contains { $0.contains(tuple) }
    }

    /// The results after `offset`, at most `limit`, from an ordered stream of record keys.
    struct Page {
        let offset: Int
        let limit: Int?
        let deduplicates: Bool
        /// The query's cursor and direction: what a page keeps of it (a copy of the whole query
        /// would retain each of its arrays, for every query).
        let after: IndexCursor?
        let descending: Bool
        private(set) var keys: [[UInt8]] = []
        /// The tuple of each key taken, when the query keeps positions (`keepsPositions`).
        private(set) var tuples: [[UInt8]] = []
        let keepsTuples: Bool
        /// The position of the last key taken.
        private(set) var last: IndexCursor?
        private var skipped = 0
        private var seen: Set<[UInt8]> = []

        init(_ query: IndexQuery) {
            after = query.after
            descending = query.descending
            offset = max(0, query.offset)
            limit = query.limit.map { max(0, $0) }
            deduplicates = query.definition.isMultiEntry
            keepsTuples = query.keepsPositions
        }

        var isFull: Bool { limit.map { keys.count >= $0 } ?? false }

        /// Takes the next record key in order, with its tuple; false once the page is full.
        mutating func take(_ tuple: [UInt8], _ key: UnsafeRawBufferPointer) -> Bool {
            if isFull { return false }
            guard tuple.withBytes({ IndexQuery.isPast(after, descending: descending, $0, key) }) else { return true }
            if deduplicates {
                guard seen.insert(Array(key)).inserted else { return true }
            }
            if skipped < offset {
                skipped += 1
                return true
            }
            let recordKey = Array(key)
            keys.append(recordKey)
            if keepsTuples { tuples.append(tuple) }
            last = IndexCursor(tuple: tuple, recordKey: recordKey)
            return !isFull
        }
    }
}

/// The tuples between two bounds. A bound is the encoding of some fields' values (or of a
/// string prefix, `IndexKey.stringPrefix`), and stands for the tuples that *begin with those
/// values*: an inclusive lower bound takes them and every tuple after them, an exclusive one
/// only the tuples after them; an inclusive upper bound takes them and every tuple before them,
/// an exclusive one only the tuples before. So a bound made of some fields' values bounds the
/// tuples of every longer index whose first fields those are.
///
/// The tuples that begin with a bound's values are exactly those from its bytes `B` up to,
/// not including, `B` followed by `0xFF` (`Bound.end`). Every `IndexKey` encoding is followed
/// in a tuple by the next field's tag (below `0xFF`) or by nothing, and so is a string prefix's
/// (UTF-8 has no `0xFF` byte); the one tuple that starts with `B`'s bytes and goes on with
/// `0xFF` is one whose last string goes on with an escaped zero byte (`00 FF`), a longer
/// string that sorts after `B`'s: `"a\u{0}"` after `"a"`. Bytes are never compared as a bare
/// prefix: `"a"`'s encoding is a prefix of `"a\u{0}"`'s.
package struct IndexRange: Sendable, Hashable {
    package struct Bound: Sendable, Hashable {
        package var bytes: [UInt8]
        package var inclusive: Bool

        package init(_ bytes: [UInt8], inclusive: Bool) {
            self.bytes = bytes
            self.inclusive = inclusive
        }

        /// The first byte string past every tuple that begins with the bound's values.
        package var end: [UInt8] { bytes + [0xFF] }

        /// Where `tuple` stands against the tuples that begin with the bound's values: before
        /// them all (-1), one of them (0), or after them all (1). Compares with `memcmp`: a
        /// count of a range compares every key it walks.
        func position(of tuple: UnsafeRawBufferPointer) -> Int {
            bytes.withUnsafeBytes { bound in
                let common = min(tuple.count, bound.count)
                let order = UnsafeRawBufferPointer(rebasing: tuple[..<common]).compareBytes(with: UnsafeRawBufferPointer(rebasing: bound[..<common]))
                if order != 0 { return order < 0 ? -1 : 1 }
                if tuple.count < bound.count { return -1 }
                // Starts with the bound's bytes: past its values only where a string goes on.
                return tuple.count > bound.count && tuple[bound.count] == 0xFF ? 1 : 0
            }
        }
    }

    package var lower: Bound?
    package var upper: Bound?

    package init(lower: Bound?, upper: Bound?) {
        self.lower = lower
        self.upper = upper
    }

    /// No tuple at all (a condition such as `isIn([])`).
    package static let nothing = IndexRange(lower: Bound([0xFF, 0xFF], inclusive: true), upper: Bound([0], inclusive: false))

    /// The tuples that begin with the values (or string prefix) `prefix` encodes.
    package static func prefix(_ prefix: [UInt8]) -> IndexRange {
        IndexRange(lower: Bound(prefix, inclusive: true), upper: Bound(prefix, inclusive: true))
    }

    func contains(_ tuple: UnsafeRawBufferPointer) -> Bool {
        isAboveLower(tuple) && isBelowUpper(tuple)
    }

    func isAboveLower(_ tuple: UnsafeRawBufferPointer) -> Bool {
        guard let lower else { return true }
        let position = lower.position(of: tuple)
        return lower.inclusive ? position >= 0 : position > 0
    }

    func isBelowUpper(_ tuple: UnsafeRawBufferPointer) -> Bool {
        guard let upper else { return true }
        let position = upper.position(of: tuple)
        return upper.inclusive ? position <= 0 : position < 0
    }
}

extension RecordStore {
    /// The keys of the records `query` selects, in its order, after its offset, at most its limit.
    func recordKeys(matching query: IndexQuery, in transaction: Transaction) throws(DatabaseError) -> [[UInt8]] {
        try page(matching: query, in: transaction).keys
    }

    /// The page of records `query` selects: their keys, and the position of the last.
    func page(matching query: IndexQuery, in transaction: Transaction) throws(DatabaseError) -> IndexQuery.Page {
        if query.definition.fields.isEmpty, !query.descending, query.ranges.allSatisfy({ $0.lower == nil && $0.upper == nil }) {
            return try keyOrderPage(query, in: transaction)
        }
        var stored: [StoredIndex] = []
        for className in query.classNames {
            guard let index = try storedIndex(className: className, name: query.definition.name, in: transaction),
                  index.definition == query.definition else { return try scannedKeys(query, in: transaction) }
            stored.append(index)
        }
        guard stored.count == 1, let index = stored.first else { return try mergedKeys(query, stored, in: transaction) }
        var page = IndexQuery.Page(query)
        try scan(index, query, in: transaction) { tuple, recordKey in page.take(tuple, recordKey) }
        return page
    }

    /// Several indexes (a model's current and legacy class names): every match, sorted.
    private func mergedKeys(_ query: IndexQuery, _ indexes: [StoredIndex], in transaction: Transaction) throws(DatabaseError) -> IndexQuery.Page {
        var matches: [(tuple: [UInt8], key: [UInt8])] = []
        for index in indexes {
            try scan(index, query, in: transaction) { tuple, recordKey in
                matches.append((tuple, Array(recordKey)))
                return true
            }
        }
        return Self.page(matches, query)
    }

    /// A query of no fields: the records of the classes in the order of their keys, which
    /// `types` keeps for each class. Each class is walked from the cursor (a seek, whatever its
    /// size) for as many keys as the page can take, and the classes' keys merged: a page costs
    /// what it returns, where a scan would read and sort every record of the classes for each.
    private func keyOrderPage(_ query: IndexQuery, in transaction: Transaction) throws(DatabaseError) -> IndexQuery.Page {
        assert(query.definition.fields.isEmpty && !query.descending, "records in the order of their keys")
        let wanted = query.limit.map { max(0, query.offset) + max(0, $0) }
        let after = query.after?.recordKey
        var keys: [[UInt8]] = []
        try transaction.withCursor(types) { index throws(DatabaseError) in
            for className in query.classNames {
                var taken = 0
                try StorageKey(className, maxKeySize: maxKeySize).withBytes { typeBytes throws(DatabaseError) in
                    var entry = try Self.firstTypeEntry(typeBytes, after: after, index)
                    while let (_, recordKey) = entry, wanted.map({ taken < $0 }) ?? true {
                        // An index entry without its record is reported by verifyIntegrity; reads skip it.
                        if try transaction.get(records, recordKey) != nil {
                            keys.append(Array(recordKey))
                            taken += 1
                        }
                        entry = try index.get(.nextDuplicate)
                    }
                }
            }
        }
        // A record key has one class: the classes' keys never repeat one another.
        if query.classNames.count > 1 { keys.sort { $0.lexicographicallyPrecedes($1) } }
        var page = IndexQuery.Page(query)
        for key in keys {
            guard key.withBytes({ page.take([], $0) }) else { break }
        }
        return page
    }

    /// No stored index: every record of the classes, its tuples computed from its bytes.
    private func scannedKeys(_ query: IndexQuery, in transaction: Transaction) throws(DatabaseError) -> IndexQuery.Page {
        var matches: [(tuple: [UInt8], key: [UInt8])] = []
        let keys = query.classNames.map { StorageKey($0, maxKeySize: maxKeySize) }
        try forEachRecord(typeKeys: keys, in: transaction) { recordKey, value throws(DatabaseError) in
            // A damaged record is an error, as for `read()`.
            let stored = try RecordDecoding.decode(key: recordKey, value: value, encryption: encryption)
            for tuple in query.definition.tuples(of: stored.object) {
                if tuple.withBytes({ query.matches($0) }) { matches.append((tuple, Array(recordKey))) }
            }
        }
        return Self.page(matches, query)
    }

    static func page(_ matches: [(tuple: [UInt8], key: [UInt8])], _ query: IndexQuery) -> IndexQuery.Page {
        var sorted = matches.sorted { left, right in
            left.tuple != right.tuple ? left.tuple.lexicographicallyPrecedes(right.tuple) : left.key.lexicographicallyPrecedes(right.key)
        }
        if query.descending { sorted.reverse() }
        var page = IndexQuery.Page(query)
        for match in sorted {
            guard match.key.withBytes({ page.take(match.tuple, $0) }) else { break }
        }
        return page
    }

    /// Calls `visit` with the tuple and record key of each entry of `index` in `query`'s ranges,
    /// in its order, until `visit` returns false. Entries whose keys were shortened are compared
    /// by their whole tuples, recomputed from their records, and those sharing a stem (with the
    /// whole key equal to it, if any) are sorted by them.
    func scan(
        _ index: StoredIndex, _ query: IndexQuery, in transaction: Transaction,
        _ visit: (_ tuple: [UInt8], _ recordKey: UnsafeRawBufferPointer) throws(DatabaseError) -> Bool
    ) throws(DatabaseError) {
        guard let entries else { return }
        let prefix = index.keyPrefix
        let maxKeySize = self.maxKeySize
        let ranges = query.rangesAfterCursor
        try transaction.withCursor(entries) { cursor throws(DatabaseError) in
            for range in query.descending ? ranges.reversed() : ranges {
                var entry = try start(range, prefix: prefix, descending: query.descending, cursor)
                while let current = entry, current.key.starts(with: prefix) {
                    let keyTuple = UnsafeRawBufferPointer(rebasing: current.key[prefix.count...])
                    if StoredIndex.isTruncated(current.key, maxKeySize: maxKeySize) {
                        let stem = Array(current.key.prefix(StoredIndex.stemLength(maxKeySize)))
                        let stemTuple = Array(stem[prefix.count...])
                        // Every tuple of the run starts with the stem's: past the far end with it.
                        if query.descending {
                            if let lower = range.lower, !lower.bytes.starts(with: stemTuple), !stemTuple.withBytes({ range.isAboveLower($0) }) { break }
                        } else {
                            if let upper = range.upper, !upper.bytes.starts(with: stemTuple), !stemTuple.withBytes({ range.isBelowUpper($0) }) { break }
                        }
                        var run: [(tuple: [UInt8], key: [UInt8])] = []
                        var next: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? = current
                        while let member = next, member.key.starts(with: stem) {
                            if StoredIndex.isTruncated(member.key, maxKeySize: maxKeySize) {
                                for tuple in try wholeTuples(of: member, index, in: transaction) { run.append((tuple, Array(member.value))) }
                            } else {
                                run.append((Array(member.key[prefix.count...]), Array(member.value)))
                            }
                            next = try cursor.get(query.descending ? .previous : .next)
                        }
                        run.sort { $0.tuple != $1.tuple ? $0.tuple.lexicographicallyPrecedes($1.tuple) : $0.key.lexicographicallyPrecedes($1.key) }
                        if query.descending { run.reverse() }
                        for member in run where member.tuple.withBytes({ range.contains($0) }) {
                            guard try member.key.withBytes({ key throws(DatabaseError) in try visit(member.tuple, key) }) else { return }
                        }
                        entry = next
                        continue
                    } else {
                        // Past the range's far end: the range is done.
                        if query.descending ? !range.isAboveLower(keyTuple) : !range.isBelowUpper(keyTuple) { break }
                        if range.contains(keyTuple) {
                            guard try visit(Array(keyTuple), current.value) else { return }
                        }
                    }
                    entry = try cursor.get(query.descending ? .previous : .next)
                }
            }
        }
    }

    /// Positions the cursor at the first entry of `range` in the scan's direction.
    func start(
        _ range: IndexRange, prefix: [UInt8], descending: Bool, _ cursor: Cursor
    ) throws(DatabaseError) -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        // A seek key is at most as long as a truncated entry key's unhashed part: a longer one
        // is cut there, which seeks no further than the entries it stands for.
        let seekLength = StoredIndex.stemLength(maxKeySize)
        if !descending {
            // An exclusive lower bound starts past the tuples that begin with its values.
            let lower = range.lower.map { $0.inclusive ? $0.bytes : $0.end } ?? []
            let from = Array((prefix + lower).prefix(seekLength))
            return try from.withBytes { key throws(DatabaseError) in try cursor.get(.keyAtLeast, key: key) }
        }
        // The first key past the range's upper end, then one step back.
        let past: [UInt8]?
        if let upper = range.upper {
            let bound = prefix + (upper.inclusive ? upper.end : upper.bytes)
            past = bound.count > seekLength ? Self.successor(of: Array(bound.prefix(seekLength))) : bound
        } else {
            past = Self.successor(of: prefix)
        }
        if let past, let found = try past.withBytes({ key throws(DatabaseError) in try cursor.get(.keyAtLeast, key: key) }) {
            _ = found
            return try cursor.get(.previous)
        }
        return try cursor.get(.last)
    }

    /// The smallest byte string greater than every string that starts with `bytes`; nil when none is.
    static func successor(of bytes: [UInt8]) -> [UInt8]? {
        var bytes = bytes
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }

    /// The whole tuples of the record an entry with a truncated key names, that truncate to that key.
    private func wholeTuples(
        of entry: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer), _ index: StoredIndex, in transaction: Transaction
    ) throws(DatabaseError) -> [[UInt8]] {
        guard let value = try transaction.get(records, entry.value),
              let object = indexedObject(value, key: entry.value, verified: false) else { return [] }
        let maxKeySize = self.maxKeySize
        return index.definition.tuples(of: object).filter { tuple in
            index.entryKey(tuple, maxKeySize: maxKeySize).withBytes { $0.hasSameBytes(as: entry.key) }
        }
    }

    /// The number of records `query` selects (its offset and limit applied), without reading
    /// them, except those whose entry keys were shortened.
    func count(matching query: IndexQuery, in transaction: Transaction) throws(DatabaseError) -> Int {
        if let counted = try countingKeys(query, in: transaction) { return counted }
        return try recordKeys(matching: query, in: transaction).count
    }

    /// The count of a query on one index, with no page and entries of one record each, summed
    /// key by key (LMDB counts a key's duplicates itself); nil when it does not apply or the
    /// walk meets a shortened key (then every entry is looked at).
    private func countingKeys(_ query: IndexQuery, in transaction: Transaction) throws(DatabaseError) -> Int? {
        guard let entries, query.classNames.count == 1, let className = query.classNames.first, !query.definition.isMultiEntry,
              query.offset == 0, query.limit == nil, query.after == nil,
              let index = try storedIndex(className: className, name: query.definition.name, in: transaction),
              index.definition == query.definition else { return nil }
        if index.definition.isCounted {
            // From the runs' numbers where they can tell (`RangeCounts`).
            var total = 0
            for range in query.rangesAfterCursor {
                guard let counted = try countedEntries(of: index, in: range, in: transaction) else { total = -1; break }
                total += counted
            }
            if total >= 0 { return total }
        }
        let prefix = index.keyPrefix
        let maxKeySize = self.maxKeySize
        var total = 0
        let counted: Bool = try transaction.withCursor(entries) { cursor throws(DatabaseError) in
            for range in query.rangesAfterCursor {
                var entry = try start(range, prefix: prefix, descending: false, cursor)
                while let current = entry, prefix.withBytes({ current.key.startsWithBytes(of: $0) }) {
                    if StoredIndex.isTruncated(current.key, maxKeySize: maxKeySize) { return false }
                    let keyTuple = UnsafeRawBufferPointer(rebasing: current.key[prefix.count...])
                    if !range.isBelowUpper(keyTuple) { break }
                    if range.isAboveLower(keyTuple) { total += try cursor.duplicateCount() }
                    entry = try cursor.get(.nextKey)
                }
            }
            return true
        }
        return counted ? total : nil
    }
}
