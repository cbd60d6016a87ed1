import LocalLMDBLMDB

/// One step of a walk through the records of one class, in the byte order of their keys: up to
/// `limit` records stored under the class key `classKey` whose keys come after `after` (from
/// the first when nil). What a migration reads on a server engine
/// (`RecordSnapshot.records(ofClass:after:limit:_:)`).
package struct ClassWalk: Sendable, Hashable {
    package let classKey: [UInt8]
    package let after: [UInt8]?
    package let limit: Int

    package init(classKey: [UInt8], after: [UInt8]?, limit: Int) {
        self.classKey = classKey
        self.after = after
        self.limit = limit
    }
}

extension FetchedRecords {
    /// Notes the record keys (already added) `walk` found, in any order.
    package func addClassWalk(_ walk: ClassWalk, _ keys: [[UInt8]]) {
        let sorted = keys.sorted { $0.lexicographicallyPrecedes($1) }
        assert(sorted.count <= walk.limit, "a step of a class walk found more records than it asked for")
        assert(walk.after.map { after in sorted.allSatisfy { after.lexicographicallyPrecedes($0) } } ?? true,
               "a step of a class walk found a record at or before its position")
        classWalks[walk] = sorted
    }

    /// The keys and values `walk` found; empty (and wanted) when not fetched.
    func records(of walk: ClassWalk) -> [(key: [UInt8], value: UnsafeRawBufferPointer)] {
        guard let keys = classWalks[walk] else {
            wanted.classWalks.insert(walk)
            return []
        }
        return keys.compactMap { key in
            guard case let value?? = value(fetchedUnder: key) else { return nil }
            return (key, value)
        }
    }
}

extension FetchedSnapshot {
    package func records<R>(
        ofClass classKey: StorageKey, after: [UInt8]?, limit: Int,
        _ transform: (DecodedRecord, _ key: [UInt8], _ id: () -> String) throws(DatabaseError) -> R
    ) throws(DatabaseError) -> [R] {
        guard limit > 0 else { return [] }
        var results: [R] = []
        for (key, value) in fetched.records(of: ClassWalk(classKey: classKey.bytes, after: after, limit: limit)) {
            let stored = try key.withBytes { key throws(DatabaseError) in try RecordDecoding.decode(key: key, value: value, encryption: nil) }
            results.append(try transform(stored, key) { Self.id(key: key, value: value) })
        }
        return results
    }
}
