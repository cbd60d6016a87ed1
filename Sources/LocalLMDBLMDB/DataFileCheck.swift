import CLMDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a data file shorter than its last commit says holds every page its B-trees use.
///
/// LMDB reads pages through a map of `data.mdb`, and a page past the file's end kills the process
/// with SIGBUS. A sound database can be shorter than its meta page's last page number, though: a
/// page taken from the end of the file and freed again within one transaction goes on the free
/// list without ever being written. So a short file is not refused for being short; it is
/// walked, with `pread` (which cannot fault), from the roots of the snapshot a read transaction
/// pins (so no writer reuses its pages meanwhile): every branch, leaf and overflow page that is
/// referenced must lie inside the file. Only then is the database opened. The walk reads the
/// whole tree, so it runs only for a short file (rare, and left so until a commit writes the
/// last page).
///
/// The layout read here is LMDB 0.9's on-disk format (64-bit page numbers): a page header of 16
/// bytes (page number, pad, flags, lower and upper bounds, or an overflow page's page count), node
/// offsets after it; a node is `lo`, `hi`, `flags` and `ksize` (16 bits each), then its key and data.
package enum DataFileCheck {
    /// How the walk ended.
    enum Outcome: Equatable {
        /// Every referenced page lies inside the file.
        case whole
        /// A referenced page (this one) lies past the file's end.
        case truncated(page: UInt64)
        /// A page's bytes are not an LMDB page of the kind expected.
        case damaged(page: UInt64)
    }

    private static let branch: UInt16 = 0x01, leaf: UInt16 = 0x02, overflow: UInt16 = 0x04, leaf2: UInt16 = 0x20
    private static let bigData: UInt16 = 0x01, subData: UInt16 = 0x02
    private static let invalidPage = UInt64.max
    private static let headerSize = 16
    /// Where a database record (`MDB_db`) keeps its root page, and its size.
    private static let rootOffset = 40, databaseSize = 48
    /// Where the meta page (after the page header) keeps the free and main databases and the
    /// transaction id.
    private static let metaDatabases = 16 + 24, metaTransactionID = 16 + 24 + 96 + 8

    /// Walks the snapshot of the read transaction `transaction` (for its id) in the file
    /// `descriptor` of `fileSize` bytes, pages of `pageSize` bytes.
    static func walk(descriptor: Int32, fileSize: Int, pageSize: Int, snapshot transactionID: UInt64) -> Outcome {
        guard pageSize >= 512, fileSize >= 2 * pageSize else { return .damaged(page: 0) }
        let pages = UInt64(fileSize / pageSize)
        var page = [UInt8](repeating: 0, count: pageSize)
        func read(_ number: UInt64) -> Bool {
            let offset = off_t(number) * off_t(pageSize)
            return page.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, pageSize, offset) } == pageSize
        }
        func u16(_ offset: Int) -> UInt16 { UInt16(page[offset]) | UInt16(page[offset + 1]) << 8 }
        func u64(_ offset: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(page[offset + $1]) << (8 * $1) } }

        // The meta page of the snapshot: LMDB writes transaction n's meta to page n % 2.
        guard read(transactionID & 1), u64(metaTransactionID) == transactionID else { return .damaged(page: transactionID & 1) }
        var stack = [u64(metaDatabases + rootOffset), u64(metaDatabases + databaseSize + rootOffset)].filter { $0 != invalidPage }
        var visited = Set<UInt64>()
        while let number = stack.popLast() {
            guard number >= 2, number < pages else { return number < 2 ? .damaged(page: number) : .truncated(page: number) }
            guard visited.insert(number).inserted else { return .damaged(page: number) }  // a page used twice: a cycle
            guard read(number) else { return .truncated(page: number) }
            let flags = u16(10)
            if flags & leaf2 != 0 { continue }
            guard flags & (branch | leaf) != 0 else { return .damaged(page: number) }
            let lower = Int(u16(12))
            guard lower >= headerSize, lower <= pageSize, (lower - headerSize) % 2 == 0 else { return .damaged(page: number) }
            for index in 0..<((lower - headerSize) / 2) {
                let node = Int(u16(headerSize + 2 * index))
                guard node >= lower, node + 8 <= pageSize else { return .damaged(page: number) }
                let low = UInt64(u16(node)), high = UInt64(u16(node + 2)), nodeFlags = u16(node + 4)
                if flags & branch != 0 {
                    stack.append(low | high << 16 | UInt64(nodeFlags) << 32)
                    continue
                }
                let data = node + 8 + Int(u16(node + 6))
                if nodeFlags & bigData != 0 {
                    guard data + 8 <= pageSize else { return .damaged(page: number) }
                    let first = u64(data)
                    guard first >= 2, first < pages else { return first < 2 ? .damaged(page: number) : .truncated(page: first) }
                    let owner = page
                    guard read(first), u16(10) & overflow != 0 else { return .damaged(page: first) }
                    let count = UInt64(UInt32(u16(12)) | UInt32(u16(14)) << 16)
                    guard count >= 1, first + count <= pages else { return .truncated(page: first + count - 1) }
                    page = owner
                } else if nodeFlags & subData != 0 {
                    guard data + databaseSize <= pageSize else { return .damaged(page: number) }
                    let root = u64(data + rootOffset)
                    if root != invalidPage { stack.append(root) }
                }
            }
        }
        return .whole
    }

    /// Checks the environment `env` just opened on `path` (no page read yet): a data file at
    /// least as long as its last commit says is whole; a shorter one is walked.
    /// - Throws: `storage` (`MDB_CORRUPTED`) when a page in use lies past the end of the file, or
    ///   is not what it should be.
    static func check(_ env: OpaquePointer, path: String) throws(DatabaseError) {
        var info = MDB_envinfo()
        var statistics = MDB_stat()
        guard mdb_env_info(env, &info) == MDB_SUCCESS, mdb_env_stat(env, &statistics) == MDB_SUCCESS else { return }
        let pageSize = Int(statistics.ms_psize)
        let needed = (info.me_last_pgno + 1) * pageSize
        let dataPath = path + "/data.mdb"
        let descriptor = open(dataPath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw LMDBStatus.error(errno, "open '\(dataPath)'") }
        defer { close(descriptor) }
        var file = stat()
        guard fstat(descriptor, &file) == 0 else { throw LMDBStatus.error(errno, "stat '\(dataPath)'") }
        guard Int(file.st_size) < needed else { return }
        // Short: pin a snapshot (a read transaction touches no page) and walk it.
        var txn: OpaquePointer?
        try LMDBStatus.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "begin read transaction")
        guard let txn else { throw LMDBStatus.error(EINVAL, "begin read transaction") }
        defer { mdb_txn_abort(txn) }
        let outcome = walk(descriptor: descriptor, fileSize: Int(file.st_size), pageSize: pageSize, snapshot: UInt64(mdb_txn_id(txn)))
        switch outcome {
        case .whole:
            return
        case let .truncated(page):
            throw .storage(
                operation: "open '\(path)'", code: MDB_CORRUPTED,
                message: "the data file is truncated: it has \(file.st_size) bytes, and page \(page), in use, lies past its end")
        case let .damaged(page):
            throw .storage(operation: "open '\(path)'", code: MDB_CORRUPTED, message: "the data file is damaged: page \(page) is not a page in use")
        }
    }
}
