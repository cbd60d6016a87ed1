import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

// The JSON form of the value kinds beyond JSON's own, one rule each, shared by the `Codable`
// coders and `DataObject`'s typed `add` and `get`:
//
// | Swift                         | JSON                                                          |
// |-------------------------------|---------------------------------------------------------------|
// | `Int`, `Int8`…`Int64`, `UInt8`…`UInt64`, `UInt` | a number, exact (beyond 2^63 too)           |
// | `Double`                      | a number; NaN and ±infinity as strings (`NonFiniteDouble`)    |
// | `String`                      | a string; one spelt as a non-finite double with an escape     |
// | `Float`                       | a number, its shortest form (`0.1`); NaN and ±infinity as strings |
// | `Decimal`                     | a number with every digit (`3.14159265358979323846`); NaN as `"NaN"` |
// | `Date`                        | an ISO 8601 string in UTC, exact (`ISO8601Date`)              |
// | `Data`                        | a Base64 string                                               |
// | `URL`                         | its absolute string                                           |
// | `UUID`                        | its `uuidString`                                              |
// | enums with raw values         | the raw value                                                 |
// | `[String: V]`                 | an object                                                     |

extension Float {
    /// The shortest text that reads back as this `Float`; NaN and the infinities as strings.
    var jsonValue: JSONValue {
        if isFinite { return .number(description) }
        // A NaN's bits are moved, not converted: a conversion would quiet a signalling NaN.
        return .double(isNaN ? nanAsDouble : Double(self))
    }

    /// This NaN as the `Double` NaN with the same sign, signalling bit and payload.
    var nanAsDouble: Double {
        Double(sign: sign, exponentBitPattern: 0x7FF, significandBitPattern: UInt64(significandBitPattern) << 29)
    }

    /// The `Float` NaN with `nan`'s sign, signalling bit and payload (the bits a `Float` holds).
    init(nanBitsOf nan: Double) {
        var significand = UInt32(truncatingIfNeeded: nan.significandBitPattern >> 29)
        if significand == 0 { significand = 1 << 22 }  // A payload only in bits a Float lacks: a quiet NaN.
        self.init(sign: nan.sign, exponentBitPattern: 0xFF, significandBitPattern: significand)
    }
}

extension Decimal {
    /// Every digit, as a number; NaN (Decimal has no infinities) as `"NaN"`, the form of `Double.nan`
    /// (a `String` spelt so is written otherwise: see `NonFiniteDouble`).
    var jsonValue: JSONValue {
        guard !isNaN else { return .double(.nan) }
        let text = description
        var bytes = text
        let isNumber = bytes.withUTF8 { utf8 in
            JSONGrammar.numberShape(in: UnsafeRawBufferPointer(utf8), at: 0)?.end == utf8.count
        }
        return isNumber ? .number(text) : .string(text)
    }
}

extension UInt64 {
    var jsonValue: JSONValue {
        self <= UInt64(Int64.max) ? .int(Int64(self)) : .number(String(self))
    }
}

/// Reads of the value kinds beyond `JSONScalar`'s, each returning the value and where it ends,
/// or nil when the value there is of another kind or does not fit.
enum ValueReading {
    /// An integer of type `I`: exact, or nil when the number is not an integer that fits.
    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ scanner: JSONScanner, at offset: Int) -> (value: I, end: Int)? {
        guard let (text, isInteger, end) = scanner.numberText(at: offset) else { return nil }
        if isInteger {
            let negative = text.first == UInt8(ascii: "-")
            var value: I = 0
            for byte in text.dropFirst(negative ? 1 : 0) {
                let digit = I(byte &- UInt8(ascii: "0"))
                let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
                let (next, overflow2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
                guard !overflow, !overflow2 else { return nil }
                value = next
            }
            return (value, end)
        }
        guard let double = Double(String(decoding: text, as: UTF8.self)), let value = I(exactly: double) else { return nil }
        return (value, end)
    }

    /// A number that fits a `Float`, or NaN or an infinity as LocalLMDB stores them.
    static func float(_ scanner: JSONScanner, at offset: Int) -> (value: Float, end: Int)? {
        if let number = floatNumber(scanner, at: offset) { return number }
        guard let (double, end) = Double.readNonFinite(scanner, at: offset) else { return nil }
        return (double.isNaN ? Float(nanBitsOf: double) : Float(double), end)
    }

    /// A number that fits a `Float` only: JSON from elsewhere (see `Double.readNumber`).
    static func floatNumber(_ scanner: JSONScanner, at offset: Int) -> (value: Float, end: Int)? {
        guard let (text, _, end) = scanner.numberText(at: offset),
              let value = Float(String(decoding: text, as: UTF8.self)), value.isFinite else { return nil }
        return (value, end)
    }

    /// A number that fits a `Decimal`, or NaN as LocalLMDB stores it.
    static func decimal(_ scanner: JSONScanner, at offset: Int) -> (value: Decimal, end: Int)? {
        if let number = decimalNumber(scanner, at: offset) { return number }
        guard let (text, end) = scanner.string(at: offset), text == "NaN" else { return nil }
        return (Decimal.nan, end)
    }

    /// A number that fits a `Decimal` only: JSON from elsewhere (see `Double.readNumber`).
    static func decimalNumber(_ scanner: JSONScanner, at offset: Int) -> (value: Decimal, end: Int)? {
        guard let (text, _, end) = scanner.numberText(at: offset) else { return nil }
        return Decimal(string: String(decoding: text, as: UTF8.self), locale: nil).map { ($0, end) }
    }

    static func data(_ scanner: JSONScanner, at offset: Int) -> (value: Data, end: Int)? {
        guard let (text, end) = scanner.string(at: offset), let data = Data(base64Encoded: text) else { return nil }
        return (data, end)
    }

    static func url(_ scanner: JSONScanner, at offset: Int) -> (value: URL, end: Int)? {
        guard let (text, end) = scanner.string(at: offset), let url = URL(string: text) else { return nil }
        return (url, end)
    }
}
