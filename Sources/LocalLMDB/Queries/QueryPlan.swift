import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// Turns a model's `Query` into the store's `IndexQuery`: chooses the index that serves it, and
/// writes its conditions as ranges of that index's tuples.
enum QueryPlan {
    /// The store's query for `query` of `T`.
    /// - Throws: `invalidQuery` when no index order can serve the conditions and order together,
    ///   or a value cannot be compared.
    static func indexQuery<T: Persistable>(_ query: Query<T>) throws(DatabaseError) -> IndexQuery {
        if let keyPath = query.unresolvedKeyPath {
            throw .invalidQuery(reason: "the key path \(keyPath) is not a stored property of \(T.self) (nor of a stored value in it)")
        }
        return try indexQuery(
            Shape(conditions: query.conditions, order: query.order, offset: query.offset, limit: query.limit, after: query.after),
            classNames: RecordEncoding.classNames(T.self), declared: IndexDeclarations.planning(T.self))
    }

    /// What a query asks, whatever its model type.
    struct Shape {
        var conditions: [(path: [String], condition: QueryCondition)]
        var order: (path: [String], descending: Bool)?
        var offset = 0
        var limit: Int?
        var after: QueryCursor?
    }

    /// What planning needs of the indexes a type declares, worked out once (`IndexDeclarations.planning`).
    struct Declared {
        let definitions: [IndexDefinition]
        /// The fields some declared index takes element by element (`each`).
        let elementFields: [[String]]
        /// The fields some declared index compares as dates.
        let dateFields: [[String]]

        init(_ definitions: [IndexDefinition]) {
            self.definitions = definitions
            var elementFields: [[String]] = []
            var dateFields: [[String]] = []
            for definition in definitions {
                if definition.isMultiEntry, let first = definition.fields.first, !elementFields.contains(first.path) {
                    elementFields.append(first.path)
                }
                for field in definition.fields where field.kind == .date && !dateFields.contains(field.path) {
                    dateFields.append(field.path)
                }
            }
            self.elementFields = elementFields
            self.dateFields = dateFields
        }
    }

    /// A query's conditions, one per field in the order of their first mention: a handful, so
    /// searched in turn.
    typealias Conditions = [(path: [String], kind: QueryCondition.Kind)]

    /// The condition on the field at `path`, if any.
    static func condition(on path: [String], in conditions: Conditions) -> QueryCondition.Kind? {
        conditions.first { $0.path == path }?.kind
    }

    /// The store's query for `query` of the records stored under `classNames`, whose type
    /// declares `declaredIndexes` (for a query by class name alone: the indexes stored for it).
    static func indexQuery(_ query: Shape, classNames: [String], declaredIndexes: [IndexDefinition]) throws(DatabaseError) -> IndexQuery {
        try indexQuery(query, classNames: classNames, declared: Declared(declaredIndexes))
    }

