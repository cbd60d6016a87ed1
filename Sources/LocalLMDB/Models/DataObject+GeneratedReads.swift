import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

// The reads the macros' generated `init(_storedFields:)` calls, one per stored property, chosen
// by the compiler from the property's type. Each reads exactly what the `Codable` decoder
// (`ModelDecoder`) reads for the same type, and fails as it does: a missing field, a field of
// another kind, or `null` for a value that is not optional throws a `DecodingError` naming the
// field. The value kinds `DataObject` reads itself are read in place; a nested `StoredValue` by
// its own generated code; any other `Decodable` value through the `Codable` decoder.
//
// Three forms each: `_read(_:)` (the field must be there), `_read(_:default:)` (a missing field
// gives the property's declared default: a record written before the property existed), and
// `_readIfPresent(_:)` (an optional: a missing field or `null` is nil, as `decodeIfPresent`
// reads it). The type read is the property's, inferred from the assignment: the generated code
// names no type, so it means what the declaration means wherever it is expanded. Not for
// calling by hand.

extension DataObject {
    /// A `String` field (generated code).
    public func _read(_ key: String) throws -> String { try required(key, scalar(key, false, String.read)) }
    /// A `String` field, or `defaultValue` when missing (generated code).
    public func _read(_ key: String, default defaultValue: @autoclosure () -> String) throws -> String {
        try scalar(key, false, String.read) ?? defaultValue()
    }
    /// An optional `String` field (generated code).
    public func _readIfPresent(_ key: String) throws -> String? { try scalar(key, true, String.read) }

    /// An `Int` field (generated code).
    public func _read(_ key: String) throws -> Int { try required(key, scalar(key, false, Int.read)) }
    /// An `Int` field, or `defaultValue` when missing (generated code).
    public func _read(_ key: String, default defaultValue: @autoclosure () -> Int) throws -> Int {
        try scalar(key, false, Int.read) ?? defaultValue()
    }
    /// An optional `Int` field (generated code).
    public func _readIfPresent(_ key: String) throws -> Int? { try scalar(key, true, Int.read) }

    /// A `Double` field (generated code).
    public func _read(_ key: String) throws -> Double { try required(key, scalar(key, false, Double.read)) }
    /// A `Double` field, or `defaultValue` when missing (generated code).
    public func _read(_ key: String, default defaultValue: @autoclosure () -> Double) throws -> Double {
        try scalar(key, false, Double.read) ?? defaultValue()
    }
    /// An optional `Double` field (generated code).
    public func _readIfPresent(_ key: String) throws -> Double? { try scalar(key, true, Double.read) }

    /// A `Bool` field (generated code).
    public func _read(_ key: String) throws -> Bool { try required(key, scalar(key, false, Bool.read)) }
    /// A `Bool` field, or `defaultValue` when missing (generated code).
    public func _read(_ key: String, default defaultValue: @autoclosure () -> Bool) throws -> Bool {
        try scalar(key, false, Bool.read) ?? defaultValue()
    }
    /// An optional `Bool` field (generated code).
    public func _readIfPresent(_ key: String) throws -> Bool? { try scalar(key, true, Bool.read) }

    /// A `Date` field (generated code).
    public func _read(_ key: String) throws -> Date { try required(key, date(key, false)) }
    /// A `Date` field, or `defaultValue` when missing (generated code).
    public func _read(_ key: String, default defaultValue: @autoclosure () -> Date) throws -> Date {
        try date(key, false) ?? defaultValue()
    }
    /// An optional `Date` field (generated code).
    public func _readIfPresent(_ key: String) throws -> Date? { try date(key, true) }

    /// A `[String]` field (generated code).
    public func _read(_ key: String) throws -> [String] { try required(key, array(key, false, String.read)) }
    /// A `[String]` field, or `defaultValue` when missing (generated code).
    public func _read(_ key: String, default defaultValue: @autoclosure () -> [String]) throws -> [String] {
        try array(key, false, String.read) ?? defaultValue()
    }
    /// An optional `[String]` field (generated code).
    public func _readIfPresent(_ key: String) throws -> [String]? { try array(key, true, String.read) }

    /// An `[Int]` field (generated code).
    public func _read(_ key: String) throws -> [Int] { try required(key, array(key, false, Int.read)) }
    /// An `[Int]` field, or `defaultValue` when missing (generated code).
    public func _read(_ key: String, default defaultValue: @autoclosure () -> [Int]) throws -> [Int] {
        try array(key, false, Int.read) ?? defaultValue()
    }
    /// An optional `[Int]` field (generated code).
    public func _readIfPresent(_ key: String) throws -> [Int]? { try array(key, true, Int.read) }

