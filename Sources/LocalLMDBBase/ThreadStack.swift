import CLocalLMDBBase

/// The calling thread's stack, as the system reports it.
@usableFromInline package enum ThreadStack {
    /// Its lowest address and its size in bytes; nil when they cannot be found.
    @inlinable static var bounds: (lowest: UInt, size: UInt)? {
        var lowest: UInt = 0
        var size = 0
        guard locallmdb_stack_bounds(&lowest, &size) else { return nil }
        return (lowest, UInt(size))
    }
}
