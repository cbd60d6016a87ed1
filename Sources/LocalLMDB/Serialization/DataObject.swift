import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// The stored form of a `Storable` object: a JSON object of named fields.
///
/// The class name is kept under the key `"object"`, and fields keep the order they were added
/// in. Build one in `toDataObject()` with `DataObject(self)` and `add(key:value:)`; read fields
/// back in `init(dataObject:)` with `get`, `getObject`, `getObjectOptional` and
/// `getObjectArray`. Reading never fails: a missing or mistyped field gives the default
/// (`""`, `0`, `0.0`, `false`, `nil`, `[]`, or the `onFail:` value).
///
/// A data object given to `init(dataObject:)` reads the stored bytes in place. A model may keep
/// it (it then gets a copy of its own), but only through a strong reference: one that nothing
/// else holds strongly when the initializer returns is reused to read the next record.
public final class DataObject {
    /// The key holding the class name.
    static let classNameKey = EncodedObject.classNameKey

    /// A data object is built as a tree of fields and read as JSON bytes: reading a stored
    /// record parses each field where it lies, straight into the type asked for, with no tree
    /// in between. Either form turns into the other when used the other way.
    enum Storage {
        /// Fields being added, written as JSON as they come (see `ObjectBuilder`).
        case building(ObjectBuilder)
        /// Fields being added, as a tree: what the builder does not take.
        case fields(JSONObject)
        /// Valid JSON to read fields from.
        case encoded(EncodedObject)
    }

    // Exclusivity is not checked at run time on these two: each access is a plain load or store
    // (no method holds one across a call), and a data object is not Sendable, so accesses
    // cannot overlap. The checks cost more than the field reads they guarded.

    @exclusivity(unchecked) private(set) var storage: Storage

    /// In `.encoded` storage: the member the next lookup starts at. Fields are usually read in
    /// the order they were written, so most lookups match at once.
    @exclusivity(unchecked) var nextMember: Int?

    /// A data object to read the next nested object with: the last one, when its model did not
    /// keep it. Reading many records of one type then allocates no data objects after the first.
    @exclusivity(unchecked) var spareChild: DataObject?

    /// Notes the members a model's restore looks up, when this object is read to learn them
    /// (`MemberKnowledge`); nil for every other read.
    @exclusivity(unchecked) var probe: MemberProbe?

    /// Creates an empty data object for `object`, recording its class name.
    public init(_ object: any Persistable) {
        storage = .building(ObjectBuilder(className: Self.className(of: object)))
    }

    /// The name of `object`'s stored class, which the encode under way on this thread notes
    /// (for the write to claim the name).
    static func className(of object: any Persistable) -> String {
        let storedClass = TypeRegistry.storedClass(of: Swift.type(of: object))
        EncodeScratch.current.noteEncoded(storedClass)
        return storedClass.name
    }

    /// Creates a data object from JSON text produced by `toRawString()`.
    /// Text that is not a JSON object gives an empty data object; use `init(validating:)` to
    /// find out why.
    public init(rawString: String) {
        storage = (try? Self.parse(rawString)).map(Storage.encoded) ?? .fields(JSONObject())
    }

    /// Creates a data object from JSON text produced by `toRawString()`.
    /// - Throws: `LocalDatabaseError.invalidJSON` when the text is not a JSON object.
    public init(validating rawString: String) throws(LocalDatabaseError) {
        storage = .encoded(try LocalDatabaseError.publishing { () throws(DatabaseError) in try Self.parse(rawString) })
    }

    init(fields: JSONObject) {
        storage = .fields(fields)
    }

    init(encoded: EncodedObject) {
        storage = .encoded(encoded)
    }

    /// An empty object with no class member: a nested `StoredValue` being written.
    init(plainObject: Void) {
        storage = .building(ObjectBuilder(className: nil))
    }

    private static func parse(_ text: String) throws(DatabaseError) -> EncodedObject {
        var text = text
        let buffer = text.withUTF8 { JSONBuffer(copying: UnsafeRawBufferPointer($0)) }
        return try EncodedObject.validating(UnsafeRawBufferPointer(buffer.bytes), owner: buffer)
    }

