/*
 * test_live_engines.c: live updates (engine.h insert / remove / merge) of
 * the engines other than the DiskANN record engines (those are in
 * test_drec_live.c): hnsw-record and ivfpq-record on both record stores,
 * and the in-memory reference peers ref-hnswlib and ref-faiss-ivfpq when
 * they are compiled in.  Through the vtable only:
 *   - every inserted vector is its own nearest neighbour (exact-match
 *     search, top-1 is itself) after the insert, after the merge (engines
 *     that have one) and after reopening (record engines);
 *   - deleted ids (built and inserted ones) are never returned, before and
 *     after the merge and after reopening;
 *   - recall@10 after inserting 20% of a set into a build of the other 80%
 *     is within a measured margin of the one-pass build of the whole set;
 *   - bad input (existing id, missing id, double delete, wrong dimension,
 *     NaN, infinity, updates on an index opened without them): the exact
 *     messages, and nothing written (the store's records are counted);
 *   - kill -9 during a stream of inserts and deletes (record engines),
 *     then reopen: every insert whose call returned is found, no delete
 *     that returned comes back.
 * The reference peers are in memory: their updates do not survive close
 * (tested: a reopened index is the built one).
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
#include "engines/core/u32map.h"
#include "engines/engine.h"
#include "engines/hnsw_record/layout.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIM 32
#define NALL 5120
#define NBASE 4096 /* built; the other 1,024 (20%) are inserted */
#define NQ 100
#define K 10

typedef struct live_engine {
    const char *name;
    const char *build;   /* build parameters */
    const char *exact;   /* search parameters of exact-match searches */
    const char *recall;  /* search parameters of the recall measurement */
    int record;          /* a record engine: both stores, reopen, kill -9 */
    double margin;       /* live recall may fall this far below the one-pass build */
    const char *reinsert; /* the message refusing to insert a deleted id again
                             (before any merge); NULL: it is accepted */
} live_engine;

static const live_engine engines[] = {
    { "hnsw-record", "{\"M\": 12, \"ef_construction\": 100, \"threads\": 1}",
      "{\"ef_search\": 128}", "{\"ef_search\": 10}", 1, 0.03,
      "the id is deleted but not merged yet: merge before inserting it again" },
    /* ADC-only recall (rerank 1) at nprobe 4, measured: one-pass 0.933,
     * live 0.912 (quantizers trained on the base's 80%; inserting copies
     * of built vectors scores exactly as the build: test below) */
    { "ivfpq-record", "{\"nlist\": 64, \"pq_bytes\": 16, \"threads\": 1}",
      "{\"nprobe\": 8, \"rerank\": 20}", "{\"nprobe\": 4, \"rerank\": 1}", 1, 0.035,
      "the id is deleted but not merged yet: merge before inserting it again" },
    /* in memory (not compiled in without their Debian libraries) */
    { "ref-hnswlib", "{\"M\": 12, \"ef_construction\": 100, \"threads\": 1}",
      "{\"ef_search\": 128}", "{\"ef_search\": 10}", 0, 0.03, NULL },
    { "ref-faiss-ivfpq", "{\"nlist\": 64, \"pq_bytes\": 16}",
      "{\"nprobe\": 8, \"rerank\": 20}", "{\"nprobe\": 4, \"rerank\": 1}", 0, 0.035, NULL },
};
#define N_ENGINES (sizeof engines / sizeof engines[0])

static const char *const backends[] = { "rocksdb", "lmdb" };

static char *tmp_root;
static float *data, *queries;
static int32_t gt[NQ * K];
static char base_index[N_ENGINES][4096], full_index[N_ENGINES][4096];
static int copies;

static json_t *js(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j)
        fail_msg("bad JSON: %s", text);
    return j;
}

static const ann_engine_ops *ops_of(int e)
{
    return ann_engine_find(engines[e].name);
}

static int build(int e, uint64_t n, const char *path)
{
    ann_vecsrc *src = NULL;
    if (ann_vecsrc_from_memory(data, n, DIM, ANN_METRIC_COSINE, &src))
        return -1;
    json_t *bp = js(engines[e].build);
    int rc = ann_engine_build(ops_of(e), src, bp, path, NULL, NULL);
    if (rc)
        fprintf(stderr, "build %s: %s\n", engines[e].name, ann_errmsg(rc));
    json_decref(bp);
    ann_vecsrc_destroy(src);
    return rc;
}