    /// A `[Double]` field (generated code).
    public func _read(_ key: String) throws -> [Double] { try required(key, array(key, false, Double.read)) }
    /// A `[Double]` field, or `defaultValue` when missing (generated code).
    public func _read(_ key: String, default defaultValue: @autoclosure () -> [Double]) throws -> [Double] {
        try array(key, false, Double.read) ?? defaultValue()
    }
    /// An optional `[Double]` field (generated code).
    public func _readIfPresent(_ key: String) throws -> [Double]? { try array(key, true, Double.read) }

    /// A `[Bool]` field (generated code).
    public func _read(_ key: String) throws -> [Bool] { try required(key, array(key, false, Bool.read)) }
    /// A `[Bool]` field, or `defaultValue` when missing (generated code).
    public func _read(_ key: String, default defaultValue: @autoclosure () -> [Bool]) throws -> [Bool] {
        try array(key, false, Bool.read) ?? defaultValue()
    }
    /// An optional `[Bool]` field (generated code).
    public func _readIfPresent(_ key: String) throws -> [Bool]? { try array(key, true, Bool.read) }

    /// Any other `Decodable` field (generated code): a nested `StoredValue` by its generated
    /// code, anything else through the `Codable` decoder.
    public func _read<T: Decodable>(_ key: String) throws -> T { try required(key, value(key, false, T.self)) }
    /// Any other `Decodable` field, or `defaultValue` when missing (generated code).
    public func _read<T: Decodable>(_ key: String, default defaultValue: @autoclosure () -> T) throws -> T {
        try value(key, false, T.self) ?? defaultValue()
    }
    /// Any other optional `Decodable` field (generated code).
    public func _readIfPresent<T: Decodable>(_ key: String) throws -> T? { try value(key, true, T.self) }
}

// The readers behind the generated code's calls. Each returns nil when the member is missing
// (and, with `nullIsAbsent`, when it is `null`), and throws when it holds another kind.
extension DataObject {
    @inline(__always)
    private func required<V>(_ key: String, _ value: V?) throws -> V {
        guard let value else {
            throw DecodingError.keyNotFound(ModelKey(stringValue: key), .init(codingPath: [], debugDescription: "no field '\(key)'"))
        }
        return value
    }

    /// The error for the value at `offset` of field `key` (`path` below it) that is not a `type`.
    static func mismatch(_ type: Any.Type, at offset: Int, in scanner: JSONScanner, _ path: [any CodingKey]) -> DecodingError {
        ModelCoding.mismatch(type, at: offset, in: scanner, path)
    }

    @inline(__always)
    private func scalar<V>(_ key: String, _ nullIsAbsent: Bool, _ read: (JSONScanner, Int) -> (value: V, end: Int)?) throws -> V? {
        // `read` runs no model code: the bytes stay valid.
        let scanner = JSONScanner(storageBytes)
        guard let offset = memberValue(key, [], in: scanner) else { return nil }
        if nullIsAbsent, scanner.byte(at: offset) == UInt8(ascii: "n") { return nil }
        guard let (value, end) = read(scanner, offset) else {
            throw Self.mismatch(V.self, at: offset, in: scanner, [ModelKey(stringValue: key)])
        }
        nextMember = scanner.nextMember(after: end)
        return value
    }

    private func date(_ key: String, _ nullIsAbsent: Bool) throws -> Date? {
        let scanner = JSONScanner(storageBytes)
        guard let offset = memberValue(key, [], in: scanner) else { return nil }
        let opening = scanner.byte(at: offset)
        if nullIsAbsent, opening == UInt8(ascii: "n") { return nil }
        guard let (value, end) = Date.read(scanner, at: offset) else {
            // As the `Codable` decoder words it (`ModelDecoder.date`).
            if opening == UInt8(ascii: "n") { throw Self.mismatch(Date.self, at: offset, in: scanner, [ModelKey(stringValue: key)]) }
            throw DecodingError.dataCorrupted(.init(
                codingPath: [ModelKey(stringValue: key)],
                debugDescription: "expected a date (\(DateDecoding.stored.description)), found \(ModelCoding.kind(at: offset, in: scanner))"))
        }
        nextMember = scanner.nextMember(after: end)
        return value
    }

    private func array<V>(_ key: String, _ nullIsAbsent: Bool, _ read: (JSONScanner, Int) -> (value: V, end: Int)?) throws -> [V]? {
        let scanner = JSONScanner(storageBytes)
        guard let offset = memberValue(key, [], in: scanner) else { return nil }
        if nullIsAbsent, scanner.byte(at: offset) == UInt8(ascii: "n") { return nil }
        var end = offset
        let values = try ModelCoding.array(at: offset, in: scanner, [ModelKey(stringValue: key)], arrayEnd: &end, read)
        nextMember = scanner.nextMember(after: end)
        return values
    }

