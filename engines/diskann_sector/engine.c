/*
 * engine.c: the diskann-sector vtable: open (header checks, PQ codebook and
 * codes into RAM, the I/O backend chosen once, the BFS cache filled),
 * per-thread search contexts with every buffer allocated up front, close.
 *
 * The `io` parameter says how node records are read:
 *   io_uring | libaio | pread   O_DIRECT (no page cache): every read goes to
 *                               the device, so warm and cold differ only by
 *                               the BFS cache;
 *   buffered                    pread through the page cache;
 *   mmap                        the file mapped read-only; a "read" is a
 *                               memory access that may fault the page in.
 * buffered and mmap are what warm mode means for the other engines: the
 * harness's warm-up leaves the file in the page cache.  Both advise the
 * kernel that access is random (no readahead), so a cold cell reads from
 * the device about the pages it touches, as O_DIRECT does.  mmap caveat: a
 * file truncated while it is open faults (SIGBUS) as any mapping does; the
 * other backends report the short read.
 *
 * The O_DIRECT backend is probed once at open: when `io` is given the
 * backend is required (an error naming it otherwise); when it is left to
 * the default, io_uring falls back to libaio then pread with one notice,
 * and every context then uses the backend open settled on.  open_report
 * states what was used after any fallback.
 */
#include "engines/diskann_sector/dsec.h"

#include "engines/core/artifacts.h"
#include "engines/core/binio.h"
#include "engines/core/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* In dsec_io order. */
static const char *const io_choices[] = { "io_uring", "libaio", "pread", "buffered", "mmap",
                                          NULL };
/* In dsec_mode order. */
static const char *const mode_choices[] = { "pipeline", "round", NULL };

const ann_param_spec dsec_open_params[] = {
    { .name = "io", .type = ANN_PARAM_ENUM, .choices = io_choices, .def_str = "io_uring",
      .help = "io_uring|libaio|pread (O_DIRECT; io_uring falls back when left to the "
              "default), buffered (pread via the page cache) or mmap" },
    { .name = "sqpoll", .type = ANN_PARAM_BOOL, .def = 0,
      .help = "io_uring: a kernel thread per search context polls the submission queue, so "
              "submitting a read needs no system call (it spins on a core while reads "
              "are issued; falls back with a notice unless io is given)" },
    { .name = "cache_nodes", .type = ANN_PARAM_INT, .min = 0, .max = 4294967294.0, .def = 0,
      .help = "nodes around the medoid kept in RAM (BFS order), filled at open" },
    ANN_PARAM_END_OF("diskann-sector open"),
};

const ann_param_spec dsec_search_params[] = {
    { .name = "L", .type = ANN_PARAM_INT, .min = 1, .max = 100000, .def = 100,
      .help = "search list size (candidates kept), at least k", .at_least_k = 1 },
    { .name = "beam_width", .type = ANN_PARAM_INT, .min = 1, .max = 256, .def = 4,
      .help = "W: sector reads per round (round), most reads in flight (pipeline)" },
    { .name = "search_mode", .type = ANN_PARAM_ENUM, .choices = mode_choices,
      .def_str = "pipeline",
      .help = "pipeline (no per-round barrier) or round (DiskANN's rounds of W reads)" },
    { .name = "adaptive_beam", .type = ANN_PARAM_BOOL, .def = 1,
      .help = "pipeline: start 2 reads wide, widen to W as expansions feed the list" },
    { .name = "submit_group", .type = ANN_PARAM_INT, .min = 0, .max = 256, .def = 0,
      .help = "pipeline: most reads per submission, the rest of the free slots going in "
              "further submissions while the first group is in flight (0: all free slots "
              "in one submission)" },
    ANN_PARAM_END_OF("diskann-sector search"),
};

static void dsec_close(ann_engine *e)
{
    if (!e)
        return;
    if (e->map)
        munmap((void *)e->map, e->map_bytes);
    if (e->fd >= 0)
        close(e->fd);
    pq_codebook_destroy(e->pq);
    free(e->sums);
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
    ann_aio_kind want = ANN_AIO_PREAD;
    if (e->io == DSEC_IO_URING)
        want = ANN_AIO_IO_URING;
    else if (e->io == DSEC_IO_LIBAIO)
        want = ANN_AIO_LIBAIO;
    ann_aio_opts o = { .kind = want, .strict = ann_param_is_set(params, "io"), .fd = e->fd,
                       .depth = 1, .sqpoll = ann_param_bool(params, dsec_open_params, "sqpoll") };
    ann_aio_queue *q = NULL;
    int rc = ann_aio_queue_create(&o, &q);
    if (rc)
        return rc;
    e->io_kind = ann_aio_queue_kind(q);
    e->sqpoll = ann_aio_queue_sqpoll(q);
    ann_aio_queue_destroy(q);
    return 0;
}

/* Page-cache backends: random access (no readahead); mmap maps the file. */
static int setup_cached_io(ann_engine *e)
{
    int adv = posix_fadvise(e->fd, 0, 0, POSIX_FADV_RANDOM);
    if (adv)
        return ann_fail(-adv, "%s: posix_fadvise(RANDOM): %s", e->path, strerror(adv));
    if (e->io != DSEC_IO_MMAP)
        return 0;
    e->map_bytes = e->h.total_sectors * DSEC_SECTOR_BYTES;
    void *m = mmap(NULL, e->map_bytes, PROT_READ, MAP_SHARED, e->fd, 0);
    if (m == MAP_FAILED)
        return ann_fail_errno("%s: mmap of %llu bytes", e->path,
                              (unsigned long long)e->map_bytes);
    e->map = m;
    if (madvise(m, e->map_bytes, MADV_RANDOM) != 0)
        return ann_fail_errno("%s: madvise(RANDOM)", e->path);
    return 0;
}

