/*
 * test_diskann_record.c: diskann-record and diskann-resident through the
 * vtable, on both record stores (RocksDB server and embedded profiles,
 * LMDB): recall@10 >= 0.95 at L 100 on a seeded 10k clustered dataset,
 * exact per-query statistics, reopen, concurrent contexts, k > n, empty
 * and tiny indexes (the scan below 1,024 vectors, exact), and every
 * corruption the engines must report instead of crashing or answering
 * short: wrong engine, wrong format version, missing metadata (a build
 * that died before its last record), missing node / vector / code-chunk
 * records, a node record whose length does not match its degree, and a
 * build whose source fails part-way, and randomly mutated node and
 * metadata records.  Golden bytes pin the node record.  The same DiskANN
 * build parameters (seed and threads included) give diskann-sector and
 * diskann-record the same graph, neighbour list for neighbour list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/exact.h"
#include "engines/core/kv.h"
#include "engines/core/status.h"
#include "engines/diskann_record/drec.h"
#include "engines/diskann_record/layout.h"
#include "engines/diskann_sector/layout.h"
#include "engines/engine.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define DIM 48
#define NBIG 10000
#define NQ 100
#define K 10

typedef struct {
    const char *open; /* JSON open params */
    const char *label;
} open_case;

static const open_case opens[] = {
    { "{\"kv\": \"rocksdb\", \"profile\": \"server\", \"block_cache_mb\": 16}", "rocksdb-server" },
    { "{\"kv\": \"rocksdb\", \"profile\": \"embedded\"}", "rocksdb-embedded" },
    { "{\"kv\": \"lmdb\"}", "lmdb" },
};
#define N_OPENS (sizeof opens / sizeof opens[0])

static const char *const engines[] = { "diskann-record", "diskann-resident" };

static char *tmp_root;
static float *big_data, *big_q;
static int32_t big_gt[NQ * K];
static char big_index[2][4096]; /* per engine */

static json_t *js(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j)
        fail_msg("bad JSON: %s", text);
    return j;
}

static int build_index(const char *engine, const float *data, uint64_t n, ann_metric m,
                       const char *build_json, const char *path)
{
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(data, n, DIM, m, &src), 0);
    json_t *bp = js(build_json);
    int rc = ann_engine_build(ann_engine_find(engine), src, bp, path, NULL, NULL);
    if (rc)
        print_message("build %s: %s\n", engine, ann_errmsg(rc));
    json_decref(bp);
    ann_vecsrc_destroy(src);
    return rc;
}

typedef struct {
    const ann_engine_ops *ops;
    ann_engine *eng;
    ann_ctx *ctx;
} opened;

static int open_index(const char *engine, const char *path, const char *open_json,
                      const char *search_json, uint32_t k_max, opened *o)
{
    o->ops = ann_engine_find(engine);
    o->eng = NULL;
    o->ctx = NULL;
    json_t *op = js(open_json), *sp = js(search_json);
    int rc = ann_engine_open(o->ops, path, op, &o->eng, NULL);
    if (!rc) {
        rc = ann_engine_ctx_new(o->ops, o->eng, sp, k_max, &o->ctx);
        if (rc) {
            o->ops->close(o->eng);
            o->eng = NULL;
        }
    }
    json_decref(op);
    json_decref(sp);
    return rc;
}

static void close_index(opened *o)
{
    if (o->ops) {
        o->ops->ctx_free(o->ctx);
        o->ops->close(o->eng);
    }
    o->eng = NULL;
    o->ctx = NULL;
}

