/*
 * live.c: live updates of diskann-record and diskann-resident, after
 * FreshDiskANN (Singh et al., "FreshDiskANN: A Fast and Accurate
 * Graph-Based ANN Index for Streaming Similarity Search", 2021), with the
 * index kept as records (layout.h, tables 0x04 to 0x07).
 *
 * insert(id, x): x's vector record and its PQ code as a pending record,
 *   in one write batch: durable and atomic when the call returns, and the
 *   graph is not touched, so writers never conflict over it.
 * remove(id): a tombstone record; the id joins the in-memory deleted set
 *   before the call returns, and searches skip it from then on.
 * Searches (search.c) walk the graph, score every pending code and
 *   re-rank both kinds of candidate together with full vectors.
 * merge(): first consolidates deletes (Algorithm 4 of the paper: every
 *   node with a deleted out-neighbour d takes d's neighbours as
 *   candidates and is re-pruned to R when they exceed it; then the deleted
 *   nodes' records go, in the batch after every edge into them is gone),
 *   then links the pending vectors into the graph in chunks of
 *   DREC_MERGE_CHUNK, each as the build does it
 *   (engines/core/vamana.h) but in two phases.  On merge_threads workers,
 *   each with its own snapshot and a bounded cache of the records its
 *   searches read (merge_cache_mb in all: mg_rcache): a
 *   greedy search for every vector of the chunk from the medoid with list
 *   size L_build (ranked by PQ distance, reading node records as a query
 *   does) and RobustPrune(alpha, R) of the expanded nodes by exact
 *   distances among those candidates and the chunk's other vectors (so
 *   a topic inserted in one chunk links within itself; FreshDiskANN's
 *   insert phase links each vector to older nodes only).  A merge with
 *   enough to link (at least graph_nodes / L_build vectors) whose graph
 *   fits merge_snapshot_mb first reads every node's neighbour ids and
 *   code into memory in one sequential scan (mg_snap) and keeps that
 *   copy current chunk by chunk: its searches and the serial phase then
 *   read only vector records, and the merged graph is the same byte for
 *   byte.  Then every new node of the chunk is attached (mg_attach), and
 *   after all of them the back-edges to each from its out-neighbours in
 *   its neighbourhood (its peers and the nodes of its search's final
 *   list, not the nodes the search passed on its way from the medoid:
 *   Vamana's build adds those too, but a merge would re-prune them with
 *   the newest region's nodes only), where a node takes a back-edge while
 *   it has fewer than ceil(1.3 R) neighbours and is re-pruned to R only
 *   when one more would pass that (the slack is kept in the records:
 *   layout.h); a node's offers in the chunk's order, different nodes on
 *   different workers (link_backedges).  The result does not depend on
 *   the number of workers.  The chunk's node records, the removal of its
 *   pending records and the live state are one write batch; with the
 *   graph in memory, DREC_MERGE_WRITE_CHUNKS chunks are (the snapshot
 *   keeps their links for the searches meanwhile), written on RocksDB
 *   while the next chunks are linked (mg_committer).
 *   Readers take a snapshot per query (LMDB read transactions, RocksDB
 *   snapshots on writable stores), and every batch leaves a consistent
 *   graph, so a search during a merge sees each node's record either
 *   before or after it, and a kill at any moment leaves the last batch
 *   committed: the merge resumes from what is still pending or deleted.
 *   The background merger runs merge() whenever merge_every inserts are
 *   pending.
 * Live build (layout.h version 3): an untrained index takes inserts as
 *   vector records alone and removes as tombstones; merge() drops the
 *   deleted vectors; the insert that brings the live vectors to
 *   DREC_SCAN_BELOW trains PQ and builds the first graph, synchronously,
 *   in one batch (livebuild.c).  Everything after is the above.
 *
 * Errors name the store and the id.  Bad input writes nothing.
 */
