import Foundation
import LocalLMDB

/// A model for the query oracle: a compound index, a multi-entry one, one on doubles.
public struct OracleItem: Codable, Persistable, Equatable, Sendable {
    public static let indexes: [Index] = [.on("group", "rank", counted: true), .each("labels"), .on("weight")]
    public var group: String
    public var rank: Int?
    public var labels: [String]
    public var weight: Double

    public init(group: String, rank: Int?, labels: [String], weight: Double) {
        self.group = group
        self.rank = rank
        self.labels = labels
        self.weight = weight
    }
}

/// Another class, written over items' ids (a record rewritten as another class).
public struct OracleOther: Codable, Persistable, Sendable {
    public var note: String

    public init(note: String) {
        self.note = note
    }
}

/// SplitMix64: a small generator whose runs a seed repeats.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(state: UInt64) {
        self.state = state
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The queries' correctness oracle, on any engine: random histories of writes, batches,
/// deletes, class changes, type deletes, transactions and rollbacks, after each step every
/// query kind's results (content and order, a page of them) compared with the same filter
/// applied in memory to what the history left, itself checked against `read()`. Returns the
/// disagreements, each naming the seed.
public enum QueryOracle {
    // "é" precomposed and decomposed: one group; "a" and the strings it starts with U+0000 after:
    // three groups (a string's key is a prefix of a longer one's).
    static let groups = ["a", "b", "é", "e\u{301}", "e\u{301}x", "a\u{0}", "a\u{0}b", "", "\u{0}"]
    static let labels = ["red", "green", "blue", "", "x\u{0}y"]

    static func randomItem(_ random: inout SeededGenerator) -> OracleItem {
        let weights: [Double] = [-1.5, 0, -0.0, 2, 2.0000001, 1e300, -1e-300, 42, .infinity, -.infinity]
        return OracleItem(
            group: groups.randomElement(using: &random) ?? "a",
            rank: Bool.random(using: &random) ? nil : Int.random(in: -3...3, using: &random),
            labels: (0..<Int.random(in: 0...3, using: &random)).map { _ in labels.randomElement(using: &random) ?? "" },
            weight: weights.randomElement(using: &random) ?? 0)
    }

    /// The oracle's order: by the values (nil first, numbers by value), then by id.
    static func ordered(_ items: [(id: String, item: OracleItem)], by key: (OracleItem) -> Double?, descending: Bool) -> [String] {
        let sorted = items.sorted { left, right in
            let (l, r) = (key(left.item), key(right.item))
            if l != r {
                guard let l else { return true }
                guard let r else { return false }
                return l < r
            }
            return Array(left.id.utf8).lexicographicallyPrecedes(Array(right.id.utf8))
        }.map(\.id)
        return descending ? sorted.reversed() : sorted
    }

    /// The bytes a string is compared by: its UTF-8 in canonical composition (NFC).
    static func composed(_ string: String) -> [UInt8] {
        Array(string.precomposedStringWithCanonicalMapping.utf8)
    }

    /// The oracle's order of the compound index (group, rank): by group's composed bytes, then
    /// by rank (nil first), then by id.
    static func orderedByGroup(_ items: [(id: String, item: OracleItem)]) -> [String] {
        items.sorted { left, right in
            let (l, r) = (composed(left.item.group), composed(right.item.group))
            if l != r { return l.lexicographicallyPrecedes(r) }
            if left.item.rank != right.item.rank {
                guard let lRank = left.item.rank else { return true }
                guard let rRank = right.item.rank else { return false }
                return lRank < rRank
            }
            return Array(left.id.utf8).lexicographicallyPrecedes(Array(right.id.utf8))
        }.map(\.id)
    }

