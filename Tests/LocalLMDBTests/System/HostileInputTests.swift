import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// A type that was never stored anywhere.
final class NeverStored: Storable {
    init() {}
    required init(dataObject: DataObject) {}
    func toDataObject() -> DataObject { DataObject(self) }
}

@Suite("Hostile input")
struct HostileInputTests {
    @Test func unknownTypesAreEmptyNotErrors() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "n", data: Note(text: "t")))
            let none: [NeverStored] = try await database.read()
            #expect(none.isEmpty)
            #expect(try await database.readIDs(NeverStored.self).isEmpty)
            #expect(try await database.count(NeverStored.self) == 0)
            #expect(try await database.delete(NeverStored.self) == 0)
            #expect(try await database.delete(id: "missing") == false)
            #expect(try await database.count() == 1)
        }
    }

    /// Runs a command to completion; true when it succeeded.
    @discardableResult
    static func run(_ path: String, _ arguments: [String]) -> Bool {
        guard let process = try? ChildProcess(path, arguments) else { return false }
        return process.waitUntilExit().succeeded
    }

    @Test(.enabled(if: canMount, "needs root to mount a small tmpfs"))
    func aReadOnlyDirectoryIsATypedErrorAndKeepsWhatWasStored() async throws {
        try await Self.withTinyDisk { disk in
            let url = disk.appendingPathComponent("db")
            do {
                let database = try LocalDatabase(directory: url)
                try await database.write(Record(id: "kept", data: Note(text: "safe")))
                await database.close()  // returns once the engine has closed and let go of its files
            }
            #expect(Self.run("/bin/mount", ["-o", "remount,ro", disk.path]))
            #expect {
                _ = try LocalDatabase(directory: url)
            } throws: { error in
                guard case .invalidDirectory = error as? LocalDatabaseError else { return false }
                return true
            }
            #expect {
                _ = try LocalDatabase(directory: disk.appendingPathComponent("new"))
            } throws: { error in
                guard case .invalidDirectory = error as? LocalDatabaseError else { return false }
                return true
            }
            #expect(Self.run("/bin/mount", ["-o", "remount,rw", disk.path]))
            let database = try LocalDatabase(directory: url)
            let note: Note? = try await database.read(id: "kept")
            #expect(note?.text == "safe")
        }
    }

    /// Mounts a 3 MiB tmpfs (needs root, as CI has), runs `body` on it, and unmounts it.
    static func withTinyDisk(_ body: (URL) async throws -> Void) async throws {
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("tiny-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: mountPoint) }
        try #require(run("/bin/mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", mountPoint.path]), "mounting a tmpfs failed")
        defer { run("/bin/umount", ["-l", mountPoint.path]) }
        try await body(mountPoint)
    }

    /// Whether this machine lets the tests mount a tmpfs: tried once, with a throwaway mount.
    static let canMount: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/bin/mount") else { return false }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("mount-probe-\(UUID().uuidString)")
        guard (try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)) != nil else { return false }
        defer { try? FileManager.default.removeItem(at: probe) }
        guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe.path]) else { return false }
        return run("/bin/umount", [probe.path])
    }()

    @Test(.enabled(if: canMount, "needs root to mount a small tmpfs"))
    func aFullDiskIsATypedErrorAndKeepsWhatWasStored() async throws {
        try await Self.withTinyDisk { disk in
            let url = disk.appendingPathComponent("db")
            let database = try LocalDatabase(directory: url)
            let payload = String(repeating: "d", count: 256 * 1024)
            var stored = 0
            var failure: (any Error)?
            for index in 0..<40 {
                do {
                    try await database.write(Record(id: "d\(index)", data: Entry(sequence: index, payload: payload)))
                    stored += 1
                } catch {
                    failure = error
                    break
                }
            }
            let error = try #require(failure as? LocalDatabaseError, "writing 10 MiB to a 3 MiB disk did not fail")
            guard case .storage = error else { throw error }
            #expect(stored > 0)
            // What was stored is intact and readable, and the database still works.
            #expect(try await database.count(Entry.self) == stored)
            let first: Entry? = try await database.read(id: "d0")
            #expect(first?.payload.count == payload.count)
            #expect(try await database.verifyIntegrity().isConsistent)
            #expect(try await database.delete(id: "d0"))
            try await database.write(Record(id: "small", data: Note(text: "fits")))
            #expect(try await database.count() == stored)
        }
    }
}
