import CLMDB

/// Turns LMDB return codes into `DatabaseError.storage`.
package enum LMDBStatus {
    /// Throws unless `code` is `MDB_SUCCESS`.
    @inline(__always)
    static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(DatabaseError) {
        if code != MDB_SUCCESS {
            throw error(code, operation())
        }
    }

    /// The error for an LMDB (or errno) code.
    static func error(_ code: Int32, _ operation: String) -> DatabaseError {
        let message = mdb_strerror(code).map { String(cString: $0) } ?? "unknown error"
        return .storage(operation: operation, code: code, message: message)
    }
}

extension DatabaseError {
    /// The LMDB code of a `.storage` error, if this is one.
    var lmdbCode: Int32? {
        if case let .storage(_, code, _) = self { return code }
        return nil
    }

    /// True when a write failed only because the memory map is full.
    package var isMapFull: Bool { lmdbCode == MDB_MAP_FULL }
}
