/*
 * vecfile.c: reading and writing big-ann .fbin/.u8bin/.i8bin/.ibin files
 * and ground truth, with size checks against the header and atomic writes.
 */
#include "engines/core/vecfile.h"

#include "engines/core/binio.h"
#include "engines/core/fileio.h"
#include "engines/core/limits.h"
#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int ann_elem_from_path(const char *path, ann_elem *out)
{
    if (ann_str_ends_with(path, ".fbin"))
        *out = ANN_ELEM_F32;
    else if (ann_str_ends_with(path, ".u8bin"))
        *out = ANN_ELEM_U8;
    else if (ann_str_ends_with(path, ".i8bin"))
        *out = ANN_ELEM_I8;
    else if (ann_str_ends_with(path, ".ibin"))
        *out = ANN_ELEM_I32;
    else
        return ann_fail(ANN_EFORMAT, "%s: unknown vector file extension (want .fbin, .u8bin, "
                                     ".i8bin or .ibin)", path);
    return 0;
}

size_t ann_elem_size(ann_elem e)
{
    return e == ANN_ELEM_U8 || e == ANN_ELEM_I8 ? 1 : 4;
}

const char *ann_elem_name(ann_elem e)
{
    switch (e) {
    case ANN_ELEM_F32: return "float32";
    case ANN_ELEM_U8: return "uint8";
    case ANN_ELEM_I8: return "int8";
    case ANN_ELEM_I32: return "int32";
    }
    return "?";
}

int ann_vecfile_open(const char *path, ann_vecfile *vf)
{
    int rc = 0;
    memset(vf, 0, sizeof *vf);
    vf->fd = -1;
    snprintf(vf->path, sizeof vf->path, "%s", path);
    rc = ann_elem_from_path(path, &vf->elem);
    if (rc)
        return rc;
    struct stat st;
    rc = ann_open_stat(path, &vf->fd, &st);
    if (rc)
        return rc;
    if (st.st_size < 8) {
        rc = ann_fail(ANN_EFORMAT, "%s: file is %lld bytes, shorter than the 8-byte header", path,
                      (long long)st.st_size);
        goto out;
    }
    unsigned char hdr[8];
    rc = ann_pread_full(vf->fd, hdr, sizeof hdr, 0, path);
    if (rc)
        goto out;
    vf->n = ann_get_u32(hdr);
    vf->dim = ann_get_u32(hdr + 4);
    if (vf->dim == 0) {
        rc = ann_fail(ANN_EFORMAT, "%s: header says dim 0", path);
        goto out;
    }
    if (vf->dim > ANN_MAX_DIM) {
        rc = ann_fail(ANN_EFORMAT, "%s: header says dim %u, more than %u", path, vf->dim,
                      ANN_MAX_DIM);
        goto out;
    }
    uint64_t want = 0;
    if (__builtin_mul_overflow(vf->n * (uint64_t)vf->dim, (uint64_t)ann_elem_size(vf->elem),
                               &want) ||
        __builtin_add_overflow(want, 8, &want)) {
        rc = ann_fail(ANN_EFORMAT, "%s: header n=%llu dim=%u describes more than 2^64 bytes",
                      path, (unsigned long long)vf->n, vf->dim);
        goto out;
    }
    if ((uint64_t)st.st_size != want) {
        rc = ann_fail(ANN_EFORMAT,
                      "%s: size %lld bytes does not match header n=%llu dim=%u (%s): expected "
                      "%llu bytes",
                      path, (long long)st.st_size, (unsigned long long)vf->n, vf->dim,
                      ann_elem_name(vf->elem), (unsigned long long)want);
        goto out;
    }
out:
    if (rc) {
        close(vf->fd);
        vf->fd = -1;
    }
    return rc;
}

/* ANN_EDATA naming the first non-finite value of total floats at x, rows from first. */
static int check_finite(const ann_vecfile *vf, uint64_t first, const float *x, uint64_t total)
{
    for (uint64_t i = 0; i < total; i++)
        if (!isfinite(x[i]))
            return ann_fail(ANN_EDATA, "%s: row %llu, component %u is %s", vf->path,
                            (unsigned long long)(first + i / vf->dim), (unsigned)(i % vf->dim),
                            isnan(x[i]) ? "NaN" : "Inf");
    return 0;
}

