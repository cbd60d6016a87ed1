import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// A query of one model type's records by field values: conditions, an order, and a page.
///
/// ```swift
/// let page = try await database.read(
///     Query(Order.self)
///         .filter("customer", .equals("ada"))
///         .filter("total", .atLeast(100))
///         .sorted(by: "total", descending: true)
///         .limit(50))
/// ```
///
/// A query runs on one of the type's declared indexes (`Persistable.indexes`): the one whose
/// first fields carry the equality conditions (`equals`, `isIn`, `isNil`), followed by the
/// field with a range condition or the order, if any. Without such an index it reads every
/// record of the type and gives the same results in the same order, more slowly. A query whose
/// conditions no single index order could serve (ranges on two fields, or an order on a field
/// after a range on another) throws `LocalDatabaseError.invalidQuery`.
///
/// Values compare in the one order of indexes: see <doc:QueriesAndIndexes>. Records come in
/// that order of the index's fields, then by id; with no order and no condition, by id.
public struct Query<T: Persistable>: Sendable {
    var conditions: [(path: [String], condition: QueryCondition)] = []
    var order: (path: [String], descending: Bool)?
    var offset = 0
    var limit: Int?
    var after: QueryCursor?
    /// A key path given to `filter` or `sorted` that names no stored field: running the query
    /// throws `invalidQuery` (a builder cannot throw).
    var unresolvedKeyPath: String?
    /// The predicates given to `filter(_:)`, each with what an index can take of it.
    var predicates: [(predicate: Predicate<T>, translation: PredicateTranslation)] = []
    /// The sort descriptors given to `sorted(by:)`, when they are the order: `order` then holds
    /// the one an index may serve, if any (otherwise the results are sorted in memory).
    var sortDescriptors: [SortDescriptor<T>] = []

    /// Every record of `type`.
    public init(_ type: T.Type = T.self) {}

    /// The records whose field at `field` (a stored key, or a path: `"address.city"`) meets
    /// `condition`, of those the query selected already.
    public func filter(_ field: String, _ condition: QueryCondition) -> Query {
        var query = self
        query.conditions.append((Self.path(field), condition))
        return query
    }

    /// The records in the order of `field`'s values (descending: largest first).
    public func sorted(by field: String, descending: Bool = false) -> Query {
        var query = self
        query.order = (Self.path(field), descending)
        query.sortDescriptors = []
        return query
    }

    /// At most `count` records.
    public func limit(_ count: Int) -> Query {
        var query = self
        query.limit = max(0, count)
        return query
    }

    /// The query cut to its first result, for `first` and `exists`: a limit of one, or of none
    /// when its own limit is zero (a limit means the same in every method).
    var firstResult: Query {
        var query = self
        query.limit = min(limit ?? 1, 1)
        return query
    }

    /// The records after the first `count`.
    public func offset(_ count: Int) -> Query {
        var query = self
        query.offset = max(0, count)
        return query
    }

    /// The records after `cursor`, a position in this query's order that a page gave
    /// (`QueryPage.next`): keyset paging. Unlike an offset, it stays in place while records are
    /// written: a record is never given twice nor skipped because others were added or removed
    /// before it. (A record moved by a write past the position may be seen again, or not at
    /// all, as its new value says.) Nil starts from the first record.
    public func after(_ cursor: QueryCursor?) -> Query {
        var query = self
        query.after = cursor
        return query
    }

    static func path(_ field: String) -> [String] {
        // Most fields are one key: no split (which walks the string by `Character`).
        guard field.utf8.contains(UInt8(ascii: ".")) else { return [field] }
        return field.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }
}

