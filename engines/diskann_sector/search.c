/*
 * search.c: DiskANN's beam search over the sector file (Subramanya et al.,
 * NeurIPS 2019, section 3.3 "beam search"), in two schedules.
 *
 * Per query: a PQ distance table; a candidate list of L entries ranked by
 * PQ distance, seeded with the medoid; a visited map.  Expanding a node
 * computes its exact distance from the vector stored in its sector (the
 * final ranking uses only these exact distances) and inserts its unvisited
 * neighbours into the list with their PQ distances.  A node in the BFS
 * cache is expanded from RAM without a read.  The search stops when no
 * unexpanded candidate is left among the best L and no read is in flight.
 *
 * search_mode "round" (DiskANN's schedule): each round takes the (up to) W
 * closest unexpanded candidates, submits one read per node not cached,
 * expands the cached ones while those reads are in flight, then expands
 * each read node as its completion arrives; the next round starts when the
 * whole beam is back.  hops counts rounds.
 *
 * search_mode "pipeline" (after PipeANN, Guo et al., OSDI 2025): no
 * barrier.  Up to w reads are kept in flight; each completion is expanded
 * at once and the freed slot goes straight to the closest unexpanded
 * candidate, chosen with everything expanded so far.  With adaptive_beam
 * the width w starts at DSEC_BEAM_START and grows by one, up to W, after
 * each expansion that put at least one neighbour into the list: the first
 * hops from the medoid, where the list is poor and speculative reads are
 * mostly wasted, run narrow; once the search is feeding the list it runs
 * at full width.  While reads are in flight the thread expands cached
 * candidates among the next W unexpanded places of the list (free work a
 * round of W would also have done; without it the pipeline walks the cache
 * one best candidate at a time and reads more).  Free slots are refilled in
 * submissions of at most submit_group reads (default: all of them in one):
 * on the VM this was measured on, a submission costs 35-50 us of blocking
 * time whatever it carries (it notifies the virtual device), about half that
 * while the device still has reads in flight, and the completions of one
 * submission arrive together, so a refill per completion (PipeANN's rule on
 * NVMe) would pay that cost per read; a group smaller than the free slots
 * sends the rest in further submissions while the first is in flight
 * (bench_aio measures both effects).  hops counts the times the thread had
 * to sleep for a completion.
 *
 * Stage times (ann_stats.stage_ns, every stage of ann_stage) are taken with
 * ticks.h's clock at each stage boundary, so the stages do not overlap and
 * their sum is the query's time less the few instructions between laps.
 *
 * Everything a node carries is untrusted: degree beyond R, a neighbour id
 * not below n, a non-finite vector or a read that comes back short is
 * ANN_ECORRUPT naming the file and the node, never a skipped node.  Nothing
 * is allocated per query; all scratch lives in the context.
 */
#include "engines/diskann_sector/dsec.h"

#include "engines/core/binio.h"
#include "engines/core/crc32c.h"
#include "engines/core/distance.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
#include "engines/core/topk.h"

#include <math.h>
#include <string.h>
#include <time.h>

int dsec_node_decode(const ann_engine *e, uint32_t id, const uint8_t *rec, float *vec,
                     uint32_t *nbrs)
{
    const dsec_header *h = &e->h;
    size_t vec_bytes = (size_t)h->dim * sizeof(float);
    if (vec)
        memcpy(vec, rec, vec_bytes); /* little-endian host, checked at open */
    uint32_t deg = ann_get_u32(rec + vec_bytes);
    if (deg > h->R)
        return ann_fail(ANN_ECORRUPT, "%s: node %u: degree %u exceeds R %u", e->path, id, deg,
                        h->R);
    memcpy(nbrs, rec + vec_bytes + 4, (size_t)deg * sizeof(uint32_t));
    for (uint32_t i = 0; i < deg; i++)
        if (nbrs[i] >= h->n)
            return ann_fail(ANN_ECORRUPT, "%s: node %u: neighbour %u is %u, not below n %llu",
                            e->path, id, i, nbrs[i], (unsigned long long)h->n);
    /* the whole record against index.sums, before anything in it is used
     * (records in the BFS cache were checked when it was filled) */
    int in_cache = e->cache_recs && rec >= e->cache_recs &&
                   rec < e->cache_recs + (size_t)e->cache_count * h->node_bytes;
    if (e->sums && !in_cache) {
        uint32_t got = ann_checksum(rec, h->node_bytes);
        if (got != e->sums[id])
            return ann_fail(ANN_ECORRUPT, "%s: node %u: checksum 0x%08x, %s records 0x%08x (the "
                                          "record is corrupt)",
                            e->path, id, got, DSEC_SUMS_FILE, e->sums[id]);
    }
    return (int)deg;
}

