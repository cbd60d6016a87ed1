import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// How a decoder reads dates: the stored form (`ISO8601Date`), or one of `DateFormat`'s for JSON
/// that LocalLMDB did not write. Holds the formatter a pattern needs, made once per decoding.
struct DateDecoding: CustomStringConvertible {
    private enum Kind {
        case stored
        case iso8601
        case formatted(DateFormatter, pattern: String)
        case secondsSince1970
        case millisecondsSince1970
        case custom(@Sendable (String) -> Date?)
    }

    private let kind: Kind

    /// Dates as LocalLMDB stores them.
    static var stored: DateDecoding { DateDecoding(kind: .stored) }

    private init(kind: Kind) {
        self.kind = kind
    }

    init(_ format: DateFormat) {
        switch format.kind {
        case .iso8601:
            kind = .iso8601
        case let .pattern(pattern, timeZone):
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = timeZone
            formatter.dateFormat = pattern
            kind = .formatted(formatter, pattern: pattern)
        case .secondsSince1970:
            kind = .secondsSince1970
        case .millisecondsSince1970:
            kind = .millisecondsSince1970
        case let .custom(parse):
            kind = .custom(parse)
        }
    }

    /// The date at `offset`; nil when the value there is not one in this form.
    func date(_ scanner: JSONScanner, at offset: Int) -> Date? {
        switch kind {
        case .stored, .iso8601:
            return Date.read(scanner, at: offset)?.value
        case let .formatted(formatter, _):
            return scanner.string(at: offset).flatMap { Self.date(from: $0.value, formatter) }
        case .secondsSince1970:
            return Double.readNumber(scanner, at: offset).map { Date(timeIntervalSince1970: $0.value) }
        case .millisecondsSince1970:
            return Double.readNumber(scanner, at: offset).map { Date(timeIntervalSince1970: $0.value / 1000) }
        case let .custom(parse):
            return scanner.string(at: offset).flatMap { parse($0.value) }
        }
    }

    /// `formatter.date(from: text)`, for text it reads without stopping the process:
    /// Foundation on Linux traps ("Incorrect range") when a pattern's parse ends inside a
    /// character made of several Unicode scalars (a digit and a combining mark:
    /// `"2025-01\u{612}…"`, found by fuzzing `ModelFactory`). So text with such a character,
    /// once composed (NFC), is not a date in a pattern: a decoding error, never a crash.
    static func date(from text: String, _ formatter: DateFormatter) -> Date? {
        let composed = text.precomposedStringWithCanonicalMapping
        guard composed.unicodeScalars.count == composed.count else { return nil }
        return formatter.date(from: composed)
    }

    var description: String {
        switch kind {
        case .stored, .iso8601: return "ISO 8601 text"
        case let .formatted(_, pattern): return "text in the format '\(pattern)'"
        case .secondsSince1970: return "a number of seconds since 1970"
        case .millisecondsSince1970: return "a number of milliseconds since 1970"
        case .custom: return "text the custom date parser accepts"
        }
    }
}

/// How dates are written in JSON that LocalLMDB did not write (see `JSONImport`).
public struct DateFormat: Sendable {
    enum Kind: Sendable {
        case iso8601
        case pattern(String, timeZone: TimeZone)
        case secondsSince1970
        case millisecondsSince1970
        case custom(@Sendable (String) -> Date?)
    }

    let kind: Kind

    /// ISO 8601 text with a UTC offset (`2010-01-05T22:19:50Z`, `…+01:00`), with or without a
    /// fraction of a second: the form LocalLMDB stores dates in, and the default.
    public static let iso8601 = DateFormat(kind: .iso8601)
    /// Numbers of seconds since 1970-01-01T00:00:00Z (Unix time), fractions allowed.
    public static let secondsSince1970 = DateFormat(kind: .secondsSince1970)
    /// Numbers of milliseconds since 1970-01-01T00:00:00Z (JavaScript's `Date.now()`).
    public static let millisecondsSince1970 = DateFormat(kind: .millisecondsSince1970)

    /// Text in a `DateFormatter` pattern (`"yyyy-MM-dd'T'HH:mm:ssX"`, `"dd/MM/yyyy"`), read with
    /// the `en_US_POSIX` locale; in `timeZone` (UTC by default) when the pattern has no zone.
    public static func pattern(_ pattern: String, timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> DateFormat {
        DateFormat(kind: .pattern(pattern, timeZone: timeZone))
    }

    /// Text read by `parse`, which returns nil for text that is not a date.
    public static func custom(_ parse: @escaping @Sendable (String) -> Date?) -> DateFormat {
        DateFormat(kind: .custom(parse))
    }
}
