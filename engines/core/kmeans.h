/*
 * kmeans.h: seeded Lloyd k-means with a BLAS assignment step, shared by
 * the PQ sub-quantizers (pq.h) and IVF coarse quantizers.
 *
 * Distances are squared L2.  For inner-product or cosine data an IVF
 * quantizer may set `spherical` so centroids are renormalised after every
 * update (spherical k-means).  Results are deterministic for a given seed
 * whatever the thread count: rows are scored in fixed blocks, and every
 * centroid sum is accumulated (in float64) in row order by one thread.
 *
 * BLAS threading: OpenBLAS 0.3.21 has no per-call thread setting, so while
 * kmeans_train/kmeans_assign run their own worker threads they set OpenBLAS
 * to one thread and restore the previous setting on return.  Calling them
 * while another thread of the process relies on OpenBLAS's own threading is
 * safe but may run that work single-threaded.
 */
#ifndef ANNLAB_CORE_KMEANS_H
#define ANNLAB_CORE_KMEANS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    KMEANS_INIT_SAMPLE = 0,    /* k distinct rows drawn by a seeded shuffle */
    KMEANS_INIT_PLUSPLUS = 1,  /* k-means++ (Arthur & Vassilvitskii 2007), seeded */
} kmeans_init;

typedef struct kmeans_params {
    uint32_t k;         /* clusters, >= 1 and <= n */
    uint32_t iters;     /* Lloyd iterations (default 12) */
    uint64_t seed;      /* initialisation (default 1) */
    int threads;        /* <= 0: all online cores (default 0) */
    kmeans_init init;   /* default KMEANS_INIT_SAMPLE */
    int spherical;      /* 1: renormalise centroids to unit length each step */
} kmeans_params;

/* Fill p with the defaults above and k = k. */
void kmeans_params_default(kmeans_params *p, uint32_t k);

typedef struct kmeans_stats {
    double objective;     /* mean squared distance to the nearest centroid, last step */
    uint32_t iters_run;   /* iterations done */
    uint32_t empty_fixed; /* empty clusters repaired, over all iterations */
} kmeans_stats;

/*
 * Train k centroids on x (n rows of dim floats, row-major, caller-owned).
 * centroids: caller-allocated k*dim floats, written on success.
 * stats: may be NULL.
 * Empty clusters are repaired after each update: an empty centroid moves
 * onto the row farthest from its own centroid (each row used once), so no
 * cluster stays empty unless there are fewer distinct rows than k.
 * Thread-safe (no shared state); uses `threads` worker threads and single-
 * threaded BLAS calls inside them.
 * Errors: ANN_EPARAM (k == 0, k > n, n >= 2^32, dim == 0), -ENOMEM.
 */
int kmeans_train(const float *x, uint64_t n, uint32_t dim, const kmeans_params *p,
                 float *centroids, kmeans_stats *stats);

/*
 * Nearest centroid of each row: assign[i] in [0, k), and, when dist is not
 * NULL, dist[i] = squared L2 to it.  Computed as |x|^2 - 2 x.c + |c|^2 with
 * one sgemm per block of rows (OpenBLAS), clamped at 0; ties go to the
 * lower centroid index.  threads <= 0: all cores.
 * Errors: ANN_EPARAM (k == 0, dim == 0), -ENOMEM.
 */
int kmeans_assign(const float *x, uint64_t n, uint32_t dim, const float *centroids,
                  uint32_t k, int threads, uint32_t *assign, float *dist);

/* |c|^2 of each of k centroids of dim floats into cnorm (k floats). */
void kmeans_centroid_norms(const float *centroids, uint32_t k, uint32_t dim, float *cnorm);

/* Floats of scratch kmeans_assign_serial needs for k centroids. */
size_t kmeans_scratch_floats(uint32_t k);

/*
 * kmeans_assign on the calling thread only, with caller scratch (for code
 * that runs its own workers, e.g. PQ encoding): cnorm from
 * kmeans_centroid_norms, scratch of kmeans_scratch_floats(k) floats.
 * Same blocks, same results as kmeans_assign.  Allocates nothing.  The
 * caller should hold ann_blas_serial_begin() (parallel.h) while several
 * threads call it.
 */
void kmeans_assign_serial(const float *x, uint64_t n, uint32_t dim, const float *centroids,
                          const float *cnorm, uint32_t k, float *scratch, uint32_t *assign,
                          float *dist);

/* Online cores, at least 1 (the meaning of threads <= 0 everywhere in core/). */
int ann_default_threads(void);

#endif
