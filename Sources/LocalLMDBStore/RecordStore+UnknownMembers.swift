import LocalLMDBLMDB
import LocalLMDBJSON

/// Keeping the fields a model does not know, on a synchronized database.
///
/// The rule, for a record a model writes (one that carries `KnownMembers`) over a stored record
/// of the same class: every top-level member of the stored document that the new document
/// lacks and the model does not read is kept, after the new document's own members, with its
/// value as stored. Members the model reads are the model's to write: one it left out (a nil
/// optional) is removed. A record of another class, a stored value that is damaged, and records
/// written as whole documents (imports, received versions, a migration's writes) replace what
/// is stored, as on any database.
extension RecordStore {
    /// `records`, with every record a model wrote given the members of the document it replaces
    /// that the model does not know (see above); nil when no record needed any. A record given
    /// twice in the batch keeps those of the document it replaces there: the earlier one's.
    func keepingUnknownMembers(_ records: RecordBatch, in transaction: Transaction) throws(DatabaseError) -> RecordBatch? {
        guard records.types.contains(where: { $0.known != nil }) else { return nil }
        var replaced: [Int: [UInt8]] = [:]
        // Where each key was last written in this batch (every key: a batch may give an id twice).
        var lastWritten: [[UInt8]: Int] = [:]
        let tracksKeys = records.count > 1
        for index in records.indices {
            try records.withRecord(at: index) { record throws(DatabaseError) in
                let earlier = tracksKeys ? lastWritten.updateValue(index, forKey: Array(record.key)) : nil
                guard let known = records.types[record.type].known else { return }
                let merged: [UInt8]?
                if let earlier {
                    let previous = replaced[earlier] ?? records.withRecord(at: earlier) { Array($0.value) }
                    merged = previous.withUnsafeBytes { previous in
                        Self.keeping(unknownOf: previous, in: record, className: records.types[record.type].name, known: known)
                    }
                } else if let stored = try transaction.get(self.records, record.key) {
                    merged = Self.keeping(unknownOf: stored, in: record, className: records.types[record.type].name, known: known)
                } else {
                    merged = nil
                }
                if let merged { replaced[index] = merged }
            }
        }
        guard !replaced.isEmpty else { return nil }
        var result = RecordBatch()
        result.types = records.types
        for index in records.indices {
            records.withRecord(at: index) { record in
                if let value = replaced[index] {
                    value.withUnsafeBytes { result.append(key: record.key, fullID: record.fullID, value: $0, type: record.type) }
                } else {
                    result.append(key: record.key, fullID: record.fullID, value: record.value, type: record.type)
                }
            }
        }
        assert(result.count == records.count)
        return result
    }

    /// The value of `record` (of the class `className`) with the members of the stored value
    /// `previous` that it lacks and that are not `known` appended to its document; nil when
    /// there are none, when `previous` is of another class, sealed or unreadable (the write
    /// replaces it whole).
    static func keeping(
        unknownOf previous: UnsafeRawBufferPointer, in record: RecordBatch.Record, className: String, known: KnownMembers
    ) -> [UInt8]? {
        guard let stored = try? RecordValue(parsing: previous), !stored.isSealed,
              stored.checksum == nil || stored.isIntact,
              className.utf8.elementsEqual(stored.className),
              stored.json.first == UInt8(ascii: "{"),
              let written = try? RecordValue(parsing: record.value), !written.isSealed
        else { return nil }
        // A value of format 1 has no checksum: its document is checked here before it is used.
        if stored.checksum == nil {
            guard (try? EncodedObject.validating(stored.json, owner: nil)) != nil else { return nil }
        }
        let newMembers = EncodedObject.memberNames(of: written.json)
        let scanner = EncodedObject(bytes: stored.json, owner: nil).scanner
        var kept: [UInt8] = []
        var next = scanner.firstMember(ofObjectAt: 0)
        while let offset = next {
            let member = scanner.member(at: offset)
            let end = scanner.end(ofValueAt: member.value)
            let name = scanner.name(of: member)
            if name != EncodedObject.classNameKey, !known.names.contains(name), !newMembers.contains(name) {
                kept.append(UInt8(ascii: ","))
                kept.append(contentsOf: UnsafeRawBufferPointer(rebasing: stored.json[member.start..<end]))
            }
            next = scanner.nextMember(after: end)
        }
        let document = written.json
        guard !kept.isEmpty, document.first == UInt8(ascii: "{") else { return nil }
        // The new document, its closing brace moved past the kept members. Each kept member
        // comes with a comma before it: the first one's goes when the new object has no member
        // (a data object built from `{}`).
        let writtenScanner = EncodedObject(bytes: document, owner: nil).scanner
        let close = writtenScanner.end(ofValueAt: 0) - 1
        assert(document[close] == UInt8(ascii: "}"))
        if writtenScanner.firstMember(ofObjectAt: 0) == nil { kept.removeFirst() }
        var value: [UInt8] = []
        value.reserveCapacity(record.value.count + kept.count)
        RecordValue.appendHeader(className: className, fullID: record.fullID.isEmpty ? nil : String(decoding: record.fullID, as: UTF8.self), to: &value)
        let headerSize = value.count
        value.append(contentsOf: UnsafeRawBufferPointer(rebasing: document[..<close]))
        value.append(contentsOf: kept)
        value.append(contentsOf: UnsafeRawBufferPointer(rebasing: document[close...]))
        RecordValue.sealChecksum(in: &value, headerSize: headerSize)
        return value
    }
}
