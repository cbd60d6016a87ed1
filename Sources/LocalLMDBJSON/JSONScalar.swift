import LocalLMDBBase

import Foundation

/// The field types `DataObject` stores directly, and how each maps to and from JSON.
///
/// Reading is lenient in one way only: numbers convert between `Int` and `Double` when the value
/// is exactly representable (JSON does not distinguish `1` from `1.0`). Everything else that is
/// mistyped yields nil, and the caller's default.
@usableFromInline package protocol JSONScalar {
    var jsonValue: JSONValue { get }
    /// Writes `jsonValue`, without making it where the type can.
    func write(to writer: inout JSONWriter)
    /// The value at `offset`, and where it ends; nil when the value there is another type.
    static func read(_ scanner: JSONScanner, at offset: Int) -> (value: Self, end: Int)?
}

extension JSONScalar {
    @inlinable package func write(to writer: inout JSONWriter) { writer.write(jsonValue) }
}

extension String: JSONScalar {
    @inlinable package var jsonValue: JSONValue { .string(self) }
    @inlinable package func write(to writer: inout JSONWriter) { writer.write(self) }
    @inlinable @inline(__always) package static func read(_ scanner: JSONScanner, at offset: Int) -> (value: String, end: Int)? {
        scanner.string(at: offset)
    }
}

extension Int: JSONScalar {
    @inlinable package var jsonValue: JSONValue { .int(Int64(self)) }
    @inlinable package func write(to writer: inout JSONWriter) { writer.write(Int64(self)) }
    @inlinable @inline(__always) package static func read(_ scanner: JSONScanner, at offset: Int) -> (value: Int, end: Int)? {
        // The common number read straight into the type: the value `number(at:)` would give.
        if let number = JSONGrammar.shortNumberParts(in: scanner.input, at: offset) {
            guard number.fractionDigits > 0 else { return Int(exactly: number.integer).map { ($0, number.end) } }
            return Int(exactly: number.double).map { ($0, number.end) }
        }
        switch scanner.longNumber(at: offset) {
        case let (.int(number), end)?: return Int(exactly: number).map { ($0, end) }
        case let (.double(number), end)?: return Int(exactly: number).map { ($0, end) }
        default: return nil
        }
    }
}

extension Double: JSONScalar {
    @inlinable package var jsonValue: JSONValue { .double(self) }
    @inlinable package func write(to writer: inout JSONWriter) { writer.write(self) }
    /// A number, or NaN or an infinity as LocalLMDB stores them (`NonFiniteDouble`).
    @inlinable @inline(__always) package static func read(_ scanner: JSONScanner, at offset: Int) -> (value: Double, end: Int)? {
        if let number = readNumber(scanner, at: offset) { return number }
        return readNonFinite(scanner, at: offset)
    }

    /// A number only (nil for one beyond `Double`'s range): how JSON from elsewhere is read, where
    /// a string is never a number (as for `JSONDecoder`).
    @inline(__always)
    @inlinable package static func readNumber(_ scanner: JSONScanner, at offset: Int) -> (value: Double, end: Int)? {
        // The common number read straight into the type: the value `number(at:)` would give.
        if let number = JSONGrammar.shortNumberParts(in: scanner.input, at: offset) {
            // Exact with or without a fraction (at most 15 digits), and `-0` is -0.0.
            return (number.double, number.end)
        }
        switch scanner.longNumber(at: offset) {
        case let (.double(number), end)?: return (number, end)
        // The nearest double, as for a number beyond 64 bits (and as `JSONDecoder` reads it).
        case let (.int(number), end)?: return (Double(number), end)
        default: return nil
        }
    }

    /// NaN or an infinity, stored as a string spelt exactly as `NonFiniteDouble` writes it, with
    /// no escape (a `String` spelt the same has one: it is not a double).
    @inline(never)
    @inlinable package static func readNonFinite(_ scanner: JSONScanner, at offset: Int) -> (value: Double, end: Int)? {
        guard scanner.byte(at: offset) == UInt8(ascii: "\"") else { return nil }
        let (end, hasEscapes) = scanner.endOfString(at: offset)
        guard !hasEscapes, let value = NonFiniteDouble.value(spelledBy: scanner.bytes((offset + 1)..<max(offset + 1, end - 1))) else {
            return nil
        }
        return (value, end)
    }
}

extension Bool: JSONScalar {
    @inlinable package var jsonValue: JSONValue { .bool(self) }
    @inlinable package func write(to writer: inout JSONWriter) { writer.write(jsonValue) }
    @inlinable @inline(__always) package static func read(_ scanner: JSONScanner, at offset: Int) -> (value: Bool, end: Int)? {
        scanner.bool(at: offset)
    }
}

extension Date: JSONScalar {
    @inlinable package var jsonValue: JSONValue {
        guard let text = ISO8601Date.format(self) else {
            return .unencodable(reason: "the date \(timeIntervalSince1970) s since 1970 cannot be stored (not finite, or beyond ±2^63 seconds)")
        }
        return .string(text)
    }
    @inlinable @inline(__always) package static func read(_ scanner: JSONScanner, at offset: Int) -> (value: Date, end: Int)? {
        guard let (text, end) = scanner.string(at: offset), let date = ISO8601Date.parse(text) else { return nil }
        return (date, end)
    }
}

extension JSONScanner {
    /// `V.read(self, at: offset)`, calling this module's conformances directly. Across the
    /// module boundary a call through the protocol, even in code specialized for `V`, goes
    /// through a witness thunk per value that the optimizer does not inline (measured: 3% of a
    /// read by id). The type tests fold away in specialized code.
    @inlinable @inline(__always)
    package func read<V: JSONScalar>(_ type: V.Type, at offset: Int) -> (value: V, end: Int)? {
        if V.self == String.self { return Self.same(String.read(self, at: offset)) }
        if V.self == Int.self { return Self.same(Int.read(self, at: offset)) }
        if V.self == Double.self { return Self.same(Double.read(self, at: offset)) }
        if V.self == Bool.self { return Self.same(Bool.read(self, at: offset)) }
        if V.self == Date.self { return Self.same(Date.read(self, at: offset)) }
        return V.read(self, at: offset)
    }

    /// `read` as the type it is: only called where `A` is `V`.
    @inlinable @inline(__always)
    static func same<A, V>(_ read: (value: A, end: Int)?) -> (value: V, end: Int)? {
        assert(A.self == V.self)
        return unsafeBitCast(read, to: Optional<(value: V, end: Int)>.self)
    }
}
