/*
 * engine.c: the diskann-sector vtable: open (header checks, PQ codebook and
 * codes into RAM, the I/O backend chosen once, the BFS cache filled),
 * per-thread search contexts with every buffer allocated up front, close.
 *
 * The backend is probed once at open: when the `io` parameter is given the
 * backend is required (an error naming it otherwise); when it is left to
 * the default, io_uring falls back to libaio then pread with one notice,
 * and every context then uses the backend open settled on.
 */
#include "engines/diskann_sector/dsec.h"

#include "engines/core/artifacts.h"
#include "engines/core/binio.h"
#include "engines/core/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const io_choices[] = { "io_uring", "libaio", "pread", NULL };

const ann_param_spec dsec_open_params[] = {
    { .name = "io", .type = ANN_PARAM_ENUM, .choices = io_choices, .def_str = "io_uring",
      .help = "read backend (falls back when left to the default)" },
    { .name = "cache_nodes", .type = ANN_PARAM_INT, .min = 0, .max = 4294967294.0, .def = 0,
      .help = "nodes around the medoid kept in RAM (BFS order), filled at open" },
    ANN_PARAM_END,
};

const ann_param_spec dsec_search_params[] = {
    { .name = "L", .type = ANN_PARAM_INT, .min = 1, .max = 100000, .def = 100,
      .help = "search list size (candidates kept)" },
    { .name = "beam_width", .type = ANN_PARAM_INT, .min = 1, .max = 256, .def = 4,
      .help = "sector reads issued per round (W)" },
    ANN_PARAM_END,
};

static void dsec_close(ann_engine *e)
{
    if (!e)
        return;
    if (e->fd >= 0)
        close(e->fd);
    pq_codebook_destroy(e->pq);
    free(e->codes);
    free(e->cache_recs);
    free(e->cache_slot);
    free(e);
}

/* Read and verify the header sector of e->path (already open as e->fd). */
static int read_header(ann_engine *e)
{
    int rc = 0;
    struct stat st;
    uint8_t *hdr = ann_aio_buf_alloc(DSEC_SECTOR_BYTES);
    if (!hdr)
        return ann_fail(-ENOMEM, "%s: no memory", e->path);
    if (fstat(e->fd, &st) != 0) {
        rc = ann_fail_errno("%s: stat", e->path);
        goto out;
    }
    ssize_t got = pread(e->fd, hdr, DSEC_SECTOR_BYTES, 0);
    if (got < 0) {
        rc = ann_fail_errno("%s: read header", e->path);
        goto out;
    }
    if (got < (ssize_t)DSEC_SECTOR_BYTES) {
        rc = ann_fail(ANN_ECORRUPT, "%s: truncated: %lld bytes, shorter than the header sector",
                      e->path, (long long)got);
        goto out;
    }
    rc = dsec_header_decode(hdr, (uint64_t)st.st_size, e->path, &e->h);
out:
    ann_aio_buf_free(hdr);
    return rc;
}

static int load_pq(ann_engine *e, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, DSEC_PQ_CODEBOOK_FILE);
    int rc = pq_codebook_load(path, &e->pq);
    if (rc)
        return rc == ANN_EFORMAT ? ann_fail_wrap(ANN_ECORRUPT, "diskann-sector") : rc;
    if (e->pq->dim != e->h.dim || e->pq->m != e->h.pq_bytes || (uint32_t)e->pq->metric != e->h.metric)
        return ann_fail(ANN_ECORRUPT, "%s: dim %u, %u bytes, metric %u; index has %u, %u, %u",
                        path, e->pq->dim, e->pq->m, (unsigned)e->pq->metric, e->h.dim,
                        e->h.pq_bytes, e->h.metric);
    snprintf(path, sizeof path, "%s/%s", dir, DSEC_PQ_CODES_FILE);
    rc = ann_artifacts_codes_load(path, e->h.n, e->h.pq_bytes, &e->codes);
    if (rc == ANN_EFORMAT)
        rc = ann_fail_wrap(ANN_ECORRUPT, "diskann-sector");
    return rc;
}

/* Settle the backend: probe a queue once, honouring strictness. */
static int settle_io(ann_engine *e, const json_t *params)
{
    ann_aio_kind want;
    int rc = ann_aio_kind_parse(ann_param_enum(params, dsec_open_params, "io"), &want);
    if (rc)
        return rc;
    ann_aio_opts o = { .kind = want, .strict = ann_param_is_set(params, "io"), .fd = e->fd,
                       .depth = 1 };
    ann_aio_queue *q = NULL;
    rc = ann_aio_queue_create(&o, &q);
    if (rc)
        return rc;
    e->io_kind = ann_aio_queue_kind(q);
    ann_aio_queue_destroy(q);
    return 0;
}

