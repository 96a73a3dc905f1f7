/*
 * build.c: writes a diskann-record or diskann-resident index.
 *
 * The PQ codebook, the codes and the Vamana graph (R, L_build, alpha,
 * RobustPrune with the 1.3 R back-edge slack, from the medoid) come from
 * engines/core/artifacts.h, the same code and cache the sector engine
 * uses, so the record and sector layouts are compared on the same graph.
 * This file only lays them out as records (layout.h) and loads each
 * selected store with the backend's bulk path (kv_bulk: RocksDB SST
 * ingestion, LMDB MDB_APPEND): node records, then vector records, then
 * (resident) code chunks, in key order; the metadata record goes in last,
 * so a store whose build died part-way has no metadata and does not open.
 * Below DREC_SCAN_BELOW vectors (zero included) no graph or PQ is built:
 * the index is the vector records, searched by an exact scan, and its
 * version-3 metadata keeps what live training needs (pq_bytes, seed, R,
 * L_build, alpha; layout.h), so inserts can grow it into a graph index
 * (live.c).  Larger builds write version-2 records, unchanged.
 */
#include "engines/diskann_record/drec.h"

#include "engines/core/artifacts.h"
#include "engines/core/diskann_params.h"
#include "engines/core/binio.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DREC_VEC_CHUNK_ROWS 4096u /* rows read from the source at a time */

/* What one store receives: borrowed from the build. */
typedef struct drec_records {
    const ann_vecsrc *src;
    const float *vectors; /* n * dim, or NULL: read src in chunks */
    const vamana_graph *g; /* NULL in scan mode */
    const uint8_t *codes;  /* n * m, NULL in scan mode */
    drec_meta meta;
    /* logical bytes (keys + values) per table, filled by load_store */
    uint64_t node_bytes, vector_bytes, code_bytes;
} drec_records;

static int add_vectors(kv_bulk *b, drec_records *r)
{
    const uint32_t dim = r->meta.dim;
    const size_t row_bytes = (size_t)dim * sizeof(float);
    float *chunk = NULL;
    uint8_t *le = NULL;
    int rc = 0;
    if (!r->vectors) {
        chunk = malloc((size_t)DREC_VEC_CHUNK_ROWS * row_bytes);
        if (!chunk)
            return ann_fail(-ENOMEM, "diskann-record build: no memory for a vector chunk");
    }
    if (!ann_host_le()) {
        le = malloc(row_bytes);
        if (!le) {
            rc = ann_fail(-ENOMEM, "diskann-record build: no memory");
            goto out;
        }
    }
    for (uint64_t first = 0; first < r->meta.n; first += DREC_VEC_CHUNK_ROWS) {
        uint64_t count = r->meta.n - first < DREC_VEC_CHUNK_ROWS ? r->meta.n - first
                                                                 : DREC_VEC_CHUNK_ROWS;
        const float *rows = r->vectors ? r->vectors + first * dim : chunk;
        if (!r->vectors) {
            rc = ann_vecsrc_read(r->src, first, count, chunk);
            if (rc)
                goto out;
        }
        for (uint64_t i = 0; i < count; i++) {
            uint8_t key[KV_KEY_U32_BYTES];
            const float *row = rows + i * dim;
            const void *val = row;
            if (le) {
                for (uint32_t j = 0; j < dim; j++)
                    ann_put_f32(le + 4 * (size_t)j, row[j]);
                val = le;
            }
            size_t klen = kv_key_u32(key, DREC_TABLE_VECTOR, (uint32_t)(first + i));
            rc = kv_bulk_add(b, key, klen, val, row_bytes);
            if (rc)
                goto out;
            r->vector_bytes += klen + row_bytes;
        }
    }
out:
    free(chunk);
    free(le);
    return rc;
}

static int add_nodes(kv_bulk *b, drec_records *r)
{
    const uint32_t m = r->meta.pq_bytes, layout = r->meta.layout;
    uint8_t *rec = malloc(drec_node_bytes(layout, m, r->g->R));
    if (!rec)
        return ann_fail(-ENOMEM, "diskann-record build: no memory for a node record");
    int rc = 0;
    for (uint32_t v = 0; v < r->meta.n; v++) {
        uint32_t d;
        const uint32_t *nbrs = vamana_neighbors(r->g, v, &d);
        uint8_t key[KV_KEY_U32_BYTES];
        size_t klen = kv_key_u32(key, DREC_TABLE_NODE, v);
        size_t len = drec_node_bytes(layout, m, d);
        drec_node_encode(layout, m, v, nbrs, d, r->codes, rec);
        rc = kv_bulk_add(b, key, klen, rec, len);
        if (rc)
            break;
        r->node_bytes += klen + len;
    }
    free(rec);
    return rc;
}

