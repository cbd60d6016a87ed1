import Foundation

/// What a contender's read of every object returned, how long it took and the memory it used.
public struct ReadAllResult: Sendable {
    /// How many objects the read returned.
    public let count: Int
    /// Seconds the read and the release of its objects took, without the measuring around them.
    public let seconds: Double
    public let memory: ReadMemory

    /// Runs `read` (a contender's read of every object) and measures it, the same way for every
    /// contender: the peak resident size is reset and memory sampled before the read; memory is
    /// sampled again while the returned objects are still held, and the peak after they are
    /// released.
    public static func measuring<T>(_ read: () async throws -> [T]) async rethrows -> ReadAllResult {
        MemoryProbe.resetPeak()
        let before = MemorySample.now(heapFirst: false)
        let clock = ContinuousClock()
        let start = clock.now
        let (count, held, probing) = try await hold(read, clock: clock)
        let elapsed = clock.now - start - probing
        let after = MemorySample.now(heapFirst: true)
        let memory = ReadMemory(
            objectBytes: difference(held.heapInUse, before.heapInUse),
            anonymousGrowth: difference(held.anonymous, before.anonymous),
            fileGrowth: difference(held.fileBacked, before.fileBacked),
            peakGrowth: difference(after.peak, before.resident))
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return ReadAllResult(count: count, seconds: seconds, memory: memory)
    }

    /// Reads, samples memory while the objects are held, and releases them on return. Returns
    /// how many objects were read, the sample, and how long the sampling took.
    @inline(never)
    private static func hold<T>(_ read: () async throws -> [T], clock: ContinuousClock) async rethrows -> (Int, MemorySample, Duration) {
        let objects = try await read()
        let probeStart = clock.now
        let held = withExtendedLifetime(objects) { MemorySample.now(heapFirst: true) }
        return (objects.count, held, clock.now - probeStart)
    }

    private static func difference(_ after: Int?, _ before: Int?) -> Int? {
        guard let after, let before else { return nil }
        return after - before
    }
}

/// The memory a read of every object used, in bytes; nil where it cannot be measured (off Linux).
public struct ReadMemory: Sendable {
    /// The heap bytes of the returned objects: heap in use while they are held, less before.
    public let objectBytes: Int?
    /// Anonymous resident growth while the objects are held.
    public let anonymousGrowth: Int?
    /// File-backed resident growth while the objects are held: the store's mapped pages the
    /// read brought in (LMDB's map; SQLite reads into its own, anonymous, page cache).
    public let fileGrowth: Int?
    /// Peak resident growth: the peak (VmHWM) once the objects are released, less the resident
    /// size before the read.
    public let peakGrowth: Int?

    /// What the peak growth held beyond the objects and the mapped pages: the read's transient
    /// memory (buffers, rows, copies).
    public var excess: Int? {
        guard let peakGrowth, let objectBytes, let fileGrowth else { return nil }
        return peakGrowth - objectBytes - fileGrowth
    }
}
