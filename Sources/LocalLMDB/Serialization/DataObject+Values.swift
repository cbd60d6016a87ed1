import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

// Values beyond SwiftLocal's five kinds: any `Encodable`/`Decodable` value (`UUID`, `URL`,
// `Data`, `Decimal`, `Int64`, `UInt64`, `Float`, enums, `[String: V]`, `Codable` structs), and
// enums with raw values. Each is stored in the form `CodableValues.swift` lists, the form the
// `Codable` encoder gives the same value in a model, so hand-written and `Codable` models read
// each other's fields. Reading keeps SwiftLocal's rule: a missing or mistyped field gives nil or
// the `onFail:` value.

extension DataObject {
    /// Stores any `Encodable` value under `key` (see the value forms in <doc:StoredValues>).
    /// A value that cannot be stored (its `encode(to:)` throws, or a date that is not finite)
    /// makes writing this data object throw `LocalDatabaseError.unencodableValue`, naming `key`.
    @discardableResult public func add<T: Encodable>(key: String, value: T) -> Self {
        do {
            return set(key, try ModelEncoder.jsonValue(of: value, at: key))
        } catch {
            return set(key, .unencodable(reason: "\(error)"))
        }
    }

    /// Stores an optional `Encodable` value under `key` (`null` when nil).
    @discardableResult public func add<T: Encodable>(key: String, value: T?) -> Self {
        guard let value else { return set(key, .null) }
        return add(key: key, value: value)
    }

    /// Stores an enum's raw value (or any `RawRepresentable`'s) under `key`.
    @discardableResult public func add<T: RawRepresentable>(key: String, value: T) -> Self where T.RawValue: Encodable {
        add(key: key, value: value.rawValue)
    }

    /// The `Decodable` value under `key` (or the first of `legacyKeys` present); nil when it is
    /// missing or cannot be decoded as `T`.
    public func get<T: Decodable>(_ key: String, legacyKeys: [String] = []) -> T? {
        let object = encodedStorage
        guard let member = member(key, legacyKeys, in: object) else { return nil }
        let decoder = ModelDecoder(value: object, codingPath: [], dates: .stored)
        defer { decoder.end() }  // The bytes may be borrowed: nothing may read them later.
        return try? decoder.decode(T.self, at: member.value, key: ModelKey(stringValue: key))
    }

    /// The `Decodable` value under `key` (or the first of `legacyKeys` present); `onFail` when it
    /// is missing or cannot be decoded as `T`.
    public func get<T: Decodable>(_ key: String, onFail: T, legacyKeys: [String] = []) -> T {
        get(key, legacyKeys: legacyKeys) ?? onFail
    }

    /// The enum (or other `RawRepresentable`) whose raw value is under `key`; nil when it is
    /// missing, mistyped, or no case has that raw value.
    public func get<T: RawRepresentable>(_ key: String, legacyKeys: [String] = []) -> T? where T.RawValue: Decodable {
        (get(key, legacyKeys: legacyKeys) as T.RawValue?).flatMap(T.init(rawValue:))
    }

    /// The enum (or other `RawRepresentable`) whose raw value is under `key`; `onFail` when it is
    /// missing, mistyped, or no case has that raw value.
    public func get<T: RawRepresentable>(_ key: String, onFail: T, legacyKeys: [String] = []) -> T where T.RawValue: Decodable {
        get(key, legacyKeys: legacyKeys) ?? onFail
    }
}

// A value that is two of these kinds at once would match two overloads equally; these choose.

extension DataObject {
    /// Stores a nested `Storable` object that is also `Encodable` as a `Storable` one.
    @discardableResult public func add<T: Storable & Encodable>(key: String, value: T) -> Self {
        nesting(key) { setObject(key, value.toDataObject()) }
    }

    /// Stores an optional nested `Storable` object that is also `Encodable` as a `Storable` one.
    @discardableResult public func add<T: Storable & Encodable>(key: String, value: T?) -> Self {
        nesting(key) { value.map { setObject(key, $0.toDataObject()) } ?? set(key, .null) }
    }

    /// Stores an array of nested `Storable` objects that are also `Encodable` as `Storable` ones.
    @discardableResult public func add<T: Storable & Encodable>(key: String, value: [T]) -> Self {
        nesting(key) { setObjects(key, value.map { $0.toDataObject() }) }
    }

    /// Stores an array of optional nested `Storable` objects that are also `Encodable`.
    @discardableResult public func add<T: Storable & Encodable>(key: String, value: [T?]) -> Self {
        nesting(key) { setObjects(key, value.map { $0?.toDataObject() }) }
    }

    /// Stores an enum with a raw value that is also `Encodable` by its raw value.
    @discardableResult public func add<T: RawRepresentable & Encodable>(key: String, value: T) -> Self where T.RawValue: Encodable {
        add(key: key, value: value.rawValue)
    }

    /// The enum with a raw value that is also `Decodable` under `key`, by its raw value.
    public func get<T: RawRepresentable & Decodable>(_ key: String, legacyKeys: [String] = []) -> T? where T.RawValue: Decodable {
        (get(key, legacyKeys: legacyKeys) as T.RawValue?).flatMap(T.init(rawValue:))
    }

    /// The enum with a raw value that is also `Decodable` under `key`; `onFail` when missing.
    public func get<T: RawRepresentable & Decodable>(_ key: String, onFail: T, legacyKeys: [String] = []) -> T where T.RawValue: Decodable {
        get(key, legacyKeys: legacyKeys) ?? onFail
    }
}
