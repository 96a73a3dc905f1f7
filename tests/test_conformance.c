/*
 * test_conformance.c: one suite run against every registered engine through
 * the vtable: recall@10 against exact search above a bound on
 * seeded data (l2 and cosine), k > n, an empty index, duplicate vectors,
 * reopen after close, unknown parameters; recall on hard generated data
 * (768-d, small efforts: every approximate engine below 1, bounded at its
 * measured value minus a margin); truncated index files, through both
 * stores of every record engine (an error, or for a file the open does not
 * read, exactly the untruncated answers: none "still answers" unexamined);
 * a corrupt record through both stores (an error naming the checksum).
 * ANNLAB_CONFORMANCE_DIM sets the dimension (64 by default; CI runs 100,
 * 101 and 960 under ASan/UBSan; the hard-data case has its own dimension
 * and runs, reporting a skip otherwise, only at the default).  Engines not
 * compiled in are not registered; an engine registered without a row in
 * `cases` and `hard_cases` fails the suite, so none is untested.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/generate.h"
#include "engines/core/distance.h"
#include "engines/core/exact.h"
#include "engines/core/status.h"
#include "engines/engine.h"
#include "tests/support/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 4000
/* The dimension: 64, or ANNLAB_CONFORMANCE_DIM (CI runs 100, 101 and 960
 * under the sanitizers: SIMD bodies and tails, odd rows in every layout). */
#define DIM_MAX 1024
static int conf_dim = 64;
#define DIM conf_dim
#define NQ 60
#define K 10

typedef struct {
    const char *engine;
    const char *build;  /* JSON */
    const char *open;   /* JSON */
    const char *search; /* JSON, an effort expected to reach min_recall */
    double min_recall;
} conf_case;

/* The DiskANN cases search at L 200.  At 960 dimensions their 32-byte
 * codes (30 dimensions a byte) guide the search coarsely, and at L 100 the
 * cosine recall@10 moved between builds (the graph is built on several
 * threads) from 0.943 to 0.975 for diskann-sector and 0.958-0.975 for the
 * record engines, around the 0.95 bound (2026-12-04: twelve sector runs,
 * a CI failure among them); at L 200, 0.983-1.000 in four runs at 960 and
 * 1.000 at 64 and 101 dimensions. */
static const conf_case cases[] = {
    { "flat", "{}", "{}", "{}", 1.0 },
    { "diskann-sector", "{\"R\": 32, \"L_build\": 64, \"pq_bytes\": 32}", "{\"io\": \"pread\"}",
      "{\"L\": 200, \"beam_width\": 4}", 0.95 },
    { "diskann-record", "{\"R\": 32, \"L_build\": 64, \"pq_bytes\": 32}", "{\"kv\": \"lmdb\"}",
      "{\"L\": 200}", 0.95 },
    { "diskann-resident", "{\"R\": 32, \"L_build\": 64, \"pq_bytes\": 32}",
      "{\"kv\": \"rocksdb\"}", "{\"L\": 200}", 0.95 },
    { "hnsw-record", "{\"M\": 16, \"ef_construction\": 100}", "{\"kv\": \"lmdb\"}",
      "{\"ef_search\": 100}", 0.95 },
    { "ivfpq-record", "{\"nlist\": 64, \"pq_bytes\": 32}", "{\"kv\": \"lmdb\"}",
      "{\"nprobe\": 32, \"rerank\": 10}", 0.95 },
    { "ref-hnswlib", "{\"M\": 16, \"ef_construction\": 100}", "{}", "{\"ef_search\": 100}", 0.95 },
    { "ref-faiss-ivfpq", "{\"nlist\": 64, \"pq_bytes\": 32}", "{}",
      "{\"nprobe\": 32, \"rerank\": 10}", 0.95 },
    { "ref-faiss-hnsw", "{\"M\": 16, \"ef_construction\": 100}", "{}", "{\"ef_search\": 100}",
      0.95 },
};

static json_t *js(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j)
        fail_msg("bad JSON in test table: %s", text);
    return j;
}

static const conf_case *case_for(const char *engine)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(cases[i].engine, engine))
            return &cases[i];
    return NULL;
}

/* Build into dir/name; returns the index path (static buffer per call site). */
static int build(const ann_engine_ops *ops, const conf_case *c, const float *data, uint64_t n,
                 ann_metric m, const char *dir, const char *name, char *path)
{
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(data, n, DIM, m, &src), 0);
    snprintf(path, 4096, "%s/%s", dir, name);
    json_t *bp = js(c->build);
    /* FAISS's PQ needs pq_bytes to divide the dimension (ANNLAB_CONFORMANCE_DIM
     * 100, 101): the smallest divisor of DIM from the table's value up */
    json_t *pq = json_object_get(bp, "pq_bytes");
    if (!strncmp(ops->name, "ref-faiss", 9) && json_is_integer(pq) &&
        DIM % json_integer_value(pq) != 0) {
        json_int_t m = json_integer_value(pq);
        while (m < DIM && DIM % m != 0)
            m++;
        json_object_set_new(bp, "pq_bytes", json_integer(m));
    }
    int rc = ann_engine_build(ops, src, bp, path, NULL, NULL);
    json_decref(bp);
    ann_vecsrc_destroy(src);
    return rc;
}

typedef struct {
    ann_engine *eng;
    ann_ctx *ctx;
} opened;

