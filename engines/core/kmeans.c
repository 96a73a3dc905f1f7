/*
 * kmeans.c: Lloyd's k-means (squared L2) with a seeded initialisation
 * (a seeded sample of k distinct rows, or k-means++ of Arthur and
 * Vassilvitskii 2007), an assignment step through OpenBLAS sgemm using
 * |x - c|^2 = |x|^2 - 2 x.c + |c|^2, and an empty-cluster repair that moves
 * each empty centroid onto the worst-served row (departure from Faiss,
 * which splits the largest cluster: that cannot split repeated points).
 *
 * Determinism: rows are scored in fixed blocks whatever the thread count,
 * and each centroid is the float64 mean of its rows summed in row order by
 * a single thread, so a seed gives the same centroids on 1 or 16 threads.
 */
#include "engines/core/kmeans.h"

#include "engines/core/distance.h"
#include "engines/core/parallel.h"
#include "engines/core/status.h"

#include <cblas.h>
#include <errno.h>
#include <pthread.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Score buffer budget per worker: rows per block = this / k, in [16, 1024]. */
#define KMEANS_SCORE_FLOATS (1u << 20)

void kmeans_params_default(kmeans_params *p, uint32_t k)
{
    *p = (kmeans_params){ .k = k, .iters = 12, .seed = 1, .threads = 0,
                          .init = KMEANS_INIT_SAMPLE, .spherical = 0 };
}

int ann_default_threads(void)
{
    return ann_ncores();
}

static uint64_t km_rand(uint64_t *s)
{
    /* splitmix64: small, seedable, good enough for sampling */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double km_uniform(uint64_t *s)
{
    return (double)(km_rand(s) >> 11) * (1.0 / 9007199254740992.0);
}

static uint32_t km_block_rows(uint32_t k)
{
    uint32_t b = KMEANS_SCORE_FLOATS / (k ? k : 1);
    if (b < 16)
        b = 16;
    if (b > 1024)
        b = 1024;
    return b;
}

/*
 * argmin over c of cnorm[c] - 2 s[c]: the hot loop of the assignment (the
 * sgemm itself is cheap for PQ's 8-float slices).  Ties go to the lowest c.
 * Variants follow the distance kernels' choice (ANNLAB_SIMD applies).
 */
typedef uint32_t (*argmin_fn)(const float *s, const float *cnorm, uint32_t k, float *best);

static uint32_t argmin_scalar(const float *s, const float *cnorm, uint32_t k, float *best)
{
    float b = FLT_MAX;
    uint32_t bi = 0;
    for (uint32_t c = 0; c < k; c++) {
        float d = cnorm[c] - 2.0f * s[c];
        if (d < b) {
            b = d;
            bi = c;
        }
    }
    *best = b;
    return bi;
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static uint32_t argmin_avx512(const float *s,
                                                                 const float *cnorm, uint32_t k,
                                                                 float *best)
{
    __m512 vb = _mm512_set1_ps(FLT_MAX);
    __m512i vi = _mm512_setzero_si512();
    __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_set1_epi32(16);
    const __m512 m2 = _mm512_set1_ps(-2.0f);
    uint32_t c = 0;
    for (; c + 16 <= k; c += 16) {
        __m512 d = _mm512_fmadd_ps(_mm512_loadu_ps(s + c), m2, _mm512_loadu_ps(cnorm + c));
        __mmask16 lt = _mm512_cmp_ps_mask(d, vb, _CMP_LT_OQ);
        vb = _mm512_mask_mov_ps(vb, lt, d);
        vi = _mm512_mask_mov_epi32(vi, lt, idx);
        idx = _mm512_add_epi32(idx, step);
    }
    if (c < k) {
        __mmask16 m = (__mmask16)((1u << (k - c)) - 1);
        __m512 d = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, s + c), m2,
                                   _mm512_maskz_loadu_ps(m, cnorm + c));
        __mmask16 lt = _mm512_mask_cmp_ps_mask(m, d, vb, _CMP_LT_OQ);
        vb = _mm512_mask_mov_ps(vb, lt, d);
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
    *best = b;
    return bi;
}

__attribute__((target("avx2,fma"))) static uint32_t argmin_avx2(const float *s,
                                                                const float *cnorm, uint32_t k,
                                                                float *best)
{
    __m256 vb = _mm256_set1_ps(FLT_MAX);
    __m256i vi = _mm256_setzero_si256();
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i step = _mm256_set1_epi32(8);
    const __m256 m2 = _mm256_set1_ps(-2.0f);
    uint32_t c = 0;
    for (; c + 8 <= k; c += 8) {
        __m256 d = _mm256_fmadd_ps(_mm256_loadu_ps(s + c), m2, _mm256_loadu_ps(cnorm + c));
        __m256 lt = _mm256_cmp_ps(d, vb, _CMP_LT_OQ);
        vb = _mm256_blendv_ps(vb, d, lt);
        vi = _mm256_castps_si256(
            _mm256_blendv_ps(_mm256_castsi256_ps(vi), _mm256_castsi256_ps(idx), lt));
        idx = _mm256_add_epi32(idx, step);
    }
    float lanes[8];
    uint32_t ids[8];
    _mm256_storeu_ps(lanes, vb);
    _mm256_storeu_si256((__m256i *)ids, vi);
    float b = lanes[0];
    uint32_t bi = ids[0];
    for (int l = 1; l < 8; l++)
        if (lanes[l] < b || (lanes[l] == b && ids[l] < bi)) {
            b = lanes[l];
            bi = ids[l];
        }
    for (; c < k; c++) {
        float d = cnorm[c] - 2.0f * s[c];
        if (d < b) {
            b = d;
            bi = c;
        }
    }
    *best = b;
    return bi;
}
#endif

static argmin_fn argmin_active = argmin_scalar;
static pthread_once_t argmin_once = PTHREAD_ONCE_INIT;

static void argmin_choose(void)
{
#if defined(__x86_64__)
    const char *name = ann_dist_active()->name;
    if (!strcmp(name, "avx512"))
        argmin_active = argmin_avx512;
    else if (!strcmp(name, "avx2"))
        argmin_active = argmin_avx2;
#endif
}

typedef struct assign_job {
    const float *x;
    uint64_t n;
    uint32_t dim, k, block;
    const float *c;
    const float *cnorm;
    float *scores; /* per worker: block * k */
    uint32_t *assign;
    float *dist;
} assign_job;

static void assign_block(const assign_job *j, uint64_t r0, uint32_t rows, float *scores)
{
    const float *xb = j->x + r0 * j->dim;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)j->k, (int)j->dim,
                1.0f, xb, (int)j->dim, j->c, (int)j->dim, 0.0f, scores, (int)j->k);
    pthread_once(&argmin_once, argmin_choose);
    const argmin_fn argmin = argmin_active;
    for (uint32_t i = 0; i < rows; i++) {
        float best;
        uint32_t bi = argmin(scores + (size_t)i * j->k, j->cnorm, j->k, &best);
        j->assign[r0 + i] = bi;
        if (j->dist) {
            const float *xr = xb + (size_t)i * j->dim;
            float d = ann_ip(xr, xr, j->dim) + best;
            j->dist[r0 + i] = d > 0 ? d : 0;
        }
    }
}

