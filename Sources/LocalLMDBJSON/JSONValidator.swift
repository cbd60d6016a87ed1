import LocalLMDBBase

/// Checks that bytes are exactly one strict JSON (RFC 8259) document, building nothing.
///
/// Strict: the whole input must be one value with optional surrounding whitespace; strings
/// must be valid UTF-8 with no raw control characters and no lone surrogate escapes; numbers
/// must be within `Double`'s range (unless asked otherwise, for JSON from elsewhere); nesting is limited to `maxDepth`, and stops sooner when the
/// thread's stack runs low (`StackGuard`), so hostile input cannot exhaust the stack. It
/// allocates nothing, so a stored record is checked in one pass before `JSONScanner` reads
/// fields out of it in place.
@usableFromInline package struct JSONValidator {
    /// The deepest nesting of arrays and objects accepted.
    @usableFromInline package static let maxDepth = 512

    /// What the validator learnt about a valid document.
    @usableFromInline package struct Summary {
        /// Where the document's value starts (after leading whitespace).
        @usableFromInline package var start: Int
        /// Some object may name a member twice. Readers of such documents must keep the last
        /// value (as most JSON readers do), which reading in place cannot: they build a tree.
        @usableFromInline package var mayRepeatKeys: Bool

        @inlinable init(start: Int, mayRepeatKeys: Bool) {
            (self.start, self.mayRepeatKeys) = (start, mayRepeatKeys)
        }
    }

    @usableFromInline let input: UnsafeRawBufferPointer
    @usableFromInline var offset = 0
    @usableFromInline var depth = 0
    @usableFromInline var mayRepeatKeys = false
    /// Where the thread's stack is too low to open another container (`StackGuard`).
    @usableFromInline let stackLimit: UInt
    /// Numbers beyond `Double`'s range are refused.
    @usableFromInline let numbersInRange: Bool

    @inlinable init(_ input: UnsafeRawBufferPointer, numbersInRange: Bool) {
        self.input = input
        self.numbersInRange = numbersInRange
        stackLimit = CodecScratch.current.stackLimit
    }

    /// Checks one complete document. `numbersInRange`: numbers beyond `Double`'s range are
    /// refused (they are for stored records and data objects; JSON from elsewhere may hold
    /// them where nothing reads them, and reading one is then a mistyped field).
    /// - Throws: `DatabaseError.invalidJSON`, with the offset of the problem.
    @inlinable package static func validate(_ input: UnsafeRawBufferPointer, numbersInRange: Bool = true) throws(DatabaseError) -> Summary {
        var validator = JSONValidator(input, numbersInRange: numbersInRange)
        do throws(Invalid) {
            validator.skipWhitespace()
            let start = validator.offset
            try validator.value()
            validator.skipWhitespace()
            guard validator.offset == input.count else { throw validator.failure("unexpected data after the document") }
            return Summary(start: start, mayRepeatKeys: validator.mayRepeatKeys)
        } catch {
            throw .invalidJSON(reason: error.reason, offset: error.offset)
        }
    }

    /// Checks one complete document that must be an object.
    @inlinable package static func validateObject(_ input: UnsafeRawBufferPointer) throws(DatabaseError) -> Summary {
        let summary = try validate(input)
        guard input[summary.start] == UInt8(ascii: "{") else {
            throw .invalidJSON(reason: "the document is not an object", offset: summary.start)
        }
        return summary
    }

    /// Why and where the document is invalid: what the checks below throw (small, so that each
    /// level of nesting takes little stack: an unoptimized build keeps room in a frame for the
    /// error of every call in it that throws), and `validate` turns into `invalidJSON`.
    @usableFromInline struct Invalid: Error {
        @usableFromInline let reason: String
        @usableFromInline let offset: Int

        @inlinable init(reason: String, offset: Int) {
            (self.reason, self.offset) = (reason, offset)
        }
    }

    @inlinable func failure(_ reason: String) -> Invalid {
        Invalid(reason: reason, offset: offset)
    }

    @inlinable var current: UInt8? { offset < input.count ? input[offset] : nil }

    @inlinable mutating func skipWhitespace() {
        while offset < input.count, JSONGrammar.isWhitespace(input[offset]) { offset += 1 }
    }

    @inlinable mutating func literal(_ text: StaticString) throws(Invalid) {
        let count = text.utf8CodeUnitCount
        guard input.count - offset >= count else { throw failure("invalid literal") }
        for index in 0..<count where input[offset + index] != text.utf8Start[index] {
            throw failure("invalid literal")
        }
        offset += count
    }

    @inlinable mutating func value() throws(Invalid) {
        guard let byte = current else { throw failure("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): try object()
        case UInt8(ascii: "["): try array()
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw failure("unexpected character")
        }
    }

    /// Moves past an opening `{` or `[`; and past `closing` too when the container is empty.
    /// - Returns: Whether the container was empty.
    @inlinable mutating func enterContainer(closing: UInt8) throws(Invalid) -> Bool {
        depth += 1
        guard depth <= Self.maxDepth else { throw failure("nesting deeper than \(Self.maxDepth) levels") }
        guard !StackGuard.isLow(stackLimit) else { throw failure(StackGuard.refusal) }
        offset += 1
        skipWhitespace()
        guard current == closing else { return false }
        offset += 1
        depth -= 1
        return true
    }

    /// Moves past what follows a member or element: a `,` (another follows) or `closing`.
    /// - Returns: Whether the container ended.
    @inlinable mutating func endOfEntry(closing: UInt8) throws(Invalid) -> Bool {
        skipWhitespace()
        switch current {
        case UInt8(ascii: ","):
            offset += 1
            skipWhitespace()
            return false
        case closing:
            offset += 1
            depth -= 1
            return true
        default:
            throw failure(closing == UInt8(ascii: "}") ? "expected ',' or '}'" : "expected ',' or ']'")
        }
    }

    @inlinable mutating func object() throws(Invalid) {
        let objectStart = offset
        if try enterContainer(closing: UInt8(ascii: "}")) { return }
        // Repeated keys, found exactly and in linear time. Keys compare as Swift strings do
        // (canonically equivalent spellings are one key), as every lookup compares them. While
        // the object is small and its keys plain ASCII (for which that is byte equality), a
        // 64-bit filter of the keys seen allocates nothing: only a key whose bit is already set
        // can be a repeat, and only then are earlier keys compared. A wide object, or one with
        // a key that is escaped or not ASCII, keeps its keys in a set instead.
        // (The work is in `member`, outside this function, whose frame is kept small: it is
        // on the stack once per level of nesting.)
        var keys = Keys()
        while true {
            try member(of: objectStart, keys: &keys)
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw failure("expected ':'") }
            offset += 1
            skipWhitespace()
            try value()
            if try endOfEntry(closing: UInt8(ascii: "}")) { return }
        }
    }

    /// The keys of an object met so far, for finding a repeated one (see `object()`).
    @usableFromInline struct Keys {
        /// The filter's bits of the keys seen.
        @usableFromInline var seen: UInt64 = 0
        /// The keys seen, once the filter is not enough.
        @usableFromInline var set: Set<String>?
        @usableFromInline var count = 0

        @inlinable init() {}
    }

    /// Checks the member name at `offset`, in the object at `objectStart`, and moves past it;
    /// notes when it repeats a key of `keys`, which it joins.
    @inlinable mutating func member(of objectStart: Int, keys: inout Keys) throws(Invalid) {
        guard current == UInt8(ascii: "\"") else { throw failure("expected a member name") }
        let keyStart = offset
        let (keyHasEscapes, isPlain) = try string()
        keys.count += 1
        guard !mayRepeatKeys else { return }
        let key = UnsafeRawBufferPointer(rebasing: input[(keyStart + 1)..<(offset - 1)])
        if keys.set == nil, !isPlain || keys.count > Self.filterLimit {
            keys.set = earlierKeys(inObjectAt: objectStart, before: keyStart)
        }
        if var set = keys.set {
            keys.set = nil  // Keep the set uniquely referenced while it grows.
            let decoded = keyHasEscapes ? JSONScanner.unescape(key) : String(decoding: key, as: UTF8.self)
            if !set.insert(decoded).inserted { mayRepeatKeys = true }
            keys.set = set
        } else {
            let bit = Self.filterBit(key)
            if keys.seen & bit != 0, isRepeat(key, inObjectAt: objectStart, before: keyStart) {
                mayRepeatKeys = true
            }
            keys.seen |= bit
        }
    }

    /// How many plain ASCII keys an object may have before its keys go into a set.
    @usableFromInline static let filterLimit = 16

    @inlinable static func filterBit(_ key: UnsafeRawBufferPointer) -> UInt64 {
        let mix = key.count &* 31 &+ Int(key.first ?? 0) &* 7 &+ Int(key.last ?? 0)
        return 1 << UInt64(mix & 63)
    }

    /// Whether a member before `end` in the object at `objectStart` has the key `key` (plain
    /// ASCII, as every key before it is while the filter is in use). The object is valid up to
    /// `end`, so the scanner can walk it.
    @inlinable func isRepeat(_ key: UnsafeRawBufferPointer, inObjectAt objectStart: Int, before end: Int) -> Bool {
        let scanner = JSONScanner(input)
        var member = scanner.firstMember(ofObjectAt: objectStart)
        while let keyOffset = member, keyOffset < end {
            let earlier = scanner.member(at: keyOffset)
            if scanner.bytes(earlier.key).hasSameBytes(as: key) { return true }
            member = scanner.nextMember(after: scanner.end(ofValueAt: earlier.value))
        }
        return false
    }

    /// The keys of the members before `end` in the object at `objectStart`, decoded; marks the
    /// document as repeating keys if two of them are equal.
    @inlinable mutating func earlierKeys(inObjectAt objectStart: Int, before end: Int) -> Set<String> {
        let scanner = JSONScanner(input)
        var keys = Set<String>()
        var member = scanner.firstMember(ofObjectAt: objectStart)
        while let keyOffset = member, keyOffset < end {
            let earlier = scanner.member(at: keyOffset)
            if !keys.insert(scanner.name(of: earlier)).inserted { mayRepeatKeys = true }
            member = scanner.nextMember(after: scanner.end(ofValueAt: earlier.value))
        }
        return keys
    }

    @inlinable mutating func array() throws(Invalid) {
        if try enterContainer(closing: UInt8(ascii: "]")) { return }
        while true {
            try value()
            if try endOfEntry(closing: UInt8(ascii: "]")) { return }
        }
    }

    @inlinable mutating func number() throws(Invalid) {
        guard let shape = JSONGrammar.numberShape(in: input, at: offset) else {
            // Point at the offending byte: past the sign and digits that were fine.
            while let byte = current, JSONGrammar.isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") { offset += 1 }
            throw failure("invalid number")
        }
        let start = offset
        offset = shape.end
        // Without an exponent, fewer than 300 integer digits cannot leave Double's range.
        let text = UnsafeRawBufferPointer(rebasing: input[start..<shape.end])
        let mayOverflow = text.count >= 300 || shape.hasExponent
        if numbersInRange, mayOverflow, JSONGrammar.numberValue(text, isInteger: shape.isInteger) == nil {
            throw Invalid(reason: "number out of range", offset: start)
        }
    }

    /// Checks the string whose opening quote is at `offset` and moves past its closing quote.
    /// - Returns: Whether it contains escapes, and whether it is plain: printable ASCII with
    ///   no escapes, spelt as it reads.
    @inlinable mutating func string() throws(Invalid) -> (hasEscapes: Bool, isPlain: Bool) {
        offset += 1
        var hasEscapes = false
        var isPlain = true
        while true {
            offset = JSONGrammar.endOfPlainRun(in: input, from: offset)
            guard let byte = current else { throw failure("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                return (hasEscapes, isPlain)
            case UInt8(ascii: "\\"):
                hasEscapes = true
                isPlain = false
                do throws(JSONGrammar.EscapeError) {
                    offset = try JSONGrammar.escape(in: input, at: offset).end
                } catch {
                    throw failure(error.reason)
                }
            case 0x80...:
                isPlain = false
                guard let length = JSONGrammar.utf8SequenceLength(in: input, at: offset) else { throw failure("invalid UTF-8") }
                offset += length
            default:
                throw failure("control character in string")
            }
        }
    }
}
