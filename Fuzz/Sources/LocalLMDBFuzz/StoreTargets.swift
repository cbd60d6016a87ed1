import Foundation
@testable import LocalLMDB
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore

/// Parsers of bytes read from the database files: a record's value, the change log, the class,
/// replica and index rows, and JSON Lines. A file is the attacker here: no input may crash, and
/// what parses must be what was written.
enum StoreTargets {
    // MARK: Records

    /// A stored value: arbitrary bytes; a well-formed header and checksum over arbitrary bytes (a
    /// hostile file can make a checksum match: the scanner must still stay in bounds); or a record
    /// written from valid JSON, which must read back byte for byte.
    static func record(_ input: UnsafeRawBufferPointer) {
        var choices = Choices(input)
        let mode = choices.int(below: 3)
        let className = choices.string()
        let fullID = choices.byte() & 1 == 1 ? choices.string() : nil
        let rest = Array(input[min(choices.offset, input.count)...])
        var value: [UInt8]
        switch mode {
        case 0:
            value = Array(input)
        default:
            value = []
            RecordValue.appendHeader(className: className, fullID: fullID, to: &value)
            let headerSize = value.count
            value += rest
            RecordValue.sealChecksum(in: &value, headerSize: headerSize)
        }
        let decoded: DecodedRecord?
        do {
            decoded = try value.withUnsafeBytes { bytes in try RecordDecoding.decode(key: bytes, value: bytes, encryption: nil) }
        } catch {
            decoded = nil
        }
        let summary = mode == 0 ? nil : rest.withUnsafeBytes { try? JSONValidator.validateObject($0) }
        let validJSON = summary != nil
        if mode == 2, let summary {
            guard let decoded else { mismatch("a record written from a valid object does not read") }
            if !decoded.className.hasSameUTF8(as: className) { mismatch("a record reads another class name than was written") }
            if !summary.mayRepeatKeys {
                let document = rest.drop(while: JSONGrammar.isWhitespace)
                if !Array(decoded.object.extent).elementsEqual(document.prefix(decoded.object.extent.count)) {
                    mismatch("a record reads other bytes than were written")
                }
            } else {
                // A document that names a key twice, which LocalLMDB never writes (a hostile file
                // with a checksum it computed): read in place when it starts with `{`, else as its
                // rewrite with each key once (the last value in the first one's place). Either way
                // what is read must be a valid object.
                if (try? JSONValidator.validateObject(decoded.object.extent)) == nil {
                    mismatch("a record with a repeated key reads as invalid JSON")
                }
            }
        }
        if let decoded { walk(decoded.object) }
        // A value whose checksum matches but whose document is not JSON (a hostile file) is read
        // as written: reading its fields must stay within its bytes, whatever they hold.
        if mode == 1, let decoded, !validJSON {
            _ = decoded.object.className
            _ = decoded.object.member(named: "a", from: nil)
        }
    }

    /// Visits every member and element the scanner finds, as reads of fields do, with a budget
    /// (the bytes may not be JSON at all).
    static func walk(_ object: EncodedObject) {
        let scanner = object.scanner
        var budget = 10_000
        func visit(_ offset: Int) {
            budget -= 1
            guard budget > 0, offset >= 0, offset < object.bytes.count else { return }
            let end = scanner.end(ofValueAt: offset)
            switch scanner.byte(at: offset) {
            case UInt8(ascii: "{"):
                var member = scanner.firstMember(ofObjectAt: offset)
                while let at = member, at > offset, at < end, budget > 0 {
                    let found = scanner.member(at: at)
                    _ = found.keyHasEscapes ? JSONScanner.unescape(scanner.bytes(found.key)) : String(decoding: scanner.bytes(found.key), as: UTF8.self)
                    guard found.value > at else { return }
                    visit(found.value)
                    let valueEnd = scanner.end(ofValueAt: found.value)
                    guard valueEnd > found.value else { return }
                    member = scanner.nextMember(after: valueEnd)
                }
            case UInt8(ascii: "["):
                var element = scanner.firstElement(ofArrayAt: offset)
                while let at = element, at > offset, at < end, budget > 0 {
                    visit(at)
                    let elementEnd = scanner.end(ofValueAt: at)
                    guard elementEnd > at else { return }
                    element = scanner.nextElement(after: elementEnd)
                }
                _ = scanner.elementCount(ofArrayAt: offset)
            case UInt8(ascii: "\""):
                _ = scanner.string(at: offset)
                _ = Double.read(scanner, at: offset)
                _ = Date.read(scanner, at: offset)
            default:
                _ = scanner.numberText(at: offset)
                _ = Double.read(scanner, at: offset)
                _ = Int.read(scanner, at: offset)
                _ = scanner.bool(at: offset)
            }
        }
        visit(0)
    }

    // MARK: The change log

