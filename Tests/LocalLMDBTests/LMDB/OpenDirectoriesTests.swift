import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

@Suite("One environment per directory")
struct OpenDirectoriesTests {
    let example = FileIdentity(device: 1, inode: 2)

    @Test func aSecondClaimWaitsForTheFirstRelease() async throws {
        let paths = OpenDirectories()
        try paths.claim(example, path: "/tmp/example")
        let released = Locked(false)
        let claimedAfterRelease = Task.detached {
            try paths.claim(example, path: "/tmp/example")  // blocks until the release below
            return released.withLock { $0 }
        }
        // Released only once the second claim waits for it.
        #expect(await waitUntil(seconds: 30) { paths.waitingClaims == 1 })
        released.withLock { $0 = true }
        paths.release(example)
        #expect(try await claimedAfterRelease.value)
        // Other paths never wait.
        try paths.claim(FileIdentity(device: 1, inode: 3), path: "/tmp/other")
    }

    @Test func aClaimThatIsNeverReleasedTimesOutWithAnError() throws {
        let paths = OpenDirectories()
        try paths.claim(example, path: "/tmp/stuck")
        #expect(throws: DatabaseError.self) { try paths.claim(example, path: "/tmp/stuck", timeout: 0.05) }
    }
}

/// The descriptors of this process open on files named `name` in `directory`.
private func openDescriptors(to name: String, in directory: String) -> [String] {
    let target = (directory as NSString).appendingPathComponent(name)
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == target }
}

@Suite("Closing lets go of the files")
struct EnvironmentFilesTests {
    /// A closed environment that something still refers to keeps no file open for writing: a
    /// volume can be remounted read-only, or unmounted, once `close` returns.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd")))
    func aClosedEnvironmentKeepsNoFileOpen() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let handle = try DirectoryHandle(path: directory.path)
        let environment = try Environment(
            directory: handle, sync: .full, readOnly: false, initialMapSize: 1 << 20, maximumMapSize: 1 << 24, maxReaders: 16, maxDatabases: 8)
        let transaction = try environment.beginWrite()
        try transaction.commit()
        #expect(openDescriptors(to: "writer.lock", in: handle.path).count == 1)
        environment.close()
        for name in ["writer.lock", "data.mdb", "lock.mdb"] {
            #expect(openDescriptors(to: name, in: handle.path).isEmpty, "\(name) is still open")
        }
        // Closed: a write transaction is refused, not begun on a file that is gone.
        #expect(throws: DatabaseError.closed) { _ = try environment.beginWrite() }
        withExtendedLifetime(environment) {}
    }
}
