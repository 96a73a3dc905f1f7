/*
 * search.c: ivfpq-record's search, IVFADC (Jégou et al., TPAMI 2011) with
 * exact re-ranking: rank the coarse centroids held in RAM, read the list
 * records of the nprobe closest lists, score every entry by asymmetric
 * distance to its PQ-coded residual, keep the best rerank x k, then read
 * each one's full-vector record and return the k closest by exact distance.
 *
 * Estimated distance of an entry x^ = c + r' of list c (r' the decoded
 * residual, beta = <c, r'> + |r'|^2 / 2 stored beside its code, layout.h),
 * with one inner-product table per query, t_j[k] = -<q_j, codeword_jk>, so
 * that ADC_ip(q, r') = -<q, r'>, and the list's centroid term T(q, c):
 *   l2:     T = |q - c|^2,      T + 2 (beta + ADC_ip(q, r')) = |q - c - r'|^2
 *   cosine: T = |q - c|^2 / 2,  T + beta + ADC_ip(q, r')     = |q - c - r'|^2 / 2
 *           (for unit q, 1 - <q, x^> + (|x^|^2 - 1) / 2: the cosine
 *           distance's scale);
 *   ip:     T = -<q, c>,        T + ADC_ip(q, r')            = -<q, x^>.
 * Lists are ranked by T itself, so a probed list's term is computed once.
 * For unit data the cosine figures are exactly half the l2 ones (halving
 * is exact in float), and a cosine index built from the same vectors as an
 * l2 index (build.c: the same plain k-means) probes the same lists and
 * keeps the same candidates.
 *
 * Departure from the paper, whose l2 path computes a table of q - c per
 * probed list (m x 256 sub-distances, version 1 of this index did): the
 * same distance split as FAISS's precomputed tables split it, except that
 * the query-independent part is summed per entry (4 bytes in the chunk
 * record) rather than tabled per list and codeword (lists x m x 256 floats
 * in RAM).  Cosine ranks by the L2 form, not 1 - <q, x^> as version 1 did:
 * the error of 1 - <q, x^> is -<q, e> with |q| = 1, that of the L2 form
 * <x - q, e> + |e|^2 / 2 is scaled by the small |x - q| of the true
 * neighbours (engines/core/pq.h).
 *
 * Measured on 20,000 generated 768-d unit vectors (nlist 100, 96-byte
 * codes, 500 queries, ADC-only recall@10, i.e. rerank 1, at nprobe 4 / 16):
 * version 1, cosine by 1 - <q, x^>: 0.583 / 0.603; version 2 (this
 * estimate, spherical cosine centroids, lists by 1 - <q, c>): 0.694 /
 * 0.721; version 3 (plain centroids, lists by |q - c|^2 / 2): 0.7034 /
 * 0.7292, the figures of the same vectors built as l2, as at rerank 2
 * (0.9 / 0.9542) and 10 (0.9322 / 0.9924).  Version 3 scans 2.6% / 2.9%
 * more entries per query than version 2 did (its lists of the same nprobe
 * are the l2 ones).  l2 searches of version 2 ran at 1.6 to 4.8 times the
 * queries per second of version 1, one table per query instead of one per
 * list.
 *
 * Live updates (insert.c): a probed list's appended entries are scored
 * after its chunks, in the same snapshot, and ids with a tombstone are
 * never candidates.  An index opened with updates reads a list's chunk
 * records until the first missing one, counts from their headers (a merge
 * may rewrite the list meanwhile); otherwise the directory read at open
 * says how many there are.
 *
 * Reads in flight (reads_in_flight W > 1): while one list is scanned, the
 * first chunk records of the next W - 1 probed lists are hinted to the
 * store (kv_prefetch), and while one candidate is re-ranked, the next
 * W - 1 candidates' vector records; W = 1 reads one record at a time.
 *
 * Reads per query: the chunk records of the probed lists, plus one vector
 * record per re-ranked candidate.  Stats: reads/bytes_read count both,
 * code_dists the entries scored by ADC, full_dists the re-ranked vectors,
 * hops the lists probed.  All scratch is in the per-thread context.  A
 * record that is missing or fails its checks stops the search with
 * ANN_ECORRUPT naming the store and the record.
 */
