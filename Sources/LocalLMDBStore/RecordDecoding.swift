import LocalLMDBLMDB
import LocalLMDBJSON

/// Parses stored values into `DecodedRecord`s: the class name from the header and the checked
/// JSON document. Bytes and names only: `RecordEncoding` makes values from models, and
/// `DecodedRecord.instantiate` makes models from stored objects.
@usableFromInline package enum RecordDecoding {
    /// Parses and checks a stored value; the object reads its JSON in place, so the result is
    /// valid only during the read transaction `value` came from. Errors name the record by the
    /// id in the value or else by its `key`.
    ///
    /// A document whose checksum matches is read as it is: it holds exactly the bytes LocalLMDB
    /// wrote, which are strict JSON with no key repeated in any object (`JSONWriter`'s output,
    /// or a document `JSONValidator` accepted as such), unless it has so many `{` and `[` that
    /// its nesting could exceed the validator's limit. A mismatch is a corrupt record. A value
    /// of format 1 (no checksum), or any value when `validating`, is checked by the validator.
    ///
    /// In a store with `encryption`, a sealed document is opened into a buffer the object owns
    /// (its authentication stands for the checksum); see `StoreEncryption`.
    @inlinable static func decode(
        key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, validating: Bool = false, encryption: StoreEncryption?
    ) throws(DatabaseError) -> DecodedRecord {
        try decode(value: value, id: nil, key: key, validating: validating, encryption: encryption) { stored in stored?.id(key: key) ?? displayID(key) }
    }

    /// `decode(key:value:)` for a record read by `id`, which errors name.
    @inlinable package static func decode(value: UnsafeRawBufferPointer, id: String, encryption: StoreEncryption?) throws(DatabaseError) -> DecodedRecord {
        try decode(value: value, id: id, key: nil, validating: false, encryption: encryption) { _ in id }
    }

    @inlinable static func decode(
        value: UnsafeRawBufferPointer, id: String?, key: UnsafeRawBufferPointer?, validating: Bool, encryption: StoreEncryption?,
        name: (RecordValue?) -> String
    ) throws(DatabaseError) -> DecodedRecord {
        value.prefetch()
        let stored: RecordValue
        do throws(RecordValueError) {
            stored = try RecordValue(parsing: value)
        } catch {
            throw .corruptRecord(id: name(nil), reason: error.description)
        }
        if encryption != nil || stored.isSealed {
            return try decodeProtected(stored, id: id, key: key, validating: validating, encryption: encryption, name: name(stored))
        }
        if stored.checksum != nil {
            guard stored.isIntact else {
                throw .corruptRecord(id: name(stored), reason: "the stored document does not match its checksum")
            }
            // The validator also bounds nesting (512 levels); a document with at most that
            // many `{` and `[` in all is within it, and so is one too short to hold more than
            // that many pairs (an intact checksum says LocalLMDB wrote it, but anyone can
            // compute one).
            if !validating, stored.json.first == UInt8(ascii: "{"),
               stored.json.count < 2 * (JSONValidator.maxDepth + 1)
                || RecordChecksum.openings(in: stored.json) <= JSONValidator.maxDepth {
                return DecodedRecord(id: id, className: stored.classNameString, object: EncodedObject(bytes: stored.json, owner: nil))
            }
        }
        do throws(DatabaseError) {
            let object = try EncodedObject.validating(stored.json, owner: nil)
            return DecodedRecord(id: id, className: stored.classNameString, object: object)
        } catch {
            throw .corruptRecord(id: name(stored), reason: error.description)
        }
    }

    /// `decode` for a value of an encrypted store, or a sealed value (which then fails, naming
    /// the record: the store was opened without encryption).
    @usableFromInline static func decodeProtected(
        _ stored: RecordValue, id: String?, key: UnsafeRawBufferPointer?, validating: Bool, encryption: StoreEncryption?, name: String
    ) throws(DatabaseError) -> DecodedRecord {
        let document = try (id ?? "").withUTF8Bytes { idUTF8 throws(DatabaseError) in
            try stored.document(key: key ?? idUTF8, encryption: encryption)
        }
        // The document is as LocalLMDB wrote it (`StoreEncryption.document(of:id:)`): opened,
        // so authenticated, or unencrypted and checked.
        if !validating, document.bytes.first == UInt8(ascii: "{"),
           document.bytes.count < 2 * (JSONValidator.maxDepth + 1)
            || RecordChecksum.openings(in: document.bytes) <= JSONValidator.maxDepth {
            return DecodedRecord(id: id, className: stored.classNameString, object: EncodedObject(bytes: document.bytes, owner: document.owner))
        }
        do throws(DatabaseError) {
            let object = try EncodedObject.validating(document.bytes, owner: document.owner)
            return DecodedRecord(id: id, className: stored.classNameString, object: object)
        } catch {
            throw .corruptRecord(id: name, reason: error.description)
        }
    }

    /// A readable name for a record key whose value could not be parsed.
    @inlinable package static func displayID(_ key: UnsafeRawBufferPointer) -> String {
        guard key.isHashedKey else { return String(decoding: key, as: UTF8.self) }
        return "<sha256 " + key.dropFirst().map { String($0, radix: 16) }.joined() + ">"
    }
}

/// A record's checked contents, ready to become a model object.
@usableFromInline package struct DecodedRecord {
    /// The record's id, when the reader knows it (reads by type do not build id strings).
    @usableFromInline package let id: String?
    @usableFromInline package let className: String
    @usableFromInline package let object: EncodedObject

    /// A copy with bytes of its own, to carry out of the read transaction.
    @inlinable package func detached() -> Detached {
        Detached(stored: DecodedRecord(id: id, className: className, object: object.owned()))
    }

    /// A stored object whose bytes it owns. Sendable because those bytes are never written
    /// after they are copied, and nothing in it points into LMDB's map.
    @usableFromInline package struct Detached: @unchecked Sendable {
        @usableFromInline package let stored: DecodedRecord

        @inlinable init(stored: DecodedRecord) {
            self.stored = stored
        }
    }

    @inlinable init(id: String?, className: String, object: EncodedObject) {
        self.id = id
        self.className = className
        self.object = object
    }
}
