import Foundation

/// The size of a store's directory on disk: every file in it (SQLite's -wal and -shm files, LMDB's
/// data.mdb and lock.mdb, …), as allocated blocks and as apparent sizes.
public struct DiskUsage: Sendable {
    /// Bytes of the blocks allocated to the files (st_blocks × 512).
    public private(set) var allocated = 0
    /// The files' apparent sizes (st_size), which count a sparse file's holes.
    public private(set) var apparent = 0
    /// The allocated bytes of SQLite's write-ahead logs (files ending in "-wal").
    public private(set) var writeAheadLog = 0

    public init(directory: URL) {
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return }
        while let name = enumerator.nextObject() as? String {
            var info = stat()
            guard lstat(directory.appendingPathComponent(name).path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            allocated += Int(info.st_blocks) * 512
            apparent += Int(info.st_size)
            if name.hasSuffix("-wal") { writeAheadLog += Int(info.st_blocks) * 512 }
        }
    }
}
