/*
 * search.c: DiskANN's greedy best-first walk (Algorithm 1 of Subramanya et
 * al., NeurIPS 2019) over node records in a key-value store, then a
 * re-rank of the best candidates with their full vectors.
 *
 * A candidate list of size L, ranked by PQ (ADC) distance, starts at the
 * medoid.  Each step expands the closest unexpanded candidate: one kv_get
 * of its node record, which carries its neighbour ids and (diskann-record)
 * their PQ codes, so every edge out of the node is ranked with that one
 * read; diskann-resident looks the codes up in the in-memory array by id.
 * The walk ends when every candidate in the list has been expanded, or
 * after max(4 L, 32) expansions, a bound that keeps a walk's cost fixed at
 * any corpus size.  Then the best candidates by PQ distance (all L by
 * default; `rerank` of them, at least k, when set) are read as full-vector
 * records and ranked exactly.
 *
 * Beam (beam_width W > 1, DiskANN's beam search): each round takes the W
 * closest unexpanded candidates, hints all their node records to the store
 * at once (kv_prefetch: LMDB readahead, RocksDB helper threads) so the
 * device reads them in parallel, then expands them in order; the re-rank
 * keeps W vector reads in flight the same way.  W = 1 is the one-read-at-
 * a-time walk above, unchanged.  search_mode "pipeline" drops the round
 * barrier: up to W node records stay in flight, the oldest expanded next
 * and a new candidate hinted after each expansion (walk_pipeline).  With
 * vector_ahead, a candidate expanded within the re-rank depth has its
 * vector record hinted with its node record, so the re-rank reads overlap
 * the walk (a candidate's position only grows, so one expanded below the
 * depth is never re-ranked).  Hints never change what a search returns.
 *
 * Departure from DiskANN: full vectors are separate records read only for
 * the re-rank (a sector engine gets them with the node for free), so the
 * re-rank depth is a search parameter rather than "all of L".  Indexes
 * below DREC_SCAN_BELOW vectors are an exact scan of the vector records:
 * a version-2 one reads ids 0..n-1; an untrained version-3 one (live
 * build, layout.h) iterates the vector records of its snapshot, skipping
 * deleted ids (at most DREC_SCAN_BELOW - 1 live rows; the iterator is the
 * one allocation of such a query).
 *
 * Live updates (live.c): after the walk, every pending insert's PQ code
 * (table 0x04, read with an iterator in the query's snapshot) is offered
 * to the candidate list, so the re-rank ranks pending and graph
 * candidates together; deleted ids are walked through but never re-ranked
 * or returned, and the re-rank depth counts live candidates only.
 *
 * Statistics of one query (added to *stats):
 *   reads       kv gets: node records + vector records
 *   hops        node records read (= nodes expanded); vector-record reads
 *               are reads - hops
 *   bytes_read  value bytes of all those gets
 *   code_dists  PQ distances computed (one per newly seen neighbour and
 *               one per pending code; pending code bytes are in bytes_read)
 *   full_dists  full-vector distances (re-rank, or scan)
 *   cache_hits  RocksDB block-cache hits (0 for LMDB, which has no cache)
 *   io_wait_ns  wall time spent inside kv_get
 *   cpu_ns      thread CPU time of the whole query
 * Nothing is allocated; a failed or missing read ends the query with an
 * error (ANN_ECORRUPT naming the node for a missing or malformed record).
 */
#include "engines/diskann_record/drec.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/status.h"
#include "engines/core/topk.h"
#include "engines/core/ticks.h"

#include <errno.h>
#include <string.h>
#include <time.h>

typedef struct drec_query {
    ann_ctx *ctx;
    const float *query;
    uint32_t bound; /* every id this query's snapshot holds is below it */
    /* the shared pending copy as it stood before the snapshot: complete,
     * and its slots (mapped while the query is counted in pc_active; every
     * row below pc_tail was committed before the snapshot) */
    int pc_complete;
    uint64_t pc_head, pc_tail;
    /* pending inserts to score: the count read before the snapshot (a merge
     * that linked one commits before it lowers the count: read earlier, a
     * vector pending in the snapshot is counted) or after it (an insert
     * raises the count before its commit: a record the snapshot holds is
     * counted) */
    int any_pending;
    int bounded_adc; /* the table's entries are >= 0 (pq_table_nonneg) */
    ann_stats local;
} drec_query;