static int setup(void **state)
{
    (void)state;
    tmp_root = tu_tmpdir("live-engines");
    if (!tmp_root)
        return -1;
    data = tu_clustered(NALL, DIM, 40, 777, 1);
    queries = malloc((size_t)NQ * DIM * sizeof(float));
    uint64_t s = 5;
    for (int i = 0; i < NQ; i++) {
        float *q = queries + (size_t)i * DIM;
        for (int j = 0; j < DIM; j++)
            q[j] = data[(size_t)(i * 51 + 3) * DIM + j] + 0.1f * tu_gauss(&s);
        ann_normalize(q, DIM);
    }
    ann_vecsrc *src = NULL;
    float *gd = malloc(NQ * K * sizeof(float));
    if (ann_vecsrc_from_memory(data, NALL, DIM, ANN_METRIC_COSINE, &src) ||
        ann_exact_knn(src, queries, NQ, K, 0, gt, gd))
        return -1;
    ann_vecsrc_destroy(src);
    free(gd);
    for (size_t e = 0; e < N_ENGINES; e++) {
        if (!ops_of((int)e))
            continue; /* a reference peer not compiled in */
        snprintf(base_index[e], sizeof base_index[e], "%s/base-%s", tmp_root, engines[e].name);
        snprintf(full_index[e], sizeof full_index[e], "%s/full-%s", tmp_root, engines[e].name);
        if (build((int)e, NBASE, base_index[e]) || build((int)e, NALL, full_index[e]))
            return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(tmp_root);
    free(data);
    free(queries);
    return 0;
}

/* A fresh copy of engine e's base index into out. */
static void copy_base(int e, char *out, size_t len)
{
    snprintf(out, len, "%s/copy-%d", tmp_root, copies++);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", base_index[e], out);
    assert_int_equal(system(cmd), 0);
}

typedef struct {
    const ann_engine_ops *ops;
    ann_engine *eng;
    ann_ctx *ctx;
} opened;

/* Open engine e's index at path (backend: record engines only) with or
 * without updates, and an exact-match context. */
static int open_idx(int e, const char *path, const char *backend, int updates, opened *o)
{
    char op[256];
    if (engines[e].record)
        snprintf(op, sizeof op, "{\"kv\": \"%s\", \"updates\": %s}", backend,
                 updates ? "true" : "false");
    else
        snprintf(op, sizeof op, "{}");
    o->ops = ops_of(e);
    o->eng = NULL;
    o->ctx = NULL;
    json_t *opj = js(op), *spj = js(engines[e].exact);
    int rc = ann_engine_open(o->ops, path, opj, &o->eng, NULL);
    if (!rc) {
        rc = ann_engine_ctx_new(o->ops, o->eng, spj, K, &o->ctx);
        if (rc) {
            o->ops->close(o->eng);
            o->eng = NULL;
        }
    }
    json_decref(opj);
    json_decref(spj);
    return rc;
}

static void close_idx(opened *o)
{
    if (o->ops) {
        o->ops->ctx_free(o->ctx);
        o->ops->close(o->eng);
    }
    o->eng = NULL;
    o->ctx = NULL;
}

static const float *vec(uint32_t id)
{
    return data + (size_t)id * DIM;
}

/* Top-1 of an exact-match search for vector v. */
static uint32_t top1_of(opened *o, const float *v)
{
    uint32_t ids[K];
    float d[K];
    ann_stats st = { 0 };
    int got = o->ops->search(o->ctx, v, 1, ids, d, &st);
    if (got < 0)
        fail_msg("search: %s", ann_errmsg(got));
    assert_int_equal(got, 1);
    return ids[0];
}

static uint32_t top1(opened *o, uint32_t id)
{
    return top1_of(o, vec(id));
}

/* Every id in [from, to) (step) is its own nearest neighbour. */
static void assert_found(opened *o, const char *what, uint32_t from, uint32_t to, uint32_t step)
{
    uint32_t misses = 0, first = 0, first_got = 0;
    for (uint32_t id = from; id < to; id += step) {
        uint32_t got = top1(o, id);
        if (got != id && misses++ == 0) {
            first = id;
            first_got = got;
        }
    }
    if (misses)
        fail_msg("%s: %u of [%u, %u) step %u not their own nearest neighbour (first %u: %u is)",
                 what, misses, from, to, step, first, first_got);
}

/* No id in dead[0..n) among the top K of a search for each of them. */
static void assert_never_returned(opened *o, const uint32_t *dead, uint32_t n)
{
    ann_u32map set = { 0 };
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(ann_u32map_put(&set, dead[i], 1), 0);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        int got = o->ops->search(o->ctx, vec(dead[i]), K, ids, d, &st);
        if (got != K)
            fail_msg("search for deleted id %u: %d results (%s)", dead[i], got,
                     got < 0 ? ann_errmsg(got) : "fewer than k");
        for (int j = 0; j < got; j++)
            if (ann_u32map_get(&set, ids[j], NULL))
                fail_msg("deleted id %u returned for a search of deleted id %u", ids[j], dead[i]);
    }
    ann_u32map_fini(&set);
}

/* recall@10 at the engine's recall parameters (low effort, so that the
 * index's quality shows). */
static double recall(int e, opened *o)
{
    uint32_t hit = 0;
    json_t *spj = js(engines[e].recall);
    ann_ctx *ctx = NULL;
    assert_int_equal(ann_engine_ctx_new(o->ops, o->eng, spj, K, &ctx), 0);
    json_decref(spj);
    for (int q = 0; q < NQ; q++) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        assert_int_equal(o->ops->search(ctx, queries + (size_t)q * DIM, K, ids, d, &st), K);
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++)
                if (ids[i] == (uint32_t)gt[q * K + j]) {
                    hit++;
                    break;
                }
    }
    o->ops->ctx_free(ctx);
    return (double)hit / (NQ * K);
}

static uint64_t table_records(const char *index, const char *backend, int table);

/* Records in a store of a record engine's index, all tables. */
static uint64_t store_records(const char *index, const char *backend)
{
    return table_records(index, backend, -1);
}

/* Records of one table (-1: all) in a store of a record engine's index. */
static uint64_t table_records(const char *index, const char *backend, int table)
{
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/%s", index, backend);
    kv_options o = { .read_only = 1 };
    assert_int_equal(kv_backend_parse(backend, &o.backend), 0);
    kv_store *s = NULL;
    kv_reader *rd = NULL;
    kv_iter *it = NULL;
    kv_val k, v;
    uint64_t n = 0;
    int step;
    assert_int_equal(kv_open(dir, &o, &s), 0);
    assert_int_equal(kv_reader_create(s, &rd), 0);
    assert_int_equal(kv_reader_begin(rd), 0);
    uint8_t prefix = (uint8_t)table;
    assert_int_equal(kv_iter_create(rd, &prefix, table < 0 ? 0 : 1, &it), 0);
    while ((step = kv_iter_next(it, &k, &v)) == 1)
        n++;
    assert_int_equal(step, 0);
    kv_iter_destroy(it);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    assert_int_equal(kv_close(s), 0);
    return n;
}

