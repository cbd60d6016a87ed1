import Foundation
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB

/// The JSON codec against Foundation: validity, values, numbers and dates.
enum JSONTargets {
    /// A document: our validator, scanner and reader against `JSONSerialization`, which must agree
    /// on what is JSON and on every value it holds (the documented differences aside: nesting
    /// deeper than `JSONValidator.maxDepth`, and numbers beyond `Double`'s range, which we refuse).
    static func document(_ input: UnsafeRawBufferPointer) {
        let ours: JSONValue?
        do {
            ours = try JSONReader.parse(input)
        } catch {
            ours = nil
        }
        let theirs = try? JSONSerialization.jsonObject(with: Data(input), options: [.fragmentsAllowed])
        switch (ours, theirs) {
        case (nil, nil):
            return
        case let (value?, other?):
            if !same(value, other) { mismatch("values differ: ours \(value), Foundation's \(other)") }
            walk(input)
        case (_?, nil):
            // Foundation refuses what we accept: a defect of ours unless Foundation is known to be stricter.
            if foundationRefusesWhatJSONAllows(input) { return }
            mismatch("we accept a document Foundation refuses: \(Array(input))")
        case (nil, _?):
            if tooDeep(input) || hasNumberBeyondDouble(input) || foundationAcceptsWhatJSONRefuses(input) { return }
            mismatch("we refuse a document Foundation accepts: \(Array(input))")
        }
        // Validation alone agrees with parsing.
        let validated = (try? JSONValidator.validate(input)) != nil
        if validated != (ours != nil) { mismatch("validation and parsing disagree") }
    }

    /// Walks a valid document with the scanner: every value's end, every string, every number.
    static func walk(_ input: UnsafeRawBufferPointer) {
        guard let summary = try? JSONValidator.validate(input) else { return }
        let scanner = JSONScanner(input)
        func visit(_ offset: Int, depth: Int) {
            let end = scanner.end(ofValueAt: offset)
            if end <= offset || end > input.count { mismatch("a value's end is outside the document") }
            switch scanner.byte(at: offset) {
            case UInt8(ascii: "{"):
                var member = scanner.firstMember(ofObjectAt: offset)
                while let at = member {
                    let found = scanner.member(at: at)
                    visit(found.value, depth: depth + 1)
                    member = scanner.nextMember(after: scanner.end(ofValueAt: found.value))
                }
            case UInt8(ascii: "["):
                var element = scanner.firstElement(ofArrayAt: offset)
                var count = 0
                while let at = element {
                    visit(at, depth: depth + 1)
                    count += 1
                    element = scanner.nextElement(after: scanner.end(ofValueAt: at))
                }
                if count != scanner.elementCount(ofArrayAt: offset) { mismatch("element count differs from the walk") }
            case UInt8(ascii: "\""):
                if scanner.string(at: offset) == nil { mismatch("a valid string does not read") }
            default:
                break
            }
        }
        visit(summary.start, depth: 0)
    }

    /// Whether `value` and Foundation's `other` are the same JSON value.
    static func same(_ value: JSONValue, _ other: Any) -> Bool {
        switch value {
        case .null:
            return other is NSNull
        case let .bool(flag):
            if let bool = other as? Bool { return bool == flag }
            return (other as? NSNumber)?.boolValue == flag
        case let .int(integer):
            return number(other).map { Double(integer) == $0 } ?? false
        case let .double(double):
            // NaN and the infinities are stored as strings spelt as `NonFiniteDouble` writes them
            // (a string value with that spelling is written escaped): we read such a string,
            // unescaped, as the double; Foundation reads the string.
            if !double.isFinite, let text = other as? String { return text == NonFiniteDouble.text(for: double) }
            return number(other).map { double == $0 || (double.isNaN && $0.isNaN) } ?? false
        case let .number(text):
            guard let double = Double(text) else { return false }
            return number(other).map { double == $0 } ?? false
        case let .string(text):
            guard let string = other as? String else { return false }
            return Array(text.unicodeScalars) == Array(string.unicodeScalars)
        case let .array(elements):
            guard let array = other as? [Any], array.count == elements.count else { return false }
            return zip(elements, array).allSatisfy { same($0, $1) }
        case let .object(object):
            guard let dictionary = other as? [String: Any], dictionary.count == object.members.count else { return false }
            return object.members.allSatisfy { member in dictionary[member.key].map { same(member.value, $0) } ?? false }
        case .unencodable:
            return false
        }
    }

    /// Foundation's number as a correctly rounded `Double` (a `Decimal`'s digits read by
    /// `Double(String)`: `NSDecimalNumber.doubleValue` rounds on its own).
    static func number(_ other: Any) -> Double? {
        if let decimal = other as? Decimal { return Double(decimal.description) }
        if let number = other as? NSNumber { return number.doubleValue }
        return nil
    }