    static func indexQuery(_ query: Shape, classNames: [String], declared: Declared) throws(DatabaseError) -> IndexQuery {
        // Conditions by field, one per field (two ranges on a field make one).
        var byField: Conditions = []
        byField.reserveCapacity(query.conditions.count)
        for (path, condition) in query.conditions {
            guard !path.contains(where: \.isEmpty) else { throw .invalidQuery(reason: "the field path '\(path.joined(separator: "."))' has an empty key") }
            if let at = byField.firstIndex(where: { $0.path == path }) {
                byField[at].kind = try combine(byField[at].kind, condition.kind, path)
            } else {
                byField.append((path, condition.kind))
            }
        }
        // With no condition and no order, records come by id: no declared index is wanted.
        // Each field means one thing whatever index serves the query: a field some declared
        // index takes element by element (`each`) is matched so by every query, and one
        // declared a date is compared chronologically by every query.
        if !byField.isEmpty || query.order != nil {
            for definition in declared.definitions {
                // An `each` index serves only a query with a condition on its elements.
                if definition.isMultiEntry, !(definition.fields.first.map { field in byField.contains { $0.path == field.path } } ?? false) { continue }
                if let ranges = try ranges(serving: byField, order: query.order, with: definition) {
                    return try withCursor(IndexQuery(
                        classNames: classNames, definition: definition, ranges: ranges,
                        descending: query.order?.descending ?? false, offset: query.offset, limit: query.limit), query)
                }
            }
        }
        // No declared index serves it: an index of the query's own fields, which the store
        // evaluates record by record (the same results, by a scan).
        var equalities = byField.filter { isEquality($0.kind) }.map(\.path)
        let others = byField.filter { !isEquality($0.kind) }.map(\.path)
        guard others.count <= 1 else {
            throw .invalidQuery(reason: "ranges on two fields (\(others.map { $0.joined(separator: ".") }.joined(separator: ", "))) cannot be served by one index order")
        }
        // A field matched element by element comes first, where a tuple can take its elements.
        let elementConditions = byField.map(\.path).filter(declared.elementFields.contains)
        guard elementConditions.count <= 1 else {
            throw .invalidQuery(reason: "conditions on the elements of two array fields cannot be served by one index order")
        }
        if let element = elementConditions.first, equalities.contains(element) {
            equalities.removeAll { $0 == element }
            equalities.insert(element, at: 0)
        } else if let element = elementConditions.first, !equalities.isEmpty {
            throw .invalidQuery(reason: "a range on the elements of '\(element.joined(separator: "."))' and another condition cannot be served by one index order")
        }
        if let order = query.order, let at = equalities.firstIndex(of: order.path), elementConditions.first != order.path {
            // Ordered by an equality's field: the last of them.
            equalities.remove(at: at)
            equalities.append(order.path)
        }
        var fields = equalities + others
        if let order = query.order, !fields.contains(order.path) {
            guard others.isEmpty else {
                throw .invalidQuery(reason: "an order on '\(order.path.joined(separator: "."))' after a range on '\(others[0].joined(separator: "."))' cannot be served by one index order")
            }
            fields.append(order.path)
        }
        let definition = IndexDefinition(
            fields: fields.map { path in
                IndexDefinition.Field(path: path, kind: declared.dateFields.contains(path) ? .date : kind(for: condition(on: path, in: byField)))
            },
            isUnique: false, isMultiEntry: elementConditions.first.map { fields.first == $0 } ?? false)
        guard let ranges = try ranges(serving: byField, order: query.order, with: definition) else {
            throw .invalidQuery(reason: "the order and conditions cannot be served by one index order")
        }
        return try withCursor(IndexQuery(
            classNames: classNames, definition: definition, ranges: ranges,
            descending: query.order?.descending ?? false, offset: query.offset, limit: query.limit), query)
    }

    /// `indexQuery` starting after the query's cursor.
    static func withCursor(_ indexQuery: IndexQuery, _ query: Shape) throws(DatabaseError) -> IndexQuery {
        guard let after = query.after else { return indexQuery }
        guard let cursor = after.indexCursor else { throw .invalidQuery(reason: "the cursor is not one a query page gave") }
        var indexQuery = indexQuery
        indexQuery.after = cursor
        return indexQuery
    }

    static func isEquality(_ kind: QueryCondition.Kind) -> Bool {
        switch kind {
        case .equals, .isIn, .isNil: true
        case .range, .hasPrefix: false
        }
    }

    /// The kind a field is compared as when the query's own index is used: a date when its
    /// values are dates.
    static func kind(for condition: QueryCondition.Kind?) -> IndexKey.FieldKind {
        switch condition {
        case let .equals(value)?: value.isDate ? .date : .automatic
        case let .isIn(values)?: values.contains(where: \.isDate) ? .date : .automatic
        case let .range(lower, _, upper, _)?: (lower?.isDate ?? false) || (upper?.isDate ?? false) ? .date : .automatic
        default: .automatic
        }
    }

    /// Two conditions on one field as one: a lower and an upper bound.
    static func combine(_ first: QueryCondition.Kind, _ second: QueryCondition.Kind, _ path: [String]) throws(DatabaseError) -> QueryCondition.Kind {
        if case let .range(lower1, lowerInclusive1, upper1, upperInclusive1) = first,
           case let .range(lower2, lowerInclusive2, upper2, upperInclusive2) = second,
           (lower1 == nil) != (lower2 == nil), (upper1 == nil) != (upper2 == nil) {
            return .range(
                lower: lower1 ?? lower2, lowerInclusive: lower1 != nil ? lowerInclusive1 : lowerInclusive2,
                upper: upper1 ?? upper2, upperInclusive: upper1 != nil ? upperInclusive1 : upperInclusive2)
        }
        throw .invalidQuery(reason: "the field '\(path.joined(separator: "."))' has two conditions that do not make one range")
    }

