import Foundation
@testable import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// A model with counted indexes: one on an Int with many duplicates, a compound one, and one on
/// a string that may be too long for an LMDB key.
struct CountedItem: Codable, Persistable, Equatable, Sendable {
    static let indexes: [Index] = [.on("value", counted: true), .on("group", "value", counted: true), .on("text", counted: true)]
    var value: Int
    var group: String
    var text: String
}

@Suite("Counted indexes")
struct CountedIndexTests {
    /// Random ranges over `value` and `group`+`value`, counted by the database and by a filter
    /// of what was written.
    static func checkCounts(_ database: LocalDatabase, _ items: [String: CountedItem], _ random: inout SeededGenerator, _ label: String) async throws {
        for _ in 0..<40 {
            let a = Int.random(in: -10...520, using: &random)
            let b = Int.random(in: a...(a + Int.random(in: 0...300, using: &random)), using: &random)
            let values = items.values
            #expect(try await database.count(Query(CountedItem.self).filter("value", .between(a, b))) == values.count { $0.value >= a && $0.value <= b },
                    "\(label): value between \(a) and \(b)")
            #expect(try await database.count(Query(CountedItem.self).filter("value", .greaterThan(a))) == values.count { $0.value > a },
                    "\(label): value > \(a)")
            #expect(try await database.count(Query(CountedItem.self).filter("value", .lessThan(b))) == values.count { $0.value < b },
                    "\(label): value < \(b)")
            #expect(try await database.count(Query(CountedItem.self).filter("value", .equals(a))) == values.count { $0.value == a },
                    "\(label): value == \(a)")
            let group = "g\(Int.random(in: 0..<3, using: &random))"
            #expect(try await database.count(Query(CountedItem.self).filter("group", .equals(group))) == values.count { $0.group == group },
                    "\(label): group \(group)")
            #expect(try await database.count(Query(CountedItem.self).filter("group", .equals(group)).filter("value", .between(a, b)))
                == values.count { $0.group == group && $0.value >= a && $0.value <= b }, "\(label): group \(group), value between \(a) and \(b)")
        }
        #expect(try await database.count(Query(CountedItem.self).filter("value", .atLeast(Int.min))) == items.count, "\(label): every value")
    }

    @Test func countsOfRangesAgreeWithAFilterThroughSplitsUpdatesDeletesAndRollbacks() async throws {
        try await withDatabase { database, _ in
            var random = SeededGenerator(state: 7)
            var items: [String: CountedItem] = [:]
            func make() -> CountedItem {
                // Value 7 for a fifth of them: one key with more duplicates than a run holds.
                let value = Int.random(in: 0..<5, using: &random) == 0 ? 7 : Int.random(in: 0..<500, using: &random)
                return CountedItem(value: value, group: "g\(Int.random(in: 0..<3, using: &random))", text: "t\(value)")
            }
            // Batches: runs fill and split.
            for batch in 0..<6 {
                var records: [Record<CountedItem>] = []
                for number in 0..<600 {
                    let id = "i\(batch * 600 + number)"
                    let item = make()
                    items[id] = item
                    records.append(Record(id: id, data: item))
                }
                _ = try await database.write(contentsOf: records)
            }
            try await Self.checkCounts(database, items, &random, "after the batches")
            // Single writes that move values, and deletes.
            for _ in 0..<400 {
                let id = "i\(Int.random(in: 0..<3600, using: &random))"
                if Bool.random(using: &random) {
                    let item = make()
                    try await database.write(Record(id: id, data: item))
                    items[id] = item
                } else {
                    _ = try await database.delete(id: id)
                    items[id] = nil
                }
            }
            try await Self.checkCounts(database, items, &random, "after updates and deletes")
            // A transaction rolled back leaves the counts as they were.
            try await database.startTransaction()
            for number in 0..<300 { try await database.write(Record(id: "r\(number)", data: CountedItem(value: 100, group: "g0", text: "r"))) }
            for id in items.keys.sorted().prefix(200) { _ = try await database.delete(id: id) }
            try await database.rollbackTransaction()
            try await Self.checkCounts(database, items, &random, "after a rollback")
            // A committed one changes them.
            try await database.startTransaction()
            for number in 0..<300 {
                let item = CountedItem(value: 100, group: "g0", text: "c")
                try await database.write(Record(id: "c\(number)", data: item))
                items["c\(number)"] = item
            }
            try await database.commitTransaction()
            try await Self.checkCounts(database, items, &random, "after a commit")
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
            // Every record of the type deleted, then written again.
            _ = try await database.delete(CountedItem.self)
            items.removeAll()
            #expect(try await database.count(Query(CountedItem.self).filter("value", .atLeast(0))) == 0)
            for number in 0..<700 {
                let item = make()
                try await database.write(Record(id: "n\(number)", data: item))
                items["n\(number)"] = item
            }
            try await Self.checkCounts(database, items, &random, "after deleting the type")
            let after = try await database.verifyIntegrity()
            #expect(after.isConsistent, "\(after)")
        }
    }

    @Test func anIndexDeclaredOverStoredRecordsAndAClearedDatabaseCountRight() async throws {
        try await withDatabase { database, _ in
            var random = SeededGenerator(state: 11)
            var items: [String: CountedItem] = [:]
            var records: [Record<CountedItem>] = []
            for number in 0..<2000 {
                let item = CountedItem(value: Int.random(in: 0..<500, using: &random), group: "g\(number % 3)", text: "x")
                items["i\(number)"] = item
                records.append(Record(id: "i\(number)", data: item))
            }
            _ = try await database.write(contentsOf: records)
            // Dropped, then declared again by the next query: built from the records, with its runs.
            #expect(try await database.dropIndex(.on("value", counted: true), of: CountedItem.self))
            try await Self.checkCounts(database, items, &random, "after building the index again")
            #expect(try await database.verifyIntegrity().isConsistent)
            _ = try await database.clearDatabase()
            items.removeAll()
            for number in 0..<500 {
                let item = CountedItem(value: number % 50, group: "g\(number % 3)", text: "y")
                try await database.write(Record(id: "k\(number)", data: item))
                items["k\(number)"] = item
            }
            try await Self.checkCounts(database, items, &random, "after clearing the database")
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func valuesTooLongForAKeyAreCountedExactly() async throws {
        try await withDatabase { database, _ in
            // Long texts share a stem, and their entry keys are shortened: a count near them
            // reads their records rather than trusting the keys.
            let stem = String(repeating: "s", count: 600)
            var texts: [String] = []
            for number in 0..<400 {
                let text = number % 2 == 0 ? stem + String(number) : "short \(number)"
                texts.append(text)
                try await database.write(Record(id: "l\(number)", data: CountedItem(value: number, group: "g0", text: text)))
            }
            for bound in [stem, stem + "2", stem + "3", "short 2", "short 5", "t"] {
                #expect(try await database.count(Query(CountedItem.self).filter("text", .atLeast(bound))) == texts.count { $0 >= bound }, "text ≥ \(bound.suffix(4))")
                #expect(try await database.count(Query(CountedItem.self).filter("text", .lessThan(bound))) == texts.count { $0 < bound }, "text < \(bound.suffix(4))")
            }
            #expect(try await database.count(Query(CountedItem.self).filter("text", .hasPrefix(stem))) == 200)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func aCountedIndexRaisesTheLayoutAndWrongCountsAreReported() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            var database: LocalDatabase? = try LocalDatabase(directory: url)
            let records = (0..<600).map { Record(id: "w\($0)", data: CountedItem(value: $0 % 100, group: "g0", text: "w")) }
            _ = try await database?.write(contentsOf: records)
            await database?.close()
            database = nil
            // An earlier version, which would change the entries without their counts, refuses it.
            #expect(rawGet(url, "meta", Array("format".utf8)) == [5])
            // The first index declared is number 1: its first run, given a wrong number.
            let firstRun: [UInt8] = [0, 0, 0, 1]
            #expect(rawGet(url, "counts", firstRun).map { $0.count } == 8)
            rawPut(url, "counts", [(firstRun, [0, 0, 0, 0, 0, 0, 0, 99])])
            let reopened = try LocalDatabase(directory: url)
            let report = try await reopened.verifyIntegrity()
            #expect(report.problems == [.wrongIndexCounts(index: "CountedItem: value counted")], "\(report)")
            // Dropped and declared again: counted right.
            #expect(try await reopened.dropIndex(.on("value", counted: true), of: CountedItem.self))
            #expect(try await reopened.count(Query(CountedItem.self).filter("value", .between(10, 19))) == 60)
            #expect(try await reopened.verifyIntegrity().isConsistent)
            await reopened.close()
        }
    }

    /// A value most records hold, at the top of the order: runs still split (the value's own
    /// run aside), so a write walks a few hundred keys at most, not the whole index.
    @Test func aValueMostRecordsHoldStillLetsRunsSplit() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            let database = try LocalDatabase(directory: url)
            var items: [String: CountedItem] = [:]
            for number in 0..<3000 {
                // 60% hold the sentinel; the rest distinct values below it, written in between.
                let item = CountedItem(value: number % 5 < 3 ? Int.max : number, group: "g\(number % 3)", text: "s")
                try await database.write(Record(id: "s\(number)", data: item))
                items["s\(number)"] = item
            }
            var random = SeededGenerator(state: 5)
            try await Self.checkCounts(database, items, &random, "with a sentinel")
            #expect(try await database.count(Query(CountedItem.self).filter("value", .equals(Int.max))) == 1800)
            #expect(try await database.verifyIntegrity().isConsistent)
            await database.close()
            // Of the three indexes, `value` and `group, value` have 1,200 distinct values each,
            // which split into runs of at most 256 entries besides the sentinels' runs; `text`
            // has one value, one run.
            let runs = rawEntryCount(url, "counts") ?? 0
            #expect(runs >= 2 * (1 + 1200 / 256) + 1, "\(runs) runs")
        }
    }
}
