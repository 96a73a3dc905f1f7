/*
 * f16.h: IEEE 754 half-precision copies of float32 vectors, and squared L2
 * / inner-product kernels on them, for passes that are bound by memory
 * bandwidth rather than arithmetic (the Vamana build reads each random
 * 768-d row from DRAM; a half row is half the traffic).
 *
 * Kernels are chosen once with the float32 kernels' choice (distance.h,
 * ANNLAB_SIMD applies): AVX-512F, AVX2 + F16C, or the scalar reference.
 * Accumulation is in float32.  Conversion rounds to nearest even.
 */
#ifndef ANNLAB_CORE_F16_H
#define ANNLAB_CORE_F16_H

#include <stddef.h>
#include <stdint.h>

typedef uint16_t ann_f16;

/* Largest finite half value. */
#define ANN_F16_MAX 65504.0f

/*
 * Convert count floats to halves.  Returns 0, or ANN_EDATA (detail message
 * naming the element) when a value is not finite or its magnitude exceeds
 * ANN_F16_MAX, so the caller can keep float32 instead.  Thread-safe.
 */
int ann_f16_from_f32(const float *in, size_t count, ann_f16 *out);

/* Half to float (exact). */
float ann_f16_to_f32(ann_f16 h);

typedef float (*ann_f16_dist_fn)(const ann_f16 *a, const ann_f16 *b, size_t dim);

typedef struct ann_f16_kernels {
    const char *name;     /* "scalar", "avx2", "avx512" */
    ann_f16_dist_fn l2sq; /* sum (a_i - b_i)^2 */
    ann_f16_dist_fn ip;   /* sum a_i * b_i */
} ann_f16_kernels;

/* The kernels in use (never NULL; thread-safe). */
const ann_f16_kernels *ann_f16_active(void);

/* A specific variant by name, or NULL when unknown or unsupported here. */
const ann_f16_kernels *ann_f16_variant(const char *name);

/* The scalar reference kernels. */
float ann_f16_l2sq_scalar(const ann_f16 *a, const ann_f16 *b, size_t dim);
float ann_f16_ip_scalar(const ann_f16 *a, const ann_f16 *b, size_t dim);

#endif
