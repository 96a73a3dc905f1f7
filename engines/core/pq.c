/*
 * pq.c: product quantization (Jegou, Douze, Schmid, "Product Quantization
 * for Nearest Neighbor Search", TPAMI 2011): training on a seeded sample,
 * batch encoding, decoding, asymmetric distance tables and code scans.
 *
 * Each of the m sub-quantizers is a 256-centroid k-means (kmeans.c) on its
 * slice of the sample; slices are trained in parallel, one thread each,
 * with single-threaded BLAS.  Encoding runs row blocks in parallel, each
 * block through all m sub-quantizers (sgemm assignment).
 *
 * Departures: no rotation (OPQ) and no mean-centring before training (as
 * in the paper; Microsoft DiskANN subtracts the data centroid first, which
 * matters little once every slice has its own codebook).  The dimension is
 * zero-padded to a multiple of m rather than split into uneven chunks, so
 * every sub-quantizer has the same width (see pq.h).
 */
#include "engines/core/pq.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/kmeans.h"
#include "engines/core/limits.h"
#include "engines/core/parallel.h"
#include "engines/core/progress.h"
#include "engines/core/status.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PQ_MAGIC "ANNPQCB"

static const ann_binfmt pq_binfmt = {
    .magic = PQ_MAGIC,
    .version = PQ_FILE_VERSION,
    .header_bytes = PQ_HEADER_BYTES,
    .name = "PQ codebook",
};
#define PQ_ENCODE_BLOCK 1024

uint32_t pq_default_bytes(uint32_t dim)
{
    uint32_t b = (dim + 7) / 8;
    return b ? b : 1;
}

void pq_params_default(pq_params *p, uint32_t dim)
{
    *p = (pq_params){ .pq_bytes = pq_default_bytes(dim),
                      .sample_max_rows = 200000,
                      .sample_max_bytes = 128ull << 20,
                      .iters = 12,
                      .seed = 1,
                      .threads = 0 };
}

uint64_t pq_sample_rows(const pq_params *p, uint64_t n, uint32_t dim)
{
    uint64_t rows = n;
    if (p->sample_max_rows && rows > p->sample_max_rows)
        rows = p->sample_max_rows;
    if (p->sample_max_bytes && dim) {
        uint64_t by_bytes = p->sample_max_bytes / ((uint64_t)dim * sizeof(float));
        if (by_bytes < 1)
            by_bytes = 1;
        if (rows > by_bytes)
            rows = by_bytes;
    }
    return rows;
}

static uint64_t pq_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static pq_codebook *pq_alloc(uint32_t dim, uint32_t m, ann_metric metric)
{
    pq_codebook *cb = calloc(1, sizeof *cb);
    if (!cb)
        return NULL;
    cb->dim = dim;
    cb->m = m;
    cb->dsub = (dim + m - 1) / m;
    cb->dim_padded = cb->m * cb->dsub;
    cb->metric = metric;
    cb->centroids = calloc((size_t)m * PQ_KSUB * cb->dsub, sizeof(float));
    cb->centroids_t = calloc((size_t)m * PQ_KSUB * cb->dsub, sizeof(float));
    if (!cb->centroids || !cb->centroids_t) {
        free(cb->centroids);
        free(cb->centroids_t);
        free(cb);
        return NULL;
    }
    return cb;
}

void pq_codebook_destroy(pq_codebook *cb)
{
    if (!cb)
        return;
    free(cb->centroids);
    free(cb->centroids_t);
    free(cb);
}

/* Fill centroids_t from centroids (see pq.h). */
static void pq_transpose(pq_codebook *cb)
{
    const uint32_t dsub = cb->dsub;
    for (uint32_t j = 0; j < cb->m; j++)
        for (uint32_t c = 0; c < PQ_KSUB; c++)
            for (uint32_t d = 0; d < dsub; d++)
                cb->centroids_t[((size_t)j * dsub + d) * PQ_KSUB + c] =
                    cb->centroids[((size_t)j * PQ_KSUB + c) * dsub + d];
}

