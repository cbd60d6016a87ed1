import CLMDBRaw
import Foundation
import LocalLMDB

/// The floor: LMDB storing the same JSON bytes LocalLMDB stores, pre-encoded before timing, with
/// no LocalLMDB code between. Reads copy the value out of the map and decode nothing. Read
/// transactions are pooled (`MDB_NOTLS`, reset and renewed), as a careful LMDB user would.
public final class RawLMDB: Contender, @unchecked Sendable {
    public static let name = "raw LMDB"
    private let env: OpaquePointer
    private var dbi: MDB_dbi = 0
    private let idle = NSLock()
    private var idleReaders: [OpaquePointer] = []
    private let model: BenchModel
    /// The objects' JSON, encoded before timing by `prepare` (shared by every store of a run).
    private var encoded: EncodedObjects?

    struct Failure: Error { let code: Int32 }

    public init(directory: URL, model: BenchModel) throws {
        self.model = model
        var handle: OpaquePointer?
        try Self.check(mdb_env_create(&handle))
        guard let handle else { throw Failure(code: -1) }
        env = handle
        // 8 GiB: room for a million wide objects (about 1 GiB); the map is sparse.
        try Self.check(mdb_env_set_mapsize(env, 8 << 30))
        try Self.check(mdb_env_set_maxreaders(env, 256))
        try Self.check(mdb_env_open(env, directory.path, UInt32(MDB_NOTLS), 0o600))
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &txn))
        try Self.check(mdb_dbi_open(txn, nil, 0, &dbi))
        try Self.check(mdb_txn_commit(txn))
    }

    deinit {
        for reader in idleReaders { mdb_txn_abort(reader) }
        mdb_env_close(env)
    }

    static func check(_ code: Int32) throws {
        if code != 0 { throw Failure(code: code) }
    }

    /// Takes the objects' JSON, encoded ahead of the timed work.
    public func prepare(_ encoded: EncodedObjects) {
        precondition(encoded.model == model, "objects of another model")
        self.encoded = encoded
    }

    private func put(_ txn: OpaquePointer?, id: String, index: Int) throws {
        if let encoded, index < encoded.count {
            try encoded.withBytes(of: index) { try put(txn, id: id, value: $0) }
        } else {
            try model.json(index: index).withUnsafeBytes { try put(txn, id: id, value: $0) }
        }
    }

    private func put(_ txn: OpaquePointer?, id: String, value: UnsafeRawBufferPointer) throws {
        var id = id
        try id.withUTF8 { key in
            var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            var dataValue = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            try Self.check(mdb_put(txn, dbi, &keyValue, &dataValue, 0))
        }
    }

    public func writeBatch(ids: [String], firstIndex: Int) async throws {
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &txn))
        for (offset, id) in ids.enumerated() { try put(txn, id: id, index: firstIndex + offset) }
        try Self.check(mdb_txn_commit(txn))
    }

    public func writeOne(id: String, index: Int) async throws {
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &txn))
        try put(txn, id: id, index: index)
        try Self.check(mdb_txn_commit(txn))
    }

    private func withReader<R>(_ body: (OpaquePointer?) throws -> R) throws -> R {
        idle.lock()
        let pooled = idleReaders.popLast()
        idle.unlock()
        var txn = pooled
        if let pooled {
            try Self.check(mdb_txn_renew(pooled))
        } else {
            try Self.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        }
        defer {
            mdb_txn_reset(txn)
            idle.lock()
            if let txn { idleReaders.append(txn) }
            idle.unlock()
        }
        return try body(txn)
    }

    public func read(id: String) async throws -> Int {
        try readSynchronously(id: id)
    }

    public func readSynchronously(id: String) throws -> Int {
        var id = id
        return try withReader { txn in
            id.withUTF8 { key in
                var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                var dataValue = MDB_val()
                guard mdb_get(txn, dbi, &keyValue, &dataValue) == 0 else { return -1 }
                let copy = Array(UnsafeRawBufferPointer(start: dataValue.mv_data, count: dataValue.mv_size))
                return copy.count
            }
        }
    }

    public func readAll() async throws -> ReadAllResult {
        try await ReadAllResult.measuring {
            try withReader { txn in
                var cursor: OpaquePointer?
                try Self.check(mdb_cursor_open(txn, dbi, &cursor))
                defer { mdb_cursor_close(cursor) }
                var copies: [[UInt8]] = []
                var key = MDB_val()
                var value = MDB_val()
                var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
                while code == 0 {
                    copies.append(Array(UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)))
                    code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                }
                return copies
            }
        }
    }

    public func count() async throws -> Int {
        try withReader { txn in
            var stat = MDB_stat()
            try Self.check(mdb_stat(txn, dbi, &stat))
            return stat.ms_entries
        }
    }
}
