import Foundation

/// The stored form of a `Storable` object: a JSON object of named fields.
///
/// The class name is kept under the key `"object"`, and fields keep the order they were added
/// in. Build one in `toDataObject()` with `DataObject(self)` and `add(key:value:)`; read fields
/// back in `init(dataObject:)` with `get`, `getObject`, `getObjectOptional` and
/// `getObjectArray`. Reading never fails: a missing or mistyped field gives the default
/// (`""`, `0`, `0.0`, `false`, `nil`, `[]`, or the `onFail:` value).
public final class DataObject {
    /// The key holding the class name.
    static let classNameKey = "object"

    /// The fields, the class name among them.
    var object: JSONObject

    /// Creates an empty data object for `object`, recording its class name.
    public init(_ object: Storable) {
        let name = TypeRegistry.shared.register(Swift.type(of: object))
        var members: [JSONObject.Member] = []
        members.reserveCapacity(16)
        members.append(.init(key: Self.classNameKey, value: .string(name)))
        self.object = JSONObject(members: members)
    }

    /// Creates a data object from JSON text produced by `toRawString()`.
    /// Text that is not a JSON object gives an empty data object; use `init(validating:)` to
    /// find out why.
    public init(rawString: String) {
        self.object = (try? Self.parse(rawString)) ?? JSONObject()
    }

    /// Creates a data object from JSON text produced by `toRawString()`.
    /// - Throws: `LocalDatabaseError.invalidJSON` when the text is not a JSON object.
    public init(validating rawString: String) throws(LocalDatabaseError) {
        self.object = try Self.parse(rawString)
    }

    init(jsonObject: JSONObject) {
        self.object = jsonObject
    }

    private static func parse(_ text: String) throws(LocalDatabaseError) -> JSONObject {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(LocalDatabaseError) in try JSONReader.parseObject(UnsafeRawBufferPointer(utf8)) }
        }
        return try result.get()
    }

    /// The stored class name, if this data object has one.
    public var className: String? {
        if case let .string(name) = object[Self.classNameKey] { return name }
        return nil
    }

    /// This data object as UTF-8 JSON.
    public var rawData: Data {
        Data(encoded())
    }

    /// This data object as JSON text.
    public func toRawString() -> String? {
        String(decoding: encoded(), as: UTF8.self)
    }

    /// The JSON bytes, appended to `bytes`.
    func encoded(appendingTo bytes: [UInt8] = []) -> [UInt8] {
        var writer = JSONWriter(bytes: bytes)
        writer.bytes.reserveCapacity(writer.bytes.count + 384)
        writer.write(object)
        return writer.bytes
    }

    /// The first value found under `key` or, failing that, under each of `legacyKeys` in turn.
    func value(_ key: String, legacyKeys: [String]) -> JSONValue? {
        if let value = object.lookup(key) { return value }
        for legacyKey in legacyKeys {
            if let value = object.lookup(legacyKey) { return value }
        }
        return nil
    }
}
