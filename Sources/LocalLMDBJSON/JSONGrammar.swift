import LocalLMDBBase

/// The pieces of JSON (RFC 8259) that both `JSONValidator`, which checks them, and
/// `JSONScanner`, which reads them out of checked bytes, need: byte classes, escapes and numbers.
/// One definition of each, so the two cannot disagree.
@usableFromInline package enum JSONGrammar {
    @inline(__always)
    @inlinable static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    @inlinable static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    // MARK: Escapes

    /// Why an escape sequence is invalid.
    @usableFromInline package enum EscapeError: Error {
        case truncated, invalidEscape, invalidHexDigit, loneSurrogate

        @inlinable var reason: String {
            switch self {
            case .truncated: return "truncated escape"
            case .invalidEscape: return "invalid escape"
            case .invalidHexDigit: return "invalid hex digit"
            case .loneSurrogate: return "lone surrogate"
            }
        }
    }

    /// Decodes the escape sequence whose backslash is at `offset`.
    /// - Returns: The character it stands for, and the offset just past the sequence (a
    ///   surrogate pair written as two `\u` escapes is one sequence).
    @inlinable static func escape(in bytes: UnsafeRawBufferPointer, at offset: Int) throws(EscapeError) -> (scalar: Unicode.Scalar, end: Int) {
        guard offset + 1 < bytes.count else { throw .truncated }
        let simple: UInt8
        switch bytes[offset + 1] {
        case UInt8(ascii: "\""): simple = 0x22
        case UInt8(ascii: "\\"): simple = 0x5C
        case UInt8(ascii: "/"): simple = 0x2F
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            let high = try hex4(in: bytes, at: offset + 2)
            if (0xDC00..<0xE000).contains(high) { throw .loneSurrogate }
            guard (0xD800..<0xDC00).contains(high) else {
                // Not a surrogate, so a valid scalar.
                return (Unicode.Scalar(high) ?? "\u{FFFD}", offset + 6)
            }
            guard offset + 7 < bytes.count, bytes[offset + 6] == UInt8(ascii: "\\"), bytes[offset + 7] == UInt8(ascii: "u") else {
                throw .loneSurrogate
            }
            let low = try hex4(in: bytes, at: offset + 8)
            guard (0xDC00..<0xE000).contains(low) else { throw .loneSurrogate }
            let scalar = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
            return (Unicode.Scalar(scalar) ?? "\u{FFFD}", offset + 12)
        default:
            throw .invalidEscape
        }
        return (Unicode.Scalar(simple), offset + 2)
    }

    @inlinable static func hex4(in bytes: UnsafeRawBufferPointer, at offset: Int) throws(EscapeError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw .truncated }
        var value: UInt32 = 0
        for index in offset..<(offset + 4) {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .invalidHexDigit
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    // MARK: Numbers

    /// The shape of a number, as found by `numberShape`.
    @usableFromInline package struct NumberShape {
        /// Just past the number's last byte.
        @usableFromInline package var end: Int
        /// No fraction and no exponent.
        @usableFromInline var isInteger: Bool
        /// It has an exponent.
        @usableFromInline var hasExponent = false

        @inlinable init(end: Int, isInteger: Bool, hasExponent: Bool = false) {
            (self.end, self.isInteger, self.hasExponent) = (end, isInteger, hasExponent)
        }
    }

    /// Checks the number grammar starting at `offset`: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    /// - Returns: Its shape, or nil when the bytes there are not a number.
    @inlinable package static func numberShape(in bytes: UnsafeRawBufferPointer, at offset: Int) -> NumberShape? {
        let count = bytes.count
        var index = offset
        if index < count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count, isDigit(bytes[index]) else { return nil }
        let first = bytes[index]
        index += 1
        if first != UInt8(ascii: "0") {
            while index < count, isDigit(bytes[index]) { index += 1 }
        }
        var isInteger = true
        if index < count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < count, isDigit(bytes[index]) else { return nil }
            while index < count, isDigit(bytes[index]) { index += 1 }
        }
        var hasExponent = false
        if index < count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            hasExponent = true
            index += 1
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < count, isDigit(bytes[index]) else { return nil }
            while index < count, isDigit(bytes[index]) { index += 1 }
        }
        return NumberShape(end: index, isInteger: isInteger, hasExponent: hasExponent)
    }

    /// The value of a number that `numberShape` accepted: `.int` when it is an integer that fits
    /// in 64 bits, else `.double`; nil when it is beyond `Double`'s range.
    @inlinable static func numberValue(_ text: UnsafeRawBufferPointer, isInteger: Bool) -> JSONValue? {
        if let (value, end) = shortNumber(in: text, at: 0), end == text.count { return value }
        return longNumberValue(text, isInteger: isInteger)
    }

    /// `numberValue` for a number `shortNumber` does not read.
    @inlinable static func longNumberValue(_ text: UnsafeRawBufferPointer, isInteger: Bool) -> JSONValue? {
        if isInteger, let integer = integer(text) { return .int(integer) }
        guard let number = Double(String(decoding: text, as: UTF8.self)), number.isFinite else { return nil }
        return .double(number)
    }

    /// The value of an optionally negative run of digits, or nil when it does not fit in Int64.
    @inlinable static func integer(_ text: UnsafeRawBufferPointer) -> Int64? {
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

    /// Exact powers of ten: every one up to 10^22 is a `Double` without rounding.
    @usableFromInline static let exactPowersOfTen: [Double] = (0...22).map { exponent in
        (0..<exponent).reduce(1.0) { power, _ in power * 10 }
    }

    /// The number at `offset` read in one pass, grammar and value together, when it is the
    /// common kind: at most 15 significant digits, no exponent, no leading zero. An integer is
    /// `.int`; a decimal is `.double`, computed exactly (see `ShortNumber.double`). Nil for
    /// anything else, which takes `numberShape` and `longNumberValue`. Returns the offset just
    /// past the number.
    @inline(__always)
    @inlinable static func shortNumber(in bytes: UnsafeRawBufferPointer, at offset: Int) -> (value: JSONValue, end: Int)? {
        shortNumberParts(in: bytes, at: offset).map { ($0.value, $0.end) }
    }

    /// A number `shortNumberParts` read: its digits as an integer (below 10^15), how many of
    /// them follow the point, its sign, and the offset just past it.
    @usableFromInline package struct ShortNumber {
        @usableFromInline let mantissa: UInt64
        @usableFromInline let fractionDigits: Int
        @usableFromInline let negative: Bool
        @usableFromInline let end: Int

        @inlinable init(mantissa: UInt64, fractionDigits: Int, negative: Bool, end: Int) {
            (self.mantissa, self.fractionDigits, self.negative, self.end) = (mantissa, fractionDigits, negative, end)
        }

        /// The value `shortNumber` gives: `.int` with no fraction, else `.double`.
        @inline(__always)
        @inlinable var value: JSONValue {
            guard fractionDigits > 0 else {
                // `-0` is kept as written: as an integer it would be written back as `0`, and a
                // `Double` reads it as -0.0.
                return negative && mantissa == 0 ? .number("-0") : .int(integer)
            }
            return .double(double)
        }

        /// The digits as a signed integer, the point ignored (`-0` is 0).
        @inline(__always)
        @inlinable var integer: Int64 {
            let magnitude = Int64(mantissa)
            return negative ? -magnitude : magnitude
        }

        /// A number with a fraction, computed exactly: the digits as an integer below 2^53
        /// and a power of ten up to 10^22 are both exact doubles, and one IEEE division rounds
        /// correctly (Clinger's fast path). Only when `fractionDigits > 0`.
        @inline(__always)
        @inlinable var double: Double {
            let magnitude = Double(mantissa) / exactPowersOfTen[fractionDigits]
            return negative ? -magnitude : magnitude
        }
    }

    /// `shortNumber`'s reading, in parts, so typed readers build their value with no `JSONValue`.
    @inline(__always)
    @inlinable static func shortNumberParts(in bytes: UnsafeRawBufferPointer, at offset: Int) -> ShortNumber? {
        let count = bytes.count
        var index = offset
        let negative = index < count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var mantissa: UInt64 = 0
        var significant = 0
        @inline(__always) func digits() -> Int? {
            let start = index
            while index < count {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                mantissa = mantissa &* 10 &+ UInt64(digit)
                if mantissa != 0 { significant += 1 }
                guard significant <= 15 else { return nil }
                index += 1
            }
            return index - start
        }
        let integerStart = index
        guard let integerDigits = digits(), integerDigits > 0,
              integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        var fractionDigits = 0
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard let digitCount = digits(), digitCount > 0, digitCount < exactPowersOfTen.count else { return nil }
            fractionDigits = digitCount
        }
        if index < count {
            switch bytes[index] {
            case UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "."): return nil
            default: break
            }
        }
        return ShortNumber(mantissa: mantissa, fractionDigits: fractionDigits, negative: negative, end: index)
    }

    // MARK: Strings

    /// The offset of the first byte at or after `offset` that a string reader must look at: a
    /// quote, a backslash, a control character or a non-ASCII byte (`bytes.count` if none).
    /// Most string content is plain ASCII, so this tests eight bytes at a time.
    @inline(__always)
    @inlinable static func endOfPlainRun(in bytes: UnsafeRawBufferPointer, from offset: Int) -> Int {
        let count = bytes.count
        var index = offset
        if let base = bytes.baseAddress {
            while index + 8 <= count {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let special = specialBytes(word)
                if special != 0 { return index + special.trailingZeroBitCount / 8 }
                index += 8
            }
        }
        while index < count, isPlainStringByte(bytes[index]) { index += 1 }
        return index
    }

    /// Whether every byte of `bytes` is printable ASCII other than `"` and `\\`: text that JSON
    /// spells as it reads, byte for byte (so equal bytes are equal keys).
    @inline(__always)
    @inlinable package static func isPlain(_ bytes: UnsafeRawBufferPointer) -> Bool {
        endOfPlainRun(in: bytes, from: 0) == bytes.count
    }

    /// Whether `bytes` holds a quote or a backslash: eight bytes at a time, exactly (a word
    /// with no such byte never sets a high bit here).
    @inline(__always)
    @inlinable package static func containsQuoteOrBackslash(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let count = bytes.count
        @inline(__always) func hasOne(in word: UInt64) -> Bool {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let quotes = word ^ (ones &* 0x22)
            let backslashes = word ^ (ones &* 0x5C)
            return ((quotes &- ones) & ~quotes | (backslashes &- ones) & ~backslashes) & (ones &* 0x80) != 0
        }
        @inline(__always) func hasOne(at offset: Int) -> Bool {
            hasOne(in: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        guard count >= 8 else {
            if count >= 4 {
                // Two loads of four bytes that overlap when there are fewer than eight, as one word.
                let low = UInt64(base.loadUnaligned(as: UInt32.self))
                let high = UInt64(base.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
                return hasOne(in: low | high << 32)
            }
            for index in 0..<count where bytes[index] == 0x22 || bytes[index] == 0x5C { return true }
            return false
        }
        var offset = 0
        while offset + 8 <= count {
            if hasOne(at: offset) { return true }
            offset += 8
        }
        return offset < count && hasOne(at: count - 8)
    }

    /// Printable ASCII other than `"` and `\\`.
    @inlinable static func isPlainStringByte(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x80 && byte != 0x22 && byte != 0x5C
    }

    /// A mask with the high bit set in each byte of `word` that is special to a string (as in
    /// `endOfPlainRun`). Exact for the lowest such byte, which is all `endOfPlainRun` uses: the
    /// subtractions' borrows can only mark bytes above one that is truly special.
    @inline(__always)
    @inlinable static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let isQuote = (quotes &- ones) & ~quotes
        let isBackslash = (backslashes &- ones) & ~backslashes
        let isControl = (word &- ones &* 0x20) & ~word
        // Non-ASCII bytes have their high bit set already.
        return (isQuote | isBackslash | isControl | word) & highs
    }

    // MARK: UTF-8

    /// The length of the well-formed UTF-8 sequence starting at `offset` (no overlongs,
    /// surrogates or values past U+10FFFF), or nil when it is not one.
    @inlinable static func utf8SequenceLength(in bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        let count = bytes.count
        guard offset < count else { return nil }
        let lead = bytes[offset]
        if lead < 0x80 { return 1 }
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
        default: return nil
        }
        guard count - offset >= length else { return nil }
        let second = bytes[offset + 1]
        guard second >= lowerBound && second <= upperBound else { return nil }
        for continuation in 2..<max(length, 2) where bytes[offset + continuation] & 0xC0 != 0x80 {
            return nil
        }
        return length
    }
}