static int setup(void **state)
{
    (void)state;
    tmp_root = tu_tmpdir("drec");
    if (!tmp_root)
        return -1;
    big_data = tu_clustered(NBIG, DIM, 60, 4242, 1);
    big_q = malloc((size_t)NQ * DIM * sizeof(float));
    uint64_t s = 17;
    for (int i = 0; i < NQ; i++) {
        float *q = big_q + (size_t)i * DIM;
        for (int j = 0; j < DIM; j++)
            q[j] = big_data[(size_t)(i * 97 + 5) * DIM + j] + 0.05f * tu_gauss(&s);
        ann_normalize(q, DIM);
    }
    ann_vecsrc *src = NULL;
    float *gd = malloc(NQ * K * sizeof(float));
    if (ann_vecsrc_from_memory(big_data, NBIG, DIM, ANN_METRIC_COSINE, &src) ||
        ann_exact_knn(src, big_q, NQ, K, 0, big_gt, gd))
        return -1;
    ann_vecsrc_destroy(src);
    free(gd);
    for (int e = 0; e < 2; e++) {
        snprintf(big_index[e], sizeof big_index[e], "%s/big-%s", tmp_root, engines[e]);
        int rc = build_index(engines[e], big_data, NBIG, ANN_METRIC_COSINE,
                             "{\"R\": 32, \"L_build\": 64, \"alpha\": 1.2, \"pq_bytes\": 24}",
                             big_index[e]);
        if (rc) {
            fprintf(stderr, "build %s: %s\n", engines[e], ann_errmsg(rc));
            return -1;
        }
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(tmp_root);
    free(big_data);
    free(big_q);
    return 0;
}

/* ---- golden bytes ------------------------------------------------------- */

static void test_golden_node_record(void **state)
{
    (void)state;
    /* 4 nodes with 3-byte codes; node 2 has neighbours 3 and 0. */
    const uint8_t codes[4 * 3] = { 0x10, 0x11, 0x12, 0x20, 0x21, 0x22,
                                   0x30, 0x31, 0x32, 0x40, 0x41, 0x42 };
    const uint32_t nbrs[2] = { 3, 0 };
    uint8_t out[64];
    const uint8_t full[] = { 0x30, 0x31, 0x32,             /* own code */
                             0x02, 0x00, 0x00, 0x00,       /* degree 2 */
                             0x03, 0x00, 0x00, 0x00,       /* neighbour 3 */
                             0x00, 0x00, 0x00, 0x00,       /* neighbour 0 */
                             0x40, 0x41, 0x42,             /* code of 3 */
                             0x10, 0x11, 0x12 };           /* code of 0 */
    assert_int_equal(drec_node_bytes(DREC_LAYOUT_FULL, 3, 2), sizeof full);
    drec_node_encode(DREC_LAYOUT_FULL, 3, 2, nbrs, 2, codes, out);
    assert_memory_equal(out, full, sizeof full);
    const uint8_t resident[] = { 0x02, 0, 0, 0, 0x03, 0, 0, 0, 0x00, 0, 0, 0 };
    assert_int_equal(drec_node_bytes(DREC_LAYOUT_RESIDENT, 3, 2), sizeof resident);
    drec_node_encode(DREC_LAYOUT_RESIDENT, 3, 2, nbrs, 2, codes, out);
    assert_memory_equal(out, resident, sizeof resident);
    /* R 64, 96-byte codes: the ~7 KB record of the design */
    assert_int_equal(drec_node_bytes(DREC_LAYOUT_FULL, 96, 64), 6500);
    assert_int_equal(drec_node_bytes(DREC_LAYOUT_RESIDENT, 96, 64), 260);

    /* metadata: fields at their documented offsets, crc checked */
    drec_meta m = { .version = DREC_VERSION_GRAPH, .layout = DREC_LAYOUT_FULL,
                    .mode = DREC_MODE_GRAPH,
                    .n = 5000, .dim = 48, .metric = ANN_METRIC_L2, .medoid = 77, .R = 32,
                    .L_build = 64, .alpha = 1.2f, .pq_bytes = 3 };
    snprintf(m.engine, sizeof m.engine, "diskann-record");
    memcpy(m.medoid_code, "\x01\x02\x03", 3);
    uint8_t rec[128];
    assert_int_equal(drec_meta_bytes(3), 87);
    drec_meta_encode(&m, rec);
    assert_memory_equal(rec, "ANNDREC\0", 8);
    assert_int_equal(ann_get_u32(rec + 8), DREC_VERSION_GRAPH);
    assert_string_equal((const char *)rec + 12, "diskann-record");
    assert_int_equal(ann_get_u64(rec + 40), 5000);
    assert_int_equal(ann_get_u32(rec + 56), 77);
    assert_memory_equal(rec + 80, "\x01\x02\x03", 3);
    drec_meta back;
    assert_int_equal(drec_meta_decode(rec, 87, "x", &back), 0);
    assert_int_equal(back.medoid, 77);
    assert_true(back.alpha == 1.2f);
    const uint32_t sum = ann_get_u32(rec + 83);
    rec[60] ^= 1; /* R changes: crc no longer matches */
    assert_int_equal(drec_meta_decode(rec, 87, "x", &back), ANN_ECORRUPT);
    char msg[200];
    snprintf(msg, sizeof msg, "x: metadata record: checksum mismatch (stored %08x, computed %08x)",
             sum, (uint32_t)crc32(0L, rec, 83));
    assert_string_equal(ann_errmsg(ANN_ECORRUPT), msg);
}

/* ---- recall, statistics, reopen ---------------------------------------- */

static double run_queries(opened *o, uint32_t L, uint32_t **ids_out, ann_stats *tot)
{
    uint32_t *all = calloc(NQ * K, sizeof *all);
    int hits = 0;
    for (int i = 0; i < NQ; i++) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        int got = o->ops->search(o->ctx, big_q + (size_t)i * DIM, K, ids, d, &st);
        if (got != K)
            fail_msg("%s: query %d returned %d (%s)", o->ops->name, i, got,
                     got < 0 ? ann_errmsg(got) : "short");
        /* per query: hops = node records, reads - hops = vector records */
        uint32_t max_expand = 4 * L > 32 ? 4 * L : 32;
        assert_true(st.hops >= 1 && st.hops <= max_expand);
        assert_int_equal(st.reads - st.hops, L); /* rerank default: the whole list */
        assert_int_equal(st.full_dists, L);
        assert_true(st.code_dists >= st.hops);
        assert_true(st.bytes_read >= L * DIM * sizeof(float));
        for (int r = 0; r < K; r++) {
            all[i * K + r] = ids[r];
            if (r)
                assert_true(d[r - 1] <= d[r]);
            for (int g = 0; g < K; g++)
                if ((int32_t)ids[r] == big_gt[i * K + g])
                    hits++;
        }
        tot->reads += st.reads;
        tot->hops += st.hops;
        tot->cache_hits += st.cache_hits;
        tot->bytes_read += st.bytes_read;
    }
    *ids_out = all;
    return (double)hits / (NQ * K);
}

static void test_recall_all_stores(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        for (size_t oc = 0; oc < N_OPENS; oc++) {
            opened o;
            int rc = open_index(engines[e], big_index[e], opens[oc].open, "{\"L\": 100}", K, &o);
            if (rc)
                fail_msg("%s %s: open: %s", engines[e], opens[oc].label, ann_errmsg(rc));
            assert_int_equal(o.ops->size(o.eng), NBIG);
            ann_stats tot = { 0 };
            uint32_t *first = NULL, *again = NULL;
            double r = run_queries(&o, 100, &first, &tot);
            print_message("%-17s %-17s recall@10 %.3f  node reads/q %.1f  cache hits/q %.1f  "
                          "bytes/q %.0f\n", engines[e], opens[oc].label, r, tot.hops / (double)NQ,
                          tot.cache_hits / (double)NQ, tot.bytes_read / (double)NQ);
            if (r < 0.95)
                fail_msg("%s %s: recall@10 %.3f < 0.95", engines[e], opens[oc].label, r);
            if (strstr(opens[oc].label, "lmdb"))
                assert_int_equal(tot.cache_hits, 0);
            else if (strstr(opens[oc].label, "server"))
                assert_true(tot.cache_hits > 0);
            close_index(&o);

            /* reopen: the same answers */
            rc = open_index(engines[e], big_index[e], opens[oc].open, "{\"L\": 100}", K, &o);
            assert_int_equal(rc, 0);
            ann_stats tot2 = { 0 };
            double r2 = run_queries(&o, 100, &again, &tot2);
            assert_true(r == r2);
            assert_memory_equal(first, again, NQ * K * sizeof *first);
            assert_int_equal(tot.hops, tot2.hops);
            close_index(&o);
            free(first);
            free(again);
        }
    }
}

/*
 * beam_width: W closest candidates expanded per round, their records and
 * the re-rank's vector records hinted to the store (kv_prefetch).  Same
 * per-query accounting as one read at a time, recall as good, and the
 * hints reach the store (none with W = 1).  A beam wider than the list
 * works too.
 */