    /// A change-log entry: arbitrary bytes parse or not without a crash, and entries written
    /// from changes the fuzzer chooses read back as those changes, byte for byte.
    static func changeLog(_ input: UnsafeRawBufferPointer) {
        if let changes = ChangeLog.decode(input) {
            // What parsed writes back to an entry that parses to the same.
            let again = ChangeLog.encode(changes).withUnsafeBytes { ChangeLog.decode($0) }
            guard let again, same(again, changes) else { mismatch("a parsed entry does not round-trip") }
        }
        _ = ChangeLog.tags(input)
        var choices = Choices(input)
        var changes: [LoggedChange] = []
        for _ in 0..<choices.int(below: 6) {
            switch choices.int(below: 4) {
            case 0: changes.append(.written(id: choices.string(), className: choices.string()))
            case 1: changes.append(.deleted(id: choices.string(), className: choices.string()))
            case 2: changes.append(.typeDeleted(className: choices.string()))
            default: changes.append(.cleared)
            }
        }
        let decoded = ChangeLog.encode(changes).withUnsafeBytes { ChangeLog.decode($0) }
        guard let decoded, same(decoded, changes) else { mismatch("changes \(changes) read back as \(String(describing: decoded))") }
    }

    /// Equal changes, names and ids compared by their bytes.
    static func same(_ left: [LoggedChange], _ right: [LoggedChange]) -> Bool {
        guard left.count == right.count else { return false }
        return zip(left, right).allSatisfy { pair in
            switch pair {
            case let (.written(a, b), .written(c, d)), let (.deleted(a, b), .deleted(c, d)): a.hasSameUTF8(as: c) && b.hasSameUTF8(as: d)
            case let (.typeDeleted(a), .typeDeleted(b)): a.hasSameUTF8(as: b)
            case (.cleared, .cleared): true
            default: false
            }
        }
    }

    // MARK: Rows

    /// Class rows, replica state, index catalog rows and index cursors: arbitrary bytes parse or
    /// not without a crash, and rows made from chosen names parse back to the same names.
    static func rows(_ input: UnsafeRawBufferPointer) {
        _ = StoredClass(parsing: input)
        _ = ReplicaState(parsing: input)
        _ = IndexDefinition(parsing: input)
        _ = IndexCursor(encoded: Array(input))
        // Synchronization's rows and conflict entries, as a damaged or hostile file holds them:
        // parsed or refused, and what parses encodes to bytes that parse the same (bytes that are
        // not UTF-8 are read as replacement characters, so the bytes themselves may differ).
        if let parsed = SyncRow(parsing: input), let encoded = parsed.encoded {
            let again = encoded.withUnsafeBytes { SyncRow(parsing: $0) }
            guard let again, again.encoded == encoded else { mismatch("a synchronization row does not parse the same once encoded") }
        }
        if let parsed = SyncConflictRecord(number: 1, parsing: input) {
            let again = parsed.encoded.withUnsafeBytes { SyncConflictRecord(number: 1, parsing: $0) }
            guard let again, again.encoded == parsed.encoded, again.value == parsed.value else {
                mismatch("a conflict entry does not parse the same once encoded")
            }
        }
        if let zero = input.firstIndex(of: 0) {
            _ = StoredIndex(key: UnsafeRawBufferPointer(rebasing: input[..<zero]), value: UnsafeRawBufferPointer(rebasing: input[zero...]))
        }
        var choices = Choices(input)
        // A class row.
        let row = StoredClass(name: choices.string(), mangledName: choices.string(), qualifiedName: choices.string())
        if StoredClassName.isStorable(row.name), !row.mangledName.utf8.contains(0) {
            let parsed = row.encoded.withUnsafeBytes { StoredClass(parsing: $0) }
            guard let parsed, parsed.name.hasSameUTF8(as: row.name), parsed.mangledName.hasSameUTF8(as: row.mangledName) else {
                mismatch("the class row of \(row.name.debugDescription) parses as \(String(describing: parsed))")
            }
        }
        // A replica state.
        if let state = ReplicaState(source: choices.string(), position: choices.string()) {
            let parsed = state.encoded.withUnsafeBytes { ReplicaState(parsing: $0) }
            guard let parsed, parsed.source.hasSameUTF8(as: state.source), parsed.position.hasSameUTF8(as: state.position) else {
                mismatch("the replica state \(state) parses as \(String(describing: parsed))")
            }
        }
        // An index definition and its catalog row.
        let fields = (0..<(1 + choices.int(below: 3))).map { _ in
            IndexDefinition.Field(path: (0..<(1 + choices.int(below: 2))).map { _ in choices.string() }, kind: choices.byte() & 1 == 1 ? .date : .automatic)
        }
        let multiEntry = choices.byte() & 1 == 1
        let definition = IndexDefinition(fields: fields, isUnique: choices.byte() & 1 == 1, isMultiEntry: multiEntry, isCounted: !multiEntry && choices.byte() & 1 == 1)
        let index = StoredIndex(number: UInt32(truncatingIfNeeded: choices.uint64()), className: row.name, definition: definition)
        if StoredClassName.isStorable(row.name) {
            let key = StoredIndex.catalogKey(className: row.name, name: definition.name)
            let parsed = key.withUnsafeBytes { key in index.catalogValue.withUnsafeBytes { StoredIndex(key: key, value: $0) } }
            guard let parsed, parsed.number == index.number, parsed.className.hasSameUTF8(as: index.className),
                  parsed.definition == definition, parsed.definition.fields.map(\.path) == definition.fields.map(\.path) else {
                mismatch("the index \(definition.name.debugDescription) of \(row.name.debugDescription) parses as \(String(describing: parsed))")
            }
        }
        // An index cursor.
        let cursor = IndexCursor(tuple: choices.data(limit: 40), recordKey: choices.data(limit: 40))
        if IndexCursor(encoded: cursor.encoded) != cursor { mismatch("the cursor \(cursor) does not round-trip") }
        // A synchronization row and a conflict entry made from chosen values parse back to them.
        let syncRow = SyncRow(
            stamp: SyncStamp(time: choices.uint64(), device: choices.string()), base: SyncStamp(time: choices.uint64(), device: choices.string()),
            deleted: choices.byte() & 1 == 1, pending: choices.byte() & 1 == 1, id: choices.string())
        if let encoded = syncRow.encoded {
            let parsed = encoded.withUnsafeBytes { SyncRow(parsing: $0) }
            guard let parsed, parsed.stamp.time == syncRow.stamp.time, parsed.base.time == syncRow.base.time,
                  parsed.stamp.device.hasSameUTF8(as: syncRow.stamp.device), parsed.base.device.hasSameUTF8(as: syncRow.base.device),
                  parsed.id.hasSameUTF8(as: syncRow.id), parsed.deleted == syncRow.deleted, parsed.pending == syncRow.pending
            else { mismatch("the synchronization row \(syncRow) parses as \(String(describing: parsed))") }
        }
        let conflict = SyncConflictRecord(
            number: 7, id: choices.string(), className: choices.string(), loser: SyncStamp(time: choices.uint64(), device: choices.string()),
            winner: SyncStamp(time: choices.uint64(), device: choices.string()), loserDeleted: choices.byte() & 1 == 1,
            winnerDeleted: choices.byte() & 1 == 1, foundAt: choices.uint64(), value: choices.data(limit: 64))
        let parsedConflict = conflict.encoded.withUnsafeBytes { SyncConflictRecord(number: 7, parsing: $0) }
        guard let parsedConflict, parsedConflict.encoded == conflict.encoded, parsedConflict.loser.time == conflict.loser.time,
              parsedConflict.winner.time == conflict.winner.time, parsedConflict.value == conflict.value
        else { mismatch("the conflict entry of \(conflict.id.debugDescription) parses as \(String(describing: parsedConflict))") }
    }

