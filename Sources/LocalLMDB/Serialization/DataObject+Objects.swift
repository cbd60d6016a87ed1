// Nested `Storable` objects: stored as JSON objects carrying their own class name, and
// restored as that class when it is the requested class or a subclass of it.

extension DataObject {
    /// Stores a nested object under `key`.
    @discardableResult public func add<T: Storable>(key: String, value: T) -> Self {
        set(key, .object(value.toDataObject().fields))
    }

    /// Stores an optional nested object under `key` (`null` when nil).
    @discardableResult public func add<T: Storable>(key: String, value: T?) -> Self {
        set(key, value.map { .object($0.toDataObject().fields) } ?? .null)
    }

    /// Stores an array of nested objects under `key`.
    @discardableResult public func add<T: Storable>(key: String, value: [T]) -> Self {
        set(key, .array(value.map { .object($0.toDataObject().fields) }))
    }

    /// Stores an array of optional nested objects under `key` (nil elements as `null`).
    @discardableResult public func add<T: Storable>(key: String, value: [T?]) -> Self {
        set(key, .array(value.map { $0.map { .object($0.toDataObject().fields) } ?? .null }))
    }

    /// The nested object under `key`. When it is missing or not an object, an instance
    /// restored from an empty data object (every field at its default).
    public func getObject<T: Storable>(_ key: String, type: T.Type, legacyKeys: [String] = []) -> T {
        getObjectOptional(key, type: type, legacyKeys: legacyKeys) ?? T(dataObject: DataObject(fields: JSONObject()))
    }

    /// The nested object under `key`; nil when it is missing, `null` or not an object.
    public func getObjectOptional<T: Storable>(_ key: String, type: T.Type, legacyKeys: [String] = []) -> T? {
        let object = encodedStorage
        guard let member = member(key, legacyKeys, in: object),
              object.scanner.byte(at: member.value) == UInt8(ascii: "{") else { return nil }
        return withSpareChild { spare in
            ObjectDecoding.instantiate(type, from: object.nestedObject(at: member.value), spare: &spare)
        }
    }

    /// The array of nested objects under `key`; `[]` when missing. Elements that are not
    /// objects (such as `null`) are left out.
    public func getObjectArray<T: Storable>(_ key: String, type: T.Type, legacyKeys: [String] = []) -> [T] {
        let object = encodedStorage
        var elements: [T] = []
        withSpareChild { spare in
            forEachElement(key, legacyKeys, reserving: { elements.reserveCapacity($0) }) { scanner, offset in
                if scanner.byte(at: offset) == UInt8(ascii: "{") {
                    elements.append(ObjectDecoding.instantiate(type, from: object.nestedObject(at: offset), spare: &spare))
                }
                return nil
            }
        }
        return elements
    }
}