static void test_beam(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        for (size_t oc = 0; oc < N_OPENS; oc++) {
            double r[2];
            uint64_t hops[2], prefetched[2];
            const char *search[2] = { "{\"L\": 100, \"beam_width\": 1}",
                                      "{\"L\": 100, \"beam_width\": 4}" };
            for (int w = 0; w < 2; w++) {
                opened o;
                int rc = open_index(engines[e], big_index[e], opens[oc].open, search[w], K, &o);
                if (rc)
                    fail_msg("%s %s: open: %s", engines[e], opens[oc].label, ann_errmsg(rc));
                ann_stats tot = { 0 };
                uint32_t *ids = NULL;
                r[w] = run_queries(&o, 100, &ids, &tot);
                hops[w] = tot.hops;
                kv_stats ks;
                kv_store_stats(o.eng->kv, &ks);
                prefetched[w] = ks.prefetched;
                free(ids);
                close_index(&o);
            }
            print_message("%-17s %-17s beam 1: recall %.3f hops/q %.1f; beam 4: recall %.3f "
                          "hops/q %.1f, %.1f records hinted/q\n", engines[e], opens[oc].label,
                          r[0], hops[0] / (double)NQ, r[1], hops[1] / (double)NQ,
                          prefetched[1] / (double)NQ);
            assert_int_equal(prefetched[0], 0);
            /* every round hints all but its first record; the re-rank all but the first */
            assert_true(prefetched[1] >= (uint64_t)NQ * (100 - 1));
            assert_true(r[1] >= 0.95 && r[1] >= r[0] - 0.01);
        }
    }
    /* a beam wider than the candidate list */
    opened o;
    assert_int_equal(open_index(engines[0], big_index[0], "{}", "{\"L\": 10, \"beam_width\": 64}",
                                K, &o), 0);
    ann_stats tot = { 0 };
    uint32_t *ids = NULL;
    double r = run_queries(&o, 10, &ids, &tot);
    print_message("diskann-record L 10, beam 64: recall %.3f\n", r);
    assert_true(r > 0.5);
    free(ids);
    close_index(&o);
}

/* One query set through a context: ids, distances, the per-query sums,
 * the store's hint count and the recall.  No accounting asserted (any
 * rerank). */
typedef struct {
    uint32_t *ids;
    float *dists;
    ann_stats tot;
    uint64_t hinted;
    double recall;
} hinted_run;

static void hinted_run_do(const char *engine, const char *dir, const char *open_p,
                          const char *search, hinted_run *r)
{
    memset(r, 0, sizeof *r);
    r->ids = calloc(NQ * K, sizeof *r->ids);
    r->dists = calloc(NQ * K, sizeof *r->dists);
    assert_non_null(r->ids);
    assert_non_null(r->dists);
    opened o;
    int rc = open_index(engine, dir, open_p, search, K, &o);
    if (rc)
        fail_msg("%s %s: open: %s", engine, search, ann_errmsg(rc));
    int hits = 0;
    for (int i = 0; i < NQ; i++) {
        int got = o.ops->search(o.ctx, big_q + (size_t)i * DIM, K, r->ids + (size_t)i * K,
                                r->dists + (size_t)i * K, &r->tot);
        if (got != K)
            fail_msg("%s %s: query %d returned %d", engine, search, i, got);
        for (int a = 0; a < K; a++)
            for (int g = 0; g < K; g++)
                hits += (int32_t)r->ids[i * K + a] == big_gt[i * K + g];
    }
    r->recall = hits / (double)(NQ * K);
    kv_stats ks;
    kv_store_stats(o.eng->kv, &ks);
    r->hinted = ks.prefetched;
    close_index(&o);
}

/* Two runs returned the same ids and distances, bit for bit. */
static void assert_same_answers(const hinted_run *a, const hinted_run *b)
{
    assert_memory_equal(a->ids, b->ids, NQ * K * sizeof *a->ids);
    assert_memory_equal(a->dists, b->dists, NQ * K * sizeof *a->dists);
}

static void hinted_run_free(hinted_run *r)
{
    free(r->ids);
    free(r->dists);
}

/*
 * vector_ahead: each expanded candidate within the re-rank depth has its
 * vector record hinted along with its node record.  Hints never change
 * what a search returns: the same ids and distances bit for bit, the same
 * reads.  With the default depth (all L) every expanded node is within it,
 * so exactly one more hint per hop; with `rerank` 20 fewer, but some.
 */
static void test_vector_ahead(void **state)
{
    (void)state;
    const char *search[2][2] = {
        { "{\"L\": 100, \"beam_width\": 4}",
          "{\"L\": 100, \"beam_width\": 4, \"vector_ahead\": true}" },
        { "{\"L\": 100, \"beam_width\": 4, \"rerank\": 20}",
          "{\"L\": 100, \"beam_width\": 4, \"rerank\": 20, \"vector_ahead\": true}" },
    };
    for (int e = 0; e < 2; e++) {
        for (size_t oc = 0; oc < N_OPENS; oc++) {
            for (int d = 0; d < 2; d++) {
                hinted_run r[2];
                for (int v = 0; v < 2; v++)
                    hinted_run_do(engines[e], big_index[e], opens[oc].open, search[d][v], &r[v]);
                print_message("%-17s %-17s %s: %.1f hops/q, hints/q %.1f without, %.1f with\n",
                              engines[e], opens[oc].label, d ? "rerank 20" : "rerank L",
                              r[1].tot.hops / (double)NQ, r[0].hinted / (double)NQ,
                              r[1].hinted / (double)NQ);
                assert_same_answers(&r[0], &r[1]);
                assert_int_equal(r[0].tot.reads, r[1].tot.reads);
                assert_int_equal(r[0].tot.hops, r[1].tot.hops);
                if (d == 0) {
                    assert_int_equal(r[1].hinted - r[0].hinted, r[1].tot.hops);
                } else {
                    assert_true(r[1].hinted > r[0].hinted);
                    assert_true(r[1].hinted - r[0].hinted < r[1].tot.hops);
                }
                for (int v = 0; v < 2; v++)
                    hinted_run_free(&r[v]);
            }
        }
    }
}

/*
 * search_mode "pipeline": up to W node records in flight without rounds.
 * W = 1 is the one-read-at-a-time walk whatever the mode (same ids and
 * distances bit for bit, no hints); at W 4 it hints every expansion but
 * the first of a drained pipeline and finds as much as the rounds; with
 * vector_ahead it returns what it returns without.  A bad mode is refused
 * naming the parameter.
 */