int pq_codebook_make(uint32_t dim, uint32_t m, ann_metric metric, uint64_t seed,
                     uint64_t n_train, const float *centroids, pq_codebook **out)
{
    *out = NULL;
    if (dim == 0 || m == 0 || m > dim)
        return ann_fail(ANN_EPARAM, "PQ codebook: %u sub-quantizers over %u dimensions", m, dim);
    pq_codebook *cb = pq_alloc(dim, m, metric);
    if (!cb)
        return ann_fail(-ENOMEM, "PQ codebook: no memory");
    size_t count = (size_t)m * PQ_KSUB * cb->dsub;
    for (size_t i = 0; i < count; i++)
        if (!isfinite(centroids[i])) {
            pq_codebook_destroy(cb);
            return ann_fail(ANN_EDATA, "PQ codebook: centroid value %zu is not finite", i);
        }
    memcpy(cb->centroids, centroids, count * sizeof(float));
    cb->seed = seed;
    cb->n_train = n_train;
    pq_transpose(cb);
    *out = cb;
    return 0;
}

/* Copy slice j of rows [0, rows) of x (dim wide) into sub (rows x dsub), zero-padded. */
static void pq_slice(const pq_codebook *cb, const float *x, uint64_t rows, uint32_t j, float *sub)
{
    uint32_t d0 = j * cb->dsub;
    uint32_t w = d0 >= cb->dim ? 0 : (cb->dim - d0 < cb->dsub ? cb->dim - d0 : cb->dsub);
    for (uint64_t i = 0; i < rows; i++) {
        float *o = sub + i * cb->dsub;
        if (w)
            memcpy(o, x + i * cb->dim + d0, w * sizeof(float));
        for (uint32_t d = w; d < cb->dsub; d++)
            o[d] = 0.0f;
    }
}

typedef struct train_job {
    pq_codebook *cb;
    const float *sample;
    uint64_t rows;
    uint32_t iters;
    uint64_t seed;
    float *sub;        /* per worker: rows * dsub */
    ann_progress *prog; /* subspaces trained */
} train_job;

static int train_run(void *arg, uint64_t b, uint64_t e, int worker)
{
    const train_job *t = arg;
    pq_codebook *cb = t->cb;
    float *sub = t->sub + (size_t)worker * t->rows * cb->dsub;
    uint32_t k = t->rows < PQ_KSUB ? (uint32_t)t->rows : PQ_KSUB;
    for (uint64_t j = b; j < e; j++) {
        pq_slice(cb, t->sample, t->rows, (uint32_t)j, sub);
        kmeans_params kp;
        kmeans_params_default(&kp, k);
        kp.iters = t->iters;
        kp.threads = 1;
        kp.seed = t->seed * 0x100000001b3ull + j;
        float *c = cb->centroids + j * PQ_KSUB * cb->dsub;
        int rc = kmeans_train(sub, t->rows, cb->dsub, &kp, c, NULL);
        if (rc)
            return rc;
        for (uint32_t r = k; r < PQ_KSUB; r++)
            memcpy(c + (size_t)r * cb->dsub, c + (size_t)(k - 1) * cb->dsub,
                   cb->dsub * sizeof(float));
        ann_progress_add(t->prog, 1);
    }
    return 0;
}

int pq_sample_read(const ann_vecsrc *src, const pq_params *p, float *sample)
{
    const uint32_t dim = src->dim;
    const uint64_t rows = pq_sample_rows(p, src->n, dim);
    if (rows == 0)
        return 0;
    uint64_t *pick = malloc(src->n * sizeof *pick);
    if (!pick)
        return ann_fail(-ENOMEM, "pq: no memory for a %llu-row permutation",
                        (unsigned long long)src->n);
    /* seeded sample without replacement, read in ascending row order */
    uint64_t rng = p->seed ^ 0x7071747261696eull; /* "pqtrain" */
    for (uint64_t i = 0; i < src->n; i++)
        pick[i] = i;
    if (rows < src->n) {
        for (uint64_t i = 0; i < rows; i++) {
            uint64_t r = i + pq_rand(&rng) % (src->n - i);
            uint64_t t = pick[i];
            pick[i] = pick[r];
            pick[r] = t;
        }
        qsort(pick, rows, sizeof *pick, cmp_u64);
    }
    int rc = 0;
    for (uint64_t i = 0; i < rows;) {
        uint64_t run = 1; /* read consecutive rows in one call */
        while (i + run < rows && pick[i + run] == pick[i] + run && run < 4096)
            run++;
        rc = ann_vecsrc_read(src, pick[i], run, sample + i * dim);
        if (rc)
            break;
        i += run;
    }
    free(pick);
    return rc;
}

