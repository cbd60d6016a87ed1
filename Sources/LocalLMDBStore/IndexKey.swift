import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON

/// How an indexed field's stored JSON value becomes bytes that sort as the values do: the one
/// value order of every index and query.
///
/// Each value is self-delimiting, so a compound index's key is its fields' encodings one after
/// the other and sorts field by field. The order, by kind first:
///
/// 1. missing, or `null` (the same: a model's `nil` is not written);
/// 2. `false`, then `true`;
/// 3. numbers, by value, whatever their type: `-Infinity`, negatives, zero (`-0.0` is zero),
///    positives, `Infinity`, then NaN (every NaN after every number; NaNs with other bit
///    patterns are distinct, ordered by pattern as an unsigned integer). Integers, `UInt64` beyond 2^53, doubles and
///    `Decimal`s compare exactly: the JSON text is compared as a decimal number, never through
///    `Double` (1 and 1.0 are equal);
/// 4. strings, by the bytes of their UTF-8 in Unicode's canonical composition (NFC):
///    canonically equivalent strings are equal, as Swift compares them; a string another
///    starts with comes first (`"a"`, `"a\u{0}"`, `"a\u{1}"`);
/// 5. dates, for a field declared a date: chronologically, whatever the ISO 8601 form stored
///    (a value there that is not a date's text is indexed as the string it is);
/// 6. arrays and objects (not indexed by element), by the bytes of their JSON.
///
/// Invariant: two values encode to the same bytes exactly when they are equal in this order,
/// and an encoding is followed in a tuple by the next field's tag or nothing, never by `0xFF`,
/// unless it is a string's (or array's) shorter text whose next byte was an escaped zero (what
/// `IndexRange`'s bounds rely on: a string's encoding is a prefix of a longer one's);
/// nothing distinct is merged (a decimal exponent beyond ±2^31, which no Swift number has, is
/// the one limit: such values compare as if at that bound).
package enum IndexKey {
    /// The kind a field is declared to hold, where its JSON alone cannot say.
    package enum FieldKind: UInt8, Sendable, Hashable {
        /// As the JSON says.
        case automatic = 0
        /// ISO 8601 text that LocalLMDB writes for `Date`s, compared chronologically.
        case date = 1
    }

    static let missingTag: UInt8 = 0x05
    static let falseTag: UInt8 = 0x10
    static let trueTag: UInt8 = 0x11
    static let numberTag: UInt8 = 0x20
    static let stringTag: UInt8 = 0x30
    static let dateTag: UInt8 = 0x40
    static let compositeTag: UInt8 = 0x50

    // Within numbers.
    static let negativeInfinity: UInt8 = 0x01
    static let negative: UInt8 = 0x40
    static let zero: UInt8 = 0x80
    static let positive: UInt8 = 0xC0
    static let positiveInfinity: UInt8 = 0xE0
    static let notANumber: UInt8 = 0xF0

    /// The first and last tag of the kind whose encodings start with `tag`: a range is bounded
    /// to its bound's kind (`false` and `true` are one kind).
    package static func kindTags(of tag: UInt8) -> (first: UInt8, last: UInt8) {
        tag == falseTag || tag == trueTag ? (falseTag, trueTag) : (tag, tag)
    }

    /// Appends the encoding of a missing value (or `null`).
    package static func appendMissing(to key: inout [UInt8]) {
        key.append(missingTag)
    }

    /// Appends the encoding of the JSON value at `offset`.
    package static func append(valueAt offset: Int, in scanner: JSONScanner, kind: FieldKind, to key: inout [UInt8]) {
        switch scanner.byte(at: offset) {
        case UInt8(ascii: "n"):
            key.append(missingTag)
        case UInt8(ascii: "t"):
            key.append(trueTag)
        case UInt8(ascii: "f"):
            key.append(falseTag)
        case UInt8(ascii: "\""):
            if kind == .date, let (date, _) = Date.read(scanner, at: offset) {
                key.append(dateTag)
                appendOrdered(date.timeIntervalSinceReferenceDate, to: &key)
            } else if let (double, _) = Double.readNonFinite(scanner, at: offset) {
                appendNonFinite(double, to: &key)
            } else {
                let (end, hasEscapes) = scanner.endOfString(at: offset)
                let content = scanner.bytes((offset + 1)..<max(offset + 1, end - 1))
                key.append(stringTag)
                if !hasEscapes && content.allSatisfy({ $0 < 0x80 }) {
                    appendEscaped(content, to: &key)
                } else {
                    var text = hasEscapes ? JSONScanner.unescape(content) : String(decoding: content, as: UTF8.self)
                    text = text.precomposedStringWithCanonicalMapping
                    text.withUTF8 { appendEscaped(UnsafeRawBufferPointer($0), to: &key) }
                }
            }
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            key.append(compositeTag)
            appendEscaped(scanner.bytes(offset..<scanner.end(ofValueAt: offset)), to: &key)
        default:
            guard let (text, _, _) = scanner.numberText(at: offset) else {
                key.append(missingTag)  // Unreachable in a validated document.
                return
            }
            appendNumber(text, to: &key)
        }
    }

    /// Appends `bytes` with each zero byte escaped (`00 FF`), then the terminator `00`: a
    /// string that is a prefix of another sorts first, and no content reads as the end.
    static func appendEscaped(_ bytes: UnsafeRawBufferPointer, to key: inout [UInt8]) {
        for byte in bytes {
            key.append(byte)
            if byte == 0 { key.append(0xFF) }
        }
        key.append(0)
    }

    /// The bytes a string prefix query's keys start with: `prefix`'s encoding without its terminator.
    package static func stringPrefix(_ prefix: String) -> [UInt8] {
        var key: [UInt8] = [stringTag]
        var text = prefix.precomposedStringWithCanonicalMapping
        text.withUTF8 { appendEscaped(UnsafeRawBufferPointer($0), to: &key) }
        key.removeLast()
        return key
    }

    /// A double's bits, flipped so that they sort as the doubles do (negatives reversed).
    static func appendOrdered(_ value: Double, to key: inout [UInt8]) {
        let bits = value == 0 ? 0 : value.bitPattern  // -0.0 is 0.0.
        let ordered = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        withUnsafeBytes(of: ordered.bigEndian) { key.append(contentsOf: $0) }
    }

    static func appendNonFinite(_ value: Double, to key: inout [UInt8]) {
        key.append(numberTag)
        if value == -.infinity {
            key.append(negativeInfinity)
        } else if value == .infinity {
            key.append(positiveInfinity)
        } else {
            key.append(notANumber)
            withUnsafeBytes(of: value.bitPattern.bigEndian) { key.append(contentsOf: $0) }
        }
    }

    /// A JSON number's text as a decimal: its significant digits and where the point goes
    /// (`0.d₁d₂… × 10^exponent`), compared by sign, then exponent, then digits. The digits are
    /// gathered in a buffer on the stack (every write computes its entries).
    static func appendNumber(_ text: UnsafeRawBufferPointer, to key: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, text.count)) { digits in
            appendNumber(text, digits: digits, to: &key)
        }
    }

    private static func appendNumber(_ text: UnsafeRawBufferPointer, digits: UnsafeMutableBufferPointer<UInt8>, to key: inout [UInt8]) {
        var index = 0
        let isNegative = text.first == UInt8(ascii: "-")
        if isNegative { index += 1 }
        var count = 0
        var pointPosition = 0
        var seenPoint = false
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: ".") {
                seenPoint = true
            } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                if count == 0 && byte == UInt8(ascii: "0") {
                    // A leading zero: after the point it moves the point left.
                    if seenPoint { pointPosition -= 1 }
                } else {
                    digits[count] = byte
                    count += 1
                    if !seenPoint { pointPosition += 1 }
                }
            } else {
                break  // The exponent.
            }
            index += 1
        }
        var exponent: Int64 = 0
        if index < text.count, text[index] == UInt8(ascii: "e") || text[index] == UInt8(ascii: "E") {
            index += 1
            var exponentNegative = false
            if index < text.count, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
                exponentNegative = text[index] == UInt8(ascii: "-")
                index += 1
            }
            while index < text.count {
                exponent = min(exponent * 10 + Int64(text[index] &- UInt8(ascii: "0")), 1 << 40)
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        while count > 0 && digits[count - 1] == UInt8(ascii: "0") { count -= 1 }
        key.append(numberTag)
        guard count > 0 else {
            key.append(zero)
            return
        }
        let scaled = max(Int64(Int32.min), min(Int64(Int32.max), Int64(pointPosition) + exponent))
        let biased = UInt32(bitPattern: Int32(scaled)) ^ (1 << 31)
        let significant = UnsafeBufferPointer(rebasing: digits[..<count])
        if isNegative {
            key.append(negative)
            withUnsafeBytes(of: (~biased).bigEndian) { key.append(contentsOf: $0) }
            for digit in significant { key.append(~digit) }
            key.append(0xFF)
        } else {
            key.append(positive)
            withUnsafeBytes(of: biased.bigEndian) { key.append(contentsOf: $0) }
            key.append(contentsOf: significant)
            key.append(0)
        }
    }
}