static void test_pipeline(void **state)
{
    (void)state;
    const char *search[4] = {
        "{\"L\": 100, \"beam_width\": 1}",
        "{\"L\": 100, \"beam_width\": 1, \"search_mode\": \"pipeline\"}",
        "{\"L\": 100, \"beam_width\": 4, \"search_mode\": \"pipeline\"}",
        "{\"L\": 100, \"beam_width\": 4, \"search_mode\": \"pipeline\", \"vector_ahead\": true}",
    };
    for (int e = 0; e < 2; e++) {
        hinted_run r[4];
        for (int v = 0; v < 4; v++)
            hinted_run_do(engines[e], big_index[e], "{}", search[v], &r[v]);
        print_message("%-17s round W1 %.3f (%.1f hops/q), pipeline W1 %.3f, W4 %.3f (%.1f hops/q, "
                      "%.1f hints/q), W4 + vector_ahead %.3f\n", engines[e], r[0].recall,
                      r[0].tot.hops / (double)NQ, r[1].recall, r[2].recall,
                      r[2].tot.hops / (double)NQ, r[2].hinted / (double)NQ, r[3].recall);
        assert_same_answers(&r[0], &r[1]);
        assert_int_equal(r[0].hinted, 0);
        assert_int_equal(r[1].hinted, 0);
        assert_true(r[2].recall >= 0.95 && r[2].recall >= r[0].recall - 0.01);
        /* node hints: every expansion but a drained pipeline's next; the re-rank's W - 1 ahead */
        assert_true(r[2].hinted >= r[2].tot.hops - (uint64_t)NQ * 8);
        assert_same_answers(&r[2], &r[3]);
        assert_int_equal(r[3].hinted - r[2].hinted, r[3].tot.hops);
        for (int v = 0; v < 4; v++)
            hinted_run_free(&r[v]);
    }
    opened o;
    assert_int_equal(open_index(engines[0], big_index[0], "{}", "{\"search_mode\": \"pipe\"}", K,
                                &o), ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), "search_mode"));
}

/* Both layouts walk the same graph with the same codes: same answers. */
static void test_layouts_agree(void **state)
{
    (void)state;
    opened a, b;
    assert_int_equal(open_index(engines[0], big_index[0], "{}", "{\"L\": 60}", K, &a), 0);
    assert_int_equal(open_index(engines[1], big_index[1], "{}", "{\"L\": 60}", K, &b), 0);
    int same = 0;
    for (int i = 0; i < NQ; i++) {
        uint32_t ia[K], ib[K];
        float da[K], db[K];
        ann_stats sa = { 0 }, sb = { 0 };
        assert_int_equal(a.ops->search(a.ctx, big_q + (size_t)i * DIM, K, ia, da, &sa), K);
        assert_int_equal(b.ops->search(b.ctx, big_q + (size_t)i * DIM, K, ib, db, &sb), K);
        same += !memcmp(ia, ib, sizeof ia) && sa.hops == sb.hops;
        /* resident records carry no codes: far fewer bytes per node read */
        assert_true(sb.bytes_read < sa.bytes_read);
    }
    /* the graph is rebuilt per index with threads, so allow a few to differ */
    print_message("layouts agree on %d of %d queries\n", same, NQ);
    close_index(&a);
    close_index(&b);
}

typedef struct {
    opened *o;
    int first, errors;
    const uint32_t *expect;
} mt_arg;

static void *mt_run(void *p)
{
    mt_arg *a = p;
    for (int i = a->first; i < NQ; i += 4) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        if (a->o->ops->search(a->o->ctx, big_q + (size_t)i * DIM, K, ids, d, &st) != K ||
            memcmp(ids, a->expect + (size_t)i * K, sizeof ids) != 0)
            a->errors++;
    }
    return NULL;
}

/* Several contexts on one engine, searching at once, agree with one. */
static void test_concurrent_contexts(void **state)
{
    (void)state;
    for (size_t oc = 0; oc < N_OPENS; oc++) {
        opened o;
        assert_int_equal(open_index(engines[0], big_index[0], opens[oc].open, "{}", K, &o), 0);
        uint32_t *expect = NULL;
        ann_stats tot = { 0 };
        run_queries(&o, 100, &expect, &tot);
        opened per[4];
        pthread_t th[4];
        mt_arg args[4];
        json_t *sp = js("{}");
        for (int t = 0; t < 4; t++) {
            per[t] = o;
            assert_int_equal(ann_engine_ctx_new(o.ops, o.eng, sp, K, &per[t].ctx), 0);
            args[t] = (mt_arg){ .o = &per[t], .first = t, .expect = expect };
            assert_int_equal(pthread_create(&th[t], NULL, mt_run, &args[t]), 0);
        }
        for (int t = 0; t < 4; t++) {
            pthread_join(th[t], NULL);
            assert_int_equal(args[t].errors, 0);
            o.ops->ctx_free(per[t].ctx);
        }
        json_decref(sp);
        free(expect);
        close_index(&o);
    }
}

/* ---- small indexes ------------------------------------------------------ */

