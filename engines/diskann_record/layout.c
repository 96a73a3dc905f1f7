/*
 * layout.c: encoding and verification of the diskann-record records whose
 * byte layout layout.h documents: the metadata record (checked field by
 * field at open, since the store is untrusted input) and node records.
 * Node records are decoded in search.c, on the hot path, with the same
 * offsets.
 */
#include "engines/diskann_record/layout.h"

#include "engines/core/binio.h"
#include "engines/core/status.h"
#include "engines/core/vecsrc.h"

#include <string.h>
#include <zlib.h>

void drec_meta_encode(const drec_meta *meta, uint8_t *out)
{
    uint32_t m = meta->pq_bytes;
    memset(out, 0, drec_meta_bytes(m));
    memcpy(out, DREC_MAGIC, sizeof DREC_MAGIC);
    ann_put_u32(out + 8, meta->version);
    memcpy(out + 12, meta->engine, strnlen(meta->engine, DREC_NAME_BYTES));
    ann_put_u32(out + 32, meta->layout);
    ann_put_u32(out + 36, meta->mode);
    ann_put_u64(out + 40, meta->n);
    ann_put_u32(out + 48, meta->dim);
    ann_put_u32(out + 52, meta->metric);
    ann_put_u32(out + 56, meta->medoid);
    ann_put_u32(out + 60, meta->R);
    ann_put_u32(out + 64, meta->L_build);
    ann_put_f32(out + 68, meta->alpha);
    ann_put_u32(out + 72, m);
    ann_put_u32(out + 76, meta->chunk_rows);
    memcpy(out + DREC_META_FIXED_BYTES, meta->medoid_code, m);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, out, (uInt)(DREC_META_FIXED_BYTES + m));
    ann_put_u32(out + DREC_META_FIXED_BYTES + m, (uint32_t)crc);
}

int drec_meta_decode(const uint8_t *rec, size_t len, const char *where, drec_meta *out)
{
    memset(out, 0, sizeof *out);
    if (len < DREC_META_FIXED_BYTES + 4 || memcmp(rec, DREC_MAGIC, sizeof DREC_MAGIC) != 0)
        return ann_fail(ANN_ECORRUPT, "%s: metadata record: bad magic or length %zu", where, len);
    out->version = ann_get_u32(rec + 8);
    if (out->version != DREC_VERSION)
        return ann_fail(ANN_EVERSION, "%s: metadata record: format version %u, this build reads %u",
                        where, out->version, DREC_VERSION);
    uint32_t m = ann_get_u32(rec + 72);
    if (m > DREC_MAX_PQ_BYTES || len != drec_meta_bytes(m))
        return ann_fail(ANN_ECORRUPT, "%s: metadata record: length %zu for pq_bytes %u", where,
                        len, m);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, rec, (uInt)(DREC_META_FIXED_BYTES + m));
    if ((uint32_t)crc != ann_get_u32(rec + DREC_META_FIXED_BYTES + m))
        return ann_fail(ANN_ECORRUPT, "%s: metadata record: crc mismatch", where);
    memcpy(out->engine, rec + 12, DREC_NAME_BYTES);
    out->engine[DREC_NAME_BYTES] = '\0';
    out->layout = ann_get_u32(rec + 32);
    out->mode = ann_get_u32(rec + 36);
    out->n = ann_get_u64(rec + 40);
    out->dim = ann_get_u32(rec + 48);
    out->metric = ann_get_u32(rec + 52);
    out->medoid = ann_get_u32(rec + 56);
    out->R = ann_get_u32(rec + 60);
    out->L_build = ann_get_u32(rec + 64);
    out->alpha = ann_get_f32(rec + 68);
    out->pq_bytes = m;
    out->chunk_rows = ann_get_u32(rec + 76);
    memcpy(out->medoid_code, rec + DREC_META_FIXED_BYTES, m);

    const char *field = NULL;
    if (out->layout != DREC_LAYOUT_FULL && out->layout != DREC_LAYOUT_RESIDENT)
        field = "layout";
    else if (out->mode != DREC_MODE_GRAPH && out->mode != DREC_MODE_SCAN)
        field = "mode";
    else if (out->n >= UINT32_MAX)
        field = "n";
    else if (out->dim == 0 || out->dim > (1u << 20))
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
        return ann_fail(ANN_ECORRUPT, "%s: metadata record: field %s out of range", where, field);
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
    ann_put_u32(out, st->id_bound);
    ann_put_u64(out + 4, st->graph_nodes);
    ann_put_u64(out + 12, st->merges);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, out, 20);
    ann_put_u32(out + 20, (uint32_t)crc);
}

int drec_state_decode(const uint8_t *rec, size_t len, const char *where, drec_state *out)
{
    if (len != DREC_STATE_BYTES)
        return ann_fail(ANN_ECORRUPT, "%s: live-state record: length %zu, expected %d", where,
                        len, DREC_STATE_BYTES);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, rec, 20);
    if ((uint32_t)crc != ann_get_u32(rec + 20))
        return ann_fail(ANN_ECORRUPT, "%s: live-state record: crc mismatch", where);
    out->id_bound = ann_get_u32(rec);
    out->graph_nodes = ann_get_u64(rec + 4);
    out->merges = ann_get_u64(rec + 12);
    if (out->graph_nodes > out->id_bound)
        return ann_fail(ANN_ECORRUPT, "%s: live-state record: field graph_nodes out of range",
                        where);
    return 0;
}