static int open_ctx(const ann_engine_ops *ops, const conf_case *c, const char *path, uint32_t kmax,
                    opened *o)
{
    json_t *op = js(c->open), *sp = js(c->search);
    o->eng = NULL;
    o->ctx = NULL;
    int rc = ann_engine_open(ops, path, op, &o->eng, NULL);
    if (!rc) {
        rc = ann_engine_ctx_new(ops, o->eng, sp, kmax, &o->ctx);
        if (rc) {
            ops->close(o->eng);
            o->eng = NULL;
        }
    }
    json_decref(op);
    json_decref(sp);
    return rc;
}

static void close_ctx(const ann_engine_ops *ops, opened *o)
{
    ops->ctx_free(o->ctx);
    ops->close(o->eng);
}

/* Mean recall@K of the engine over the queries, against exact search. */
static double recall_of(const ann_engine_ops *ops, opened *o, const float *data, const float *q,
                        ann_metric m, uint32_t **ids_out)
{
    ann_vecsrc *src;
    assert_int_equal(ann_vecsrc_from_memory(data, N, DIM, m, &src), 0);
    int32_t gt[NQ * K];
    float gd[NQ * K];
    assert_int_equal(ann_exact_knn(src, q, NQ, K, 1, gt, gd), 0);
    ann_vecsrc_destroy(src);
    uint32_t *all = calloc(NQ * K, sizeof *all);
    double hits = 0;
    for (int i = 0; i < NQ; i++) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        int got = ops->search(o->ctx, q + (size_t)i * DIM, K, ids, d, &st);
        if (got != K)
            fail_msg("%s: query %d returned %d (%s)", ops->name, i, got,
                     got < 0 ? ann_errmsg(got) : "short");
        for (int r = 0; r < K; r++) {
            all[i * K + r] = ids[r];
            assert_true(ids[r] < N);
            if (r > 0)
                assert_true(d[r - 1] <= d[r] + 1e-5f);
            for (int s = 0; s < r; s++)
                if (ids[s] == ids[r])
                    fail_msg("%s: query %d returned id %u twice", ops->name, i, ids[r]);
            for (int g = 0; g < K; g++)
                if ((int32_t)ids[r] == gt[i * K + g]) {
                    hits++;
                    break;
                }
        }
    }
    if (ids_out)
        *ids_out = all;
    else
        free(all);
    return hits / (NQ * K);
}

static void run_recall(const ann_engine_ops *ops, const conf_case *c, const char *dir,
                       ann_metric m)
{
    float *data = tu_clustered(N, DIM, 40, 1234 + m, m != ANN_METRIC_L2);
    float *q = tu_clustered(NQ, DIM, 40, 1234 + m + 7, m != ANN_METRIC_L2);
    /* queries from the same clusters, as far from their base row as cluster
     * members are from each other (spread 0.3), so neighbours are not obvious */
    uint64_t s = 99;
    for (int i = 0; i < NQ; i++) {
        float *row = q + (size_t)i * DIM;
        for (int j = 0; j < DIM; j++)
            row[j] = data[(size_t)(i * 53) * DIM + j] + 0.3f * tu_gauss(&s) /
                                                             (m != ANN_METRIC_L2 ? 8.0f : 1.0f);
        if (m != ANN_METRIC_L2)
            ann_normalize(row, DIM);
    }
    char path[4096];
    char name[64];
    snprintf(name, sizeof name, "%s-%s", ops->name, ann_metric_name(m));
    int rc = build(ops, c, data, N, m, dir, name, path);
    if (rc)
        fail_msg("%s: build failed: %s", ops->name, ann_errmsg(rc));
    opened o;
    rc = open_ctx(ops, c, path, K, &o);
    if (rc)
        fail_msg("%s: open failed: %s", ops->name, ann_errmsg(rc));
    assert_int_equal(ops->size(o.eng), N);
    uint32_t *first = NULL, *again = NULL;
    double r = recall_of(ops, &o, data, q, m, &first);
    print_message("%-18s %-6s recall@10 %.3f (bound %.2f)\n", ops->name, ann_metric_name(m), r,
                  c->min_recall);
    if (r < c->min_recall)
        fail_msg("%s %s: recall@10 %.3f below %.2f", ops->name, ann_metric_name(m), r,
                 c->min_recall);
    close_ctx(ops, &o);

    /* reopen after close: same answers */
    rc = open_ctx(ops, c, path, K, &o);
    if (rc)
        fail_msg("%s: reopen failed: %s", ops->name, ann_errmsg(rc));
    double r2 = recall_of(ops, &o, data, q, m, &again);
    assert_true(fabs(r - r2) < 1e-9);
    assert_memory_equal(first, again, NQ * K * sizeof *first);
    close_ctx(ops, &o);
    free(first);
    free(again);
    free(data);
    free(q);
}

static void test_recall_and_reopen(void **state)
{
    const char *dir = *state;
    int seen = 0;
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *ops = ann_engine_at(i);
        const conf_case *c = case_for(ops->name);
        if (!c)
            fail_msg("engine %s has no conformance case", ops->name);
        run_recall(ops, c, dir, ANN_METRIC_L2);
        run_recall(ops, c, dir, ANN_METRIC_COSINE);
        seen++;
    }
    assert_true(seen >= 1);
}