static void test_tiny_and_empty(void **state)
{
    (void)state;
    enum { TINY = 500 };
    float *data = tu_clustered(TINY, DIM, 5, 99, 0);
    ann_vecsrc *src = NULL;
    int32_t gt[5 * 20];
    float gd[5 * 20];
    assert_int_equal(ann_vecsrc_from_memory(data, TINY, DIM, ANN_METRIC_L2, &src), 0);
    assert_int_equal(ann_exact_knn(src, data, 5, 20, 1, gt, gd), 0);
    ann_vecsrc_destroy(src);
    for (int e = 0; e < 2; e++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/tiny-%s", tmp_root, engines[e]);
        assert_int_equal(build_index(engines[e], data, TINY, ANN_METRIC_L2, "{}", path), 0);
        snprintf(path, sizeof path, "%s/tiny-%s/%s", tmp_root, engines[e], DREC_PQ_FILE);
        assert_null(tu_read_file(path, NULL)); /* a scan: no PQ, no graph */
        snprintf(path, sizeof path, "%s/tiny-%s", tmp_root, engines[e]);
        for (size_t oc = 0; oc < N_OPENS; oc++) {
            opened o;
            assert_int_equal(open_index(engines[e], path, opens[oc].open, "{}", 20, &o), 0);
            for (int qi = 0; qi < 5; qi++) {
                uint32_t ids[20];
                float d[20];
                ann_stats st = { 0 };
                int got = o.ops->search(o.ctx, data + (size_t)qi * DIM, 20, ids, d, &st);
                assert_int_equal(got, 20);
                /* exact: the same ids as exact search (distinct distances here) */
                for (int r = 0; r < 20; r++)
                    assert_int_equal(ids[r], gt[qi * 20 + r]);
                assert_int_equal(st.reads, TINY);
                assert_int_equal(st.full_dists, TINY);
                assert_int_equal(st.hops, 0);
            }
            close_index(&o);
        }
        /* k > n */
        char kpath[4096];
        snprintf(kpath, sizeof kpath, "%s/seven-%s", tmp_root, engines[e]);
        assert_int_equal(build_index(engines[e], data, 7, ANN_METRIC_L2, "{}", kpath), 0);
        opened o;
        assert_int_equal(open_index(engines[e], kpath, "{\"kv\": \"lmdb\"}", "{}", 20, &o), 0);
        uint32_t ids[20];
        float d[20];
        ann_stats st = { 0 };
        assert_int_equal(o.ops->search(o.ctx, data + 3 * DIM, 20, ids, d, &st), 7);
        assert_int_equal(ids[0], 3);
        close_index(&o);
        /* empty */
        snprintf(kpath, sizeof kpath, "%s/empty-%s", tmp_root, engines[e]);
        assert_int_equal(build_index(engines[e], data, 0, ANN_METRIC_L2, "{}", kpath), 0);
        for (size_t oc = 0; oc < N_OPENS; oc++) {
            assert_int_equal(open_index(engines[e], kpath, opens[oc].open, "{}", 10, &o), 0);
            assert_int_equal(o.ops->size(o.eng), 0);
            assert_int_equal(o.ops->search(o.ctx, data, 10, ids, d, &st), 0);
            close_index(&o);
        }
    }
    free(data);
}

/* ---- corruption --------------------------------------------------------- */

/* Open the store of an index for writing (to corrupt it), by backend name. */
static kv_store *store_rw(const char *index, const char *backend)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", index, backend);
    kv_options o = { .profile = KV_PROFILE_EMBEDDED };
    assert_int_equal(kv_backend_parse(backend, &o.backend), 0);
    kv_store *s = NULL;
    int rc = kv_open(path, &o, &s);
    if (rc)
        fail_msg("open %s: %s", path, ann_errmsg(rc));
    return s;
}

/* Copy of a record's value (malloc'd), or NULL when absent. */
static uint8_t *record_copy(kv_store *s, uint8_t table, uint32_t id, size_t *len)
{
    kv_reader *r = NULL;
    kv_val v = { 0 };
    uint8_t key[KV_KEY_U32_BYTES], *copy = NULL;
    assert_int_equal(kv_reader_create(s, &r), 0);
    assert_int_equal(kv_reader_begin(r), 0);
    if (kv_get(r, key, kv_key_u32(key, table, id), &v) == 0) {
        copy = malloc(v.len ? v.len : 1);
        memcpy(copy, v.data, v.len);
        *len = v.len;
        kv_val_release(&v);
    }
    kv_reader_end(r);
    kv_reader_destroy(r);
    return copy;
}

static void put_record(const char *index, const char *backend, uint8_t table, uint32_t id,
                       const void *val, size_t len)
{
    kv_store *s = store_rw(index, backend);
    uint8_t key[KV_KEY_U32_BYTES];
    assert_int_equal(kv_put(s, key, kv_key_u32(key, table, id), val, len), 0);
    assert_int_equal(kv_close(s), 0);
}

static void del_record(const char *index, const char *backend, uint8_t table, uint32_t id)
{
    kv_store *s = store_rw(index, backend);
    uint8_t key[KV_KEY_U32_BYTES];
    assert_int_equal(kv_delete(s, key, kv_key_u32(key, table, id)), 0);
    assert_int_equal(kv_close(s), 0);
}

/* Expect open to fail with code, the message containing needle. */
static void expect_open_error(const char *engine, const char *index, const char *open_json,
                              int code, const char *needle)
{
    opened o;
    int rc = open_index(engine, index, open_json, "{}", K, &o);
    if (rc != code || !strstr(ann_errmsg(rc), needle))
        fail_msg("%s %s: open returned %d (%s), expected %d with \"%s\"", engine, open_json, rc,
                 rc ? ann_errmsg(rc) : "ok", code, needle);
}

/* Expect a search of query to fail with code, the message containing needle. */
static void expect_search_error(const char *engine, const char *index, const char *open_json,
                                const float *query, int code, const char *needle)
{
    opened o;
    assert_int_equal(open_index(engine, index, open_json, "{}", K, &o), 0);
    uint32_t ids[K];
    float d[K];
    ann_stats st = { 0 };
    int rc = o.ops->search(o.ctx, query, K, ids, d, &st);
    if (rc != code || !strstr(ann_errmsg(rc), needle))
        fail_msg("%s %s: search returned %d (%s), expected %d with \"%s\"", engine, open_json,
                 rc, rc < 0 ? ann_errmsg(rc) : "results", code, needle);
    close_index(&o);
}

