/// How a field's key is spelt as a member name of the stored JSON object.
///
/// The member `"object"` holds the object's class name (SwiftLocal's format), so a field may
/// not be stored under it as is. The mapping, applied by every `add` and every lookup:
/// a key made of zero or more `~` followed by `object` is stored with one more leading `~`
/// (`object` → `~object`, `~object` → `~~object`); every other key is stored unchanged. It is
/// one-to-one, so a model may name a field `object` (or anything else) and get it back, and the
/// record's class is never taken from a field.
@usableFromInline package enum FieldKey {
    /// The member name for the field key `key`.
    @inline(__always)
    @inlinable package static func stored(_ key: String) -> String {
        needsEscape(key) ? "~" + key : key
    }

    /// The class member's key, `object`, as bytes.
    @usableFromInline static let classKey: [UInt8] = Array("object".utf8)

    /// `body` given the class member's key as bytes, from constant memory (no lazy global to
    /// check on each use, as `classKey` has).
    @inline(__always)
    @inlinable package static func withClassKey<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        let key: StaticString = "object"
        return body(UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
    }

    /// `needsEscape` for a key's UTF-8 bytes: the rule, in one place.
    @inline(__always)
    @inlinable package static func needsEscape(_ key: UnsafeRawBufferPointer) -> Bool {
        guard key.count >= 6, key[key.count - 1] == UInt8(ascii: "t") else { return false }
        let suffix = key.count - 6
        for index in 0..<6 where key[suffix + index] != classKey[index] { return false }
        for index in 0..<suffix where key[index] != UInt8(ascii: "~") { return false }
        return true
    }

    /// Whether `key` is `object` preceded by zero or more `~`.
    @inline(__always)
    @inlinable static func needsEscape(_ key: String) -> Bool {
        var key = key
        return key.withUTF8 { needsEscape(UnsafeRawBufferPointer($0)) }
    }
}

extension FieldKey {
    /// The field key stored as the member name `stored` (the inverse of `stored(_:)`). The
    /// member `object` itself is the class name, not a field.
    @inlinable package static func field(fromStored stored: String) -> String {
        stored.utf8.first == UInt8(ascii: "~") && needsEscape(stored) ? String(stored.dropFirst()) : stored
    }
}
