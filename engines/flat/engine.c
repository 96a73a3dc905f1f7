/*
 * engine.c: the flat engine's vtable: exact search over the base vectors,
 * the ground truth every other engine is measured against.  It has no
 * parameters: any given is an error.
 */
#include "engines/flat/flat.h"

#include "engines/core/crc32c.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/flat/layout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const ann_param_spec no_params[] = { ANN_PARAM_END_OF("flat (no parameters)") };

static void flat_close(ann_engine *e)
{
    if (!e)
        return;
    if (e->map && e->map != MAP_FAILED)
        munmap(e->map, e->map_bytes);
    free(e);
}

/*
 * Every block of vectors.fbin against flat.json's checksums, before a row
 * is trusted: one pass over the file at open, as long as one query.
 */
static int check_blocks(const ann_engine *e, const json_t *meta, const char *path)
{
    const json_t *sums = json_object_get(meta, "block_checksums");
    json_int_t rows = json_integer_value(json_object_get(meta, "block_rows"));
    uint64_t blocks = rows > 0 ? (e->n + (uint64_t)rows - 1) / (uint64_t)rows : 0;
    if (rows <= 0 || !json_is_array(sums) || json_array_size(sums) != blocks)
        return ann_fail(ANN_ECORRUPT, "%s: block_rows / block_checksums missing or not %llu "
                                      "checksums",
                        FLAT_META_FILE, (unsigned long long)blocks);
    const unsigned char *base = (const unsigned char *)e->map + 8;
    size_t row_bytes = (size_t)e->dim * sizeof(float);
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t first = b * (uint64_t)rows;
        uint64_t count = e->n - first < (uint64_t)rows ? e->n - first : (uint64_t)rows;
        uint32_t got = ann_checksum(base + first * row_bytes, count * row_bytes);
        const json_t *want = json_array_get(sums, b);
        if (!json_is_integer(want) || (uint32_t)json_integer_value(want) != got ||
            json_integer_value(want) < 0 || json_integer_value(want) > 0xffffffffLL)
            return ann_fail(ANN_ECORRUPT, "%s: rows %llu..%llu: checksum 0x%08x, %s records "
                                          "0x%08llx (the file is corrupt)",
                            path, (unsigned long long)first,
                            (unsigned long long)(first + count - 1), got, FLAT_META_FILE,
                            (unsigned long long)json_integer_value(want));
    }
    return 0;
}

static int flat_open(const char *dir, const json_t *open_params, ann_engine **out,
                     json_t *report)
{
    (void)open_params; /* none declared */
    int rc = 0;
    char path[4096];
    json_error_t jerr;
    json_t *meta = NULL;
    ann_engine *e = NULL;
    ann_vecfile vf = { .fd = -1 };

    snprintf(path, sizeof path, "%s/%s", dir, FLAT_META_FILE);
    meta = json_load_file(path, 0, &jerr);
    if (!meta) {
        rc = access(path, F_OK) ? ann_fail(ANN_ENOTFOUND, "%s: missing (not a flat index?)", path)
                                : ann_fail(ANN_ECORRUPT, "%s: %s", path, jerr.text);
        goto out;
    }
    const char *fmt = json_string_value(json_object_get(meta, "format"));
    if (!fmt || strcmp(fmt, FLAT_FORMAT) != 0) {
        rc = ann_fail(ANN_ECORRUPT, "%s: format is not \"%s\"", path, FLAT_FORMAT);
        goto out;
    }
    json_int_t ver = json_integer_value(json_object_get(meta, "version"));
    if (ver != FLAT_VERSION) {
        rc = ann_fail(ANN_EVERSION, "%s: version %lld, this build reads %d", path, (long long)ver,
                      FLAT_VERSION);
        goto out;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        rc = ann_fail(-ENOMEM, "flat open: no memory");
        goto out;
    }
    rc = ann_metric_parse(json_string_value(json_object_get(meta, "metric")), &e->metric);
    if (rc) {
        rc = ann_fail_wrap(ANN_ECORRUPT, "%s", path);
        goto out;
    }
    snprintf(path, sizeof path, "%s/%s", dir, FLAT_VECTORS_FILE);
    rc = ann_vecfile_open(path, &vf);
    if (rc) {
        if (rc == ANN_EFORMAT)
            rc = ANN_ECORRUPT;
        goto out;
    }
    if ((json_int_t)vf.n != json_integer_value(json_object_get(meta, "n")) ||
        (json_int_t)vf.dim != json_integer_value(json_object_get(meta, "dim"))) {
        rc = ann_fail(ANN_ECORRUPT, "%s: n/dim disagree with %s", path, FLAT_META_FILE);
        goto out;
    }
    e->n = vf.n;
    e->dim = vf.dim;
    e->map_bytes = 8 + (size_t)vf.n * vf.dim * sizeof(float);
    e->map = mmap(NULL, e->map_bytes, PROT_READ, MAP_SHARED, vf.fd, 0);
    if (e->map == MAP_FAILED) {
        rc = ann_fail_errno("%s: mmap", path);
        goto out;
    }
    e->vectors = (const float *)((const char *)e->map + 8);
    rc = check_blocks(e, meta, path);
    if (rc)
        goto out;
    /* The check mapped every page into this process; unmap them again (the
     * page cache keeps them): a page still mapped cannot be evicted, and a
     * cold cell evicts the index after open. */
    (void)madvise((void *)e->map, e->map_bytes, MADV_DONTNEED);
    ann_open_report_set(report, "mmap", 0, 0);
    *out = e;
    e = NULL;
out:
    ann_vecfile_close(&vf);
    json_decref(meta);
    flat_close(e);
    return rc;
}

static uint64_t flat_size(const ann_engine *e)
{
    return e->n;
}

static void flat_ctx_free(ann_ctx *c)
{
    if (!c)
        return;
    free(c->heap_dist);
    free(c->heap_id);
    free(c);
}

static int flat_ctx_new(ann_engine *e, const json_t *search_params, uint32_t k_max, ann_ctx **out)
{
    (void)search_params; /* none declared */
    ann_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ann_fail(-ENOMEM, "flat: no memory for a context");
    c->eng = e;
    c->k_max = k_max ? k_max : 1;
    c->heap_dist = malloc(c->k_max * sizeof(float));
    c->heap_id = malloc(c->k_max * sizeof(uint32_t));
    if (!c->heap_dist || !c->heap_id) {
        flat_ctx_free(c);
        return ann_fail(-ENOMEM, "flat: no memory for a context");
    }
    *out = c;
    return 0;
}

const ann_engine_ops flat_engine_ops = {
    .name = "flat",
    .description = "exact search by full scan (ground truth)",
    .title = "exact (flat)",
    .build_params = no_params,
    .open_params = no_params,
    .search_params = no_params,
    .build = flat_build,
    .open = flat_open,
    .close = flat_close,
    .size = flat_size,
    .ctx_new = flat_ctx_new,
    .ctx_free = flat_ctx_free,
    .search = flat_search,
    .format_version = FLAT_VERSION,
};
