/*
 * test_pq.c: product quantization.  Reconstruction error well below the
 * trivial (mean-vector) quantizer and equal to a naive re-computation;
 * encoding equal to brute-force nearest centroids; ADC distance equal to
 * the ranking distance to the decoded vector (|q - x^|^2, -<q, x^>,
 * |q - x^|^2 / 2 for cosine) and the same top 10, with and without
 * dimension padding; on Cohere-like unit data the cosine table ranks
 * exactly as the L2 table and finds more true neighbours than the
 * inner-product form it replaced; pq_table_ip gives -<q, x^> whatever the
 * codebook's metric (padding included); batched and gathered scans equal the single
 * scan; determinism by seed across thread counts; codebook save/load
 * round trip and corruption errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/pq.h"
#include "engines/core/pq_lb.h"
#include "datasets/generate.h"
#include "engines/core/exact.h"
#include "engines/core/status.h"
#include "engines/core/topk.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static pq_codebook *train(const float *x, uint64_t n, uint32_t dim, ann_metric metric,
                          uint32_t m, uint64_t seed, int threads)
{
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(x, n, dim, metric, &src), 0);
    pq_params p;
    pq_params_default(&p, dim);
    p.pq_bytes = m;
    p.seed = seed;
    p.threads = threads;
    pq_codebook *cb = NULL;
    assert_int_equal(pq_train(src, &p, &cb), 0);
    ann_vecsrc_destroy(src);
    return cb;
}

static void test_pq_reconstruction_error(void **state)
{
    (void)state;
    const uint32_t n = 6000, dim = 64, m = 16;
    float *x = tu_clustered(n, dim, 30, 21, 0);
    pq_codebook *cb = train(x, n, dim, ANN_METRIC_L2, m, 1, 2);
    assert_int_equal(cb->dsub, 4);
    assert_int_equal(cb->dim_padded, 64);
    uint8_t *codes = malloc((size_t)n * m);
    assert_int_equal(pq_encode(cb, x, n, 2, codes), 0);

    /* trivial quantizer: every vector replaced by the mean */
    double mean[64] = { 0 };
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < dim; d++)
            mean[d] += x[(size_t)i * dim + d] / n;
    double trivial = 0, pq_err = 0, naive_err = 0;
    uint32_t code_mismatch = 0;
    float rec[64];
    for (uint32_t i = 0; i < n; i++) {
        const float *v = x + (size_t)i * dim;
        for (uint32_t d = 0; d < dim; d++)
            trivial += (v[d] - mean[d]) * (v[d] - mean[d]);
        pq_decode(cb, codes + (size_t)i * m, rec);
        pq_err += ann_l2sq_scalar(v, rec, dim);
        /* naive encoder: nearest centroid per slice in double precision */
        for (uint32_t s = 0; s < m; s++) {
            double best = INFINITY;
            uint32_t bi = 0;
            for (uint32_t c = 0; c < PQ_KSUB; c++) {
                const float *cc = cb->centroids + ((size_t)s * PQ_KSUB + c) * cb->dsub;
                double e = 0;
                for (uint32_t d = 0; d < cb->dsub; d++) {
                    double df = (double)v[s * cb->dsub + d] - cc[d];
                    e += df * df;
                }
                if (e < best)
                    best = e, bi = c;
            }
            naive_err += best;
            if (bi != codes[(size_t)i * m + s])
                code_mismatch++;
        }
    }
    trivial /= n;
    pq_err /= n;
    naive_err /= n;
    /* 16 x 256 centroids on 30 clusters: far better than the mean */
    assert_true(pq_err < 0.2 * trivial);
    /* sgemm-based encoding agrees with the naive nearest centroid: only
     * float near-ties may differ, and then the error is the same */
    assert_true(code_mismatch <= n * m / 1000);
    assert_true(fabs(pq_err - naive_err) <= 1e-3 * naive_err);
    free(codes);
    free(x);
    pq_codebook_destroy(cb);
}

/* The distance PQ tables approximate for metric (pq.h): cosine ranks by
 * half the squared L2 distance. */
static float adc_target(ann_metric metric, const float *q, const float *x, uint32_t dim)
{
    if (metric == ANN_METRIC_COSINE)
        return 0.5f * ann_l2sq_scalar(q, x, dim);
    return ann_distance(metric, q, x, dim);
}

/* The k smallest of d[0..n) as ids, ascending. */
static void smallest(const float *d, uint32_t n, uint32_t k, uint32_t *ids)
{
    float kd[64];
    ann_topk t;
    ann_topk_init(&t, kd, ids, k);
    for (uint32_t i = 0; i < n; i++)
        ann_topk_push(&t, d[i], i);
    ann_topk_sorted(&t, ids, kd);
}

