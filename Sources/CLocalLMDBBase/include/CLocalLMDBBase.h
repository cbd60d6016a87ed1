#ifndef CLOCALLMDBBASE_H
#define CLOCALLMDBBASE_H
// What Swift cannot say about the calling thread's stack, for the codec's recursion guard
// (`StackGuard`, in LocalLMDBBase). No LMDB here: the codec depends on this and the toolchain alone.
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// A point on the calling thread's own stack: the frame's address. (A Swift local's address is not
/// one under AddressSanitizer, which moves locals whose address is taken to a "fake stack" on the
/// heap to catch uses after return: `StackGuard` read those as a stack grown past its limit.)
static inline uintptr_t locallmdb_stack_position(void) {
    return (uintptr_t)__builtin_frame_address(0);
}

#if defined(__linux__)
// A GNU extension, declared by <pthread.h> only with _GNU_SOURCE.
extern int pthread_getattr_np(pthread_t thread, pthread_attr_t *attributes);
#endif

/// The lowest address of the calling thread's stack, and its size; false when they cannot be
/// found. For the codec's recursion guard (`StackGuard`).
static inline bool locallmdb_stack_bounds(uintptr_t *lowest, size_t *size) {
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
