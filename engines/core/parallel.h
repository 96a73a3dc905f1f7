/*
 * parallel.h: the one thread-pool-free parallel loop of core/, and the
 * OpenBLAS thread switch used around it.
 *
 * ann_parallel_for() splits [0, n) into chunks of `grain` items handed out
 * through an atomic counter (dynamic scheduling: fast threads take more
 * chunks), runs them on `threads` threads (the caller is worker 0), and
 * joins.  Results that must not depend on the thread count should be
 * written per item, never reduced across chunks in completion order.
 */
#ifndef ANNLAB_CORE_PARALLEL_H
#define ANNLAB_CORE_PARALLEL_H

#include <stdint.h>

/*
 * Body of a parallel loop: process items [begin, end) on worker `worker`
 * (0 <= worker < threads, for per-thread scratch).  Returns 0 or a negative
 * code; the first failure stops further chunks from being handed out.
 */
typedef int (*ann_par_fn)(void *arg, uint64_t begin, uint64_t end, int worker);

/*
 * Run fn over [0, n) in chunks of grain (>= 1) on up to `threads` threads
 * (<= 0: all cores; never more threads than chunks).  If a thread cannot be
 * started the others do its share.  Returns 0, or the first failure's code;
 * the detail message (status.h) is copied to the calling thread.
 */
int ann_parallel_for(int threads, uint64_t n, uint64_t grain, ann_par_fn fn, void *arg);

/* Online cores, at least 1. */
int ann_ncores(void);

/*
 * Make OpenBLAS single-threaded until the matching ann_blas_serial_end(),
 * for code that calls BLAS from its own worker threads.  Calls nest;
 * the outermost end restores the previous thread count.  Thread-safe.
 */
void ann_blas_serial_begin(void);
void ann_blas_serial_end(void);

#endif