static void check_adc(ann_metric metric, uint32_t dim, uint32_t m)
{
    const uint32_t n = 2000, nq = 20, K = 10;
    int unit = metric != ANN_METRIC_L2;
    float *x = tu_clustered(n, dim, 12, 31 + dim, unit);
    float *q = tu_clustered(nq, dim, 12, 77 + dim, unit);
    pq_codebook *cb = train(x, n, dim, metric, m, 3, 2);
    assert_int_equal(cb->dim_padded, m * ((dim + m - 1) / m));
    uint8_t *codes = malloc((size_t)n * m);
    float *table = malloc(pq_table_floats(cb) * sizeof *table);
    float *rec = malloc(dim * sizeof *rec);
    float *scan = malloc(n * sizeof *scan);
    float *gath = malloc(n * sizeof *gath);
    float *exact = malloc(n * sizeof *exact);
    uint32_t *ids = malloc(n * sizeof *ids);
    for (uint32_t i = 0; i < n; i++)
        ids[i] = (i * 7919u) % n;
    assert_int_equal(pq_encode(cb, x, n, 1, codes), 0);
    uint32_t rank_misses = 0;
    for (uint32_t j = 0; j < nq; j++) {
        const float *qj = q + (size_t)j * dim;
        pq_table_compute(cb, qj, table);
        pq_adc_scan(table, m, codes, n, scan);
        pq_adc_gather(table, m, codes, ids, n, gath);
        for (uint32_t i = 0; i < n; i++) {
            pq_decode(cb, codes + (size_t)i * m, rec);
            exact[i] = adc_target(metric, qj, rec, dim);
            float adc = pq_adc_distance(table, codes + (size_t)i * m, m);
            assert_true(fabsf(adc - exact[i]) <= 1e-4f * (1.0f + fabsf(exact[i])));
            assert_true(fabsf(scan[i] - adc) <= 1e-5f * (1.0f + fabsf(adc)));
            assert_true(fabsf(gath[i] - pq_adc_distance(table, codes + (size_t)ids[i] * m, m)) <=
                        1e-5f * (1.0f + fabsf(adc)));
            if (metric == ANN_METRIC_COSINE) {
                /* on the cosine distance's scale: 1 - <q, x^> + (|x^|^2 - 1) / 2 */
                float nx = ann_ip(rec, rec, dim);
                float want = ann_distance(metric, qj, rec, dim) + 0.5f * (nx - 1.0f);
                assert_true(fabsf(adc - want) <= 1e-4f * (1.0f + fabsf(want)));
            }
        }
        /* the ADC ranking is the exact ranking of the decoded vectors */
        uint32_t top_adc[10], top_exact[10];
        smallest(scan, n, K, top_adc);
        smallest(exact, n, K, top_exact);
        for (uint32_t a = 0; a < K; a++) {
            int found = 0;
            for (uint32_t b = 0; b < K; b++)
                found |= top_adc[a] == top_exact[b];
            rank_misses += !found;
        }
    }
    /* only float near-ties at the 10th place may differ */
    assert_true(rank_misses <= nq / 10);
    free(x);
    free(q);
    free(codes);
    free(table);
    free(rec);
    free(scan);
    free(gath);
    free(exact);
    free(ids);
    pq_codebook_destroy(cb);
}

static void test_pq_adc_l2(void **state)
{
    (void)state;
    check_adc(ANN_METRIC_L2, 64, 16);
}

/* pq_table_ip on codebooks labelled l2, cosine and ip: -<q, decode(code)>
 * each time, and for an ip codebook the very table pq_table_compute gives;
 * 100-d in 32 bytes pads 28 zero floats. */
static void test_pq_table_ip_any_metric(void **state)
{
    (void)state;
    const uint32_t n = 1000, dim = 100, m = 32, nq = 5;
    float *x = tu_clustered(n, dim, 12, 5, 0);
    float *q = tu_clustered(nq, dim, 12, 6, 0);
    uint8_t *codes = malloc((size_t)n * m);
    float rec[100];
    static const ann_metric metrics[] = { ANN_METRIC_L2, ANN_METRIC_COSINE, ANN_METRIC_IP };
    for (int mi = 0; mi < 3; mi++) {
        pq_codebook *cb = train(x, n, dim, metrics[mi], m, 4, 1);
        float *table = malloc(pq_table_floats(cb) * sizeof *table);
        float *ref = malloc(pq_table_floats(cb) * sizeof *ref);
        assert_int_equal(pq_encode(cb, x, n, 1, codes), 0);
        for (uint32_t j = 0; j < nq; j++) {
            const float *qj = q + (size_t)j * dim;
            pq_table_ip(cb, qj, table);
            for (uint32_t i = 0; i < n; i++) {
                pq_decode(cb, codes + (size_t)i * m, rec);
                float want = -ann_ip_scalar(qj, rec, dim);
                float adc = pq_adc_distance(table, codes + (size_t)i * m, m);
                if (fabsf(adc - want) > 1e-4f * (1.0f + fabsf(want)))
                    fail_msg("%s codebook, query %u row %u: %g, -<q, x^> = %g",
                             ann_metric_name(metrics[mi]), j, i, adc, want);
            }
            if (metrics[mi] == ANN_METRIC_IP) {
                pq_table_compute(cb, qj, ref);
                assert_memory_equal(table, ref, pq_table_floats(cb) * sizeof *ref);
            }
        }
        free(table);
        free(ref);
        pq_codebook_destroy(cb);
    }
    free(codes);
    free(x);
    free(q);
}

static void test_pq_adc_ip(void **state)
{
    (void)state;
    check_adc(ANN_METRIC_IP, 64, 8);
}

static void test_pq_adc_cosine(void **state)
{
    (void)state;
    check_adc(ANN_METRIC_COSINE, 48, 12);
}

/*
 * pq_adc_distance_bounded against pq_adc_distance on trained codes: a code
 * whose distance is at most the bound gets the same bits, any other code a
 * partial sum above the bound and at most its distance; tight bounds do
 * abandon codes early.  The L2 and cosine tables hold no negative entry;
 * the inner-product table does (so pq_table_nonneg is 0 for it).
 */
static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Trained codes for the ADC checks: n = 1500 clustered rows of dim, nq
 * queries, an m-byte codebook, the codes, and per query (adc_query) the
 * table, every code's distance and the distances sorted. */
typedef struct adc_case {
    uint32_t n, nq, dim, m;
    float *x, *q, *table, *full, *sorted;
    pq_codebook *cb;
    uint8_t *codes;
} adc_case;