/*
 * The hnsw-record graph checker, reading the store directly: every node
 * record's links lead to node records, none to itself or twice in a list,
 * a list holds at most M0 (level 0) / M links; after a merge no link leads
 * to a deleted id and no tombstone is left, except the entry point's (kept
 * as a navigation point).  Returns the node records.
 */
static uint64_t check_hnsw_graph(const char *index, const char *backend, int merged)
{
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/%s", index, backend);
    kv_options o = { .read_only = 1 };
    assert_int_equal(kv_backend_parse(backend, &o.backend), 0);
    kv_store *s = NULL;
    kv_reader *rd = NULL;
    assert_int_equal(kv_open(dir, &o, &s), 0);
    assert_int_equal(kv_reader_create(s, &rd), 0);
    assert_int_equal(kv_reader_begin(rd), 0);
    uint8_t key[KV_KEY_U32_BYTES];
    kv_val mv = { 0 };
    assert_int_equal(kv_get(rd, key, kv_key_u32(key, HNSW_TABLE_META, 0), &mv), 0);
    uint32_t M = ann_get_u32((const uint8_t *)mv.data + 28), entry = ann_get_u32(
                                                                  (const uint8_t *)mv.data + 40);
    kv_val_release(&mv);
    if (kv_get(rd, key, kv_key_u32(key, HNSW_TABLE_STATE, 0), &mv) == 0) {
        entry = ann_get_u32((const uint8_t *)mv.data + 12);
        kv_val_release(&mv);
    }
    ann_u32map nodes = { 0 }, tombs = { 0 };
    const uint8_t tables[2] = { HNSW_TABLE_NODE, HNSW_TABLE_TOMBSTONE };
    ann_u32map *sets[2] = { &nodes, &tombs };
    for (int t = 0; t < 2; t++) {
        kv_iter *it = NULL;
        kv_val k, v;
        int step;
        assert_int_equal(kv_iter_create(rd, &tables[t], 1, &it), 0);
        while ((step = kv_iter_next(it, &k, &v)) == 1) {
            uint32_t id;
            assert_int_equal(kv_key_parse_u32(k.data, k.len, NULL, &id), 0);
            assert_int_equal(ann_u32map_put(sets[t], id, 1), 0);
        }
        assert_int_equal(step, 0);
        kv_iter_destroy(it);
    }
    kv_iter *it = NULL;
    kv_val k, v;
    uint8_t nt = HNSW_TABLE_NODE;
    assert_int_equal(kv_iter_create(rd, &nt, 1, &it), 0);
    while (kv_iter_next(it, &k, &v) == 1) {
        uint32_t id;
        assert_int_equal(kv_key_parse_u32(k.data, k.len, NULL, &id), 0);
        const uint8_t *rec = v.data;
        assert_int_equal(ann_get_u32(rec), id);
        uint32_t level = rec[4];
        size_t off = HNSW_NODE_HEADER_BYTES + (size_t)DIM * 4;
        for (uint32_t l = 0; l <= level; l++) {
            uint32_t count = ann_get_u32(rec + off);
            if (count > (l ? M : 2 * M))
                fail_msg("%s: node %u level %u: %u links", dir, id, l, count);
            for (uint32_t i = 0; i < count; i++) {
                uint32_t u = ann_get_u32(rec + off + 4 + 4 * (size_t)i);
                if (u == id)
                    fail_msg("%s: node %u: self-loop", dir, id);
                if (!ann_u32map_get(&nodes, u, NULL))
                    fail_msg("%s: node %u: link %u has no node record", dir, id, u);
                if (merged && u != entry && ann_u32map_get(&tombs, u, NULL))
                    fail_msg("%s: node %u: link %u is deleted after a merge", dir, id, u);
                for (uint32_t j = 0; j < i; j++)
                    if (ann_get_u32(rec + off + 4 + 4 * (size_t)j) == u)
                        fail_msg("%s: node %u: link %u twice", dir, id, u);
            }
            off += 4 + 4 * (size_t)count;
        }
        assert_int_equal(off, v.len);
    }
    kv_iter_destroy(it);
    if (merged)
        for (uint32_t i = 0; i < tombs.cap; i++)
            if (tombs.keys[i] != ANN_U32MAP_EMPTY && tombs.keys[i] != entry)
                fail_msg("%s: tombstone %u left after a merge", dir, tombs.keys[i]);
    uint64_t n = nodes.n;
    ann_u32map_fini(&nodes);
    ann_u32map_fini(&tombs);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    assert_int_equal(kv_close(s), 0);
    return n;
}

static int is_hnsw(int e)
{
    return strcmp(engines[e].name, "hnsw-record") == 0;
}

/* ---- inserts: exact match, merge, reopen, recall ---------------------- */

