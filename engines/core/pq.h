/*
 * pq.h: product quantization (Jegou, Douze, Schmid, TPAMI 2011) with
 * asymmetric distance computation (ADC), as DiskANN uses it to rank
 * candidates before reading full vectors.
 *
 * A vector of dim floats is split into m sub-vectors of dsub floats; each
 * is replaced by the index (one byte) of its nearest of 256 centroids, so a
 * code is m bytes.  m is the byte budget `pq_bytes`.
 *
 * Dimension rule: dsub = ceil(dim / m) and the vector is zero-padded to
 * dim_padded = m * dsub.  Zero padding changes neither squared L2 nor inner
 * products, so distances are exact on the padded space; when m divides dim
 * there is no padding.  m must satisfy 1 <= m <= dim, and the padding must
 * stay below one sub-vector (always true by construction).  Example: 768-d,
 * 96 bytes -> dsub 8, no padding; 100-d, 32 bytes -> dsub 4, 28 zero floats.
 *
 * Distance tables: for a query q, table[j*256 + c] is the contribution of
 * sub-quantizer j choosing centroid c:
 *     l2:     |q_j - c|^2
 *     ip:     -<q_j, c>
 *     cosine: |q_j - c|^2 / 2
 * so that ADC(q, code) = sum_j table[j*256 + code[j]] is, with x^ =
 * decode(code), |q - x^|^2 for l2, -<q, x^> for ip and |q - x^|^2 / 2 for
 * cosine.  For unit q and unit x the cosine form equals the cosine distance
 * 1 - <q, x>; for a decoded x^ = x + e (|e| > 0, |x^| != 1) the two differ:
 *     1 - <q, x^>    = (1 - <q, x>) - <q, e>
 *     |q - x^|^2 / 2 = (1 - <q, x>) + <x - q, e> + |e|^2 / 2
 * The error of the first is driven by |q| = 1, of the second by
 * |x - q|, which is small (about 0.47 on Cohere-like data, whose median
 * nearest-neighbour cosine is 0.89) for exactly the
 * candidates a search must rank correctly.  Measured on generated 768-d
 * unit data (20,000 rows, 96-byte codes): ADC-alone recall@10 0.698 with
 * the L2 form, 0.559 with the inner-product form (test_pq); a
 * diskann-sector search at L 20, W 4 found 0.946 of the true top 10 with
 * it, 0.847 with the inner-product form, 0.947 with the same vectors
 * imported as l2.  The inner-product form was annlab's cosine table until
 * that was found (see also test_*_cosine_l2_parity).  So a
 * cosine codebook ranks by the L2 form and the halving keeps ADC on the
 * scale of the cosine distance.  ip has no such form (x is not unit) and
 * keeps -<q, x^>.
 *
 * Codebook file (`*.pqcb`), little-endian:
 *     0  char[8]  magic "ANNPQCB\0"
 *     8  u32      version (1)
 *    12  u32      dim
 *    16  u32      m (code bytes)
 *    20  u32      dsub
 *    24  u32      ksub (256)
 *    28  u32      metric (ann_metric)
 *    32  u64      seed used for training
 *    40  u64      training rows
 *    48  f32[m*256*dsub] centroids, sub-quantizer major
 *   end  u32      crc32 (zlib) of every byte before it
 * Version history: 1 (initial).
 */
#ifndef ANNLAB_CORE_PQ_H
#define ANNLAB_CORE_PQ_H

#include "engines/core/vecsrc.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PQ_KSUB 256
#define PQ_FILE_VERSION 1u
/* The codebook header's fields (the diagram above; magic, version and the
 * crc trailer are its binio framing, engines/core/binio.h). */
#define PQ_HEADER_BYTES 48
#define PQ_OFF_DIM 12
#define PQ_OFF_M 16
#define PQ_OFF_DSUB 20
#define PQ_OFF_KSUB 24
#define PQ_OFF_METRIC 28
#define PQ_OFF_SEED 32
#define PQ_OFF_TRAIN_ROWS 40

typedef struct pq_params {
    uint32_t pq_bytes;          /* m: code bytes per vector, 1..dim (default dim/8, >= 1) */
    uint64_t sample_max_rows;   /* training sample cap in rows (default 200000) */
    uint64_t sample_max_bytes;  /* training sample cap in float32 bytes (default 128 MiB) */
    uint32_t iters;             /* k-means iterations per sub-quantizer (default 12) */
    uint64_t seed;              /* sample and k-means seed (default 1) */
    int threads;                /* <= 0: all cores (default 0) */
} pq_params;

