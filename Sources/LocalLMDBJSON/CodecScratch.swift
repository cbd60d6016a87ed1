import LocalLMDBBase

/// What the codec keeps per thread between calls: where the thread's stack ends, and the memory
/// of writers that finished on it.
///
/// Confinement: each thread has its own (`ThreadLocal`), used only by synchronous code on it.
@usableFromInline package final class CodecScratch {
    // Exclusivity is not checked at run time on the stored properties: the scratch is used by
    // its own thread only, and the checks cost more than the accesses they guard.

    /// The calling thread's scratch.
    @inlinable package static var current: CodecScratch {
        @inline(__always) get { scratches.current }
    }

    @usableFromInline static let scratches = ThreadLocal { CodecScratch() }

    /// Where this thread's stack is too low to recurse further (`StackGuard`); nil until asked.
    @exclusivity(unchecked) @usableFromInline var knownStackLimit: UInt?

    /// The address below which this thread's stack is too low for the codec to recurse further.
    @inlinable package var stackLimit: UInt {
        if let knownStackLimit { return knownStackLimit }
        let limit = StackGuard.limitOfCurrentThread()
        knownStackLimit = limit
        return limit
    }

    /// Whether this thread's stack has grown past `stackLimit`.
    @inline(__always)
    @inlinable package var stackIsLow: Bool { StackGuard.isLow(stackLimit) }

    /// Output memory of `JSONWriter`s that finished on this thread, for the next ones (a data
    /// object being built holds one, and each object nested in it another): an encode then
    /// allocates only the bytes it returns. Owned by the scratch while here; at most
    /// `keptWriterBuffers`.
    @exclusivity(unchecked) @usableFromInline var writerBuffers: [(base: UnsafeMutableRawPointer, capacity: Int)] = []
    @usableFromInline static let keptWriterBuffers = 4

    deinit {
        for buffer in writerBuffers { buffer.base.deallocate() }
    }
}
