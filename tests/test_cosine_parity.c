/*
 * test_cosine_parity.c: the cosine path of the DiskANN engines finds as
 * many true neighbours as the L2 path on the same unit vectors (issue 13).
 *
 * On unit vectors 1 - <q, x> = |q - x|^2 / 2, so a correct engine ranks the
 * same whichever of the two metrics it is told.  Until the fix the cosine
 * PQ table summed -<q_j, c> (pq.h explains why that ranks worse), and
 * diskann-sector reached recall@10 0.76 at L 50 on 100k generated vectors
 * where the same vectors built as l2 reached 0.93.
 *
 * Data: the synth-768-cosine-10k preset's distribution (annlab's generator,
 * seed 42: 10,000 base rows; the first 200 of its test queries), exact
 * ground truth computed here.  diskann-sector is built single-threaded for
 * each metric, so both graphs and both codebooks come out identical
 * (cosine builds already use squared L2 on unit vectors); diskann-record
 * and diskann-resident (LMDB) take the same graph and PQ from a build cache
 * (ann_build_ctx.artifact_dir), so every difference left is the search path's.
 *
 * Asserted for each engine at L 10, 20 and 50 (W 4): |recall(cosine) -
 * recall(l2)| <= 0.005; at L 50 diskann-sector's cosine recall is at least
 * the l2 path's less one id in 1,000 (float rounding ties); at L 10 it is
 * at least 0.82.  Measured with the fix: 0.849 / 0.996 / 1.000 at L 10 / 20
 * / 50 on both metrics for diskann-sector (record and resident: 0.819 /
 * 0.996 / 1.000).  With the old inner-product table the cosine side gave
 * 0.763 and 0.978 at L 10 and 20 (record 0.743 and 0.978) and every
 * parity assertion failed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/generate.h"
#include "engines/core/exact.h"
#include "engines/core/status.h"
#include "engines/engine.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 10000
#define DIM 768
#define NQ 200
#define K 10

static const char *const engines[] = { "diskann-sector", "diskann-record", "diskann-resident" };
#define N_ENGINES 3
static const uint32_t Ls[] = { 10, 20, 50 };
#define N_LS 3

static char *root;
static char art[4200]; /* the build-artifact cache the DiskANN builds share */
static float *base, *queries;
static int32_t gt[NQ * K];
/* recall[engine][metric 0 cosine, 1 l2][L] */
static double recall[N_ENGINES][2][N_LS];

static json_t *js(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j)
        fail_msg("bad JSON in test: %s", text);
    return j;
}

static double measure(const char *engine, const char *path, const char *open_json, uint32_t L)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    assert_non_null(ops);
    ann_engine *eng = NULL;
    ann_ctx *ctx = NULL;
    char sp_text[96];
    snprintf(sp_text, sizeof sp_text,
             strcmp(engine, "diskann-sector") ? "{\"L\": %u}" : "{\"L\": %u, \"beam_width\": 4}",
             L);
    json_t *op = js(open_json), *sp = js(sp_text);
    int rc = ann_engine_open(ops, path, op, &eng, NULL);
    if (rc == 0)
        rc = ann_engine_ctx_new(ops, eng, sp, K, &ctx);
    json_decref(op);
    json_decref(sp);
    if (rc)
        fail_msg("%s at %s: %s", engine, path, ann_errmsg(rc));
    uint64_t hits = 0;
    for (int q = 0; q < NQ; q++) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        int got = ops->search(ctx, queries + (size_t)q * DIM, K, ids, d, &st);
        if (got != K)
            fail_msg("%s query %d: %d (%s)", engine, q, got, got < 0 ? ann_errmsg(got) : "short");
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++)
                hits += ids[i] == (uint32_t)gt[q * K + j];
    }
    ops->ctx_free(ctx);
    ops->close(eng);
    return (double)hits / (NQ * K);
}

static int setup(void **state)
{
    (void)state;
    root = tu_tmpdir("cospar");
    if (!root)
        return -1;
    snprintf(art, sizeof art, "%s/artifacts", root);
    ann_gen_params gp = { .dim = DIM, .metric = ANN_METRIC_COSINE, .seed = 42 };
    ann_generator *g = NULL;
    base = malloc((size_t)N * DIM * sizeof *base);
    queries = malloc((size_t)NQ * DIM * sizeof *queries);
    if (!base || !queries || ann_generator_create(&gp, &g) ||
        ann_generator_rows(g, ANN_GEN_BASE, 0, N, base) ||
        ann_generator_rows(g, ANN_GEN_QUERY, 0, NQ, queries))
        return -1;
    ann_generator_destroy(g);
    ann_vecsrc *src = NULL;
    float gd[NQ * K];
    if (ann_vecsrc_from_memory(base, N, DIM, ANN_METRIC_COSINE, &src) ||
        ann_exact_knn(src, queries, NQ, K, 0, gt, gd))
        return -1;
    ann_vecsrc_destroy(src);

    static const ann_metric metrics[2] = { ANN_METRIC_COSINE, ANN_METRIC_L2 };
    for (int m = 0; m < 2; m++) {
        for (int e = 0; e < N_ENGINES; e++) {
            /* the sector build (first) fills the cache single-threaded */
            const char *params =
                e == 0 ? "{\"R\": 64, \"L_build\": 100, \"alpha\": 1.2, \"pq_bytes\": 96, "
                         "\"threads\": 1}"
                       : "{\"R\": 64, \"L_build\": 100, \"alpha\": 1.2, \"pq_bytes\": 96, "
                         "\"kv\": \"lmdb\"}";
            char path[4200];
            snprintf(path, sizeof path, "%s/%s-%d", root, engines[e], m);
            if (ann_vecsrc_from_memory(base, N, DIM, metrics[m], &src))
                return -1;
            json_t *bp = js(params);
            ann_build_ctx bctx = { .artifact_dir = art };
            int rc = ann_engine_build(ann_engine_find(engines[e]), src, bp, path, &bctx, NULL);
            json_decref(bp);
            ann_vecsrc_destroy(src);
            if (rc) {
                fprintf(stderr, "build %s (%s): %s\n", engines[e], m ? "l2" : "cosine",
                        ann_errmsg(rc));
                return -1;
            }
            for (int l = 0; l < N_LS; l++)
                recall[e][m][l] =
                    measure(engines[e], path, e == 0 ? "{}" : "{\"kv\": \"lmdb\"}", Ls[l]);
        }
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(root);
    free(base);
    free(queries);
    return 0;
}

static void check_engine(int e)
{
    for (int l = 0; l < N_LS; l++) {
        double c = recall[e][0][l], l2 = recall[e][1][l];
        print_message("%s L %u: recall@10 cosine %.4f, l2 %.4f\n", engines[e], Ls[l], c, l2);
        assert_true(fabs(c - l2) <= 0.005);
    }
}

static void test_sector_cosine_l2_parity(void **state)
{
    (void)state;
    check_engine(0);
    /* synth-768-cosine-10k at L 50: at least the l2 path (one id in 1,000
     * of float-rounding slack); at L 10 far above the broken table's 0.763 */
    assert_true(recall[0][0][2] >= recall[0][1][2] - 0.001);
    assert_true(recall[0][0][0] >= 0.82);
}

static void test_record_cosine_l2_parity(void **state)
{
    (void)state;
    check_engine(1);
}

static void test_resident_cosine_l2_parity(void **state)
{
    (void)state;
    check_engine(2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sector_cosine_l2_parity),
        cmocka_unit_test(test_record_cosine_l2_parity),
        cmocka_unit_test(test_resident_cosine_l2_parity),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