    /// The stored class name, if this data object has one.
    public var className: String? {
        switch storage {
        case let .building(builder):
            return builder.className
        case let .fields(fields):
            if case let .string(name) = fields[Self.classNameKey] { return name }
            return nil
        case let .encoded(encoded):
            return encoded.className
        }
    }

    /// This data object as UTF-8 JSON; empty when it holds a value that cannot be stored (a
    /// date that is not finite, nesting deeper than 512 levels: see `toRawString()`).
    public var rawData: Data {
        probe?.noteEveryMember()
        return encoded().map { Data($0) } ?? Data()
    }

    /// This data object as JSON text; nil when it holds a value that cannot be stored (a date
    /// that is not finite or more than 2^63 seconds from 1970, or objects and arrays nested
    /// deeper than 512 levels). Writing such an object to a database throws
    /// `LocalDatabaseError.unencodableValue`, naming the field.
    public func toRawString() -> String? {
        probe?.noteEveryMember()
        return encoded().map { String(decoding: $0, as: UTF8.self) }
    }

    /// Why this data object cannot be written, found when its fields were turned into bytes to
    /// read from (`encodedStorage`): those bytes hold `null` where the value was, so the failure
    /// is kept, and refuses every later encoding, rather than let the `null` be stored.
    private var conversionFailure: (path: String, reason: String)?

    /// The JSON bytes, appended to `bytes`; nil when a value cannot be written
    /// (`encodingFailure` says where and why).
    func encoded(appendingTo bytes: [UInt8] = []) -> [UInt8]? {
        withEncoded(prefix: bytes) { $0.map { Array(UnsafeRawBufferPointer($0)) } }
    }

    /// Calls `body` with `prefix` followed by the JSON bytes, in memory `body` may change and
    /// that lives for the call; with nil when a value cannot be written (`encodingFailure`
    /// says where and why).
    func withEncoded<R>(prefix: [UInt8], _ body: (UnsafeMutableRawBufferPointer?) -> R) -> R {
        guard conversionFailure == nil else { return body(nil) }
        var writer = JSONWriter(prefix: prefix)
        switch storage {
        case let .building(builder):
            builder.withJSON { writer.write(raw: $0) }
        case let .fields(fields):
            writer.write(fields)
            if writer.failed { return body(nil) }
        case let .encoded(encoded):
            writer.write(raw: encoded.extent)
        }
        return writer.withOutput(body)
    }

    /// Where and why this data object cannot be written: the path of the field and the reason.
    var encodingFailure: (path: String, reason: String)? {
        if let conversionFailure { return conversionFailure }
        guard case let .fields(fields) = storage else { return nil }
        return JSONWriter.failure(in: fields)
    }

    /// The fields as a tree, for writing them into another object.
    var fields: JSONObject {
        switch storage {
        case let .building(builder):
            return builder.withJSON { EncodedObject(bytes: $0, owner: nil).scanner.object(at: 0, mayRepeatKeys: false).object }
        case let .fields(fields): return fields
        case let .encoded(encoded): return encoded.scanner.object(at: 0, mayRepeatKeys: false).object
        }
    }

    /// Stores `value` under the field key `key` (as its member name, `FieldKey.stored(key)`),
    /// in place of any value there.
    func set(_ key: String, _ value: JSONValue) -> Self {
        if case let .building(builder) = storage, builder.add(key, value) { return self }
        return setInTree(key, value)
    }

    /// Adds the field `key` with the value `write` writes, or `value()` when the builder does
    /// not take it (so both ways store the same value).
    @inline(__always)
    func set(_ key: String, writing write: (inout JSONWriter) -> Void, else value: () -> JSONValue) -> Self {
        if case let .building(builder) = storage, builder.add(key, write) { return self }
        return setInTree(key, value())
    }

    /// Replaces every field with `fields`, a tree (the class member included).
    func replaceFields(_ fields: JSONObject) {
        storage = .fields(fields)
        nextMember = nil
    }

