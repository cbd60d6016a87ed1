import CLMDB
import Foundation

/// Why `unpublishLastCommit` could not do it.
public struct UnpublishFailure: Error, CustomStringConvertible {
    public let description: String
}

/// Leaves the database in `directory` as a writer killed after its last commit's meta page
/// reached the file but before LMDB published the transaction id in the lock file (readers take
/// the last commit from there): holding LMDB's writer lock, puts that id back by one. Returns the
/// id unpublished. The caller then dies holding the lock (`SIGKILL`), as that writer would; no
/// database may be open in the calling process.
public func unpublishLastCommit(in directory: URL) throws -> Int {
    var env: OpaquePointer?
    guard mdb_env_create(&env) == 0, let env else { throw UnpublishFailure(description: "mdb_env_create failed") }
    mdb_env_set_maxdbs(env, 8)
    guard mdb_env_open(env, directory.path, UInt32(MDB_NOTLS), 0o600) == 0 else { throw UnpublishFailure(description: "mdb_env_open failed") }
    var txn: OpaquePointer?
    guard mdb_txn_begin(env, nil, 0, &txn) == 0 else { throw UnpublishFailure(description: "begin failed") }
    var info = MDB_envinfo()
    mdb_env_info(env, &info)
    // MDB_txninfo starts with two 32-bit words, the reader mutex, then the last transaction id.
    let alignment = MemoryLayout<Int>.alignment
    let offset = (8 + MemoryLayout<pthread_mutex_t>.size + alignment - 1) / alignment * alignment
    let lockFile = open(directory.appendingPathComponent("lock.mdb").path, O_RDWR)
    var published = 0
    guard lockFile >= 0, pread(lockFile, &published, 8, off_t(offset)) == 8, published == info.me_last_txnid else {
        throw UnpublishFailure(description: "unexpected lock file layout")
    }
    var previous = published - 1
    guard pwrite(lockFile, &previous, 8, off_t(offset)) == 8 else { throw UnpublishFailure(description: "write failed") }
    return published
}