static void adc_case_init(adc_case *a, ann_metric metric, uint32_t dim, uint32_t m, uint32_t nq)
{
    a->n = 1500;
    a->nq = nq;
    a->dim = dim;
    a->m = m;
    a->x = tu_clustered(a->n, dim, 12, 41 + dim, metric != ANN_METRIC_L2);
    a->q = tu_clustered(nq, dim, 12, 87 + dim, metric != ANN_METRIC_L2);
    a->cb = train(a->x, a->n, dim, metric, m, 3, 2);
    a->codes = malloc((size_t)a->n * m);
    a->table = malloc(pq_table_floats(a->cb) * sizeof *a->table);
    a->full = malloc(a->n * sizeof *a->full);
    a->sorted = malloc(a->n * sizeof *a->sorted);
    assert_non_null(a->codes);
    assert_non_null(a->table);
    assert_non_null(a->full);
    assert_non_null(a->sorted);
    assert_int_equal(pq_encode(a->cb, a->x, a->n, 1, a->codes), 0);
}

/* Query j's table, every code's ADC distance, and those sorted. */
static void adc_query(adc_case *a, uint32_t j)
{
    pq_table_compute(a->cb, a->q + (size_t)j * a->dim, a->table);
    for (uint32_t i = 0; i < a->n; i++)
        a->sorted[i] = a->full[i] = pq_adc_distance(a->table, a->codes + (size_t)i * a->m, a->m);
    qsort(a->sorted, a->n, sizeof *a->sorted, cmp_float);
}

static void adc_case_fini(adc_case *a)
{
    pq_codebook_destroy(a->cb);
    free(a->x);
    free(a->q);
    free(a->codes);
    free(a->table);
    free(a->full);
    free(a->sorted);
}

static void check_adc_bounded(ann_metric metric, uint32_t dim, uint32_t m)
{
    adc_case a;
    adc_case_init(&a, metric, dim, m, 8);
    const uint32_t n = a.n, nq = a.nq;
    const uint8_t *codes = a.codes;
    const float *table = a.table, *full = a.full, *sorted = a.sorted;
    float *floor = malloc(pq_floor_len(m) * sizeof *floor);
    assert_int_equal(pq_table_nonneg(a.cb), 1);
    uint64_t kept = 0, abandoned = 0, floored = 0, sooner = 0;
    for (uint32_t j = 0; j < nq; j++) {
        adc_query(&a, j);
        pq_table_floor(table, m, floor);
        for (uint32_t t = 0; t < (uint32_t)m * PQ_KSUB; t++)
            assert_true(table[t] >= 0.0f);
        assert_true(floor[m] == 0.0f);
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *c = codes + (size_t)i * m;
            /* the floor is what the subspaces left add at least */
            double rest = 0;
            for (uint32_t s = m; s-- > 0;) {
                rest += table[(size_t)s * PQ_KSUB + c[s]];
                assert_true(floor[s] <= rest * (1 + 1e-6));
            }
        }
        /* the bounds include codes' own distances: a code at the bound,
         * the tightest case for the floor's margin, is kept */
        const float bounds[] = { sorted[0],     sorted[n / 100], sorted[n / 20],
                                 sorted[n / 2], sorted[n - 1],   full[0],
                                 full[n / 3],   __builtin_inff() };
        for (uint32_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
            for (uint32_t i = 0; i < n; i++) {
                const uint8_t *c = codes + (size_t)i * m;
                float got = pq_adc_distance_bounded(table, c, m, bounds[b]);
                float fgot = pq_adc_distance_floored(table, c, m, bounds[b], floor);
                if (full[i] <= bounds[b]) {
                    assert_memory_equal(&got, &full[i], sizeof got);
                    assert_memory_equal(&fgot, &full[i], sizeof fgot);
                    kept++;
                } else {
                    assert_true(got > bounds[b]);
                    assert_true(got <= full[i]);
                    assert_true(fgot > bounds[b]);
                    assert_true(fgot <= full[i]);
                    abandoned += got < full[i];
                    floored += fgot < full[i];
                    sooner += fgot < got;
                }
            }
        }
    }
    if (m >= 32) { /* checks after 16 and 32 subspaces come before the end */
        assert_true(abandoned > 0);
        assert_true(floored > abandoned && sooner > 0);
    }
    printf("bounded ADC, metric %d, dim %u, m %u: %llu codes kept (same bits), %llu abandoned "
           "early, %llu with the floor (%llu sooner)\n",
           (int)metric, dim, m, (unsigned long long)kept, (unsigned long long)abandoned,
           (unsigned long long)floored, (unsigned long long)sooner);
    free(floor);
    adc_case_fini(&a);
}

/* Codes i of codes (row-major, m bytes each) transposed into blocks of 64
 * lanes; lanes past n hold code 0. */
static uint8_t *lb_blocks(const uint8_t *codes, uint32_t n, uint32_t m)
{
    const uint32_t nb = (n + PQ_LB_LANES - 1) / PQ_LB_LANES;
    uint8_t *b = calloc((size_t)nb, PQ_LB_BLOCK_BYTES(m));
    assert_non_null(b);
    for (uint32_t i = 0; i < n; i++)
        pq_lb_set_lane(b + (size_t)(i / PQ_LB_LANES) * PQ_LB_BLOCK_BYTES(m), m, i % PQ_LB_LANES,
                       codes + (size_t)i * m);
    return b;
}

/* Lanes of every block passing bound, checked: the fast kernel returns the
 * scalar one's lanes, and every code whose ADC distance is within the
 * bound passes.  The number of codes that pass. */