int pq_train(const ann_vecsrc *src, const pq_params *p, pq_codebook **out)
{
    int rc = 0;
    pq_codebook *cb = NULL;
    float *sample = NULL, *sub = NULL;
    *out = NULL;
    const uint32_t dim = src->dim, m = p->pq_bytes;
    if (m == 0 || m > dim)
        return ann_fail(ANN_EPARAM, "pq_bytes: %u is out of range [1, %u] for dimension %u", m,
                        dim, dim);
    if (src->n == 0)
        return ann_fail(ANN_EPARAM, "pq: cannot train on an empty source (%s)", src->id);
    int threads = p->threads <= 0 ? ann_ncores() : p->threads;
    if ((uint32_t)threads > m)
        threads = (int)m;
    const uint64_t rows = pq_sample_rows(p, src->n, dim);

    cb = pq_alloc(dim, m, src->metric);
    sample = malloc(rows * dim * sizeof(float));
    if (!cb || !sample) {
        rc = ann_fail(-ENOMEM, "pq: no memory for a %llu x %u training sample",
                      (unsigned long long)rows, dim);
        goto out;
    }
    cb->seed = p->seed;
    cb->n_train = rows;
    sub = malloc((size_t)threads * rows * cb->dsub * sizeof(float));
    if (!sub) {
        rc = ann_fail(-ENOMEM, "pq: no memory for %d training slices", threads);
        goto out;
    }
    rc = pq_sample_read(src, p, sample);
    if (rc)
        goto out;

    ann_progress prog;
    char what[96];
    snprintf(what, sizeof what, "PQ codebook (%u subspaces, %llu training rows)", m,
             (unsigned long long)rows);
    ann_progress_begin(&prog, what, m, "subspaces");
    train_job tj = { cb, sample, rows, p->iters ? p->iters : 12, p->seed, sub, &prog };
    ann_blas_serial_begin();
    rc = ann_parallel_for(threads, m, 1, train_run, &tj);
    ann_blas_serial_end();
    ann_progress_end(&prog);
    if (rc)
        goto out;
    pq_transpose(cb);
    *out = cb;
    cb = NULL;
out:
    pq_codebook_destroy(cb);
    free(sample);
    free(sub);
    return rc;
}

typedef struct encode_job {
    const pq_codebook *cb;
    const float *x;
    uint64_t n;
    uint8_t *codes;
    const float *cnorm; /* m * 256 */
    float *scratch;     /* per worker: scratch_floats + block*dsub + block (assign) */
    size_t scratch_per_worker;
    size_t score_floats;
    ann_progress *prog; /* rows encoded */
} encode_job;

static int encode_run(void *arg, uint64_t b, uint64_t e, int worker)
{
    const encode_job *j = arg;
    const pq_codebook *cb = j->cb;
    float *scores = j->scratch + (size_t)worker * j->scratch_per_worker;
    float *sub = scores + j->score_floats;
    uint32_t *assign = (uint32_t *)(sub + (size_t)PQ_ENCODE_BLOCK * cb->dsub);
    for (uint64_t blk = b; blk < e; blk++) {
        uint64_t r0 = blk * PQ_ENCODE_BLOCK;
        uint64_t rows = j->n - r0 < PQ_ENCODE_BLOCK ? j->n - r0 : PQ_ENCODE_BLOCK;
        const float *xb = j->x + r0 * cb->dim;
        for (uint32_t s = 0; s < cb->m; s++) {
            pq_slice(cb, xb, rows, s, sub);
            kmeans_assign_serial(sub, rows, cb->dsub,
                                 cb->centroids + (size_t)s * PQ_KSUB * cb->dsub,
                                 j->cnorm + (size_t)s * PQ_KSUB, PQ_KSUB, scores, assign, NULL);
            for (uint64_t i = 0; i < rows; i++)
                j->codes[(r0 + i) * cb->m + s] = (uint8_t)assign[i];
        }
        ann_progress_add(j->prog, rows);
    }
    return 0;
}

