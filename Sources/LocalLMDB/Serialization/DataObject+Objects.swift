// Nested `Storable` objects: stored as JSON objects carrying their own class name, and
// restored as that class when it is the requested class or a subclass of it.
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

extension DataObject {
    /// Stores a nested object under `key`.
    @discardableResult public func add<T: Storable>(key: String, value: T) -> Self {
        nesting(key) { setObject(key, value.toDataObject()) }
    }

    /// Stores an optional nested object under `key` (`null` when nil).
    @discardableResult public func add<T: Storable>(key: String, value: T?) -> Self {
        nesting(key) { value.map { setObject(key, $0.toDataObject()) } ?? set(key, .null) }
    }

    /// Stores an array of nested objects under `key`.
    @discardableResult public func add<T: Storable>(key: String, value: [T]) -> Self {
        nesting(key) { setObjects(key, value.map { $0.toDataObject() }) }
    }

    /// Stores an array of optional nested objects under `key` (nil elements as `null`).
    @discardableResult public func add<T: Storable>(key: String, value: [T?]) -> Self {
        nesting(key) { setObjects(key, value.map { $0?.toDataObject() }) }
    }

    /// `store()`, which stores nested objects under `key` as their `toDataObject()` gives them,
    /// unless the thread's stack is too low to call it: models nested in one another recurse
    /// through here, so a chain nested too deeply for the stack (`StackGuard`) is refused when
    /// written, naming `key`, rather than overflow the stack.
    @inline(__always)
    func nesting(_ key: String, _ store: () -> Self) -> Self {
        guard !CodecScratch.current.stackIsLow else { return set(key, .unencodable(reason: StackGuard.refusal)) }
        return store()
    }

    /// Stores `child` under `key`, as a nested object.
    func setObject(_ key: String, _ child: DataObject) -> Self {
        // A data object nested in itself is written from its fields as they are now (a copy,
        // as `.object` makes): its builder cannot write its own bytes into itself.
        guard child !== self else { return set(key, .object(child.fields)) }
        return set(key, writing: { child.write(to: &$0) }, else: { .object(child.fields) })
    }

    /// Stores `children` under `key`, as an array of nested objects (nil ones as `null`).
    func setObjects(_ key: String, _ children: [DataObject?]) -> Self {
        guard !children.contains(where: { $0 === self }) else {
            return set(key, .array(children.map { $0.map { .object($0.fields) } ?? .null }))
        }
        return set(key, writing: { writer in
            guard writer.open(UInt8(ascii: "[")) else { return }
            for index in children.indices {
                if index > 0 { writer.write(byte: UInt8(ascii: ",")) }
                if let child = children[index] { child.write(to: &writer) } else { writer.write(.null) }
            }
            writer.close(UInt8(ascii: "]"))
        }, else: { .array(children.map { $0.map { .object($0.fields) } ?? .null }) })
    }

    /// Writes this data object as a value nested where `writer` is.
    func write(to writer: inout JSONWriter) {
        if case let .building(builder) = storage {
            let levels = builder.levels
            builder.withJSON { writer.write(json: $0, levels: levels) }
        } else {
            writer.write(.object(fields))
        }
    }

    /// The nested object under `key`. When it is missing or not an object, an instance
    /// restored from an empty data object (every field at its default).
    public func getObject<T: Storable>(_ key: String, type: T.Type, legacyKeys: [String] = []) -> T {
        // Not `getObjectOptional(…) ?? …`, which needs the metadata of `T?`, looked up per call.
        guard let object = nestedObject(key, legacyKeys) else { return T(dataObject: DataObject(fields: JSONObject())) }
        return withSpareChild { spare in ObjectDecoding.instantiate(type, from: object, spare: &spare) }
    }

    /// The nested object under `key`; nil when it is missing, `null` or not an object.
    public func getObjectOptional<T: Storable>(_ key: String, type: T.Type, legacyKeys: [String] = []) -> T? {
        guard let object = nestedObject(key, legacyKeys) else { return nil }
        return withSpareChild { spare in ObjectDecoding.instantiate(type, from: object, spare: &spare) }
    }

    /// The JSON object under `key` (it keeps the bytes alive); nil when the member is missing or
    /// not an object.
    private func nestedObject(_ key: String, _ legacyKeys: [String]) -> EncodedObject? {
        let object = encodedStorage
        guard let value = memberValue(key, legacyKeys, in: object.scanner),
              object.scanner.byte(at: value) == UInt8(ascii: "{") else { return nil }
        return object.nestedObject(at: value)
    }

    /// The array of nested objects under `key`; `[]` when missing. Elements that are not
    /// objects (such as `null`) are left out.
    public func getObjectArray<T: Storable>(_ key: String, type: T.Type, legacyKeys: [String] = []) -> [T] {
        let object = encodedStorage
        var elements: [T] = []
        // `object` holds the bytes' owner while the models' initializers run.
        withExtendedLifetime(object) {
            withSpareChild { spare in
                let scanner = object.scanner
                forEachElement(key, legacyKeys, in: scanner, reserving: { elements.reserveCapacity($0) }) { offset in
                    if scanner.byte(at: offset) == UInt8(ascii: "{") {
                        elements.append(ObjectDecoding.instantiate(type, from: object.nestedObject(at: offset), spare: &spare))
                    }
                    return nil
                }
            }
        }
        return elements
    }
}
