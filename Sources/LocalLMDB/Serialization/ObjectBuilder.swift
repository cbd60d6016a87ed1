import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// A data object's fields as they are added, written straight into JSON: adding a field
/// writes its member, with no tree of values built and copied on the way (the tree cost a
/// reference count on every value, twice, and a copy of every field to write it).
///
/// It takes what it can write exactly as the tree would (`JSONObject`): a key of printable
/// ASCII that needs no escape, in JSON or as a field key (`FieldKey`), and is not already
/// there, and a value that can be written; at most `maxMembers` fields. `add` refuses anything
/// else, changing nothing, and the data object then turns the fields into a tree and goes on
/// there. Two such keys are equal as Swift strings exactly when their bytes are.
///
/// Invariant: the output is `{`, the class member (when the object has a class: a nested value
/// of a `StoredValue` type has none), then one member per added field, each key once, members
/// separated by commas; with a closing `}` it is a JSON object that `JSONValidator` accepts.
final class ObjectBuilder {
    // Exclusivity is not checked at run time on these two (the checks cost more than the
    // writes): a builder belongs to one data object, which is not Sendable, and no access is
    // held across a call that could reach this builder again (`DataObject.setObject` never
    // nests a data object in itself).
    @exclusivity(unchecked) private var writer = JSONWriter()
    /// Where each field's key lies in the output, for finding a repeated key.
    @exclusivity(unchecked) private var keys = KeyPositions()
    /// The stored class name; nil for a plain nested object.
    let className: String?
    /// Whether the output has a member yet (the next one follows a comma).
    @exclusivity(unchecked) private var hasMembers: Bool

    /// Beyond this many fields a data object is a tree, whose index finds keys in constant time.
    static let maxMembers = 32

    init(className: String?) {
        self.className = className
        hasMembers = className != nil
        _ = writer.open(UInt8(ascii: "{"))
        if let className {
            writer.write(key: DataObject.classNameKey)
            writer.write(literal: ":")
            writer.write(className)
        }
    }

    /// The deepest nesting in the output, counting the object itself.
    var levels: Int { writer.deepest }

    /// Adds the field `key` with the value `write` writes; false, with nothing changed, when
    /// the builder does not take it (see the type's documentation).
    @inline(__always)
    func add(_ key: String, _ write: (inout JSONWriter) -> Void) -> Bool {
        guard keys.count < Self.maxMembers else { return false }
        var key = key
        return key.withUTF8 { utf8 in
            let key = UnsafeRawBufferPointer(utf8)
            let keyStart = writer.byteCount + (hasMembers ? 2 : 1)  // After `,"` or `"`.
            guard JSONGrammar.isPlain(key), !FieldKey.needsEscape(key), KeyPositions.fits(start: keyStart, count: key.count),
                  !contains(key) else { return false }
            let mark = writer.mark
            if hasMembers { writer.write(literal: ",\"") } else { writer.write(literal: "\"") }
            writer.write(raw: key)
            writer.write(literal: "\":")
            write(&writer)
            if writer.failed {
                writer.truncate(to: mark)
                return false
            }
            keys.append(start: keyStart, count: key.count)
            hasMembers = true
            return true
        }
    }

    /// Adds the field `key` holding `value`.
    func add(_ key: String, _ value: JSONValue) -> Bool {
        add(key) { $0.write(value) }
    }

    /// Calls `body` with the object's JSON.
    func withJSON<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        writer.write(byte: UInt8(ascii: "}"))
        defer { writer.dropLast() }
        return writer.withOutput { body(UnsafeRawBufferPointer($0)) }
    }

    private func contains(_ key: UnsafeRawBufferPointer) -> Bool {
        writer.withOutput { output in
            let output = UnsafeRawBufferPointer(output)
            for index in 0..<keys.count {
                let (start, count) = keys[index]
                if count == key.count, UnsafeRawBufferPointer(rebasing: output[start..<(start + count)]).hasSameBytes(as: key) {
                    return true
                }
            }
            return false
        }
    }
}

/// Where the keys of an `ObjectBuilder`'s fields lie in its output: the first 16 in the
/// builder itself, so that building a typical model's data object allocates no table, the
/// rest in an array. Each is a start and a length of at most 2³² − 1, packed in one word.
private struct KeyPositions {
    private typealias Slots = (
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64
    )
    private var slots: Slots = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    private static let slotCount = 16
    private var overflow: [UInt64] = []
    private(set) var count = 0

    /// Whether a key at `start`, of `count` bytes, can be recorded.
    static func fits(start: Int, count: Int) -> Bool {
        start <= Int(UInt32.max) && count <= Int(UInt32.max)
    }

    /// Records a key (which must `fit`).
    mutating func append(start: Int, count keyCount: Int) {
        let packed = UInt64(truncatingIfNeeded: start) << 32 | UInt64(truncatingIfNeeded: keyCount)
        if count < Self.slotCount {
            let offset = count * MemoryLayout<UInt64>.stride
            withUnsafeMutableBytes(of: &slots) { $0.storeBytes(of: packed, toByteOffset: offset, as: UInt64.self) }
        } else {
            overflow.append(packed)
        }
        count += 1
    }

    /// The start and length of the key at `index`.
    subscript(index: Int) -> (start: Int, count: Int) {
        let packed = index < Self.slotCount
            ? withUnsafeBytes(of: slots) { $0.load(fromByteOffset: index * MemoryLayout<UInt64>.stride, as: UInt64.self) }
            : overflow[index - Self.slotCount]
        return (Int(packed >> 32), Int(packed & 0xFFFF_FFFF))
    }
}
