import CLMDB
import Foundation

/// How an environment uses its files: what `localdb stats` reports.
package struct StorageStatistics: Sendable {
    /// The size of the data file.
    package let fileBytes: Int
    /// The memory map's current size (the most the data file may grow to before it is enlarged).
    package let mapBytes: Int
    /// The bytes of the map in use: the pages up to the last one written.
    package let usedBytes: Int
    /// LMDB's page size.
    package let pageSize: Int
    /// The id of the last committed write transaction.
    package let lastCommit: Int
    /// Reader slots in use (by any process), and how many there are.
    package let readers: Int
    package let maxReaders: Int
}

extension Environment {
    /// The environment's use of its files, now.
    package func storageStatistics() -> StorageStatistics {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(handle, &info)
        mdb_env_stat(handle, &stat)
        let file = (try? FileManager.default.attributesOfItem(atPath: directoryPath + "/data.mdb")[.size] as? Int) ?? 0
        return StorageStatistics(
            fileBytes: file, mapBytes: info.me_mapsize, usedBytes: (info.me_last_pgno + 1) * Int(stat.ms_psize),
            pageSize: Int(stat.ms_psize), lastCommit: info.me_last_txnid, readers: Int(info.me_numreaders),
            maxReaders: Int(info.me_maxreaders))
    }
}