/* One query's working state. */
typedef struct query {
    ann_ctx *c;
    const float *q;
    ann_topk top;
    ann_stats st;
    uint64_t tk[ANN_STAGE_COUNT]; /* ticks per stage */
    uint64_t t;                   /* start of the stage being timed */
} query;

static inline void lap(query *s, ann_stage stage)
{
    s->t = ann_ticks_lap(s->tk, stage, s->t);
}

/* Expand node id from its record: exact distance, then its neighbours.
 * Returns how many neighbours entered the candidate list, or an error. */
static int expand(query *s, uint32_t id, const uint8_t *rec)
{
    ann_ctx *c = s->c;
    const ann_engine *e = c->eng;
    lap(s, ANN_STAGE_CANDLIST);
    int deg = dsec_node_decode(e, id, rec, NULL, c->nbrs);
    lap(s, ANN_STAGE_DECODE);
    if (deg < 0)
        return deg;
    /* the vector in place: records are 4-byte aligned in their buffer
     * (sector-aligned buffers, node_bytes a multiple of 4) */
    float d = ann_distance(e->metric, s->q, (const float *)(const void *)rec, e->h.dim);
    s->st.full_dists++;
    lap(s, ANN_STAGE_FULL_DIST);
    if (!isfinite(d))
        return ann_fail(ANN_ECORRUPT, "%s: node %u: vector is not finite", e->path, id);
    ann_topk_push(&s->top, d, id);
    uint32_t nfresh = 0;
    for (int i = 0; i < deg; i++)
        if (!ann_visited_test_and_set(&c->visited, c->nbrs[i]))
            c->fresh[nfresh++] = c->nbrs[i];
    lap(s, ANN_STAGE_CANDLIST);
    if (nfresh == 0)
        return 0;
    pq_adc_gather(c->table, e->pq->m, e->codes, c->fresh, nfresh, c->fresh_dist);
    s->st.code_dists += nfresh;
    lap(s, ANN_STAGE_ADC);
    int entered = 0;
    for (uint32_t i = 0; i < nfresh; i++)
        entered += ann_candlist_insert(&c->cl, c->fresh_dist[i], c->fresh[i]) >= 0;
    lap(s, ANN_STAGE_CANDLIST);
    return entered;
}

/* Take every completion still in flight (after an error), ignoring them. */
static void drain(ann_ctx *c)
{
    while (ann_aio_inflight(c->q) > 0)
        if (ann_aio_reap(c->q, ann_aio_inflight(c->q), c->done, c->W) <= 0)
            break;
}

/* Check one completed read and expand its node; returns expand's count. */
static int complete(query *s, const ann_aio_req *r)
{
    const ann_engine *e = s->c->eng;
    uint32_t id = (uint32_t)r->user;
    if (r->result < 0)
        return ann_fail(r->result, "%s: node %u: read failed: %s", e->path, id,
                        ann_strerror(r->result));
    if ((uint32_t)r->result < r->len_bytes)
        return ann_fail(ANN_ECORRUPT, "%s: node %u: truncated (read %d of %u bytes)", e->path, id,
                        r->result, r->len_bytes);
    s->st.bytes_read += (uint64_t)r->result;
    return expand(s, id, (const uint8_t *)r->buf + dsec_node_offset(&e->h, id));
}

/* Is v in the BFS cache?  Then expand it from RAM. */
static inline int cached(const ann_engine *e, uint32_t v)
{
    return e->cache_slot && e->cache_slot[v] >= 0;
}

static int expand_cached(query *s, uint32_t v)
{
    const ann_engine *e = s->c->eng;
    s->st.cache_hits++;
    return expand(s, v, e->cache_recs + (size_t)e->cache_slot[v] * e->h.node_bytes);
}

/* io mmap: a read is the record's place in the mapping (the page is
 * faulted in, from the page cache or the device, when decode touches it). */
static int expand_mapped(query *s, uint32_t v)
{
    const ann_engine *e = s->c->eng;
    s->st.reads++;
    s->st.bytes_read += e->read_bytes;
    return expand(s, v,
                  e->map + dsec_node_sector(&e->h, v) * DSEC_SECTOR_BYTES +
                      dsec_node_offset(&e->h, v));
}

