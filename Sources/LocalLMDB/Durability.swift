import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// How much a returned write is protected against crashes.
///
/// Every level is crash-safe for the database itself: LMDB never leaves a torn or corrupt file,
/// whatever happens. The levels differ in which recent writes a crash of the *operating system*
/// (power loss, kernel panic) may undo. A crash of the app alone never loses a returned write.
public enum Durability: Sendable, Equatable {
    /// A write has reached the disk when it returns (two `fsync`s per commit). The default.
    case full
    /// The data is synced on commit, the metadata page later (`MDB_NOMETASYNC`): a system crash
    /// may undo the last transactions, never corrupt the database. About half the cost of `.full`.
    case metaAsync
    /// Nothing is synced on commit (`MDB_NOSYNC`): the operating system writes data back in its
    /// own time. A system crash may undo any number of recent transactions; it corrupts nothing on
    /// a file system that keeps writes in order (LMDB's condition for `MDB_NOSYNC`; ext4, XFS and
    /// APFS do), but may on one that does not. For caches and benchmarks.
    case none

    /// The LMDB environment flags for this level. (`MDB_WRITEMAP` is never used: with no sync it
    /// would let a system crash corrupt the file.)
    /// The durability of an engine's sync mode.
    init(_ sync: SyncMode) {
        switch sync {
        case .full: self = .full
        case .metaAsync: self = .metaAsync
        case .none: self = .none
        }
    }

    /// The engine's sync mode for this durability.
    var syncMode: SyncMode {
        switch self {
        case .full: return .full
        case .metaAsync: return .metaAsync
        case .none: return .none
        }
    }
}