    /// A value of a type with no reader of its own here. (One generic entry point: overloads for
    /// `StoredValue` and `Decodable` told apart by their result alone are ambiguous.)
    private func value<T: Decodable>(_ key: String, _ nullIsAbsent: Bool, _ type: T.Type) throws -> T? {
        if let valueType = T.self as? any StoredValue.Type {
            // A nested `StoredModel` is read as the `Codable` decoder reads a nested model (its
            // stored class name resolved), which then runs its generated code.
            if T.self is any Persistable.Type { return try decodable(key, nullIsAbsent, type) }
            guard let value = try storedValue(key, nullIsAbsent, valueType) else { return nil }
            return try ModelCoding.same(value, as: T.self)
        }
        if T.self is any OptionalProtocol.Type, let nilType = T.self as? any ExpressibleByNilLiteral.Type {
            // An optional whose type the macro could not see as one (a type alias, `(Int?)`): read
            // as synthesized `Codable` reads it, which sees the type (`decodeIfPresent`): a missing
            // field or `null` is nil.
            if let found = try decodable(key, true, type) { return found }
            return nilType.init(nilLiteral: ()) as? T
        }
        return try decodable(key, nullIsAbsent, type)
    }

    /// A nested `StoredValue` (not a model): read by its generated code, from the object in place.
    private func storedValue<T: StoredValue>(_ key: String, _ nullIsAbsent: Bool, _ type: T.Type) throws -> T? {
        let object = encodedStorage
        let scanner = object.scanner
        guard let offset = memberValue(key, [], in: scanner) else { return nil }
        let opening = scanner.byte(at: offset)
        if nullIsAbsent, opening == UInt8(ascii: "n") { return nil }
        guard opening == UInt8(ascii: "{") else { throw Self.mismatch(T.self, at: offset, in: scanner, [ModelKey(stringValue: key)]) }
        guard !CodecScratch.current.stackIsLow else {
            throw DecodingError.dataCorrupted(.init(codingPath: [ModelKey(stringValue: key)], debugDescription: StackGuard.refusal))
        }
        let value: T
        do {
            // `object` holds the bytes' owner while the value's initializer runs.
            value = try withExtendedLifetime(object) {
                try withSpareChild { spare in
                    try DataObject.restoreValue(from: object.nestedObject(at: offset), spare: &spare) { try T(_storedFields: $0) }
                }
            }
        } catch {
            throw ModelCoding.prefixing(error, with: [ModelKey(stringValue: key)])
        }
        // The next lookup starts at this member (`memberValue` left it there) and walks on, as
        // after `getObject`: finding the object's end now would scan it a second time.
        return value
    }

    /// Any `Decodable` value, as the `Codable` decoder's keyed container reads it.
    private func decodable<T: Decodable>(_ key: String, _ nullIsAbsent: Bool, _ type: T.Type) throws -> T? {
        let object = encodedStorage
        guard let member = member(key, [], in: object) else { return nil }
        if nullIsAbsent, object.scanner.byte(at: member.value) == UInt8(ascii: "n") { return nil }
        let decoder = ModelDecoder(value: object, codingPath: [], dates: .stored)
        defer { decoder.end() }  // The bytes may be borrowed: nothing may read them later.
        var end: Int?
        let value: T
        if nullIsAbsent, T.self is any ReferenceDecoding.Type {
            // An optional property's `Reference`: nil when the record it names is missing.
            let scratch = ReadScratch.current
            scratch.decodingOptionalReference = true
            defer { scratch.decodingOptionalReference = false }
            do {
                value = try withExtendedLifetime(object) { try decoder.decode(type, at: member.value, key: ModelKey(stringValue: key), end: &end) }
            } catch is MissingOptionalReference {
                return nil
            }
        } else {
            value = try withExtendedLifetime(object) { try decoder.decode(type, at: member.value, key: ModelKey(stringValue: key), end: &end) }
        }
        if let end { continueLookups(after: end, in: object) } else { nextMember = nil }
        return value
    }

    /// The next lookup starts after the value ending at `end` in `object`, when this data object
    /// still reads `object` (a model's initializer, run meanwhile, could have changed it).
    private func continueLookups(after end: Int, in object: EncodedObject) {
        if case let .encoded(current) = storage, current.bytes.baseAddress == object.bytes.baseAddress {
            nextMember = object.scanner.nextMember(after: end)
        } else {
            nextMember = nil
        }
    }
}
