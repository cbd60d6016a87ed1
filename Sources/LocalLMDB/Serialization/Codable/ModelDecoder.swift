import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Decodes `Decodable` values from JSON in place: each field is parsed where it lies (in LMDB's
/// map, for a stored record), straight into the type asked for, as `DataObject` reads fields for
/// hand-written models. Not Foundation's `JSONDecoder`: no tree, and none of its costs.
///
/// Codable's rules apply: a missing field is `keyNotFound`, a `null` one `valueNotFound`, a
/// mistyped one `typeMismatch` (numbers convert between integer and floating-point types only
/// when exact). Reads turn these into `LocalDatabaseError.decodingFailed`, with the record's id,
/// class and the coding path.
final class ModelDecoder: Decoder {
    /// The value to decode, at offset 0 of these bytes. A variable, as are `dates`,
    /// `nextMember` and `ended`: a top decoder that `decode(_:from:dates:)` reuses restarts with
    /// new ones (`restart`).
    @exclusivity(unchecked) private(set) var value: EncodedObject
    /// The coding path of a top decoder.
    private let basePath: [any CodingKey]
    /// The decoder this one was made by, and the key it was made for (nil: the same path):
    /// the coding path is built from them only when asked for (errors, mostly), not per value.
    private let parent: ModelDecoder?
    private let key: (any CodingKey)?
    @exclusivity(unchecked) private(set) var dates: DateDecoding
    /// Decoding JSON from elsewhere: member names are keys as they are (no `FieldKey` mapping,
    /// and a member `object` is a field like any other), and a string is never a number (as
    /// for `JSONDecoder`: `"NaN"` is LocalLMDB's stored form of a double, not the server's).
    let foreign: Bool
    /// Where the keyed containers' next member lookup starts, as `DataObject.nextMember` for a
    /// data object's fields: after a value whose end a container found, the member after it,
    /// so that fields read in the order they were written are found where the lookup starts.
    /// Only a hint (a lookup that misses there walks the whole object); nil until the first
    /// lookup, or past the last member. The decoder is used by one thread, synchronously, and
    /// each access is a plain load or store: exclusivity is not checked at run time.
    @exclusivity(unchecked) private var nextMember: Int?
    /// The decoder this one was made below; nil for the top one.
    private let root: ModelDecoder?
    /// Set on the top decoder when the decoding it began is over: the bytes it reads may be
    /// LMDB's map, valid only during the read, so a decoder or container kept past `init(from:)`
    /// refuses to read rather than read what those bytes hold by then.
    @exclusivity(unchecked) private var ended = false
    /// Notes the top-level members looked up, when the decoding is to learn them
    /// (`MemberKnowledge`); nil for every other decoding, and for every decoder below the top.
    let probe: MemberProbe?

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// `nextMember`: where the first member lookup starts, when the caller knows (see
    /// `DataObject.firstLookup(in:)`, which the decoder follows otherwise).
    init(
        value: EncodedObject, codingPath: [any CodingKey], dates: DateDecoding, foreign: Bool = false, nextMember: Int? = nil,
        probe: MemberProbe? = nil
    ) {
        self.value = value
        basePath = codingPath
        self.dates = dates
        self.foreign = foreign
        self.nextMember = nextMember
        self.probe = probe
        (parent, key, root) = (nil, nil, nil)
    }

    private init(value: EncodedObject, key: (any CodingKey)?, below parent: ModelDecoder) {
        self.value = value
        basePath = []
        self.parent = parent
        self.key = key
        dates = parent.dates
        foreign = parent.foreign
        root = parent.root ?? parent
        probe = nil
    }

    var codingPath: [any CodingKey] {
        guard let parent else { return basePath }
        var path = parent.codingPath
        if let key { path.append(key) }
        return path
    }

    /// The coding path of the value under `key` (this decoder's own when nil).
    func path(_ key: (any CodingKey)?) -> [any CodingKey] {
        key.map { codingPath + [$0] } ?? codingPath
    }

    /// A decoder for the value at `offset`, under `key`, with this one's settings.
    func nested(at offset: Int, key: (any CodingKey)?) -> ModelDecoder {
        ModelDecoder(value: value.nestedObject(at: offset), key: key, below: self)
    }

    /// `type` decoded by its `init(from:)` from this decoder, which ends with it (see `ended`).
    func decodeAndEnd<T: Decodable>(_ type: T.Type) throws -> T {
        defer { end() }
        return try type.init(from: self)
    }

    /// Ends the decoding this top decoder began (see `ended`).
    func end() {
        ended = true
    }

    /// Throws once the decoding this decoder belongs to is over.
    @inline(__always)
    func checkLive() throws {
        if (root ?? self).ended {
            throw DecodingError.dataCorrupted(.init(
                codingPath: codingPath, debugDescription: "a decoder or container was used after init(from:) returned"))
        }
    }

    var isLive: Bool { !(root ?? self).ended }

    /// A stored model: `type` decoded from the object `dataObject` reads.
    ///
    /// The decoder is the thread's spare one when it has one (`ReadScratch.spareDecoder`), and is
    /// kept as the spare afterwards when nothing else holds it: not a decoder or container that
    /// `init(from:)` kept (which stays ended), nor a decoder made below it (which holds it as its
    /// root). A decode nested in this one on the thread finds no spare meanwhile.
    static func decode<T: Decodable>(_ type: T.Type, from dataObject: DataObject, dates: DateDecoding = .stored) throws -> T {
        if let probe = dataObject.probe {
            // A decoder of its own, never the spare: it notes what it looks up.
            return try ModelDecoder(value: dataObject.encodedStorage, codingPath: [], dates: dates, probe: probe).decodeAndEnd(type)
        }
        let scratch = ReadScratch.current
        var decoder: ModelDecoder
        if let spare = scratch.spareDecoder {
            scratch.spareDecoder = nil
            spare.restart(value: dataObject.encodedStorage, dates: dates, nextMember: dataObject.nextMember)
            decoder = spare
        } else {
            decoder = ModelDecoder(value: dataObject.encodedStorage, codingPath: [], dates: dates, nextMember: dataObject.nextMember)
        }
        defer {
            if isKnownUniquelyReferenced(&decoder) {
                // Let go of the bytes (`{}` has no owner to release) and of any date formatter.
                (decoder.value, decoder.dates) = (.empty, .stored)
                scratch.spareDecoder = decoder
            }
        }
        return try decoder.decodeAndEnd(type)
    }

    /// Makes an ended top decoder, made by `init(value:codingPath:dates:)` with no coding path
    /// and not `foreign`, that nothing else holds, a new one for `value`.
    private func restart(value: EncodedObject, dates: DateDecoding, nextMember: Int?) {
        self.value = value
        self.dates = dates
        self.nextMember = nextMember
        ended = false
    }

    var scanner: JSONScanner { value.scanner }

    /// How this decoder reads a `Double` and a `Decimal` (see `foreign`; the containers choose
    /// between the readers of single values themselves, so that they inline them).
    var doubles: (JSONScanner, Int) -> (value: Double, end: Int)? {
        if foreign { return Double.readNumber }
        return Double.read
    }

    var decimals: (JSONScanner, Int) -> (value: Decimal, end: Int)? {
        if foreign { return ValueReading.decimalNumber }
        return ValueReading.decimal
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try checkLive()
        guard scanner.byte(at: 0) == UInt8(ascii: "{") else { throw mismatch([String: Any].self, at: 0, codingPath) }
        return KeyedDecodingContainer(ModelKeyedDecoding<Key>(decoder: self))
    }

    // MARK: Members

    /// The member named `key` (a field key, stored as `FieldKey` spells it unless `foreign`),
    /// found as `DataObject.member` finds it, with this decoder's `nextMember`. The common
    /// case, the member where the lookup starts spelled as `key`, is answered inline.
    @inline(__always)
    func member(_ key: String) -> JSONScanner.Member? {
        if let probe { probe.note(foreign ? key : FieldKey.stored(key)) }
        let scanner = value.scanner
        if let start = nextMember ?? firstLookup(in: scanner),
           let found = DataObject.member(at: start, spelled: key, escaped: !foreign, in: scanner) {
            nextMember = found.start
            return found
        }
        return walkToMember(key)
    }

    /// `member` when the member where the lookup starts is not spelled as `key`: every member,
    /// from there round to where it started.
    @inline(never)
    private func walkToMember(_ key: String) -> JSONScanner.Member? {
        let found = value.member(named: foreign ? key : FieldKey.stored(key), from: nextMember)
        if let found { nextMember = found.start }
        return found
    }

    /// Where the first lookup starts, noted in `nextMember`: past the class member when it comes
    /// first, as `DataObject.firstLookup(in:)`; nil when the object has no member.
    @inline(never)
    private func firstLookup(in scanner: JSONScanner) -> Int? {
        let start = DataObject.firstLookupStart(in: scanner)
        nextMember = start
        return start
    }

    /// Notes that the value just read ended at `end`: the next lookup starts after it.
    @inline(__always)
    func didRead(upTo end: Int) {
        nextMember = value.scanner.nextMember(after: end)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try checkLive()
        probe?.noteEveryMember()
        guard scanner.byte(at: 0) == UInt8(ascii: "[") else { throw mismatch([Any].self, at: 0, codingPath) }
        return ModelUnkeyedDecoding(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try checkLive()
        // The whole object, read as one value (a dictionary, say): every member is the model's.
        probe?.noteEveryMember()
        return ModelSingleValueDecoding(decoder: self)
    }

    // MARK: Values

    /// The error for a value at `offset` that is not a `type`.
    func mismatch(_ type: Any.Type, at offset: Int, _ path: [any CodingKey]) -> DecodingError {
        ModelCoding.mismatch(type, at: offset, in: scanner, path)
    }

    /// The scalar at `offset` read by `read`, or the error for what is there instead.
    @inline(__always)
    func scalar<V>(_ type: V.Type, at offset: Int, _ path: @autoclosure () -> [any CodingKey], _ read: (JSONScanner, Int) -> (value: V, end: Int)?) throws -> (value: V, end: Int) {
        guard let found = read(scanner, offset) else { throw mismatch(V.self, at: offset, path()) }
        return found
    }

    /// `type` decoded from the value at `offset`, under `key` (this decoder's own path when nil).
    func decode<T: Decodable>(_ type: T.Type, at offset: Int, key: (any CodingKey)?) throws -> T {
        var end: Int?
        return try decode(type, at: offset, key: key, end: &end)
    }

    /// `decode(_:at:key:)`, setting `end` past the value when the reading found where it ends
    /// (left as it is otherwise).
    func decode<T: Decodable>(_ type: T.Type, at offset: Int, key: (any CodingKey)?, end: inout Int?) throws -> T {
        try checkLive()
        // Each case returns `T` itself: a `T?` made here would cost a look-up of the generic
        // type `Optional<T>` on every call.
        switch ValueKind(T.self) {
        case .date: return try ModelCoding.same(try date(at: offset, path(key)), as: type)
        case .data: return try ModelCoding.same(try scalar(Data.self, at: offset, path(key), ValueReading.data).value, as: type)
        case .url: return try ModelCoding.same(try scalar(URL.self, at: offset, path(key), ValueReading.url).value, as: type)
        case .decimal: return try ModelCoding.same(try scalar(Decimal.self, at: offset, path(key), decimals).value, as: type)
        case .strings: return try ModelCoding.same(try array(String.self, at: offset, key, &end, String.read), as: type)
        case .integers: return try ModelCoding.same(try array(Int.self, at: offset, key, &end, Int.read), as: type)
        case .doubles: return try ModelCoding.same(try array(Double.self, at: offset, key, &end, doubles), as: type)
        case .flags: return try ModelCoding.same(try array(Bool.self, at: offset, key, &end, Bool.read), as: type)
        case .other: break
        }
        // References, and arrays of them, as LocalLMDB writes them: read in place, with no
        // decoder of their own (sniffed from the bytes first: a cast per value would cost more).
        if !foreign {
            let opening = scanner.byte(at: offset)
            if opening == UInt8(ascii: "{"), let id = referenceID(at: offset), let reference = T.self as? any ReferenceDecoding.Type {
                return try ModelCoding.same(try reference.resolved(id: id, scratch: .current, codingPath: path(key)), as: type)
            }
            if opening == UInt8(ascii: "["), let first = scanner.firstElement(ofArrayAt: offset), referenceID(at: first) != nil,
               let references = T.self as? any ReferenceArrayDecoding.Type,
               let decoded = try references.decodeReferences(from: self, at: offset, key: key, end: &end) {
                return try ModelCoding.same(decoded, as: type)
            }
        }
        if let model = T.self as? any Persistable.Type {
            return try nestedModel(model, as: type, at: offset, key)
        }
        try checkStack(key)
        return try type.init(from: nested(at: offset, key: key))
    }

    /// The id of the reference at `offset` when it is stored as LocalLMDB writes one:
    /// `{"$ref":"…"}`, its only member a string; nil otherwise.
    func referenceID(at offset: Int) -> String? {
        reference(at: offset)?.id
    }

    /// `referenceID(at:)`, and the offset just past the reference's `}`.
    func reference(at offset: Int) -> (id: String, end: Int)? {
        let scanner = scanner
        guard let first = scanner.firstMember(ofObjectAt: offset) else { return nil }
        let name: StaticString = "$ref"
        guard let member = scanner.member(at: first, spelled: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)),
              let (id, end) = scanner.string(at: member.value), scanner.byte(at: end) == UInt8(ascii: "}") else { return nil }
        return (id, end + 1)
    }

    /// Throws when the thread's stack is too low to decode a value nested further (the stored
    /// nesting is limited, but a model's `init(from:)` may recurse more, and a thread's stack
    /// may be small: see `StackGuard`).
    func checkStack(_ key: (any CodingKey)?) throws {
        if CodecScratch.current.stackIsLow {
            throw DecodingError.dataCorrupted(.init(codingPath: path(key), debugDescription: StackGuard.refusal))
        }
    }

    /// The kinds of value read other than by their `init(from:)`: those stored in a form of their
    /// own (`CodableValues.swift`), and arrays of `String`, `Int`, `Double` and `Bool`, read in
    /// one loop, as `DataObject` reads them (through `Array.init(from:)`, each element would cost
    /// a decoder of its own).
    private enum ValueKind {
        case date, data, url, decimal, strings, integers, doubles, flags, other

        init(_ type: Any.Type) {
            if type == Date.self {
                self = .date
            } else if type == Data.self {
                self = .data
            } else if type == URL.self {
                self = .url
            } else if type == Decimal.self {
                self = .decimal
            } else {
                // Compared by identity with types looked up once: `type == [String].self` would
                // look the generic type `[String]` up on every call.
                switch ObjectIdentifier(type) {
                case ScalarArrays.strings: self = .strings
                case ScalarArrays.integers: self = .integers
                case ScalarArrays.doubles: self = .doubles
                case ScalarArrays.flags: self = .flags
                default: self = .other
                }
            }
        }
    }

    /// An array read in one loop (see `ValueKind`); `arrayEnd` is set past it.
    private func array<V>(
        _ type: V.Type, at offset: Int, _ key: (any CodingKey)?, _ arrayEnd: inout Int?, _ read: (JSONScanner, Int) -> (value: V, end: Int)?
    ) throws -> [V] {
        var end = offset
        let values = try ModelCoding.array(at: offset, in: scanner, path(key), arrayEnd: &end, read)
        arrayEnd = end
        return values
    }

    func date(at offset: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Date {
        guard let date = dates.date(scanner, at: offset) else {
            if scanner.byte(at: offset) == UInt8(ascii: "n") { throw mismatch(Date.self, at: offset, path()) }
            throw DecodingError.dataCorrupted(.init(
                codingPath: path(), debugDescription: "expected a date (\(dates.description)), found \(ModelCoding.kind(at: offset, in: scanner))"))
        }
        return date
    }

    /// A nested model: restored as the class it names when that is `T` or a subclass, as the
    /// hand-written models' nested objects are (see `ObjectDecoding`).
    private func nestedModel<T>(_ requested: any Persistable.Type, as type: T.Type, at offset: Int, _ key: (any CodingKey)?) throws -> T {
        guard scanner.byte(at: offset) == UInt8(ascii: "{") else { throw mismatch(T.self, at: offset, path(key)) }
        if foreign, let decodable = requested as? any Decodable.Type {
            // JSON from elsewhere: no class names to resolve, and its own date format.
            if let restored = try decodable.init(from: nested(at: offset, key: key)) as? T { return restored }
        }
        try checkStack(key)
        let path = path(key)
        let object = value.nestedObject(at: offset)
        var restoreAs = requested
        if let storedName = object.className {
            let scratch = ReadScratch.current
            switch ObjectDecoding.resolve(storedName: storedName, requested: requested, context: scratch.context, scratch: scratch.classes) {
            case .requested:
                break
            case let .stored(stored):
                restoreAs = stored
            case let .failure(failure):
                if scratch.isReading {
                    if scratch.failure == nil { scratch.failure = failure }
                    throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "\(failure.error(id: ""))"))
                }
            }
        }
        var spare: DataObject?
        let restored: any Persistable
        do {
            restored = try DataObject.restore(restoreAs, from: object, spare: &spare)
        } catch {
            // The model's own decoding started a path of its own: put it below this one.
            throw ModelCoding.prefixing(error, with: path)
        }
        guard let restored = restored as? T else {
            let scratch = ReadScratch.current
            let failure = ObjectDecoding.Failure.mismatch(requested: TypeRegistry.name(of: requested), stored: object.className ?? "")
            if scratch.isReading, scratch.failure == nil { scratch.failure = failure }
            throw DecodingError.typeMismatch(T.self, .init(codingPath: path, debugDescription: "\(failure.error(id: ""))"))
        }
        return restored
    }
}
