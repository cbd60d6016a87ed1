import Foundation
@testable import LocalLMDB
import Testing

@Suite("One environment per directory")
struct OpenPathsTests {
    @Test func aSecondClaimWaitsForTheFirstRelease() async throws {
        let paths = OpenPaths()
        try paths.claim("/tmp/example")
        let released = Locked(false)
        let claimedAfterRelease = Task.detached {
            try paths.claim("/tmp/example")  // blocks until the release below
            return released.withLock { $0 }
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        released.withLock { $0 = true }
        paths.release("/tmp/example")
        #expect(try await claimedAfterRelease.value)
        // Other paths never wait.
        try paths.claim("/tmp/other")
    }

    @Test func aClaimThatIsNeverReleasedTimesOutWithAnError() throws {
        let paths = OpenPaths()
        try paths.claim("/tmp/stuck")
        #expect(throws: LocalDatabaseError.self) { try paths.claim("/tmp/stuck", timeout: 0.05) }
    }
}
