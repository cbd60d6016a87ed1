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

/// Shared by the encoders of one value.
final class EncodingState {
    var failure: EncodingError?
}

/// A container's contents while it is being encoded.
///
/// A member is written as `JSONEncoder` writes it: the last write wins, whether a value (`null`
/// and `Encodable`s included), a nested container or a super encoder; a nested container asked
/// for a member that holds an object (for a keyed one) or an array (for an unkeyed one)
/// continues it; and a container or super encoder whose member was written again is cut off,
/// so what is written into it afterwards is not stored.
final class EncodingNode {
    enum Shape { case empty, object, array, single }
    var shape = Shape.empty
    var object = JSONObject()
    var elements: [JSONValue] = []
    var single = JSONValue.null
    /// Nodes handed out for later, with the member (`key`) or element (`index`) they fill.
    var deferred: [(key: String?, index: Int, node: EncodingNode)] = []
    /// The members that nodes handed out will fill: each node's position in `deferred`. A
    /// member written again since is not here (or names another node), and its node is left out.
    private var pendingMembers: [String: Int] = [:]

    /// The finished value; a value that encoded nothing is an empty object.
    func value() -> JSONValue {
        if !deferred.isEmpty { finishDeferred() }
        return ownValue
    }

    /// The value, the deferred nodes' values in place.
    private var ownValue: JSONValue {
        switch shape {
        case .empty: return .object(JSONObject())
        case .object: return .object(object)
        case .array: return .array(elements)
        case .single: return single
        }
    }

    /// Puts each deferred node's value in its place, those of the nodes deferred in it first:
    /// depth first, without recursion (containers nest as deep as the limit).
    private func finishDeferred() {
        var path: [(node: EncodingNode, next: Int)] = [(self, 0)]
        while let (node, next) = path.last {
            if next < node.deferred.count {
                path[path.count - 1].next = next + 1
                guard node.fills(next) else { continue }
                let child = node.deferred[next].node
                if child.deferred.isEmpty {
                    node.fill(next, with: child.ownValue)
                } else {
                    path.append((child, 0))
                }
            } else {
                path.removeLast()
                node.deferred = []
                node.pendingMembers = [:]
                if let (parent, filled) = path.last { parent.fill(filled - 1, with: node.ownValue) }
            }
        }
    }

    /// Whether the deferred node at `position` still fills its member or element.
    private func fills(_ position: Int) -> Bool {
        deferred[position].key.map { pendingMembers[$0] == position } ?? true
    }

    /// Puts `value` where the deferred node at `position` goes.
    private func fill(_ position: Int, with value: JSONValue) {
        let (key, index, _) = deferred[position]
        if let key {
            object.set(key, value)
        } else if index < elements.count {
            elements[index] = value
        }
    }

    /// Stores `value` as the member `key`, in place of what it held.
    @inline(__always)
    func set(_ key: String, _ value: JSONValue) {
        object.set(key, value)
        if !pendingMembers.isEmpty { pendingMembers[key] = nil }
    }

    /// The node that fills the member `key` with a container of `shape` (`.empty` for a super
    /// encoder's, which always replaces): the node already handed out for it when it has that
    /// shape, else a new one, which continues the object or array the member holds.
    func member(_ key: String, as shape: EncodingNode.Shape) -> EncodingNode {
        if let position = pendingMembers[key] {
            let pending = deferred[position].node
            if shape != .empty, pending.shape == shape { return pending }
        }
        let child = EncodingNode()
        child.shape = shape
        if pendingMembers[key] == nil {
            switch (shape, object[key]) {
            case let (.object, .object(held)?): child.object = held
            case let (.array, .array(held)?): child.elements = held
            default: break
            }
        }
        object.set(key, .null)  // Holds the member's place until the child is finished.
        pendingMembers[key] = deferred.count
        deferred.append((key, 0, child))
        return child
    }

    /// A node to fill the next element with a container of `shape`, and its index.
    func element(as shape: EncodingNode.Shape) -> (node: EncodingNode, index: Int) {
        let child = EncodingNode()
        child.shape = shape
        let index = elements.count
        elements.append(.null)  // Holds the element's place until the child is finished.
        deferred.append((nil, index, child))
        return (child, index)
    }
}

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

/// Optionals, to tell `.some(nil)` of a nested optional from `nil`: JSON has one `null`, and
/// reading it gives the outer nil, so a nested optional holding nil cannot be stored faithfully.
protocol NestedOptional {
    var isNone: Bool { get }
}

enum NestedOptionals {
    static func refusal(_ path: [any CodingKey]) -> EncodingError {
        EncodingError.invalidValue(Optional<Int>.none as Any, .init(
            codingPath: path,
            debugDescription: "an optional holding a nil optional (.some(nil)) would read back as nil; JSON has one null"))
    }
}

extension Optional: NestedOptional {
    var isNone: Bool { self == nil }
}