#include "engines/diskann_record/drec.h"
#include "engines/core/update.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/parallel.h"
#include "engines/core/populate.h"
#include "engines/core/status.h"
#include "engines/core/u32map.h"
#include "engines/core/vamana.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pending vectors linked per write batch; each is pruned among its graph
 * candidates and the chunk's other vectors (mg_search_prune).  Until
 * 2026-12-06 a chunk was a tenth of the graph (256 to 16,384) and its
 * vectors did not see each other, so a topic inserted in document order
 * linked only to older nodes: live builds of topic-ordered rows reached
 * recall 0.73-0.77 against 0.999 one-pass, and merging 10,000 such rows
 * into 90,000 lost 0.020.  Chunks of 64 seeing each other: 0.999, the
 * 10,000 merged in 4.6-4.8 s against 3.6 (docs/reproducing.md, "The 100k
 * twins on the fitted preset"); small, because each vector compares
 * itself with every other of its chunk. */
#define DREC_MERGE_CHUNK 64u
/* Chunks per write batch when the merge has the graph in memory (its
 * searches then read no node record, so a chunk need not be written
 * before the next is linked): a node that takes back-edges in several of
 * them is written once.  Merging 100,000 into 900,000 (docs/reproducing.md,
 * "The merge at 1M"): 54.9-59.1 s against 66.0-70.0 s a chunk a batch,
 * with the same graph; 64 chunks a batch, 55.0 and 59.5 s, no better. */
#define DREC_MERGE_WRITE_CHUNKS 16u
#define DREC_REPAIR_BATCH 512u  /* re-linked nodes per batch while consolidating */
/* merge_cache_mb by default on RocksDB (on LMDB: none).  Measured with
 * bench_merge, 20,000 built + 2,000 merged (docs/reproducing.md, merge
 * throughput): merges on RocksDB 14% and 25% faster with it in the
 * medians of three rounds (-11% to +62% a round), on LMDB the same or up
 * to 20% slower (a cached node record is a 6.6 KB copy of what LMDB's get
 * hands out in place). */
#define DREC_MERGE_CACHE_MB 64.0
/* merge_snapshot_mb by default: the graph and the vectors of about 150,000
 * nodes at 768 dimensions (R 64, 96-byte codes: 436 bytes a node and
 * 3,072 a vector), or the graph alone of about 1.2 million. */
#define DREC_MERGE_SNAPSHOT_MB 512.0

/* ---- open / close ------------------------------------------------------ */

static void atomic_max_u32(_Atomic uint32_t *a, uint32_t v)
{
    uint32_t cur = atomic_load(a);
    while (cur < v && !atomic_compare_exchange_weak(a, &cur, v))
        ;
}

/* Step through every record of one table in rd's snapshot (one pass:
 * kv_iter_create_scan); fn returns 0 to go on. */
typedef int (*table_fn)(ann_engine *e, uint32_t id, const kv_val *v, void *arg);

static int each_record(ann_engine *e, kv_reader *rd, uint8_t table, table_fn fn, void *arg)
{
    kv_iter *it = NULL;
    kv_val k, v;
    int rc = kv_iter_create_scan(rd, &table, 1, &it), step;
    if (rc)
        return rc;
    while ((step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t id = 0;
        if (kv_key_parse_u32(k.data, k.len, NULL, &id) != 0) {
            rc = ann_fail(ANN_ECORRUPT, "%s: table 0x%02x: a key of %zu bytes", e->store_dir,
                          table, k.len);
            break;
        }
        rc = fn(e, id, &v, arg);
        if (rc)
            break;
    }
    if (!rc && step < 0)
        rc = step;
    kv_iter_destroy(it);
    return rc;
}

/* ---- the shared pending-code copy (writers: under wlock, or at open) ---- */

/* Add a row at the tail; 0, or -1 when the cap (or memory) is reached. */
static int pc_push(ann_engine *e, uint32_t id, const uint8_t *code)
{
    drec_live *L = &e->live;
    uint64_t tail = atomic_load(&L->pc_tail);
    uint8_t *row = tail - atomic_load(&L->pc_head) < L->pc_cap
                       ? ann_idrows_put(&L->pc_rows, (uint32_t)tail)
                       : NULL;
    if (!row)
        return -1;
    ann_put_u32(row, id);
    memcpy(row + 4, code, e->meta.pq_bytes);
    if (L->pc_lb) {
        const uint32_t m = e->meta.pq_bytes, pos = pq_lb_pos((uint32_t)(tail % PQ_LB_LANES));
        const uint64_t row0 = tail / PQ_LB_LANES * m;
        for (uint32_t j = 0; j < m; j++) {
            uint8_t *r = ann_idrows_put(&L->pc_blocks, (uint32_t)(row0 + j));
            if (!r)
                return -1;
            r[pos] = code[j];
        }
    }
    atomic_store(&L->pc_tail, tail + 1); /* publishes the row */
    return 0;
}

/* Append (id, code) after its commit; past the cap the copy stops being
 * complete and searches fall back to the store. */
static void pc_append(ann_engine *e, uint32_t id, const uint8_t *code)
{
    drec_live *L = &e->live;
    if (atomic_load(&L->pc_complete) && pc_push(e, id, code) != 0)
        atomic_store(&L->pc_complete, 0);
}

/*
 * Move pc_head to head.  The pages wholly below it are freed at once when
 * no search is in flight (pc_active, counted from before a search reads
 * pc_head and takes its snapshot to its end: a search that starts later
 * reads the new head); otherwise at a later advance.
 */
static void pc_advance(ann_engine *e, uint64_t head)
{
    drec_live *L = &e->live;
    if (head > atomic_load(&L->pc_head))
        atomic_store(&L->pc_head, head);
    if (atomic_load(&L->pc_active) != 0)
        return;
    uint64_t upto = atomic_load(&L->pc_head) >> ANN_PAGE_BITS;
    for (; L->pc_freed < upto; L->pc_freed++)
        free(atomic_exchange(&L->pc_rows.dir[L->pc_freed % ANN_PAGE_COUNT], NULL));
    if (!L->pc_lb)
        return;
    /* the rows of the blocks wholly below the head */
    upto = atomic_load(&L->pc_head) / PQ_LB_LANES * e->meta.pq_bytes >> ANN_PAGE_BITS;
    for (; L->pcb_freed < upto; L->pcb_freed++)
        free(atomic_exchange(&L->pc_blocks.dir[L->pcb_freed % ANN_PAGE_COUNT], NULL));
}

static int pc_reload_one(ann_engine *e, uint32_t id, const kv_val *v, void *arg)
{
    (void)arg;
    if (v->len != e->meta.pq_bytes)
        return ann_fail(ANN_ECORRUPT, "%s: pending record %u: length %zu, expected %u",
                        e->store_dir, id, v->len, e->meta.pq_bytes);
    return pc_push(e, id, v->data) == 0 ? 0 : 1;
}

/* Rebuild the copy from the store's pending records (under wlock, so no
 * insert commits meanwhile) when they fit; complete only once it holds
 * them all. */
static int pc_reload(ann_engine *e)
{
    drec_live *L = &e->live;
    if (L->pc_cap == 0 || atomic_load(&L->pending) > L->pc_cap)
        return 0;
    pc_advance(e, atomic_load(&L->pc_tail));
    int rc = kv_reader_begin(L->wrd);
    if (!rc) {
        rc = each_record(e, L->wrd, DREC_TABLE_PENDING, pc_reload_one, NULL);
        kv_reader_end(L->wrd);
    }
    if (rc == 0)
        atomic_store(&L->pc_complete, 1);
    return rc < 0 ? rc : 0;
}

static int load_tombstone(ann_engine *e, uint32_t id, const kv_val *v, void *arg)
{
    (void)arg;
    if (v->len != DREC_TOMBSTONE_BYTES)
        return ann_fail(ANN_ECORRUPT, "%s: tombstone %u: length %zu, expected %d", e->store_dir,
                        id, v->len, DREC_TOMBSTONE_BYTES);
    if (ann_idbits_set(&e->live.dead, id, 1))
        return ann_fail(-ENOMEM, "%s: no memory for the deleted-id set", e->store_dir);
    atomic_fetch_add(&e->live.deleted, 1);
    if (id != UINT32_MAX) /* id_state's bound covers every record */
        atomic_max_u32(&e->live.id_bound, id + 1);
    return 0;
}

static int load_pending(ann_engine *e, uint32_t id, const kv_val *v, void *arg)
{
    (void)arg;
    if (v->len != e->meta.pq_bytes)
        return ann_fail(ANN_ECORRUPT, "%s: pending record %u: length %zu, expected %u",
                        e->store_dir, id, v->len, e->meta.pq_bytes);
    atomic_fetch_add(&e->live.pending, 1);
    if (id != UINT32_MAX)
        atomic_max_u32(&e->live.id_bound, id + 1);
    pc_append(e, id, v->data);
    return 0;
}

static int load_live_code(ann_engine *e, uint32_t id, const kv_val *v, void *arg)
{
    (void)arg;
    const uint32_t m = e->meta.pq_bytes;
    if (v->len != m || id >= atomic_load(&e->live.id_bound))
        return ann_fail(ANN_ECORRUPT, "%s: live code record %u: length %zu (expected %u) or id "
                        "beyond the live state's id_bound", e->store_dir, id, v->len, m);
    uint8_t *row = id < e->meta.n ? e->codes + (size_t)id * m : ann_idrows_put(&e->live.codes, id);
    if (!row)
        return ann_fail(-ENOMEM, "%s: no memory for live codes", e->store_dir);
    memcpy(row, v->data, m);
    return 0;
}

/* An untrained index's vector record (at open): counted, its id bounds. */
static int count_vector(ann_engine *e, uint32_t id, const kv_val *v, void *arg)
{
    (void)arg;
    if (v->len != (size_t)e->meta.dim * 4)
        return ann_fail(ANN_ECORRUPT, "%s: vector %u: record length %zu, expected %zu",
                        e->store_dir, id, v->len, (size_t)e->meta.dim * 4);
    atomic_fetch_add(&e->live.scan_rows, 1);
    if (id != UINT32_MAX)
        atomic_max_u32(&e->live.id_bound, id + 1);
    return 0;
}

static void *merger_main(void *arg);

int drec_live_open(ann_engine *e, kv_reader *rd, const json_t *open_params)
{
    drec_live *L = &e->live;
    int rc;
    L->enabled = ann_param_bool(open_params, drec_open_params, "updates");
    L->merge_every = (uint32_t)ann_param_int(open_params, drec_open_params, "merge_every");
    L->merge_threads = (uint32_t)ann_param_int(open_params, drec_open_params, "merge_threads");
    double cache_mb = ann_param_real(open_params, drec_open_params, "merge_cache_mb");
    if (cache_mb < 0) /* a cache saves RocksDB's copying gets; LMDB's copy nothing */
        cache_mb = kv_store_backend(e->kv) == KV_BACKEND_LMDB ? 0 : DREC_MERGE_CACHE_MB;
    L->merge_cache_bytes = (size_t)(cache_mb * 1048576.0);
    double snap_mb = ann_param_real(open_params, drec_open_params, "merge_snapshot_mb");
    L->merge_snapshot_bytes = (size_t)((snap_mb < 0 ? DREC_MERGE_SNAPSHOT_MB : snap_mb) * 1048576.0);
    L->compact_after_merge =
        ann_param_bool(open_params, drec_open_params, "compact_after_merge");
    if (L->compact_after_merge && !L->enabled)
        return ann_fail(ANN_EPARAM, "open: compact_after_merge needs \"updates\": true");
    if (L->merge_threads == 0)
        L->merge_threads = (uint32_t)ann_ncores();
    if (L->merge_every && !L->enabled)
        return ann_fail(ANN_EPARAM, "open: merge_every %u needs \"updates\": true",
                        L->merge_every);
    pthread_mutex_init(&L->wlock, NULL);
    pthread_mutex_init(&L->mlock, NULL);
    pthread_cond_init(&L->cond, NULL);
    L->inited = 1;
    if (ann_idbits_init(&L->dead) || ann_idrows_init(&L->codes, e->meta.pq_bytes) ||
        ann_idrows_init(&L->pc_rows, 4 + (size_t)e->meta.pq_bytes))
        return ann_fail(-ENOMEM, "%s: no memory for the live-update state", e->store_dir);
    /* the byte-table filter's blocks: a second copy of the codes, counted
     * in pending_cache_mb */
    L->pc_lb = pq_lb_fast() && e->meta.pq_bytes > 0 && e->meta.pq_bytes <= PQ_LB_MAX_M &&
               e->meta.metric != ANN_METRIC_IP;
    if (L->pc_lb && ann_idrows_init(&L->pc_blocks, PQ_LB_LANES))
        return ann_fail(-ENOMEM, "%s: no memory for the live-update state", e->store_dir);
    double mb = ann_param_real(open_params, drec_open_params, "pending_cache_mb");
    L->pc_cap = (uint64_t)(mb * 1048576.0) /
                (4 + (uint64_t)e->meta.pq_bytes * (L->pc_lb ? 2 : 1));
    atomic_store(&L->pc_complete, L->pc_cap > 0);
    const int graph = e->meta.mode == DREC_MODE_GRAPH;
    const int untrained = !graph && e->meta.version != DREC_VERSION_GRAPH;
    atomic_store(&L->mode, e->meta.mode);
    atomic_store(&L->id_bound, (uint32_t)e->meta.n);
    atomic_store(&L->graph_nodes, graph ? e->meta.n : 0);
    atomic_store(&L->scan_rows, graph || untrained ? 0 : e->meta.n); /* untrained: counted */

    uint8_t key[KV_KEY_U32_BYTES];
    kv_val sv = { 0 };
    rc = kv_get(rd, key, kv_key_u32(key, DREC_TABLE_STATE, 0), &sv);
    if (rc == 0) {
        drec_state st;
        rc = drec_state_decode(sv.data, sv.len, e->store_dir, &st);
        kv_val_release(&sv);
        if (rc)
            return rc;
        if (st.id_bound < e->meta.n)
            return ann_fail(ANN_ECORRUPT, "%s: live-state record: field id_bound out of range",
                            e->store_dir);
        atomic_store(&L->id_bound, st.id_bound);
        atomic_store(&L->graph_nodes, st.graph_nodes);
        atomic_store(&L->merges, st.merges);
    } else if (rc != ANN_ENOTFOUND) {
        return rc;
    }
    if (graph) {
        rc = each_record(e, rd, DREC_TABLE_PENDING, load_pending, NULL);
        if (!rc)
            rc = each_record(e, rd, DREC_TABLE_TOMBSTONE, load_tombstone, NULL);
        if (!rc && e->meta.layout == DREC_LAYOUT_RESIDENT)
            rc = each_record(e, rd, DREC_TABLE_LIVE_CODE, load_live_code, NULL);
        if (rc)
            return rc;
    } else if (untrained) {
        rc = each_record(e, rd, DREC_TABLE_VECTOR, count_vector, NULL);
        if (!rc)
            rc = each_record(e, rd, DREC_TABLE_TOMBSTONE, load_tombstone, NULL);
        if (rc)
            return rc;
    }
    if (!L->enabled)
        return 0;
    rc = kv_reader_create(e->kv, &L->wrd);
    if (rc)
        return rc;
    if (L->merge_every && (graph || untrained)) {
        if (pthread_create(&L->thread, NULL, merger_main, e) != 0)
            return ann_fail(-EAGAIN, "%s: cannot start the background merger", e->store_dir);
        L->thread_started = 1;
    }
    return 0;
}

void drec_live_close(ann_engine *e)
{
    drec_live *L = &e->live;
    if (!L->inited)
        return;
    if (L->thread_started) {
        pthread_mutex_lock(&L->wlock);
        L->stop = 1;
        pthread_cond_signal(&L->cond);
        pthread_mutex_unlock(&L->wlock);
        pthread_join(L->thread, NULL);
        L->thread_started = 0;
    }
    kv_reader_destroy(L->wrd);
    L->wrd = NULL;
    ann_paged_fini(&L->dead);
    ann_paged_fini(&L->codes);
    ann_paged_fini(&L->pc_rows);
    ann_paged_fini(&L->pc_blocks);
    pthread_cond_destroy(&L->cond);
    pthread_mutex_destroy(&L->mlock);
    pthread_mutex_destroy(&L->wlock);
    L->inited = 0;
}

uint64_t drec_live_size(const ann_engine *e)
{
    const drec_live *L = &e->live;
    return atomic_load(&L->graph_nodes) + atomic_load(&L->pending) +
           atomic_load(&L->scan_rows) - atomic_load(&L->deleted);
}

/* ---- insert / remove --------------------------------------------------- */

static int writable(ann_engine *e, const char *op)
{
    int rc = ann_update_writable(e->store_dir, op, e->live.enabled);
    if (rc)
        return rc;
    /* (meta.mode is read only for version 2, whose mode never changes) */
    if (e->meta.version == DREC_VERSION_GRAPH && e->meta.mode != DREC_MODE_GRAPH)
        return ann_fail(ANN_EUNSUPPORTED, "%s: %s: the index is a version-%u exact scan "
                        "(fewer than %u vectors), which takes no updates: rebuild it",
                        e->store_dir, op, DREC_VERSION_GRAPH, DREC_SCAN_BELOW);
    return 0;
}

/* Which records id has (under wlock, through the writers' reader).  Every
 * record of every table has an id below id_bound (raised before any commit
 * that writes a larger id, and at open by every pending, tombstone and
 * untrained vector record), so an id at or past it has none and is
 * answered without reading the store: a stream of new ids costs no gets. */
static int id_state(ann_engine *e, uint32_t id, int *has_vector, int *has_tomb, int *has_pending)
{
    int *out[3] = { has_vector, has_tomb, has_pending };
    if (id >= atomic_load(&e->live.id_bound)) {
        for (int i = 0; i < 3; i++)
            if (out[i])
                *out[i] = 0;
        return 0;
    }
    kv_reader *rd = e->live.wrd;
    uint8_t key[KV_KEY_U32_BYTES];
    kv_val v = { 0 };
    int rc = kv_reader_begin(rd);
    if (rc)
        return rc;
    const uint8_t tables[3] = { DREC_TABLE_VECTOR, DREC_TABLE_TOMBSTONE, DREC_TABLE_PENDING };
    for (int i = 0; i < 3 && !rc; i++) {
        if (!out[i])
            continue;
        rc = kv_get(rd, key, kv_key_u32(key, tables[i], id), &v);
        *out[i] = rc == 0;
        kv_val_release(&v);
        if (rc == ANN_ENOTFOUND)
            rc = 0;
    }
    kv_reader_end(rd);
    return rc;
}

static void maybe_kick(ann_engine *e)
{
    drec_live *L = &e->live;
    if (L->thread_started && atomic_load(&L->pending) >= L->merge_every) {
        L->kick = 1;
        pthread_cond_signal(&L->cond);
    }
}

/* The refusal of an insert of id whose records are as given (under
 * wlock), or 0. */
static int insert_check_id(ann_engine *e, uint32_t id, int has_vec, int has_tomb)
{
    if (has_vec && !has_tomb)
        return ann_fail(ANN_EDATA, "%s: insert id %u: the id exists", e->store_dir, id);
    if (has_vec && drec_mode(e) == DREC_MODE_GRAPH && id == e->meta.medoid)
        return ann_fail(ANN_EDATA, "%s: insert id %u: the id is the graph's entry node, "
                        "deleted and kept as a frozen navigation point: it cannot be inserted "
                        "again", e->store_dir, id);
    if (has_vec)
        return ann_fail(ANN_EDATA, "%s: insert id %u: the id is deleted but not merged yet: "
                        "merge before inserting it again", e->store_dir, id);
    return 0;
}

/*
 * An insert into an untrained index (under wlock): its vector record alone
 * in one batch, or, when it brings the live vectors to DREC_SCAN_BELOW,
 * the training batch of drec_live_train (synchronous: the insert returns
 * once the first graph is committed and published).
 */
static int scan_insert(ann_engine *e, uint32_t id, const float *vec, const uint8_t *rec)
{
    drec_live *L = &e->live;
    int has_vec = 0, has_tomb = 0;
    int rc = id_state(e, id, &has_vec, &has_tomb, NULL);
    if (!rc)
        rc = insert_check_id(e, id, has_vec, has_tomb);
    if (rc)
        return rc;
    if (atomic_load(&L->scan_rows) - atomic_load(&L->deleted) + 1 >= DREC_SCAN_BELOW)
        return drec_live_train(e, id, vec, rec);
    kv_txn *t = NULL;
    uint8_t key[KV_KEY_U32_BYTES];
    rc = kv_txn_begin(e->kv, &t);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_VECTOR, id), rec,
                        (size_t)e->meta.dim * 4);
    if (!rc) {
        atomic_max_u32(&L->id_bound, id + 1);
        rc = kv_txn_commit(t);
        t = NULL;
    }
    kv_txn_abort(t);
    if (!rc) {
        ann_idbits_set(&L->dead, id, 0); /* an id consolidated before, live again */
        atomic_fetch_add(&L->scan_rows, 1);
    }
    return rc;
}

