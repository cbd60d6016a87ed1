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

#endif
