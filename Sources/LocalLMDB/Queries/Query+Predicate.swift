import Foundation

extension Query {
    /// The records `predicate` accepts, in the order of `sortBy` (by id when it is empty).
    ///
    /// ```swift
    /// let adults = try await database.read(
    ///     Query(User.self, where: #Predicate { $0.age >= 18 && $0.city == "Lyon" },
    ///           sortBy: [SortDescriptor(\.name)]).limit(50))
    /// ```
    ///
    /// Every predicate gives the results `Array.filter` would over the same models; indexes
    /// only make it faster. See `filter(_:)-(Predicate<T>)` and `sorted(by:)-([SortDescriptor<T>])`.
    public init(_ type: T.Type = T.self, where predicate: Predicate<T>, sortBy: [SortDescriptor<T>] = []) {
        self = Query(type).filter(predicate)
        if !sortBy.isEmpty { self = sorted(by: sortBy) }
    }

    /// The records `predicate` accepts, of those the query selected already.
    ///
    /// The parts of the predicate an index can serve become conditions on the model's stored
    /// fields (for a `@StoredModel` type: equalities, ranges, `||` of equalities on one field,
    /// `contains` on an array an `each` index takes, `starts(with:)`); the rest is evaluated on
    /// each decoded model while the records are read, before the offset, the limit and a
    /// cursor apply. So every predicate gives correct results, and only the speed depends on the
    /// indexes: `explain()` tells which index a query uses and what is evaluated.
    ///
    /// A predicate that throws while evaluated makes the query throw
    /// `LocalDatabaseError.invalidQuery`.
    public func filter(_ predicate: Predicate<T>) -> Query {
        var query = self
        query.predicates.append((predicate, PredicateTranslation.of(predicate, over: T.self)))
        return query
    }

    /// The records in the order of `descriptors` (the first, then the next for ties, …), as
    /// `Array.sorted(using:)` would sort them; records equal in all come by id, in the first
    /// descriptor's direction (as an index's order gives them).
    ///
    /// An index serves the order when there is one descriptor, on a stored property whose type
    /// compares in an index as in Swift (`String` compared as `Comparable`, integers, `Double`,
    /// a `Date` some index declares `.date`), and the conditions leave that order to the index.
    /// Otherwise the results are sorted in memory after the predicate: the query reads every
    /// match before its limit, and its pages cannot be continued by cursor (`readPage` and
    /// `Query.after(_:)` throw `invalidQuery`; use an offset).
    public func sorted(by descriptors: [SortDescriptor<T>]) -> Query {
        var query = self
        query.sortDescriptors = descriptors
        query.order = descriptors.count == 1 ? Self.servedOrder(descriptors[0]) : nil
        return query
    }

    /// `sorted(by: [descriptor])`.
    public func sorted(by descriptor: SortDescriptor<T>) -> Query {
        sorted(by: [descriptor])
    }

    /// The index order that gives `descriptor`'s, when there is one.
    private static func servedOrder(_ descriptor: SortDescriptor<T>) -> (path: [String], descending: Bool)? {
        guard descriptor.stringComparator == nil, let keyPath = descriptor.keyPath,
              let stored = T.self as? any StoredValue.Type, let path = stored.storedPath(of: keyPath) else { return nil }
        let valueType = Swift.type(of: keyPath).valueType
        // An optional's `nil` sorts first in Swift; a missing field's place in an index is its own.
        guard !(valueType is any OptionalProtocol.Type) else { return nil }
        switch valueType {
        case is String.Type, is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type,
             is UInt32.Type, is UInt16.Type, is UInt8.Type, is Double.Type, is Float.Type:
            break
        case is Date.Type:
            // Chronological only where an index compares the field as dates.
            guard IndexDeclarations.planning(T.self).dateFields.contains(path) else { return nil }
        default:
            return nil
        }
        return (path, descriptor.order == .reverse)
    }
}
