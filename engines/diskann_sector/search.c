/*
 * search.c: DiskANN's beam search over the sector file (Subramanya et al.,
 * NeurIPS 2019, section 3.3 "beam search"), with the query path of the
 * implementations that followed it.
 *
 * Per query: a PQ distance table; a candidate list of L entries ranked by
 * PQ distance, seeded with the medoid.  Each round takes the (up to) W
 * closest unexpanded candidates, submits one read per node not in the BFS
 * cache, expands the cached ones while those reads are in flight, then
 * expands each read node as soon as its completion arrives (not when the
 * whole beam is back).  Expanding a node computes its exact distance from
 * the vector stored in its sector (the final ranking uses only these exact
 * distances) and inserts its unvisited neighbours into the list with their
 * PQ distances.  The search stops when no unexpanded candidate is left
 * among the best L.  hops counts rounds.
 *
 * Everything a node carries is untrusted: degree beyond R, a neighbour id
 * not below n, a non-finite vector or a read that comes back short is
 * ANN_ECORRUPT naming the file and the node, never a skipped node.  Nothing
 * is allocated per query; all scratch lives in the context.
 */
#include "engines/diskann_sector/dsec.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/status.h"
#include "engines/core/topk.h"

#include <math.h>
#include <string.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
    return (int)deg;
}

/* Expand node id from its record: exact distance, then its neighbours. */
static int expand(ann_ctx *c, const float *query, uint32_t id, const uint8_t *rec, ann_topk *top,
                  ann_stats *st)
{
    const ann_engine *e = c->eng;
    int deg = dsec_node_decode(e, id, rec, c->vec, c->nbrs);
    if (deg < 0)
        return deg;
    float d = ann_distance(e->metric, query, c->vec, e->h.dim);
    st->full_dists++;
    if (!isfinite(d))
        return ann_fail(ANN_ECORRUPT, "%s: node %u: vector is not finite", e->path, id);
    ann_topk_push(top, d, id);
    uint32_t nfresh = 0;
    for (int i = 0; i < deg; i++)
        if (!ann_visited_test_and_set(&c->visited, c->nbrs[i]))
            c->fresh[nfresh++] = c->nbrs[i];
    if (nfresh == 0)
        return 0;
    pq_adc_gather(c->table, e->pq->m, e->codes, c->fresh, nfresh, c->fresh_dist);
    st->code_dists += nfresh;
    for (uint32_t i = 0; i < nfresh; i++)
        ann_candlist_insert(&c->cl, c->fresh_dist[i], c->fresh[i]);
    return 0;
}

/* Take every completion still in flight (after an error), ignoring them. */
static void drain(ann_ctx *c)
{
    while (ann_aio_inflight(c->q) > 0)
        if (ann_aio_reap(c->q, ann_aio_inflight(c->q), c->done, c->W) <= 0)
            break;
}

/* Check one completed read and expand its node. */
static int complete(ann_ctx *c, const float *query, const ann_aio_req *r, ann_topk *top,
                    ann_stats *st)
{
    const ann_engine *e = c->eng;
    uint32_t id = (uint32_t)r->user;
    if (r->result < 0)
        return ann_fail(r->result, "%s: node %u: read failed: %s", e->path, id,
                        ann_strerror(r->result));
    if ((uint32_t)r->result < r->len_bytes)
        return ann_fail(ANN_ECORRUPT, "%s: node %u: truncated (read %d of %u bytes)", e->path, id,
                        r->result, r->len_bytes);
    st->bytes_read += (uint64_t)r->result;
    return expand(c, query, id, (const uint8_t *)r->buf + dsec_node_offset(&e->h, id), top, st);
}

int dsec_search(ann_ctx *c, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats)
{
    const ann_engine *e = c->eng;
    const dsec_header *h = &e->h;
    if (k > c->k_max)
        return ann_fail(ANN_EPARAM, "diskann-sector: k %u exceeds the context's k_max %u", k,
                        c->k_max);
    int rc = 0;
    ann_stats st = { 0 };
    uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    ann_topk top;
    ann_topk_init(&top, c->top_dist, c->top_id, k);

    pq_table_compute(e->pq, query, c->table);
    ann_visited_reset(&c->visited);
    ann_candlist_reset_cap(&c->cl, c->L > k ? c->L : k);
    ann_visited_test_and_set(&c->visited, h->medoid);
    ann_candlist_insert(&c->cl,
                        pq_adc_distance(c->table, e->codes + (size_t)h->medoid * e->pq->m,
                                        e->pq->m),
                        h->medoid);
    st.code_dists++;

    for (;;) {
        uint32_t nsel = 0;
        while (nsel < c->W) {
            int pos = ann_candlist_next(&c->cl);
            if (pos < 0)
                break;
            c->sel[nsel++] = c->cl.c[pos].id;
        }
        if (nsel == 0)
            break;
        st.hops++;
        /* Reads first, so they are in flight while cached nodes are expanded. */
        uint32_t nio = 0;
        for (uint32_t i = 0; i < nsel; i++) {
            uint32_t v = c->sel[i];
            if (e->cache_slot && e->cache_slot[v] >= 0)
                continue;
            ann_aio_req *r = &c->reqs[nio];
            r->buf = c->bufs + (size_t)nio * e->read_bytes;
            r->offset_bytes = dsec_node_sector(h, v) * DSEC_SECTOR_BYTES;
            r->len_bytes = e->read_bytes;
            r->user = v;
            nio++;
        }
        if (nio) {
            rc = ann_aio_submit(c->q, c->req_ptrs, nio);
            if (rc)
                goto out;
            st.reads += nio;
        }
        for (uint32_t i = 0; i < nsel; i++) {
            uint32_t v = c->sel[i];
            if (!e->cache_slot || e->cache_slot[v] < 0)
                continue;
            st.cache_hits++;
            rc = expand(c, query, v,
                        e->cache_recs + (size_t)e->cache_slot[v] * h->node_bytes, &top, &st);
            if (rc)
                goto out;
        }
        /* Expand each node the moment its read completes. */
        for (uint32_t pending = nio; pending > 0;) {
            int got = ann_aio_reap(c->q, 0, c->done, c->W);
            if (got == 0) {
                uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
                got = ann_aio_reap(c->q, 1, c->done, c->W);
                st.io_wait_ns += clock_ns(CLOCK_MONOTONIC) - t0;
            }
            if (got < 0) {
                rc = got;
                goto out;
            }
            pending -= (uint32_t)got;
            for (int i = 0; i < got; i++) {
                rc = complete(c, query, c->done[i], &top, &st);
                if (rc)
                    goto out;
            }
        }
    }
    rc = (int)ann_topk_sorted(&top, ids, dists);
out:
    if (rc < 0)
        drain(c);
    st.cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    if (stats) {
        stats->reads += st.reads;
        stats->bytes_read += st.bytes_read;
        stats->hops += st.hops;
        stats->full_dists += st.full_dists;
        stats->code_dists += st.code_dists;
        stats->cache_hits += st.cache_hits;
        stats->io_wait_ns += st.io_wait_ns;
        stats->cpu_ns += st.cpu_ns;
    }
    return rc;
}
