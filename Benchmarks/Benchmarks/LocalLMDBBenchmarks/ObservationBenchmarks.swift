import Benchmark
import BenchmarkCore
import Foundation
import LocalLMDB

/// A database with `observers` tasks following its change feed (`changes()`), each counting the
/// commits it has received. Set up by a benchmark's setup hook, torn down by its teardown hook.
final class ObservedDatabase: @unchecked Sendable {
    let observers: Int
    private(set) var database: LocalDatabase?
    private var tasks: [Task<Void, Never>] = []
    private let state = NSLock()
    /// Commits received, summed over the observers.
    private var received = 0
    private var waiter: (target: Int, continuation: CheckedContinuation<Void, Never>)?
    private(set) var written = 0

    init(observers: Int) {
        self.observers = observers
    }

    func open() async throws {
        let database = try LocalDatabase(directory: try Fixture.temporaryDirectory("observed-\(observers)"))
        self.database = database
        for _ in 0..<observers {
            let sequence = database.changes()
            tasks.append(Task { [self] in
                do {
                    for try await _ in sequence { deliver() }
                } catch {}
            })
        }
        // Wait until every observer is following (one commit reaches them all).
        try await write()
        await waitForDelivery()
    }

    func close() async {
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        tasks = []
        await database?.close()
        database = nil
    }

    /// Writes one more record (durable when it returns).
    func write() async throws {
        written += 1
        try await database?.write(Record(id: "r\(written)", data: BenchStudent(index: written)))
    }

    private func deliver() {
        state.lock()
        received += 1
        var ready: CheckedContinuation<Void, Never>?
        if let waiter, received >= waiter.target {
            ready = waiter.continuation
            self.waiter = nil
        }
        state.unlock()
        ready?.resume()
    }

    /// Waits until every observer has received every commit written so far.
    func waitForDelivery() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.lock()
            let target = written * observers
            if received >= target {
                state.unlock()
                continuation.resume()
            } else {
                waiter = (target, continuation)
                state.unlock()
            }
        }
    }
}

/// Observation's costs: a durable write with no observer and with ten; the write and its delivery
/// to ten observers together; and the delivery latency alone, from the write's return (the commit
/// is durable) to the moment the last of the ten has it (usually before the writer resumes: the
/// observers are woken at the commit). The wall-clock percentiles give p50 and p99.
func observationBenchmarks() {
    let plain = ObservedDatabase(observers: 0)
    let observed = ObservedDatabase(observers: 10)
    let both = ObservedDatabase(observers: 10)
    let delivered = ObservedDatabase(observers: 10)
    let timing = BenchmarkThresholds(relative: [.p90: 50.0])
    // Delivery takes well under a microsecond, and whether the writer or the observers run
    // first on this 2-core VM changes from run to run: its p90 was 0.4 µs in some runs and
    // 0.9–1.1 µs in others of the same build. It is checked for order-of-magnitude changes.
    let deliveryTiming = BenchmarkThresholds(relative: [.p90: 300.0])

    Benchmark(
        "Observation.writeNoObservers",
        configuration: .init(
            metrics: [.wallClock, .throughput], thresholds: [.wallClock: timing, .throughput: timing],
            setup: { try await plain.open() }, teardown: { await plain.close() })
    ) { _ in
        try await plain.write()
    }

    Benchmark(
        "Observation.writeTenObservers",
        configuration: .init(
            metrics: [.wallClock, .throughput], thresholds: [.wallClock: timing, .throughput: timing],
            setup: { try await observed.open() }, teardown: { await observed.close() })
    ) { _ in
        try await observed.write()
    }

    Benchmark(
        "Observation.writeAndDeliverToTenObservers",
        configuration: .init(
            metrics: [.wallClock], thresholds: [.wallClock: timing],
            setup: { try await both.open() }, teardown: { await both.close() })
    ) { _ in
        try await both.write()
        await both.waitForDelivery()
    }

    Benchmark(
        "Observation.deliveryToTenObservers",
        configuration: .init(
            metrics: [.wallClock], thresholds: [.wallClock: deliveryTiming],
            setup: { try await delivered.open() }, teardown: { await delivered.close() })
    ) { benchmark in
        try await delivered.write()
        benchmark.startMeasurement()
        await delivered.waitForDelivery()
        benchmark.stopMeasurement()
    }
}
