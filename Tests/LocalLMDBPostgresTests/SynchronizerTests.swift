import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// A device: a local database in its own temporary directory, its own connections to the store
/// `store`, and its synchronizer; all closed and removed after `body`.
func withDevice<R>(
    _ name: String, store: String, _ body: (LocalDatabase, PostgresStore, Synchronizer) async throws -> R
) async throws -> R {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-sync-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await closing(try LocalDatabase(directory: directory)) { local in
        try await closing(try await PostgresStore(configuration: PostgresServer.configuration(), name: store, connections: 2)) { server in
            try await body(local, server, Synchronizer(local, with: server, device: name))
        }
    }
}

/// The text of the note `id` on `database`; nil when it holds none.
func noteText(_ database: LocalDatabase, _ id: String) async throws -> String? {
    let note: Note? = try await database.read(id: id)
    return note?.text
}

extension PostgresTests {
    @Suite("Two-way synchronization", .serialized)
    struct SynchronizerTests {
        @Test("Pending local writes are listed in the order they were made")
        func pendingWrites() async throws {
            try await withReplica { local, _ in
                #expect(try await local.enableSync(device: "X") == 0)
                try await local.write(Record(id: "a", data: Note(text: "x")))
                try await local.write(Record(id: "b", data: Note(text: "y")))
                _ = try await local.delete(id: "a")
                let pending = try await local.syncPending(limit: 10)
                #expect(pending.writes.map(\.id) == ["b", "a"])
                #expect(pending.writes.map { $0.value == nil } == [false, true])
                #expect(pending.writes.first?.className == "Note")
            }
        }

