/*
 * test_drec_live.c: live updates of diskann-record and diskann-resident
 * (FreshDiskANN inserts, deletes and merges; engines/diskann_record/live.c)
 * on both record stores:
 *   - every inserted vector is its own nearest neighbour (exact-match
 *     search) while pending, after the merge and after reopening;
 *   - deleted ids (graph nodes and pending ones) are never returned,
 *     before and after the merge, and a consolidated id can be inserted
 *     again;
 *   - recall@10 after inserting 20% of a set through pending + merge is
 *     within a margin of the one-pass build of the whole set, also when
 *     the inserted rows are whole topics the graph has never seen, in
 *     file order;
 *   - background merges every merge_every inserts (1, 1024, 16384) while
 *     a second thread searches: every insert that returned is found by
 *     every search that starts after it;
 *   - bad input: exact messages, nothing written;
 *   - kill -9 during a stream of inserts and deletes, and during a merge:
 *     after reopening, every insert whose call returned is found, no
 *     deleted id comes back, and the graph checker (below) passes.
 *
 * The graph checker reads the store directly: every node record's degree
 * is at most ceil(1.3 R) (drec_max_degree: merges keep the back-edge
 * slack), no self-loops or repeated neighbours, every neighbour has
 * a node record, every node and pending id has its vector record, and
 * (after a merge) no edge leads to a deleted id other than the entry
 * node, which stays as a frozen navigation point.
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
#include "engines/core/pq_lb.h"
#include "engines/core/status.h"
#include "engines/core/u32map.h"
#include "engines/diskann_record/drec.h" /* the open engine's store, for expect_found */
#include "engines/diskann_record/layout.h"
#include "engines/engine.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIM 32
#define NALL 5120
#define NBASE 4096 /* built; the other 1,024 (20%) are inserted */
#define NQ 100
#define K 10

static const char *const engines[] = { "diskann-record", "diskann-resident" };
static const char *const backends[] = { "rocksdb", "lmdb" };

static char *tmp_root;
static float *data, *queries;
static int32_t gt[NQ * K];
static char base_index[2][4096], full_index[2][4096];
static int copies;

static json_t *js(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j)
        fail_msg("bad JSON: %s", text);
    return j;
}

static const char *BUILD = "{\"R\": 24, \"L_build\": 48, \"alpha\": 1.2, \"pq_bytes\": 16}";

/* Build engine's index over the first n rows of x at path. */
static int build_with(const char *engine, const float *x, uint64_t n, const char *path,
                      const char *params)
{
    ann_vecsrc *src = NULL;
    if (ann_vecsrc_from_memory(x, n, DIM, ANN_METRIC_COSINE, &src))
        return -1;
    json_t *bp = js(params);
    int rc = ann_engine_build(ann_engine_find(engine), src, bp, path, NULL, NULL);
    if (rc)
        fprintf(stderr, "build %s: %s\n", engine, ann_errmsg(rc));
    json_decref(bp);
    ann_vecsrc_destroy(src);
    return rc;
}

static int build_rows(const char *engine, const float *x, uint64_t n, const char *path)
{
    return build_with(engine, x, n, path, BUILD);
}

static int build(const char *engine, uint64_t n, const char *path)
{
    return build_rows(engine, data, n, path);
}

static int setup(void **state)
{
    (void)state;
    tmp_root = tu_tmpdir("drec-live");
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
    for (int e = 0; e < 2; e++) {
        snprintf(base_index[e], sizeof base_index[e], "%s/base-%s", tmp_root, engines[e]);
        snprintf(full_index[e], sizeof full_index[e], "%s/full-%s", tmp_root, engines[e]);
        if (build(engines[e], NBASE, base_index[e]) || build(engines[e], NALL, full_index[e]))
            return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    /* a full-disk case that failed midway left its tmpfs mounted */
    char cmd[4200];
    snprintf(cmd, sizeof cmd,
             "for m in '%s'/small-fs-*; do mountpoint -q \"$m\" && umount \"$m\"; done; true",
             tmp_root);
    if (system(cmd) != 0)
        print_message("%s failed\n", cmd);
    tu_rmdir(tmp_root);
    free(data);
    free(queries);
    return 0;
}

/* A fresh copy of engine e's base index; returns its path (static buffer
 * per call site: callers copy what they keep). */
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

static double cache_mb = 64; /* pending_cache_mb of the next opens */
static int merge_threads = 0; /* merge_threads of the next opens (0: one per core) */
static int compact_after = 0; /* compact_after_merge of the next opens */
static double merge_cache = -1; /* merge_cache_mb of the next opens (-1: the engine's default) */
static double merge_snapshot = -1; /* merge_snapshot_mb of the next opens (-1: the default) */
static double ingest_mb = 0; /* ingest_above_mb of the next opens (0: the default) */
static double full_leave_mb = 0; /* free space the full-disk child leaves (full_disk_case) */

static int open_idx(int e, const char *path, const char *backend, int updates, uint32_t merge_every,
                    uint32_t L, opened *o)
{
    char op[600], sp[64];
    snprintf(op, sizeof op,
             "{\"kv\": \"%s\", \"updates\": %s, \"merge_every\": %u, \"pending_cache_mb\": %g, "
             "\"merge_threads\": %d, \"compact_after_merge\": %s, \"merge_cache_mb\": %g, "
             "\"merge_snapshot_mb\": %g, \"ingest_above_mb\": %g}",
             backend, updates ? "true" : "false", merge_every, cache_mb, merge_threads,
             compact_after && updates ? "true" : "false", merge_cache, merge_snapshot, ingest_mb);
    snprintf(sp, sizeof sp, "{\"L\": %u}", L);
    o->ops = ann_engine_find(engines[e]);
    o->eng = NULL;
    o->ctx = NULL;
    json_t *opj = js(op), *spj = js(sp);
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

/* Top-1 of an exact-match search for id's vector. */
static uint32_t top1(opened *o, uint32_t id)
{
    uint32_t ids[K];
    float d[K];
    ann_stats st = { 0 };
    int got = o->ops->search(o->ctx, vec(id), 1, ids, d, &st);
    if (got < 0)
        fail_msg("search: %s", ann_errmsg(got));
    assert_int_equal(got, 1);
    return ids[0];
}

/*
 * Exact-match searches for ids[0..n), vectors that may have been merged
 * into the graph.  A pending vector is always found (the pending codes
 * are scanned), but a merged one only if the graph walk reaches it, and
 * Vamana does not promise that: the merge links a vector where a greedy
 * search of L_build ends, which can be a local minimum.  Measured
 * (2026-12-02): in about 1 of 10 multi-threaded base builds here, a query
 * for id 4423's vector at L 48 ends at cosine distance 0.69 (its nearest
 * neighbour is at 0.043), so the merge links 4423 there; a query at
 * L 100 then escapes that minimum, reaches 4423's cluster, where nothing
 * points at 4423, and returns its neighbour 4631.  So 1 + n/1024 misses
 * of graph nodes are allowed, each printed; a defect that drops or
 * mislinks vectors misses many more.  A missed id that is pending, or has
 * no node or vector record (an insert lost, say by a crash), fails at once.
 */
/* Which records of id the open engine's store holds, in one snapshot: 0
 * or a read error (no fail_msg: the background searcher calls this too). */
static int id_records(opened *o, uint32_t id, int *node, int *pending, int *vector)
{
    const uint8_t tables[3] = { DREC_TABLE_NODE, DREC_TABLE_PENDING, DREC_TABLE_VECTOR };
    int *has[3] = { node, pending, vector };
    kv_reader *rd = NULL;
    int rc = kv_reader_create(((struct ann_engine *)o->eng)->kv, &rd);
    if (!rc)
        rc = kv_reader_begin(rd);
    for (int t = 0; !rc && t < 3; t++) {
        uint8_t key[KV_KEY_U32_BYTES];
        kv_val v = { 0 };
        rc = kv_get(rd, key, kv_key_u32(key, tables[t], id), &v);
        kv_val_release(&v);
        *has[t] = rc == 0;
        if (rc == ANN_ENOTFOUND)
            rc = 0;
    }
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    return rc;
}

static void expect_found(opened *o, const uint32_t *ids, uint32_t n, const char *what)
{
    uint32_t missed = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t got = top1(o, ids[i]);
        if (got == ids[i])
            continue;
        /* only a merged vector may be missed: a pending one, or one with
         * no records (a lost insert), fails at once */
        int node, pending, vector, rc = id_records(o, ids[i], &node, &pending, &vector);
        if (rc)
            fail_msg("reading the records of %u: %s", ids[i], ann_errmsg(rc));
        if (!node || pending || !vector)
            fail_msg("%s: %u not found (top-1 %u) and it is %s", what, ids[i], got,
                     pending ? "pending (the pending codes are scanned exhaustively)"
                             : "not a node with a vector (lost)");
        missed++;
        print_message("  %s: %u, a graph node, is not its own nearest neighbour (top-1 %u)\n",
                      what, ids[i], got);
    }
    if (missed > 1 + n / 1024)
        fail_msg("%s: %u of %u vectors not found by an exact-match search (at most %u allowed)",
                 what, missed, n, 1 + n / 1024);
}

/* expect_found for from, from + step, ... below to */
static void expect_found_range(opened *o, uint32_t from, uint32_t to, uint32_t step,
                               const char *what)
{
    uint32_t *ids = malloc(((to - from) / step + 1) * sizeof *ids), n = 0;
    assert_non_null(ids);
    for (uint32_t id = from; id < to; id += step)
        ids[n++] = id;
    expect_found(o, ids, n, what);
    free(ids);
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
        assert_int_equal(got, K);
        for (int j = 0; j < got; j++)
            if (ann_u32map_get(&set, ids[j], NULL))
                fail_msg("deleted id %u returned for a search of deleted id %u", ids[j], dead[i]);
    }
    ann_u32map_fini(&set);
}

