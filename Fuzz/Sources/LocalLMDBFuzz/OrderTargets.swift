import Foundation
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore

/// The order of encoded index keys against the documented order of their values (`IndexKey`),
/// and what a query's bounds take (`IndexRange`), for values the fuzzer chooses.
enum OrderTargets {
    /// A value as a query or a record holds it.
    enum Value: CustomStringConvertible {
        case missing
        case bool(Bool)
        /// JSON number text.
        case number(String)
        /// A double as LocalLMDB writes it (NaN and the infinities as strings).
        case double(Double)
        case string(String)
        case date(Double)
        /// An array or object, by its JSON text.
        case composite(String)

        var description: String {
            switch self {
            case .missing: "missing"
            case let .bool(flag): "\(flag)"
            case let .number(text): "number \(text)"
            case let .double(double): "double \(double) (\(String(double.bitPattern, radix: 16)))"
            case let .string(text): "string \(text.debugDescription)"
            case let .date(interval): "date \(interval)"
            case let .composite(text): "composite \(text)"
            }
        }

        /// The JSON the value is stored as.
        var json: [UInt8] {
            var writer = JSONWriter()
            switch self {
            case .missing: writer.write(literal: "null")
            case let .bool(flag): writer.write(literal: flag ? "true" : "false")
            case let .number(text): var text = text; text.withUTF8 { writer.write(raw: UnsafeRawBufferPointer($0)) }
            case let .double(double): writer.write(double)
            case let .string(text): writer.write(text)
            case let .date(interval): writer.write(ISO8601Date.format(Date(timeIntervalSinceReferenceDate: interval)) ?? "")
            case let .composite(text): var text = text; text.withUTF8 { writer.write(raw: UnsafeRawBufferPointer($0)) }
            }
            return writer.bytes
        }
    }

    static func value(_ choices: inout Choices, dates: Bool) -> Value {
        switch choices.int(below: dates ? 8 : 7) {
        case 0: return .missing
        case 1: return .bool(choices.byte() & 1 == 1)
        case 2:
            // Number text: sign, digits, fraction, exponent, with leading and trailing zeros.
            var text = choices.byte() & 1 == 1 ? "-" : ""
            let digits = "0123456789"
            let integer = (0...choices.int(below: 5)).map { _ in digits[digits.index(digits.startIndex, offsetBy: choices.int(below: 10))] }
            text += String(integer.first == "0" ? ["0"] : integer)
            if choices.byte() & 1 == 1 {
                text += "." + String((0...choices.int(below: 5)).map { _ in digits[digits.index(digits.startIndex, offsetBy: choices.int(below: 10))] })
            }
            if choices.byte() & 1 == 1 { text += "e" + (choices.byte() & 1 == 1 ? "-" : "+") + String(choices.int(below: 40)) }
            return .number(text)
        case 3:
            let bits = choices.uint64()
            return .double(choices.byte() & 1 == 1 ? Double(bitPattern: bits) : Double(Int64(bitPattern: bits) % 1000) / 8)
        case 4, 5: return .string(choices.string())
        case 6:
            let elements = (0..<choices.int(below: 3)).map { _ in "\"" + ["a", "b", "", "\\u0000"][choices.int(below: 4)] + "\"" }
            return .composite(choices.byte() & 1 == 1 ? "[" + elements.joined(separator: ",") + "]" : "{\"k\":" + (elements.first ?? "1") + "}")
        default:
            let interval = Double(Int64(bitPattern: choices.uint64()) % 100_000_000_000) / 1000
            return .date(choices.byte() & 1 == 1 ? interval : -interval)
        }
    }

    static func key(_ value: Value, kind: IndexKey.FieldKind) -> [UInt8] {
        let json = value.json
        return json.withUnsafeBytes { bytes in
            var key: [UInt8] = []
            IndexKey.append(valueAt: 0, in: JSONScanner(bytes), kind: kind, to: &key)
            return key
        }
    }

    // MARK: The documented order