    /// The ranges of `definition`'s tuples that `conditions` select, when the index serves them
    /// and `order`: equalities on its first fields, then at most a range, and the order on the
    /// field after the equalities (or none). Nil when it does not.
    static func ranges(
        serving conditions: Conditions, order: (path: [String], descending: Bool)?, with definition: IndexDefinition
    ) throws(DatabaseError) -> [IndexRange]? {
        var prefixes: [[UInt8]] = [[]]
        var used = 0
        var fieldIndex = 0
        var lower: IndexRange.Bound?
        var upper: IndexRange.Bound?
        var rangeField: Int?
        // The equalities' fields with more than one distinct value (`isIn(["al", "al"])` has one).
        var multiValued: [Int] = []
        while fieldIndex < definition.fields.count, used < conditions.count {
            let field = definition.fields[fieldIndex]
            guard let condition = condition(on: field.path, in: conditions) else { break }
            // A value compared as a date needs a field declared a date, and the reverse.
            switch condition {
            case let .equals(value):
                guard value.isDate == (field.kind == .date) else { return nil }
                let encoded = try value.encoded(as: field.kind)
                if prefixes.count == 1, prefixes[0].isEmpty {
                    prefixes[0] = encoded
                } else {
                    for at in prefixes.indices { prefixes[at].append(contentsOf: encoded) }
                }
            case let .isIn(values):
                guard values.allSatisfy({ $0.isDate == (field.kind == .date) }) else { return nil }
                if values.isEmpty { return [.nothing] }
                var encodings: [[UInt8]] = []
                for value in values { encodings.append(try value.encoded(as: field.kind)) }
                let distinct = Set(encodings).sorted { $0.lexicographicallyPrecedes($1) }
                if distinct.count > 1 { multiValued.append(fieldIndex) }
                prefixes = prefixes.flatMap { prefix in distinct.map { prefix + $0 } }
            case .isNil:
                var missing: [UInt8] = []
                IndexKey.appendMissing(to: &missing)
                for at in prefixes.indices { prefixes[at].append(contentsOf: missing) }
            case let .range(lowerValue, lowerInclusive, upperValue, upperInclusive):
                guard ((lowerValue?.isDate ?? false) || (upperValue?.isDate ?? false)) == (field.kind == .date) else { return nil }
                let lowerBytes = try lowerValue?.encoded(as: field.kind)
                let upperBytes = try upperValue?.encoded(as: field.kind)
                // A range takes the values of its bound's kind only (its encoding's first byte).
                let lowerKind = lowerBytes.map { IndexKey.kindTags(of: $0.first ?? 0) }
                let upperKind = upperBytes.map { IndexKey.kindTags(of: $0.first ?? 0) }
                if let lowerKind, let upperKind, lowerKind != upperKind {
                    throw .invalidQuery(reason: "the range on '\(field.path.joined(separator: "."))' has bounds of two kinds")
                }
                guard let kind = lowerKind ?? upperKind else { return nil }
                lower = IndexRange.Bound(lowerBytes ?? [kind.first], inclusive: lowerBytes == nil ? true : lowerInclusive)
                upper = IndexRange.Bound(upperBytes ?? [kind.last], inclusive: upperBytes == nil ? true : upperInclusive)
                rangeField = fieldIndex
            case let .hasPrefix(prefix):
                guard field.kind == .automatic else { return nil }
                let bytes = IndexKey.stringPrefix(prefix)
                lower = IndexRange.Bound(bytes, inclusive: true)
                upper = IndexRange.Bound(bytes, inclusive: true)
                rangeField = fieldIndex
            }
            used += 1
            fieldIndex += 1
            if rangeField != nil { break }
        }
        guard used == conditions.count else { return nil }
        if let order {
            // The order must be that of the field after the equalities (the range's, or the
            // next), with one value for each equality; or that of the last equality's field,
            // the only one with several values.
            let orderField = rangeField ?? fieldIndex
            if orderField < definition.fields.count, definition.fields[orderField].path == order.path {
                guard multiValued.isEmpty else { return nil }
            } else {
                let last = (rangeField ?? fieldIndex) - 1
                guard rangeField == nil, last >= 0, definition.fields[last].path == order.path, multiValued.allSatisfy({ $0 == last }) else {
                    return nil
                }
            }
        }
        if used == 0 { return [] }
        // One prefix (equalities of one value each) needs no sort; a bound the conditions leave
        // open is the prefix itself, shared rather than copied.
        if prefixes.count > 1 { prefixes.sort { $0.lexicographicallyPrecedes($1) } }
        return prefixes.map { prefix in
            IndexRange(lower: bound(prefix, then: lower), upper: bound(prefix, then: upper))
        }
    }

    /// The bound of a range's tuples: `prefix` (the equalities' values), then `bound`'s bytes if
    /// any; inclusive when `bound` is nil.
    private static func bound(_ prefix: [UInt8], then bound: IndexRange.Bound?) -> IndexRange.Bound {
        guard let bound else { return IndexRange.Bound(prefix, inclusive: true) }
        guard !prefix.isEmpty else { return bound }
        return IndexRange.Bound(prefix + bound.bytes, inclusive: bound.inclusive)
    }
}
