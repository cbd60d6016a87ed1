import CMemoryProbe
import Foundation

/// The process's memory at one moment, in bytes: on Linux from /proc/self/status and glibc's heap
/// statistics; nil where those are not available.
public struct MemorySample: Sendable {
    /// Resident set (VmRSS).
    public var resident: Int?
    /// Its anonymous part (RssAnon): the heap and other private memory.
    public var anonymous: Int?
    /// Its file-backed part (RssFile): mapped files' pages, such as an LMDB map's.
    public var fileBacked: Int?
    /// The peak resident set since the last `MemoryProbe.resetPeak()` (VmHWM).
    public var peak: Int?
    /// Heap bytes in use (glibc's mallinfo2 `uordblks + hblkhd`).
    public var heapInUse: Int?

    /// The current sample. `heapFirst` reads the heap's statistics before /proc (whose reading
    /// allocates a little), else after: either way they leave the probe's own allocations out.
    static func now(heapFirst: Bool) -> MemorySample {
        var sample = MemorySample()
        if heapFirst { sample.heapInUse = MemoryProbe.heapInUse() }
        let status = MemoryProbe.status()
        sample.resident = status["VmRSS"]
        sample.anonymous = status["RssAnon"]
        sample.fileBacked = status["RssFile"]
        sample.peak = status["VmHWM"]
        if !heapFirst { sample.heapInUse = MemoryProbe.heapInUse() }
        return sample
    }
}

/// The process-wide memory controls and readings the memory report uses.
public enum MemoryProbe {
    /// Sets the peak resident size (VmHWM) to the current resident size, by writing 5 to
    /// /proc/self/clear_refs. Does nothing off Linux.
    public static func resetPeak() {
        #if os(Linux)
        let descriptor = open("/proc/self/clear_refs", O_WRONLY)
        guard descriptor >= 0 else { return }
        _ = write(descriptor, "5", 1)
        close(descriptor)
        #endif
    }

    /// Returns the heap's free pages to the system (glibc's `malloc_trim(0)`), so that the next
    /// read's resident growth is its own rather than hidden in pages an earlier read freed.
    public static func trimHeap() {
        memory_probe_trim()
    }

    /// Drops this process's resident pages of the files under `directory` (a store's) from its
    /// mappings: `madvise(MADV_DONTNEED)` on each mapping of such a file, found in
    /// /proc/self/maps. The files' mappings are shared, so nothing is lost: the pages stay in the
    /// page cache, and the next access maps them again. Makes the next read's file-backed growth
    /// every mapped page it touches. Does nothing off Linux.
    public static func dropMappedPages(under directory: URL) {
        #if os(Linux)
        let prefix = directory.resolvingSymlinksInPath().path + "/"
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return }
        for line in maps.split(separator: "\n") {
            // address perms offset device inode path
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, fields[5].trimmingCharacters(in: .whitespaces).hasPrefix(prefix) else { continue }
            let bounds = fields[0].split(separator: "-").compactMap { UInt(String($0), radix: 16) }
            guard bounds.count == 2, bounds[1] > bounds[0], let start = UnsafeMutableRawPointer(bitPattern: bounds[0]) else { continue }
            _ = madvise(start, Int(bounds[1] - bounds[0]), MADV_DONTNEED)
        }
        #endif
    }

    /// Heap bytes in use, or nil off glibc.
    static func heapInUse() -> Int? {
        let bytes = memory_probe_heap_in_use()
        return bytes >= 0 ? Int(bytes) : nil
    }

    /// The kB fields of /proc/self/status, in bytes; empty off Linux.
    static func status() -> [String: Int] {
        #if os(Linux)
        var fields: [String: Int] = [:]
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return fields }
        for line in text.split(separator: "\n") where line.hasSuffix(" kB") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let kilobytes = Int(parts[1].dropLast(3).trimmingCharacters(in: .whitespaces)) else { continue }
            fields[String(parts[0])] = kilobytes * 1024
        }
        return fields
        #else
        return [:]
        #endif
    }
}
