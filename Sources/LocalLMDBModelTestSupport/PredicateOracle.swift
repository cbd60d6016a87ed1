import Foundation
import LocalLMDBModels
import LocalLMDBTestSupport

/// A nested value, for predicates on nested paths.
@StoredValue
public struct OracleAddress: Equatable, Sendable {
    public var city: String
    public var zip: Int
}

/// The model of the random-predicate oracle: indexed and unindexed fields of every kind a
/// predicate translates (and some it does not).
@StoredModel
public struct OracleMember: Equatable, Sendable {
    #StoredIndex<OracleMember>(\.address.city, \.level)
    @Indexed public var name: String
    @Indexed(counted: true) public var age: Int
    @Indexed public var tags: [String]
    @Indexed public var joined: Date
    public var score: Double
    public var nickname: String?
    public var active: Bool
    public var level: Int8
    public var address: OracleAddress
}

/// Random members and random predicates over them: the oracle compares a query's results with
/// `Array.filter` of the same `Predicate` (and `sorted(using:)` of the same descriptors) over
/// every member written.
public enum PredicateOracle {
    public typealias Expression = any StandardPredicateExpression<Bool>
    typealias Variable = PredicateExpressions.Variable<OracleMember>

    // Strings that test canonical equivalence, NUL and prefixes; numbers at the edges.
    static let names = ["a", "ab", "abc", "b", "é", "e\u{301}", "e\u{301}x", "a\u{0}", "a\u{0}b", "", "Z", "zz"]
    static let tags = ["red", "green", "blue", "", "x\u{0}y", "é"]
    static let ages = [-3, 0, 1, 17, 18, 30, 65, Int.max, Int.min]
    static let scores: [Double] = [-1.5, 0, -0.0, 2, 2.0000001, 1e300, .infinity, -.infinity, .nan]
    static let cities = ["Lyon", "Paris", "lyon", "Ly"]
    static let dates = [0.0, 1_700_000_000, 1_700_000_000.5, -62_135_596_800, 253_402_300_800].map { Date(timeIntervalSince1970: $0) }

    /// A random member, id `m` + a zero-padded number (so ids sort as numbers).
    public static func member(_ random: inout SeededGenerator) -> OracleMember {
        OracleMember(
            name: names.randomElement(using: &random) ?? "a", age: ages.randomElement(using: &random) ?? 0,
            tags: (0..<Int.random(in: 0...3, using: &random)).map { _ in tags.randomElement(using: &random) ?? "" },
            joined: dates.randomElement(using: &random) ?? Date(timeIntervalSince1970: 0),
            score: scores.randomElement(using: &random) ?? 0,
            nickname: Bool.random(using: &random) ? nil : names.randomElement(using: &random),
            active: Bool.random(using: &random), level: Int8.random(in: -2...2, using: &random),
            address: OracleAddress(city: cities.randomElement(using: &random) ?? "", zip: Int.random(in: 0...3, using: &random)))
    }

    public static func id(_ number: Int) -> String {
        let digits = String(number)
        return "m" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    /// A random predicate, with a description of it for failure messages.
    public static func predicate(_ random: inout SeededGenerator) -> (Predicate<OracleMember>, String) {
        var text = ""
        let seed = random.next()
        let predicate = Predicate<OracleMember> { member in
            var local = SeededGenerator(state: seed)
            let (expression, description) = Self.expression(member, depth: 0, &local)
            text = description
            return expression
        }
        return (predicate, text)
    }

    static func expression(_ member: Variable, depth: Int, _ random: inout SeededGenerator) -> (Expression, String) {
        let choice = Int.random(in: 0..<(depth < 2 ? 14 : 11), using: &random)
        switch choice {
        case 11, 12:
            let (left, leftText) = expression(member, depth: depth + 1, &random)
            let (right, rightText) = expression(member, depth: depth + 1, &random)
            if choice == 11 { return (and(left, right), "(\(leftText) && \(rightText))") }
            return (or(left, right), "(\(leftText) || \(rightText))")
        case 13:
            let (inner, innerText) = expression(member, depth: depth + 1, &random)
            return (not(inner), "!\(innerText)")
        default:
            return leaf(member, choice, &random)
        }
    }

    // Existentials opened, for the expressions' generic initializers.
    static func and(_ left: Expression, _ right: Expression) -> Expression {
        func with<L: StandardPredicateExpression<Bool>>(_ left: L) -> Expression {
            func with<R: StandardPredicateExpression<Bool>>(_ right: R) -> Expression { PredicateExpressions.Conjunction(lhs: left, rhs: right) }
            return with(right)
        }
        return with(left)
    }

    static func or(_ left: Expression, _ right: Expression) -> Expression {
        func with<L: StandardPredicateExpression<Bool>>(_ left: L) -> Expression {
            func with<R: StandardPredicateExpression<Bool>>(_ right: R) -> Expression { PredicateExpressions.Disjunction(lhs: left, rhs: right) }
            return with(right)
        }
        return with(left)
    }

    static func not(_ inner: Expression) -> Expression {
        func with<E: StandardPredicateExpression<Bool>>(_ inner: E) -> Expression { PredicateExpressions.Negation(inner) }
        return with(inner)
    }

    static func compare<V: Comparable & Codable & Sendable>(
        _ member: Variable, _ keyPath: KeyPath<OracleMember, V> & Sendable, _ name: String, _ value: V, _ random: inout SeededGenerator
    ) -> (Expression, String) {
        compare(PredicateExpressions.KeyPath(root: member, keyPath: keyPath), name, value, &random)
    }

    /// A comparison of `field` (a key path expression of one component each, as `#Predicate`
    /// writes them) with `value`.
    static func compare<Field: StandardPredicateExpression, V: Comparable & Codable & Sendable>(
        _ field: Field, _ name: String, _ value: V, _ random: inout SeededGenerator
    ) -> (Expression, String) where Field.Output == V {
        let constant = PredicateExpressions.Value(value)
        let flipped = Bool.random(using: &random)
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return (PredicateExpressions.Equal(lhs: field, rhs: constant), "\(name) == \(value)")
        case 1: return (PredicateExpressions.NotEqual(lhs: field, rhs: constant), "\(name) != \(value)")
        default:
            let ops: [PredicateExpressions.ComparisonOperator] = [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual]
            let op = ops.randomElement(using: &random) ?? .lessThan
            if flipped {
                return (PredicateExpressions.Comparison(lhs: constant, rhs: field, op: op), "\(value) \(op) \(name)")
            }
            return (PredicateExpressions.Comparison(lhs: field, rhs: constant, op: op), "\(name) \(op) \(value)")
        }
    }

