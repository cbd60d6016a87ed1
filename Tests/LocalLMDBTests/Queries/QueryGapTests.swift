import Foundation
#if canImport(Observation)
import Observation
#endif
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A hand-written model whose field was renamed from `label` to `title`: it reads the old key
/// with `legacyKeys`, and declares an index on each key. With `storedUnderOldKey` it writes the
/// field under the old key, as the app's earlier version did.
final class GapRetitled: Storable {
    static let indexes: [Index] = [.on("title"), .on("label")]
    let title: String
    let storedUnderOldKey: Bool

    init(title: String, storedUnderOldKey: Bool = false) {
        (self.title, self.storedUnderOldKey) = (title, storedUnderOldKey)
    }

    required init(dataObject: DataObject) {
        title = dataObject.get("title", legacyKeys: ["label"])
        storedUnderOldKey = false
    }

    func toDataObject() -> DataObject {
        DataObject(self).add(key: storedUnderOldKey ? "label" : "title", value: title)
    }
}

/// The same model with no index: its queries are served by a scan, which must mean the same.
final class GapRetitledUnindexed: Storable {
    let title: String
    let storedUnderOldKey: Bool

    init(title: String, storedUnderOldKey: Bool = false) {
        (self.title, self.storedUnderOldKey) = (title, storedUnderOldKey)
    }

    required init(dataObject: DataObject) {
        title = dataObject.get("title", legacyKeys: ["label"])
        storedUnderOldKey = false
    }

    func toDataObject() -> DataObject {
        DataObject(self).add(key: storedUnderOldKey ? "label" : "title", value: title)
    }
}

/// A `Codable` model with an indexed `UUID` (missing when nil).
struct GapBadge: Codable, Persistable {
    static let indexes: [Index] = [.on("token")]
    var token: UUID?
    var holder: String
}

/// An `OracleItem` whose one label is its id, so that a page (models only) names its records.
private func labelled(_ id: String, _ weight: Double) -> Record<OracleItem> {
    Record(id: id, data: OracleItem(group: "g", rank: nil, labels: [id], weight: weight))
}

#if canImport(Observation)
/// Waits, without polling, until `live.value` meets `condition` (true), or the live query ends
/// with an error (false). The value changes only on the main actor, and the tracking is set up
/// in the same turn as the check, so no change is missed.
@MainActor
private func untilLive<Value>(_ live: LiveQuery<Value>, _ condition: (Value) -> Bool) async -> Bool {
    while !condition(live.value) {
        guard live.error == nil else { return false }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            withObservationTracking {
                _ = live.value
                _ = live.error
            } onChange: {
                continuation.resume()
            }
        }
    }
    return true
}
#endif

