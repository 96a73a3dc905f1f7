/*
 * test_ref_peers.c: the reference peers (ref-hnswlib, ref-faiss-ivfpq,
 * ref-faiss-hnsw) through the vtable, on seeded 10k clustered data: recall
 * against exact search above a bound, distances in annlab's convention for
 * every metric, per-context search parameters (two contexts with different
 * efforts on one engine, and threads searching at once), bad parameters with
 * their exact messages, damaged files, and FAISS's machine note.  Skipped
 * when neither library is compiled in.
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
#ifdef ANNLAB_HAVE_FAISS
#include "engines/ref_faiss/ref_faiss.h"
#endif

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N 10000
#define DIM 32
#define NQ 100
#define K 10

typedef struct {
    const char *engine;
    const char *build;
    const char *search;
    double min_recall; /* at `search`, on the l2 data */
} peer_case;

static const peer_case peers[] = {
    { "ref-hnswlib", "{\"M\": 16, \"ef_construction\": 100}", "{\"ef_search\": 64}", 0.95 },
    { "ref-faiss-hnsw", "{\"M\": 16, \"ef_construction\": 100}", "{\"ef_search\": 64}", 0.95 },
    { "ref-faiss-ivfpq", "{\"nlist\": 100, \"pq_bytes\": 16}", "{\"nprobe\": 16, \"rerank\": 10}",
      0.95 },
};
#define NPEERS (sizeof peers / sizeof peers[0])

typedef struct {
    char *dir;
    float *base, *queries;
    int32_t gt[NQ * K];
    float gd[NQ * K];
    char index[NPEERS][4096]; /* l2 index per peer; "" when not compiled in */
} fixture;

static json_t *js(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j)
        fail_msg("bad JSON in test: %s", text);
    return j;
}

static int build_index(const char *engine, const char *params, const float *data, uint64_t n,
                       ann_metric m, const char *path)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(data, n, DIM, m, &src), 0);
    json_t *bp = js(params);
    int rc = ann_engine_build(ops, src, bp, path, NULL, NULL);
    json_decref(bp);
    ann_vecsrc_destroy(src);
    return rc;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir("refpeers");
    f->base = tu_clustered(N, DIM, 50, 2024, 0);
    f->queries = malloc(NQ * DIM * sizeof(float));
    uint64_t s = 7;
    for (size_t i = 0; i < (size_t)N * DIM; i++) /* blur the clusters: a harder search */
        f->base[i] += 0.5f * tu_gauss(&s);
    for (int i = 0; i < NQ; i++)
        for (int j = 0; j < DIM; j++)
            f->queries[i * DIM + j] = f->base[(size_t)(i * 97) * DIM + j] + 0.1f * tu_gauss(&s);
    ann_vecsrc *src = NULL;
    if (ann_vecsrc_from_memory(f->base, N, DIM, ANN_METRIC_L2, &src) != 0 ||
        ann_exact_knn(src, f->queries, NQ, K, 1, f->gt, f->gd) != 0)
        return -1;
    ann_vecsrc_destroy(src);
    for (size_t p = 0; p < NPEERS; p++) {
        if (!ann_engine_find(peers[p].engine))
            continue;
        snprintf(f->index[p], sizeof f->index[p], "%s/%s-l2", f->dir, peers[p].engine);
        int rc = build_index(peers[p].engine, peers[p].build, f->base, N, ANN_METRIC_L2,
                             f->index[p]);
        if (rc) {
            print_error("%s: build failed: %s\n", peers[p].engine, ann_errmsg(rc));
            return -1;
        }
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_rmdir(f->dir);
    free(f->base);
    free(f->queries);
    free(f);
    return 0;
}

/* Open index with search params; fails the test on error. */
static void open_peer(const char *engine, const char *index, const char *search, uint32_t k_max,
                      ann_engine **eng, ann_ctx **ctx)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    int rc = ann_engine_open(ops, index, NULL, eng, NULL);
    if (rc)
        fail_msg("%s: open: %s", engine, ann_errmsg(rc));
    json_t *sp = js(search);
    rc = ann_engine_ctx_new(ops, *eng, sp, k_max, ctx);
    json_decref(sp);
    if (rc)
        fail_msg("%s: ctx_new: %s", engine, ann_errmsg(rc));
}