/* Defaults for data of dimension dim (pq_bytes = pq_default_bytes(dim)). */
void pq_params_default(pq_params *p, uint32_t dim);

/* The default byte budget: dim / 8 rounded up, at least 1 (768 -> 96). */
uint32_t pq_default_bytes(uint32_t dim);

/* Rows the training sample takes for n rows of dim: min(n, caps). */
uint64_t pq_sample_rows(const pq_params *p, uint64_t n, uint32_t dim);

typedef struct pq_codebook {
    uint32_t dim;        /* input dimension */
    uint32_t m;          /* sub-quantizers = code bytes */
    uint32_t dsub;       /* floats per sub-vector */
    uint32_t dim_padded; /* m * dsub >= dim */
    ann_metric metric;
    uint64_t seed;       /* training seed (recorded in the file) */
    uint64_t n_train;    /* training rows */
    float *centroids;    /* m * 256 * dsub floats: sub-quantizer j, centroid c at
                            centroids[(j*256 + c) * dsub] */
    float *centroids_t;  /* the same transposed per sub-quantizer, for the
                            table kernels: coordinate d of centroid c of j at
                            centroids_t[(j*dsub + d) * 256 + c]; filled by
                            pq_train and pq_codebook_load */
} pq_codebook;

/*
 * Train a codebook on a seeded sample of src (pq_sample_rows rows, drawn
 * without replacement; the same seed gives the same sample and the same
 * codebook, whatever the thread count).  Sub-quantizers are trained in
 * parallel on `threads` threads.  *out is owned by the caller
 * (pq_codebook_destroy).
 * With fewer than 256 training rows a sub-quantizer trains min(rows, 256)
 * centroids and repeats the last one (codes never use the repeats).
 * Errors: ANN_EPARAM (pq_bytes 0 or > dim, empty source), read errors of
 * src, -ENOMEM.
 */
int pq_train(const ann_vecsrc *src, const pq_params *p, pq_codebook **out);

/*
 * Read pq_train's training sample of src into sample (pq_sample_rows(p,
 * src->n, src->dim) rows of src->dim floats, caller-allocated): the rows
 * chosen by p->seed, in ascending row order.  pq_train trains on exactly
 * these rows.  Errors: read errors of src, -ENOMEM.
 */
int pq_sample_read(const ann_vecsrc *src, const pq_params *p, float *sample);

/* Free a codebook (NULL is fine). */
void pq_codebook_destroy(pq_codebook *cb);

/*
 * Encode n rows of x (n * cb->dim floats) into codes (n * cb->m bytes,
 * caller-allocated).  threads <= 0: all cores.  Thread-safe on a shared
 * codebook.  Errors: -ENOMEM.
 */
int pq_encode(const pq_codebook *cb, const float *x, uint64_t n, int threads, uint8_t *codes);

/*
 * Encode one vector (cb->dim floats) into code (cb->m bytes) on the calling
 * thread, for live inserts: pq_encode's batch machinery (worker setup,
 * centroid norms, one small matrix product per sub-quantizer) costs about
 * 100 us for a single row, this about 15 at 768-d / 96 bytes with AVX-512
 * (38 scalar), bound by reading the 786 KB of centroids.  The same nearest
 * centroid per sub-quantizer, computed as sum (x - c)^2 rather than
 * |c|^2 - 2<x, c>, so
 * an exact near-tie may round to the other centroid (tested: both then lie
 * within 1e-4 relative of each other).  Allocates nothing; thread-safe.
 * Falls back to pq_encode for a codebook without centroids_t.  The loop
 * uses the distance kernels' SIMD choice (AVX-512: 256 centroids in 16
 * registers; ANNLAB_SIMD applies).
 */
int pq_encode_one(const pq_codebook *cb, const float *x, uint8_t *code);

/* pq_encode_one with a named variant ("scalar", "avx2", "avx512") for tests
 * and benches: ANN_EUNSUPPORTED when this build or CPU lacks it. */
int pq_encode_one_variant(const char *variant, const pq_codebook *cb, const float *x,
                          uint8_t *code);

/*
 * Encode every row of src in chunks into codes (src->n * cb->m bytes,
 * caller-allocated).  Errors: ANN_EPARAM (dimension mismatch), read errors
 * of src, -ENOMEM.
 */