/* recall@10 at list size L (small, so that graph quality shows) of the
 * nq queries qs against their true top K in truth */
#define RECALL_L 12
static double recall_n(opened *o, const float *qs, const int32_t *truth, int nq)
{
    uint32_t hit = 0;
    char sp[64];
    snprintf(sp, sizeof sp, "{\"L\": %u}", RECALL_L);
    json_t *spj = js(sp);
    ann_ctx *ctx = NULL;
    assert_int_equal(ann_engine_ctx_new(o->ops, o->eng, spj, K, &ctx), 0);
    json_decref(spj);
    for (int q = 0; q < nq; q++) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        assert_int_equal(o->ops->search(ctx, qs + (size_t)q * DIM, K, ids, d, &st), K);
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++)
                if (ids[i] == (uint32_t)truth[q * K + j]) {
                    hit++;
                    break;
                }
    }
    o->ops->ctx_free(ctx);
    return (double)hit / ((double)nq * K);
}

static double recall_of(opened *o, const float *qs, const int32_t *truth)
{
    return recall_n(o, qs, truth, NQ);
}

static double recall(opened *o)
{
    return recall_of(o, queries, gt);
}

/* ---- the graph checker --------------------------------------------------- */

typedef struct {
    uint64_t nodes, pending, tombstones;
    uint64_t above_r; /* node records of degree > R (the slack a merge keeps) */
} store_counts;

static void check_graph(const char *index, const char *backend, int merged, store_counts *out)
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
    uint64_t above_r = 0;
    uint8_t key[KV_KEY_U32_BYTES];
    kv_val mv = { 0 };
    assert_int_equal(kv_get(rd, key, kv_key_u32(key, DREC_TABLE_META, 0), &mv), 0);
    drec_meta meta;
    assert_int_equal(drec_meta_decode(mv.data, mv.len, dir, &meta), 0);
    kv_val_release(&mv);
    const uint32_t m = meta.pq_bytes;
    const size_t head = meta.layout == DREC_LAYOUT_FULL ? m : 0;

    ann_u32map nodes = { 0 }, vectors = { 0 }, pend = { 0 }, tombs = { 0 };
    ann_u32map *sets[4] = { &nodes, &vectors, &pend, &tombs };
    const uint8_t tables[4] = { DREC_TABLE_NODE, DREC_TABLE_VECTOR, DREC_TABLE_PENDING,
                                DREC_TABLE_TOMBSTONE };
    for (int t = 0; t < 4; t++) {
        kv_iter *it = NULL;
        kv_val k, v;
        assert_int_equal(kv_iter_create(rd, &tables[t], 1, &it), 0);
        int step;
        while ((step = kv_iter_next(it, &k, &v)) == 1) {
            uint32_t id;
            assert_int_equal(kv_key_parse_u32(k.data, k.len, NULL, &id), 0);
            assert_int_equal(ann_u32map_put(sets[t], id, 1), 0);
        }
        assert_int_equal(step, 0);
        kv_iter_destroy(it);
    }
    /* every node and pending id has its vector; pending ids are not nodes */
    for (uint32_t i = 0; i < nodes.cap; i++)
        if (nodes.keys[i] != ANN_U32MAP_EMPTY && !ann_u32map_get(&vectors, nodes.keys[i], NULL))
            fail_msg("%s: node %u has no vector record", dir, nodes.keys[i]);
    for (uint32_t i = 0; i < pend.cap; i++)
        if (pend.keys[i] != ANN_U32MAP_EMPTY) {
            if (!ann_u32map_get(&vectors, pend.keys[i], NULL))
                fail_msg("%s: pending %u has no vector record", dir, pend.keys[i]);
            if (ann_u32map_get(&nodes, pend.keys[i], NULL))
                fail_msg("%s: pending %u is also a node", dir, pend.keys[i]);
        }
    /* node records */
    kv_iter *it = NULL;
    kv_val k, v;
    uint8_t nt = DREC_TABLE_NODE;
    assert_int_equal(kv_iter_create(rd, &nt, 1, &it), 0);
    while (kv_iter_next(it, &k, &v) == 1) {
        uint32_t id;
        assert_int_equal(kv_key_parse_u32(k.data, k.len, NULL, &id), 0);
        const uint8_t *rec = v.data;
        uint32_t d = ann_get_u32(rec + head);
        if (d > drec_max_degree(meta.R))
            fail_msg("%s: node %u: degree %u > ceil(1.3 R) = %u", dir, id, d,
                     drec_max_degree(meta.R));
        above_r += d > meta.R;
        assert_int_equal(v.len, drec_node_bytes(meta.layout, m, d));
        for (uint32_t i = 0; i < d; i++) {
            uint32_t u = ann_get_u32(rec + head + 4 + 4 * (size_t)i);
            if (u == id)
                fail_msg("%s: node %u: self-loop", dir, id);
            if (!ann_u32map_get(&nodes, u, NULL))
                fail_msg("%s: node %u: neighbour %u has no node record", dir, id, u);
            if (merged && u != meta.medoid && ann_u32map_get(&tombs, u, NULL))
                fail_msg("%s: node %u: neighbour %u is deleted after a merge", dir, id, u);
            for (uint32_t j = 0; j < i; j++)
                if (ann_get_u32(rec + head + 4 + 4 * (size_t)j) == u)
                    fail_msg("%s: node %u: neighbour %u twice", dir, id, u);
        }
    }
    kv_iter_destroy(it);
    if (merged)
        for (uint32_t i = 0; i < tombs.cap; i++)
            if (tombs.keys[i] != ANN_U32MAP_EMPTY && tombs.keys[i] != meta.medoid)
                fail_msg("%s: tombstone %u left after a merge", dir, tombs.keys[i]);
    if (out)
        *out = (store_counts){ nodes.n, pend.n, tombs.n, above_r };
    for (int t = 0; t < 4; t++)
        ann_u32map_fini(sets[t]);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    assert_int_equal(kv_close(s), 0);
}

/* ---- insert, merge, exact match, recall ------------------------------- */

static void insert_merge_case(int e, const char *backend, double *rec_out)
{
    char path[4096];
    copy_base(e, path, sizeof path);
    opened o;
    assert_int_equal(open_idx(e, path, backend, 1, 0, 100, &o), 0);
    assert_int_equal(o.ops->size(o.eng), NBASE);
    for (uint32_t id = NBASE; id < NALL; id++) {
        int rc = o.ops->insert(o.eng, id, vec(id), DIM);
        if (rc)
            fail_msg("insert %u: %s", id, ann_errmsg(rc));
    }
    assert_int_equal(o.ops->size(o.eng), NALL);
    for (uint32_t id = NBASE; id < NALL; id++)
        if (top1(&o, id) != id)
            fail_msg("%s %s: pending %u is not its own nearest neighbour", engines[e], backend, id);
    double pending_recall = recall(&o);
    int rc = o.ops->merge(o.eng);
    if (rc)
        fail_msg("merge: %s", ann_errmsg(rc));
    assert_int_equal(o.ops->size(o.eng), NALL);
    char what[128];
    snprintf(what, sizeof what, "%s %s: merged", engines[e], backend);
    expect_found_range(&o, NBASE, NALL, 1, what);
    /* the old points too */
    for (uint32_t id = 0; id < NBASE; id += 37)
        assert_int_equal(top1(&o, id), id);
    *rec_out = recall(&o);
    print_message("%s %s: recall@10 L %d: %.3f with 1,024 pending, %.3f merged\n", engines[e],
                  backend, RECALL_L, pending_recall, *rec_out);
    close_idx(&o);
    store_counts c;
    check_graph(path, backend, 1, &c);
    assert_int_equal(c.nodes, NALL);
    assert_int_equal(c.pending, 0);
    /* reopened read-only: the same answers */
    assert_int_equal(open_idx(e, path, backend, 0, 0, 100, &o), 0);
    assert_int_equal(o.ops->size(o.eng), NALL);
    snprintf(what, sizeof what, "%s %s: merged, reopened read-only", engines[e], backend);
    expect_found_range(&o, NBASE, NALL, 7, what);
    assert_true(fabs(recall(&o) - *rec_out) < 1e-9);
    close_idx(&o);
}

