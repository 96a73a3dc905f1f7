/*
 * search.c: hnsw-record's search, K-NN-SEARCH of the HNSW paper (Malkov &
 * Yashunin, Algorithm 5) over node records: a greedy descent from the entry
 * point through the upper layers, then SEARCH-LAYER at layer 0 with
 * ef_search, the k best returned.
 *
 * Every node the search scores costs exactly one record read (kv_get): the
 * record carries the vector, scored at once, and the node's neighbour lists.
 * As an HNSW inside a key-value store would, the search keeps a node's
 * layer-0 list only while the node sits in the candidate list (a slot per
 * candidate, ef + 1 slots in the context), so expanding a candidate needs no
 * second read.  Distances are exact (full vectors), so the candidate list
 * is also the answer.  All scratch lives in the per-thread context; the hot
 * path allocates nothing of ours (RocksDB's C API allocates one small
 * wrapper per get, see kv.h).  A record that is missing or fails its checks
 * stops the search with ANN_ECORRUPT naming the store and the node.
 *
 * Live updates (insert.c): each query reads the entry point, max level and
 * id bound of the live state with its snapshot, so it walks one committed
 * graph; deleted nodes are walked through and never returned (the results
 * are then the best k live nodes scored, kept apart from the candidate
 * list).  An index that never had a delete returns the candidate list's
 * best k as before.
 *
 * Reads in flight (reads_in_flight W > 1): at layer 0 an expanded node's
 * unseen neighbours are known before any is read, so while one is scored
 * the next W - 1 node records are hinted to the store (kv_prefetch); the
 * upper-layer descent reads one at a time.
 *
 * Stats: reads and bytes_read are the node records read; full_dists equals
 * reads; hops counts candidates expanded (upper layers included).
 */
#include "engines/hnsw_record/hnsw.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/status.h"
#include "engines/hnsw_record/layout.h"
#include "engines/core/ticks.h"
#include "engines/core/topk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { COPY_LEVEL0, COPY_ALL };

/* Offset, in u32, of level l's list in a COPY_ALL buffer. */
static inline size_t all_off(const hnsw_meta *m, uint32_t l)
{
    return l == 0 ? 0 : (1 + (size_t)m->M0) + (size_t)(l - 1) * (1 + m->M);
}

/*
 * Read node id's record, score it against query into *d, and copy its
 * lists into dst: level 0 only (1 + M0 u32) or every level up to the
 * index's max level (levels above the node's own get count 0).
 */
static int score_node(ann_ctx *c, uint32_t id, const float *query, int copy, uint32_t *dst,
                      float *d, ann_stats *stats)
{
    const ann_engine *e = c->eng;
    const hnsw_meta *m = &c->m;
    uint8_t key[KV_KEY_U32_BYTES];
    kv_val val = { 0 };
    hnsw_node_view view;
    kv_key_u32(key, HNSW_TABLE_NODE, id);
    int rc = kv_get(c->rd, key, sizeof key, &val);
    if (rc == ANN_ENOTFOUND)
        return ann_fail(ANN_ECORRUPT, "%s: node %u record missing", e->store_dir, id);
    if (rc)
        return rc;
    stats->reads++;
    stats->bytes_read += val.len;
    rc = hnsw_node_parse(m, e->store_dir, id, val.data, val.len, &view);
    if (rc)
        goto out;
    memcpy(c->vec, view.vector, (size_t)m->dim * sizeof(float)); /* little-endian host */
    *d = ann_distance(m->metric, query, c->vec, m->dim);
    stats->full_dists++;
    uint32_t top = copy == COPY_ALL ? m->max_level : 0;
    for (uint32_t l = 0; l <= top; l++) {
        uint32_t *out = dst + all_off(m, l);
        if (l > view.level) {
            out[0] = 0;
            continue;
        }
        uint32_t count;
        const uint8_t *list = hnsw_node_list(&view, l, &count);
        out[0] = count;
        for (uint32_t j = 0; j < count; j++)
            out[1 + j] = ann_get_u32(list + 4 * (size_t)j);
    }
out:
    kv_val_release(&val);
    return rc;
}

/* Greedy descent through layers max_level..1; leaves the closest node found
 * in *cur / *cur_d with its lists in c->best_links. */
static int descend(ann_ctx *c, const float *query, uint32_t *cur, float *cur_d, ann_stats *stats)
{
    const hnsw_meta *m = &c->m;
    uint32_t *iter = c->slots; /* the slots are free until layer 0 */
    int rc = score_node(c, m->entry, query, COPY_ALL, c->best_links, cur_d, stats);
    if (rc)
        return rc;
    *cur = m->entry;
    ann_visited_test_and_set(&c->visited, m->entry);
    for (uint32_t l = m->max_level; l >= 1; l--) {
        int changed = 1;
        while (changed) {
            changed = 0;
            stats->hops++;
            const uint32_t *list = c->best_links + all_off(m, l);
            memcpy(iter, list, (1 + (size_t)list[0]) * sizeof(uint32_t));
            for (uint32_t j = 0; j < iter[0]; j++) {
                uint32_t nb = iter[1 + j];
                /* every node scored so far is no closer than *cur: skip it */
                if (ann_visited_test_and_set(&c->visited, nb))
                    continue;
                float d;
                rc = score_node(c, nb, query, COPY_ALL, c->tmp_links, &d, stats);
                if (rc)
                    return rc;
                if (d < *cur_d) {
                    uint32_t *t = c->best_links;
                    c->best_links = c->tmp_links;
                    c->tmp_links = t;
                    *cur = nb;
                    *cur_d = d;
                    changed = 1;
                }
            }
        }
    }
    return 0;
}