int pq_encode_vecsrc(const pq_codebook *cb, const ann_vecsrc *src, int threads, uint8_t *codes);

/* Decode one code (cb->m bytes) into out (cb->dim floats; padding dropped). */
void pq_decode(const pq_codebook *cb, const uint8_t *code, float *out);

/* Floats in one query's distance table: m * 256. */
static inline size_t pq_table_floats(const pq_codebook *cb)
{
    return (size_t)cb->m * PQ_KSUB;
}

/*
 * Fill table (pq_table_floats(cb) floats, caller-owned, e.g. in a search
 * context) for query (cb->dim floats) under cb->metric; see the header
 * comment.  Allocates nothing.  Thread-safe.
 */
void pq_table_compute(const pq_codebook *cb, const float *query, float *table);

/*
 * Fill table (pq_table_floats(cb) floats, caller-owned) with the
 * inner-product form whatever cb->metric says: table[j*256 + c] = -<q_j, c>,
 * so ADC(q, code) = -<q, decode(code)>.  For callers that assemble another
 * distance from it and terms stored beside the codes, as ivfpq-record does
 * with residual codes (|q - c - r'|^2 = |q - c|^2 + 2 <c, r'> + |r'|^2
 * - 2 <q, r'>: only the last term depends on both the query and the code).
 * query is cb->dim floats.  Allocates nothing.  Thread-safe.
 */
void pq_table_ip(const pq_codebook *cb, const float *query, float *table);

/*
 * 1 when every entry of pq_table_compute's table for cb is >= 0: the L2 and
 * cosine forms (sums of squares), not the inner-product form.
 */
static inline int pq_table_nonneg(const pq_codebook *cb)
{
    return cb->metric == ANN_METRIC_L2 || cb->metric == ANN_METRIC_COSINE;
}