int drec_insert(ann_engine *e, uint32_t id, const float *vec, uint32_t dim)
{
    drec_live *L = &e->live;
    const uint32_t m = e->meta.pq_bytes;
    int rc = writable(e, "insert");
    if (rc)
        return rc;
    rc = ann_update_check_insert(e->store_dir, id, vec, dim, e->meta.dim);
    if (rc)
        return rc;
    /* a graph index encodes before the lock (an index never goes back to
     * a scan); one trained meanwhile, under it */
    uint8_t code[DREC_MAX_PQ_BYTES];
    int coded = drec_mode(e) == DREC_MODE_GRAPH;
    if (coded && (rc = pq_encode_one(e->pq, vec, code)) != 0)
        return rc;
    uint8_t *rec = malloc((size_t)dim * 4);
    if (!rec)
        return ann_fail(-ENOMEM, "%s: insert id %u: no memory", e->store_dir, id);
    for (uint32_t j = 0; j < dim; j++)
        ann_put_f32(rec + 4 * (size_t)j, vec[j]);

    pthread_mutex_lock(&L->wlock);
    if (drec_mode(e) == DREC_MODE_SCAN) {
        rc = scan_insert(e, id, vec, rec);
        pthread_mutex_unlock(&L->wlock);
        free(rec);
        return rc;
    }
    if (!coded)
        rc = pq_encode_one(e->pq, vec, code);
    int has_vec = 0, has_tomb = 0;
    kv_txn *t = NULL;
    uint8_t key[KV_KEY_U32_BYTES];
    if (!rc)
        rc = id_state(e, id, &has_vec, &has_tomb, NULL);
    if (!rc)
        rc = insert_check_id(e, id, has_vec, has_tomb);
    if (!rc)
        rc = kv_txn_begin(e->kv, &t);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_VECTOR, id), rec, (size_t)dim * 4);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_PENDING, id), code, m);
    if (!rc) {
        /* before the commit: a search that sees the record sees the bound */
        atomic_max_u32(&L->id_bound, id + 1);
        atomic_fetch_add(&L->pending, 1);
        rc = kv_txn_commit(t);
        t = NULL;
        if (rc)
            atomic_fetch_sub(&L->pending, 1);
    }
    kv_txn_abort(t);
    if (!rc) {
        ann_idbits_set(&L->dead, id, 0); /* an id consolidated before, live again */
        pc_append(e, id, code);
        maybe_kick(e);
    }
    pthread_mutex_unlock(&L->wlock);
    free(rec);
    return rc;
}

int drec_remove(ann_engine *e, uint32_t id)
{
    drec_live *L = &e->live;
    int rc = writable(e, "remove");
    if (rc)
        return rc;
    pthread_mutex_lock(&L->wlock);
    int has_vec = 0, has_tomb = 0, has_pending = 0;
    rc = id_state(e, id, &has_vec, &has_tomb, &has_pending);
    if (!rc)
        rc = ann_update_check_remove(e->store_dir, id, has_vec, has_tomb, &L->dead);
    if (!rc) /* kind 1: the id was still pending */
        rc = ann_update_put_tombstone(e->kv, DREC_TABLE_TOMBSTONE, id, has_pending ? 1 : 0);
    if (!rc) {
        ann_idbits_set(&L->dead, id, 1); /* its page exists: cannot fail */
        atomic_fetch_add(&L->deleted, 1);
    }
    pthread_mutex_unlock(&L->wlock);
    return rc;
}

/* ---- merge: the working set -------------------------------------------- */

typedef struct mg_node {
    uint32_t id, deg;
    uint32_t *nbrs; /* slack capacity */
    int dirty, is_new;
    int fresh; /* changed since the last mg_snap_update */
} mg_node;

/* Fixed-size items that never move, handed out in order and all taken
 * back at once (mg_clear keeps the blocks: no malloc per record read and
 * no page faults to refill them on the next chunk). */
#define MG_SLAB_ITEMS 1024u
typedef struct mg_slab {
    uint8_t **blk;
    uint32_t nblk, cap_blk, used;
    size_t item;
} mg_slab;

static void *slab_get(mg_slab *s)
{
    uint32_t b = s->used / MG_SLAB_ITEMS;
    if (b == s->nblk) {
        if (b == s->cap_blk) {
            uint32_t c = s->cap_blk ? 2 * s->cap_blk : 16;
            uint8_t **nb = realloc(s->blk, (size_t)c * sizeof *nb);
            if (!nb)
                return NULL;
            s->blk = nb;
            s->cap_blk = c;
        }
        if (!(s->blk[b] = malloc(MG_SLAB_ITEMS * s->item)))
            return NULL;
        (void)ann_populate(s->blk[b], MG_SLAB_ITEMS * s->item); /* filled next */
        s->nblk++;
    }
    return s->blk[b] + (size_t)(s->used++ % MG_SLAB_ITEMS) * s->item;
}

static void slab_fini(mg_slab *s)
{
    for (uint32_t b = 0; b < s->nblk; b++)
        free(s->blk[b]);
    free(s->blk);
    memset(s, 0, sizeof *s);
}

/*
 * A worker's read-through cache of the records its searches read: node
 * records for one chunk's link phase (one snapshot; the chunk's commit
 * changes them), vectors for the whole merge (no vector record changes
 * while it links).  The nodes near the entry point are read by nearly
 * every search, and each search would read them from the store
 * otherwise.  Direct-mapped by id, each slot with a use count (0..3): a
 * hit raises it, a miss on a used slot lowers it and replaces the record
 * only at 0, so the records most searches share stay while the rest pass
 * through.  Node records are kept as stored (checked when read), vectors
 * decoded.  nslots 0: off (every read from the store, as a query does).
 */
typedef struct mg_rcache {
    uint32_t nslots;
    size_t item;    /* bytes per slot */
    uint32_t *tag;  /* id + 1, 0: empty */
    uint8_t *use;   /* 0..3 */
    uint8_t *data;  /* nslots * item */
} mg_rcache;

static void rc_fini(mg_rcache *c)
{
    free(c->tag);
    free(c->use);
    free(c->data);
    memset(c, 0, sizeof *c);
}

/* Room for bytes / item slots (none when below 16); -ENOMEM. */
static int rc_init(mg_rcache *c, size_t bytes, size_t item)
{
    memset(c, 0, sizeof *c);
    size_t n = bytes / (item + sizeof *c->tag + 1);
    if (n < 16)
        return 0;
    if (n > UINT32_MAX / 2)
        n = UINT32_MAX / 2;
    c->tag = calloc(n, sizeof *c->tag);
    c->use = calloc(n, 1);
    c->data = malloc(n * item);
    if (!c->tag || !c->use || !c->data) {
        rc_fini(c);
        return -ENOMEM;
    }
    c->nslots = (uint32_t)n;
    c->item = item;
    return 0;
}

/* Forget every record (the next snapshot may differ); keeps the memory. */
static void rc_clear(mg_rcache *c)
{
    if (c->nslots) {
        memset(c->tag, 0, (size_t)c->nslots * sizeof *c->tag);
        memset(c->use, 0, c->nslots);
    }
}

/* id's record when cached, else NULL. */
static const uint8_t *rc_find(mg_rcache *c, uint32_t id)
{
    if (!c->nslots)
        return NULL;
    uint32_t s = id % c->nslots;
    if (c->tag[s] != id + 1)
        return NULL;
    if (c->use[s] < 3)
        c->use[s]++;
    return c->data + (size_t)s * c->item;
}

/* The slot to copy id's record (len <= item bytes) into after a miss, or
 * NULL when the slot's record is kept (its use count is lowered). */
static uint8_t *rc_admit(mg_rcache *c, uint32_t id, size_t len)
{
    if (!c->nslots || len > c->item)
        return NULL;
    uint32_t s = id % c->nslots;
    if (c->tag[s] && c->use[s] > 0) {
        c->use[s]--;
        return NULL;
    }
    c->tag[s] = id + 1;
    c->use[s] = 0;
    return c->data + (size_t)s * c->item;
}

/*
 * The merge's copy of the graph (merge_snapshot_mb): every node's
 * out-neighbours and, in the full layout, its PQ code, by id, read in one
 * sequential scan of the node table and kept up to date with every chunk
 * the merge commits.  With it, neither the link searches nor the serial
 * phase read node records (one read per expanded node otherwise, about
 * L_build per linked vector); a merge takes it when the whole graph fits
 * the budget and it has enough to link that the scan reads fewer records
 * than its searches would (mg_snap_worth).  When the vectors fit the
 * budget too, a second scan copies the vector table, and the searches
 * read no record at all: a link search expands about L_build nodes and
 * reads each one's vector, which was the larger part of its time on
 * RocksDB (bench_merge, 20,000 built + 2,000 merged: 4.4 us a vector read
 * through the workers' caches; the scan costs about 6 us a vector, and
 * reading on first use instead cost 21 us a vector, random reads, with
 * every vector read at least once).  Built from the same records the
 * searches would read, it changes nothing in the result.
 */
#define MG_SNAP_NONE UINT32_MAX /* deg of an id without a node */
typedef struct mg_snap {
    uint32_t n_ids; /* ids [0, n_ids) */
    uint32_t cap, m;
    uint32_t *deg;  /* n_ids: degree, or MG_SNAP_NONE */
    uint32_t *adj;  /* n_ids * cap */
    uint8_t *codes; /* n_ids * m (full layout); NULL for resident (codes in memory) */
    uint32_t dim;
    float *vecs;      /* n_ids * dim, or NULL: the vectors did not fit (records read) */
    uint8_t *has_vec; /* n_ids: 1 where vecs holds id's vector record */
} mg_snap;

typedef struct merger {
    ann_engine *e;
    mg_snap *snap; /* the graph in memory (shared by the workers), or NULL: node records
                    * from the store */
    kv_reader *rd; /* begun while a chunk reads */
    uint32_t R, cap, m, dim, L_build;
    float alpha;
    /* working copies of nodes, vectors and codes, by id */
    ann_u32map node_ix, vec_ix, code_ix;
    mg_node **nodes;
    float **vecs;
    uint8_t **codes;
    uint32_t n_nodes, n_vecs, n_codes, cap_nodes, cap_vecs, cap_codes;
    mg_slab node_slab, nbr_slab, vec_slab, code_slab; /* what they point at */
    /* greedy search */
    ann_candlist cl;
    ann_u32map seen;
    float *table;
    /* prune pool */
    uint32_t *pool_id;
    float *pool_d, *rows, *xq;
    uint32_t pool_cap;
    uint32_t *out;
    /* deleted ids being consolidated, with their neighbour lists */
    ann_u32map del;
    /* a link worker's searches: node records and vectors read (mg_rcache) */
    mg_rcache node_rc, vec_rc;
} merger;

static int grow_ptrs(void ***arr, uint32_t *cap, uint32_t need)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? 2 * *cap : 256;
    while (c < need)
        c *= 2;
    void **a = realloc(*arr, (size_t)c * sizeof *a);
    if (!a)
        return -ENOMEM;
    *arr = a;
    *cap = c;
    return 0;
}

static void mg_clear(merger *g)
{
    g->n_nodes = g->n_vecs = g->n_codes = 0;
    g->node_slab.used = g->nbr_slab.used = g->vec_slab.used = g->code_slab.used = 0;
    ann_u32map_clear(&g->node_ix);
    ann_u32map_clear(&g->vec_ix);
    ann_u32map_clear(&g->code_ix);
}

static void mg_fini(merger *g)
{
    mg_clear(g);
    free(g->nodes);
    free(g->vecs);
    free(g->codes);
    slab_fini(&g->node_slab);
    slab_fini(&g->nbr_slab);
    slab_fini(&g->vec_slab);
    slab_fini(&g->code_slab);
    ann_u32map_fini(&g->node_ix);
    ann_u32map_fini(&g->vec_ix);
    ann_u32map_fini(&g->code_ix);
    ann_u32map_fini(&g->seen);
    ann_u32map_fini(&g->del);
    ann_candlist_fini(&g->cl);
    rc_fini(&g->node_rc);
    rc_fini(&g->vec_rc);
    free(g->table);
    free(g->pool_id);
    free(g->pool_d);
    free(g->rows);
    free(g->xq);
    free(g->out);
    kv_reader_destroy(g->rd);
}

