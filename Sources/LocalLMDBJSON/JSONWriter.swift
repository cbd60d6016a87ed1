import LocalLMDBBase

/// Writes `JSONValue`s as compact, standards-compliant JSON (RFC 8259) into a byte buffer.
///
/// Strings are written as UTF-8 with only the required escapes (and one more for a string
/// spelt as a stored non-finite double: see `write(_:)`); integers exactly; finite doubles in
/// Swift's shortest round-tripping form. JSON has no NaN or infinity: those are written as the
/// strings of `NonFiniteDouble`, which reading a `Double` turns back into the same value. Nothing is written past `JSONValidator.maxDepth` levels of nesting, and an
/// `.unencodable` value is not written: either sets `failed`, and the bytes must not be stored.
///
/// Ownership: the output is memory the writer owns (so it is not copyable), taken from and
/// given back to the thread's `ReadScratch` (or allocated and freed); writes are stores into
/// room reserved ahead, without the uniqueness and capacity checks of appending to an array
/// byte by byte. `bytes` copies the output out.
@usableFromInline package struct JSONWriter: ~Copyable {
    /// The output: `count` bytes written, room for `capacity`.
    @usableFromInline var base: UnsafeMutableRawPointer
    @usableFromInline var count = 0
    @usableFromInline var capacity: Int
    /// Something could not be written (too deep, or `.unencodable`): see `JSONWriter.failure(in:)`.
    @usableFromInline package var failed = false
    /// Containers open around the value being written.
    @usableFromInline var depth = 0
    /// The deepest nesting written so far (1 for an object holding only scalars).
    @usableFromInline package var deepest = 0
    /// Where the thread's stack is too low to write another container (`StackGuard`).
    @usableFromInline let stackLimit: UInt

    /// Output memory kept for the thread's next writer is at most this large.
    @usableFromInline static let keptCapacity = 64 << 10

    /// Room a new writer starts with, past its prefix: a typical record's document.
    @usableFromInline static let startingRoom = 384

    /// A writer whose output starts with `prefix`; its memory is that of a writer that finished
    /// on this thread when one is kept.
    @inlinable package init(prefix: [UInt8] = []) {
        let needed = prefix.count + Self.startingRoom
        let scratch = CodecScratch.current
        stackLimit = scratch.stackLimit
        if let kept = scratch.writerBuffers.last, kept.capacity >= needed {
            scratch.writerBuffers.removeLast()
            (base, capacity) = kept
        } else {
            capacity = needed
            base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
        }
        prefix.withUnsafeBytes { append($0) }
    }

    deinit {
        let scratch = CodecScratch.current
        if scratch.writerBuffers.count < CodecScratch.keptWriterBuffers, capacity <= Self.keptCapacity {
            scratch.writerBuffers.append((base, capacity))
        } else {
            base.deallocate()
        }
    }

    /// The output so far, copied.
    @inlinable package var bytes: [UInt8] {
        Array(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The number of bytes written.
    @inlinable package var byteCount: Int { count }

    /// Calls `body` with the output so far, which it may change in place.
    @inlinable package func withOutput<R>(_ body: (UnsafeMutableRawBufferPointer) -> R) -> R {
        body(UnsafeMutableRawBufferPointer(start: base, count: count))
    }

    /// Appends `json`, which must be a complete JSON value nested `levels` deep; fails (as
    /// `write` of its value would) when that takes it past the nesting limit.
    @inlinable package mutating func write(json: UnsafeRawBufferPointer, levels: Int) {
        guard depth + levels <= JSONValidator.maxDepth else {
            failed = true
            return append("null")
        }
        deepest = max(deepest, depth + levels)
        append(json)
    }

    /// Appends `literal` (punctuation the caller knows to be valid where it goes).
    @inlinable @inline(__always) package mutating func write(literal: StaticString) {
        append(literal)
    }

    /// Appends `byte` (a separator the caller knows to be valid where it goes).
    @inlinable @inline(__always) package mutating func write(byte: UInt8) {
        append(byte)
    }

    /// Appends `raw` as it is: bytes the caller knows to be valid where they go.
    @inlinable @inline(__always) package mutating func write(raw: UnsafeRawBufferPointer) {
        append(raw)
    }

    /// Opens an object or an array (`{` or `[`) whose members or elements the caller writes;
    /// false (and `failed`, with nothing opened) past the nesting limit.
    @inlinable package mutating func open(_ bracket: UInt8) -> Bool {
        guard enter() else { return false }
        append(bracket)
        return true
    }

    /// Closes what `open` opened.
    @inlinable package mutating func close(_ bracket: UInt8) {
        append(bracket)
        depth -= 1
    }

    /// A point in the output to go back to (`truncate(to:)`).
    @usableFromInline package struct Mark {
        @usableFromInline let count: Int
        @usableFromInline let deepest: Int

        @inlinable init(count: Int, deepest: Int) {
            (self.count, self.deepest) = (count, deepest)
        }
    }

    /// The point the output has reached.
    @inlinable package var mark: Mark { Mark(count: count, deepest: deepest) }

    /// Forgets everything written after `mark`, and any failure there: for taking back a value
    /// that could not be written. Containers opened since must have been closed.
    @inlinable package mutating func truncate(to mark: Mark) {
        count = mark.count
        deepest = mark.deepest
        failed = false
    }

    /// Drops the last byte written (the closing bracket a caller wrote to lend the output).
    @inlinable package mutating func dropLast() {
        count -= 1
    }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    @inlinable mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    @inlinable mutating func grow(to needed: Int) {
        let newCapacity = max(needed, capacity * 2)
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 1)
        newBase.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    @inlinable mutating func append(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    @inlinable mutating func append(_ raw: UnsafeRawBufferPointer) {
        guard let source = raw.baseAddress, !raw.isEmpty else { return }
        reserve(raw.count)
        (base + count).copyMemory(from: source, byteCount: raw.count)
        count += raw.count
    }

    @inline(__always)
    @inlinable mutating func append(_ literal: StaticString) {
        append(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    @inlinable package mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case let .bool(flag): flag ? append("true") : append("false")
        case let .int(number): write(number)
        case let .double(number): write(number)
        case var .number(text): text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
        case let .string(text): write(text)
        case let .array(elements):
            guard enter() else { return }
            append(UInt8(ascii: "["))
            for index in elements.indices {
                if index > 0 { append(UInt8(ascii: ",")) }
                write(elements[index])
            }
            append(UInt8(ascii: "]"))
            depth -= 1
        case let .object(object):
            write(object)
        case .unencodable:
            failed = true
            append("null")
        }
    }

    @inlinable package mutating func write(_ object: JSONObject) {
        guard enter() else { return }
        append(UInt8(ascii: "{"))
        let members = object.members
        for index in members.indices {
            if index > 0 { append(UInt8(ascii: ",")) }
            write(key: members[index].key)
            append(UInt8(ascii: ":"))
            write(members[index].value)
        }
        append(UInt8(ascii: "}"))
        depth -= 1
    }

    /// Opens a container; false (and `failed`) past the reader's nesting limit, which the
    /// writer does not go beyond either, or when the thread's stack runs low (so no input can
    /// exhaust its stack).
    @inlinable mutating func enter() -> Bool {
        depth += 1
        guard depth <= JSONValidator.maxDepth, !StackGuard.isLow(stackLimit) else {
            depth -= 1
            failed = true
            append("null")
            return false
        }
        deepest = max(deepest, depth)
        return true
    }

    /// Where and why `object` cannot be written: the path of the first value that is too deep
    /// or unencodable (`address.tags[3]`), and the reason; nil when it can be (a write that
    /// failed all the same ran out of stack: see `StackGuard`). Walks the tree again, so only a
    /// failed write pays for it.
    @inlinable package static func failure(in object: JSONObject) -> (path: String, reason: String)? {
        var path: [String] = []
        return failure(in: .object(object), depth: 0, path: &path, stackLimit: CodecScratch.current.stackLimit)
    }

    @inlinable static func failure(in value: JSONValue, depth: Int, path: inout [String], stackLimit: UInt) -> (path: String, reason: String)? {
        func found(_ reason: String) -> (path: String, reason: String) {
            (String(path.joined().trimmingPrefix(".")), reason)
        }
        if StackGuard.isLow(stackLimit) { return found(StackGuard.refusal) }
        switch value {
        case let .unencodable(reason):
            return found(reason)
        case let .array(elements):
            guard depth < JSONValidator.maxDepth else { return found("nested deeper than \(JSONValidator.maxDepth) levels") }
            for (index, element) in elements.enumerated() {
                path.append("[\(index)]")
                defer { path.removeLast() }
                if let failure = failure(in: element, depth: depth + 1, path: &path, stackLimit: stackLimit) { return failure }
            }
        case let .object(object):
            guard depth < JSONValidator.maxDepth else { return found("nested deeper than \(JSONValidator.maxDepth) levels") }
            for member in object.members {
                path.append("." + FieldKey.field(fromStored: member.key))  // Field keys, as the model named them.
                defer { path.removeLast() }
                if let failure = failure(in: member.value, depth: depth + 1, path: &path, stackLimit: stackLimit) { return failure }
            }
        default:
            break
        }
        return nil
    }

    @inlinable package mutating func write(_ number: Int64) {
        if number < 0 { append(UInt8(ascii: "-")) }
        // Work with the magnitude so Int64.min does not overflow.
        var magnitude = number.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var index = digits.count
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: digits[index...])))
        }
    }

    @inlinable package mutating func write(_ number: Double) {
        guard number.isFinite else {
            var text = NonFiniteDouble.text(for: number)
            return text.withUTF8 { writeString(UnsafeRawBufferPointer($0)) }
        }
        var text = number.description
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Writes the string value `text`. A string spelt exactly as a non-finite double is stored
    /// (`"NaN"`, `"Infinity"`…: `NonFiniteDouble`) has its first character escaped
    /// (`"\u0049nfinity"`): every JSON reader reads the same text, and no `Double` read takes it
    /// for the double.
    @inlinable package mutating func write(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            let raw = UnsafeRawBufferPointer(utf8)
            if NonFiniteDouble.value(spelledBy: raw) != nil {
                // Printable ASCII, nothing else to escape.
                append("\"\\u00")
                appendHex(raw[0])
                append(UnsafeRawBufferPointer(rebasing: raw[1...]))
                append(UInt8(ascii: "\""))
            } else {
                writeString(raw)
            }
        }
    }

    /// Writes the member name `key`.
    @inlinable package mutating func write(key: String) {
        var key = key
        key.withUTF8 { writeString(UnsafeRawBufferPointer($0)) }
    }

    /// Writes the UTF-8 text `raw` as a JSON string, escaping what JSON requires.
    @inlinable mutating func writeString(_ raw: UnsafeRawBufferPointer) {
        // Room for the quotes and the text as it is; escapes reserve their own.
        reserve(raw.count + 2)
        append(UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<raw.count {
            let byte = raw[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            append(UnsafeRawBufferPointer(rebasing: raw[runStart..<index]))
            appendEscape(for: byte)
            runStart = index + 1
        }
        append(UnsafeRawBufferPointer(rebasing: raw[runStart...]))
        append(UInt8(ascii: "\""))
    }

    /// Appends the two lowercase hexadecimal digits of `byte`.
    @inlinable mutating func appendHex(_ byte: UInt8) {
        let hex: StaticString = "0123456789abcdef"
        append(hex.utf8Start[Int(byte >> 4)])
        append(hex.utf8Start[Int(byte & 0xF)])
    }

    @inlinable mutating func appendEscape(for byte: UInt8) {
        append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): append(UInt8(ascii: "\\"))
        case 0x0A: append(UInt8(ascii: "n"))
        case 0x0D: append(UInt8(ascii: "r"))
        case 0x09: append(UInt8(ascii: "t"))
        case 0x08: append(UInt8(ascii: "b"))
        case 0x0C: append(UInt8(ascii: "f"))
        default:
            append("u00")
            appendHex(byte)
        }
    }
}
