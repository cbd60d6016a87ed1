import LocalLMDBLMDB
import LocalLMDBJSON

/// The `encryption` entry of `meta`: which keys the values of an encrypted database may be
/// sealed under, each with a key check (a known text sealed under it), and whether values may
/// still be unencrypted. Its absence means the database is not encrypted.
///
/// ```
/// byte 0          version: 1
/// byte 1          flags: bit 0, unencrypted values may remain
/// varint          the number of keys, then for each:
/// varint, bytes   the key's id, UTF-8
/// varint, bytes   the key check: `checkText` sealed under the key, bound to `checkData(keyID)`
/// ```
struct EncryptionEntry {
    static let metaKey = Array("encryption".utf8)
    static let version: UInt8 = 1
    static let checkText = Array("LocalLMDB key check".utf8)

    var acceptsUnencryptedValues: Bool
    var keys: [(id: String, check: [UInt8])]

    /// The associated data of `keyID`'s check.
    static func checkData(_ keyID: String) -> [UInt8] {
        Array("LocalLMDB key check\u{0}".utf8) + Array(keyID.utf8)
    }

    init(acceptsUnencryptedValues: Bool, keys: [(id: String, check: [UInt8])]) {
        self.acceptsUnencryptedValues = acceptsUnencryptedValues
        self.keys = keys
    }

    /// Parses a stored entry; nil when it is damaged or of an unknown version.
    init?(parsing bytes: [UInt8]) {
        guard bytes.count >= 3, bytes[0] == Self.version else { return nil }
        let parsed: EncryptionEntry? = bytes.withUnsafeBytes { raw in
            var offset = 2
            guard let count = Varint.number(in: raw, at: &offset, maxShift: 35) else { return nil }
            var keys: [(id: String, check: [UInt8])] = []
            for _ in 0..<min(count, 1024) {
                guard let id = Varint.lengthPrefixed(in: raw, at: &offset, maxShift: 35),
                      let check = Varint.lengthPrefixed(in: raw, at: &offset, maxShift: 35) else { return nil }
                keys.append((String(decoding: id, as: UTF8.self), Array(check)))
            }
            guard keys.count == count, offset == raw.count else { return nil }
            return EncryptionEntry(acceptsUnencryptedValues: bytes[1] & 1 != 0, keys: keys)
        }
        guard let parsed else { return nil }
        self = parsed
    }

    var bytes: [UInt8] {
        var bytes: [UInt8] = [Self.version, acceptsUnencryptedValues ? 1 : 0]
        Varint.append(keys.count, to: &bytes)
        for key in keys {
            Varint.append(lengthPrefixed: key.id, to: &bytes)
            key.check.withUnsafeBytes { Varint.append(lengthPrefixed: $0, to: &bytes) }
        }
        return bytes
    }

    /// The check of `keyID` made with `cipher`.
    static func check(_ keyID: String, _ cipher: any ValueCipher) throws(DatabaseError) -> [UInt8] {
        do throws(CipherFailure) {
            var sealed: [UInt8] = []
            try checkText.withBytes { text throws(CipherFailure) in
                try checkData(keyID).withBytes { data throws(CipherFailure) in
                    try cipher.seal(text, keyID: keyID, associatedData: data, appendingTo: &sealed)
                }
            }
            return sealed
        } catch {
            throw .encryptionFailed(id: "", reason: "the key check of \"\(keyID)\" could not be sealed: \(error.reason)")
        }
    }

    /// The entry stored in `meta`, if any.
    /// - Throws: `corruptRecord` when it is damaged.
    static func stored(in meta: DatabaseHandle, _ transaction: Transaction) throws(DatabaseError) -> EncryptionEntry? {
        guard let stored = try RecordStore.read(metaKey, meta, in: transaction) else { return nil }
        guard let entry = EncryptionEntry(parsing: stored) else {
            throw .corruptRecord(id: "meta \"encryption\"", reason: "the database's encryption entry is damaged")
        }
        return entry
    }

    /// Checks that `cipher` holds every key of the entry, and that each is the key its check
    /// was sealed under.
    /// - Throws: `missingEncryptionKey` / `wrongEncryptionKey`, naming the key.
    func verifyKeys(of cipher: any ValueCipher) throws(DatabaseError) {
        for key in keys {
            guard cipher.hasKey(key.id) else { throw .missingEncryptionKey(keyID: key.id) }
            guard Self.verify(key.check, keyID: key.id, cipher) else { throw .wrongEncryptionKey(keyID: key.id) }
        }
    }