/* pq_encode, adding the rows encoded to prog (may be NULL). */
static int pq_encode_prog(const pq_codebook *cb, const float *x, uint64_t n, int threads,
                          uint8_t *codes, ann_progress *prog)
{
    int rc = 0;
    float *cnorm = NULL, *scratch = NULL;
    if (n == 0)
        return 0;
    if (threads <= 0)
        threads = ann_ncores();
    uint64_t nblocks = (n + PQ_ENCODE_BLOCK - 1) / PQ_ENCODE_BLOCK;
    if ((uint64_t)threads > nblocks)
        threads = (int)nblocks;
    size_t score_floats = kmeans_scratch_floats(PQ_KSUB);
    /* scores, one slice, and the assignment (uint32, same size as a float) */
    size_t per = score_floats + (size_t)PQ_ENCODE_BLOCK * cb->dsub + PQ_ENCODE_BLOCK;
    cnorm = malloc((size_t)cb->m * PQ_KSUB * sizeof *cnorm);
    scratch = malloc((size_t)threads * per * sizeof(float));
    if (!cnorm || !scratch) {
        rc = ann_fail(-ENOMEM, "pq encode: no memory for %d workers", threads);
        goto out;
    }
    for (uint32_t s = 0; s < cb->m; s++)
        kmeans_centroid_norms(cb->centroids + (size_t)s * PQ_KSUB * cb->dsub, PQ_KSUB, cb->dsub,
                              cnorm + (size_t)s * PQ_KSUB);
    encode_job j = { cb, x, n, codes, cnorm, scratch, per, score_floats, prog };
    ann_blas_serial_begin();
    rc = ann_parallel_for(threads, nblocks, 1, encode_run, &j);
    ann_blas_serial_end();
out:
    free(cnorm);
    free(scratch);
    return rc;
}

int pq_encode(const pq_codebook *cb, const float *x, uint64_t n, int threads, uint8_t *codes)
{
    ann_progress prog;
    ann_progress_begin(&prog, "PQ codes", n, "vectors");
    int rc = pq_encode_prog(cb, x, n, threads, codes, &prog);
    ann_progress_end(&prog);
    return rc;
}

/* Coordinates of sub-quantizer s that the (unpadded) query has. */
static inline uint32_t pq_sub_width(const pq_codebook *cb, uint32_t s)
{
    uint32_t d0 = s * cb->dsub;
    return d0 >= cb->dim ? 0 : (cb->dim - d0 < cb->dsub ? cb->dim - d0 : cb->dsub);
}

/*
 * pq_encode_one's sub-quantizer loop: acc[c] = |x_s - centroid c|^2 over the
 * transposed centroids, and the first c with the least (ties go to the
 * lowest c, as in pq_encode's argmin).  Variants follow the distance
 * kernels' choice (ANNLAB_SIMD applies); the SIMD ones fuse the multiply and
 * add, so a near-tie may go the other way.
 */
typedef void (*encode_one_fn)(const pq_codebook *cb, const float *x, uint8_t *code);