/* kv_get with the query's accounting; a missing record is corruption. */
static int get_record(drec_query *q, uint8_t table, uint32_t id, kv_val *val)
{
    ann_ctx *c = q->ctx;
    uint8_t key[KV_KEY_U32_BYTES];
    size_t klen = kv_key_u32(key, table, id);
    uint64_t t0 = ann_clock_ns(CLOCK_MONOTONIC);
    int rc = kv_get(c->rd, key, klen, val);
    q->local.io_wait_ns += ann_clock_ns(CLOCK_MONOTONIC) - t0;
    if (rc == ANN_ENOTFOUND)
        return ann_fail(ANN_ECORRUPT, "%s: %s %u: record missing", c->eng->store_dir,
                        table == DREC_TABLE_NODE ? "node" : "vector", id);
    if (rc)
        return rc;
    q->local.reads++;
    q->local.bytes_read += val->len;
    return 0;
}

/* Exact distance of vector record id to the query. */
static int full_distance(drec_query *q, uint32_t id, float *out)
{
    ann_ctx *c = q->ctx;
    const ann_engine *e = c->eng;
    kv_val v = { 0 };
    int rc = get_record(q, DREC_TABLE_VECTOR, id, &v);
    if (rc)
        return rc;
    if (v.len != (size_t)e->meta.dim * sizeof(float)) {
        rc = ann_fail(ANN_ECORRUPT, "%s: vector %u: record length %zu, expected %zu",
                      e->store_dir, id, v.len, (size_t)e->meta.dim * sizeof(float));
        goto out;
    }
    const float *x = c->vec;
    if (ann_host_le())
        x = v.data; /* kernels read unaligned data */
    else
        for (uint32_t j = 0; j < e->meta.dim; j++)
            c->vec[j] = ann_get_f32((const uint8_t *)v.data + 4 * (size_t)j);
    *out = ann_distance((ann_metric)e->meta.metric, q->query, x, e->meta.dim);
    q->local.full_dists++;
out:
    kv_val_release(&v);
    return rc;
}

/* An untrained index (version 3): every vector record of the snapshot,
 * deleted ids skipped. */