/* Recall@K of ctx over the fixture's queries; ids of every answer to out. */
static double recall_of(const fixture *f, const ann_engine_ops *ops, ann_ctx *ctx, uint32_t *out)
{
    double hits = 0;
    for (int i = 0; i < NQ; i++) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        int got = ops->search(ctx, f->queries + (size_t)i * DIM, K, ids, d, &st);
        if (got != K)
            fail_msg("%s: query %d returned %d (%s)", ops->name, i, got,
                     got < 0 ? ann_errmsg(got) : "short");
        if (out)
            memcpy(out + (size_t)i * K, ids, sizeof ids);
        for (int r = 0; r < K; r++)
            for (int g = 0; g < K; g++)
                if ((int32_t)ids[r] == f->gt[i * K + g]) {
                    hits++;
                    break;
                }
    }
    return hits / (NQ * K);
}

static void test_recall_bound(void **state)
{
    fixture *f = *state;
    int ran = 0;
    for (size_t p = 0; p < NPEERS; p++) {
        if (!f->index[p][0])
            continue;
        const ann_engine_ops *ops = ann_engine_find(peers[p].engine);
        ann_engine *eng;
        ann_ctx *ctx;
        open_peer(peers[p].engine, f->index[p], peers[p].search, K, &eng, &ctx);
        assert_int_equal(ops->size(eng), N);
        double r = recall_of(f, ops, ctx, NULL);
        print_message("%-16s %s recall@10 %.3f (bound %.2f)\n", peers[p].engine, peers[p].search,
                      r, peers[p].min_recall);
        if (r < peers[p].min_recall)
            fail_msg("%s: recall@10 %.3f below %.2f", peers[p].engine, r, peers[p].min_recall);
        ops->ctx_free(ctx);
        ops->close(eng);
        ran++;
    }
    if (!ran)
        skip();
}

/* Every returned distance is distance.h's for the metric: squared L2, -ip,
 * 1 - ip; checked on l2, ip (raw vectors) and cosine (unit vectors). */
static void test_distance_convention(void **state)
{
    fixture *f = *state;
    const ann_metric metrics[] = { ANN_METRIC_L2, ANN_METRIC_IP, ANN_METRIC_COSINE };
    enum { NS = 2000 };
    int ran = 0;
    for (size_t mi = 0; mi < 3; mi++) {
        ann_metric m = metrics[mi];
        float *data = tu_clustered(NS, DIM, 20, 31 + m, m == ANN_METRIC_COSINE);
        for (size_t p = 0; p < NPEERS; p++) {
            if (!f->index[p][0])
                continue;
            const ann_engine_ops *ops = ann_engine_find(peers[p].engine);
            char path[4096];
            snprintf(path, sizeof path, "%s/%s-dist-%s", f->dir, peers[p].engine,
                     ann_metric_name(m));
            int rc = build_index(peers[p].engine, peers[p].build, data, NS, m, path);
            if (rc)
                fail_msg("%s: build: %s", peers[p].engine, ann_errmsg(rc));
            ann_engine *eng;
            ann_ctx *ctx;
            open_peer(peers[p].engine, path, peers[p].search, K, &eng, &ctx);
            for (int q = 0; q < 20; q++) {
                const float *query = data + (size_t)(q * 91) * DIM;
                uint32_t ids[K];
                float d[K];
                ann_stats st = { 0 };
                assert_int_equal(ops->search(ctx, query, K, ids, d, &st), K);
                for (int r = 0; r < K; r++) {
                    float want = ann_distance(m, query, data + (size_t)ids[r] * DIM, DIM);
                    if (fabsf(d[r] - want) > 1e-3f * (1.0f + fabsf(want)))
                        fail_msg("%s %s: query %d rank %d: distance %g, distance.h says %g",
                                 peers[p].engine, ann_metric_name(m), q, r, d[r], want);
                    if (r > 0)
                        assert_true(d[r - 1] <= d[r] + 1e-5f);
                }
                /* the query is a base vector: found first (not so for raw inner product) */
                if (m != ANN_METRIC_IP)
                    assert_int_equal(ids[0], (uint32_t)(q * 91));
            }
            ops->ctx_free(ctx);
            ops->close(eng);
            ran++;
        }
        free(data);
    }
    if (!ran)
        skip();
}