#include "engines/ivfpq_record/ivfpq.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/status.h"
#include "engines/ivfpq_record/layout.h"
#include "engines/core/ticks.h"

#include <math.h>
#include <string.h>
#include <time.h>

void ivfpq_query_table(const ann_engine *e, const float *query, float *table)
{
    pq_table_ip(e->cb, query, table);
}

float ivfpq_list_term(const ann_engine *e, const float *query, uint32_t list)
{
    const float *cen = e->centroids + (size_t)list * e->meta.dim;
    switch (e->meta.metric) {
    case ANN_METRIC_L2:
        return ann_l2sq(query, cen, e->meta.dim);
    case ANN_METRIC_COSINE:
        return 0.5f * ann_l2sq(query, cen, e->meta.dim);
    default:
        return -ann_ip(query, cen, e->meta.dim);
    }
}

void ivfpq_chunk_estimate(const ann_engine *e, const float *table, float list_term,
                          const uint8_t *rec, uint32_t count, float *out)
{
    const uint8_t *betas = rec + IVFPQ_CHUNK_BETAS_OFF(count);
    /* out[j] = -<q, r'_j> */
    pq_adc_scan(table, e->meta.pq_bytes, rec + IVFPQ_CHUNK_CODES_OFF(count), count, out);
    switch (e->meta.metric) {
    case ANN_METRIC_L2:
        for (uint32_t j = 0; j < count; j++)
            out[j] = list_term + 2.0f * (ann_get_f32(betas + 4 * (size_t)j) + out[j]);
        break;
    case ANN_METRIC_COSINE:
        for (uint32_t j = 0; j < count; j++)
            out[j] = list_term + (ann_get_f32(betas + 4 * (size_t)j) + out[j]);
        break;
    default:
        for (uint32_t j = 0; j < count; j++)
            out[j] = list_term + out[j];
        break;
    }
}

/* The entries inserted into a list since the build (insert.c, table 0x05),
 * ADC-scored into the candidate heap as the chunk entries are.  One prefix
 * iteration of the query's snapshot (it allocates: RocksDB's iterator). */
static int scan_appended(ann_ctx *c, uint32_t list, float term, ann_topk *cands, int any_dead,
                         ann_stats *stats)
{
    const ann_engine *e = c->eng;
    const uint32_t m = e->meta.pq_bytes;
    uint8_t prefix[KV_KEY_U64_BYTES];
    kv_key_u64(prefix, IVFPQ_TABLE_APPENDED, (uint64_t)list << 32);
    kv_iter *it = NULL;
    kv_val k, v;
    int rc = kv_iter_create(c->rd, prefix, 5, &it), step;
    if (rc)
        return rc;
    while ((step = kv_iter_next(it, &k, &v)) == 1) {
        uint64_t key = 0;
        if (kv_key_parse_u64(k.data, k.len, NULL, &key) != 0 || v.len != IVFPQ_APPENDED_BYTES(m) ||
            !isfinite(ann_get_f32(v.data))) {
            rc = ann_fail(ANN_ECORRUPT, "%s: list %u: appended entry record (key of %zu bytes): "
                          "bad key, length %zu or beta", e->store_dir, list, k.len, v.len);
            break;
        }
        uint32_t id = (uint32_t)key;
        stats->reads++;
        stats->bytes_read += v.len;
        stats->code_dists++;
        if (any_dead && ivfpq_is_dead(e, id))
            continue;
        float d = ivfpq_entry_estimate(e, c->table, term, ann_get_f32(v.data),
                                       (const uint8_t *)v.data + 4);
        if (d < ann_topk_bound(cands))
            ann_topk_push(cands, d, id);
    }
    if (!rc && step < 0)
        rc = step;
    kv_iter_destroy(it);
    return rc;
}