    /// `set` on the fields as a tree.
    private func setInTree(_ key: String, _ value: JSONValue) -> Self {
        var fields = fields
        storage = .fields(JSONObject())  // Drop the old storage's reference: `fields` is unique.
        fields.set(FieldKey.stored(key), value)
        storage = .fields(fields)
        nextMember = nil
        return self
    }

    /// The bytes to read fields from, written out first when fields were being added.
    var encodedStorage: EncodedObject {
        if case let .encoded(encoded) = storage { return encoded }
        if case let .building(builder) = storage {
            let buffer = builder.withJSON { JSONBuffer(copying: $0) }
            let encoded = EncodedObject(bytes: UnsafeRawBufferPointer(buffer.bytes), owner: buffer)
            storage = .encoded(encoded)
            nextMember = nil
            return encoded
        }
        let fields = fields
        let (encoded, failed) = EncodedObject.written(fields)
        if failed, conversionFailure == nil {
            conversionFailure = JSONWriter.failure(in: fields) ?? (path: "", reason: StackGuard.refusal)
        }
        storage = .encoded(encoded)
        nextMember = nil
        return encoded
    }

    /// Copies borrowed bytes into bytes of its own, so this object outlives the read that
    /// lent them.
    func takeOwnership() {
        if case let .encoded(encoded) = storage, encoded.owner == nil {
            storage = .encoded(encoded.owned())
        }
    }

    /// `type.init(dataObject:)` reading `object` in place (see `reusing(_:from:spare:)`).
    /// `firstLookup`: where the first field lookup starts, when the caller knows (see
    /// `firstLookup(in:)`, which finds it otherwise).
    static func restore<T: Storable>(_ type: T.Type, from object: EncodedObject, firstLookup: Int? = nil, spare: inout DataObject?) -> T {
        reusing(object, firstLookup: firstLookup, spare: &spare) { type.init(dataObject: $0) }
    }

    /// A model restored as `type` reading `object` in place (see `reusing(_:from:spare:)`).
    static func restore<T: Persistable>(_ type: T.Type, from object: EncodedObject, spare: inout DataObject?) throws -> T {
        try reusing(object, spare: &spare) { try type._restore(from: $0) }
    }

    /// A value restored by `restore`, reading `object` in place (see `reusing(_:spare:_:)`).
    static func restoreValue<T>(from object: EncodedObject, spare: inout DataObject?, _ restore: (DataObject) throws -> T) throws -> T {
        try reusing(object, spare: &spare, restore)
    }

    /// `body` given a data object reading `object` in place. A data object that `body` keeps
    /// (so that it outlives this call) is given bytes of its own first: borrowed bytes never
    /// outlive the read transaction that lent them. One it does not keep is handed back in
    /// `spare`, to restore the next object with; `spare` is used in the same way.
    @inline(__always)
    private static func reusing<R>(
        _ object: EncodedObject, firstLookup: Int? = nil, spare: inout DataObject?, _ body: (DataObject) throws -> R
    ) rethrows -> R {
        var dataObject: DataObject
        if let reused = spare {
            spare = nil
            reused.storage = .encoded(object)
            reused.conversionFailure = nil  // The last model may have added what cannot be stored.
            dataObject = reused
        } else {
            dataObject = DataObject(encoded: object)
        }
        dataObject.nextMember = firstLookup
        defer {
            if isKnownUniquelyReferenced(&dataObject) {
                dataObject.storage = .encoded(.empty)  // Let go of the bytes (`{}` has no owner to release).
                spare = dataObject
            } else if object.owner == nil {
                dataObject.takeOwnership()
            }
        }
        return try body(dataObject)
    }

    /// Runs `body` with `spareChild` taken out (so a nested read inside finds none rather than
    /// the same one), and keeps what `body` leaves in it as the new spare.
    func withSpareChild<R>(_ body: (inout DataObject?) throws -> R) rethrows -> R {
        var spare = spareChild
        spareChild = nil
        defer { spareChild = spare }
        return try body(&spare)
    }
}