static uint32_t lb_check(const pq_lb *lb, const uint8_t *blocks, const float *full, uint32_t n,
                         float bound)
{
    const int32_t limit = pq_lb_limit(lb, bound);
    uint32_t passed = 0;
    for (uint32_t b = 0; b * PQ_LB_LANES < n; b++) {
        const uint8_t *blk = blocks + (size_t)b * PQ_LB_BLOCK_BYTES(lb->m);
        const uint64_t mask = pq_lb_block(lb, blk, limit);
        assert_true(mask == pq_lb_block_scalar(lb, blk, limit));
        for (uint32_t l = 0; l < PQ_LB_LANES && b * PQ_LB_LANES + l < n; l++) {
            const uint32_t i = b * PQ_LB_LANES + l;
            if (full[i] <= bound && !(mask >> l & 1))
                fail_msg("m %u: code %u (distance %.9g) dropped at bound %.9g (limit %d)", lb->m,
                         i, (double)full[i], (double)bound, limit);
            passed += (uint32_t)(mask >> l & 1);
        }
    }
    return passed;
}

/*
 * pq_lb (the pending scan's filter): on trained codes at four shapes, for
 * bounds from below every distance to infinity and at codes' own
 * distances, no code within the bound is dropped, the AVX-512 kernel (when
 * this CPU has it) returns exactly the scalar kernel's lanes and builds
 * the scalar build's bytes, and a bound
 * at the best 1% lets few codes through (the filter works).  Then the
 * rounding edge: codes made of every subspace's smallest entry, whose
 * distance is base itself, pass with the bound at that distance.
 */
static void check_lb(ann_metric metric, uint32_t dim, uint32_t m)
{
    adc_case a;
    adc_case_init(&a, metric, dim, m, 6);
    const uint32_t n = a.n, nq = a.nq;
    const float *table = a.table, *full = a.full, *sorted = a.sorted;
    uint8_t *qt = malloc((size_t)m * PQ_KSUB);
    uint8_t *blocks = lb_blocks(a.codes, n, m);
    uint32_t few = 0;
    for (uint32_t k = 0; k < nq; k++) {
        adc_query(&a, k);
        pq_lb lb, lbs;
        pq_lb_build(table, m, qt, &lb);
        uint8_t *qs = malloc((size_t)m * PQ_KSUB);
        pq_lb_build_scalar(table, m, qs, &lbs);
        assert_memory_equal(qt, qs, (size_t)m * PQ_KSUB);
        assert_true(lb.base == lbs.base && lb.step == lbs.step);
        free(qs);
        const float bounds[] = { sorted[0] * 0.5f, sorted[0],     sorted[n / 100],
                                 sorted[n / 2],    sorted[n - 1], full[0],
                                 full[n / 3],      full[n - 1],   __builtin_inff() };
        for (uint32_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++)
            lb_check(&lb, blocks, full, n, bounds[b]);
        assert_int_equal(lb_check(&lb, blocks, full, n, __builtin_inff()), n);
        few += lb_check(&lb, blocks, full, n, sorted[n / 100]);
    }
    print_message("pq_lb m %u: %u of %u codes pass the best 1%%'s bound (%s kernel)\n", m, few,
                  n * nq, pq_lb_fast() ? "AVX-512 VBMI" : "scalar");
    assert_true(few < n * nq / 4);
    free(blocks);
    free(qt);
    adc_case_fini(&a);
}

static void test_pq_lb(void **state)
{
    (void)state;
    check_lb(ANN_METRIC_L2, 96, 48);
    check_lb(ANN_METRIC_COSINE, 96, 96);
    check_lb(ANN_METRIC_COSINE, 100, 7); /* fewer than 16 subspaces */
    check_lb(ANN_METRIC_L2, 100, 50);
    /* the rounding edge, on 500 tables whose sums round */
    uint64_t rng = 777;
    const uint32_t m = 96;
    float *tab = malloc((size_t)m * PQ_KSUB * sizeof *tab), full[PQ_LB_LANES];
    uint8_t codes[PQ_LB_LANES * 96], qt[96 * PQ_KSUB];
    for (int trial = 0; trial < 500; trial++) {
        for (uint32_t s = 0; s < m; s++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const float lo = ldexpf((float)(rng >> 40) / (float)(1u << 24) + 1.0f,
                                    (int)(rng >> 20 & 15) - 12);
            for (uint32_t c = 0; c < PQ_KSUB; c++)
                tab[s * PQ_KSUB + c] = lo + (c == (s * 7u & 255u) ? 0.0f : 1.0f + (float)c);
            for (uint32_t l = 0; l < PQ_LB_LANES; l++) /* lane 0 on the floor, the rest near */
                codes[l * m + s] = (uint8_t)(l == 0 || (rng >> (l % 32)) & 1 ? s * 7u : l);
        }
        for (uint32_t l = 0; l < PQ_LB_LANES; l++)
            full[l] = pq_adc_distance(tab, codes + l * m, m);
        pq_lb lb;
        pq_lb_build(tab, m, qt, &lb);
        uint8_t *blk = lb_blocks(codes, PQ_LB_LANES, m);
        for (uint32_t l = 0; l < PQ_LB_LANES; l += 9)
            lb_check(&lb, blk, full, PQ_LB_LANES, full[l]);
        assert_true(pq_lb_block(&lb, blk, pq_lb_limit(&lb, full[0])) & 1);
        free(blk);
    }
    free(tab);
    /* an empty limit, and a table of one value (step 1, every entry 0) */
    pq_lb lb;
    float ones[8 * PQ_KSUB];
    for (uint32_t t = 0; t < 8 * PQ_KSUB; t++)
        ones[t] = 1.0f;
    pq_lb_build(ones, 8, qt, &lb);
    assert_true(lb.base == 8.0f && lb.step == 1.0f && qt[0] == 0 && qt[8 * PQ_KSUB - 1] == 0);
    memset(codes, 3, PQ_LB_BLOCK_BYTES(8));
    assert_int_equal(pq_lb_limit(&lb, 7.0f), -1);
    assert_true(pq_lb_block(&lb, codes, -1) == 0);
    assert_true(pq_lb_block(&lb, codes, pq_lb_limit(&lb, 8.0f)) == ~0ull);
}

