import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// Full disks and bind mounts, on file systems the tests mount (root only; skipped elsewhere).
@Suite("File systems", .enabled(if: canMount, "needs root and mount(8)"), .serialized)
struct FileSystemTests {
    @Test func openingOnAFullDiskIsAnErrorNotACrash() async throws {
        try await withTemporaryDirectory { directory in
            let disk = directory.appendingPathComponent("disk")
            try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
            try #require(runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", disk.path]))
            defer { runCommand("/bin/umount", [disk.path]) }
            let existing = disk.appendingPathComponent("existing")
            let fresh = disk.appendingPathComponent("fresh")
            #expect(try runHelper(["write-count", existing.path, "e", "20"]).lines == ["done"])
            try FileManager.default.createDirectory(at: fresh, withIntermediateDirectories: true)

            // Fill the file system.
            let fillerURL = disk.appendingPathComponent("filler")
            _ = FileManager.default.createFile(atPath: fillerURL.path, contents: nil)
            let filler = try FileHandle(forWritingTo: fillerURL)
            let chunk = Data(count: 16 << 10)
            while (try? filler.write(contentsOf: chunk)) != nil {}
            try filler.close()

            // Opening a new database there is an error in the opening process, not a SIGBUS.
            let opened = try runHelper(["open", fresh.path])
            #expect(opened.status == 0)
            #expect(opened.lines.first?.hasPrefix("error") == true, "\(opened.lines)")
            // The database written before the disk filled still opens and reads.
            #expect(try runHelper(["count", existing.path]).lines == ["20"])

            // With room again, the new database opens.
            try FileManager.default.removeItem(at: fillerURL)
            #expect(try runHelper(["open", fresh.path]).lines == ["opened 0"])
        }
    }

    @Test func oneDirectoryThroughTwoPathsIsOneEnvironment() async throws {
        try await withTemporaryDirectory { directory in
            let real = directory.appendingPathComponent("real")
            let alias = directory.appendingPathComponent("alias")
            for folder in [real, alias] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            try #require(runCommand("/bin/mount", ["--bind", real.path, alias.path]))
            defer { runCommand("/bin/umount", [alias.path]) }

            let first = try LocalDatabase(directory: real, busyTimeout: .milliseconds(300))
            let second = try LocalDatabase(directory: alias, busyTimeout: .milliseconds(300))
            #expect(second.directory == first.directory)
            // One environment: the alias waits for the transaction as another database on the
            // same directory does (two environments would block on LMDB's lock for good).
            try await first.startTransaction()
            try await first.write(Record(id: "a", data: Entry(sequence: 1, payload: "p")))
            try await withTimeout(seconds: 20) {
                await expectError(\.isBusy) { try await second.write(Record(id: "b", data: Entry(sequence: 2, payload: "p"))) }
            }
            try await first.commitTransaction()
            try await second.write(Record(id: "b", data: Entry(sequence: 2, payload: "p")))
            #expect(try await first.readIDs(Entry.self) == ["a", "b"])
        }
    }
}
