/// Parses JSON (RFC 8259) from bytes into `JSONValue`s.
///
/// Strict: the whole input must be one value with optional surrounding whitespace; strings must
/// be valid UTF-8 with no raw control characters and no lone surrogate escapes; nesting is
/// limited to `maxDepth` so hostile input cannot exhaust the stack.
struct JSONReader {
    /// The deepest nesting of arrays and objects accepted.
    static let maxDepth = 512

    private let input: UnsafeRawBufferPointer
    private var offset = 0
    private var depth = 0

    private init(_ input: UnsafeRawBufferPointer) {
        self.input = input
    }

    /// Parses one complete JSON document.
    static func parse(_ input: UnsafeRawBufferPointer) throws(LocalDatabaseError) -> JSONValue {
        var reader = JSONReader(input)
        reader.skipWhitespace()
        let value = try reader.parseValue()
        reader.skipWhitespace()
        guard reader.offset == input.count else { throw reader.failure("unexpected data after the document") }
        return value
    }

    /// Parses one complete JSON document that must be an object.
    static func parseObject(_ input: UnsafeRawBufferPointer) throws(LocalDatabaseError) -> JSONObject {
        guard case let .object(object) = try parse(input) else {
            throw LocalDatabaseError.invalidJSON(reason: "the document is not an object", offset: 0)
        }
        return object
    }

    private func failure(_ reason: String) -> LocalDatabaseError {
        .invalidJSON(reason: reason, offset: offset)
    }

    private var current: UInt8? { offset < input.count ? input[offset] : nil }

