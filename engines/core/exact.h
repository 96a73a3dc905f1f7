/*
 * exact.h: exact k-nearest-neighbour search over a vector source, for ground
 * truth and the flat engine's batch mode.
 *
 * The base is streamed in chunks (never held whole); each chunk is scored
 * against all queries with one BLAS sgemm (OpenBLAS), and candidates are
 * selected per query on `threads` threads.  The best k + margin of each
 * query are then re-scored with float64 accumulation so ties and near-ties
 * are ordered by the true distance, and returned sorted by (distance, id).
 */
#ifndef ANNLAB_CORE_EXACT_H
#define ANNLAB_CORE_EXACT_H

#include "engines/core/vecsrc.h"

#include <stdint.h>

/*
 * queries: nq x base->dim floats (normalised for cosine, like the base).
 * out_ids / out_dists: nq x k each, caller-allocated.  k > base->n leaves
 * the tail as id -1 and distance +inf.  threads <= 0 means all cores.
 * Distances follow distance.h (squared L2, -ip, 1 - ip).
 * Returns 0 or a negative code (read errors of the source, ENOMEM).
 */
int ann_exact_knn(const ann_vecsrc *base, const float *queries, uint32_t nq, uint32_t k,
                  int threads, int32_t *out_ids, float *out_dists);

/* The same, adding the base rows scanned to prog (progress.h; may be NULL). */
struct ann_progress;
int ann_exact_knn_progress(const ann_vecsrc *base, const float *queries, uint32_t nq, uint32_t k,
                           int threads, int32_t *out_ids, float *out_dists, struct ann_progress *prog);

/* Distance of a and b in float64 accumulation, for the metric (as distance.h). */
double ann_distance_f64(ann_metric metric, const float *a, const float *b, uint32_t dim);

#endif
