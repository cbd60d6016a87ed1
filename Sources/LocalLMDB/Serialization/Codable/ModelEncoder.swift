import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Encodes `Encodable` values into the JSON tree a `DataObject` holds, with the value kinds of
/// `CodableValues.swift` and field keys mapped by `FieldKey`, exactly as hand-written models
/// store them. Not Foundation's `JSONEncoder`: no JSON text in between, and none of its costs.
///
/// Containers handed out for later (`nestedContainer`, `superEncoder`) fill a node of their
/// own, which replaces a placeholder in its parent when the value is finished, so members keep
/// the order they were encoded in.
///
/// Nesting: every container knows its level, and none is handed out deeper than a reader
/// accepts (`JSONValidator.maxDepth`), however it is reached: nested keyed or unkeyed
/// containers, super encoders, nested `Encodable` values or models. Beyond it, a container is
/// cut off (what is written into it is dropped, and it links to nothing, so a loop nesting
/// containers without end holds no more than the last ones) and the encoding fails. The
/// recursion into nested values also stops when the thread's stack runs low (`StackGuard`).
final class ModelEncoder: Encoder {
    /// The encoder this one was made by, and the key it was made for (nil: the same path): the
    /// coding path is built from them only when asked for, not per value.
    private let parent: ModelEncoder?
    private let key: (any CodingKey)?
    let node: EncodingNode
    /// The first misuse of the containers (two kinds asked of one encoder, nesting too deep),
    /// thrown at the end: the protocol's methods that hand out containers cannot throw.
    let state: EncodingState
    /// The nesting level of the container this encoder's value is, if it is one: 1 for a
    /// record's object.
    let level: Int
    /// The type whose `encode(to:)` this encoder was made for (`box`), if known.
    let valueType: ObjectIdentifier?

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(
        below parent: ModelEncoder?, key: (any CodingKey)?, node: EncodingNode = EncodingNode(), state: EncodingState, level: Int,
        valueType: ObjectIdentifier? = nil
    ) {
        self.parent = parent
        self.key = key
        self.node = node
        self.state = state
        self.level = level
        self.valueType = valueType
    }

    var codingPath: [any CodingKey] {
        var path = parent?.codingPath ?? []
        if let key { path.append(key) }
        return path
    }

    /// The coding path of the value under `key` (this encoder's own when nil).
    func path(_ key: (any CodingKey)?) -> [any CodingKey] {
        key.map { codingPath + [$0] } ?? codingPath
    }

    /// `model`'s fields after its class name: the data object `_storedFields()` gives.
    /// - Throws: `EncodingError.invalidValue` when the model does not encode a keyed container,
    ///   and whatever its `encode(to:)` throws.
    static func dataObject<T: Persistable & Encodable>(encoding model: T) throws -> DataObject {
        let node = EncodingNode()
        node.shape = .object
        // Built here and stored whole: `members` has an observer, which across the module
        // boundary makes each change in place a copy.
        var members: [JSONObject.Member] = []
        members.reserveCapacity(16)
        members.append(JSONObject.Member(key: DataObject.classNameKey, value: .string(DataObject.className(of: model))))
        node.object = JSONObject(members: members)
        // A nested model's object is a level below the container holding it.
        let encoder = ModelEncoder(below: nil, key: nil, node: node, state: EncodingState(), level: EncodeScratch.current.encodingLevel + 1)
        try model.encode(to: encoder)
        if let failure = encoder.state.failure { throw failure }
        guard case let .object(fields) = node.value() else {
            throw EncodingError.invalidValue(model, .init(codingPath: [], debugDescription: "a model must encode a keyed container"))
        }
        return DataObject(fields: fields)
    }

    /// `value` on its own, for `DataObject.add(key:value:)`.
    static func jsonValue<T: Encodable>(of value: T, at key: String) throws -> JSONValue {
        // The encoder stands for the data object: its level, when it is a nested model's.
        let encoder = ModelEncoder(below: nil, key: nil, state: EncodingState(), level: EncodeScratch.current.encodingLevel + 1)
        let boxed = try encoder.box(value, at: ModelKey(stringValue: key))
        if let failure = encoder.state.failure { throw failure }
        return boxed
    }

