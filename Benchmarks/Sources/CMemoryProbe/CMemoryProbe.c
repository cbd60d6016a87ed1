#include "CMemoryProbe.h"

#include <stdlib.h> // defines __GLIBC__ where glibc is the C library

#if defined(__GLIBC__)
#include <malloc.h>

long long memory_probe_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (long long)(info.uordblks + info.hblkhd);
}

void memory_probe_trim(void) { malloc_trim(0); }
#else
long long memory_probe_heap_in_use(void) { return -1; }

void memory_probe_trim(void) {}
#endif
