/// Writes `JSONValue`s as compact, standards-compliant JSON (RFC 8259) into a byte buffer.
///
/// Strings are written as UTF-8 with only the required escapes; integers exactly; doubles in
/// Swift's shortest round-tripping form. JSON has no NaN or infinity: those are written as `null`.
struct JSONWriter {
    var bytes: [UInt8]

    init(bytes: [UInt8] = []) {
        self.bytes = bytes
    }

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: bytes.append(contentsOf: Self.null)
        case let .bool(flag): bytes.append(contentsOf: flag ? Self.true : Self.false)
        case let .int(number): write(number)
        case let .double(number): write(number)
        case let .string(text): write(text)
        case let .array(elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case let .object(object):
            write(object)
        }
    }

    mutating func write(_ object: JSONObject) {
        bytes.append(UInt8(ascii: "{"))
        for (index, member) in object.members.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            write(member.key)
            bytes.append(UInt8(ascii: ":"))
            write(member.value)
        }
        bytes.append(UInt8(ascii: "}"))
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
        guard number.isFinite else {
            bytes.append(contentsOf: Self.null)
            return
        }
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