    /// The JSON value of `value`, encoded at `key` below this encoder's path.
    func box<T: Encodable>(_ value: T, at key: (any CodingKey)?) throws -> JSONValue {
        if let special = Self.specialValue(value) { return special }
        if let array = Self.scalarArray(value) { return array }
        // Nothing deeper than a reader accepts is written, so the recursion into `encode(to:)`
        // stops there too (nested models included: the count is the thread's, and it counts
        // values passed on through single value containers, which nest no container), or
        // sooner when the thread's stack runs low.
        let scratch = EncodeScratch.current
        guard scratch.encodingDepth < JSONValidator.maxDepth, !CodecScratch.current.stackIsLow else {
            throw EncodingError.invalidValue(value, .init(
                codingPath: path(key),
                debugDescription: scratch.encodingDepth < JSONValidator.maxDepth ? StackGuard.refusal : Self.tooDeep))
        }
        scratch.encodingDepth += 1
        defer { scratch.encodingDepth -= 1 }
        // Under a key, a level below this encoder's; from a single value container, in its place.
        let childLevel = key == nil ? level : level + 1
        if let model = value as? any Persistable {
            // A nested model is stored as hand-written models store theirs: with its class name.
            let outerLevel = scratch.encodingLevel
            scratch.encodingLevel = childLevel - 1
            defer { scratch.encodingLevel = outerLevel }
            do {
                return .object(try model._storedFields().fields)
            } catch {
                // Its encoding started a path of its own: put it below this one.
                throw ModelCoding.prefixing(error, with: path(key))
            }
        }
        let child = ModelEncoder(below: self, key: key, state: state, level: childLevel, valueType: ObjectIdentifier(T.self))
        try value.encode(to: child)
        return child.node.value()
    }

    static let tooDeep = "nested deeper than \(JSONValidator.maxDepth) levels"

    /// Arrays of `String`, `Int`, `Double` and `Bool`, written in one loop: through
    /// `Array.encode(to:)`, each element would cost an encoder of its own.
    private static func scalarArray<T: Encodable>(_ value: T) -> JSONValue? {
        switch ObjectIdentifier(T.self) {
        case ScalarArrays.strings: return ModelCoding.identical(value, as: [String].self).map { .array($0.map(\.jsonValue)) }
        case ScalarArrays.integers: return ModelCoding.identical(value, as: [Int].self).map { .array($0.map(\.jsonValue)) }
        case ScalarArrays.doubles: return ModelCoding.identical(value, as: [Double].self).map { .array($0.map(\.jsonValue)) }
        case ScalarArrays.flags: return ModelCoding.identical(value, as: [Bool].self).map { .array($0.map(\.jsonValue)) }
        default: return nil
        }
    }

    /// The value kinds stored in a form of their own, rather than by their `encode(to:)`.
    private static func specialValue<T: Encodable>(_ value: T) -> JSONValue? {
        if let date = ModelCoding.identical(value, as: Date.self) { return date.jsonValue }
        if let data = ModelCoding.identical(value, as: Data.self) { return .string(data.base64EncodedString()) }
        if let url = ModelCoding.identical(value, as: URL.self) { return .string(url.absoluteString) }
        if let decimal = ModelCoding.identical(value, as: Decimal.self) { return decimal.jsonValue }
        return nil
    }

    /// Records a misuse at `path` (this encoder's own when nil); the first one is thrown when
    /// encoding ends.
    func fail(_ reason: String, at path: [any CodingKey]? = nil) {
        if state.failure == nil {
            state.failure = EncodingError.invalidValue(reason, .init(codingPath: path ?? codingPath, debugDescription: reason))
        }
    }

    /// Claims this encoder's node for `shape`; false (and a failure) when it has another, or when
    /// it would be a container nested too deep (a single value nests nothing).
    func claim(_ shape: EncodingNode.Shape) -> Bool {
        guard level <= JSONValidator.maxDepth || shape == .single else {
            fail(Self.tooDeep)
            return false
        }
        if node.shape == .empty { node.shape = shape }
        guard node.shape == shape else {
            fail("encode(to:) asked one encoder for two kinds of container (\(node.shape) and \(shape))")
            return false
        }
        return true
    }

    /// Whether a container may be nested under `key` (a level below this encoder's); when not,
    /// the encoding fails.
    func mayNest(under key: any CodingKey) -> Bool {
        guard level < JSONValidator.maxDepth else {
            fail(Self.tooDeep, at: path(key))
            return false
        }
        return true
    }

    /// An encoder whose containers are written nowhere: for a container that cannot be (nested too
    /// deep, or of a second kind). It links to no other encoder or node, so containers nested in
    /// it, however many, are let go as they are left.
    func cutOff() -> ModelEncoder {
        ModelEncoder(below: nil, key: nil, state: state, level: JSONValidator.maxDepth + 1)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        guard claim(.object) else {
            let cutOff = cutOff()
            return KeyedEncodingContainer(ModelKeyedEncoding<Key>(encoder: cutOff, node: cutOff.node))
        }
        return KeyedEncodingContainer(ModelKeyedEncoding<Key>(encoder: self, node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        guard claim(.array) else {
            let cutOff = cutOff()
            return ModelUnkeyedEncoding(encoder: cutOff, node: cutOff.node)
        }
        return ModelUnkeyedEncoding(encoder: self, node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        ModelSingleValueEncoding(encoder: self)
    }
}