/*
 * Topics inserted in file order (the regression of 2026-12-06): 40
 * clusters of 128 rows, stored cluster after cluster; the first 32 are
 * built, the last 8 (1,024 rows, topics the graph has never seen) are
 * inserted and merged.  A merge's chunk is linked against the graph as
 * the previous chunk left it; until 2026-12-06 a chunk's vectors did not
 * see each other and chunks were a tenth of the graph (409 here), so
 * every new cluster fell inside one chunk, its rows linked only to nodes
 * of other clusters, and recall@10 for queries inside the new clusters
 * fell far below the one-pass build of the same rows (at 100k on the
 * fitted Cohere preset: 0.73-0.77 against 0.999).  Measured here (L 12,
 * diskann-record): that code 0.528 against 0.918 one-pass; chunks of 64
 * whose vectors are each other's candidates 0.899 / 0.900 (record /
 * resident) against 0.918 / 0.917.
 */
/* Rows [first, first + rows) of x as one topic: a centre drawn at
 * centre_scale (into c, DIM floats), each row that centre plus noise 0.3,
 * normalised. */
static void topic_rows(float *x, uint32_t first, uint32_t rows, float centre_scale, float *c,
                       uint64_t *seed)
{
    for (int j = 0; j < DIM; j++)
        c[j] = centre_scale * (float)tu_gauss(seed);
    for (uint32_t i = 0; i < rows; i++) {
        float *row = x + ((size_t)first + i) * DIM;
        for (int j = 0; j < DIM; j++)
            row[j] = c[j] + 0.3f * (float)tu_gauss(seed);
        ann_normalize(row, DIM);
    }
}

/* nq queries, query i near row first + i * stride + 3 of x (noise 0.1,
 * normalised), and their exact top K over x's n rows into tgt / gd. */
static void queries_near(float *q, int nq, const float *x, uint32_t n, uint32_t first,
                         uint32_t stride, uint64_t *seed, int32_t *tgt, float *gd)
{
    for (int i = 0; i < nq; i++) {
        const float *r = x + (size_t)(first + (uint32_t)i * stride + 3) * DIM;
        for (int j = 0; j < DIM; j++)
            q[(size_t)i * DIM + j] = r[j] + 0.1f * (float)tu_gauss(seed);
        ann_normalize(q + (size_t)i * DIM, DIM);
    }
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(x, n, DIM, ANN_METRIC_COSINE, &src), 0);
    assert_int_equal(ann_exact_knn(src, q, (uint32_t)nq, K, 0, tgt, gd), 0);
    ann_vecsrc_destroy(src);
}

#define TOPICS 40
#define TOPIC_ROWS 128
static void test_topic_order_merge(void **state)
{
    (void)state;
    const uint32_t n = TOPICS * TOPIC_ROWS, nbase = n - 8 * TOPIC_ROWS;
    float *x = malloc((size_t)n * DIM * sizeof(float)), *c = malloc(DIM * sizeof(float));
    float *q = malloc((size_t)NQ * DIM * sizeof(float)), *gd = malloc(NQ * K * sizeof(float));
    int32_t *tgt = malloc(NQ * K * sizeof(int32_t));
    assert_true(x && c && q && gd && tgt);
    uint64_t seed = 4242;
    for (uint32_t t = 0; t < TOPICS; t++) /* centres near enough to be reachable */
        topic_rows(x, t * TOPIC_ROWS, TOPIC_ROWS, 0.3f, c, &seed);
    /* queries near rows of the inserted topics */
    queries_near(q, NQ, x, n, nbase, 10, &seed, tgt, gd);
    for (int e = 0; e < 2; e++) {
        double rec[2];
        for (int live = 0; live < 2; live++) {
            char path[4200];
            snprintf(path, sizeof path, "%s/topics-%s-%d", tmp_root, engines[e], live);
            assert_int_equal(build_rows(engines[e], x, live ? nbase : n, path), 0);
            opened o;
            assert_int_equal(open_idx(e, path, "rocksdb", live, 0, RECALL_L, &o), 0);
            for (uint32_t id = nbase; live && id < n; id++)
                assert_int_equal(o.ops->insert(o.eng, id, x + (size_t)id * DIM, DIM), 0);
            if (live)
                assert_int_equal(o.ops->merge(o.eng), 0);
            assert_int_equal(o.ops->size(o.eng), n);
            rec[live] = recall_of(&o, q, tgt);
            close_idx(&o);
        }
        print_message("%s: topics in file order, recall@10 at L %d: one-pass %.3f, "
                      "8 new topics inserted and merged %.3f\n",
                      engines[e], RECALL_L, rec[0], rec[1]);
        assert_true(rec[1] >= rec[0] - 0.05);
    }
    free(x);
    free(c);
    free(q);
    free(gd);
    free(tgt);
}

/* The merge must not cost the regions that were there: 16 unseen topics
 * of 256 rows each, far apart (centres at scale 1.0), inserted in file
 * order into 128 topics of 32 rows, and queries near the old rows.  When
 * every out-neighbour of a new node took a back-edge, the nodes on the
 * searches' way from the medoid were re-pruned with the new topics alone
 * and lost edges towards old ones: recall@10 at L 12 of these 300 queries
 * fell from 0.921 to 0.876 (diskann-record); since back-edges go to the
 * new node's neighbourhood only (mg_backedges), 0.921 to 0.915 for both
 * engines. */
#define OLD_NQ 300
#define OLD_TOPICS 128
#define OLD_ROWS 32
#define NEW_TOPICS 16
#define NEW_ROWS 256
static void test_merge_keeps_old_regions(void **state)
{
    (void)state;
    const uint32_t nbase = OLD_TOPICS * OLD_ROWS, n = nbase + NEW_TOPICS * NEW_ROWS;
    float *x = malloc((size_t)n * DIM * sizeof(float)), *c = malloc(DIM * sizeof(float));
    float *q = malloc((size_t)OLD_NQ * DIM * sizeof(float));
    float *gd = malloc(OLD_NQ * K * sizeof(float));
    int32_t *tgt = malloc(OLD_NQ * K * sizeof(int32_t));
    assert_true(x && c && q && gd && tgt);
    uint64_t seed = 99;
    for (uint32_t t = 0; t < OLD_TOPICS; t++)
        topic_rows(x, t * OLD_ROWS, OLD_ROWS, 1.0f, c, &seed);
    for (uint32_t t = 0; t < NEW_TOPICS; t++)
        topic_rows(x, nbase + t * NEW_ROWS, NEW_ROWS, 1.0f, c, &seed);
    queries_near(q, OLD_NQ, x, n, 0, nbase / OLD_NQ, &seed, tgt, gd);
    for (int i = 0; i < OLD_NQ * K; i++)
        assert_true(tgt[i] < (int32_t)nbase); /* every true neighbour is old */
    for (int e = 0; e < 2; e++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/old-regions-%s", tmp_root, engines[e]);
        /* one build thread: the same graph every run (the merge's does not
         * depend on its threads) */
        assert_int_equal(build_with(engines[e], x, nbase, path,
                                    "{\"R\": 24, \"L_build\": 48, \"alpha\": 1.2, "
                                    "\"pq_bytes\": 16, \"threads\": 1}"),
                         0);
        opened o;
        assert_int_equal(open_idx(e, path, "rocksdb", 1, 0, RECALL_L, &o), 0);
        double before = recall_n(&o, q, tgt, OLD_NQ);
        for (uint32_t id = nbase; id < n; id++)
            assert_int_equal(o.ops->insert(o.eng, id, x + (size_t)id * DIM, DIM), 0);
        assert_int_equal(o.ops->merge(o.eng), 0);
        assert_int_equal(o.ops->size(o.eng), n);
        double after = recall_n(&o, q, tgt, OLD_NQ);
        close_idx(&o);
        print_message("%s: queries near old topics, recall@10 at L %d: %.3f before, %.3f after "
                      "merging 16 new topics\n",
                      engines[e], RECALL_L, before, after);
        assert_true(after >= before - 0.02);
    }
    free(x);
    free(c);
    free(q);
    free(gd);
    free(tgt);
}

