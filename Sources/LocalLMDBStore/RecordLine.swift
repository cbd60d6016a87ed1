import LocalLMDBLMDB
import LocalLMDBJSON

/// One record as a line of JSON Lines, the form of export and import:
///
/// ```
/// {"id":"…","class":"…","value":{…}}
/// ```
///
/// `value` is the stored document itself (JSON, not a string holding JSON), byte for byte:
/// a record exported and imported again is stored with the same bytes.
package enum RecordLine {
    /// Appends the line of the record `id` of class `className` holding `document`, with its
    /// newline.
    package static func append(id: String, className: String, document: UnsafeRawBufferPointer, to writer: inout JSONWriter) {
        writer.write(literal: "{\"id\":")
        writer.write(id)
        writer.write(literal: ",\"class\":")
        writer.write(className)
        writer.write(literal: ",\"value\":")
        writer.write(raw: document)
        writer.write(literal: "}\n")
    }

    /// A line's record: its id, class name and document (a view into the line).
    package struct Parsed {
        package let id: String
        package let className: String
        package let document: UnsafeRawBufferPointer
    }

    /// The record `line` (without its newline) holds.
    /// - Throws: A reason, when the line is not one object with exactly the members `id` and
    ///   `class` (non-empty strings) and `value` (an object), in strict JSON with no key
    ///   repeated anywhere (a repeated key would make a reader keep one of two values).
    package static func parse(_ line: UnsafeRawBufferPointer) throws(RecordLineError) -> Parsed {
        let summary: JSONValidator.Summary
        do throws(DatabaseError) {
            summary = try JSONValidator.validateObject(line)
        } catch {
            if case let .invalidJSON(reason, offset) = error { throw RecordLineError("invalid JSON at byte \(offset): \(reason)") }
            throw RecordLineError(error.description)
        }
        guard !summary.mayRepeatKeys else { throw RecordLineError("a key appears more than once in an object") }
        let scanner = JSONScanner(line)
        var id: String?
        var className: String?
        var document: UnsafeRawBufferPointer?
        var next = scanner.firstMember(ofObjectAt: summary.start)
        while let offset = next {
            let member = scanner.member(at: offset)
            let key = member.keyHasEscapes ? JSONScanner.unescape(scanner.bytes(member.key)) : String(decoding: scanner.bytes(member.key), as: UTF8.self)
            let end = scanner.end(ofValueAt: member.value)
            switch key {
            case "id":
                guard let text = scanner.string(at: member.value)?.value, !text.isEmpty else { throw RecordLineError("\"id\" is not a non-empty string") }
                id = text
            case "class":
                guard let text = scanner.string(at: member.value)?.value, !text.isEmpty else { throw RecordLineError("\"class\" is not a non-empty string") }
                className = text
            case "value":
                guard scanner.byte(at: member.value) == UInt8(ascii: "{") else { throw RecordLineError("\"value\" is not an object") }
                document = UnsafeRawBufferPointer(rebasing: line[member.value..<end])
            default:
                throw RecordLineError("unexpected member \"\(key)\" (a line has \"id\", \"class\" and \"value\")")
            }
            next = scanner.nextMember(after: end)
        }
        guard let id else { throw RecordLineError("no \"id\"") }
        guard let className else { throw RecordLineError("no \"class\"") }
        guard let document else { throw RecordLineError("no \"value\"") }
        return Parsed(id: id, className: className, document: document)
    }
}

/// Why a line is not a record (`RecordLine.parse`).
package struct RecordLineError: Error {
    package let reason: String

    init(_ reason: String) {
        self.reason = reason
    }
}