/* A node of the round or pipeline that needs no queued read: cached or
 * mapped.  Returns expand's count, or 0 with *queued = 1 for a real read. */
static int expand_now(query *s, uint32_t v, int *queued)
{
    const ann_engine *e = s->c->eng;
    *queued = 0;
    if (cached(e, v))
        return expand_cached(s, v);
    if (e->map)
        return expand_mapped(s, v);
    *queued = 1;
    return 0;
}

/* Point request slot at node v's sector(s). */
static inline ann_aio_req *prepare(ann_ctx *c, uint32_t slot, uint32_t v)
{
    const ann_engine *e = c->eng;
    ann_aio_req *r = &c->reqs[slot];
    r->buf = c->bufs + (size_t)slot * e->read_bytes;
    r->offset_bytes = dsec_node_sector(&e->h, v) * DSEC_SECTOR_BYTES;
    r->len_bytes = e->read_bytes;
    r->user = v;
    return r;
}

/* Collect completions: those ready now, else wait for one (a hop in
 * pipeline mode).  Returns the count or an error. */
static int collect(query *s, int count_hops)
{
    ann_ctx *c = s->c;
    lap(s, ANN_STAGE_CANDLIST);
    int got = ann_aio_reap(c->q, 0, c->done, c->W);
    if (got == 0) {
        uint64_t t0 = ann_clock_ns(CLOCK_MONOTONIC);
        got = ann_aio_reap(c->q, 1, c->done, c->W);
        s->st.io_wait_ns += ann_clock_ns(CLOCK_MONOTONIC) - t0;
        if (count_hops)
            s->st.hops++;
    }
    lap(s, ANN_STAGE_IO_WAIT);
    return got;
}

static int search_rounds(query *s)
{
    ann_ctx *c = s->c;
    const ann_engine *e = c->eng;
    for (;;) {
        uint32_t nsel = 0;
        while (nsel < c->W) {
            int pos = ann_candlist_next(&c->cl);
            if (pos < 0)
                break;
            c->sel[nsel++] = c->cl.c[pos].id;
        }
        if (nsel == 0)
            return 0;
        s->st.hops++;
        /* Reads first, so they are in flight while cached nodes are expanded. */
        uint32_t nio = 0;
        for (uint32_t i = 0; i < nsel; i++)
            if (!cached(e, c->sel[i]) && !e->map) {
                c->req_ptrs[nio] = prepare(c, nio, c->sel[i]);
                nio++;
            }
        lap(s, ANN_STAGE_CANDLIST);
        if (nio) {
            int rc = ann_aio_submit(c->q, c->req_ptrs, nio);
            lap(s, ANN_STAGE_IO_SUBMIT);
            if (rc)
                return rc;
            s->st.reads += nio;
        }
        for (uint32_t i = 0; i < nsel; i++) {
            int queued;
            int rc = expand_now(s, c->sel[i], &queued);
            if (rc < 0)
                return rc;
        }
        /* Expand each node the moment its read completes. */
        for (uint32_t pending = nio; pending > 0;) {
            int got = collect(s, 0);
            if (got < 0)
                return got;
            pending -= (uint32_t)got;
            for (int i = 0; i < got; i++) {
                int rc = complete(s, c->done[i]);
                if (rc < 0)
                    return rc;
            }
        }
    }
}

/* Expand up to max cached, unexpanded candidates among the first W
 * unexpanded places of the list (pipeline; round mode does this by taking
 * W candidates a round). */
static int expand_cached_ahead(query *s, uint32_t max)
{
    ann_ctx *c = s->c;
    const ann_engine *e = c->eng;
    for (uint32_t done = 0; done < max;) {
        uint32_t seen = 0, pick = UINT32_MAX;
        for (uint32_t i = c->cl.cursor; i < c->cl.n && seen < c->W; i++) {
            if (c->cl.c[i].expanded)
                continue;
            seen++;
            if (cached(e, c->cl.c[i].id)) {
                pick = i;
                break;
            }
        }
        if (pick == UINT32_MAX)
            return 0;
        c->cl.c[pick].expanded = 1;
        int rc = expand_cached(s, c->cl.c[pick].id);
        if (rc < 0)
            return rc;
        done++;
    }
    return 0;
}

