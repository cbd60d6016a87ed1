import Crypto
import Foundation

/// A 256-bit key and its id, supplied by the app (from the Keychain, a key management
/// service, a passphrase's key derivation...). LocalLMDB never stores a key: it stores the id
/// beside each value sealed under it, and a key check (a known text sealed under it) that
/// tells a wrong key at open.
public struct EncryptionKey: Sendable {
    /// The key's id: 1 to 255 bytes of UTF-8, stored in the clear. Not secret; name keys so
    /// that a new one gets a new id (a date, a counter).
    public let id: String
    /// The key.
    let key: SymmetricKey

    /// The key `bytes` (exactly 32) under the id `id`.
    /// - Throws: `EncryptionKeyError` when the key is not 256 bits or the id is empty or too long.
    public init(id: String, bytes: some ContiguousBytes) throws(EncryptionKeyError) {
        let count = bytes.withUnsafeBytes { $0.count }
        guard count == 32 else { throw .wrongKeySize(count) }
        guard !id.isEmpty, id.utf8.count <= 255 else { throw .invalidID(id) }
        self.id = id
        key = SymmetricKey(data: bytes)
    }

    /// A new random 256-bit key under the id `id`, from the system's secure random generator.
    /// Keep its bytes (`withUnsafeBytes`) where the app keeps secrets: without them, what it
    /// sealed cannot be read.
    public static func random(id: String) throws(EncryptionKeyError) -> EncryptionKey {
        let key = SymmetricKey(size: .bits256)
        return try EncryptionKey(id: id, bytes: key.withUnsafeBytes { Array($0) })
    }

    /// Calls `body` with the key's bytes, to store them safely.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try key.withUnsafeBytes(body)
    }
}

/// Why an `EncryptionKey` or `AESGCMCipher` could not be made.
public enum EncryptionKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A key must be 32 bytes; this one has `count`.
    case wrongKeySize(Int)
    /// A key id must be 1 to 255 bytes of UTF-8.
    case invalidID(String)
    /// Two keys of a cipher have the same id.
    case duplicateID(String)

    public var description: String {
        switch self {
        case let .wrongKeySize(count): return "An encryption key must be 32 bytes (256 bits), not \(count)."
        case let .invalidID(id): return "A key id must be 1 to 255 bytes of UTF-8: '\(id)' is not."
        case let .duplicateID(id): return "Two keys have the id '\(id)'."
        }
    }
}
