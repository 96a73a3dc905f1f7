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

/* The metadata record's identity (its length varies with pq_bytes). */
static const ann_binfmt drec_meta_fmt = {
    .magic = DREC_MAGIC,
    .version = DREC_VERSION,
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
    ann_frame_seal(out, drec_meta_bytes(m), DREC_MAGIC, meta->version);
}

int drec_meta_decode(const uint8_t *rec, size_t len, const char *where, drec_meta *out)
{
    char what[4200];
    snprintf(what, sizeof what, "%s: metadata record", where);
    memset(out, 0, sizeof *out);
    int rc = ann_frame_check(rec, len, &drec_meta_fmt, what);
    if (rc)
        return rc;
    uint32_t m = ann_get_u32(rec + DREC_OFF_PQ_BYTES);
    if (m > DREC_MAX_PQ_BYTES || len != drec_meta_bytes(m))
        return ann_fail(ANN_ECORRUPT, "%s: length %zu for pq_bytes %u", what, len, m);
    out->version = ann_get_u32(rec + ANN_HDR_VERSION_OFF);
    memcpy(out->engine, rec + DREC_OFF_ENGINE, DREC_NAME_BYTES);
    out->engine[DREC_NAME_BYTES] = '\0';
    ann_fields_get(rec, drec_meta_fields, DREC_META_FIELDS, out);
    memcpy(out->medoid_code, rec + DREC_OFF_MEDOID_CODE, m);

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
    else if (out->mode == DREC_MODE_GRAPH &&
             (out->n < DREC_SCAN_BELOW || out->medoid >= out->n || out->R == 0 || m == 0 ||
              m > out->dim))
        field = out->n < DREC_SCAN_BELOW ? "n" : out->medoid >= out->n ? "medoid"
                : out->R == 0                                         ? "R"
                                                                      : "pq_bytes";
    else if (out->mode == DREC_MODE_SCAN && out->n >= DREC_SCAN_BELOW)
        field = "mode";
    else if (out->mode == DREC_MODE_GRAPH && out->layout == DREC_LAYOUT_RESIDENT &&
             out->chunk_rows == 0)
        field = "chunk_rows";
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