static int mg_init(merger *g, ann_engine *e)
{
    memset(g, 0, sizeof *g);
    g->e = e;
    g->R = e->meta.R;
    g->cap = drec_max_degree(g->R);
    g->m = e->meta.pq_bytes;
    g->dim = e->meta.dim;
    g->L_build = e->meta.L_build;
    g->alpha = e->meta.alpha;
    g->pool_cap = 4 * g->L_build + 2 * g->cap + 64 + DREC_MERGE_CHUNK; /* + a chunk's peers */
    g->node_slab.item = sizeof(mg_node);
    g->nbr_slab.item = (size_t)g->cap * sizeof(uint32_t);
    g->vec_slab.item = (size_t)g->dim * sizeof(float);
    g->code_slab.item = g->m;
    g->table = malloc(pq_table_floats(e->pq) * sizeof(float));
    g->pool_id = malloc((size_t)g->pool_cap * sizeof *g->pool_id);
    g->pool_d = malloc((size_t)g->pool_cap * sizeof *g->pool_d);
    g->rows = malloc((size_t)g->pool_cap * g->dim * sizeof *g->rows);
    g->xq = malloc((size_t)g->dim * sizeof *g->xq);
    g->out = malloc((size_t)g->pool_cap * sizeof *g->out);
    if (!g->table || !g->pool_id || !g->pool_d || !g->rows || !g->xq || !g->out ||
        ann_candlist_create(&g->cl, g->L_build) != 0)
        return ann_fail(-ENOMEM, "%s: merge: no memory", e->store_dir);
    return kv_reader_create(e->kv, &g->rd);
}

static int mg_nomem(merger *g)
{
    return ann_fail(-ENOMEM, "%s: merge: no memory", g->e->store_dir);
}

static size_t mg_snap_node_bytes(const ann_engine *e)
{
    size_t code = e->meta.layout == DREC_LAYOUT_FULL ? e->meta.pq_bytes : 0;
    return sizeof(uint32_t) * (1 + (size_t)drec_max_degree(e->meta.R)) + code;
}

/* Whether a merge linking `linking` vectors should take the snapshot: it
 * fits merge_snapshot_mb, and its scan (one read per graph node, in key
 * order) is smaller than the node reads of the link searches (about
 * L_build each, at random). */
static int mg_snap_worth(const ann_engine *e, uint64_t linking)
{
    uint64_t ids = atomic_load(&e->live.id_bound), nodes = atomic_load(&e->live.graph_nodes);
    return linking > 0 && ids > 0 &&
           (double)ids * (double)mg_snap_node_bytes(e) <= (double)e->live.merge_snapshot_bytes &&
           linking * e->meta.L_build >= nodes;
}

/* Whether the merge's snapshot takes the vectors too: graph and vectors
 * fit merge_snapshot_mb together. */
static int mg_snap_vecs_fit(const ann_engine *e)
{
    uint64_t ids = atomic_load(&e->live.id_bound);
    double per = (double)mg_snap_node_bytes(e) + (double)e->meta.dim * sizeof(float);
    return (double)ids * per <= (double)e->live.merge_snapshot_bytes;
}

static void mg_snap_fini(mg_snap *s)
{
    free(s->deg);
    free(s->adj);
    free(s->codes);
    free(s->vecs);
    free(s->has_vec);
    memset(s, 0, sizeof *s);
}

/* id's out-neighbours in the snapshot; corrupt when id has no node. */
static int mg_snap_node(const merger *g, uint32_t id, uint32_t *deg, const uint32_t **nbrs)
{
    const mg_snap *s = g->snap;
    if (id >= s->n_ids || s->deg[id] == MG_SNAP_NONE)
        return ann_fail(ANN_ECORRUPT, "%s: merge: node %u missing (an edge points at it)",
                        g->e->store_dir, id);
    *deg = s->deg[id];
    *nbrs = s->adj + (size_t)id * s->cap;
    return 0;
}

/* id's PQ code: the snapshot's (full layout) or the in-memory one. */
static const uint8_t *mg_snap_code(const merger *g, uint32_t id)
{
    const mg_snap *s = g->snap;
    if (!s->codes)
        return drec_resident_code(g->e, id);
    return id < s->n_ids && s->deg[id] != MG_SNAP_NONE ? s->codes + (size_t)id * s->m : NULL;
}

#define MG_PREFETCH 8 /* neighbours asked for ahead of mg_greedy's use */

/* Ask for what mg_greedy reads of neighbour id from the snapshot: its
 * slot in the seen map, its degree and its PQ code (in the snapshot, or
 * in memory for the resident layout), all at ids spread over the whole
 * graph, so each a cache miss when it is read. */
static inline void mg_snap_prefetch(const merger *g, uint32_t id)
{
    const mg_snap *s = g->snap;
    ann_u32map_prefetch(&g->seen, id);
    if (id >= s->n_ids)
        return;
    __builtin_prefetch(&s->deg[id]);
    const uint8_t *c = s->codes ? s->codes + (size_t)id * s->m : drec_resident_code(g->e, id);
    if (c) {
        __builtin_prefetch(c);
        __builtin_prefetch(c + s->m - 1);
    }
}

static int mg_get(merger *g, uint8_t table, uint32_t id, kv_val *v)
{
    uint8_t key[KV_KEY_U32_BYTES];
    int rc = kv_get(g->rd, key, kv_key_u32(key, table, id), v);
    if (rc == ANN_ENOTFOUND)
        return ann_fail(ANN_ECORRUPT, "%s: merge: %s record %u missing", g->e->store_dir,
                        table == DREC_TABLE_NODE ? "node" : table == DREC_TABLE_VECTOR ? "vector"
                                                                                   : "pending",
                        id);
    return rc;
}

static int mg_put_code(merger *g, uint32_t id, const uint8_t *code)
{
    if (ann_u32map_get(&g->code_ix, id, NULL))
        return 0;
    if (grow_ptrs((void ***)&g->codes, &g->cap_codes, g->n_codes + 1))
        return mg_nomem(g);
    uint8_t *c = slab_get(&g->code_slab);
    if (!c || ann_u32map_put(&g->code_ix, id, g->n_codes))
        return mg_nomem(g); /* a slab item taken is taken back by mg_clear */
    memcpy(c, code, g->m);
    g->codes[g->n_codes++] = c;
    return 0;
}

/* Node record id, checked: degree, neighbour ids and (full layout) the
 * node's own code and its neighbours' codes, pointing into *v. */
static int mg_node_record(merger *g, uint32_t id, kv_val *v, uint32_t *deg,
                          const uint8_t **ids, const uint8_t **codes)
{
    const uint32_t m = g->m, layout = g->e->meta.layout;
    int rc = mg_get(g, DREC_TABLE_NODE, id, v);
    if (rc)
        return rc;
    const uint8_t *rec = v->data;
    size_t head = layout == DREC_LAYOUT_FULL ? m : 0;
    uint32_t d = v->len >= head + 4 ? ann_get_u32(rec + head) : UINT32_MAX;
    if (d > g->cap || v->len != drec_node_bytes(layout, m, d)) {
        kv_val_release(v);
        return ann_fail(ANN_ECORRUPT, "%s: merge: node %u: record length %zu does not match "
                        "its degree", g->e->store_dir, id, v->len);
    }
    *deg = d;
    *ids = rec + head + 4;
    *codes = layout == DREC_LAYOUT_FULL ? *ids + 4 * (size_t)d : NULL;
    return 0;
}

/* Vector record id decoded into dst (dim floats): from the snapshot when
 * it holds the vectors, else from the store. */
static int mg_read_vec(merger *g, uint32_t id, float *dst)
{
    const mg_snap *s = g->snap;
    if (s && s->vecs && id < s->n_ids && s->has_vec[id]) {
        memcpy(dst, s->vecs + (size_t)id * s->dim, (size_t)s->dim * sizeof *dst);
        return 0;
    }
    kv_val v = { 0 };
    int rc = mg_get(g, DREC_TABLE_VECTOR, id, &v);
    if (rc)
        return rc;
    if (v.len != (size_t)g->dim * 4)
        rc = ann_fail(ANN_ECORRUPT, "%s: merge: vector %u: record length %zu, expected %zu",
                      g->e->store_dir, id, v.len, (size_t)g->dim * 4);
    for (uint32_t j = 0; !rc && j < g->dim; j++)
        dst[j] = ann_get_f32((const uint8_t *)v.data + 4 * (size_t)j);
    kv_val_release(&v);
    return rc;
}

/* A working node for id, empty (room for cap neighbours), indexed in g;
 * NULL when memory runs out (nothing added). */
static mg_node *mg_add_node(merger *g, uint32_t id)
{
    mg_node *n = slab_get(&g->node_slab);
    uint32_t *nbrs = n ? slab_get(&g->nbr_slab) : NULL;
    if (!n || !nbrs || grow_ptrs((void ***)&g->nodes, &g->cap_nodes, g->n_nodes + 1) ||
        ann_u32map_put(&g->node_ix, id, g->n_nodes))
        return NULL;
    g->nodes[g->n_nodes++] = n;
    *n = (mg_node){ .id = id, .nbrs = nbrs };
    return n;
}

/* Parse node id's record into a new working copy (codes into the cache). */
static int mg_load_node(merger *g, uint32_t id, mg_node **out)
{
    uint32_t ix;
    if (ann_u32map_get(&g->node_ix, id, &ix)) {
        *out = g->nodes[ix];
        return 0;
    }
    if (g->snap) { /* codes come from the snapshot too (mg_code) */
        uint32_t d = 0;
        const uint32_t *nbrs = NULL;
        int rc = mg_snap_node(g, id, &d, &nbrs);
        mg_node *n = rc ? NULL : mg_add_node(g, id);
        if (!rc && !n)
            rc = mg_nomem(g);
        if (rc)
            return rc;
        n->deg = d;
        memcpy(n->nbrs, nbrs, (size_t)d * sizeof *nbrs);
        *out = n;
        return 0;
    }
    kv_val v = { 0 };
    uint32_t d;
    const uint8_t *ids, *codes;
    int rc = mg_node_record(g, id, &v, &d, &ids, &codes);
    if (rc)
        return rc;
    mg_node *n = mg_add_node(g, id);
    if (!n) {
        kv_val_release(&v);
        return mg_nomem(g);
    }
    n->deg = d;
    for (uint32_t i = 0; i < d; i++)
        n->nbrs[i] = ann_get_u32(ids + 4 * (size_t)i);
    if (codes) {
        rc = mg_put_code(g, id, v.data);
        for (uint32_t i = 0; !rc && i < d; i++)
            rc = mg_put_code(g, n->nbrs[i], codes + (size_t)i * g->m);
    }
    kv_val_release(&v);
    *out = n;
    return rc;
}

/* A new working node (a pending vector being linked). */
static int mg_new_node(merger *g, uint32_t id, mg_node **out)
{
    mg_node *n = mg_add_node(g, id);
    if (!n)
        return mg_nomem(g);
    n->is_new = n->dirty = n->fresh = 1;
    *out = n;
    return 0;
}

static int mg_code(merger *g, uint32_t id, const uint8_t **out)
{
    uint32_t ix;
    if (ann_u32map_get(&g->code_ix, id, &ix)) {
        *out = g->codes[ix];
        return 0;
    }
    if (g->snap) {
        *out = mg_snap_code(g, id);
        if (*out)
            return 0;
        return ann_fail(ANN_ECORRUPT, "%s: merge: node %u has no PQ code", g->e->store_dir, id);
    }
    if (g->e->meta.layout == DREC_LAYOUT_RESIDENT) {
        *out = drec_resident_code(g->e, id);
        if (*out)
            return 0;
        return ann_fail(ANN_ECORRUPT, "%s: merge: node %u has no PQ code in memory",
                        g->e->store_dir, id);
    }
    mg_node *n;
    int rc = mg_load_node(g, id, &n);
    if (rc)
        return rc;
    if (!ann_u32map_get(&g->code_ix, id, &ix))
        return ann_fail(ANN_EINTERNAL, "merge: node %u loaded without its code", id);
    *out = g->codes[ix];
    return 0;
}

/* Vector id decoded into dst for a link search or a worker's re-prune:
 * from the worker's cache, else from the store (then cached when
 * admitted); the merge's own mergers have no cache. */
static int mg_search_vec(merger *g, uint32_t id, float *dst)
{
    const size_t bytes = (size_t)g->dim * sizeof(float);
    if (g->snap && g->snap->vecs)
        return mg_read_vec(g, id, dst);
    const uint8_t *r = rc_find(&g->vec_rc, id);
    if (r) {
        memcpy(dst, r, bytes);
        return 0;
    }
    int rc = mg_read_vec(g, id, dst);
    uint8_t *slot = rc ? NULL : rc_admit(&g->vec_rc, id, bytes);
    if (slot)
        memcpy(slot, dst, bytes);
    return rc;
}

