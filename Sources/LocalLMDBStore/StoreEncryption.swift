import LocalLMDBLMDB
import LocalLMDBJSON

/// The encryption at rest of one store: the cipher that seals and opens values' documents, and
/// the rules of the database's `encryption` entry in `meta` (see `EncryptionEntry`).
///
/// A sealed value (`RecordValue`, format 3) keeps its class name and id in the clear, then the
/// id of its key and its document sealed under that key, with the class name and id as
/// associated data: a value moved to another record, or given another class, fails to open.
///
/// Invariant: in a database with an `encryption` entry, every value is sealed under one of the
/// entry's keys, except while the entry says values may still be unencrypted (an unencrypted
/// database being encrypted); a value that breaks this is reported, never read.
@usableFromInline package final class StoreEncryption: Sendable, Equatable {
    package let cipher: any ValueCipher
    /// Whether unencrypted values may still be found (read from the entry at open, cleared by
    /// this process when re-encryption finishes).
    private let unencryptedValuesAccepted: Locked<Bool>
    /// The last `encryption` entry found to list the sealing key (`checkSealingKeyListed`).
    private let verifiedEntry = Locked<[UInt8]>([])
    /// Whether an unencrypted database opened with this cipher may be encrypted in place.
    package let adoptsUnencryptedDatabase: Bool

    /// The cipher's sealing key id, and its UTF-8 bytes: most values are sealed under it, and
    /// reading one needs neither a `String` made from its bytes nor a look-up of its key.
    package let sealingKeyID: String
    private let sealingKeyIDBytes: [UInt8]

    package init(cipher: any ValueCipher, adoptsUnencryptedDatabase: Bool) {
        self.cipher = cipher
        sealingKeyID = cipher.sealingKeyID
        sealingKeyIDBytes = Array(cipher.sealingKeyID.utf8)
        self.adoptsUnencryptedDatabase = adoptsUnencryptedDatabase
        unencryptedValuesAccepted = Locked(false)
    }

    /// Two encryptions agree when they seal under the same key id with the same kind of
    /// cipher, and agree on adopting an unencrypted database. (Their keys are each checked
    /// against the database's key checks.)
    @usableFromInline package static func == (left: StoreEncryption, right: StoreEncryption) -> Bool {
        left === right
            || (left.sealingKeyID == right.sealingKeyID
                && left.adoptsUnencryptedDatabase == right.adoptsUnencryptedDatabase)
    }

    /// Whether an unencrypted value may be read as it is.
    package var acceptsUnencryptedValues: Bool {
        unencryptedValuesAccepted.withLock { $0 }
    }

    /// Whether `keyID` (UTF-8) is the sealing key's id.
    private func isSealingKeyID(_ keyID: UnsafeRawBufferPointer) -> Bool {
        sealingKeyIDBytes.withUnsafeBytes { keyID.hasSameBytes(as: $0) }
    }

    func isVerifiedEntry(_ entry: UnsafeRawBufferPointer) -> Bool {
        verifiedEntry.withLock { $0.withBytes { $0.hasSameBytes(as: entry) } }
    }

    func setVerifiedEntry(_ entry: [UInt8]) {
        verifiedEntry.withLock { $0 = entry }
    }

    func setAcceptsUnencryptedValues(_ accepted: Bool) {
        unencryptedValuesAccepted.withLock { $0 = accepted }
    }

    // MARK: Values

    /// A whole sealed value (header and sealed document) for the document `json` of the
    /// record `id` (UTF-8) of class `className`, whose key keeps `fullID` (empty when the key
    /// is the id).
    package func sealedValue(
        json: UnsafeRawBufferPointer, className: UnsafeRawBufferPointer, fullID: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer
    ) throws(DatabaseError) -> [UInt8] {
        let keyID = sealingKeyID
        var value: [UInt8] = []
        // The header, then the sealed document: a cipher adds a nonce and a tag (28 bytes with AES-GCM).
        value.reserveCapacity(16 + className.count + fullID.count + sealingKeyIDBytes.count + json.count + 64)
        RecordValue.appendSealedHeader(className: className, fullID: fullID, keyID: keyID, to: &value)
        do throws(CipherFailure) {
            try Self.withAssociatedData(className: className, id: id) { associatedData throws(CipherFailure) in
                try cipher.seal(json, keyID: keyID, associatedData: associatedData, appendingTo: &value)
            }
        } catch {
            throw .encryptionFailed(id: String(decoding: id, as: UTF8.self), reason: error.reason)
        }
        return value
    }

    /// `stored` sealed afresh under the sealing key; nil when it already is. `key` is the
    /// record's key in `records`. Only what `document(of:id:)` reads is sealed: a value that
    /// does not open, an unencrypted one the store does not accept, or a damaged one, is an
    /// error, never made authentic.
    func resealed(_ stored: RecordValue, key: UnsafeRawBufferPointer) throws(DatabaseError) -> [UInt8]? {
        if stored.isSealed, isSealingKeyID(stored.keyID) { return nil }
        let id = stored.idBytes(key: key)
        let document = try document(of: stored, id: id)
        return try withExtendedLifetime(document.owner) { () throws(DatabaseError) in
            try sealedValue(json: document.bytes, className: stored.className, fullID: stored.fullID, id: id)
        }
    }

    /// The document of the sealed value `stored`, opened into a buffer of its own. `id` is the
    /// record id's UTF-8 bytes. Fails, naming the record, when the key is missing or the value
    /// does not open (it was changed, or moved from another record).
    package func open(_ stored: RecordValue, id: UnsafeRawBufferPointer) throws(DatabaseError) -> JSONBuffer {
        assert(stored.isSealed, "only a sealed value is opened")
        let keyID: String
        if isSealingKeyID(stored.keyID) {
            keyID = sealingKeyID
        } else {
            keyID = String(decoding: stored.keyID, as: UTF8.self)
            guard cipher.hasKey(keyID) else {
                throw .undecryptableRecord(id: String(decoding: id, as: UTF8.self), reason: "it is sealed under the key \"\(keyID)\", which the database was not opened with")
            }
        }
        do throws(CipherFailure) {
            return try Self.withAssociatedData(className: stored.className, id: id) { associatedData throws(CipherFailure) in
                try cipher.open(stored.json, keyID: keyID, associatedData: associatedData)
            }
        } catch {
            throw .undecryptableRecord(
                id: String(decoding: id, as: UTF8.self),
                reason: "its sealed value does not open under the key \"\(keyID)\" (it was changed, or moved from another record or class): \(error.reason)")
        }
    }

    /// The document of any stored value of this encrypted store, as LocalLMDB wrote it: opened
    /// (so authenticated) when sealed; when unencrypted values are still accepted, an
    /// unencrypted one whose checksum matches (or, of format 1, which has none, that is valid
    /// JSON). `id` is the record id's UTF-8 bytes.
    @usableFromInline package func document(of stored: RecordValue, id: UnsafeRawBufferPointer) throws(DatabaseError) -> (bytes: UnsafeRawBufferPointer, owner: JSONBuffer?) {
        if stored.isSealed {
            let buffer = try open(stored, id: id)
            return (UnsafeRawBufferPointer(buffer.bytes), buffer)
        }
        guard acceptsUnencryptedValues else {
            throw .undecryptableRecord(
                id: String(decoding: id, as: UTF8.self),
                reason: "its value is not encrypted, in an encrypted database (it was written there by other means)")
        }
        if stored.checksum != nil {
            guard stored.isIntact else {
                throw .corruptRecord(id: String(decoding: id, as: UTF8.self), reason: "the stored document does not match its checksum")
            }
        } else {
            do throws(DatabaseError) {
                _ = try EncodedObject.validating(stored.json, owner: nil)
            } catch {
                throw .corruptRecord(id: String(decoding: id, as: UTF8.self), reason: error.description)
            }
        }
        return (stored.json, nil)
    }

    /// The associated data binding a sealed document to its record: the class name and the id,
    /// each after its length (4 bytes, little-endian). Built on the stack: a read allocates
    /// nothing for it.
    static func withAssociatedData<R, E: Error>(
        className: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try withUnsafeTemporaryAllocation(byteCount: 8 + className.count + id.count, alignment: 1) { data throws(E) in
            var offset = 0
            func append(_ part: UnsafeRawBufferPointer) {
                data.storeBytes(of: UInt32(truncatingIfNeeded: part.count).littleEndian, toByteOffset: offset, as: UInt32.self)
                offset += 4
                if let base = part.baseAddress, let target = data.baseAddress { (target + offset).copyMemory(from: base, byteCount: part.count) }
                offset += part.count
            }
            append(className)
            append(id)
            assert(offset == data.count, "the associated data fills its buffer")
            return try body(UnsafeRawBufferPointer(data))
        }
    }
}

