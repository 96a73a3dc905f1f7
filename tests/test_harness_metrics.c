/*
 * test_harness_metrics.c: recall (ties count as hits, plain recall does
 * not; duplicate and out-of-range ids are errors naming query and rank;
 * the 5th percentile) and nearest-rank percentiles.
 */
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"
#include "harness/metrics.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/*
 * A 1-d base on a line: id i at position pos[i].  Query 0 at 0.  Ids 2 and
 * 3 are both at distance 4 (a tie at the k-th distance for k = 3).
 */
static const float base_pos[] = { 1, -1, 2, -2, 5, 9 };
static const float queries[] = { 0, 10 };

typedef struct fixture {
    ann_vecsrc *base;
    ann_gt gt;
    int32_t gt_ids[2 * 4];
    float gt_d[2 * 4];
} fixture;

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    if (ann_vecsrc_from_memory(base_pos, 6, 1, ANN_METRIC_L2, &f.base))
        return -1;
    /* query 0: 0 (d 1), 1 (d 1), 2 (d 4), 3 (d 4);  query 1: 5 (1), 4 (25), 2 (64), 0 (81) */
    const int32_t ids[] = { 0, 1, 2, 3, 5, 4, 2, 0 };
    const float d[] = { 1, 1, 4, 4, 1, 25, 64, 81 };
    memcpy(f.gt_ids, ids, sizeof ids);
    memcpy(f.gt_d, d, sizeof d);
    f.gt = (ann_gt){ .nq = 2, .k = 4, .ids = f.gt_ids, .dists = f.gt_d };
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ann_vecsrc_destroy(f->base);
    return 0;
}

static void test_recall_ties(void **state)
{
    fixture *f = *state;
    /* k = 3: query 0 returns 0, 1, 3 (3 ties with gt's 2 at the k-th distance) */
    const uint32_t ids[] = { 0, 1, 3, 5, 4, 2 };
    const uint32_t counts[] = { 3, 3 };
    harness_recall_in in = { .base = f->base, .queries = queries, .nq = 2, .k = 3, .ids = ids,
                             .counts = counts, .gt = &f->gt };
    harness_recall_out out;
    double per[2];
    assert_int_equal(harness_recall(&in, &out, per), 0);
    assert_true(per[0] == 1.0); /* tie-aware: id 3 is as near as id 2 */
    assert_true(per[1] == 1.0);
    assert_true(out.recall == 1.0);
    /* plain: query 0 has 2 of {0, 1, 2}; query 1 has 3 of 3 */
    assert_true(out.recall_plain > 0.8333 && out.recall_plain < 0.8334);
}

static void test_recall_misses_short_and_p5(void **state)
{
    fixture *f = *state;
    /* query 0 returns 0 and 4 (d 25, a miss), query 1 returns only 5 */
    const uint32_t ids[] = { 0, 4, 0, 5, 0, 0 };
    const uint32_t counts[] = { 2, 1 };
    harness_recall_in in = { .base = f->base, .queries = queries, .nq = 2, .k = 3, .ids = ids,
                             .counts = counts, .gt = &f->gt };
    harness_recall_out out;
    double per[2];
    assert_int_equal(harness_recall(&in, &out, per), 0);
    assert_true(per[0] > 0.3333 && per[0] < 0.3334);
    assert_true(per[1] > 0.3333 && per[1] < 0.3334);
    assert_true(out.recall_p5 > 0.3333 && out.recall_p5 < 0.3334);
    assert_true(out.recall_plain > 0.3333 && out.recall_plain < 0.3334);
}

static void test_recall_rejects_duplicates(void **state)
{
    fixture *f = *state;
    const uint32_t ids[] = { 0, 1, 2, 5, 4, 5 };
    const uint32_t counts[] = { 3, 3 };
    harness_recall_in in = { .base = f->base, .queries = queries, .nq = 2, .k = 3, .ids = ids,
                             .counts = counts, .gt = &f->gt };
    harness_recall_out out;
    assert_int_equal(harness_recall(&in, &out, NULL), ANN_EDATA);
    assert_string_equal(ann_errmsg(ANN_EDATA), "query 1 rank 2: id 5 duplicates rank 0");
}

static void test_recall_rejects_out_of_range(void **state)
{
    fixture *f = *state;
    const uint32_t ids[] = { 0, 6, 2, 5, 4, 2 };
    const uint32_t counts[] = { 3, 3 };
    harness_recall_in in = { .base = f->base, .queries = queries, .nq = 2, .k = 3, .ids = ids,
                             .counts = counts, .gt = &f->gt };
    harness_recall_out out;
    assert_int_equal(harness_recall(&in, &out, NULL), ANN_EDATA);
    assert_string_equal(ann_errmsg(ANN_EDATA),
                        "query 0 rank 1: id 6 is out of range (base has 6 vectors)");
}

static void test_recall_gt_too_shallow(void **state)
{
    fixture *f = *state;
    const uint32_t ids[10] = { 0 };
    const uint32_t counts[] = { 0, 0 };
    harness_recall_in in = { .base = f->base, .queries = queries, .nq = 2, .k = 5, .ids = ids,
                             .counts = counts, .gt = &f->gt };
    harness_recall_out out;
    assert_int_equal(harness_recall(&in, &out, NULL), ANN_EPARAM);
}

static void test_percentiles(void **state)
{
    (void)state;
    double v[100];
    for (int i = 0; i < 100; i++)
        v[i] = i + 1;
    /* nearest rank: ceil(p/100 * n) */
    assert_true(harness_percentile(v, 100, 50) == 50);
    assert_true(harness_percentile(v, 100, 95) == 95);
    assert_true(harness_percentile(v, 100, 99) == 99);
    assert_true(harness_percentile(v, 100, 99.9) == 100);
    assert_true(harness_percentile(v, 100, 100) == 100);
    assert_true(harness_percentile(v, 100, 0.5) == 1);
    assert_true(harness_percentile(v, 1, 50) == 1);
    assert_true(harness_percentile(v, 0, 50) == 0);
    double w[] = { 10, 20, 30 };
    assert_true(harness_percentile(w, 3, 50) == 20);
    assert_true(harness_percentile(w, 3, 34) == 20);
    assert_true(harness_percentile(w, 3, 33) == 10);

    /* latency summary in microseconds from nanoseconds, unsorted input */
    uint64_t ns[1000];
    for (int i = 0; i < 1000; i++)
        ns[i] = (uint64_t)(1000 - i) * 1000; /* 1000 us down to 1 us */
    harness_latency lat;
    assert_int_equal(harness_latency_summary(ns, 1000, &lat), 0);
    assert_true(lat.p50 == 500);
    assert_true(lat.p95 == 950);
    assert_true(lat.p99 == 990);
    assert_true(lat.p999 == 999);
    assert_true(lat.max == 1000);
    assert_true(lat.mean == 500.5);
    assert_int_equal(ns[0], 1000000); /* input untouched */

    double m[] = { 3, 1, 2, 10 };
    assert_true(harness_median(m, 4) == 2.5);
    assert_true(harness_median(m, 3) == 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recall_ties),
        cmocka_unit_test(test_recall_misses_short_and_p5),
        cmocka_unit_test(test_recall_rejects_duplicates),
        cmocka_unit_test(test_recall_rejects_out_of_range),
        cmocka_unit_test(test_recall_gt_too_shallow),
        cmocka_unit_test(test_percentiles),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
