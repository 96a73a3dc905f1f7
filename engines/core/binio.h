/*
 * binio.h: small binary-file helpers for core's own formats (PQ codebook,
 * Vamana graph, PQ codes, diskann-sector's node sums): little-endian field
 * encoding, an atomic checksummed writer and a checksumming reader; and
 * the one way every annlab header is read (files and fixed-size frames
 * alike: the metadata records of the record engines, the diskann-sector
 * header sector), see "Headers" below.
 *
 * Files written with ann_awriter end in a u32 crc32 (zlib) of every byte
 * before it; ann_rfile checks it.  The writer goes to "<path>.tmp.<pid>",
 * fsyncs and renames over path on finish, and removes the temporary on
 * abort, so a crash never leaves a half-written file under the final name.
 */
#ifndef ANNLAB_CORE_BINIO_H
#define ANNLAB_CORE_BINIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline void ann_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void ann_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void ann_put_f32(uint8_t *p, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    ann_put_u32(p, v);
}
static inline uint32_t ann_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t ann_get_u64(const uint8_t *p)
{
    return (uint64_t)ann_get_u32(p) | (uint64_t)ann_get_u32(p + 4) << 32;
}
static inline float ann_get_f32(const uint8_t *p)
{
    uint32_t v = ann_get_u32(p);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

/* True on a little-endian host (arrays of u32/f32 are then copied as is). */
static inline int ann_host_le(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

typedef struct ann_awriter {
    FILE *fp;
    unsigned long crc;
    char path[4096];
    char tmp[4200];
} ann_awriter;

/* Open "<path>.tmp.<pid>" for writing.  Errors: -errno naming the file. */
int ann_awriter_open(ann_awriter *w, const char *path);
/* Append bytes (checksummed).  Errors: -errno naming the file. */
int ann_awriter_write(ann_awriter *w, const void *data, size_t len);
/* Append u32 values little-endian (checksummed). */
int ann_awriter_write_u32s(ann_awriter *w, const uint32_t *v, size_t count);
/* Append floats little-endian (checksummed). */
int ann_awriter_write_f32s(ann_awriter *w, const float *v, size_t count);
/* Append the crc32 trailer, fsync, rename over path.  On failure the
 * temporary is removed.  Errors: -errno naming the file. */
int ann_awriter_finish(ann_awriter *w);
/* Remove the temporary (safe after a failed finish or on a zeroed writer). */
void ann_awriter_abort(ann_awriter *w);

/*
 * Headers.  Every annlab header, whether a binio file's (above) or a
 * fixed-size frame (a metadata record, the diskann-sector header sector),
 * opens with an 8-byte magic (a 7-character string and its NUL) and a u32
 * version; the format's own fields start at ANN_HDR_FIELDS_OFF.  Each
 * format's layout.h (or header) names its fields' offsets, and its encoder
 * and decoder use those names.
 *
 * A header is read one way (ann_rfile_open_header for files, ann_frame_check
 * for frames), in one order: checksum, then magic, then version.  A damaged
 * byte anywhere, the version field included, is therefore reported as
 * corruption, and "wrong magic" or "wrong version" means an intact header
 * of another kind or version.  The errors, where naming the file or record:
 *   ANN_ECORRUPT "<where>: checksum mismatch (stored XXXXXXXX, computed YYYYYYYY)"
 *   ANN_EFORMAT  "<where>: bad magic, expected \"<magic>\" (<name>)"
 *   ANN_EVERSION "<where>: <name> version V, this build reads W; rebuild the index"
 */
#define ANN_HDR_MAGIC_OFF 0
#define ANN_HDR_MAGIC_BYTES 8
#define ANN_HDR_VERSION_OFF 8
#define ANN_HDR_FIELDS_OFF 12
#define ANN_FRAME_CRC_BYTES 4 /* a frame's crc32 (zlib) of the bytes before it, at its end */

/* The identity of one header kind. */
typedef struct ann_binfmt {
    const char *magic;   /* 7 characters (8 bytes with the NUL) */
    uint32_t version;    /* the one version this build writes and reads */
    size_t header_bytes; /* binio file: the header, magic and version included;
                            frame: its whole length, crc included (0: any) */
    const char *name;    /* "PQ codebook", "diskann-sector index", ... in messages */
} ann_binfmt;

/*
 * Open a writer on path (ann_awriter_open), stamp fmt's magic and version
 * into hdr[0..12) and write hdr (fmt->header_bytes, the caller having
 * filled the rest).  On failure nothing is left behind and w needs no
 * abort.  Errors: as ann_awriter_open / ann_awriter_write.
 */
int ann_awriter_open_header(ann_awriter *w, const char *path, const ann_binfmt *fmt,
                            uint8_t *hdr);

typedef struct ann_rfile {
    FILE *fp;
    unsigned long crc;
    uint64_t size;    /* file size in bytes */
    uint64_t offset;  /* bytes consumed */
    const char *path; /* borrowed, for messages */
} ann_rfile;

/* Open path for reading.  Errors: -errno naming the file. */
int ann_rfile_open(ann_rfile *r, const char *path);
/* Read exactly len bytes (checksummed).  A short file is ANN_EFORMAT
 * "<path>: truncated reading <what> at offset N". */
int ann_rfile_read(ann_rfile *r, void *buf, size_t len, const char *what);
/* Read count little-endian u32 / f32 values. */
int ann_rfile_read_u32s(ann_rfile *r, uint32_t *v, size_t count, const char *what);
int ann_rfile_read_f32s(ann_rfile *r, float *v, size_t count, const char *what);
/* Read the u32 crc trailer, compare with the running crc, and require the
 * end of file.  ANN_ECORRUPT "<path>: checksum mismatch (stored XXXXXXXX,
 * computed YYYYYYYY)" or ANN_EFORMAT (truncated, bytes after the trailer). */
int ann_rfile_check_trailer(ann_rfile *r);
void ann_rfile_close(ann_rfile *r);

/*
 * Open path (ann_rfile_open), read fmt->header_bytes into hdr and check the
 * header (see "Headers" above).  A header of the right magic and version is
 * returned at once (the caller reads on and ends with
 * ann_rfile_check_trailer); otherwise the rest of the file is read to its
 * trailer first, so a damaged header reads as a checksum mismatch.  Whether
 * it succeeds or not, r is then fit for ann_rfile_close.  Errors: as
 * ann_rfile_open / ann_rfile_read (a file shorter than the header names
 * "header") / ann_rfile_check_trailer; ANN_EFORMAT (magic); ANN_EVERSION.
 */
int ann_rfile_open_header(ann_rfile *r, const char *path, const ann_binfmt *fmt, uint8_t *hdr);

/*
 * Fixed-size frames: fmt's magic at 0, the version at 8, the caller's
 * fields, and the crc32 (zlib) of bytes [0, len-4) in the last 4 bytes.
 * seal stamps magic, version and crc around fields the caller has already
 * written (version is a parameter so tests can write other versions).
 * check verifies a frame of len bytes (fmt->header_bytes when not 0; at
 * least 16) and then its header, in the order above.  Errors: ANN_ECORRUPT
 * "<where>: length L, expected N" (or "too short"), the checksum;
 * ANN_EFORMAT; ANN_EVERSION.
 */
void ann_frame_seal(uint8_t *rec, size_t len, const char *magic, uint32_t version);
int ann_frame_check(const uint8_t *rec, size_t len, const ann_binfmt *fmt, const char *where);

/*
 * Header fields as a table: a format lists each field once (its named
 * offset, its type, the member of its decoded struct that holds it), and
 * its encoder and decoder both go through the table, so a field's offset
 * and width are written in one place besides the layout's diagram.
 * ANN_FIELD checks at compile time that the member has the field's width.
 */
typedef enum ann_field_type { ANN_FIELD_U32, ANN_FIELD_U64, ANN_FIELD_F32 } ann_field_type;

typedef struct ann_field {
    size_t off;          /* in the header */
    ann_field_type type; /* little-endian u32 / u64 / f32 */
    size_t member;       /* offsetof the member in the decoded struct */
} ann_field;

#define ANN_FIELD_WIDTH_U32 4
#define ANN_FIELD_WIDTH_U64 8
#define ANN_FIELD_WIDTH_F32 4
#define ANN_FIELD(off, type, strct, member)                                                        \
    { (off), ANN_FIELD_##type,                                                                    \
      offsetof(strct, member) +                                                                   \
          0 * sizeof(char[sizeof(((strct *)0)->member) == ANN_FIELD_WIDTH_##type ? 1 : -1]) }

/* Write the count fields of obj into hdr / read them from hdr into obj. */
void ann_fields_put(uint8_t *hdr, const ann_field *fields, size_t count, const void *obj);
void ann_fields_get(const uint8_t *hdr, const ann_field *fields, size_t count, void *obj);

#endif