/* The shared in-memory copy of the pending codes off (0: every search
 * scans the pending records), and too small for the stream (0.01 MiB =
 * 524 codes of 20 bytes: the copy overflows, searches fall back to the
 * store, and the merge reloads it): the same answers. */
static void test_pending_copy_sizes(void **state)
{
    (void)state;
    double sizes[2] = { 0, 0.01 };
    for (int i = 0; i < 2; i++) {
        cache_mb = sizes[i];
        double live;
        insert_merge_case(i, backends[i], &live);
        /* a second round after the merge: the copy is in use again */
        char path[4096];
        copy_base(i, path, sizeof path);
        opened o;
        assert_int_equal(open_idx(i, path, backends[i], 1, 0, 100, &o), 0);
        for (uint32_t id = NBASE; id < NBASE + 700; id++)
            assert_int_equal(o.ops->insert(o.eng, id, vec(id), DIM), 0);
        for (uint32_t id = NBASE; id < NBASE + 700; id += 3)
            assert_int_equal(top1(&o, id), id);
        assert_int_equal(o.ops->merge(o.eng), 0);
        for (uint32_t id = NBASE + 700; id < NALL; id++)
            assert_int_equal(o.ops->insert(o.eng, id, vec(id), DIM), 0);
        expect_found_range(&o, NBASE, NALL, 3, "merged and pending, second round");
        close_idx(&o);
    }
    cache_mb = 64;
}

/* ids and distances of every test query at K, one search each */
static void search_all(opened *o, uint32_t *ids, float *d)
{
    for (int i = 0; i < NQ; i++) {
        ann_stats st = { 0 };
        int got = o->ops->search(o->ctx, queries + (size_t)i * DIM, K, ids + (size_t)i * K,
                                 d + (size_t)i * K, &st);
        if (got != K)
            fail_msg("search %d: %s", i, got < 0 ? ann_errmsg(got) : "fewer than K");
    }
}

/*
 * The pending scan's byte-table filter (pq_lb.h, used from 1,024 codes in
 * the shared copy on a CPU with AVX-512 VBMI): searches with the copy
 * return the same ids and distances, bit for bit, as the storage scan
 * (pending_cache_mb 0: every code summed from the store), with the copy's
 * head inside a block (a merge after 1,000 inserts) and its tail too.
 */
static void test_pending_filter(void **state)
{
    (void)state;
    static uint32_t ids[2][NQ * K];
    static float d[2][NQ * K];
    print_message("byte-table filter: %s\n",
                  pq_lb_fast() ? "in use (AVX-512 VBMI)" : "not on this CPU: rows only");
    for (int e = 0; e < 2; e++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/filter-%s", tmp_root, engines[e]);
        assert_int_equal(build_with(engines[e], data, 1024, path, BUILD), 0);
        opened o;
        assert_int_equal(open_idx(e, path, "rocksdb", 1, 0, 100, &o), 0);
        for (uint32_t id = 1024; id < 2024; id++)
            assert_int_equal(o.ops->insert(o.eng, id, vec(id), DIM), 0);
        assert_int_equal(o.ops->merge(o.eng), 0);
        for (uint32_t id = 2024; id < 5100; id++) /* 3,076 pending, slots 1,000 to 4,076 */
            assert_int_equal(o.ops->insert(o.eng, id, vec(id), DIM), 0);
        search_all(&o, ids[0], d[0]);
        close_idx(&o);
        cache_mb = 0;
        assert_int_equal(open_idx(e, path, "rocksdb", 1, 0, 100, &o), 0);
        cache_mb = 64;
        search_all(&o, ids[1], d[1]);
        close_idx(&o);
        assert_memory_equal(ids[0], ids[1], sizeof ids[0]);
        assert_memory_equal(d[0], d[1], sizeof d[0]);
    }
}

static void test_insert_merge(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        opened o;
        assert_int_equal(open_idx(e, full_index[e], "lmdb", 0, 0, 100, &o), 0);
        double one_pass = recall(&o);
        close_idx(&o);
        for (int b = 0; b < 2; b++) {
            double live;
            insert_merge_case(e, backends[b], &live);
            print_message("%s %s: one-pass build %.3f, base + 20%% inserted and merged %.3f\n",
                          engines[e], backends[b], one_pass, live);
            /* measured at L 12 (recall@10): one-pass 0.820 / 0.839, live 0.853 /
             * 0.841 (record / resident; multi-threaded builds differ by
             * ~0.02 from run to run): live may not fall 0.03 below */
            assert_true(live >= one_pass - 0.03);
        }
    }
}

/* Every node record of index/backend, concatenated (key, length, value)
 * in key order; *len its bytes. */
static uint8_t *node_table(const char *index, const char *backend, size_t *len)
{
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/%s", index, backend);
    kv_options o = { .read_only = 1 };
    assert_int_equal(kv_backend_parse(backend, &o.backend), 0);
    kv_store *s = NULL;
    kv_reader *rd = NULL;
    kv_iter *it = NULL;
    assert_int_equal(kv_open(dir, &o, &s), 0);
    assert_int_equal(kv_reader_create(s, &rd), 0);
    assert_int_equal(kv_reader_begin(rd), 0);
    uint8_t nt = DREC_TABLE_NODE, *buf = NULL;
    size_t n = 0, cap = 0;
    kv_val k, v;
    assert_int_equal(kv_iter_create(rd, &nt, 1, &it), 0);
    while (kv_iter_next(it, &k, &v) == 1) {
        size_t need = n + k.len + 8 + v.len;
        if (need > cap) {
            cap = 2 * need;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        memcpy(buf + n, k.data, k.len);
        n += k.len;
        ann_put_u64(buf + n, v.len);
        n += 8;
        memcpy(buf + n, v.data, v.len);
        n += v.len;
    }
    kv_iter_destroy(it);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    assert_int_equal(kv_close(s), 0);
    *len = n;
    return buf;
}

/* A merge finds the new points' neighbours on several threads and offers
 * each node its back-edges in a fixed order (different nodes on different
 * threads); with the graph in memory it writes 16 chunks a batch, on
 * RocksDB while it links the next ones, and without it one chunk a batch
 * before linking the next (the first case here): the merged graph is the same
 * byte for byte whatever merge_threads is (and with compact_after_merge,
 * which changes where the records lie, not what they hold), whatever
 * the link searches' record cache holds (merge_cache_mb: none; 64 MiB,
 * which holds this whole graph; 0.1 MiB, a few dozen node records a
 * worker, replaced all the time), and whether the merge reads node
 * records from the store or the graph from its in-memory copy, with or
 * without the vectors (merge_snapshot_mb 0: never; the default: this
 * merge of 1,024 into 4,096 takes the graph and the vectors; 1 MiB: the
 * graph, 148 bytes a node (R 24: 32 neighbours at most, 16-byte codes) or
 * 132 (resident), fits for 5,120 ids, and with 128 more for a vector it
 * does not; the engine's counts of such merges confirm each), and
 * whether RocksDB takes the merge's batch through its WAL or as a file
 * written as the merge produces it (ingest_above_mb 0.001).  And
 * it keeps the back-edge slack: some nodes end above R, none above
 * ceil(1.3 R). */
static void test_merge_threads(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        const char *backend = backends[e];
        uint8_t *tables[6];
        size_t lens[6];
        const int threads[6] = { 1, 3, 2, 2, 2, 2 };
        const double caches[6] = { 0, 64, 0.1, 0.1, 0.1, 0 };
        const double snaps[6] = { 0, -1, 0, -1, 1, -1 };
        const double ingests[6] = { 0, 0, 0, 0, 0, 0.001 };
        for (int t = 0; t < 6; t++) {
            char path[4096];
            copy_base(e, path, sizeof path);
            merge_threads = threads[t];
            merge_cache = caches[t];
            merge_snapshot = snaps[t];
            ingest_mb = ingests[t];
            compact_after = t == 1;
            opened o;
            assert_int_equal(open_idx(e, path, backend, 1, 0, 100, &o), 0);
            for (uint32_t id = NBASE; id < NALL; id++)
                assert_int_equal(o.ops->insert(o.eng, id, vec(id), DIM), 0);
            int rc = o.ops->merge(o.eng);
            if (rc)
                fail_msg("merge (merge_threads %d): %s", threads[t], ann_errmsg(rc));
            assert_int_equal(atomic_load(&o.eng->live.snap_merges), snaps[t] != 0 ? 1 : 0);
            assert_int_equal(atomic_load(&o.eng->live.snap_vec_merges), snaps[t] < 0 ? 1 : 0);
            close_idx(&o);
            store_counts c;
            check_graph(path, backend, 1, &c);
            assert_int_equal(c.nodes, NALL);
            print_message("%s %s merge_threads %d: %llu of %u nodes above R\n", engines[e],
                          backend, threads[t], (unsigned long long)c.above_r, NALL);
            assert_true(c.above_r > 0);
            tables[t] = node_table(path, backend, &lens[t]);
        }
        merge_threads = 0;
        merge_cache = -1;
        merge_snapshot = -1;
        ingest_mb = 0;
        compact_after = 0;
        for (int t = 1; t < 6; t++) {
            assert_int_equal(lens[0], lens[t]);
            assert_memory_equal(tables[0], tables[t], lens[0]);
        }
        for (int t = 0; t < 6; t++)
            free(tables[t]);
    }
}

