import BenchmarkCore
import Foundation
import LocalLMDB
import LocalLMDBPostgres
import PostgresNIO

// The PostgreSQL comparison (scripts/postgres-benchmark): LocalLMDB's PostgreSQL store against
// hand-written postgres-nio statements doing the same work, and against LocalLMDB on LMDB, on the
// student model; then the push and pull replicators' throughput and lag.
//
//   PostgresComparison [--records N] [--reads N] [--repetitions R] [--results DIR]
//   PostgresComparison --only concurrent [--writer-processes N] [--writer-seconds S]
//   PostgresComparison --only sync [--sync-devices N] [--sync-rate R] [--sync-seconds S] [--initial-records N]
//
// The server is the one LOCALLMDB_POSTGRES_* name (scripts/postgres start prints them).

struct Options {
    var records = 1000
    var reads = 2000
    var repetitions = 5
    var results: String?
    /// Only the concurrent writers' comparison (`--only concurrent`).
    var onlyConcurrent = false
    var writerProcesses = 8
    var writerSeconds = 10.0
    /// Only two-way synchronization (`--only sync`).
    var onlySync = false
    var syncDevices = 4
    var syncRate = 200.0
    var syncSeconds = 10.0
    var initialRecords = 100_000

    init() {
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--records": records = arguments.popFirst().flatMap(Int.init) ?? records
            case "--reads": reads = arguments.popFirst().flatMap(Int.init) ?? reads
            case "--repetitions": repetitions = arguments.popFirst().flatMap(Int.init) ?? repetitions
            case "--results": results = arguments.popFirst()
            case "--only":
                let only = arguments.popFirst()
                onlyConcurrent = only == "concurrent"
                onlySync = only == "sync"
            case "--sync-devices": syncDevices = arguments.popFirst().flatMap(Int.init) ?? syncDevices
            case "--sync-rate": syncRate = arguments.popFirst().flatMap(Double.init) ?? syncRate
            case "--sync-seconds": syncSeconds = arguments.popFirst().flatMap(Double.init) ?? syncSeconds
            case "--initial-records": initialRecords = arguments.popFirst().flatMap(Int.init) ?? initialRecords
            case "--writer-processes": writerProcesses = arguments.popFirst().flatMap(Int.init) ?? writerProcesses
            case "--writer-seconds": writerSeconds = arguments.popFirst().flatMap(Double.init) ?? writerSeconds
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(64)
            }
        }
    }
}

let environment = ProcessInfo.processInfo.environment
guard let host = environment["LOCALLMDB_POSTGRES_HOST"], let port = environment["LOCALLMDB_POSTGRES_PORT"].flatMap(Int.init),
      let user = environment["LOCALLMDB_POSTGRES_USER"], let databaseName = environment["LOCALLMDB_POSTGRES_DATABASE"]
else {
    FileHandle.standardError.write(Data("Set LOCALLMDB_POSTGRES_* (scripts/postgres start), or run scripts/postgres-benchmark.\n".utf8))
    exit(2)
}
let configuration = PostgresConnection.Configuration(
    host: host, port: port, username: user, password: environment["LOCALLMDB_POSTGRES_PASSWORD"], database: databaseName, tls: .disable)
let logger: Logger = {
    var logger = Logger(label: "benchmark")
    logger.logLevel = .error
    return logger
}()

try await runWriterChildIfAsked()
let options = Options()

/// The concurrent writers' section of the report.
@MainActor func reportConcurrentWriters() async throws {
    say("")
    say("## Processes writing one store at once")
    say("")
    say(String(format: "%d processes, each writing one student a transaction (an upsert of its own ids) for %.0f s; the hand-written contender upserts (id, JSON) into one table, one statement a transaction.", options.writerProcesses, options.writerSeconds))
    say("")
    say("| Contender | Writes/s (median of \(options.repetitions)) |")
    say("|---|---:|")
    var rates: [String: [Double]] = [:]
    for _ in 0..<options.repetitions {
        rates["PostgresStore", default: []].append(try await concurrentWrites("store", processes: options.writerProcesses, seconds: options.writerSeconds))
        rates["hand-written postgres-nio", default: []].append(try await concurrentWrites("raw", processes: options.writerProcesses, seconds: options.writerSeconds))
    }
    for name in ["PostgresStore", "hand-written postgres-nio"] {
        say(String(format: "| %@ | %.0f |", name, median(rates[name] ?? [])))
    }
    say("")
    say(String(format: "PostgresStore against hand-written statements: %.2f× their writes per second (target ≥ 0.7×).",
               median(rates["PostgresStore"] ?? []) / median(rates["hand-written postgres-nio"] ?? [])))
}


