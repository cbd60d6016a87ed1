import CLocalLMDBBase
import Foundation
@testable import LocalLMDBBase
import LocalLMDBLMDB
import Testing

@Suite("The stack guard")
struct StackGuardTests {
    /// The position the codec's stack guard compares with a thread's limit lies on that thread's
    /// own stack, on the test's thread and on a thread with a 512 KiB stack (as Apple's secondary
    /// threads have). It read a local's address, which AddressSanitizer keeps on a heap "fake
    /// stack": under `--sanitize=address` in a debug build, every document with an object or an
    /// array was refused as nested too deeply (found by CI's unoptimized fuzz run).
    @Test func theGuardReadsAPositionOnTheThreadsOwnStack() {
        @Sendable func onOwnStack() -> Bool {
            guard let (lowest, size) = ThreadStack.bounds else { return true }
            let position = UInt(locallmdb_stack_position())
            return position >= lowest && position < lowest + size && !StackGuard.isLow(StackGuard.limitOfCurrentThread())
        }
        #expect(onOwnStack())
        let done = DispatchSemaphore(value: 0)
        let result = Locked(false)
        let thread = Thread {
            result.withLock { $0 = onOwnStack() }
            done.signal()
        }
        thread.stackSize = 512 << 10
        thread.start()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(result.withLock { $0 })
    }
}
