import LocalLMDBJSON
import LocalLMDBLMDB
import LocalLMDBStore

/// Seals and opens the stored values of an encrypted database: the hook for encryption at
/// rest (GarageStorage's `DataEncryptionDelegate`, made safe). `LocalLMDBEncryption` provides
/// one built on swift-crypto (`AESGCMCipher`); the core library depends on none.
///
/// LocalLMDB gives the cipher each record's JSON document and, as associated data, the
/// record's class name and id (each after its length): a sealed value moved to another record or
/// class must fail to open. It stores the id of the key a value is sealed under beside it, so
/// a cipher that holds several keys can open values sealed under any of them while new values
/// are sealed under `currentKeyID` (key rotation: ``LocalDatabase/reencrypt(batchSize:progress:)``).
///
/// A conforming type must be an authenticated cipher: `open` throws, never returns other
/// bytes, when the sealed bytes, the key or the associated data differ in any way from what
/// `seal` was given; and `seal` must use a fresh nonce every time. LocalLMDB calls
/// `seal(_:keyID:associatedData:appendingTo:)` and `withOpened(_:keyID:associatedData:_:)`
/// (whose defaults call `seal` and `open`) on any thread, concurrently. See <doc:Encryption>
/// for what encryption protects and what it does not.
public protocol RecordCipher: Sendable {
    /// The id of the key new values are sealed under: 1 to 255 bytes of UTF-8, stored in the
    /// clear beside each value and in the database's key checks. Never the key itself. It must
    /// not change for the cipher's life: a database reads it once, as it opens.
    var currentKeyID: String { get }
    /// Whether the cipher holds the key `keyID` (the current key, or an older one kept to read
    /// values not yet sealed again).
    func hasKey(id keyID: String) -> Bool
    /// `plaintext` sealed under the key `keyID`, bound to `associatedData`.
    func seal(_ plaintext: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws -> [UInt8]
    /// The plaintext `seal` was given, from what it returned under the key `keyID` with the
    /// same `associatedData`; throws when anything differs.
    func open(_ sealed: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws -> [UInt8]
    /// Appends to `output` `plaintext` sealed as `seal` seals it (the same format, with a fresh
    /// nonce): LocalLMDB's way to seal, which spares a cipher that can write the sealed bytes
    /// in place an array of their own. The default calls `seal`. When it throws, LocalLMDB
    /// discards `output`, so a partial append does no harm.
    ///
    /// A cipher must not implement `seal` by calling this method unless it implements this
    /// method too (the default would call `seal` back); the same holds for `open` and
    /// `withOpened`.
    func seal(
        _ plaintext: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]
    ) throws
    /// Calls `body` with the plaintext `open` returns for the same arguments, valid during the
    /// call only: LocalLMDB's way to open, which spares a cipher an array of its own for it.
    /// The default calls `open`.
    func withOpened<Result>(
        _ sealed: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) -> Result
    ) throws -> Result
}

extension RecordCipher {
    public func seal(
        _ plaintext: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]
    ) throws {
        output.append(contentsOf: try seal(plaintext, keyID: keyID, associatedData: associatedData))
    }

    public func withOpened<Result>(
        _ sealed: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) -> Result
    ) throws -> Result {
        try open(sealed, keyID: keyID, associatedData: associatedData).withUnsafeBytes(body)
    }
}

/// How a database's values are encrypted at rest: a cipher, and whether an unencrypted
/// database may be encrypted in place. Set as `DatabaseConfiguration.encryption`.
///
/// ```swift
/// let key = try EncryptionKey(id: "2026-11", bytes: keyBytesFromTheKeychain)
/// var configuration = DatabaseConfiguration()
/// configuration.encryption = DatabaseEncryption(AESGCMCipher(current: key))
/// let database = try LocalDatabase(directory: url, configuration: configuration)
/// ```
public struct DatabaseEncryption: Sendable {
    /// The store's form: the cipher adapted, and the options.
    let store: StoreEncryption

    /// Encryption with `cipher`.
    /// - Parameters:
    ///   - cipher: Seals and opens the values (`AESGCMCipher`, from `LocalLMDBEncryption`).
    ///   - encryptingExistingValues: Whether a database that is not encrypted but holds
    ///     records may be opened: it becomes encrypted (new values are sealed) and its existing
    ///     values are read as they are until ``LocalDatabase/reencrypt(batchSize:progress:)`` has
    ///     sealed them. False by default: opening such a database with a key then fails with
    ///     `LocalDatabaseError.unencryptedDatabase`, rather than encrypting it unasked.
    public init(_ cipher: some RecordCipher, encryptingExistingValues: Bool = false) {
        store = StoreEncryption(cipher: CipherAdapter(cipher: cipher), adoptsUnencryptedDatabase: encryptingExistingValues)
    }

    init(store: StoreEncryption) {
        self.store = store
    }

    /// The id of the key new values are sealed under.
    public var currentKeyID: String { store.sealingKeyID }
}

/// A public `RecordCipher` in the store's terms.
struct CipherAdapter<Cipher: RecordCipher>: ValueCipher {
    let cipher: Cipher

    var sealingKeyID: String { cipher.currentKeyID }

    func hasKey(_ keyID: String) -> Bool { cipher.hasKey(id: keyID) }

    func seal(
        _ plaintext: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]
    ) throws(CipherFailure) {
        do {
            try cipher.seal(plaintext, keyID: keyID, associatedData: associatedData, appendingTo: &output)
        } catch {
            throw CipherFailure(String(describing: error))
        }
    }

    func open(_ sealed: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws(CipherFailure) -> JSONBuffer {
        do {
            return try cipher.withOpened(sealed, keyID: keyID, associatedData: associatedData) { JSONBuffer(copying: $0) }
        } catch {
            throw CipherFailure(String(describing: error))
        }
    }
}

/// How far ``LocalDatabase/reencrypt(batchSize:progress:)`` has come.
public struct ReencryptionProgress: Sendable, Equatable {
    /// Records visited so far (in this pass over the database).
    public let recordsVisited: Int
    /// Records sealed afresh so far (those not yet under the current key).
    public let recordsReencrypted: Int
    /// Records in the database when re-encryption began.
    public let recordCount: Int
}

/// What a database's encryption entry says: ``LocalDatabase/encryptionState()``.
public struct EncryptionState: Sendable, Equatable {
    /// The ids of the keys its values may be sealed under: more than one until re-encryption
    /// under the newest has finished.
    public let keyIDs: [String]
    /// Whether some values may still be unencrypted (an unencrypted database being encrypted).
    public let mayHoldUnencryptedValues: Bool
}
