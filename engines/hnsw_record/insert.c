/*
 * insert.c: live updates of hnsw-record, as HNSW takes them (Malkov &
 * Yashunin, TPAMI 2018, Algorithm 1; deletes as hnswlib's markDelete, and
 * a consolidation of deletes after FreshDiskANN's, Singh et al. 2021,
 * Algorithm 4), on node records in the store (layout.h).
 *
 * insert(id, x): the build's INSERT on records.  The node draws its level
 *   from a splitmix64 stream seeded by the index's seed and the id, descends
 *   greedily from the entry point through the layers above it, then at each
 *   of its layers runs SEARCH-LAYER with ef_construction and links to the
 *   neighbours the build's select-neighbours heuristic chooses
 *   (hnsw_select); each chosen neighbour takes a back-link, its list
 *   re-selected by the same heuristic when it overflows (hnsw_list_add, the
 *   build's code).  The nodes an insert reads are loaded from one snapshot
 *   into a working set; the new node's record, every relinked neighbour's
 *   and the live state (entry point, max level, id bound) are one write
 *   batch, so a search sees the graph before or after the insert, never
 *   between.  Deleted nodes take part in construction (they stay navigable).
 * remove(id): a tombstone record; the id joins the in-memory deleted set
 *   before the call returns.  Searches pass through deleted nodes and never
 *   return them (search.c).
 * merge(): consolidates deletes in one write batch: every node with a link
 *   (at any layer) to a deleted node d takes d's live neighbours at that
 *   layer as candidates besides its own and re-selects its list with the
 *   heuristic; then d's node record and tombstone are removed.  The entry
 *   point, deleted, stays as a navigation point (never returned) while it
 *   is the entry point, as diskann-record keeps its medoid.
 *
 * Concurrency: one writer at a time (a mutex serialises insert, remove and
 * merge); searches take no lock and read a snapshot per query (LMDB read
 * transactions, RocksDB snapshots of the writable store).  The entry point
 * is published after the commit that writes its record; the id bound is
 * raised before the commit that first links an id.  A search reads the
 * entry point before taking its snapshot and again after, and starts over
 * when it moved (search.c), so it never starts from a node its snapshot
 * does not hold.
 *
 * Errors name the store and the id.  Bad input writes nothing.
 */
#include "engines/hnsw_record/hnsw.h"
#include "engines/core/update.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/status.h"
#include "engines/core/u32map.h"
#include "engines/hnsw_record/layout.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t pack_entry(uint32_t entry, uint32_t level)
{
    return (uint64_t)entry | (uint64_t)level << 32;
}

/* ---- open / close ------------------------------------------------------ */

