import CLMDB

/// How a commit reaches the disk: the LMDB flags behind the public `Durability`.
package enum SyncMode: Sendable, Equatable {
    /// Both syncs of a commit (data pages, then the meta page).
    case full
    /// The meta page is written without waiting for it (`MDB_NOMETASYNC`).
    case metaAsync
    /// Nothing is synced by the commit (`MDB_NOSYNC`).
    case none

    /// The environment flags for this mode.
    var environmentFlags: Int32 {
        switch self {
        case .full: return 0
        case .metaAsync: return MDB_NOMETASYNC
        case .none: return MDB_NOSYNC
        }
    }
}
