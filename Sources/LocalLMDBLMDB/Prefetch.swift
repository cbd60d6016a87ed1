import CLMDB

extension UnsafeRawBufferPointer {
    /// Starts loading every cache line of these bytes, without waiting for any.
    ///
    /// A value in LMDB's map is usually not in the cache when a read finds it, and parsing it
    /// front to back waits for its lines one at a time; asking for them all first overlaps
    /// those waits (measured: reads by id and of a whole type about 5% faster).
    @inlinable package func prefetch() {
        if let base = baseAddress { clmdb_prefetch(base, count) }
    }
}
