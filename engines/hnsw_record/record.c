/*
 * record.c: the hnsw-record codec: the metadata record and node records
 * (byte layout in layout.h).  Everything read from the store is checked
 * before use: a search never follows a link it has not bounds-checked.
 */
#include "engines/hnsw_record/hnsw.h"

#include "engines/core/binio.h"
#include "engines/core/limits.h"
#include "engines/core/status.h"
#include "engines/hnsw_record/layout.h"

#include <string.h>
#include <zlib.h>

static const ann_binfmt hnsw_meta_fmt = {
    .magic = HNSW_MAGIC,
    .version = HNSW_VERSION,
    .header_bytes = HNSW_META_BYTES,
    .name = "hnsw-record index",
};

static const ann_field hnsw_meta_fields[] = {
    ANN_FIELD(HNSW_OFF_METRIC, U32, hnsw_meta, metric),
    ANN_FIELD(HNSW_OFF_N, U64, hnsw_meta, n),
    ANN_FIELD(HNSW_OFF_DIM, U32, hnsw_meta, dim),
    ANN_FIELD(HNSW_OFF_M, U32, hnsw_meta, M),
    ANN_FIELD(HNSW_OFF_M0, U32, hnsw_meta, M0),
    ANN_FIELD(HNSW_OFF_EF_CONSTRUCTION, U32, hnsw_meta, ef_construction),
    ANN_FIELD(HNSW_OFF_ENTRY, U32, hnsw_meta, entry),
    ANN_FIELD(HNSW_OFF_MAX_LEVEL, U32, hnsw_meta, max_level),
    ANN_FIELD(HNSW_OFF_SEED, U64, hnsw_meta, seed),
};
#define HNSW_META_FIELDS (sizeof hnsw_meta_fields / sizeof hnsw_meta_fields[0])

void hnsw_meta_encode(const hnsw_meta *m, uint8_t *out)
{
    memset(out, 0, HNSW_META_BYTES);
    ann_fields_put(out, hnsw_meta_fields, HNSW_META_FIELDS, m);
    ann_frame_seal(out, HNSW_META_BYTES, HNSW_MAGIC, HNSW_VERSION);
}

int hnsw_meta_decode(const uint8_t *rec, size_t len, const char *store, hnsw_meta *out)
{
    char where[4200];
    snprintf(where, sizeof where, "%s: metadata record", store);
    int rc = ann_frame_check(rec, len, &hnsw_meta_fmt, where);
    if (rc)
        return rc;
    hnsw_meta m = { 0 };
    ann_fields_get(rec, hnsw_meta_fields, HNSW_META_FIELDS, &m);
    if (!ann_metric_name(m.metric) || m.dim == 0 || m.dim > ANN_MAX_DIM || m.M < 2 ||
        m.M0 < m.M || m.M0 > HNSW_MAX_M0 || m.n >= HNSW_NO_NODE || m.max_level > HNSW_MAX_LEVEL ||
        (m.n == 0 ? m.entry != HNSW_NO_NODE : m.entry >= m.n))
        return ann_fail(ANN_ECORRUPT,
                        "%s: metadata record: fields out of range (metric %u, n %llu, dim %u, "
                        "M %u, M0 %u, entry %u, max level %u)",
                        store, (unsigned)m.metric, (unsigned long long)m.n, m.dim, m.M, m.M0,
                        m.entry, m.max_level);
    *out = m;
    return 0;
}

int hnsw_node_parse(const hnsw_meta *m, const char *store, uint32_t id, const uint8_t *rec,
                    size_t len, hnsw_node_view *out)
{
    size_t off = HNSW_NODE_HEADER_BYTES + (size_t)m->dim * 4;
    if (len < off + 4)
        return ann_fail(ANN_ECORRUPT, "%s: node %u record: %zu bytes, too short", store, id, len);
    uint32_t rid = ann_get_u32(rec);
    uint32_t level = rec[4];
    if (rid != id || level > m->max_level || rec[5] || rec[6] || rec[7])
        return ann_fail(ANN_ECORRUPT, "%s: node %u record: header (id %u, level %u) invalid",
                        store, id, rid, level);
    out->level = level;
    out->vector = rec + HNSW_NODE_HEADER_BYTES;
    out->lists = rec + off;
    for (uint32_t l = 0; l <= level; l++) {
        if (len < off + 4)
            return ann_fail(ANN_ECORRUPT, "%s: node %u record: truncated at level %u", store, id,
                            l);
        uint32_t count = ann_get_u32(rec + off);
        if (count > (l ? m->M : m->M0) || len - off - 4 < (size_t)count * 4)
            return ann_fail(ANN_ECORRUPT, "%s: node %u record: level %u count %u invalid", store,
                            id, l, count);
        for (uint32_t j = 0; j < count; j++) {
            uint32_t nb = ann_get_u32(rec + off + 4 + 4 * (size_t)j);
            if (nb >= m->n || nb == id)
                return ann_fail(ANN_ECORRUPT, "%s: node %u record: level %u link %u invalid",
                                store, id, l, nb);
        }
        off += 4 + (size_t)count * 4;
    }
    if (off != len)
        return ann_fail(ANN_ECORRUPT, "%s: node %u record: %zu bytes, lists end at %zu", store,
                        id, len, off);
    return 0;
}

const uint8_t *hnsw_node_list(const hnsw_node_view *v, uint32_t l, uint32_t *count)
{
    const uint8_t *p = v->lists;
    for (uint32_t i = 0; i < l; i++)
        p += 4 + (size_t)ann_get_u32(p) * 4;
    *count = ann_get_u32(p);
    return p + 4;
}

void hnsw_state_encode(const hnsw_state *st, uint8_t *out)
{
    memset(out, 0, HNSW_STATE_BYTES);
    ann_put_u32(out + 12, st->entry);
    ann_put_u32(out + 16, st->max_level);
    ann_put_u32(out + 20, st->id_bound);
    ann_put_u64(out + 24, st->nodes);
    ann_put_u32(out + 32, (uint32_t)st->merges);
    ann_frame_seal(out, HNSW_STATE_BYTES, HNSW_STATE_MAGIC, HNSW_VERSION);
}

static const ann_binfmt hnsw_state_fmt = {
    .magic = HNSW_STATE_MAGIC,
    .version = HNSW_VERSION,
    .header_bytes = HNSW_STATE_BYTES,
    .name = "hnsw-record live state",
};

int hnsw_state_decode(const uint8_t *rec, size_t len, const char *store, hnsw_state *out)
{
    char where[4200];
    snprintf(where, sizeof where, "%s: live-state record", store);
    int rc = ann_frame_check(rec, len, &hnsw_state_fmt, where);
    if (rc)
        return rc;
    hnsw_state st = {
        .entry = ann_get_u32(rec + 12),
        .max_level = ann_get_u32(rec + 16),
        .id_bound = ann_get_u32(rec + 20),
        .nodes = ann_get_u64(rec + 24),
        .merges = ann_get_u32(rec + 32),
    };
    if (st.max_level > HNSW_MAX_LEVEL || st.nodes > st.id_bound ||
        (st.entry == HNSW_NO_NODE ? st.nodes != 0 : st.entry >= st.id_bound))
        return ann_fail(ANN_ECORRUPT, "%s: fields out of range (entry %u, max level %u, "
                        "id_bound %u, nodes %llu)", where, st.entry, st.max_level, st.id_bound,
                        (unsigned long long)st.nodes);
    *out = st;
    return 0;
}
