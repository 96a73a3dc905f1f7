/*
 * texmex.c: the TEXMEX corpus formats (.fvecs, .bvecs, .ivecs) used by
 * SIFT1M/GIST1M, where every row carries its own int32 dim prefix.
 *
 * The file is read as fixed-size rows (4 + dim * itemsize bytes, dim from
 * row 0), so any row can be read by offset; each row's prefix is still
 * checked when read, since a file with a wrong row would otherwise be
 * silently misaligned.  Also: extension dispatch to the big-ann reader.
 */
#include "datasets/readers.h"

#include "datasets/dsutil.h"
#include "engines/core/binio.h"
#include "engines/core/fileio.h"
#include "engines/core/limits.h"
#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct texmex {
    int fd;
    uint32_t dim;
    size_t isz; /* 4 for fvecs/ivecs, 1 for bvecs */
    uint64_t row_bytes;
    char path[4096];
} texmex;

/* Open path, read row 0's dim, check the size is whole rows. */
static int texmex_init(texmex *t, const char *path, size_t isz, uint64_t *n)
{
    int rc = 0;
    struct stat st;
    unsigned char d4[4];
    t->fd = -1;
    t->isz = isz;
    snprintf(t->path, sizeof t->path, "%s", path);
    rc = ann_open_stat(path, &t->fd, &st);
    if (rc)
        return rc;
    if (st.st_size < 4) {
        rc = ann_fail(ANN_EFORMAT, "%s: file is %lld bytes, too short for a row", path,
                      (long long)st.st_size);
        goto out;
    }
    rc = ann_pread_full(t->fd, d4, 4, 0, path);
    if (rc)
        goto out;
    int32_t dim = (int32_t)ann_get_u32(d4);
    if (dim <= 0 || (uint32_t)dim > ANN_MAX_DIM) {
        rc = ann_fail(ANN_EFORMAT, "%s: row 0 has dim %d (want 1 to %u)", path, dim, ANN_MAX_DIM);
        goto out;
    }
    t->dim = (uint32_t)dim;
    t->row_bytes = 4 + (uint64_t)t->dim * isz;
    if ((uint64_t)st.st_size % t->row_bytes != 0) {
        rc = ann_fail(ANN_EFORMAT,
                      "%s: size %lld bytes is not a whole number of %llu-byte rows (dim %u from "
                      "row 0)",
                      path, (long long)st.st_size, (unsigned long long)t->row_bytes, t->dim);
        goto out;
    }
    *n = (uint64_t)st.st_size / t->row_bytes;
out:
    if (rc) {
        close(t->fd);
        t->fd = -1;
    }
    return rc;
}

/*
 * Read rows [first, first+count) raw into buf (count * row_bytes), check
 * each dim prefix, and move the payloads together (dim * isz each) at the
 * front of buf.
 */
static int texmex_read_raw(const texmex *t, uint64_t first, uint64_t count, unsigned char *buf)
{
    int rc = ann_pread_full(t->fd, buf, count * t->row_bytes, first * t->row_bytes, t->path);
    if (rc)
        return rc;
    size_t payload = (size_t)t->dim * t->isz;
    for (uint64_t i = 0; i < count; i++) {
        const unsigned char *row = buf + i * t->row_bytes;
        int32_t d = (int32_t)ann_get_u32(row);
        if (d != (int32_t)t->dim)
            return ann_fail(ANN_EFORMAT, "%s: row %llu has dim %d, expected %u (from row 0)",
                            t->path, (unsigned long long)(first + i), d, t->dim);
        memmove(buf + i * payload, row + 4, payload);
    }
    return 0;
}

static int texmex_src_read(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out)
{
    const texmex *t = src->impl;
    int rc = 0;
    if (first > src->n || count > src->n - first)
        return ann_fail(ANN_EPARAM, "%s: rows [%llu, %llu) beyond n=%llu", t->path,
                        (unsigned long long)first, (unsigned long long)(first + count),
                        (unsigned long long)src->n);
    unsigned char *buf = malloc(count * t->row_bytes + 1);
    if (!buf)
        return ann_fail(-ENOMEM, "%s: no memory for %llu rows", t->path,
                        (unsigned long long)count);
    rc = texmex_read_raw(t, first, count, buf);
    if (rc)
        goto out;
    uint64_t total = count * t->dim;
    if (t->isz == 1) {
        for (uint64_t i = 0; i < total; i++)
            out[i] = (float)buf[i];
    } else {
        memcpy(out, buf, total * sizeof(float));
    }
    rc = ds_check_finite(t->path, out, count, t->dim, first);
out:
    free(buf);
    return rc;
}

static void texmex_src_destroy(ann_vecsrc *src)
{
    texmex *t = src->impl;
    if (t && t->fd >= 0)
        close(t->fd);
    free(t);
    free(src);
}

