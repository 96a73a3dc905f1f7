/*
 * test_kmeans.c: k-means recovers separated clusters, the BLAS assignment
 * matches brute force, results are identical across thread counts for a
 * seed, empty clusters are repaired, bad parameters are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/distance.h"
#include "engines/core/kmeans.h"
#include "engines/core/status.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* n points around `clusters` centres 10 apart on distinct axes, spread 0.1 */
static float *separated(uint32_t n, uint32_t dim, uint32_t clusters, uint64_t seed)
{
    uint64_t s = seed;
    float *x = malloc((size_t)n * dim * sizeof *x);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < dim; d++)
            x[(size_t)i * dim + d] = 0.1f * tu_gauss(&s) + (d == i % clusters ? 10.0f : 0.0f);
    return x;
}

static void test_kmeans_recovers_clusters(void **state)
{
    (void)state;
    const uint32_t n = 4000, dim = 16, k = 8;
    float *x = separated(n, dim, k, 3);
    float *c = malloc((size_t)k * dim * sizeof *c);
    uint32_t *a = malloc(n * sizeof *a);
    kmeans_params p;
    kmeans_params_default(&p, k);
    p.init = KMEANS_INIT_PLUSPLUS;
    kmeans_stats st;
    assert_int_equal(kmeans_train(x, n, dim, &p, c, &st), 0);
    assert_int_equal(kmeans_assign(x, n, dim, c, k, 2, a, NULL), 0);
    /* every true cluster maps to one learned cluster, and they are distinct */
    uint32_t map[8];
    for (uint32_t t = 0; t < k; t++)
        map[t] = a[t];
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(a[i], map[i % k]);
    for (uint32_t t = 0; t < k; t++)
        for (uint32_t u = t + 1; u < k; u++)
            assert_int_not_equal(map[t], map[u]);
    /* objective: E|noise|^2 = dim * 0.01 */
    assert_true(st.objective < dim * 0.01 * 1.2);
    assert_true(st.objective > dim * 0.01 * 0.8);
    free(x);
    free(c);
    free(a);
}

static void test_kmeans_assign_matches_brute_force(void **state)
{
    (void)state;
    const uint32_t n = 3001, dim = 24, k = 37;
    float *x = tu_clustered(n, dim, 10, 5, 0);
    float *c = tu_clustered(k, dim, 10, 6, 0);
    uint32_t *a = malloc(n * sizeof *a);
    float *d = malloc(n * sizeof *d);
    assert_int_equal(kmeans_assign(x, n, dim, c, k, 2, a, d), 0);
    for (uint32_t i = 0; i < n; i++) {
        double best = INFINITY;
        for (uint32_t j = 0; j < k; j++) {
            double v = ann_l2sq_scalar(x + (size_t)i * dim, c + (size_t)j * dim, dim);
            if (v < best)
                best = v;
        }
        double got = ann_l2sq_scalar(x + (size_t)i * dim, c + (size_t)a[i] * dim, dim);
        /* the chosen centroid is the nearest up to float rounding */
        assert_true(got <= best + 1e-4 * (1 + best));
        assert_true(fabs(d[i] - got) <= 1e-3 * (1 + got));
    }
    free(x);
    free(c);
    free(a);
    free(d);
}

static void test_kmeans_deterministic_across_threads(void **state)
{
    (void)state;
    const uint32_t n = 5000, dim = 32, k = 50;
    float *x = tu_clustered(n, dim, 20, 9, 0);
    float *c1 = malloc((size_t)k * dim * sizeof *c1);
    float *c2 = malloc((size_t)k * dim * sizeof *c2);
    float *c3 = malloc((size_t)k * dim * sizeof *c3);
    kmeans_params p;
    kmeans_params_default(&p, k);
    p.threads = 1;
    assert_int_equal(kmeans_train(x, n, dim, &p, c1, NULL), 0);
    p.threads = 2;
    assert_int_equal(kmeans_train(x, n, dim, &p, c2, NULL), 0);
    assert_memory_equal(c1, c2, (size_t)k * dim * sizeof *c1);
    p.seed = 2;
    assert_int_equal(kmeans_train(x, n, dim, &p, c3, NULL), 0);
    assert_memory_not_equal(c1, c3, (size_t)k * dim * sizeof *c1);
    free(x);
    free(c1);
    free(c2);
    free(c3);
}

static void test_kmeans_repairs_empty_clusters(void **state)
{
    (void)state;
    /* 1000 rows, the first 900 of them one repeated point: a sample init
     * draws that point many times, and all but one of those centroids empty */
    const uint32_t n = 1000, dim = 8, k = 40;
    float *x = tu_clustered(n, dim, 5, 11, 0);
    for (uint32_t i = 1; i < 900; i++)
        memcpy(x + (size_t)i * dim, x, dim * sizeof *x);
    float *c = malloc((size_t)k * dim * sizeof *c);
    uint32_t *a = malloc(n * sizeof *a);
    kmeans_params p;
    kmeans_params_default(&p, k);
    p.iters = 20;
    kmeans_stats st;
    assert_int_equal(kmeans_train(x, n, dim, &p, c, &st), 0);
    assert_true(st.empty_fixed > 0);
    for (size_t i = 0; i < (size_t)k * dim; i++)
        assert_true(isfinite(c[i]));
    /* the 100 distinct rows are covered no worse than by 5 cluster centres:
     * repaired centroids moved to where the data is */
    assert_int_equal(kmeans_assign(x, n, dim, c, k, 1, a, NULL), 0);
    uint32_t used = 0;
    uint8_t seen[40] = { 0 };
    for (uint32_t i = 0; i < n; i++)
        if (!seen[a[i]]++)
            used++;
    assert_true(used >= 30);
    free(x);
    free(c);
    free(a);
}

static void test_kmeans_bad_params(void **state)
{
    (void)state;
    float x[4 * 2] = { 0 };
    float c[8 * 2];
    kmeans_params p;
    kmeans_params_default(&p, 8);
    assert_int_equal(kmeans_train(x, 4, 2, &p, c, NULL), ANN_EPARAM);
    assert_string_equal(ann_errmsg(ANN_EPARAM),
                        "kmeans: need 1 <= k <= n < 2^32 and dim > 0 (k 8, n 4, dim 2)");
    kmeans_params_default(&p, 0);
    assert_int_equal(kmeans_train(x, 4, 2, &p, c, NULL), ANN_EPARAM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kmeans_recovers_clusters),
        cmocka_unit_test(test_kmeans_assign_matches_brute_force),
        cmocka_unit_test(test_kmeans_deterministic_across_threads),
        cmocka_unit_test(test_kmeans_repairs_empty_clusters),
        cmocka_unit_test(test_kmeans_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