func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func temporaryDirectory() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-pg-bench-\(UUID().uuidString)")
}

// MARK: The hand-written postgres-nio contender

/// What a postgres-nio user writes by hand: a table of (id, JSON), the Codable student encoded
/// with JSONEncoder, a batch as one `unnest` insert in a transaction, a read as one select.
final class HandWritten: @unchecked Sendable {
    let connection: PostgresConnection
    let table = "bench_raw_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    let encoder = JSONEncoder()
    let decoder = JSONDecoder()

    init() async throws {
        connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (id text PRIMARY KEY, data bytea NOT NULL)"), logger: logger)
    }

    func writeBatch(ids: [String]) async throws {
        let data = try ids.indices.map { ByteBuffer(data: try encoder.encode(BenchCodableStudent(index: $0))) }
        try await connection.query("BEGIN", logger: logger)
        try await connection.query(
            PostgresQuery(
                unsafeSQL: "INSERT INTO \(table) (id, data) SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data",
                binds: { var binds = PostgresBindings(); binds.append(ids); binds.append(data); return binds }()),
            logger: logger)
        try await connection.query("COMMIT", logger: logger)
    }

    func read(id: String) async throws -> Int {
        let rows = try await connection.query("SELECT data FROM \(unescaped: table) WHERE id = \(id)", logger: logger)
        for try await data in rows.decode(ByteBuffer.self) {
            return try decoder.decode(BenchCodableStudent.self, from: Data(buffer: data)).age
        }
        return -1
    }

    func drop() async throws {
        try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"), logger: logger)
        try await connection.close()
    }
}

// MARK: Runs

var report: [String] = []
@MainActor func say(_ line: String) {
    print(line)
    report.append(line)
}

if options.onlyConcurrent {
    say("# LocalLMDB on PostgreSQL: processes writing one store")
    try await reportConcurrentWriters()
    if let results = options.results {
        try? FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
        try report.joined(separator: "\n").appending("\n").write(toFile: results + "/postgres-concurrent.md", atomically: true, encoding: .utf8)
    }
    exit(0)
}

if options.onlySync {
    say("# LocalLMDB: two-way synchronization with PostgreSQL")
    try await reportSync()
    if let results = options.results {
        try? FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
        try report.joined(separator: "\n").appending("\n").write(toFile: results + "/sync.md", atomically: true, encoding: .utf8)
    }
    exit(0)
}

let ids = (0..<options.records).map { _ in UUID().uuidString }
let records = ids.enumerated().map { Record(id: $1, data: BenchStudent(index: $0)) }
var generator = SystemRandomNumberGenerator()
let readIDs = (0..<options.reads).map { _ in ids[Int.random(in: 0..<ids.count, using: &generator)] }

say("# LocalLMDB on PostgreSQL")
say("")
say("Student model (\(options.records) records, ~\(Int(BenchModel.student.meanJSONBytes(of: options.records))) B of JSON), PostgreSQL 15 on loopback, medians of \(options.repetitions) repetitions.")
say("")

// Batch write
var batch: [String: [Double]] = [:]
for _ in 0..<options.repetitions {
    let store = try await PostgresStore(configuration: configuration, name: "bench-" + UUID().uuidString)
    var start = ContinuousClock.now
    try await store.write(contentsOf: records)
    batch["PostgresStore", default: []].append(seconds(ContinuousClock.now - start))
    await store.close()

    let raw = try await HandWritten()
    start = ContinuousClock.now
    try await raw.writeBatch(ids: ids)
    batch["hand-written postgres-nio", default: []].append(seconds(ContinuousClock.now - start))
    try await raw.drop()

    let directory = temporaryDirectory()
    let local = try LocalDatabase(directory: directory)
    start = ContinuousClock.now
    try await local.write(contentsOf: records)
    batch["LocalDatabase (LMDB)", default: []].append(seconds(ContinuousClock.now - start))
    await local.close()
    try? FileManager.default.removeItem(at: directory)
}

