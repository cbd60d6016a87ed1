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
