import LocalLMDBBase

/// How doubles that JSON cannot write as numbers are stored: as strings, read back exactly.
///
/// `Double.nan` is `"NaN"`, `.infinity` `"Infinity"`, `-.infinity` `"-Infinity"`; any other NaN
/// (a negative, signalling or payload-carrying one) is `"NaN:0x"` followed by the 16 lowercase
/// hexadecimal digits of its bit pattern, so every bit comes back.
///
/// A string is a double only when its bytes are exactly one of these spellings, with no escape:
/// a `String` spelt the same is written with its first character escaped (`"\u0049nfinity"`,
/// see `JSONWriter.write(_:)`), which every JSON reader reads as the same text, and which no
/// `Double` read accepts. So a model that tries `Double` before `String` (the usual `AnyCodable`)
/// reads the one as a number and the other as text, as `JSONDecoder` would. (Records written
/// before this rule spelt such strings plainly: read as `Double`, they are the double.)
@usableFromInline package enum NonFiniteDouble {
    /// The stored text of a non-finite `value`.
    @inlinable package static func text(for value: Double) -> String {
        if value == .infinity { return "Infinity" }
        if value == -.infinity { return "-Infinity" }
        if value.bitPattern == Double.nan.bitPattern { return "NaN" }
        let hex = String(value.bitPattern, radix: 16)
        return "NaN:0x" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The double spelt `text` (a string's bytes between its quotes, as written), if they are
    /// exactly one of these spellings.
    @inline(__always)
    @inlinable static func value(spelledBy text: UnsafeRawBufferPointer) -> Double? {
        switch text.count {
        case 3: return text.hasSameBytes(as: bytes("NaN")) ? .nan : nil
        case 8: return text.hasSameBytes(as: bytes("Infinity")) ? .infinity : nil
        case 9: return text.hasSameBytes(as: bytes("-Infinity")) ? -.infinity : nil
        case 22: return payloadNaN(spelledBy: text)
        default: return nil
        }
    }

    /// The NaN other than `.nan` spelt `text` (`NaN:0x` and 16 lowercase hex digits), if any.
    @inlinable static func payloadNaN(spelledBy text: UnsafeRawBufferPointer) -> Double? {
        guard text.prefix(6).elementsEqual("NaN:0x".utf8) else { return nil }
        var bits: UInt64 = 0
        for byte in text.dropFirst(6) {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            bits = bits << 4 | UInt64(digit)
        }
        let value = Double(bitPattern: bits)
        return value.isNaN && bits != Double.nan.bitPattern ? value : nil
    }

    @inlinable static func bytes(_ text: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }
}
