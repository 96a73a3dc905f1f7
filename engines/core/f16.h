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

/* a in float32, b in half: for a row compared with many (a search's query,
 * the candidate RobustPrune compares with the rest), widened once with
 * ann_f16_widen.  The same value, bit for bit, as the half kernel on the
 * half row a came from (widening is exact and the order of operations is
 * the same), without widening a at every call. */
typedef float (*ann_f16_mixed_fn)(const float *a, const ann_f16 *b, size_t dim);

typedef struct ann_f16_kernels {
    const char *name;     /* "scalar", "avx2", "avx512" */
    ann_f16_dist_fn l2sq; /* sum (a_i - b_i)^2 */
    ann_f16_dist_fn ip;   /* sum a_i * b_i */
    ann_f16_mixed_fn l2sq_mixed; /* the same with a widened */
    ann_f16_mixed_fn ip_mixed;
    void (*widen)(const ann_f16 *a, size_t count, float *out); /* ann_f16_widen */
} ann_f16_kernels;

/* out[i] = a[i] as float (exact), count values: the scalar conversion (the
 * kernels' widen field converts 16 or 8 at a time). */
void ann_f16_widen(const ann_f16 *a, size_t count, float *out);

/* The kernels in use (never NULL; thread-safe). */
const ann_f16_kernels *ann_f16_active(void);

/* A specific variant by name, or NULL when unknown or unsupported here. */
const ann_f16_kernels *ann_f16_variant(const char *name);

/* The scalar reference kernels. */
float ann_f16_l2sq_scalar(const ann_f16 *a, const ann_f16 *b, size_t dim);
float ann_f16_ip_scalar(const ann_f16 *a, const ann_f16 *b, size_t dim);
float ann_f16_l2sq_mixed_scalar(const float *a, const ann_f16 *b, size_t dim);
float ann_f16_ip_mixed_scalar(const float *a, const ann_f16 *b, size_t dim);

#endif
