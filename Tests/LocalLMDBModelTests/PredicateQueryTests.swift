import Foundation
import LocalLMDBModels
import LocalLMDBModelTestSupport
import LocalLMDBTestSupport
import Testing

/// `#Predicate` and `SortDescriptor` queries: every answer is `Array.filter` and
/// `sorted(using:)` of the same predicate and descriptors; indexes only change the speed.
@Suite struct PredicateQueryTests {
    /// Members written with ids `m000000`…, returned with their ids.
    static func members(_ count: Int, seed: UInt64) -> [(id: String, member: OracleMember)] {
        var random = SeededGenerator(state: seed)
        return (0..<count).map { (PredicateOracle.id($0), PredicateOracle.member(&random)) }
    }

    /// The random-predicate oracle on both faces: every query method, with offsets, limits and
    /// pages continued by cursor, in and out of a transaction.
    @Test func randomPredicatesAgreeWithArrayFilter() async throws {
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let sync = try SerializationDatabase(directory: directory.appendingPathComponent("sync"))
            let members = Self.members(250, seed: 38)
            try await database.write(contentsOf: members.map { Record(id: $0.id, data: $0.member) })
            #expect(sync.write(contentsOf: members.map { Record(id: $0.id, data: $0.member) }) == members.count)
            // LOCALLMDB_ORACLE_ROUNDS runs more (and LOCALLMDB_ORACLE_SEED other ones), by hand.
            let environment = ProcessInfo.processInfo.environment
            let rounds = environment["LOCALLMDB_ORACLE_ROUNDS"].flatMap(Int.init) ?? 150
            let seed = environment["LOCALLMDB_ORACLE_SEED"].flatMap(UInt64.init) ?? 0x38_38
            let found = try await PredicateOracle.disagreements(in: database, members: members, rounds: rounds, seed: seed)
            #expect(found.isEmpty, "\(found.prefix(5).joined(separator: "\n"))")
            // The synchronous face, and how often an index serves a random predicate.
            var random = SeededGenerator(state: 0x38_39)
            var served = 0
            for _ in 0..<60 {
                let drawn = PredicateOracle.RandomQuery(&random)
                if try drawn.query.explain().index != nil { served += 1 }
                #expect(try drawn.agrees(sync.readIDs(drawn.query), members: members), "\(drawn.label) (synchronous face)")
                let expected = try PredicateOracle.expected(members, drawn.predicate, drawn.sort, offset: drawn.offset, limit: drawn.limit)
                #expect(sync.count(drawn.query) == expected.count, "\(drawn.label) (synchronous face)")
            }
            #expect(served > 20)

            // In a transaction (the records read on the writer thread, filtered on the caller's).
            try await database.startTransaction()
            let extra = (0..<50).map { (PredicateOracle.id(1000 + $0), PredicateOracle.member(&random)) }
            try await database.write(contentsOf: extra.map { Record(id: $0.0, data: $0.1) })
            for _ in 0..<60 {
                let (predicate, text) = PredicateOracle.predicate(&random)
                let (sort, _) = PredicateOracle.sort(&random)
                let query = Query(OracleMember.self, where: predicate, sortBy: sort).limit(20)
                let expected = try PredicateOracle.expected(members + extra, predicate, sort, offset: 0, limit: 20)
                let ids = try await database.readIDs(query)
                #expect(sort.isEmpty ? ids.count == expected.count : ids == expected, "in a transaction: \(text)")
                #expect(try await database.count(query) == expected.count, "in a transaction: \(text)")
            }
            try await database.rollbackTransaction()
        }
    }

    /// `explain()` names the index a query uses and what is left to the models.
    @Test func explainSaysWhatServesAQuery() throws {
        let byAge = try Query(OracleMember.self, where: #Predicate { $0.age >= 18 && $0.age < 30 }).explain()
        #expect(byAge.index == Index.on("age", counted: true).description)
        #expect(!byAge.evaluatesPredicate && !byAge.sortsInMemory)

        let byTag = try Query(OracleMember.self, where: #Predicate { $0.tags.contains("red") }).explain()
        #expect(byTag.index == Index.each("tags").description && !byTag.evaluatesPredicate)

        // Doubles: NaN is unequal to itself in Swift, equal in an index: evaluated again.
        let byScore = try Query(OracleMember.self, where: #Predicate { $0.score > 1 }).explain()
        #expect(byScore.index == nil && byScore.evaluatesPredicate && byScore.fields == ["score"])

        // Two ranges: one served, the other evaluated; `!=` evaluated.
        let two = try Query(OracleMember.self, where: #Predicate { $0.age > 3 && $0.name < "b" && $0.level != 1 }).explain()
        #expect(two.index != nil && two.evaluatesPredicate)

        // Served order with an equality; memory sort when no index order gives it.
        let ordered = try Query(OracleMember.self, where: #Predicate { $0.name == "a" }, sortBy: [SortDescriptor(\.age)]).explain()
        #expect(!ordered.sortsInMemory && ordered.fields == ["name", "age"])
        let twoKeys = try Query(OracleMember.self, where: #Predicate { $0.active }, sortBy: [SortDescriptor(\.age), SortDescriptor(\.name)]).explain()
        #expect(twoKeys.sortsInMemory)
        let optional = try Query(OracleMember.self).sorted(by: SortDescriptor(\.nickname)).explain()
        #expect(optional.sortsInMemory)
    }

    /// A predicate that throws (a forced unwrap of `nil`) is a typed error, not a crash.
    @Test func aThrowingPredicateIsAnInvalidQuery() async throws {
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            try await database.write(contentsOf: Self.members(20, seed: 1).map { Record(id: $0.id, data: $0.member) })
            let query = Query(OracleMember.self, where: #Predicate { $0.nickname! == "a" })
            await #expect(throws: LocalDatabaseError.self) { try await database.read(query) }
            await #expect(throws: LocalDatabaseError.self) { try await database.count(query) }
        }
    }

    /// An order sorted in memory cannot be continued by cursor: `readPage` says so; `stream`
    /// reads it whole; an offset pages it.
    @Test func ordersSortedInMemory() async throws {
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let members = Self.members(120, seed: 7)
            try await database.write(contentsOf: members.map { Record(id: $0.id, data: $0.member) })
            let sort = [SortDescriptor(\OracleMember.address.city), SortDescriptor(\OracleMember.age, order: .reverse)]
            let predicate = #Predicate<OracleMember> { $0.level >= 0 }
            let query = Query(OracleMember.self, where: predicate, sortBy: sort)
            await #expect(throws: LocalDatabaseError.self) { try await database.readPage(query.limit(10)) }
            var streamed: [OracleMember] = []
            for try await member in database.stream(query.limit(30), batchSize: 7) { streamed.append(member) }
            let expected = try PredicateOracle.expected(members, predicate, sort, offset: 0, limit: 30)
            #expect(streamed.count == expected.count)
            #expect(try await database.readIDs(query.offset(10).limit(10)) == Array(expected.dropFirst(10).prefix(10)))
        }
    }

    /// A stream of a predicate query served by an index, in batches continued by cursor.
    @Test func streamsAndObservations() async throws {
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let members = Self.members(300, seed: 9)
            try await database.write(contentsOf: members.map { Record(id: $0.id, data: $0.member) })
            let predicate = #Predicate<OracleMember> { $0.age >= 0 && $0.score < 100 }
            let query = Query(OracleMember.self, where: predicate, sortBy: [SortDescriptor(\.age)])
            var streamed: [OracleMember] = []
            for try await member in database.stream(query, batchSize: 16) { streamed.append(member) }
            let expected = try PredicateOracle.expected(members, predicate, [SortDescriptor(\.age)], offset: 0, limit: nil)
            #expect(streamed.count == expected.count)
            #expect(try await database.readIDs(query) == expected)

            // An observation gives the results again when a commit changes them.
            var results = database.observe(Query(OracleMember.self, where: #Predicate { $0.name == "observed" })).makeAsyncIterator()
            #expect(try await results.next()?.isEmpty == true)
            var member = members[0].member
            member.name = "observed"
            try await database.write(Record(id: "new", data: member))
            #expect(try await results.next()?.map(\.name) == ["observed"])
        }
    }
}
