/*
 * layout.c: encoding and verification of the diskann-record records whose
 * byte layout layout.h documents: the metadata record (checked field by
 * field at open, since the store is untrusted input) and node records.
 * Node records are decoded in search.c, on the hot path, with the same
 * offsets.
 */
#include "engines/diskann_record/layout.h"

#include "engines/core/binio.h"
#include "engines/core/limits.h"
#include "engines/core/status.h"
#include "engines/core/vecsrc.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

/* The metadata record's identity (its length varies with pq_bytes), in
 * the newest version and in version 2, which builds of a graph write. */
static const ann_binfmt drec_meta_fmt = {
    .magic = DREC_MAGIC,
    .version = DREC_VERSION,
    .header_bytes = 0,
    .name = "diskann-record index",
};
static const ann_binfmt drec_meta_fmt_v2 = {
    .magic = DREC_MAGIC,
    .version = DREC_VERSION_GRAPH,
    .header_bytes = 0,
    .name = "diskann-record index",
};

/* The metadata record's numeric fields (engine name and medoid code apart). */
static const ann_field drec_meta_fields[] = {
    ANN_FIELD(DREC_OFF_LAYOUT, U32, drec_meta, layout),
    ANN_FIELD(DREC_OFF_MODE, U32, drec_meta, mode),
    ANN_FIELD(DREC_OFF_N, U64, drec_meta, n),
    ANN_FIELD(DREC_OFF_DIM, U32, drec_meta, dim),
    ANN_FIELD(DREC_OFF_METRIC, U32, drec_meta, metric),
    ANN_FIELD(DREC_OFF_MEDOID, U32, drec_meta, medoid),
    ANN_FIELD(DREC_OFF_R, U32, drec_meta, R),
    ANN_FIELD(DREC_OFF_L_BUILD, U32, drec_meta, L_build),
    ANN_FIELD(DREC_OFF_ALPHA, F32, drec_meta, alpha),
    ANN_FIELD(DREC_OFF_PQ_BYTES, U32, drec_meta, pq_bytes),
    ANN_FIELD(DREC_OFF_CHUNK_ROWS, U32, drec_meta, chunk_rows),
};
#define DREC_META_FIELDS (sizeof drec_meta_fields / sizeof drec_meta_fields[0])

void drec_meta_encode(const drec_meta *meta, uint8_t *out)
{
    uint32_t m = meta->pq_bytes;
    memset(out, 0, drec_meta_bytes(m));
    memcpy(out + DREC_OFF_ENGINE, meta->engine, strnlen(meta->engine, DREC_NAME_BYTES));
    ann_fields_put(out, drec_meta_fields, DREC_META_FIELDS, meta);
    memcpy(out + DREC_OFF_MEDOID_CODE, meta->medoid_code, m);
    if (meta->version >= 3)
        ann_put_u64(out + DREC_OFF_MEDOID_CODE + m, meta->pq_seed);
    ann_frame_seal(out, drec_meta_bytes_v(meta->version, m), DREC_MAGIC, meta->version);
}

/* The field of a version-2 record out of range, or NULL. */
static const char *v2_bad_field(const drec_meta *out)
{
    const uint32_t m = out->pq_bytes;
    if (out->mode == DREC_MODE_GRAPH &&
        (out->n < DREC_SCAN_BELOW || out->medoid >= out->n || out->R == 0 || m == 0 ||
         m > out->dim))
        return out->n < DREC_SCAN_BELOW ? "n" : out->medoid >= out->n ? "medoid"
               : out->R == 0                                         ? "R"
                                                                     : "pq_bytes";
    if (out->mode == DREC_MODE_SCAN && out->n >= DREC_SCAN_BELOW)
        return "mode";
    if (out->mode == DREC_MODE_GRAPH && out->layout == DREC_LAYOUT_RESIDENT &&
        out->chunk_rows == 0)
        return "chunk_rows";
    return NULL;
}

/* The field of a version-3 record (untrained, or trained live) out of
 * range, or NULL. */
static const char *v3_bad_field(const drec_meta *out)
{
    if (out->mode == DREC_MODE_SCAN ? out->n >= DREC_SCAN_BELOW : out->n != 0)
        return "n";
    if (out->R == 0)
        return "R";
    if (out->L_build == 0)
        return "L_build";
    if (!(out->alpha >= 1.0f && out->alpha <= 4.0f))
        return "alpha";
    if (out->pq_bytes == 0 || out->pq_bytes > out->dim)
        return "pq_bytes";
    if (out->chunk_rows != 0)
        return "chunk_rows";
    if (out->medoid == UINT32_MAX || (out->mode == DREC_MODE_SCAN && out->medoid != 0))
        return "medoid";
    return NULL;
}

