import Foundation
@testable import LocalLMDB
@testable import LocalLMDBJSON
@testable import LocalLMDBStore

/// A record whose field `v` holds a value of any kind (written through a data object), indexed.
final class FuzzRow: Storable {
    static let indexes: [Index] = [.on("v")]
    let value: OrderTargets.Value
    init(_ value: OrderTargets.Value) { self.value = value }
    required init(dataObject: DataObject) { value = .missing }
    func toDataObject() -> DataObject { FuzzRow.write(value, to: DataObject(self)) }

    static func write(_ value: OrderTargets.Value, to object: DataObject) -> DataObject {
        switch value {
        case .missing: return object
        case let .bool(flag): return object.add(key: "v", value: flag)
        case let .number(text): return object.add(key: "v", value: Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) ?? 0)
        case let .double(double): return object.add(key: "v", value: double)
        case let .string(text): return object.add(key: "v", value: text)
        case let .date(interval): return object.add(key: "v", value: Date(timeIntervalSinceReferenceDate: interval))
        case .composite: return object.add(key: "v", value: ["a"])
        }
    }
}

/// The same fields with no index: its queries are scans.
final class FuzzRowScanned: Storable {
    let value: OrderTargets.Value
    init(_ value: OrderTargets.Value) { self.value = value }
    required init(dataObject: DataObject) { value = .missing }
    func toDataObject() -> DataObject { FuzzRow.write(value, to: DataObject(self)) }
}

enum DatabaseTargets {
    /// One database for the run, in a temporary directory, without syncs (nothing here outlives
    /// the process).
    nonisolated(unsafe) static var database: SerializationDatabase = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-fuzz-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        var configuration = DatabaseConfiguration()
        configuration.durability = .none
        guard let database = try? SerializationDatabase(directory: directory, configuration: configuration) else {
            mismatch("the fuzz database could not be opened")
        }
        atexit { try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-fuzz-\(getpid())")) }
        return database
    }()

    /// The values the query target's records hold: few, so that they collide.
    static func rowValue(_ choices: inout Choices) -> OrderTargets.Value {
        let strings = ["", "a", "a\u{0}", "\u{0}", "ab", "é", "e\u{301}", "b", "a\u{0}a", "NaN"]
        switch choices.int(below: 6) {
        case 0: return .missing
        case 1: return .bool(choices.byte() & 1 == 1)
        case 2: return .double([-1.5, 0, -0.0, 1, 2.5, .infinity, -.infinity, .nan, 1e300][choices.int(below: 9)])
        case 3: return .number(["1", "1.0", "-2", "10", "0.1", "100000000000000000001"][choices.int(below: 6)])
        default: return .string(strings[choices.int(below: strings.count)])
        }
    }

    static func condition(for value: OrderTargets.Value, _ choices: inout Choices) -> (QueryCondition, (Int) -> Bool, String)? {
        let query: QueryValueMaker
        switch value {
        case .missing: return (.isNil, { _ in false }, "nil")  // checked apart
        case let .bool(flag): query = QueryValueMaker { $0(flag) }
        case let .double(double) where !double.isNaN: query = QueryValueMaker { $0(double) }
        case let .number(text): guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { return nil }; query = QueryValueMaker { $0(decimal) }
        case let .string(text): query = QueryValueMaker { $0(text) }
        default: return nil
        }
        switch choices.int(below: 6) {
        case 0: return (query.make { .equals($0) }, { $0 == 0 }, "=")
        case 1: return (query.make { .lessThan($0) }, { $0 < 0 }, "<")
        case 2: return (query.make { .atMost($0) }, { $0 <= 0 }, "<=")
        case 3: return (query.make { .greaterThan($0) }, { $0 > 0 }, ">")
        case 4: return (query.make { .atLeast($0) }, { $0 >= 0 }, ">=")
        default:
            guard case let .string(prefix) = value else { return (query.make { .equals($0) }, { $0 == 0 }, "=") }
            return (.hasPrefix(prefix), { _ in true }, "prefix")
        }
    }

