import LocalLMDBLMDB

// Counted indexes (`IndexDefinition.isCounted`): the `counts` database cuts each counted
// index's entries into *runs* of consecutive entry keys and keeps how many entries (pairs of
// entry key and record key) each run holds, so that the count of a range adds the runs that
// lie inside it and walks only its two ends.
//
// Layout: a run's key is the index's key prefix (its number) followed by the tuple where the
// run starts; the first run's is the prefix alone, so the runs of an index cover all of its
// entry keys. A run holds the entries from its key up to the next run's key; its value is
// their number, 8 bytes big-endian.
//
// Invariant (`verifyIntegrity` checks it): a counted index with entries has a first run, every
// run's number is the count of its entries, and every run but the first holds at least one.
// An index with no entries may have no run at all (after `clear`, or when a type's records are
// all deleted): the first entry added makes them again. A run grows to `maxRunLength` entries,
// then splits at the key nearest its middle; a key's duplicates are never split, so one key
// with many records makes a longer run.
extension RecordStore {
    /// The most entries a run holds before it splits (unless they are one key's).
    static let maxRunLength = 256

    /// Updates the runs of `index` after the pair under `entryKey` was added (`delta` 1) or
    /// removed (-1). Runs found missing or wrong are made again from the entries: then it
    /// returns true, and the runs already reflect every change made to the entries so far.
    @discardableResult
    func countChange(of index: StoredIndex, entryKey: UnsafeRawBufferPointer, by delta: Int, in transaction: Transaction) throws(DatabaseError) -> Bool {
        guard index.definition.isCounted, let counts else { return false }
        let prefix = index.keyPrefix
        guard let run = try run(of: index, containing: entryKey, in: transaction) else {
            try rebuildRuns(of: index, in: transaction)
            return true
        }
        let length = run.length + delta
        guard length >= 0 else {
            // A count below zero: the runs are not what the entries are.
            try rebuildRuns(of: index, in: transaction)
            return true
        }
        if length == 0, run.key.count > prefix.count {
            _ = try run.key.withBytes { key throws(DatabaseError) in try transaction.delete(counts, key) }
        } else if length > Self.maxRunLength, let (middle, before) = try middleKey(of: index, run: run.key, in: transaction) {
            try Self.write(Self.runValue(before), at: run.key, counts, in: transaction)
            try Self.write(Self.runValue(length - before), at: middle, counts, in: transaction)
        } else {
            try Self.write(Self.runValue(length), at: run.key, counts, in: transaction)
        }
        return false
    }

    /// The run of `index` that holds `entryKey`: its key and length; nil when it has none.
    private func run(of index: StoredIndex, containing entryKey: UnsafeRawBufferPointer, in transaction: Transaction) throws(DatabaseError) -> (key: [UInt8], length: Int)? {
        guard let counts else { return nil }
        return try transaction.withCursor(counts) { cursor throws(DatabaseError) in
            guard let run = try Self.run(at: cursor, holding: entryKey, prefix: index.keyPrefix), let length = Self.runLength(run.value) else { return nil }
            return (Array(run.key), length)
        }
    }