static int search_pipeline(query *s)
{
    ann_ctx *c = s->c;
    const ann_engine *e = c->eng;
    uint32_t w = c->adaptive && c->W > DSEC_BEAM_START ? DSEC_BEAM_START : c->W;
    uint32_t nfree = c->W, inflight = 0;
    for (uint32_t i = 0; i < c->W; i++)
        c->free_slots[i] = c->W - 1 - i;
    for (;;) {
        /* Fill the pipeline with the closest unexpanded candidates, at most
         * submit_group of them per submission (see the top of the file). */
        uint32_t nio = 0;
        while (inflight + nio < w && nio < c->group) {
            int pos = ann_candlist_next(&c->cl);
            if (pos < 0)
                break;
            uint32_t v = c->cl.c[pos].id;
            int queued;
            int rc = expand_now(s, v, &queued);
            if (rc < 0)
                return rc;
            if (!queued) {
                if (c->adaptive && rc > 0 && w < c->W)
                    w++;
                continue;
            }
            c->req_ptrs[nio++] = prepare(c, c->free_slots[--nfree], v);
        }
        lap(s, ANN_STAGE_CANDLIST);
        if (nio) {
            int rc = ann_aio_submit(c->q, c->req_ptrs, nio);
            lap(s, ANN_STAGE_IO_SUBMIT);
            if (rc)
                return rc;
            s->st.reads += nio;
            inflight += nio;
            /* More free slots: fill them in a further submission now,
             * while this group is in flight, not after it completes. */
            if (nio == c->group && inflight < w && ann_candlist_has_next(&c->cl))
                continue;
        }
        /* While the reads are in flight, the CPU is idle: expand cached
         * candidates further down the list, as a round of W would have
         * (a cached expansion costs no read and feeds the list). */
        if (inflight > 0 && e->cache_slot) {
            int rc = expand_cached_ahead(s, c->W);
            if (rc < 0)
                return rc;
        }
        if (inflight == 0) {
            if (ann_candlist_has_next(&c->cl))
                continue; /* cached expansions fed the list */
            return 0;
        }
        /* Expand what has completed; the freed slots are refilled above,
         * after the list has taken in the new neighbours. */
        int got = collect(s, 1);
        if (got < 0)
            return got;
        inflight -= (uint32_t)got;
        for (int i = 0; i < got; i++) {
            ann_aio_req *r = c->done[i];
            c->free_slots[nfree++] = (uint32_t)(r - c->reqs);
            int rc = complete(s, r);
            if (rc < 0)
                return rc;
            if (c->adaptive && rc > 0 && w < c->W)
                w++;
        }
    }
}

int dsec_search(ann_ctx *c, const float *query_vec, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats)
{
    const ann_engine *e = c->eng;
    const dsec_header *h = &e->h;
    if (k > c->k_max)
        return ann_fail(ANN_EPARAM, "diskann-sector: k %u exceeds the context's k_max %u", k,
                        c->k_max);
    int rc = 0;
    query s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.q = query_vec;
    uint64_t cpu0 = ann_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    ann_ticks_span span;
    ann_ticks_begin(&span);
    s.t = span.t0;
    ann_topk_init(&s.top, c->top_dist, c->top_id, k);

    pq_table_compute(e->pq, query_vec, c->table);
    lap(&s, ANN_STAGE_PQ_TABLE);
    ann_visited_reset(&c->visited);
    ann_candlist_reset_cap(&c->cl, c->L > k ? c->L : k);
    ann_visited_test_and_set(&c->visited, h->medoid);
    float d0 = pq_adc_distance(c->table, e->codes + (size_t)h->medoid * e->pq->m, e->pq->m);
    s.st.code_dists++;
    lap(&s, ANN_STAGE_ADC);
    ann_candlist_insert(&c->cl, d0, h->medoid);

    rc = c->mode == DSEC_MODE_ROUND ? search_rounds(&s) : search_pipeline(&s);
    if (rc >= 0)
        rc = (int)ann_topk_sorted(&s.top, ids, dists);
    else
        drain(c);
    lap(&s, ANN_STAGE_CANDLIST);
    ann_ticks_end(&span);
    s.st.cpu_ns = ann_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    s.st.stage_mask = (1u << ANN_STAGE_COUNT) - 1;
    for (int i = 0; i < ANN_STAGE_COUNT; i++)
        s.st.stage_ns[i] = ann_ticks_to_ns(&span, s.tk[i]);
    if (stats)
        ann_stats_add(stats, &s.st);
    return rc;
}
