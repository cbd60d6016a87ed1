import BenchmarkCore
import Foundation
import LocalLMDB
import LocalLMDBPostgres
import PostgresNIO

// Two-way synchronization (`--only sync`): the lag from a device's write to another device's
// local read, with devices writing at a steady rate, each synchronizing with `run()`; and the
// initial synchronization of a new device against a pull replica's full copy.

/// The wall clock in nanoseconds (one process: every device reads the same clock).
func wallNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// A benchmark that did not do the work it measures.
struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A note stamped with the wall clock when it was written.
struct LagNote: Codable, Persistable {
    var sent: UInt64
}

/// Lags in milliseconds, from writes on one device to their local reads on the others.
final class LagRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var lags: [Double] = []

    func add(_ lag: Double) {
        lock.lock()
        lags.append(lag)
        lock.unlock()
    }

    var all: [Double] {
        lock.lock()
        defer { lock.unlock() }
        return lags
    }
}

/// `devices` devices, each writing `rate` commits a second for `seconds` and synchronizing with
/// `run()`, while every device watches its own change feed and reads each record another device
/// wrote as it arrives. Returns the lags (ms) and how many writes were made.
func syncLag(devices: Int, rate: Double, seconds: Double) async throws -> (lags: [Double], writes: Int) {
    let store = "bench-sync-" + UUID().uuidString
    var locals: [LocalDatabase] = []
    var servers: [PostgresStore] = []
    var synchronizers: [Synchronizer] = []
    var directories: [URL] = []
    for index in 0..<devices {
        let directory = temporaryDirectory()
        directories.append(directory)
        let local = try LocalDatabase(directory: directory)
        let server = try await PostgresStore(configuration: configuration, name: store, connections: 2)
        let synchronizer = Synchronizer(local, with: server, device: "device-\(index)")
        try await synchronizer.synchronize()
        locals.append(local)
        servers.append(server)
        synchronizers.append(synchronizer)
    }
    let recorder = LagRecorder()
    var tasks: [Task<Void, Never>] = []
    for synchronizer in synchronizers {
        tasks.append(Task { try? await synchronizer.run() })
    }
    for (index, local) in locals.enumerated() {
        let own = "device-\(index)/"
        tasks.append(Task {
            do {
                for try await commit in local.changes(of: LagNote.self) {
                    for case let .written(id, _) in commit.changes where !id.hasPrefix(own) {
                        let note: LagNote? = try await local.read(id: id)
                        if let note { recorder.add(Double(wallNanoseconds() &- note.sent) / 1e6) }
                    }
                }
            } catch {}
        })
    }
    let writes = await withTaskGroup(of: Int.self) { group in
        for (index, local) in locals.enumerated() {
            group.addTask {
                let interval = Duration.nanoseconds(Int64(1e9 / rate))
                let start = ContinuousClock.now
                var next = start
                var count = 0
                while ContinuousClock.now - start < .seconds(seconds) {
                    _ = try? await local.write(Record(id: "device-\(index)/\(count)", data: LagNote(sent: wallNanoseconds())))
                    count += 1
                    next += interval
                    try? await Task.sleep(until: next, clock: .continuous)
                }
                return count
            }
        }
        var total = 0
        for await count in group { total += count }
        return total
    }
    // What is still in flight arrives, then everything stops.
    try await Task.sleep(for: .seconds(2))
    for task in tasks { task.cancel() }
    for task in tasks { await task.value }
    for local in locals { await local.close() }
    for server in servers { await server.close() }
    for directory in directories { try? FileManager.default.removeItem(at: directory) }
    return (recorder.all, writes)
}

