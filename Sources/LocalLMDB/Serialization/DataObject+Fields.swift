import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

// The typed `add` and `get` overloads. Each forwards to one of the generic helpers at the end
// of this file, so the conversion rules live in `JSONScalar` alone.

extension DataObject {
    /// Stores a `String` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: String) -> Self { setScalar(key, value) }
    /// Stores an optional `String` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: String?) -> Self { set(key, optional(value)) }
    /// Stores an array of `String` under `key`.
    @discardableResult public func add(key: String, value: [String]) -> Self { setArray(key, value) }
    /// Stores an array of optional `String` under `key` (nil elements as `null`).
    @discardableResult public func add(key: String, value: [String?]) -> Self { set(key, .array(value.map(optional))) }

    /// Stores a `Int` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: Int) -> Self { setScalar(key, value) }
    /// Stores an optional `Int` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: Int?) -> Self { set(key, optional(value)) }
    /// Stores an array of `Int` under `key`.
    @discardableResult public func add(key: String, value: [Int]) -> Self { setArray(key, value) }
    /// Stores an array of optional `Int` under `key` (nil elements as `null`).
    @discardableResult public func add(key: String, value: [Int?]) -> Self { set(key, .array(value.map(optional))) }

    /// Stores a `Double` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: Double) -> Self { setScalar(key, value) }
    /// Stores an optional `Double` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: Double?) -> Self { set(key, optional(value)) }
    /// Stores an array of `Double` under `key`.
    @discardableResult public func add(key: String, value: [Double]) -> Self { setArray(key, value) }
    /// Stores an array of optional `Double` under `key` (nil elements as `null`).
    @discardableResult public func add(key: String, value: [Double?]) -> Self { set(key, .array(value.map(optional))) }

    /// Stores a `Bool` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: Bool) -> Self { setScalar(key, value) }
    /// Stores an optional `Bool` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: Bool?) -> Self { set(key, optional(value)) }
    /// Stores an array of `Bool` under `key`.
    @discardableResult public func add(key: String, value: [Bool]) -> Self { setArray(key, value) }
    /// Stores an array of optional `Bool` under `key` (nil elements as `null`).
    @discardableResult public func add(key: String, value: [Bool?]) -> Self { set(key, .array(value.map(optional))) }

    /// Stores a `Date` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: Date) -> Self { setScalar(key, value) }
    /// Stores an optional `Date` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: Date?) -> Self { set(key, optional(value)) }
    /// Stores an array of `Date` under `key`.
    @discardableResult public func add(key: String, value: [Date]) -> Self { setArray(key, value) }
    /// Stores an array of optional `Date` under `key` (nil elements as `null`).
    @discardableResult public func add(key: String, value: [Date?]) -> Self { set(key, .array(value.map(optional))) }
}

extension DataObject {
    /// The `String` under `key` (or the first of `legacyKeys` present); `onFail` when missing or mistyped.
    public func get(_ key: String, onFail: String = "", legacyKeys: [String] = []) -> String {
        scalar(key, legacyKeys) ?? onFail
    }
    /// The `String` under `key` (or the first of `legacyKeys` present); nil when missing or mistyped.
    public func get(_ key: String, legacyKeys: [String] = []) -> String? { scalar(key, legacyKeys) }
    /// The `String` array under `key`; `[]` when missing or not an array. Mistyped elements are left out.
    public func get(_ key: String, legacyKeys: [String] = []) -> [String] { array(key, legacyKeys) }
    /// The optional-`String` array under `key`; `[]` when missing. `null` and mistyped elements are nil.
    public func get(_ key: String, legacyKeys: [String] = []) -> [String?] { optionalArray(key, legacyKeys) }

    /// The `Int` under `key` (or the first of `legacyKeys` present); `onFail` when missing or mistyped.
    public func get(_ key: String, onFail: Int = 0, legacyKeys: [String] = []) -> Int {
        scalar(key, legacyKeys) ?? onFail
    }
    /// The `Int` under `key` (or the first of `legacyKeys` present); nil when missing or mistyped.
    public func get(_ key: String, legacyKeys: [String] = []) -> Int? { scalar(key, legacyKeys) }
    /// The `Int` array under `key`; `[]` when missing or not an array. Mistyped elements are left out.
    public func get(_ key: String, legacyKeys: [String] = []) -> [Int] { array(key, legacyKeys) }
    /// The optional-`Int` array under `key`; `[]` when missing. `null` and mistyped elements are nil.
    public func get(_ key: String, legacyKeys: [String] = []) -> [Int?] { optionalArray(key, legacyKeys) }