/*
 * Hard data (issue 19): on the 4,000 clustered rows above every engine
 * scores 1.000 at its table effort, so a bound of 0.95 cannot catch a
 * regression.  Here the generator's Cohere-shaped 768-d data (cosine,
 * datasets/generate.h) and its GIST-like l2 data at 768-d, 2,000 rows, 200
 * queries from the query stream, and small graphs and efforts put recall
 * well below 1; each engine's bound is its measured recall minus about
 * 0.03 (measured values in the table), so halving the recall fails.
 * Recall is a mean over 2,000 neighbours: a margin of 0.03 is 60 of them.
 */
#define HARD_N 2000
#define HARD_NQ 200
#define HARD_DIM 768

typedef struct {
    const char *engine;
    const char *build, *open, *search; /* JSON */
    double min_recall[2];              /* l2, cosine: measured - 0.03 */
} hard_case;

static const hard_case hard_cases[] = {
    /* exact: no margin */
    { "flat", "{}", "{}", "{}", { 1.0, 1.0 } },
    /* measured l2 0.702, cosine 0.710 (built on several threads: not
     * deterministic; at 50 queries three builds spread by 0.028, hence 0.04) */
    { "diskann-sector", "{\"R\": 16, \"L_build\": 32, \"pq_bytes\": 16}", "{\"io\": \"pread\"}",
      "{\"L\": 10, \"beam_width\": 2}", { 0.66, 0.67 } },
    /* measured l2 0.657, cosine 0.664 (as diskann-sector: margin 0.04) */
    { "diskann-record", "{\"R\": 16, \"L_build\": 32, \"pq_bytes\": 16}", "{\"kv\": \"lmdb\"}",
      "{\"L\": 10}", { 0.61, 0.62 } },
    /* measured l2 0.657, cosine 0.660 (as diskann-sector: margin 0.04) */
    { "diskann-resident", "{\"R\": 16, \"L_build\": 32, \"pq_bytes\": 16}",
      "{\"kv\": \"rocksdb\"}", "{\"L\": 10}", { 0.61, 0.62 } },
    /* measured l2 0.867, cosine 0.891 built on one thread, 0.865 / 0.886 on two
     * (the default since the threaded build: not deterministic, margin 0.04) */
    { "hnsw-record", "{\"M\": 8, \"ef_construction\": 32}", "{\"kv\": \"lmdb\"}",
      "{\"ef_search\": 10}", { 0.82, 0.84 } },
    /* measured l2 0.596, cosine 0.610 */
    { "ivfpq-record", "{\"nlist\": 32, \"pq_bytes\": 16}", "{\"kv\": \"rocksdb\"}",
      "{\"nprobe\": 2, \"rerank\": 2}", { 0.56, 0.58 } },
    /* measured l2 0.872, cosine 0.878 (threaded build: margin 0.04) */
    { "ref-hnswlib", "{\"M\": 8, \"ef_construction\": 32}", "{}", "{\"ef_search\": 10}",
      { 0.83, 0.83 } },
    /* measured l2 0.539, cosine 0.528 */
    { "ref-faiss-ivfpq", "{\"nlist\": 32, \"pq_bytes\": 16}", "{}",
      "{\"nprobe\": 2, \"rerank\": 2}", { 0.50, 0.49 } },
    /* measured l2 0.842, cosine 0.862 */
    { "ref-faiss-hnsw", "{\"M\": 8, \"ef_construction\": 32}", "{}", "{\"ef_search\": 10}",
      { 0.81, 0.83 } },
};

static double hard_recall(const ann_engine_ops *ops, const hard_case *c, const char *dir,
                          ann_metric m, const float *data, const float *q, const int32_t *gt)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hard-%s-%s", dir, ops->name, ann_metric_name(m));
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(data, HARD_N, HARD_DIM, m, &src), 0);
    json_t *bp = js(c->build), *op = js(c->open), *sp = js(c->search);
    int rc = ann_engine_build(ops, src, bp, path, NULL, NULL);
    ann_vecsrc_destroy(src);
    if (rc)
        fail_msg("%s %s: hard build failed: %s", ops->name, ann_metric_name(m), ann_errmsg(rc));
    ann_engine *eng = NULL;
    ann_ctx *ctx = NULL;
    rc = ann_engine_open(ops, path, op, &eng, NULL);
    if (rc)
        fail_msg("%s: hard open failed: %s", ops->name, ann_errmsg(rc));
    rc = ann_engine_ctx_new(ops, eng, sp, K, &ctx);
    if (rc)
        fail_msg("%s: hard ctx failed: %s", ops->name, ann_errmsg(rc));
    double hits = 0;
    for (int i = 0; i < HARD_NQ; i++) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        int got = ops->search(ctx, q + (size_t)i * HARD_DIM, K, ids, d, &st);
        if (got != K)
            fail_msg("%s: hard query %d returned %d (%s)", ops->name, i, got,
                     got < 0 ? ann_errmsg(got) : "short");
        for (int r = 0; r < K; r++)
            for (int g = 0; g < K; g++)
                if ((int32_t)ids[r] == gt[i * K + g]) {
                    hits++;
                    break;
                }
    }
    ops->ctx_free(ctx);
    ops->close(eng);
    json_decref(bp);
    json_decref(op);
    json_decref(sp);
    return hits / (HARD_NQ * K);
}

static int dim_from_env;

