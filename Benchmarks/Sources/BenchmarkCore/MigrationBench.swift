import Foundation
import LocalLMDB

/// The migration workload of the comparison: every record of a class changes shape (a full name
/// split in two), through `LocalDatabase.migrate(with:)`, against the same change made by a
/// hand-written loop over the public API (read a page of the old model, write the new models
/// back, one transaction a page), on copies of one database. Both transform each record from
/// its old model type, in pages of the same size.
///
/// Memory: the largest growth of the process's anonymous resident memory (the heap: the map's
/// pages are file-backed) seen after any batch, over its level before the run; at two sizes,
/// so that a bound by the batch size shows as the same growth for ten times the records.
public enum MigrationBench {
    /// The old shape.
    public final class PersonV1: Codable, Persistable, Identifiable, Sendable {
        public let id: String
        public let name: String
        public let age: Int
        public let email: String
        init(id: String, index: Int) {
            self.id = id
            name = "Person\(index) Family\(index % 977)"
            age = 18 + index % 60
            email = "person\(index)@example.com"
        }
    }

    /// The new shape.
    public final class PersonV2: Codable, Persistable, Identifiable, Sendable {
        public let id: String
        public let first: String
        public let last: String
        public let age: Int
        public let email: String
        init(_ old: PersonV1) {
            id = old.id
            let parts = old.name.split(separator: " ", maxSplits: 1)
            first = parts.first.map(String.init) ?? ""
            last = parts.count > 1 ? String(parts[1]) : ""
            age = old.age
            email = old.email
        }
    }

    static let batchSize = 1000
    static let contenders = ["LocalLMDB (migrate)", "Hand-written loop"]

    /// Runs the workload over each of `counts` records and returns its markdown section.
    public static func run(counts: [Int], repetitions: Int, log: (String) -> Void) async throws -> String {
        var rows: [String] = []
        var memoryRows: [String] = []
        for count in counts {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("migration-bench-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: root) }
            let fixture = root.appendingPathComponent("fixture")
            log("migration, \(count) records: writing…")
            do {
                let database = try LocalDatabase(directory: fixture)
                let ids = Fixture.ids(count)
                for start in stride(from: 0, to: count, by: 10_000) {
                    let part = (start..<min(start + 10_000, count)).map { PersonV1(id: ids[$0], index: $0) }
                    _ = try await database.write(contentsOf: part.map { Record($0) })
                }
            }
            var seconds: [[Double]] = [[], []]
            var growth: [Int] = [0, 0]
            for repetition in 0..<repetitions {
                for (index, name) in contenders.enumerated() {
                    let copy = root.appendingPathComponent("run-\(repetition)-\(index)")
                    try FileManager.default.copyItem(at: fixture, to: copy)
                    defer { try? FileManager.default.removeItem(at: copy) }
                    let database = try LocalDatabase(directory: copy)
                    MemoryProbe.trimHeap()
                    let before = MemorySample.now(heapFirst: true).anonymous ?? 0
                    var largest = before
                    let sample = { largest = max(largest, MemorySample.now(heapFirst: true).anonymous ?? 0) }
                    let start = ContinuousClock.now
                    let migrated = index == 0 ? try await migrate(database, sample: sample) : try await handWritten(database, sample: sample)
                    let elapsed = ContinuousClock.now - start
                    guard migrated == count, try await database.count(Query(PersonV2.self)) == count,
                        try await database.count(Query(PersonV1.self)) == 0
                    else {
                        throw BenchError("\(name) migrated \(migrated) of \(count) records")
                    }
                    let time = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                    seconds[index].append(time)
                    growth[index] = max(growth[index], largest - before)
                    log(String(format: "  %-22@ %8.0f records/s", name, Double(count) / time))
                }
            }
            let best = seconds.map { Double(count) / ($0.min() ?? .infinity) }
            let median = seconds.map { Double(count) / $0.sorted()[$0.count / 2] }
            rows.append(String(format: "| %@ | %.0f (%.0f) | %.0f (%.0f) | %.2f× (%.2f×) |", grouped(count), best[0], median[0], best[1], median[1],
                               best[0] / best[1], median[0] / median[1]))
            memoryRows.append("| \(grouped(count)) | \(megabytes(growth[0])) | \(megabytes(growth[1])) |")
        }
        return """
        Every record of a class of ~120-byte records changes shape (a full name split in two), \(batchSize) records a transaction, \
        on copies of one database: `migrate(with:)` (a `.transform(PersonV1.self)` step decoding the old model) against a \
        hand-written loop over the public API (`readPage` of the old model, `write(contentsOf:)` of the new), records per \
        second, best (median) of \(repetitions).

        | Records | LocalLMDB (migrate) | Hand-written loop | migrate ÷ loop |
        |---:|---:|---:|---:|
        \(rows.joined(separator: "\n"))

        Largest growth of the anonymous resident memory (the heap; the map's pages are file-backed) after any batch:

        | Records | LocalLMDB (migrate) | Hand-written loop |
        |---:|---:|---:|
        \(memoryRows.joined(separator: "\n"))

        """
    }

    /// The migration; returns the records it wrote.
    static func migrate(_ database: LocalDatabase, sample: @escaping () -> Void) async throws -> Int {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("split names", batchSize: batchSize, steps: [
            .transform(PersonV1.self) { record in .replace(with: PersonV2(try record.decode(PersonV1.self))) },
        ])
        var written = 0
        try await database.migrate(with: migrator) { progress in
            written = progress.recordsWritten
            sample()
        }
        return written
    }

    /// The same change by hand; returns the records it wrote.
    static func handWritten(_ database: LocalDatabase, sample: () -> Void) async throws -> Int {
        var written = 0
        var cursor: QueryCursor?
        repeat {
            let page = try await database.readPage(Query(PersonV1.self).limit(batchSize).after(cursor))
            if !page.records.isEmpty {
                written += try await database.write(contentsOf: page.records.map { Record(PersonV2($0)) })
            }
            cursor = page.next
            sample()
        } while cursor != nil
        return written
    }

    static func grouped(_ count: Int) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.groupingSeparator = ","
        return formatter.string(from: NSNumber(value: count)) ?? String(count)
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_000_000) }
}

/// A benchmark's own check that failed.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