static void insert_case(int e, const char *backend, double one_pass)
{
    const live_engine *le = &engines[e];
    char path[4096], what[128];
    copy_base(e, path, sizeof path);
    opened o;
    assert_int_equal(open_idx(e, path, backend, 1, &o), 0);
    assert_int_equal(o.ops->size(o.eng), NBASE);
    for (uint32_t id = NBASE; id < NALL; id++) {
        int rc = o.ops->insert(o.eng, id, vec(id), DIM);
        if (rc)
            fail_msg("%s: insert %u: %s", le->name, id, ann_errmsg(rc));
    }
    assert_int_equal(o.ops->size(o.eng), NALL);
    snprintf(what, sizeof what, "%s %s inserted", le->name, backend ? backend : "");
    assert_found(&o, what, NBASE, NALL, 1);
    assert_found(&o, what, 0, NBASE, 37); /* the built points too */
    double live = recall(e, &o);
    if (o.ops->merge) {
        int rc = o.ops->merge(o.eng);
        if (rc)
            fail_msg("%s: merge: %s", le->name, ann_errmsg(rc));
        assert_int_equal(o.ops->size(o.eng), NALL);
        snprintf(what, sizeof what, "%s %s merged", le->name, backend ? backend : "");
        assert_found(&o, what, NBASE, NALL, 1);
        assert_found(&o, what, 0, NBASE, 37);
        live = recall(e, &o);
    }
    print_message("%s %s: recall@10 %s: one-pass build %.3f, base + 20%% inserted %.3f\n",
                  le->name, backend ? backend : "(memory)", le->recall, one_pass, live);
    assert_true(live >= one_pass - le->margin);
    close_idx(&o);
    if (is_hnsw(e))
        assert_int_equal(check_hnsw_graph(path, backend, 1), NALL);
    assert_int_equal(open_idx(e, path, backend, 0, &o), 0);
    if (le->record) {
        /* reopened read-only: the same index and answers */
        assert_int_equal(o.ops->size(o.eng), NALL);
        snprintf(what, sizeof what, "%s %s reopened", le->name, backend);
        assert_found(&o, what, NBASE, NALL, 1);
        assert_true(fabs(recall(e, &o) - live) < 1e-9);
    } else {
        /* in memory: a reopened index is the one that was built */
        assert_int_equal(o.ops->size(o.eng), NBASE);
    }
    close_idx(&o);
}

static void test_insert(void **state)
{
    (void)state;
    for (size_t e = 0; e < N_ENGINES; e++) {
        if (!ops_of((int)e))
            continue;
        opened o;
        assert_int_equal(open_idx((int)e, full_index[e], "lmdb", 0, &o), 0);
        double one_pass = recall((int)e, &o);
        assert_found(&o, "one-pass build", 0, NALL, 1);
        close_idx(&o);
        for (int b = 0; b < (engines[e].record ? 2 : 1); b++)
            insert_case((int)e, engines[e].record ? backends[b] : NULL, one_pass);
    }
}

/* ivfpq-record files an inserted vector as its build would: a copy of
 * every built vector of ids [0, 1024) inserted under a new id and the
 * original deleted leaves ADC-only searches (rerank 1) returning the same
 * results, copies for originals, at the same distances. */
static void test_ivfpq_insert_as_built(void **state)
{
    (void)state;
    const int e = 1;
    assert_string_equal(engines[e].name, "ivfpq-record");
    char path[4096];
    copy_base(e, path, sizeof path);
    opened a, b;
    assert_int_equal(open_idx(e, base_index[e], "lmdb", 0, &a), 0);
    assert_int_equal(open_idx(e, path, "lmdb", 1, &b), 0);
    const uint32_t copy0 = 100000;
    for (uint32_t id = 0; id < 1024; id++) {
        assert_int_equal(b.ops->insert(b.eng, copy0 + id, vec(id), DIM), 0);
        assert_int_equal(b.ops->remove(b.eng, id), 0);
    }
    json_t *sp = js("{\"nprobe\": 4, \"rerank\": 1}");
    ann_ctx *ca = NULL, *cb = NULL;
    assert_int_equal(ann_engine_ctx_new(a.ops, a.eng, sp, K, &ca), 0);
    assert_int_equal(ann_engine_ctx_new(b.ops, b.eng, sp, K, &cb), 0);
    json_decref(sp);
    uint32_t same = 0;
    for (int q = 0; q < NQ; q++) {
        uint32_t ia[K], ib[K];
        float da[K], db[K];
        ann_stats st = { 0 };
        assert_int_equal(a.ops->search(ca, queries + (size_t)q * DIM, K, ia, da, &st), K);
        assert_int_equal(b.ops->search(cb, queries + (size_t)q * DIM, K, ib, db, &st), K);
        for (int i = 0; i < K; i++) {
            uint32_t want = ia[i] < 1024 ? copy0 + ia[i] : ia[i];
            if (ib[i] == want && db[i] == da[i])
                same++;
        }
    }
    print_message("ivfpq-record: %u of %u results of copies inserted equal the built ones\n",
                  same, NQ * K);
    assert_int_equal(same, NQ * K);
    a.ops->ctx_free(ca);
    b.ops->ctx_free(cb);
    close_idx(&a);
    close_idx(&b);
}

/* ---- deletes ------------------------------------------------------------ */