    /// Whether `check` opens to `checkText` with `cipher`'s key `keyID`.
    static func verify(_ check: [UInt8], keyID: String, _ cipher: any ValueCipher) -> Bool {
        let opened = try? check.withBytes { sealed throws(CipherFailure) in
            try checkData(keyID).withBytes { data throws(CipherFailure) in try cipher.open(sealed, keyID: keyID, associatedData: data) }
        }
        guard let opened else { return false }
        return withExtendedLifetime(opened) { checkText.withBytes { UnsafeRawBufferPointer(opened.bytes).hasSameBytes(as: $0) } }
    }
}

extension RecordStore {
    /// The layout of an encrypted database: an earlier version of LocalLMDB, which would write
    /// unencrypted values into it or fail record by record, refuses it (`unsupportedFormat`).
    static let encryptedLayoutVersion: UInt8 = 4

    /// Checks `encryption` against the database's `encryption` entry, in `transaction` (which
    /// writes when `writable`), and sets what the entry says on it. An open that is the
    /// database's first with encryption writes the entry (when the database is empty, or its
    /// values are to be adopted); an open with a new sealing key adds that key.
    /// - Throws: `encryptionRequired` without encryption on an encrypted database;
    ///   `unencryptedDatabase` with encryption on an unencrypted one that has records;
    ///   `missingEncryptionKey` / `wrongEncryptionKey` when the cipher lacks a key the values
    ///   may be sealed under, or has another key under its id.
    static func establish(
        _ encryption: StoreEncryption?, path: String, meta: DatabaseHandle, records: DatabaseHandle,
        in transaction: Transaction, writable: Bool
    ) throws(DatabaseError) {
        let stored = try EncryptionEntry.stored(in: meta, transaction)
        guard let encryption else {
            if stored != nil { throw .encryptionRequired(path: path) }
            return
        }
        let cipher = encryption.cipher
        let sealingKey = encryption.sealingKeyID
        guard !sealingKey.isEmpty, sealingKey.utf8.count <= 255 else {
            throw .encryptionFailed(id: "", reason: "a key id must be 1 to 255 bytes of UTF-8, not \(sealingKey.utf8.count)")
        }
        guard var entry = stored else {
            let hasRecords = try transaction.entryCount(records) > 0
            if hasRecords, !encryption.adoptsUnencryptedDatabase { throw .unencryptedDatabase(path: path) }
            guard writable else {
                // Read-only: nothing sealed to read, and the values are unencrypted.
                encryption.setAcceptsUnencryptedValues(true)
                return
            }
            let entry = EncryptionEntry(acceptsUnencryptedValues: hasRecords, keys: [(sealingKey, try EncryptionEntry.check(sealingKey, cipher))])
            try write(entry.bytes, at: EncryptionEntry.metaKey, meta, in: transaction)
            // Never lowers the layout (a database with counted indexes keeps its own).
            let layout = try read(Array("format".utf8), meta, in: transaction)?.first ?? 0
            if layout < encryptedLayoutVersion {
                try write([encryptedLayoutVersion], at: Array("format".utf8), meta, in: transaction)
            }
            encryption.setAcceptsUnencryptedValues(hasRecords)
            return
        }
        try entry.verifyKeys(of: cipher)
        if writable, !entry.keys.contains(where: { $0.id == sealingKey }) {
            entry.keys.append((sealingKey, try EncryptionEntry.check(sealingKey, cipher)))
            try write(entry.bytes, at: EncryptionEntry.metaKey, meta, in: transaction)
        }
        encryption.setAcceptsUnencryptedValues(entry.acceptsUnencryptedValues)
    }

    /// Checks another cipher for this (already open) store, in a read transaction: a second
    /// database on the same directory in this process, whose keys must be the right ones.
    package func checkKeys(of encryption: StoreEncryption?, path: String) throws(DatabaseError) {
        try environment.withReadTransaction { transaction throws(DatabaseError) in
            guard let entry = try EncryptionEntry.stored(in: meta, transaction) else { return }
            guard let encryption else { throw .encryptionRequired(path: path) }
            try entry.verifyKeys(of: encryption.cipher)
        }
    }