int drec_meta_decode(const uint8_t *rec, size_t len, const char *where, drec_meta *out)
{
    char what[4200];
    snprintf(what, sizeof what, "%s: metadata record", where);
    memset(out, 0, sizeof *out);
    /* checksum, magic, version, in that order, against the version the
     * record claims when this build reads it (a flipped version byte is a
     * checksum mismatch either way) */
    const ann_binfmt *fmt = len >= ANN_HDR_FIELDS_OFF &&
                                    ann_get_u32(rec + ANN_HDR_VERSION_OFF) == DREC_VERSION_GRAPH
                                ? &drec_meta_fmt_v2
                                : &drec_meta_fmt;
    int rc = ann_frame_check(rec, len, fmt, what);
    if (rc)
        return rc;
    out->version = fmt->version;
    uint32_t m = len >= DREC_META_FIXED_BYTES ? ann_get_u32(rec + DREC_OFF_PQ_BYTES) : 0;
    if (len < DREC_META_FIXED_BYTES || m > DREC_MAX_PQ_BYTES ||
        len != drec_meta_bytes_v(out->version, m))
        return ann_fail(ANN_ECORRUPT, "%s: length %zu for pq_bytes %u", what, len, m);
    memcpy(out->engine, rec + DREC_OFF_ENGINE, DREC_NAME_BYTES);
    out->engine[DREC_NAME_BYTES] = '\0';
    ann_fields_get(rec, drec_meta_fields, DREC_META_FIELDS, out);
    memcpy(out->medoid_code, rec + DREC_OFF_MEDOID_CODE, m);
    if (out->version >= 3)
        out->pq_seed = ann_get_u64(rec + DREC_OFF_MEDOID_CODE + m);

    const char *field = NULL;
    if (out->layout != DREC_LAYOUT_FULL && out->layout != DREC_LAYOUT_RESIDENT)
        field = "layout";
    else if (out->mode != DREC_MODE_GRAPH && out->mode != DREC_MODE_SCAN)
        field = "mode";
    else if (out->n >= UINT32_MAX)
        field = "n";
    else if (out->dim == 0 || out->dim > ANN_MAX_DIM)
        field = "dim";
    else if (!ann_metric_name((ann_metric)out->metric))
        field = "metric";
    else
        field = out->version >= 3 ? v3_bad_field(out) : v2_bad_field(out);
    if (field)
        return ann_fail(ANN_ECORRUPT, "%s: field %s out of range", what, field);
    return 0;
}

void drec_node_encode(uint32_t layout, uint32_t m, uint32_t v, const uint32_t *nbrs, uint32_t d,
                      const uint8_t *codes, uint8_t *out)
{
    uint8_t *p = out;
    if (layout == DREC_LAYOUT_FULL) {
        memcpy(p, codes + (size_t)v * m, m);
        p += m;
    }
    ann_put_u32(p, d);
    p += 4;
    for (uint32_t i = 0; i < d; i++, p += 4)
        ann_put_u32(p, nbrs[i]);
    if (layout == DREC_LAYOUT_FULL)
        for (uint32_t i = 0; i < d; i++, p += m)
            memcpy(p, codes + (size_t)nbrs[i] * m, m);
}

void drec_state_encode(const drec_state *st, uint8_t *out)
{
    ann_put_u32(out + DREC_STATE_OFF_ID_BOUND, st->id_bound);
    ann_put_u64(out + DREC_STATE_OFF_GRAPH_NODES, st->graph_nodes);
    ann_put_u64(out + DREC_STATE_OFF_MERGES, st->merges);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, out, DREC_STATE_OFF_CRC);
    ann_put_u32(out + DREC_STATE_OFF_CRC, (uint32_t)crc);
}

int drec_state_decode(const uint8_t *rec, size_t len, const char *where, drec_state *out)
{
    if (len != DREC_STATE_BYTES)
        return ann_fail(ANN_ECORRUPT, "%s: live-state record: length %zu, expected %d", where,
                        len, DREC_STATE_BYTES);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, rec, DREC_STATE_OFF_CRC);
    if ((uint32_t)crc != ann_get_u32(rec + DREC_STATE_OFF_CRC))
        return ann_fail(ANN_ECORRUPT, "%s: live-state record: crc mismatch", where);
    out->id_bound = ann_get_u32(rec + DREC_STATE_OFF_ID_BOUND);
    out->graph_nodes = ann_get_u64(rec + DREC_STATE_OFF_GRAPH_NODES);
    out->merges = ann_get_u64(rec + DREC_STATE_OFF_MERGES);
    if (out->graph_nodes > out->id_bound)
        return ann_fail(ANN_ECORRUPT, "%s: live-state record: field graph_nodes out of range",
                        where);
    return 0;
}