int ann_vecfile_read_f32(const ann_vecfile *vf, uint64_t first, uint64_t count, float *out)
{
    if (first > vf->n || count > vf->n - first)
        return ann_fail(ANN_EPARAM, "%s: rows [%llu, %llu) beyond n=%llu", vf->path,
                        (unsigned long long)first, (unsigned long long)(first + count),
                        (unsigned long long)vf->n);
    size_t isz = ann_elem_size(vf->elem);
    uint64_t total = count * vf->dim;
    uint64_t off = 8 + first * vf->dim * isz;
    int rc;
    if (vf->elem == ANN_ELEM_F32) {
        rc = ann_pread_full(vf->fd, out, total * 4, off, vf->path);
        if (rc)
            return rc;
    } else if (vf->elem == ANN_ELEM_U8 || vf->elem == ANN_ELEM_I8) {
        /* Read into the tail of out, then widen front to back in place:
         * element i (1 byte at offset 3*total + i) is consumed before
         * float i (4 bytes at offset 4*i) overwrites it. */
        unsigned char *raw = (unsigned char *)out + total * 3;
        rc = ann_pread_full(vf->fd, raw, total, off, vf->path);
        if (rc)
            return rc;
        for (uint64_t i = 0; i < total; i++)
            out[i] = vf->elem == ANN_ELEM_U8 ? (float)raw[i] : (float)(int8_t)raw[i];
        return 0;
    } else {
        return ann_fail(ANN_EFORMAT, "%s: int32 file is not a vector file", vf->path);
    }
    return check_finite(vf, first, out, total);
}

int ann_vecfile_map(ann_vecfile *vf)
{
    if (vf->map)
        return 0;
    if (vf->elem != ANN_ELEM_F32)
        return ann_fail(ANN_EFORMAT, "%s: %s rows are not float32 as stored; read them with "
                                     "conversion instead of mapping", vf->path,
                        ann_elem_name(vf->elem));
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return ann_fail(ANN_EFORMAT, "%s: float32 rows are little-endian; this host is not",
                    vf->path);
#else
    size_t bytes = 8 + (size_t)(vf->n * vf->dim * 4);
    void *m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, vf->fd, 0);
    if (m == MAP_FAILED)
        return ann_fail_errno("%s: mmap of %zu bytes", vf->path, bytes);
    vf->map = m;
    vf->map_bytes = bytes;
    return 0;
#endif
}

int ann_vecfile_rows_f32(const ann_vecfile *vf, uint64_t first, uint64_t count,
                         const float **out)
{
    if (!vf->map)
        return ann_fail(ANN_EPARAM, "%s: not mapped", vf->path);
    if (first > vf->n || count > vf->n - first)
        return ann_fail(ANN_EPARAM, "%s: rows [%llu, %llu) beyond n=%llu", vf->path,
                        (unsigned long long)first, (unsigned long long)(first + count),
                        (unsigned long long)vf->n);
    /* the header is 8 bytes and the mapping page-aligned: rows are 4-aligned */
    const float *rows = (const float *)(const void *)(vf->map + 8) + first * vf->dim;
    int rc = check_finite(vf, first, rows, count * vf->dim);
    if (rc == 0)
        *out = rows;
    return rc;
}

void ann_vecfile_close(ann_vecfile *vf)
{
    if (!vf)
        return;
    if (vf->map) {
        munmap((void *)vf->map, vf->map_bytes);
        vf->map = NULL;
        vf->map_bytes = 0;
    }
    if (vf->fd >= 0) {
        close(vf->fd);
        vf->fd = -1;
    }
}

int ann_vecwriter_open(ann_vecwriter *w, const char *path, uint32_t dim, ann_elem elem)
{
    memset(w, 0, sizeof *w);
    w->dim = dim;
    w->elem = elem;
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%d", path, (int)getpid());
    w->fp = fopen(w->tmp, "wb");
    if (!w->fp)
        return ann_fail_errno("%s: create", w->tmp);
    unsigned char hdr[8] = { 0 };
    ann_put_u32(hdr + 4, dim);
    if (fwrite(hdr, 1, 8, w->fp) != 8) {
        int rc = ann_fail_errno("%s: write header", w->tmp);
        ann_vecwriter_abort(w);
        return rc;
    }
    return 0;
}

int ann_vecwriter_append(ann_vecwriter *w, const void *rows, uint64_t count)
{
    if (w->n + count > UINT32_MAX)
        return ann_fail(ANN_EPARAM, "%s: more than 2^32-1 rows", w->path);
    size_t bytes = (size_t)(count * w->dim * ann_elem_size(w->elem));
    if (bytes && fwrite(rows, 1, bytes, w->fp) != bytes)
        return ann_fail_errno("%s: write", w->tmp);
    w->n += count;
    return 0;
}

int ann_vecwriter_finish(ann_vecwriter *w)
{
    int rc = 0;
    unsigned char n4[4];
    ann_put_u32(n4, (uint32_t)w->n);
    if (fseek(w->fp, 0, SEEK_SET) != 0 || fwrite(n4, 1, 4, w->fp) != 4 || fflush(w->fp) != 0 ||
        fsync(fileno(w->fp)) != 0) {
        rc = ann_fail_errno("%s: finish", w->tmp);
        ann_vecwriter_abort(w);
        return rc;
    }
    if (fclose(w->fp) != 0) {
        w->fp = NULL;
        rc = ann_fail_errno("%s: close", w->tmp);
        unlink(w->tmp);
        return rc;
    }
    w->fp = NULL;
    if (rename(w->tmp, w->path) != 0) {
        rc = ann_fail_errno("%s: rename to %s", w->tmp, w->path);
        unlink(w->tmp);
    }
    return rc;
}

