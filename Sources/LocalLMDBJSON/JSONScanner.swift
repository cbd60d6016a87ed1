import LocalLMDBBase

/// Reads values in place from bytes that `JSONValidator` accepted.
///
/// Offsets point at the first byte of a value (or of a member's key). The scanner trusts the
/// grammar (it does not re-check escapes, UTF-8 or nesting) but never its bounds: every read is
/// checked against the end of the bytes, so a broken invariant could give a wrong value but
/// never read outside the buffer.
@usableFromInline package struct JSONScanner {
    @usableFromInline let input: UnsafeRawBufferPointer

    @inlinable package init(_ input: UnsafeRawBufferPointer) {
        self.input = input
    }

    /// A member of an object: where its key's characters and its value are.
    @usableFromInline package struct Member {
        /// Where the member starts: its key's opening quote.
        @usableFromInline package var start: Int
        /// The key's bytes, between the quotes, still escaped.
        @usableFromInline package var key: Range<Int>
        @usableFromInline package var keyHasEscapes: Bool
        /// Where the value starts.
        @usableFromInline package var value: Int

        @inlinable init(start: Int, key: Range<Int>, keyHasEscapes: Bool, value: Int) {
            (self.start, self.key, self.keyHasEscapes, self.value) = (start, key, keyHasEscapes, value)
        }
    }

    /// The byte at `offset`, or 0 past the end (0 is never valid JSON outside a string).
    @inline(__always)
    @inlinable package func byte(at offset: Int) -> UInt8 {
        offset >= 0 && offset < input.count ? input[offset] : 0
    }

    @inline(__always)
    @inlinable package func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        guard range.lowerBound >= 0, range.upperBound <= input.count, let base = input.baseAddress else {
            return UnsafeRawBufferPointer(rebasing: input[range.clamped(to: 0..<input.count)])
        }
        return UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count)
    }

    @inline(__always)
    @inlinable func skipWhitespace(from offset: Int) -> Int {
        var offset = offset
        while offset < input.count, JSONGrammar.isWhitespace(input[offset]) { offset += 1 }
        return offset
    }

    // MARK: Structure

    /// The offset just past the value starting at `offset`.
    @inlinable package func end(ofValueAt offset: Int) -> Int {
        switch byte(at: offset) {
        case UInt8(ascii: "\""):
            return endOfString(at: offset).end
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = offset
            while index < input.count {
                switch input[index] {
                case UInt8(ascii: "\""):
                    index = endOfString(at: index).end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default:
                    break
                }
                index += 1
            }
            return input.count
        default:
            // A number or a literal: runs until a delimiter.
            var index = offset
            while index < input.count {
                switch input[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09: return index
                default: index += 1
                }
            }
            return index
        }
    }

    /// The end of the string whose opening quote is at `offset`: just past its closing quote.
    @inline(__always)
    @inlinable package func endOfString(at offset: Int) -> (end: Int, hasEscapes: Bool) {
        var index = offset + 1
        var hasEscapes = false
        while true {
            index = JSONGrammar.endOfPlainRun(in: input, from: index)
            switch byte(at: index) {
            case UInt8(ascii: "\""):
                return (index + 1, hasEscapes)
            case UInt8(ascii: "\\"):
                hasEscapes = true
                index += 2
            case 0:
                return (input.count, hasEscapes)  // Unreachable in validated input.
            default:
                index += 1  // Non-ASCII: valid UTF-8 here.
            }
        }
    }

    /// The first member of the object whose `{` is at `offset`: the offset of its key, or nil
    /// when the object is empty.
    @inline(__always)
    @inlinable package func firstMember(ofObjectAt offset: Int) -> Int? {
        let key = skipWhitespace(from: offset + 1)
        return byte(at: key) == UInt8(ascii: "\"") ? key : nil
    }

    /// The member whose key starts at `offset`.
    @inline(__always)
    @inlinable package func member(at offset: Int) -> Member {
        let (keyEnd, hasEscapes) = endOfString(at: offset)
        var value = skipWhitespace(from: keyEnd)
        if byte(at: value) == UInt8(ascii: ":") { value = skipWhitespace(from: value + 1) }
        return Member(start: offset, key: (offset + 1)..<max(offset + 1, keyEnd - 1), keyHasEscapes: hasEscapes, value: value)
    }

    /// The member at `offset` if its key is spelled exactly `name`, which must hold no byte
    /// that JSON escapes: then the quote after those bytes is the key's closing quote.
    @inline(__always)
    @inlinable package func member(at offset: Int, spelled name: UnsafeRawBufferPointer) -> Member? {
        let keyEnd = offset + 1 + name.count
        guard byte(at: keyEnd) == UInt8(ascii: "\""), bytes((offset + 1)..<keyEnd).hasSameBytes(as: name) else { return nil }
        var value = skipWhitespace(from: keyEnd + 1)
        if byte(at: value) == UInt8(ascii: ":") { value = skipWhitespace(from: value + 1) }
        return Member(start: offset, key: (offset + 1)..<keyEnd, keyHasEscapes: false, value: value)
    }

    /// The next member's key after a value that ended at `valueEnd`, or nil at the object's end.
    @inline(__always)
    @inlinable package func nextMember(after valueEnd: Int) -> Int? {
        let comma = skipWhitespace(from: valueEnd)
        guard byte(at: comma) == UInt8(ascii: ",") else { return nil }
        return skipWhitespace(from: comma + 1)
    }

    /// The first element of the array whose `[` is at `offset`, or nil when it is empty.
    @inlinable package func firstElement(ofArrayAt offset: Int) -> Int? {
        let element = skipWhitespace(from: offset + 1)
        let byte = byte(at: element)
        return byte == UInt8(ascii: "]") || byte == 0 ? nil : element
    }

    /// The number of elements of the array whose `[` is at `offset`: its commas outside
    /// strings and nested containers, plus one, in one pass over the bytes (strings skipped
    /// eight bytes at a time, nested containers as a whole).
    @inlinable @inline(__always) package func elementCount(ofArrayAt offset: Int) -> Int {
        guard firstElement(ofArrayAt: offset) != nil else { return 0 }
        var count = 1
        var index = offset + 1
        while index < input.count {
            switch input[index] {
            case UInt8(ascii: "\""):
                index = endOfString(at: index).end
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                index = end(ofValueAt: index)
            case UInt8(ascii: ","):
                count += 1
                index += 1
            case UInt8(ascii: "]"):
                return count
            default:
                index += 1
            }
        }
        return count
    }

    /// The next element after one that ended at `elementEnd`; nil at the array's end, with
    /// `arrayEnd` set past its `]`.
    @inline(__always)
    @inlinable package func element(after elementEnd: Int, arrayEnd: inout Int) -> Int? {
        let comma = skipWhitespace(from: elementEnd)
        guard byte(at: comma) == UInt8(ascii: ",") else {
            arrayEnd = comma + 1
            return nil
        }
        return skipWhitespace(from: comma + 1)
    }

    /// The next element after one that ended at `elementEnd`, or nil at the array's end.
    @inline(__always)
    @inlinable package func nextElement(after elementEnd: Int) -> Int? {
        nextMember(after: elementEnd)
    }

    // MARK: Values

    /// The string whose opening quote is at `offset`, and the offset past its closing quote;
    /// nil when the value there is not a string.
    @inlinable package func string(at offset: Int) -> (value: String, end: Int)? {
        guard byte(at: offset) == UInt8(ascii: "\"") else { return nil }
        let (end, hasEscapes) = endOfString(at: offset)
        let content = bytes((offset + 1)..<max(offset + 1, end - 1))
        guard hasEscapes else { return (String(decoding: content, as: UTF8.self), end) }
        return (Self.unescape(content), end)
    }

    /// A string's characters with their escapes decoded.
    @inlinable package static func unescape(_ content: UnsafeRawBufferPointer) -> String {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(content.count)
        var index = 0
        while index < content.count {
            let byte = content[index]
            guard byte == UInt8(ascii: "\\") else {
                decoded.append(byte)
                index += 1
                continue
            }
            guard let (scalar, end) = try? JSONGrammar.escape(in: content, at: index) else {
                index += 1  // Unreachable in validated input.
                continue
            }
            UTF8.encode(scalar) { decoded.append($0) }
            index = end
        }
        return String(decoding: decoded, as: UTF8.self)
    }

    /// The key of `member`, unescaped.
    @inlinable package func name(of member: Member) -> String {
        let raw = bytes(member.key)
        return member.keyHasEscapes ? Self.unescape(raw) : String(decoding: raw, as: UTF8.self)
    }

    /// Whether the key of `member` is `key` (given as UTF-8).
    @inline(__always)
    @inlinable func key(of member: Member, equals key: UnsafeRawBufferPointer) -> Bool {
        guard member.keyHasEscapes else { return bytes(member.key).hasSameBytes(as: key) }
        var unescaped = Self.unescape(bytes(member.key))
        return unescaped.withUTF8 { UnsafeRawBufferPointer($0).hasSameBytes(as: key) }
    }

    /// The number at `offset` (`.int` or `.double`) and the offset past it; nil when the value
    /// there is not a number.
    @inlinable func number(at offset: Int) -> (value: JSONValue, end: Int)? {
        if let number = JSONGrammar.shortNumber(in: input, at: offset) { return number }
        return longNumber(at: offset)
    }

    /// `number(at:)` for a number that `JSONGrammar.shortNumberParts` does not read.
    @inline(never)
    @inlinable func longNumber(at offset: Int) -> (value: JSONValue, end: Int)? {
        let first = byte(at: offset)
        guard first == UInt8(ascii: "-") || JSONGrammar.isDigit(first),
              let shape = JSONGrammar.numberShape(in: input, at: offset),
              let value = JSONGrammar.longNumberValue(bytes(offset..<shape.end), isInteger: shape.isInteger) else { return nil }
        return (value, shape.end)
    }

    /// The literal `true` or `false` at `offset`; nil for anything else.
    @inlinable func bool(at offset: Int) -> (value: Bool, end: Int)? {
        switch byte(at: offset) {
        case UInt8(ascii: "t"): return (true, offset + 4)
        case UInt8(ascii: "f"): return (false, offset + 5)
        default: return nil
        }
    }

    // MARK: Trees

    /// The value at `offset` as a tree, and the offset past it. Repeated keys keep the last value
    /// when `mayRepeatKeys` (otherwise there are none to find). A container nested deeper than
    /// the thread's stack allows (`StackGuard`) is `.unencodable`, which refuses to be written.
    @inlinable package func value(at offset: Int, mayRepeatKeys: Bool) -> (value: JSONValue, end: Int) {
        value(at: offset, mayRepeatKeys: mayRepeatKeys, stackLimit: CodecScratch.current.stackLimit)
    }

    @inlinable func value(at offset: Int, mayRepeatKeys: Bool, stackLimit: UInt) -> (value: JSONValue, end: Int) {
        switch byte(at: offset) {
        case UInt8(ascii: "{"):
            let (object, end) = object(at: offset, mayRepeatKeys: mayRepeatKeys, stackLimit: stackLimit)
            return (.object(object), end)
        case UInt8(ascii: "["):
            if StackGuard.isLow(stackLimit) { return (.unencodable(reason: StackGuard.refusal), end(ofValueAt: offset)) }
            var elements: [JSONValue] = []
            var next = firstElement(ofArrayAt: offset)
            var end = skipWhitespace(from: offset + 1) + 1
            while let element = next {
                let (value, valueEnd) = value(at: element, mayRepeatKeys: mayRepeatKeys, stackLimit: stackLimit)
                elements.append(value)
                end = skipWhitespace(from: valueEnd) + 1
                next = nextElement(after: valueEnd)
            }
            return (.array(elements), end)
        case UInt8(ascii: "\""):
            // A non-finite double's stored form, with no escape, is the double (as `Double.read`
            // reads it), so that a tree written out again keeps it a double, and strings strings.
            let (end, hasEscapes) = endOfString(at: offset)
            if !hasEscapes, let number = NonFiniteDouble.value(spelledBy: bytes((offset + 1)..<max(offset + 1, end - 1))) {
                return (.double(number), end)
            }
            return string(at: offset).map { (.string($0.value), $0.end) } ?? (.null, end)
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return bool(at: offset).map { (.bool($0.value), $0.end) } ?? (.null, end(ofValueAt: offset))
        case UInt8(ascii: "n"):
            return (.null, offset + 4)
        default:
            return treeNumber(at: offset) ?? (.null, end(ofValueAt: offset))
        }
    }

    /// The number at `offset` for a tree: as `number(at:)`, except that a number a `Double`
    /// would not write back the same (more digits than a `Double` holds, an exponent, trailing
    /// zeros, or beyond its range, which JSON from elsewhere may hold) is kept as its text, so a
    /// tree written out again never changes it.
    @inlinable func treeNumber(at offset: Int) -> (value: JSONValue, end: Int)? {
        guard let (value, end) = number(at: offset) else {
            return numberText(at: offset).map { (.number(String(decoding: $0.text, as: UTF8.self)), $0.end) }
        }
        guard case let .double(double) = value else { return (value, end) }
        let text = bytes(offset..<end)
        var written = double.description
        let same = written.withUTF8 { UnsafeRawBufferPointer($0).hasSameBytes(as: text) }
        return (same ? value : .number(String(decoding: text, as: UTF8.self)), end)
    }

    /// The text of the number at `offset`, and the offset past it; nil when the value there is
    /// not a number. `isInteger` when it has no fraction or exponent.
    @inlinable package func numberText(at offset: Int) -> (text: UnsafeRawBufferPointer, isInteger: Bool, end: Int)? {
        let first = byte(at: offset)
        guard first == UInt8(ascii: "-") || JSONGrammar.isDigit(first),
              let shape = JSONGrammar.numberShape(in: input, at: offset) else { return nil }
        return (bytes(offset..<shape.end), shape.isInteger, shape.end)
    }

    /// The object whose `{` is at `offset` as a tree, and the offset past it. Its members nested
    /// deeper than the thread's stack allows are `.unencodable` (see `value(at:mayRepeatKeys:)`).
    @inlinable package func object(at offset: Int, mayRepeatKeys: Bool) -> (object: JSONObject, end: Int) {
        object(at: offset, mayRepeatKeys: mayRepeatKeys, stackLimit: CodecScratch.current.stackLimit)
    }

    @inlinable func object(at offset: Int, mayRepeatKeys: Bool, stackLimit: UInt) -> (object: JSONObject, end: Int) {
        if StackGuard.isLow(stackLimit) {
            let tooDeep = JSONObject.Member(key: "", value: .unencodable(reason: StackGuard.refusal))
            return (JSONObject(members: [tooDeep]), end(ofValueAt: offset))
        }
        var object = JSONObject()
        var members: [JSONObject.Member] = []
        members.reserveCapacity(16)
        var next = firstMember(ofObjectAt: offset)
        var end = skipWhitespace(from: offset + 1) + 1
        while let keyOffset = next {
            let member = member(at: keyOffset)
            let key = member.keyHasEscapes
                ? Self.unescape(bytes(member.key))
                : String(decoding: bytes(member.key), as: UTF8.self)
            let (value, valueEnd) = value(at: member.value, mayRepeatKeys: mayRepeatKeys, stackLimit: stackLimit)
            if mayRepeatKeys {
                object.set(key, value)  // A repeated key: the last value wins, in the first one's place.
            } else {
                members.append(JSONObject.Member(key: key, value: value))
            }
            end = skipWhitespace(from: valueEnd) + 1
            next = nextMember(after: valueEnd)
        }
        return (mayRepeatKeys ? object : JSONObject(members: members), end)
    }
}