static int assign_run(void *arg, uint64_t b, uint64_t e, int worker)
{
    const assign_job *j = arg;
    float *scores = j->scores + (size_t)worker * j->block * j->k;
    for (uint64_t blk = b; blk < e; blk++) {
        uint64_t r0 = blk * j->block;
        uint32_t rows = (uint32_t)(j->n - r0 < j->block ? j->n - r0 : j->block);
        assign_block(j, r0, rows, scores);
    }
    return 0;
}

int kmeans_assign(const float *x, uint64_t n, uint32_t dim, const float *centroids,
                  uint32_t k, int threads, uint32_t *assign, float *dist)
{
    int rc = 0;
    float *cnorm = NULL, *scores = NULL;
    if (k == 0 || dim == 0)
        return ann_fail(ANN_EPARAM, "kmeans: k (%u) and dim (%u) must be positive", k, dim);
    if (n == 0)
        return 0;
    if (threads <= 0)
        threads = ann_ncores();
    uint32_t block = km_block_rows(k);
    uint64_t nblocks = (n + block - 1) / block;
    if ((uint64_t)threads > nblocks)
        threads = (int)nblocks;

    cnorm = malloc((size_t)k * sizeof *cnorm);
    scores = malloc((size_t)threads * block * k * sizeof *scores);
    if (!cnorm || !scores) {
        rc = ann_fail(-ENOMEM, "kmeans: no memory for %d x %u x %u scores", threads, block, k);
        goto out;
    }
    kmeans_centroid_norms(centroids, k, dim, cnorm);

    assign_job j = { x, n, dim, k, block, centroids, cnorm, scores, assign, dist };
    if (threads > 1) {
        ann_blas_serial_begin();
        rc = ann_parallel_for(threads, nblocks, 1, assign_run, &j);
        ann_blas_serial_end();
    } else {
        rc = assign_run(&j, 0, nblocks, 0);
    }
out:
    free(cnorm);
    free(scores);
    return rc;
}