/* ---- deletes --------------------------------------------------------------- */

static void delete_case(int e, const char *backend)
{
    char path[4096];
    copy_base(e, path, sizeof path);
    opened o;
    assert_int_equal(open_idx(e, path, backend, 1, 0, 100, &o), 0);
    /* 200 inserted (pending), then delete 300 graph nodes and 50 pending */
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
            fail_msg("remove %u: %s", dead[i], ann_errmsg(rc));
    }
    assert_int_equal(o.ops->size(o.eng), NBASE + 200 - nd);
    assert_never_returned(&o, dead, nd);
    /* live pending ids are still found */
    for (uint32_t id = NBASE + 1; id < NBASE + 200; id += 4)
        assert_int_equal(top1(&o, id), id);
    assert_int_equal(o.ops->merge(o.eng), 0);
    assert_int_equal(o.ops->size(o.eng), NBASE + 200 - nd);
    assert_never_returned(&o, dead, nd);
    expect_found_range(&o, NBASE + 1, NBASE + 200, 4, "merged after deletes");
    for (uint32_t id = 2; id < NBASE; id += 29)
        if (id % 13 != 1 || id > 1 + 13 * 299)
            assert_int_equal(top1(&o, id), id);
    close_idx(&o);
    store_counts c;
    check_graph(path, backend, 1, &c);
    assert_int_equal(c.pending, 0);
    /* a consolidated id can come back, with another vector */
    assert_int_equal(open_idx(e, path, backend, 1, 0, 100, &o), 0);
    assert_int_equal(o.ops->insert(o.eng, dead[0], vec(NALL - 1), DIM), 0);
    assert_int_equal(o.ops->merge(o.eng), 0);
    uint32_t ids[K];
    float d[K];
    ann_stats st = { 0 };
    assert_int_equal(o.ops->search(o.ctx, vec(NALL - 1), 1, ids, d, &st), 1);
    assert_int_equal(ids[0], dead[0]);
    close_idx(&o);
    check_graph(path, backend, 1, NULL);
}

static void test_delete(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++)
        for (int b = 0; b < 2; b++)
            delete_case(e, backends[b]);
}

/* ---- bad input -------------------------------------------------------------- */

static void expect_error(int rc, int code, const char *msg)
{
    assert_int_equal(rc, code);
    const char *got = ann_errmsg(rc);
    if (!strstr(got, msg))
        fail_msg("message \"%s\" does not contain \"%s\"", got, msg);
}

static void test_bad_input(void **state)
{
    (void)state;
    char path[4096], store[4200];
    copy_base(0, path, sizeof path);
    snprintf(store, sizeof store, "%s/rocksdb", path);
    opened o;
    assert_int_equal(open_idx(0, path, "rocksdb", 0, 0, 100, &o), 0);
    char msg[8400];
    snprintf(msg, sizeof msg, "%s: insert: the index was opened without updates (open parameter "
             "\"updates\": true)", store);
    expect_error(o.ops->insert(o.eng, NALL, vec(0), DIM), ANN_ESTATE, msg);
    expect_error(o.ops->merge(o.eng), ANN_ESTATE, "merge: the index was opened without updates");
    close_idx(&o);
    json_t *bad = js("{\"merge_every\": 5}");
    ann_engine *eng = NULL;
    expect_error(ann_engine_open(o.ops, path, bad, &eng, NULL), ANN_EPARAM,
                 "open: merge_every 5 needs \"updates\": true");
    json_decref(bad);
    bad = js("{\"compact_after_merge\": true}");
    expect_error(ann_engine_open(o.ops, path, bad, &eng, NULL), ANN_EPARAM,
                 "open: compact_after_merge needs \"updates\": true");
    json_decref(bad);

    assert_int_equal(open_idx(0, path, "rocksdb", 1, 0, 100, &o), 0);
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
    v[7] = INFINITY;
    snprintf(msg, sizeof msg, "%s: insert id %u: component 7 is infinite", store, NALL);
    expect_error(o.ops->insert(o.eng, NALL, v, DIM), ANN_EDATA, msg);
    /* a pending id exists too; deleted twice; deleted and not merged */
    assert_int_equal(o.ops->insert(o.eng, NALL, vec(NBASE), DIM), 0);
    snprintf(msg, sizeof msg, "%s: insert id %u: the id exists", store, NALL);
    expect_error(o.ops->insert(o.eng, NALL, vec(NBASE), DIM), ANN_EDATA, msg);
    assert_int_equal(o.ops->remove(o.eng, 17), 0);
    snprintf(msg, sizeof msg, "%s: remove id 17: already deleted", store);
    expect_error(o.ops->remove(o.eng, 17), ANN_EDATA, msg);
    snprintf(msg, sizeof msg, "%s: insert id 17: the id is deleted but not merged yet: merge "
             "before inserting it again", store);
    expect_error(o.ops->insert(o.eng, 17, vec(17), DIM), ANN_EDATA, msg);
    assert_int_equal(o.ops->size(o.eng), NBASE);
    close_idx(&o);
    /* nothing of the refused calls was written: one pending, one tombstone */
    store_counts c;
    check_graph(path, "rocksdb", 0, &c);
    assert_int_equal(c.nodes, NBASE);
    assert_int_equal(c.pending, 1);
    assert_int_equal(c.tombstones, 1);
    /* the other store of the same index was not touched */
    check_graph(path, "lmdb", 0, &c);
    assert_int_equal(c.pending, 0);
    assert_int_equal(c.tombstones, 0);
    /* reopened, the pending id above the build's ids is still known (the
     * insert's existence check skips the store only past every stored id) */
    assert_int_equal(open_idx(0, path, "rocksdb", 1, 0, 100, &o), 0);
    snprintf(msg, sizeof msg, "%s: insert id %u: the id exists", store, NALL);
    expect_error(o.ops->insert(o.eng, NALL, vec(NBASE), DIM), ANN_EDATA, msg);
    snprintf(msg, sizeof msg, "%s: insert id 17: the id is deleted but not merged yet: merge "
             "before inserting it again", store);
    expect_error(o.ops->insert(o.eng, 17, vec(17), DIM), ANN_EDATA, msg);
    close_idx(&o);

    /* the entry node deleted: never returned, kept through merges as a
     * frozen navigation point, and it cannot be inserted again */
    uint32_t medoid = 0;
    {
        char dir[4300];
        snprintf(dir, sizeof dir, "%s/lmdb", path);
        kv_options ko = { .backend = KV_BACKEND_LMDB, .read_only = 1 };
        kv_store *ks = NULL;
        kv_reader *rd = NULL;
        kv_val mv = { 0 };
        uint8_t key[KV_KEY_U32_BYTES];
        drec_meta meta;
        assert_int_equal(kv_open(dir, &ko, &ks), 0);
        assert_int_equal(kv_reader_create(ks, &rd), 0);
        assert_int_equal(kv_reader_begin(rd), 0);
        assert_int_equal(kv_get(rd, key, kv_key_u32(key, DREC_TABLE_META, 0), &mv), 0);
        assert_int_equal(drec_meta_decode(mv.data, mv.len, dir, &meta), 0);
        kv_val_release(&mv);
        kv_reader_destroy(rd);
        kv_close(ks);
        medoid = meta.medoid;
    }
    snprintf(store, sizeof store, "%s/lmdb", path);
    assert_int_equal(open_idx(0, path, "lmdb", 1, 0, 100, &o), 0);
    assert_int_equal(o.ops->remove(o.eng, medoid), 0);
    assert_never_returned(&o, &medoid, 1);
    assert_int_equal(o.ops->merge(o.eng), 0);
    assert_never_returned(&o, &medoid, 1);
    snprintf(msg, sizeof msg, "%s: insert id %u: the id is the graph's entry node, deleted and "
             "kept as a frozen navigation point: it cannot be inserted again", store, medoid);
    expect_error(o.ops->insert(o.eng, medoid, vec(medoid), DIM), ANN_EDATA, msg);
    assert_int_equal(o.ops->size(o.eng), NBASE - 1);
    for (uint32_t id = 1; id < NBASE; id += 101)
        if (id != medoid)
            assert_int_equal(top1(&o, id), id);
    close_idx(&o);
    check_graph(path, "lmdb", 1, &c);
    assert_int_equal(c.nodes, NBASE);
    assert_int_equal(c.tombstones, 1);
}