static int mg_vec(merger *g, uint32_t id, const float **out)
{
    uint32_t ix;
    if (ann_u32map_get(&g->vec_ix, id, &ix)) {
        *out = g->vecs[ix];
        return 0;
    }
    /* a slab item taken by a failed read is taken back by mg_clear */
    float *x = slab_get(&g->vec_slab);
    if (!x)
        return mg_nomem(g);
    int rc = mg_search_vec(g, id, x); /* a worker's cache (mg_rcache), when it has one */
    if (rc)
        return rc;
    if (grow_ptrs((void ***)&g->vecs, &g->cap_vecs, g->n_vecs + 1) ||
        ann_u32map_put(&g->vec_ix, id, g->n_vecs))
        return mg_nomem(g);
    g->vecs[g->n_vecs++] = x;
    *out = x;
    return 0;
}

static int is_dead(const merger *g, uint32_t id)
{
    return ann_idbits_test(&g->e->live.dead, id);
}

/*
 * Prune node n's candidates ids[0..cnt) (distinct, n excluded) to R by
 * RobustPrune on exact vectors, into n's list.
 */
static int mg_prune_into(merger *g, mg_node *n, const uint32_t *ids, uint32_t cnt)
{
    const float *xn;
    int rc = mg_vec(g, n->id, &xn);
    if (rc)
        return rc;
    /* copy xn: mg_vec may not move it, but keep the rows self-contained */
    if (cnt > g->pool_cap)
        cnt = g->pool_cap;
    uint32_t np = 0;
    for (uint32_t i = 0; i < cnt; i++) {
        const float *x;
        rc = mg_vec(g, ids[i], &x);
        if (rc)
            return rc;
        g->pool_id[np] = ids[i];
        memcpy(g->rows + (size_t)np * g->dim, x, (size_t)g->dim * sizeof *x);
        g->pool_d[np] = ann_l2sq(xn, x, g->dim);
        np++;
    }
    int got = vamana_prune_rows(g->rows, g->dim, g->pool_d, np, g->alpha, g->R, g->out);
    if (got < 0)
        return got;
    for (int i = 0; i < got; i++)
        n->nbrs[i] = g->pool_id[g->out[i]];
    n->deg = (uint32_t)got;
    n->dirty = n->fresh = 1;
    return 0;
}

/* Re-prune n's list plus extra (when not VAMANA_NO_ID), dropping deleted ids. */
static int mg_reprune(merger *g, mg_node *n, uint32_t extra)
{
    uint32_t ids[1024 + 1], cnt = 0;
    if (n->deg + 1 > sizeof ids / sizeof ids[0])
        return ann_fail(ANN_EINTERNAL, "merge: node %u: degree %u", n->id, n->deg);
    for (uint32_t i = 0; i < n->deg; i++)
        if (!is_dead(g, n->nbrs[i]))
            ids[cnt++] = n->nbrs[i];
    if (extra != VAMANA_NO_ID)
        ids[cnt++] = extra;
    return mg_prune_into(g, n, ids, cnt);
}

/* The PQ code of id: from its node record's head (full layout; the record
 * in *v until released) or from memory (resident). */
static int mg_own_code(merger *g, uint32_t id, kv_val *v, const uint8_t **code)
{
    if (g->e->meta.layout == DREC_LAYOUT_RESIDENT) {
        *code = drec_resident_code(g->e, id);
        return *code ? 0
                     : ann_fail(ANN_ECORRUPT, "%s: merge: node %u has no PQ code in memory",
                                g->e->store_dir, id);
    }
    uint32_t d;
    const uint8_t *ids, *codes;
    int rc = mg_node_record(g, id, v, &d, &ids, &codes);
    if (!rc)
        *code = v->data;
    return rc;
}

/* Node record id for a link search: from the worker's cache, else from
 * the store (checked; copied into the cache when admitted).  The pointers
 * point into the cache or into *v, valid until *v is released and the next
 * node record is read. */
static int mg_search_node(merger *g, uint32_t id, kv_val *v, uint32_t *deg,
                          const uint8_t **ids, const uint8_t **codes, const uint8_t **rec)
{
    const uint32_t m = g->m, full = g->e->meta.layout == DREC_LAYOUT_FULL;
    const uint8_t *r = rc_find(&g->node_rc, id);
    if (!r) {
        int rc = mg_node_record(g, id, v, deg, ids, codes);
        if (rc)
            return rc;
        uint8_t *slot = rc_admit(&g->node_rc, id, v->len);
        if (!slot) {
            *rec = v->data;
            return 0;
        }
        memcpy(slot, v->data, v->len);
        kv_val_release(v);
        r = slot;
    }
    *rec = r;
    *deg = ann_get_u32(r + (full ? m : 0));
    *ids = r + (full ? m : 0) + 4;
    *codes = full ? *ids + 4 * (size_t)*deg : NULL;
    return 0;
}

/*
 * Greedy search for x (Algorithm 1, by PQ distance) from the medoid, as a
 * query does it: node records read as it goes (through the worker's
 * bounded cache, mg_rcache), neighbour codes taken from them (full layout)
 * or from memory (resident).  The
 * expanded nodes, live and not self, with exact squared L2 distances,
 * become the prune pool (g->pool_id / pool_d / rows, *np).
 */
static int mg_greedy(merger *g, uint32_t self, const float *x, uint32_t *np_out)
{
    ann_engine *e = g->e;
    pq_table_compute(e->pq, x, g->table);
    ann_candlist_reset_cap(&g->cl, g->L_build);
    ann_u32map_clear(&g->seen);
    uint32_t entry = e->meta.medoid, np = 0, d;
    kv_val v = { 0 };
    const uint8_t *code, *ids, *codes, *rec;
    const uint32_t *nbrs = NULL; /* the snapshot's list, or NULL: ids from a record */
    int rc;
    if (g->snap) {
        code = mg_snap_code(g, entry);
        rc = code ? 0
                  : ann_fail(ANN_ECORRUPT, "%s: merge: the entry point %u has no node",
                             e->store_dir, entry);
    } else if (e->meta.layout == DREC_LAYOUT_RESIDENT) {
        rc = mg_own_code(g, entry, &v, &code);
    } else {
        rc = mg_search_node(g, entry, &v, &d, &ids, &codes, &rec);
        code = rec; /* the full layout's record starts with the node's code */
    }
    if (rc)
        return rc;
    ann_candlist_insert(&g->cl, pq_adc_distance(g->table, code, g->m), entry);
    kv_val_release(&v);
    if (ann_u32map_put(&g->seen, entry, 1))
        return mg_nomem(g);
    uint32_t max_expand = 4 * g->L_build + 32;
    const int bounded = pq_table_nonneg(e->pq);
    for (uint32_t it = 0; it < max_expand; it++) {
        int pos = ann_candlist_next(&g->cl);
        if (pos < 0)
            break;
        uint32_t u = g->cl.c[pos].id;
        if (g->snap) {
            rc = mg_snap_node(g, u, &d, &nbrs);
            codes = NULL;
        } else {
            rc = mg_search_node(g, u, &v, &d, &ids, &codes, &rec);
        }
        if (rc)
            return rc;
        if (nbrs) /* MG_PREFETCH ahead of use (mg_snap_prefetch) */
            for (uint32_t i = 0; i < d && i < MG_PREFETCH; i++)
                mg_snap_prefetch(g, nbrs[i]);
        for (uint32_t i = 0; !rc && i < d; i++) {
            if (nbrs && i + MG_PREFETCH < d)
                mg_snap_prefetch(g, nbrs[i + MG_PREFETCH]);
            uint32_t w = nbrs ? nbrs[i] : ann_get_u32(ids + 4 * (size_t)i);
            if (ann_u32map_get(&g->seen, w, NULL))
                continue;
            if (ann_u32map_put(&g->seen, w, 1)) {
                rc = mg_nomem(g);
                break;
            }
            code = codes ? codes + (size_t)i * g->m
                   : nbrs ? mg_snap_code(g, w)
                          : drec_resident_code(e, w);
            if (!code)
                rc = ann_fail(ANN_ECORRUPT, "%s: merge: node %u has no PQ code in memory",
                              e->store_dir, w);
            else /* a code that cannot enter the full list is dropped part-summed */
                ann_candlist_insert(&g->cl,
                                    bounded ? pq_adc_distance_bounded(g->table, code, g->m,
                                                                      ann_candlist_bound(&g->cl))
                                            : pq_adc_distance(g->table, code, g->m),
                                    w);
        }
        kv_val_release(&v);
        if (rc)
            return rc;
        if (u != self && !is_dead(g, u) && np < g->pool_cap) {
            float *row = g->rows + (size_t)np * g->dim;
            rc = mg_search_vec(g, u, row);
            if (rc)
                return rc;
            g->pool_id[np] = u;
            g->pool_d[np] = ann_l2sq(x, row, g->dim);
            np++;
        }
    }
    *np_out = np;
    return 0;
}

/* Pending vector p = ids[self] of a chunk of n (vectors in cvec, n rows):
 * its out-neighbours (at most R): greedy search of the committed graph
 * from the medoid, then RobustPrune of the expanded nodes and the chunk's
 * other vectors (its peers, which the graph does not hold yet).  back[i]
 * says whether out[i] is in p's neighbourhood and takes a back-edge
 * (mg_backedges): a peer, or a node of the search's final list (the
 * L_build nearest it found).  An expanded node the search left behind (a
 * node on its way from the medoid: a long edge) is linked one way only.
 * Reads only (a worker's own merger and snapshot). */
static int mg_search_prune(merger *g, const uint32_t *ids, const float *cvec, uint32_t n,
                           uint32_t self, uint32_t *out, uint32_t *deg, uint8_t *back)
{
    uint32_t np = 0, p = ids[self];
    memcpy(g->xq, cvec + (size_t)self * g->dim, (size_t)g->dim * sizeof *g->xq);
    int rc = mg_greedy(g, p, g->xq, &np);
    if (rc)
        return rc;
    const uint32_t np_graph = np; /* pool rows from here on are peers */
    for (uint32_t i = 0; i < n && np < g->pool_cap; i++) {
        if (i == self)
            continue;
        const float *row = cvec + (size_t)i * g->dim;
        memcpy(g->rows + (size_t)np * g->dim, row, (size_t)g->dim * sizeof *row);
        g->pool_id[np] = ids[i];
        g->pool_d[np] = ann_l2sq(g->xq, row, g->dim);
        np++;
    }
    int got = vamana_prune_rows(g->rows, g->dim, g->pool_d, np, g->alpha, g->R, g->out);
    if (got < 0)
        return got;
    for (int i = 0; i < got; i++) {
        out[i] = g->pool_id[g->out[i]];
        uint8_t near = g->out[i] >= np_graph;
        for (uint32_t c = 0; !near && c < g->cl.n; c++)
            near = g->cl.c[c].id == out[i];
        back[i] = near;
    }
    *deg = (uint32_t)got;
    return 0;
}

/* Make pending vector p (code in the cache) a working node with
 * out-neighbours out[0..deg), which may name other vectors of its chunk:
 * every vector of a chunk is made a node before any back-edge is added
 * (mg_backedges). */
static int mg_attach(merger *g, uint32_t p, const uint32_t *out, uint32_t deg)
{
    mg_node *pn = NULL;
    int rc = mg_new_node(g, p, &pn);
    if (rc)
        return rc;
    memcpy(pn->nbrs, out, (size_t)deg * sizeof *out);
    pn->deg = deg;
    return 0;
}

/* One back-edge of a chunk: new node p (the seq'th of the chunk's edges
 * in link order) offered to its out-neighbour t. */
typedef struct mg_backedge {
    uint32_t t, p, seq;
} mg_backedge;

