/// Writes `JSONValue`s as compact, standards-compliant JSON (RFC 8259) into a byte buffer.
///
/// Strings are written as UTF-8 with only the required escapes; integers exactly; finite
/// doubles in Swift's shortest round-tripping form. JSON has no NaN or infinity: those are
/// written as the strings of `NonFiniteDouble`, which reading a `Double` turns back into the
/// same value. Nothing is written past `JSONValidator.maxDepth` levels of nesting, and an
/// `.unencodable` value is not written: either sets `failed`, and the bytes must not be stored.
struct JSONWriter {
    var bytes: [UInt8]
    /// Something could not be written (too deep, or `.unencodable`): see `JSONWriter.failure(in:)`.
    private(set) var failed = false
    /// Containers open around the value being written.
    private var depth = 0

    init(bytes: [UInt8] = []) {
        self.bytes = bytes
    }

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: bytes.append(contentsOf: Self.null)
        case let .bool(flag): bytes.append(contentsOf: flag ? Self.true : Self.false)
        case let .int(number): write(number)
        case let .double(number): write(number)
        case let .number(text): bytes.append(contentsOf: text.utf8)
        case let .string(text): write(text)
        case let .array(elements):
            guard enter() else { return }
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
            depth -= 1
        case let .object(object):
            write(object)
        case .unencodable:
            failed = true
            bytes.append(contentsOf: Self.null)
        }
    }

    mutating func write(_ object: JSONObject) {
        guard enter() else { return }
        bytes.append(UInt8(ascii: "{"))
        for (index, member) in object.members.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            write(member.key)
            bytes.append(UInt8(ascii: ":"))
            write(member.value)
        }
        bytes.append(UInt8(ascii: "}"))
        depth -= 1
    }

    /// Opens a container; false (and `failed`) past the reader's nesting limit, which the
    /// writer does not go beyond either (so no input can exhaust its stack).
    private mutating func enter() -> Bool {
        depth += 1
        guard depth <= JSONValidator.maxDepth else {
            depth -= 1
            failed = true
            bytes.append(contentsOf: Self.null)
            return false
        }
        return true
    }

    /// Where and why `object` cannot be written: the path of the first value that is too deep
    /// or unencodable (`address.tags[3]`), and the reason; nil when it can be. Walks the tree
    /// again, so only a failed write pays for it.
    static func failure(in object: JSONObject) -> (path: String, reason: String)? {
        var path: [String] = []
        return failure(in: .object(object), depth: 0, path: &path)
    }

    private static func failure(in value: JSONValue, depth: Int, path: inout [String]) -> (path: String, reason: String)? {
        func found(_ reason: String) -> (path: String, reason: String) {
            (String(path.joined().trimmingPrefix(".")), reason)
        }
        switch value {
        case let .unencodable(reason):
            return found(reason)
        case let .array(elements):
            guard depth < JSONValidator.maxDepth else { return found("nested deeper than \(JSONValidator.maxDepth) levels") }
            for (index, element) in elements.enumerated() {
                path.append("[\(index)]")
                defer { path.removeLast() }
                if let failure = failure(in: element, depth: depth + 1, path: &path) { return failure }
            }
        case let .object(object):
            guard depth < JSONValidator.maxDepth else { return found("nested deeper than \(JSONValidator.maxDepth) levels") }
            for member in object.members {
                path.append("." + FieldKey.field(fromStored: member.key))  // Field keys, as the model named them.
                defer { path.removeLast() }
                if let failure = failure(in: member.value, depth: depth + 1, path: &path) { return failure }
            }
        default:
            break
        }
        return nil
    }

    mutating func write(_ number: Int64) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        // Work with the magnitude so Int64.min does not overflow.
        var magnitude = number.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var index = digits.count
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[index...]))
        }
    }

    mutating func write(_ number: Double) {
        guard number.isFinite else { return write(NonFiniteDouble.text(for: number)) }
        bytes.append(contentsOf: number.description.utf8)
    }

    mutating func write(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                appendEscape(for: byte)
                runStart = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscape(for byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        default:
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
        }
    }

    private static let null = Array("null".utf8)
    private static let `true` = Array("true".utf8)
    private static let `false` = Array("false".utf8)
}