/* ---- background merges while a thread searches ------------------------- */

typedef struct {
    opened *o;
    ann_ctx *ctx;
    _Atomic uint32_t done_upto; /* inserts of ids below this have returned */
    _Atomic int stop;
    uint64_t searches, misses;
    uint64_t found_again; /* misses the same search found at once when repeated */
    uint32_t missed[8];   /* the first missed ids */
    /* misses of ids that were graph nodes, missed again at once: the walk
     * not reaching a merged node (expect_found), not a state seen mid-merge */
    uint64_t node_misses;
    uint32_t node_missed[8]; /* distinct */
    uint32_t n_node_missed;
    int err;
} searcher_arg;

/* id has a node record and no pending record, in a snapshot of o's store */
static int is_graph_node(opened *o, uint32_t id)
{
    int node, pending, vector;
    return id_records(o, id, &node, &pending, &vector) == 0 && node && !pending;
}

static void *searcher(void *p)
{
    searcher_arg *a = p;
    uint64_t s = 99;
    while (!atomic_load(&a->stop)) {
        uint32_t upto = atomic_load(&a->done_upto);
        if (upto <= NBASE)
            continue;
        uint32_t id = NBASE + (uint32_t)(tu_rand(&s) % (upto - NBASE));
        uint32_t ids[1];
        float d[1];
        ann_stats st = { 0 };
        int got = a->o->ops->search(a->ctx, vec(id), 1, ids, d, &st);
        if (got < 0) {
            a->err = got;
            break;
        }
        a->searches++;
        if (got != 1 || ids[0] != id) {
            /* again at once: a transient miss (state seen mid-merge) or the
             * graph walk not reaching a merged node */
            ann_stats st2 = { 0 };
            int again = a->o->ops->search(a->ctx, vec(id), 1, ids, d, &st2) == 1 && ids[0] == id;
            if (!again && is_graph_node(a->o, id)) {
                a->node_misses++;
                uint32_t j = 0;
                while (j < a->n_node_missed && a->node_missed[j] != id)
                    j++;
                if (j == a->n_node_missed && j < 8)
                    a->node_missed[a->n_node_missed++] = id;
                continue;
            }
            if (a->misses < 8)
                a->missed[a->misses] = id;
            a->misses++;
            a->found_again += again;
        }
    }
    return NULL;
}

static void background_case(int e, const char *backend, uint32_t merge_every)
{
    char path[4096];
    copy_base(e, path, sizeof path);
    opened o;
    assert_int_equal(open_idx(e, path, backend, 1, merge_every, 100, &o), 0);
    searcher_arg a = { .o = &o };
    json_t *sp = js("{\"L\": 100}");
    assert_int_equal(ann_engine_ctx_new(o.ops, o.eng, sp, 1, &a.ctx), 0);
    json_decref(sp);
    atomic_store(&a.done_upto, NBASE);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, searcher, &a), 0);
    for (uint32_t id = NBASE; id < NALL; id++) {
        int rc = o.ops->insert(o.eng, id, vec(id), DIM);
        if (rc)
            fail_msg("insert %u: %s", id, ann_errmsg(rc));
        atomic_store(&a.done_upto, id + 1);
        /* merge_every 1: paced, so the merger empties the pending list
         * between inserts, the state the race below needed */
        if (merge_every == 1)
            usleep(1000);
    }
    atomic_store(&a.stop, 1);
    pthread_join(th, NULL);
    o.ops->ctx_free(a.ctx);
    print_message("%s %s merge_every %u: %llu searches during inserts and merges, %llu missed\n",
                  engines[e], backend, merge_every, (unsigned long long)a.searches,
                  (unsigned long long)a.misses);
    if (a.err)
        fail_msg("search during merges: %s", ann_errmsg(a.err));
    /* Every insert that returned is found, by every search.  (Until
     * 2026-12-02 a search checked whether anything was pending only after
     * its graph walk: a merge committing meanwhile (merge_every 1 leaves
     * nothing pending after each) made it skip the pending records its own
     * snapshot still held, while the graph it walked predated the merge: 0-2
     * misses in ~5,500 searches, each found again at once; with a 0.4 ms
     * pause widening that window, 7 misses in 2,114 searches before the fix,
     * 0 in 2,469 after.  The count is now read around the snapshot,
     * drec_search.) */
    for (uint64_t i = 0; i < a.misses && i < 8; i++)
        print_message("  missed id %u during merges\n", a.missed[i]);
    if (a.misses)
        print_message("  %llu of %llu misses found by repeating the search at once\n",
                      (unsigned long long)a.found_again, (unsigned long long)a.misses);
    assert_int_equal(a.misses, 0);
    assert_int_equal(o.ops->merge(o.eng), 0);
    expect_found_range(&o, NBASE, NALL, 3, "merged in the background");
    /* the graph nodes the searcher kept missing, under expect_found's rule */
    if (a.node_misses)
        print_message("  %llu searches missed %u graph node(s) the walk did not reach\n",
                      (unsigned long long)a.node_misses, a.n_node_missed);
    expect_found(&o, a.node_missed, a.n_node_missed, "missed during merges");
    close_idx(&o);
    store_counts c;
    check_graph(path, backend, 1, &c);
    assert_int_equal(c.nodes, NALL);
}

static void test_background_merge(void **state)
{
    (void)state;
    background_case(0, "lmdb", 1);
    background_case(1, "rocksdb", 1);
    background_case(0, "rocksdb", 1024);
    background_case(1, "lmdb", 16384);
}

/* No batch file (a merge's batch streamed to be ingested) in index's
 * RocksDB store. */
static void assert_no_batch_files(const char *index)
{
    char store[4200];
    snprintf(store, sizeof store, "%s/rocksdb", index);
    assert_int_equal(tu_count_files(store, "txn-"), 0);
}

/* ---- kill -9 ------------------------------------------------------------------ */

/* Child -> parent messages: 'I' id (insert returned), 'D' id (remove
 * returned), 'M' 0 (a merge starts), 'E' code (an error). */
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

/* mode 0: inserts and deletes, merge_every 50 (merges run meanwhile);
 * mode 1: inserts and deletes, then one merge. */
static void child_run(int e, const char *path, const char *backend, int mode, int fd)
{
    opened o;
    int rc = open_idx(e, path, backend, 1, mode == 0 ? 50 : 0, 100, &o);
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
    }
    child_send(fd, 'M', 0);
    rc = o.ops->merge(o.eng);
    child_send(fd, rc ? 'E' : 'F', (uint32_t)-rc);
    pause(); /* killed here at the latest */
    _exit(0);
}

/*
 * The child runs in a fresh image of this test (main's --crash-child):
 * a forked copy of this multi-threaded process inherits RocksDB's
 * thread-pool condition variables with the parent's waiters counted in
 * them, and the child's first flush signal then waits for those waiters
 * forever (a CI hang in the ASan build, 2026-12-05, after adding pool
 * threads in the child had not helped).  The pipe's write end is inherited
 * across the exec; the open parameters of the moment go with the argument.
 */
static void crash_child_exec(int e, const char *path, const char *backend, int mode, int fd)
{
    char ea[16], ma[16], fa[16], pa[256];
    snprintf(ea, sizeof ea, "%d", e);
    snprintf(ma, sizeof ma, "%d", mode);
    snprintf(fa, sizeof fa, "%d", fd);
    snprintf(pa, sizeof pa, "%.17g,%d,%d,%.17g,%.17g,%.17g,%.17g", cache_mb, merge_threads,
             compact_after, merge_cache, merge_snapshot, ingest_mb, full_leave_mb);
    execl("/proc/self/exe", "test_drec_live", "--crash-child", ea, path, backend, ma, fa, pa,
          (char *)NULL);
    _exit(4);
}

