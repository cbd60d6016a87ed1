import Foundation

/// One contender's footprint: its store's size on disk after the set-up write, and the memory of
/// its reads of every object.
public struct Footprint: Sendable {
    public let contender: String
    public let disk: DiskUsage
    /// One per measured read, in the order run.
    public let reads: [ReadMemory]

    public init(contender: String, disk: DiskUsage, reads: [ReadMemory]) {
        self.contender = contender
        self.disk = disk
        self.reads = reads
    }

    /// The read with the highest peak: the one the table shows, so that its columns add up.
    var worstRead: ReadMemory? {
        reads.max { ($0.peakGrowth ?? .min) < ($1.peakGrowth ?? .min) }
    }
}

/// Formats footprints as a Markdown table: size on disk, and memory of reading every object.
public struct FootprintReport {
    public let footprints: [Footprint]
    /// How many objects each store holds and each read returns.
    public let objects: Int

    public init(footprints: [Footprint], objects: Int) {
        self.footprints = footprints
        self.objects = objects
    }

    static func mebibytes(_ bytes: Int?) -> String {
        guard let bytes else { return "n/a" }
        let value = Double(bytes) / 1_048_576
        return String(format: "%.1f MiB", abs(value) < 0.05 ? 0 : value)
    }

    public var markdown: String {
        let floor = footprints.first { $0.contender == RawLMDB.name }
        var lines = [
            "Size on disk after the set-up write of \(objects) objects, and memory of \"\(Workloads.readAllName)\":",
            "",
            "| contender | on disk, allocated (apparent) | ÷ \(RawLMDB.name) | objects' heap (per object) "
                + "| anonymous RSS growth, held | file-backed RSS growth, held | peak RSS growth | peak − (objects + file-backed) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for footprint in footprints {
            let disk = footprint.disk
            let ratio = floor.map { String(format: "%.2f×", Double(disk.allocated) / Double(max(1, $0.disk.allocated))) } ?? "n/a"
            let read = footprint.worstRead
            let perObject = read?.objectBytes.map { String(format: " (%.0f B)", Double($0) / Double(max(1, objects))) } ?? ""
            let cells = [
                footprint.contender,
                "\(Self.mebibytes(disk.allocated)) (\(Self.mebibytes(disk.apparent)))",
                ratio,
                Self.mebibytes(read?.objectBytes) + perObject,
                Self.mebibytes(read?.anonymousGrowth),
                Self.mebibytes(read?.fileGrowth),
                Self.mebibytes(read?.peakGrowth),
                Self.mebibytes(read?.excess),
            ]
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        lines.append("")
        lines.append(
            "Memory is measured in untimed reads, as many as the timed ones and after them, each once `malloc_trim(0)` has "
                + "returned the heap's free pages (else the pages an earlier read freed stay resident and hide the growth) and the "
                + "store's file pages have been dropped from the process's mappings (`madvise(MADV_DONTNEED)`; they stay in the "
                + "page cache), so that every page the read maps counts; the table shows the read with the highest peak. Objects' "
                + "heap: glibc's heap in use (`mallinfo2`: uordblks + hblkhd) while the returned array is held, less before the "
                + "read. RSS from /proc/self/status: growth of RssAnon and RssFile while the array is held, and the peak (VmHWM, "
                + "reset through /proc/self/clear_refs before the read) less VmRSS before. File-backed growth is the store's pages "
                + "the read mapped (LMDB's map; SQLite reads into its own page cache, which is anonymous). A small negative last "
                + "column is heap the objects took from free space that was already resident.")
        let logs = footprints.filter { $0.disk.writeAheadLog > 0 }
        if !logs.isEmpty {
            lines.append("")
            lines.append("SQLite's write-ahead log, within the size on disk: "
                + logs.map { "\($0.contender) \(Self.mebibytes($0.disk.writeAheadLog))" }.joined(separator: ", ") + ".")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
