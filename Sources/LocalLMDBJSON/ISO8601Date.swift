import LocalLMDBBase

import Foundation

/// Dates as ISO 8601 text in UTC with milliseconds (`2025-04-13T04:58:25.123Z`), or with as many
/// digits as it takes (`2025-04-13T04:58:25.1234567Z`) for a date between milliseconds.
///
/// Hand-written rather than `ISO8601DateFormatter` because formatters are slow and not
/// thread-safe to share. Parsing also accepts SwiftLocal's `yyyy-MM-dd'T'HH:mm:ss.SSSZZZZZ`
/// strings (any UTC offset, such as `+10:00`), fractions of any length, and no fraction.
///
/// Invariant: `parse(format(date))` is `date`, exactly: its `timeIntervalSinceReferenceDate`,
/// bit for bit. `-0.0` (2001-01-01T00:00:00Z, whose sign no calendar time shows) is written with
/// the offset `-00:00` (RFC 3339's "offset unknown": the same instant to other readers), which
/// reads back as `-0.0` at that instant.
@usableFromInline package enum ISO8601Date {
    /// Formats `date`; nil when it cannot be written (not finite, or more than 2^63 seconds from
    /// 1970, some 292 billion years).
    ///
    /// A date on a whole millisecond has three fraction digits (SwiftLocal's form). Any other
    /// (`Date()`, mostly) has at least four: the digits that read back as exactly that date, for
    /// `parse` to restore the very same `timeIntervalSinceReferenceDate` (see `exactForm`).
    ///
    /// Years 0 to 9999 have four digits; others use ISO 8601's expanded form, a sign and at
    /// least six digits (`+010000-01-01T00:00:00.000Z`, `-000001-12-31T23:59:59.000Z`).
    @inlinable static func format(_ date: Date) -> String? {
        guard let (text, parsed) = millisecondForm(date) else { return nil }
        let interval = date.timeIntervalSinceReferenceDate
        return parsed.bitPattern == interval.bitPattern ? text : exactForm(interval)
    }

    /// `date` to the nearest millisecond, and the interval since the reference date that `parse`
    /// gives for that text.
    @inlinable static func millisecondForm(_ date: Date) -> (text: String, parsed: Double)? {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else { return nil }
        let dayLength: Int64 = 86_400_000
        let days: Int64
        let timeOfDay: Int64
        // The whole seconds since 1970 and the milliseconds the text will show.
        let textSeconds: Int64
        let textMilliseconds: Int64
        let totalMilliseconds = (seconds * 1000).rounded()
        if abs(totalMilliseconds) < exactMilliseconds {
            (days, timeOfDay) = floorDivision(Int64(totalMilliseconds), dayLength)
            (textSeconds, textMilliseconds) = floorDivision(Int64(totalMilliseconds), 1000)
        } else if seconds >= -9.223_372_036_854_775_808e18 && seconds < 9.223_372_036_854_775_808e18 {
            // Here `seconds * 1000` is no longer exact: split the whole seconds from the fraction
            // (both exact) and round the fraction alone.
            let whole = seconds.rounded(.down)
            var wholeSeconds = Int64(whole)
            var milliseconds = Int64(((seconds - whole) * 1000).rounded())
            if milliseconds == 1000 {
                wholeSeconds += 1
                milliseconds = 0
            }
            let (wholeDays, secondOfDay) = floorDivision(wholeSeconds, 86_400)
            (days, timeOfDay) = (wholeDays, secondOfDay * 1000 + milliseconds)
            (textSeconds, textMilliseconds) = (wholeSeconds, milliseconds)
        } else {
            return nil
        }
        var text = dateAndTime(days: days, secondOfDay: timeOfDay / 1000)
        text += "."
        append(timeOfDay % 1000, width: 3, to: &text)
        text += "Z"
        // What `parse` gives for this text, computed as it computes it.
        return (text, millisecondInstant(seconds: textSeconds, milliseconds: textMilliseconds))
    }

    /// The interval since the reference date of the date `seconds` after 1970 plus
    /// `milliseconds` (0 to 999): what `parse` gives for a time with at most three fraction
    /// digits, and what `format` checks its millisecond form against.
    @inlinable static func millisecondInstant(seconds: Int64, milliseconds: Int64) -> Double {
        let (wholeMilliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow, abs(Double(wholeMilliseconds) + Double(milliseconds)) < exactMilliseconds else {
            // Beyond 2^53 ms a double has no room for every millisecond: whole seconds and the
            // fraction give back the nearest double.
            return Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1000).timeIntervalSinceReferenceDate
        }
        return Date(timeIntervalSince1970: (Double(wholeMilliseconds) + Double(milliseconds)) / 1000).timeIntervalSinceReferenceDate
    }

    /// Seconds between 1970-01-01 and 2001-01-01, the reference date of `Date`.
    @usableFromInline static let referenceOffset: Int64 = 978_307_200

    /// The date `reference` seconds from the reference date, with the fraction digits that
    /// read back as exactly that date (`parse` reads the whole seconds and the fraction as one
    /// decimal number, correctly rounded). Nil beyond ±2^63 s.
    ///
    /// The digits are those of the shortest decimal that reads back as `reference` (Swift's
    /// `description`), split at the point: its whole part is `reference`'s whole seconds (the
    /// integers around a double that is not one are other doubles, outside its rounding
    /// interval). A calendar time adds a fraction to the second before it, so a negative
    /// interval's fraction is the decimal's complement: `-0.3` is `…23:59:59.7000Z`, one second
    /// before the reference date plus 0.7. Splitting the double itself (`reference` less its
    /// whole seconds) is not exact there: `-2.8e-17` would be 1 s minus 2.8e-17, which rounds to 1.
    @inlinable static func exactForm(_ reference: Double) -> String? {
        guard reference.isFinite else { return nil }
        if reference == 0, reference.sign == .minus { return "2001-01-01T00:00:00.000-00:00" }
        let whole = reference.rounded(.down)
        guard let wholeSeconds = Int64(exactly: whole) else { return nil }
        let (seconds, overflow) = wholeSeconds.addingReportingOverflow(referenceOffset)
        guard !overflow else { return nil }
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        var digits = whole == reference ? [] : fractionDigits(of: reference.magnitude)
        if reference < 0, !digits.isEmpty { digits = complement(digits) }
        if digits.count < 4 { digits += repeatElement(UInt8(ascii: "0"), count: 4 - digits.count) }  // Four or more: the exact form.
        return dateAndTime(days: days, secondOfDay: secondOfDay) + "." + String(decoding: digits, as: UTF8.self) + "Z"
    }

    /// The digits after the point of the shortest decimal that reads back as `value` (positive,
    /// not a whole number, so below 2^52), written out without an exponent.
    @inlinable static func fractionDigits(of value: Double) -> [UInt8] {
        let text = value.description  // Shortest round-tripping: "12.5", "0.123", or "1.25e-05".
        guard let exponentMark = text.firstIndex(of: "e") else {
            return text.split(separator: ".").last.map { Array($0.utf8) } ?? []
        }
        // An exponent only below 10^-4: no whole part.
        let mantissa = text[..<exponentMark].utf8.filter { $0 != UInt8(ascii: ".") }
        let exponent = Int(text[text.index(after: exponentMark)...]) ?? 0
        return Array(repeating: UInt8(ascii: "0"), count: max(0, -exponent - 1)) + mantissa
    }

    /// The fraction digits of 1 - 0.`digits`, as many as `digits` has (which are not all zeros).
    @inlinable static func complement(_ digits: [UInt8]) -> [UInt8] {
        guard let last = digits.lastIndex(where: { $0 != UInt8(ascii: "0") }) else { return digits }
        var result = digits
        for index in 0..<last { result[index] = UInt8(ascii: "9") - (digits[index] - UInt8(ascii: "0")) }
        result[last] = UInt8(ascii: "0") + 10 - (digits[last] - UInt8(ascii: "0"))
        return result
    }

    /// `yyyy-MM-ddTHH:mm:ss` for a day count since 1970 and a second of that day.
    @inlinable static func dateAndTime(days: Int64, secondOfDay: Int64) -> String {
        let (year, month, day) = civilDate(fromDays: days)
        var text = ""
        text.reserveCapacity(24)
        if (0...9999).contains(year) {
            append(year, width: 4, to: &text)
        } else {
            text += year < 0 ? "-" : "+"
            append(year.magnitude, width: 6, to: &text)
        }
        text += "-"
        append(month, width: 2, to: &text)
        text += "-"
        append(day, width: 2, to: &text)
        text += "T"
        append(secondOfDay / 3600, width: 2, to: &text)
        text += ":"
        append(secondOfDay / 60 % 60, width: 2, to: &text)
        text += ":"
        append(secondOfDay % 60, width: 2, to: &text)
        return text
    }

    /// 2^53: below it, a double holds every whole number of milliseconds exactly.
    @usableFromInline static let exactMilliseconds: Double = 9_007_199_254_740_992

    /// `value` divided by a positive `divisor`, rounding down, and the remainder (never
    /// negative); no intermediate result can overflow, whatever `value` is.
    @inlinable static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// Parses an ISO 8601 date-time with a UTC offset; nil when `text` is not one.
    @inlinable static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var offset = 0
        func number(_ width: Int) -> Int64? {
            guard bytes.count - offset >= width else { return nil }
            var value: Int64 = 0
            for _ in 0..<width {
                let digit = bytes[offset] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
                offset += 1
            }
            return value
        }
        func skip(_ character: Character) -> Bool {
            guard offset < bytes.count, let ascii = character.asciiValue, bytes[offset] == ascii else { return false }
            offset += 1
            return true
        }
        // An expanded year has a sign and more digits; a plain one has four.
        var yearSign: Int64 = 1
        var signed = false
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
            yearSign = bytes[offset] == UInt8(ascii: "-") ? -1 : 1
            signed = true
            offset += 1
        }
        var yearDigits = 0
        while offset + yearDigits < bytes.count, bytes[offset + yearDigits] &- UInt8(ascii: "0") < 10 { yearDigits += 1 }
        guard signed ? (4...12).contains(yearDigits) : yearDigits == 4, let yearMagnitude = number(yearDigits) else { return nil }
        let year = yearSign * yearMagnitude
        guard skip("-"), let month = number(2), skip("-"), let day = number(2),
              skip("T") || skip("t"), let hour = number(2), skip(":"), let minute = number(2), skip(":"),
              let second = number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        // Up to three digits: whole milliseconds; more: the exact form (see `exactForm`).
        var fraction = 0..<0
        var milliseconds: Int64 = 0
        if skip(".") {
            let start = offset
            while offset < bytes.count, bytes[offset] &- UInt8(ascii: "0") < 10 { offset += 1 }
            fraction = start..<offset
            guard !fraction.isEmpty else { return nil }
            if fraction.count <= 3 {
                for index in 0..<3 {
                    milliseconds = milliseconds * 10 + (index < fraction.count ? Int64(bytes[start + index] - UInt8(ascii: "0")) : 0)
                }
            }
        }
        var zoneSeconds: Int64 = 0
        var offsetIsNegativeZero = false
        if skip("Z") || skip("z") {
            zoneSeconds = 0
        } else if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[offset] == UInt8(ascii: "-") ? -1 : 1
            offset += 1
            guard let zoneHours = number(2) else { return nil }
            _ = skip(":")
            let zoneMinutes = offset < bytes.count ? number(2) : 0
            guard let zoneMinutes, zoneHours < 24, zoneMinutes < 60 else { return nil }
            zoneSeconds = sign * (zoneHours * 3600 + zoneMinutes * 60)
            offsetIsNegativeZero = sign < 0 && zoneSeconds == 0
        } else {
            return nil
        }
        guard offset == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        // Seconds since 1970, computed so that no intermediate step leaves Int64 unless the
        // result does: for days before 1970, from the end of the day backwards.
        let secondOfDay = hour * 3600 + minute * 60 + second - zoneSeconds
        let (dayBoundary, overflow) = (days < 0 ? days + 1 : days).multipliedReportingOverflow(by: 86_400)
        guard !overflow else { return nil }
        let (seconds, overflowAdding) = dayBoundary.addingReportingOverflow(days < 0 ? secondOfDay - 86_400 : secondOfDay)
        guard !overflowAdding else { return nil }
        let interval: Double
        if fraction.count > 3 {
            let (sinceReference, overflowSubtracting) = seconds.subtractingReportingOverflow(referenceOffset)
            guard !overflowSubtracting else { return nil }
            interval = exactInterval(seconds: sinceReference, fraction: Array(bytes[fraction]))
        } else {
            interval = millisecondInstant(seconds: seconds, milliseconds: milliseconds)
        }
        return Date(timeIntervalSinceReferenceDate: interval == 0 && offsetIsNegativeZero ? -0.0 : interval)
    }

    /// The double nearest to `seconds` whole seconds from the reference date plus the fraction
    /// `0.digits`, read as one decimal number (correctly rounded, once): for a negative number of
    /// seconds, minus the whole seconds after it and the fraction's complement (see `exactForm`).
    @inlinable static func exactInterval(seconds: Int64, fraction digits: [UInt8]) -> Double {
        if seconds >= 0 {
            return Double(String(seconds) + "." + String(decoding: digits, as: UTF8.self)) ?? Double(seconds)
        }
        guard digits.contains(where: { $0 != UInt8(ascii: "0") }) else { return Double(seconds) }
        let wholeAfter = -(seconds + 1)
        return Double("-" + String(wholeAfter) + "." + String(decoding: complement(digits), as: UTF8.self)) ?? Double(seconds)
    }

    @inlinable static func append<Value: BinaryInteger>(_ value: Value, width: Int, to text: inout String) {
        let digits = String(value)
        if digits.count < width { text += String(repeating: "0", count: width - digits.count) }
        text += digits
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    @inlinable static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01.
    @inlinable static func civilDate(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