static int backedge_cmp(const void *a, const void *b)
{
    const mg_backedge *x = a, *y = b;
    if (x->t != y->t)
        return (x->t > y->t) - (x->t < y->t);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Offer new node p to working node j (the slack rule): appended while j
 * has fewer than cap neighbours, else j is re-pruned with it, on w's
 * scratch and vectors. */
static int mg_offer(merger *w, mg_node *j, uint32_t p)
{
    for (uint32_t t = 0; t < j->deg; t++)
        if (j->nbrs[t] == p)
            return 0;
    if (j->deg < w->cap) {
        j->nbrs[j->deg++] = p;
        j->dirty = j->fresh = 1;
        return 0;
    }
    return mg_reprune(w, j, p);
}

/*
 * The back-edges of a chunk's new nodes ids[0..n) (attached in g with the
 * lists out and the flags back, R per node: mg_search_prune) to the
 * out-neighbours in their neighbourhood, with the slack rule.  Until
 * 2026-12-06 (evening) every out-neighbour took one, as in Vamana's build:
 * merging 100,000 vectors of 40 unseen topics into 900,000 then re-pruned
 * the nodes on every search's way from the medoid (hubs) with the new
 * topics' nodes, and 12 of the 898 queries whose neighbours are all old
 * found none of them, 3 with the same vectors pending (recall@10 0.972
 * after the merge, 0.983 before it; docs/reproducing.md, "The merge at
 * 1M").  A one-pass build re-prunes such nodes with every region in turn;
 * a merge offers them only the newest.
 *
 * A node's list depends only on the edges offered to it, in order, so the
 * edges are grouped by target (in link order within each: node after
 * node, each one's list in order) and the targets spread over the
 * workers, each re-pruning with its own scratch and vector reads: the
 * same lists as offering them one after another.  Until 2026-12-07 they
 * were, on one thread: 22% of the merge's time at 1M with the other core
 * idle (docs/reproducing.md, "The merge at 1M").  The lists taken are out,
 * not the nodes' working lists, which earlier back-edges may have grown
 * or re-pruned.
 */
typedef struct backedge_job {
    merger *w;
    mg_backedge *be;
    uint32_t *start; /* group k: be[start[k] .. start[k + 1]) */
    mg_node **node;  /* group k's target, in g */
} backedge_job;

static int backedge_range(void *arg, uint64_t begin, uint64_t end, int worker)
{
    backedge_job *b = arg;
    for (uint64_t k = begin; k < end; k++)
        for (uint32_t i = b->start[k]; i < b->start[k + 1]; i++) {
            int rc = mg_offer(&b->w[worker], b->node[k], b->be[i].p);
            if (rc)
                return rc;
        }
    return 0;
}

/* ---- merge: writing ----------------------------------------------------- */

/* id's code for a record being written (mg_commit_write): mg_commit_prepare
 * found every one, in g's cache or, for a node already linked, in the
 * snapshot, read here by id alone: the snapshot's degrees may be changing
 * meanwhile (the next chunks' mg_snap_update beside mg_committer), a
 * linked node's code never. */
static int mg_code_written(merger *g, uint32_t id, const uint8_t **out)
{
    uint32_t ix;
    if (ann_u32map_get(&g->code_ix, id, &ix)) {
        *out = g->codes[ix];
        return 0;
    }
    if (g->snap && g->snap->codes && id < g->snap->n_ids) {
        *out = g->snap->codes + (size_t)id * g->m;
        return 0;
    }
    return mg_code(g, id, out);
}

/* Add n's record to t (full layout: with its and its neighbours' codes). */
static int mg_write_node(merger *g, kv_txn *t, const mg_node *n, uint8_t *buf)
{
    const uint32_t m = g->m, layout = g->e->meta.layout;
    uint8_t *p = buf;
    const uint8_t *code;
    int rc;
    if (layout == DREC_LAYOUT_FULL) {
        rc = mg_code_written(g, n->id, &code);
        if (rc)
            return rc;
        memcpy(p, code, m);
        p += m;
    }
    ann_put_u32(p, n->deg);
    p += 4;
    for (uint32_t i = 0; i < n->deg; i++, p += 4)
        ann_put_u32(p, n->nbrs[i]);
    if (layout == DREC_LAYOUT_FULL)
        for (uint32_t i = 0; i < n->deg; i++, p += m) {
            rc = mg_code_written(g, n->nbrs[i], &code);
            if (rc)
                return rc;
            memcpy(p, code, m);
        }
    uint8_t key[KV_KEY_U32_BYTES];
    return kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_NODE, n->id), buf,
                      drec_node_bytes(layout, m, n->deg));
}

static int put_state(ann_engine *e, kv_txn *t, uint64_t graph_nodes)
{
    drec_state st = { .id_bound = atomic_load(&e->live.id_bound), .graph_nodes = graph_nodes,
                      .merges = atomic_load(&e->live.merges) + 1 };
    uint8_t key[KV_KEY_U32_BYTES], rec[DREC_STATE_BYTES];
    drec_state_encode(&st, rec);
    return kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_STATE, 0), rec, sizeof rec);
}

static int node_id_cmp(const void *a, const void *b)
{
    uint32_t x = (*(mg_node *const *)a)->id, y = (*(mg_node *const *)b)->id;
    return (x > y) - (x < y);
}

/*
 * A write batch's commit (a chunk's, DREC_MERGE_WRITE_CHUNKS chunks', or
 * a batch of consolidated deletes) in two parts.  mg_commit_prepare, on the merge's
 * thread: the dirty working nodes (re-pruned to R first), every code their
 * records need (read while g's snapshot is open), sorted by id, and the
 * new nodes' codes put in memory (resident layout: before the commit that
 * links them).  mg_commit_write: one batch of their records, the removal
 * of the new nodes' pending records, their live codes (resident), extra_fn's
 * records and the state record; then g's working set is dropped.  Without
 * extra_fn the batch is written in key order (node records by id, then
 * the pending removals, the live codes and the state record) as a sorted
 * batch, which RocksDB streams into the file it ingests rather than
 * holding a copy of it (kv_txn_begin_sorted).  The write part reads only
 * g (its working set and codes), the snapshot's codes of nodes already
 * linked and the live state, so it may run on another thread while the
 * next chunks are linked (mg_committer).
 */
typedef struct mg_commit_job {
    merger *g;
    uint32_t n_new;
    int (*extra_fn)(merger *, kv_txn *, void *);
    void *arg;
    int64_t node_delta;
    mg_node **dirty;
    uint32_t n_dirty;
    uint64_t expect;
    int rc;
} mg_commit_job;

/* New node id's code into the resident layout's memory, before the write
 * that links it (and before a search of the merge's snapshot can reach
 * it: mg_snap_update).  The merge's thread is the one writer of these rows
 * while it links (the live build, the other, trains an untrained index,
 * which merges by another path), as paged.h asks; no lock, since the
 * writers' lock may be held by the batch being written meanwhile
 * (mg_committer). */
static int mg_resident_put(merger *g, uint32_t id, const uint8_t *code)
{
    ann_engine *e = g->e;
    uint8_t *row = id < e->meta.n ? e->codes + (size_t)id * g->m
                                  : ann_idrows_put(&e->live.codes, id);
    if (!row)
        return mg_nomem(g);
    memcpy(row, code, g->m);
    return 0;
}

static int mg_commit_prepare(merger *g, mg_commit_job *c)
{
    ann_engine *e = g->e;
    const uint32_t m = g->m;
    const int resident = e->meta.layout == DREC_LAYOUT_RESIDENT;
    c->g = g;
    c->n_dirty = 0;
    c->expect = 0;
    c->dirty = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof *c->dirty);
    int rc = c->dirty ? 0 : mg_nomem(g);
    for (uint32_t i = 0; !rc && i < g->n_nodes; i++) {
        mg_node *n = g->nodes[i];
        if (n->dirty && n->deg > g->cap) /* never: links re-prune at cap */
            rc = mg_reprune(g, n, VAMANA_NO_ID);
    }
    /* every code the records need, while the snapshot is open */
    for (uint32_t i = 0; !rc && i < g->n_nodes; i++) {
        mg_node *n = g->nodes[i];
        const uint8_t *own, *code;
        if (!n->dirty)
            continue;
        c->dirty[c->n_dirty++] = n;
        c->expect += KV_KEY_U32_BYTES + drec_node_bytes(e->meta.layout, m, n->deg) +
                     (n->is_new && resident ? KV_KEY_U32_BYTES + m : 0);
        rc = mg_code(g, n->id, &own);
        for (uint32_t j = 0; !rc && j < n->deg; j++)
            rc = mg_code(g, n->nbrs[j], &code);
        if (!rc && n->is_new && resident && !g->snap) /* else mg_snap_update did */
            rc = mg_resident_put(g, n->id, own);
    }
    if (!rc) {
        qsort(c->dirty, c->n_dirty, sizeof *c->dirty, node_id_cmp);
        return 0;
    }
    /* nothing to write: g's snapshot and working set go */
    free(c->dirty);
    c->dirty = NULL;
    kv_reader_end(g->rd);
    mg_clear(g);
    return rc;
}

static int mg_commit_write(mg_commit_job *c)
{
    merger *g = c->g;
    ann_engine *e = g->e;
    drec_live *L = &e->live;
    const uint32_t m = g->m;
    const int resident = e->meta.layout == DREC_LAYOUT_RESIDENT;
    uint8_t *buf = malloc(drec_node_bytes(e->meta.layout, m, g->cap));
    kv_txn *t = NULL;
    uint8_t key[KV_KEY_U32_BYTES];
    int rc = buf ? 0 : mg_nomem(g);
    /* every read done: end the snapshot before writing (LMDB may have to
     * grow its map, which it cannot do under an open reader); the store
     * takes one batch at a time, so the writers' lock spans it */
    kv_reader_end(g->rd);
    pthread_mutex_lock(&L->wlock);
    if (!rc)
        rc = c->extra_fn ? kv_txn_begin(e->kv, &t) : kv_txn_begin_sorted(e->kv, c->expect, &t);
    for (uint32_t i = 0; !rc && i < c->n_dirty; i++)
        rc = mg_write_node(g, t, c->dirty[i], buf);
    for (uint32_t i = 0; !rc && i < c->n_dirty; i++)
        if (c->dirty[i]->is_new)
            rc = kv_txn_delete(t, key, kv_key_u32(key, DREC_TABLE_PENDING, c->dirty[i]->id));
    for (uint32_t i = 0; !rc && resident && i < c->n_dirty; i++) {
        const mg_node *n = c->dirty[i];
        const uint8_t *code;
        if (!n->is_new)
            continue;
        rc = mg_code_written(g, n->id, &code);
        if (!rc)
            rc = kv_txn_put(t, key, kv_key_u32(key, DREC_TABLE_LIVE_CODE, n->id), code, m);
    }
    if (!rc && c->extra_fn)
        rc = c->extra_fn(g, t, c->arg);
    uint64_t nodes = (uint64_t)((int64_t)atomic_load(&L->graph_nodes) + c->node_delta);
    if (!rc)
        rc = put_state(e, t, nodes);
    if (!rc) {
        rc = kv_txn_commit(t);
        t = NULL;
        if (!rc) {
            atomic_store(&L->graph_nodes, nodes);
            atomic_fetch_sub(&L->pending, c->n_new);
            atomic_fetch_add(&L->merges, 1);
        }
    }
    kv_txn_abort(t);
    pthread_mutex_unlock(&L->wlock);
    free(buf);
    free(c->dirty);
    c->dirty = NULL;
    mg_clear(g);
    return rc;
}

/* Both parts on this thread (the snapshot g->rd ended either way). */
static int mg_commit(merger *g, uint32_t n_new, int (*extra_fn)(merger *, kv_txn *, void *),
                     void *arg, int64_t node_delta)
{
    mg_commit_job c = { .n_new = n_new, .extra_fn = extra_fn, .arg = arg,
                        .node_delta = node_delta };
    int rc = mg_commit_prepare(g, &c);
    return rc ? rc : mg_commit_write(&c);
}

/* ---- merge: deletes ----------------------------------------------------- */

typedef struct del_batch {
    const uint32_t *ids;
    uint32_t n;
} del_batch;

static int mg_write_removals(merger *g, kv_txn *t, void *arg)
{
    const del_batch *b = arg;
    uint8_t key[KV_KEY_U32_BYTES];
    static const uint8_t tables[] = { DREC_TABLE_NODE, DREC_TABLE_VECTOR, DREC_TABLE_PENDING,
                                      DREC_TABLE_LIVE_CODE, DREC_TABLE_TOMBSTONE };
    (void)g;
    for (uint32_t i = 0; i < b->n; i++)
        for (size_t j = 0; j < sizeof tables; j++) {
            int rc = kv_txn_delete(t, key, kv_key_u32(key, tables[j], b->ids[i]));
            if (rc)
                return rc;
        }
    return 0;
}

int drec_id_list_add(drec_id_list *l, uint32_t id)
{
    if (l->n == l->cap) {
        uint32_t c = l->cap ? 2 * l->cap : 1024;
        uint32_t *p = realloc(l->ids, (size_t)c * sizeof *p);
        if (!p)
            return -ENOMEM;
        l->ids = p;
        l->cap = c;
    }
    l->ids[l->n++] = id;
    return 0;
}

/* Read every id of one table in the merger's snapshot. */
static int list_one(ann_engine *e, uint32_t id, const kv_val *v, void *arg)
{
    (void)v;
    return drec_id_list_add(arg, id) ? ann_fail(-ENOMEM, "%s: merge: no memory", e->store_dir)
                                     : 0;
}

static int list_table(merger *g, uint8_t table, drec_id_list *out)
{
    return each_record(g->e, g->rd, table, list_one, out);
}

/* ---- merge: the graph in memory (mg_snap) ------------------------------- */