/* Take this query's snapshot and view of the live state (insert.c): the
 * entry point read before and after the snapshot is taken, and the whole
 * taken again when it moved meanwhile; the id bound after it. */
static int begin_query(ann_ctx *c)
{
    hnsw_live *L = &c->eng->live;
    uint64_t p;
    for (;;) {
        p = atomic_load(&L->entry);
        int rc = kv_reader_begin(c->rd);
        if (rc)
            return rc;
        if (atomic_load(&L->entry) == p)
            break;
        kv_reader_end(c->rd);
    }
    c->m = c->eng->meta;
    c->m.entry = (uint32_t)p;
    c->m.max_level = (uint32_t)(p >> 32);
    c->m.n = atomic_load(&L->id_bound);
    if (c->m.n > c->id_cap) { /* the index grew: the one allocation, amortised */
        uint64_t cap = c->m.n + c->m.n / 4;
        uint32_t *s = realloc(c->slot_of, cap * sizeof *s);
        if (!s || ann_visited_grow(&c->visited, cap) != 0) {
            if (s)
                c->slot_of = s;
            kv_reader_end(c->rd);
            return ann_fail(-ENOMEM, "hnsw-record: no memory for a context of %llu ids",
                            (unsigned long long)cap);
        }
        c->slot_of = s;
        c->id_cap = cap;
    }
    return 0;
}

int hnsw_search(ann_ctx *c, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats)
{
    const hnsw_meta *m = &c->m;
    const hnsw_live *L = &c->eng->live;
    uint64_t t0 = ann_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    int rc = 0, got = 0;
    if (k > c->k_max)
        k = c->k_max;
    if (k == 0)
        return 0;
    rc = begin_query(c);
    if (rc)
        return rc;
    if (m->entry == HNSW_NO_NODE)
        goto out; /* empty */
    /* deleted ids are passed through, never returned: the results are the
     * best k live ids scored (read after the snapshot: a remove marks its
     * id before it returns) */
    int filter = atomic_load(&L->any_dead);
    ann_topk res;
    ann_topk_init(&res, c->res_dist, c->res_id, k);
    ann_visited_reset(&c->visited);
    uint32_t cur;
    float cur_d;
    rc = descend(c, query, &cur, &cur_d, stats);
    if (rc)
        goto out;

    /* layer 0: SEARCH-LAYER with ef, candidates keeping their lists */
    const size_t stride = 1 + (size_t)m->M0;
    uint32_t *iter = c->tmp_links;
    ann_visited_reset(&c->visited);
    ann_candlist_reset_cap(&c->cands, c->ef);
    c->n_free = 0;
    for (uint32_t s = 0; s <= c->ef; s++)
        c->free_slots[c->n_free++] = s;
    uint32_t s0 = c->free_slots[--c->n_free];
    memcpy(c->slots + s0 * stride, c->best_links, stride * sizeof(uint32_t));
    c->slot_of[cur] = s0;
    ann_visited_test_and_set(&c->visited, cur);
    ann_candlist_insert(&c->cands, cur_d, cur);
    if (filter && !ann_idbits_test(&L->dead, cur))
        ann_topk_push(&res, cur_d, cur);
    int pos;
    while ((pos = ann_candlist_next(&c->cands)) >= 0) {
        stats->hops++;
        const uint32_t *list = c->slots + c->slot_of[c->cands.c[pos].id] * stride;
        /* the neighbours not seen yet, in list order, then scored with
         * W - 1 of them read ahead */
        uint32_t unseen = 0;
        for (uint32_t j = 0; j < list[0]; j++)
            if (!ann_visited_test_and_set(&c->visited, list[1 + j]))
                iter[unseen++] = list[1 + j];
        kv_ahead ahead;
        kv_ahead_init(&ahead, c->rd, HNSW_TABLE_NODE, iter, unseen, c->W);
        for (uint32_t j = 0; j < unseen; j++) {
            uint32_t nb = iter[j];
            kv_ahead_at(&ahead, j);
            uint32_t s = c->free_slots[--c->n_free];
            float d;
            rc = score_node(c, nb, query, COPY_LEVEL0, c->slots + s * stride, &d, stats);
            if (rc)
                goto out;
            if (filter && d < ann_topk_bound(&res) && !ann_idbits_test(&L->dead, nb))
                ann_topk_push(&res, d, nb);
            int full = c->cands.n == c->cands.cap;
            uint32_t worst = full ? c->cands.c[c->cands.n - 1].id : 0;
            if (ann_candlist_insert(&c->cands, d, nb) < 0) {
                c->free_slots[c->n_free++] = s;
                continue;
            }
            c->slot_of[nb] = s;
            if (full)
                c->free_slots[c->n_free++] = c->slot_of[worst];
        }
    }
    if (filter) {
        got = (int)ann_topk_sorted(&res, ids, dists);
    } else {
        got = (int)(c->cands.n < k ? c->cands.n : k);
        for (int i = 0; i < got; i++) {
            ids[i] = c->cands.c[i].id;
            dists[i] = c->cands.c[i].dist;
        }
    }
out:
    kv_reader_end(c->rd);
    stats->cpu_ns += ann_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    return rc ? rc : got;
}
