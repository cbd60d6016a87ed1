import Foundation

/// One timed workload: how many operations one repetition performs, and how to run it.
public struct Workload: Sendable {
    public let name: String
    /// What one operation is, for the table ("read", "write", …).
    public let unit: String
    public let operations: Int
    /// Runs one repetition against a store that already holds the objects, given the ids in a
    /// random order (shuffled before timing starts).
    public let run: @Sendable (any Contender, [String]) async throws -> Void
    /// True when each repetition needs a fresh, empty store.
    public let needsEmptyStore: Bool
}

public enum Workloads {
    /// The standard set, for `count` stored objects.
    public static func standard(count: Int) -> [Workload] {
        [
            Workload(name: "batch write, one transaction", unit: "writes", operations: count, run: { store, ids in
                try await store.writeBatch(ids: ids, firstIndex: 0)
            }, needsEmptyStore: true),
            Workload(name: "write each in a transaction", unit: "writes", operations: count, run: { store, ids in
                try await store.writeEachInTransaction(ids: ids, firstIndex: 0)
            }, needsEmptyStore: true),
            Workload(name: "read by id, 1 task", unit: "reads", operations: count, run: { store, ids in
                try await readRandomly(store, ids: ids, tasks: 1)
            }, needsEmptyStore: false),
            Workload(name: "read by id, 2 tasks", unit: "reads", operations: count, run: { store, ids in
                try await readRandomly(store, ids: ids, tasks: 2)
            }, needsEmptyStore: false),
            Workload(name: "read all of a type", unit: "objects", operations: count, run: { store, _ in
                let read = try await store.readAll()
                guard read == count else { throw WorkloadFailure(reason: "read \(read) of \(count) objects") }
            }, needsEmptyStore: false),
            Workload(name: "count of a type", unit: "counts", operations: 1000, run: { store, _ in
                for _ in 0..<1000 {
                    let counted = try await store.count()
                    guard counted == count else { throw WorkloadFailure(reason: "counted \(counted) of \(count)") }
                }
            }, needsEmptyStore: false),
            Workload(name: "durable writes, 1 task", unit: "writes", operations: 200, run: { store, ids in
                for index in 0..<200 { try await store.writeOne(id: ids[index], index: index) }
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
            }, needsEmptyStore: false),
        ]
    }

    /// Reads every id once, in the given (random) order, split across `tasks` tasks.
    static func readRandomly(_ store: any Contender, ids order: [String], tasks: Int) async throws {
        let share = (order.count + tasks - 1) / tasks
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                let slice = Array(order[min(task * share, order.count)..<min((task + 1) * share, order.count)])
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
    public var description: String { "workload failed: \(reason)" }
}