static void encode_one_scalar(const pq_codebook *cb, const float *x, uint8_t *code)
{
    float acc[PQ_KSUB];
    for (uint32_t s = 0; s < cb->m; s++) {
        uint32_t d0 = s * cb->dsub, w = pq_sub_width(cb, s);
        const float *ct = cb->centroids_t + (size_t)s * cb->dsub * PQ_KSUB;
        for (uint32_t c = 0; c < PQ_KSUB; c++)
            acc[c] = 0.0f;
        for (uint32_t d = 0; d < cb->dsub; d++) {
            const float xv = d < w ? x[d0 + d] : 0.0f; /* padding: as pq_slice */
            const float *row = ct + (size_t)d * PQ_KSUB;
            for (uint32_t c = 0; c < PQ_KSUB; c++) {
                float t = xv - row[c];
                acc[c] += t * t;
            }
        }
        uint32_t best = 0;
        for (uint32_t c = 1; c < PQ_KSUB; c++)
            if (acc[c] < acc[best])
                best = c;
        code[s] = (uint8_t)best;
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

/* 256 centroids in 16 registers of 16 */
__attribute__((target("avx512f"))) static void encode_one_avx512(const pq_codebook *cb,
                                                                 const float *x, uint8_t *code)
{
    for (uint32_t s = 0; s < cb->m; s++) {
        uint32_t d0 = s * cb->dsub, w = pq_sub_width(cb, s);
        const float *ct = cb->centroids_t + (size_t)s * cb->dsub * PQ_KSUB;
        __m512 acc[PQ_KSUB / 16];
        for (int j = 0; j < PQ_KSUB / 16; j++)
            acc[j] = _mm512_setzero_ps();
        for (uint32_t d = 0; d < cb->dsub; d++) {
            const __m512 xv = _mm512_set1_ps(d < w ? x[d0 + d] : 0.0f);
            const float *row = ct + (size_t)d * PQ_KSUB;
            for (int j = 0; j < PQ_KSUB / 16; j++) {
                __m512 t = _mm512_sub_ps(xv, _mm512_loadu_ps(row + 16 * j));
                acc[j] = _mm512_fmadd_ps(t, t, acc[j]);
            }
        }
        /* per lane the first least (strict <, c rising), then across lanes */
        __m512 vb = acc[0];
        __m512i vi = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        __m512i idx = vi;
        const __m512i step = _mm512_set1_epi32(16);
        for (int j = 1; j < PQ_KSUB / 16; j++) {
            idx = _mm512_add_epi32(idx, step);
            __mmask16 lt = _mm512_cmp_ps_mask(acc[j], vb, _CMP_LT_OQ);
            vb = _mm512_mask_mov_ps(vb, lt, acc[j]);
            vi = _mm512_mask_mov_epi32(vi, lt, idx);
        }
        float lanes[16];
        uint32_t ids[16];
        _mm512_storeu_ps(lanes, vb);
        _mm512_storeu_si512(ids, vi);
        float b = lanes[0];
        uint32_t bi = ids[0];
        for (int l = 1; l < 16; l++)
            if (lanes[l] < b || (lanes[l] == b && ids[l] < bi)) {
                b = lanes[l];
                bi = ids[l];
            }
        code[s] = (uint8_t)bi;
    }
}

/* 256 centroids as four quarters of 64, in 8 registers of 8 each */
__attribute__((target("avx2,fma"))) static void encode_one_avx2(const pq_codebook *cb,
                                                                const float *x, uint8_t *code)
{
    for (uint32_t s = 0; s < cb->m; s++) {
        uint32_t d0 = s * cb->dsub, w = pq_sub_width(cb, s);
        const float *ct = cb->centroids_t + (size_t)s * cb->dsub * PQ_KSUB;
        float b = 0.0f;
        uint32_t bi = 0;
        for (uint32_t q = 0; q < PQ_KSUB; q += 64) {
            __m256 acc[8];
            for (int j = 0; j < 8; j++)
                acc[j] = _mm256_setzero_ps();
            for (uint32_t d = 0; d < cb->dsub; d++) {
                const __m256 xv = _mm256_set1_ps(d < w ? x[d0 + d] : 0.0f);
                const float *row = ct + (size_t)d * PQ_KSUB + q;
                for (int j = 0; j < 8; j++) {
                    __m256 t = _mm256_sub_ps(xv, _mm256_loadu_ps(row + 8 * j));
                    acc[j] = _mm256_fmadd_ps(t, t, acc[j]);
                }
            }
            float v[64];
            for (int j = 0; j < 8; j++)
                _mm256_storeu_ps(v + 8 * j, acc[j]);
            for (uint32_t c = 0; c < 64; c++)
                if ((q == 0 && c == 0) || v[c] < b) {
                    b = v[c];
                    bi = q + c;
                }
        }
        code[s] = (uint8_t)bi;
    }
}
#endif

static encode_one_fn encode_one_active = encode_one_scalar;
static pthread_once_t encode_one_once = PTHREAD_ONCE_INIT;

static void encode_one_choose(void)
{
#if defined(__x86_64__)
    const char *name = ann_dist_active()->name;
    if (!strcmp(name, "avx512"))
        encode_one_active = encode_one_avx512;
    else if (!strcmp(name, "avx2"))
        encode_one_active = encode_one_avx2;
#endif
}

int pq_encode_one(const pq_codebook *cb, const float *x, uint8_t *code)
{
    if (!cb->centroids_t)
        return pq_encode(cb, x, 1, 1, code);
    pthread_once(&encode_one_once, encode_one_choose);
    encode_one_active(cb, x, code);
    return 0;
}

int pq_encode_one_variant(const char *variant, const pq_codebook *cb, const float *x,
                          uint8_t *code)
{
    encode_one_fn fn = NULL;
    if (!strcmp(variant, "scalar"))
        fn = encode_one_scalar;
#if defined(__x86_64__)
    else if (!strcmp(variant, "avx2") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma"))
        fn = encode_one_avx2;
    else if (!strcmp(variant, "avx512") && __builtin_cpu_supports("avx512f"))
        fn = encode_one_avx512;
#endif
    if (!fn)
        return ann_fail(ANN_EUNSUPPORTED, "pq encode: kernel variant %s unknown or unsupported "
                        "here", variant);
    if (!cb->centroids_t)
        return ann_fail(ANN_EPARAM, "pq encode: the codebook has no transposed centroids");
    fn(cb, x, code);
    return 0;
}

int pq_encode_vecsrc(const pq_codebook *cb, const ann_vecsrc *src, int threads, uint8_t *codes)
{
    int rc = 0;
    float *buf = NULL;
    if (src->dim != cb->dim)
        return ann_fail(ANN_EPARAM, "pq encode: source %s has dimension %u, codebook %u",
                        src->id, src->dim, cb->dim);
    const uint64_t chunk = 65536;
    uint64_t rows = src->n < chunk ? src->n : chunk;
    buf = malloc((rows ? rows : 1) * src->dim * sizeof(float));
    if (!buf)
        return ann_fail(-ENOMEM, "pq encode: no memory for %llu rows", (unsigned long long)rows);
    ann_progress prog;
    ann_progress_begin(&prog, "PQ codes", src->n, "vectors");
    for (uint64_t r0 = 0; r0 < src->n; r0 += chunk) {
        uint64_t c = src->n - r0 < chunk ? src->n - r0 : chunk;
        rc = ann_vecsrc_read(src, r0, c, buf);
        if (rc)
            goto out;
        rc = pq_encode_prog(cb, buf, c, threads, codes + r0 * cb->m, &prog);
        if (rc)
            goto out;
    }
out:
    ann_progress_end(&prog);
    free(buf);
    return rc;
}

void pq_decode(const pq_codebook *cb, const uint8_t *code, float *out)
{
    for (uint32_t s = 0; s < cb->m; s++) {
        const float *c = cb->centroids + ((size_t)s * PQ_KSUB + code[s]) * cb->dsub;
        uint32_t d0 = s * cb->dsub;
        for (uint32_t d = 0; d < cb->dsub && d0 + d < cb->dim; d++)
            out[d0 + d] = c[d];
    }
}

/*
 * One sub-table from the transposed centroids ct (dsub rows of 256): the
 * 256 centroids are the vector lanes, so each coordinate is one broadcast
 * and a few fused multiply-adds; compiled for AVX-512, AVX2 and the
 * baseline, the best one picked at load (ifunc).  Coordinates [w, dsub) are
 * the zero padding of the query (pq.h).
 *   l2:  t[c] = scale * sum_d (q[d] - ct[d][c])^2
 *   ip:  t[c] = -sum_d q[d] * ct[d][c]
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PQ_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PQ_CLONES
#endif

PQ_CLONES static void sub_table_l2(const float *restrict q, const float *restrict ct, uint32_t w,
                                   uint32_t dsub, float scale, float *restrict t)
{
    for (uint32_t c = 0; c < PQ_KSUB; c++)
        t[c] = 0.0f;
    for (uint32_t d = 0; d < w; d++) {
        const float qd = q[d], *row = ct + (size_t)d * PQ_KSUB;
        for (uint32_t c = 0; c < PQ_KSUB; c++) {
            float diff = qd - row[c];
            t[c] += diff * diff;
        }
    }
    for (uint32_t d = w; d < dsub; d++) {
        const float *row = ct + (size_t)d * PQ_KSUB;
        for (uint32_t c = 0; c < PQ_KSUB; c++)
            t[c] += row[c] * row[c];
    }
    for (uint32_t c = 0; c < PQ_KSUB; c++)
        t[c] *= scale;
}

PQ_CLONES static void sub_table_ip(const float *restrict q, const float *restrict ct, uint32_t w,
                                   float *restrict t)
{
    for (uint32_t c = 0; c < PQ_KSUB; c++)
        t[c] = 0.0f;
    for (uint32_t d = 0; d < w; d++) {
        const float qd = q[d], *row = ct + (size_t)d * PQ_KSUB;
        for (uint32_t c = 0; c < PQ_KSUB; c++)
            t[c] -= qd * row[c];
    }
}

void pq_table_compute(const pq_codebook *cb, const float *query, float *table)
{
    if (cb->metric != ANN_METRIC_L2 && cb->metric != ANN_METRIC_COSINE) {
        pq_table_ip(cb, query, table); /* ip: -<q_j, c> */
        return;
    }
    /* cosine ranks by the L2 form, halved (see pq.h: why not 1 - <q, x^>) */
    const float scale = cb->metric == ANN_METRIC_COSINE ? 0.5f : 1.0f;
    const size_t sub = (size_t)PQ_KSUB * cb->dsub;
    for (uint32_t s = 0; s < cb->m; s++)
        sub_table_l2(query + (size_t)s * cb->dsub, cb->centroids_t + s * sub, pq_sub_width(cb, s),
                     cb->dsub, scale, table + (size_t)s * PQ_KSUB);
}

void pq_table_extremes(const float *table, uint32_t m, float *least, float *most)
{
    for (uint32_t j = 0; j < m; j++) {
        /* eight running extremes, so the loop vectorises */
        const float *t = table + (size_t)j * PQ_KSUB;
        float lo[8], hi[8];
        for (uint32_t k = 0; k < 8; k++)
            lo[k] = hi[k] = t[k];
        for (uint32_t c = 8; c < PQ_KSUB; c += 8)
            for (uint32_t k = 0; k < 8; k++) {
                lo[k] = t[c + k] < lo[k] ? t[c + k] : lo[k];
                hi[k] = t[c + k] > hi[k] ? t[c + k] : hi[k];
            }
        for (uint32_t k = 1; k < 8; k++) {
            lo[0] = lo[k] < lo[0] ? lo[k] : lo[0];
            hi[0] = hi[k] > hi[0] ? hi[k] : hi[0];
        }
        least[j] = lo[0];
        if (most)
            most[j] = hi[0];
    }
}

void pq_table_floor(const float *table, uint32_t m, float *floor)
{
    pq_table_extremes(table, m, floor, NULL); /* floor[j]: subspace j's least, then summed */
    floor[m] = 0;
    for (uint32_t j = m; j-- > 0;)
        floor[j] = floor[j + 1] + floor[j];
}

void pq_table_ip(const pq_codebook *cb, const float *query, float *table)
{
    const size_t sub = (size_t)PQ_KSUB * cb->dsub;
    for (uint32_t s = 0; s < cb->m; s++)
        sub_table_ip(query + (size_t)s * cb->dsub, cb->centroids_t + s * sub, pq_sub_width(cb, s),
                     table + (size_t)s * PQ_KSUB);
}

/* Four ADC sums at once: four independent accumulators hide the latency of
 * the table loads, which one running sum would serialise. */
static inline void pq_adc4(const float *table, uint32_t m, const uint8_t *c0, const uint8_t *c1,
                           const uint8_t *c2, const uint8_t *c3, float *out)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (uint32_t j = 0; j < m; j++) {
        const float *t = table + (size_t)j * PQ_KSUB;
        s0 += t[c0[j]];
        s1 += t[c1[j]];
        s2 += t[c2[j]];
        s3 += t[c3[j]];
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}

void pq_adc_scan(const float *table, uint32_t m, const uint8_t *codes, uint64_t n, float *out)
{
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint8_t *c0 = codes + i * m;
        pq_adc4(table, m, c0, c0 + m, c0 + 2 * (size_t)m, c0 + 3 * (size_t)m, out + i);
    }
    for (; i < n; i++)
        out[i] = pq_adc_distance(table, codes + i * m, m);
}

