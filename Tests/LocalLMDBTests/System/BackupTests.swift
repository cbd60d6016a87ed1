import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
import LocalLMDBLMDB
import LocalLMDBTestSupport
import Testing

/// The names in `directory`.
private func names(in directory: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
}

@Suite("Hot backups")
struct BackupTests {
    /// A backup taken while 8 writers run holds every write acknowledged before it began, and
    /// of each writer's later writes a prefix (nothing half there), and verifies.
    @Test func aBackupWhileEightWritersRunIsConsistent() async throws {
        try await withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("db")
            let copy = directory.appendingPathComponent("copy")
            let database = try LocalDatabase(directory: source)
            try await database.write(contentsOf: (0..<2000).map { Record(id: "base\($0)", data: Note(text: String(repeating: "b", count: 200))) })
            let writers = 8
            let acknowledged = Locked([Int](repeating: 0, count: writers))
            let stop = Locked(false)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var index = 0
                        while !stop.withLock({ $0 }) {
                            try await database.write(Record(id: "w\(writer)-\(index)", data: Note(text: "\(writer) \(index)")))
                            index += 1
                            acknowledged.withLock { $0[writer] = index }
                        }
                    }
                }
                #expect(await waitUntil(seconds: 60) { acknowledged.withLock { $0.allSatisfy { $0 >= 5 } } })
                let before = acknowledged.withLock { $0 }
                let reports = Locked<[BackupProgress]>([])
                try await database.backup(to: copy) { progress in reports.withLock { $0.append(progress) } }
                stop.withLock { $0 = true }
                try await group.waitForAll()

                let last = try #require(reports.withLock { $0.last })
                #expect(last.bytesCopied == last.bytesExpected)
                let size = try FileManager.default.attributesOfItem(atPath: copy.appendingPathComponent("data.mdb").path)[.size] as? Int
                #expect(size == last.bytesCopied)
                let restored = try LocalDatabase(directory: copy)
                let report = try await restored.verifyIntegrity()
                #expect(report.isConsistent, "\(report)")
                #expect((try await restored.readIDs(Note.self)).filter { $0.hasPrefix("base") }.count == 2000)
                for writer in 0..<writers {
                    let found = try await restored.readIDs(Note.self).filter { $0.hasPrefix("w\(writer)-") }
                    let indexes = Set(found.map { Int($0.dropFirst("w\(writer)-".count)) ?? -1 })
                    // Each writer's writes committed in order: the copy has a prefix of them,
                    // at least as long as what was acknowledged before the backup began.
                    #expect(indexes == Set(0..<indexes.count), "writer \(writer)")
                    #expect(indexes.count >= before[writer], "writer \(writer): \(indexes.count) of \(before[writer]) acknowledged")
                    for id in found.prefix(3) {
                        let note: Note? = try await restored.read(id: id)
                        #expect(note?.text == "\(writer) \(id.dropFirst("w\(writer)-".count))")
                    }
                }
            }
            // Nothing but the source and the copy: no partial directory left behind.
            #expect(names(in: directory) == ["copy", "db"])
        }
    }

    /// A compacted copy leaves the free pages out: smaller, with the same records.
    @Test func aCompactedCopyIsSmallerWithTheSameRecords() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            try await database.write(contentsOf: (0..<3000).map { Record(id: "n\($0)", data: Note(text: String(repeating: "x", count: 300))) })
            for index in 0..<2500 { try await database.delete(id: "n\(index)") }
            try await database.backup(to: directory.appendingPathComponent("plain"))
            try await database.backup(to: directory.appendingPathComponent("compact"), compact: true)
            func size(_ name: String) throws -> Int {
                try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).appendingPathComponent("data.mdb").path)[.size] as? Int ?? 0
            }
            let (compacted, plain) = (try size("compact"), try size("plain"))
            #expect(compacted < plain / 2)
            for name in ["plain", "compact"] {
                let copy = try LocalDatabase(directory: directory.appendingPathComponent(name))
                #expect(try await copy.count(Note.self) == 500)
                #expect((try await copy.read(id: "n2999") as Note?)?.text.count == 300)
                #expect(try await copy.verifyIntegrity().isConsistent)
            }
        }
    }

    /// A destination that exists, or whose parent does not, is a typed error; nothing is
    /// written anywhere.
    @Test func anExistingDestinationIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            try await database.write(Record(id: "n", data: Note(text: "n")))
            let taken = directory.appendingPathComponent("taken")
            try FileManager.default.createDirectory(at: taken, withIntermediateDirectories: false)
            try Data("mine".utf8).write(to: taken.appendingPathComponent("file"))
            await expectError({ if case .invalidDirectory = $0 { true } else { false } }) {
                try await database.backup(to: taken)
            }
            await expectError({ if case .invalidDirectory = $0 { true } else { false } }) {
                try await database.backup(to: directory.appendingPathComponent("missing/copy"))
            }
            #expect(names(in: directory) == ["db", "taken"])
            #expect(names(in: taken) == ["file"])
        }
    }

    /// The synchronous face backs up too, and so does a database opened read-only; an
    /// encrypted database's copy stays encrypted under the same key.
    @Test func theSynchronousFaceAndEncryptedDatabasesBackUp() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = DatabaseConfiguration()
            configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: try EncryptionKey(id: "k", bytes: [UInt8](repeating: 7, count: 32))))
            let source = directory.appendingPathComponent("db")
            let database = try SerializationDatabase(directory: source, configuration: configuration)
            #expect(database.write(Record(id: "n", data: Note(text: "secret"))))
            #expect(database.backup(to: directory.appendingPathComponent("copy")))
            #expect(!database.backup(to: directory.appendingPathComponent("copy")))
            #expect(database.lastError.map { if case .invalidDirectory = $0 { true } else { false } } == true)
            database.close()
            await expectError({ if case .encryptionRequired = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: directory.appendingPathComponent("copy"))
            }
            let copy = try LocalDatabase(directory: directory.appendingPathComponent("copy"), configuration: configuration)
            #expect((try await copy.read(id: "n") as Note?)?.text == "secret")
            await copy.close()

            var readOnly = configuration
            readOnly.readOnly = true
            let reader = try LocalDatabase(directory: source, configuration: readOnly)
            try await reader.backup(to: directory.appendingPathComponent("from-reader"))
            await reader.close()
            let second = try LocalDatabase(directory: directory.appendingPathComponent("from-reader"), configuration: configuration)
            #expect((try await second.read(id: "n") as Note?)?.text == "secret")
        }
    }

    /// A backup to a disk too small for it is a typed error, and leaves nothing there.
    @Test(.enabled(if: canMount, "needs root to mount a small tmpfs"))
    func aBackupToAFullDiskIsATypedErrorAndLeavesNothing() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            try await database.write(contentsOf: (0..<8000).map { Record(id: "n\($0)", data: Note(text: String(repeating: "f", count: 600))) })
            try await HostileInputTests.withTinyDisk { disk in
                await expectError({ if case .storage = $0 { true } else { false } }) {
                    try await database.backup(to: disk.appendingPathComponent("copy"))
                }
                #expect(names(in: disk).isEmpty, "\(names(in: disk))")
            }
            #expect(try await database.count(Note.self) == 8000)
        }
    }

    /// A backup whose process is killed before it completes leaves no directory under the
    /// destination's name (only its hidden partial one), and the source is unharmed.
    @Test func aBackupKilledBeforeItCompletesLeavesNoDestination() async throws {
        try await withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("db")
            let database = try LocalDatabase(directory: source)
            try await database.write(contentsOf: (0..<5000).map { Record(id: "n\($0)", data: Note(text: String(repeating: "k", count: 500))) })
            await database.close()
            let copy = directory.appendingPathComponent("copy")
            let (process, output) = try launchHelper(["backup", source.path, copy.path], environment: ["HELPER_STOP_AFTER": "1"])
            let collector = LineCollector(output)
            #expect(await collector.wait(seconds: 60) { $0.contains { $0.hasPrefix("progress ") } })
            process.send(SIGKILL)
            process.waitUntilExit()
            #expect(collector.waitForEnd())
            #expect(!FileManager.default.fileExists(atPath: copy.path))
            let left = names(in: directory).filter { $0 != "db" }
            #expect(left.count == 1 && left[0].hasPrefix(".copy.partial-"), "\(left)")
            let reopened = try LocalDatabase(directory: source)
            #expect(try await reopened.count(Note.self) == 5000)
            // The name is free: a new backup takes it.
            try await reopened.backup(to: copy)
            #expect(try await LocalDatabase(directory: copy).count(Note.self) == 5000)
        }
    }
}