static int snap_one(ann_engine *e, uint32_t id, const kv_val *v, void *arg)
{
    mg_snap *s = arg;
    const uint32_t m = s->m, full = e->meta.layout == DREC_LAYOUT_FULL;
    const size_t head = full ? m : 0;
    uint32_t d = v->len >= head + 4 ? ann_get_u32((const uint8_t *)v->data + head) : UINT32_MAX;
    if (id >= s->n_ids || d > s->cap || v->len != drec_node_bytes(e->meta.layout, m, d))
        return ann_fail(ANN_ECORRUPT, "%s: merge: node %u: record length %zu does not match "
                        "its degree, or the id is past the live state's id_bound %u",
                        e->store_dir, id, v->len, s->n_ids);
    const uint8_t *ids = (const uint8_t *)v->data + head + 4;
    uint32_t *adj = s->adj + (size_t)id * s->cap;
    for (uint32_t i = 0; i < d; i++)
        adj[i] = ann_get_u32(ids + 4 * (size_t)i);
    s->deg[id] = d;
    if (full)
        memcpy(s->codes + (size_t)id * m, v->data, m);
    return 0;
}

static int snap_vec_one(ann_engine *e, uint32_t id, const kv_val *v, void *arg)
{
    mg_snap *s = arg;
    if (id >= s->n_ids || v->len != (size_t)s->dim * sizeof(float))
        return ann_fail(ANN_ECORRUPT, "%s: merge: vector %u: record length %zu, expected %zu, "
                        "or the id is past the live state's id_bound %u",
                        e->store_dir, id, v->len, (size_t)s->dim * sizeof(float), s->n_ids);
    float *dst = s->vecs + (size_t)id * s->dim;
    for (uint32_t j = 0; j < s->dim; j++)
        dst[j] = ann_get_f32((const uint8_t *)v->data + 4 * (size_t)j);
    s->has_vec[id] = 1;
    return 0;
}

/* Read the graph of g's snapshot into s, and its vectors when with_vecs
 * (empty on failure).  Its arrays are large and filled at once: huge
 * pages (populate.h). */
static int mg_snap_load(merger *g, mg_snap *s, int with_vecs)
{
    ann_engine *e = g->e;
    memset(s, 0, sizeof *s);
    s->n_ids = atomic_load(&e->live.id_bound);
    s->cap = g->cap;
    s->m = g->m;
    s->deg = ann_alloc_large((size_t)s->n_ids * sizeof *s->deg);
    s->adj = ann_alloc_large((size_t)s->n_ids * s->cap * sizeof *s->adj);
    if (e->meta.layout == DREC_LAYOUT_FULL)
        s->codes = ann_alloc_large((size_t)s->n_ids * s->m);
    int rc = !s->deg || !s->adj || (e->meta.layout == DREC_LAYOUT_FULL && !s->codes)
                 ? mg_nomem(g)
                 : 0;
    if (!rc) {
        memset(s->deg, 0xff, (size_t)s->n_ids * sizeof *s->deg); /* MG_SNAP_NONE */
        rc = each_record(e, g->rd, DREC_TABLE_NODE, snap_one, s);
    }
    if (!rc && with_vecs) {
        s->dim = g->dim;
        s->vecs = ann_alloc_large((size_t)s->n_ids * s->dim * sizeof *s->vecs);
        s->has_vec = calloc(s->n_ids ? s->n_ids : 1, 1);
        rc = !s->vecs || !s->has_vec ? mg_nomem(g)
                                     : each_record(e, g->rd, DREC_TABLE_VECTOR, snap_vec_one, s);
    }
    if (rc)
        mg_snap_fini(s);
    return rc;
}

/* After a chunk is linked (before its write, while g still holds it):
 * the lists it changed and its new nodes' codes into the snapshot (the
 * resident layout's codes into memory), so the next chunk's searches see
 * them. */
