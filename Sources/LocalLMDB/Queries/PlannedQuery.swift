import Foundation
import LocalLMDBLMDB
import LocalLMDBStore

/// A model query as it runs: the store's query of the candidate records, in order, and what is
/// done with the decoded models after it (a predicate, an order, the page), if anything.
struct PlannedQuery<T: Persistable>: Sendable {
    /// The store's query. With a filter, it has no offset nor limit (the filter applies them).
    let index: IndexQuery
    /// What is left to do on the decoded models; nil when the store's query gives the results.
    let filter: ModelFilter<T>?
}

/// The work a query leaves to the decoded models: predicates the index conditions did not
/// state exactly, an order no index serves, and the page (offset and limit), applied after them.
struct ModelFilter<T: Persistable>: Sendable {
    /// Evaluated on each candidate, in the order given; a model is a result when all accept it.
    let predicates: [Predicate<T>]
    /// The order to sort the results in, in memory; empty when the store's order is the results'.
    let sort: [SortDescriptor<T>]
    let offset: Int
    let limit: Int?
    /// The store's query may give a record more than once (an `each` index): later ones are skipped.
    let deduplicates: Bool
    /// A declared index serves the store's query (it reads from a position cheaply): a read that
    /// stops early reads the candidates in chunks (`firstChunk`).
    let servedByIndex: Bool

    /// Whether `model` is a result.
    func accepts(_ model: T) throws(DatabaseError) -> Bool {
        for predicate in predicates {
            do {
                guard try predicate.evaluate(model) else { return false }
            } catch {
                throw .invalidQuery(reason: "the predicate threw while evaluated: \(error)")
            }
        }
        return true
    }
}

extension QueryPlan {
    /// How `query` runs: its whole plan, for the reads that decode models.
    ///
    /// A query of field conditions alone is `indexQuery(_:)`. A predicate's conditions are
    /// optional: they are tried all together, then the equalities with each other one, then the
    /// equalities alone, then none, each set with the order and then without it (which is then
    /// sorted in memory, when it came from sort descriptors); a condition left out is evaluated
    /// instead.
    /// - Throws: As `indexQuery(_:)`; `invalidQuery` for a cursor on an order sorted in memory,
    ///   or a page of one (`paged`: its next page could not continue it).
    static func plan<T: Persistable>(_ query: Query<T>, paged: Bool = false) throws(DatabaseError) -> PlannedQuery<T> {
        if query.predicates.isEmpty, query.sortDescriptors.isEmpty {
            return PlannedQuery(index: try indexQuery(query), filter: nil)
        }
        if let keyPath = query.unresolvedKeyPath {
            throw .invalidQuery(reason: "the key path \(keyPath) is not a stored property of \(T.self) (nor of a stored value in it)")
        }
        let classNames = RecordEncoding.classNames(T.self)
        let declared = IndexDeclarations.planning(T.self)
        // What an index can take of the predicates: element conditions only on `each` fields.
        var optional: [(path: [String], condition: QueryCondition)] = []
        var dropped = false
        for (_, translation) in query.predicates {
            for condition in translation.conditions {
                if condition.onElements != declared.elementFields.contains(condition.path) {
                    dropped = true
                } else {
                    optional.append((condition.path, condition.condition))
                }
            }
        }
        // The common case first: the predicates are exact and the index serves all their
        // conditions and the order. (Planned once more below when it does not.)
        if !dropped, query.predicates.allSatisfy({ $0.translation.isExact }) {
            let shape = Shape(conditions: query.conditions + optional, order: query.order, offset: query.offset, limit: query.limit, after: query.after)
            if let planned = try? indexQuery(shape, classNames: classNames, declared: declared),
               query.sortDescriptors.isEmpty || (query.order.map { planned.definition.fields.last?.path == $0.path } ?? false) {
                return PlannedQuery(index: planned, filter: nil)
            }
        }
        // The sets of optional conditions to try, most first: all; the equalities with each
        // other condition in turn (one range is what an index order serves); the equalities;
        // none. By their positions in `optional`.
        let equalities = optional.indices.filter { isEquality(optional[$0].condition.kind) }
        var sets: [[Int]] = [Array(optional.indices)]
        for other in optional.indices where !equalities.contains(other) { sets.append(equalities + [other]) }
        sets += [equalities, []]
        let orderIsOptional = !query.sortDescriptors.isEmpty
        var attempts: [(conditions: [(path: [String], condition: QueryCondition)], order: Bool)] = []
        var tried: Set<[Int]> = []
        for set in sets where tried.insert(set.sorted()).inserted {
            let conditions = set.map { optional[$0] }
            attempts.append((conditions, true))
            if orderIsOptional, query.order != nil { attempts.append((conditions, false)) }
        }
        var failure: DatabaseError?
        for (conditions, withOrder) in attempts {
            let order = withOrder ? query.order : nil
            let shape = Shape(conditions: query.conditions + conditions, order: order, offset: 0, limit: nil, after: query.after)
            let planned: IndexQuery
            do {
                planned = try indexQuery(shape, classNames: classNames, declared: declared)
            } catch {
                failure = error
                continue
            }
            // Descriptors' ties come by id: an index with fields after the order's would order
            // them by those first.
            if orderIsOptional, let order, planned.definition.fields.last?.path != order.path { continue }
            let evaluates = dropped || conditions.count < optional.count
                ? query.predicates.map(\.predicate)
                : query.predicates.filter { !$0.translation.isExact }.map(\.predicate)
            let sortsInMemory = !query.sortDescriptors.isEmpty && order == nil
            if evaluates.isEmpty, !sortsInMemory {
                // The index states the predicates exactly and gives the order: the store's page.
                var exact = planned
                exact.offset = query.offset
                exact.limit = query.limit
                return PlannedQuery(index: exact, filter: nil)
            }
            if sortsInMemory, query.after != nil || paged {
                throw .invalidQuery(reason: "a cursor continues an order an index serves; this query's order is sorted in memory (read it with an offset)")
            }
            return PlannedQuery(index: planned, filter: ModelFilter(
                predicates: evaluates, sort: sortsInMemory ? query.sortDescriptors : [], offset: query.offset, limit: query.limit,
                deduplicates: planned.definition.isMultiEntry, servedByIndex: declared.definitions.contains(planned.definition)))
        }
        throw failure ?? .invalidQuery(reason: "the query cannot be planned")
    }
}

