#ifndef CLMDB_SHIM_H
#define CLMDB_SHIM_H
#include <lmdb.h>

/// Asks the CPU to start loading the cache lines of `count` bytes at `bytes`.
static inline void clmdb_prefetch(const void *bytes, size_t count) {
    const char *line = (const char *)bytes;
    for (size_t offset = 0; offset < count; offset += 64) {
        __builtin_prefetch(line + offset);
    }
}
#endif