// Read by id
var reads: [String: [Double]] = [:]
do {
    let store = try await PostgresStore(configuration: configuration, name: "bench-" + UUID().uuidString)
    try await store.write(contentsOf: records)
    let raw = try await HandWritten()
    try await raw.writeBatch(ids: ids)
    let directory = temporaryDirectory()
    let local = try LocalDatabase(directory: directory)
    try await local.write(contentsOf: records)
    for _ in 0..<options.repetitions {
        var start = ContinuousClock.now
        for id in readIDs {
            let student: BenchStudent? = try await store.read(id: id)
            precondition(student != nil)
        }
        reads["PostgresStore", default: []].append(seconds(ContinuousClock.now - start) / Double(readIDs.count))
        start = ContinuousClock.now
        for id in readIDs {
            let age = try await raw.read(id: id)
            precondition(age >= 0)
        }
        reads["hand-written postgres-nio", default: []].append(seconds(ContinuousClock.now - start) / Double(readIDs.count))
        start = ContinuousClock.now
        for id in readIDs {
            let student: BenchStudent? = try await local.read(id: id)
            precondition(student != nil)
        }
        reads["LocalDatabase (LMDB)", default: []].append(seconds(ContinuousClock.now - start) / Double(readIDs.count))
    }
    await store.close()
    try await raw.drop()
    await local.close()
    try? FileManager.default.removeItem(at: directory)
}

say("| Store | Batch write of \(options.records) | Records/s | Read by id | Reads/s |")
say("|---|---:|---:|---:|---:|")
for name in ["PostgresStore", "hand-written postgres-nio", "LocalDatabase (LMDB)"] {
    let write = median(batch[name] ?? [])
    let read = median(reads[name] ?? [])
    say(String(format: "| %@ | %.1f ms | %.0f | %.1f µs | %.0f |", name, write * 1000, Double(options.records) / write, read * 1e6, 1 / read))
}
let writeRatio = median(batch["hand-written postgres-nio"] ?? []) / median(batch["PostgresStore"] ?? [])
let readRatio = median(reads["hand-written postgres-nio"] ?? []) / median(reads["PostgresStore"] ?? [])
let lmdbWrite = median(batch["PostgresStore"] ?? []) / median(batch["LocalDatabase (LMDB)"] ?? [])
let lmdbRead = median(reads["PostgresStore"] ?? []) / median(reads["LocalDatabase (LMDB)"] ?? [])
say("")
say(String(format: "PostgresStore against hand-written postgres-nio: batch write %.2f×, read by id %.2f× their speed (target ≥ 0.7×).", writeRatio, readRatio))
say(String(format: "What shared data costs: on PostgreSQL a batch write takes %.1f× and a read by id %.0f× as long as on LMDB.", lmdbWrite, lmdbRead))

// MARK: Replication

/// Each new sequence number a replicator's `position` reaches, with when it was seen (looked at
/// every 200 µs), until the task is cancelled.
func watch(_ position: @escaping @Sendable () -> String?) -> Task<[(UInt64, ContinuousClock.Instant)], Never> {
    Task {
        var seen: [(UInt64, ContinuousClock.Instant)] = []
        var last: UInt64 = 0
        while !Task.isCancelled {
            if let position = position(), let sequence = position.split(separator: ":").dropFirst().first.flatMap({ UInt64($0) }),
               sequence != last {
                seen.append((sequence, ContinuousClock.now))
                last = sequence
            }
            try? await Task.sleep(for: .microseconds(200))
        }
        return seen
    }
}

