import Foundation

// The typed `add` and `get` overloads. Each forwards to one of the generic helpers at the end
// of this file, so the conversion rules live in `JSONScalar` alone.

extension DataObject {
    /// Stores a `String` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: String) -> Self { set(key, value.jsonValue) }
    /// Stores an optional `String` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: String?) -> Self { set(key, optional(value)) }
    /// Stores an array of `String` under `key`.
    @discardableResult public func add(key: String, value: [String]) -> Self { set(key, .array(value.map(\.jsonValue))) }
    /// Stores an array of optional `String` under `key` (nil elements as `null`).
    @discardableResult public func add(key: String, value: [String?]) -> Self { set(key, .array(value.map(optional))) }

    /// Stores a `Int` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: Int) -> Self { set(key, value.jsonValue) }
    /// Stores an optional `Int` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: Int?) -> Self { set(key, optional(value)) }
    /// Stores an array of `Int` under `key`.
    @discardableResult public func add(key: String, value: [Int]) -> Self { set(key, .array(value.map(\.jsonValue))) }
    /// Stores an array of optional `Int` under `key` (nil elements as `null`).
    @discardableResult public func add(key: String, value: [Int?]) -> Self { set(key, .array(value.map(optional))) }

    /// Stores a `Double` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: Double) -> Self { set(key, value.jsonValue) }
    /// Stores an optional `Double` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: Double?) -> Self { set(key, optional(value)) }
    /// Stores an array of `Double` under `key`.
    @discardableResult public func add(key: String, value: [Double]) -> Self { set(key, .array(value.map(\.jsonValue))) }
    /// Stores an array of optional `Double` under `key` (nil elements as `null`).
    @discardableResult public func add(key: String, value: [Double?]) -> Self { set(key, .array(value.map(optional))) }

    /// Stores a `Bool` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: Bool) -> Self { set(key, value.jsonValue) }
    /// Stores an optional `Bool` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: Bool?) -> Self { set(key, optional(value)) }
    /// Stores an array of `Bool` under `key`.
    @discardableResult public func add(key: String, value: [Bool]) -> Self { set(key, .array(value.map(\.jsonValue))) }
    /// Stores an array of optional `Bool` under `key` (nil elements as `null`).
    @discardableResult public func add(key: String, value: [Bool?]) -> Self { set(key, .array(value.map(optional))) }

    /// Stores a `Date` under `key`, replacing any value there.
    @discardableResult public func add(key: String, value: Date) -> Self { set(key, value.jsonValue) }
    /// Stores an optional `Date` under `key` (`null` when nil).
    @discardableResult public func add(key: String, value: Date?) -> Self { set(key, optional(value)) }
    /// Stores an array of `Date` under `key`.
    @discardableResult public func add(key: String, value: [Date]) -> Self { set(key, .array(value.map(\.jsonValue))) }
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

extension DataObject {
    func set(_ key: String, _ value: JSONValue) -> Self {
        object.set(key, value)
        return self
    }

    func optional<V: JSONScalar>(_ value: V?) -> JSONValue {
        value?.jsonValue ?? .null
    }

    func scalar<V: JSONScalar>(_ key: String, _ legacyKeys: [String]) -> V? {
        value(key, legacyKeys: legacyKeys).flatMap(V.init(jsonValue:))
    }

    func array<V: JSONScalar>(_ key: String, _ legacyKeys: [String]) -> [V] {
        guard case let .array(elements) = value(key, legacyKeys: legacyKeys) else { return [] }
        return elements.compactMap(V.init(jsonValue:))
    }

    func optionalArray<V: JSONScalar>(_ key: String, _ legacyKeys: [String]) -> [V?] {
        guard case let .array(elements) = value(key, legacyKeys: legacyKeys) else { return [] }
        return elements.map(V.init(jsonValue:))
    }
}