    /// A query's answer on the index and by a scan against the same filter applied to the
    /// records by the documented order.
    static func query(_ input: UnsafeRawBufferPointer) {
        var choices = Choices(input)
        let values = (0..<choices.int(below: 9)).map { _ in rowValue(&choices) }
        let database = Self.database
        _ = database.delete(FuzzRow.self)
        _ = database.delete(FuzzRowScanned.self)
        let ids = values.indices.map { "r\($0)" }
        _ = database.write(contentsOf: values.indices.map { Record(id: ids[$0], data: FuzzRow(values[$0])) })
        _ = database.write(contentsOf: values.indices.map { Record(id: "s" + ids[$0].dropFirst(), data: FuzzRowScanned(values[$0])) })
        let bound = rowValue(&choices)
        guard let (condition, holds, name) = condition(for: bound, &choices) else { return }
        // The records the documented order selects, by value then id.
        var selected = values.indices.filter { index in
            let value = values[index]
            switch (condition.kind, bound) {
            case (.isNil, _): if case .missing = value { return true } else { return false }
            case let (.hasPrefix(prefix), _):
                guard case let .string(text) = value else { return false }
                return OrderTargets.composed(text).starts(with: OrderTargets.composed(prefix))
            case (.range, _):
                // A range takes values of its bound's kind only.
                guard OrderTargets.rank(value, dates: false) == OrderTargets.rank(bound, dates: false) else { return false }
                return holds(OrderTargets.compare(value, bound, dates: false))
            default:
                return holds(OrderTargets.compare(value, bound, dates: false))
            }
        }
        selected.sort { left, right in
            let order = OrderTargets.compare(values[left], values[right], dates: false)
            return order != 0 ? order < 0 : ids[left] < ids[right]
        }
        let expected = selected.map { ids[$0] }
        let indexed = database.readIDs(Query(FuzzRow.self).filter("v", condition))
        let scanned = database.readIDs(Query(FuzzRowScanned.self).filter("v", condition))
        if indexed != expected || scanned != expected.map({ "s" + $0.dropFirst() }) {
            mismatch("\(name) \(bound) over \(values): indexed \(indexed), scanned \(scanned), expected \(expected) (\(String(describing: database.lastError)))")
        }
        if database.count(Query(FuzzRow.self).filter("v", condition)) != expected.count { mismatch("count of \(name) \(bound) over \(values)") }
    }

    /// Change tokens and query cursors an app stored and hands back, whatever their bytes: no
    /// crash, and a page after any cursor is the records after its position, in order.
    static func tokens(_ input: UnsafeRawBufferPointer) {
        let database = Self.database
        if let token = try? JSONDecoder().decode(ChangeToken.self, from: Data(input)) {
            _ = database.changes(since: token)
        }
        _ = try? JSONDecoder().decode(QueryCursor.self, from: Data(input))
        // The records: a fixed few, written once.
        let values: [OrderTargets.Value] = [.string("a"), .string("a\u{0}"), .string(""), .double(1), .missing, .bool(true), .string("b"), .double(-0.5)]
        if database.count(FuzzRow.self) != values.count || database.count(FuzzRowScanned.self) != 0 {
            _ = database.delete(FuzzRow.self)
            _ = database.delete(FuzzRowScanned.self)
            _ = database.write(contentsOf: values.indices.map { Record(id: "t\($0)", data: FuzzRow(values[$0])) })
        }
        var choices = Choices(input)
        let cursor = IndexCursor(tuple: choices.data(limit: 24), recordKey: choices.data(limit: 6))
        let descending = choices.byte() & 1 == 1
        let limit = 1 + choices.int(below: 8)
        let page = database.readIDs(Query(FuzzRow.self).sorted(by: "v", descending: descending).limit(limit).after(QueryCursor(cursor)))
        let entries = values.indices.map { (tuple: OrderTargets.key(values[$0], kind: .automatic), key: Array("t\($0)".utf8), id: "t\($0)") }
        let after = entries.filter { entry in
            let order = entry.tuple != cursor.tuple
                ? (cursor.tuple.lexicographicallyPrecedes(entry.tuple) ? 1 : -1)
                : (entry.key == cursor.recordKey ? 0 : (cursor.recordKey.lexicographicallyPrecedes(entry.key) ? 1 : -1))
            return descending ? order < 0 : order > 0
        }.sorted { left, right in
            let ascending = left.tuple != right.tuple ? left.tuple.lexicographicallyPrecedes(right.tuple) : left.key.lexicographicallyPrecedes(right.key)
            return descending ? !ascending : ascending
        }
        let expected = Array(after.prefix(limit).map(\.id))
        if page != expected { mismatch("after \(cursor) (descending \(descending), limit \(limit)): \(page), expected \(expected)") }
    }
}

/// Calls a query condition's maker with a value of the bound's own type.
struct QueryValueMaker {
    let body: ((any Encodable & Sendable) -> QueryCondition) -> QueryCondition
    init(_ body: @escaping ((any Encodable & Sendable) -> QueryCondition) -> QueryCondition) { self.body = body }
    func make(_ condition: @escaping (any Encodable & Sendable) -> QueryCondition) -> QueryCondition { body(condition) }
}
