/*
 * test_exact.c: exact k-NN (ground truth) against a naive double-precision
 * reference, including exact ties and k > n; the top-k heap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/distance.h"
#include "engines/core/exact.h"
#include "engines/core/topk.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double d;
    int32_t id;
} pair;

static int cmp_pair(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->d != y->d)
        return x->d < y->d ? -1 : 1;
    return x->id - y->id;
}

static void naive(const float *base, uint32_t n, const float *q, uint32_t dim, ann_metric m,
                  uint32_t k, int32_t *ids, double *dists)
{
    pair *all = malloc(n * sizeof *all);
    for (uint32_t i = 0; i < n; i++) {
        all[i].id = (int32_t)i;
        all[i].d = ann_distance_f64(m, q, base + (size_t)i * dim, dim);
    }
    qsort(all, n, sizeof *all, cmp_pair);
    for (uint32_t r = 0; r < k; r++) {
        ids[r] = r < n ? all[r].id : -1;
        dists[r] = r < n ? all[r].d : INFINITY;
    }
    free(all);
}

static void check_metric(ann_metric m, int with_dups)
{
    const uint32_t n = 3000, dim = 40, nq = 37, k = 20;
    float *base = tu_clustered(n, dim, 8, 7 + m, m != ANN_METRIC_L2);
    float *q = tu_clustered(nq, dim, 8, 99 + m, m != ANN_METRIC_L2);
    if (with_dups) /* exact ties: copy 50 rows over others */
        for (uint32_t i = 0; i < 50; i++)
            memcpy(base + (size_t)(n - 1 - i) * dim, base + (size_t)i * dim, dim * sizeof(float));
    /* make query 0 equal a base row so distance 0 (and its duplicate) are top */
    memcpy(q, base + 3 * dim, dim * sizeof(float));

    ann_vecsrc *src;
    assert_int_equal(ann_vecsrc_from_memory(base, n, dim, m, &src), 0);
    int32_t *ids = malloc(nq * k * sizeof *ids), want[64];
    float *dists = malloc(nq * k * sizeof *dists);
    double wd[64];
    assert_int_equal(ann_exact_knn(src, q, nq, k, 2, ids, dists), 0);
    for (uint32_t i = 0; i < nq; i++) {
        naive(base, n, q + (size_t)i * dim, dim, m, k, want, wd);
        for (uint32_t r = 0; r < k; r++) {
            if (ids[i * k + r] != want[r])
                fail_msg("metric %d query %u rank %u: id %d, want %d (d %g vs %g)", m, i, r,
                         ids[i * k + r], want[r], dists[i * k + r], wd[r]);
            assert_true(fabs(dists[i * k + r] - wd[r]) <= 1e-6 * (1 + fabs(wd[r])));
        }
    }
    ann_vecsrc_destroy(src);
    free(ids);
    free(dists);
    free(base);
    free(q);
}

static void test_exact_l2(void **state)
{
    (void)state;
    check_metric(ANN_METRIC_L2, 0);
}

static void test_exact_cosine_with_ties(void **state)
{
    (void)state;
    check_metric(ANN_METRIC_COSINE, 1);
    check_metric(ANN_METRIC_IP, 1);
    check_metric(ANN_METRIC_L2, 1);
}

static void test_exact_k_beyond_n(void **state)
{
    (void)state;
    float base[3 * 2] = { 0, 0, 1, 0, 5, 5 }, q[2] = { 0.9f, 0 };
    ann_vecsrc *src;
    assert_int_equal(ann_vecsrc_from_memory(base, 3, 2, ANN_METRIC_L2, &src), 0);
    int32_t ids[5];
    float d[5];
    assert_int_equal(ann_exact_knn(src, q, 1, 5, 1, ids, d), 0);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 0);
    assert_int_equal(ids[2], 2);
    assert_int_equal(ids[3], -1);
    assert_int_equal(ids[4], -1);
    assert_true(isinf(d[4]));
    ann_vecsrc_destroy(src);
}

static void test_topk_heap(void **state)
{
    (void)state;
    float hd[5];
    uint32_t hi[5], ids[5];
    float ds[5];
    ann_topk t;
    ann_topk_init(&t, hd, hi, 5);
    uint64_t s = 1;
    float best[5] = { INFINITY, INFINITY, INFINITY, INFINITY, INFINITY };
    for (uint32_t i = 0; i < 1000; i++) {
        float d = (float)(tu_rand(&s) % 500);
        ann_topk_push(&t, d, i);
        /* keep a naive sorted best-5 for comparison */
        for (int j = 0; j < 5; j++)
            if (d < best[j]) {
                memmove(best + j + 1, best + j, (size_t)(4 - j) * sizeof(float));
                best[j] = d;
                break;
            }
    }
    assert_int_equal(ann_topk_sorted(&t, ids, ds), 5);
    for (int j = 0; j < 5; j++)
        assert_float_equal(ds[j], best[j], 0);
    for (int j = 1; j < 5; j++)
        assert_true(ds[j - 1] < ds[j] || (ds[j - 1] == ds[j] && ids[j - 1] < ids[j]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_l2),
        cmocka_unit_test(test_exact_cosine_with_ties),
        cmocka_unit_test(test_exact_k_beyond_n),
        cmocka_unit_test(test_topk_heap),
    };
    return cmocka_run_group_tests_name("exact", tests, NULL, NULL);
}
