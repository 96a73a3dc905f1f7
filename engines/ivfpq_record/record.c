/*
 * record.c: the ivfpq-record codec: metadata, list directory and list
 * chunk records (byte layout in layout.h).  Everything read from the store
 * is checked before use; a store of another format version is refused with
 * a message that says to rebuild it.
 */
#include "engines/ivfpq_record/ivfpq.h"

#include "engines/core/binio.h"
#include "engines/core/limits.h"
#include "engines/core/status.h"
#include "engines/ivfpq_record/layout.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

static const ann_binfmt ivfpq_meta_fmt = {
    .magic = IVFPQ_MAGIC,
    .version = IVFPQ_VERSION,
    .header_bytes = IVFPQ_META_BYTES,
    .name = "ivfpq-record index",
};

static const ann_field ivfpq_meta_fields[] = {
    ANN_FIELD(IVFPQ_OFF_METRIC, U32, ivfpq_meta, metric),
    ANN_FIELD(IVFPQ_OFF_N, U64, ivfpq_meta, n),
    ANN_FIELD(IVFPQ_OFF_DIM, U32, ivfpq_meta, dim),
    ANN_FIELD(IVFPQ_OFF_NLIST, U32, ivfpq_meta, nlist),
    ANN_FIELD(IVFPQ_OFF_LISTS, U32, ivfpq_meta, lists),
    ANN_FIELD(IVFPQ_OFF_PQ_BYTES, U32, ivfpq_meta, pq_bytes),
    ANN_FIELD(IVFPQ_OFF_CHUNK_ENTRIES, U32, ivfpq_meta, chunk_entries),
    ANN_FIELD(IVFPQ_OFF_COARSE_SUM, U32, ivfpq_meta, coarse_sum),
    ANN_FIELD(IVFPQ_OFF_SEED, U64, ivfpq_meta, seed),
};
#define IVFPQ_META_FIELDS (sizeof ivfpq_meta_fields / sizeof ivfpq_meta_fields[0])

void ivfpq_meta_encode(const ivfpq_meta *m, uint8_t *out)
{
    memset(out, 0, IVFPQ_META_BYTES);
    ann_fields_put(out, ivfpq_meta_fields, IVFPQ_META_FIELDS, m);
    ann_frame_seal(out, IVFPQ_META_BYTES, IVFPQ_MAGIC, IVFPQ_VERSION);
}

int ivfpq_meta_decode(const uint8_t *rec, size_t len, const char *store, ivfpq_meta *out)
{
    char where[4200];
    snprintf(where, sizeof where, "%s: metadata record", store);
    int rc = ann_frame_check(rec, len, &ivfpq_meta_fmt, where);
    if (rc)
        return rc;
    ivfpq_meta m = { 0 };
    ann_fields_get(rec, ivfpq_meta_fields, IVFPQ_META_FIELDS, &m);
    if (!ann_metric_name(m.metric) || m.dim == 0 || m.dim > ANN_MAX_DIM || m.nlist == 0 ||
        m.lists > m.nlist || (uint64_t)m.lists > m.n || (m.n > 0 && m.lists == 0) ||
        m.n > UINT32_MAX || m.pq_bytes == 0 || m.pq_bytes > m.dim ||
        m.chunk_entries != IVFPQ_CHUNK_ENTRIES)
        return ann_fail(ANN_ECORRUPT,
                        "%s: metadata record: fields out of range (metric %u, n %llu, dim %u, "
                        "nlist %u, lists %u, pq_bytes %u, chunk %u)",
                        store, (unsigned)m.metric, (unsigned long long)m.n, m.dim, m.nlist,
                        m.lists, m.pq_bytes, m.chunk_entries);
    *out = m;
    return 0;
}

size_t ivfpq_dir_bytes(uint32_t lists)
{
    return 8 + 4 * (size_t)lists;
}

void ivfpq_dir_encode(const uint32_t *len, uint32_t lists, uint8_t *out)
{
    ann_put_u32(out, lists);
    for (uint32_t l = 0; l < lists; l++)
        ann_put_u32(out + 4 + 4 * (size_t)l, len[l]);
    ann_put_u32(out + 4 + 4 * (size_t)lists,
                (uint32_t)crc32(0L, out, (uInt)(4 + 4 * (size_t)lists)));
}