    /// Runs the history of `seed` (`steps` steps) on `database`, which must hold no records.
    public static func run(seed: UInt64, steps: Int = 60, on database: some ObjectDatabase) async throws -> [String] {
        var random = SeededGenerator(state: seed)
        var problems: [String] = []
        var model: [String: OracleItem] = [:]
        var pending: [String: OracleItem]?  // the model inside an open transaction
        for _ in 0..<steps {
            let id = "i\(Int.random(in: 0..<25, using: &random))"
            var current = pending ?? model
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<45:
                let item = randomItem(&random)
                try await database.write(Record(id: id, data: item))
                current[id] = item
            case 45..<55:
                let batch = (0..<Int.random(in: 1...6, using: &random)).map { _ in
                    ("i\(Int.random(in: 0..<25, using: &random))", randomItem(&random))
                }
                _ = try await database.write(contentsOf: batch.map { Record(id: $0.0, data: $0.1) })
                for (batchID, item) in batch { current[batchID] = item }
            case 55..<70:
                _ = try await database.delete(id: id)
                current[id] = nil
            case 70..<78:
                try await database.write(Record(id: id, data: OracleOther(note: "over \(id)")))
                current[id] = nil
            case 78..<80:
                _ = try await database.delete(OracleItem.self)
                current = [:]
            case 80..<90 where pending == nil:
                try await database.startTransaction()
                pending = model
                continue
            case 90..<100 where pending != nil:
                if Bool.random(using: &random) {
                    try await database.commitTransaction()
                    model = current
                } else {
                    try await database.rollbackTransaction()
                }
                pending = nil
                continue
            default:
                continue
            }
            if pending != nil { pending = current } else { model = current }
            problems += try await compare(database, pending ?? model, &random, seed: seed)
        }
        if let open = pending {
            try await database.commitTransaction()
            model = open
        }
        problems += try await compare(database, model, &random, seed: seed)
        return problems
    }

    static func compare(
        _ database: some ObjectDatabase, _ model: [String: OracleItem], _ random: inout SeededGenerator, seed: UInt64
    ) async throws -> [String] {
        var problems: [String] = []
        func check(_ agrees: Bool, _ what: String) {
            if !agrees { problems.append("seed \(seed): \(what)") }
        }
        let items = model.map { (id: $0.key, item: $0.value) }
        // What `read()` gives is what the oracle's model holds: the filters below apply to it.
        let stored = try await database.readIDs(OracleItem.self)
        check(Set(stored) == Set(model.keys) && stored.count == model.count, "the ids read() gives")
        let all: [OracleItem] = try await database.read()
        check(all.count == model.count, "the records read() gives")
        for (id, item) in model {
            let read: OracleItem? = try await database.read(id: id)
            check(read == item, "the record \(id)")
        }
        // A group, ordered by rank, one page of it.
        let group = groups.randomElement(using: &random) ?? "a"
        let descending = Bool.random(using: &random)
        let offset = Int.random(in: 0...3, using: &random)
        let limit = Int.random(in: 1...5, using: &random)
        let inGroup = items.filter { $0.item.group == group }
        let expected = Array(ordered(inGroup, by: { $0.rank.map(Double.init) }, descending: descending).dropFirst(offset).prefix(limit))
        let query = Query(OracleItem.self).filter("group", .equals(group)).sorted(by: "rank", descending: descending).offset(offset).limit(limit)
        let found = try await database.readIDs(query)
        check(found == expected, "group \(group) by rank, descending \(descending), offset \(offset), limit \(limit)")
        let read = try await database.read(query)
        check(read == expected.compactMap { model[$0] }, "the records of the page")
        check(try await database.count(Query(OracleItem.self).filter("group", .equals(group))) == inGroup.count, "count of group \(group)")
        // Keyset paging through the whole group, two at a time: each record once, in order.
        let byRank = Query(OracleItem.self).filter("group", .equals(group)).sorted(by: "rank", descending: descending).limit(2)
        var paged: [OracleItem] = []
        var cursor: QueryCursor?
        for pageNumber in 0...(inGroup.count / 2 + 1) {
            let page = try await database.readPage(byRank.after(cursor))
            paged += page.records
            cursor = page.next
            // What is left after the first page, counted from its cursor.
            if pageNumber == 0, let next = page.next {
                let rest = Query(OracleItem.self).filter("group", .equals(group)).sorted(by: "rank", descending: descending).after(next)
                check(try await database.count(rest) == max(0, inGroup.count - 2), "count after the first page of group \(group), descending \(descending)")
            }
            if cursor == nil { break }
        }
        let wholeGroup = ordered(inGroup, by: { $0.rank.map(Double.init) }, descending: descending)
        check(paged == wholeGroup.compactMap { model[$0] }, "keyset pages of group \(group), descending \(descending)")
        check(try await database.exists(byRank) == !inGroup.isEmpty, "exists in group \(group)")
        check(try await database.first(byRank) == wholeGroup.first.flatMap { model[$0] }, "first of group \(group)")
        // The same, streamed in batches of two.
        var streamed: [OracleItem] = []
        for try await item in database.stream(Query(OracleItem.self).filter("group", .equals(group)).sorted(by: "rank", descending: descending), batchSize: 2) { streamed.append(item) }
        check(streamed == wholeGroup.compactMap { model[$0] }, "the stream of group \(group), descending \(descending)")
        // Missing ranks within a group, and strict rank bounds.
        let missing = inGroup.filter { $0.item.rank == nil }.map(\.id).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        check(try await database.readIDs(Query(OracleItem.self).filter("group", .equals(group)).filter("rank", .isNil)) == missing, "rank nil in group \(group)")
        let pivot = Int.random(in: -3...3, using: &random)
        let below = inGroup.filter { $0.item.rank.map { $0 < pivot } ?? false }
        let foundBelow = try await database.readIDs(Query(OracleItem.self).filter("group", .equals(group)).filter("rank", .lessThan(pivot)))
        check(foundBelow == ordered(below, by: { $0.rank.map(Double.init) }, descending: false), "rank < \(pivot) in group \(group)")
        let above = inGroup.filter { $0.item.rank.map { $0 > pivot } ?? false }
        let foundAbove = try await database.readIDs(Query(OracleItem.self).filter("group", .equals(group)).filter("rank", .greaterThan(pivot)))
        check(foundAbove == ordered(above, by: { $0.rank.map(Double.init) }, descending: false), "rank > \(pivot) in group \(group)")
        // Groups in a set, and groups by prefix: in the compound index's order.
        let chosen = [groups.randomElement(using: &random) ?? "a", groups.randomElement(using: &random) ?? "b"]
        let chosenBytes = Set(chosen.map(composed))
        let inChosen = orderedByGroup(items.filter { chosenBytes.contains(composed($0.item.group)) })
        check(try await database.readIDs(Query(OracleItem.self).filter("group", .isIn(chosen))) == inChosen, "group in \(chosen)")
        let prefix = ["", "e", "é", "e\u{301}", "a", "éx", "x", "a\u{0}", "\u{0}"].randomElement(using: &random) ?? ""
        let prefixed = orderedByGroup(items.filter { composed($0.item.group).starts(with: composed(prefix)) })
        check(try await database.readIDs(Query(OracleItem.self).filter("group", .hasPrefix(prefix))) == prefixed, "group prefix \(prefix.debugDescription)")
        check(try await database.count(Query(OracleItem.self).filter("group", .hasPrefix(prefix))) == prefixed.count, "count of group prefix \(prefix.debugDescription)")
        // Groups above and below one, by the composed bytes (strict and not).
        let pivotGroup = groups.randomElement(using: &random) ?? "a"
        let pivotBytes = composed(pivotGroup)
        let bounded: [(QueryCondition, ([UInt8]) -> Bool, String)] = [
            (.greaterThan(pivotGroup), { pivotBytes.lexicographicallyPrecedes($0) }, ">"),
            (.atLeast(pivotGroup), { !$0.lexicographicallyPrecedes(pivotBytes) }, ">="),
            (.lessThan(pivotGroup), { $0.lexicographicallyPrecedes(pivotBytes) }, "<"),
            (.atMost(pivotGroup), { !pivotBytes.lexicographicallyPrecedes($0) }, "<="),
        ]
        for (condition, holds, symbol) in bounded {
            let expectedGroups = orderedByGroup(items.filter { holds(composed($0.item.group)) })
            let boundQuery = Query(OracleItem.self).filter("group", condition)
            check(try await database.readIDs(boundQuery) == expectedGroups, "group \(symbol) \(pivotGroup.debugDescription)")
            check(try await database.count(boundQuery) == expectedGroups.count, "count of group \(symbol) \(pivotGroup.debugDescription)")
        }
        // A limit of zero means none, in every method.
        let none = Query(OracleItem.self).filter("group", .equals(group)).limit(0)
        let (noneIDs, noneCount) = (try await database.readIDs(none), try await database.count(none))
        check(noneIDs.isEmpty && noneCount == 0, "a limit of 0 of group \(group)")
        let (noneFirst, noneExists) = (try await database.first(none), try await database.exists(none))
        check(noneFirst == nil && !noneExists, "first and exists with a limit of 0")
        // A rank range within a group.
        let low = Int.random(in: -3...3, using: &random)
        let ranged = inGroup.filter { ($0.item.rank ?? .min) >= low && $0.item.rank != nil }
        let foundRange = try await database.readIDs(Query(OracleItem.self).filter("group", .equals(group)).filter("rank", .atLeast(low)))
        check(foundRange == ordered(ranged, by: { $0.rank.map(Double.init) }, descending: false), "rank ≥ \(low)")
        // A label: each record once, by id.
        let label = labels.randomElement(using: &random) ?? ""
        let labelled = items.filter { $0.item.labels.contains(label) }.map(\.id).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        check(try await database.readIDs(Query(OracleItem.self).filter("labels", .equals(label))) == labelled, "label \(label.debugDescription)")
        // A weight range, ordered by weight (-0.0 is 0).
        let bounds = [Double.random(in: -2...3, using: &random), Double.random(in: -2...50, using: &random)].sorted()
        let weighed = items.filter { $0.item.weight >= bounds[0] && $0.item.weight <= bounds[1] }
        let foundWeights = try await database.readIDs(Query(OracleItem.self).filter("weight", .between(bounds[0], bounds[1])).sorted(by: "weight", descending: descending))
        check(foundWeights == ordered(weighed, by: { $0.weight == 0 ? 0 : $0.weight }, descending: descending), "weight in \(bounds)")
        return problems
    }
}
