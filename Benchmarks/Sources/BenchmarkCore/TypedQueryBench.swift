import Foundation
import GRDB
import LocalLMDBModels

/// The query workload's order as a macro'd model (`@StoredModel`), queried with `#Predicate` and
/// `SortDescriptor`: the same records and indexes as `QueryBench.QueryOrder`, stored as its
/// synthesized `Codable` stores them.
@StoredModel
public struct TypedQueryOrder: Sendable {
    #StoredIndex<TypedQueryOrder>(\.status, \.total)
    @Indexed(unique: true) public var customer: String
    @Indexed(counted: true) public var total: Int
    public var status: String
    public var note: String
}

/// The typed half of the query workload: the same queries through `#Predicate` on the macro'd
/// model, against the same string `Query` on it, GRDB, and `read()` plus a hand-written filter.
enum TypedQueryBench {
    struct Result {
        var predicateEquality = 0.0
        var stringEquality = 0.0
        var predicatePage = 0.0
        var stringPage = 0.0
        /// Seconds: an unserved predicate over every order, and `read()` then the same filter by hand.
        var unserved = 0.0
        var readAndFilter = 0.0
        var unservedMatches = 0
    }

    static func run(
        directory: URL, orders: [QueryBench.QueryOrder], ids: [String], lookups: [Int], lowerBounds: [Int], repetitions: Int,
        log: (String) -> Void
    ) async throws -> Result {
        let database = try LocalDatabase(directory: directory.appendingPathComponent("typed"))
        _ = try await database.write(contentsOf: zip(ids, orders).map { id, order in
            Record(id: id, data: TypedQueryOrder(customer: order.customer, total: order.total, status: order.status, note: order.note))
        })
        var result = Result()
        log("queries, \(orders.count) orders: typed (#Predicate)…")
        result.predicateEquality = Double(lookups.count) / (try await QueryBench.best(repetitions) {
            try await QueryBench.seconds {
                for index in lookups {
                    let customer = orders[index].customer
                    _ = try await database.first(Query(TypedQueryOrder.self, where: #Predicate { $0.customer == customer }))
                }
            }
        })
        result.stringEquality = Double(lookups.count) / (try await QueryBench.best(repetitions) {
            try await QueryBench.seconds {
                for index in lookups { _ = try await database.first(Query(TypedQueryOrder.self).filter("customer", .equals(orders[index].customer))) }
            }
        })
        result.predicatePage = Double(lowerBounds.count) / (try await QueryBench.best(repetitions) {
            try await QueryBench.seconds {
                for lower in lowerBounds {
                    _ = try await database.read(Query(TypedQueryOrder.self, where: #Predicate { $0.total >= lower }, sortBy: [SortDescriptor(\.total)]).limit(50))
                }
            }
        })
        result.stringPage = Double(lowerBounds.count) / (try await QueryBench.best(repetitions) {
            try await QueryBench.seconds {
                for lower in lowerBounds { _ = try await database.read(Query(TypedQueryOrder.self).filter("total", .atLeast(lower)).sorted(by: "total").limit(50)) }
            }
        })
        // No index serves `%` nor `||` across two fields: every order is decoded and evaluated.
        let unserved = Query(TypedQueryOrder.self, where: #Predicate { $0.total % 10 == 0 || $0.status == "returned" })
        var matches = 0
        result.unserved = try await QueryBench.best(min(repetitions, 3)) {
            try await QueryBench.seconds { matches = try await database.read(unserved).count }
        }
        var byHand = 0
        result.readAndFilter = try await QueryBench.best(min(repetitions, 3)) {
            try await QueryBench.seconds {
                let all: [TypedQueryOrder] = try await database.read()
                byHand = all.filter { $0.total % 10 == 0 || $0.status == "returned" }.count
            }
        }
        await database.close()
        guard matches == byHand else { throw Mismatch(predicate: matches, byHand: byHand) }
        result.unservedMatches = matches
        return result
    }

    struct Mismatch: Error { let predicate: Int, byHand: Int }

    /// The lines the query section adds for the typed model, against GRDB's measures of the same queries.
    static func markdown(_ result: Result, grdbEquality: Double?, grdbPage: Double?, count: Int) -> String {
        func ratio(_ value: Double, _ other: Double?) -> String { other.map { String(format: "%.1f×", value / $0) } ?? "–" }
        var text = "\nThe same orders as a macro'd model (`@StoredModel`), queried with `#Predicate` and `SortDescriptor`:\n\n"
        text += "| workload | #Predicate | string Query | #Predicate ÷ string | #Predicate ÷ GRDB |\n|---|---:|---:|---:|---:|\n"
        text += "| equality, one record (queries/s) | \(QueryBench.format(result.predicateEquality)) | \(QueryBench.format(result.stringEquality)) | "
        text += "\(String(format: "%.2f", result.predicateEquality / result.stringEquality)) | \(ratio(result.predicateEquality, grdbEquality)) |\n"
        text += "| page of 50 from a range, ordered (pages/s) | \(QueryBench.format(result.predicatePage)) | \(QueryBench.format(result.stringPage)) | "
        text += "\(String(format: "%.2f", result.predicatePage / result.stringPage)) | \(ratio(result.predicatePage, grdbPage)) |\n"
        text += "\nA predicate no index serves (`total % 10 == 0 || status == \"returned\"`, \(result.unservedMatches) of \(count) orders), "
        text += "evaluated on every decoded order: \(String(format: "%.3f", result.unserved)) s; `read()` then the same filter by hand: "
        text += "\(String(format: "%.3f", result.readAndFilter)) s (\(String(format: "%.2f", result.unserved / result.readAndFilter))×).\n"
        return text
    }
}
