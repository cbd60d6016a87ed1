import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

// The writes the macros' generated `_writeFields(to:)` calls, one per stored property, chosen by
// the compiler from the property's type. Each stores exactly what the `Codable` encoder stores
// for the same value (`ModelEncoder`): the value kinds `DataObject` writes itself go straight
// into the object's JSON; a nested `StoredValue` is written by its own generated code; any other
// `Encodable` value goes through the `Codable` encoder. Every one is declared `throws`, so the
// generated code writes `try` before each call whatever the property's type. Not for calling by
// hand.

extension DataObject {
    /// Stores a `String` field (generated code).
    public func _write(_ value: String, forKey key: String) throws { _ = setScalar(key, value) }
    /// Stores an `Int` field (generated code).
    public func _write(_ value: Int, forKey key: String) throws { _ = setScalar(key, value) }
    /// Stores a `Double` field (generated code).
    public func _write(_ value: Double, forKey key: String) throws { _ = setScalar(key, value) }
    /// Stores a `Bool` field (generated code).
    public func _write(_ value: Bool, forKey key: String) throws { _ = setScalar(key, value) }
    /// Stores a `Date` field (generated code).
    public func _write(_ value: Date, forKey key: String) throws { _ = setScalar(key, value) }
    /// Stores a `[String]` field (generated code).
    public func _write(_ value: [String], forKey key: String) throws { _ = setArray(key, value) }
    /// Stores an `[Int]` field (generated code).
    public func _write(_ value: [Int], forKey key: String) throws { _ = setArray(key, value) }
    /// Stores a `[Double]` field (generated code).
    public func _write(_ value: [Double], forKey key: String) throws { _ = setArray(key, value) }
    /// Stores a `[Bool]` field (generated code).
    public func _write(_ value: [Bool], forKey key: String) throws { _ = setArray(key, value) }

    /// Stores any other `Encodable` field (generated code): a nested `StoredValue` by its
    /// generated code, anything else through the `Codable` encoder. (One generic entry point, as
    /// for reads.)
    public func _write<T: Encodable>(_ value: T, forKey key: String) throws {
        if let optional = value as? any OptionalProtocol {
            // An optional whose type the macro could not see as one (a type alias, `(Int?)`):
            // written as synthesized `Codable` writes it, which sees the type (`encodeIfPresent`).
            guard let wrapped = optional.wrappedValue as? any Encodable else { return }
            func writeWrapped<U: Encodable>(_ value: U) throws { try _writeIfPresent(Optional(value), forKey: key) }
            return try writeWrapped(wrapped)
        }
        if let value = value as? any StoredValue {
            try writeStoredValue(value, forKey: key)
        } else {
            _ = set(key, try ModelEncoder.jsonValue(of: value, at: key))
        }
    }

    /// A nested `StoredValue`: a `StoredModel` with its class name, as the `Codable` encoder
    /// stores a nested model; any other as a plain object of its fields.
    private func writeStoredValue<T: StoredValue>(_ value: T, forKey key: String) throws {
        guard !CodecScratch.current.stackIsLow else {
            throw EncodingError.invalidValue(value, .init(codingPath: [ModelKey(stringValue: key)], debugDescription: StackGuard.refusal))
        }
        let child: DataObject
        do {
            if let model = value as? any Persistable {
                child = try model._storedFields()
            } else {
                child = DataObject(plainObject: ())
                try value._writeFields(to: child)
            }
        } catch {
            // The nested value's own writes name paths of their own: put them below `key`.
            throw ModelCoding.prefixing(error, with: [ModelKey(stringValue: key)])
        }
        _ = setObject(key, child)
    }

    /// Stores an optional `String` field when it holds a value, as `encodeIfPresent` does.
    public func _writeIfPresent(_ value: String?, forKey key: String) throws { if let value { try _write(value, forKey: key) } }
    /// Stores an optional `Int` field when it holds a value, as `encodeIfPresent` does.
    public func _writeIfPresent(_ value: Int?, forKey key: String) throws { if let value { try _write(value, forKey: key) } }
    /// Stores an optional `Double` field when it holds a value, as `encodeIfPresent` does.
    public func _writeIfPresent(_ value: Double?, forKey key: String) throws { if let value { try _write(value, forKey: key) } }
    /// Stores an optional `Bool` field when it holds a value, as `encodeIfPresent` does.
    public func _writeIfPresent(_ value: Bool?, forKey key: String) throws { if let value { try _write(value, forKey: key) } }
    /// Stores an optional `Date` field when it holds a value, as `encodeIfPresent` does.
    public func _writeIfPresent(_ value: Date?, forKey key: String) throws { if let value { try _write(value, forKey: key) } }
    /// Stores any other optional `Encodable` field when it holds a value, as `encodeIfPresent`
    /// does (an optional holding a nil optional is refused, as the `Codable` encoder refuses it).
    public func _writeIfPresent<T: Encodable>(_ value: T?, forKey key: String) throws {
        guard let value else { return }
        if let optional = value as? any NestedOptional, optional.isNone {
            throw NestedOptionals.refusal([ModelKey(stringValue: key)])
        }
        try _write(value, forKey: key)
    }
}