/* engine.h's open report: the backend after any fallback, the cache. */
static void open_report(const ann_engine *e, json_t *report)
{
    const char *io = e->io > DSEC_IO_PREAD ? io_choices[e->io] : ann_aio_kind_name(e->io_kind);
    ann_open_report_set(report, io, e->direct, (uint64_t)e->cache_count * e->h.node_bytes);
    json_object_set_new(report, "io_asked", json_string(io_choices[e->io]));
    json_object_set_new(report, "page_cache", json_boolean(!e->direct));
    json_object_set_new(report, "cache_nodes", json_integer((json_int_t)e->cache_count));
    json_object_set_new(report, "sqpoll", json_boolean(e->sqpoll));
}

static int dsec_open(const char *dir, const json_t *params, ann_engine **out, json_t *report)
{
    int rc = 0;
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
    const char *io_name = ann_param_enum(params, dsec_open_params, "io");
    for (int i = 0; io_choices[i]; i++)
        if (!strcmp(io_name, io_choices[i]))
            e->io = (dsec_io)i;
    rc = ann_aio_open(e->path, e->io <= DSEC_IO_PREAD, &e->direct);
    if (rc < 0)
        goto out;
    e->fd = rc;
    rc = read_header(e);
    if (rc)
        goto out;
    {
        char sums[4200];
        snprintf(sums, sizeof sums, "%s/%s", dir, DSEC_SUMS_FILE);
        rc = dsec_sums_load(sums, &e->h, &e->sums);
        if (rc)
            goto out;
    }
    e->metric = (ann_metric)e->h.metric;
    e->read_bytes = e->h.sectors_per_node * DSEC_SECTOR_BYTES;
    rc = load_pq(e, dir);
    if (rc)
        goto out;
    rc = e->io <= DSEC_IO_PREAD ? settle_io(e, params) : setup_cached_io(e);
    if (rc)
        goto out;
    if (e->io > DSEC_IO_PREAD)
        e->io_kind = ANN_AIO_PREAD; /* the BFS cache fill's reads */
    uint64_t cache = (uint64_t)ann_param_int(params, dsec_open_params, "cache_nodes");
    if (cache > e->h.n)
        cache = e->h.n;
    if (cache) {
        rc = dsec_cache_fill(e, (uint32_t)cache);
        if (rc)
            goto out;
    }
    open_report(e, report);
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
    free(c->free_slots);
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
    int rc = 0;
    ann_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ann_fail(-ENOMEM, "diskann-sector: no memory for a context");
    c->eng = e;
    c->k_max = k_max ? k_max : 1;
    c->L = (uint32_t)ann_param_int(params, dsec_search_params, "L");
    c->W = (uint32_t)ann_param_int(params, dsec_search_params, "beam_width");
    const char *mode = ann_param_enum(params, dsec_search_params, "search_mode");
    c->mode = strcmp(mode, "round") ? DSEC_MODE_PIPELINE : DSEC_MODE_ROUND;
    c->adaptive = ann_param_bool(params, dsec_search_params, "adaptive_beam");
    c->group = (uint32_t)ann_param_int(params, dsec_search_params, "submit_group");
    if (c->group == 0 || c->group > c->W)
        c->group = c->W;
    uint32_t list_cap = c->L > c->k_max ? c->L : c->k_max;
    uint32_t R = e->h.R, W = c->W;
    c->bufs = ann_aio_buf_alloc((size_t)W * e->read_bytes);
    c->reqs = calloc(W, sizeof *c->reqs);
    c->req_ptrs = calloc(W, sizeof *c->req_ptrs);
    c->done = calloc(W, sizeof *c->done);
    c->sel = calloc(W, sizeof *c->sel);
    c->free_slots = calloc(W, sizeof *c->free_slots);
    c->table = malloc(pq_table_floats(e->pq) * sizeof(float));
    c->cand = malloc((size_t)list_cap * sizeof *c->cand);
    c->vec = malloc((size_t)e->h.dim * sizeof(float));
    c->nbrs = malloc((size_t)R * sizeof(uint32_t));
    c->fresh = malloc((size_t)R * sizeof(uint32_t));
    c->fresh_dist = malloc((size_t)R * sizeof(float));
    c->top_dist = malloc((size_t)list_cap * sizeof(float));
    c->top_id = malloc((size_t)list_cap * sizeof(uint32_t));
    if (!c->bufs || !c->reqs || !c->req_ptrs || !c->done || !c->sel || !c->free_slots || !c->table || !c->cand ||
        !c->vec || !c->nbrs || !c->fresh || !c->fresh_dist || !c->top_dist || !c->top_id ||
        ann_visited_init(&c->visited, e->h.n) != 0) {
        rc = ann_fail(-ENOMEM, "diskann-sector: no memory for a context");
        goto out;
    }
    ann_candlist_init(&c->cl, c->cand, list_cap);
    for (uint32_t i = 0; i < W; i++)
        c->req_ptrs[i] = &c->reqs[i];
    ann_aio_opts o = { .kind = e->io_kind, .strict = 1, .fd = e->fd, .depth = W,
                       .sqpoll = e->sqpoll, .buf = c->bufs,
                       .buf_bytes = (size_t)W * e->read_bytes };
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
    .title = "DiskANN (sector file)",
    .reads_unit = "sector reads",
    .build_params = dsec_build_params,
    .open_params = dsec_open_params,
    .search_params = dsec_search_params,
    .effort_param = "L",
    .build = dsec_build,
    .open = dsec_open,
    .close = dsec_close,
    .size = dsec_size,
    .format_version = DSEC_FORMAT,
    .imports_graph = 1,
    .ctx_new = dsec_ctx_new,
    .ctx_free = dsec_ctx_free,
    .search = dsec_search,
};