static void full_child_run(int e, const char *path, const char *backend, int fd);

/* main's --crash-child E PATH BACKEND MODE FD PARAMS (crash_child_exec). */
static int crash_child_main(char **argv)
{
    if (sscanf(argv[7], "%lg,%d,%d,%lg,%lg,%lg,%lg", &cache_mb, &merge_threads, &compact_after,
               &merge_cache, &merge_snapshot, &ingest_mb, &full_leave_mb) != 7)
        return 5;
    data = tu_clustered(NALL, DIM, 40, 777, 1);
    if (!data)
        return 5;
    if (atoi(argv[5]) == 2)
        full_child_run(atoi(argv[2]), argv[3], argv[4], atoi(argv[6]));
    child_run(atoi(argv[2]), argv[3], argv[4], atoi(argv[5]), atoi(argv[6]));
    return 0; /* not reached: the children exit */
}

/* Start the child of mode (crash_child_exec) on engine e's index at path;
 * the read end of its report pipe, its pid in *pid. */
static int start_child(int e, const char *path, const char *backend, int mode, pid_t *pid)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    *pid = fork();
    assert_true(*pid >= 0);
    if (*pid == 0) {
        close(fds[0]);
        crash_child_exec(e, path, backend, mode, fds[1]);
    }
    close(fds[1]);
    return fds[0];
}

static void crash_case(int e, const char *backend, int mode, uint32_t kill_after)
{
    char path[4096];
    copy_base(e, path, sizeof path);
    pid_t pid;
    int rfd = start_child(e, path, backend, mode, &pid);
    uint8_t *inserted = calloc(NALL, 1), *deleted = calloc(NALL, 1);
    uint32_t n_ins = 0, n_del = 0;
    int merging = 0;
    report r;
    while (read(rfd, &r, sizeof r) == (ssize_t)sizeof r) {
        if (r.op == 'E')
            fail_msg("child failed: %s", ann_errmsg(-(int)r.id));
        if (r.op == 'I') {
            inserted[r.id] = 1;
            n_ins++;
        } else if (r.op == 'D') {
            deleted[r.id] = 1;
            n_del++;
        } else if (r.op == 'M') {
            merging = 1;
        }
        if ((mode == 0 && n_ins >= kill_after) || (mode == 1 && merging)) {
            if (mode == 1) {
                struct timespec ts = { 0, (long)kill_after * 1000000L };
                nanosleep(&ts, NULL);
            }
            break;
        }
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    close(rfd);
    print_message("%s %s mode %d: killed after %u inserts and %u deletes returned%s\n",
                  engines[e], backend, mode, n_ins, n_del, merging ? ", during the merge" : "");
    assert_true(WIFSIGNALED(status));

    store_counts c;
    check_graph(path, backend, 0, &c);
    print_message("  after the kill: %llu nodes, %llu pending, %llu tombstones\n",
                  (unsigned long long)c.nodes, (unsigned long long)c.pending,
                  (unsigned long long)c.tombstones);
    opened o;
    assert_int_equal(open_idx(e, path, backend, 1, 0, 100, &o), 0);
    uint32_t dead[NALL], nd = 0;
    for (uint32_t id = 0; id < NALL; id++)
        if (deleted[id])
            dead[nd++] = id;
    /* a remove the child made after its last report may have returned
     * too: those ids may be gone (but reported ones must be) */
    uint8_t *maybe_deleted = calloc(NALL, 1);
    for (uint32_t id = NBASE; id < NALL; id++)
        if (id % 10 == 0)
            maybe_deleted[victim_of(id)] = 1;
    /* returned before the kill: pending (always found) or merged by a
     * background merge before it (expect_found's allowance) */
    uint32_t *live = malloc(NALL * sizeof *live), nlive = 0;
    assert_non_null(live);
    for (uint32_t id = NBASE; id < NALL; id++)
        if (inserted[id] && !maybe_deleted[id])
            live[nlive++] = id;
    expect_found(&o, live, nlive, "returned before the kill, reopened");
    assert_never_returned(&o, dead, nd);
    assert_int_equal(o.ops->merge(o.eng), 0);
    expect_found(&o, live, nlive, "returned before the kill, merged after it");
    free(live);
    assert_never_returned(&o, dead, nd);
    close_idx(&o);
    check_graph(path, backend, 1, NULL);
    if (!strcmp(backend, "rocksdb")) /* a batch file the kill left went at the reopen */
        assert_no_batch_files(path);
    free(maybe_deleted);
    free(inserted);
    free(deleted);
}

static void test_crash(void **state)
{
    (void)state;
    crash_case(0, "rocksdb", 0, 300);
    crash_case(0, "lmdb", 0, 700);
    crash_case(1, "rocksdb", 0, 500);
    crash_case(1, "lmdb", 0, 200);
    crash_case(0, "rocksdb", 1, 60);
    crash_case(0, "lmdb", 1, 120);
    crash_case(1, "rocksdb", 1, 90);
    crash_case(1, "lmdb", 1, 30);
    /* merges streaming their batch into a file to ingest, killed meanwhile */
    ingest_mb = 0.001;
    crash_case(0, "rocksdb", 0, 300);
    crash_case(0, "rocksdb", 1, 40);
    crash_case(1, "rocksdb", 1, 70);
    ingest_mb = 0;
}

/* ---- a full disk during a merge ------------------------------------------ */

#define NBASE_FULL 2048 /* built; the other 3,072 pending: three write batches */

/* Fill the file system under path's folder (a filler file beside the
 * index) to the last byte, then free leave bytes of it; 0 or -1. */
static int fill_disk(const char *path, off_t leave)
{
    char filler[4200];
    snprintf(filler, sizeof filler, "%s", path);
    char *slash = strrchr(filler, '/');
    if (!slash)
        return -1;
    snprintf(slash + 1, sizeof filler - (size_t)(slash + 1 - filler), "filler");
    FILE *f = fopen(filler, "wb");
    if (!f)
        return -1;
    setvbuf(f, NULL, _IONBF, 0);
    static char block[1 << 16];
    size_t sizes[2] = { sizeof block, 512 };
    for (int s = 0; s < 2; s++) {
        while (fwrite(block, 1, sizes[s], f) == sizes[s])
            ;
        if (errno != ENOSPC) {
            fclose(f);
            return -1;
        }
        clearerr(f);
    }
    off_t size = ftello(f);
    int rc = size >= leave && ftruncate(fileno(f), size - leave) == 0 ? 0 : -1;
    fclose(f);
    return rc;
}

/* Read n bytes from the pipe fd, however its writer split them: the
 * count read (short only at the end of the stream, or -1). */
static ssize_t read_all(int fd, void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t got = read(fd, (char *)buf + done, n - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        done += (size_t)got;
    }
    return (ssize_t)done;
}

/*
 * The full-disk child (main's --crash-child with mode 2): it opens the
 * index, inserts rows NBASE_FULL.. (pending), fills the disk, merges,
 * and reports the merge's result: 'E' with the code followed by its
 * message (1,024 bytes), or 'F'.  Then, from searches of the open index:
 * 'S' the inserts not found, 'T' the ids found twice in an answer and 'Z'
 * the index's size.  Then it closes the engine and exits.
 */
static void full_child_run(int e, const char *path, const char *backend, int fd)
{
    opened o;
    int rc = open_idx(e, path, backend, 1, 0, 100, &o);
    for (uint32_t id = NBASE_FULL; !rc && id < NALL; id++)
        rc = o.ops->insert(o.eng, id, vec(id), DIM);
    if (rc) {
        fprintf(stderr, "full-disk child: %s\n", ann_errmsg(rc));
        _exit(2);
    }
    if (fill_disk(path, (off_t)(full_leave_mb * 1048576))) {
        fprintf(stderr, "full-disk child: filling the disk: %s\n", strerror(errno));
        _exit(2);
    }
    rc = o.ops->merge(o.eng);
    child_send(fd, rc ? 'E' : 'F', (uint32_t)-rc);
    if (rc) {
        char msg[1024] = { 0 };
        snprintf(msg, sizeof msg, "%s", ann_errmsg(rc));
        if (write(fd, msg, sizeof msg) != (ssize_t)sizeof msg)
            _exit(3);
    }
    /* the open index still answers, the disk still full: how many
     * inserted vectors are not their own nearest neighbour, how many
     * answers hold an id twice (the merged batches are still in the
     * pending copy), and how many vectors it counts */
    uint32_t missed = 0, twice = 0;
    for (uint32_t id = NBASE_FULL; id < NALL; id++) {
        uint32_t ids[K];
        float d[K];
        ann_stats st = { 0 };
        rc = o.ops->search(o.ctx, vec(id), K, ids, d, &st);
        if (rc < 1 || ids[0] != id)
            missed++;
        for (int i = 0; i < rc; i++)
            for (int j = 0; j < i; j++)
                twice += ids[i] == ids[j];
    }
    child_send(fd, 'S', missed);
    child_send(fd, 'T', twice);
    child_send(fd, 'Z', (uint32_t)o.ops->size(o.eng));
    close_idx(&o);
    _exit(0);
}

/*
 * A full disk while a merge writes its batches is a clear ENOSPC naming
 * the store, and nothing is lost: the process that met it still finds
 * every vector inserted before the merge (pending or merged, never twice
 * in an answer) and counts them all; after space is freed and the index
 * reopened, the graph checker passes, every vector is found, and a
 * second merge links the rest into a graph whose recall matches a clean
 * merge's.  The cases: the graph in memory on RocksDB (batches of 16
 * chunks written on their own thread while the next are linked: the
 * failure comes back from that thread), without it (each chunk written
 * in line), with the batch streamed into a file to ingest, and LMDB
 * (written in line).  The disk is a 48 MiB tmpfs, filled before the
 * merge starts to the last byte or to leave_mb MiB; skipped where
 * mounting one is not allowed.
 */
static void full_disk_case(int e, const char *backend, double snapshot, double ingest,
                           double leave_mb, double clean_recall)
{
    char mnt[4096], cmd[9000], path[4200];
    snprintf(mnt, sizeof mnt, "%s/small-fs-%d", tmp_root, copies++);
    tu_mount_tmpfs(mnt, 48);
    snprintf(path, sizeof path, "%s/index", mnt);
    snprintf(cmd, sizeof cmd, "cp -a '%s/base2-%s' '%s'", tmp_root, engines[e], path);
    assert_int_equal(system(cmd), 0);
    merge_snapshot = snapshot;
    ingest_mb = ingest;
    full_leave_mb = leave_mb;
    pid_t pid;
    int rfd = start_child(e, path, backend, 2, &pid);
    report r = { 0 };
    char msg[1024] = { 0 };
    ssize_t got = read_all(rfd, &r, sizeof r);
    if (got == (ssize_t)sizeof r && r.op == 'E' && read_all(rfd, msg, sizeof msg) != sizeof msg)
        got = 0;
    report searched[3] = { { 0 } };
    if (read_all(rfd, searched, sizeof searched) != (ssize_t)sizeof searched)
        searched[0].op = 0;
    close(rfd);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    snprintf(cmd, sizeof cmd, "rm -f '%s/filler'", mnt);
    assert_int_equal(system(cmd), 0);
    print_message("%s %s snapshot %g ingest %g, %g MiB left: %s\n", engines[e], backend,
                  snapshot, ingest, leave_mb, r.op == 'E' ? msg : "the merge returned 0");
    /* the merge failed with the full disk, and said where */
    assert_int_equal(got, sizeof r);
    if (r.op == 'F')
        fail_msg("the merge fitted in the %g MiB left: this case tests nothing", leave_mb);
    assert_int_equal(r.op, 'E');
    assert_int_equal(-(int)r.id, -ENOSPC);
    char want[4400];
    snprintf(want, sizeof want, "%s/%s: %s", path, backend,
             !strcmp(backend, "lmdb") ? "lmdb commit: no space left on device"
             : ingest > 0             ? "rocksdb SST " /* file finish, ingestion */
                                      : "rocksdb write: IO error: No space left on device: ");
    if (strncmp(msg, want, strlen(want)) != 0 ||
        (ingest > 0 && !strstr(msg, ": IO error: No space left on device: ")))
        fail_msg("expected a message starting \"%s\", got \"%s\"", want, msg);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the child %s %d after the merge", WIFEXITED(status) ? "exited with" : "died of signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));

    /* nothing lost: every insert is pending or merged, found by the
     * process that met the full disk and after a reopen */
    store_counts c;
    check_graph(path, backend, 1, &c);
    print_message("  after the failed merge: %llu nodes, %llu pending; %u of %u inserts not "
                  "found while the disk was full\n",
                  (unsigned long long)c.nodes, (unsigned long long)c.pending, searched[0].id,
                  NALL - NBASE_FULL);
    assert_int_equal(c.nodes + c.pending, NALL);
    assert_int_equal(c.pending > 0, 1);
    assert_int_equal(searched[0].op, 'S');
    /* pending ones are always found (expect_found's allowance for merged) */
    assert_true(searched[0].id <= (c.pending == NALL - NBASE_FULL ? 0 : 1 + NALL / 1024));
    assert_int_equal(searched[1].id, 0); /* no id twice in an answer */
    assert_int_equal(searched[2].id, NALL); /* the size the open index gave */
    if (!strcmp(backend, "rocksdb")) /* a batch file the failure left is gone */
        assert_no_batch_files(path);
    opened o;
    assert_int_equal(open_idx(e, path, backend, 1, 0, 100, &o), 0);
    expect_found_range(&o, NBASE_FULL, NALL, 1, "inserted before a merge met a full disk");
    int rc = o.ops->merge(o.eng);
    if (rc)
        fail_msg("the merge after freeing space: %s", ann_errmsg(rc));
    expect_found_range(&o, NBASE_FULL, NALL, 1, "merged after a merge met a full disk");
    double live = recall(&o);
    close_idx(&o);
    check_graph(path, backend, 1, &c);
    assert_int_equal(c.nodes, NALL);
    assert_int_equal(c.pending, 0);
    print_message("  merged after freeing space: recall %.3f (a clean merge %.3f)\n", live,
                  clean_recall);
    assert_true(live >= clean_recall - 0.03);
    merge_snapshot = -1;
    ingest_mb = 0;
    full_leave_mb = 0;
    snprintf(cmd, sizeof cmd, "umount '%s'", mnt);
    assert_int_equal(system(cmd), 0);
    rmdir(mnt);
}