/// The plan of a query, for tests and for users: which index serves it, and what is left to
/// the decoded models (`Query.explain()`).
public struct QueryExplanation: Sendable, Hashable, CustomStringConvertible {
    /// The declared index the query reads (as `Index.description`); nil when none serves it and
    /// it reads every record of the type.
    public let index: String?
    /// The stored fields whose values select and order the records, in the index's order (of
    /// the declared index, or computed from each record when none serves the query).
    public let fields: [String]
    /// Whether a predicate (or a part of one) is evaluated on each decoded candidate.
    public let evaluatesPredicate: Bool
    /// Whether the results are sorted in memory rather than read in an index's order.
    public let sortsInMemory: Bool

    public var description: String {
        var parts = [index.map { "index \($0)" } ?? "scan of every record"]
        if !fields.isEmpty { parts.append("on " + fields.joined(separator: ", ")) }
        if evaluatesPredicate { parts.append("then the predicate on each model") }
        if sortsInMemory { parts.append("sorted in memory") }
        return parts.joined(separator: ", ")
    }
}

extension Query {
    /// How the query runs: the index it reads (nil: every record of the type), and what is
    /// evaluated on the decoded models. The same on every engine.
    /// - Throws: `LocalDatabaseError.invalidQuery` when it cannot run (as reading it would).
    public func explain() throws -> QueryExplanation {
        do throws(DatabaseError) {
            let planned = try QueryPlan.plan(self)
            let declared = IndexDeclarations.planning(T.self).definitions
            let definition = planned.index.definition
            let index = declared.contains(definition) ? definition.name : nil
            return QueryExplanation(
                index: index, fields: definition.fields.map { $0.path.joined(separator: ".") },
                evaluatesPredicate: !(planned.filter?.predicates.isEmpty ?? true),
                sortsInMemory: !(planned.filter?.sort.isEmpty ?? true))
        } catch { throw LocalDatabaseError(error) }
    }
}