void ann_vecwriter_abort(ann_vecwriter *w)
{
    if (w->fp) {
        fclose(w->fp);
        w->fp = NULL;
    }
    if (w->tmp[0])
        unlink(w->tmp);
}

int ann_gt_load(const char *path, uint64_t n_base, ann_gt *gt)
{
    int rc = 0;
    int fd = -1;
    memset(gt, 0, sizeof *gt);
    struct stat st;
    rc = ann_open_stat(path, &fd, &st);
    if (rc)
        return rc;
    unsigned char hdr[8];
    if (st.st_size < 8) {
        rc = ann_fail(ANN_EFORMAT, "%s: file is %lld bytes, shorter than the 8-byte header", path,
                      (long long)st.st_size);
        goto out;
    }
    rc = ann_pread_full(fd, hdr, 8, 0, path);
    if (rc)
        goto out;
    gt->nq = ann_get_u32(hdr);
    gt->k = ann_get_u32(hdr + 4);
    uint64_t cells = (uint64_t)gt->nq * gt->k, with_bytes = 0, ids_bytes = 0;
    /* nq and k are untrusted: 8 + nq*k*8 must not wrap around to the file size */
    if (__builtin_mul_overflow(cells, 8, &with_bytes) ||
        __builtin_add_overflow(with_bytes, 8, &with_bytes)) {
        rc = ann_fail(ANN_EFORMAT, "%s: header nq=%u k=%u describes more than 2^64 bytes", path,
                      gt->nq, gt->k);
        goto out;
    }
    ids_bytes = 8 + cells * 4;
    int with_dists;
    if ((uint64_t)st.st_size == with_bytes)
        with_dists = 1;
    else if ((uint64_t)st.st_size == ids_bytes)
        with_dists = 0;
    else {
        rc = ann_fail(ANN_EFORMAT,
                      "%s: size %lld bytes does not match header nq=%u k=%u (expected %llu with "
                      "distances or %llu without)",
                      path, (long long)st.st_size, gt->nq, gt->k,
                      (unsigned long long)with_bytes, (unsigned long long)ids_bytes);
        goto out;
    }
    if (gt->k == 0) {
        rc = ann_fail(ANN_EFORMAT, "%s: header says k 0", path);
        goto out;
    }
    gt->ids = malloc(cells * 4 + 1);
    if (with_dists)
        gt->dists = malloc(cells * 4 + 1);
    if (!gt->ids || (with_dists && !gt->dists)) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %llu entries", path, (unsigned long long)cells);
        goto out;
    }
    rc = ann_pread_full(fd, gt->ids, cells * 4, 8, path);
    if (!rc && with_dists)
        rc = ann_pread_full(fd, gt->dists, cells * 4, 8 + cells * 4, path);
    if (rc)
        goto out;
    for (uint64_t i = 0; i < cells; i++) {
        if (gt->ids[i] < 0 || (n_base > 0 && (uint64_t)gt->ids[i] >= n_base)) {
            rc = ann_fail(ANN_EDATA, "%s: query %llu rank %llu: id %d out of range [0, %llu)",
                          path, (unsigned long long)(i / gt->k), (unsigned long long)(i % gt->k),
                          gt->ids[i], (unsigned long long)n_base);
            goto out;
        }
        if (with_dists && !isfinite(gt->dists[i])) {
            rc = ann_fail(ANN_EDATA, "%s: query %llu rank %llu: distance is not finite", path,
                          (unsigned long long)(i / gt->k), (unsigned long long)(i % gt->k));
            goto out;
        }
    }
out:
    if (fd >= 0)
        close(fd);
    if (rc)
        ann_gt_free(gt);
    return rc;
}

int ann_gt_save(const char *path, const ann_gt *gt)
{
    char tmp[4096];
    FILE *fp = NULL;
    int rc = ann_tmpfile_create(path, tmp, sizeof tmp, &fp);
    if (rc)
        return rc;
    unsigned char hdr[8];
    ann_put_u32(hdr, gt->nq);
    ann_put_u32(hdr + 4, gt->k);
    size_t cells = (size_t)gt->nq * gt->k;
    if (fwrite(hdr, 1, 8, fp) != 8 || fwrite(gt->ids, 4, cells, fp) != cells ||
        (gt->dists && fwrite(gt->dists, 4, cells, fp) != cells)) {
        rc = ann_fail_errno("%s: write", tmp);
        ann_tmpfile_discard(fp, tmp);
        return rc;
    }
    return ann_tmpfile_commit(fp, tmp, path);
}

void ann_gt_free(ann_gt *gt)
{
    if (!gt)
        return;
    free(gt->ids);
    free(gt->dists);
    gt->ids = NULL;
    gt->dists = NULL;
}