static void test_recall_on_hard_data(void **state)
{
    const char *dir = *state;
    if (dim_from_env) {
        print_message("ANNLAB_CONFORMANCE_DIM set: the hard-data case (768-d) runs at the default "
                      "only: skipping\n");
        skip();
        return;
    }
    static const ann_metric metrics[2] = { ANN_METRIC_L2, ANN_METRIC_COSINE };
    for (int mi = 0; mi < 2; mi++) {
        ann_metric m = metrics[mi];
        ann_gen_params gp = { .dim = HARD_DIM, .metric = m, .seed = 19 };
        ann_generator *g = NULL;
        assert_int_equal(ann_generator_create(&gp, &g), 0);
        float *data = malloc((size_t)HARD_N * HARD_DIM * sizeof *data);
        float *q = malloc((size_t)HARD_NQ * HARD_DIM * sizeof *q);
        assert_non_null(data);
        assert_non_null(q);
        assert_int_equal(ann_generator_rows(g, ANN_GEN_BASE, 0, HARD_N, data), 0);
        assert_int_equal(ann_generator_rows(g, ANN_GEN_QUERY, 0, HARD_NQ, q), 0);
        ann_generator_destroy(g);
        ann_vecsrc *src = NULL;
        assert_int_equal(ann_vecsrc_from_memory(data, HARD_N, HARD_DIM, m, &src), 0);
        int32_t gt[HARD_NQ * K];
        float gd[HARD_NQ * K];
        assert_int_equal(ann_exact_knn(src, q, HARD_NQ, K, 1, gt, gd), 0);
        ann_vecsrc_destroy(src);
        int seen = 0;
        for (size_t i = 0; ann_engine_at(i); i++) {
            const ann_engine_ops *ops = ann_engine_at(i);
            const hard_case *c = NULL;
            for (size_t j = 0; j < sizeof hard_cases / sizeof hard_cases[0]; j++)
                if (!strcmp(hard_cases[j].engine, ops->name))
                    c = &hard_cases[j];
            if (!c)
                fail_msg("engine %s has no hard-data case", ops->name);
            double r = hard_recall(ops, c, dir, m, data, q, gt);
            print_message("%-18s %-6s hard recall@10 %.3f (bound %.3f)\n", ops->name,
                          ann_metric_name(m), r, c->min_recall[mi]);
            if (r < c->min_recall[mi])
                fail_msg("%s %s: hard-data recall@10 %.3f below %.3f", ops->name,
                         ann_metric_name(m), r, c->min_recall[mi]);
            seen++;
        }
        assert_true(seen >= 6);
        free(data);
        free(q);
    }
}

static void test_k_beyond_n_and_duplicates(void **state)
{
    const char *dir = *state;
    enum { TINY = 7 };
    float data[TINY * DIM_MAX];
    uint64_t s = 5;
    for (int i = 0; i < TINY * DIM; i++)
        data[i] = tu_gauss(&s);
    memcpy(data + 4 * DIM, data + 1 * DIM, DIM * sizeof(float)); /* a duplicate vector */
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *ops = ann_engine_at(i);
        const conf_case *c = case_for(ops->name);
        char path[4096], name[64];
        snprintf(name, sizeof name, "tiny-%s", ops->name);
        int rc = build(ops, c, data, TINY, ANN_METRIC_L2, dir, name, path);
        if (rc)
            fail_msg("%s: tiny build failed: %s", ops->name, ann_errmsg(rc));
        opened o;
        rc = open_ctx(ops, c, path, 20, &o);
        if (rc)
            fail_msg("%s: tiny open failed: %s", ops->name, ann_errmsg(rc));
        uint32_t ids[20];
        float d[20];
        ann_stats st = { 0 };
        int got = ops->search(o.ctx, data + 1 * DIM, 20, ids, d, &st);
        if (got != TINY)
            fail_msg("%s: k=20 over %d vectors returned %d", ops->name, TINY, got);
        /* the query is vector 1 and its duplicate 4: both at distance ~0, first */
        assert_true((ids[0] == 1 && ids[1] == 4) || (ids[0] == 4 && ids[1] == 1));
        assert_true(d[0] < 1e-3f && d[1] < 1e-3f);
        int count[TINY] = { 0 };
        for (int r = 0; r < got; r++) {
            assert_true(ids[r] < TINY);
            count[ids[r]]++;
        }
        for (int v = 0; v < TINY; v++)
            assert_int_equal(count[v], 1);
        close_ctx(ops, &o);
    }
}

static void test_empty_index(void **state)
{
    const char *dir = *state;
    float dummy[DIM_MAX] = { 0 };
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *ops = ann_engine_at(i);
        const conf_case *c = case_for(ops->name);
        char path[4096], name[64];
        snprintf(name, sizeof name, "empty-%s", ops->name);
        int rc = build(ops, c, dummy, 0, ANN_METRIC_L2, dir, name, path);
        if (rc) {
            /* refusing an empty input is allowed, with nothing left behind */
            struct stat st;
            assert_int_not_equal(stat(path, &st), 0);
            print_message("%-18s refuses an empty build: %s\n", ops->name, ann_errmsg(rc));
            continue;
        }
        opened o;
        rc = open_ctx(ops, c, path, K, &o);
        if (rc)
            fail_msg("%s: empty open failed: %s", ops->name, ann_errmsg(rc));
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        assert_int_equal(ops->search(o.ctx, dummy, K, ids, d, &st), 0);
        close_ctx(ops, &o);
    }
}