/* Two contexts with different efforts on one engine keep their own
 * parameters: the low effort's answers do not change after the high one ran,
 * and the high effort finds more.  FAISS 1.7.3's HNSW reads efSearch from
 * the index, so ref-faiss-hnsw refuses a second context with another
 * ef_search on one engine (exact message), and its efforts are compared on
 * two open engines. */
static void test_per_context_params(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *engine, *low, *high;
        int shared_ef;
    } pairs[] = {
        { "ref-hnswlib", "{\"ef_search\": 16}", "{\"ef_search\": 200}", 0 },
        { "ref-faiss-hnsw", "{\"ef_search\": 16}", "{\"ef_search\": 200}", 1 },
        { "ref-faiss-ivfpq", "{\"nprobe\": 1, \"rerank\": 1}", "{\"nprobe\": 32, \"rerank\": 20}",
          0 },
    };
    int ran = 0;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        size_t p = 0;
        while (p < NPEERS && strcmp(peers[p].engine, pairs[i].engine))
            p++;
        if (p == NPEERS || !f->index[p][0])
            continue;
        const ann_engine_ops *ops = ann_engine_find(pairs[i].engine);
        ann_engine *eng, *eng_hi;
        ann_ctx *lo, *hi;
        open_peer(pairs[i].engine, f->index[p], pairs[i].low, K, &eng, &lo);
        json_t *sp = js(pairs[i].high);
        if (pairs[i].shared_ef) {
            ann_ctx *refused = NULL;
            int rc = ann_engine_ctx_new(ops, eng, sp, K, &refused);
            assert_int_equal(rc, ANN_EUNSUPPORTED);
            assert_null(refused);
            assert_non_null(strstr(ann_errmsg(rc),
                                   "search.ef_search: 200 differs from the 16 of a live context"));
            open_peer(pairs[i].engine, f->index[p], pairs[i].high, K, &eng_hi, &hi);
        } else {
            eng_hi = NULL;
            assert_int_equal(ann_engine_ctx_new(ops, eng, sp, K, &hi), 0);
        }
        json_decref(sp);
        uint32_t *a = malloc(NQ * K * sizeof *a), *b = malloc(NQ * K * sizeof *b);
        double r_lo = recall_of(f, ops, lo, a);
        double r_hi = recall_of(f, ops, hi, NULL);
        double r_lo2 = recall_of(f, ops, lo, b);
        print_message("%-16s low effort %.3f, high effort %.3f\n", pairs[i].engine, r_lo, r_hi);
        assert_memory_equal(a, b, NQ * K * sizeof *a);
        assert_true(r_lo2 == r_lo);
        assert_true(r_hi > r_lo);
        free(a);
        free(b);
        ops->ctx_free(lo);
        ops->ctx_free(hi);
        ops->close(eng);
        ops->close(eng_hi);
        ran++;
    }
    if (!ran)
        skip();
}

typedef struct {
    const fixture *f;
    const ann_engine_ops *ops;
    ann_ctx *ctx;
    uint32_t ids[NQ * K];
    int rc;
} worker;

static void *worker_run(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < NQ && w->rc >= 0; i++) {
        float d[K];
        ann_stats st = { 0 };
        w->rc = w->ops->search(w->ctx, w->f->queries + (size_t)i * DIM, K, w->ids + i * K, d, &st);
    }
    return NULL;
}

/* Threads, each with its own context, search one engine at once and get
 * the answers one thread gets alone. */
static void test_threads_share_engine(void **state)
{
    fixture *f = *state;
    int ran = 0;
    for (size_t p = 0; p < NPEERS; p++) {
        if (!f->index[p][0])
            continue;
        const ann_engine_ops *ops = ann_engine_find(peers[p].engine);
        ann_engine *eng;
        ann_ctx *ctx;
        open_peer(peers[p].engine, f->index[p], peers[p].search, K, &eng, &ctx);
        uint32_t *alone = malloc(NQ * K * sizeof *alone);
        recall_of(f, ops, ctx, alone);
        worker w[3];
        pthread_t th[3];
        for (int t = 0; t < 3; t++) {
            w[t] = (worker){ .f = f, .ops = ops, .rc = 0 };
            json_t *sp = js(peers[p].search);
            assert_int_equal(ann_engine_ctx_new(ops, eng, sp, K, &w[t].ctx), 0);
            json_decref(sp);
            assert_int_equal(pthread_create(&th[t], NULL, worker_run, &w[t]), 0);
        }
        for (int t = 0; t < 3; t++) {
            pthread_join(th[t], NULL);
            assert_int_equal(w[t].rc, K);
            assert_memory_equal(w[t].ids, alone, NQ * K * sizeof *alone);
            ops->ctx_free(w[t].ctx);
        }
        free(alone);
        ops->ctx_free(ctx);
        ops->close(eng);
        ran++;
    }
    if (!ran)
        skip();
}