static void test_full_disk(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        char base[4200];
        snprintf(base, sizeof base, "%s/base2-%s", tmp_root, engines[e]);
        assert_int_equal(build(engines[e], NBASE_FULL, base), 0);
        /* the recall of a clean merge of the same rows */
        char path[4096];
        snprintf(path, sizeof path, "%s/clean-%d", tmp_root, copies++);
        char cmd[9000];
        snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", base, path);
        assert_int_equal(system(cmd), 0);
        opened o;
        assert_int_equal(open_idx(e, path, "rocksdb", 1, 0, 100, &o), 0);
        for (uint32_t id = NBASE_FULL; id < NALL; id++)
            assert_int_equal(o.ops->insert(o.eng, id, vec(id), DIM), 0);
        assert_int_equal(o.ops->merge(o.eng), 0);
        double clean = recall(&o);
        close_idx(&o);
        /* the first write fails */
        full_disk_case(e, "rocksdb", -1, 0, 0, clean);
        full_disk_case(e, "rocksdb", -1, 0.001, 0, clean);
        /* a later one fails: less than a merge needs is left free (measured
         * on 2026-12-07: the first of three batches lands and the second
         * fails with 3 MiB free (record) or 0.5 MiB (resident), written
         * beside the searches; in line, some chunks land; the whole merge
         * fitted 2 MiB for the resident layout) */
        const double leave = e == 0 ? 3 : 0.5;
        full_disk_case(e, "rocksdb", -1, 0, leave, clean);
        full_disk_case(e, "rocksdb", 0, 0, leave, clean);
        full_disk_case(e, "rocksdb", -1, 0.001, leave, clean);
        full_disk_case(e, "lmdb", -1, 0, leave, clean);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--crash-child")) /* never the suite again */
        return argc == 8 ? crash_child_main(argv) : 5;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_insert_merge),
        cmocka_unit_test(test_topic_order_merge),
        cmocka_unit_test(test_merge_keeps_old_regions),
        cmocka_unit_test(test_merge_threads),
        cmocka_unit_test(test_pending_copy_sizes),
        cmocka_unit_test(test_pending_filter),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_background_merge),
        cmocka_unit_test(test_crash),
        cmocka_unit_test(test_full_disk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