static void delete_case(int e, const char *backend)
{
    const live_engine *le = &engines[e];
    char path[4096], what[128];
    copy_base(e, path, sizeof path);
    opened o;
    assert_int_equal(open_idx(e, path, backend, 1, &o), 0);
    /* 200 inserted, then 300 built ids and 50 inserted ones deleted */
    for (uint32_t id = NBASE; id < NBASE + 200; id++)
        assert_int_equal(o.ops->insert(o.eng, id, vec(id), DIM), 0);
    uint32_t dead[350], nd = 0;
    for (uint32_t id = 1; nd < 300; id += 13)
        dead[nd++] = id;
    for (uint32_t id = NBASE; id < NBASE + 200; id += 4)
        dead[nd++] = id;
    for (uint32_t i = 0; i < nd; i++) {
        int rc = o.ops->remove(o.eng, dead[i]);
        if (rc)
            fail_msg("%s: remove %u: %s", le->name, dead[i], ann_errmsg(rc));
    }
    assert_int_equal(o.ops->size(o.eng), NBASE + 200 - nd);
    assert_never_returned(&o, dead, nd);
    snprintf(what, sizeof what, "%s %s after deletes", le->name, backend ? backend : "");
    assert_found(&o, what, NBASE + 1, NBASE + 200, 4);
    assert_found(&o, what, 3, NBASE, 13); /* ids 13 i + 3: never deleted */
    if (o.ops->merge) {
        assert_int_equal(o.ops->merge(o.eng), 0);
        assert_int_equal(o.ops->size(o.eng), NBASE + 200 - nd);
        assert_never_returned(&o, dead, nd);
        assert_found(&o, what, NBASE + 1, NBASE + 200, 4);
        assert_found(&o, what, 3, NBASE, 13);
    }
    if (o.ops->merge) { /* a merged-away id comes back, with another vector */
        assert_int_equal(o.ops->insert(o.eng, dead[0], vec(NBASE + 201), DIM), 0);
        assert_int_equal(top1(&o, NBASE + 201), dead[0]);
        assert_int_equal(o.ops->remove(o.eng, dead[0]), 0);
        assert_int_equal(o.ops->merge(o.eng), 0);
        assert_never_returned(&o, dead, nd);
    }
    close_idx(&o);
    if (is_hnsw(e)) /* the 350 deleted nodes' records are gone (the entry was not deleted) */
        assert_int_equal(check_hnsw_graph(path, backend, 1), NBASE + 200 - nd);
    if (strcmp(le->name, "ivfpq-record") == 0) { /* merged: no appended entries, tombstones
                                                    or deleted vectors left (layout.h) */
        assert_int_equal(table_records(path, backend, 0x05), 0);
        assert_int_equal(table_records(path, backend, 0x06), 0);
        assert_int_equal(table_records(path, backend, 0x03), NBASE + 200 - nd);
    }
    if (le->record) {
        assert_int_equal(open_idx(e, path, backend, 0, &o), 0);
        assert_int_equal(o.ops->size(o.eng), NBASE + 200 - nd);
        assert_never_returned(&o, dead, nd);
        assert_found(&o, what, NBASE + 1, NBASE + 200, 4);
        close_idx(&o);
    }
}

static void test_delete(void **state)
{
    (void)state;
    for (size_t e = 0; e < N_ENGINES; e++)
        if (ops_of((int)e))
            for (int b = 0; b < (engines[e].record ? 2 : 1); b++)
                delete_case((int)e, engines[e].record ? backends[b] : NULL);
}

/* ---- bad input ---------------------------------------------------------- */

static void expect_error(int rc, int code, const char *msg)
{
    if (rc != code)
        fail_msg("returned %d (%s), expected %d with \"%s\"", rc, ann_errmsg(rc), code, msg);
    const char *got = ann_errmsg(rc);
    if (!strstr(got, msg))
        fail_msg("message \"%s\" does not contain \"%s\"", got, msg);
}

