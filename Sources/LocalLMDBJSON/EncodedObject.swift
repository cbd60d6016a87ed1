import LocalLMDBBase

/// A valid JSON object's bytes, which a `DataObject` reads its fields from in place.
///
/// Borrowed bytes (`owner == nil`) point into LMDB's memory map and are valid only during the
/// read transaction that found them: `DataObject.restore(_:from:)` copies them into a
/// `JSONBuffer` when a data object outlives the initializer it was made for. Owned bytes live
/// in the `JSONBuffer` this value keeps alive.
///
/// Invariant: `bytes` starts with the object's `{` and holds at least up to its matching `}`
/// (nested objects share their parent's bytes and run to the parent's end); the document they
/// belong to passed `JSONValidator` and names no member twice in any object.
@usableFromInline package struct EncodedObject {
    @usableFromInline package let bytes: UnsafeRawBufferPointer
    /// Keeps owned bytes alive; nil when they are borrowed.
    @usableFromInline package let owner: JSONBuffer?

    @inlinable package var scanner: JSONScanner { JSONScanner(bytes) }

    /// Exactly the object's bytes, from `{` to its `}`.
    @inlinable package var extent: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[..<scanner.end(ofValueAt: 0)])
    }

    /// The member naming an object's class (`"object"`; SwiftLocal's), which `LocalLMDB`'s
    /// data objects write first.
    @usableFromInline package static let classNameKey = "object"

    /// The string under `classNameKey`: the writer puts it first, so this usually reads one member.
    @inlinable package var className: String? {
        member(named: Self.classNameKey, from: nil).flatMap { scanner.string(at: $0.value)?.value }
    }

    /// The class member when it is the first member, where LocalLMDB writes it.
    @inlinable var leadingClassMember: JSONScanner.Member? {
        let scanner = scanner
        guard let first = scanner.firstMember(ofObjectAt: 0) else { return nil }
        return FieldKey.withClassKey { scanner.member(at: first, spelled: $0) }
    }

    /// The offset just past the class member's value when the class member comes first and
    /// its value is the string spelled exactly as `expected` (plain text, which JSON writes byte
    /// for byte: so the value is `expected`); nil otherwise.
    @inlinable package func endOfClassName(spelled expected: String) -> Int? {
        let scanner = scanner
        guard let member = leadingClassMember, scanner.byte(at: member.value) == UInt8(ascii: "\"") else { return nil }
        let end = expected.utf8.withContiguousStorageIfAvailable { utf8 -> Int? in
            let name = UnsafeRawBufferPointer(utf8)
            let close = member.value + 1 + name.count
            guard scanner.byte(at: close) == UInt8(ascii: "\""), scanner.bytes((member.value + 1)..<close).hasSameBytes(as: name),
                  JSONGrammar.isPlain(name) else { return nil }
            return close + 1
        }
        return end ?? nil
    }

    /// The member named `key`, walking the members from the one at `start` (the first when
    /// nil) to the end and then from the first round to `start`.
    ///
    /// Keys match as Swift strings do: canonically equivalent spellings (`"café"` with a
    /// precomposed `é` or with `e` and a combining accent, `"K"` and the Kelvin sign) are one key.
    /// Bytes are compared first; only when none match, and some key involved is not plain
    /// ASCII (for which byte equality is canonical equivalence), are keys decoded and compared.
    @inlinable package func member(named key: String, from start: Int?) -> JSONScanner.Member? {
        if let member = memberSpelled(key, from: start) { return member }
        return memberEquivalent(to: key)
    }

    /// The names of the top-level members of the object `json`, unescaped.
    package static func memberNames(of json: UnsafeRawBufferPointer) -> Set<String> {
        let scanner = EncodedObject(bytes: json, owner: nil).scanner
        var names: Set<String> = []
        var next = scanner.firstMember(ofObjectAt: 0)
        while let offset = next {
            let member = scanner.member(at: offset)
            names.insert(scanner.name(of: member))
            next = scanner.nextMember(after: scanner.end(ofValueAt: member.value))
        }
        return names
    }

    /// The member whose key, decoded, is canonically equivalent to `key` but spelt otherwise.
    @inlinable func memberEquivalent(to key: String) -> JSONScanner.Member? {
        let scanner = scanner
        var keyCopy = key
        let keyIsPlain = keyCopy.withUTF8 { JSONGrammar.isPlain(UnsafeRawBufferPointer($0)) }
        var next = scanner.firstMember(ofObjectAt: 0)
        while let offset = next {
            let member = scanner.member(at: offset)
            let raw = scanner.bytes(member.key)
            if !keyIsPlain || member.keyHasEscapes || !JSONGrammar.isPlain(raw) {
                let decoded = member.keyHasEscapes ? JSONScanner.unescape(raw) : String(decoding: raw, as: UTF8.self)
                if decoded == key { return member }
            }
            next = scanner.nextMember(after: scanner.end(ofValueAt: member.value))
        }
        return nil
    }

    /// The member whose key is spelt exactly `key` (after unescaping).
    @inlinable func memberSpelled(_ key: String, from start: Int?) -> JSONScanner.Member? {
        let scanner = scanner
        guard let first = scanner.firstMember(ofObjectAt: 0) else { return nil }
        let start = start ?? first
        var key = key
        return key.withUTF8 { name in
            let name = UnsafeRawBufferPointer(name)
            // A name with nothing to escape matches a key spelled the same without finding
            // the key's end first; a key with escapes might decode to it, so those are compared
            // the long way.
            let isPlain = JSONGrammar.isPlain(name)
            var current: Int? = start
            var wrapped = start == first
            while let offset = current {
                if isPlain, let member = scanner.member(at: offset, spelled: name) { return member }
                let member = scanner.member(at: offset)
                if member.keyHasEscapes || !isPlain, scanner.key(of: member, equals: name) { return member }
                current = scanner.nextMember(after: scanner.end(ofValueAt: member.value))
                if current == nil, !wrapped {
                    current = first
                    wrapped = true
                }
                if wrapped, current == start { return nil }
            }
            return nil
        }
    }

    /// The nested object whose `{` is at `offset`.
    @inlinable package func nestedObject(at offset: Int) -> EncodedObject {
        EncodedObject(bytes: UnsafeRawBufferPointer(rebasing: bytes[offset...]), owner: owner)
    }

    /// The same object in bytes of its own.
    @inlinable package func owned() -> EncodedObject {
        if owner != nil { return self }
        let buffer = JSONBuffer(copying: extent)
        return EncodedObject(bytes: UnsafeRawBufferPointer(buffer.bytes), owner: buffer)
    }

    /// Checks `json`, a whole document that must be an object, and reads it in place; or, when
    /// an object in it repeats a key, reads a rewritten copy that keeps each key's last value.
    /// - Parameter owner: What keeps `json` alive, or nil when it is borrowed.
    /// - Throws: `DatabaseError.invalidJSON`.
    @inlinable package static func validating(_ json: UnsafeRawBufferPointer, owner: JSONBuffer?) throws(DatabaseError) -> EncodedObject {
        let summary = try JSONValidator.validateObject(json)
        guard summary.mayRepeatKeys else {
            return EncodedObject(bytes: UnsafeRawBufferPointer(rebasing: json[summary.start...]), owner: owner)
        }
        let object = JSONScanner(json).object(at: summary.start, mayRepeatKeys: true).object
        let (rewritten, failed) = written(object)
        // Only a tree nested deeper than the thread's stack allows cannot be written back.
        guard !failed else { throw .invalidJSON(reason: StackGuard.refusal, offset: summary.start) }
        return rewritten
    }

    /// The bytes of `object` as written by `JSONWriter`, owned.
    @inlinable init(writing object: JSONObject) {
        self = Self.written(object).object
    }

    /// The bytes of `object` as written by `JSONWriter`, owned, and whether something in it could
    /// not be written (`null` stands in its place: see `JSONWriter.failed`).
    @inlinable package static func written(_ object: JSONObject) -> (object: EncodedObject, failed: Bool) {
        var writer = JSONWriter()
        writer.write(object)
        let buffer = JSONBuffer.copying(writer.bytes)
        return (EncodedObject(bytes: UnsafeRawBufferPointer(buffer.bytes), owner: buffer), writer.failed)
    }

    @inlinable package init(bytes: UnsafeRawBufferPointer, owner: JSONBuffer?) {
        self.bytes = bytes
        self.owner = owner
    }
}

/// Bytes of JSON owned by the objects that read them. Immutable once made, so sharing one
/// between threads is safe.
@usableFromInline package final class JSONBuffer: @unchecked Sendable {
    @usableFromInline package let bytes: UnsafeMutableRawBufferPointer

    @inlinable package init(copying source: UnsafeRawBufferPointer) {
        bytes = .allocate(byteCount: source.count, alignment: 1)
        bytes.copyMemory(from: source)
    }

    @inlinable package static func copying(_ source: [UInt8]) -> JSONBuffer {
        source.withUnsafeBytes { JSONBuffer(copying: $0) }
    }

    deinit {
        bytes.deallocate()
    }
}

extension EncodedObject {
    /// The empty object `{}`, in constant memory: what a spare data object holds between reads.
    @inlinable package static var empty: EncodedObject {
        let text: StaticString = "{}"
        return EncodedObject(bytes: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount), owner: nil)
    }

    /// The document `null`: what a decoder reads for a member that is missing.
    @inlinable package static var null: EncodedObject {
        EncodedObject(bytes: UnsafeRawBufferPointer(nullBuffer.bytes), owner: nullBuffer)
    }

    @usableFromInline static let nullBuffer = JSONBuffer.copying(Array("null".utf8))
}