/// A stored value's document, for reading: in place, or opened by the store's encryption.
extension RecordValue {
    /// The document of this value of a store with `encryption` (nil: unencrypted), whose record
    /// key is `key`; `owner` keeps opened bytes alive.
    ///
    /// `key` may also be the id a record is read by (its UTF-8 bytes): a full id kept in the
    /// value must then be that id. In an encrypted store, a value whose full id is not the one
    /// its key stands for (moved from another record with a long id) is refused: the
    /// associated data binds a sealed document to the full id, not to the key.
    @inlinable package func document(key: UnsafeRawBufferPointer, encryption: StoreEncryption?) throws(DatabaseError) -> (bytes: UnsafeRawBufferPointer, owner: JSONBuffer?) {
        guard let encryption else {
            guard !isSealed else { throw Self.sealedWithoutKey(id: idBytes(key: key)) }
            return (json, nil)
        }
        if !fullID.isEmpty, !Self.fullID(fullID, isStoredUnder: key) {
            throw .undecryptableRecord(
                id: String(decoding: fullID, as: UTF8.self), reason: "its value is stored under another record's key (it was moved there)")
        }
        return try encryption.document(of: self, id: idBytes(key: key))
    }

    /// Whether `fullID` is the id that `key` stands for: its digest, or the id itself.
    @usableFromInline static func fullID(_ fullID: UnsafeRawBufferPointer, isStoredUnder key: UnsafeRawBufferPointer) -> Bool {
        guard key.isHashedKey else { return fullID.hasSameBytes(as: key) }
        return SHA256.digest(fullID).elementsEqual(key.dropFirst())
    }

    /// The error for a sealed value in a store opened without encryption.
    @usableFromInline static func sealedWithoutKey(id: UnsafeRawBufferPointer) -> DatabaseError {
        .undecryptableRecord(id: String(decoding: id, as: UTF8.self), reason: "its value is encrypted, and the database was opened without encryption")
    }
}