    /// The `Double` under `key` (or the first of `legacyKeys` present); `onFail` when missing or mistyped.
    public func get(_ key: String, onFail: Double = 0.0, legacyKeys: [String] = []) -> Double {
        scalar(key, legacyKeys) ?? onFail
    }
    /// The `Double` under `key` (or the first of `legacyKeys` present); nil when missing or mistyped.
    public func get(_ key: String, legacyKeys: [String] = []) -> Double? { scalar(key, legacyKeys) }
    /// The `Double` array under `key`; `[]` when missing or not an array. Mistyped elements are left out.
    public func get(_ key: String, legacyKeys: [String] = []) -> [Double] { array(key, legacyKeys) }
    /// The optional-`Double` array under `key`; `[]` when missing. `null` and mistyped elements are nil.
    public func get(_ key: String, legacyKeys: [String] = []) -> [Double?] { optionalArray(key, legacyKeys) }

    /// The `Bool` under `key` (or the first of `legacyKeys` present); `onFail` when missing or mistyped.
    public func get(_ key: String, onFail: Bool = false, legacyKeys: [String] = []) -> Bool {
        scalar(key, legacyKeys) ?? onFail
    }
    /// The `Bool` under `key` (or the first of `legacyKeys` present); nil when missing or mistyped.
    public func get(_ key: String, legacyKeys: [String] = []) -> Bool? { scalar(key, legacyKeys) }
    /// The `Bool` array under `key`; `[]` when missing or not an array. Mistyped elements are left out.
    public func get(_ key: String, legacyKeys: [String] = []) -> [Bool] { array(key, legacyKeys) }
    /// The optional-`Bool` array under `key`; `[]` when missing. `null` and mistyped elements are nil.
    public func get(_ key: String, legacyKeys: [String] = []) -> [Bool?] { optionalArray(key, legacyKeys) }

    /// The `Date` under `key` (or the first of `legacyKeys` present); `onFail` when missing or mistyped.
    public func get(_ key: String, onFail: Date = Date(), legacyKeys: [String] = []) -> Date {
        scalar(key, legacyKeys) ?? onFail
    }
    /// The `Date` under `key` (or the first of `legacyKeys` present); nil when missing or mistyped.
    public func get(_ key: String, legacyKeys: [String] = []) -> Date? { scalar(key, legacyKeys) }
    /// The `Date` array under `key`; `[]` when missing or not an array. Mistyped elements are left out.
    public func get(_ key: String, legacyKeys: [String] = []) -> [Date] { array(key, legacyKeys) }
    /// The optional-`Date` array under `key`; `[]` when missing. `null` and mistyped elements are nil.
    public func get(_ key: String, legacyKeys: [String] = []) -> [Date?] { optionalArray(key, legacyKeys) }
}

// Reading fields in place. A lookup walks the members from `nextMember` round to where it
// started; after a value whose end the reader found, the next lookup starts at the member after
// it, so reading fields in the order they were written never walks back. (The walk itself is
// `EncodedObject`'s: this object's stored properties are touched once per lookup, as each
// touch of a class's property costs an exclusivity check.)
extension DataObject {
    /// The bytes to read fields from (`encodedStorage`'s), without copying the storage's
    /// owner: valid while `storage` is unchanged, which it keeps alive. Only for reads that
    /// run no code of the model's (which could change `storage`) while they use the bytes.
    @inline(__always)
    var storageBytes: UnsafeRawBufferPointer {
        if case let .encoded(encoded) = storage { return encoded.bytes }
        return encodedStorage.bytes
    }

    /// Where the value of the member named `key` (or of the first of `legacyKeys` present)
    /// starts, as `member` finds it; `scanner` reads `encodedStorage`. The common case, the
    /// member where the next lookup starts spelled as `key`, is answered here, inlined into the
    /// typed readers, with no call.
    @inline(__always)
    func memberValue(_ key: String, _ legacyKeys: [String], in scanner: JSONScanner) -> Int? {
        if let probe { probe.note(key, legacyKeys) }
        // `member` would find this member first, and leave `nextMember` where it is.
        if let next = nextMember ?? firstLookup(in: scanner), let found = Self.member(at: next, spelled: key, escaped: true, in: scanner) {
            return found.value
        }
        return member(key, legacyKeys, in: encodedStorage)?.value
    }

