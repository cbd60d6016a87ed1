import Foundation

/// Dates as ISO 8601 text in UTC with milliseconds (`2025-04-13T04:58:25.123Z`).
///
/// Hand-written rather than `ISO8601DateFormatter` because formatters are slow and not
/// thread-safe to share. Parsing also accepts SwiftLocal's `yyyy-MM-dd'T'HH:mm:ss.SSSZZZZZ`
/// strings (any UTC offset, such as `+10:00`), fractions of any length, and no fraction.
enum ISO8601Date {
    /// Formats `date`, rounded to the nearest millisecond.
    static func format(_ date: Date) -> String {
        let totalMilliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        // Beyond ±2^53 ms (±285,000 years) the conversion below is meaningless.
        guard abs(totalMilliseconds) < 9e15 else { return "" }
        let milliseconds = Int64(totalMilliseconds)
        let dayLength: Int64 = 86_400_000
        let days = milliseconds >= 0 ? milliseconds / dayLength : (milliseconds - dayLength + 1) / dayLength
        let timeOfDay = milliseconds - days * dayLength
        let (year, month, day) = civilDate(fromDays: days)
        var text = ""
        text.reserveCapacity(24)
        append(year, width: 4, to: &text)
        text += "-"
        append(month, width: 2, to: &text)
        text += "-"
        append(day, width: 2, to: &text)
        text += "T"
        append(timeOfDay / 3_600_000, width: 2, to: &text)
        text += ":"
        append(timeOfDay / 60_000 % 60, width: 2, to: &text)
        text += ":"
        append(timeOfDay / 1000 % 60, width: 2, to: &text)
        text += "."
        append(timeOfDay % 1000, width: 3, to: &text)
        text += "Z"
        return text
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
        guard let year = number(4), skip("-"), let month = number(2), skip("-"), let day = number(2),
              skip("T") || skip("t"), let hour = number(2), skip(":"), let minute = number(2), skip(":"),
              let second = number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction: Double = 0
        if skip(".") {
            var scale = 0.1
            let start = offset
            while offset < bytes.count, bytes[offset] &- UInt8(ascii: "0") < 10 {
                fraction += Double(bytes[offset] - UInt8(ascii: "0")) * scale
                scale /= 10
                offset += 1
            }
            guard offset > start else { return nil }
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
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - zoneSeconds
        // Round to whole milliseconds so values written by `format` come back exactly.
        let milliseconds = (fraction * 1000).rounded()
        return Date(timeIntervalSince1970: (Double(seconds * 1000) + milliseconds) / 1000)
    }

    private static func append(_ value: Int64, width: Int, to text: inout String) {
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
