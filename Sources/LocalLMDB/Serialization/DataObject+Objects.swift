// Nested `Storable` objects: stored as JSON objects carrying their own class name, and
// restored as that class when it is the requested class or a subclass of it.

extension DataObject {
    /// Stores a nested object under `key`.
    @discardableResult public func add<T: Storable>(key: String, value: T) -> Self {
        set(key, .object(value.toDataObject().object))
    }

    /// Stores an optional nested object under `key` (`null` when nil).
    @discardableResult public func add<T: Storable>(key: String, value: T?) -> Self {
        set(key, value.map { .object($0.toDataObject().object) } ?? .null)
    }

    /// Stores an array of nested objects under `key`.
    @discardableResult public func add<T: Storable>(key: String, value: [T]) -> Self {
        set(key, .array(value.map { .object($0.toDataObject().object) }))
    }

    /// Stores an array of optional nested objects under `key` (nil elements as `null`).
    @discardableResult public func add<T: Storable>(key: String, value: [T?]) -> Self {
        set(key, .array(value.map { $0.map { .object($0.toDataObject().object) } ?? .null }))
    }

    /// The nested object under `key`. When it is missing or not an object, an instance
    /// restored from an empty data object (every field at its default).
    public func getObject<T: Storable>(_ key: String, type: T.Type, legacyKeys: [String] = []) -> T {
        getObjectOptional(key, type: type, legacyKeys: legacyKeys) ?? T(dataObject: DataObject(jsonObject: JSONObject()))
    }

    /// The nested object under `key`; nil when it is missing, `null` or not an object.
    public func getObjectOptional<T: Storable>(_ key: String, type: T.Type, legacyKeys: [String] = []) -> T? {
        guard case let .object(object) = value(key, legacyKeys: legacyKeys) else { return nil }
        return ObjectDecoding.instantiate(type, from: object)
    }

    /// The array of nested objects under `key`; `[]` when missing. Elements that are not
    /// objects (such as `null`) are left out.
    public func getObjectArray<T: Storable>(_ key: String, type: T.Type, legacyKeys: [String] = []) -> [T] {
        guard case let .array(elements) = value(key, legacyKeys: legacyKeys) else { return [] }
        return elements.compactMap { element in
            guard case let .object(object) = element else { return nil }
            return ObjectDecoding.instantiate(type, from: object)
        }
    }
}
