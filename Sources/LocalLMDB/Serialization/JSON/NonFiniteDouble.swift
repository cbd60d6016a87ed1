/// How doubles that JSON cannot write as numbers are stored: as strings, read back exactly.
///
/// `Double.nan` is `"NaN"`, `.infinity` `"Infinity"`, `-.infinity` `"-Infinity"`; any other NaN
/// (a negative, signalling or payload-carrying one) is `"NaN:0x"` followed by the 16 hexadecimal
/// digits of its bit pattern, so every bit comes back. Reading a `Double` accepts exactly these
/// spellings; other strings are not doubles.
enum NonFiniteDouble {
    /// The stored text of a non-finite `value`.
    static func text(for value: Double) -> String {
        if value == .infinity { return "Infinity" }
        if value == -.infinity { return "-Infinity" }
        if value.bitPattern == Double.nan.bitPattern { return "NaN" }
        let hex = String(value.bitPattern, radix: 16)
        return "NaN:0x" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The double stored as `text`, if it is one of these spellings.
    static func value(of text: String) -> Double? {
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default:
            // Exactly the form `text(for:)` writes: 16 lowercase hex digits, of a NaN other than `.nan`.
            let digits = text.utf8.dropFirst(6)
            guard text.utf8.count == 22, text.hasPrefix("NaN:0x"),
                  digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }),
                  let bits = UInt64(text.dropFirst(6), radix: 16) else { return nil }
            let value = Double(bitPattern: bits)
            return value.isNaN && bits != Double.nan.bitPattern ? value : nil
        }
    }
}