static int mg_snap_update(merger *g, mg_snap *s)
{
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        mg_node *n = g->nodes[i];
        if (!n->fresh)
            continue;
        n->fresh = 0;
        if (n->id >= s->n_ids || n->deg > s->cap)
            return ann_fail(ANN_EINTERNAL, "merge: node %u (degree %u) outside the snapshot",
                            n->id, n->deg);
        memcpy(s->adj + (size_t)n->id * s->cap, n->nbrs, (size_t)n->deg * sizeof *n->nbrs);
        s->deg[n->id] = n->deg;
        if (n->is_new) {
            const uint8_t *code;
            int rc = mg_code(g, n->id, &code);
            if (!rc && s->codes)
                memcpy(s->codes + (size_t)n->id * s->m, code, s->m);
            else if (!rc)
                rc = mg_resident_put(g, n->id, code);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Whether node v's stored record points at a deleted id (g->del). */
static int record_touches(merger *g, uint32_t v, int *touches)
{
    kv_val val = { 0 };
    uint32_t d;
    const uint8_t *ids, *codes;
    int rc = mg_node_record(g, v, &val, &d, &ids, &codes);
    if (rc)
        return rc;
    *touches = 0;
    for (uint32_t t = 0; t < d && !*touches; t++)
        *touches = ann_u32map_get(&g->del, ann_get_u32(ids + 4 * (size_t)t), NULL);
    kv_val_release(&val);
    return 0;
}

/*
 * Consolidate the deleted ids dels (the medoid excluded): re-link every
 * node pointing at one (committed in batches), then remove their records
 * in one last batch.  The reader is begun on entry and ended on return.
 */
static int mg_consolidate(merger *g, const drec_id_list *dels, uint32_t graph_dels)
{
    ann_engine *e = g->e;
    int rc = 0;
    ann_u32map_clear(&g->del);
    for (uint32_t i = 0; i < dels->n; i++)
        if (ann_u32map_put(&g->del, dels->ids[i], 1))
            return mg_nomem(g);
    if (graph_dels > 0) {
        /* every node record, in id order, from one snapshot */
        drec_id_list nodes = { 0 };
        rc = list_table(g, DREC_TABLE_NODE, &nodes);
        uint32_t *cand = malloc(((size_t)g->cap * (g->cap + 1) + 1) * sizeof *cand);
        ann_u32map cset = { 0 };
        if (!rc && !cand)
            rc = mg_nomem(g);
        uint32_t repaired = 0;
        for (uint32_t i = 0; !rc && i < nodes.n; i++) {
            uint32_t v = nodes.ids[i];
            if (ann_u32map_get(&g->del, v, NULL))
                continue;
            int touches = 0;
            if (!ann_u32map_get(&g->node_ix, v, NULL)) {
                rc = record_touches(g, v, &touches);
                if (rc || !touches)
                    continue;
            }
            mg_node *n;
            rc = mg_load_node(g, v, &n);
            if (rc)
                break;
            touches = 0;
            for (uint32_t t = 0; t < n->deg && !touches; t++)
                touches = ann_u32map_get(&g->del, n->nbrs[t], NULL);
            if (!touches)
                continue;
            /* candidates: live neighbours, and the live neighbours of
             * deleted ones (FreshDiskANN Algorithm 4) */
            uint32_t cnt = 0;
            ann_u32map_clear(&cset);
            uint32_t own[1024], own_deg = n->deg;
            memcpy(own, n->nbrs, (size_t)own_deg * sizeof *own);
            for (uint32_t t = 0; !rc && t < own_deg; t++) {
                uint32_t w = own[t];
                if (!ann_u32map_get(&g->del, w, NULL)) {
                    if (!ann_u32map_get(&cset, w, NULL)) {
                        if (ann_u32map_put(&cset, w, 1))
                            rc = mg_nomem(g);
                        cand[cnt++] = w;
                    }
                    continue;
                }
                mg_node *dn;
                rc = mg_load_node(g, w, &dn);
                for (uint32_t s = 0; !rc && s < dn->deg; s++) {
                    uint32_t x = dn->nbrs[s];
                    if (x == v || ann_u32map_get(&g->del, x, NULL) ||
                        ann_u32map_get(&cset, x, NULL))
                        continue;
                    if (ann_u32map_put(&cset, x, 1))
                        rc = mg_nomem(g);
                    cand[cnt++] = x;
                }
            }
            if (rc)
                break;
            if (cnt <= g->R) {
                memcpy(n->nbrs, cand, (size_t)cnt * sizeof *cand);
                n->deg = cnt;
                n->dirty = n->fresh = 1;
            } else {
                rc = mg_prune_into(g, n, cand, cnt);
            }
            if (!rc && ++repaired % DREC_REPAIR_BATCH == 0) {
                rc = mg_commit(g, 0, NULL, NULL, 0);
                if (!rc)
                    rc = kv_reader_begin(g->rd);
            }
        }
        ann_u32map_fini(&cset);
        free(cand);
        free(nodes.ids);
    }
    del_batch b = { dels->ids, dels->n };
    if (!rc)
        rc = mg_commit(g, 0, mg_write_removals, &b, -(int64_t)graph_dels);
    else
        kv_reader_end(g->rd);
    if (!rc)
        atomic_fetch_sub(&e->live.deleted, dels->n);
    return rc;
}

/* ---- merge -------------------------------------------------------------- */

/* One chunk's link phase: workers (one merger each, own snapshot) find the
 * out-neighbours of ids[0..n) (vectors in cvec) among the committed graph
 * and each other; out holds R per id. */
typedef struct link_job {
    merger *w;
    const uint32_t *ids;
    float *cvec;
    uint32_t *out, *deg, R, n;
    uint8_t *back; /* per out-edge: whether it takes a back-edge (mg_search_prune) */
    backedge_job bj; /* room for n * R edges and groups */
} link_job;

static int link_range(void *arg, uint64_t begin, uint64_t end, int worker)
{
    link_job *j = arg;
    for (uint64_t i = begin; i < end; i++) {
        int rc = mg_search_prune(&j->w[worker], j->ids, j->cvec, j->n, (uint32_t)i,
                                 j->out + i * j->R, &j->deg[i], j->back + i * j->R);
        if (rc)
            return rc;
    }
    return 0;
}

/*
 * The write part of a batch's commit on a thread of its own
 * (mg_commit_write), while the merge links the next chunks, when the
 * graph is in memory (the searches then read no node record) and the
 * store is RocksDB (LMDB cannot grow its map under the searches' open
 * readers).  One write at a time, joined before the next batch's write,
 * so batches land in order; meanwhile the next chunks change the
 * snapshot's lists, which the write does not read (mg_code_written).
 * Until 2026-12-07 every commit ran with the other core idle: 19% of the
 * merge's time at 1M (docs/reproducing.md, "The merge at 1M").
 */
typedef struct mg_committer {
    pthread_t th;
    int running;
    mg_commit_job job;
    char msg[1024]; /* the write's failure message (status.h keeps one per thread) */
} mg_committer;

static void *committer_main(void *arg)
{
    mg_committer *cm = arg;
    cm->job.rc = mg_commit_write(&cm->job);
    if (cm->job.rc)
        snprintf(cm->msg, sizeof cm->msg, "%s", ann_errmsg(cm->job.rc));
    return NULL;
}

/* Wait for the write in flight; its result (0 when none), with its
 * message on this thread when report (else this thread's failure, being
 * returned, keeps its own). */
static int committer_join(mg_committer *cm, int report)
{
    if (!cm->running)
        return 0;
    pthread_join(cm->th, NULL);
    cm->running = 0;
    return cm->job.rc && report ? ann_fail(cm->job.rc, "%s", cm->msg) : cm->job.rc;
}

/* Commit g's chunk: prepared here, written on cm's thread when async
 * (done in this thread if the thread cannot start). */
static int committer_start(mg_committer *cm, merger *g, uint32_t n_new, int async)
{
    mg_commit_job *c = &cm->job;
    *c = (mg_commit_job){ .n_new = n_new, .node_delta = n_new };
    int rc = mg_commit_prepare(g, c);
    if (rc)
        return rc;
    /* every read done; ended on the thread that began it (a RocksDB
     * reader's counters are that thread's), the write reads no record */
    kv_reader_end(g->rd);
    if (async && pthread_create(&cm->th, NULL, committer_main, cm) == 0) {
        cm->running = 1;
        return 0;
    }
    return mg_commit_write(c);
}

/* The chunk's back-edges (after every node of it is attached in g): the
 * edges grouped by target, the targets loaded into g one after another,
 * then offered on the nw workers (their snapshots begun). */
static int link_backedges(merger *g, merger *w, uint32_t nw, link_job *j)
{
    backedge_job *b = &j->bj;
    uint32_t ne = 0, ng = 0;
    for (uint32_t i = 0; i < j->n; i++)
        for (uint32_t k = 0; k < j->deg[i]; k++)
            if (j->back[(size_t)i * j->R + k]) {
                b->be[ne] = (mg_backedge){ .t = j->out[(size_t)i * j->R + k], .p = j->ids[i],
                                           .seq = ne };
                ne++;
            }
    qsort(b->be, ne, sizeof *b->be, backedge_cmp);
    for (uint32_t i = 0; i < ne; i++) {
        if (i > 0 && b->be[i].t == b->be[i - 1].t)
            continue;
        int rc = mg_load_node(g, b->be[i].t, &b->node[ng]);
        if (rc)
            return rc;
        b->start[ng++] = i;
    }
    b->start[ng] = ne;
    b->w = w;
    return ann_parallel_for((int)nw, ng, 1, backedge_range, b);
}

/*
 * Link the chunk ids[0..n) (codes in g's cache, g's snapshot begun): the
 * out-neighbours of every id are found in parallel, among the graph as the
 * last batch left it and the chunk's other vectors (FreshDiskANN's insert
 * phase searches the graph alone: a topic inserted in file order then
 * links only to older nodes, never within itself), then the new nodes are
 * added in g and their back-edges offered on the workers
 * (link_backedges).  "The graph as the last batch left it" is the
 * snapshot's, kept current chunk by chunk, or the store's when the merge
 * has none (then every chunk is written before the next is linked).  On
 * failure g's snapshot is ended and its working set dropped.
 */
static int link_chunk(merger *g, merger *w, uint32_t nw, link_job *j, uint32_t n)
{
    int rc = 0;
    uint32_t begun = 0;
    j->n = n;
    for (uint32_t i = 0; !rc && i < n; i++)
        rc = mg_read_vec(g, j->ids[i], j->cvec + (size_t)i * g->dim);
    for (; !rc && begun < nw; begun++)
        rc = kv_reader_begin(w[begun].rd);
    if (!rc) {
        j->w = w;
        rc = ann_parallel_for((int)nw, n, 1, link_range, j);
    }
    for (uint32_t i = 0; !rc && i < n; i++)
        rc = mg_attach(g, j->ids[i], j->out + (size_t)i * j->R, j->deg[i]);
    if (!rc)
        rc = link_backedges(g, w, nw, j);
    for (uint32_t t = 0; t < begun; t++) {
        kv_reader_end(w[t].rd);
        mg_clear(&w[t]);
        rc_clear(&w[t].node_rc); /* the chunk's write changes node records */
        /* vectors stay: no vector record changes while a merge links (an
         * insert of a live or pending id is refused, deletes were
         * consolidated before), so a worker keeps the ones its searches
         * share, chunk after chunk */
    }
    if (!rc && g->snap)
        rc = mg_snap_update(g, g->snap); /* the next chunk searches this graph */
    if (rc) {
        kv_reader_end(g->rd);
        mg_clear(g);
    }
    return rc;
}

/* Write the chunks linked in g (n_new vectors) through cm, after the
 * write before them; g's snapshot ends either way. */
static int write_linked(merger *g, mg_committer *cm, uint32_t n_new, int async)
{
    int rc = committer_join(cm, 1);
    if (rc) {
        kv_reader_end(g->rd);
        mg_clear(g);
        return rc;
    }
    return committer_start(cm, g, n_new, async);
}

static int merge_locked(ann_engine *e)
{
    merger g, g2 = { 0 }; /* g2: the next chunk's while g's is written (mg_committer) */
    mg_committer cm = { 0 };
    const uint32_t nw = e->live.merge_threads;
    merger *w = calloc(nw, sizeof *w);
    link_job job = { .R = e->meta.R };
    job.ids = malloc(DREC_MERGE_CHUNK * sizeof *job.ids);
    job.out = malloc((size_t)DREC_MERGE_CHUNK * job.R * sizeof *job.out);
    job.deg = malloc(DREC_MERGE_CHUNK * sizeof *job.deg);
    job.back = malloc((size_t)DREC_MERGE_CHUNK * job.R);
    job.cvec = malloc((size_t)DREC_MERGE_CHUNK * e->meta.dim * sizeof *job.cvec);
    const size_t max_edges = (size_t)DREC_MERGE_CHUNK * job.R;
    job.bj.be = malloc(max_edges * sizeof *job.bj.be);
    job.bj.start = malloc((max_edges + 1) * sizeof *job.bj.start);
    job.bj.node = malloc(max_edges * sizeof *job.bj.node);
    uint32_t *chunk = (uint32_t *)job.ids, nw_init = 0;
    drec_id_list tombs = { 0 }, pend = { 0 }, dels = { 0 };
    uint32_t graph_dels = 0, pend_dels = 0;
    mg_snap snap = { 0 };
    uint64_t tail0 = 0;
    int complete0 = 0;
    int rc = mg_init(&g, e);
    if (!rc && (!w || !job.ids || !job.out || !job.deg || !job.back || !job.cvec ||
                !job.bj.be || !job.bj.start || !job.bj.node))
        rc = mg_nomem(&g);
    if (!rc)
        rc = mg_init(&g2, e);
    for (; !rc && nw_init < nw; nw_init++)
        rc = mg_init(&w[nw_init], e);
    if (!rc) {
        /* the snapshot and the copy's tail at one moment: slots below
         * tail0 are what this merge will have linked or dropped */
        pthread_mutex_lock(&e->live.wlock);
        rc = kv_reader_begin(g.rd);
        tail0 = atomic_load(&e->live.pc_tail);
        complete0 = atomic_load(&e->live.pc_complete);
        pthread_mutex_unlock(&e->live.wlock);
    }
    if (rc)
        goto out;
    /* what to do, from one snapshot: later updates wait for the next merge */
    rc = list_table(&g, DREC_TABLE_TOMBSTONE, &tombs);
    if (!rc)
        rc = list_table(&g, DREC_TABLE_PENDING, &pend);
    ann_u32map pset = { 0 };
    for (uint32_t i = 0; !rc && i < pend.n; i++)
        if (ann_u32map_put(&pset, pend.ids[i], 1))
            rc = mg_nomem(&g);
    for (uint32_t i = 0; !rc && i < tombs.n; i++) {
        uint32_t id = tombs.ids[i];
        if (id == e->meta.medoid)
            continue; /* the frozen entry point stays */
        if (drec_id_list_add(&dels, id)) {
            rc = mg_nomem(&g);
            break;
        }
        if (ann_u32map_get(&pset, id, NULL)) {
            pend_dels++;
            ann_u32map_put(&pset, id, 0);
        } else {
            graph_dels++;
        }
    }
    if (rc) {
        ann_u32map_fini(&pset);
        kv_reader_end(g.rd);
        goto out;
    }
    if (dels.n > 0) {
        rc = mg_consolidate(&g, &dels, graph_dels);
        /* the pending records of deleted pending ids went with them */
        if (!rc)
            atomic_fetch_sub(&e->live.pending, pend_dels);
        if (!rc)
            rc = kv_reader_begin(g.rd);
    }
    /* the graph in memory when it pays (mg_snap), after the deletes are
     * consolidated; then the workers' caches: merge_cache_mb split over
     * them, half node records and half vectors, or all vectors when the
     * snapshot has the nodes, or none when it has the vectors too */
    if (!rc && mg_snap_worth(e, pend.n - pend_dels)) {
        rc = mg_snap_load(&g, &snap, mg_snap_vecs_fit(e));
        if (!rc) {
            g.snap = g2.snap = &snap;
            for (uint32_t t = 0; t < nw; t++)
                w[t].snap = &snap;
            atomic_fetch_add(&e->live.snap_merges, 1);
            if (snap.vecs)
                atomic_fetch_add(&e->live.snap_vec_merges, 1);
        }
    }
    for (uint32_t t = 0; !rc && t < nw; t++) {
        size_t share = e->live.merge_cache_bytes / nw / (g.snap ? 1 : 2);
        if ((!g.snap && rc_init(&w[t].node_rc, share,
                                  drec_node_bytes(e->meta.layout, g.m, g.cap))) ||
            (!(g.snap && snap.vecs) &&
             rc_init(&w[t].vec_rc, share, (size_t)g.dim * sizeof(float))))
            rc = mg_nomem(&g);
    }
    /* link the pending vectors, in chunks, written DREC_MERGE_WRITE_CHUNKS
     * at a time when the graph is in memory (one at a time otherwise: the
     * searches read the store), g and g2 taking turns */
    const uint32_t per_write = g.snap ? DREC_MERGE_WRITE_CHUNKS : 1;
    const int async = g.snap && kv_store_backend(e->kv) == KV_BACKEND_ROCKSDB;
    merger *cur = &g;
    uint32_t in_chunk = 0, chunks = 0, linked = 0;
    for (uint32_t i = 0; !rc && i < pend.n; i++) {
        uint32_t p = pend.ids[i], live = 0;
        ann_u32map_get(&pset, p, &live);
        if (!live)
            continue;
        kv_val v = { 0 };
        rc = mg_get(cur, DREC_TABLE_PENDING, p, &v);
        if (!rc && v.len != g.m)
            rc = ann_fail(ANN_ECORRUPT, "%s: pending record %u: length %zu, expected %u",
                          e->store_dir, p, v.len, g.m);
        if (!rc)
            rc = mg_put_code(cur, p, v.data);
        kv_val_release(&v);
        if (!rc)
            chunk[in_chunk++] = p;
        if (rc || in_chunk < DREC_MERGE_CHUNK)
            continue;
        rc = link_chunk(cur, w, nw, &job, in_chunk);
        linked += in_chunk;
        in_chunk = 0;
        if (rc || ++chunks < per_write)
            continue;
        rc = write_linked(cur, &cm, linked, async);
        chunks = linked = 0;
        cur = cur == &g ? &g2 : &g; /* free: its write was joined */
        if (!rc)
            rc = kv_reader_begin(cur->rd);
    }
    if (!rc && in_chunk > 0) {
        rc = link_chunk(cur, w, nw, &job, in_chunk);
        linked += in_chunk;
        chunks++;
    }
    if (!rc && chunks > 0) {
        rc = write_linked(cur, &cm, linked, async);
    } else { /* nothing linked since the last write, or a failure */
        kv_reader_end(cur->rd);
        mg_clear(cur);
    }
    int rc_last = committer_join(&cm, !rc);
    if (!rc)
        rc = rc_last;
    ann_u32map_fini(&pset);
    if (!rc) {
        drec_live *L = &e->live;
        pthread_mutex_lock(&L->wlock);
        if (complete0 && atomic_load(&L->pc_complete))
            pc_advance(e, tail0);
        else
            rc = pc_reload(e);
        pthread_mutex_unlock(&L->wlock);
    }
out:
    mg_fini(&g);
    mg_fini(&g2);
    mg_snap_fini(&snap);
    for (uint32_t t = 0; w && t < nw; t++) /* zeroed ones too: mg_init may have stopped */
        mg_fini(&w[t]);
    free(w);
    free(chunk);
    free(job.out);
    free(job.deg);
    free(job.back);
    free(job.cvec);
    free(job.bj.be);
    free(job.bj.start);
    free(job.bj.node);
    free(tombs.ids);
    free(pend.ids);
    free(dels.ids);
    return rc;
}

int drec_merge(ann_engine *e)
{
    int rc = writable(e, "merge");
    if (rc)
        return rc;
    pthread_mutex_lock(&e->live.mlock);
    /* untrained: the deleted vectors go (livebuild.c), under wlock, where
     * the index cannot be trained meanwhile */
    pthread_mutex_lock(&e->live.wlock);
    const int untrained = drec_mode(e) == DREC_MODE_SCAN;
    if (untrained)
        rc = drec_scan_merge(e);
    pthread_mutex_unlock(&e->live.wlock);
    if (!untrained)
        rc = merge_locked(e);
    /* searches and inserts go on while the store compacts */
    if (!rc && e->live.compact_after_merge)
        rc = kv_compact(e->kv);
    pthread_mutex_unlock(&e->live.mlock);
    return rc;
}

/* The background merger: merge whenever an insert leaves merge_every
 * pending.  Errors are kept for the record (bg_error) and the merger goes
 * on; the next merge retries what is still pending. */
static void *merger_main(void *arg)
{
    ann_engine *e = arg;
    drec_live *L = &e->live;
    pthread_mutex_lock(&L->wlock);
    for (;;) {
        while (!L->stop && !L->kick)
            pthread_cond_wait(&L->cond, &L->wlock);
        if (L->stop)
            break;
        L->kick = 0;
        pthread_mutex_unlock(&L->wlock);
        int rc = drec_merge(e);
        pthread_mutex_lock(&L->wlock);
        if (rc)
            L->bg_error = rc;
    }
    pthread_mutex_unlock(&L->wlock);
    return NULL;
}