void pq_adc_gather(const float *table, uint32_t m, const uint8_t *codes, const uint32_t *ids,
                   uint32_t count, float *out)
{
    /* the codes of a graph node's neighbours are scattered over the code
     * array (cache misses, not table loads, bound this loop): fetch the
     * next group's lines while this group is summed */
    uint32_t i = 0;
    for (; i + 4 <= count; i += 4) {
        for (uint32_t p = i + 4; p < i + 8 && p < count; p++) {
            const uint8_t *c = codes + (size_t)ids[p] * m;
            __builtin_prefetch(c);
            __builtin_prefetch(c + m - 1);
        }
        pq_adc4(table, m, codes + (size_t)ids[i] * m, codes + (size_t)ids[i + 1] * m,
                codes + (size_t)ids[i + 2] * m, codes + (size_t)ids[i + 3] * m, out + i);
    }
    for (; i < count; i++)
        out[i] = pq_adc_distance(table, codes + (size_t)ids[i] * m, m);
}

int pq_codebook_save(const pq_codebook *cb, const char *path)
{
    int rc = 0;
    ann_awriter w;
    uint8_t h[PQ_HEADER_BYTES] = { 0 };
    ann_put_u32(h + PQ_OFF_DIM, cb->dim);
    ann_put_u32(h + PQ_OFF_M, cb->m);
    ann_put_u32(h + PQ_OFF_DSUB, cb->dsub);
    ann_put_u32(h + PQ_OFF_KSUB, PQ_KSUB);
    ann_put_u32(h + PQ_OFF_METRIC, (uint32_t)cb->metric);
    ann_put_u64(h + PQ_OFF_SEED, cb->seed);
    ann_put_u64(h + PQ_OFF_TRAIN_ROWS, cb->n_train);
    rc = ann_awriter_open_header(&w, path, &pq_binfmt, h);
    if (rc)
        return rc;
    rc = ann_awriter_write_f32s(&w, cb->centroids, (size_t)cb->m * PQ_KSUB * cb->dsub);
    if (rc)
        goto out;
    rc = ann_awriter_finish(&w);
out:
    if (rc)
        ann_awriter_abort(&w);
    return rc;
}