/* The smallest float above x, for 0 <= x < +inf. */
static inline float pq_float_up(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u++;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The bounded sums below check their bound after every 16 subspaces. */
#define PQ_BOUND_STEP 16u

/* Floats in a floor (pq_table_floor) for m subspaces. */
static inline uint32_t pq_floor_len(uint32_t m)
{
    return m + 1;
}

/*
 * For a table with entries >= 0 (pq_table_nonneg): floor[j] (j <= m) is
 * the sum over subspaces j .. m-1 of the subspace's smallest entry, what
 * those subspaces add to any code's distance at least (floor[m] = 0).
 * floor holds pq_floor_len(m) floats.  Allocates nothing.
 */
void pq_table_floor(const float *table, uint32_t m, float *floor);

/* Each subspace's smallest entry into least[j] and, most not NULL, its
 * largest into most[j] (m floats each).  Allocates nothing. */
void pq_table_extremes(const float *table, uint32_t m, float *least, float *most);

/*
 * The margin of a floor test on m subspaces.  A floor lets a code be
 * dropped while its partial sum is still below bound: when the partial sum
 * plus the floor of the subspaces left is above bound.  Both are rounded
 * sums, and the full sum is rounded in another order, so the test asks for
 * bound * (1 + (m + 8) * 2^-20).  Rounding (2^-24 an operation) moves the
 * sums compared by less than (1.25m + 5) * 2^-24 of the full sum, under a
 * twelfth of that margin, so a code dropped by a floor test is above bound
 * in full.
 */
static inline float pq_floor_margin(float bound, uint32_t m)
{
    return bound * (1.0f + (float)(m + 8) * 0x1p-20f);
}

/*
 * ADC distance of one code whose byte j is at code[j * stride] (stride 1:
 * a code's m bytes; PQ_LB_LANES: a lane of a transposed block, pq_lb.h),
 * subspace j summed into accumulator j % 4, with early abandoning.  After
 * each 16 subspaces the partial sum is checked:
 * when it is above bound, or (floor not NULL) when it plus the floor of the
 * subspaces not yet summed is above pq_floor_margin(bound, m), the code is
 * dropped and a value above bound, not above its full sum, is returned.
 * Otherwise the full sum, which pq_adc_distance (bound +inf) returns too,
 * bit for bit.  For a finite bound the table's entries must all be >= 0
 * (pq_table_nonneg): adding a value >= 0 never makes an IEEE sum smaller,
 * so a partial sum above bound is above it in full as well.  A caller that
 * drops codes above bound (ann_candlist_insert against ann_candlist_bound)
 * drops the same codes, only sooner.
 */
static inline float pq_adc_distance_floored_strided(const float *table, const uint8_t *code,
                                                    size_t stride, uint32_t m, float bound,
                                                    const float *floor)
{
    const float hi = floor ? pq_floor_margin(bound, m) : bound;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    uint32_t j = 0;
    for (; j + PQ_BOUND_STEP <= m; j += PQ_BOUND_STEP) {
        const float *t = table + (size_t)j * PQ_KSUB;
        const uint8_t *c = code + (size_t)j * stride;
        for (uint32_t g = 0; g < PQ_BOUND_STEP; g += 4) {
            s0 += t[(g + 0) * PQ_KSUB + c[(g + 0) * stride]];
            s1 += t[(g + 1) * PQ_KSUB + c[(g + 1) * stride]];
            s2 += t[(g + 2) * PQ_KSUB + c[(g + 2) * stride]];
            s3 += t[(g + 3) * PQ_KSUB + c[(g + 3) * stride]];
        }
        float partial = (s0 + s1) + (s2 + s3);
        float least = floor ? partial + floor[j + PQ_BOUND_STEP] : partial;
        if (least > hi)
            return partial > bound ? partial : pq_float_up(bound);
    }
    for (; j + 4 <= m; j += 4) {
        s0 += table[(size_t)(j + 0) * PQ_KSUB + code[(size_t)(j + 0) * stride]];
        s1 += table[(size_t)(j + 1) * PQ_KSUB + code[(size_t)(j + 1) * stride]];
        s2 += table[(size_t)(j + 2) * PQ_KSUB + code[(size_t)(j + 2) * stride]];
        s3 += table[(size_t)(j + 3) * PQ_KSUB + code[(size_t)(j + 3) * stride]];
    }
    for (; j < m; j++)
        s0 += table[(size_t)j * PQ_KSUB + code[(size_t)j * stride]];
    return (s0 + s1) + (s2 + s3);
}

/* The code's bytes one after another (stride 1). */
static inline float pq_adc_distance_floored(const float *table, const uint8_t *code, uint32_t m,
                                            float bound, const float *floor)
{
    return pq_adc_distance_floored_strided(table, code, 1, m, bound, floor);
}

/* pq_adc_distance_floored without a floor: dropped once a partial sum
 * passes bound. */
static inline float pq_adc_distance_bounded(const float *table, const uint8_t *code, uint32_t m,
                                            float bound)
{
    return pq_adc_distance_floored(table, code, m, bound, NULL);
}

/* ADC distance of one code: sum of m table lookups, four accumulators
 * (subspace j into accumulator j % 4); never abandoned. */
static inline float pq_adc_distance(const float *table, const uint8_t *code, uint32_t m)
{
    return pq_adc_distance_floored(table, code, m, __builtin_inff(), NULL);
}

/*
 * Batched scan: out[i] = ADC distance of codes[i*m .. i*m+m) for i < n.
 * Several codes are summed at once with independent accumulators.
 */
void pq_adc_scan(const float *table, uint32_t m, const uint8_t *codes, uint64_t n, float *out);

/*
 * Gathered scan for graph search: out[i] = ADC distance of the code of node
 * ids[i] in a contiguous code array (node v at codes + v*m).
 */
void pq_adc_gather(const float *table, uint32_t m, const uint8_t *codes, const uint32_t *ids,
                   uint32_t count, float *out);

/*
 * Write the codebook to path atomically (path.tmp.<pid>, fsync, rename).
 * Errors: -errno naming the file.
 */
int pq_codebook_save(const pq_codebook *cb, const char *path);

/*
 * Read a codebook file.  Checks magic (ANN_EFORMAT), version (ANN_EVERSION),
 * header fields and size (ANN_EFORMAT), crc32 and non-finite centroids
 * (ANN_ECORRUPT), each message naming the file and field.  *out owned by
 * the caller.
 */
int pq_codebook_load(const char *path, pq_codebook **out);

/*
 * A codebook from centroids trained elsewhere (m * 256 * dsub floats in
 * the layout of pq_codebook.centroids, dsub = ceil(dim / m), padding
 * coordinates zero), e.g. another tool's PQ (msdiskann.h).  seed and
 * n_train are recorded as given.  Errors: ANN_EPARAM (dim or m zero,
 * m > dim), ANN_EDATA (a non-finite centroid), -ENOMEM.
 */
int pq_codebook_make(uint32_t dim, uint32_t m, ann_metric metric, uint64_t seed,
                     uint64_t n_train, const float *centroids, pq_codebook **out);

#endif