static void test_pq_adc_bounded(void **state)
{
    (void)state;
    check_adc_bounded(ANN_METRIC_L2, 96, 48);
    check_adc_bounded(ANN_METRIC_COSINE, 96, 32);
    check_adc_bounded(ANN_METRIC_COSINE, 100, 7); /* fewer than 16 subspaces, an odd m */
    check_adc_bounded(ANN_METRIC_L2, 100, 50);    /* a tail after the groups of four */
    /* every entry 1: a bound of 0.5 stops at the first check, after 16 */
    float ones[96 * PQ_KSUB];
    uint8_t code[96];
    for (uint32_t t = 0; t < 96 * PQ_KSUB; t++)
        ones[t] = 1.0f;
    for (uint32_t j = 0; j < 96; j++)
        code[j] = (uint8_t)(j * 13);
    assert_true(pq_adc_distance_bounded(ones, code, 96, 0.5f) == 16.0f);
    assert_true(pq_adc_distance_bounded(ones, code, 96, 16.0f) == 32.0f);
    assert_true(pq_adc_distance_bounded(ones, code, 96, 96.0f) == 96.0f);
    assert_true(pq_adc_distance_bounded(ones, code, 15, 0.5f) == 15.0f);
    /* with the floor (80 after the first 16): dropped at the first check
     * unless the bound reaches the full 96, where the margin keeps it */
    float floor[97];
    pq_table_floor(ones, 96, floor);
    assert_true(floor[0] == 96.0f && floor[16] == 80.0f && floor[95] == 1.0f && floor[96] == 0.0f);
    assert_true(pq_adc_distance_floored(ones, code, 96, 0.5f, floor) == 16.0f);
    assert_true(pq_adc_distance_floored(ones, code, 96, 95.0f, floor) == pq_float_up(95.0f));
    assert_true(pq_adc_distance_floored(ones, code, 96, 95.99f, floor) == pq_float_up(95.99f));
    assert_true(pq_adc_distance_floored(ones, code, 96, 96.0f, floor) == 96.0f);
    assert_true(pq_adc_distance_floored(ones, code, 96, __builtin_inff(), floor) == 96.0f);
    assert_true(pq_float_up(0.0f) > 0.0f && pq_float_up(1.0f) == nextafterf(1.0f, 2.0f));
    /* rounding: a code made of every subspace's smallest entry sits exactly
     * on the floor, so with the bound at its own distance the floor test
     * compares two roundings of one sum; the margin must keep the code (a
     * test without it drops some of these) */
    uint64_t rng = 12345;
    float *tab = malloc(96 * PQ_KSUB * sizeof *tab), fl[97];
    for (int trial = 0; trial < 2000; trial++) {
        const uint32_t m = 16 + (uint32_t)(trial % 81);
        for (uint32_t s = 0; s < m; s++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            /* the smallest entry: magnitudes over 2^-12 .. 2^4, so sums round */
            const float lo = ldexpf((float)(rng >> 40) / (float)(1u << 24) + 1.0f,
                                    (int)(rng >> 20 & 15) - 12);
            code[s] = (uint8_t)(rng >> 8);
            for (uint32_t c = 0; c < PQ_KSUB; c++)
                tab[s * PQ_KSUB + c] = c == code[s] ? lo : lo + 1.0f + (float)c;
        }
        pq_table_floor(tab, m, fl);
        const float d = pq_adc_distance(tab, code, m);
        const float got = pq_adc_distance_floored(tab, code, m, d, fl);
        assert_memory_equal(&got, &d, sizeof d);
    }
    free(tab);
    float *x = tu_clustered(1500, 32, 12, 5, 0), table[8 * PQ_KSUB];
    pq_codebook *ip = train(x, 1500, 32, ANN_METRIC_IP, 8, 3, 2);
    assert_int_equal(pq_table_nonneg(ip), 0);
    pq_table_compute(ip, x, table);
    int negative = 0;
    for (uint32_t t = 0; t < 8 * PQ_KSUB; t++)
        negative |= table[t] < 0.0f;
    assert_true(negative);
    pq_codebook_destroy(ip);
    free(x);
}

static void test_pq_adc_padded_dimension(void **state)
{
    (void)state;
    /* 100-d, 32 bytes: dsub 4, 28 floats of zero padding; and an odd m */
    check_adc(ANN_METRIC_L2, 100, 32);
    check_adc(ANN_METRIC_COSINE, 100, 7);
}

/* Recall@10 of ADC alone: the share of the exact top 10 (ids gt, nq x 10)
 * among the 10 codes of lowest ADC for each query. */
