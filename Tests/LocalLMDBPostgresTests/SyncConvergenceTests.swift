import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// One acknowledged local write, as a device's journal has it (`helper device`).
struct JournaledWrite: CustomStringConvertible {
    let id: String
    let stamp: SyncStampValue
    let base: SyncStampValue
    let deleted: Bool

    init?(_ line: Substring) {
        let parts = line.split(separator: " ")
        guard parts.count == 7, parts[0] == "ack", let time = UInt64(parts[2]), let baseTime = UInt64(parts[4]) else { return nil }
        id = String(parts[1])
        stamp = SyncStampValue(time: time, device: String(parts[3]))
        base = SyncStampValue(time: baseTime, device: parts[5] == "-" ? "" : String(parts[5]))
        deleted = parts[6] == "1"
    }

    var description: String { "\(deleted ? "deletion" : "write") of \(id) at \(stamp) on \(base)" }
}

/// The convergence test's run: `devices` helper processes making `operations` random local
/// operations in each of `rounds` rounds over 20 shared ids, some killed at random moments in
/// each round, the server restarted under the second; then every device synchronizes twice
/// around. Returns what a test checks.
func runConvergence(
    seed: UInt64, devices: Int = 4, rounds: Int = 3, operations: Int
) async throws -> (
    differing: [String], lost: [String], wentBack: [String], pending: Int, kills: Int, synchronized: Int, failed: Int, writes: Int, conflicts: Int, settled: Int
) {
    let helper = try replicationHelper()
    let address = try PostgresServer.address.get()
    let store = PostgresServer.uniqueStore("convergence")
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-convergence-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: root) }
    let names = (0..<devices).map { "d\($0)" }
    let directories = names.map { root.appendingPathComponent($0) }
    let journals = names.map { root.appendingPathComponent("\($0).journal").path }
    var generator = SplitMix(seed: seed)
    var kills = 0
    var synchronized = 0
    var failed = 0
    for round in 0..<rounds {
        var processes: [ChildProcess] = []
        for index in names.indices {
            processes.append(try ChildProcess(
                helper.path,
                ["device", directories[index].path, store, names[index], String(generator.next()), String(operations), journals[index]],
                environment: helperEnvironment(address), output: .pipe))
        }
        let killAfter: [Int?] = processes.indices.map { _ in generator.next() % 2 == 0 ? 100 + Int(generator.next() % 900) : nil }
        kills += killAfter.compactMap { $0 }.count
        await withTaskGroup(of: Void.self) { group in
            for (process, delay) in zip(processes, killAfter) {
                guard let delay else { continue }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(delay))
                    process.send(SIGKILL)
                }
            }
            if round == 1 {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(300))
                    try? PostgresServer.control("restart")
                }
            }
        }
        for process in processes {
            process.waitUntilExit()
            let output = process.output?.readText() ?? ""
            synchronized += output.split(separator: "\n").filter { $0.hasPrefix("synchronized ") }.count
            failed += output.split(separator: "\n").filter { $0.hasPrefix("sync failed ") }.count
        }
    }
    // A device killed in the last round may have committed a write it had not journaled yet:
    // each device starts once more, with no operation to make, and settles its journal (as each
    // round's start does), so that the check below knows every write that was made.
    func acknowledged() -> Int {
        journals.reduce(0) { count, journal in
            count + ((try? String(contentsOfFile: journal, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.hasPrefix("ack ") }.count
        }
    }
    let journaledInRounds = acknowledged()
    for index in names.indices {
        let settling = try ChildProcess(
            helper.path, ["device", directories[index].path, store, names[index], "0", "0", journals[index]],
            environment: helperEnvironment(address), output: .pipe)
        let ended = settling.waitUntilExit()
        #expect(ended.succeeded, "settling \(names[index]): \(settling.output?.readText() ?? "")")
    }
    let settledAfterRounds = acknowledged() - journaledInRounds
    // Everyone comes back online: two passes around.
    var locals: [LocalDatabase] = []
    var stores: [PostgresStore] = []
    var synchronizers: [Synchronizer] = []
    defer {
        let (openLocals, openStores) = (locals, stores)
        Task { for local in openLocals { await local.close() }; for store in openStores { await store.close() } }
    }
    for index in names.indices {
        let local = try LocalDatabase(directory: directories[index])
        let server = try await PostgresStore(configuration: PostgresServer.configuration(), name: store, connections: 2)
        locals.append(local)
        stores.append(server)
        synchronizers.append(Synchronizer(local, with: server, device: names[index]))
    }
    for _ in 0..<2 {
        for synchronizer in synchronizers { try await synchronizer.synchronize() }
    }
    let serverRecords = try await storedBytes(store: stores[0])
    var differing: [String] = []
    var pending = 0
    for (index, local) in locals.enumerated() {
        if try await storedBytes(local: local) != serverRecords { differing.append(names[index]) }
        pending += try await local.syncPending(limit: 0).total
    }
    // Every acknowledged write is there, or kept in a conflict log as replaced by a later one, or
    // replaced by a write made on top of it (or by its own device's later write).
    var writes: [JournaledWrite] = []
    for journal in journals {
        let text = (try? String(contentsOfFile: journal, encoding: .utf8)) ?? ""
        writes += text.split(separator: "\n").compactMap(JournaledWrite.init)
    }
    var logged = Set<String>()
    for local in locals {
        for conflict in try await local.syncConflicts(limit: 1_000_000) { logged.insert("\(conflict.recordID) \(conflict.localStamp)") }
    }
    for conflict in try await synchronizers[0].serverConflicts(limit: 1_000_000) { logged.insert("\(conflict.recordID) \(conflict.localStamp)") }
    var final: [String: SyncStampValue] = [:]
    for index in 0..<20 {
        let id = "k\(index)"
        if let stamps = try await locals[0].syncStamps(of: id) { final[id] = stamps.stamp }
        var states: [String] = []
        for local in locals {
            let stamps = try await local.syncStamps(of: id)
            states.append(stamps.map { "\($0.stamp)\($0.deleted ? " deleted" : "")\($0.pending ? " pending" : "")" } ?? "none")
        }
        if Set(states).count > 1 {
            let server = try await stores[0].engine.syncVersions(ids: [id], values: false).versions.first
            differing.append("stamps of \(id): devices \(states), server \(server.map { "\($0.stamp)\($0.deleted ? " deleted" : "")" } ?? "none")")
        }
    }
    var lost: [String] = []
    var wentBack: [String] = []
    for write in writes {
        guard let now = final[write.id], now >= write.stamp else {
            wentBack.append(write.description)
            continue
        }
        if now == write.stamp || logged.contains("\(write.id) \(write.stamp)") { continue }
        let replacedKnowingly = writes.contains {
            $0.id == write.id && ($0.base >= write.stamp || ($0.stamp.device == write.stamp.device && $0.stamp > write.stamp))
        }
        if !replacedKnowingly { lost.append(write.description) }
    }
    return (differing, lost, wentBack, pending, kills, synchronized, failed, writes.count, logged.count, settledAfterRounds)
}

extension PostgresTests {
    @Suite("Synchronization converges", .serialized)
    struct SyncConvergenceTests {
        @Test("Four device processes writing, deleting and in transactions, offline, killed, the server restarted: all end with the server's records, nothing lost silently")
        func fourDevicesConverge() async throws {
            // CI's size; scripts/sync-convergence runs it larger and prints what each run did.
            let environment = ProcessInfo.processInfo.environment
            let operations = environment["LOCALLMDB_CONVERGENCE_OPERATIONS"].flatMap(Int.init) ?? 60
            let rounds = environment["LOCALLMDB_CONVERGENCE_ROUNDS"].flatMap(Int.init) ?? 3
            for seed: UInt64 in [11, 29] {
                let outcome = try await runConvergence(seed: seed, rounds: rounds, operations: operations)
                if environment["LOCALLMDB_CONVERGENCE_REPORT"] != nil {
                    print("seed \(seed): \(outcome.writes) writes journaled, \(outcome.conflicts) conflicts logged, \(outcome.kills) kills, \(outcome.synchronized) passes, \(outcome.failed) failed passes, \(outcome.settled) writes of the last round settled after it")
                }
                #expect(outcome.differing.isEmpty, "seed \(seed): devices differ from the server: \(outcome.differing)")
                #expect(outcome.lost.isEmpty, "seed \(seed): writes lost silently: \(outcome.lost.prefix(5))")
                #expect(outcome.wentBack.isEmpty, "seed \(seed): records went back to older writes: \(outcome.wentBack.prefix(5))")
                #expect(outcome.pending == 0)
                #expect(outcome.kills > 0)
                #expect(outcome.synchronized > 0)
            }
        }
    }
}
