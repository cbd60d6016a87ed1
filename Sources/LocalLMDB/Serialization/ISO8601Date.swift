import Foundation

/// Dates as ISO 8601 text in UTC with milliseconds (`2025-04-13T04:58:25.123Z`), or with as many
/// digits as it takes (`2025-04-13T04:58:25.1234567Z`) for a date between milliseconds.
///
/// Hand-written rather than `ISO8601DateFormatter` because formatters are slow and not
/// thread-safe to share. Parsing also accepts SwiftLocal's `yyyy-MM-dd'T'HH:mm:ss.SSSZZZZZ`
/// strings (any UTC offset, such as `+10:00`), fractions of any length, and no fraction.
///
/// Invariant: `parse(format(date))` is `date`, exactly: its `timeIntervalSinceReferenceDate`.
enum ISO8601Date {
    /// Formats `date`; nil when it cannot be written (not finite, or more than 2^63 seconds from
    /// 1970, some 292 billion years).
    ///
    /// A date on a whole millisecond has three fraction digits (SwiftLocal's form). Any other
    /// (`Date()`, mostly) has at least four: the digits of its fraction of a second that read
    /// back as exactly that fraction, for `parse` to restore the very same date.
    ///
    /// Years 0 to 9999 have four digits; others use ISO 8601's expanded form, a sign and at
    /// least six digits (`+010000-01-01T00:00:00.000Z`, `-000001-12-31T23:59:59.000Z`).
    static func format(_ date: Date) -> String? {
        guard let (text, parsed) = millisecondForm(date) else { return nil }
        return parsed == date ? text : exactForm(date)
    }

    /// `date` to the nearest millisecond, and the date `parse` gives for that text.
    private static func millisecondForm(_ date: Date) -> (text: String, parsed: Date)? {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else { return nil }
        let dayLength: Int64 = 86_400_000
        let days: Int64
        let timeOfDay: Int64
        let totalMilliseconds = (seconds * 1000).rounded()
        let parsed: Date
        if abs(totalMilliseconds) < exactMilliseconds {
            (days, timeOfDay) = floorDivision(Int64(totalMilliseconds), dayLength)
            parsed = Date(timeIntervalSince1970: totalMilliseconds / 1000)
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
            parsed = Date(timeIntervalSince1970: Double(wholeSeconds) + Double(milliseconds) / 1000)
        } else {
            return nil
        }
        var text = dateAndTime(days: days, secondOfDay: timeOfDay / 1000)
        text += "."
        append(timeOfDay % 1000, width: 3, to: &text)
        text += "Z"
        return (text, parsed)
    }

    /// Seconds between 1970-01-01 and 2001-01-01, the reference date of `Date`.
    private static let referenceOffset: Int64 = 978_307_200

    /// `date` with the digits of its fraction of a second that read back as exactly that
    /// fraction: whole seconds and the fraction are split from `timeIntervalSinceReferenceDate`
    /// (both exact), so `parse` adds them back to the very same double. Nil beyond ±2^63 s.
    private static func exactForm(_ date: Date) -> String? {
        let reference = date.timeIntervalSinceReferenceDate
        let whole = reference.rounded(.down)
        guard let wholeSeconds = Int64(exactly: whole) else { return nil }
        let fraction = reference - whole
        let (seconds, overflow) = wholeSeconds.addingReportingOverflow(referenceOffset)
        guard !overflow else { return nil }
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        var digits = fractionDigits(fraction)
        if digits.count < 4 { digits += String(repeating: "0", count: 4 - digits.count) }  // Four or more: the exact form.
        return dateAndTime(days: days, secondOfDay: secondOfDay) + "." + digits + "Z"
    }

    /// The digits after the point of the shortest decimal that reads back as `fraction`
    /// (0 ≤ fraction < 1), written out without an exponent.
    private static func fractionDigits(_ fraction: Double) -> String {
        let text = fraction.description  // Shortest round-tripping: "0.123", or "1.25e-05".
        guard let exponentMark = text.firstIndex(of: "e") else {
            return text.split(separator: ".").last.map(String.init) ?? "0"
        }
        let mantissa = text[..<exponentMark].filter { $0 != "." }
        let exponent = Int(text[text.index(after: exponentMark)...]) ?? 0  // Negative: below 1.
        return String(repeating: "0", count: max(0, -exponent - 1)) + mantissa
    }

    /// `yyyy-MM-ddTHH:mm:ss` for a day count since 1970 and a second of that day.
    private static func dateAndTime(days: Int64, secondOfDay: Int64) -> String {
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
    private static let exactMilliseconds: Double = 9_007_199_254_740_992

    /// `value` divided by a positive `divisor`, rounding down, and the remainder (never
    /// negative); no intermediate result can overflow, whatever `value` is.
    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// Parses an ISO 8601 date-time with a UTC offset; nil when `text` is not one.
    static func parse(_ text: String) -> Date? {
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
        var fraction: Double = 0
        var fractionDigits = 0
        if skip(".") {
            var scale = 0.1
            let start = offset
            while offset < bytes.count, bytes[offset] &- UInt8(ascii: "0") < 10 {
                fraction += Double(bytes[offset] - UInt8(ascii: "0")) * scale
                scale /= 10
                offset += 1
            }
            fractionDigits = offset - start
            guard fractionDigits > 0 else { return nil }
            if fractionDigits > 3 {
                // The exact form: the fraction read correctly rounded, not summed digit by digit.
                fraction = Double("0." + String(decoding: bytes[start..<offset], as: UTF8.self)) ?? fraction
            }
        }
        var zoneSeconds: Int64 = 0
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
        if fractionDigits > 3 {
            // Whole seconds since the reference date, plus the fraction: the double `format` split.
            let (sinceReference, overflowSubtracting) = seconds.subtractingReportingOverflow(referenceOffset)
            guard !overflowSubtracting else { return nil }
            return Date(timeIntervalSinceReferenceDate: Double(sinceReference) + fraction)
        }
        // Round to whole milliseconds so values written by `format` come back exactly.
        let milliseconds = (fraction * 1000).rounded()
        let (wholeMilliseconds, overflowMultiplying) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflowMultiplying, abs(Double(wholeMilliseconds) + milliseconds) < exactMilliseconds else {
            // Beyond 2^53 ms a double has no room for every millisecond: whole seconds and the
            // fraction give back the nearest double, the one `format` was given.
            return Date(timeIntervalSince1970: Double(seconds) + milliseconds / 1000)
        }
        return Date(timeIntervalSince1970: (Double(wholeMilliseconds) + milliseconds) / 1000)
    }

    private static func append<Value: BinaryInteger>(_ value: Value, width: Int, to text: inout String) {
        let digits = String(value)
        if digits.count < width { text += String(repeating: "0", count: width - digits.count) }
        text += digits
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01.
    private static func civilDate(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
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