static double adc_recall_at_10(const pq_codebook *cb, const uint8_t *codes, uint32_t n,
                             const float *q, uint32_t nq, const int32_t *gt, int ip_form)
{
    float *table = malloc(pq_table_floats(cb) * sizeof *table);
    float *d = malloc((size_t)n * sizeof *d);
    uint64_t hits = 0;
    for (uint32_t i = 0; i < nq; i++) {
        const float *qi = q + (size_t)i * cb->dim;
        if (ip_form) { /* the cosine table before the fix: 1 - <q, x^> */
            for (uint32_t s = 0; s < cb->m; s++)
                for (uint32_t c = 0; c < PQ_KSUB; c++)
                    table[s * PQ_KSUB + c] =
                        -ann_ip_scalar(qi + s * cb->dsub,
                                       cb->centroids + ((size_t)s * PQ_KSUB + c) * cb->dsub,
                                       cb->dsub);
        } else {
            pq_table_compute(cb, qi, table);
        }
        pq_adc_scan(table, cb->m, codes, n, d);
        uint32_t top[10];
        smallest(d, n, 10, top);
        for (uint32_t a = 0; a < 10; a++)
            for (uint32_t b = 0; b < 10; b++)
                hits += (uint32_t)gt[(size_t)i * 10 + a] == top[b];
    }
    free(table);
    free(d);
    return (double)hits / ((double)nq * 10);
}

/*
 * The cosine defect of issue 13, on the data that showed it: Cohere-like
 * 768-d unit vectors, 96-byte codes.  The cosine table must rank exactly as
 * the L2 table of the same codebook (on unit vectors |q - x|^2 / 2 is the
 * cosine distance), and must rank clearly better than the inner-product
 * form 1 - <q, x^>, whose error term -<q, e> is scaled by |q| = 1 rather
 * than by |x - q| (pq.h).  Measured here: ADC-alone recall@10 0.698 with the
 * cosine table, 0.559 with the inner-product form.
 */
static void test_pq_cosine_ranks_like_l2(void **state)
{
    (void)state;
    /* the codebook is trained on the first 5000 rows only, so that, as at
     * 100k with a 43k sample, it does not memorise the rows it encodes */
    const uint32_t n = 20000, n_train = 5000, nq = 100, dim = 768;
    ann_gen_params gp = {.dim = dim, .metric = ANN_METRIC_COSINE, .seed = 7};
    ann_generator *g = NULL;
    assert_int_equal(ann_generator_create(&gp, &g), 0);
    float *x = malloc((size_t)n * dim * sizeof *x);
    float *q = malloc((size_t)nq * dim * sizeof *q);
    assert_int_equal(ann_generator_rows(g, ANN_GEN_BASE, 0, n, x), 0);
    assert_int_equal(ann_generator_rows(g, ANN_GEN_QUERY, 0, nq, q), 0);
    ann_generator_destroy(g);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(x, n, dim, ANN_METRIC_COSINE, &src), 0);
    int32_t *gt = malloc((size_t)nq * 10 * sizeof *gt);
    float *gtd = malloc((size_t)nq * 10 * sizeof *gtd);
    assert_int_equal(ann_exact_knn(src, q, nq, 10, 0, gt, gtd), 0);
    ann_vecsrc_destroy(src);

    pq_codebook *cb = train(x, n_train, dim, ANN_METRIC_COSINE, 96, 1, 0);
    uint8_t *codes = malloc((size_t)n * cb->m);
    assert_int_equal(pq_encode(cb, x, n, 0, codes), 0);
    double r_cos = adc_recall_at_10(cb, codes, n, q, nq, gt, 0);
    double r_ip = adc_recall_at_10(cb, codes, n, q, nq, gt, 1);
    cb->metric = ANN_METRIC_L2;
    double r_l2 = adc_recall_at_10(cb, codes, n, q, nq, gt, 0);
    print_message("ADC-alone recall@10 (20000 x 768, 96 B): cosine table %.3f, "
                  "L2 table %.3f, inner-product form %.3f\n",
                  r_cos, r_l2, r_ip);
    assert_true(fabs(r_cos - r_l2) <= 0.002);
    assert_true(r_cos >= r_ip + 0.07);
    assert_true(r_cos >= 0.6);
    free(codes);
    pq_codebook_destroy(cb);
    free(gt);
    free(gtd);
    free(x);
    free(q);
}

static void test_pq_deterministic_by_seed(void **state)
{
    (void)state;
    const uint32_t n = 3000, dim = 32, m = 8;
    float *x = tu_clustered(n, dim, 10, 41, 0);
    pq_codebook *a = train(x, n, dim, ANN_METRIC_L2, m, 5, 1);
    pq_codebook *b = train(x, n, dim, ANN_METRIC_L2, m, 5, 2);
    pq_codebook *c = train(x, n, dim, ANN_METRIC_L2, m, 6, 2);
    size_t bytes = (size_t)m * PQ_KSUB * a->dsub * sizeof(float);
    assert_memory_equal(a->centroids, b->centroids, bytes);
    assert_memory_not_equal(a->centroids, c->centroids, bytes);
    uint8_t *ca = malloc((size_t)n * m), *cb = malloc((size_t)n * m);
    assert_int_equal(pq_encode(a, x, n, 1, ca), 0);
    assert_int_equal(pq_encode(a, x, n, 2, cb), 0);
    assert_memory_equal(ca, cb, (size_t)n * m);
    free(ca);
    free(cb);
    free(x);
    pq_codebook_destroy(a);
    pq_codebook_destroy(b);
    pq_codebook_destroy(c);
}

/* pq_encode_one (live inserts) picks pq_encode's centroid; where rounding
 * makes them differ, the two centroids are a near-tie.  Padded dimensions
 * (dim not a multiple of m), both metrics, and every kernel variant this
 * CPU has (scalar, AVX2, AVX-512). */
