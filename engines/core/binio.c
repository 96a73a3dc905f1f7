/*
 * binio.c: atomic checksummed writer and checksumming reader for core's
 * binary formats (see binio.h).  The crc is zlib's crc32.
 */
#include "engines/core/binio.h"

#include "engines/core/status.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define BINIO_CHUNK 4096

/* crc32 over len bytes, fed in pieces that fit zlib's uInt length. */
static unsigned long binio_crc(unsigned long crc, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        uInt part = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = crc32(crc, p, part);
        p += part;
        len -= part;
    }
    return crc;
}

int ann_awriter_open(ann_awriter *w, const char *path)
{
    memset(w, 0, sizeof *w);
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid());
    w->crc = crc32(0L, Z_NULL, 0);
    w->fp = fopen(w->tmp, "wb");
    if (!w->fp)
        return ann_fail_errno("%s: cannot create", w->tmp);
    return 0;
}

int ann_awriter_write(ann_awriter *w, const void *data, size_t len)
{
    w->crc = binio_crc(w->crc, data, len);
    if (len && fwrite(data, 1, len, w->fp) != len)
        return ann_fail_errno("%s: write failed", w->tmp);
    return 0;
}

/* Append count 4-byte words (u32 or f32 bit patterns) little-endian. */
static int awriter_write_words(ann_awriter *w, const void *v, size_t count)
{
    if (ann_host_le())
        return ann_awriter_write(w, v, count * 4);
    const uint8_t *src = v;
    uint8_t buf[BINIO_CHUNK];
    size_t i = 0;
    while (i < count) {
        size_t c = 0;
        for (; c < BINIO_CHUNK / 4 && i < count; c++, i++) {
            uint32_t x;
            memcpy(&x, src + i * 4, 4);
            ann_put_u32(buf + c * 4, x);
        }
        int rc = ann_awriter_write(w, buf, c * 4);
        if (rc)
            return rc;
    }
    return 0;
}

int ann_awriter_write_u32s(ann_awriter *w, const uint32_t *v, size_t count)
{
    return awriter_write_words(w, v, count);
}

int ann_awriter_write_f32s(ann_awriter *w, const float *v, size_t count)
{
    return awriter_write_words(w, v, count);
}

int ann_awriter_finish(ann_awriter *w)
{
    int rc = 0;
    uint8_t t[4];
    ann_put_u32(t, (uint32_t)w->crc);
    if (fwrite(t, 1, 4, w->fp) != 4 || fflush(w->fp) != 0) {
        rc = ann_fail_errno("%s: write failed", w->tmp);
        goto out;
    }
    if (fsync(fileno(w->fp)) != 0) {
        rc = ann_fail_errno("%s: fsync failed", w->tmp);
        goto out;
    }
    if (fclose(w->fp) != 0) {
        w->fp = NULL;
        rc = ann_fail_errno("%s: close failed", w->tmp);
        goto out;
    }
    w->fp = NULL;
    if (rename(w->tmp, w->path) != 0) {
        rc = ann_fail_errno("%s: cannot rename to %s", w->tmp, w->path);
        goto out;
    }
    w->tmp[0] = '\0';
out:
    if (rc)
        ann_awriter_abort(w);
    return rc;
}

void ann_awriter_abort(ann_awriter *w)
{
    if (w->fp)
        fclose(w->fp);
    w->fp = NULL;
    if (w->tmp[0])
        unlink(w->tmp);
    w->tmp[0] = '\0';
}

int ann_rfile_open(ann_rfile *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->crc = crc32(0L, Z_NULL, 0);
    r->fp = fopen(path, "rb");
    if (!r->fp)
        return ann_fail_errno("%s: cannot open", path);
    struct stat st;
    if (fstat(fileno(r->fp), &st) != 0) {
        int rc = ann_fail_errno("%s: cannot stat", path);
        ann_rfile_close(r);
        return rc;
    }
    r->size = (uint64_t)st.st_size;
    return 0;
}

int ann_rfile_read(ann_rfile *r, void *buf, size_t len, const char *what)
{
    size_t got = len ? fread(buf, 1, len, r->fp) : 0;
    if (got != len) {
        if (ferror(r->fp))
            return ann_fail_errno("%s: read failed at offset %llu (%s)", r->path,
                                  (unsigned long long)r->offset, what);
        return ann_fail(ANN_EFORMAT, "%s: truncated reading %s at offset %llu", r->path, what,
                        (unsigned long long)r->offset);
    }
    r->crc = binio_crc(r->crc, buf, len);
    r->offset += len;
    return 0;
}