static void test_unknown_parameter(void **state)
{
    const char *dir = *state;
    float data[3 * DIM_MAX] = { 0 };
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *ops = ann_engine_at(i);
        ann_vecsrc *src;
        assert_int_equal(ann_vecsrc_from_memory(data, 3, DIM, ANN_METRIC_L2, &src), 0);
        char path[4096];
        snprintf(path, sizeof path, "%s/badparam-%s", dir, ops->name);
        json_t *bp = js("{\"no_such_param\": 1}");
        int rc = ann_engine_build(ops, src, bp, path, NULL, NULL);
        assert_int_equal(rc, ANN_EPARAM);
        assert_non_null(strstr(ann_errmsg(rc), "no_such_param: unknown parameter"));
        struct stat st;
        assert_int_not_equal(stat(path, &st), 0);
        json_decref(bp);
        ann_vecsrc_destroy(src);
    }
}

/*
 * Issue 16: open and ctx_new go through ann_engine_open / ann_engine_ctx_new,
 * which validate against the engine's tables (no engine validates its own),
 * and every engine's open fills the open report's common keys.
 */
static void test_open_and_ctx_wrappers(void **state)
{
    const char *dir = *state;
    float *data = tu_clustered(200, DIM, 4, 6, 0);
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *ops = ann_engine_at(i);
        const conf_case *c = case_for(ops->name);
        char path[4096], name[64];
        snprintf(name, sizeof name, "wrap-%s", ops->name);
        int rc = build(ops, c, data, 200, ANN_METRIC_L2, dir, name, path);
        if (rc)
            fail_msg("%s: build failed: %s", ops->name, ann_errmsg(rc));
        json_t *bad = js("{\"no_such_param\": 1}"), *op = js(c->open), *sp = js(c->search);
        ann_engine *eng = (ann_engine *)1;
        json_t *report = json_null(); /* a singleton: must come back NULL, nothing leaks */
        rc = ann_engine_open(ops, path, bad, &eng, &report);
        assert_int_equal(rc, ANN_EPARAM);
        assert_non_null(strstr(ann_errmsg(rc), "open.no_such_param: unknown parameter"));
        assert_null(eng);
        assert_null(report);
        assert_int_equal(ann_engine_open(ops, path, op, &eng, &report), 0);
        const json_t *io = json_object_get(report, "io");
        if (!json_is_string(io) || !json_is_boolean(json_object_get(report, "o_direct")) ||
            !json_is_integer(json_object_get(report, "cache_bytes")))
            fail_msg("%s: open report lacks io/o_direct/cache_bytes", ops->name);
        print_message("%-18s open_report io %s\n", ops->name, json_string_value(io));
        ann_ctx *ctx = (ann_ctx *)1;
        rc = ann_engine_ctx_new(ops, eng, bad, K, &ctx);
        assert_int_equal(rc, ANN_EPARAM);
        assert_non_null(strstr(ann_errmsg(rc), "search.no_such_param: unknown parameter"));
        assert_null(ctx);
        assert_int_equal(ann_engine_ctx_new(ops, eng, sp, K, &ctx), 0);
        ops->ctx_free(ctx);
        ops->close(eng);
        json_decref(report);
        json_decref(bad);
        json_decref(op);
        json_decref(sp);
    }
    free(data);
}

/* The record engines keep one store per backend in the index directory
 * (build `kv` both by default); each is opened in turn. */
static const char *const stores[] = { "lmdb", "rocksdb" };

static int is_record_engine(const char *name)
{
    return !strcmp(name, "diskann-record") || !strcmp(name, "diskann-resident") ||
           !strcmp(name, "hnsw-record") || !strcmp(name, "ivfpq-record");
}

/* Open JSON of case c with "kv" replaced by store (NULL: as in the table). */
static char *open_json_for(const conf_case *c, const char *store)
{
    json_t *op = js(c->open);
    if (store)
        json_object_set_new(op, "kv", json_string(store));
    char *text = json_dumps(op, JSON_COMPACT);
    json_decref(op);
    return text;
}

#define TQ 20 /* queries of the truncation and corruption checks: rows 0, 97, 194, ... */

/* The answers to the TQ queries, or a negative code from open or search. */
static int answers(const ann_engine_ops *ops, const conf_case *c, const char *index,
                   const float *data, uint32_t *ids, float *dists)
{
    opened o;
    int rc = open_ctx(ops, c, index, K, &o);
    if (rc)
        return rc;
    for (int q = 0; q < TQ && rc >= 0; q++) {
        ann_stats st = { 0 };
        rc = ops->search(o.ctx, data + (size_t)q * 97 * DIM, K, ids + q * K, dists + q * K, &st);
        if (rc >= 0 && rc != K)
            fail_msg("%s: query %d returned %d results silently", ops->name, q, rc);
    }
    close_ctx(ops, &o);
    return rc < 0 ? rc : 0;
}

/*
 * Files of an index that an open with this store legitimately does not
 * read, so that truncating them must leave every answer exactly as it was:
 * the reason, or NULL (then the truncation must fail with an error).
 * rel is the path under the index directory.
 */
