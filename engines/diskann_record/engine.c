/*
 * engine.c: the vtables of diskann-record and diskann-resident, DiskANN
 * (Subramanya et al., NeurIPS 2019) stored as key-value records, as in a
 * database that keeps its vector index among its own tables: opening an
 * index (metadata verified, PQ codebook loaded, for diskann-resident every
 * PQ code loaded into one array indexed by node id) and the per-thread
 * search contexts.  Memory at search time: the codebook (and resident
 * codes), plus per context a PQ table, a candidate list and an
 * epoch-stamped visited map of n entries.
 *
 * Parameters.  Build: diskann-sector's (engines/core/diskann_params.h: R,
 * L_build, alpha, pq_bytes, seed, threads, build_precision), so both build
 * the same graph, and share it through the artifact cache; kv = which
 * stores to write (both by default, so `kv` can be swept at open without a
 * rebuild).
 * Open: kv (default: rocksdb when built, else lmdb), profile, block_cache_mb;
 * for live updates (live.c) updates (open the store writable: insert,
 * remove and merge work), merge_every (background merge once that many
 * inserts are pending; 0 = on demand only), sync (LMDB: sync every
 * commit; by default a commit survives kill -9, as RocksDB's does) and
 * pending_cache_mb (the in-memory copy of the pending codes searches
 * share, twice over with the filter's blocks of search.c; default 64 MiB;
 * past it they scan the pending records).
 * Search: L (candidate list size) and rerank: how many of the best
 * candidates by PQ distance get a full-vector read and an exact distance.
 * The default, 0, means all of the final list (L candidates), which is what
 * DiskANN does (every candidate it ranks has its full vector at hand): PQ
 * error then costs no recall, at one vector-record read per candidate.
 * Smaller values (never fewer than k) trade recall for reads; the
 * benchmark reports the trade (bench/bench_diskann_record.c).
 */
#include "engines/diskann_record/drec.h"

#include "engines/core/diskann_params.h"
#include "engines/core/kv_params.h"
#include "engines/core/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const build_kv_choices[] = { "both", "rocksdb", "lmdb", NULL };

/* The DiskANN build parameters (engines/core/diskann_params.h), then kv. */
const ann_param_spec drec_build_params[] = {
    ANN_DISKANN_BUILD_PARAMS,
    { .name = "kv", .type = ANN_PARAM_ENUM, .choices = build_kv_choices, .def_str = "both",
      .help = "stores to write: both, rocksdb or lmdb" },
    ANN_PARAM_END_OF("diskann-record/-resident build"),
};

const ann_param_spec drec_open_params[] = {
    { .name = "kv", .type = ANN_PARAM_ENUM, .choices = kv_backend_choices, .def_str = "rocksdb",
      .help = "record store: rocksdb (LSM) or lmdb (B-tree); default rocksdb when built" },
    { .name = "profile", .type = ANN_PARAM_ENUM, .choices = kv_profile_choices,
      .def_str = "server", .help = "server: RocksDB block cache; embedded: page cache only" },
    { .name = "block_cache_mb", .type = ANN_PARAM_INT, .min = 1, .max = 1 << 20,
      .def = KV_DEFAULT_BLOCK_CACHE_MB, .help = "RocksDB block cache (server profile), MiB" },
    { .name = "updates", .type = ANN_PARAM_BOOL, .def = 0,
      .help = "open the store writable for insert/remove/merge (one process at a time)" },
    { .name = "sync", .type = ANN_PARAM_BOOL, .def = 0,
      .help = "updates: LMDB syncs every commit (default: a commit survives kill -9, as "
              "RocksDB's unsynced WAL does)" },
    { .name = "pending_cache_mb", .type = ANN_PARAM_REAL, .min = 0, .max = 1 << 20, .def = 64,
      .help = "in-memory copy of the pending PQ codes shared by searches, MiB, with the "
              "byte-table filter's blocks where the CPU has AVX-512 VBMI (past it, or 0: "
              "searches scan the pending records)" },
    { .name = "merge_every", .type = ANN_PARAM_INT, .min = 0, .max = 1 << 30, .def = 0,
      .help = "merge in the background once this many inserts are pending (0: only on demand)" },
    { .name = "merge_threads", .type = ANN_PARAM_INT, .min = 0, .max = 256, .def = 0,
      .help = "threads a merge links pending vectors with (0: one per core)" },
    { .name = "merge_cache_mb", .type = ANN_PARAM_REAL, .min = -1, .max = 1 << 20, .def = -1,
      .help = "records a merge's link searches keep in memory, MiB in all (node records "
              "for a chunk, vectors for the whole merge: the ones every search passes near the "
              "entry point; 0: none; -1, the default: 64 on RocksDB, 0 on LMDB, whose gets "
              "already return its map's memory)" },
    { .name = "merge_snapshot_mb", .type = ANN_PARAM_REAL, .min = -1, .max = 1 << 20, .def = -1,
      .help = "a merge with enough to link reads the whole graph (neighbour ids, PQ codes) "
              "into memory in one scan when it fits this, MiB, and its searches then read only "
              "vector records; and the vectors too when graph and vectors fit it (0: never; -1, "
              "the default: 512)" },
    { .name = "ingest_above_mb", .type = ANN_PARAM_REAL, .min = 0, .max = 1 << 20, .def = 0,
      .help = "RocksDB: a write batch (a merge's commit) of at least this many MiB goes in as "
              "one ingested SST file, written as the merge produces it, instead of through "
              "the WAL and memtable (0, the default: 64)" },
    { .name = "compact_after_merge", .type = ANN_PARAM_BOOL, .def = 0,
      .help = "after each merge, compact the store (RocksDB: drop the rewritten records' old "
              "versions now; LMDB: nothing to do)" },
    ANN_PARAM_END_OF("diskann-record/-resident open"),
};

