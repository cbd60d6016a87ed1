#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Where every transaction of this process on one environment is counted while it lives, so
/// that the map can be resized (and the environment closed) with none active, as LMDB requires
/// of `mdb_env_set_mapsize` and `mdb_env_close`; and where reset read transactions wait to be
/// renewed (`MDB_NOTLS` makes them belong to no thread).
///
/// Readers share nothing writable: each thread counts its transactions, and pools its idle
/// read transactions, in a stripe of its own (its `ThreadSlot` number, on a cache line of its
/// own), with atomic operations and no lock. The first `stripeCount` threads to use the gate
/// get distinct stripes; later ones share, which stays correct and costs only that sharing.
/// What every transaction reads — whether the gate is shut, whether the environment is closed
/// — is written only when the map is resized or the environment closes.
///
/// Invariants:
/// - a stripe's count is the number of transactions begun on it and not yet ended, plus, for
///   a moment, threads checking whether the gate is shut;
/// - `withGateShut` runs its body only when it has shut the gate and seen every count at zero
///   after shutting it, so no transaction is active while the body runs, and none begins: a
///   thread entering counts itself, then checks the gate, and backs out if it is shut (every
///   operation is sequentially consistent, so either the shutter sees the count or the enterer
///   sees the gate shut);
/// - a thread that already has a transaction inside is let in while the gate is shut (its
///   first transaction holds the shutter back anyway, so this cannot let a transaction meet a
///   resize), and it cannot shut the gate itself (`withGateShut` returns nil): either would
///   otherwise wait for itself;
/// - the gate is never shut for long while transactions are inside (`withGateShut`), so a
///   transaction that waits for another thread's transaction is not waited for in a circle.
@usableFromInline package final class TransactionGate: @unchecked Sendable {
    /// Where a transaction was counted; `leave` takes it back on the same thread.
    @usableFromInline struct Ticket {
        @usableFromInline let stripe: Int
        // The thread's own slot, alive as long as the thread, which takes the ticket back:
        // unowned(unsafe) keeps a ticket (and the write transaction holding one) trivially destroyed.
        @usableFromInline unowned(unsafe) let slot: ThreadSlot

        @inlinable init(stripe: Int, slot: ThreadSlot) {
            self.stripe = stripe
            self.slot = slot
        }
    }

    /// Stripes: a power of two, twice the cores (at least 8, at most 64), so every thread of
    /// the cooperative pool, the main thread and the writer threads have one each.
    @usableFromInline static let stripeCount: Int = {
        let wanted = max(8, min(64, 2 * ProcessInfo.processInfo.activeProcessorCount))
        var count = 8
        while count < wanted { count *= 2 }
        return count
    }()
    /// Idle read transactions a stripe keeps at most (each holds one of LMDB's reader slots).
    @usableFromInline static let idlePerStripe = 2
    /// Idle read transactions a stripe keeps here: together at most a quarter of LMDB's reader
    /// slots, which other processes on the environment need too (0: none are pooled).
    @usableFromInline let idleSlots: Int

    /// Line 0: the gate (word 0: 1 while shut), closed for good (word 1), threads waiting at
    /// the shut gate (word 2), times shut (word 3). Line 1 + s: stripe
    /// s's count (word 0) and idle read transactions (words 1…idlePerStripe, 0 when empty).
    @usableFromInline let lines = AtomicLines(lines: 1 + TransactionGate.stripeCount)
    /// One shutter at a time.
    @usableFromInline let shutter = NSLock()
    /// This gate among all gates of the process (for `ThreadSlot`); never 0.
    @usableFromInline let identity: Int

    @usableFromInline static let identities = AtomicLines(lines: 1)

    /// A gate for an environment with `maxReaders` reader slots.
    @inlinable init(maxReaders: Int) {
        identity = Self.identities.add(1, line: 0)
        idleSlots = max(0, min(Self.idlePerStripe, maxReaders / 4 / Self.stripeCount))
    }

    // MARK: Transactions

    /// Counts a transaction of the calling thread in; it must `leave` on the same thread.
    /// Waits while the gate is shut, unless this thread already has a transaction inside.
    @inline(__always)
    @inlinable func enter() -> Ticket {
        let slot = ThreadSlot.current
        let stripe = slot.stripe & (Self.stripeCount - 1)
        while true {
            lines.add(1, line: 1 + stripe)
            if lines.load(line: 0) == 0 || slot.depth(in: identity) > 0 {
                slot.enter(identity)
                return Ticket(stripe: stripe, slot: slot)
            }
            lines.add(-1, line: 1 + stripe)
            lines.add(1, line: 0, word: 2)
            var waits = 0
            while lines.load(line: 0) != 0 { Self.pause(&waits) }
            lines.add(-1, line: 0, word: 2)
        }
    }

    /// Counts the transaction of `ticket` out.
    @inline(__always)
    @inlinable func leave(_ ticket: Ticket) {
        ticket.slot.leave(identity)
        lines.add(-1, line: 1 + ticket.stripe)
    }

    /// How many threads wait at the shut gate to begin a transaction (for tests).
    @inlinable package var waitingToEnter: Int { lines.load(line: 0, word: 2) }

    /// How many times a shutter has shut the gate (for tests: a shutter waiting for the
    /// transactions inside shuts it again every few milliseconds).
    @inlinable package var timesShut: Int { lines.load(line: 0, word: 3) }

    /// Whether `close` ran: no transaction may begin.
    @inlinable var isClosed: Bool { lines.load(line: 0, word: 1) != 0 }

    /// Marks the environment closed. Call with the gate shut.
    @inlinable func markClosed() { lines.store(1, line: 0, word: 1) }

    /// Runs `body` with the gate shut and no transaction of this process active.
    ///
    /// The gate stays shut for at most `drainLimit` at a time: if transactions are still
    /// inside by then, it opens again for a moment and the shutter tries anew. A transaction
    /// inside may be waiting for another thread's read (a model's initializer that hands work
    /// to other threads), which a gate shut for good would keep out: nothing would move.
    /// - Returns: `body`'s result, or nil without running it when the calling thread has a
    ///   transaction inside (it would wait for itself forever).
    @inlinable func withGateShut<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R? {
        guard ThreadSlot.current.depth(in: identity) == 0 else { return nil }
        shutter.lock()
        defer { shutter.unlock() }
        var attempt = 0
        while true {
            lines.store(1, line: 0)
            lines.add(1, line: 0, word: 3)
            if drained(within: Self.drainLimit) {
                defer { lines.store(0, line: 0) }
                return try body()
            }
            lines.store(0, line: 0)
            // Let the transactions that waited in, then try again, backing off to 1 ms.
            attempt += 1
            usleep(UInt32(min(1_000, 50 * attempt)))
        }
    }

    /// How long a shutter keeps the gate shut waiting for transactions to leave.
    @usableFromInline static let drainLimit: Duration = .milliseconds(2)

    /// Whether every stripe's count reached zero (with the gate shut) within `limit`.
    @inlinable func drained(within limit: Duration) -> Bool {
        let deadline = ContinuousClock.now + limit
        for stripe in 0..<Self.stripeCount {
            var waits = 0
            while lines.load(line: 1 + stripe) != 0 {
                if waits >= 64, ContinuousClock.now > deadline { return false }
                Self.pause(&waits)
            }
        }
        return true
    }

    /// Waits a little: spins first, then yields, then sleeps, as a shut gate is rare and a
    /// long read may keep it shut for long.
    @inlinable static func pause(_ waits: inout Int) {
        waits += 1
        if waits < 64 {
            return
        } else if waits < 128 {
            sched_yield()
        } else {
            usleep(50)
        }
    }

    // MARK: Idle read transactions

    /// A reset read transaction from the stripe of `ticket`, if it has one.
    @inline(__always)
    @inlinable func takeIdle(_ ticket: Ticket) -> OpaquePointer? {
        for word in 0..<idleSlots {
            if let handle = OpaquePointer(bitPattern: lines.exchange(0, line: 1 + ticket.stripe, word: 1 + word)) { return handle }
        }
        return nil
    }

    /// Pools `handle` in the stripe of `ticket`.
    /// - Returns: false when the stripe is full: the caller keeps `handle` and must abort it.
    @inline(__always)
    @inlinable func putIdle(_ handle: OpaquePointer, _ ticket: Ticket) -> Bool {
        let bits = Int(bitPattern: UnsafeRawPointer(handle))
        for word in 0..<idleSlots where lines.compareExchange(expected: 0, desired: bits, line: 1 + ticket.stripe, word: 1 + word) {
            return true
        }
        return false
    }

    /// An idle read transaction from any stripe: for when LMDB's reader slots are all taken,
    /// some of them by idle transactions pooled by other threads.
    @inlinable func takeAnyIdle() -> OpaquePointer? {
        for stripe in 0..<Self.stripeCount {
            for word in 0..<idleSlots {
                if let handle = OpaquePointer(bitPattern: lines.exchange(0, line: 1 + stripe, word: 1 + word)) { return handle }
            }
        }
        return nil
    }

    /// Empties the pool, calling `body` with each handle it held.
    @inlinable func drainIdle(_ body: (OpaquePointer) -> Void) {
        while let handle = takeAnyIdle() { body(handle) }
    }
}
