import LocalLMDBLMDB

/// Releases models one at a time: what a `ReferenceBox` hands its model to when it goes, so
/// that releasing a chain of models linked by references takes a constant depth of stack
/// rather than a nested call per link.
///
/// Confinement: each thread has its own (`ThreadLocal`), used by its deinitializers alone.
final class ReleaseQueue {
    /// The calling thread's queue.
    static var current: ReleaseQueue { queues.current }

    private static let queues = ThreadLocal { ReleaseQueue() }

    @exclusivity(unchecked) private var pending: [any Persistable] = []
    @exclusivity(unchecked) private var draining = false

    /// Releases `model`: now, unless a release under way on this thread is draining the queue,
    /// which then releases it when the release in progress returns.
    func release(_ model: consuming any Persistable) {
        pending.append(consume model)
        guard !draining else { return }
        draining = true
        // Each model released here may release boxes, whose models join the queue.
        while let next = pending.popLast() { _ = consume next }
        draining = false
    }
}