static void check_encode_one_variant(const pq_codebook *cb, const float *x, uint32_t n,
                                     const uint8_t *batch, const char *variant)
{
    const uint32_t dim = cb->dim, m = cb->m;
    uint8_t *one = malloc((size_t)n * m);
    for (uint32_t i = 0; i < n; i++) {
        int rc = variant ? pq_encode_one_variant(variant, cb, x + (size_t)i * dim,
                                                 one + (size_t)i * m)
                         : pq_encode_one(cb, x + (size_t)i * dim, one + (size_t)i * m);
        if (rc == ANN_EUNSUPPORTED) {
            print_message("dim %u, m %u: variant %s not on this CPU\n", dim, m, variant);
            goto out;
        }
        assert_int_equal(rc, 0);
    }
    uint32_t differ = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t s = 0; s < m; s++) {
            uint8_t a = batch[(size_t)i * m + s], b = one[(size_t)i * m + s];
            if (a == b)
                continue;
            differ++;
            /* both centroids at (nearly) the same distance from the slice */
            double da = 0, db = 0;
            for (uint32_t d = 0; d < cb->dsub; d++) {
                uint32_t k = s * cb->dsub + d;
                double xv = k < dim ? x[(size_t)i * dim + k] : 0.0;
                double ca = cb->centroids[((size_t)s * PQ_KSUB + a) * cb->dsub + d];
                double cc = cb->centroids[((size_t)s * PQ_KSUB + b) * cb->dsub + d];
                da += (xv - ca) * (xv - ca);
                db += (xv - cc) * (xv - cc);
            }
            assert_true(fabs(da - db) <= 1e-4 * (1.0 + da));
        }
    print_message("dim %u, m %u, %s: %u of %u sub-codes differ (near-ties)\n", dim, m,
                  variant ? variant : "active", differ, n * m);
    assert_true(differ * 1000u <= n * m); /* at most 0.1% */
out:
    free(one);
}

static void check_encode_one(uint32_t dim, uint32_t m, ann_metric metric)
{
    static const char *variants[] = { NULL, "scalar", "avx2", "avx512" };
    const uint32_t n = 2000;
    float *x = tu_clustered(n, dim, 12, 53 + dim, metric != ANN_METRIC_L2);
    pq_codebook *cb = train(x, n, dim, metric, m, 7, 2);
    uint8_t *batch = malloc((size_t)n * m);
    assert_int_equal(pq_encode(cb, x, n, 2, batch), 0);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
        check_encode_one_variant(cb, x, n, batch, variants[v]);
    free(batch);
    free(x);
    pq_codebook_destroy(cb);
}

static void test_pq_encode_one(void **state)
{
    (void)state;
    check_encode_one(64, 16, ANN_METRIC_L2);
    check_encode_one(100, 12, ANN_METRIC_COSINE); /* padded: 12 x 9 = 108 */
    check_encode_one(768, 96, ANN_METRIC_COSINE); /* the Cohere shape */
    uint8_t code[4];
    assert_int_equal(pq_encode_one_variant("neon", NULL, NULL, code), ANN_EUNSUPPORTED);
}

static void test_pq_sample_caps(void **state)
{
    (void)state;
    pq_params p;
    pq_params_default(&p, 768);
    assert_int_equal(p.pq_bytes, 96);
    /* 128 MiB of 768-d floats is 43690 rows, below the 200k cap */
    assert_int_equal(pq_sample_rows(&p, 1000000, 768), 43690);
    assert_int_equal(pq_sample_rows(&p, 1000000, 64), 200000);
    assert_int_equal(pq_sample_rows(&p, 5000, 64), 5000);
}

static void test_pq_bad_bytes(void **state)
{
    (void)state;
    float *x = tu_clustered(300, 16, 3, 1, 0);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(x, 300, 16, ANN_METRIC_L2, &src), 0);
    pq_params p;
    pq_params_default(&p, 16);
    p.pq_bytes = 17;
    pq_codebook *cb = NULL;
    assert_int_equal(pq_train(src, &p, &cb), ANN_EPARAM);
    assert_string_equal(ann_errmsg(ANN_EPARAM),
                        "pq_bytes: 17 is out of range [1, 16] for dimension 16");
    assert_null(cb);
    ann_vecsrc_destroy(src);
    free(x);
}

