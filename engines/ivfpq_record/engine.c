/*
 * engine.c: the ivfpq-record vtable: open (coarse centroids and codebook
 * files into RAM, then the store the `kv` open parameter selects, its
 * metadata and list directory records checked), per-thread search contexts
 * and the parameters.  Build in build.c, search in search.c, live updates
 * in insert.c, layout in layout.h.
 */
#include "engines/ivfpq_record/ivfpq.h"

#include "engines/core/binio.h"
#include "engines/core/kv_params.h"
#include "engines/core/crc32c.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/ivfpq_record/layout.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const ann_param_spec ivfpq_search_params[] = {
    { .name = "nprobe", .type = ANN_PARAM_INT, .min = 1, .max = 1 << 22, .def = 16,
      .help = "lists scanned per query (<= nlist)" },
    { .name = "rerank", .type = ANN_PARAM_INT, .min = 1, .max = 1000, .def = 10,
      .help = "candidates re-ranked with full vectors, per result" },
    { .name = "reads_in_flight", .type = ANN_PARAM_INT, .min = 1, .max = 64, .def = 1,
      .help = "records read in parallel (kv_prefetch): the next lists' first chunks while one "
              "is scanned, the next candidates' vectors while one is re-ranked; 1: one read at "
              "a time" },
    ANN_PARAM_END_OF("ivfpq-record search"),
};

static void ivfpq_close(ann_engine *e)
{
    if (!e)
        return;
    ivfpq_live_close(e);
    kv_close(e->kv);
    pq_codebook_destroy(e->cb);
    free(e->centroids);
    free(e->list_len);
    free(e);
}

/* Read one whole record into a check callback's hands (open-time only). */
static int get_record(kv_reader *rd, uint8_t table, uint32_t id, kv_val *val, const char *store,
                      const char *what)
{
    uint8_t key[KV_KEY_U32_BYTES];
    kv_key_u32(key, table, id);
    int rc = kv_get(rd, key, sizeof key, val);
    if (rc == ANN_ENOTFOUND)
        return ann_fail(ANN_ECORRUPT, "%s: %s record missing (incomplete build?)", store, what);
    return rc;
}

/* The RAM-resident files, checked against the metadata record. */
static int load_files(ann_engine *e, const char *dir)
{
    const ivfpq_meta *m = &e->meta;
    char path[4200];
    ann_vecfile vf = { .fd = -1 };
    snprintf(path, sizeof path, "%s/%s", dir, IVFPQ_COARSE_FILE);
    int rc = ann_vecfile_open(path, &vf);
    if (rc) {
        if (rc == ANN_EFORMAT)
            rc = ANN_ECORRUPT;
        goto out;
    }
    if (vf.n != m->lists || vf.dim != m->dim || vf.elem != ANN_ELEM_F32) {
        rc = ann_fail(ANN_ECORRUPT, "%s: %llu x %u centroids, the index has %u lists of dim %u",
                      path, (unsigned long long)vf.n, vf.dim, m->lists, m->dim);
        goto out;
    }
    e->centroids = malloc(((size_t)m->lists ? m->lists : 1) * m->dim * sizeof(float));
    if (!e->centroids) {
        rc = ann_fail(-ENOMEM, "%s: no memory", path);
        goto out;
    }
    rc = m->lists ? ann_vecfile_read_f32(&vf, 0, m->lists, e->centroids) : 0;
    if (rc) {
        if (rc == ANN_EDATA)
            rc = ANN_ECORRUPT;
        goto out;
    }
    /* a flipped byte in a centroid probes the wrong lists without an error:
     * checked against the metadata record's checksum (little-endian host) */
    uint32_t sum = ann_checksum(e->centroids, (size_t)m->lists * m->dim * sizeof(float));
    if (sum != m->coarse_sum) {
        rc = ann_fail(ANN_ECORRUPT, "%s: centroids checksum 0x%08x, the metadata record says "
                                    "0x%08x (the file is corrupt)",
                      path, sum, m->coarse_sum);
        goto out;
    }
    if (m->n == 0)
        goto out; /* an empty index has no codebook */
    snprintf(path, sizeof path, "%s/%s", dir, IVFPQ_CODEBOOK_FILE);
    rc = pq_codebook_load(path, &e->cb);
    if (rc) {
        if (rc == ANN_EFORMAT)
            rc = ANN_ECORRUPT;
        goto out;
    }
    ann_metric want = m->metric == ANN_METRIC_L2 ? ANN_METRIC_L2 : ANN_METRIC_IP;
    if (e->cb->dim != m->dim || e->cb->m != m->pq_bytes || e->cb->metric != want)
        rc = ann_fail(ANN_ECORRUPT, "%s: codebook (dim %u, %u bytes) does not match the index",
                      path, e->cb->dim, e->cb->m);
out:
    ann_vecfile_close(&vf);
    return rc;
}

