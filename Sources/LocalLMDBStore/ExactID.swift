import LocalLMDBLMDB

/// A record id that equals another only when their UTF-8 bytes do, as LMDB keys records.
///
/// Swift's `String` equality and hashing treat canonically equivalent strings as equal
/// (`"\u{E9}"` and `"e\u{301}"`), but those are two ids of two records: a set or dictionary of
/// ids that a write or read relies on to tell records apart keys them with `ExactID`.
package struct ExactID: Hashable, Sendable {
    package let id: String

    @inlinable package init(_ id: String) {
        self.id = id
    }

    @inlinable package static func == (left: ExactID, right: ExactID) -> Bool {
        left.id.hasSameUTF8(as: right.id)
    }

    /// A cheap digest of `id`'s bytes, for scanning a few ids without hashing them: equal ids
    /// (by their bytes) have equal fingerprints, so ids whose fingerprints differ differ.
    @inlinable package static func fingerprint(of id: String) -> UInt64 {
        var id = id
        return id.withUTF8 { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            guard let base = bytes.baseAddress, bytes.count >= 8 else {
                // Fewer than 8 bytes, each in a byte of its own; the length tells "a" from "a\0".
                var value = UInt64(bytes.count) << 60
                for (index, byte) in bytes.enumerated() { value ^= UInt64(byte) << (8 * UInt64(index)) }
                return value
            }
            // The first and the last 8 bytes (overlapping when fewer than 16), and the length.
            let first = base.loadUnaligned(as: UInt64.self)
            let last = base.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self)
            return (first &* 0x9E37_79B9_7F4A_7C15) ^ last ^ (UInt64(truncatingIfNeeded: bytes.count) << 59)
        }
    }

    @inlinable package func hash(into hasher: inout Hasher) {
        var id = id
        id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
