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
 * M0 = 2M at layer 0) is pruned back with the same heuristic.  The entry
 * point is the node of the highest level.
 *
 * Deliberate choices: the heuristic runs without extendCandidates and
 * without keepPrunedConnections (as hnswlib, and as the paper recommends
 * for all but extremely clustered data); the next layer starts from the
 * closest element found (hnswlib's choice) rather than the whole set W;
 * the build is single-threaded, so a seed gives one graph; the SEARCH-LAYER
 * working set is the core's bounded candidate list (engines/core/candlist.h),
 * equivalent to the paper's C and W sets since a candidate farther than
 * the ef-th best is never expanded.  The whole base is held in memory
 * during the build (n x dim floats).
 */
#include "engines/hnsw_record/hnsw.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/kv_params.h"
#include "engines/core/progress.h"
#include "engines/core/status.h"
#include "engines/hnsw_record/layout.h"
#include "engines/core/ticks.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const ann_param_spec hnsw_build_params[] = {
    { .name = "M", .type = ANN_PARAM_INT, .min = 2, .max = 512, .def = 16,
      .help = "links per node above layer 0 (M0 = 2M at layer 0)" },
    { .name = "ef_construction", .type = ANN_PARAM_INT, .min = 1, .max = 1 << 16, .def = 128,
      .help = "candidate list size while inserting" },
    { .name = "seed", .type = ANN_PARAM_INT, .min = 0, .max = 9007199254740991.0, .def = 1,
      .help = "seed of the level draws" },
    { .name = "kv", .type = ANN_PARAM_ENUM, .choices = kv_build_choices,
      .def_str = KV_BUILD_DEFAULT, .help = "record stores to write" },
    ANN_PARAM_END_OF("hnsw-record build"),
};