        @Test("Versions read without a device to omit carry every value, the server's own writes' (stamped by its trigger, with no device) included; with one, only that device's are left out")
        func versionsWithoutOmitting() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, server, syncA in
                try await a.write(Record(id: "mine", data: Note(text: "a")))
                #expect(try await syncA.synchronize() == 1)
                // Written on the server: stamped by the trigger, with no device.
                try await server.write(Record(id: "server's", data: Note(text: "s")))
                let all = try await server.engine.syncVersions(ids: ["mine", "server's"])
                #expect(all.versions.count == 2)
                #expect(all.versions.allSatisfy { $0.value != nil && !$0.omitted })
                #expect(all.versions.contains { $0.stamp.device.isEmpty })
                let omitting = try await server.engine.syncVersions(ids: ["mine", "server's"], omitting: "A")
                #expect(omitting.versions.filter(\.omitted).map(\.stamp.device) == ["A"])
                #expect(omitting.versions.filter { !$0.omitted }.allSatisfy { $0.value != nil && $0.stamp.device.isEmpty })
            }
        }

        @Test("Two devices end with the server's records: writes, deletes, concurrent edits by the later write, losers kept")
        func twoDevicesConverge() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, server, syncA in
                try await withDevice("B", store: store) { b, _, syncB in
                    try await a.write(contentsOf: (0..<10).map { Record(id: "n\($0)", data: Note(text: "a\($0)")) })
                    #expect(try await syncA.synchronize() == 10)
                    #expect(try await syncB.synchronize() == 0)
                    #expect(try await noteText(b, "n3") == "a3")
                    #expect(try await storedBytes(local: a) == storedBytes(store: server))
                    #expect(try await storedBytes(local: b) == storedBytes(store: server))

                    // A device's own writes come back in the server's log, and change nothing.
                    let before = try a.changePosition()
                    #expect(try await syncA.synchronize() == 0)
                    #expect(try a.changePosition() == before)

                    // Concurrent edits, each pushed before the other device pulls: the later write
                    // wins everywhere; the server keeps the one it replaced unseen.
                    try await a.write(Record(id: "n1", data: Note(text: "from A")))
                    try await b.write(Record(id: "n1", data: Note(text: "from B")))
                    try await syncA.synchronize()
                    try await syncB.synchronize()
                    try await syncA.synchronize()
                    #expect(try await noteText(a, "n1") == "from B")
                    #expect(try await noteText(b, "n1") == "from B")
                    let serverLog = try await syncA.serverConflicts()
                    #expect(serverLog.count == 1)
                    #expect(serverLog.first?.recordID == "n1")
                    #expect(serverLog.first?.localStamp.device == "A")
                    #expect(serverLog.first?.winningStamp.device == "B")
                    #expect(serverLog.first?.localVersion.map { Note(dataObject: $0).text } == "from A")

                    // A pending local write that is older than one received loses on the device,
                    // which keeps it in its conflict log and reports it.
                    let reported = syncA.conflicts()
                    try await a.write(Record(id: "n2", data: Note(text: "older, from A")))
                    try await b.write(Record(id: "n2", data: Note(text: "newer, from B")))
                    try await syncB.synchronize()
                    try await syncA.synchronize()
                    #expect(try await noteText(a, "n2") == "newer, from B")
                    let local = try await a.syncConflicts()
                    #expect(local.count == 1)
                    #expect(local.first?.recordID == "n2")
                    #expect(local.first?.localVersion.map { Note(dataObject: $0).text } == "older, from A")
                    #expect(local.first?.winningStamp.device == "B")
                    var iterator = reported.makeAsyncIterator()
                    #expect(await iterator.next()?.recordID == "n2")

                    // A deletion wins over an older write made offline: the record stays deleted.
                    try await b.write(Record(id: "n5", data: Note(text: "stale, from B")))
                    try await Task.sleep(for: .milliseconds(2))
                    _ = try await a.delete(id: "n5")
                    try await syncA.synchronize()
                    try await syncB.synchronize()
                    try await syncA.synchronize()
                    #expect(try await noteText(a, "n5") == nil)
                    #expect(try await noteText(b, "n5") == nil)
                    #expect(try await b.syncConflicts().contains { $0.recordID == "n5" && $0.winnerDeleted })

                    // A write made after seeing a deletion brings the record back (the later write wins).
                    try await b.write(Record(id: "n5", data: Note(text: "again")))
                    try await syncB.synchronize()
                    try await syncA.synchronize()
                    #expect(try await noteText(a, "n5") == "again")

                    try await syncA.synchronize()
                    try await syncB.synchronize()
                    #expect(try await storedBytes(local: a) == storedBytes(store: server))
                    #expect(try await storedBytes(local: b) == storedBytes(store: server))
                    #expect(syncA.progress.pending == 0)
                    if case .synced = try await a.syncState(of: "n1") {} else { Issue.record("n1 is not synced") }
                }
            }
        }

        @Test("A push older than the server's version (it raced a later one) is refused, kept in both logs, and the later one applied")
        func olderPushIsRefused() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, server, syncA in
                try await withDevice("B", store: store) { b, _, syncB in
                    try await syncA.synchronize()
                    try await a.write(Record(id: "x", data: Note(text: "older, from A")))
                    try await b.write(Record(id: "x", data: Note(text: "newer, from B")))
                    try await syncB.synchronize()
                    // A sends without receiving first, as when B's push lands between A's pull and push.
                    #expect(try await syncA.push() == 1)
                    #expect(syncA.progress.refused == 1)
                    #expect(try await noteText(a, "x") == "newer, from B")
                    let note: Note? = try await server.read(id: "x")
                    #expect(note?.text == "newer, from B")
                    #expect(try await a.syncConflicts().map(\.recordID) == ["x"])
                    let logged = try await syncA.serverConflicts()
                    #expect(logged.count == 1)
                    #expect(logged.first?.localStamp.device == "A")
                    #expect(logged.first?.localVersion.map { Note(dataObject: $0).text } == "older, from A")
                    #expect(logged.first?.winningStamp.device == "B")
                    try await syncA.synchronize()
                    #expect(try await storedBytes(local: a) == storedBytes(store: server))
                }
            }
        }

        @Test("The synchronizer keeps Syncable models' status: not synced until the server has the write, synced after")
        func syncableStatus() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, server, syncA in
                try await withDevice("B", store: store) { b, _, syncB in
                    try await syncA.synchronize()
                    try await a.write(PgReading(id: "r1", value: 1, syncStatus: .undetermined))
                    #expect(try await a.syncStatus(of: PgReading.self, id: "r1") == .notSynced)
                    let unsent: [PgReading] = try await a.read(withStatus: .notSynced)
                    #expect(unsent.map(\.id) == ["r1"])
                    try await syncA.synchronize()
                    #expect(try await a.syncStatus(of: PgReading.self, id: "r1") == .synced)
                    #expect(try await server.syncStatus(of: PgReading.self, id: "r1") == .synced)
                    try await syncB.synchronize()
                    let received: [PgReading] = try await b.read(withStatus: .synced)
                    #expect(received.map(\.id) == ["r1"])
                    // A write made on the server directly, whatever status it stores, is synced on arrival.
                    try await server.write(PgReading(id: "r2", value: 2, syncStatus: .notSynced))
                    try await syncB.synchronize()
                    #expect(try await b.syncStatus(of: PgReading.self, id: "r2") == .synced)
                    try await b.write(PgReading(id: "r1", value: 3, syncStatus: .synced))
                    #expect(try await b.syncStatus(of: PgReading.self, id: "r1") == .notSynced)
                    try await syncB.synchronize()
                    try await syncA.synchronize()
                    #expect(try await a.read(PgReading.self, id: "r1")?.value == 3)
                    #expect(try await a.syncStatus(of: PgReading.self, id: "r1") == .synced)
                    #expect(try await storedBytes(local: a) == storedBytes(local: b))
                }
            }
        }

        @Test("A later deletion of a record already deleted on the server reaches every device (found by the convergence test at its large size)")
        func laterTombstoneReachesDevices() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, _, syncA in
                try await withDevice("B", store: store) { b, _, syncB in
                    try await a.write(Record(id: "x", data: Note(text: "1")))
                    try await syncA.synchronize()
                    _ = try await a.delete(id: "x")
                    try await syncA.synchronize()
                    try await syncB.synchronize()
                    // Written and deleted again while offline: only the later deletion is sent, of a
                    // record the server no longer holds.
                    try await a.write(Record(id: "x", data: Note(text: "2")))
                    _ = try await a.delete(id: "x")
                    try await syncA.synchronize()
                    try await syncB.synchronize()
                    let stampA = try await a.syncStamps(of: "x")
                    let stampB = try await b.syncStamps(of: "x")
                    #expect(stampA?.deleted == true)
                    #expect(stampA?.pending == false)
                    #expect(stampB?.stamp == stampA?.stamp)
                }
            }
        }

        @Test("The example app: what one process adds, another lists; a change made there comes back")
        func exampleApp() async throws {
            guard let example = executableBesideTests(named: "locallmdb-sync-example") else { throw HelperMissing() }
            var environment = helperEnvironment(try PostgresServer.address.get())
            environment["LOCALLMDB_SYNC_EXAMPLE_STORE"] = PostgresServer.uniqueStore()
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-example-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            func run(_ arguments: [String]) throws -> String {
                let process = try ChildProcess(example.path, arguments, environment: environment, output: .pipe)
                let output = process.output?.readText() ?? ""
                #expect(process.waitUntilExit().succeeded, "\(arguments): \(output)")
                return output
            }
            let alice = root.appendingPathComponent("alice").path
            let bob = root.appendingPathComponent("bob").path
            let added = try run([alice, "alice", "add", "walk the dog"])
            let first = try #require(added.split(separator: "\n").first)
            #expect(first.hasPrefix("added "))
            let id = String(first.dropFirst("added ".count))
            #expect(try run([bob, "bob", "list"]).contains("[ ] walk the dog  (\(id), synced)"))
            _ = try run([bob, "bob", "done", id])
            #expect(try run([alice, "alice", "list"]).contains("[x] walk the dog  (\(id), synced)"))
        }

        @Test("A write that would give a unique index's value to a second record is refused, logged, and undone on its device; the rest of its push goes through")
        func uniqueClashIsRefused() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, server, syncA in
                try await withDevice("B", store: store) { b, _, syncB in
                    // The server holds the unique index once an app uses the type there.
                    try await server.write(Record(id: "u0", data: PgAccount(email: "first@y", bio: "server's", tags: [])))
                    try await syncA.synchronize()
                    try await syncB.synchronize()
                    try await a.write(Record(id: "u1", data: PgAccount(email: "x@y", bio: "A's", tags: [])))
                    try await b.write(Record(id: "u2", data: PgAccount(email: "x@y", bio: "B's", tags: [])))
                    try await b.write(Record(id: "n1", data: Note(text: "B's note")))
                    try await syncA.synchronize()
                    #expect(try await syncB.synchronize() == 2)
                    #expect(syncB.progress.refused == 1)
                    let gone: PgAccount? = try await b.read(id: "u2")
                    #expect(gone == nil)
                    #expect(try await noteText(b, "n1") == "B's note")
                    let lost = try await b.syncConflicts()
                    #expect(lost.map(\.recordID) == ["u2"])
                    #expect(lost.first?.winnerDeleted == true)
                    #expect(lost.first?.localVersion.map { $0.get("bio", onFail: "") } == "B's")
                    #expect(try await syncB.serverConflicts().contains { $0.recordID == "u2" && $0.localStamp.device == "B" })
                    try await syncA.synchronize()
                    try await syncB.synchronize()
                    #expect(try await storedBytes(local: a) == storedBytes(store: server))
                    #expect(try await storedBytes(local: b) == storedBytes(store: server))
                    #expect(try await a.syncStamps(of: "u2")?.stamp == b.syncStamps(of: "u2")?.stamp)
                }
            }
        }

        @Test("Passes of one synchronizer run one at a time: synchronize() while run() works")
        func overlappingPasses() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, server, syncA in
                let running = Task { try await syncA.run() }
                for round in 0..<20 {
                    try await a.write(Record(id: "r\(round % 5)", data: Note(text: "\(round)")))
                    try await syncA.synchronize()
                }
                running.cancel()
                try await running.value
                try await syncA.synchronize()
                #expect(try await storedBytes(local: a) == storedBytes(store: server))
                #expect(syncA.progress.pending == 0)
            }
        }

        @Test("Ids longer than a key (stored under digests) and ids holding U+0000 synchronize both ways, deletions made on the server included, by the log and by a full copy")
        func longAndOddIDs() async throws {
            let store = PostgresServer.uniqueStore()
            let long = "\u{0}é" + String(repeating: "x", count: 600)
            let other = "é" + String(repeating: "y", count: 600)
            let odd = "a\u{0}b"
            try await withDevice("A", store: store) { a, server, syncA in
                try await withDevice("B", store: store) { b, _, syncB in
                    for id in [long, other, odd] { try await a.write(Record(id: id, data: Note(text: "from A"))) }
                    try await syncA.synchronize()
                    try await syncB.synchronize()
                    for id in [long, other, odd] { #expect(try await noteText(b, id) == "from A") }
                    // Deleted on the server: the trigger's tombstone has no id; the log names it.
                    _ = try await server.delete(id: long)
                    try await syncB.synchronize()
                    #expect(try await noteText(b, long) == nil)
                    // Deleted on the server while A is away and the log trimmed: the full copy's
                    // tombstone has neither, and A finds the id from what it holds.
                    _ = try await server.delete(id: other)
                    _ = try await server.engine.trimChangeLog(keeping: 0)
                    try await syncA.synchronize()
                    #expect(try await noteText(a, long) == nil)
                    #expect(try await noteText(a, other) == nil)
                    #expect(try await noteText(a, odd) == "from A")
                    try await b.write(Record(id: long, data: Note(text: "again, from B")))
                    try await syncB.synchronize()
                    try await syncA.synchronize()
                    #expect(try await noteText(a, long) == "again, from B")
                    for id in [long, other, odd] {
                        #expect(try await a.syncStamps(of: id)?.stamp == b.syncStamps(of: id)?.stamp)
                    }
                    #expect(try await storedBytes(local: a) == storedBytes(store: server))
                    #expect(try await storedBytes(local: b) == storedBytes(store: server))
                }
            }
        }

        @Test("A field an older model does not know survives its write on another device, and comes back to every device")
        func newerFieldsSurviveAnOlderDevice() async throws {
            let store = PostgresServer.uniqueStore()
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-newer-\(UUID().uuidString).jsonl")
            defer { try? FileManager.default.removeItem(at: file) }
            try await withDevice("newer", store: store) { newer, server, syncNewer in
                try await withDevice("older", store: store) { older, _, syncOlder in
                    // The newer app's document has `color`, which `Note` (the older app's model) does not know.
                    try Data(#"{"id":"n","class":"Note","value":{"object":"Note","text":"first","color":"red"}}\#n"#.utf8).write(to: file)
                    #expect(try await newer.importLines(from: file) == 1)
                    try await syncNewer.synchronize()
                    try await syncOlder.synchronize()
                    try await older.write(Record(id: "n", data: Note(text: "edited by the older app")))
                    try await syncOlder.synchronize()
                    try await syncNewer.synchronize()
                    let expected = #"{"object":"Note","text":"edited by the older app","color":"red"}"#
                    #expect(try await newer.storedDocument(id: "n")?.json == expected)
                    #expect(try await older.storedDocument(id: "n")?.json == expected)
                    #expect(try await storedBytes(local: newer) == storedBytes(store: server))
                    #expect(try await storedBytes(local: older) == storedBytes(store: server))
                }
            }
        }

        @Test("Writes made on the server directly reach the devices, stamped by the server's clock")
        func serverWritesReachDevices() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, server, syncA in
                try await server.write(Record(id: "s1", data: Note(text: "before sync")))
                try await syncA.synchronize()
                #expect(try await noteText(a, "s1") == "before sync")
                try await server.write(Record(id: "s1", data: Note(text: "server")))
                try await server.write(Record(id: "s2", data: Note(text: "server 2")))
                try await syncA.synchronize()
                #expect(try await noteText(a, "s1") == "server")
                _ = try await server.delete(id: "s2")
                try await syncA.synchronize()
                #expect(try await noteText(a, "s2") == nil)
                try await a.write(Record(id: "s1", data: Note(text: "device")))
                try await syncA.synchronize()
                let note: Note? = try await server.read(id: "s1")
                #expect(note?.text == "device")
                // Deleting a whole class on the server (no ids in its log) reaches the device too.
                try await server.write(contentsOf: (0..<5).map { Record(id: "c\($0)", data: Note(text: "c")) })
                try await syncA.synchronize()
                try await server.delete(Note.self)
                try await syncA.synchronize()
                let remaining: [Note] = try await a.read()
                #expect(remaining.isEmpty)
                #expect(try await storedBytes(local: a) == storedBytes(store: server))
            }
        }

        @Test("A device that was away while the server's log was trimmed catches up by a full copy")
        func fullCopyWhenTheLogNoLongerReachesBack() async throws {
            let store = PostgresServer.uniqueStore()
            try await withDevice("A", store: store) { a, server, syncA in
                try await withDevice("B", store: store) { b, _, syncB in
                    try await a.write(contentsOf: (0..<20).map { Record(id: "r\($0)", data: Note(text: "v1")) })
                    try await syncA.synchronize()
                    try await syncB.synchronize()
                    try await b.write(Record(id: "b-offline", data: Note(text: "written while away")))
                    try await a.write(contentsOf: (0..<20).map { Record(id: "r\($0)", data: Note(text: "v2")) })
                    _ = try await a.delete(id: "r7")
                    try await syncA.synchronize()
                    _ = try await server.engine.trimChangeLog(keeping: 0)
                    let copies = syncB.progress.fullCopies
                    try await syncB.synchronize()
                    #expect(syncB.progress.fullCopies == copies + 1)
                    try await syncA.synchronize()
                    #expect(try await noteText(b, "r3") == "v2")
                    #expect(try await noteText(b, "r7") == nil)
                    #expect(try await noteText(a, "b-offline") == "written while away")
                    #expect(try await storedBytes(local: a) == storedBytes(store: server))
                    #expect(try await storedBytes(local: b) == storedBytes(store: server))
                }
            }
        }
    }
}