    // MARK: JSON Lines

    /// A line of a JSON Lines file: any bytes parse or not without a crash; what parses is an id,
    /// a class and an object; lines written from chosen records parse back to them.
    static func jsonLines(_ input: UnsafeRawBufferPointer) {
        if let parsed = try? RecordLine.parse(input) {
            if (try? JSONValidator.validateObject(parsed.document)) == nil { mismatch("a line's document is not an object") }
            if parsed.id.isEmpty || parsed.className.isEmpty { mismatch("a line's id or class is empty") }
            var writer = JSONWriter()
            RecordLine.append(id: parsed.id, className: parsed.className, document: parsed.document, to: &writer)
            let line = Array(writer.bytes.dropLast())  // the newline
            let same = line.withUnsafeBytes { bytes in
                (try? RecordLine.parse(bytes)).map { again in
                    again.id.hasSameUTF8(as: parsed.id) && again.className.hasSameUTF8(as: parsed.className) && again.document.elementsEqual(parsed.document)
                } ?? false
            }
            if !same { mismatch("a parsed line does not round-trip") }
        }
        var choices = Choices(input)
        let (id, className) = (choices.string(), choices.string())
        guard !id.isEmpty, !className.isEmpty else { return }
        var document = JSONWriter()
        document.write(JSONObject(members: [.init(key: choices.string(), value: .string(choices.string()))]))
        let object = document.bytes
        var writer = JSONWriter()
        object.withUnsafeBytes { RecordLine.append(id: id, className: className, document: $0, to: &writer) }
        let parsed = Array(writer.bytes.dropLast()).withUnsafeBytes { bytes in
            (try? RecordLine.parse(bytes)).map { ($0.id, $0.className, Array($0.document)) }
        }
        guard let parsed, parsed.0.hasSameUTF8(as: id), parsed.1.hasSameUTF8(as: className), parsed.2 == object else {
            mismatch("the line of \(id.debugDescription) does not read back")
        }
    }
}

/// Which class names a class row can hold. (Its mangled name comes from the Swift runtime,
/// which spells no zero byte.)
enum StoredClassName {
    /// Every name the library accepts: a name with a zero byte is refused when a type is
    /// registered (`StoredClasses.register`), since the row separates its fields with zero bytes.
    static func isStorable(_ name: String) -> Bool { !name.utf8.contains(0) }
}
