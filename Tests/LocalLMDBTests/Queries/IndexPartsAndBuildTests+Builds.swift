import CLMDB
import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
@testable import LocalLMDBEngine
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

// Index builds under way, and the integrity check of index entries.
extension IndexPartsAndBuildTests {
    /// The build of an index over stored records is one write transaction (`prepareIndexes`'s
    /// documentation): held in the middle (at its report after 4,096 records), a read by id, a
    /// count and the ids of the type go on; queries of the type made meanwhile wait for the whole
    /// index, and every result, during the build and after it, is the full one.
    @Test func queriesDuringAnIndexBuildNeverSeePartOfIt() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let total = 12_000
            let written = try await database.write(contentsOf: (0..<total).map { Record(id: Self.buildID($0), data: BuildItem(bucket: $0 % 10, n: $0)) })
            #expect(written == total)
            // The records stay; their index goes: the next build makes it from them.
            #expect(try await database.dropIndex(.on("bucket"), of: BuildItem.self))
            let expected: [[String]] = [
                (0..<total).filter { $0 % 10 == 3 }.map(Self.buildID),
                Array((0..<total).filter { (2...4).contains($0 % 10) }.sorted { ($0 % 10, $0) < ($1 % 10, $1) }.map(Self.buildID).reversed()),
                [String(total / 10)],
            ]

            let hold = DispatchSemaphore(value: 0)
            let held = Locked(false)
            let (events, continuation) = AsyncStream.makeStream(of: IndexBuildProgress.self)
            let build = Task {
                defer { continuation.finish() }
                try await database.prepareIndexes(of: BuildItem.self) { progress in
                    continuation.yield(progress)
                    // On the writer thread, in the build's transaction: held once, mid-way, until
                    // the test has read and queued its queries (at most a minute).
                    guard progress.recordsIndexed > 0, progress.recordsIndexed < progress.recordCount,
                          held.withLock({ done in defer { done = true }; return !done }) else { return }
                    _ = hold.wait(timeout: .now() + 60)
                }
            }
            var reports: [IndexBuildProgress] = []
            var iterator = events.makeAsyncIterator()
            while let report = await iterator.next() {
                reports.append(report)
                if report.recordsIndexed > 0 && report.recordsIndexed < report.recordCount { break }
            }
            let finished = Locked(0)
            let queries: [Task<[[String]], any Error>]
            do {
                try #require(reports.last.map { $0.recordsIndexed > 0 && $0.recordsIndexed < $0.recordCount } == true, "no report mid-way: \(reports)")
                // The build holds the writer: reads are not blocked.
                let (one, count, ids) = try await withTimeout(seconds: 30) { () async throws -> (BuildItem?, Int, Int) in
                    let one: BuildItem? = try await database.read(id: Self.buildID(4242))
                    return (one, try await database.count(BuildItem.self), try await database.readIDs(BuildItem.self).count)
                }
                #expect(one == BuildItem(bucket: 2, n: 4242))
                #expect(count == total)
                #expect(ids == total)
                // Queries from other tasks, each three times: the first made while the build is held.
                queries = (0..<expected.count).map { kind -> Task<[[String]], any Error> in
                    Task { () async throws -> [[String]] in
                        var results: [[String]] = []
                        for _ in 0..<3 {
                            results.append(try await Self.buildQuery(kind, on: database))
                            finished.withLock { $0 += 1 }
                        }
                        return results
                    }
                }
                let thread = database.session.engine.thread
                let waiting = await waitUntil(seconds: 60) { thread.queuedCount >= expected.count || finished.withLock { $0 } > 0 }
                #expect(waiting)
                #expect(finished.withLock { $0 } == 0, "a query of the type was answered while its index was being built")
            } catch {
                hold.signal()
                throw error
            }
            hold.signal()
            try await build.value
            while let report = await iterator.next() { reports.append(report) }
            #expect(reports.map(\.recordsIndexed) == [0, 4096, 8192, total])
            #expect(reports.allSatisfy { $0.className == "BuildItem" && $0.index == "bucket" && $0.recordCount == total })
            for (kind, query) in queries.enumerated() {
                let results = try await query.value
                #expect(results.count == 3)
                for (number, result) in results.enumerated() {
                    #expect(result == expected[kind], "query \(kind), run \(number): \(result.count) results, not \(expected[kind].count)")
                }
            }
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    // MARK: The integrity check

    static func auditID(_ number: Int) -> String { id("r", number) }

    /// 20 records of `AuditItem` in a new database at `url`, closed; the first bytes of its
    /// index's entry keys (its number), read from the catalog.
    static func writeAudited(_ url: URL) async throws -> [UInt8] {
        let database = try LocalDatabase(directory: url)
        _ = try await database.write(contentsOf: (0..<20).map { Record(id: auditID($0), data: AuditItem(shelf: "s\($0 % 3)", n: $0)) })
        let report = try await database.verifyIntegrity()
        #expect(report.isConsistent, "\(report)")
        await database.close()
        let catalog = try #require(rawGet(url, "indexes", StoredIndex.catalogKey(className: "AuditItem", name: "shelf")))
        try #require(catalog.count > 4)
        return Array(catalog.prefix(4))
    }

    /// A record's entry removed from its index: reported as missing, naming the record and
    /// the index, and nothing else.
    @Test func theIntegrityCheckReportsAMissingIndexEntry() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            let prefix = try await Self.writeAudited(url)
            #expect(damageIndexEntry(url, prefix: prefix, record: Array("r07".utf8), .remove))
            let database = try LocalDatabase(directory: url)
            let report = try await database.verifyIntegrity()
            #expect(report.problems == [.missingSecondaryIndexEntry(id: "r07", index: "AuditItem: shelf")], "\(report)")
            #expect(report.recordCount == 20)
            #expect(!report.isConsistent)
            // As the report says: queries on the index miss the record.
            let shelf = (0..<20).filter { $0 % 3 == 1 && $0 != 7 }.map(Self.auditID)
            #expect(try await database.readIDs(Query(AuditItem.self).filter("shelf", .equals("s1"))) == shelf)
            await database.close()
        }
    }

    /// An entry naming a record that does not exist added to an index: reported as orphaned,
    /// naming the index and the id, and nothing else.
    @Test func theIntegrityCheckReportsAnOrphanedIndexEntry() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            let prefix = try await Self.writeAudited(url)
            // Next to r07's entry (the value "s1"), one naming "ghost", which no record has.
            #expect(damageIndexEntry(url, prefix: prefix, record: Array("r07".utf8), .addEntry(naming: Array("ghost".utf8))))
            let database = try LocalDatabase(directory: url)
            let report = try await database.verifyIntegrity()
            #expect(report.problems == [.orphanedSecondaryIndexEntry(index: "AuditItem: shelf", id: "ghost")], "\(report)")
            #expect(report.recordCount == 20)
            #expect((try await database.read(id: "ghost") as AuditItem?) == nil)
            await database.close()
        }
    }
}
