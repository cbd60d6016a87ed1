import Foundation

/// A value guarded by a lock.
///
/// The lock is held only for the duration of `withLock`'s closure, which must not block or
/// call back into code that takes the same lock. `Value` must be `Sendable`: the value is
/// handed from thread to thread.
@usableFromInline package final class Locked<Value: Sendable>: @unchecked Sendable {
    @usableFromInline let lock = NSLock()
    @usableFromInline var value: Value

    @inlinable package init(_ value: Value) {
        self.value = value
    }

    @inlinable package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
