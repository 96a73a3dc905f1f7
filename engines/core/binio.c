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

/* The one checksum error of every header and trailer (binio.h). */
static int checksum_fail(const char *where, uint32_t stored, uint32_t computed)
{
    return ann_fail(ANN_ECORRUPT, "%s: checksum mismatch (stored %08x, computed %08x)", where,
                    stored, computed);
}

/*
 * The one header check (binio.h, "Headers"): checksum, then magic, then
 * version.  stored / computed: the crc the format keeps and the crc of the
 * bytes it covers (a frame's, or a binio file's whole body).
 */
static int header_check(const uint8_t *hdr, const ann_binfmt *fmt, uint32_t stored,
                        uint32_t computed, const char *where)
{
    if (stored != computed)
        return checksum_fail(where, stored, computed);
    if (memcmp(hdr + ANN_HDR_MAGIC_OFF, fmt->magic, ANN_HDR_MAGIC_BYTES) != 0)
        return ann_fail(ANN_EFORMAT, "%s: bad magic, expected \"%s\" (%s)", where, fmt->magic,
                        fmt->name);
    uint32_t version = ann_get_u32(hdr + ANN_HDR_VERSION_OFF);
    if (version != fmt->version)
        return ann_fail(ANN_EVERSION, "%s: %s version %u, this build reads %u; rebuild the index",
                        where, fmt->name, version, fmt->version);
    return 0;
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
        return checksum_fail(r->path, ann_get_u32(t), (uint32_t)want);
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
    memcpy(hdr + ANN_HDR_MAGIC_OFF, fmt->magic, ANN_HDR_MAGIC_BYTES);
    ann_put_u32(hdr + ANN_HDR_VERSION_OFF, fmt->version);
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
    if (memcmp(hdr + ANN_HDR_MAGIC_OFF, fmt->magic, ANN_HDR_MAGIC_BYTES) == 0 &&
        ann_get_u32(hdr + ANN_HDR_VERSION_OFF) == fmt->version)
        return 0; /* the trailer is checked when the caller has read the body */
    /* not what was expected: the checksum decides whether it is damage */
    uint8_t buf[BINIO_CHUNK];
    while (r->size >= 4 && r->offset < r->size - 4) {
        uint64_t left = r->size - 4 - r->offset;
        rc = ann_rfile_read(r, buf, left < sizeof buf ? (size_t)left : sizeof buf, "body");
        if (rc)
            return rc;
    }
    uint8_t t[4];
    uint32_t computed = (uint32_t)r->crc;
    if (r->offset + 4 != r->size || fread(t, 1, 4, r->fp) != 4)
        return ann_fail(ANN_EFORMAT, "%s: truncated: missing checksum at offset %llu", path,
                        (unsigned long long)r->offset);
    return header_check(hdr, fmt, ann_get_u32(t), computed, path);
}

void ann_frame_seal(uint8_t *rec, size_t len, const char *magic, uint32_t version)
{
    memset(rec + ANN_HDR_MAGIC_OFF, 0, ANN_HDR_MAGIC_BYTES);
    memcpy(rec + ANN_HDR_MAGIC_OFF, magic, strnlen(magic, ANN_HDR_MAGIC_BYTES - 1) + 1);
    ann_put_u32(rec + ANN_HDR_VERSION_OFF, version);
    size_t body = len - ANN_FRAME_CRC_BYTES;
    ann_put_u32(rec + body, (uint32_t)crc32(0L, rec, (uInt)body));
}

int ann_frame_check(const uint8_t *rec, size_t len, const ann_binfmt *fmt, const char *where)
{
    if (fmt->header_bytes ? len != fmt->header_bytes
                          : len < ANN_HDR_FIELDS_OFF + ANN_FRAME_CRC_BYTES)
        return fmt->header_bytes
                   ? ann_fail(ANN_ECORRUPT, "%s: length %zu, expected %zu", where, len,
                              fmt->header_bytes)
                   : ann_fail(ANN_ECORRUPT, "%s: length %zu, too short", where, len);
    size_t body = len - ANN_FRAME_CRC_BYTES;
    return header_check(rec, fmt, ann_get_u32(rec + body),
                        (uint32_t)crc32(0L, rec, (uInt)body), where);
}

void ann_fields_put(uint8_t *hdr, const ann_field *fields, size_t count, const void *obj)
{
    const uint8_t *o = obj;
    for (size_t i = 0; i < count; i++) {
        const ann_field *f = &fields[i];
        if (f->type == ANN_FIELD_U64) {
            uint64_t v;
            memcpy(&v, o + f->member, 8);
            ann_put_u64(hdr + f->off, v);
        } else { /* u32 and f32: the member's 4 bytes as a u32 */
            uint32_t v;
            memcpy(&v, o + f->member, 4);
            ann_put_u32(hdr + f->off, v);
        }
    }
}

void ann_fields_get(const uint8_t *hdr, const ann_field *fields, size_t count, void *obj)
{
    uint8_t *o = obj;
    for (size_t i = 0; i < count; i++) {
        const ann_field *f = &fields[i];
        if (f->type == ANN_FIELD_U64) {
            uint64_t v = ann_get_u64(hdr + f->off);
            memcpy(o + f->member, &v, 8);
        } else {
            uint32_t v = ann_get_u32(hdr + f->off);
            memcpy(o + f->member, &v, 4);
        }
    }
}