int ivfpq_dir_decode(const uint8_t *rec, size_t len, const ivfpq_meta *m, const char *store,
                     uint32_t *out)
{
    if (len != ivfpq_dir_bytes(m->lists) || ann_get_u32(rec) != m->lists)
        return ann_fail(ANN_ECORRUPT, "%s: list directory record: length %zu for %u lists",
                        store, len, m->lists);
    if (ann_get_u32(rec + len - 4) != (uint32_t)crc32(0L, rec, (uInt)(len - 4)))
        return ann_fail(ANN_ECORRUPT, "%s: list directory record: checksum mismatch", store);
    uint64_t total = 0;
    for (uint32_t l = 0; l < m->lists; l++) {
        out[l] = ann_get_u32(rec + 4 + 4 * (size_t)l);
        total += out[l];
    }
    if (total != m->n)
        return ann_fail(ANN_ECORRUPT, "%s: list directory record: lists hold %llu, n is %llu",
                        store, (unsigned long long)total, (unsigned long long)m->n);
    return 0;
}

float ivfpq_beta(const float *centroid, const float *residual, uint32_t dim)
{
    /* in double: on unit data beta = (|c + r'|^2 - |c|^2) / 2 is near 0, a
     * sum of terms of either sign that cancel */
    double s = 0;
    for (uint32_t j = 0; j < dim; j++)
        s += (double)centroid[j] * residual[j] + 0.5 * (double)residual[j] * residual[j];
    return (float)s;
}

int ivfpq_chunk_check(const ivfpq_meta *m, const char *store, uint32_t list, uint32_t chunk,
                      uint32_t expect_count, const uint8_t *rec, size_t len)
{
    if (len < IVFPQ_CHUNK_HEADER_BYTES || len != IVFPQ_CHUNK_BYTES(expect_count, m->pq_bytes) ||
        ann_get_u32(rec) != list || ann_get_u32(rec + 4) != chunk ||
        ann_get_u32(rec + 8) != expect_count)
        return ann_fail(ANN_ECORRUPT,
                        "%s: list %u chunk %u record: header or length %zu disagrees with the "
                        "list directory (%u entries)",
                        store, list, chunk, len, expect_count);
    for (uint32_t j = 0; j < expect_count; j++) {
        uint32_t id = ann_get_u32(rec + IVFPQ_CHUNK_HEADER_BYTES + 4 * (size_t)j);
        if (id >= m->n)
            return ann_fail(ANN_ECORRUPT, "%s: list %u chunk %u record: entry %u id %u >= n %llu",
                            store, list, chunk, j, id, (unsigned long long)m->n);
        float beta = ann_get_f32(rec + IVFPQ_CHUNK_BETAS_OFF(expect_count) + 4 * (size_t)j);
        if (!isfinite(beta))
            return ann_fail(ANN_ECORRUPT,
                            "%s: list %u chunk %u record: entry %u (id %u) beta %g is not finite",
                            store, list, chunk, j, id, (double)beta);
    }
    return 0;
}

void ivfpq_state_encode(uint32_t id_bound, uint64_t entries, uint32_t merges, uint8_t *out)
{
    memset(out, 0, IVFPQ_STATE_BYTES);
    ann_put_u32(out + 12, id_bound);
    ann_put_u64(out + 16, entries);
    ann_put_u32(out + 24, merges);
    ann_frame_seal(out, IVFPQ_STATE_BYTES, IVFPQ_STATE_MAGIC, IVFPQ_VERSION);
}

static const ann_binfmt ivfpq_state_fmt = {
    .magic = IVFPQ_STATE_MAGIC,
    .version = IVFPQ_VERSION,
    .header_bytes = IVFPQ_STATE_BYTES,
    .name = "ivfpq-record live state",
};

int ivfpq_state_decode(const uint8_t *rec, size_t len, const char *store, uint32_t *id_bound,
                       uint64_t *entries, uint32_t *merges)
{
    char where[4200];
    snprintf(where, sizeof where, "%s: live-state record", store);
    int rc = ann_frame_check(rec, len, &ivfpq_state_fmt, where);
    if (rc)
        return rc;
    *id_bound = ann_get_u32(rec + 12);
    *entries = ann_get_u64(rec + 16);
    *merges = ann_get_u32(rec + 24);
    if (*entries > *id_bound)
        return ann_fail(ANN_ECORRUPT, "%s: %llu entries, id_bound %u", where,
                        (unsigned long long)*entries, *id_bound);
    return 0;
}
