import CLMDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Environment {
    /// Writes a copy of the environment's data file to `descriptor` (at its start), consistent
    /// as of one commit: LMDB's copy (`mdb_env_copyfd2`) in a read transaction of its own, so
    /// writers go on meanwhile. With `compact`, free pages are left out and the pages renumbered
    /// (`MDB_CP_COMPACT`, as `mdb_copy -c`). Blocks the calling thread until the copy is
    /// written (not synced: the caller syncs `descriptor`).
    ///
    /// The copy counts as a transaction of this process: the map is not resized, nor the
    /// environment closed, while it runs (a write that must grow the map waits for it).
    package func copy(to descriptor: Int32, compact: Bool) throws(DatabaseError) {
        while true {
            let ticket = gate.enter()
            guard !gate.isClosed else {
                gate.leave(ticket)
                throw .closed
            }
            let code = mdb_env_copyfd2(handle, descriptor, UInt32(compact ? MDB_CP_COMPACT : 0))
            gate.leave(ticket)
            if code == MDB_SUCCESS { return }
            guard code == MDB_MAP_RESIZED else { throw LMDBStatus.error(code, "copy the environment") }
            // Another process grew the map: adopt its size and copy again, from the start.
            try adoptMapSize()
            guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
                throw LMDBStatus.error(errno, "rewind the copy")
            }
        }
    }

    /// The bytes the data file's pages in use take (a copy without compaction is this long).
    package var bytesInUse: Int { usage.used }
}