static const char *unread_reason(const char *store, const char *rel)
{
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    if (store) {
        const char *other = !strcmp(store, "lmdb") ? "rocksdb/" : "lmdb/";
        if (!strncmp(rel, other, strlen(other)))
            return "the other store's file (open kv picks one store)";
    }
    if (!strcmp(base, "lock.mdb"))
        return "LMDB's lock file: reader slots only, re-initialised by the first opener";
    if (!strncmp(base, "LOG", 3))
        return "RocksDB's info log: written, never read";
    if (!strncmp(base, "OPTIONS-", 8))
        return "RocksDB's options file: DB::Open does not read it";
    if (!strcmp(base, "IDENTITY"))
        return "RocksDB's IDENTITY: the database's id string, a label read as is";
    return NULL;
}

/*
 * Truncate every index file (one at a time, build.json aside) to half; the
 * index is opened with store (record engines) or as the table says.  Each
 * truncation must make open or search fail with an error, except for files
 * unread_reason names, whose truncation must leave every answer exactly as
 * before: no truncation "still answers" unexamined.
 */
static void truncate_each(const ann_engine_ops *ops, const conf_case *c, const char *index,
                          const float *data, const char *store, const char *sub,
                          const uint32_t *ref_ids, const float *ref_d, int *failed_cleanly)
{
    char dpath[4096];
    snprintf(dpath, sizeof dpath, "%s%s%s", index, sub[0] ? "/" : "", sub);
    DIR *d = opendir(dpath);
    assert_non_null(d);
    struct dirent *e;
    char names[64][256];
    int nn = 0;
    while ((e = readdir(d)) != NULL && nn < 64)
        if (e->d_name[0] != '.' && strcmp(e->d_name, "build.json"))
            snprintf(names[nn++], 256, "%s", e->d_name);
    closedir(d);
    conf_case cs = *c;
    char *open_text = open_json_for(c, store);
    cs.open = open_text;
    for (int f = 0; f < nn; f++) {
        char p[4400], rel[800];
        snprintf(p, sizeof p, "%s/%s", dpath, names[f]);
        snprintf(rel, sizeof rel, "%s%s%s", sub, sub[0] ? "/" : "", names[f]);
        struct stat st;
        if (stat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            truncate_each(ops, c, index, data, store, rel, ref_ids, ref_d, failed_cleanly);
            continue;
        }
        if (st.st_size == 0) /* e.g. RocksDB's LOCK: half of nothing is nothing */
            continue;
        size_t len;
        void *orig = tu_read_file(p, &len);
        assert_non_null(orig);
        assert_int_equal(truncate(p, (off_t)(len / 2)), 0);
        uint32_t ids[TQ * K];
        float dd[TQ * K];
        int rc = answers(ops, &cs, index, data, ids, dd);
        const char *why = unread_reason(store, rel);
        print_message("%-18s %-7s %s truncated -> %s%s\n", ops->name, store ? store : "", rel,
                      rc < 0 ? ann_errmsg(rc) : "same answers: ", rc < 0 ? "" : why ? why : "?");
        if (why) {
            if (rc < 0)
                fail_msg("%s %s: %s truncated: %s, but the file is not read (%s)", ops->name,
                         store ? store : "", rel, ann_errmsg(rc), why);
            if (memcmp(ids, ref_ids, sizeof ids) || memcmp(dd, ref_d, sizeof dd))
                fail_msg("%s %s: %s truncated: answers changed without an error", ops->name,
                         store ? store : "", rel);
        } else {
            if (rc >= 0)
                fail_msg("%s %s: %s truncated to half still answers (%s)", ops->name,
                         store ? store : "",
                         rel, memcmp(ids, ref_ids, sizeof ids) ? "differently" : "the same");
            (*failed_cleanly)++;
        }
        assert_int_equal(tu_write_file(p, orig, len), 0);
        free(orig);
    }
    free(open_text);
}

static void truncate_index(const ann_engine_ops *ops, const conf_case *c, const char *index,
                           const float *data, const char *store)
{
    conf_case cs = *c;
    char *open_text = open_json_for(c, store);
    cs.open = open_text;
    uint32_t ids[TQ * K];
    float dd[TQ * K];
    int rc = answers(ops, &cs, index, data, ids, dd);
    if (rc)
        fail_msg("%s %s: untruncated index: %s", ops->name, store ? store : "", ann_errmsg(rc));
    int failed_cleanly = 0;
    truncate_each(ops, c, index, data, store, "", ids, dd, &failed_cleanly);
    assert_true(failed_cleanly >= 1);
    free(open_text);
}

static void test_truncated_files(void **state)
{
    const char *dir = *state;
    float *data = tu_clustered(N, DIM, 40, 77, 0);
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *ops = ann_engine_at(i);
        const conf_case *c = case_for(ops->name);
        char path[4096], name[64];
        snprintf(name, sizeof name, "trunc-%s", ops->name);
        int rc = build(ops, c, data, N, ANN_METRIC_L2, dir, name, path);
        if (rc)
            fail_msg("%s: build failed: %s", ops->name, ann_errmsg(rc));
        if (is_record_engine(ops->name))
            for (int s = 0; s < 2; s++)
                truncate_index(ops, c, path, data, stores[s]);
        else
            truncate_index(ops, c, path, data, NULL);
    }
    free(data);
}

