import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// Counts the library's tasks that were resumed from its own threads (a write's outcome from the
/// writer thread, an observer woken after a commit) and are waiting for a thread of the
/// cooperative pool to run on; reads give way to them.
///
/// Why: an async read completes without suspending (it runs on the caller's thread, for speed),
/// so tasks that loop on reads never give their pool thread back. With as many such loops as
/// the pool has threads (two on a 2-core machine), a write's caller, resumed onto the pool, would
/// wait until the loops stop, and an open transaction with it, holding the writer lock of every
/// process. So every async read checks this count (one atomic load) and, when someone is
/// waiting, yields its thread first (`Task.yield()`): the library's own progress never waits on
/// looping readers. Work that loops without reading or suspending is the caller's to break up.
///
/// Invariant: the count is the number of continuations resumed by `resuming` whose task has not
/// yet called `running`; it is never negative.
@usableFromInline package enum PoolDemand {
    @usableFromInline static let waiting = AtomicLines(lines: 1)

    /// Call just before resuming a task's continuation from a thread of the library's.
    @inline(__always)
    static func resuming() {
        _ = waiting.add(1, line: 0)
    }

    /// Call in the resumed task, as soon as it runs.
    @inline(__always)
    static func running() {
        let after = waiting.add(-1, line: 0)
        assert(after >= 0, "a task ran that was not counted as resumed")
    }

    /// Whether a resumed task of the library's waits for a pool thread.
    @inlinable
    static var someoneWaits: Bool { waiting.load(line: 0) > 0 }

    /// Yields the calling task's thread when a resumed task of the library's waits for one.
    @inlinable
    package static nonisolated(nonsending) func giveWay() async {
        if someoneWaits { await Task.yield() }
    }
}
