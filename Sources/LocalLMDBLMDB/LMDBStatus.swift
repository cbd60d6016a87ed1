import CLMDB

/// Turns LMDB return codes into `DatabaseError.storage`.
@usableFromInline package enum LMDBStatus {
    /// Throws unless `code` is `MDB_SUCCESS`.
    @inline(__always)
    @inlinable static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(DatabaseError) {
        if code != MDB_SUCCESS {
            throw error(code, operation())
        }
    }

    /// The error for an LMDB (or errno) code.
    @inlinable static func error(_ code: Int32, _ operation: String) -> DatabaseError {
        let message = mdb_strerror(code).map { String(cString: $0) } ?? "unknown error"
        return .storage(operation: operation, code: code, message: message)
    }
}

extension DatabaseError {
    /// The LMDB code of a `.storage` error, if this is one.
    @inlinable var lmdbCode: Int32? {
        if case let .storage(_, code, _) = self { return code }
        return nil
    }

    /// True when a write failed only because the memory map is full.
    @inlinable package var isMapFull: Bool { lmdbCode == MDB_MAP_FULL }
}
