import Crypto
import Foundation
import LocalLMDB

/// AES-256-GCM from swift-crypto (BoringSSL on Linux, CryptoKit on Apple platforms): the
/// `RecordCipher` of LocalLMDB's encryption at rest.
///
/// Each value is sealed with a fresh random 96-bit nonce (from the system's secure generator,
/// drawn 21 at a time), its record's class name and id as associated data, and a 128-bit tag:
/// `nonce ‖ ciphertext ‖ tag`, 28 bytes more than the document. (Random nonces stay safe for about 2³² values sealed under one key; rotate long
/// before: ``LocalLMDB/LocalDatabase/reencrypt(batchSize:progress:)``.)
///
/// ```swift
/// let cipher = try AESGCMCipher(current: newKey, previous: [oldKey])
/// var configuration = DatabaseConfiguration()
/// configuration.encryption = DatabaseEncryption(cipher)
/// ```
public struct AESGCMCipher: RecordCipher {
    /// The key new values are sealed under.
    public let current: EncryptionKey
    /// Every key, the current one first, then older ones kept to open values not sealed again
    /// yet: few, so found faster by comparing ids in turn than by hashing one.
    private let keys: [(id: String, key: SymmetricKey)]

    /// A cipher sealing under `current` and opening values sealed under it or any of `previous`.
    /// - Throws: `EncryptionKeyError.duplicateID` when two keys share an id.
    public init(current: EncryptionKey, previous: [EncryptionKey] = []) throws(EncryptionKeyError) {
        var keys = [(id: current.id, key: current.key)]
        for key in previous {
            guard !keys.contains(where: { $0.id == key.id }) else { throw .duplicateID(key.id) }
            keys.append((key.id, key.key))
        }
        self.current = current
        self.keys = keys
        // Made now, not at the first seal: a `fork` while another thread makes it would leave
        // the child unable to.
        _ = NonceSource.shared
    }

    public var currentKeyID: String { current.id }

    public func hasKey(id keyID: String) -> Bool { key(keyID) != nil }

    public func seal(_ plaintext: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws -> [UInt8] {
        var sealed: [UInt8] = []
        try seal(plaintext, keyID: keyID, associatedData: associatedData, appendingTo: &sealed)
        return sealed
    }

    public func seal(
        _ plaintext: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]
    ) throws {
        guard let key = key(keyID) else { throw AESGCMCipherError.unknownKey(keyID) }
        let box = try AES.GCM.seal(plaintext, using: key, nonce: NonceSource.shared.next(), authenticating: associatedData)
        // Never nil with the standard 12-byte nonce.
        guard let combined = box.combined else { throw AESGCMCipherError.malformed }
        combined.withUnsafeBytes { output.append(contentsOf: $0) }
    }

    public func open(_ sealed: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws -> [UInt8] {
        try withOpened(sealed, keyID: keyID, associatedData: associatedData) { Array($0) }
    }

    public func withOpened<Result>(
        _ sealed: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) -> Result
    ) throws -> Result {
        guard let key = key(keyID) else { throw AESGCMCipherError.unknownKey(keyID) }
        guard sealed.count >= 28 else { throw AESGCMCipherError.malformed }
        let box = try AES.GCM.SealedBox(combined: sealed)
        return try AES.GCM.open(box, using: key, authenticating: associatedData).withUnsafeBytes(body)
    }

    /// The key `keyID`, if the cipher holds it.
    private func key(_ keyID: String) -> SymmetricKey? {
        keys.first { $0.id == keyID }?.key
    }
}

/// Why `AESGCMCipher` could not seal or open a value (besides swift-crypto's own errors, such
/// as `CryptoKitError.authenticationFailure` for a value that was changed).
public enum AESGCMCipherError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The cipher holds no key of this id.
    case unknownKey(String)
    /// The sealed bytes are too short to be a sealed value.
    case malformed

    public var description: String {
        switch self {
        case let .unknownKey(id): return "no key has the id '\(id)'"
        case .malformed: return "the sealed bytes are too short to be a sealed value"
        }
    }
}