    /// Where the first lookup in `scanner`'s object starts, noted in `nextMember`: past the
    /// class member when it comes first (a model's fields follow it), else at the first member;
    /// nil when there is no member there. Starting the general walk there rather than at the
    /// first member finds the same member: keys are unique, and the walk goes round.
    @inline(never)
    func firstLookup(in scanner: JSONScanner) -> Int? {
        let start = Self.firstLookupStart(in: scanner)
        nextMember = start
        return start
    }

    /// Where the first lookup in `scanner`'s object starts (see `firstLookup(in:)`), for every
    /// reader of an object's fields (`ModelDecoder` too).
    @inline(__always)
    static func firstLookupStart(in scanner: JSONScanner) -> Int? {
        guard let first = scanner.firstMember(ofObjectAt: 0) else { return nil }
        guard let classMember = classMember(at: first, in: scanner) else { return first }
        return scanner.nextMember(after: scanner.end(ofValueAt: classMember.value))
    }

    /// The member at `offset` when it is the class member (`"object"`).
    @inline(__always)
    static func classMember(at offset: Int, in scanner: JSONScanner) -> JSONScanner.Member? {
        FieldKey.withClassKey { scanner.member(at: offset, spelled: $0) }
    }

    /// The member named `key` or, failing that, each of `legacyKeys` in turn.
    /// `escaped`: keys are field keys, stored as `FieldKey` spells them (false for JSON from
    /// elsewhere, whose members are named as they are).
    @inline(never)
    func member(_ key: String, _ legacyKeys: [String], in object: EncodedObject, escaped: Bool = true) -> JSONScanner.Member? {
        if escaped, let probe { probe.note(key, legacyKeys) }
        if let found = nextMemberSpelled(key, in: object, escaped: escaped) {
            nextMember = found.start
            return found
        }
        let start = nextMember
        var found = object.member(named: escaped ? FieldKey.stored(key) : key, from: start)
        if found == nil {
            for legacyKey in legacyKeys {
                found = object.member(named: escaped ? FieldKey.stored(legacyKey) : legacyKey, from: start)
                if found != nil { break }
            }
        }
        if let found { nextMember = found.start }
        return found
    }

    /// The member where the next lookup starts when its key's bytes are exactly `key`'s: the
    /// common case, fields read in the order they were written, found by comparing bytes.
    private func nextMemberSpelled(_ key: String, in object: EncodedObject, escaped: Bool) -> JSONScanner.Member? {
        let scanner = object.scanner
        guard let start = nextMember ?? firstLookup(in: scanner) else { return nil }
        return Self.member(at: start, spelled: key, escaped: escaped, in: scanner)
    }

    /// The member at `start` when its key's bytes are exactly `key`'s (as `FieldKey` stores
    /// it when `escaped`). Only for a key with no `"` or `\\` (either could make the bytes
    /// after a shorter key look like it) that `FieldKey` leaves as it is; nil for any other
    /// key, which takes the general walk. The JSON spells a key holding neither byte for byte,
    /// or not at all, so an exact match is the member (keys are unique in an object read in
    /// place); a key spelled with escapes, or as another canonically equivalent string, is a
    /// miss.
    @inline(__always)
    static func member(at start: Int, spelled key: String, escaped: Bool, in scanner: JSONScanner) -> JSONScanner.Member? {
        let found = key.utf8.withContiguousStorageIfAvailable { utf8 -> JSONScanner.Member? in
            let name = UnsafeRawBufferPointer(utf8)
            guard !name.isEmpty, !JSONGrammar.containsQuoteOrBackslash(name), !(escaped && FieldKey.needsEscape(name)) else { return nil }
            return scanner.member(at: start, spelled: name)
        }
        return found ?? nil
    }

    /// Notes that the value just read ended at `end`: the next lookup starts after it.
    func didRead(upTo end: Int, in object: EncodedObject) {
        nextMember = object.scanner.nextMember(after: end)
    }