    static func tooDeep(_ input: UnsafeRawBufferPointer) -> Bool {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for byte in input {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1; deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest > JSONValidator.maxDepth
    }

    /// Whether a number in the document is beyond `Double`'s range (refused, by `numbersInRange`).
    static func hasNumberBeyondDouble(_ input: UnsafeRawBufferPointer) -> Bool {
        (try? JSONValidator.validate(input, numbersInRange: false)) != nil
    }

    /// Foundation's known strictness: it refuses a lone surrogate escape (`"\ud800"`), which RFC
    /// 8259's grammar allows and we read as U+FFFD. Filled in as the runs find cases.
    static func foundationRefusesWhatJSONAllows(_ input: UnsafeRawBufferPointer) -> Bool {
        let text = String(decoding: input, as: UTF8.self).lowercased()
        return text.contains("\\ud8") || text.contains("\\ud9") || text.contains("\\uda") || text.contains("\\udb")
            || text.contains("\\udc") || text.contains("\\udd") || text.contains("\\ude") || text.contains("\\udf")
    }

    /// Foundation's known leniency, where it accepts what RFC 8259 refuses, found by this target:
    /// a zero byte (`00 33` reads as `3`); a comma before a closing bracket (`[1,]`).
    static func foundationAcceptsWhatJSONRefuses(_ input: UnsafeRawBufferPointer) -> Bool {
        if input.contains(0) { return true }
        var inString = false
        var escaped = false
        var lastSignificant: UInt8 = 0
        for byte in input {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                lastSignificant = byte
                continue
            }
            if JSONGrammar.isWhitespace(byte) { continue }
            if (byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}")) && lastSignificant == UInt8(ascii: ",") { return true }
            if byte == UInt8(ascii: "\"") { inString = true }
            lastSignificant = byte
        }
        return false
    }

    // MARK: Numbers

    /// Number text: our reading against `Double(String)` (correctly rounded), bit for bit.
    static func number(_ input: UnsafeRawBufferPointer) {
        guard input.count < 400, (try? JSONValidator.validate(input)) != nil else { return }
        let scanner = JSONScanner(input)
        guard let start = (try? JSONValidator.validate(input))?.start, scanner.numberText(at: start) != nil else { return }
        let text = String(decoding: input, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let expected = Double(text) else { mismatch("Swift does not read the JSON number \(text)") }
        guard let (ours, _) = Double.readNumber(scanner, at: start) else {
            if expected.isInfinite { return }  // beyond the range: refused
            mismatch("we do not read \(text)")
        }
        if ours.bitPattern != expected.bitPattern { mismatch("\(text): ours \(ours), Swift's \(expected)") }
        // Our writer's text reads back as the same bits.
        var writer = JSONWriter()
        writer.write(ours)
        let written = writer.bytes
        let reread = written.withUnsafeBytes { bytes in Double.readNumber(JSONScanner(bytes), at: 0)?.value }
        if reread?.bitPattern != ours.bitPattern { mismatch("\(ours) written as \(String(decoding: written, as: UTF8.self)) reads as \(String(describing: reread))") }
    }

    // MARK: Dates

    /// ISO 8601 text: ours against Foundation's parser where both read it, and exact round trips.
    static func date(_ input: UnsafeRawBufferPointer) {
        var choices = Choices(input)
        // A date from raw bits: written, it reads back bit for bit.
        let interval = Double(bitPattern: choices.uint64())
        let date = Date(timeIntervalSinceReferenceDate: interval)
        if let text = ISO8601Date.format(date) {
            guard let parsed = ISO8601Date.parse(text) else { mismatch("\(text) (written for \(interval)) does not parse") }
            if parsed.timeIntervalSinceReferenceDate.bitPattern != interval.bitPattern {
                mismatch("\(interval) written as \(text) reads as \(parsed.timeIntervalSinceReferenceDate)")
            }
        } else if interval.isFinite, abs(date.timeIntervalSince1970) < 9.2e18 {
            mismatch("a finite date within ±2^63 s (\(interval)) was not written")
        }
        // Text: where Foundation reads it too, the same instant to the millisecond.
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: input[min(8, input.count)...]), as: UTF8.self)
        guard let ours = ISO8601Date.parse(text) else { return }
        if let again = ISO8601Date.format(ours), ISO8601Date.parse(again)?.timeIntervalSinceReferenceDate.bitPattern != ours.timeIntervalSinceReferenceDate.bitPattern {
            mismatch("\(text) reads as \(ours.timeIntervalSinceReferenceDate), which does not round-trip through \(again)")
        }
        // ICU, under Foundation's formatter, crashes on very long fractions (SIGFPE): short texts only.
        // It also reads no more than milliseconds (`.0040000000000000000` as `.0`): three
        // fraction digits at most.
        guard text.utf8.count <= 40 else { return }
        if let point = text.firstIndex(of: "."), text[text.index(after: point)...].prefix(while: \.isNumber).count > 3 { return }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        // Foundation's formatter counts days before 1582-10-15 in the Julian calendar; ISO 8601
        // (and LocalLMDB) in the proleptic Gregorian one: compared from 1583 on.
        if let theirs = formatter.date(from: text) ?? plain.date(from: text), ours.timeIntervalSince1970 > -12_212_553_600 {
            if abs(theirs.timeIntervalSince(ours)) > 0.001 {
                mismatch("\(text): ours \(ours.timeIntervalSince1970), Foundation's \(theirs.timeIntervalSince1970)")
            }
        }
    }
}