static int ivfpq_open(const char *dir, const json_t *open_params, ann_engine **out,
                      json_t *report)
{
    kv_index_spec spec = { 0 };
    kv_index_spec_live(open_params, &spec); /* updates: writable */
    kv_options opt;
    int rc = 0;
    if (!ann_host_le())
        return ann_fail(ANN_EUNSUPPORTED, "ivfpq-record: records are little-endian, host is not");
    ann_engine *e = calloc(1, sizeof *e);
    kv_reader *rd = NULL;
    kv_val val = { 0 };
    int begun = 0;
    if (!e)
        return ann_fail(-ENOMEM, "ivfpq-record open: no memory");
    rc = kv_index_open(dir, open_params, &spec, &opt, e->store_dir, sizeof e->store_dir, &e->kv,
                       &rd);
    if (rc)
        goto out;
    begun = 1;
    rc = get_record(rd, IVFPQ_TABLE_META, 0, &val, e->store_dir, "metadata");
    if (rc)
        goto out;
    rc = ivfpq_meta_decode(val.data, val.len, e->store_dir, &e->meta);
    kv_val_release(&val);
    if (rc)
        goto out;
    e->list_len = malloc(((size_t)e->meta.lists ? e->meta.lists : 1) * sizeof *e->list_len);
    if (!e->list_len) {
        rc = ann_fail(-ENOMEM, "ivfpq-record open: no memory");
        goto out;
    }
    /* a merged index: the live state says what the lists hold (layout.h) */
    ivfpq_meta dir_meta = e->meta;
    uint32_t id_bound = (uint32_t)e->meta.n;
    uint8_t skey[KV_KEY_U32_BYTES];
    rc = kv_get(rd, skey, kv_key_u32(skey, IVFPQ_TABLE_STATE, 0), &val);
    if (rc == 0) {
        rc = ivfpq_state_decode(val.data, val.len, e->store_dir, &id_bound, &dir_meta.n,
                                &e->live.merges);
        kv_val_release(&val);
    } else if (rc == ANN_ENOTFOUND) {
        rc = 0;
    }
    if (rc)
        goto out;
    atomic_store(&e->live.entries, dir_meta.n);
    atomic_store(&e->live.id_bound, id_bound);
    rc = get_record(rd, IVFPQ_TABLE_DIR, 0, &val, e->store_dir, "list directory");
    if (rc)
        goto out;
    rc = ivfpq_dir_decode(val.data, val.len, &dir_meta, e->store_dir, e->list_len);
    kv_val_release(&val);
    if (rc)
        goto out;
    rc = load_files(e, dir);
    if (rc)
        goto out;
    rc = ivfpq_live_open(e, rd, !opt.read_only);
    if (rc)
        goto out;
    kv_open_report(&opt, report);
    *out = e;
    e = NULL;
out:
    kv_val_release(&val);
    if (begun)
        kv_reader_end(rd);
    kv_reader_destroy(rd);
    ivfpq_close(e);
    return rc;
}

