#ifndef CLMDB_SHIM_H
#define CLMDB_SHIM_H
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/// Asks the CPU to start loading the cache lines of `count` bytes at `bytes`.
static inline void clmdb_prefetch(const void *bytes, size_t count) {
    const char *line = (const char *)bytes;
    for (size_t offset = 0; offset < count; offset += 64) {
        __builtin_prefetch(line + offset);
    }
}

// Sequentially consistent atomic operations on one machine word, for the transaction gate and
// the state flags that reads check without a lock (Swift's own `Atomic` needs macOS 15).
static inline intptr_t clmdb_atomic_load(intptr_t *word) {
    return __atomic_load_n(word, __ATOMIC_SEQ_CST);
}
static inline void clmdb_atomic_store(intptr_t *word, intptr_t value) {
    __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
}
/// Adds `delta`; returns the new value.
static inline intptr_t clmdb_atomic_add(intptr_t *word, intptr_t delta) {
    return __atomic_add_fetch(word, delta, __ATOMIC_SEQ_CST);
}
/// Stores `value`; returns the value before.
static inline intptr_t clmdb_atomic_exchange(intptr_t *word, intptr_t value) {
    return __atomic_exchange_n(word, value, __ATOMIC_SEQ_CST);
}
/// Stores `desired` if the word holds `expected`; returns whether it did.
static inline bool clmdb_atomic_compare_exchange(intptr_t *word, intptr_t expected, intptr_t desired) {
    return __atomic_compare_exchange_n(word, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/// A point on the calling thread's own stack: the frame's address. (A Swift local's address is not
/// one under AddressSanitizer, which moves locals whose address is taken to a "fake stack" on the
/// heap to catch uses after return: `StackGuard` read those as a stack grown past its limit.)
static inline uintptr_t clmdb_stack_position(void) {
    return (uintptr_t)__builtin_frame_address(0);
}

#if defined(__linux__)
// A GNU extension, declared by <pthread.h> only with _GNU_SOURCE.
extern int pthread_getattr_np(pthread_t thread, pthread_attr_t *attributes);
#endif

/// The lowest address of the calling thread's stack, and its size; false when they cannot be
/// found. For the codec's recursion guard (`StackGuard`).
static inline bool clmdb_stack_bounds(uintptr_t *lowest, size_t *size) {
#if defined(__APPLE__)
    pthread_t thread = pthread_self();
    *size = pthread_get_stacksize_np(thread);
    *lowest = (uintptr_t)pthread_get_stackaddr_np(thread) - *size;
    return *size > 0;
#elif defined(__linux__)
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return false;
    void *start = 0;
    size_t bytes = 0;
    int status = pthread_attr_getstack(&attributes, &start, &bytes);
    pthread_attr_destroy(&attributes);
    if (status != 0 || bytes == 0) return false;
    *lowest = (uintptr_t)start;
    *size = bytes;
    return true;
#else
    return false;
#endif
}
#endif
