import Foundation
import LocalLMDB
import LocalLMDBPostgres
import LocalLMDBTestSupport
import PostgresNIO

/// A device of the convergence test (`helper device DIR STORE NAME SEED OPS JOURNAL`): makes
/// `OPS` random local operations on the database in `DIR` (writes and deletes of 20 shared ids,
/// transactions of several), synchronizing with `STORE` now and then (and with `run()` in the
/// background while online, once it has synchronized) and going offline for stretches; the test kills it at random moments and restarts the server under it.
///
/// Every local write it makes is journaled (`JOURNAL`, one line per write, appended): an
/// `intent` line before the operation, then, once it has committed, an `ack` line per record
/// with the stamp the write got and the stamp it was made on (its base). A restart first
/// settles the last intent of a run that was killed: a write of it that committed is journaled
/// from the stamps the database holds, one that did not is left out.
func syncDevice(_ arguments: [String], configuration: PostgresConnection.Configuration) async {
    guard arguments.count == 8, let seed = UInt64(arguments[5]), let operations = Int(arguments[6]) else {
        fail("usage: helper device DIR STORE NAME SEED OPS JOURNAL")
    }
    let (directory, storeName, name, journalPath) = (arguments[2], arguments[3], arguments[4], arguments[7])
    do {
        let local = try LocalDatabase(directory: URL(fileURLWithPath: directory))
        let journal = try Journal(path: journalPath)
        try await journal.settle(local, device: name)
        var generator = SplitMix(seed: seed)
        var store: PostgresStore?
        var synchronizer: Synchronizer?
        /// `run()`, in the background while the device is online once it has synchronized, with
        /// the passes `synchronize()` makes alongside it.
        var running: Task<Void, Never>?
        var offline = false
        say("running")
        for operation in 0..<operations {
            let roll = generator.next() % 100
            if generator.next() % 10 == 0 {
                offline.toggle()
                if offline, let task = running {
                    task.cancel()
                    await task.value
                    running = nil
                }
            }
            switch roll {
            case 0..<50:
                let id = "k\(generator.next() % 20)"
                try journal.intent([id])
                try await local.write(Record(id: id, data: Note(text: "\(name) op \(operation)")))
                try await journal.acknowledge([id], local, device: name)
            case 50..<62:
                let id = "k\(generator.next() % 20)"
                try journal.intent([id])
                _ = try await local.delete(id: id)
                try await journal.acknowledge([id], local, device: name)
            case 62..<72:
                let ids = (0..<(2 + Int(generator.next() % 3))).map { _ in "k\(generator.next() % 20)" }
                try journal.intent(ids)
                try await local.startTransaction()
                for (index, id) in ids.enumerated() {
                    if index == 1, generator.next() % 2 == 0 {
                        _ = try await local.delete(id: id)
                    } else {
                        try await local.write(Record(id: id, data: Note(text: "\(name) op \(operation).\(index)")))
                    }
                }
                try await local.commitTransaction()
                try await journal.acknowledge(ids, local, device: name)
            default:
                guard !offline else { continue }
                do {
                    if synchronizer == nil {
                        let opened = try await PostgresStore(configuration: configuration, name: storeName, connections: 2, busyTimeout: .seconds(5))
                        store = opened
                        synchronizer = Synchronizer(local, with: opened, device: name)
                    }
                    let sent = try await synchronizer?.synchronize() ?? 0
                    say("synchronized \(operation) sent \(sent)")
                    if running == nil, let synchronizer {
                        running = Task { try? await synchronizer.run() }
                    }
                } catch {
                    // Offline in effect (the server restarting): the writes stay pending.
                    say("sync failed \(operation): \(error)")
                }
            }
        }
        running?.cancel()
        await running?.value
        say("done")
        await store?.close()
        await local.close()
        exit(0)
    } catch {
        fail("error \(error)")
    }
}

/// The device's journal of acknowledged writes (see `syncDevice`).
struct Journal {
    let path: String

    init(path: String) throws {
        self.path = path
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
    }

    /// Appends `line` and syncs it, so a kill never leaves half of it.
    func append(_ line: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((line + "\n").utf8))
        try handle.synchronize()
    }

    func intent(_ ids: [String]) throws {
        try append("intent " + ids.joined(separator: " "))
    }

    /// Journals each of `ids` (once) with the stamps the database now holds for it.
    func acknowledge(_ ids: [String], _ local: LocalDatabase, device: String) async throws {
        var lines: [String] = []
        for id in Set(ids).sorted() {
            guard let stamps = try await local.syncStamps(of: id) else { continue }
            lines.append(
                "ack \(id) \(stamps.stamp.time) \(stamps.stamp.device) \(stamps.base.time) \(stamps.base.device.isEmpty ? "-" : stamps.base.device) \(stamps.deleted ? 1 : 0)")
        }
        lines.append("end")
        try append(lines.joined(separator: "\n"))
    }

    /// After a kill: the last intent, when it has no `end`, is acknowledged from the database's
    /// stamps for each of its records that this device wrote later than any write journaled.
    func settle(_ local: LocalDatabase, device: String) async throws {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let lines = text.split(separator: "\n").map(String.init)
        guard let last = lines.lastIndex(where: { $0.hasPrefix("intent ") }), !lines[last...].contains("end") else { return }
        let ids = lines[last].split(separator: " ").dropFirst().map(String.init)
        var journaled: [String: UInt64] = [:]
        for line in lines where line.hasPrefix("ack ") {
            let parts = line.split(separator: " ")
            if parts.count == 7, parts[3] == device, let time = UInt64(parts[2]) { journaled[String(parts[1]), default: 0] = max(journaled[String(parts[1])] ?? 0, time) }
        }
        var settled: [String] = []
        for id in Set(ids) {
            guard let stamps = try await local.syncStamps(of: id), stamps.stamp.device == device, stamps.stamp.time > journaled[id] ?? 0 else { continue }
            settled.append(id)
        }
        try await acknowledge(settled, local, device: device)
    }
}
