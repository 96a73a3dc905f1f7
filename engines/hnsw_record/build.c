/*
 * build.c: hnsw-record's build: an HNSW graph built in memory, then
 * bulk-loaded as one record per node into each selected record store.
 *
 * The graph follows Malkov & Yashunin, "Efficient and robust approximate
 * nearest neighbor search using Hierarchical Navigable Small World graphs"
 * (TPAMI 2018): each node draws its top level as floor(-ln(U) * mL) with
 * mL = 1 / ln(M); insertion descends greedily from the entry point through
 * the layers above the node's level (Algorithm 1, ef = 1), then at each of
 * its layers runs SEARCH-LAYER with ef_construction (Algorithm 2) and links
 * the node to neighbours chosen by the select-neighbours heuristic
 * (Algorithm 4); a neighbour whose list overflows (M above layer 0,
 * M0 = 2M at layer 0, or the build's `M0`) is pruned back with the same
 * heuristic.  The entry point is the node of the highest level.  Nodes go
 * in in id order (file order), as hnswlib's do: on a corpus in document
 * order that finds less than on the same rows shuffled (datasets/README.md,
 * "File order").
 *
 * Deliberate choices: the heuristic runs without extendCandidates and
 * without keepPrunedConnections (as hnswlib, and as the paper recommends
 * for all but extremely clustered data); the next layer starts from the
 * closest element found (hnswlib's choice) rather than the whole set W;
 * the SEARCH-LAYER working set is the core's bounded candidate list
 * (engines/core/candlist.h), equivalent to the paper's C and W sets since a
 * candidate farther than the ef-th best is never expanded.  The graph
 * needs every vector at random, so the whole base is held during the build
 * (ann_vecsrc_hold): a bundle's .fbin lends its rows from a read-only
 * mapping (page cache, no second copy in the process's own memory; the
 * report's "base_rows" says "lent"), other sources (.u8bin/.i8bin, which
 * need conversion) are copied into n x dim floats ("copied").
 *
 * Threads (`threads`, default all cores) insert nodes concurrently, as
 * hnswlib does: a node's lists are read (copied) and written under its
 * stripe of a lock array, never two stripes at once, and the entry point
 * under one lock, held for a whole insert only by a node that raises the
 * top level.  With one thread nodes go in id order and a seed gives one
 * graph; with more, the graph depends on the order threads reach the
 * nodes (recall does not: tested).
 */
#include "engines/hnsw_record/hnsw.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/kv_params.h"
#include "engines/core/parallel.h"
#include "engines/core/progress.h"
#include "engines/core/status.h"
#include "engines/hnsw_record/layout.h"
#include "engines/core/ticks.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const ann_param_spec hnsw_build_params[] = {
    { .name = "M", .type = ANN_PARAM_INT, .min = 2, .max = 512, .def = 16,
      .help = "links per node above layer 0 (M0 = 2M at layer 0 unless M0 is given)" },
    { .name = "M0", .type = ANN_PARAM_INT, .min = 0, .max = HNSW_MAX_M0, .def = 0,
      .help = "links per node at layer 0 (0 = 2M, as hnswlib and the paper; at least M)" },
    { .name = "ef_construction", .type = ANN_PARAM_INT, .min = 1, .max = 1 << 16, .def = 128,
      .help = "candidate list size while inserting" },
    { .name = "seed", .type = ANN_PARAM_INT, .min = 0, .max = 9007199254740991.0, .def = 1,
      .help = "seed of the level draws" },
    { .name = "threads", .type = ANN_PARAM_INT, .min = 0, .max = 1024, .def = 0,
      .help = "build threads (0 = all cores; 1 gives one graph per seed)" },
    { .name = "kv", .type = ANN_PARAM_ENUM, .choices = kv_build_choices,
      .def_str = KV_BUILD_DEFAULT, .help = "record stores to write" },
    ANN_PARAM_END_OF("hnsw-record build"),
};