    /// Stores `value` under `key`.
    func setScalar<V: JSONScalar>(_ key: String, _ value: V) -> Self {
        set(key, writing: { value.write(to: &$0) }, else: { value.jsonValue })
    }

    /// Stores `values` under `key`, as an array.
    func setArray<V: JSONScalar>(_ key: String, _ values: [V]) -> Self {
        set(key, writing: { writer in
            guard writer.open(UInt8(ascii: "[")) else { return }
            for index in values.indices {
                if index > 0 { writer.write(byte: UInt8(ascii: ",")) }
                values[index].write(to: &writer)
            }
            writer.close(UInt8(ascii: "]"))
        }, else: { .array(values.map(\.jsonValue)) })
    }

    func optional<V: JSONScalar>(_ value: V?) -> JSONValue {
        value?.jsonValue ?? .null
    }

    func scalar<V: JSONScalar>(_ key: String, _ legacyKeys: [String]) -> V? {
        // `V.read` runs no model code: the bytes stay valid.
        let scanner = JSONScanner(storageBytes)
        guard let value = memberValue(key, legacyKeys, in: scanner),
              let (value, end) = scanner.read(V.self, at: value) else { return nil }
        nextMember = scanner.nextMember(after: end)
        return value
    }

    // The two readers of arrays of values loop over the elements themselves, with no closure
    // per element: `V.read` runs no model code, so they read the storage's bytes in place.

    func array<V: JSONScalar>(_ key: String, _ legacyKeys: [String]) -> [V] {
        let scanner = JSONScanner(storageBytes)
        guard let array = memberValue(key, legacyKeys, in: scanner),
              scanner.byte(at: array) == UInt8(ascii: "[") else { return [] }
        var values: [V] = []
        values.reserveCapacity(scanner.elementCount(ofArrayAt: array))
        var next = scanner.firstElement(ofArrayAt: array)
        var end = array + 2  // `[]`
        while let element = next {
            let elementEnd: Int
            if let (value, valueEnd) = scanner.read(V.self, at: element) {
                values.append(value)
                elementEnd = valueEnd
            } else {
                elementEnd = scanner.end(ofValueAt: element)
            }
            next = scanner.element(after: elementEnd, arrayEnd: &end)
        }
        nextMember = scanner.nextMember(after: end)
        return values
    }

    func optionalArray<V: JSONScalar>(_ key: String, _ legacyKeys: [String]) -> [V?] {
        let scanner = JSONScanner(storageBytes)
        guard let array = memberValue(key, legacyKeys, in: scanner),
              scanner.byte(at: array) == UInt8(ascii: "[") else { return [] }
        var values: [V?] = []
        values.reserveCapacity(scanner.elementCount(ofArrayAt: array))
        var next = scanner.firstElement(ofArrayAt: array)
        var end = array + 2  // `[]`
        while let element = next {
            let read = scanner.read(V.self, at: element)
            values.append(read?.value)
            next = scanner.element(after: read?.end ?? scanner.end(ofValueAt: element), arrayEnd: &end)
        }
        nextMember = scanner.nextMember(after: end)
        return values
    }

    /// Calls `body` with each element of the array under `key`; nothing when it is missing or
    /// not an array. `body` returns where the element ended, or nil when it does not know.
    /// `reserve` is told the number of elements first, so a result is allocated once, at its
    /// size. `scanner` reads `encodedStorage`, whose bytes the caller keeps alive (by holding
    /// the storage's owner when `body` runs code that could change the storage).
    func forEachElement(
        _ key: String, _ legacyKeys: [String], in scanner: JSONScanner, reserving reserve: (Int) -> Void,
        _ body: (Int) -> Int?
    ) {
        guard let array = memberValue(key, legacyKeys, in: scanner),
              scanner.byte(at: array) == UInt8(ascii: "[") else { return }
        reserve(scanner.elementCount(ofArrayAt: array))
        var next = scanner.firstElement(ofArrayAt: array)
        var end = array + 2  // `[]`
        while let element = next {
            next = scanner.element(after: body(element) ?? scanner.end(ofValueAt: element), arrayEnd: &end)
        }
        // `body` ran models' initializers, which may have changed this object's storage: a
        // place found in the old bytes would mean nothing in new ones. The next lookup starts
        // afresh.
        nextMember = nil
    }
}