float ivfpq_entry_estimate(const ann_engine *e, const float *table, float list_term, float beta,
                           const uint8_t *code)
{
    float ip;
    pq_adc_scan(table, e->meta.pq_bytes, code, 1, &ip); /* -<q, r'> */
    switch (e->meta.metric) {
    case ANN_METRIC_L2:
        return list_term + 2.0f * (beta + ip);
    case ANN_METRIC_COSINE:
        return list_term + (beta + ip);
    default:
        return list_term + ip;
    }
}

/* The entries inserted `term`: every chunk record, ADC-scored
 * into the candidate heap, then, when `appended` (the list had appended
 * entries before the query's snapshot began), its appended entries;
 * deleted ids are skipped (any_dead: the index has tombstones). */
static int scan_list(ann_ctx *c, const ivfpq_meta *m, uint32_t list, float term, int appended,
                     ann_topk *cands, int any_dead, ann_stats *stats)
{
    const ann_engine *e = c->eng;
    /* a writable index may be merged meanwhile: its lists are read from the
     * snapshot (chunks until the first missing one, counts from their
     * headers), not from the directory read at open */
    const int live = e->live.enabled;
    uint32_t len = e->list_len[list];
    for (uint32_t chunk = 0; live || (uint64_t)chunk * m->chunk_entries < len; chunk++) {
        uint32_t first = chunk * m->chunk_entries;
        uint32_t cnt = len - first < m->chunk_entries ? len - first : m->chunk_entries;
        uint8_t key[KV_KEY_U64_BYTES];
        kv_val val = { 0 };
        kv_key_u64(key, IVFPQ_TABLE_LIST, (uint64_t)list << 32 | chunk);
        int rc = kv_get(c->rd, key, sizeof key, &val);
        if (rc == ANN_ENOTFOUND && live)
            break;
        if (rc == ANN_ENOTFOUND)
            return ann_fail(ANN_ECORRUPT, "%s: list %u chunk %u record missing", e->store_dir,
                            list, chunk);
        if (rc)
            return rc;
        if (live) {
            cnt = val.len >= IVFPQ_CHUNK_HEADER_BYTES ? ann_get_u32((const uint8_t *)val.data + 8)
                                                      : 0;
            if (cnt == 0 || cnt > m->chunk_entries)
                cnt = 0; /* refused by the check below */
        }
        stats->reads++;
        stats->bytes_read += val.len;
        rc = ivfpq_chunk_check(m, e->store_dir, list, chunk, cnt, val.data, val.len);
        if (rc) {
            kv_val_release(&val);
            return rc;
        }
        const uint8_t *rec = val.data;
        for (uint32_t j = 0; j < cnt; j++)
            c->chunk_ids[j] = ann_get_u32(rec + IVFPQ_CHUNK_HEADER_BYTES + 4 * (size_t)j);
        ivfpq_chunk_estimate(e, c->table, term, rec, cnt, c->chunk_dists);
        kv_val_release(&val);
        stats->code_dists += cnt;
        for (uint32_t j = 0; j < cnt; j++) {
            float d = c->chunk_dists[j];
            if (d < ann_topk_bound(cands) && !(any_dead && ivfpq_is_dead(e, c->chunk_ids[j])))
                ann_topk_push(cands, d, c->chunk_ids[j]);
        }
    }
    return appended ? scan_appended(c, list, term, cands, any_dead, stats) : 0;
}

/* Read candidate id's vector and offer its exact distance to top. */
static int rerank_one(ann_ctx *c, const float *query, uint32_t id, ann_topk *top,
                      ann_stats *stats)
{
    const ann_engine *e = c->eng;
    const ivfpq_meta *m = &e->meta;
    uint8_t key[KV_KEY_U32_BYTES];
    kv_val val = { 0 };
    kv_key_u32(key, IVFPQ_TABLE_VECTOR, id);
    int rc = kv_get(c->rd, key, sizeof key, &val);
    if (rc == ANN_ENOTFOUND)
        return ann_fail(ANN_ECORRUPT, "%s: vector %u record missing", e->store_dir, id);
    if (rc)
        return rc;
    stats->reads++;
    stats->bytes_read += val.len;
    if (val.len != (size_t)m->dim * 4) {
        kv_val_release(&val);
        return ann_fail(ANN_ECORRUPT, "%s: vector %u record: %zu bytes, expected %u", e->store_dir,
                        id, val.len, m->dim * 4);
    }
    memcpy(c->vec, val.data, val.len); /* little-endian host */
    kv_val_release(&val);
    ann_topk_push(top, ann_distance(m->metric, query, c->vec, m->dim), id);
    stats->full_dists++;
    return 0;
}

