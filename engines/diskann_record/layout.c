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

void drec_meta_encode(const drec_meta *meta, uint8_t *out)
{
    uint32_t m = meta->pq_bytes;
    memset(out, 0, drec_meta_bytes(m));
    memcpy(out + DREC_OFF_ENGINE, meta->engine, strnlen(meta->engine, DREC_NAME_BYTES));
    ann_put_u32(out + DREC_OFF_LAYOUT, meta->layout);
    ann_put_u32(out + DREC_OFF_MODE, meta->mode);
    ann_put_u64(out + DREC_OFF_N, meta->n);
    ann_put_u32(out + DREC_OFF_DIM, meta->dim);
    ann_put_u32(out + DREC_OFF_METRIC, meta->metric);
    ann_put_u32(out + DREC_OFF_MEDOID, meta->medoid);
    ann_put_u32(out + DREC_OFF_R, meta->R);
    ann_put_u32(out + DREC_OFF_L_BUILD, meta->L_build);
    ann_put_f32(out + DREC_OFF_ALPHA, meta->alpha);
    ann_put_u32(out + DREC_OFF_PQ_BYTES, m);
    ann_put_u32(out + DREC_OFF_CHUNK_ROWS, meta->chunk_rows);
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
    out->version = ann_get_u32(rec + ANN_HDR_VERSION_OFF);
    uint32_t m = ann_get_u32(rec + DREC_OFF_PQ_BYTES);
    if (m > DREC_MAX_PQ_BYTES || len != drec_meta_bytes(m))
        return ann_fail(ANN_ECORRUPT, "%s: length %zu for pq_bytes %u", what, len, m);
    memcpy(out->engine, rec + DREC_OFF_ENGINE, DREC_NAME_BYTES);
    out->engine[DREC_NAME_BYTES] = '\0';
    out->layout = ann_get_u32(rec + DREC_OFF_LAYOUT);
    out->mode = ann_get_u32(rec + DREC_OFF_MODE);
    out->n = ann_get_u64(rec + DREC_OFF_N);
    out->dim = ann_get_u32(rec + DREC_OFF_DIM);
    out->metric = ann_get_u32(rec + DREC_OFF_METRIC);
    out->medoid = ann_get_u32(rec + DREC_OFF_MEDOID);
    out->R = ann_get_u32(rec + DREC_OFF_R);
    out->L_build = ann_get_u32(rec + DREC_OFF_L_BUILD);
    out->alpha = ann_get_f32(rec + DREC_OFF_ALPHA);
    out->pq_bytes = m;
    out->chunk_rows = ann_get_u32(rec + DREC_OFF_CHUNK_ROWS);
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