static void bad_input_case(int e, const char *backend)
{
    const live_engine *le = &engines[e];
    char path[4096], store[4200], msg[8400];
    copy_base(e, path, sizeof path);
    opened o;
    if (le->record) {
        snprintf(store, sizeof store, "%s/%s", path, backend);
        assert_int_equal(open_idx(e, path, backend, 0, &o), 0);
        snprintf(msg, sizeof msg, "%s: insert: the index was opened without updates (open "
                 "parameter \"updates\": true)", store);
        expect_error(o.ops->insert(o.eng, NALL, vec(0), DIM), ANN_ESTATE, msg);
        snprintf(msg, sizeof msg, "%s: remove: the index was opened without updates", store);
        expect_error(o.ops->remove(o.eng, 3), ANN_ESTATE, msg);
        close_idx(&o);
    } else {
        snprintf(store, sizeof store, "%s", le->name);
    }
    uint64_t before = le->record ? store_records(path, backend) : 0;
    assert_int_equal(open_idx(e, path, backend, 1, &o), 0);
    snprintf(msg, sizeof msg, "%s: insert id 17: the id exists", store);
    expect_error(o.ops->insert(o.eng, 17, vec(17), DIM), ANN_EDATA, msg);
    snprintf(msg, sizeof msg, "%s: remove id %u: no such id", store, NALL + 5);
    expect_error(o.ops->remove(o.eng, NALL + 5), ANN_ENOTFOUND, msg);
    snprintf(msg, sizeof msg, "%s: insert id %u: vector of dimension 31, the index has 32", store,
             NALL);
    expect_error(o.ops->insert(o.eng, NALL, vec(0), DIM - 1), ANN_EDATA, msg);
    float v[DIM];
    memcpy(v, vec(NBASE), sizeof v);
    v[7] = NAN;
    snprintf(msg, sizeof msg, "%s: insert id %u: component 7 is NaN", store, NALL);
    expect_error(o.ops->insert(o.eng, NALL, v, DIM), ANN_EDATA, msg);
    v[7] = -INFINITY;
    snprintf(msg, sizeof msg, "%s: insert id %u: component 7 is infinite", store, NALL);
    expect_error(o.ops->insert(o.eng, NALL, v, DIM), ANN_EDATA, msg);
    assert_int_equal(o.ops->size(o.eng), NBASE);
    assert_found(&o, "after refused calls", 0, NBASE, 97);
    close_idx(&o);
    if (le->record)
        assert_int_equal(store_records(path, backend), before); /* nothing written */

    /* an inserted id exists too; deleted twice; deleted and inserted again */
    assert_int_equal(open_idx(e, path, backend, 1, &o), 0);
    assert_int_equal(o.ops->insert(o.eng, NALL, vec(NBASE), DIM), 0);
    snprintf(msg, sizeof msg, "%s: insert id %u: the id exists", store, NALL);
    expect_error(o.ops->insert(o.eng, NALL, vec(NBASE), DIM), ANN_EDATA, msg);
    assert_int_equal(o.ops->remove(o.eng, 17), 0);
    snprintf(msg, sizeof msg, "%s: remove id 17: already deleted", store);
    expect_error(o.ops->remove(o.eng, 17), ANN_EDATA, msg);
    assert_int_equal(o.ops->remove(o.eng, NALL), 0);
    snprintf(msg, sizeof msg, "%s: remove id %u: already deleted", store, NALL);
    expect_error(o.ops->remove(o.eng, NALL), ANN_EDATA, msg);
    assert_int_equal(o.ops->size(o.eng), NBASE - 1);
    uint32_t dead = 17;
    assert_never_returned(&o, &dead, 1);
    if (le->reinsert) {
        snprintf(msg, sizeof msg, "%s: insert id 17: %s", store, le->reinsert);
        expect_error(o.ops->insert(o.eng, 17, vec(17), DIM), ANN_EDATA, msg);
    }
    uint32_t ids[K]; /* NALL held vec(NBASE) */
    float d[K];
    ann_stats st = { 0 };
    assert_int_equal(o.ops->search(o.ctx, vec(NBASE), K, ids, d, &st), K);
    for (int i = 0; i < K; i++)
        assert_int_not_equal(ids[i], NALL);
    if (!le->reinsert) { /* in memory: a deleted id comes back with its new vector */
        assert_int_equal(o.ops->insert(o.eng, 17, vec(NBASE + 1), DIM), 0);
        assert_int_equal(top1(&o, NBASE + 1), 17);
        assert_int_equal(o.ops->size(o.eng), NBASE);
    }
    close_idx(&o);
    if (le->record) /* the insert (2 records: vector and entry or node) and 2 tombstones */
        assert_true(store_records(path, backend) > before);
}

/* hnsw-record's entry point deleted: never returned, kept through merges
 * as a navigation point, and it cannot be inserted again; after a merge a
 * deleted id can come back. */
static void test_hnsw_entry_deleted(void **state)
{
    (void)state;
    const int e = 0;
    assert_true(is_hnsw(e));
    char path[4096], msg[8400];
    copy_base(e, path, sizeof path);
    uint32_t entry;
    {
        char dir[4300];
        snprintf(dir, sizeof dir, "%s/lmdb", path);
        kv_options ko = { .backend = KV_BACKEND_LMDB, .read_only = 1 };
        kv_store *ks = NULL;
        kv_reader *rd = NULL;
        kv_val mv = { 0 };
        uint8_t key[KV_KEY_U32_BYTES];
        assert_int_equal(kv_open(dir, &ko, &ks), 0);
        assert_int_equal(kv_reader_create(ks, &rd), 0);
        assert_int_equal(kv_reader_begin(rd), 0);
        assert_int_equal(kv_get(rd, key, kv_key_u32(key, HNSW_TABLE_META, 0), &mv), 0);
        entry = ann_get_u32((const uint8_t *)mv.data + 40);
        kv_val_release(&mv);
        kv_reader_end(rd);
        kv_reader_destroy(rd);
        assert_int_equal(kv_close(ks), 0);
    }
    opened o;
    assert_int_equal(open_idx(e, path, "lmdb", 1, &o), 0);
    assert_int_equal(o.ops->remove(o.eng, entry), 0);
    assert_int_equal(o.ops->remove(o.eng, entry == 5 ? 6 : 5), 0);
    assert_never_returned(&o, &entry, 1);
    assert_int_equal(o.ops->merge(o.eng), 0);
    assert_never_returned(&o, &entry, 1);
    snprintf(msg, sizeof msg, "%s/lmdb: insert id %u: the id is the graph's entry node, deleted "
             "and kept as a navigation point: it cannot be inserted again while it is the "
             "entry point", path, entry);
    expect_error(o.ops->insert(o.eng, entry, vec(entry), DIM), ANN_EDATA, msg);
    assert_int_equal(o.ops->size(o.eng), NBASE - 2);
    assert_found(&o, "entry deleted and merged", 7, NBASE, 61);
    /* the other one was consolidated away: it comes back, with another vector */
    uint32_t other = entry == 5 ? 6 : 5;
    assert_int_equal(o.ops->insert(o.eng, other, vec(NBASE + 3), DIM), 0);
    assert_int_equal(top1(&o, NBASE + 3), other);
    assert_int_equal(o.ops->size(o.eng), NBASE - 1);
    close_idx(&o);
    /* the entry's node record and tombstone stay; the other's are new */
    assert_int_equal(check_hnsw_graph(path, "lmdb", 1), NBASE);
}