/// Records a second for a new device's first synchronization of a store of `records`, and a
/// pull replica's full copy of it, each into a new database. The store's tables are vacuumed
/// before either reads them, so that neither pays for settling what the writes left (the
/// first reader of freshly written rows marks every page, and writes it again); `replicaFirst`
/// says which goes first (repetitions alternate, so that neither always reads cold).
func initialSync(records: Int, replicaFirst: Bool) async throws -> (synchronizer: Double, replica: Double) {
    let name = "bench-initial-" + UUID().uuidString
    let store = try await PostgresStore(configuration: configuration, name: name, connections: 2)
    var written = 0
    while written < records {
        let count = min(10_000, records - written)
        try await store.write(contentsOf: (written..<(written + count)).map { Record(id: "s\($0)", data: BenchStudent(index: $0)) })
        written += count
    }
    try await store.enableSync()
    let prefix = PostgresStore.tablePrefix(of: name)
    let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
    try await connection.query(PostgresQuery(unsafeSQL: "VACUUM (ANALYZE) \(prefix)_records, \(prefix)_sync, \(prefix)_classes"), logger: logger)
    try await connection.close()

    func synchronizer() async throws -> Double {
        let directory = temporaryDirectory()
        let local = try LocalDatabase(directory: directory)
        let start = ContinuousClock.now
        try await Synchronizer(local, with: store, device: "new-device").synchronize()
        let rate = Double(records) / seconds(ContinuousClock.now - start)
        let received = try await local.count()
        guard received == records else { throw BenchmarkFailure("the device received \(received) of \(records) records") }
        await local.close()
        try? FileManager.default.removeItem(at: directory)
        return rate
    }
    func replica() async throws -> Double {
        let directory = temporaryDirectory()
        let local = try LocalDatabase(directory: directory)
        let start = ContinuousClock.now
        try await PullReplicator(from: store, to: local).catchUp()
        let rate = Double(records) / seconds(ContinuousClock.now - start)
        let copied = try await local.count()
        guard copied == records else { throw BenchmarkFailure("the replica received \(copied) of \(records) records") }
        await local.close()
        try? FileManager.default.removeItem(at: directory)
        return rate
    }
    let rates: (synchronizer: Double, replica: Double)
    if replicaFirst {
        let replicaRate = try await replica()
        rates = (try await synchronizer(), replicaRate)
    } else {
        let synchronizerRate = try await synchronizer()
        rates = (synchronizerRate, try await replica())
    }
    await store.close()
    return rates
}

/// The synchronization section of the report.
@MainActor func reportSync() async throws {
    say("")
    say("## Two-way synchronization")
    say("")
    // Several runs: one run's p50 moves by a few milliseconds from run to run on this machine
    // (two cores shared by the four devices and the server), so every run is shown, and the median.
    let runs = max(1, options.repetitions | 1)
    say(String(
        format: "%d devices in one process, each writing %.0f commits/s (one note a commit) for %.0f s and synchronizing with `run()`; every device reads each note another device wrote as its change feed delivers it. %d runs, one after another.",
        options.syncDevices, options.syncRate, options.syncSeconds, runs))
    say("")
    say("| Run | Writes made | Reads measured | Lag p50 | Lag p99 | Lag max |")
    say("|---:|---:|---:|---:|---:|---:|")
    var medians: [Double] = []
    var tails: [Double] = []
    for run in 1...runs {
        let (lags, writes) = try await syncLag(devices: options.syncDevices, rate: options.syncRate, seconds: options.syncSeconds)
        medians.append(percentile(lags, 0.5))
        tails.append(percentile(lags, 0.99))
        say(String(
            format: "| %d | %d | %d | %.1f ms | %.1f ms | %.1f ms |", run, writes, lags.count, percentile(lags, 0.5), percentile(lags, 0.99),
            lags.max() ?? 0))
    }
    say("")
    say(String(format: "Median of the runs: p50 %.1f ms, p99 %.1f ms.", median(medians), median(tails)))
    say("")
    say("Targets: p50 ≤ 20 ms, p99 ≤ 100 ms.")
    say("")
    var synchronizer: [Double] = []
    var replica: [Double] = []
    for repetition in 0..<max(1, options.repetitions / 2) {
        let rates = try await initialSync(records: options.initialRecords, replicaFirst: repetition % 2 == 1)
        synchronizer.append(rates.synchronizer)
        replica.append(rates.replica)
    }
    say("Initial synchronization of a new device, \(options.initialRecords) student records (the store's tables vacuumed after its writes; the two contenders' order alternating between repetitions):")
    say("")
    say("| Contender | Records/s (median) |")
    say("|---|---:|")
    say(String(format: "| Synchronizer, first pass | %.0f |", median(synchronizer)))
    say(String(format: "| PullReplicator, full copy | %.0f |", median(replica)))
    say("")
    say(String(format: "Synchronizer against the replica's full copy: %.2f× (target ≥ 0.8×).", median(synchronizer) / median(replica)))
}
