import Crypto
import Foundation
import LocalLMDB

/// AES-256-GCM from swift-crypto (BoringSSL on Linux, CryptoKit on Apple platforms): the
/// `RecordCipher` of LocalLMDB's encryption at rest.
///
/// Each value is sealed with a fresh random 96-bit nonce, its record's class name and id as
/// associated data, and a 128-bit tag: `nonce ‖ ciphertext ‖ tag`, 28 bytes more than the
/// document. (Random nonces stay safe for about 2³² values sealed under one key; rotate long
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
    /// Every key, by id: the current one and older ones kept to open values not sealed again yet.
    private let keys: [String: SymmetricKey]

    /// A cipher sealing under `current` and opening values sealed under it or any of `previous`.
    /// - Throws: `EncryptionKeyError.duplicateID` when two keys share an id.
    public init(current: EncryptionKey, previous: [EncryptionKey] = []) throws(EncryptionKeyError) {
        var keys = [current.id: current.key]
        for key in previous {
            guard keys[key.id] == nil else { throw .duplicateID(key.id) }
            keys[key.id] = key.key
        }
        self.current = current
        self.keys = keys
    }

    public var currentKeyID: String { current.id }

    public func hasKey(id keyID: String) -> Bool { keys[keyID] != nil }

    public func seal(_ plaintext: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard let key = keys[keyID] else { throw AESGCMCipherError.unknownKey(keyID) }
        let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(), authenticating: associatedData)
        // Never nil with the standard 12-byte nonce.
        guard let combined = box.combined else { throw AESGCMCipherError.malformed }
        return [UInt8](combined)
    }

    public func open(_ sealed: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard let key = keys[keyID] else { throw AESGCMCipherError.unknownKey(keyID) }
        guard sealed.count >= 28 else { throw AESGCMCipherError.malformed }
        let box = try AES.GCM.SealedBox(combined: sealed)
        return [UInt8](try AES.GCM.open(box, using: key, authenticating: associatedData))
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