void kmeans_centroid_norms(const float *centroids, uint32_t k, uint32_t dim, float *cnorm)
{
    for (uint32_t c = 0; c < k; c++)
        cnorm[c] = ann_ip(centroids + (size_t)c * dim, centroids + (size_t)c * dim, dim);
}

size_t kmeans_scratch_floats(uint32_t k)
{
    return (size_t)km_block_rows(k) * k;
}

void kmeans_assign_serial(const float *x, uint64_t n, uint32_t dim, const float *centroids,
                          const float *cnorm, uint32_t k, float *scratch, uint32_t *assign,
                          float *dist)
{
    uint32_t block = km_block_rows(k);
    assign_job j = { x, n, dim, k, block, centroids, cnorm, scratch, assign, dist };
    assign_run(&j, 0, (n + block - 1) / block, 0);
}

/* k distinct rows by a seeded partial Fisher-Yates shuffle. */
static int init_sample(const float *x, uint64_t n, uint32_t dim, uint32_t k, uint64_t *rng,
                       float *c)
{
    uint64_t *perm = malloc(n * sizeof *perm);
    if (!perm)
        return ann_fail(-ENOMEM, "kmeans: no memory for a %llu-row permutation",
                        (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = 0; i < k; i++) {
        uint64_t r = i + km_rand(rng) % (n - i);
        uint64_t t = perm[i];
        perm[i] = perm[r];
        perm[r] = t;
        memcpy(c + (size_t)i * dim, x + perm[i] * dim, dim * sizeof(float));
    }
    free(perm);
    return 0;
}

/* k-means++: each next centre drawn with probability proportional to D^2. */
static int init_plusplus(const float *x, uint64_t n, uint32_t dim, uint32_t k, uint64_t *rng,
                         float *c)
{
    double *d2 = malloc(n * sizeof *d2);
    if (!d2)
        return ann_fail(-ENOMEM, "kmeans++: no memory for %llu distances",
                        (unsigned long long)n);
    uint64_t first = km_rand(rng) % n;
    memcpy(c, x + first * dim, dim * sizeof(float));
    double total = 0;
    for (uint64_t i = 0; i < n; i++) {
        d2[i] = ann_l2sq(x + i * dim, c, dim);
        total += d2[i];
    }
    for (uint32_t j = 1; j < k; j++) {
        uint64_t pick = km_rand(rng) % n;
        if (total > 0) {
            double r = km_uniform(rng) * total, acc = 0;
            for (uint64_t i = 0; i < n; i++) {
                acc += d2[i];
                if (acc >= r && d2[i] > 0) {
                    pick = i;
                    break;
                }
            }
        }
        float *cj = c + (size_t)j * dim;
        memcpy(cj, x + pick * dim, dim * sizeof(float));
        total = 0;
        for (uint64_t i = 0; i < n; i++) {
            double d = ann_l2sq(x + i * dim, cj, dim);
            if (d < d2[i])
                d2[i] = d;
            total += d2[i];
        }
    }
    free(d2);
    return 0;
}

typedef struct update_job {
    const float *x;
    uint32_t dim;
    const uint64_t *start; /* k+1 offsets into order */
    const uint32_t *order; /* rows grouped by cluster, ascending within each */
    float *c;
    int spherical;
    double *acc; /* per worker: dim doubles */
} update_job;

static int update_run(void *arg, uint64_t b, uint64_t e, int worker)
{
    const update_job *j = arg;
    double *acc = j->acc + (size_t)worker * j->dim;
    for (uint64_t cl = b; cl < e; cl++) {
        uint64_t s = j->start[cl], t = j->start[cl + 1];
        if (s == t)
            continue; /* empty: repaired afterwards */
        memset(acc, 0, j->dim * sizeof *acc);
        for (uint64_t r = s; r < t; r++) {
            const float *xr = j->x + (size_t)j->order[r] * j->dim;
            for (uint32_t d = 0; d < j->dim; d++)
                acc[d] += xr[d];
        }
        float *cc = j->c + cl * j->dim;
        double inv = 1.0 / (double)(t - s);
        for (uint32_t d = 0; d < j->dim; d++)
            cc[d] = (float)(acc[d] * inv);
        if (j->spherical)
            ann_normalize(cc, j->dim);
    }
    return 0;
}

/*
 * Repair: each empty cluster takes the row farthest from its centroid (the
 * worst-served row; a row serves once), which moves centroids to where the
 * data is even when the largest cluster is one repeated point (the Faiss
 * rule of splitting the largest cluster cannot split duplicates).
 */
static uint32_t repair_empty(const float *x, uint64_t n, uint32_t dim, float *c, uint32_t k,
                             const uint64_t *count, float *dist, int spherical)
{
    uint32_t fixed = 0;
    for (uint32_t e = 0; e < k; e++) {
        if (count[e] != 0)
            continue;
        uint64_t far = 0;
        for (uint64_t i = 1; i < n; i++)
            if (dist[i] > dist[far])
                far = i;
        if (!(dist[far] > 0))
            break; /* every row sits on a centroid: fewer distinct rows than k */
        memcpy(c + (size_t)e * dim, x + far * dim, dim * sizeof(float));
        if (spherical)
            ann_normalize(c + (size_t)e * dim, dim);
        dist[far] = 0;
        fixed++;
    }
    return fixed;
}

int kmeans_train(const float *x, uint64_t n, uint32_t dim, const kmeans_params *p,
                 float *centroids, kmeans_stats *stats)
{
    int rc = 0;
    uint32_t *assign = NULL, *order = NULL;
    float *dist = NULL;
    uint64_t *count = NULL, *start = NULL;
    double *acc = NULL;
    const uint32_t k = p->k;
    if (k == 0 || dim == 0 || (uint64_t)k > n || n > UINT32_MAX)
        return ann_fail(ANN_EPARAM,
                        "kmeans: need 1 <= k <= n < 2^32 and dim > 0 (k %u, n %llu, dim %u)", k,
                        (unsigned long long)n, dim);
    int threads = p->threads <= 0 ? ann_ncores() : p->threads;
    uint64_t rng = p->seed ^ 0x6b6d65616e73ull; /* "kmeans" */

    assign = malloc(n * sizeof *assign);
    order = malloc(n * sizeof *order);
    dist = malloc(n * sizeof *dist);
    count = calloc(k, sizeof *count);
    start = calloc((size_t)k + 1, sizeof *start);
    acc = malloc((size_t)threads * dim * sizeof *acc);
    if (!assign || !order || !dist || !count || !start || !acc) {
        rc = ann_fail(-ENOMEM, "kmeans: no memory for %llu rows", (unsigned long long)n);
        goto out;
    }

    rc = p->init == KMEANS_INIT_PLUSPLUS ? init_plusplus(x, n, dim, k, &rng, centroids)
                                         : init_sample(x, n, dim, k, &rng, centroids);
    if (rc)
        goto out;
    if (p->spherical)
        for (uint32_t c = 0; c < k; c++)
            ann_normalize(centroids + (size_t)c * dim, dim);

    kmeans_stats st = { 0 };
    for (uint32_t it = 0; it < p->iters; it++) {
        rc = kmeans_assign(x, n, dim, centroids, k, threads, assign, dist);
        if (rc)
            goto out;
        double obj = 0;
        memset(count, 0, k * sizeof *count);
        for (uint64_t i = 0; i < n; i++) {
            obj += dist[i];
            count[assign[i]]++;
        }
        st.objective = obj / (double)n;
        st.iters_run = it + 1;
        /* counting sort of rows by cluster, stable (row order kept) */
        start[0] = 0;
        for (uint32_t c = 0; c < k; c++)
            start[c + 1] = start[c] + count[c];
        for (uint32_t c = 0; c < k; c++)
            count[c] = start[c];
        for (uint64_t i = 0; i < n; i++)
            order[count[assign[i]]++] = (uint32_t)i;
        for (uint32_t c = 0; c < k; c++)
            count[c] = start[c + 1] - start[c];

        update_job uj = { x, dim, start, order, centroids, p->spherical, acc };
        rc = ann_parallel_for(threads, k, 8, update_run, &uj);
        if (rc)
            goto out;
        st.empty_fixed += repair_empty(x, n, dim, centroids, k, count, dist, p->spherical);
    }
    if (stats)
        *stats = st;
out:
    free(assign);
    free(order);
    free(dist);
    free(count);
    free(start);
    free(acc);
    return rc;
}
