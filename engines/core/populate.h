/*
 * populate.h: fault in a fresh memory range in one call.
 *
 * A large buffer filled right after it is allocated (a merge's write batch,
 * its slabs of records) takes one page fault per 4 KiB page.  On the
 * development VM (a paravirtualised guest, where a fault goes through the
 * hypervisor) they were 30-50% of the time a merge spent filling its write
 * batch (bench_merge, 2026-12-03): ann_populate asks the kernel to map the
 * whole range at once (MADV_POPULATE_WRITE, Linux 5.14).  Where the kernel
 * refuses (older kernels: EINVAL), nothing happens and the pages fault in
 * as before; the contents are unchanged either way.
 *
 * Populated pages still cost the hypervisor something on first touch
 * there; huge pages cost it 512 times fewer faults.  ann_alloc_large gives
 * a buffer of 4 MiB and more on 2 MiB boundaries with MADV_HUGEPAGE
 * (Debian's default THP policy, "madvise", gives huge pages only to such
 * ranges); below that it is malloc.  Filling 134 MiB of fresh memory took
 * 0.34-0.36 s in 4 KiB pages and 0.011 s in huge pages (2026-12-04, three
 * runs each; once 0.21 s, the first run).  A merge's graph snapshot is
 * such a buffer, and so are a Vamana build's half-precision rows,
 * adjacency and degrees, read at random for minutes: there huge pages cut
 * the page walks of a 1M x 768 build (1.5 GB of rows) and took its graph
 * phase from 422-429 s to 357 s (bench_build, 2026-12-05).  Free it with
 * free().
 */
#ifndef ANNLAB_CORE_POPULATE_H
#define ANNLAB_CORE_POPULATE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Below this, faulting page by page costs too little to matter. */
#define ANN_POPULATE_MIN_BYTES ((size_t)1 << 20)

/* Map the whole pages inside [p, p + bytes) writable now (best effort:
 * callers may ignore the result).  Returns 0, 1 when the range is below
 * ANN_POPULATE_MIN_BYTES (left alone), or -errno from the kernel. */
static inline int ann_populate(void *p, size_t bytes)
{
    if (bytes < ANN_POPULATE_MIN_BYTES)
        return 1;
    const uintptr_t page = 4096;
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(page - 1);
    if (hi > lo && madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) != 0)
        return -errno;
    return 0;
}

/* From this size up, ann_alloc_large asks for huge pages. */
#define ANN_LARGE_BYTES ((size_t)4 << 20)

/* bytes of memory (uninitialised), on 2 MiB boundaries with transparent
 * huge pages asked for (MADV_HUGEPAGE, best effort) when bytes >=
 * ANN_LARGE_BYTES; NULL when out of memory.  Free with free(). */
static inline void *ann_alloc_large(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    if (bytes < ANN_LARGE_BYTES)
        return malloc(bytes ? bytes : 1);
    size_t rounded = (bytes + huge - 1) & ~(huge - 1);
    if (rounded < bytes)
        return NULL;
    void *p = aligned_alloc(huge, rounded);
    if (p)
        (void)madvise(p, rounded, MADV_HUGEPAGE);
    return p;
}

#endif
