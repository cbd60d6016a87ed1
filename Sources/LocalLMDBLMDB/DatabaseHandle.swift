import CLMDB

/// A named database inside an environment (LMDB's `MDB_dbi`), valid while the environment is open.
@usableFromInline package typealias DatabaseHandle = MDB_dbi

/// Where `Cursor.get` puts the cursor: LMDB's cursor operations the layers above use.
@usableFromInline package enum CursorPosition: Sendable {
    /// The first pair.
    case first
    /// The last pair.
    case last
    /// The pair after the current one (the next duplicate, or the next key's first).
    case next
    /// The next duplicate of the current key, nil after its last.
    case nextDuplicate
    /// The first pair of the key given (`MDB_SET_KEY`).
    case key
    /// The pair with the key and value given (`MDB_GET_BOTH`, in a sorted-duplicates database).
    case keyAndValue
    /// The first duplicate of the key given that is at least the value given
    /// (`MDB_GET_BOTH_RANGE`, in a sorted-duplicates database).
    case keyAndValueAtLeast
    /// The first pair whose key is at least the key given (`MDB_SET_RANGE`).
    case keyAtLeast
    /// The pair before the current one (the previous duplicate, or the previous key's last).
    case previous
    /// The last duplicate of the current key (`MDB_LAST_DUP`).
    case lastDuplicate
    /// The first pair of the next key (`MDB_NEXT_NODUP`).
    case nextKey

    /// LMDB's operation.
    @inlinable var operation: MDB_cursor_op {
        switch self {
        case .first: return MDB_FIRST
        case .last: return MDB_LAST
        case .next: return MDB_NEXT
        case .nextDuplicate: return MDB_NEXT_DUP
        case .key: return MDB_SET_KEY
        case .keyAndValue: return MDB_GET_BOTH
        case .keyAndValueAtLeast: return MDB_GET_BOTH_RANGE
        case .keyAtLeast: return MDB_SET_RANGE
        case .previous: return MDB_PREV
        case .lastDuplicate: return MDB_LAST_DUP
        case .nextKey: return MDB_NEXT_NODUP
        }
    }
}

/// How `Transaction.put` treats a key already present.
@usableFromInline package enum PutMode: Sendable {
    /// Replace its value (or, in a sorted-duplicates database, add the value).
    case upsert
    /// Store nothing and report it (`MDB_NOOVERWRITE`).
    case keepExisting
    /// In a sorted-duplicates database, store nothing when the pair exists (`MDB_NODUPDATA`).
    case keepExistingPair

    /// LMDB's flags.
    @inlinable var flags: UInt32 {
        switch self {
        case .upsert: return 0
        case .keepExisting: return UInt32(MDB_NOOVERWRITE)
        case .keepExistingPair: return UInt32(MDB_NODUPDATA)
        }
    }
}