/* One inserting thread's scratch. */
typedef struct hnsw_scratch {
    ann_visited visited;
    ann_candlist cands;
    ann_cand *shrink; /* M0 + 1 */
    uint32_t *chosen; /* M0 + 1 */
    uint32_t *copy;   /* 1 + M0: a list copied out under its lock */
} hnsw_scratch;

#define HNSW_STRIPES 4096 /* node v's lists are guarded by stripe[v % HNSW_STRIPES] */

/* The graph while it is built: layer 0 and upper layers as count + ids. */
typedef struct hnsw_graph {
    const float *x;
    uint64_t n;
    uint32_t dim, M, M0, ef_construction;
    ann_metric metric;
    uint8_t *level;     /* n */
    uint32_t *links0;   /* n x (1 + M0) */
    uint32_t **upper;   /* n; level[v] x (1 + M) or NULL */
    uint32_t entry, max_level; /* under entry_lock while threads insert */
    pthread_mutex_t entry_lock;
    pthread_mutex_t *stripes; /* HNSW_STRIPES */
    int locks_ready;          /* stripes and entry_lock initialised */
    int threads;
    hnsw_scratch *ws; /* one per thread */
} hnsw_graph;

static inline float g_dist_vec(const hnsw_graph *g, const float *a, uint32_t b)
{
    return ann_distance(g->metric, a, g->x + (size_t)b * g->dim, g->dim);
}

