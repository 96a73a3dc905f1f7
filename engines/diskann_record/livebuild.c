/*
 * livebuild.c: the live build of diskann-record and diskann-resident
 * (layout.h, version 3).  An index built over fewer than DREC_SCAN_BELOW
 * vectors, zero included, is untrained: live.c writes each insert as its
 * vector record alone and each remove as a tombstone, and searches scan
 * the vector records exactly (search.c).  This file holds the two steps
 * that only an untrained index takes, both called under the writers'
 * lock (so no insert or remove commits meanwhile):
 *
 * drec_live_train, the insert that brings the live vectors to the
 *   threshold: every live vector is read from the store (the writers'
 *   snapshot) and the new one added; PQ is trained on them with the
 *   build's trainer (pq_train, sample capped at 128 MiB as the build's,
 *   seed = the metadata's pq_seed), every vector is encoded, and the
 *   first Vamana graph is built over them (vamana_build_from_memory with
 *   the metadata's R, L_build and alpha, the build's other defaults: one
 *   pass, 1.3 R slack, f16 distances, all threads).  The codebook file is
 *   written first (atomically; an untrained index ignores it), then one
 *   batch commits the new vector record, every node record (ids are the
 *   inserted ids; resident layout: every code in table 0x06), the removal
 *   of the deleted vectors and their tombstones, the live-state record and
 *   the metadata record in graph mode.  Only then does the engine take the
 *   codebook, metadata and codes, and publish the graph mode (drec.h), so
 *   a search sees either the exact scan or the committed graph.  A failure
 *   anywhere leaves the untrained index as it was, the insert refused.
 *   The training is synchronous: the insert returns when the graph is
 *   searchable (at the threshold, 1,024 vectors, it takes well under a
 *   second at small dimension).
 *
 * drec_scan_merge, merge() of an untrained index: the deleted vectors and
 *   their tombstones go in one batch, so their ids can be inserted again.
 */
#include "engines/diskann_record/drec.h"

#include "engines/core/binio.h"
#include "engines/core/status.h"
#include "engines/core/vamana.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The live vectors of the writers' snapshot: ids[0..*n) and their rows in
 * x (room for cap rows); deleted ones into gone. */