static uint64_t ivfpq_size(const ann_engine *e)
{
    return atomic_load(&e->live.entries) + atomic_load(&e->live.appended) -
           atomic_load(&e->live.deleted);
}

static void ivfpq_ctx_free(ann_ctx *c)
{
    if (!c)
        return;
    kv_reader_destroy(c->rd);
    free(c->coarse_dist);
    free(c->coarse_id);
    free(c->coarse_app);
    free(c->table);
    free(c->chunk_ids);
    free(c->chunk_dists);
    free(c->cand_dist);
    free(c->cand_id);
    free(c->top_dist);
    free(c->top_id);
    free(c->vec);
    free(c);
}

static int ivfpq_ctx_new(ann_engine *e, const json_t *search_params, uint32_t k_max,
                         ann_ctx **out)
{
    int rc = 0;
    const ivfpq_meta *m = &e->meta;
    uint32_t nprobe = (uint32_t)ann_param_int(search_params, ivfpq_search_params, "nprobe");
    uint32_t rerank = (uint32_t)ann_param_int(search_params, ivfpq_search_params, "rerank");
    if (nprobe > m->nlist)
        return ann_fail(ANN_EPARAM, "search.nprobe: %u exceeds nlist = %u of this index", nprobe,
                        m->nlist);
    ann_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ann_fail(-ENOMEM, "ivfpq-record: no memory for a context");
    c->eng = e;
    c->k_max = k_max ? k_max : 1;
    /* an index of fewer vectors than nlist has n lists */
    c->nprobe = nprobe < m->lists ? nprobe : (m->lists ? m->lists : 1);
    c->rerank = rerank;
    c->W = (uint32_t)ann_param_int(search_params, ivfpq_search_params, "reads_in_flight");
    size_t kc = (size_t)c->k_max * rerank;
    c->coarse_dist = malloc(c->nprobe * sizeof(float));
    c->coarse_id = malloc(c->nprobe * sizeof(uint32_t));
    c->coarse_app = malloc(c->nprobe);
    c->table = malloc((size_t)m->pq_bytes * PQ_KSUB * sizeof(float));
    c->chunk_ids = malloc((size_t)m->chunk_entries * sizeof(uint32_t));
    c->chunk_dists = malloc((size_t)m->chunk_entries * sizeof(float));
    c->cand_dist = malloc(kc * sizeof(float));
    c->cand_id = malloc(kc * sizeof(uint32_t));
    c->top_dist = malloc(c->k_max * sizeof(float));
    c->top_id = malloc(c->k_max * sizeof(uint32_t));
    c->vec = malloc((size_t)m->dim * sizeof(float));
    if (!c->coarse_dist || !c->coarse_id || !c->coarse_app || !c->table || !c->chunk_ids ||
        !c->chunk_dists || !c->cand_dist || !c->cand_id || !c->top_dist || !c->top_id ||
        !c->vec) {
        rc = ann_fail(-ENOMEM, "ivfpq-record: no memory for a context");
        goto out;
    }
    rc = kv_reader_create(e->kv, &c->rd);
    if (rc)
        goto out;
    *out = c;
    c = NULL;
out:
    ivfpq_ctx_free(c);
    return rc;
}

const ann_engine_ops ivfpq_record_engine_ops = {
    .name = "ivfpq-record",
    .description = "IVF-PQ whose lists (PQ codes of residuals) and vectors are kv records",
    .title = "IVF-PQ (records)",
    .reads_unit = "kv gets",
    .build_params = ivfpq_build_params,
    .open_params = kv_live_open_params,
    .search_params = ivfpq_search_params,
    .effort_param = "nprobe",
    .build = ivfpq_build,
    .open = ivfpq_open,
    .close = ivfpq_close,
    .size = ivfpq_size,
    .ctx_new = ivfpq_ctx_new,
    .ctx_free = ivfpq_ctx_free,
    .search = ivfpq_search,
    .insert = ivfpq_insert,
    .remove = ivfpq_remove,
    .merge = ivfpq_merge,
    .format_version = IVFPQ_VERSION,
};
