#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` with a typed error.
    @discardableResult
    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { buffer in
            Result { () throws(E) in try body(buffer) }
        }
        return try result.get()
    }
}

extension UnsafeRawBufferPointer {
    /// Whether both buffers hold the same bytes.
    /// Short buffers (member names, mostly) are compared in place; a call to `memcmp` costs
    /// more than comparing them.
    @inline(__always)
    func hasSameBytes(as other: UnsafeRawBufferPointer) -> Bool {
        guard count == other.count else { return false }
        guard count > 0, let left = baseAddress, let right = other.baseAddress else { return true }
        guard count <= 16 else { return memcmp(left, right, count) == 0 }
        for index in 0..<count where left.load(fromByteOffset: index, as: UInt8.self) != right.load(fromByteOffset: index, as: UInt8.self) {
            return false
        }
        return true
    }
}