static const char *const drec_mode_choices[] = { "round", "pipeline", NULL };

const ann_param_spec drec_search_params[] = {
    { .name = "L", .type = ANN_PARAM_INT, .min = 1, .max = 10000, .def = 100,
      .help = "candidate list size, at least k", .at_least_k = 1 },
    { .name = "rerank", .type = ANN_PARAM_INT, .min = 0, .max = 10000, .def = 0,
      .help = "best candidates re-ranked with full vectors (0: all L, as DiskANN; at least k)" },
    { .name = "beam_width", .type = ANN_PARAM_INT, .min = 1, .max = DREC_MAX_BEAM, .def = 1,
      .help = "records read in parallel: the walk expands this many closest candidates per "
              "round and the re-rank keeps this many vector reads in flight (kv_prefetch); "
              "1: one read at a time" },
    { .name = "search_mode", .type = ANN_PARAM_ENUM, .choices = drec_mode_choices,
      .def_str = "round",
      .help = "round (DiskANN's rounds of beam_width records) or pipeline (up to beam_width "
              "node records in flight, no per-round barrier)" },
    { .name = "vector_ahead", .type = ANN_PARAM_BOOL, .def = 0,
      .help = "hint each expanded candidate's full-vector record along with its node record "
              "(when it ranks within the re-rank depth), so the re-rank finds the vectors read; "
              "off by default: warm, the hints cost more than they save" },
    ANN_PARAM_END_OF("diskann-record/-resident search"),
};

void drec_close(ann_engine *e)
{
    if (!e)
        return;
    drec_live_close(e);
    kv_close(e->kv);
    pq_codebook_destroy(e->pq);
    free(e->codes);
    free(e);
}