/* Flip one byte in every copy of pattern in the regular files under dir
 * (recursively; an LMDB file can hold stale copies in free pages); returns
 * how many copies were flipped.  Originals are appended to *saved
 * (path\0 then the file's bytes) by the caller's restore list. */
typedef struct {
    char path[4400];
    void *bytes;
    size_t len;
} saved_file;

static int flip_everywhere(const char *dir, const void *pattern, size_t plen, size_t at,
                           saved_file *saved, int *nsaved)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int flipped = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            flipped += flip_everywhere(p, pattern, plen, at, saved, nsaved);
            continue;
        }
        size_t len;
        unsigned char *b = tu_read_file(p, &len);
        assert_non_null(b);
        int here = 0;
        for (unsigned char *h = b; len >= plen && h <= b + len - plen;) {
            h = memmem(h, (size_t)(b + len - h), pattern, plen);
            if (!h)
                break;
            if (!here) {
                assert_true(*nsaved < 16);
                snprintf(saved[*nsaved].path, sizeof saved[*nsaved].path, "%s", p);
                saved[*nsaved].bytes = malloc(len);
                memcpy(saved[*nsaved].bytes, b, len);
                saved[*nsaved].len = len;
                (*nsaved)++;
            }
            h[at] ^= 0x10;
            here++;
            h += plen;
        }
        if (here)
            assert_int_equal(tu_write_file(p, b, len), 0);
        flipped += here;
        free(b);
    }
    closedir(d);
    return flipped;
}

static void restore(saved_file *saved, int *nsaved)
{
    for (int i = 0; i < *nsaved; i++) {
        assert_int_equal(tu_write_file(saved[i].path, saved[i].bytes, saved[i].len), 0);
        free(saved[i].bytes);
    }
    *nsaved = 0;
}

/* LMDB holds values as written, so the store's value checksum (kv.h) is what
 * catches the flip; RocksDB's block checksum catches it first. */
static void check_corrupt_error(const char *what, const char *store, int rc)
{
    if (rc >= 0)
        fail_msg("%s (%s): no error", what, store);
    const char *msg = ann_errmsg(rc);
    if (!strcmp(store, "lmdb")) {
        if (rc != ANN_ECORRUPT || !strstr(msg, "value checksum"))
            fail_msg("%s (lmdb): %s, want a value checksum error", what, msg);
    } else if (!strstr(msg, "checksum mismatch") && !strstr(msg, "value checksum")) {
        fail_msg("%s (rocksdb): %s, want a checksum error", what, msg);
    }
}

/*
 * A flipped byte in a record through each store of each record engine:
 * in the metadata record (read at open: open fails) and in the full
 * vector of a row that is then asked for (read by the search to score or
 * re-rank it: the search fails).  Every copy of the bytes in the store's
 * files is flipped; a search never answers from a corrupt record.
 */
static void test_corrupt_records(void **state)
{
    const char *dir = *state;
    static const struct {
        const char *engine, *magic;
    } metas[] = {
        { "diskann-record", "ANNDREC" }, { "diskann-resident", "ANNDREC" },
        { "hnsw-record", "ANNHNSW" },    { "ivfpq-record", "ANNIVFQ" },
    };
    float *data = tu_clustered(N, DIM, 40, 78, 0);
    for (size_t i = 0; i < sizeof metas / sizeof metas[0]; i++) {
        const ann_engine_ops *ops = ann_engine_find(metas[i].engine);
        assert_non_null(ops);
        const conf_case *c = case_for(ops->name);
        char path[4096], name[64];
        snprintf(name, sizeof name, "corrupt-%s", ops->name);
        int rc = build(ops, c, data, N, ANN_METRIC_L2, dir, name, path);
        if (rc)
            fail_msg("%s: build failed: %s", ops->name, ann_errmsg(rc));
        for (int s = 0; s < 2; s++) {
            conf_case cs = *c;
            char *open_text = open_json_for(c, stores[s]);
            cs.open = open_text;
            char sdir[4200], what[256];
            snprintf(sdir, sizeof sdir, "%s/%s", path, stores[s]);
            saved_file saved[16];
            int nsaved = 0;

            /* the metadata record: magic, version, then fields */
            int n = flip_everywhere(sdir, metas[i].magic, 8, 20, saved, &nsaved);
            assert_true(n >= 1);
            opened o;
            rc = open_ctx(ops, &cs, path, K, &o);
            if (rc == 0)
                close_ctx(ops, &o);
            snprintf(what, sizeof what, "%s: metadata record flipped (%d copies)", ops->name, n);
            print_message("%-18s %-7s %s -> %s\n", ops->name, stores[s], "metadata record",
                          rc < 0 ? ann_errmsg(rc) : "opens");
            check_corrupt_error(what, stores[s], rc);
            restore(saved, &nsaved);

            /* the full vector of row 291, then asked for */
            const uint32_t row = 291;
            const float *v = data + (size_t)row * DIM;
            n = flip_everywhere(sdir, v, 8 * sizeof(float), 13, saved, &nsaved);
            if (n < 1)
                fail_msg("%s %s: row %u's vector bytes not found in the store", ops->name,
                         stores[s], row);
            rc = open_ctx(ops, &cs, path, K, &o);
            if (rc)
                fail_msg("%s %s: open with a vector flipped: %s", ops->name, stores[s],
                         ann_errmsg(rc));
            uint32_t ids[K];
            float dd[K];
            ann_stats st = { 0 };
            rc = ops->search(o.ctx, v, K, ids, dd, &st);
            close_ctx(ops, &o);
            snprintf(what, sizeof what, "%s: row %u's vector flipped (%d copies), row asked for",
                     ops->name, row, n);
            print_message("%-18s %-7s %s -> %s\n", ops->name, stores[s], "vector record",
                          rc < 0 ? ann_errmsg(rc) : "answers");
            check_corrupt_error(what, stores[s], rc);
            restore(saved, &nsaved);
            free(open_text);
        }
    }
    free(data);
}