static void test_bad_input(void **state)
{
    (void)state;
    for (size_t e = 0; e < N_ENGINES; e++)
        if (ops_of((int)e))
            for (int b = 0; b < (engines[e].record ? 2 : 1); b++)
                bad_input_case((int)e, engines[e].record ? backends[b] : NULL);
}

/* ---- searches while one writer inserts, deletes and merges -------------- */

typedef struct {
    opened *o;
    ann_ctx *ctx;
    _Atomic uint32_t done_upto;  /* inserts of ids below this have returned */
    _Atomic uint32_t dead_upto;  /* removes of victims[0, dead_upto) have returned */
    const uint32_t *victims;
    _Atomic int stop;
    _Atomic uint64_t searches;
    uint64_t misses, resurrected;
    _Atomic int err;
} searcher_arg;

static void *searcher(void *p)
{
    searcher_arg *a = p;
    uint64_t s = 99;
    while (!atomic_load(&a->stop)) {
        uint32_t upto = atomic_load(&a->done_upto), nd = atomic_load(&a->dead_upto);
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        if (upto > NBASE) {
            uint32_t id = NBASE + (uint32_t)(tu_rand(&s) % (upto - NBASE));
            int got = a->o->ops->search(a->ctx, vec(id), 1, ids, d, &st);
            if (got < 0) {
                a->err = got;
                break;
            }
            a->searches++;
            a->misses += got != 1 || ids[0] != id;
        }
        if (nd > 0) {
            uint32_t victim = a->victims[tu_rand(&s) % nd];
            int got = a->o->ops->search(a->ctx, vec(victim), K, ids, d, &st);
            if (got < 0) {
                a->err = got;
                break;
            }
            a->searches++;
            for (int i = 0; i < got; i++)
                a->resurrected += ids[i] == victim;
        }
    }
    return NULL;
}

/* One writer inserts 512 vectors, deletes a built id after every 8th and
 * merges after every 32nd while a second thread searches: no search
 * fails, every insert that returned is found by every search that starts
 * after it, no delete that returned comes back. */
static void concurrent_case(int e, const char *backend)
{
    const live_engine *le = &engines[e];
    char path[4096];
    copy_base(e, path, sizeof path);
    opened o;
    assert_int_equal(open_idx(e, path, backend, 1, &o), 0);
    uint32_t victims[64];
    searcher_arg a = { .o = &o, .victims = victims };
    json_t *sp = js(le->exact);
    assert_int_equal(ann_engine_ctx_new(o.ops, o.eng, sp, K, &a.ctx), 0);
    json_decref(sp);
    atomic_store(&a.done_upto, NBASE);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, searcher, &a), 0);
    uint32_t nd = 0;
    for (uint32_t id = NBASE; id < NBASE + 512; id++) {
        int rc = o.ops->insert(o.eng, id, vec(id), DIM);
        if (rc)
            fail_msg("%s: insert %u: %s", le->name, id, ann_errmsg(rc));
        atomic_store(&a.done_upto, id + 1);
        /* interleave: a search starts after every fourth insert at least */
        for (uint64_t seen = atomic_load(&a.searches);
             id % 4 == 3 && atomic_load(&a.searches) < seen + 2 && !a.err;)
            sched_yield();
        if (id % 8 == 7) {
            victims[nd] = 5 + 61 * nd;
            if ((rc = o.ops->remove(o.eng, victims[nd])) != 0)
                fail_msg("%s: remove %u: %s", le->name, victims[nd], ann_errmsg(rc));
            atomic_store(&a.dead_upto, ++nd);
        }
        if (o.ops->merge && id % 32 == 31 && (rc = o.ops->merge(o.eng)) != 0)
            fail_msg("%s: merge: %s", le->name, ann_errmsg(rc));
    }
    atomic_store(&a.stop, 1);
    pthread_join(th, NULL);
    o.ops->ctx_free(a.ctx);
    print_message("%s %s: %llu searches during updates, %llu inserts missed, %llu deletes "
                  "returned\n", le->name, backend, (unsigned long long)atomic_load(&a.searches),
                  (unsigned long long)a.misses, (unsigned long long)a.resurrected);
    if (a.err)
        fail_msg("search during updates: %s", ann_errmsg(a.err));
    assert_true(atomic_load(&a.searches) >= 256);
    assert_int_equal(a.misses, 0);
    assert_int_equal(a.resurrected, 0);
    close_idx(&o);
    if (is_hnsw(e))
        check_hnsw_graph(path, backend, 1);
}

static void test_concurrent_search(void **state)
{
    (void)state;
    for (size_t e = 0; e < N_ENGINES; e++)
        if (ops_of((int)e) && engines[e].record)
            for (int b = 0; b < 2; b++)
                concurrent_case((int)e, backends[b]);
}

/* ---- kill -9 during a stream of inserts and deletes --------------------- */

/* Child -> parent: 'I' id (insert returned), 'D' id (remove returned),
 * 'E' code (an error). */
typedef struct {
    char op;
    uint32_t id;
} report;

static void child_send(int fd, char op, uint32_t id)
{
    report r = { op, id };
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(3);
}

/* The id the child deletes after inserting id (id % 10 == 0): distinct. */
static uint32_t victim_of(uint32_t id)
{
    return id % 20 == 0 ? id - 5 : (id * 7) % 4000;
}