/* Read the resident codes (table 0x03 chunks) into e->codes. */
static int load_codes(ann_engine *e, kv_reader *rd)
{
    const uint32_t m = e->meta.pq_bytes, rows = e->meta.chunk_rows;
    const uint64_t n = e->meta.n;
    uint64_t chunks = (n + rows - 1) / rows, next = 0;
    kv_iter *it = NULL;
    kv_val k, v;
    int rc = 0, step;
    e->codes = malloc(n * m);
    if (!e->codes)
        return ann_fail(-ENOMEM, "%s: no memory for %llu resident codes", e->store_dir,
                        (unsigned long long)n);
    uint8_t prefix = DREC_TABLE_CODES;
    rc = kv_iter_create_scan(rd, &prefix, 1, &it);
    if (rc)
        return rc;
    while ((step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t c;
        if (kv_key_parse_u32(k.data, k.len, NULL, &c) != 0 || c != next || next >= chunks) {
            rc = ann_fail(ANN_ECORRUPT, "%s: code chunk %llu: missing or out of order",
                          e->store_dir, (unsigned long long)next);
            goto out;
        }
        uint64_t first = (uint64_t)c * rows;
        uint64_t count = n - first < rows ? n - first : rows;
        if (v.len != count * m) {
            rc = ann_fail(ANN_ECORRUPT, "%s: code chunk %u: length %zu, expected %llu",
                          e->store_dir, c, v.len, (unsigned long long)(count * m));
            goto out;
        }
        memcpy(e->codes + first * m, v.data, v.len);
        next++;
    }
    if (step < 0) {
        rc = step;
        goto out;
    }
    if (next != chunks)
        rc = ann_fail(ANN_ECORRUPT, "%s: code chunk %llu: record missing", e->store_dir,
                      (unsigned long long)next);
out:
    kv_iter_destroy(it);
    return rc;
}

int drec_open(const char *dir, const json_t *open_params, uint32_t layout, const char *name,
              ann_engine **out, json_t *report)
{
    int rc = 0;
    ann_engine *e = NULL;
    kv_reader *rd = NULL;
    kv_val mv = { 0 };
    char path[4300];
    kv_options o;
    const kv_index_spec spec = {
        .params = drec_open_params,
        .kv_default_built = 1,
        .writable = ann_param_bool(open_params, drec_open_params, "updates"),
        .relaxed_sync = !ann_param_bool(open_params, drec_open_params, "sync"),
        .ingest_above_bytes =
            (uint64_t)(ann_param_real(open_params, drec_open_params, "ingest_above_mb") *
                       1048576.0),
    };

    e = calloc(1, sizeof *e);
    if (!e)
        return ann_fail(-ENOMEM, "%s: no memory", dir);
    rc = kv_index_open(dir, open_params, &spec, &o, e->store_dir, sizeof e->store_dir, &e->kv,
                       &rd);
    if (rc)
        goto out;
    uint8_t key[KV_KEY_U32_BYTES];
    rc = kv_get(rd, key, kv_key_u32(key, DREC_TABLE_META, 0), &mv);
    if (rc == ANN_ENOTFOUND) {
        rc = ann_fail(ANN_ECORRUPT, "%s: metadata record missing (an incomplete build, or not "
                                    "a diskann-record store)", e->store_dir);
        goto out;
    }
    if (rc)
        goto out;
    rc = drec_meta_decode(mv.data, mv.len, e->store_dir, &e->meta);
    kv_val_release(&mv);
    if (rc)
        goto out;
    if (strcmp(e->meta.engine, name) != 0 || e->meta.layout != layout) {
        rc = ann_fail(ANN_ECORRUPT, "%s: a %s index, opened as %s", e->store_dir,
                      e->meta.engine[0] ? e->meta.engine : "(unnamed)", name);
        goto out;
    }
    if (e->meta.mode == DREC_MODE_GRAPH) {
        /* a build's codebook, or the one this store trained live */
        if (e->meta.version == DREC_VERSION_GRAPH)
            snprintf(path, sizeof path, "%s/%s", dir, DREC_PQ_FILE);
        else
            snprintf(path, sizeof path, "%s%s", e->store_dir, DREC_LIVE_PQ_SUFFIX);
        rc = pq_codebook_load(path, &e->pq);
        if (rc)
            goto out;
        if (e->pq->m != e->meta.pq_bytes || e->pq->dim != e->meta.dim ||
            (uint32_t)e->pq->metric != e->meta.metric) {
            rc = ann_fail(ANN_ECORRUPT, "%s: codebook m/dim/metric disagree with %s's metadata",
                          path, e->store_dir);
            goto out;
        }
        if (layout == DREC_LAYOUT_RESIDENT && e->meta.n > 0) {
            rc = load_codes(e, rd);
            if (rc)
                goto out;
        }
    }
    rc = drec_live_open(e, rd, open_params);
    if (rc)
        goto out;
    kv_open_report(&o, report);
    *out = e;
    e = NULL;
out:
    kv_val_release(&mv);
    kv_reader_destroy(rd);
    drec_close(e);
    return rc;
}

static uint64_t drec_size(const ann_engine *e)
{
    return drec_live_size(e);
}

static void drec_ctx_free(ann_ctx *c)
{
    if (!c)
        return;
    kv_reader_destroy(c->rd);
    free(c->table);
    free(c->floor);
    free(c->lbq);
    free(c->lbblk);
    ann_candlist_fini(&c->cand);
    ann_visited_fini(&c->visited);
    free(c->top_dist);
    free(c->top_id);
    free(c->vec);
    free(c->rr);
    free(c);
}

static int drec_ctx_new(ann_engine *e, const json_t *search_params, uint32_t k_max, ann_ctx **out)
{
    int rc = 0;
    ann_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ann_fail(-ENOMEM, "%s: no memory for a search context", e->store_dir);
    c->eng = e;
    c->L = (uint32_t)ann_param_int(search_params, drec_search_params, "L");
    c->rerank = (uint32_t)ann_param_int(search_params, drec_search_params, "rerank");
    c->W = (uint32_t)ann_param_int(search_params, drec_search_params, "beam_width");
    c->vector_ahead = ann_param_bool(search_params, drec_search_params, "vector_ahead");
    c->pipeline = !strcmp(ann_param_enum(search_params, drec_search_params, "search_mode"),
                          "pipeline");
    c->k_max = k_max ? k_max : 1;
    uint32_t cap = c->L > c->k_max ? c->L : c->k_max;
    rc = kv_reader_create(e->kv, &c->rd);
    if (rc)
        goto out;
    c->top_dist = malloc(c->k_max * sizeof(float));
    c->top_id = malloc(c->k_max * sizeof(uint32_t));
    c->vec = malloc((size_t)e->meta.dim * sizeof(float));
    c->rr = malloc((size_t)cap * sizeof(uint32_t));
    if (!c->top_dist || !c->top_id || !c->vec || !c->rr)
        rc = -ENOMEM;
    /* also while untrained: the index may turn into a graph under it */
    if (!rc && e->meta.pq_bytes > 0) {
        c->table = malloc((size_t)e->meta.pq_bytes * PQ_KSUB * sizeof(float));
        c->floor = malloc(pq_floor_len(e->meta.pq_bytes) * sizeof(float));
        if (e->live.pc_lb) {
            c->lbq = malloc((size_t)e->meta.pq_bytes * PQ_KSUB);
            c->lbblk = malloc(PQ_LB_BLOCK_BYTES(e->meta.pq_bytes));
            if (!c->lbq || !c->lbblk)
                rc = -ENOMEM;
        }
        if (!c->table || !c->floor || ann_candlist_create(&c->cand, cap) != 0 ||
            ann_visited_init(&c->visited, atomic_load(&e->live.id_bound)) != 0)
            rc = -ENOMEM;
    }
    if (rc == -ENOMEM)
        rc = ann_fail(-ENOMEM, "%s: no memory for a search context", e->store_dir);
out:
    if (rc) {
        drec_ctx_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---- diskann-record: neighbour codes in the node records --------------- */

static int record_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
                        const char *dir, json_t *report)
{
    return drec_build(src, params, bctx, dir, report, DREC_LAYOUT_FULL, "diskann-record");
}

static int record_open(const char *dir, const json_t *open_params, ann_engine **out,
                       json_t *report)
{
    return drec_open(dir, open_params, DREC_LAYOUT_FULL, "diskann-record", out, report);
}

const ann_engine_ops diskann_record_engine_ops = {
    .name = "diskann-record",
    .description = "DiskANN on kv records (RocksDB|LMDB): node record = ids + neighbours' PQ codes",
    .title = "DiskANN (records)",
    .reads_unit = "kv gets",
    .build_params = drec_build_params,
    .open_params = drec_open_params,
    .search_params = drec_search_params,
    .effort_param = "L",
    .build = record_build,
    .open = record_open,
    .close = drec_close,
    .size = drec_size,
    .ctx_new = drec_ctx_new,
    .ctx_free = drec_ctx_free,
    .search = drec_search,
    .insert = drec_insert,
    .remove = drec_remove,
    .merge = drec_merge,
    .format_version = DREC_VERSION,
    .imports_graph = 1,
};

/* ---- diskann-resident: ids in records, every code in memory ------------ */

static int resident_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
                          const char *dir, json_t *report)
{
    return drec_build(src, params, bctx, dir, report, DREC_LAYOUT_RESIDENT, "diskann-resident");
}

static int resident_open(const char *dir, const json_t *open_params, ann_engine **out,
                         json_t *report)
{
    return drec_open(dir, open_params, DREC_LAYOUT_RESIDENT, "diskann-resident", out, report);
}

const ann_engine_ops diskann_resident_engine_ops = {
    .name = "diskann-resident",
    .description = "DiskANN on kv records with all PQ codes resident in memory (ids-only records)",
    .title = "DiskANN, resident codes",
    .reads_unit = "kv gets",
    .build_params = drec_build_params,
    .open_params = drec_open_params,
    .search_params = drec_search_params,
    .effort_param = "L",
    .build = resident_build,
    .open = resident_open,
    .close = drec_close,
    .size = drec_size,
    .ctx_new = drec_ctx_new,
    .ctx_free = drec_ctx_free,
    .search = drec_search,
    .insert = drec_insert,
    .remove = drec_remove,
    .merge = drec_merge,
    .format_version = DREC_VERSION,
    .imports_graph = 1,
};