static void expect_build_error(const fixture *f, const char *engine, const char *params,
                               int code, const char *fragment)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bad-%s", f->dir, engine);
    int rc = build_index(engine, params, f->base, 1000, ANN_METRIC_L2, path);
    assert_int_equal(rc, code);
    if (!strstr(ann_errmsg(rc), fragment))
        fail_msg("%s %s: message \"%s\" lacks \"%s\"", engine, params, ann_errmsg(rc), fragment);
    FILE *fp = fopen(path, "r");
    assert_null(fp); /* nothing left behind */
}

static void expect_ctx_error(const char *engine, const char *index, const char *search,
                             uint32_t k_max, const char *fragment)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    ann_engine *eng;
    assert_int_equal(ann_engine_open(ops, index, NULL, &eng, NULL), 0);
    json_t *sp = js(search);
    ann_ctx *ctx = NULL;
    int rc = ann_engine_ctx_new(ops, eng, sp, k_max, &ctx);
    json_decref(sp);
    assert_int_equal(rc, ANN_EPARAM);
    assert_null(ctx);
    if (!strstr(ann_errmsg(rc), fragment))
        fail_msg("%s %s: message \"%s\" lacks \"%s\"", engine, search, ann_errmsg(rc), fragment);
    ops->close(eng);
}

static void test_bad_parameters(void **state)
{
    fixture *f = *state;
    if (!f->index[0][0] && !f->index[1][0])
        skip();
    if (f->index[0][0]) {
        expect_build_error(f, "ref-hnswlib", "{\"M\": 1}", ANN_EPARAM,
                           "build.M: 1 is out of range [2, 2048]");
        expect_ctx_error("ref-hnswlib", f->index[0], "{\"ef_search\": 5}", 10,
                         "search.ef_search: 5 is less than k = 10");
    }
    if (f->index[1][0]) {
        expect_build_error(f, "ref-faiss-hnsw", "{\"M\": 1}", ANN_EPARAM,
                           "build.M: 1 is out of range [2, 2048]");
        expect_ctx_error("ref-faiss-hnsw", f->index[1], "{\"ef_search\": 9}", 10,
                         "search.ef_search: 9 is less than k = 10");
        expect_build_error(f, "ref-faiss-ivfpq", "{\"pq_bytes\": 7}", ANN_EPARAM,
                           "build.pq_bytes: 7 does not divide dim 32");
        expect_ctx_error("ref-faiss-ivfpq", f->index[2], "{\"nprobe\": 101}", 10,
                         "search.nprobe: 101 exceeds nlist = 100 of this index");
        expect_ctx_error("ref-faiss-ivfpq", f->index[2], "{\"rerank\": 0}", 10,
                         "search.rerank: 0 is out of range [1, 1000]");
    }
}

/* Copy an index directory's files under a new name (flat directories only). */
static void copy_index(const char *from, const char *to, const char *const *files)
{
    char a[4200], b[4200];
    assert_int_equal(mkdir(to, 0755), 0);
    for (const char *const *p = files; *p; p++) {
        snprintf(a, sizeof a, "%s/%s", from, *p);
        snprintf(b, sizeof b, "%s/%s", to, *p);
        size_t len;
        void *buf = tu_read_file(a, &len);
        assert_non_null(buf);
        assert_int_equal(tu_write_file(b, buf, len), 0);
        free(buf);
    }
}

static void expect_open_error(const char *engine, const char *index, int code,
                              const char *fragment)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    ann_engine *eng = NULL;
    int rc = ann_engine_open(ops, index, NULL, &eng, NULL);
    assert_int_equal(rc, code);
    if (!strstr(ann_errmsg(rc), fragment))
        fail_msg("%s: message \"%s\" lacks \"%s\"", engine, ann_errmsg(rc), fragment);
}