static int add_code_chunks(kv_bulk *b, drec_records *r)
{
    const uint32_t m = r->meta.pq_bytes, rows = r->meta.chunk_rows;
    for (uint64_t c = 0; c * rows < r->meta.n; c++) {
        uint64_t first = c * rows;
        uint64_t count = r->meta.n - first < rows ? r->meta.n - first : rows;
        uint8_t key[KV_KEY_U32_BYTES];
        size_t klen = kv_key_u32(key, DREC_TABLE_CODES, (uint32_t)c);
        int rc = kv_bulk_add(b, key, klen, r->codes + first * m, count * m);
        if (rc)
            return rc;
        r->code_bytes += klen + count * m;
    }
    return 0;
}

static int load_store(const char *store_dir, kv_backend backend, drec_records *r)
{
    kv_options o = { .backend = backend, .profile = KV_PROFILE_EMBEDDED, .create = 1 };
    kv_store *s = NULL;
    kv_bulk *b = NULL;
    uint8_t *meta = NULL;
    const uint32_t m = r->meta.pq_bytes;
    r->node_bytes = r->vector_bytes = r->code_bytes = 0;
    uint64_t expected = r->meta.n * ((uint64_t)r->meta.dim * 4 + 16);
    if (r->g)
        expected += r->meta.n * (drec_node_bytes(r->meta.layout, m, r->g->R) + 8 +
                                 (r->meta.layout == DREC_LAYOUT_RESIDENT ? m : 0));
    int rc = kv_open(store_dir, &o, &s);
    if (rc)
        goto out;
    rc = kv_bulk_begin(s, expected, &b);
    if (rc)
        goto out;
    if (r->g)
        rc = add_nodes(b, r);
    if (!rc)
        rc = add_vectors(b, r);
    if (!rc && r->g && r->meta.layout == DREC_LAYOUT_RESIDENT)
        rc = add_code_chunks(b, r);
    if (rc)
        goto out;
    rc = kv_bulk_finish(b);
    b = NULL;
    if (rc)
        goto out;
    /* last: the record that makes the store an index */
    size_t meta_len = drec_meta_bytes_v(r->meta.version, m);
    meta = malloc(meta_len);
    if (!meta) {
        rc = ann_fail(-ENOMEM, "diskann-record build: no memory");
        goto out;
    }
    drec_meta_encode(&r->meta, meta);
    uint8_t key[KV_KEY_U32_BYTES];
    rc = kv_put(s, key, kv_key_u32(key, DREC_TABLE_META, 0), meta, meta_len);
out:
    kv_bulk_abort(b);
    if (s) {
        int crc = kv_close(s);
        if (!rc)
            rc = crc;
    }
    free(meta);
    return rc;
}

