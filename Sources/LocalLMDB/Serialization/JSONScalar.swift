import Foundation

/// The field types `DataObject` stores directly, and how each maps to and from JSON.
///
/// Reading is lenient in one way only: numbers convert between `Int` and `Double` when the value
/// is exactly representable (JSON does not distinguish `1` from `1.0`). Everything else that is
/// mistyped yields nil, and the caller's default.
protocol JSONScalar {
    var jsonValue: JSONValue { get }
    init?(jsonValue: JSONValue)
}

extension String: JSONScalar {
    var jsonValue: JSONValue { .string(self) }
    init?(jsonValue: JSONValue) {
        guard case let .string(text) = jsonValue else { return nil }
        self = text
    }
}

extension Int: JSONScalar {
    var jsonValue: JSONValue { .int(Int64(self)) }
    init?(jsonValue: JSONValue) {
        switch jsonValue {
        case let .int(number): self.init(exactly: number)
        case let .double(number): self.init(exactly: number)
        default: return nil
        }
    }
}

extension Double: JSONScalar {
    var jsonValue: JSONValue { .double(self) }
    init?(jsonValue: JSONValue) {
        switch jsonValue {
        case let .double(number): self = number
        case let .int(number): self.init(exactly: number)
        default: return nil
        }
    }
}

extension Bool: JSONScalar {
    var jsonValue: JSONValue { .bool(self) }
    init?(jsonValue: JSONValue) {
        guard case let .bool(flag) = jsonValue else { return nil }
        self = flag
    }
}

extension Date: JSONScalar {
    var jsonValue: JSONValue { .string(ISO8601Date.format(self)) }
    init?(jsonValue: JSONValue) {
        guard case let .string(text) = jsonValue, let date = ISO8601Date.parse(text) else { return nil }
        self = date
    }
}