static inline uint32_t *g_list(const hnsw_graph *g, uint32_t v, uint32_t l)
{
    return l == 0 ? g->links0 + (size_t)v * (1 + g->M0) : g->upper[v] + (size_t)(l - 1) * (1 + g->M);
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline pthread_mutex_t *g_stripe(const hnsw_graph *g, uint32_t v)
{
    return &g->stripes[v % HNSW_STRIPES];
}

/* Copy node v's list at layer l into out (count + ids) under its lock. */
static void g_copy_list(const hnsw_graph *g, uint32_t v, uint32_t l, uint32_t *out)
{
    pthread_mutex_lock(g_stripe(g, v));
    const uint32_t *list = g_list(g, v, l);
    memcpy(out, list, (1 + (size_t)list[0]) * sizeof(uint32_t));
    pthread_mutex_unlock(g_stripe(g, v));
}

/* SEARCH-LAYER (Algorithm 2) from one entry point into ws->cands (cap ef). */
static void g_search_layer(const hnsw_graph *g, hnsw_scratch *ws, const float *q, uint32_t ep,
                           float ep_d, uint32_t ef, uint32_t l)
{
    ann_visited_reset(&ws->visited);
    ann_candlist_reset_cap(&ws->cands, ef);
    ann_visited_test_and_set(&ws->visited, ep);
    ann_candlist_insert(&ws->cands, ep_d, ep);
    int pos;
    while ((pos = ann_candlist_next(&ws->cands)) >= 0) {
        const uint32_t *list = ws->copy;
        g_copy_list(g, ws->cands.c[pos].id, l, ws->copy);
        for (uint32_t j = 0; j < list[0]; j++) {
            uint32_t e = list[1 + j];
            if (ann_visited_test_and_set(&ws->visited, e))
                continue;
            float d = g_dist_vec(g, q, e);
            if (d < ann_candlist_bound(&ws->cands))
                ann_candlist_insert(&ws->cands, d, e);
        }
    }
}

static const float *g_vec_of(void *arg, uint32_t id)
{
    const hnsw_graph *g = arg;
    return g->x + (size_t)id * g->dim;
}

static inline hnsw_vecs g_vecs(const hnsw_graph *g)
{
    return (hnsw_vecs){ g_vec_of, (void *)g, g->metric, g->dim };
}

uint32_t hnsw_select(const hnsw_vecs *vs, const ann_cand *cand, uint32_t count, uint32_t max,
                     uint32_t *out)
{
    uint32_t r = 0;
    for (uint32_t i = 0; i < count && r < max; i++) {
        const float *e = vs->vec(vs->arg, cand[i].id);
        int good = 1;
        for (uint32_t j = 0; j < r && good; j++)
            if (ann_distance(vs->metric, e, vs->vec(vs->arg, out[j]), vs->dim) < cand[i].dist)
                good = 0;
        if (good)
            out[r++] = cand[i].id;
    }
    return r;
}

void hnsw_list_add(const hnsw_vecs *vs, uint32_t *list, uint32_t max, uint32_t base, uint32_t v,
                   ann_cand *shrink)
{
    for (uint32_t j = 0; j < list[0]; j++)
        if (list[1 + j] == v)
            return;
    if (list[0] < max) {
        list[1 + list[0]++] = v;
        return;
    }
    const float *ex = vs->vec(vs->arg, base);
    uint32_t c = 0;
    for (uint32_t j = 0; j <= list[0]; j++) {
        uint32_t id = j < list[0] ? list[1 + j] : v;
        ann_cand nc = { ann_distance(vs->metric, ex, vs->vec(vs->arg, id), vs->dim), id, 0 };
        uint32_t i = c++;
        while (i > 0 && (shrink[i - 1].dist > nc.dist ||
                         (shrink[i - 1].dist == nc.dist && shrink[i - 1].id > nc.id))) {
            shrink[i] = shrink[i - 1];
            i--;
        }
        shrink[i] = nc;
    }
    list[0] = hnsw_select(vs, shrink, c, max, list + 1);
}

uint32_t hnsw_level_draw(uint64_t *state, uint32_t M)
{
    double ml = 1.0 / log((double)M);
    double u = ((double)(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
    double l = floor(-log(u) * ml);
    return (uint32_t)(l > HNSW_MAX_LEVEL ? HNSW_MAX_LEVEL : l);
}

/* The select-neighbours heuristic on the build's vectors. */
static uint32_t g_select(const hnsw_graph *g, const ann_cand *cand, uint32_t count, uint32_t max,
                         uint32_t *out)
{
    hnsw_vecs vs = g_vecs(g);
    return hnsw_select(&vs, cand, count, max, out);
}

/* Add v to e's list at layer l (unless it is there), pruning e's list
 * with the heuristic when it overflows; the caller holds e's lock. */
static void g_add_locked(const hnsw_graph *g, hnsw_scratch *ws, uint32_t e, uint32_t v,
                         uint32_t l)
{
    hnsw_vecs vs = g_vecs(g);
    hnsw_list_add(&vs, g_list(g, e, l), l ? g->M : g->M0, e, v, ws->shrink);
}

/* g_add_locked under e's lock. */
static void g_link(const hnsw_graph *g, hnsw_scratch *ws, uint32_t e, uint32_t v, uint32_t l)
{
    pthread_mutex_lock(g_stripe(g, e));
    g_add_locked(g, ws, e, v, l);
    pthread_mutex_unlock(g_stripe(g, e));
}

/* INSERT (Algorithm 1) of node v, whose level is already drawn. */
static void g_insert(hnsw_graph *g, hnsw_scratch *ws, uint32_t v)
{
    const float *q = g->x + (size_t)v * g->dim;
    uint32_t lv = g->level[v];
    pthread_mutex_lock(&g->entry_lock);
    if (g->entry == HNSW_NO_NODE) {
        g->entry = v;
        g->max_level = lv;
        pthread_mutex_unlock(&g->entry_lock);
        return;
    }
    uint32_t ep = g->entry, top = g->max_level;
    int raises = lv > top; /* keeps the entry lock until v is the entry point */
    if (!raises)
        pthread_mutex_unlock(&g->entry_lock);
    float ep_d = g_dist_vec(g, q, ep);
    for (uint32_t lc = top; lc > lv; lc--) {
        g_search_layer(g, ws, q, ep, ep_d, 1, lc);
        ep = ws->cands.c[0].id;
        ep_d = ws->cands.c[0].dist;
    }
    for (int lc = (int)(lv < top ? lv : top); lc >= 0; lc--) {
        g_search_layer(g, ws, q, ep, ep_d, g->ef_construction, (uint32_t)lc);
        /* the new node takes M neighbours at every layer (the paper's M) */
        uint32_t got = g_select(g, ws->cands.c, ws->cands.n, g->M, ws->chosen);
        /* v's list at this layer may already hold links other threads made
         * (they reached v through a layer above, where it is linked): add
         * to them rather than overwrite, or those nodes lose their in-link
         * (with one thread the list is empty here and becomes `chosen`) */
        pthread_mutex_lock(g_stripe(g, v));
        for (uint32_t j = 0; j < got; j++)
            g_add_locked(g, ws, v, ws->chosen[j], (uint32_t)lc);
        pthread_mutex_unlock(g_stripe(g, v));
        for (uint32_t j = 0; j < got; j++)
            g_link(g, ws, ws->chosen[j], v, (uint32_t)lc);
        ep = ws->cands.c[0].id;
        ep_d = ws->cands.c[0].dist;
    }
    if (raises) {
        g->entry = v;
        g->max_level = lv;
        pthread_mutex_unlock(&g->entry_lock);
    }
}

static void g_fini(hnsw_graph *g)
{
    if (g->upper)
        for (uint64_t v = 0; v < g->n; v++)
            free(g->upper[v]);
    free(g->upper);
    free(g->level);
    free(g->links0);
    for (int t = 0; g->ws && t < g->threads; t++) {
        free(g->ws[t].shrink);
        free(g->ws[t].chosen);
        free(g->ws[t].copy);
        ann_visited_fini(&g->ws[t].visited);
        ann_candlist_fini(&g->ws[t].cands);
    }
    free(g->ws);
    if (g->locks_ready) {
        for (int i = 0; i < HNSW_STRIPES; i++)
            pthread_mutex_destroy(&g->stripes[i]);
        pthread_mutex_destroy(&g->entry_lock);
    }
    free(g->stripes);
}

typedef struct insert_job {
    hnsw_graph *g;
    ann_progress *prog;
} insert_job;

static int insert_run(void *arg, uint64_t b, uint64_t e, int worker)
{
    insert_job *j = arg;
    for (uint64_t v = b; v < e; v++)
        g_insert(j->g, &j->g->ws[worker], (uint32_t)v);
    ann_progress_add(j->prog, e - b);
    return 0;
}

/* insert_run over [1, n), the loop starting at 0 */
static int insert_from_1(void *arg, uint64_t b, uint64_t e, int worker)
{
    return insert_run(arg, b + 1, e + 1, worker);
}

static int g_build(hnsw_graph *g, uint64_t seed)
{
    g->level = calloc(g->n ? g->n : 1, 1);
    g->links0 = calloc((g->n ? g->n : 1) * (1 + (size_t)g->M0), sizeof(uint32_t));
    g->upper = calloc(g->n ? g->n : 1, sizeof *g->upper);
    g->stripes = malloc(HNSW_STRIPES * sizeof *g->stripes);
    g->ws = calloc((size_t)g->threads, sizeof *g->ws);
    if (!g->level || !g->links0 || !g->upper || !g->stripes || !g->ws)
        return ann_fail(-ENOMEM, "hnsw-record build: no memory for %llu nodes",
                        (unsigned long long)g->n);
    for (int i = 0; i < HNSW_STRIPES; i++)
        pthread_mutex_init(&g->stripes[i], NULL);
    pthread_mutex_init(&g->entry_lock, NULL);
    g->locks_ready = 1;
    for (int t = 0; t < g->threads; t++) {
        hnsw_scratch *w = &g->ws[t];
        w->shrink = malloc((g->M0 + 1) * sizeof *w->shrink);
        w->chosen = malloc((g->M0 + 1) * sizeof *w->chosen);
        w->copy = malloc((g->M0 + 1) * sizeof *w->copy);
        if (!w->shrink || !w->chosen || !w->copy || ann_visited_init(&w->visited, g->n) != 0 ||
            ann_candlist_create(&w->cands, g->ef_construction) != 0)
            return ann_fail(-ENOMEM, "hnsw-record build: no memory for thread %d's scratch", t);
    }
    uint64_t s = seed;
    for (uint64_t v = 0; v < g->n; v++) {
        g->level[v] = (uint8_t)hnsw_level_draw(&s, g->M);
        if (g->level[v] > 0) {
            g->upper[v] = calloc((size_t)g->level[v] * (1 + g->M), sizeof(uint32_t));
            if (!g->upper[v])
                return ann_fail(-ENOMEM, "hnsw-record build: no memory for upper layers");
        }
    }
    g->entry = HNSW_NO_NODE;
    g->max_level = 0;
    ann_progress prog;
    char what[96];
    snprintf(what, sizeof what, "hnsw graph (M %u, ef_construction %u)", g->M, g->ef_construction);
    ann_progress_begin(&prog, what, g->n, "points");
    insert_job job = { g, &prog };
    /* node 0 first (the entry point), then chunks of 64 in id order per thread */
    int rc = g->n ? insert_run(&job, 0, 1, 0) : 0;
    if (rc == 0 && g->n > 1)
        rc = ann_parallel_for(g->threads, g->n - 1, 64, insert_from_1, &job);
    ann_progress_end(&prog);
    return rc;
}

/* Encode node v's record into buf; returns its length. */
static size_t g_encode_node(const hnsw_graph *g, uint32_t v, uint8_t *buf)
{
    ann_put_u32(buf, v);
    buf[4] = g->level[v];
    buf[5] = buf[6] = buf[7] = 0;
    const float *x = g->x + (size_t)v * g->dim;
    size_t off = HNSW_NODE_HEADER_BYTES;
    for (uint32_t j = 0; j < g->dim; j++, off += 4)
        ann_put_f32(buf + off, x[j]);
    for (uint32_t l = 0; l <= g->level[v]; l++) {
        const uint32_t *list = g_list(g, v, l);
        ann_put_u32(buf + off, list[0]);
        off += 4;
        for (uint32_t j = 0; j < list[0]; j++, off += 4)
            ann_put_u32(buf + off, list[1 + j]);
    }
    return off;
}

/* Write every node record, then the metadata record, into one store. */
static int g_load_store(const hnsw_graph *g, const hnsw_meta *meta, const char *path,
                        kv_backend backend)
{
    int rc = 0;
    kv_store *kv = NULL;
    kv_bulk *bulk = NULL;
    size_t max_rec = HNSW_NODE_HEADER_BYTES + (size_t)g->dim * 4 + 4 * (1 + (size_t)g->M0) +
                     (size_t)HNSW_MAX_LEVEL * 4 * (1 + g->M);
    uint8_t *buf = malloc(max_rec);
    uint8_t key[KV_KEY_U32_BYTES], mrec[HNSW_META_BYTES];
    kv_options opt = { .backend = backend, .profile = KV_PROFILE_EMBEDDED, .create = 1 };
    if (!buf) {
        rc = ann_fail(-ENOMEM, "%s: no memory for a record", path);
        goto out;
    }
    rc = kv_open(path, &opt, &kv);
    if (rc)
        goto out;
    uint64_t expect = g->n * (KV_KEY_U32_BYTES + HNSW_NODE_HEADER_BYTES + (uint64_t)g->dim * 4 +
                              4 * (1 + (uint64_t)g->M0));
    rc = kv_bulk_begin(kv, expect, &bulk);
    if (rc)
        goto out;
    for (uint64_t v = 0; v < g->n; v++) {
        size_t len = g_encode_node(g, (uint32_t)v, buf);
        kv_key_u32(key, HNSW_TABLE_NODE, (uint32_t)v);
        rc = kv_bulk_add(bulk, key, sizeof key, buf, len);
        if (rc)
            goto out;
    }
    rc = kv_bulk_finish(bulk);
    bulk = NULL;
    if (rc)
        goto out;
    /* the metadata record last: a store without it never opens */
    hnsw_meta_encode(meta, mrec);
    kv_key_u32(key, HNSW_TABLE_META, 0);
    rc = kv_put(kv, key, sizeof key, mrec, sizeof mrec);
out:
    kv_bulk_abort(bulk);
    if (kv) {
        int crc = kv_close(kv);
        if (!rc)
            rc = crc;
    }
    free(buf);
    return rc;
}

int hnsw_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report)
{
    (void)bctx; /* no shared artifacts */
    int rc = 0;
    if (src->n >= HNSW_NO_NODE)
        return ann_fail(ANN_EPARAM, "hnsw-record: %llu vectors, at most %u",
                        (unsigned long long)src->n, HNSW_NO_NODE - 1);
    hnsw_graph g = {
        .n = src->n,
        .dim = src->dim,
        .M = (uint32_t)ann_param_int(params, hnsw_build_params, "M"),
        .ef_construction = (uint32_t)ann_param_int(params, hnsw_build_params, "ef_construction"),
        .metric = src->metric,
    };
    uint32_t m0 = (uint32_t)ann_param_int(params, hnsw_build_params, "M0");
    if (m0 != 0 && m0 < g.M)
        return ann_fail(ANN_EPARAM, "hnsw-record build: M0 %u is below M %u (layer 0 keeps at "
                        "least the M links each node takes there)", m0, g.M);
    g.M0 = m0 ? m0 : 2 * g.M;
    g.threads = (int)ann_param_int(params, hnsw_build_params, "threads");
    if (g.threads <= 0)
        g.threads = ann_ncores();
    uint64_t seed = (uint64_t)ann_param_int(params, hnsw_build_params, "seed");
    const char *which = ann_param_enum(params, hnsw_build_params, "kv");
    ann_vecsrc_held held = { 0 };
    rc = ann_vecsrc_hold(src, g.threads, &held);
    if (rc)
        goto out;
    g.x = held.x;
    double t0 = ann_mono_s();
    rc = g_build(&g, seed);
    if (rc)
        goto out;
    double t1 = ann_mono_s();
    hnsw_meta meta = {
        .metric = src->metric, .n = src->n, .dim = src->dim, .M = g.M, .M0 = g.M0,
        .ef_construction = g.ef_construction, .entry = g.entry, .max_level = g.max_level,
        .seed = seed,
    };
    for (int b = 0; b < 2; b++) {
        kv_backend be = b == 0 ? KV_BACKEND_ROCKSDB : KV_BACKEND_LMDB;
        if (!kv_build_includes(which, be))
            continue;
        char path[4200];
        kv_store_path(path, sizeof path, dir, be);
        rc = g_load_store(&g, &meta, path, be);
        if (rc)
            goto out;
    }
    double t2 = ann_mono_s();
    uint64_t edges0 = 0;
    for (uint64_t v = 0; v < g.n; v++)
        edges0 += g.links0[v * (1 + (size_t)g.M0)];
    json_object_set_new(report, "phases",
                        json_pack("{s:f, s:f}", "graph_s", t1 - t0, "records_s", t2 - t1));
    json_object_set_new(report, "max_level", json_integer(g.max_level));
    json_object_set_new(report, "threads", json_integer(g.threads));
    json_object_set_new(report, "base_rows", json_string(held.copy ? "copied" : "lent"));
    json_object_set_new(report, "mean_degree_layer0",
                        json_real(g.n ? (double)edges0 / (double)g.n : 0.0));
out:
    g_fini(&g);
    ann_vecsrc_unhold(&held);
    return rc;
}