static void test_corruption(void **state)
{
    (void)state;
    enum { NC = 1500 };
    float *data = tu_clustered(NC, DIM, 10, 7, 0);
    const char *backends[2] = { "rocksdb", "lmdb" };
    for (int e = 0; e < 2; e++) {
        char index[4096];
        snprintf(index, sizeof index, "%s/corrupt-%s", tmp_root, engines[e]);
        assert_int_equal(build_index(engines[e], data, NC, ANN_METRIC_L2,
                                     "{\"R\": 16, \"L_build\": 32, \"pq_bytes\": 8}", index),
                         0);
        for (int b = 0; b < 2; b++) {
            const char *be = backends[b];
            char oj[64], msg[256];
            snprintf(oj, sizeof oj, "{\"kv\": \"%s\"}", be);
            kv_store *s = store_rw(index, be);
            size_t meta_len = 0;
            uint8_t *meta = record_copy(s, DREC_TABLE_META, 0, &meta_len);
            assert_non_null(meta);
            drec_meta m;
            assert_int_equal(drec_meta_decode(meta, meta_len, "t", &m), 0);
            assert_int_equal(kv_close(s), 0);
            const uint32_t medoid = m.medoid;

            /* the other engine's index */
            snprintf(msg, sizeof msg, "a %s index, opened as %s", engines[e], engines[1 - e]);
            expect_open_error(engines[1 - e], index, oj, ANN_ECORRUPT, msg);

            /* another format version */
            drec_meta m2 = m;
            m2.version = DREC_VERSION + 1;
            const size_t m2_len = drec_meta_bytes_v(m2.version, m2.pq_bytes);
            uint8_t *rec = malloc(m2_len);
            drec_meta_encode(&m2, rec);
            put_record(index, be, DREC_TABLE_META, 0, rec, m2_len);
            snprintf(msg, sizeof msg, "metadata record: diskann-record index version %u, this "
                                      "build reads %u; rebuild the index",
                     DREC_VERSION + 1, DREC_VERSION);
            expect_open_error(engines[e], index, oj, ANN_EVERSION, msg);
            free(rec);

            /* no metadata record: a build that died before its last write */
            del_record(index, be, DREC_TABLE_META, 0);
            expect_open_error(engines[e], index, oj, ANN_ECORRUPT, "metadata record missing");
            put_record(index, be, DREC_TABLE_META, 0, meta, meta_len);

            /* the medoid's node record: missing, then one byte short */
            s = store_rw(index, be);
            size_t node_len = 0;
            uint8_t *node = record_copy(s, DREC_TABLE_NODE, medoid, &node_len);
            assert_int_equal(kv_close(s), 0);
            assert_non_null(node);
            uint32_t deg = ann_get_u32(node + (e == 0 ? 8 : 0));
            assert_int_equal(node_len, drec_node_bytes(e == 0 ? DREC_LAYOUT_FULL
                                                              : DREC_LAYOUT_RESIDENT, 8, deg));
            del_record(index, be, DREC_TABLE_NODE, medoid);
            snprintf(msg, sizeof msg, "node %u: record missing", medoid);
            expect_search_error(engines[e], index, oj, data, ANN_ECORRUPT, msg);
            put_record(index, be, DREC_TABLE_NODE, medoid, node, node_len - 1);
            snprintf(msg, sizeof msg, "node %u: record length %zu does not match degree %u",
                     medoid, node_len - 1, deg);
            expect_search_error(engines[e], index, oj, data, ANN_ECORRUPT, msg);
            /* a neighbour id out of range */
            uint8_t *bad = malloc(node_len);
            memcpy(bad, node, node_len);
            ann_put_u32(bad + (e == 0 ? 8 : 0) + 4, NC + 5);
            put_record(index, be, DREC_TABLE_NODE, medoid, bad, node_len);
            snprintf(msg, sizeof msg, "node %u: neighbour %u invalid", medoid, NC + 5);
            expect_search_error(engines[e], index, oj, data, ANN_ECORRUPT, msg);
            free(bad);
            put_record(index, be, DREC_TABLE_NODE, medoid, node, node_len);
            free(node);

            /* a vector record the re-rank needs (the query is vector 5) */
            s = store_rw(index, be);
            size_t vec_len = 0;
            uint8_t *vec = record_copy(s, DREC_TABLE_VECTOR, 5, &vec_len);
            assert_int_equal(kv_close(s), 0);
            del_record(index, be, DREC_TABLE_VECTOR, 5);
            expect_search_error(engines[e], index, oj, data + 5 * DIM, ANN_ECORRUPT,
                                "vector 5: record missing");
            put_record(index, be, DREC_TABLE_VECTOR, 5, vec, vec_len - 4);
            expect_search_error(engines[e], index, oj, data + 5 * DIM, ANN_ECORRUPT,
                                "vector 5: record length");
            put_record(index, be, DREC_TABLE_VECTOR, 5, vec, vec_len);
            free(vec);

            if (e == 1) { /* resident: the in-memory codes' records */
                s = store_rw(index, be);
                size_t ch_len = 0;
                uint8_t *chunk = record_copy(s, DREC_TABLE_CODES, 0, &ch_len);
                assert_int_equal(kv_close(s), 0);
                assert_int_equal(ch_len, (size_t)NC * 8); /* one chunk of 1500 codes */
                del_record(index, be, DREC_TABLE_CODES, 0);
                expect_open_error(engines[e], index, oj, ANN_ECORRUPT,
                                  "code chunk 0: record missing");
                put_record(index, be, DREC_TABLE_CODES, 0, chunk, ch_len - 8);
                expect_open_error(engines[e], index, oj, ANN_ECORRUPT,
                                  "code chunk 0: length 11992, expected 12000");
                put_record(index, be, DREC_TABLE_CODES, 0, chunk, ch_len);
                free(chunk);
            }

            /* everything restored: it answers again */
            opened o;
            assert_int_equal(open_index(engines[e], index, oj, "{}", K, &o), 0);
            uint32_t ids[K];
            float d[K];
            ann_stats st = { 0 };
            assert_int_equal(o.ops->search(o.ctx, data + 5 * DIM, K, ids, d, &st), K);
            assert_int_equal(ids[0], 5);
            close_index(&o);
            free(meta);
        }
        /* an index built without one of the stores says so */
        char only[4096];
        snprintf(only, sizeof only, "%s/only-lmdb-%s", tmp_root, engines[e]);
        assert_int_equal(build_index(engines[e], data, 50, ANN_METRIC_L2, "{\"kv\": \"lmdb\"}",
                                     only),
                         0);
        expect_open_error(engines[e], only, "{\"kv\": \"rocksdb\"}", ANN_ENOTFOUND,
                          "/rocksdb: no rocksdb store in this index (see its build parameter kv)");
        opened o;
        assert_int_equal(open_index(engines[e], only, "{}", "{}", K, &o), 0); /* default: lmdb */
        close_index(&o);
    }
    free(data);
}

/* Mutated node and metadata records (bit flips, cuts, extensions, random
 * degrees and ids): every search answers in full or fails with
 * ANN_ECORRUPT, every open succeeds or fails cleanly; never a crash (the
 * sanitizer build runs this too). */