static int dsec_open(const char *dir, const json_t *params, ann_engine **out)
{
    int rc = ann_params_validate(params, dsec_open_params, "open");
    if (rc)
        return rc;
    if (!ann_host_le())
        return ann_fail(ANN_EUNSUPPORTED, "diskann-sector: big-endian hosts are not supported");
    ann_engine *e = calloc(1, sizeof *e);
    if (!e)
        return ann_fail(-ENOMEM, "diskann-sector: no memory");
    e->fd = -1;
    snprintf(e->path, sizeof e->path, "%s/%s", dir, DSEC_INDEX_FILE);
    if (access(e->path, F_OK) != 0) {
        rc = ann_fail(ANN_ENOTFOUND, "%s: missing (not a diskann-sector index?)", e->path);
        goto out;
    }
    rc = ann_aio_open(e->path, 1, &e->direct);
    if (rc < 0)
        goto out;
    e->fd = rc;
    rc = read_header(e);
    if (rc)
        goto out;
    e->metric = (ann_metric)e->h.metric;
    e->read_bytes = e->h.sectors_per_node * DSEC_SECTOR_BYTES;
    rc = load_pq(e, dir);
    if (rc)
        goto out;
    rc = settle_io(e, params);
    if (rc)
        goto out;
    uint64_t cache = (uint64_t)ann_param_int(params, dsec_open_params, "cache_nodes");
    if (cache > e->h.n)
        cache = e->h.n;
    if (cache) {
        rc = dsec_cache_fill(e, (uint32_t)cache);
        if (rc)
            goto out;
    }
    *out = e;
    e = NULL;
out:
    dsec_close(e);
    return rc;
}

static uint64_t dsec_size(const ann_engine *e)
{
    return e->h.n;
}

static void dsec_ctx_free(ann_ctx *c)
{
    if (!c)
        return;
    ann_aio_queue_destroy(c->q); /* first: drains reads into c->bufs */
    ann_aio_buf_free(c->bufs);
    free(c->reqs);
    free(c->req_ptrs);
    free(c->done);
    free(c->sel);
    free(c->table);
    free(c->cand);
    ann_visited_fini(&c->visited);
    free(c->vec);
    free(c->nbrs);
    free(c->fresh);
    free(c->fresh_dist);
    free(c->top_dist);
    free(c->top_id);
    free(c);
}

static int dsec_ctx_new(ann_engine *e, const json_t *params, uint32_t k_max, ann_ctx **out)
{
    int rc = ann_params_validate(params, dsec_search_params, "search");
    if (rc)
        return rc;
    ann_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ann_fail(-ENOMEM, "diskann-sector: no memory for a context");
    c->eng = e;
    c->k_max = k_max ? k_max : 1;
    c->L = (uint32_t)ann_param_int(params, dsec_search_params, "L");
    c->W = (uint32_t)ann_param_int(params, dsec_search_params, "beam_width");
    uint32_t list_cap = c->L > c->k_max ? c->L : c->k_max;
    uint32_t R = e->h.R, W = c->W;
    c->bufs = ann_aio_buf_alloc((size_t)W * e->read_bytes);
    c->reqs = calloc(W, sizeof *c->reqs);
    c->req_ptrs = calloc(W, sizeof *c->req_ptrs);
    c->done = calloc(W, sizeof *c->done);
    c->sel = calloc(W, sizeof *c->sel);
    c->table = malloc(pq_table_floats(e->pq) * sizeof(float));
    c->cand = malloc((size_t)list_cap * sizeof *c->cand);
    c->vec = malloc((size_t)e->h.dim * sizeof(float));
    c->nbrs = malloc((size_t)R * sizeof(uint32_t));
    c->fresh = malloc((size_t)R * sizeof(uint32_t));
    c->fresh_dist = malloc((size_t)R * sizeof(float));
    c->top_dist = malloc((size_t)list_cap * sizeof(float));
    c->top_id = malloc((size_t)list_cap * sizeof(uint32_t));
    if (!c->bufs || !c->reqs || !c->req_ptrs || !c->done || !c->sel || !c->table || !c->cand ||
        !c->vec || !c->nbrs || !c->fresh || !c->fresh_dist || !c->top_dist || !c->top_id ||
        ann_visited_init(&c->visited, e->h.n) != 0) {
        rc = ann_fail(-ENOMEM, "diskann-sector: no memory for a context");
        goto out;
    }
    ann_candlist_init(&c->cl, c->cand, list_cap);
    for (uint32_t i = 0; i < W; i++)
        c->req_ptrs[i] = &c->reqs[i];
    ann_aio_opts o = { .kind = e->io_kind, .strict = 1, .fd = e->fd, .depth = W };
    rc = ann_aio_queue_create(&o, &c->q);
    if (rc)
        goto out;
    *out = c;
    c = NULL;
out:
    dsec_ctx_free(c);
    return rc;
}

const ann_engine_ops diskann_sector_engine_ops = {
    .name = "diskann-sector",
    .description = "DiskANN on a 4 KiB-sector file: O_DIRECT beam search, PQ in RAM",
    .build_params = dsec_build_params,
    .open_params = dsec_open_params,
    .search_params = dsec_search_params,
    .build = dsec_build,
    .open = dsec_open,
    .close = dsec_close,
    .size = dsec_size,
    .ctx_new = dsec_ctx_new,
    .ctx_free = dsec_ctx_free,
    .search = dsec_search,
};