static void child_run(int e, const char *path, const char *backend, int fd)
{
    opened o;
    int rc = open_idx(e, path, backend, 1, &o);
    if (rc) {
        child_send(fd, 'E', (uint32_t)-rc);
        _exit(2);
    }
    for (uint32_t id = NBASE; id < NALL; id++) {
        rc = o.ops->insert(o.eng, id, vec(id), DIM);
        if (rc) {
            child_send(fd, 'E', (uint32_t)-rc);
            _exit(2);
        }
        child_send(fd, 'I', id);
        if (id % 10 == 0) {
            uint32_t victim = victim_of(id);
            rc = o.ops->remove(o.eng, victim);
            if (rc) {
                child_send(fd, 'E', (uint32_t)-rc);
                _exit(2);
            }
            child_send(fd, 'D', victim);
        }
        if (o.ops->merge && id % 200 == 0 && (rc = o.ops->merge(o.eng)) != 0) {
            child_send(fd, 'E', (uint32_t)-rc);
            _exit(2);
        }
    }
    pause(); /* killed here at the latest */
    _exit(0);
}

/*
 * The child runs in a fresh image of this test (main's --crash-child), not
 * in a forked copy of this multi-threaded process: such a copy inherits
 * RocksDB's thread-pool condition variables with the parent's waiters
 * counted in them, and its first flush signal can wait for them forever
 * (test_drec_live hung so in CI, 2026-12-05).  The pipe's write end is
 * inherited across the exec.
 */
static void crash_child_exec(int e, const char *path, const char *backend, int fd)
{
    char ea[16], fa[16];
    snprintf(ea, sizeof ea, "%d", e);
    snprintf(fa, sizeof fa, "%d", fd);
    execl("/proc/self/exe", "test_live_engines", "--crash-child", ea, path, backend, fa,
          (char *)NULL);
    _exit(4);
}

/* main's --crash-child E PATH BACKEND FD (crash_child_exec). */
static int crash_child_main(char **argv)
{
    data = tu_clustered(NALL, DIM, 40, 777, 1);
    if (!data)
        return 5;
    child_run(atoi(argv[2]), argv[3], argv[4], atoi(argv[5]));
    return 0; /* not reached: child_run exits */
}

static void crash_case(int e, const char *backend, uint32_t kill_after)
{
    const live_engine *le = &engines[e];
    char path[4096];
    copy_base(e, path, sizeof path);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        crash_child_exec(e, path, backend, fds[1]);
    }
    close(fds[1]);
    uint8_t *inserted = calloc(NALL, 1), *deleted = calloc(NALL, 1);
    uint32_t n_ins = 0, n_del = 0;
    report r;
    while (n_ins < kill_after && read(fds[0], &r, sizeof r) == (ssize_t)sizeof r) {
        if (r.op == 'E')
            fail_msg("child failed: %s", ann_errmsg(-(int)r.id));
        if (r.op == 'I') {
            inserted[r.id] = 1;
            n_ins++;
        } else if (r.op == 'D') {
            deleted[r.id] = 1;
            n_del++;
        }
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    close(fds[0]);
    print_message("%s %s: killed after %u inserts and %u deletes returned\n", le->name, backend,
                  n_ins, n_del);
    assert_true(WIFSIGNALED(status));
    if (is_hnsw(e))
        check_hnsw_graph(path, backend, 0);
    opened o;
    assert_int_equal(open_idx(e, path, backend, 1, &o), 0);
    uint32_t dead[NALL], nd = 0;
    for (uint32_t id = 0; id < NALL; id++)
        if (deleted[id])
            dead[nd++] = id;
    /* a remove the child made after its last report may have returned
     * too: those ids may be gone (reported ones must be) */
    uint8_t *maybe_deleted = calloc(NALL, 1);
    for (uint32_t id = NBASE; id < NALL; id++)
        if (id % 10 == 0)
            maybe_deleted[victim_of(id)] = 1;
    for (uint32_t id = NBASE; id < NALL; id++)
        if (inserted[id] && !maybe_deleted[id] && top1(&o, id) != id)
            fail_msg("%s %s: insert %u returned before the kill, not found after", le->name,
                     backend, id);
    assert_never_returned(&o, dead, nd);
    if (o.ops->merge) {
        assert_int_equal(o.ops->merge(o.eng), 0);
        for (uint32_t id = NBASE; id < NALL; id++)
            if (inserted[id] && !maybe_deleted[id])
                assert_int_equal(top1(&o, id), id);
        assert_never_returned(&o, dead, nd);
    }
    close_idx(&o);
    if (is_hnsw(e))
        check_hnsw_graph(path, backend, 1);
    free(maybe_deleted);
    free(inserted);
    free(deleted);
}

static void test_crash(void **state)
{
    (void)state;
    for (size_t e = 0; e < N_ENGINES; e++)
        if (engines[e].record && ops_of((int)e)) {
            crash_case((int)e, "rocksdb", 300);
            crash_case((int)e, "lmdb", 500);
        }
}

int main(int argc, char **argv)
{
    /* FAISS trains with OpenMP threads on every core; on a machine whose
     * cores are busy its spinning barriers made the two small builds take
     * 30 s instead of 2.  libgomp reads its environment when it loads, so
     * the test sets it and runs itself again. */
    if (!getenv("OMP_NUM_THREADS")) {
        setenv("OMP_NUM_THREADS", "1", 1);
        execv("/proc/self/exe", argv);
    }
    if (argc > 1 && !strcmp(argv[1], "--crash-child")) /* never the suite again */
        return argc == 6 ? crash_child_main(argv) : 5;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_insert),
        cmocka_unit_test(test_ivfpq_insert_as_built),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_concurrent_search),
        cmocka_unit_test(test_hnsw_entry_deleted),
        cmocka_unit_test(test_crash),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
