/*
 * distance.h: float32 distance kernels with runtime SIMD dispatch.
 *
 * The kernel table is chosen once, at program start (a constructor), from
 * what the CPU supports: AVX-512F, AVX2+FMA, or the scalar reference.
 * ANNLAB_SIMD=scalar|avx2|avx512 forces one (an unsupported choice falls
 * back to the best available with a notice on stderr).  Kernels accept
 * unaligned pointers and any dimension (tails handled).
 */
#ifndef ANNLAB_CORE_DISTANCE_H
#define ANNLAB_CORE_DISTANCE_H

#include "engines/core/vecsrc.h"

#include <stddef.h>
#include <stdint.h>

typedef float (*ann_dist_fn)(const float *a, const float *b, size_t dim);

typedef struct ann_dist_kernels {
    const char *name; /* "scalar", "avx2", "avx512" */
    ann_dist_fn l2sq; /* sum (a_i - b_i)^2 */
    ann_dist_fn ip;   /* sum a_i * b_i */
} ann_dist_kernels;

/* The table in use (never NULL; thread-safe after start-up). */
const ann_dist_kernels *ann_dist_active(void);

/* A specific variant by name, or NULL when unknown or unsupported by this CPU. */
const ann_dist_kernels *ann_dist_variant(const char *name);

/* The scalar reference kernels (every SIMD kernel is tested against them). */
float ann_l2sq_scalar(const float *a, const float *b, size_t dim);
float ann_ip_scalar(const float *a, const float *b, size_t dim);

/* Fast paths through the active table. */
static inline float ann_l2sq(const float *a, const float *b, size_t dim)
{
    return ann_dist_active()->l2sq(a, b, dim);
}
static inline float ann_ip(const float *a, const float *b, size_t dim)
{
    return ann_dist_active()->ip(a, b, dim);
}

/*
 * The distance an engine ranks by, for a metric: L2 -> squared L2,
 * IP -> -ip, COSINE -> 1 - ip (vectors normalised at preparation).
 * Smaller is always better.
 */
float ann_distance(ann_metric metric, const float *a, const float *b, size_t dim);

/* Normalise v in place to unit length (no-op for the zero vector). */
void ann_normalize(float *v, size_t dim);

#endif
