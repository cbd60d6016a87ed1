#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` with a typed error.
    @discardableResult
    @inlinable package func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { buffer in
            Result { () throws(E) in try body(buffer) }
        }
        return try result.get()
    }
}

extension String {
    /// The string's UTF-8 bytes, contiguous, with a typed error (`withUTF8` on a copy).
    @inlinable package func withUTF8Bytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var text = self
        let result: Result<R, E> = text.withUTF8 { utf8 in
            Result { () throws(E) in try body(UnsafeRawBufferPointer(utf8)) }
        }
        return try result.get()
    }

    /// Whether both strings are the same UTF-8 bytes: the equality of record ids and class
    /// names as LMDB and PostgreSQL key them. (`==` on `String` is canonical equivalence, which
    /// holds between `"\u{E9}"` and `"e\u{301}"`: two ids, two records.) Equal bytes are
    /// canonically equivalent, so the lengths, then `==` (quick on ASCII and NFC text) rule out
    /// most other strings before the bytes are compared.
    @inlinable package func hasSameUTF8(as other: String) -> Bool {
        guard utf8.count == other.utf8.count, self == other else { return false }
        var left = self
        var right = other
        return left.withUTF8 { left in
            right.withUTF8 { right in UnsafeRawBufferPointer(left).hasSameBytes(as: UnsafeRawBufferPointer(right)) }
        }
    }
}

extension UnsafeRawBufferPointer {
    /// Whether both buffers hold the same bytes.
    /// Short buffers (member names, mostly) are compared in place; a call to `memcmp` costs
    /// more than comparing them.
    @inline(__always)
    @inlinable package func hasSameBytes(as other: UnsafeRawBufferPointer) -> Bool {
        guard count == other.count else { return false }
        guard count > 0, let left = baseAddress, let right = other.baseAddress else { return true }
        guard count <= 16 else { return memcmp(left, right, count) == 0 }
        // Short runs (keys, mostly) in two loads a side that overlap when the run is shorter
        // than two words: no loop, no call.
        if count >= 8 {
            return left.loadUnaligned(as: UInt64.self) == right.loadUnaligned(as: UInt64.self)
                && left.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self) == right.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        }
        if count >= 4 {
            return left.loadUnaligned(as: UInt32.self) == right.loadUnaligned(as: UInt32.self)
                && left.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self) == right.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        }
        for index in 0..<count where left.load(fromByteOffset: index, as: UInt8.self) != right.load(fromByteOffset: index, as: UInt8.self) {
            return false
        }
        return true
    }
}

extension UnsafeRawBufferPointer {
    /// The order of the two buffers' bytes (as `memcmp`, then the shorter first): negative when
    /// this one comes first, zero when equal, positive when it comes after.
    @inlinable package func compareBytes(with other: UnsafeRawBufferPointer) -> Int {
        let common = Swift.min(count, other.count)
        if common > 0, let left = baseAddress, let right = other.baseAddress {
            let order = memcmp(left, right, common)
            if order != 0 { return Int(order) }
        }
        return count - other.count
    }

    /// Whether this buffer's bytes start with `prefix`'s.
    @inlinable package func startsWithBytes(of prefix: UnsafeRawBufferPointer) -> Bool {
        guard count >= prefix.count else { return false }
        return UnsafeRawBufferPointer(rebasing: self[..<prefix.count]).hasSameBytes(as: prefix)
    }
}