static int scan_live(drec_query *q, ann_topk *top)
{
    ann_ctx *c = q->ctx;
    const ann_engine *e = c->eng;
    const size_t row = (size_t)e->meta.dim * sizeof(float);
    uint8_t prefix = DREC_TABLE_VECTOR;
    kv_iter *it = NULL;
    kv_val k, v;
    int rc = kv_iter_create(c->rd, &prefix, 1, &it), step;
    if (rc)
        return rc;
    while ((step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t id = 0;
        if (kv_key_parse_u32(k.data, k.len, NULL, &id) != 0 || v.len != row) {
            rc = ann_fail(ANN_ECORRUPT, "%s: vector %u: key length %zu, record length %zu, "
                          "expected %zu", e->store_dir, id, k.len, v.len, row);
            break;
        }
        q->local.reads++;
        q->local.bytes_read += v.len;
        if (ann_idbits_test(&e->live.dead, id))
            continue;
        const float *x = c->vec;
        if (ann_host_le())
            x = v.data;
        else
            for (uint32_t j = 0; j < e->meta.dim; j++)
                c->vec[j] = ann_get_f32((const uint8_t *)v.data + 4 * (size_t)j);
        float d = ann_distance((ann_metric)e->meta.metric, q->query, x, e->meta.dim);
        q->local.full_dists++;
        if (d < ann_topk_bound(top))
            ann_topk_push(top, d, id);
    }
    if (step < 0)
        rc = step;
    kv_iter_destroy(it);
    return rc;
}

static int scan(drec_query *q, ann_topk *top)
{
    const ann_engine *e = q->ctx->eng;
    if (e->meta.version != DREC_VERSION_GRAPH)
        return scan_live(q, top);
    for (uint32_t id = 0; id < e->meta.n; id++) {
        float d;
        int rc = full_distance(q, id, &d);
        if (rc)
            return rc;
        if (d < ann_topk_bound(top))
            ann_topk_push(top, d, id);
    }
    return 0;
}

/* Expand node id: read its record and rank its unseen neighbours. */
static int expand(drec_query *q, uint32_t id)
{
    ann_ctx *c = q->ctx;
    const ann_engine *e = c->eng;
    const uint32_t m = e->meta.pq_bytes, layout = e->meta.layout;
    kv_val v = { 0 };
    int rc = get_record(q, DREC_TABLE_NODE, id, &v);
    if (rc)
        return rc;
    q->local.hops++;
    const uint8_t *rec = v.data;
    size_t head = layout == DREC_LAYOUT_FULL ? m : 0;
    if (v.len < head + 4) {
        rc = ann_fail(ANN_ECORRUPT, "%s: node %u: record length %zu, shorter than its header",
                      e->store_dir, id, v.len);
        goto out;
    }
    uint32_t d = ann_get_u32(rec + head);
    if (d > drec_max_degree(e->meta.R) || v.len != drec_node_bytes(layout, m, d)) {
        rc = ann_fail(ANN_ECORRUPT, "%s: node %u: record length %zu does not match degree %u",
                      e->store_dir, id, v.len, d);
        goto out;
    }
    const uint8_t *ids = rec + head + 4;
    const uint8_t *rec_codes = ids + 4 * (size_t)d;
    for (uint32_t i = 0; i < d; i++) {
        uint32_t u = ann_get_u32(ids + 4 * (size_t)i);
        if (u >= q->bound || u == id) {
            rc = ann_fail(ANN_ECORRUPT, "%s: node %u: neighbour %u invalid (n %llu)",
                          e->store_dir, id, u, (unsigned long long)q->bound);
            goto out;
        }
        if (ann_visited_test_and_set(&c->visited, u))
            continue;
        const uint8_t *code =
            layout == DREC_LAYOUT_FULL ? rec_codes + (size_t)i * m : drec_resident_code(e, u);
        if (!code) {
            rc = ann_fail(ANN_ECORRUPT, "%s: node %u: neighbour %u has no PQ code in memory",
                          e->store_dir, id, u);
            goto out;
        }
        /* a code that cannot enter the full list is dropped part-summed */
        float dist = q->bounded_adc ? pq_adc_distance_bounded(c->table, code, m,
                                                              ann_candlist_bound(&c->cand))
                                    : pq_adc_distance(c->table, code, m);
        q->local.code_dists++;
        ann_candlist_insert(&c->cand, dist, u);
    }
out:
    kv_val_release(&v);
    return rc;
}

/*
 * Score every pending insert (table 0x04 of this query's snapshot) by its
 * PQ code and offer it to the candidate list, so the re-rank ranks
 * pending and graph candidates together.  The scan runs after the walk, so
 * the list is usually full: under the L2 and cosine tables a code stops
 * being summed once its partial sum, plus the least its other subspaces can
 * add (the table's floor), passes the list's worst
 * (pq_adc_distance_floored), and only a code that could enter is checked
 * against the deleted and visited ids.  The list takes the same
 * candidates as with every code summed in full.  A pending id already in
 * the list is one a merge linked meanwhile (snapshots make that
 * impossible; the visited map makes it harmless).  Deleted ids are not
 * offered.
 */
static void offer_pending_strided(drec_query *q, uint32_t id, const uint8_t *code, size_t stride)
{
    ann_ctx *c = q->ctx;
    const ann_engine *e = c->eng;
    const uint32_t m = e->meta.pq_bytes;
    if (id >= q->bound)
        return;
    q->local.code_dists++;
    const float bound = ann_candlist_bound(&c->cand);
    float dist = q->bounded_adc
                     ? pq_adc_distance_floored_strided(c->table, code, stride, m, bound, c->floor)
                     : pq_adc_distance_floored_strided(c->table, code, stride, m,
                                                       __builtin_inff(), NULL);
    if (dist > bound || ann_idbits_test(&e->live.dead, id) ||
        ann_visited_test_and_set(&c->visited, id))
        return;
    ann_candlist_insert(&c->cand, dist, id);
}

static void offer_pending(drec_query *q, uint32_t id, const uint8_t *code)
{
    offer_pending_strided(q, id, code, 1);
}

/* Slots [from, to) of the shared copy, one by one. */
static void score_pending_rows(drec_query *q, uint64_t from, uint64_t to)
{
    const drec_live *L = &q->ctx->eng->live;
    for (uint64_t s = from; s < to; s++) {
        const uint8_t *row = ann_idrows_get(&L->pc_rows, (uint32_t)s);
        if (row)
            offer_pending(q, ann_get_u32(row), row + 4);
    }
}

/*
 * The shared in-memory copy (drec.h), when it holds every pending insert;
 * 1 when it did, 0 to scan the store instead.  With pc_lb, a table of
 * entries >= 0 and at least PQ_LB_MIN_PENDING codes, the whole blocks go
 * through the byte-table filter (pq_lb.h) against the list's worst as it
 * stands at each block, and only the lanes it passes are offered, summed
 * from the block (the same sums, so the same bits): the filter passes
 * every code the list could take, so the list ends as without it.
 */
/* below it, building the byte table (two passes over the m * 256 float
 * entries, once a query) costs about what the filter saves */
#define PQ_LB_MIN_PENDING 1024u
static int score_pending_copy(drec_query *q)
{
    ann_ctx *c = q->ctx;
    const drec_live *L = &c->eng->live;
    const uint32_t m = c->eng->meta.pq_bytes;
    if (!q->pc_complete)
        return 0;
    const uint64_t head = q->pc_head, tail = q->pc_tail;
    /* the whole blocks [b0, b1) */
    const uint64_t b0 = (head + PQ_LB_LANES - 1) / PQ_LB_LANES, b1 = tail / PQ_LB_LANES;
    if (!L->pc_lb || !q->bounded_adc || tail - head < PQ_LB_MIN_PENDING || b0 >= b1) {
        score_pending_rows(q, head, tail);
        return 1;
    }
    pq_lb lb;
    pq_lb_build(c->table, m, c->lbq, &lb);
    score_pending_rows(q, head, b0 * PQ_LB_LANES);
    for (uint64_t b = b0; b < b1; b++) {
        /* a block spanning two pages of pc_blocks is copied whole; a
         * missing page (out of memory at an insert) leaves the rows */
        const uint8_t *blk = ann_idrows_run(&L->pc_blocks, (uint32_t)(b * m), m, c->lbblk);
        if (!blk) {
            score_pending_rows(q, b * PQ_LB_LANES, (b + 1) * PQ_LB_LANES);
            continue;
        }
        uint64_t lanes = pq_lb_block(&lb, blk, pq_lb_limit(&lb, ann_candlist_bound(&c->cand)));
        q->local.code_dists += PQ_LB_LANES - (uint64_t)__builtin_popcountll(lanes);
        for (; lanes; lanes &= lanes - 1) {
            const uint32_t lane = (uint32_t)__builtin_ctzll(lanes);
            const uint8_t *row = ann_idrows_get(&L->pc_rows, (uint32_t)(b * PQ_LB_LANES + lane));
            if (row)
                offer_pending_strided(q, ann_get_u32(row), blk + pq_lb_pos(lane), PQ_LB_LANES);
        }
    }
    score_pending_rows(q, b1 * PQ_LB_LANES, tail);
    return 1;
}

static int score_pending(drec_query *q)
{
    ann_ctx *c = q->ctx;
    const ann_engine *e = c->eng;
    const uint32_t m = e->meta.pq_bytes;
    if (score_pending_copy(q))
        return 0;
    uint8_t prefix = DREC_TABLE_PENDING;
    kv_iter *it = NULL;
    kv_val k, v;
    int rc = kv_iter_create(c->rd, &prefix, 1, &it), step;
    if (rc)
        return rc;
    while ((step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t id;
        if (kv_key_parse_u32(k.data, k.len, NULL, &id) != 0 || v.len != m || id >= q->bound) {
            rc = ann_fail(ANN_ECORRUPT, "%s: pending record %u: key length %zu, value %zu bytes "
                          "(expected %u)", e->store_dir, id, k.len, v.len, m);
            break;
        }
        q->local.bytes_read += v.len;
        offer_pending(q, id, v.data);
    }
    if (step < 0)
        rc = step;
    kv_iter_destroy(it);
    return rc;
}

/* DiskANN's rounds (search_mode "round"): each takes the W closest
 * unexpanded candidates, reads the first and hints the rest, and expands
 * them all before the next round picks. */
static int walk_rounds(drec_query *q, uint32_t max_expand, uint32_t depth)
{
    ann_ctx *c = q->ctx;
    for (uint32_t expanded = 0; expanded < max_expand;) {
        uint32_t beam[DREC_MAX_BEAM], nb = 0;
        uint32_t vec_ids[DREC_MAX_BEAM], nv = 0;
        while (nb < c->W && expanded + nb < max_expand) {
            int pos = ann_candlist_next(&c->cand);
            if (pos < 0)
                break;
            beam[nb++] = c->cand.c[pos].id;
            /* a candidate only moves down the list: one expanded below the
             * re-rank depth is never re-ranked */
            if (c->vector_ahead && (uint32_t)pos < depth)
                vec_ids[nv++] = c->cand.c[pos].id;
        }
        if (nb == 0)
            break;
        kv_ahead ahead; /* the first is read now, the rest hinted */
        kv_ahead_init(&ahead, c->rd, DREC_TABLE_NODE, beam, nb, nb);
        kv_ahead_at(&ahead, 0);
        if (nv > 0) /* behind the node records */
            kv_prefetch_u32(c->rd, DREC_TABLE_VECTOR, vec_ids, nv);
        for (uint32_t i = 0; i < nb; i++) {
            int rc = expand(q, beam[i]);
            if (rc)
                return rc;
        }
        expanded += nb;
    }
    return 0;
}

/*
 * The walk without rounds (search_mode "pipeline"): up to W node records
 * in flight, oldest first.  Each step tops the in-flight set up with the
 * closest unexpanded candidates (hinting their records, and with
 * vector_ahead their vectors when within the re-rank depth), then expands
 * the oldest, whose read was hinted longest ago.  A candidate picked is
 * expanded even if better ones push it out of the list meanwhile.  The
 * same bound on expansions as the rounds.
 */
static int walk_pipeline(drec_query *q, uint32_t max_expand, uint32_t depth)
{
    ann_ctx *c = q->ctx;
    uint32_t ring[DREC_MAX_BEAM], head = 0, cnt = 0, picked = 0;
    for (;;) {
        uint32_t fresh[DREC_MAX_BEAM], nf = 0, vec_ids[DREC_MAX_BEAM], nv = 0;
        while (cnt < c->W && picked < max_expand) {
            int pos = ann_candlist_next(&c->cand);
            if (pos < 0)
                break;
            uint32_t id = c->cand.c[pos].id;
            ring[(head + cnt) % c->W] = id;
            if (cnt > 0) /* not the one read right away */
                fresh[nf++] = id;
            if (c->vector_ahead && (uint32_t)pos < depth)
                vec_ids[nv++] = id;
            cnt++;
            picked++;
        }
        if (cnt == 0)
            return 0;
        if (nf > 0)
            kv_prefetch_u32(c->rd, DREC_TABLE_NODE, fresh, nf);
        if (nv > 0)
            kv_prefetch_u32(c->rd, DREC_TABLE_VECTOR, vec_ids, nv);
        uint32_t id = ring[head];
        head = (head + 1) % c->W;
        cnt--;
        int rc = expand(q, id);
        if (rc)
            return rc;
    }
}

/* How many of the best live candidates the re-rank reads: all L by
 * default, else `rerank` of them, at least k. */
static uint32_t rerank_depth(const ann_ctx *c, uint32_t k, uint32_t L)
{
    return c->rerank == 0 ? L : c->rerank > k ? c->rerank : k;
}

static int walk_and_rerank(drec_query *q, uint32_t k, ann_topk *top)
{
    ann_ctx *c = q->ctx;
    const ann_engine *e = c->eng;
    const uint32_t m = e->meta.pq_bytes;
    uint32_t L = c->L > k ? c->L : k;
    uint32_t max_expand = 4 * L > 32 ? 4 * L : 32;

    pq_table_compute(e->pq, q->query, c->table);
    q->bounded_adc = pq_table_nonneg(e->pq);
    ann_visited_reset(&c->visited);
    ann_candlist_reset_cap(&c->cand, L);
    uint32_t entry = e->meta.medoid;
    const uint8_t *entry_code =
        e->meta.layout == DREC_LAYOUT_FULL ? e->meta.medoid_code : drec_resident_code(e, entry);
    ann_visited_test_and_set(&c->visited, entry);
    ann_candlist_insert(&c->cand, pq_adc_distance(c->table, entry_code, m), entry);
    q->local.code_dists++;

    const uint32_t depth = rerank_depth(c, k, L);
    int rc = c->pipeline ? walk_pipeline(q, max_expand, depth) : walk_rounds(q, max_expand, depth);
    if (rc)
        return rc;

    if (q->any_pending) {
        if (q->bounded_adc)
            pq_table_floor(c->table, m, c->floor);
        rc = score_pending(q);
        if (rc)
            return rc;
    }

    /* re-rank the best `depth` live candidates, graph and pending alike;
     * deleted ones (still walked through until a merge) are skipped */
    const int any_dead = atomic_load(&e->live.deleted) > 0;
    uint32_t nr = 0;
    for (uint32_t i = 0; i < c->cand.n && nr < depth; i++) {
        uint32_t id = c->cand.c[i].id;
        if (!(any_dead && ann_idbits_test(&e->live.dead, id)))
            c->rr[nr++] = id;
    }
    /* with a beam, W - 1 reads ahead of the one being ranked are in flight */
    kv_ahead ahead;
    kv_ahead_init(&ahead, c->rd, DREC_TABLE_VECTOR, c->rr, nr, c->W);
    for (uint32_t i = 0; i < nr; i++) {
        kv_ahead_at(&ahead, i);
        float d;
        rc = full_distance(q, c->rr[i], &d);
        if (rc)
            return rc;
        if (d < ann_topk_bound(top))
            ann_topk_push(top, d, c->rr[i]);
    }
    return 0;
}

int drec_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats)
{
    const ann_engine *e = ctx->eng;
    uint64_t cpu0 = ann_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    drec_query q = { .ctx = ctx, .query = query };
    kv_stats kv0, kv1;
    ann_topk top;
    int rc = 0, began = 0, counted = 0;
    uint32_t mode;
    drec_live *L = &ctx->eng->live;
    if (k > ctx->k_max)
        k = ctx->k_max;
    ann_topk_init(&top, ctx->top_dist, ctx->top_id, k);
    if (k == 0)
        goto out;
    /* once, before the snapshot (drec.h: a graph seen is committed) */
    mode = drec_mode(e);
    kv_reader_stats(ctx->rd, &kv0);
    atomic_fetch_add(&L->pc_active, 1);
    counted = 1;
    q.pc_complete = atomic_load(&L->pc_complete);
    q.pc_head = atomic_load(&L->pc_head);
    q.pc_tail = atomic_load(&L->pc_tail); /* rows appended after their commits */
    q.any_pending = atomic_load(&L->pending) > 0;
    rc = kv_reader_begin(ctx->rd);
    if (rc)
        goto out;
    began = 1;
    q.any_pending |= atomic_load(&L->pending) > 0;
    /* after the snapshot: it holds no id at or above this bound */
    q.bound = atomic_load(&e->live.id_bound);
    if (mode == DREC_MODE_GRAPH && ann_visited_grow(&ctx->visited, q.bound) != 0) {
        rc = ann_fail(-ENOMEM, "%s: no memory for a visited map of %u ids", e->store_dir,
                      q.bound);
        goto out;
    }
    rc = mode == DREC_MODE_SCAN ? scan(&q, &top) : walk_and_rerank(&q, k, &top);
out:
    if (began) {
        kv_reader_end(ctx->rd);
        kv_reader_stats(ctx->rd, &kv1);
        q.local.cache_hits += kv1.cache_hits - kv0.cache_hits;
    }
    if (counted)
        atomic_fetch_sub(&L->pc_active, 1);
    uint32_t got = ann_topk_sorted(&top, ids, dists);
    q.local.cpu_ns = ann_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    stats->reads += q.local.reads;
    stats->bytes_read += q.local.bytes_read;
    stats->hops += q.local.hops;
    stats->full_dists += q.local.full_dists;
    stats->code_dists += q.local.code_dists;
    stats->cache_hits += q.local.cache_hits;
    stats->io_wait_ns += q.local.io_wait_ns;
    stats->cpu_ns += q.local.cpu_ns;
    return rc ? rc : (int)got;
}
