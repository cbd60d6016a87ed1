import LocalLMDBLMDB
import LocalLMDBJSON

extension RecordStore {
    /// The records under `keys` stored as one of `classNames`, each with its top-level member
    /// `member` set to `json` (added at the end of the object when missing): a batch for `put`,
    /// which keeps the indexes and the change log as for any write.
    func patched(_ keys: [StorageKey], classNames: [String], member: String, json: [UInt8], in transaction: Transaction) throws(DatabaseError) -> RecordBatch {
        var batch = RecordBatch()
        for key in keys {
            try key.withBytes { recordKey throws(DatabaseError) in
                guard let value = try transaction.get(records, recordKey) else { return }
                try Self.patch(
                    value, key: key, classNames: classNames, member: member, json: json, encryption: encryption, into: &batch, maxKeySize: maxKeySize)
            }
        }
        return batch
    }

    /// Appends to `batch` the record stored under `key` with the value `value`, its top-level
    /// member `member` set to `json`, when it is stored as one of `classNames` (for every
    /// engine: the value is checked, opened and sealed again as `encryption` says).
    /// - Throws: `corruptRecord` when the value is not a record, or its document not an object.
    package static func patch(
        _ value: UnsafeRawBufferPointer, key: StorageKey, classNames: [String], member: String, json: [UInt8], encryption: StoreEncryption?,
        into batch: inout RecordBatch, maxKeySize: Int
    ) throws(DatabaseError) {
        try key.withBytes { recordKey throws(DatabaseError) in
            let stored: RecordValue
            do throws(RecordValueError) {
                stored = try RecordValue(parsing: value)
            } catch {
                throw .corruptRecord(id: RecordDecoding.displayID(recordKey), reason: error.description)
            }
            let className = stored.classNameString
            guard classNames.contains(className) else { return }
            let current = try stored.document(key: recordKey, encryption: encryption)
            let document = try Self.document(current.bytes, withMember: member, setTo: json, id: stored.id(key: recordKey))
            var newValue: [UInt8] = []
            let fullID = stored.fullID.isEmpty ? nil : String(decoding: stored.fullID, as: UTF8.self)
            if let encryption {
                newValue = try document.withBytes { document throws(DatabaseError) in
                    try encryption.sealedValue(json: document, className: stored.className, fullID: stored.fullID, id: stored.idBytes(key: recordKey))
                }
            } else {
                RecordValue.appendHeader(className: className, fullID: fullID, to: &newValue)
                let headerSize = newValue.count
                newValue.append(contentsOf: document)
                RecordValue.sealChecksum(in: &newValue, headerSize: headerSize)
            }
            newValue.withBytes { bytes in
                batch.append(key: key, fullID: fullID, className: className, maxKeySize: maxKeySize, value: bytes)
            }
        }
    }

    /// `json` (an object's document) with its member `member` set to the JSON value `value`.
    static func document(_ json: UnsafeRawBufferPointer, withMember member: String, setTo value: [UInt8], id: String) throws(DatabaseError) -> [UInt8] {
        guard json.first == UInt8(ascii: "{") else {
            throw .corruptRecord(id: id, reason: "the stored document is not an object")
        }
        let object = EncodedObject(bytes: json, owner: nil)
        let scanner = object.scanner
        if let found = object.member(named: member, from: nil) {
            let end = scanner.end(ofValueAt: found.value)
            return Array(json[..<found.value]) + value + Array(json[end...])
        }
        let close = scanner.end(ofValueAt: 0) - 1
        var writer = JSONWriter()
        writer.write(key: member)
        let isEmpty = scanner.firstMember(ofObjectAt: 0) == nil
        return Array(json[..<close]) + (isEmpty ? [] : [UInt8(ascii: ",")]) + writer.bytes + [UInt8(ascii: ":")] + value + Array(json[close...])
    }
}
