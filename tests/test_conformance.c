/*
 * test_conformance.c: one suite run against every registered engine through
 * the vtable: recall@10 against exact search above a bound on
 * seeded data (l2 and cosine), k > n, an empty index, duplicate vectors,
 * reopen after close, unknown parameters, and truncated index files (an
 * error, never a crash).  ANNLAB_CONFORMANCE_DIM sets the dimension (64 by
 * default; CI runs 100, 101 and 960 under ASan/UBSan).  Engines not compiled in are skipped; an engine
 * registered without a row in `cases` fails the suite, so none is untested.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

static const conf_case cases[] = {
    { "flat", "{}", "{}", "{}", 1.0 },
    { "diskann-sector", "{\"R\": 32, \"L_build\": 64, \"pq_bytes\": 32}", "{\"io\": \"pread\"}",
      "{\"L\": 100, \"beam_width\": 4}", 0.95 },
    { "diskann-record", "{\"R\": 32, \"L_build\": 64, \"pq_bytes\": 32}", "{\"kv\": \"lmdb\"}",
      "{\"L\": 100}", 0.95 },
    { "diskann-resident", "{\"R\": 32, \"L_build\": 64, \"pq_bytes\": 32}",
      "{\"kv\": \"rocksdb\"}", "{\"L\": 100}", 0.95 },
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

/* Truncate every index file (one at a time) to half: open or search must
 * fail cleanly (or, for files the engine does not need, still answer). */
static void truncate_each(const ann_engine_ops *ops, const conf_case *c, const char *index,
                          const float *data, const char *sub)
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
    for (int f = 0; f < nn; f++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dpath, names[f]);
        struct stat st;
        if (stat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            char sub2[512];
            snprintf(sub2, sizeof sub2, "%s%s%s", sub, sub[0] ? "/" : "", names[f]);
            truncate_each(ops, c, index, data, sub2);
            continue;
        }
        size_t len;
        void *orig = tu_read_file(p, &len);
        assert_non_null(orig);
        assert_int_equal(truncate(p, (off_t)(len / 2)), 0);
        opened o;
        int rc = open_ctx(ops, c, index, K, &o);
        if (rc == 0) {
            uint32_t ids[K];
            float dd[K];
            for (int q = 0; q < 20 && rc >= 0; q++) {
                ann_stats stt = { 0 };
                rc = ops->search(o.ctx, data + (size_t)q * 97 * DIM, K, ids, dd, &stt);
                if (rc >= 0 && rc != K)
                    fail_msg("%s: %s truncated: search returned %d results silently",
                             ops->name, names[f], rc);
            }
            close_ctx(ops, &o);
        }
        print_message("%-18s %s truncated -> %s\n", ops->name, names[f],
                      rc < 0 ? ann_errmsg(rc) : "still answers");
        assert_int_equal(tu_write_file(p, orig, len), 0);
        free(orig);
    }
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
        truncate_each(ops, c, path, data, "");
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
        print_message("conformance at dim %d\n", conf_dim);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_parameter),
        cmocka_unit_test(test_open_and_ctx_wrappers),
        cmocka_unit_test(test_recall_and_reopen),
        cmocka_unit_test(test_k_beyond_n_and_duplicates),
        cmocka_unit_test(test_empty_index),
        cmocka_unit_test(test_truncated_files),
        cmocka_unit_test(test_search_list_below_k),
        cmocka_unit_test(test_flat_vectors_checked),
    };
    return cmocka_run_group_tests_name("conformance", tests, setup, teardown);
}