static int read_live(ann_engine *e, uint64_t cap, uint32_t *ids, float *x, uint64_t *n,
                     drec_id_list *gone)
{
    const uint32_t dim = e->meta.dim;
    const size_t row = (size_t)dim * sizeof(float);
    kv_reader *rd = e->live.wrd;
    uint8_t prefix = DREC_TABLE_VECTOR;
    kv_iter *it = NULL;
    kv_val k, v;
    int rc = kv_reader_begin(rd), step = 0;
    if (rc)
        return rc;
    rc = kv_iter_create_scan(rd, &prefix, 1, &it);
    *n = 0;
    while (!rc && (step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t id = 0;
        if (kv_key_parse_u32(k.data, k.len, NULL, &id) != 0 || v.len != row) {
            rc = ann_fail(ANN_ECORRUPT, "%s: vector %u: key length %zu, record length %zu, "
                          "expected %zu", e->store_dir, id, k.len, v.len, row);
            break;
        }
        if (ann_idbits_test(&e->live.dead, id)) {
            if (drec_id_list_add(gone, id))
                rc = ann_fail(-ENOMEM, "%s: live training: no memory", e->store_dir);
            continue;
        }
        if (*n == cap) {
            rc = ann_fail(ANN_ECORRUPT, "%s: live training: more vector records than the %llu "
                          "counted at open", e->store_dir, (unsigned long long)cap);
            break;
        }
        ids[*n] = id;
        float *dst = x + *n * dim;
        for (uint32_t j = 0; j < dim; j++)
            dst[j] = ann_get_f32((const uint8_t *)v.data + 4 * (size_t)j);
        (*n)++;
    }
    if (!rc && step < 0)
        rc = step;
    kv_iter_destroy(it);
    kv_reader_end(rd);
    return rc;
}

int drec_live_train(ann_engine *e, uint32_t id, const float *vec, const uint8_t *rec)
{
    drec_live *L = &e->live;
    const uint32_t dim = e->meta.dim, m = e->meta.pq_bytes, layout = e->meta.layout;
    const ann_metric metric = (ann_metric)e->meta.metric;
    const size_t row = (size_t)dim * sizeof(float);
    const uint64_t cap = atomic_load(&L->scan_rows) + 1;
    uint32_t *ids = malloc(cap * sizeof *ids);
    float *x = malloc(cap * row);
    uint8_t *codes = NULL, *node = NULL, *meta_rec = NULL;
    drec_id_list gone = { 0 };
    pq_codebook *cb = NULL;
    vamana_graph *g = NULL;
    ann_vecsrc *src = NULL;
    kv_txn *t = NULL;
    uint8_t key[KV_KEY_U32_BYTES];
    char path[4300];
    uint64_t n = 0;
    drec_meta nm;
    int rc = ids && x ? 0 : ann_fail(-ENOMEM, "%s: live training: no memory", e->store_dir);

    /* every live vector, and the new one last */
    if (!rc)
        rc = read_live(e, cap - 1, ids, x, &n, &gone);
    if (rc)
        goto out;
    ids[n] = id;
    memcpy(x + n * dim, vec, row);
    n++;

    /* PQ, codes and the first graph, as a build makes them */
    pq_params pp;
    pq_params_default(&pp, dim);
    pp.pq_bytes = m;
    pp.seed = e->meta.pq_seed;
    pp.threads = 0;
    vamana_params vp;
    vamana_params_default(&vp);
    vp.R = e->meta.R;
    vp.L_build = e->meta.L_build;
    vp.alpha = e->meta.alpha;
    vp.seed = e->meta.pq_seed;
    vp.threads = 0;
    codes = malloc(n * m);
    if (!codes) {
        rc = ann_fail(-ENOMEM, "%s: live training: no memory for %llu codes", e->store_dir,
                      (unsigned long long)n);
        goto out;
    }
    rc = ann_vecsrc_from_memory(x, n, dim, metric, &src);
    if (!rc)
        rc = pq_train(src, &pp, &cb);
    if (!rc)
        rc = pq_encode(cb, x, n, 0, codes);
    if (!rc)
        rc = vamana_build_from_memory(x, n, dim, metric, &vp, &g, NULL);
    if (rc)
        goto out;

    /* the codebook first: an untrained index never reads it */
    snprintf(path, sizeof path, "%s%s", e->store_dir, DREC_LIVE_PQ_SUFFIX);
    rc = pq_codebook_save(cb, path);
    if (rc)
        goto out;
    /* resident: the codes in memory (read by searches only once the graph
     * is published; a failed commit leaves rows that nothing reads) */
    for (uint64_t i = 0; layout == DREC_LAYOUT_RESIDENT && i < n; i++) {
        uint8_t *r = ann_idrows_put(&L->codes, ids[i]);
        if (!r) {
            rc = ann_fail(-ENOMEM, "%s: live training: no memory for live codes", e->store_dir);
            goto out;
        }
        memcpy(r, codes + i * m, m);
    }

    nm = e->meta;
    nm.mode = DREC_MODE_GRAPH;
    nm.n = 0;
    nm.medoid = ids[g->entry];
    memcpy(nm.medoid_code, codes + (size_t)g->entry * m, m);
    nm.chunk_rows = 0;
    node = malloc(drec_node_bytes(layout, m, g->R));
    meta_rec = malloc(drec_meta_bytes_v(nm.version, m));
    if (!node || !meta_rec) {
        rc = ann_fail(-ENOMEM, "%s: live training: no memory", e->store_dir);
        goto out;
    }
    drec_meta_encode(&nm, meta_rec);
    uint32_t bound = atomic_load(&L->id_bound);
    if (bound < id + 1)
        bound = id + 1;
    drec_state st = { .id_bound = bound, .graph_nodes = n, .merges = 0 };
    uint8_t st_rec[DREC_STATE_BYTES];
    drec_state_encode(&st, st_rec);

    /* one batch: whatever of it a crash cuts, nothing is applied */
    rc = kv_txn_begin(e->kv, &t);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_VECTOR, id), rec, row);
    const size_t ids_at = layout == DREC_LAYOUT_FULL ? m + 4 : 4;
    for (uint64_t i = 0; !rc && i < n; i++) {
        uint32_t d;
        const uint32_t *nbrs = vamana_neighbors(g, (uint32_t)i, &d);
        drec_node_encode(layout, m, (uint32_t)i, nbrs, d, codes, node);
        for (uint32_t j = 0; j < d; j++) /* graph positions to ids */
            ann_put_u32(node + ids_at + 4 * (size_t)j, ids[nbrs[j]]);
        rc = kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_NODE, ids[i]), node,
                        drec_node_bytes(layout, m, d));
        if (!rc && layout == DREC_LAYOUT_RESIDENT)
            rc = kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_LIVE_CODE, ids[i]),
                            codes + i * m, m);
    }
    for (uint64_t i = 0; !rc && i < gone.n; i++) {
        rc = kv_txn_delete(t, key, kv_key_u32(key, DREC_TABLE_VECTOR, gone.ids[i]));
        if (!rc)
            rc = kv_txn_delete(t, key, kv_key_u32(key, DREC_TABLE_TOMBSTONE, gone.ids[i]));
    }
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_STATE, 0), st_rec, sizeof st_rec);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_META, 0), meta_rec,
                        drec_meta_bytes_v(nm.version, m));
    if (!rc) {
        /* before the commit: a search that sees the records sees the bound */
        atomic_store(&L->id_bound, bound);
        rc = kv_txn_commit(t);
        t = NULL;
    }
    if (rc)
        goto out;

    /* committed: the engine takes the trained state, then publishes it */
    e->pq = cb;
    cb = NULL;
    e->meta.n = 0;
    e->meta.medoid = nm.medoid;
    memcpy(e->meta.medoid_code, nm.medoid_code, m);
    e->meta.chunk_rows = 0;
    e->meta.mode = DREC_MODE_GRAPH;
    ann_idbits_set(&L->dead, id, 0); /* an id consolidated before, live again */
    atomic_store(&L->graph_nodes, n);
    atomic_store(&L->scan_rows, 0);
    atomic_store(&L->deleted, 0);
    atomic_store(&L->merges, 0);
    atomic_store_explicit(&L->mode, DREC_MODE_GRAPH, memory_order_release);