int ds_texmex_open(const char *path, ann_metric metric, ann_vecsrc **out)
{
    int rc = 0;
    size_t isz;
    if (ann_str_ends_with(path, ".fvecs"))
        isz = 4;
    else if (ann_str_ends_with(path, ".bvecs"))
        isz = 1;
    else
        return ann_fail(ANN_EFORMAT, "%s: not a .fvecs or .bvecs file", path);
    ann_vecsrc *s = calloc(1, sizeof *s);
    texmex *t = calloc(1, sizeof *t);
    uint64_t n = 0;
    if (!s || !t) {
        rc = ann_fail(-ENOMEM, "%s: no memory", path);
        goto out;
    }
    rc = texmex_init(t, path, isz, &n);
    if (rc)
        goto out;
    s->n = n;
    s->dim = t->dim;
    s->metric = metric;
    snprintf(s->id, sizeof s->id, "texmex-%llux%u", (unsigned long long)n, t->dim);
    s->read = texmex_src_read;
    s->destroy = texmex_src_destroy;
    s->impl = t;
    *out = s;
    s = NULL;
    t = NULL;
out:
    free(t);
    free(s);
    return rc;
}

int ds_ivecs_load_gt(const char *path, uint64_t n_base, ann_gt *gt)
{
    int rc = 0;
    texmex t = { .fd = -1 };
    uint64_t n = 0;
    memset(gt, 0, sizeof *gt);
    if (!ann_str_ends_with(path, ".ivecs"))
        return ann_fail(ANN_EFORMAT, "%s: not an .ivecs file", path);
    rc = texmex_init(&t, path, 4, &n);
    if (rc)
        return rc;
    if (n > UINT32_MAX) {
        rc = ann_fail(ANN_EFORMAT, "%s: %llu rows, more than 2^32-1", path,
                      (unsigned long long)n);
        goto out;
    }
    gt->nq = (uint32_t)n;
    gt->k = t.dim;
    gt->ids = malloc(n * t.row_bytes + 1);
    if (!gt->ids) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %llu rows", path, (unsigned long long)n);
        goto out;
    }
    rc = texmex_read_raw(&t, 0, n, (unsigned char *)gt->ids);
    if (rc)
        goto out;
    for (uint64_t i = 0; i < n * gt->k; i++) {
        unsigned char b[4];
        memcpy(b, &gt->ids[i], 4);
        gt->ids[i] = (int32_t)ann_get_u32(b);
        if (gt->ids[i] < 0 || (n_base > 0 && (uint64_t)gt->ids[i] >= n_base)) {
            rc = ann_fail(ANN_EDATA, "%s: query %llu rank %llu: id %d out of range [0, %llu)",
                          path, (unsigned long long)(i / gt->k), (unsigned long long)(i % gt->k),
                          gt->ids[i], (unsigned long long)n_base);
            goto out;
        }
    }
out:
    if (t.fd >= 0)
        close(t.fd);
    if (rc)
        ann_gt_free(gt);
    return rc;
}

int ds_texmex_write(const char *path, ann_elem elem, const void *rows, uint64_t n, uint32_t dim)
{
    int rc = 0;
    char tmp[4096];
    size_t isz = ann_elem_size(elem);
    if (elem == ANN_ELEM_I8)
        return ann_fail(ANN_EPARAM, "%s: TEXMEX has no int8 format", path);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *fp = fopen(tmp, "wb");
    if (!fp)
        return ann_fail_errno("%s: create", tmp);
    unsigned char d4[4];
    ann_put_u32(d4, dim);
    const unsigned char *p = rows;
    for (uint64_t i = 0; i < n; i++) {
        if (fwrite(d4, 1, 4, fp) != 4 || fwrite(p + i * dim * isz, isz, dim, fp) != dim) {
            rc = ann_fail_errno("%s: write", tmp);
            goto out;
        }
    }
    if (fflush(fp) != 0 || fsync(fileno(fp)) != 0)
        rc = ann_fail_errno("%s: flush", tmp);
out:
    if (fclose(fp) != 0 && !rc)
        rc = ann_fail_errno("%s: close", tmp);
    if (!rc && rename(tmp, path) != 0)
        rc = ann_fail_errno("%s: rename", tmp);
    if (rc)
        unlink(tmp);
    return rc;
}

int ds_gt_load_any(const char *path, uint64_t n_base, ann_gt *gt)
{
    if (ann_str_ends_with(path, ".ivecs"))
        return ds_ivecs_load_gt(path, n_base, gt);
    if (ann_str_ends_with(path, ".ibin"))
        return ann_gt_load(path, n_base, gt);
    memset(gt, 0, sizeof *gt);
    return ann_fail(ANN_EFORMAT, "%s: ground truth must be .ibin or .ivecs", path);
}

int ds_vecsrc_open_any(const char *path, ann_metric metric, ann_vecsrc **out)
{
    if (ann_str_ends_with(path, ".fvecs") || ann_str_ends_with(path, ".bvecs"))
        return ds_texmex_open(path, metric, out);
    if (ann_str_ends_with(path, ".fbin") || ann_str_ends_with(path, ".u8bin") ||
        ann_str_ends_with(path, ".i8bin"))
        return ann_vecsrc_open_file(path, metric, out);
    return ann_fail(ANN_EFORMAT, "%s: unknown vector file extension (want .fvecs, .bvecs, "
                                 ".fbin, .u8bin or .i8bin)",
                    path);
}