int ivfpq_search(ann_ctx *c, const float *query, uint32_t k, uint32_t *ids, float *dists,
                 ann_stats *stats)
{
    const ann_engine *e = c->eng;
    const ivfpq_meta *m = &e->meta;
    uint64_t t0 = ann_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    int rc = 0, got = 0;
    if (k > c->k_max)
        k = c->k_max;
    if (!e->cb || k == 0) /* an empty build has no codebook and takes no inserts */
        return 0;

    /* the nprobe closest lists, by the centroid term their entries add */
    ann_topk probe;
    ann_topk_init(&probe, c->coarse_dist, c->coarse_id, c->nprobe);
    for (uint32_t l = 0; l < m->lists; l++) {
        float d = ivfpq_list_term(e, query, l);
        if (d < ann_topk_bound(&probe))
            ann_topk_push(&probe, d, l);
    }
    uint32_t nprobe = ann_topk_sorted(&probe, c->coarse_id, c->coarse_dist);
    ivfpq_query_table(e, query, c->table);
    /* which probed lists have appended entries, read before the snapshot:
     * a merge zeroes the counts after its commit, so a count read after
     * the snapshot began could be zero for entries the snapshot still
     * holds as appended (a search would miss an insert that returned); an
     * insert raises its list's count before its commit */
    for (uint32_t p = 0; p < nprobe; p++)
        c->coarse_app[p] = atomic_load(&e->live.app_len[c->coarse_id[p]]) != 0;

    rc = kv_reader_begin(c->rd);
    if (rc)
        return rc;
    ann_topk cands;
    ann_topk_init(&cands, c->cand_dist, c->cand_id, c->rerank * k);
    /* read after the snapshot: a remove marks the id before it returns,
     * an insert or merge raises the bound before it commits */
    int any_dead = atomic_load(&e->live.any_dead);
    ivfpq_meta cm = *m;
    cm.n = atomic_load(&e->live.id_bound);
    for (uint32_t p = 0, hinted = 1; p < nprobe; p++) {
        /* W - 1 lists ahead of the one scanned: their first chunk hinted */
        for (; c->W > 1 && hinted < nprobe && hinted < p + c->W; hinted++) {
            uint8_t key[KV_KEY_U64_BYTES];
            kv_key_u64(key, IVFPQ_TABLE_LIST, (uint64_t)c->coarse_id[hinted] << 32);
            kv_prefetch(c->rd, key, sizeof key, 1);
        }
        stats->hops++;
        rc = scan_list(c, &cm, c->coarse_id[p], c->coarse_dist[p], c->coarse_app[p], &cands,
                       any_dead, stats);
        if (rc)
            goto out;
    }
    uint32_t nc = ann_topk_sorted(&cands, c->cand_id, c->cand_dist);
    ann_topk top;
    ann_topk_init(&top, c->top_dist, c->top_id, k);
    kv_ahead ahead;
    kv_ahead_init(&ahead, c->rd, IVFPQ_TABLE_VECTOR, c->cand_id, nc, c->W);
    for (uint32_t i = 0; i < nc; i++) {
        kv_ahead_at(&ahead, i);
        rc = rerank_one(c, query, c->cand_id[i], &top, stats);
        if (rc)
            goto out;
    }
    got = (int)ann_topk_sorted(&top, ids, dists);
out:
    kv_reader_end(c->rd);
    stats->cpu_ns += ann_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    return rc ? rc : got;
}
