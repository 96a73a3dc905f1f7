/*
 * i8.h: int8 copies of float32 rows for graph-build distances.
 *
 * Every value is stored as a = round((x - centre[d]) / step), clamped to
 * [-127, 127], with one step for all dimensions (so a squared L2 between
 * two codes is step^2 times an integer, and ratios of distances, which
 * RobustPrune compares, need no scale) and a per-dimension centre (the
 * midpoint of that dimension's range, which cancels in every difference).
 * step = max over dimensions of half the range / 127, so no value is
 * clamped.  Rows are padded with zeros to a multiple of 64 bytes.
 *
 * A distance takes one row as the left operand in unsigned form
 * (u = a + 128, ann_i8_left) and the other as stored:
 *     |a - b|^2 = |a|^2 + (|b|^2 + 256 sum(b)) - 2 (u . b)
 * where u . b is what AVX-512 VNNI's vpdpbusd sums (unsigned by signed
 * bytes), and the per-row bias |b|^2 + 256 sum(b) is stored with the row.
 * Integer arithmetic: every kernel gives the same value, bit for bit.
 *
 * One step for all dimensions is coarse where ranges differ a lot (one
 * dimension ten times wider than the rest gives the rest a tenth of the
 * levels), so rows are refused when the coding noise (dim * step^2 / 12,
 * the expected squared error a code adds to a row) exceeds ANN_I8_MAX_NOISE
 * of the rows' total variance (half the mean squared distance between two
 * rows).  On the 768-d Cohere-shaped stand-in (100k) the ratio is 2.2e-4.
 */
#ifndef ANNLAB_CORE_I8_H
#define ANNLAB_CORE_I8_H

#include <stddef.h>
#include <stdint.h>

/* Widest rows ann_i8_rows_make takes: keeps every sum inside int32. */
#define ANN_I8_MAX_DIM 16384u
/* Most coding noise, as a share of the rows' variance, that is coded. */
#define ANN_I8_MAX_NOISE 1e-3

typedef struct ann_i8_rows {
    int8_t *rows;   /* n x stride */
    int32_t *bias;  /* per row: |a|^2 + 256 sum(a) */
    int32_t *norm;  /* per row: |a|^2 */
    float *centre;  /* dim */
    float step;     /* value = centre + step * a */
    float step2;    /* step^2: an integer squared distance times this is float32 squared L2 */
    double noise;   /* dim * step^2 / 12 over the rows' total variance */
    uint64_t n;
    uint32_t dim, stride; /* stride: dim rounded up to 64 */
} ann_i8_rows;

/*
 * Codes for n rows of x (threads as ann_parallel_for).  Returns 0, 1 when
 * the rows cannot be coded well (a value that is not finite, every value
 * equal, dim over ANN_I8_MAX_DIM, coding noise over ANN_I8_MAX_NOISE: the
 * caller keeps another precision; nothing is allocated, and *noise_out,
 * when not NULL, has the ratio or -1 when it was not computed), or a
 * negative ANN_ error (no memory).
 */
int ann_i8_rows_make(const float *x, uint64_t n, uint32_t dim, int threads, ann_i8_rows *out,
                     double *noise_out);
void ann_i8_rows_free(ann_i8_rows *r);

/* The left operand of row id: stride bytes of a + 128 into u; returns |a|^2. */
int32_t ann_i8_left(const ann_i8_rows *r, uint64_t id, uint8_t *u);

/* sum u[i] * b[i] over stride bytes (a multiple of 64). */
typedef int32_t (*ann_i8_dot_fn)(const uint8_t *u, const int8_t *b, size_t stride);

typedef struct ann_i8_kernels {
    const char *name; /* "scalar", "avx512vnni" */
    ann_i8_dot_fn dot;
} ann_i8_kernels;

/* The fastest kernel this CPU runs (never slower than scalar). */
const ann_i8_kernels *ann_i8_active(void);
/* A kernel by name, or NULL when this CPU cannot run it (tests, benches). */
const ann_i8_kernels *ann_i8_variant(const char *name);
int32_t ann_i8_dot_scalar(const uint8_t *u, const int8_t *b, size_t stride);

/* Squared L2 between the left operand (u, na = its |a|^2) and row b. */
static inline float ann_i8_l2(const ann_i8_rows *r, ann_i8_dot_fn dot, const uint8_t *u,
                              int32_t na, uint64_t b)
{
    int32_t ub = dot(u, r->rows + b * r->stride, r->stride);
    return (float)(na + r->bias[b] - 2 * ub) * r->step2;
}

#endif
