import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

struct ModelKeyedEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: ModelEncoder
    let node: EncodingNode
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ value: JSONValue, _ key: Key) {
        node.set(FieldKey.stored(key.stringValue), value)
    }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(value.jsonValue, key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(UInt64(value).jsonValue, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(value.jsonValue, key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { set(try encoder.box(value, at: key), key) }

    /// As the protocol's, but an optional holding an optional that is nil (`Int??.some(nil)`)
    /// is refused: it would be stored as `null` and read back as nil.
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        guard let value else { return }
        if let optional = value as? any NestedOptional, optional.isNone {
            throw NestedOptionals.refusal(codingPath + [key])
        }
        try encode(value, forKey: key)
    }

    private func deferred(_ shape: EncodingNode.Shape, _ key: Key) -> EncodingNode {
        node.member(FieldKey.stored(key.stringValue), as: shape)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = encoder.mayNest(under: key)
            ? ModelEncoder(below: encoder, key: key, node: deferred(.object, key), state: encoder.state, level: encoder.level + 1)
            : encoder.cutOff()
        return KeyedEncodingContainer(ModelKeyedEncoding<NestedKey>(encoder: child, node: child.node))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = encoder.mayNest(under: key)
            ? ModelEncoder(below: encoder, key: key, node: deferred(.array, key), state: encoder.state, level: encoder.level + 1)
            : encoder.cutOff()
        return ModelUnkeyedEncoding(encoder: child, node: child.node)
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(key: ModelKey.super)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(key: key)
    }

    /// The super encoder's own containers check their level.
    private func superEncoder(key: any CodingKey) -> any Encoder {
        ModelEncoder(
            below: encoder, key: key, node: node.member(FieldKey.stored(key.stringValue), as: .empty), state: encoder.state,
            level: encoder.level + 1)
    }
}
