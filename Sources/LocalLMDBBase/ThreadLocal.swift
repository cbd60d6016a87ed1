#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One instance of `Value` per thread, made on the thread's first use and released when the
/// thread exits: the library's only thread-local storage.
///
/// Confinement: a thread's instance is reached only through `current` on that thread, so its
/// users need no lock, provided they keep it on the thread (never send it to another).
@usableFromInline package final class ThreadLocal<Value: AnyObject>: @unchecked Sendable {
    @usableFromInline let key: pthread_key_t
    @usableFromInline let make: @Sendable () -> Value

    /// A thread-local value made by `make` on each thread's first use.
    package init(_ make: @escaping @Sendable () -> Value) {
        var key = pthread_key_t()
        let created = pthread_key_create(&key, releaseThreadLocal)
        assert(created == 0, "out of thread-local keys")
        self.key = key
        self.make = make
    }

    /// The calling thread's instance.
    @inlinable @inline(__always)
    package var current: Value {
        if let stored = pthread_getspecific(key) {
            return Unmanaged<Value>.fromOpaque(stored).takeUnretainedValue()
        }
        return makeCurrent()
    }

    @usableFromInline @inline(never)
    func makeCurrent() -> Value {
        let value = make()
        pthread_setspecific(key, Unmanaged.passRetained(value).toOpaque())
        return value
    }
}

/// The destructor of every `ThreadLocal` key: releases the exiting thread's instance.
#if canImport(Darwin)
private func releaseThreadLocal(_ stored: UnsafeMutableRawPointer) {
    Unmanaged<AnyObject>.fromOpaque(stored).release()
}
#else
private func releaseThreadLocal(_ stored: UnsafeMutableRawPointer?) {
    if let stored { Unmanaged<AnyObject>.fromOpaque(stored).release() }
}
#endif