/* Read count little-endian 4-byte words (u32 or f32 bit patterns) into v. */
static int rfile_read_words(ann_rfile *r, void *v, size_t count, const char *what)
{
    int rc = ann_rfile_read(r, v, count * 4, what);
    if (rc == 0 && !ann_host_le()) {
        uint8_t *p = v;
        for (size_t i = 0; i < count; i++) {
            uint32_t x = ann_get_u32(p + i * 4);
            memcpy(p + i * 4, &x, 4);
        }
    }
    return rc;
}

int ann_rfile_read_u32s(ann_rfile *r, uint32_t *v, size_t count, const char *what)
{
    return rfile_read_words(r, v, count, what);
}

int ann_rfile_read_f32s(ann_rfile *r, float *v, size_t count, const char *what)
{
    return rfile_read_words(r, v, count, what);
}

int ann_rfile_check_trailer(ann_rfile *r)
{
    uint8_t t[4];
    unsigned long want = r->crc;
    if (fread(t, 1, 4, r->fp) != 4)
        return ann_fail(ANN_EFORMAT, "%s: truncated: missing checksum at offset %llu", r->path,
                        (unsigned long long)r->offset);
    r->offset += 4;
    if (r->offset != r->size)
        return ann_fail(ANN_EFORMAT, "%s: %llu unexpected bytes after the checksum", r->path,
                        (unsigned long long)(r->size - r->offset));
    if (ann_get_u32(t) != (uint32_t)want)
        return ann_fail(ANN_ECORRUPT, "%s: checksum mismatch (stored %08x, computed %08x)",
                        r->path, ann_get_u32(t), (uint32_t)want);
    return 0;
}

void ann_rfile_close(ann_rfile *r)
{
    if (r && r->fp)
        fclose(r->fp);
    if (r)
        r->fp = NULL;
}

int ann_awriter_open_header(ann_awriter *w, const char *path, const ann_binfmt *fmt,
                            uint8_t *hdr)
{
    memcpy(hdr, fmt->magic, 8);
    ann_put_u32(hdr + 8, fmt->version);
    int rc = ann_awriter_open(w, path);
    if (rc)
        return rc;
    rc = ann_awriter_write(w, hdr, fmt->header_bytes);
    if (rc)
        ann_awriter_abort(w);
    return rc;
}

int ann_rfile_open_header(ann_rfile *r, const char *path, const ann_binfmt *fmt, uint8_t *hdr)
{
    int rc = ann_rfile_open(r, path);
    if (rc)
        return rc;
    rc = ann_rfile_read(r, hdr, fmt->header_bytes, "header");
    if (rc)
        return rc;
    if (memcmp(hdr, fmt->magic, 8) != 0)
        return ann_fail(ANN_EFORMAT, "%s: not a %s (bad magic)", path, fmt->name);
    uint32_t version = ann_get_u32(hdr + 8);
    if (version != fmt->version)
        return ann_fail(ANN_EVERSION, "%s: %s version %u, this build reads %u", path,
                        fmt->version_name, version, fmt->version);
    return 0;
}

void ann_frame_seal(uint8_t *rec, size_t len, const char *magic, uint32_t version)
{
    memset(rec, 0, 8);
    memcpy(rec, magic, strnlen(magic, 7) + 1);
    ann_put_u32(rec + 8, version);
    ann_put_u32(rec + len - 4, (uint32_t)crc32(0L, rec, (uInt)(len - 4)));
}

int ann_frame_check(const uint8_t *rec, size_t got, size_t want, const char *magic,
                    uint32_t version, const char *where)
{
    if (got != want || memcmp(rec, magic, strnlen(magic, 7) + 1) != 0)
        return ann_fail(ANN_ECORRUPT, "%s: bad magic or length %zu", where, got);
    if (ann_get_u32(rec + want - 4) != (uint32_t)crc32(0L, rec, (uInt)(want - 4)))
        return ann_fail(ANN_ECORRUPT, "%s: checksum mismatch", where);
    uint32_t v = ann_get_u32(rec + 8);
    if (v != version)
        return ann_fail(ANN_EVERSION, "%s: version %u, this build reads %u", where, v, version);
    return 0;
}