    /// Kind first: missing, booleans, numbers (NaN last), strings, dates, arrays and objects.
    static func rank(_ value: Value, dates: Bool) -> Int {
        switch value {
        case .missing: 0
        case .bool: 1
        case .number, .double: 2
        case let .string(text): dates && ISO8601Date.parse(text) != nil ? 4 : 3
        case .date: 4
        case .composite: 5
        }
    }

    /// A number as the order sees it: -inf, a decimal (sign, digits without leading or trailing
    /// zeros, the point's position), +inf, or a NaN by its bits.
    enum Number { case negativeInfinity, finite(negative: Bool, digits: [UInt8], point: Int), positiveInfinity, nan(UInt64) }

    static func number(_ value: Value) -> Number {
        let text: String
        switch value {
        case let .number(written): text = written
        case let .double(double):
            if double.isNaN { return .nan(double == .nan || double.bitPattern == Double.nan.bitPattern ? Double.nan.bitPattern : double.bitPattern) }
            if double.isInfinite { return double < 0 ? .negativeInfinity : .positiveInfinity }
            text = double.description
        default: return .finite(negative: false, digits: [], point: 0)
        }
        var bytes = Array(text.utf8)[...]
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { bytes = bytes.dropFirst() }
        var digits: [UInt8] = []
        var point = 0
        var seenPoint = false
        var exponent = 0
        while let byte = bytes.first {
            bytes = bytes.dropFirst()
            if byte == UInt8(ascii: ".") { seenPoint = true; continue }
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                let sign = bytes.first == UInt8(ascii: "-") ? -1 : 1
                if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
                exponent = sign * (Int(String(decoding: bytes, as: UTF8.self)) ?? 0)
                break
            }
            digits.append(byte)
            if !seenPoint { point += 1 }
        }
        while digits.first == UInt8(ascii: "0") { digits.removeFirst(); point -= 1 }
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        if digits.isEmpty { return .finite(negative: false, digits: [], point: 0) }
        return .finite(negative: negative, digits: digits, point: point + exponent)
    }

    static func compareNumbers(_ left: Number, _ right: Number) -> Int {
        func order(_ number: Number) -> Int {
            switch number {
            case .negativeInfinity: 0
            case .finite: 1
            case .positiveInfinity: 2
            case .nan: 3
            }
        }
        switch (left, right) {
        case let (.nan(a), .nan(b)): return a == b ? 0 : (a < b ? -1 : 1)
        case let (.finite(n1, d1, p1), .finite(n2, d2, p2)):
            let zero1 = d1.isEmpty, zero2 = d2.isEmpty
            let sign1 = zero1 ? 0 : (n1 ? -1 : 1), sign2 = zero2 ? 0 : (n2 ? -1 : 1)
            if sign1 != sign2 { return sign1 < sign2 ? -1 : 1 }
            if sign1 == 0 { return 0 }
            var magnitude: Int
            if p1 != p2 {
                magnitude = p1 < p2 ? -1 : 1
            } else if d1 == d2 {
                magnitude = 0
            } else {
                magnitude = d1.lexicographicallyPrecedes(d2) ? -1 : 1
            }
            return sign1 < 0 ? -magnitude : magnitude
        default:
            let (a, b) = (order(left), order(right))
            return a == b ? 0 : (a < b ? -1 : 1)
        }
    }

    static func composed(_ text: String) -> [UInt8] { Array(text.precomposedStringWithCanonicalMapping.utf8) }

    static func interval(_ value: Value) -> Double {
        switch value {
        case let .date(interval): return ISO8601Date.parse(ISO8601Date.format(Date(timeIntervalSinceReferenceDate: interval)) ?? "")?.timeIntervalSinceReferenceDate ?? interval
        case let .string(text): return ISO8601Date.parse(text)?.timeIntervalSinceReferenceDate ?? 0
        default: return 0
        }
    }

    /// The documented order of two values: -1, 0 or 1.
    static func compare(_ left: Value, _ right: Value, dates: Bool) -> Int {
        let (a, b) = (rank(left, dates: dates), rank(right, dates: dates))
        if a != b { return a < b ? -1 : 1 }
        switch a {
        case 1:
            guard case let .bool(x) = left, case let .bool(y) = right else { return 0 }
            return x == y ? 0 : (x ? 1 : -1)
        case 2:
            return compareNumbers(number(left), number(right))
        case 3:
            func text(_ value: Value) -> String { if case let .string(text) = value { text } else { "" } }
            let (x, y) = (composed(text(left)), composed(text(right)))
            return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        case 4:
            let (x, y) = (interval(left), interval(right))
            return x == y ? 0 : (x < y ? -1 : 1)
        case 5:
            let (x, y) = (left.json, right.json)
            return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        default:
            return 0
        }
    }

    // MARK: The target

    static func indexOrder(_ input: UnsafeRawBufferPointer) {
        var choices = Choices(input)
        let dates = choices.byte() & 1 == 1
        let kind: IndexKey.FieldKind = dates ? .date : .automatic
        let left = value(&choices, dates: dates)
        let right = value(&choices, dates: dates)
        let next = value(&choices, dates: false)
        // Strings spelt as NaN or infinities are written escaped: not numbers. A `.string` of such
        // text is a string; a non-finite double written is a number.
        let expected = compare(left, right, dates: dates)
        let (leftKey, rightKey) = (key(left, kind: kind), key(right, kind: kind))
        let found = leftKey == rightKey ? 0 : (leftKey.lexicographicallyPrecedes(rightKey) ? -1 : 1)
        if found != expected { mismatch("\(left) vs \(right) (dates \(dates)): keys order \(found), documented \(expected); keys \(leftKey) \(rightKey)") }
        // What bounds take: a tuple of `left` then another field, against bounds made of `right`.
        let tuple = leftKey + key(next, kind: .automatic)
        let checks: [(String, IndexRange, Bool)] = [
            ("equal", .prefix(rightKey), expected == 0),
            (">=", IndexRange(lower: .init(rightKey, inclusive: true), upper: nil), expected >= 0),
            (">", IndexRange(lower: .init(rightKey, inclusive: false), upper: nil), expected > 0),
            ("<=", IndexRange(lower: nil, upper: .init(rightKey, inclusive: true)), expected <= 0),
            ("<", IndexRange(lower: nil, upper: .init(rightKey, inclusive: false)), expected < 0),
        ]
        for (name, range, wanted) in checks {
            let taken = tuple.withUnsafeBytes { range.contains($0) }
            if taken != wanted { mismatch("\(left) \(name) \(right): bound takes \(taken), documented \(wanted)") }
            // The half-open byte bounds a server compares by take the same tuples.
            let byBytes: Bool
            if let (from, to) = range.byteBounds {
                byBytes = (from.map { !tuple.lexicographicallyPrecedes($0) } ?? true) && (to.map { tuple.lexicographicallyPrecedes($0) } ?? true)
            } else {
                byBytes = false
            }
            if byBytes != wanted { mismatch("\(left) \(name) \(right): byte bounds take \(byBytes), documented \(wanted)") }
        }
        // A string prefix takes the strings whose composed bytes start with it.
        if case let .string(text) = left, case let .string(prefix) = right, !dates || ISO8601Date.parse(text) == nil {
            let wanted = composed(text).starts(with: composed(prefix))
            let taken = tuple.withUnsafeBytes { IndexRange.prefix(IndexKey.stringPrefix(prefix)).contains($0) }
            if taken != wanted { mismatch("\(left) has prefix \(prefix.debugDescription): bound takes \(taken), documented \(wanted)") }
        }
    }
}

extension NonFiniteDouble {
    static func value(spelledBy text: String) -> Double? {
        var text = text
        return text.withUTF8 { value(spelledBy: UnsafeRawBufferPointer($0)) }
    }
}