@Suite("Queries: live queries, the synchronous face, renamed fields, UUIDs, paging")
struct QueryGapTests {
    #if canImport(Observation)
    /// `liveQuery(_:)` of a `Query`: `initial` (empty) until the first read, then the query's
    /// current results, then the results after each commit that changes them.
    @MainActor @Test func aLiveQueryOfAQueryGivesTheResultsThenFollowsThem() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: QueryTests.customers())
            let live = database.liveQuery(Query(Customer.self).filter("address.city", .equals("London")).sorted(by: "age"))
            #expect(live.value.isEmpty)
            #expect(await untilLive(live) { $0.map(\.name) == ["Ada", "Ken", "Alan"] })
            // A commit outside the results, then one that changes them.
            try await database.write(Record(id: "p", data: Customer(name: "Pat", city: "Paris")))
            try await database.write(Record(id: "y", data: Customer(name: "Young", age: 20, city: "London")))
            #expect(await untilLive(live) { $0.map(\.name) == ["Young", "Ada", "Ken", "Alan"] })
            // A record leaving the results; a record's contents changing.
            #expect(try await database.delete(id: "c2"))
            #expect(await untilLive(live) { $0.map(\.name) == ["Young", "Ada", "Ken"] })
            try await database.write(Record(id: "y", data: Customer(name: "Younger", age: 20, city: "London")))
            #expect(await untilLive(live) { $0.map(\.name) == ["Younger", "Ada", "Ken"] })
            #expect(live.error == nil)
            live.stop()
        }
    }
    #endif

    /// `SerializationDatabase` pages (`readPage`, keyset, and its default page of 100), streams
    /// and observes a query as `LocalDatabase` does; a query it cannot serve gives its failure
    /// value and `lastError`, and throws from a stream.
    @Test func theSynchronousFacePagesStreamsAndObservesQueries() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory.appendingPathComponent("db"))
            #expect(database.write(contentsOf: QueryPagingTests.items(1...100)) == 100)

            // Keyset pages, with records written before the position between pages.
            let query = Query(OracleItem.self).filter("group", .equals("even")).sorted(by: "rank", descending: true).limit(7)
            let expected = database.readIDs(query.limit(1000))
            #expect(expected.count == 50)
            var seen: [String] = []
            var cursor: QueryCursor?
            var pages = 0
            repeat {
                let page = database.readPage(query.after(cursor))
                #expect(page.records.count <= 7)
                seen += page.records.map { String(format: "k%04d", Int($0.weight)) }
                cursor = page.next
                pages += 1
                // Rank 99 comes first in this order: before the position.
                database.write(Record(id: "z\(pages)", data: OracleItem(group: "even", rank: 99, labels: [], weight: -1)))
            } while cursor != nil && pages < 100
            #expect(seen == expected)
            #expect(pages == 8)  // 50 records, 7 a page
            #expect(database.lastError == nil)

            // With no limit, a page holds 100 records.
            let total = database.count(OracleItem.self)
            #expect(total == 108)
            let first = database.readPage(Query(OracleItem.self))
            #expect(first.records.count == 100)
            let firstNext = try #require(first.next)
            let rest = database.readPage(Query(OracleItem.self).after(firstNext))
            #expect(rest.records.count == total - 100)
            #expect(rest.next == nil)

            // A stream: every record the query selects, in its order, in batches.
            let heavy = Query(OracleItem.self).filter("weight", .atLeast(50)).sorted(by: "weight")
            var weights: [Double] = []
            for try await item in database.stream(heavy, batchSize: 8) { weights.append(item.weight) }
            #expect(weights == (50...100).map(Double.init))
            let window = Query(OracleItem.self).sorted(by: "weight", descending: true).offset(3).limit(20)
            var windowed: [Double] = []
            for try await item in database.stream(window, batchSize: 6) { windowed.append(item.weight) }
            #expect(windowed == database.read(window).map(\.weight))
            #expect(windowed == (78...97).reversed().map(Double.init))

            // Observation of a query: its results, then again when a commit changes them.
            var results = database.observe(Query(OracleItem.self).filter("weight", .atLeast(98)).sorted(by: "weight")).makeAsyncIterator()
            #expect(try await results.next()?.map(\.weight) == [98, 99, 100])
            database.write(Record(id: "light", data: OracleItem(group: "odd", rank: 1, labels: [], weight: 5)))  // not selected
            database.write(Record(id: "k0098-half", data: OracleItem(group: "even", rank: 1, labels: [], weight: 98.5)))
            #expect(try await results.next()?.map(\.weight) == [98, 98.5, 99, 100])
            database.delete(id: "k0099")
            #expect(try await results.next()?.map(\.weight) == [98, 98.5, 100])

            // A query no index order can serve (ranges on two fields).
            let invalid = Query(OracleItem.self).filter("rank", .atLeast(1)).filter("weight", .lessThan(3))
            let failed = database.readPage(invalid)
            #expect(failed.records.isEmpty)
            #expect(failed.next == nil)
            if case .invalidQuery? = database.lastError {} else { Issue.record("lastError: \(String(describing: database.lastError))") }
            await #expect(throws: LocalDatabaseError.self) {
                for try await _ in database.stream(invalid) {}
            }
        }
    }

    /// QueriesAndIndexes.md: "A field renamed with `legacyKeys` is indexed under the name it is
    /// stored with: declare an index on the stored key." Records still stored under the old key
    /// are read with the new name, but an index (or a scan) on the new key sees the field as
    /// missing; the index on the old key finds them; written again, they move to the new key.
    @Test func aFieldRenamedWithLegacyKeysIsIndexedUnderItsStoredKey() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: [
                Record(id: "o1", data: GapRetitled(title: "apple", storedUnderOldKey: true)),
                Record(id: "o2", data: GapRetitled(title: "banana", storedUnderOldKey: true)),
                Record(id: "n1", data: GapRetitled(title: "apple")),
                Record(id: "n2", data: GapRetitled(title: "cherry")),
            ])
            // The model reads the old key.
            #expect((try await database.read(id: "o1") as GapRetitled?)?.title == "apple")
            // The index on the new key holds the old records as missing.
            #expect(try await database.readIDs(Query(GapRetitled.self).filter("title", .equals("apple"))) == ["n1"])
            #expect(try await database.readIDs(Query(GapRetitled.self).filter("title", .isNil)) == ["o1", "o2"])
            #expect(try await database.readIDs(Query(GapRetitled.self).filter("title", .atLeast(""))) == ["n1", "n2"])
            #expect(try await database.readIDs(Query(GapRetitled.self).sorted(by: "title")) == ["o1", "o2", "n1", "n2"])
            #expect(try await database.count(Query(GapRetitled.self).filter("title", .hasPrefix("b"))) == 0)
            // The index on the stored key finds them.
            #expect(try await database.readIDs(Query(GapRetitled.self).filter("label", .equals("apple"))) == ["o1"])
            #expect(try await database.read(Query(GapRetitled.self).filter("label", .hasPrefix("b"))).map(\.title) == ["banana"])

            // A scan means the same as the index.
            _ = try await database.write(contentsOf: [
                Record(id: "uo", data: GapRetitledUnindexed(title: "apple", storedUnderOldKey: true)),
                Record(id: "un", data: GapRetitledUnindexed(title: "apple")),
            ])
            #expect(try await database.readIDs(Query(GapRetitledUnindexed.self).filter("title", .equals("apple"))) == ["un"])
            #expect(try await database.readIDs(Query(GapRetitledUnindexed.self).filter("title", .isNil)) == ["uo"])
            #expect(try await database.readIDs(Query(GapRetitledUnindexed.self).filter("label", .equals("apple"))) == ["uo"])
            #expect(try await database.readIDs(Query(GapRetitledUnindexed.self).sorted(by: "title")) == ["uo", "un"])

            // Written again by the new code, an old record is stored under the new key and moves
            // from the old key's index to the new one's.
            let banana = try #require(try await database.read(id: "o2") as GapRetitled?)
            try await database.write(Record(id: "o2", data: banana))
            #expect(try await database.readIDs(Query(GapRetitled.self).filter("title", .equals("banana"))) == ["o2"])
            #expect(try await database.readIDs(Query(GapRetitled.self).filter("label", .equals("banana"))).isEmpty)
            #expect(try await database.readIDs(Query(GapRetitled.self).filter("title", .isNil)) == ["o1"])
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    /// QueriesAndIndexes.md: "`UUID`s are stored as strings and compare as such" (StoredValues.md:
    /// a UUID is stored as its `uuidString`). Equality finds a UUID by value or by its string;
    /// ranges and orders follow the strings' order; a missing UUID comes first.
    @Test func uuidsAreIndexedAsTheirStrings() async throws {
        try await withDatabase { database, _ in
            let strings = [
                "A0000000-0000-0000-0000-000000000000",
                "00000000-0000-0000-0000-0000000000AA",
                "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
                "9F000000-0000-0000-0000-000000000001",
                "3E1B4C2A-7D5F-4E60-8A9B-0C1D2E3F4A5B",
            ]
            let tokens = try strings.map { try #require(UUID(uuidString: $0)) }
            let ids = ["b1", "b2", "b3", "b4", "b5"]
            _ = try await database.write(contentsOf: zip(ids, tokens).map { Record(id: $0, data: GapBadge(token: $1, holder: $0)) })
            _ = try await database.write(Record(id: "none", data: GapBadge(token: nil, holder: "none")))
            let byString = zip(ids, strings).sorted { $0.1 < $1.1 }.map(\.0)
            #expect(byString == ["b2", "b5", "b4", "b1", "b3"])

            // Equality: by the UUID, and by its (upper-case) string.
            #expect(try await database.readIDs(Query(GapBadge.self).filter("token", .equals(tokens[0]))) == ["b1"])
            #expect(try await database.readIDs(Query(GapBadge.self).filter("token", .equals(strings[0]))) == ["b1"])
            #expect(try await database.read(Query(GapBadge.self).filter("token", .equals(tokens[4]))).map(\.token) == [tokens[4]])
            #expect(try await database.readIDs(Query(GapBadge.self).filter("token", .isIn([tokens[2], tokens[3]]))) == ["b4", "b3"])
            // Compared as strings: another spelling of the same UUID is another string.
            #expect(try await database.readIDs(Query(GapBadge.self).filter("token", .equals(strings[0].lowercased()))).isEmpty)
            #expect(try await database.readIDs(Query(GapBadge.self).filter("token", .isNil)) == ["none"])

            // Order: missing first, then the strings' order (digits before letters).
            #expect(try await database.readIDs(Query(GapBadge.self).sorted(by: "token")) == ["none"] + byString)
            #expect(try await database.readIDs(Query(GapBadge.self).sorted(by: "token", descending: true)) == byString.reversed() + ["none"])
            // Ranges: bounded by UUIDs, or by strings (the same kind of value).
            #expect(try await database.readIDs(Query(GapBadge.self).filter("token", .greaterThan(tokens[3]))) == ["b1", "b3"])
            #expect(try await database.readIDs(Query(GapBadge.self).filter("token", .between(tokens[1], tokens[0]))) == ["b2", "b5", "b4", "b1"])
            #expect(try await database.readIDs(Query(GapBadge.self).filter("token", .lessThan("A"))) == ["b2", "b5", "b4"])
            #expect(try await database.readIDs(Query(GapBadge.self).filter("token", .hasPrefix("FFFF"))) == ["b3"])
            // Never a number, nor missing, in a string range.
            #expect(try await database.count(Query(GapBadge.self).filter("token", .atLeast(""))) == 5)
        }
    }

    /// Keyset paging (`Query.after`) with writes between pages on both sides of the position:
    /// behind it (a smaller value; the position's value with a smaller id; the first place),
    /// and ahead of it (the position's value with a larger id; just after it; the end of the
    /// results), a record behind it rewritten, and a record ahead of it deleted. The pages give
    /// no record twice, skip none that was there throughout, give every record written ahead,
    /// and none written behind: they are the final state's results without those written
    /// behind. On a query an index serves, and on one served by a scan.
    @Test func keysetPagesStayInPlaceWhileRecordsAreWrittenOnBothSides() async throws {
        let queries: [(String, Query<OracleItem>)] = [
            ("index", Query(OracleItem.self).filter("weight", .between(10, 90)).sorted(by: "weight").limit(5)),
            ("scan", Query(OracleItem.self).filter("group", .equals("g")).filter("weight", .between(10, 90)).sorted(by: "weight").limit(5)),
        ]
        for (name, query) in queries {
            try await withDatabase { database, _ in
                let initialWeights = Dictionary(uniqueKeysWithValues: stride(from: 2, through: 100, by: 2).map { (String(format: "w%04d", $0), Double($0)) })
                _ = try await database.write(contentsOf: initialWeights.sorted { $0.key < $1.key }.map { labelled($0.key, $0.value) })
                let initial = try await database.readIDs(query.limit(10_000))
                #expect(initial.count == 41, "\(name)")

                var seen: [String] = []
                var behind: Set<String> = []
                var deletedAhead: Set<String> = []
                var cursor: QueryCursor?
                var pages = 0
                while pages < 100 {
                    let page = try await database.readPage(query.after(cursor))
                    pages += 1
                    let ids = page.records.map { $0.labels.first ?? "?" }
                    seen += ids
                    guard let next = page.next, let last = page.records.last, let lastID = ids.last, let firstRecord = page.records.first else { break }
                    cursor = next
                    let weight = last.weight
                    let tag = String(format: "%03d", pages)
                    // Behind the position ("0…" ids sort before every id a page gives).
                    let back = [labelled("back-\(tag)", weight - 0.5), labelled("0tie-\(tag)", weight), labelled("0first-\(tag)", 10)]
                    // Ahead of it.
                    let ahead = [labelled(lastID + "+", weight), labelled("ahead-\(tag)", weight + 0.5), labelled("z-end-\(tag)", 90)]
                    for record in back + ahead { try await database.write(record) }
                    behind.formUnion(back.map(\.id))
                    // A record given already, written again as it is: still behind.
                    try await database.write(labelled(ids[0], firstRecord.weight))
                    // A record there from the start, not given yet, deleted.
                    let given = Set(seen)
                    if let doomed = initial.first(where: { !given.contains($0) && !deletedAhead.contains($0) && (initialWeights[$0] ?? 0) > weight + 1 }) {
                        #expect(try await database.delete(id: doomed))
                        deletedAhead.insert(doomed)
                    }
                }
                #expect(pages < 100, "\(name): the pages did not end")
                let final = try await database.readIDs(query.limit(10_000))
                #expect(Set(seen).count == seen.count, "\(name): a record was given twice: \(seen)")
                #expect(seen == final.filter { !behind.contains($0) }, "\(name)")
                #expect(behind.isDisjoint(with: seen), "\(name)")
                #expect(deletedAhead.isDisjoint(with: seen), "\(name)")
                let throughout = initial.filter { !deletedAhead.contains($0) }
                let throughoutSet = Set(throughout)
                #expect(seen.filter { throughoutSet.contains($0) } == throughout, "\(name): a record there throughout was skipped or moved")
                #expect(!deletedAhead.isEmpty && seen.count > throughout.count, "\(name)")
            }
        }
    }
}