static void test_mutated_records(void **state)
{
    (void)state;
    enum { NM = 1100, ROUNDS = 40 };
    float *data = tu_clustered(NM, DIM, 8, 11, 0);
    for (int e = 0; e < 2; e++) {
        char index[4096];
        snprintf(index, sizeof index, "%s/mutate-%s", tmp_root, engines[e]);
        assert_int_equal(build_index(engines[e], data, NM, ANN_METRIC_L2,
                                     "{\"R\": 16, \"L_build\": 32, \"pq_bytes\": 4, \"kv\": \"lmdb\"}",
                                     index),
                         0);
        kv_store *s = store_rw(index, "lmdb");
        size_t meta_len = 0, node_len = 0;
        uint8_t *meta = record_copy(s, DREC_TABLE_META, 0, &meta_len);
        drec_meta m;
        assert_int_equal(drec_meta_decode(meta, meta_len, "t", &m), 0);
        uint8_t *node = record_copy(s, DREC_TABLE_NODE, m.medoid, &node_len);
        assert_int_equal(kv_close(s), 0);
        uint8_t *buf = malloc(node_len + 64);
        uint64_t rs = 1234 + (uint64_t)e;
        int answered = 0, corrupt = 0;
        for (int round = 0; round < ROUNDS; round++) {
            int target_meta = round % 4 == 3;
            const uint8_t *orig = target_meta ? meta : node;
            size_t len = target_meta ? meta_len : node_len;
            memcpy(buf, orig, len);
            switch (tu_rand(&rs) % 5) {
            case 0: /* flip a few bits */
                for (int f = 0; f < 3; f++)
                    buf[tu_rand(&rs) % len] ^= (uint8_t)(1u << (tu_rand(&rs) % 8));
                break;
            case 1: /* cut */
                len = tu_rand(&rs) % len;
                break;
            case 2: /* extend with garbage */
                for (int x = 0; x < 16; x++)
                    buf[len + (size_t)x] = (uint8_t)tu_rand(&rs);
                len += 1 + tu_rand(&rs) % 16;
                break;
            case 3: /* a random degree field */
                if (!target_meta)
                    ann_put_u32(buf + (e == 0 ? 4 : 0), (uint32_t)tu_rand(&rs));
                else
                    ann_put_u32(buf + 72, (uint32_t)tu_rand(&rs) % 8); /* pq_bytes */
                break;
            default: /* a random neighbour id / medoid */
                if (!target_meta && len >= (e == 0 ? 12u : 8u) + 4)
                    ann_put_u32(buf + (e == 0 ? 8 : 4), (uint32_t)tu_rand(&rs) % (2 * NM));
                else
                    ann_put_u32(buf + 56, (uint32_t)tu_rand(&rs) % (2 * NM));
                break;
            }
            put_record(index, "lmdb", target_meta ? DREC_TABLE_META : DREC_TABLE_NODE,
                       target_meta ? 0 : m.medoid, buf, len);
            opened o;
            int rc = open_index(engines[e], index, "{}", "{}", K, &o);
            if (rc == 0) {
                uint32_t ids[K];
                float d[K];
                ann_stats st = { 0 };
                rc = o.ops->search(o.ctx, data, K, ids, d, &st);
                close_index(&o);
                if (rc == K)
                    answered++;
                else if (rc == ANN_ECORRUPT)
                    corrupt++;
                else
                    fail_msg("round %d: search returned %d (%s)", round, rc,
                             rc < 0 ? ann_errmsg(rc) : "short");
            } else if (rc == ANN_ECORRUPT || rc == ANN_EVERSION) {
                corrupt++;
            } else {
                fail_msg("round %d: open returned %d (%s)", round, rc, ann_errmsg(rc));
            }
            put_record(index, "lmdb", target_meta ? DREC_TABLE_META : DREC_TABLE_NODE,
                       target_meta ? 0 : m.medoid, orig, target_meta ? meta_len : node_len);
        }
        print_message("%s: %d mutations answered, %d reported corrupt\n", engines[e], answered,
                      corrupt);
        assert_true(corrupt > ROUNDS / 3);
        free(buf);
        free(meta);
        free(node);
    }
    free(data);
}

/* A source that fails part-way: the build fails and leaves no index. */
static int failing_read(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out)
{
    if (first + count > 1200)
        return ann_fail(ANN_EDATA, "test source: row %llu unreadable", (unsigned long long)first);
    memcpy(out, (const float *)src->impl + first * src->dim, count * src->dim * sizeof(float));
    return 0;
}

static void test_failed_build_leaves_nothing(void **state)
{
    (void)state;
    float *data = tu_clustered(2000, DIM, 10, 3, 0);
    ann_vecsrc src = { .n = 2000, .dim = DIM, .metric = ANN_METRIC_L2, .read = failing_read,
                       .impl = data };
    snprintf(src.id, sizeof src.id, "failing");
    for (int e = 0; e < 2; e++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/failed-%s", tmp_root, engines[e]);
        int rc = ann_engine_build(ann_engine_find(engines[e]), &src, NULL, path, NULL, NULL);
        assert_int_equal(rc, ANN_EDATA);
        assert_null(tu_read_file(path, NULL));
        opened o;
        assert_int_equal(open_index(engines[e], path, "{}", "{}", K, &o), ANN_ENOTFOUND);
    }
    free(data);
}

/* Parameters out of range or unknown are errors naming them. */
/* ---- one graph through either engine ------------------------------------ */

/* Every node's degree and neighbour ids, as each engine stored them:
 * adj[v * (R + 1)] = degree, then the ids. */
static uint32_t *sector_adjacency(const char *index, uint32_t R, uint64_t n, uint32_t *medoid)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", index, "index.sector");
    size_t len = 0;
    uint8_t *file = tu_read_file(path, &len);
    assert_non_null(file);
    dsec_header h;
    assert_int_equal(dsec_header_decode(file, len, path, &h), 0);
    assert_int_equal(h.n, n);
    assert_int_equal(h.R, R);
    *medoid = h.medoid;
    uint32_t *adj = calloc(n * (R + 1), sizeof *adj);
    for (uint32_t v = 0; v < n; v++) {
        const uint8_t *rec = file + dsec_node_sector(&h, v) * DSEC_SECTOR_BYTES +
                             dsec_node_offset(&h, v) + 4 * (size_t)h.dim;
        uint32_t d = ann_get_u32(rec);
        assert_true(d <= R);
        adj[(size_t)v * (R + 1)] = d;
        for (uint32_t i = 0; i < d; i++)
            adj[(size_t)v * (R + 1) + 1 + i] = ann_get_u32(rec + 4 + 4 * i);
    }
    free(file);
    return adj;
}

