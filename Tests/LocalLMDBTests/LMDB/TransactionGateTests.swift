import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

@Suite("Transaction gate")
struct TransactionGateTests {
    /// Stand-ins for transaction handles: the gate stores them and never dereferences them.
    static func handle(_ index: Int) -> OpaquePointer? {
        OpaquePointer(bitPattern: 0x1000 + index * 16)
    }

    @Test func aThreadGetsBackWhatItPooledAndAFullStripeRefuses() throws {
        let gate = TransactionGate(maxReaders: 256)
        let ticket = gate.enter()
        defer { gate.leave(ticket) }
        var accepted: [UInt] = []
        for index in 0..<5 {
            let handle = try #require(Self.handle(index))
            if gate.putIdle(handle, ticket) { accepted.append(UInt(bitPattern: handle)) }
        }
        #expect(gate.idleSlots == TransactionGate.idlePerStripe)
        #expect(accepted.count == gate.idleSlots)
        var taken: [UInt] = []
        while let handle = gate.takeIdle(ticket) { taken.append(UInt(bitPattern: handle)) }
        #expect(Set(taken) == Set(accepted))
    }

    @Test func drainReturnsEveryPooledHandleFromEveryThread() async {
        let gate = TransactionGate(maxReaders: 256)
        let pooled = await withTaskGroup(of: [UInt].self) { group in
            for task in 0..<16 {
                group.addTask {
                    let ticket = gate.enter()
                    defer { gate.leave(ticket) }
                    return (0..<3).compactMap { offset in
                        guard let handle = Self.handle(task * 3 + offset), gate.putIdle(handle, ticket) else { return nil }
                        return UInt(bitPattern: handle)
                    }
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        var drained: [UInt] = []
        gate.drainIdle { drained.append(UInt(bitPattern: $0)) }
        #expect(drained.count == pooled.count)
        #expect(Set(drained) == Set(pooled))
        #expect(gate.takeAnyIdle() == nil)
    }

    /// The shutter waits for every transaction inside to leave, and none enters meanwhile.
    @Test func shuttingWaitsForEveryTransactionAndKeepsNewOnesOut() async throws {
        let gate = TransactionGate(maxReaders: 256)
        let inside = Locked(0)
        let shutSeen = Locked<[Int]>([])  // how many were inside whenever the shutter's body ran
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // Four threads enter and hold a transaction until released.
        for _ in 0..<4 {
            Thread.detachNewThread {
                let ticket = gate.enter()
                inside.withLock { $0 += 1 }
                entered.signal()
                release.wait()
                inside.withLock { $0 -= 1 }
                gate.leave(ticket)
            }
        }
        for _ in 0..<4 { entered.wait() }
        let shut = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = gate.withGateShut {
                shutSeen.withLock { $0.append(inside.withLock { $0 }) }
                // While shut, a newcomer must wait.
                let newcomerIn = Locked(false)
                let newcomerDone = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    let ticket = gate.enter()
                    newcomerIn.withLock { $0 = true }
                    gate.leave(ticket)
                    newcomerDone.signal()
                }
                // The newcomer waits at the gate, and is not let in while it is shut.
                #expect(spinUntil(seconds: 30) { gate.waitingToEnter == 1 })
                shutSeen.withLock { $0.append(newcomerIn.withLock { $0 } ? 1 : 0) }
                _ = newcomerDone  // let the newcomer finish once the gate opens
            }
            shut.signal()
        }
        // The shutter has shut the gate and given up (transactions are inside) several times,
        // and has not run its body.
        #expect(spinUntil(seconds: 30) { gate.timesShut >= 3 })
        #expect(shutSeen.withLock { $0 }.isEmpty)
        for _ in 0..<4 { release.signal() }
        shut.wait()
        #expect(shutSeen.withLock { $0 } == [0, 0])
    }

    /// A thread with a transaction inside may begin another while the gate is being shut (its
    /// first holds the shutter back anyway), and cannot shut the gate itself.
    @Test func aThreadInsideIsNeverMadeToWaitForItself() throws {
        let gate = TransactionGate(maxReaders: 256)
        let outer = gate.enter()
        #expect(gate.withGateShut { true } == nil)
        let shutterStarted = DispatchSemaphore(value: 0)
        let shutterDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            shutterStarted.signal()
            _ = gate.withGateShut { true }
            shutterDone.signal()
        }
        shutterStarted.wait()
        #expect(spinUntil(seconds: 30) { gate.timesShut > 0 })  // the shutter is now waiting for `outer`
        let nested = gate.enter()  // would deadlock if the gate made this thread wait
        gate.leave(nested)
        gate.leave(outer)
        #expect(shutterDone.wait(timeout: .now() + 10) == .success)
        let after = gate.enter()
        gate.leave(after)
    }

    /// A transaction inside that waits for another thread's transaction must not be waited
    /// for in a circle while the map is resized: the shutter gives way after a moment.
    @Test func aReadWaitingForAnotherThreadsReadIsNotStuckBehindAShutter() {
        let gate = TransactionGate(maxReaders: 256)
        let outer = gate.enter()
        let shutterDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = gate.withGateShut { true }
            shutterDone.signal()
        }
        #expect(spinUntil(seconds: 30) { gate.timesShut > 0 })  // the shutter has shut the gate and waits for `outer`
        let helperDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let ticket = gate.enter()
            gate.leave(ticket)
            helperDone.signal()
        }
        #expect(helperDone.wait(timeout: .now() + 10) == .success)
        gate.leave(outer)
        #expect(shutterDone.wait(timeout: .now() + 10) == .success)
    }

    /// Few reader slots: no idle transactions are pooled, so none are kept from other processes.
    @Test func fewReaderSlotsPoolNothing() throws {
        let gate = TransactionGate(maxReaders: 16)
        #expect(gate.idleSlots == 0)
        let ticket = gate.enter()
        defer { gate.leave(ticket) }
        #expect(!gate.putIdle(try #require(Self.handle(1)), ticket))
    }
}