/// What a `Query` asks of one field's value.
///
/// Equality (`equals`, `isIn`) compares values as the index order does: numbers by value
/// whatever their type (`1` equals `1.0`), strings by canonical equivalence. Ranges take only
/// values of the bound's kind: `lessThan(30)` matches numbers below 30, never a missing field
/// or a string.
public struct QueryCondition: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case equals(QueryValue)
        case isIn([QueryValue])
        case isNil
        case range(lower: QueryValue?, lowerInclusive: Bool, upper: QueryValue?, upperInclusive: Bool)
        case hasPrefix(String)
    }

    let kind: Kind

    /// The field's value equals `value`.
    public static func equals<V: Encodable>(_ value: V) -> QueryCondition { QueryCondition(kind: .equals(QueryValue(value))) }
    /// The field's value is one of `values`.
    public static func isIn<V: Encodable>(_ values: [V]) -> QueryCondition { QueryCondition(kind: .isIn(values.map { QueryValue($0) })) }
    /// The field is missing or `nil`.
    public static var isNil: QueryCondition { QueryCondition(kind: .isNil) }
    /// The field's value is below `value`.
    public static func lessThan<V: Encodable>(_ value: V) -> QueryCondition {
        QueryCondition(kind: .range(lower: nil, lowerInclusive: true, upper: QueryValue(value), upperInclusive: false))
    }
    /// The field's value is `value` or below.
    public static func atMost<V: Encodable>(_ value: V) -> QueryCondition {
        QueryCondition(kind: .range(lower: nil, lowerInclusive: true, upper: QueryValue(value), upperInclusive: true))
    }
    /// The field's value is above `value`.
    public static func greaterThan<V: Encodable>(_ value: V) -> QueryCondition {
        QueryCondition(kind: .range(lower: QueryValue(value), lowerInclusive: false, upper: nil, upperInclusive: true))
    }
    /// The field's value is `value` or above.
    public static func atLeast<V: Encodable>(_ value: V) -> QueryCondition {
        QueryCondition(kind: .range(lower: QueryValue(value), lowerInclusive: true, upper: nil, upperInclusive: true))
    }
    /// The field's value is from `lower` to `upper`, both included.
    public static func between<V: Encodable>(_ lower: V, _ upper: V) -> QueryCondition {
        QueryCondition(kind: .range(lower: QueryValue(lower), lowerInclusive: true, upper: QueryValue(upper), upperInclusive: true))
    }
    /// The field is a string that starts with `prefix` (compared in canonical composition).
    public static func hasPrefix(_ prefix: String) -> QueryCondition { QueryCondition(kind: .hasPrefix(prefix)) }
}

/// A value a condition compares with, in the form a model's field stores it.
struct QueryValue: Sendable, Hashable {
    /// The stored JSON of the value, or why it has none.
    let json: Result<[UInt8], Failure>
    /// A `Date`: compared chronologically, on a field declared `.date`.
    let isDate: Bool

    struct Failure: Error, Hashable {
        let reason: String
    }

    init<V: Encodable>(_ value: V) {
        isDate = value is Date
        // The common scalars straight to their stored JSON: the form `ModelEncoder` gives them.
        let scalar: JSONValue? = switch value {
        case let text as String: text.jsonValue
        case let number as Int: number.jsonValue
        case let number as Double: number.jsonValue
        case let flag as Bool: flag.jsonValue
        default: nil
        }
        if let scalar {
            var writer = JSONWriter()
            writer.write(scalar)
            json = .success(writer.bytes)
            return
        }
        do {
            let jsonValue = try ModelEncoder.jsonValue(of: value, at: "value")
            if case let .unencodable(reason) = jsonValue {
                json = .failure(Failure(reason: reason))
                return
            }
            var writer = JSONWriter()
            writer.write(jsonValue)
            json = .success(writer.bytes)
        } catch {
            json = .failure(Failure(reason: "\(error)"))
        }
    }

    /// The value's `IndexKey` encoding, compared as `kind`.
    func encoded(as kind: IndexKey.FieldKind) throws(DatabaseError) -> [UInt8] {
        switch json {
        case let .failure(failure):
            throw .invalidQuery(reason: "a value cannot be compared: \(failure.reason)")
        case let .success(bytes):
            var key: [UInt8] = []
            // Room for the value's tag, its text and a few escapes: one allocation, mostly.
            key.reserveCapacity(bytes.count + 16)
            bytes.withBytes { IndexKey.append(valueAt: 0, in: JSONScanner($0), kind: kind, to: &key) }
            return key
        }
    }
}

/// A position in a query's results, to continue after it (`Query.after(_:)`): opaque, and
/// meaningful for the query whose page gave it. `Codable`, to keep between runs.
public struct QueryCursor: Sendable, Hashable, Codable, CustomStringConvertible {
    let position: [UInt8]

    init(_ cursor: IndexCursor) {
        position = cursor.encoded
    }

    var indexCursor: IndexCursor? { IndexCursor(encoded: position) }

    /// The position, in base 64.
    public var description: String { Data(position).base64EncodedString() }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let data = Data(base64Encoded: try container.decode(String.self)), IndexCursor(encoded: Array(data)) != nil else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a query cursor")
        }
        position = Array(data)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// One page of a query's results, and where the next starts.
public struct QueryPage<T> {
    /// The records of the page, in the query's order.
    public let records: [T]
    /// The position after the last record, for `Query.after(_:)`; nil when this page is the last
    /// (it has fewer records than the query's limit).
    public let next: QueryCursor?
}

extension QueryPage: Sendable where T: Sendable {}