    /// Refuses to write values sealed under a key the database's entry no longer lists (a
    /// process still sealing under a key that another process's re-encryption retired): they
    /// could not be read by a process opened with the database's keys. `refused` names the
    /// record whose write is refused (the first of a batch), for the error; empty for none.
    func checkSealingKeyListed(in transaction: Transaction, refused: @autoclosure () -> String = "") throws(DatabaseError) {
        guard let encryption else { return }
        let sealingKey = encryption.sealingKeyID
        let listed = try EncryptionEntry.metaKey.withBytes { key throws(DatabaseError) -> Bool in
            guard let stored = try transaction.get(meta, key) else { return false }
            if encryption.isVerifiedEntry(stored) { return true }
            guard let entry = EncryptionEntry(parsing: Array(stored)), entry.keys.contains(where: { $0.id == sealingKey }) else { return false }
            encryption.setVerifiedEntry(Array(stored))
            return true
        }
        guard listed else {
            throw .encryptionFailed(
                id: refused(), reason: "the key '\(sealingKey)' is no longer one of the database's keys (a re-encryption under another key has finished since this database was opened): open it again with the current key")
        }
    }

    // MARK: Re-encryption

    /// Seals afresh, under the sealing key, up to `limit` records after the key `after` (from
    /// the first when nil), in key order. Returns the last key visited (nil when none was
    /// left), how many records were visited and how many values were sealed afresh.
    func reseal(after: [UInt8]?, limit: Int, in transaction: Transaction) throws(DatabaseError) -> (last: [UInt8]?, visited: Int, resealed: Int) {
        try checkSealingKeyListed(in: transaction)
        return try resealing(after: after, limit: limit, in: transaction)
    }

    /// Ends re-encryption: seals afresh every value still not under the sealing key (written
    /// meanwhile by a process sealing under an older key, or put where the batches had already
    /// passed), then leaves the entry with that key alone, accepting no unencrypted value.
    /// One transaction, so no value can slip in under an older key between the two. Returns
    /// how many values it sealed.
    func finishResealing(in transaction: Transaction) throws(DatabaseError) -> Int {
        guard let encryption else { throw .encryptionRequired(path: environment.directoryPath) }
        try checkSealingKeyListed(in: transaction)
        let resealed = try resealing(after: nil, limit: .max, in: transaction).resealed
        let sealingKey = encryption.sealingKeyID
        guard let current = try EncryptionEntry.stored(in: meta, transaction)?.keys.first(where: { $0.id == sealingKey }) else {
            throw .encryptionFailed(id: "", reason: "the database's encryption entry does not list the key '\(sealingKey)'")
        }
        try Self.write(EncryptionEntry(acceptsUnencryptedValues: false, keys: [current]).bytes, at: EncryptionEntry.metaKey, meta, in: transaction)
        encryption.setAcceptsUnencryptedValues(false)
        return resealed
    }

    /// `reseal`'s walk: the values of up to `limit` records after `after`, each not under the
    /// sealing key sealed afresh once the walk is done.
    private func resealing(after: [UInt8]?, limit: Int, in transaction: Transaction) throws(DatabaseError) -> (last: [UInt8]?, visited: Int, resealed: Int) {
        guard let encryption else { throw .encryptionRequired(path: environment.directoryPath) }
        var pending: [(key: [UInt8], value: [UInt8])] = []
        var last: [UInt8]?
        var visited = 0
        try transaction.withCursor(records) { cursor throws(DatabaseError) in
            var entry: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?
            if let after {
                entry = try after.withBytes { key throws(DatabaseError) in try cursor.get(.keyAtLeast, key: key) }
                if let found = entry, found.key.elementsEqual(after) { entry = try cursor.get(.next) }
            } else {
                entry = try cursor.get(.first)
            }
            while let (key, value) = entry, visited < limit {
                visited += 1
                let stored: RecordValue
                do throws(RecordValueError) {
                    stored = try RecordValue(parsing: value)
                } catch {
                    throw .corruptRecord(id: RecordDecoding.displayID(key), reason: error.description)
                }
                if let resealed = try encryption.resealed(stored, key: key) { pending.append((Array(key), resealed)) }
                last = Array(key)
                entry = try cursor.get(.next)
            }
        }
        for (key, value) in pending { try Self.write(value, at: key, records, in: transaction) }
        return (last, visited, pending.count)
    }

    /// The ids of the keys the database's values may be sealed under, and whether some may be
    /// unencrypted; nil for an unencrypted database.
    package func encryptionKeys(in transaction: Transaction) throws(DatabaseError) -> (keyIDs: [String], acceptsUnencryptedValues: Bool)? {
        try EncryptionEntry.stored(in: meta, transaction).map { ($0.keys.map(\.id), $0.acceptsUnencryptedValues) }
    }
}
