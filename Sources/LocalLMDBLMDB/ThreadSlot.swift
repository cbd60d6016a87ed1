/// What a thread keeps about its own transactions, in thread-local storage: its stripe number,
/// and for each `TransactionGate` it is inside, how many of its transactions are.
///
/// Confinement: a slot is read and written only by its own thread, so it needs no lock and no
/// atomic operation; it is freed when the thread exits. Stripe numbers are handed out in turn
/// as threads first use a gate, so the first threads of a process (the cooperative pool's,
/// one per core) each get a stripe of their own.
@usableFromInline package final class ThreadSlot {
    /// Gates a thread can be inside at once and still be told so (`depth`). A thread inside
    /// more gates at once (reads nested seventeen databases deep) is not tracked in the extra
    /// ones: a nested read there waits while that gate is shut, which the shutter's time limit
    /// ends (see `TransactionGate.withGateShut`).
    @usableFromInline static let gateCapacity = 16
    /// Words: the stripe number, then (gate identity, depth) pairs.
    @usableFromInline static let wordCount = 1 + 2 * gateCapacity

    @usableFromInline let words: UnsafeMutablePointer<Int>

    /// The calling thread's slot.
    @inline(__always)
    @inlinable static var current: ThreadSlot { slots.current }

    @usableFromInline static let slots = ThreadLocal { ThreadSlot() }

    @inlinable init() {
        words = UnsafeMutablePointer<Int>.allocate(capacity: Self.wordCount)
        words.initialize(repeating: 0, count: Self.wordCount)
        words[0] = Self.stripeCounter.add(1, line: 0) - 1
    }

    deinit {
        words.deallocate()
    }

    /// The thread's stripe number: distinct for the first threads, then repeating.
    @inlinable var stripe: Int { words[0] }

    /// How many of this thread's transactions are inside the gate `gate`.
    @inlinable func depth(in gate: Int) -> Int {
        for entry in 0..<Self.gateCapacity where words[1 + 2 * entry] == gate {
            return words[2 + 2 * entry]
        }
        return 0
    }

    /// Counts one more transaction of this thread inside `gate`.
    @inlinable func enter(_ gate: Int) {
        var free: Int?
        for entry in 0..<Self.gateCapacity {
            if words[1 + 2 * entry] == gate {
                words[2 + 2 * entry] += 1
                return
            }
            if free == nil, words[2 + 2 * entry] == 0 { free = entry }
        }
        guard let free else { return }
        words[1 + 2 * free] = gate
        words[2 + 2 * free] = 1
    }

    /// Counts one transaction of this thread fewer inside `gate`.
    @inlinable func leave(_ gate: Int) {
        for entry in 0..<Self.gateCapacity where words[1 + 2 * entry] == gate {
            words[2 + 2 * entry] -= 1
            if words[2 + 2 * entry] == 0 { words[1 + 2 * entry] = 0 }
            return
        }
    }

    /// The next stripe number to hand out.
    @usableFromInline static let stripeCounter = AtomicLines(lines: 1)
}