    private mutating func skipWhitespace() {
        while offset < input.count {
            switch input[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    private mutating func expect(_ literal: StaticString) throws(LocalDatabaseError) {
        let count = literal.utf8CodeUnitCount
        guard input.count - offset >= count else { throw failure("invalid literal") }
        for index in 0..<count where input[offset + index] != literal.utf8Start[index] {
            throw failure("invalid literal")
        }
        offset += count
    }

    private mutating func parseValue() throws(LocalDatabaseError) -> JSONValue {
        guard let byte = current else { throw failure("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return .object(try parseObject())
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("unexpected character")
        }
    }

    private mutating func enterContainer() throws(LocalDatabaseError) {
        depth += 1
        guard depth <= Self.maxDepth else { throw failure("nesting deeper than \(Self.maxDepth) levels") }
        offset += 1
        skipWhitespace()
    }

    private mutating func parseObject() throws(LocalDatabaseError) -> JSONObject {
        try enterContainer()
        var members: [JSONObject.Member] = []
        members.reserveCapacity(16)
        if current == UInt8(ascii: "}") {
            offset += 1
            depth -= 1
            return JSONObject(members: members)
        }
        // A 64-bit filter of the keys seen so far: only a key whose bit is already set can be a
        // repeat, and only then are earlier keys compared.
        var seenKeys: UInt64 = 0
        while true {
            guard current == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let key = try parseString()
            // Hash the decoded key, so that differently escaped spellings of a key collide.
            let keyBit: UInt64 = 1 << (UInt64(truncatingIfNeeded: key.utf8.count &+ Int(key.utf8.last ?? 0)) & 63)
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw failure("expected ':'") }
            offset += 1
            skipWhitespace()
            let value = try parseValue()
            if seenKeys & keyBit != 0, let earlier = members.firstIndex(where: { $0.key == key }) {
                members[earlier].value = value  // A repeated key: the last value wins.
            } else {
                members.append(JSONObject.Member(key: key, value: value))
            }
            seenKeys |= keyBit
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                offset += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                offset += 1
                depth -= 1
                return JSONObject(members: members)
            default:
                throw failure("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray() throws(LocalDatabaseError) -> JSONValue {
        try enterContainer()
        var elements: [JSONValue] = []
        if current == UInt8(ascii: "]") {
            offset += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                offset += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                offset += 1
                depth -= 1
                return .array(elements)
            default:
                throw failure("expected ',' or ']'")
            }
        }
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(LocalDatabaseError) -> JSONValue {
        let start = offset
        if current == UInt8(ascii: "-") { offset += 1 }
        guard let first = current, isDigit(first) else { throw failure("expected a digit") }
        offset += 1
        if first != UInt8(ascii: "0") {
            while let byte = current, isDigit(byte) { offset += 1 }
        }
        var isInteger = true
        if current == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            try skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            offset += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
            try skipDigits()
        }
        let text = UnsafeRawBufferPointer(rebasing: input[start..<offset])
        if isInteger, let integer = Self.integer(text) {
            return .int(integer)
        }
        guard let number = Double(String(decoding: text, as: UTF8.self)), number.isFinite else {
            throw JSONReader.outOfRange(at: start)
        }
        return .double(number)
    }

    private static func outOfRange(at offset: Int) -> LocalDatabaseError {
        .invalidJSON(reason: "number out of range", offset: offset)
    }

    private mutating func skipDigits() throws(LocalDatabaseError) {
        guard let byte = current, isDigit(byte) else { throw failure("expected a digit") }
        while let byte = current, isDigit(byte) { offset += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// The value of an optionally negative run of digits, or nil when it does not fit in Int64.
    private static func integer(_ text: UnsafeRawBufferPointer) -> Int64? {
        let negative = text.first == UInt8(ascii: "-")
        var magnitude: UInt64 = 0
        for byte in text.dropFirst(negative ? 1 : 0) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte &- UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            magnitude = sum
        }
        if negative {
            if magnitude == UInt64(Int64.max) + 1 { return Int64.min }
            return magnitude <= UInt64(Int64.max) ? -Int64(magnitude) : nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    // MARK: Strings

    /// For each byte: 0 if it may appear in a string as is, 1 for `"`, 2 for `\`, 3 for a
    /// control character, 4 for the start of a non-ASCII sequence. Allocated once for the life
    /// of the process (a plain pointer: reading an array per string would retain its buffer).
    /// Written once by the lazy initializer, read-only after: safe to share.
    nonisolated(unsafe) private static let stringByteClass: UnsafePointer<UInt8> = {
        let table = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        for byte in 0..<256 {
            switch byte {
            case 0x22: table[byte] = 1
            case 0x5C: table[byte] = 2
            case 0..<0x20: table[byte] = 3
            case 0x80...: table[byte] = 4
            default: table[byte] = 0
            }
        }
        return UnsafePointer(table)
    }()

    private mutating func parseString() throws(LocalDatabaseError) -> String {
        offset += 1  // the opening quote
        let start = offset
        var asciiOnly = true
        // Fast path: no escapes.
        let end = input.count
        let classes = Self.stringByteClass
        var scanned: Int?
        var index = offset
        scan: while index < end {
            switch classes[Int(input[index])] {
            case 0: index += 1
            case 4: asciiOnly = false; index += 1
            case 1: scanned = index; break scan
            default: break scan
            }
        }
        if scanned == nil { offset = index }
        if let closing = scanned {
            let content = UnsafeRawBufferPointer(rebasing: input[start..<closing])
            offset = closing
            if !asciiOnly { try validateUTF8(content, startingAt: start) }
            offset += 1
            return String(decoding: content, as: UTF8.self)
        }
        if offset < end, input[offset] < 0x20 { throw failure("control character in string") }
        // Slow path: unescape into a buffer.
        var unescaped = Array(UnsafeRawBufferPointer(rebasing: input[start..<offset]))
        while true {
            guard let byte = current else { throw failure("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                if !asciiOnly { try unescaped.withBytes { bytes throws(LocalDatabaseError) in try validateUTF8(bytes, startingAt: start) } }
                return String(decoding: unescaped, as: UTF8.self)
            case UInt8(ascii: "\\"):
                offset += 1
                try appendEscape(to: &unescaped, asciiOnly: &asciiOnly)
            default:
                if byte < 0x20 { throw failure("control character in string") }
                if byte >= 0x80 { asciiOnly = false }
                unescaped.append(byte)
                offset += 1
            }
        }
    }

    private mutating func appendEscape(to buffer: inout [UInt8], asciiOnly: inout Bool) throws(LocalDatabaseError) {
        guard let byte = current else { throw failure("unterminated escape") }
        offset += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(byte)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try parseHex4())
            if (0xD800..<0xDC00).contains(scalar) {
                guard current == UInt8(ascii: "\\") else { throw failure("lone surrogate") }
                offset += 1
                guard current == UInt8(ascii: "u") else { throw failure("lone surrogate") }
                offset += 1
                let low = UInt32(try parseHex4())
                guard (0xDC00..<0xE000).contains(low) else { throw failure("lone surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw failure("lone surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("invalid code point") }
            if scalar >= 0x80 { asciiOnly = false }
            UTF8.encode(unicode) { buffer.append($0) }
        default:
            throw failure("invalid escape")
        }
    }

    private mutating func parseHex4() throws(LocalDatabaseError) -> UInt16 {
        guard input.count - offset >= 4 else { throw failure("truncated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = input[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid hex digit")
            }
            value = value << 4 | UInt16(digit)
            offset += 1
        }
        return value
    }

    /// Throws unless `bytes` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
    private func validateUTF8(_ bytes: UnsafeRawBufferPointer, startingAt start: Int) throws(LocalDatabaseError) {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 { index += 1; continue }
            let length: Int
            var lowerBound: UInt8 = 0x80
            var upperBound: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lowerBound = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; upperBound = 0x9F
            case 0xF0: length = 4; lowerBound = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; upperBound = 0x8F
            default: throw LocalDatabaseError.invalidJSON(reason: "invalid UTF-8", offset: start + index)
            }
            guard count - index >= length else {
                throw LocalDatabaseError.invalidJSON(reason: "truncated UTF-8 sequence", offset: start + index)
            }
            let second = bytes[index + 1]
            guard second >= lowerBound && second <= upperBound else {
                throw LocalDatabaseError.invalidJSON(reason: "invalid UTF-8", offset: start + index)
            }
            for continuation in 2..<max(length, 2) where bytes[index + continuation] & 0xC0 != 0x80 {
                throw LocalDatabaseError.invalidJSON(reason: "invalid UTF-8", offset: start + index)
            }
            index += length
        }
    }
}
