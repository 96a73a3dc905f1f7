/*
 * build.c: the flat "index" is the base vectors, copied in chunks into
 * vectors.fbin, plus flat.json naming the metric and holding each chunk's
 * checksum.
 */
#include "engines/flat/flat.h"

#include "engines/core/crc32c.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/flat/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int flat_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report)
{
    (void)bctx; /* no shared artifacts */
    (void)params;
    (void)report;
    int rc = 0;
    char path[4096];
    ann_vecwriter w = { 0 };
    int writer_open = 0;
    json_t *meta = NULL, *sums = NULL;
    float *buf = malloc((size_t)FLAT_COPY_ROWS * src->dim * sizeof(float));
    if (!buf)
        return ann_fail(-ENOMEM, "flat build: no memory");

    snprintf(path, sizeof path, "%s/%s", dir, FLAT_VECTORS_FILE);
    sums = json_array();
    rc = ann_vecwriter_open(&w, path, src->dim, ANN_ELEM_F32);
    if (rc)
        goto out;
    writer_open = 1;
    /* one block per chunk: its checksum as written (little-endian host) */
    for (uint64_t i = 0; i < src->n; i += FLAT_COPY_ROWS) {
        uint64_t c = src->n - i < FLAT_COPY_ROWS ? src->n - i : FLAT_COPY_ROWS;
        rc = ann_vecsrc_read(src, i, c, buf);
        if (rc)
            goto out;
        rc = ann_vecwriter_append(&w, buf, c);
        if (rc)
            goto out;
        json_array_append_new(sums, json_integer(ann_checksum(buf, c * src->dim * sizeof(float))));
    }
    rc = ann_vecwriter_finish(&w);
    writer_open = 0;
    if (rc)
        goto out;

    meta = json_pack("{s:s, s:i, s:s, s:I, s:i, s:i, s:O}", "format", FLAT_FORMAT, "version",
                     FLAT_VERSION, "metric", ann_metric_name(src->metric), "n",
                     (json_int_t)src->n, "dim", (int)src->dim, "block_rows", FLAT_COPY_ROWS,
                     "block_checksums", sums);
    snprintf(path, sizeof path, "%s/%s", dir, FLAT_META_FILE);
    errno = 0;
    if (!meta)
        rc = ann_fail(-ENOMEM, "%s: cannot assemble", path);
    else if (json_dump_file(meta, path, JSON_INDENT(2)) != 0)
        rc = errno ? ann_fail_errno("%s: cannot write", path) /* ENOSPC stays ENOSPC */
                   : ann_fail(-EIO, "%s: cannot write", path);
out:
    if (writer_open)
        ann_vecwriter_abort(&w);
    json_decref(sums);
    json_decref(meta);
    free(buf);
    return rc;
}