static void test_pq_save_load(void **state)
{
    (void)state;
    const uint32_t n = 1000, dim = 20, m = 5;
    float *x = tu_clustered(n, dim, 6, 51, 0);
    pq_codebook *cb = train(x, n, dim, ANN_METRIC_IP, m, 9, 1);
    char *dir = tu_tmpdir("pq");
    char path[4096], msg[4600];
    snprintf(path, sizeof path, "%s/cb.pqcb", dir);
    assert_int_equal(pq_codebook_save(cb, path), 0);

    size_t len = 0;
    uint8_t *file = tu_read_file(path, &len);
    assert_int_equal(len, 48 + (size_t)m * 256 * 4 * 4 + 4);
    assert_memory_equal(file, "ANNPQCB", 8);
    assert_int_equal(ann_get_u32(file + 8), 1);
    assert_int_equal(ann_get_u32(file + 12), dim);
    assert_int_equal(ann_get_u32(file + 16), m);
    assert_int_equal(ann_get_u32(file + 20), 4);
    assert_int_equal(ann_get_u32(file + 24), 256);
    assert_int_equal(ann_get_u32(file + 28), ANN_METRIC_IP);
    assert_int_equal(ann_get_u64(file + 32), 9);
    assert_int_equal(ann_get_u64(file + 40), n);

    pq_codebook *back = NULL;
    assert_int_equal(pq_codebook_load(path, &back), 0);
    assert_int_equal(back->dim, dim);
    assert_int_equal(back->m, m);
    assert_int_equal(back->metric, ANN_METRIC_IP);
    assert_memory_equal(back->centroids, cb->centroids, (size_t)m * 256 * 4 * sizeof(float));
    pq_codebook_destroy(back);
    back = NULL;

    /* one flipped centroid byte: checksum */
    file[100] ^= 0x40;
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(pq_codebook_load(path, &back), ANN_ECORRUPT);
    assert_null(back);
    assert_non_null(strstr(ann_errmsg(ANN_ECORRUPT), "checksum mismatch"));
    file[100] ^= 0x40;

    /* a damaged version field: the checksum speaks first */
    const uint32_t sum = ann_get_u32(file + len - 4);
    file[8] = 2;
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(pq_codebook_load(path, &back), ANN_ECORRUPT);
    snprintf(msg, sizeof msg, "%s: checksum mismatch (stored %08x, computed %08x)", path, sum,
             (uint32_t)crc32(0L, file, (uInt)(len - 4)));
    assert_string_equal(ann_errmsg(ANN_ECORRUPT), msg);

    /* wrong version, checksum valid */
    ann_put_u32(file + len - 4, (uint32_t)crc32(0L, file, (uInt)(len - 4)));
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(pq_codebook_load(path, &back), ANN_EVERSION);
    snprintf(msg, sizeof msg, "%s: PQ codebook version 2, this build reads 1; rebuild the index",
             path);
    assert_string_equal(ann_errmsg(ANN_EVERSION), msg);
    file[8] = 1;

    /* bad magic, checksum valid */
    file[0] = 'X';
    ann_put_u32(file + len - 4, (uint32_t)crc32(0L, file, (uInt)(len - 4)));
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(pq_codebook_load(path, &back), ANN_EFORMAT);
    snprintf(msg, sizeof msg, "%s: bad magic, expected \"ANNPQCB\" (PQ codebook)", path);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), msg);
    file[0] = 'A';
    ann_put_u32(file + len - 4, sum);

    /* m larger than dim */
    file[16] = 21;
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(pq_codebook_load(path, &back), ANN_EFORMAT);
    snprintf(msg, sizeof msg, "%s: field m = 21 out of range [1, dim 20]", path);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), msg);
    file[16] = (uint8_t)m;

    /* truncated */
    assert_int_equal(tu_write_file(path, file, len - 10), 0);
    assert_int_equal(pq_codebook_load(path, &back), ANN_EFORMAT);
    assert_non_null(strstr(ann_errmsg(ANN_EFORMAT), ": size "));
    assert_null(back);

    free(file);
    tu_rmdir(dir);
    free(x);
    pq_codebook_destroy(cb);
}

/* Seeded mutation fuzzing of the codebook file (checksum recomputed). */
static void test_pq_load_fuzz(void **state)
{
    (void)state;
    float *x = tu_clustered(600, 12, 4, 61, 0);
    pq_codebook *cb = train(x, 600, 12, ANN_METRIC_L2, 3, 1, 1);
    char *dir = tu_tmpdir("pq-fuzz");
    char path[4096];
    snprintf(path, sizeof path, "%s/cb.pqcb", dir);
    assert_int_equal(pq_codebook_save(cb, path), 0);
    size_t len = 0;
    uint8_t *orig = tu_read_file(path, &len);
    uint8_t *buf = malloc(len);
    uint64_t rs = 7;
    int refused = 0;
    for (int iter = 0; iter < 400; iter++) {
        memcpy(buf, orig, len);
        size_t at = tu_rand(&rs) % 48;
        buf[at] = (uint8_t)tu_rand(&rs);
        if (iter % 3 == 0) /* a centroid float, e.g. into a NaN */
            memset(buf + 48 + 4 * (tu_rand(&rs) % (3 * 256 * 4)), 0xff, 4);
        uLong c = crc32(crc32(0L, Z_NULL, 0), buf, (uInt)(len - 4));
        ann_put_u32(buf + len - 4, (uint32_t)c);
        size_t cut = iter % 7 == 0 ? tu_rand(&rs) % len : len;
        assert_int_equal(tu_write_file(path, buf, cut), 0);
        pq_codebook *back = NULL;
        int rc = pq_codebook_load(path, &back);
        if (rc == 0) {
            assert_true(back->m >= 1 && back->m <= back->dim);
            pq_codebook_destroy(back);
        } else {
            assert_true(rc == ANN_EFORMAT || rc == ANN_ECORRUPT || rc == ANN_EVERSION);
            assert_null(back);
            refused++;
        }
    }
    assert_true(refused > 100);
    free(buf);
    free(orig);
    tu_rmdir(dir);
    free(x);
    pq_codebook_destroy(cb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pq_reconstruction_error),
        cmocka_unit_test(test_pq_adc_l2),
        cmocka_unit_test(test_pq_adc_ip),
        cmocka_unit_test(test_pq_table_ip_any_metric),
        cmocka_unit_test(test_pq_adc_cosine),
        cmocka_unit_test(test_pq_adc_bounded),
        cmocka_unit_test(test_pq_adc_padded_dimension),
        cmocka_unit_test(test_pq_cosine_ranks_like_l2),
        cmocka_unit_test(test_pq_deterministic_by_seed),
        cmocka_unit_test(test_pq_lb),
        cmocka_unit_test(test_pq_encode_one),
        cmocka_unit_test(test_pq_sample_caps),
        cmocka_unit_test(test_pq_bad_bytes),
        cmocka_unit_test(test_pq_save_load),
        cmocka_unit_test(test_pq_load_fuzz),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
