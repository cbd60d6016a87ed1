import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

struct ModelUnkeyedEncoding: UnkeyedEncodingContainer {
    let encoder: ModelEncoder
    let node: EncodingNode
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { node.elements.count }

    private func append(_ value: JSONValue) { node.elements.append(value) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(.double(value)) }
    mutating func encode(_ value: Float) throws { append(value.jsonValue) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: UInt) throws { append(UInt64(value).jsonValue) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { append(value.jsonValue) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try encoder.box(value, at: ModelKey(intValue: count)))
    }

    private func deferred(_ shape: EncodingNode.Shape) -> (node: EncodingNode, key: ModelKey) {
        let (child, index) = node.element(as: shape)
        return (child, ModelKey(intValue: index))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = nested(.object)
        return KeyedEncodingContainer(ModelKeyedEncoding<NestedKey>(encoder: child, node: child.node))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = nested(.array)
        return ModelUnkeyedEncoding(encoder: child, node: child.node)
    }

    mutating func superEncoder() -> any Encoder {
        let (child, key) = deferred(.empty)
        return ModelEncoder(below: encoder, key: key, node: child, state: encoder.state, level: encoder.level + 1)
    }

    /// The encoder of a container of `shape` nested as the next element; a cut-off one when it
    /// would be nested too deep.
    private func nested(_ shape: EncodingNode.Shape) -> ModelEncoder {
        guard encoder.mayNest(under: ModelKey(intValue: count)) else { return encoder.cutOff() }
        let (child, key) = deferred(shape)
        return ModelEncoder(below: encoder, key: key, node: child, state: encoder.state, level: encoder.level + 1)
    }
}