/* The graph while it is built: layer 0 and upper layers as count + ids. */
typedef struct hnsw_graph {
    const float *x;
    uint64_t n;
    uint32_t dim, M, M0, ef_construction;
    ann_metric metric;
    uint8_t *level;     /* n */
    uint32_t *links0;   /* n x (1 + M0) */
    uint32_t **upper;   /* n; level[v] x (1 + M) or NULL */
    uint32_t entry, max_level;
    /* scratch */
    ann_visited visited;
    ann_candlist cands;
    ann_cand *shrink; /* M0 + 1 */
    uint32_t *chosen; /* M0 + 1 */
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

/* SEARCH-LAYER (Algorithm 2) from one entry point into g->cands (cap ef). */
static void g_search_layer(hnsw_graph *g, const float *q, uint32_t ep, float ep_d, uint32_t ef,
                           uint32_t l)
{
    ann_visited_reset(&g->visited);
    ann_candlist_reset_cap(&g->cands, ef);
    ann_visited_test_and_set(&g->visited, ep);
    ann_candlist_insert(&g->cands, ep_d, ep);
    int pos;
    while ((pos = ann_candlist_next(&g->cands)) >= 0) {
        const uint32_t *list = g_list(g, g->cands.c[pos].id, l);
        for (uint32_t j = 0; j < list[0]; j++) {
            uint32_t e = list[1 + j];
            if (ann_visited_test_and_set(&g->visited, e))
                continue;
            float d = g_dist_vec(g, q, e);
            if (d < ann_candlist_bound(&g->cands))
                ann_candlist_insert(&g->cands, d, e);
        }
    }
}

/* SELECT-NEIGHBORS-HEURISTIC (Algorithm 4) over cand (sorted ascending by
 * distance to the base element): keep e when it is closer to the base
 * than to every neighbour kept so far.  Writes up to max ids to out. */
static uint32_t g_select(const hnsw_graph *g, const ann_cand *cand, uint32_t count, uint32_t max,
                         uint32_t *out)
{
    uint32_t r = 0;
    for (uint32_t i = 0; i < count && r < max; i++) {
        const float *e = g->x + (size_t)cand[i].id * g->dim;
        int good = 1;
        for (uint32_t j = 0; j < r && good; j++)
            if (g_dist_vec(g, e, out[j]) < cand[i].dist)
                good = 0;
        if (good)
            out[r++] = cand[i].id;
    }
    return r;
}

/* Add v to e's list at layer l, pruning e's list with the heuristic when
 * it overflows. */
static void g_link(hnsw_graph *g, uint32_t e, uint32_t v, uint32_t l)
{
    uint32_t *list = g_list(g, e, l);
    uint32_t max = l ? g->M : g->M0;
    if (list[0] < max) {
        list[1 + list[0]++] = v;
        return;
    }
    const float *ex = g->x + (size_t)e * g->dim;
    uint32_t c = 0;
    for (uint32_t j = 0; j <= list[0]; j++) {
        uint32_t id = j < list[0] ? list[1 + j] : v;
        ann_cand nc = { g_dist_vec(g, ex, id), id, 0 };
        uint32_t i = c++;
        while (i > 0 && (g->shrink[i - 1].dist > nc.dist ||
                         (g->shrink[i - 1].dist == nc.dist && g->shrink[i - 1].id > nc.id))) {
            g->shrink[i] = g->shrink[i - 1];
            i--;
        }
        g->shrink[i] = nc;
    }
    list[0] = g_select(g, g->shrink, c, max, list + 1);
}

/* INSERT (Algorithm 1) of node v, whose level is already drawn. */
static void g_insert(hnsw_graph *g, uint32_t v)
{
    const float *q = g->x + (size_t)v * g->dim;
    uint32_t lv = g->level[v];
    if (g->entry == HNSW_NO_NODE) {
        g->entry = v;
        g->max_level = lv;
        return;
    }
    uint32_t ep = g->entry;
    float ep_d = g_dist_vec(g, q, ep);
    for (uint32_t lc = g->max_level; lc > lv; lc--) {
        g_search_layer(g, q, ep, ep_d, 1, lc);
        ep = g->cands.c[0].id;
        ep_d = g->cands.c[0].dist;
    }
    for (int lc = (int)(lv < g->max_level ? lv : g->max_level); lc >= 0; lc--) {
        g_search_layer(g, q, ep, ep_d, g->ef_construction, (uint32_t)lc);
        uint32_t *mine = g_list(g, v, (uint32_t)lc);
        /* the new node takes M neighbours at every layer (the paper's M) */
        mine[0] = g_select(g, g->cands.c, g->cands.n, g->M, g->chosen);
        memcpy(mine + 1, g->chosen, mine[0] * sizeof(uint32_t));
        for (uint32_t j = 0; j < mine[0]; j++)
            g_link(g, mine[1 + j], v, (uint32_t)lc);
        ep = g->cands.c[0].id;
        ep_d = g->cands.c[0].dist;
    }
    if (lv > g->max_level) {
        g->entry = v;
        g->max_level = lv;
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
    free(g->shrink);
    free(g->chosen);
    ann_visited_fini(&g->visited);
    ann_candlist_fini(&g->cands);
}

static int g_build(hnsw_graph *g, uint64_t seed)
{
    double ml = 1.0 / log((double)g->M);
    g->level = calloc(g->n ? g->n : 1, 1);
    g->links0 = calloc((g->n ? g->n : 1) * (1 + (size_t)g->M0), sizeof(uint32_t));
    g->upper = calloc(g->n ? g->n : 1, sizeof *g->upper);
    g->shrink = malloc((g->M0 + 1) * sizeof *g->shrink);
    g->chosen = malloc((g->M0 + 1) * sizeof *g->chosen);
    if (!g->level || !g->links0 || !g->upper || !g->shrink || !g->chosen ||
        ann_visited_init(&g->visited, g->n) != 0 ||
        ann_candlist_create(&g->cands, g->ef_construction) != 0)
        return ann_fail(-ENOMEM, "hnsw-record build: no memory for %llu nodes",
                        (unsigned long long)g->n);
    uint64_t s = seed;
    for (uint64_t v = 0; v < g->n; v++) {
        double u = ((double)(splitmix64(&s) >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
        double l = floor(-log(u) * ml);
        g->level[v] = (uint8_t)(l > HNSW_MAX_LEVEL ? HNSW_MAX_LEVEL : l);
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
    for (uint64_t v = 0; v < g->n; v++) {
        g_insert(g, (uint32_t)v);
        if ((v & 255) == 255 || v + 1 == g->n)
            ann_progress_add(&prog, (v & 255) + 1);
    }
    ann_progress_end(&prog);
    return 0;
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
    g.M0 = 2 * g.M;
    uint64_t seed = (uint64_t)ann_param_int(params, hnsw_build_params, "seed");
    const char *which = ann_param_enum(params, hnsw_build_params, "kv");
    float *x = malloc((src->n ? src->n : 1) * (size_t)src->dim * sizeof(float));
    if (!x) {
        rc = ann_fail(-ENOMEM, "hnsw-record build: no memory for %llu vectors",
                      (unsigned long long)src->n);
        goto out;
    }
    rc = src->n ? ann_vecsrc_read(src, 0, src->n, x) : 0;
    if (rc)
        goto out;
    g.x = x;
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
    json_object_set_new(report, "mean_degree_layer0",
                        json_real(g.n ? (double)edges0 / (double)g.n : 0.0));
out:
    g_fini(&g);
    free(x);
    return rc;
}