/// Each commit's lag: from its time to the first sighting of its sequence number or a later one.
func lags(_ commits: [(UInt64, ContinuousClock.Instant)], _ seen: [(UInt64, ContinuousClock.Instant)]) -> [Double] {
    var lags: [Double] = []
    var cursor = 0
    for (sequence, time) in commits {
        while cursor < seen.count && seen[cursor].0 < sequence { cursor += 1 }
        guard cursor < seen.count else { break }
        lags.append(max(0, seconds(seen[cursor].1 - time)))
    }
    return lags
}

/// Times a replicator following `writers` tasks that make `total` writes between them
/// (`write(index)`): the writes/s, and the records/s replicated, until `position()` reaches
/// `target()`.
func timeFollowing(
    writers: Int, total: Int, write: @escaping @Sendable (Int) async throws -> Void,
    target: () async throws -> String, position: @escaping @Sendable () -> String?
) async throws -> (written: Double, replicated: Double) {
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for writer in 0..<writers {
            group.addTask {
                for index in stride(from: writer, to: total, by: writers) { try await write(index) }
            }
        }
        try await group.waitForAll()
    }
    let written = ContinuousClock.now
    let goal = try await target()
    while position() != goal { try await Task.sleep(for: .milliseconds(1)) }
    let replicated = ContinuousClock.now
    return (Double(total) / seconds(written - start), Double(total) / seconds(replicated - start))
}

/// The lag of a replicator behind one writer paced at up to `rate` writes/s for `duration`:
/// from each write's return (`write(index)` gives its commit's sequence number) to `position()`
/// first reaching it.
func timeLag(
    rate: Int, duration: Duration, write: (Int) async throws -> UInt64, target: () async throws -> String,
    position: @escaping @Sendable () -> String?
) async throws -> (p50: Double, p99: Double, commits: Int) {
    let clock = ContinuousClock()
    let begin = clock.now
    var commits: [(UInt64, ContinuousClock.Instant)] = []
    let sightings = watch(position)
    var index = 0
    let interval = Duration.seconds(1) / rate
    while clock.now - begin < duration {
        let due = begin + interval * index
        if clock.now < due { try await Task.sleep(until: due, clock: clock) }
        commits.append((try await write(index), clock.now))
        index += 1
    }
    let goal = try await target()
    while position() != goal { try await Task.sleep(for: .milliseconds(1)) }
    try await Task.sleep(for: .milliseconds(5))
    sightings.cancel()
    let measured = lags(commits, await sightings.value)
    return (percentile(measured, 0.5), percentile(measured, 0.99), commits.count)
}

/// Records/s pushed while `writers` tasks write `total` records one write each.
func pushThroughput(writers: Int, total: Int) async throws -> (local: Double, pushed: Double) {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let local = try LocalDatabase(directory: directory)
    let store = try await PostgresStore(configuration: configuration, name: "bench-push-" + UUID().uuidString)
    let replicator = PushReplicator(from: local, to: store)
    try await replicator.catchUp()
    let task = Task { try await replicator.run() }
    let rates = try await timeFollowing(writers: writers, total: total) { index in
        try await local.write(Record(id: ids[index % ids.count] + "-\(index)", data: BenchStudent(index: index)))
    } target: {
        try local.changeToken().description
    } position: {
        replicator.progress.position
    }
    task.cancel()
    _ = await task.result
    await store.close()
    await local.close()
    return (rates.written, rates.replicated)
}

/// Lag from each local commit's return to the server holding it, at a steady `rate` commits/s.
func lag(rate: Int, duration: Duration) async throws -> (p50: Double, p99: Double, commits: Int) {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let local = try LocalDatabase(directory: directory)
    let store = try await PostgresStore(configuration: configuration, name: "bench-lag-" + UUID().uuidString)
    let replicator = PushReplicator(from: local, to: store)
    try await replicator.catchUp()
    let task = Task { try await replicator.run() }
    let result = try await timeLag(rate: rate, duration: duration) { index in
        try await local.write(Record(id: "lag-\(index)", data: BenchStudent(index: index)))
        return try local.changeToken().sequence
    } target: {
        try local.changeToken().description
    } position: {
        replicator.progress.position
    }
    task.cancel()
    _ = await task.result
    await store.close()
    await local.close()
    return result
}