int hnsw_live_open(ann_engine *e, kv_reader *rd, int enabled)
{
    hnsw_live *L = &e->live;
    pthread_mutex_init(&L->wlock, NULL);
    L->inited = 1;
    L->enabled = enabled;
    if (ann_idbits_init(&L->dead))
        return ann_fail(-ENOMEM, "%s: no memory for the deleted-id set", e->store_dir);
    hnsw_state st = { .entry = e->meta.entry, .max_level = e->meta.max_level,
                      .id_bound = (uint32_t)e->meta.n, .nodes = e->meta.n };
    uint8_t key[KV_KEY_U32_BYTES];
    kv_val v = { 0 };
    int rc = kv_get(rd, key, kv_key_u32(key, HNSW_TABLE_STATE, 0), &v);
    if (rc == 0) {
        rc = hnsw_state_decode(v.data, v.len, e->store_dir, &st);
        kv_val_release(&v);
        if (rc)
            return rc;
        if (st.id_bound < e->meta.n)
            return ann_fail(ANN_ECORRUPT, "%s: live-state record: id_bound %u below n %llu",
                            e->store_dir, st.id_bound, (unsigned long long)e->meta.n);
    } else if (rc != ANN_ENOTFOUND) {
        return rc;
    }
    atomic_store(&L->entry, pack_entry(st.entry, st.max_level));
    atomic_store(&L->id_bound, st.id_bound);
    atomic_store(&L->nodes, st.nodes);
    L->merges = st.merges;

    uint8_t prefix = HNSW_TABLE_TOMBSTONE;
    kv_iter *it = NULL;
    kv_val k;
    int step;
    rc = kv_iter_create_scan(rd, &prefix, 1, &it);
    if (rc)
        return rc;
    while ((step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t id = 0;
        if (kv_key_parse_u32(k.data, k.len, NULL, &id) != 0 || v.len != 1 || id >= st.id_bound) {
            rc = ann_fail(ANN_ECORRUPT, "%s: tombstone record (key of %zu bytes, id %u): bad key, "
                          "id or length %zu", e->store_dir, k.len, id, v.len);
            break;
        }
        if (ann_idbits_set(&L->dead, id, 1)) {
            rc = ann_fail(-ENOMEM, "%s: no memory for the deleted-id set", e->store_dir);
            break;
        }
        atomic_fetch_add(&L->deleted, 1);
        atomic_store(&L->any_dead, 1);
    }
    if (!rc && step < 0)
        rc = step;
    kv_iter_destroy(it);
    if (!rc && enabled)
        rc = kv_reader_create(e->kv, &L->wrd);
    return rc;
}

void hnsw_live_close(ann_engine *e)
{
    hnsw_live *L = &e->live;
    if (!L->inited)
        return;
    kv_reader_destroy(L->wrd);
    L->wrd = NULL;
    ann_paged_fini(&L->dead);
    pthread_mutex_destroy(&L->wlock);
    L->inited = 0;
}

/* ---- the working set: nodes read from one snapshot, edited in memory --- */

typedef struct wnode {
    uint32_t id, level;
    int dirty;
    float *vec;      /* dim */
    uint32_t *lists; /* level 0: 1 + M0, then level x (1 + M): count, ids */
} wnode;

typedef struct wset {
    ann_engine *e;
    hnsw_meta m;     /* bounds for parsing: n = id bound, max level HNSW_MAX_LEVEL */
    ann_u32map map;  /* id -> index in nodes */
    wnode **nodes;
    uint32_t n, cap;
    ann_cand *shrink; /* M0 + 1 */
} wset;

static size_t list_off(const hnsw_meta *m, uint32_t l)
{
    return l == 0 ? 0 : (1 + (size_t)m->M0) + (size_t)(l - 1) * (1 + m->M);
}

static uint32_t *w_list(const wset *w, wnode *n, uint32_t l)
{
    return n->lists + list_off(&w->m, l);
}

static int ws_init(wset *w, ann_engine *e)
{
    memset(w, 0, sizeof *w);
    w->e = e;
    w->m = e->meta;
    w->m.n = atomic_load(&e->live.id_bound);
    w->m.max_level = HNSW_MAX_LEVEL;
    w->shrink = malloc((e->meta.M0 + 1) * sizeof *w->shrink);
    return w->shrink ? 0 : ann_fail(-ENOMEM, "%s: no memory for an update", e->store_dir);
}

static void ws_fini(wset *w)
{
    for (uint32_t i = 0; i < w->n; i++) {
        free(w->nodes[i]->vec);
        free(w->nodes[i]->lists);
        free(w->nodes[i]);
    }
    free(w->nodes);
    free(w->shrink);
    ann_u32map_fini(&w->map);
}

/* A new node in the working set (lists empty). */
static int ws_add(wset *w, uint32_t id, uint32_t level, wnode **out)
{
    const hnsw_meta *m = &w->e->meta;
    if (w->n == w->cap) {
        uint32_t cap = w->cap ? 2 * w->cap : 64;
        wnode **nodes = realloc(w->nodes, cap * sizeof *nodes);
        if (!nodes)
            return ann_fail(-ENOMEM, "%s: no memory for an update", w->e->store_dir);
        w->nodes = nodes;
        w->cap = cap;
    }
    wnode *n = calloc(1, sizeof *n);
    if (n) {
        n->vec = malloc((size_t)m->dim * sizeof(float));
        n->lists = calloc(list_off(m, level + 1), sizeof(uint32_t));
    }
    if (!n || !n->vec || !n->lists || ann_u32map_put(&w->map, id, w->n) != 0) {
        if (n) {
            free(n->vec);
            free(n->lists);
        }
        free(n);
        return ann_fail(-ENOMEM, "%s: no memory for an update", w->e->store_dir);
    }
    n->id = id;
    n->level = level;
    w->nodes[w->n++] = n;
    *out = n;
    return 0;
}

static wnode *ws_find(const wset *w, uint32_t id)
{
    uint32_t i;
    return ann_u32map_get(&w->map, id, &i) ? w->nodes[i] : NULL;
}

/* Node id, from the working set or read from the writer's snapshot. */
static int ws_get(wset *w, uint32_t id, wnode **out)
{
    if ((*out = ws_find(w, id)) != NULL)
        return 0;
    ann_engine *e = w->e;
    uint8_t key[KV_KEY_U32_BYTES];
    kv_val val = { 0 };
    hnsw_node_view view;
    int rc = kv_get(e->live.wrd, key, kv_key_u32(key, HNSW_TABLE_NODE, id), &val);
    if (rc == ANN_ENOTFOUND)
        return ann_fail(ANN_ECORRUPT, "%s: node %u record missing (linked from the graph)",
                        e->store_dir, id);
    if (rc)
        return rc;
    rc = hnsw_node_parse(&w->m, e->store_dir, id, val.data, val.len, &view);
    wnode *n = NULL;
    if (!rc)
        rc = ws_add(w, id, view.level, &n);
    if (!rc) {
        memcpy(n->vec, view.vector, (size_t)w->m.dim * sizeof(float)); /* little-endian host */
        for (uint32_t l = 0; l <= view.level; l++) {
            uint32_t count, *dst = w_list(w, n, l);
            const uint8_t *src = hnsw_node_list(&view, l, &count);
            dst[0] = count;
            for (uint32_t j = 0; j < count; j++)
                dst[1 + j] = ann_get_u32(src + 4 * (size_t)j);
        }
        *out = n;
    }
    kv_val_release(&val);
    return rc;
}

/* hnsw_vecs over the working set: every id asked for is loaded first. */
static const float *ws_vec(void *arg, uint32_t id)
{
    return ws_find(arg, id)->vec;
}

static hnsw_vecs ws_vecs(wset *w)
{
    return (hnsw_vecs){ ws_vec, w, w->m.metric, w->m.dim };
}

static float ws_dist(const wset *w, const float *a, const wnode *b)
{
    return ann_distance(w->m.metric, a, b->vec, w->m.dim);
}

/* SEARCH-LAYER (Algorithm 2) from ep at layer l into cands (cap ef). */
static int ws_search_layer(wset *w, const float *q, uint32_t ep, float ep_d, uint32_t ef,
                           uint32_t l, ann_candlist *cands, ann_u32map *visited)
{
    ann_u32map_clear(visited);
    ann_candlist_reset_cap(cands, ef);
    if (ann_u32map_put(visited, ep, 1))
        return ann_fail(-ENOMEM, "%s: no memory for an update", w->e->store_dir);
    ann_candlist_insert(cands, ep_d, ep);
    int pos;
    while ((pos = ann_candlist_next(cands)) >= 0) {
        wnode *c;
        int rc = ws_get(w, cands->c[pos].id, &c);
        if (rc)
            return rc;
        if (c->level < l)
            continue; /* cannot happen in a well-formed graph */
        const uint32_t *list = w_list(w, c, l);
        for (uint32_t j = 0; j < list[0]; j++) {
            uint32_t nb = list[1 + j];
            if (ann_u32map_get(visited, nb, NULL))
                continue;
            if (ann_u32map_put(visited, nb, 1))
                return ann_fail(-ENOMEM, "%s: no memory for an update", w->e->store_dir);
            wnode *x;
            rc = ws_get(w, nb, &x);
            if (rc)
                return rc;
            float d = ws_dist(w, q, x);
            if (d < ann_candlist_bound(cands))
                ann_candlist_insert(cands, d, nb);
        }
    }
    return 0;
}

/* Encode working node n as its record into buf; returns the length. */
static size_t ws_encode(const wset *w, wnode *n, uint8_t *buf)
{
    ann_put_u32(buf, n->id);
    buf[4] = (uint8_t)n->level;
    buf[5] = buf[6] = buf[7] = 0;
    size_t off = HNSW_NODE_HEADER_BYTES;
    for (uint32_t j = 0; j < w->m.dim; j++, off += 4)
        ann_put_f32(buf + off, n->vec[j]);
    for (uint32_t l = 0; l <= n->level; l++) {
        const uint32_t *list = w_list(w, n, l);
        ann_put_u32(buf + off, list[0]);
        off += 4;
        for (uint32_t j = 0; j < list[0]; j++, off += 4)
            ann_put_u32(buf + off, list[1 + j]);
    }
    return off;
}

/* Put every dirty node of w into t. */
static int ws_put_dirty(wset *w, kv_txn *t)
{
    const hnsw_meta *m = &w->m;
    size_t max_rec = HNSW_NODE_HEADER_BYTES + (size_t)m->dim * 4 + 4 * (1 + (size_t)m->M0) +
                     (size_t)HNSW_MAX_LEVEL * 4 * (1 + m->M);
    uint8_t *buf = malloc(max_rec), key[KV_KEY_U32_BYTES];
    int rc = buf ? 0 : ann_fail(-ENOMEM, "%s: no memory for an update", w->e->store_dir);
    for (uint32_t i = 0; i < w->n && !rc; i++) {
        wnode *n = w->nodes[i];
        if (!n->dirty)
            continue;
        size_t len = ws_encode(w, n, buf);
        rc = kv_txn_put(t, key, kv_key_u32(key, HNSW_TABLE_NODE, n->id), buf, len);
    }
    free(buf);
    return rc;
}

static int put_state(kv_txn *t, const hnsw_state *st)
{
    uint8_t key[KV_KEY_U32_BYTES], rec[HNSW_STATE_BYTES];
    hnsw_state_encode(st, rec);
    return kv_txn_put(t, key, kv_key_u32(key, HNSW_TABLE_STATE, 0), rec, sizeof rec);
}

/* ---- insert / remove --------------------------------------------------- */

static int writable(ann_engine *e, const char *op)
{
    return ann_update_writable(e->store_dir, op, e->live.enabled);
}

/* Whether id has a node record and a tombstone (under wlock). */
static int id_state(ann_engine *e, uint32_t id, int *has_node, int *has_tomb)
{
    kv_reader *rd = e->live.wrd;
    uint8_t key[KV_KEY_U32_BYTES];
    kv_val v = { 0 };
    int rc = kv_reader_begin(rd);
    if (rc)
        return rc;
    int *out[2] = { has_node, has_tomb };
    const uint8_t tables[2] = { HNSW_TABLE_NODE, HNSW_TABLE_TOMBSTONE };
    for (int i = 0; i < 2 && !rc; i++) {
        rc = kv_get(rd, key, kv_key_u32(key, tables[i], id), &v);
        *out[i] = rc == 0;
        kv_val_release(&v);
        if (rc == ANN_ENOTFOUND)
            rc = 0;
    }
    kv_reader_end(rd);
    return rc;
}

/* INSERT (Algorithm 1) of node v into the working set's graph; fills *st
 * with the state after it. */
static int link_node(wset *w, wnode *v, hnsw_state *st)
{
    ann_engine *e = w->e;
    const hnsw_meta *m = &e->meta;
    const float *q = v->vec;
    uint32_t lv = v->level;
    ann_candlist cands = { 0 };
    ann_u32map visited = { 0 };
    uint32_t *chosen = malloc((m->M0 + 1) * sizeof *chosen);
    int rc = 0;
    if (!chosen || ann_candlist_create(&cands, m->ef_construction)) {
        rc = ann_fail(-ENOMEM, "%s: no memory for an update", e->store_dir);
        goto out;
    }
    if (st->entry == HNSW_NO_NODE) {
        st->entry = v->id;
        st->max_level = lv;
        goto out;
    }
    uint32_t ep = st->entry, top = st->max_level;
    wnode *x;
    rc = ws_get(w, ep, &x);
    if (rc)
        goto out;
    float ep_d = ws_dist(w, q, x);
    for (uint32_t lc = top; lc > lv; lc--) {
        rc = ws_search_layer(w, q, ep, ep_d, 1, lc, &cands, &visited);
        if (rc)
            goto out;
        ep = cands.c[0].id;
        ep_d = cands.c[0].dist;
    }
    hnsw_vecs vs = ws_vecs(w);
    for (int lc = (int)(lv < top ? lv : top); lc >= 0; lc--) {
        rc = ws_search_layer(w, q, ep, ep_d, m->ef_construction, (uint32_t)lc, &cands, &visited);
        if (rc)
            goto out;
        /* the new node takes M neighbours at every layer (the build's rule) */
        uint32_t got = hnsw_select(&vs, cands.c, cands.n, m->M, chosen);
        uint32_t *vl = w_list(w, v, (uint32_t)lc);
        for (uint32_t j = 0; j < got; j++)
            hnsw_list_add(&vs, vl, lc ? m->M : m->M0, v->id, chosen[j], w->shrink);
        for (uint32_t j = 0; j < got; j++) {
            wnode *c;
            rc = ws_get(w, chosen[j], &c);
            if (rc)
                goto out;
            uint32_t *cl = w_list(w, c, (uint32_t)lc);
            for (uint32_t i = 0; i < cl[0]; i++) { /* the heuristic reads their vectors */
                wnode *nb;
                if ((rc = ws_get(w, cl[1 + i], &nb)) != 0)
                    goto out;
            }
            hnsw_list_add(&vs, cl, lc ? m->M : m->M0, c->id, v->id, w->shrink);
            c->dirty = 1;
        }
        ep = cands.c[0].id;
        ep_d = cands.c[0].dist;
    }
    if (lv > top) {
        st->entry = v->id;
        st->max_level = lv;
    }
out:
    free(chosen);
    ann_candlist_fini(&cands);
    ann_u32map_fini(&visited);
    return rc;
}

int hnsw_insert(ann_engine *e, uint32_t id, const float *vec, uint32_t dim)
{
    hnsw_live *L = &e->live;
    int rc = writable(e, "insert");
    if (rc)
        return rc;
    rc = ann_update_check_insert(e->store_dir, id, vec, dim, e->meta.dim); /* HNSW_NO_NODE reserved */
    if (rc)
        return rc;

    pthread_mutex_lock(&L->wlock);
    wset w;
    kv_txn *t = NULL;
    int begun = 0, has_node = 0, has_tomb = 0;
    uint64_t packed = atomic_load(&L->entry);
    uint32_t old_bound = atomic_load(&L->id_bound);
    hnsw_state st = { .entry = (uint32_t)packed, .max_level = (uint32_t)(packed >> 32),
                      .id_bound = id >= old_bound ? id + 1 : old_bound,
                      .nodes = atomic_load(&L->nodes) + 1, .merges = L->merges };
    rc = ws_init(&w, e);
    if (!rc)
        rc = id_state(e, id, &has_node, &has_tomb);
    if (!rc && has_node && !has_tomb)
        rc = ann_fail(ANN_EDATA, "%s: insert id %u: the id exists", e->store_dir, id);
    else if (!rc && has_node && id == st.entry)
        rc = ann_fail(ANN_EDATA, "%s: insert id %u: the id is the graph's entry node, deleted "
                      "and kept as a navigation point: it cannot be inserted again while it is "
                      "the entry point", e->store_dir, id);
    else if (!rc && has_node)
        rc = ann_fail(ANN_EDATA, "%s: insert id %u: the id is deleted but not merged yet: "
                      "merge before inserting it again", e->store_dir, id);
    if (rc)
        goto out;
    w.m.n = st.id_bound;
    uint64_t draw = e->meta.seed ^ (0x9e3779b97f4a7c15ULL * ((uint64_t)id + 1));
    wnode *v;
    rc = ws_add(&w, id, hnsw_level_draw(&draw, e->meta.M), &v);
    if (rc)
        goto out;
    memcpy(v->vec, vec, (size_t)dim * sizeof(float));
    v->dirty = 1;
    rc = kv_reader_begin(L->wrd);
    if (rc)
        goto out;
    begun = 1;
    rc = link_node(&w, v, &st);
    kv_reader_end(L->wrd); /* the working set holds copies */
    begun = 0;
    if (rc)
        goto out;
    rc = kv_txn_begin(e->kv, &t);
    if (!rc)
        rc = ws_put_dirty(&w, t);
    if (!rc)
        rc = put_state(t, &st);
    if (rc)
        goto out;
    /* before the commit: a search that sees a link to id sees the bound */
    if (st.id_bound > old_bound)
        atomic_store(&L->id_bound, st.id_bound);
    rc = kv_txn_commit(t);
    t = NULL;
    if (rc)
        goto out;
    /* after it: a search that starts from the new entry holds its record */
    atomic_store(&L->entry, pack_entry(st.entry, st.max_level));
    atomic_store(&L->nodes, st.nodes);
    ann_idbits_set(&L->dead, id, 0); /* an id consolidated before, live again */
out:
    if (begun)
        kv_reader_end(L->wrd);
    kv_txn_abort(t);
    ws_fini(&w);
    pthread_mutex_unlock(&L->wlock);
    return rc;
}

int hnsw_remove(ann_engine *e, uint32_t id)
{
    hnsw_live *L = &e->live;
    int rc = writable(e, "remove");
    if (rc)
        return rc;
    pthread_mutex_lock(&L->wlock);
    int has_node = 0, has_tomb = 0;
    rc = id_state(e, id, &has_node, &has_tomb);
    if (!rc)
        rc = ann_update_check_remove(e->store_dir, id, has_node, has_tomb, &L->dead);
    if (!rc)
        rc = ann_update_put_tombstone(e->kv, HNSW_TABLE_TOMBSTONE, id, 0);
    if (!rc) {
        atomic_store(&L->any_dead, 1); /* before the bit: a search that sees it filters */
        ann_idbits_set(&L->dead, id, 1); /* its page exists: cannot fail */
        atomic_fetch_add(&L->deleted, 1);
    }
    pthread_mutex_unlock(&L->wlock);
    return rc;
}

/* ---- merge: consolidate deletes ---------------------------------------- */

/* Ids with a node record to relink (a link to a removable node) and to
 * remove (deleted, not the entry point), from one pass over the nodes. */
static int scan_nodes(wset *w, uint32_t entry, uint32_t **relink, uint32_t *n_relink,
                      uint32_t **gone, uint32_t *n_gone)
{
    ann_engine *e = w->e;
    uint8_t prefix = HNSW_TABLE_NODE;
    kv_iter *it = NULL;
    kv_val k, v;
    uint32_t cap_r = 0, cap_g = 0;
    int rc = kv_iter_create_scan(e->live.wrd, &prefix, 1, &it), step;
    if (rc)
        return rc;
    while ((step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t id = 0;
        hnsw_node_view view;
        if (kv_key_parse_u32(k.data, k.len, NULL, &id) != 0) {
            rc = ann_fail(ANN_ECORRUPT, "%s: node table: a key of %zu bytes", e->store_dir, k.len);
            break;
        }
        rc = hnsw_node_parse(&w->m, e->store_dir, id, v.data, v.len, &view);
        if (rc)
            break;
        int dead = ann_idbits_test(&e->live.dead, id), bad = 0;
        if (dead && id != entry) {
            bad = 2;
        } else {
            for (uint32_t l = 0; l <= view.level && !bad; l++) {
                uint32_t count;
                const uint8_t *list = hnsw_node_list(&view, l, &count);
                for (uint32_t j = 0; j < count && !bad; j++) {
                    uint32_t nb = ann_get_u32(list + 4 * (size_t)j);
                    bad = nb != entry && ann_idbits_test(&e->live.dead, nb);
                }
            }
        }
        if (!bad)
            continue;
        uint32_t **arr = bad == 2 ? gone : relink, *n = bad == 2 ? n_gone : n_relink;
        uint32_t *cap = bad == 2 ? &cap_g : &cap_r;
        if (*n == *cap) {
            uint32_t c2 = *cap ? 2 * *cap : 256;
            uint32_t *a = realloc(*arr, c2 * sizeof *a);
            if (!a) {
                rc = ann_fail(-ENOMEM, "%s: merge: no memory", e->store_dir);
                break;
            }
            *arr = a;
            *cap = c2;
        }
        (*arr)[(*n)++] = id;
    }
    if (!rc && step < 0)
        rc = step;
    kv_iter_destroy(it);
    return rc;
}

/* Re-select node u's lists that link to removable nodes: u's live
 * neighbours and the removed neighbours' live neighbours, by the heuristic. */
static int relink_node(wset *w, uint32_t uid, uint32_t entry, ann_cand **cand, uint32_t *cand_cap)
{
    ann_engine *e = w->e;
    const hnsw_meta *m = &e->meta;
    hnsw_vecs vs = ws_vecs(w);
    wnode *u;
    int rc = ws_get(w, uid, &u);
    if (rc)
        return rc;
    for (uint32_t l = 0; l <= u->level; l++) {
        uint32_t *list = w_list(w, u, l), nc = 0;
        int touched = 0;
        for (uint32_t j = 0; j < list[0] && !rc; j++) {
            uint32_t nb = list[1 + j];
            int removable = nb != entry && ann_idbits_test(&e->live.dead, nb);
            wnode *d;
            if ((rc = ws_get(w, nb, &d)) != 0)
                break;
            /* candidates: nb itself when it stays, else its neighbours at l */
            uint32_t one[2] = { 1, nb };
            const uint32_t *src = one;
            if (removable) {
                touched = 1;
                src = d->level >= l ? w_list(w, d, l) : (const uint32_t[]){ 0 };
            }
            for (uint32_t i = 0; i < src[0] && !rc; i++) {
                uint32_t c = src[1 + i];
                if (c == uid || (c != entry && ann_idbits_test(&e->live.dead, c)))
                    continue;
                int dup = 0;
                for (uint32_t x = 0; x < nc && !dup; x++)
                    dup = (*cand)[x].id == c;
                if (dup)
                    continue;
                wnode *cn;
                if ((rc = ws_get(w, c, &cn)) != 0)
                    break;
                if (nc == *cand_cap) {
                    uint32_t c2 = *cand_cap ? 2 * *cand_cap : 256;
                    ann_cand *a = realloc(*cand, c2 * sizeof *a);
                    if (!a)
                        return ann_fail(-ENOMEM, "%s: merge: no memory", e->store_dir);
                    *cand = a;
                    *cand_cap = c2;
                }
                (*cand)[nc++] = (ann_cand){ ws_dist(w, u->vec, cn), c, 0 };
            }
        }
        if (rc)
            return rc;
        if (!touched)
            continue;
        /* ascending by (distance, id), as the build's candidate lists */
        ann_cand *cs = *cand;
        for (uint32_t i = 1; i < nc; i++) {
            ann_cand x = cs[i];
            uint32_t j = i;
            while (j > 0 && (cs[j - 1].dist > x.dist ||
                             (cs[j - 1].dist == x.dist && cs[j - 1].id > x.id))) {
                cs[j] = cs[j - 1];
                j--;
            }
            cs[j] = x;
        }
        list = w_list(w, u, l); /* ws_get may have grown the set, not moved u */
        list[0] = hnsw_select(&vs, cs, nc, l ? m->M : m->M0, list + 1);
        u->dirty = 1;
    }
    return 0;
}

int hnsw_merge(ann_engine *e)
{
    hnsw_live *L = &e->live;
    int rc = writable(e, "merge");
    if (rc)
        return rc;
    pthread_mutex_lock(&L->wlock);
    wset w;
    kv_txn *t = NULL;
    uint32_t *relink = NULL, *gone = NULL, n_relink = 0, n_gone = 0, cand_cap = 0;
    ann_cand *cand = NULL;
    int begun = 0;
    uint64_t packed = atomic_load(&L->entry);
    uint32_t entry = (uint32_t)packed;
    rc = ws_init(&w, e);
    if (rc || atomic_load(&L->deleted) == 0)
        goto out;
    rc = kv_reader_begin(L->wrd);
    if (rc)
        goto out;
    begun = 1;
    rc = scan_nodes(&w, entry, &relink, &n_relink, &gone, &n_gone);
    for (uint32_t i = 0; i < n_relink && !rc; i++)
        rc = relink_node(&w, relink[i], entry, &cand, &cand_cap);
    kv_reader_end(L->wrd);
    begun = 0;
    if (rc || (n_gone == 0 && n_relink == 0))
        goto out;
    hnsw_state st = { .entry = entry, .max_level = (uint32_t)(packed >> 32),
                      .id_bound = atomic_load(&L->id_bound),
                      .nodes = atomic_load(&L->nodes) - n_gone, .merges = L->merges + 1 };
    uint8_t key[KV_KEY_U32_BYTES];
    rc = kv_txn_begin(e->kv, &t);
    if (!rc)
        rc = ws_put_dirty(&w, t);
    for (uint32_t i = 0; i < n_gone && !rc; i++) {
        rc = kv_txn_delete(t, key, kv_key_u32(key, HNSW_TABLE_NODE, gone[i]));
        if (!rc)
            rc = kv_txn_delete(t, key, kv_key_u32(key, HNSW_TABLE_TOMBSTONE, gone[i]));
    }
    if (!rc)
        rc = put_state(t, &st);
    if (rc)
        goto out;
    rc = kv_txn_commit(t);
    t = NULL;
    if (rc)
        goto out;
    /* the removed ids keep their deleted bit: a search of an older
     * snapshot may still meet them; an insert of the id clears it */
    atomic_store(&L->nodes, st.nodes);
    atomic_fetch_sub(&L->deleted, n_gone);
    L->merges = st.merges;
out:
    if (begun)
        kv_reader_end(L->wrd);
    kv_txn_abort(t);
    ws_fini(&w);
    free(relink);
    free(gone);
    free(cand);
    pthread_mutex_unlock(&L->wlock);
    return rc;
}
