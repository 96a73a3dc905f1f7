/*
 * engine.c: the hnsw-record vtable: open (the store the `kv` open parameter
 * selects, its metadata record checked), per-thread search contexts, and
 * the parameters.  Build in build.c, search in search.c, live updates in
 * insert.c, layout in layout.h.
 */
#include "engines/hnsw_record/hnsw.h"

#include "engines/core/binio.h"
#include "engines/core/kv_params.h"
#include "engines/core/status.h"
#include "engines/hnsw_record/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const ann_param_spec hnsw_search_params[] = {
    { .name = "ef_search", .type = ANN_PARAM_INT, .min = 1, .max = 1 << 16, .def = 64,
      .at_least_k = 1,
      .help = "candidate list size at layer 0 (must be >= k)" },
    { .name = "reads_in_flight", .type = ANN_PARAM_INT, .min = 1, .max = 64, .def = 1,
      .help = "node records read in parallel at layer 0 (kv_prefetch): while one neighbour of "
              "the expanded node is scored, the next ones are read; 1: one read at a time" },
    ANN_PARAM_END_OF("hnsw-record search"),
};

static void hnsw_close(ann_engine *e)
{
    if (!e)
        return;
    hnsw_live_close(e);
    kv_close(e->kv);
    free(e);
}

static int hnsw_open(const char *dir, const json_t *open_params, ann_engine **out,
                     json_t *report)
{
    kv_index_spec spec = { 0 };
    kv_index_spec_live(open_params, &spec); /* updates: writable */
    kv_options opt;
    int rc = 0;
    if (!ann_host_le())
        return ann_fail(ANN_EUNSUPPORTED, "hnsw-record: records are little-endian, host is not");
    ann_engine *e = calloc(1, sizeof *e);
    kv_reader *rd = NULL;
    kv_val val = { 0 };
    int begun = 0;
    if (!e)
        return ann_fail(-ENOMEM, "hnsw-record open: no memory");
    rc = kv_index_open(dir, open_params, &spec, &opt, e->store_dir, sizeof e->store_dir, &e->kv,
                       &rd);
    if (rc)
        goto out;
    begun = 1;
    uint8_t key[KV_KEY_U32_BYTES];
    kv_key_u32(key, HNSW_TABLE_META, 0);
    rc = kv_get(rd, key, sizeof key, &val);
    if (rc == ANN_ENOTFOUND) {
        rc = ann_fail(ANN_ECORRUPT, "%s: metadata record missing (incomplete build?)",
                      e->store_dir);
        goto out;
    }
    if (rc)
        goto out;
    rc = hnsw_meta_decode(val.data, val.len, e->store_dir, &e->meta);
    if (rc)
        goto out;
    rc = hnsw_live_open(e, rd, !opt.read_only);
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
    hnsw_close(e);
    return rc;
}

static uint64_t hnsw_size(const ann_engine *e)
{
    return atomic_load(&e->live.nodes) - atomic_load(&e->live.deleted);
}

static void hnsw_ctx_free(ann_ctx *c)
{
    if (!c)
        return;
    kv_reader_destroy(c->rd);
    ann_visited_fini(&c->visited);
    ann_candlist_fini(&c->cands);
    free(c->slot_of);
    free(c->slots);
    free(c->free_slots);
    free(c->best_links);
    free(c->tmp_links);
    free(c->vec);
    free(c->res_dist);
    free(c->res_id);
    free(c);
}

static int hnsw_ctx_new(ann_engine *e, const json_t *search_params, uint32_t k_max,
                        ann_ctx **out)
{
    int rc = 0;
    int64_t ef = ann_param_int(search_params, hnsw_search_params, "ef_search"); /* >= k_max */
    const hnsw_meta *m = &e->meta;
    ann_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ann_fail(-ENOMEM, "hnsw-record: no memory for a context");
    c->eng = e;
    c->k_max = k_max ? k_max : 1;
    c->ef = (uint32_t)ef;
    c->W = (uint32_t)ann_param_int(search_params, hnsw_search_params, "reads_in_flight");
    /* inserts may raise the top level and the ids: levels up to the cap,
     * ids grown at a query's start (search.c) */
    size_t all = (1 + (size_t)m->M0) + (size_t)HNSW_MAX_LEVEL * (1 + m->M);
    uint64_t ids = atomic_load(&e->live.id_bound);
    c->id_cap = ids ? ids : 1;
    c->slot_of = malloc(c->id_cap * sizeof *c->slot_of);
    c->res_dist = malloc(c->k_max * sizeof *c->res_dist);
    c->res_id = malloc(c->k_max * sizeof *c->res_id);
    c->slots = malloc(((size_t)c->ef + 1) * (1 + (size_t)m->M0) * sizeof *c->slots);
    c->free_slots = malloc(((size_t)c->ef + 1) * sizeof *c->free_slots);
    c->best_links = malloc(all * sizeof *c->best_links);
    c->tmp_links = malloc(all * sizeof *c->tmp_links);
    c->vec = malloc((size_t)m->dim * sizeof *c->vec);
    if (!c->slot_of || !c->slots || !c->free_slots || !c->best_links || !c->tmp_links ||
        !c->vec || !c->res_dist || !c->res_id || ann_visited_init(&c->visited, c->id_cap) != 0 ||
        ann_candlist_create(&c->cands, c->ef) != 0) {
        rc = ann_fail(-ENOMEM, "hnsw-record: no memory for a context (ef %u, n %llu)", c->ef,
                      (unsigned long long)c->id_cap);
        goto out;
    }
    rc = kv_reader_create(e->kv, &c->rd);
    if (rc)
        goto out;
    *out = c;
    c = NULL;
out:
    hnsw_ctx_free(c);
    return rc;
}

const ann_engine_ops hnsw_record_engine_ops = {
    .name = "hnsw-record",
    .description = "HNSW whose nodes (vector + links) are records in RocksDB or LMDB",
    .title = "HNSW (records)",
    .reads_unit = "kv gets",
    .build_params = hnsw_build_params,
    .open_params = kv_live_open_params,
    .search_params = hnsw_search_params,
    .effort_param = "ef_search",
    .build = hnsw_build,
    .open = hnsw_open,
    .close = hnsw_close,
    .size = hnsw_size,
    .ctx_new = hnsw_ctx_new,
    .ctx_free = hnsw_ctx_free,
    .search = hnsw_search,
    .insert = hnsw_insert,
    .remove = hnsw_remove,
    .merge = hnsw_merge,
    .format_version = HNSW_VERSION,
};
