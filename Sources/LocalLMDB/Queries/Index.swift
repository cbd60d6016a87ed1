import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// A secondary index a model type declares (`Persistable.indexes`): the fields whose values
/// order its records, so that queries (`Query`) on them read only what they return.
///
/// ```swift
/// final class User: Storable {
///     static let indexes: [Index] = [.on("email", unique: true), .on("address.city", "age"), .each("tags")]
///     …
/// }
/// ```
///
/// Fields are named by their stored keys (a `Codable` model's coding keys), with `.` between the
/// keys of nested objects; so one declaration serves hand-written and `Codable` models alike.
/// The database keeps each index: it is stored the first time a database writes or queries the
/// type, built from the records already there, and from then on every write of the type by any
/// process keeps it exact, in the same transaction as the record.
public struct Index: Sendable, Hashable, CustomStringConvertible {
    let definition: IndexDefinition
    /// Why the index cannot be stored (a key path that names no stored field): the type's first
    /// write or query throws `invalidQuery` with it, rather than index something else.
    var problem: String?

    init(definition: IndexDefinition, problem: String? = nil) {
        self.definition = definition
        self.problem = problem
    }

    /// An index on `fields`, in this order: equality on the first fields and a range or order on
    /// the next one are what it serves. With `unique`, no two records may have equal values
    /// in it: writing a second one throws `LocalDatabaseError.uniqueIndexViolation` and stores
    /// nothing of the write or batch.
    ///
    /// With `counted`, the database also keeps how many entries each run of a few hundred
    /// consecutive index keys holds, so `count` of a range reads a number per run and walks
    /// only the range's two ends (a count of 10,000 records reads a few hundred entries, not
    /// 10,000), at the price of one more look-up and write for each entry a write adds or
    /// removes. `counted` is part of the index's name: changing it declares another index.
    public static func on(_ fields: IndexField..., unique: Bool = false, counted: Bool = false) -> Index {
        Index(definition: IndexDefinition(fields: fields.map(\.field), isUnique: unique, isMultiEntry: false, isCounted: counted))
    }

    /// A multi-entry index on an array field: each distinct element is indexed, so a query for
    /// one element finds the records whose array holds it. Records whose field is missing are
    /// indexed as missing; an empty array has no entry. `also` adds fields after the element.
    public static func each(_ field: IndexField, _ also: IndexField..., unique: Bool = false) -> Index {
        Index(definition: IndexDefinition(fields: [field.field] + also.map(\.field), isUnique: unique, isMultiEntry: true))
    }

    /// The index's name in the database: its fields and options spelt out.
    public var description: String { definition.name }
}

/// A field of an `Index`: a stored key, or a path of them (`"address.city"`).
public struct IndexField: Sendable, Hashable, ExpressibleByStringLiteral {
    let field: IndexDefinition.Field

    /// The field at `path`, compared as its stored JSON value.
    public init(_ path: String) {
        field = IndexDefinition.Field(path: path.split(separator: ".", omittingEmptySubsequences: false).map(String.init), kind: .automatic)
    }

    /// The field at `path`, written as a string literal: `"address.city"`.
    public init(stringLiteral path: String) {
        self.init(path)
    }

    /// A `Date` field: compared chronologically (its stored ISO 8601 text does not sort by bytes).
    public static func date(_ path: String) -> IndexField {
        var field = IndexField(path)
        field = IndexField(field: IndexDefinition.Field(path: field.field.path, kind: .date))
        return field
    }

    init(field: IndexDefinition.Field) {
        self.field = field
    }
}