say("")
say("## Push replication (LocalDatabase → PostgresStore)")
say("")
say("| Local writers | Local writes/s | Records/s pushed (until the server holds the last) |")
say("|---:|---:|---:|")
for writers in [1, 8] {
    let (localRate, pushed) = try await pushThroughput(writers: writers, total: 4000)
    say(String(format: "| %d | %.0f | %.0f |", writers, localRate, pushed))
}
let (p50, p99, count) = try await lag(rate: 1000, duration: .seconds(5))
say("")
say(String(format: "Lag at a steady 1,000 commits/s (%d commits, one record each): p50 %.1f ms, p99 %.1f ms, from the local write's return to the server's commit of it.", count, p50 * 1000, p99 * 1000))

// MARK: Pull replication

/// Records/s pulled into a replica while `writers` tasks write `total` records, one write each,
/// through another connection pool to the store (another app server: the replica hears of its
/// commits from the server's notifications).
func pullThroughput(writers: Int, total: Int) async throws -> (server: Double, pulled: Double) {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let replica = try LocalDatabase(directory: directory)
    let name = "bench-pull-" + UUID().uuidString
    let store = try await PostgresStore(configuration: configuration, name: name)
    let writer = try await PostgresStore(configuration: configuration, name: name)
    let replicator = PullReplicator(from: store, to: replica)
    try await replicator.catchUp()
    let task = Task { try await replicator.run() }
    let rates = try await timeFollowing(writers: writers, total: total) { index in
        try await writer.write(Record(id: ids[index % ids.count] + "-\(index)", data: BenchStudent(index: index)))
    } target: {
        try await writer.changeToken().description
    } position: {
        replicator.progress.position
    }
    task.cancel()
    _ = await task.result
    await writer.close()
    await store.close()
    await replica.close()
    return (rates.written, rates.replicated)
}

/// Lag from each server commit's return (written through another pool) to the replica holding
/// it, one writer paced at up to `rate` commits/s.
func pullLag(rate: Int, duration: Duration) async throws -> (p50: Double, p99: Double, commits: Int) {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let replica = try LocalDatabase(directory: directory)
    let name = "bench-pull-lag-" + UUID().uuidString
    let store = try await PostgresStore(configuration: configuration, name: name)
    let writer = try await PostgresStore(configuration: configuration, name: name)
    let replicator = PullReplicator(from: store, to: replica)
    try await replicator.catchUp()
    let task = Task { try await replicator.run() }
    // A fresh store: one write after another, the index-th write is commit index + 1.
    let result = try await timeLag(rate: rate, duration: duration) { index in
        try await writer.write(Record(id: "lag-\(index)", data: BenchStudent(index: index)))
        return UInt64(index + 1)
    } target: {
        try await writer.changeToken().description
    } position: {
        replicator.progress.position
    }
    task.cancel()
    _ = await task.result
    await writer.close()
    await store.close()
    await replica.close()
    return result
}

say("")
say("## Pull replication (PostgresStore → a LocalDatabase replica)")
say("")
say("Writes made through a second connection pool (another app server), so the replica learns of them from the server's notifications.")
say("")
say("| Server writers | Server writes/s | Records/s pulled (until the replica holds the last) |")
say("|---:|---:|---:|")
for writers in [1, 8] {
    let (serverRate, pulled) = try await pullThroughput(writers: writers, total: 4000)
    say(String(format: "| %d | %.0f | %.0f |", writers, serverRate, pulled))
}
let pull = try await pullLag(rate: 1000, duration: .seconds(5))
say("")
say(String(
    format: "Lag with one writer committing one record at a time, paced at up to 1,000 commits/s (%d commits in 5 s: %.0f/s, as each server commit waits for its flush): p50 %.1f ms, p99 %.1f ms, from the server write's return to the replica's commit of it.",
    pull.commits, Double(pull.commits) / 5, pull.p50 * 1000, pull.p99 * 1000))

try await reportConcurrentWriters()

if let results = options.results {
    try? FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
    try report.joined(separator: "\n").appending("\n").write(toFile: results + "/postgres.md", atomically: true, encoding: .utf8)
}
