#ifndef C_MEMORY_PROBE_H
#define C_MEMORY_PROBE_H

/// Bytes of heap in use (glibc's mallinfo2: uordblks, the arenas' allocated bytes, plus hblkhd,
/// the bytes of large allocations malloc made with mmap), or -1 where glibc is not the allocator.
long long memory_probe_heap_in_use(void);

/// Returns the heap's free pages to the system (glibc's malloc_trim(0)); does nothing elsewhere.
void memory_probe_trim(void);

#endif
