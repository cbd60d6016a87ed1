import LocalLMDBLMDB
import LocalLMDBJSON

/// The bytes under which LMDB stores a record id or a type name.
///
/// A name of 1 to `maxKeySize` bytes of UTF-8 is its own key. Any other name (empty, or over
/// LMDB's key limit of 511 bytes) is stored under `0xFF` followed by its SHA-256 digest. No UTF-8
/// string starts with the byte `0xFF`, so the two forms never collide; the full name of a hashed
/// key is kept in the record's value.
@usableFromInline package struct StorageKey: Sendable, Hashable {
    /// A name that is its own key keeps the `String` (its UTF-8 is the key, with no copy).
    @usableFromInline enum Form: Sendable {
        case name(String)
        /// The digest, and the name it was made from.
        case digest([UInt8], name: String)
    }

    @usableFromInline let form: Form

    /// The first byte of a hashed key.
    @usableFromInline static let hashMarker: UInt8 = 0xFF

    @inlinable package init(_ name: String, maxKeySize: Int) {
        let length = name.utf8.count
        if length == 0 || length > maxKeySize {
            form = .digest([Self.hashMarker] + SHA256.digest(Array(name.utf8)), name: name)
        } else {
            form = .name(name)
        }
    }

    /// The id or class name this key was made from.
    @inlinable package var id: String {
        switch form {
        case let .name(name), let .digest(_, name): return name
        }
    }

    /// True when the key is a digest, so the name must be read from the record's value.
    @inlinable package var isHashed: Bool {
        if case .digest = form { return true }
        return false
    }

    /// The LMDB key, copied.
    @inlinable package var bytes: [UInt8] {
        switch form {
        case let .name(name): return Array(name.utf8)
        case let .digest(digest, _): return digest
        }
    }

    /// Calls `body` with the key's bytes.
    @discardableResult
    @inlinable func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        switch form {
        case var .name(name):
            let result: Result<R, E> = name.withUTF8 { utf8 in
                Result { () throws(E) in try body(UnsafeRawBufferPointer(utf8)) }
            }
            return try result.get()
        case let .digest(digest, _):
            return try digest.withBytes(body)
        }
    }

    // Keys are equal when their bytes are: `String`'s == would also equate different UTF-8
    // spellings of the same characters, which LMDB stores under different keys.
    @inlinable package static func == (lhs: StorageKey, rhs: StorageKey) -> Bool {
        lhs.withBytes { left in rhs.withBytes { right in left.hasSameBytes(as: right) } }
    }

    @inlinable package func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: $0) }
    }
}

extension UnsafeRawBufferPointer {
    /// True when the buffer starts with the hashed-key marker.
    @inlinable var isHashedKey: Bool { first == StorageKey.hashMarker }
}