/*
 * A search list shorter than k (L, ef_search: parameters marked
 * at_least_k) is refused at ctx_new, naming the parameter and k; before,
 * the DiskANN engines ran at L = k while the cell said L.
 */
static void test_search_list_below_k(void **state)
{
    const char *dir = *state;
    float *data = tu_clustered(200, DIM, 4, 5, 0);
    int checked = 0;
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *ops = ann_engine_at(i);
        const conf_case *c = case_for(ops->name);
        for (const ann_param_spec *sp = ops->search_params; sp && sp->name; sp++) {
            if (!sp->at_least_k)
                continue;
            char path[4096], name[64];
            snprintf(name, sizeof name, "ltk-%s", ops->name);
            int rc = build(ops, c, data, 200, ANN_METRIC_L2, dir, name, path);
            if (rc)
                fail_msg("%s: build failed: %s", ops->name, ann_errmsg(rc));
            json_t *op = js(c->open), *sp5 = json_pack("{s:i}", sp->name, 5);
            ann_engine *eng = NULL;
            ann_ctx *ctx = NULL;
            assert_int_equal(ann_engine_open(ops, path, op, &eng, NULL), 0);
            rc = ann_engine_ctx_new(ops, eng, sp5, K, &ctx);
            char want[128];
            snprintf(want, sizeof want, "search.%s: 5 is less than k = %d", sp->name, K);
            if (rc != ANN_EPARAM || strcmp(ann_errmsg(rc), want) != 0)
                fail_msg("%s: ctx_new with %s 5, k %d: %s (want \"%s\")", ops->name, sp->name, K,
                         rc ? ann_errmsg(rc) : "accepted", want);
            assert_null(ctx);
            /* at k it is fine */
            json_object_set_new(sp5, sp->name, json_integer(K));
            assert_int_equal(ann_engine_ctx_new(ops, eng, sp5, K, &ctx), 0);
            ops->ctx_free(ctx);
            ops->close(eng);
            json_decref(op);
            json_decref(sp5);
            checked++;
        }
    }
    free(data);
    assert_true(checked >= 3); /* diskann-sector, -record, -resident at least */
}

/* Issue 14: a flipped bit in flat's vectors.fbin changed recall without an
 * error; format 2 checks every block at open against flat.json. */
static void test_flat_vectors_checked(void **state)
{
    const char *dir = *state;
    const ann_engine_ops *ops = ann_engine_find("flat");
    float *data = tu_clustered(5000, DIM, 4, 9, 0);
    char path[4096], file[4200];
    int rc = build(ops, case_for("flat"), data, 5000, ANN_METRIC_L2, dir, "flat-flip", path);
    assert_int_equal(rc, 0);
    snprintf(file, sizeof file, "%s/vectors.fbin", path);
    size_t len = 0;
    unsigned char *bytes = tu_read_file(file, &len);
    bytes[8 + (size_t)4500 * DIM * 4 + 1] ^= 0x02; /* row 4500, block 1: still finite */
    assert_int_equal(tu_write_file(file, bytes, len), 0);
    free(bytes);
    ann_engine *e = NULL;
    rc = ann_engine_open(ops, path, NULL, &e, NULL);
    assert_int_equal(rc, ANN_ECORRUPT);
    assert_null(e);
    char want[4400];
    snprintf(want, sizeof want, "%s: rows 4096..4999: checksum 0x", file);
    if (strncmp(ann_errmsg(rc), want, strlen(want)) != 0)
        fail_msg("message \"%s\"", ann_errmsg(rc));
    free(data);
}

static int setup(void **state)
{
    char *dir = tu_tmpdir("conformance");
    *state = dir;
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    tu_rmdir(*state);
    return 0;
}

int main(void)
{
    const char *d = getenv("ANNLAB_CONFORMANCE_DIM");
    if (d && *d) {
        long v = strtol(d, NULL, 10);
        if (v < 8 || v > DIM_MAX) {
            fprintf(stderr, "ANNLAB_CONFORMANCE_DIM=%s: want 8 to %d\n", d, DIM_MAX);
            return 2;
        }
        conf_dim = (int)v;
        dim_from_env = 1;
        print_message("conformance at dim %d\n", conf_dim);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_parameter),
        cmocka_unit_test(test_open_and_ctx_wrappers),
        cmocka_unit_test(test_recall_and_reopen),
        cmocka_unit_test(test_recall_on_hard_data),
        cmocka_unit_test(test_k_beyond_n_and_duplicates),
        cmocka_unit_test(test_empty_index),
        cmocka_unit_test(test_truncated_files),
        cmocka_unit_test(test_corrupt_records),
        cmocka_unit_test(test_search_list_below_k),
        cmocka_unit_test(test_flat_vectors_checked),
    };
    return cmocka_run_group_tests_name("conformance", tests, setup, teardown);
}