    /// Positions `cursor` (on `counts`) at the run holding `entryKey`, among the runs whose keys
    /// start with `prefix`: the last run key at or before it. Nil when there is none.
    private static func run(
        at cursor: Cursor, holding entryKey: UnsafeRawBufferPointer, prefix: [UInt8]
    ) throws(DatabaseError) -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        var found = try cursor.get(.keyAtLeast, key: entryKey)
        if !(found.map { $0.key.hasSameBytes(as: entryKey) } ?? false) {
            // Not a run's first key: the run before (the last one, past every run key).
            found = found == nil ? try cursor.get(.last) : try cursor.get(.previous)
        }
        guard let run = found, prefix.withBytes({ run.key.startsWithBytes(of: $0) }) else { return nil }
        return run
    }

    /// Where the run from `runKey` splits: the key boundary nearest the middle of its entries
    /// (never a key's duplicates apart), and how many come before it; nil when the run holds
    /// one key. Walks the run's keys up to the middle, or to its end when one key outweighs the
    /// rest (then the split leaves that key a run of its own, whose later splits walk one key).
    private func middleKey(of index: StoredIndex, run runKey: [UInt8], in transaction: Transaction) throws(DatabaseError) -> (key: [UInt8], before: Int)? {
        guard let entries, let counts else { return nil }
        let prefix = index.keyPrefix
        // The run's length and where the next run starts: the split stays before it.
        let (length, nextRun): (Int, [UInt8]?) = try transaction.withCursor(counts) { cursor throws(DatabaseError) in
            guard let found = try runKey.withBytes({ key throws(DatabaseError) in try cursor.get(.key, key: key) }),
                  let length = Self.runLength(found.value) else { return (0, nil) }
            guard let next = try cursor.get(.next), prefix.withBytes({ next.key.startsWithBytes(of: $0) }) else { return (length, nil) }
            return (length, Array(next.key))
        }
        let half = length / 2
        return try transaction.withCursor(entries) { cursor throws(DatabaseError) in
            var before = 0
            var best: (key: [UInt8], before: Int)?
            var entry = try runKey.withBytes { key throws(DatabaseError) in try cursor.get(.keyAtLeast, key: key) }
            while let current = entry, prefix.withBytes({ current.key.startsWithBytes(of: $0) }) {
                if let nextRun, nextRun.withBytes({ current.key.compareBytes(with: $0) >= 0 }) { break }
                if before > 0 {
                    if best.map({ abs(before - half) < abs($0.before - half) }) ?? true { best = (Array(current.key), before) }
                    if before >= half { break }
                }
                before += try cursor.duplicateCount()
                entry = try cursor.get(.nextKey)
            }
            return best
        }
    }

    /// Makes the runs of `index` again from its entries: runs of half the longest, cut between keys.
    func rebuildRuns(of index: StoredIndex, in transaction: Transaction) throws(DatabaseError) {
        guard index.definition.isCounted, let counts, let entries else { return }
        try dropRuns(of: index, in: transaction)
        let prefix = index.keyPrefix
        var runs: [(key: [UInt8], length: Int)] = []
        try transaction.withCursor(entries) { cursor throws(DatabaseError) in
            var entry = try prefix.withBytes { key throws(DatabaseError) in try cursor.get(.keyAtLeast, key: key) }
            var current: (key: [UInt8], length: Int) = (prefix, 0)
            while let found = entry, prefix.withBytes({ found.key.startsWithBytes(of: $0) }) {
                if current.length >= Self.maxRunLength / 2 {
                    runs.append(current)
                    current = (Array(found.key), 0)
                }
                current.length += try cursor.duplicateCount()
                entry = try cursor.get(.nextKey)
            }
            if current.length > 0 { runs.append(current) }
        }
        for run in runs { try Self.write(Self.runValue(run.length), at: run.key, counts, in: transaction) }
    }

    /// Deletes every run of `index`.
    func dropRuns(of index: StoredIndex, in transaction: Transaction) throws(DatabaseError) {
        guard let counts else { return }
        try Self.deletePairs(startingWith: index.keyPrefix, in: counts, transaction)
    }

    /// The runs of `index`, in order: for `verifyIntegrity`.
    func runs(of index: StoredIndex, in transaction: Transaction) throws(DatabaseError) -> [(key: [UInt8], length: Int?)] {
        guard let counts else { return [] }
        let prefix = index.keyPrefix
        var runs: [(key: [UInt8], length: Int?)] = []
        try transaction.withCursor(counts) { cursor throws(DatabaseError) in
            var run = try prefix.withBytes { key throws(DatabaseError) in try cursor.get(.keyAtLeast, key: key) }
            while let current = run, prefix.withBytes({ current.key.startsWithBytes(of: $0) }) {
                runs.append((Array(current.key), Self.runLength(current.value)))
                run = try cursor.get(.next)
            }
        }
        return runs
    }

    /// The number of entries of `index` in `range`, from its runs: the runs wholly inside the
    /// range by their numbers, its two ends entry by entry. Nil when it cannot be known so
    /// (the index has no runs, or a key the count depends on is a shortened one): the caller
    /// counts another way.
    func countedEntries(of index: StoredIndex, in range: IndexRange, in transaction: Transaction) throws(DatabaseError) -> Int? {
        guard let counts, let entries else { return nil }
        let prefix = index.keyPrefix
        let maxKeySize = self.maxKeySize
        /// Whether `key`'s tuple is in the range, for a key of the index that is whole.
        func inRange(_ key: UnsafeRawBufferPointer) -> Bool {
            let tuple = UnsafeRawBufferPointer(rebasing: key[prefix.count...])
            return range.isAboveLower(tuple) && range.isBelowUpper(tuple)
        }
        func isOfIndex(_ key: UnsafeRawBufferPointer) -> Bool {
            prefix.withBytes { key.startsWithBytes(of: $0) }
        }
        var total = 0
        return try transaction.withCursor(entries) { cursor throws(DatabaseError) -> Int? in
            try transaction.withCursor(counts) { runs throws(DatabaseError) -> Int? in
                var entry = try start(range, prefix: prefix, descending: false, cursor)
                while let current = entry, isOfIndex(current.key) {
                    if StoredIndex.isTruncated(current.key, maxKeySize: maxKeySize) { return nil }
                    let tuple = UnsafeRawBufferPointer(rebasing: current.key[prefix.count...])
                    if !range.isBelowUpper(tuple) { break }
                    // The run holding this entry, and where the next one starts.
                    guard try Self.run(at: runs, holding: current.key, prefix: prefix) != nil else { return nil }
                    var next = try runs.get(.next)
                    if let start = next, !isOfIndex(start.key) { next = nil }
                    // This run's entries from here, one by one, up to the next run.
                    var position: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? = current
                    while let here = position, isOfIndex(here.key), next.map({ here.key.compareBytes(with: $0.key) < 0 }) ?? true {
                        if StoredIndex.isTruncated(here.key, maxKeySize: maxKeySize) { return nil }
                        let hereTuple = UnsafeRawBufferPointer(rebasing: here.key[prefix.count...])
                        if !range.isBelowUpper(hereTuple) { return total }
                        if range.isAboveLower(hereTuple) { total += try cursor.duplicateCount() }
                        position = try cursor.get(.nextKey)
                    }
                    guard var runStart = next else { return total }
                    // Whole runs: a run whose first key and the next run's are both in the range
                    // (whole keys) has all its entries in it, as the range is one span of keys.
                    while !StoredIndex.isTruncated(runStart.key, maxKeySize: maxKeySize), inRange(runStart.key),
                          let following = try runs.get(.next), isOfIndex(following.key),
                          !StoredIndex.isTruncated(following.key, maxKeySize: maxKeySize), inRange(following.key) {
                        guard let length = Self.runLength(runStart.value) else { return nil }
                        let (sum, overflow) = total.addingReportingOverflow(length)
                        guard !overflow else { return nil }
                        total = sum
                        runStart = following
                    }
                    // The rest from the first run not wholly inside, entry by entry.
                    entry = try cursor.get(.keyAtLeast, key: runStart.key)
                }
                return total
            }
        }
    }

    static func runValue(_ length: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt64(length).bigEndian, Array.init)
    }

    /// A run's length; nil when the value is not one (a damaged file: more than 2⁴⁰ entries in
    /// a run cannot be, and sums of such lengths cannot overflow).
    static func runLength(_ value: UnsafeRawBufferPointer) -> Int? {
        guard value.count == 8 else { return nil }
        let length = value.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return length <= 1 << 40 ? Int(length) : nil
    }
}