static uint32_t *record_adjacency(const char *index, uint32_t R, uint32_t m, uint64_t n,
                                  uint32_t *medoid)
{
    kv_store *s = store_rw(index, "lmdb");
    size_t len = 0;
    uint8_t *meta = record_copy(s, DREC_TABLE_META, 0, &len);
    assert_non_null(meta);
    assert_true(len > 60);
    *medoid = ann_get_u32(meta + 56);
    free(meta);
    uint32_t *adj = calloc(n * (R + 1), sizeof *adj);
    for (uint32_t v = 0; v < n; v++) {
        uint8_t *rec = record_copy(s, DREC_TABLE_NODE, v, &len);
        assert_non_null(rec);
        uint32_t d = ann_get_u32(rec + m);
        assert_true(d <= R);
        assert_int_equal(len, m + 4 + (size_t)d * (4 + m));
        adj[(size_t)v * (R + 1)] = d;
        for (uint32_t i = 0; i < d; i++)
            adj[(size_t)v * (R + 1) + 1 + i] = ann_get_u32(rec + m + 4 + 4 * i);
        free(rec);
    }
    assert_int_equal(kv_close(s), 0);
    return adj;
}

/*
 * Issue 16: diskann-sector and diskann-record read the same build
 * parameters from one table (engines/core/diskann_params.h).  Built apart
 * (no shared artifact cache) on one thread with the same seed, they store
 * the same graph; before, diskann-record ignored seed and threads.  Another
 * seed gives diskann-record another graph.
 */
static void test_same_graph_as_sector(void **state)
{
    (void)state;
    enum { N = 1500, R = 16, M = 8 };
    float *data = tu_clustered(N, DIM, 12, 23, 0);
    const char *params = "{\"R\": 16, \"L_build\": 32, \"alpha\": 1.2, \"pq_bytes\": 8, "
                         "\"seed\": 7, \"threads\": 1}";
    char sector[4096], record[4096], other[4096];
    snprintf(sector, sizeof sector, "%s/same-sector", tmp_root);
    snprintf(record, sizeof record, "%s/same-record", tmp_root);
    snprintf(other, sizeof other, "%s/same-record-seed2", tmp_root);
    assert_int_equal(build_index("diskann-sector", data, N, ANN_METRIC_L2, params, sector), 0);
    assert_int_equal(build_index("diskann-record", data, N, ANN_METRIC_L2,
                                 "{\"R\": 16, \"L_build\": 32, \"alpha\": 1.2, \"pq_bytes\": 8, "
                                 "\"seed\": 7, \"threads\": 1, \"kv\": \"lmdb\"}",
                                 record),
                     0);
    assert_int_equal(build_index("diskann-record", data, N, ANN_METRIC_L2,
                                 "{\"R\": 16, \"L_build\": 32, \"alpha\": 1.2, \"pq_bytes\": 8, "
                                 "\"seed\": 2, \"threads\": 1, \"kv\": \"lmdb\"}",
                                 other),
                     0);
    uint32_t m_sector = 0, m_record = 0, m_other = 0;
    uint32_t *a = sector_adjacency(sector, R, N, &m_sector);
    uint32_t *b = record_adjacency(record, R, M, N, &m_record);
    uint32_t *c = record_adjacency(other, R, M, N, &m_other);
    assert_int_equal(m_sector, m_record);
    uint64_t edges = 0;
    for (uint32_t v = 0; v < N; v++) {
        const uint32_t *x = a + (size_t)v * (R + 1), *y = b + (size_t)v * (R + 1);
        if (memcmp(x, y, (R + 1) * sizeof *x) != 0)
            fail_msg("node %u: sector degree %u, record degree %u (or other neighbours)", v, x[0],
                     y[0]);
        edges += x[0];
    }
    assert_true(edges > (uint64_t)N * R / 2); /* a real graph, not an empty one */
    assert_true(memcmp(b, c, (size_t)N * (R + 1) * sizeof *b) != 0);
    free(a);
    free(b);
    free(c);
    free(data);
}

static void test_params(void **state)
{
    (void)state;
    opened o;
    assert_int_equal(open_index(engines[0], big_index[0], "{\"kv\": \"leveldb\"}", "{}", K, &o),
                     ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), "kv"));
    assert_int_equal(open_index(engines[0], big_index[0], "{}", "{\"beam_width\": 0}", K, &o),
                     ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), "beam_width"));
    assert_int_equal(open_index(engines[0], big_index[0], "{}", "{\"beam_width\": 65}", K, &o),
                     ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), "beam_width"));
    assert_int_equal(open_index(engines[0], big_index[0], "{}", "{\"rerank\": -1}", K, &o),
                     ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), "rerank"));
    char path[4096];
    snprintf(path, sizeof path, "%s/badpq", tmp_root);
    float *data = tu_clustered(1100, DIM, 4, 1, 0);
    assert_int_equal(build_index(engines[0], data, 1100, ANN_METRIC_L2, "{\"pq_bytes\": 64}", path),
                     ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), "pq_bytes"));
    /* below DREC_SCAN_BELOW no PQ is trained at build: its training parameters are refused */
    snprintf(path, sizeof path, "%s/scanpq", tmp_root);
    assert_int_equal(build_index(engines[0], data, 100, ANN_METRIC_L2, "{\"pq_iters\": 5}", path),
                     ANN_EPARAM);
    char want[4200];
    snprintf(want, sizeof want, "build diskann-record into %s: build.pq_iters: 100 vectors are "
             "scanned, not searched by a graph (below 1024); the PQ trained when it grows past "
             "that takes the defaults", path);
    assert_string_equal(ann_errmsg(ANN_EPARAM), want);
    assert_int_equal(build_index(engines[1], data, 100, ANN_METRIC_L2,
                                 "{\"pq_sample_rows\": 50}", path),
                     ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), "build.pq_sample_rows: 100 vectors"));
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0); /* nothing left behind */
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_node_record),
        cmocka_unit_test(test_recall_all_stores),
        cmocka_unit_test(test_beam),
        cmocka_unit_test(test_vector_ahead),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_layouts_agree),
        cmocka_unit_test(test_concurrent_contexts),
        cmocka_unit_test(test_tiny_and_empty),
        cmocka_unit_test(test_corruption),
        cmocka_unit_test(test_mutated_records),
        cmocka_unit_test(test_failed_build_leaves_nothing),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_same_graph_as_sector),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