    static func leaf(_ member: Variable, _ choice: Int, _ random: inout SeededGenerator) -> (Expression, String) {
        switch choice {
        case 0: return compare(member, \.name, "name", names.randomElement(using: &random) ?? "", &random)
        case 1: return compare(member, \.age, "age", ages.randomElement(using: &random) ?? 0, &random)
        case 2: return compare(member, \.score, "score", scores.randomElement(using: &random) ?? 0, &random)
        case 3: return compare(member, \.joined, "joined", dates.randomElement(using: &random) ?? Date(), &random)
        case 4: return compare(member, \.level, "level", Int8.random(in: -2...2, using: &random), &random)
        case 5:
            let address = PredicateExpressions.KeyPath(root: member, keyPath: \OracleMember.address)
            let city = PredicateExpressions.KeyPath(root: address, keyPath: \OracleAddress.city)
            return compare(city, "address.city", cities.randomElement(using: &random) ?? "", &random)
        case 6:
            let tag = tags.randomElement(using: &random) ?? ""
            let field = PredicateExpressions.KeyPath(root: member, keyPath: \OracleMember.tags)
            return (PredicateExpressions.SequenceContains(sequence: field, element: PredicateExpressions.Value(tag)), "tags.contains(\(tag.debugDescription))")
        case 7:
            let values = Array(names.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random)))
            let field = PredicateExpressions.KeyPath(root: member, keyPath: \OracleMember.name)
            return (PredicateExpressions.SequenceContains(sequence: PredicateExpressions.Value(values), element: field), "\(values).contains(name)")
        case 8:
            let prefix = ["a", "e", "", "é", "a\u{0}"].randomElement(using: &random) ?? ""
            let field = PredicateExpressions.KeyPath(root: member, keyPath: \OracleMember.name)
            return (PredicateExpressions.SequenceStartsWith(base: field, prefix: PredicateExpressions.Value(prefix)), "name.starts(with: \(prefix.debugDescription))")
        case 9:
            let field = PredicateExpressions.KeyPath(root: member, keyPath: \OracleMember.nickname)
            if Bool.random(using: &random) {
                return (PredicateExpressions.Equal(lhs: field, rhs: PredicateExpressions.NilLiteral<String>()), "nickname == nil")
            }
            let value: String? = names.randomElement(using: &random)
            return (PredicateExpressions.Equal(lhs: field, rhs: PredicateExpressions.Value(value)), "nickname == \(value ?? "nil")")
        default:
            let field = PredicateExpressions.KeyPath(root: member, keyPath: \OracleMember.active)
            return (field, "active")
        }
    }

    /// Random sort descriptors (none, one, or two), with a description.
    public static func sort(_ random: inout SeededGenerator) -> ([SortDescriptor<OracleMember>], String) {
        let all: [(SortDescriptor<OracleMember>, String)] = [
            (SortDescriptor(\.age), "age"), (SortDescriptor(\.age, order: .reverse), "age desc"),
            (SortDescriptor(\.name), "name"), (SortDescriptor(\.name, order: .reverse), "name desc"),
            (SortDescriptor(\.joined), "joined"), (SortDescriptor(\.level, order: .reverse), "level desc"),
            (SortDescriptor(\.address.city), "address.city"),
        ]
        let count = [0, 0, 1, 1, 1, 2].randomElement(using: &random) ?? 0
        let chosen = (0..<count).compactMap { _ in all.randomElement(using: &random) }
        return (chosen.map(\.0), chosen.map(\.1).joined(separator: ", "))
    }

    /// What the query must give: the members `predicate` accepts, by id, then sorted by `sort`
    /// (ties by id, in the first descriptor's direction), after `offset`, at most `limit`.
    public static func expected(
        _ members: [(id: String, member: OracleMember)], _ predicate: Predicate<OracleMember>, _ sort: [SortDescriptor<OracleMember>],
        offset: Int, limit: Int?
    ) throws -> [String] {
        let matching = try members.sorted { $0.id < $1.id }.filter { try predicate.evaluate($0.member) }
        let reverseTies = sort.first?.order == .reverse
        let sorted = matching.indices.sorted { left, right in
            for descriptor in sort {
                switch descriptor.compare(matching[left].member, matching[right].member) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return reverseTies ? left > right : left < right
        }
        return sorted.dropFirst(offset).prefix(limit ?? .max).map { matching[$0].id }
    }
}

