import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

struct ModelSingleValueEncoding: SingleValueEncodingContainer {
    let encoder: ModelEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ value: JSONValue) {
        guard encoder.claim(.single) else { return }
        encoder.node.single = value
    }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(.double(value)) }
    mutating func encode(_ value: Float) throws { set(value.jsonValue) }
    mutating func encode(_ value: Int) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { set(.int(value)) }
    mutating func encode(_ value: UInt) throws { set(UInt64(value).jsonValue) }
    mutating func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { set(value.jsonValue) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if let optional = value as? any NestedOptional, optional.isNone {
            // `Optional.encode(to:)` passes its wrapped nil here for an optional holding a nil
            // optional (`.some(nil)`), which JSON cannot tell from nil: refused. Any other
            // value encoding a nil optional (a generic property wrapper's `wrappedValue`) is
            // `null`, as `JSONEncoder` writes it, and reads back as nil.
            if encoder.valueType == ObjectIdentifier(T?.self) { throw NestedOptionals.refusal(codingPath) }
            return set(.null)
        }
        set(try encoder.box(value, at: nil))
    }
}