out:
    kv_txn_abort(t);
    ann_vecsrc_destroy(src);
    vamana_graph_destroy(g);
    pq_codebook_destroy(cb);
    free(ids);
    free(x);
    free(codes);
    free(node);
    free(meta_rec);
    free(gone.ids);
    return rc;
}

int drec_scan_merge(ann_engine *e)
{
    drec_live *L = &e->live;
    kv_reader *rd = L->wrd;
    uint8_t prefix = DREC_TABLE_TOMBSTONE, key[KV_KEY_U32_BYTES];
    drec_id_list dels = { 0 };
    kv_iter *it = NULL;
    kv_txn *t = NULL;
    kv_val k, v;
    int rc = kv_reader_begin(rd), step = 0;
    if (rc)
        return rc;
    rc = kv_iter_create_scan(rd, &prefix, 1, &it);
    while (!rc && (step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t id = 0;
        if (kv_key_parse_u32(k.data, k.len, NULL, &id) != 0)
            rc = ann_fail(ANN_ECORRUPT, "%s: table 0x%02x: a key of %zu bytes", e->store_dir,
                          DREC_TABLE_TOMBSTONE, k.len);
        else if (drec_id_list_add(&dels, id))
            rc = ann_fail(-ENOMEM, "%s: merge: no memory", e->store_dir);
    }
    if (!rc && step < 0)
        rc = step;
    kv_iter_destroy(it);
    /* every read done before the batch (LMDB may grow its map) */
    kv_reader_end(rd);
    if (!rc && dels.n > 0) {
        rc = kv_txn_begin(e->kv, &t);
        for (uint64_t i = 0; !rc && i < dels.n; i++) {
            rc = kv_txn_delete(t, key, kv_key_u32(key, DREC_TABLE_VECTOR, dels.ids[i]));
            if (!rc)
                rc = kv_txn_delete(t, key, kv_key_u32(key, DREC_TABLE_TOMBSTONE, dels.ids[i]));
        }
        if (!rc) {
            rc = kv_txn_commit(t);
            t = NULL;
        }
        kv_txn_abort(t);
        if (!rc) { /* the ids stay in the deleted set: consolidated */
            atomic_fetch_sub(&L->scan_rows, dels.n);
            atomic_fetch_sub(&L->deleted, dels.n);
        }
    }
    free(dels.ids);
    return rc;
}