int drec_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report, uint32_t layout, const char *name)
{
    int rc = 0;
    ann_artifacts art = { 0 };
    char path[4200];
    ann_artifacts_params ap;
    rc = ann_diskann_build_read(params, drec_build_params, src, bctx, &ap);
    if (rc)
        return rc;
    const uint32_t R = ap.graph.R, L_build = ap.graph.L_build, m = ap.pq.pq_bytes;
    const float alpha = ap.graph.alpha;
    const char *kv_which = ann_param_enum(params, drec_build_params, "kv");
    if (m > DREC_MAX_PQ_BYTES) /* a default dim/8 for dim > 8192 */
        return ann_fail(ANN_EPARAM, "build.pq_bytes: %u exceeds %u, the most a diskann-record "
                                    "index holds (set pq_bytes)", m, DREC_MAX_PQ_BYTES);
    if (src->n >= UINT32_MAX)
        return ann_fail(ANN_EPARAM, "%s build: %llu vectors, ids are 32-bit", name,
                        (unsigned long long)src->n);

    drec_records r = { .src = src };
    snprintf(r.meta.engine, sizeof r.meta.engine, "%s", name);
    r.meta.version = src->n < DREC_SCAN_BELOW ? DREC_VERSION : DREC_VERSION_GRAPH;
    r.meta.layout = layout;
    r.meta.n = src->n;
    r.meta.dim = src->dim;
    r.meta.metric = (uint32_t)src->metric;
    r.meta.R = R;
    r.meta.L_build = L_build;
    r.meta.alpha = alpha;
    r.meta.mode = src->n < DREC_SCAN_BELOW ? DREC_MODE_SCAN : DREC_MODE_GRAPH;
    if (r.meta.mode == DREC_MODE_SCAN && ap.graph_import && ap.graph_import[0])
        return ann_fail(ANN_EPARAM, "%s build: %llu vectors are scanned, not searched by a graph "
                                    "(below %u), so %s has nothing to import into",
                        name, (unsigned long long)src->n, DREC_SCAN_BELOW, ap.graph_import);
    /* a live build trains on its first DREC_SCAN_BELOW rows with pq.h's defaults */
    const char *pq_set = NULL;
    if (ann_param_int(params, drec_build_params, "pq_sample_rows"))
        pq_set = "pq_sample_rows";
    else if (ann_param_int(params, drec_build_params, "pq_iters"))
        pq_set = "pq_iters";
    if (r.meta.mode == DREC_MODE_SCAN && pq_set)
        return ann_fail(ANN_EPARAM, "build.%s: %llu vectors are scanned, not searched by a graph "
                                    "(below %u); the PQ trained when it grows past that takes the "
                                    "defaults",
                        pq_set, (unsigned long long)src->n, DREC_SCAN_BELOW);

    if (r.meta.mode == DREC_MODE_GRAPH) {
        rc = ann_artifacts_get(src, &ap, &art);
        if (rc)
            goto out;
        if (!art.graph || !art.pq || !art.pq_codes || art.graph->n != src->n ||
            art.graph->stride != art.graph->R || art.pq->m != m) {
            rc = ann_fail(ANN_EINTERNAL,
                          "%s build: artifacts do not match the source (graph n %llu stride %u "
                          "R %u, pq m %u, want n %llu m %u)",
                          name, art.graph ? (unsigned long long)art.graph->n : 0ull,
                          art.graph ? art.graph->stride : 0, art.graph ? art.graph->R : 0,
                          art.pq ? art.pq->m : 0, (unsigned long long)src->n, m);
            goto out;
        }
        snprintf(path, sizeof path, "%s/%s", dir, DREC_PQ_FILE);
        rc = pq_codebook_save(art.pq, path);
        if (rc)
            goto out;
        r.vectors = art.vectors;
        r.g = art.graph;
        r.codes = art.pq_codes;
        r.meta.medoid = art.graph->entry;
        r.meta.pq_bytes = m;
        memcpy(r.meta.medoid_code, art.pq_codes + (size_t)art.graph->entry * m, m);
        r.meta.chunk_rows = layout == DREC_LAYOUT_RESIDENT ? DREC_CODE_CHUNK_ROWS : 0;
    } else {
        /* untrained: what the insert that reaches the threshold trains with */
        r.meta.pq_bytes = m;
        r.meta.pq_seed = ap.pq.seed;
    }

    double t0 = ann_mono_s();
    json_t *stores = json_object();
    for (int bi = 0; bi < 2; bi++) {
        kv_backend be = bi == 0 ? KV_BACKEND_ROCKSDB : KV_BACKEND_LMDB;
        if (strcmp(kv_which, "both") != 0 && strcmp(kv_which, kv_backend_name(be)) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, kv_backend_name(be));
        rc = load_store(path, be, &r);
        if (rc)
            break;
        uint64_t on_disk = 0;
        rc = ann_dir_bytes(path, &on_disk);
        if (rc)
            break;
        json_object_set_new(stores, kv_backend_name(be),
                            json_pack("{s:I, s:I, s:I, s:I}", "bytes_on_disk", (json_int_t)on_disk,
                                      "node_record_bytes", (json_int_t)r.node_bytes,
                                      "vector_record_bytes", (json_int_t)r.vector_bytes,
                                      "code_record_bytes", (json_int_t)r.code_bytes));
    }
    if (report) {
        json_t *ph = json_pack("{s:f, s:f, s:f, s:f, s:f}", "pq_train_s", art.pq_train_s,
                               "pq_encode_s", art.pq_encode_s, "graph_s", art.graph_s, "load_s",
                               art.load_s, "layout_write_s", ann_mono_s() - t0);
        json_object_set_new(report, "phases", ph);
        ann_artifacts_report_graph(&art, report); /* what the graph was computed on */
        json_object_set_new(report, "stores", stores);
        json_object_set_new(report, "mode",
                            json_string(r.meta.mode == DREC_MODE_SCAN ? "scan" : "graph"));
        json_object_set_new(report, "pq_cached", json_boolean(art.pq_cached));
        json_object_set_new(report, "graph_cached", json_boolean(art.graph_cached));
    } else {
        json_decref(stores);
    }
out:
    ann_artifacts_fini(&art);
    return rc;
}
