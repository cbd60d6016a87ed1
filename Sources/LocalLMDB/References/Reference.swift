import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// A property that refers to another stored model, instead of holding a copy of it.
///
/// A `Codable` model declares a reference as a property of this type; a hand-written
/// (`Storable`) one adds and reads it with `DataObject.add(key:reference:)` and
/// `DataObject.reference(_:forKey:)`:
///
/// ```swift
/// final class Owner: Codable, Persistable, Identifiable {
///     let id: String
///     var name: String
///     init(id: String, name: String) { (self.id, self.name) = (id, name) }
/// }
/// struct Car: Codable, Persistable {
///     var plate: String
///     var owner: Reference<Owner>            // a missing owner is an error
///     var previousOwner: Reference<Owner>?   // a missing one reads as nil
///     var drivers: [Reference<Owner>]
/// }
/// let ada = Owner(id: "ada", name: "Ada")
/// try await database.write(Record(id: "car", data: Car(plate: "L1", owner: Reference(ada), previousOwner: nil, drivers: [])))
/// let car: Car? = try await database.read(id: "car")
/// car?.owner.model?.name    // "Ada", read from the record "ada"
/// ```
///
/// The parent stores `{"$ref": id}`; the referenced model is a record of its own, under its id
/// and its own class, that can be read, queried and changed by itself. Writing the parent writes
/// the models its references hold in the same transaction; reading it resolves its references
/// in the same snapshot; within one read, one id is one instance. See <doc:References>.
///
/// A reference is a value: copies share the model the read or the writer gave it, and it
/// holds that model strongly (a cycle of class instances is a retain cycle, as between any
/// objects that point at each other).
public struct Reference<Model: Persistable> {
    /// The referenced record's id.
    public let id: String
    let box: ReferenceBox

    /// The referenced model: the one given when the reference was made, or the one a read
    /// resolved it to (the record `id`, as its stored class). Nil for a reference made with
    /// `init(id:)`, and for one decoded outside a database read (`JSONDecoder`).
    public var model: Model? { box.model as? Model }

    /// A reference to `model`, stored under `id`: writing the parent also writes `model` as the
    /// record `id`.
    public init(_ model: Model, id: String) {
        self.id = id
        box = ReferenceBox(model, requested: Model.self)
    }

    /// A reference to the record `id`, without its model: writing the parent stores the
    /// reference and leaves the record `id` as it is (or missing).
    public init(id: String) {
        self.id = id
        box = ReferenceBox(nil, requested: Model.self)
    }
}

extension Reference where Model: Identifiable, Model.ID: RecordIdentifier {
    /// A reference to `model`, stored under its own id (`model.id.recordID`).
    public init(_ model: Model) {
        self.init(model, id: model.id.recordID)
    }
}

extension Reference: Equatable {
    /// References are equal when they name the same record: ids with the same UTF-8 bytes (ids
    /// that differ only in Unicode normalization name two records).
    public static func == (lhs: Self, rhs: Self) -> Bool { ExactID(lhs.id) == ExactID(rhs.id) }
}

extension Reference: Hashable {
    /// Hashes the record id's UTF-8 bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(ExactID(id)) }
}

extension Reference: CustomStringConvertible {
    /// `Reference<Owner>(ada)`.
    public var description: String { "Reference<\(Model.self)>(\(id))" }
}

// The box's model is set once, by the writer or by the read that decodes the reference,
// before the reference is handed to anyone.
extension Reference: @unchecked Sendable where Model: Sendable {}

/// The member a reference is stored under.
private enum ReferenceKey: String, CodingKey {
    case id = "$ref"
}

extension Reference: Encodable {
    /// Stores `{"$ref": id}`. In a database write, the model (when the reference holds one) is
    /// written as the record `id` in the same transaction; encoded by any other encoder, only
    /// the id is.
    public func encode(to encoder: any Encoder) throws {
        guard !id.isEmpty else {
            throw EncodingError.invalidValue(id, .init(codingPath: encoder.codingPath, debugDescription: "a reference's id is empty"))
        }
        var container = encoder.container(keyedBy: ReferenceKey.self)
        try container.encode(id, forKey: .id)
        // Only a database write's own encoder stores the model: a reference encoded by another
        // encoder (a `JSONEncoder` a model's `encode(to:)` runs) is not a reference of the record.
        if let model = box.model, encoder is ModelEncoder { EncodeScratch.current.noteReference(to: id, model: model) }
    }
}

/// A reference, which `ModelDecoder` reads in place (`resolved(id:codingPath:)`), and whose
/// optional properties it reads as nil when their record is missing (`decodeIfPresent`).
protocol ReferenceDecoding {
    /// The reference to `id` decoded at `codingPath` on the thread of `scratch`, its model resolved by the read under way
    /// (see `Reference.init(from:)`).
    static func resolved(id: String, scratch: ReadScratch, codingPath: @autoclosure () -> [any CodingKey]) throws -> Self
}

/// An array of references, which `ModelDecoder` reads in place.
protocol ReferenceArrayDecoding {
    /// The array at `offset` of `decoder`'s value, under `key`; `end` is set past it. Nil when
    /// an element is not a reference as LocalLMDB writes it: the array is then decoded by its
    /// `init(from:)`.
    static func decodeReferences(from decoder: ModelDecoder, at offset: Int, key: (any CodingKey)?, end: inout Int?) throws -> Self?
}

