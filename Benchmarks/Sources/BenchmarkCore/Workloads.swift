import Foundation

/// One timed workload: how many operations one repetition performs, and how to run it.
public struct Workload: Sendable {
    public let name: String
    /// What one operation is, for the table ("read", "write", …).
    public let unit: String
    public let operations: Int
    /// Runs one repetition against a store that already holds the objects, given the ids in a
    /// random order (shuffled before timing starts). The read of every object returns its
    /// result, whose own timing leaves out the measuring of its memory; the others return nil.
    public let run: @Sendable (any Contender, [String]) async throws -> ReadAllResult?
    /// True when each repetition needs a fresh, empty store.
    public let needsEmptyStore: Bool
}

public enum Workloads {
    /// The most ids a read-by-id repetition reads: a random sample of all the ids (the first ids
    /// of the repetition's shuffled order, the same for every contender), so that a run of a
    /// million objects does not spend many minutes a repetition on the slowest store.
    public static let readByIDCap = 100_000

    /// How many reads a read-by-id repetition performs for `count` stored objects.
    public static func readByIDOperations(count: Int) -> Int { min(count, readByIDCap) }

    /// How many counts a count repetition performs: 1000, fewer above 100,000 objects (100 at a
    /// million), where SQLite's counts take time in proportion to the objects.
    public static func countOperations(count: Int) -> Int { max(100, min(1000, 100_000_000 / max(count, 1))) }

    /// The standard set, for `count` stored objects.
    public static func standard(count: Int) -> [Workload] {
        let reads = readByIDOperations(count: count)
        let counts = countOperations(count: count)
        return [
            Workload(name: "batch write, one transaction", unit: "writes", operations: count, run: { store, ids in
                try await store.writeBatch(ids: ids, firstIndex: 0)
                return nil
            }, needsEmptyStore: true),
            Workload(name: "write each in a transaction", unit: "writes", operations: count, run: { store, ids in
                try await store.writeEachInTransaction(ids: ids, firstIndex: 0)
                return nil
            }, needsEmptyStore: true),
            Workload(name: "read by id, 1 task", unit: "reads", operations: reads, run: { store, ids in
                try await readRandomly(store, ids: ids.prefix(reads), tasks: 1)
                return nil
            }, needsEmptyStore: false),
            Workload(name: "read by id, 2 tasks", unit: "reads", operations: reads, run: { store, ids in
                try await readRandomly(store, ids: ids.prefix(reads), tasks: 2)
                return nil
            }, needsEmptyStore: false),
            Workload(name: "read by id, synchronous API", unit: "reads", operations: reads, run: { store, ids in
                for id in ids.prefix(reads) {
                    guard try store.readSynchronously(id: id) >= 0 else { throw WorkloadFailure(reason: "missing \(id)") }
                }
                return nil
            }, needsEmptyStore: false),
            Workload(name: readAllName, unit: "objects", operations: count, run: { store, _ in
                let read = try await store.readAll()
                guard read.count == count else { throw WorkloadFailure(reason: "read \(read.count) of \(count) objects") }
                return read
            }, needsEmptyStore: false),
            Workload(name: "count of a type", unit: "counts", operations: counts, run: { store, _ in
                for _ in 0..<counts {
                    let counted = try await store.count()
                    guard counted == count else { throw WorkloadFailure(reason: "counted \(counted) of \(count)") }
                }
                return nil
            }, needsEmptyStore: false),
            Workload(name: "durable writes, 1 task", unit: "writes", operations: 200, run: { store, ids in
                for index in 0..<200 { try await store.writeOne(id: ids[index], index: index) }
                return nil
            }, needsEmptyStore: false),
            Workload(name: "durable writes, 8 tasks", unit: "writes", operations: 400, run: { store, ids in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<8 {
                        group.addTask {
                            for step in 0..<50 {
                                let index = task * 50 + step
                                try await store.writeOne(id: ids[index], index: index)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                return nil
            }, needsEmptyStore: false),
        ]
    }

    /// The name of the workload that reads every object, whose memory the report shows.
    public static let readAllName = "read all of a type"

    /// Reads every id once, in the given (random) order, split across `tasks` tasks.
    static func readRandomly(_ store: any Contender, ids order: ArraySlice<String>, tasks: Int) async throws {
        let share = (order.count + tasks - 1) / tasks
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                let slice = Array(order[order.startIndex + min(task * share, order.count)..<order.startIndex + min((task + 1) * share, order.count)])
                group.addTask {
                    for id in slice {
                        guard try await store.read(id: id) >= 0 else { throw WorkloadFailure(reason: "missing \(id)") }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}

public struct WorkloadFailure: Error, CustomStringConvertible {
    public let reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { "workload failed: \(reason)" }
}