/* hnswlib.bin: the first level-0 link of node 0 pointed past the end must
 * be caught at open (hnswlib itself would follow it). */
static void test_corrupt_hnswlib_link(void **state)
{
    fixture *f = *state;
    if (!f->index[0][0])
        skip();
    static const char *const files[] = { "hnswlib.bin", "ref_hnswlib.json", NULL };
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/corrupt-hnswlib", f->dir);
    copy_index(f->index[0], dir, files);
    snprintf(path, sizeof path, "%s/hnswlib.bin", dir);
    size_t len;
    unsigned char *buf = tu_read_file(path, &len);
    /* hnswlib 0.6 header: 6 x size_t, 2 x int, 5 x 8 bytes = 96 bytes; then
     * node 0's level-0 list: uint32 count, then links. */
    uint32_t count;
    memcpy(&count, buf + 96, 4);
    assert_true((count & 0xffff) > 0);
    memset(buf + 100, 0xff, 4);
    assert_int_equal(tu_write_file(path, buf, len), 0);
    free(buf);
    expect_open_error("ref-hnswlib", dir, ANN_ECORRUPT,
                      "hnswlib.bin: node 0 level 0: link 4294967295 invalid");

    /* a metadata file from a future version */
    snprintf(dir, sizeof dir, "%s/future-hnswlib", f->dir);
    copy_index(f->index[0], dir, files);
    snprintf(path, sizeof path, "%s/ref_hnswlib.json", dir);
    json_t *meta = json_load_file(path, 0, NULL);
    json_object_set_new(meta, "version", json_integer(2));
    assert_int_equal(json_dump_file(meta, path, 0), 0);
    json_decref(meta);
    expect_open_error("ref-hnswlib", dir, ANN_EVERSION, "version 2, this build reads 1");
}

/* faiss.index that disagrees with its metadata, and a metadata field out of
 * range, are ANN_ECORRUPT naming the file. */
static void test_corrupt_faiss_meta(void **state)
{
    fixture *f = *state;
    if (!f->index[2][0])
        skip();
    static const char *const files[] = { "faiss.index", "ref_faiss_ivfpq.json", NULL };
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/corrupt-ivfpq", f->dir);
    copy_index(f->index[2], dir, files);
    snprintf(path, sizeof path, "%s/ref_faiss_ivfpq.json", dir);
    json_t *meta = json_load_file(path, 0, NULL);
    json_object_set_new(meta, "pq_bytes", json_integer(8));
    assert_int_equal(json_dump_file(meta, path, 0), 0);
    expect_open_error("ref-faiss-ivfpq", dir, ANN_ECORRUPT,
                      "faiss.index: nlist, pq_bytes or metric disagree with ref_faiss_ivfpq.json");
    json_object_set_new(meta, "pq_bytes", json_integer(0));
    assert_int_equal(json_dump_file(meta, path, 0), 0);
    json_decref(meta);
    expect_open_error("ref-faiss-ivfpq", dir, ANN_ECORRUPT,
                      "ref_faiss_ivfpq.json: field \"pq_bytes\" = 0 outside [1, 32]");
}

static void test_faiss_machine_note(void **state)
{
    fixture *f = *state;
#ifdef ANNLAB_HAVE_FAISS
    char path[4200];
    snprintf(path, sizeof path, "%s/build.json", f->index[2]);
    json_t *b = json_load_file(path, 0, NULL);
    assert_non_null(b);
    const char *note =
        json_string_value(json_object_get(json_object_get(b, "engine_report"), "machine_note"));
    assert_non_null(note);
    assert_string_equal(note, ref_faiss_machine_note());
    assert_non_null(strstr(note, "generic build without the AVX2/AVX-512 kernels"));
    json_decref(b);
#else
    (void)f;
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recall_bound),
        cmocka_unit_test(test_distance_convention),
        cmocka_unit_test(test_per_context_params),
        cmocka_unit_test(test_threads_share_engine),
        cmocka_unit_test(test_bad_parameters),
        cmocka_unit_test(test_corrupt_hnswlib_link),
        cmocka_unit_test(test_corrupt_faiss_meta),
        cmocka_unit_test(test_faiss_machine_note),
    };
    return cmocka_run_group_tests_name("ref_peers", tests, setup, teardown);
}