extension Array: ReferenceArrayDecoding where Element: ReferenceDecoding {
    static func decodeReferences(from decoder: ModelDecoder, at offset: Int, key: (any CodingKey)?, end: inout Int?) throws -> [Element]? {
        // Resolved as they are read: when an element turns out not to be a reference as
        // LocalLMDB writes one, `init(from:)` reads the array again, and the references already
        // resolved are met again (each waits for, or gets, the one model of its id).
        let scanner = decoder.scanner
        let scratch = ReadScratch.current
        var references: [Element] = []
        references.reserveCapacity(scanner.elementCount(ofArrayAt: offset))
        var next = scanner.firstElement(ofArrayAt: offset)
        var arrayEnd = offset + 2
        while let element = next {
            guard scanner.byte(at: element) == UInt8(ascii: "{"), let (id, elementEnd) = decoder.reference(at: element) else { return nil }
            let index = references.count
            references.append(try Element.resolved(id: id, scratch: scratch, codingPath: decoder.path(key) + [ModelKey(intValue: index)]))
            next = scanner.element(after: elementEnd, arrayEnd: &arrayEnd)
        }
        end = arrayEnd
        return references
    }
}

extension Reference: ReferenceDecoding {
    static func resolved(id: String, scratch: ReadScratch, codingPath: @autoclosure () -> [any CodingKey]) throws -> Reference {
        let optional = scratch.decodingOptionalReference
        scratch.decodingOptionalReference = false
        let reference = Reference(box: ReferenceBox(nil, requested: Model.self), id: id)
        switch try scratch.resolveReference(to: id, box: reference.box) {
        case .resolving, .unavailable:
            return reference
        case .missing:
            if optional { throw MissingOptionalReference() }
            let path = codingPath()
            if scratch.failure == nil { scratch.failure = .missingReference(field: ModelCoding.path(path), referencedID: id) }
            throw DecodingError.valueNotFound(Model.self, .init(codingPath: path, debugDescription: "the referenced record '\(id)' is not stored"))
        }
    }

    private init(box: ReferenceBox, id: String) {
        self.id = id
        self.box = box
    }
}

extension Reference: Decodable {
    /// Reads `{"$ref": id}`. In a database read, the model is the record `id`, resolved in the
    /// read's snapshot; a missing record is an error (`LocalDatabaseError.missingReference`)
    /// unless the property is optional, which then reads as nil. Decoded by any other decoder,
    /// the reference has its id and no model.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: ReferenceKey.self)
        let id = try container.decode(String.self, forKey: .id)
        // Only a database read's own decoder resolves: JSON decoded by other means (a
        // `JSONDecoder` run by a model's initializer, `ModelFactory`) names no stored record.
        guard let decoder = decoder as? ModelDecoder, !decoder.foreign else {
            let scratch = ReadScratch.current
            if scratch.decodingOptionalReference { scratch.decodingOptionalReference = false }
            self.init(box: ReferenceBox(nil, requested: Model.self), id: id)
            return
        }
        self = try Self.resolved(id: id, scratch: ReadScratch.current, codingPath: decoder.codingPath)
    }
}

/// Where a reference's model is: set when the reference is made with one, or by the read that
/// resolves it. Not generic, so that decoding a reference looks up no generic type: the model is
/// kept as `any Persistable`, and `Reference.model` casts it back.
final class ReferenceBox {
    private(set) var model: (any Persistable)?
    /// The type the reference asks for.
    let requested: any Persistable.Type

    init(_ model: (any Persistable)?, requested: any Persistable.Type) {
        self.model = model
        self.requested = requested
    }

    // A chain of models linked by references (box → model → box …) would be released by one
    // nested call per link: the model is handed to the thread's release queue instead, which
    // releases chains of any length one link at a time.
    deinit {
        // Moved out, never copied: a copy left here would be the last one, released when the
        // deinitializer returns, one nested call deeper per link.
        guard let held = model.take() else { return }
        ReleaseQueue.current.release(consume held)
    }

    /// Puts `instance` in the box when it is of the type the reference asks for; false when not.
    func fill(with instance: any Persistable) -> Bool {
        guard Self.isInstance(instance, of: requested) else { return false }
        model = instance
        return true
    }

    private static func isInstance<T: Persistable>(_ instance: any Persistable, of type: T.Type) -> Bool {
        instance is T
    }

    /// Builds the referenced record `id` as the type the reference asks for (its stored class
    /// when that is the type or a subclass), puts it in the box and returns it.
    func build(from record: DecodedRecord, id: String, scratch: ReadScratch) throws(DatabaseError) -> any Persistable {
        let built = try Self.build(requested, from: record, id: id, scratch: scratch)
        model = built
        return built
    }

    /// The referenced record `id` restored as its stored class when that is `Model` or a
    /// subclass of it.
    private static func build<Model: Persistable>(
        _ requested: Model.Type, from record: DecodedRecord, id: String, scratch: ReadScratch
    ) throws(DatabaseError) -> any Persistable {
        var type = requested
        switch ObjectDecoding.resolve(storedName: record.className, requested: requested, context: scratch.context, scratch: scratch.classes) {
        case .requested:
            break
        case let .stored(stored):
            guard let resolved = stored as? Model.Type else {
                throw .typeMismatch(id: id, requested: TypeRegistry.name(of: requested), stored: record.className)
            }
            type = resolved
        case let .failure(failure):
            throw failure.error(id: id, className: record.className)
        }
        // Not one of the read's own records: not counted, and noted by `finish`.
        return try scratch.restoreModel(type, from: record.object, id: id, storedName: record.className)
    }

    /// The stored name of the type the reference asks for, for errors.
    var requestedName: String { TypeRegistry.name(of: requested) }
}