extension PredicateOracle {
    /// One random query: a predicate, descriptors, an offset and a limit, with a label.
    public struct RandomQuery {
        public let predicate: Predicate<OracleMember>
        public let sort: [SortDescriptor<OracleMember>]
        public let offset: Int
        public let limit: Int?
        public let label: String

        public var query: Query<OracleMember> {
            let query = Query(OracleMember.self, where: predicate, sortBy: sort).offset(offset)
            return limit.map { query.limit($0) } ?? query
        }

        public init(_ random: inout SeededGenerator) {
            let (predicate, text) = PredicateOracle.predicate(&random)
            let (sort, sortText) = PredicateOracle.sort(&random)
            self.predicate = predicate
            self.sort = sort
            offset = [0, 0, 3].randomElement(using: &random) ?? 0
            limit = [nil, 1, 7, 50].randomElement(using: &random) ?? nil
            label = "\(text) sorted by [\(sortText)] offset \(offset) limit \(limit.map(String.init) ?? "none")"
        }

        /// Whether `ids` are the query's answer over `members`: exactly `expected` when sorted;
        /// with no order, records come in the order of the index that serves the query, so any
        /// of the matches, as many as expected (all of them with no page).
        public func agrees(_ ids: [String], members: [(id: String, member: OracleMember)]) throws -> Bool {
            let expected = try PredicateOracle.expected(members, predicate, sort, offset: offset, limit: limit)
            guard sort.isEmpty else { return ids == expected }
            guard offset == 0, limit == nil else {
                let all = Set(try PredicateOracle.expected(members, predicate, sort, offset: 0, limit: nil))
                return ids.count == expected.count && Set(ids).count == ids.count && Set(ids).isSubset(of: all)
            }
            return ids.sorted() == expected
        }
    }

    /// Runs `rounds` random queries on `database`, which holds `members` (and only them as
    /// `OracleMember`): every query method, and pages continued by cursor, against
    /// `Array.filter`. Returns the disagreements.
    public static func disagreements(
        in database: some ObjectDatabase, members: [(id: String, member: OracleMember)], rounds: Int, seed: UInt64
    ) async throws -> [String] {
        var random = SeededGenerator(state: seed)
        var found: [String] = []
        let byID = Dictionary(uniqueKeysWithValues: members.map { ($0.id, "\($0.member)") })
        for round in 0..<rounds {
            let drawn = RandomQuery(&random)
            let query = drawn.query
            let label = "round \(round): \(drawn.label) — \(try query.explain())"
            let expected = try PredicateOracle.expected(members, drawn.predicate, drawn.sort, offset: drawn.offset, limit: drawn.limit)
            let ids = try await database.readIDs(query)
            if try !drawn.agrees(ids, members: members) { found.append("\(label): readIDs \(ids) instead of \(expected)") }
            // Models compared by description (a NaN score is unequal to itself).
            if try await database.read(query).map({ "\($0)" }) != ids.compactMap({ byID[$0] }) { found.append("\(label): read") }
            if try await database.count(query) != expected.count { found.append("\(label): count") }
            if try await database.exists(query) != !expected.isEmpty { found.append("\(label): exists") }
            if try await database.first(query).map({ "\($0)" }) != ids.first.flatMap({ byID[$0] }) { found.append("\(label): first") }
            guard !(try query.explain().sortsInMemory) else { continue }
            // Pages of 16, each continued after the last by cursor.
            var pageQuery = query.limit(16)
            var paged: [String] = []
            while true {
                let page = try await database.readPage(pageQuery)
                paged += page.records.map { "\($0)" }
                guard let next = page.next else { break }
                pageQuery = pageQuery.offset(0).after(next)
            }
            let rest = try PredicateOracle.expected(members, drawn.predicate, drawn.sort, offset: drawn.offset, limit: nil)
            if drawn.sort.isEmpty ? paged.count != rest.count : paged != rest.compactMap({ byID[$0] }) { found.append("\(label): pages") }
        }
        return found
    }
}