int pq_codebook_load(const char *path, pq_codebook **out)
{
    int rc = 0;
    ann_rfile r;
    pq_codebook *cb = NULL;
    uint8_t h[PQ_HEADER_BYTES];
    *out = NULL;
    rc = ann_rfile_open_header(&r, path, &pq_binfmt, h);
    if (rc)
        goto out;
    uint32_t dim = ann_get_u32(h + PQ_OFF_DIM), m = ann_get_u32(h + PQ_OFF_M);
    uint32_t dsub = ann_get_u32(h + PQ_OFF_DSUB), ksub = ann_get_u32(h + PQ_OFF_KSUB);
    uint32_t metric = ann_get_u32(h + PQ_OFF_METRIC);
    if (dim == 0 || dim > ANN_MAX_DIM) {
        rc = ann_fail(ANN_EFORMAT, "%s: field dim = %u out of range", path, dim);
        goto out;
    }
    if (m == 0 || m > dim) {
        rc = ann_fail(ANN_EFORMAT, "%s: field m = %u out of range [1, dim %u]", path, m, dim);
        goto out;
    }
    if (dsub != (dim + m - 1) / m) {
        rc = ann_fail(ANN_EFORMAT, "%s: field dsub = %u, expected %u for dim %u and m %u", path,
                      dsub, (dim + m - 1) / m, dim, m);
        goto out;
    }
    if (ksub != PQ_KSUB) {
        rc = ann_fail(ANN_EFORMAT, "%s: field ksub = %u, expected %u", path, ksub, PQ_KSUB);
        goto out;
    }
    if (metric > ANN_METRIC_COSINE) {
        rc = ann_fail(ANN_EFORMAT, "%s: field metric = %u unknown", path, metric);
        goto out;
    }
    size_t nf = (size_t)m * PQ_KSUB * dsub;
    if (r.size != PQ_HEADER_BYTES + nf * 4 + 4) {
        rc = ann_fail(ANN_EFORMAT, "%s: size %llu, expected %llu for m %u dsub %u", path,
                      (unsigned long long)r.size,
                      (unsigned long long)(PQ_HEADER_BYTES + nf * 4 + 4), m, dsub);
        goto out;
    }
    cb = pq_alloc(dim, m, (ann_metric)metric);
    if (!cb) {
        rc = ann_fail(-ENOMEM, "%s: no memory for the codebook", path);
        goto out;
    }
    cb->seed = ann_get_u64(h + PQ_OFF_SEED);
    cb->n_train = ann_get_u64(h + PQ_OFF_TRAIN_ROWS);
    rc = ann_rfile_read_f32s(&r, cb->centroids, nf, "centroids");
    if (rc)
        goto out;
    rc = ann_rfile_check_trailer(&r);
    if (rc)
        goto out;
    for (size_t i = 0; i < nf; i++)
        if (!isfinite(cb->centroids[i])) {
            rc = ann_fail(ANN_ECORRUPT, "%s: sub-quantizer %zu centroid %zu is not finite",
                          path, i / ((size_t)PQ_KSUB * dsub), (i / dsub) % PQ_KSUB);
            goto out;
        }
    pq_transpose(cb);
    *out = cb;
    cb = NULL;
out:
    ann_rfile_close(&r);
    pq_codebook_destroy(cb);
    return rc;
}
