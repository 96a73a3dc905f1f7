/*
 * idx.c: gzipped idx3-ubyte files (LeCun's MNIST layout, also used by
 * Fashion-MNIST), inflated with zlib.
 *
 *   offset 0: uint32 magic 0x00000803 (big-endian: unsigned byte, 3 dims)
 *   offset 4: uint32 n, uint32 rows, uint32 cols (big-endian)
 *   offset 16: n * rows * cols pixels, uint8
 *
 * A gzip stream cannot be read by offset, so the pixels are inflated once
 * into memory as bytes (60k x 784 is 47 MB) and served as floats from
 * there; a larger idx file than 1 GiB of pixels is refused.
 */
#include "datasets/readers.h"

#include "datasets/dsutil.h"
#include "engines/core/fileio.h"
#include "engines/core/status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IDX3_UBYTE_MAGIC 0x00000803u
#define IDX_MAX_BYTES (1ull << 30)

static int idx_read(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out)
{
    const unsigned char *px = src->impl;
    if (first > src->n || count > src->n - first)
        return ann_fail(ANN_EPARAM, "idx source: rows [%llu, %llu) beyond n=%llu",
                        (unsigned long long)first, (unsigned long long)(first + count),
                        (unsigned long long)src->n);
    const unsigned char *p = px + first * src->dim;
    for (uint64_t i = 0; i < count * src->dim; i++)
        out[i] = (float)p[i];
    return 0;
}

static void idx_destroy(ann_vecsrc *src)
{
    free(src->impl);
    free(src);
}

/* gzread exactly len bytes, or fail naming the file. */
static int gz_read_full(gzFile gz, void *buf, uint64_t len, const char *path, const char *what)
{
    unsigned char *p = buf;
    while (len > 0) {
        unsigned want = len > (1u << 30) ? (1u << 30) : (unsigned)len;
        int r = gzread(gz, p, want);
        if (r < 0) {
            int zerr = 0;
            const char *msg = gzerror(gz, &zerr);
            return ann_fail(ANN_EFORMAT, "%s: %s: %s", path, what, msg);
        }
        if (r == 0)
            return ann_fail(ANN_EFORMAT, "%s: truncated %s (%llu bytes missing)", path, what,
                            (unsigned long long)len);
        p += r;
        len -= (uint64_t)r;
    }
    return 0;
}

int ds_idx_open(const char *path_gz, ann_metric metric, ann_vecsrc **out)
{
    int rc = 0;
    gzFile gz = NULL;
    unsigned char *px = NULL;
    ann_vecsrc *s = NULL;
    unsigned char hdr[16];

    if ((rc = ann_check_regular(path_gz))) /* gzopen would block on a FIFO */
        return rc;
    gz = gzopen(path_gz, "rb");
    if (!gz)
        return ann_fail_errno("%s: open", path_gz);
    rc = gz_read_full(gz, hdr, sizeof hdr, path_gz, "idx header");
    if (rc)
        goto out;
    uint32_t magic = ds_be32(hdr), n = ds_be32(hdr + 4), rows = ds_be32(hdr + 8),
             cols = ds_be32(hdr + 12);
    if (magic != IDX3_UBYTE_MAGIC) {
        rc = ann_fail(ANN_EFORMAT, "%s: magic 0x%08x, want 0x%08x (idx3, unsigned byte)",
                      path_gz, magic, IDX3_UBYTE_MAGIC);
        goto out;
    }
    uint64_t dim = (uint64_t)rows * cols, bytes = (uint64_t)n * dim;
    if (dim == 0 || dim > UINT32_MAX || bytes > IDX_MAX_BYTES) {
        rc = ann_fail(ANN_EFORMAT, "%s: header says %u x %u x %u images", path_gz, n, rows, cols);
        goto out;
    }
    px = malloc(bytes ? bytes : 1);
    s = calloc(1, sizeof *s);
    if (!px || !s) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %llu pixels", path_gz,
                      (unsigned long long)bytes);
        goto out;
    }
    rc = gz_read_full(gz, px, bytes, path_gz, "pixel data");
    if (rc)
        goto out;
    unsigned char extra;
    if (gzread(gz, &extra, 1) != 0) {
        rc = ann_fail(ANN_EFORMAT, "%s: trailing bytes after %u images", path_gz, n);
        goto out;
    }
    s->n = n;
    s->dim = (uint32_t)dim;
    s->metric = metric;
    snprintf(s->id, sizeof s->id, "idx-%ux%llu", n, (unsigned long long)dim);
    s->read = idx_read;
    s->destroy = idx_destroy;
    s->impl = px;
    *out = s;
    s = NULL;
    px = NULL;
out:
    if (gz)
        gzclose(gz);
    free(px);
    free(s);
    return rc;
}
