import Foundation
import GRDB
import LocalLMDB

/// The reference workload of the comparison: households that refer to their 10 members, each
/// member a record of its own. Reading a household resolves its references in one snapshot; the
/// measure is its cost in reads by id (the issue's bound: about 11), against the same graph read
/// by hand in 11 reads by id, and GRDB reading the household row and its members' rows by key.
public enum ReferenceBench {
    public final class Member: Codable, Persistable, Identifiable, Sendable {
        public let id: String
        public let name: String
        public let age: Int
        public let email: String
        init(id: String, index: Int) {
            self.id = id
            name = "Member \(index)"
            age = 18 + index % 60
            email = "member\(index)@example.com"
        }
    }

    public struct Household: Codable, Persistable, Sendable {
        public var name: String
        public var members: [Reference<Member>]
    }

    /// The household as a hand-written read would store it: member ids only.
    public struct HouseholdIDs: Codable, Persistable, Sendable {
        public var name: String
        public var members: [String]
    }

    struct GRDBMember: Codable, FetchableRecord, PersistableRecord {
        static let databaseTableName = "member"
        var id: String
        var household: String
        var name: String
        var age: Int
        var email: String
    }

    struct GRDBHousehold: Codable, FetchableRecord, PersistableRecord {
        static let databaseTableName = "household"
        var id: String
        var name: String
    }

    static let contenders = ["LocalLMDB (references)", "LocalLMDB (11 reads by id)", "GRDB (by keys)"]

    /// Runs the workload over `households` households and returns its markdown section.
    public static func run(households: Int, repetitions: Int, log: (String) -> Void) async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reference-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        log("references, \(households) households: writing…")
        let local = try LocalDatabase(directory: directory.appendingPathComponent("local"))
        let members = (0..<households * 10).map { Member(id: String(format: "m%08d", $0), index: $0) }
        let homes = (0..<households).map { house in
            Household(name: "House \(house)", members: (0..<10).map { Reference(members[house * 10 + $0]) })
        }
        let ids = (0..<households).map { String(format: "h%08d", $0) }
        _ = try await local.write(contentsOf: zip(ids, homes).map { Record(id: $0, data: $1) })
        let plain = try LocalDatabase(directory: directory.appendingPathComponent("plain"))
        _ = try await plain.write(contentsOf: members.map { Record($0) })
        _ = try await plain.write(contentsOf: zip(ids, homes).map { Record(id: $0, data: HouseholdIDs(name: $1.name, members: $1.members.map(\.id))) })
        let grdb = try DatabasePool(path: directory.appendingPathComponent("grdb.sqlite").path)
        try await grdb.write { db in
            try db.create(table: GRDBHousehold.databaseTableName) { table in
                table.primaryKey("id", .text)
                table.column("name", .text).notNull()
            }
            try db.create(table: GRDBMember.databaseTableName) { table in
                table.primaryKey("id", .text)
                table.column("household", .text).notNull().indexed()
                table.column("name", .text).notNull()
                table.column("age", .integer).notNull()
                table.column("email", .text).notNull()
            }
            for (id, home) in zip(ids, homes) {
                try GRDBHousehold(id: id, name: home.name).insert(db)
                for reference in home.members {
                    guard let member = reference.model else { continue }
                    try GRDBMember(id: member.id, household: id, name: member.name, age: member.age, email: member.email).insert(db)
                }
            }
        }

        var random = QueryBench.SplitMix(state: 7)
        let order = (0..<2000).map { _ in Int(random.next() % UInt64(households)) }
        log("references, \(households) households: reading…")
        let sample: Household? = try await local.read(id: ids[0])
        guard sample?.members.count == 10, sample?.members.allSatisfy({ $0.model != nil }) == true else {
            throw CocoaError(.coderInvalidValue, userInfo: [NSDebugDescriptionErrorKey: "the references were not resolved"])
        }
        // The four measures take turns, each repetition running all four, so that a slow spell
        // of the machine falls on every one of them, not on one measure's repetitions; the
        // ratio compares the best of each.
        // The members the graphs read, each read by itself (10 reads a graph, over the same pages);
        // the ratio compares the time of a graph with the time of one such read.
        let memberIDs = order.flatMap { house in (0..<10).map { members[house * 10 + $0].id } }
        let measures: [() async throws -> Void] = [
            {
                for index in order {
                    _ = try await local.read(id: ids[index]) as Household?
                }
            },
            {
                for index in order {
                    let home: HouseholdIDs? = try await plain.read(id: ids[index])
                    for id in home?.members ?? [] { _ = try await plain.read(id: id) as Member? }
                }
            },
            {
                for index in order {
                    _ = try await grdb.read { db in
                        (try GRDBHousehold.fetchOne(db, key: ids[index]), try GRDBMember.filter(Column("household") == ids[index]).fetchAll(db))
                    }
                }
            },
            { for id in memberIDs { _ = try await local.read(id: id) as Member? } },
        ]
        var best = [Double](repeating: .infinity, count: measures.count)
        for _ in 0..<max(1, repetitions) {
            for (index, measure) in measures.enumerated() {
                best[index] = min(best[index], try await QueryBench.seconds(measure))
            }
        }
        var graphs: [String: Double] = [:]
        for (index, contender) in contenders.enumerated() { graphs[contender] = Double(order.count) / best[index] }
        let readsByID = Double(memberIDs.count) / best[3]
        await local.close()
        await plain.close()

        var table = "#### A household and its 10 referenced members (\(households) households)\n\n"
        table += "| workload | " + contenders.joined(separator: " | ") + " |\n"
        table += "|---|" + String(repeating: "---:|", count: contenders.count) + "\n"
        table += "| household + 10 members (graphs/s) | " + contenders.map { graphs[$0].map(QueryBench.format) ?? "–" }.joined(separator: " | ") + " |\n"
        let cost = readsByID / (graphs[contenders[0]] ?? .infinity)
        let byHand = (graphs[contenders[1]] ?? 0) / (graphs[contenders[0]] ?? .infinity)
        table += "\nLocalLMDB reads one member by id \(QueryBench.format(readsByID)) times a second: reading a household with its "
        table += "10 references costs \(String(format: "%.1f", cost)) reads of a member by id (11 records; bound: about 11), and "
        table += "\(String(format: "%.2f", byHand))× the time of the same 11 records read by hand, each by id. "
        table += "GRDB reads the household's row by key and its members by an indexed column, in one read transaction.\n"
        return table
    }
}
