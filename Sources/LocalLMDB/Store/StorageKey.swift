/// The bytes under which LMDB stores a record id or a type name.
///
/// A name of 1 to `maxKeySize` bytes of UTF-8 is its own key. Any other name (empty, or over
/// LMDB's key limit of 511 bytes) is stored under `0xFF` followed by its SHA-256 digest. No UTF-8
/// string starts with the byte `0xFF`, so the two forms never collide; the full name of a hashed
/// key is kept in the record's value.
struct StorageKey: Sendable, Hashable {
    /// The LMDB key.
    let bytes: [UInt8]

    /// The first byte of a hashed key.
    static let hashMarker: UInt8 = 0xFF

    init(_ name: String, maxKeySize: Int) {
        let utf8 = Array(name.utf8)
        if utf8.isEmpty || utf8.count > maxKeySize {
            bytes = [Self.hashMarker] + SHA256.digest(utf8)
        } else {
            bytes = utf8
        }
    }

    init(rawBytes: UnsafeRawBufferPointer) {
        bytes = Array(rawBytes)
    }

    /// True when the key is a digest, so the name must be read from the record's value.
    var isHashed: Bool { bytes.first == Self.hashMarker }

    /// The name, when the key is the name itself.
    var name: String? { isHashed ? nil : String(decoding: bytes, as: UTF8.self) }

    /// Calls `body` with the key's bytes.
    @discardableResult
    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try bytes.withBytes(body)
    }
}

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
    /// True when the buffer starts with the hashed-key marker.
    var isHashedKey: Bool { first == StorageKey.hashMarker }
}
