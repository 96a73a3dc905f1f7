/*
 * hnsw.h: internals shared by the hnsw-record engine's files: the open
 * index, the per-thread search context, the record codec, and the phases
 * (build.c, search.c; the vtable is in engine.c).
 */
#ifndef ANNLAB_HNSW_RECORD_HNSW_H
#define ANNLAB_HNSW_RECORD_HNSW_H

#include "engines/core/candlist.h"
#include "engines/core/kv.h"
#include "engines/core/visited.h"
#include "engines/engine.h"

#include <stddef.h>
#include <stdint.h>

/* The metadata record, decoded. */
typedef struct hnsw_meta {
    ann_metric metric;
    uint64_t n;
    uint32_t dim, M, M0, ef_construction;
    uint32_t entry, max_level;
    uint64_t seed;
} hnsw_meta;

struct ann_engine {
    hnsw_meta meta;
    kv_store *kv;
    char store_dir[4200]; /* named in corruption messages */
};

struct ann_ctx {
    ann_engine *eng;
    kv_reader *rd;
    uint32_t k_max, ef;
    ann_visited visited;
    ann_candlist cands;     /* layer-0 working list, capacity ef */
    uint32_t *slot_of;      /* node -> its links slot, valid while in cands */
    uint32_t *slots;        /* (ef + 1) x (1 + M0): count then links */
    uint32_t *free_slots;   /* stack of free slot indices */
    uint32_t n_free;
    uint32_t *best_links;   /* upper-layer descent: the current node's lists */
    uint32_t *tmp_links;    /* the same for the node being scored */
    float *vec;             /* one decoded vector */
};

/* A node record, checked and located (pointers into the record's bytes). */
typedef struct hnsw_node_view {
    uint32_t level;
    const uint8_t *vector;   /* dim little-endian floats */
    const uint8_t *lists;    /* level 0 list first */
} hnsw_node_view;

/*
 * Check a node record of `len` bytes for node id against meta (id, level,
 * exact length, counts, every neighbour id < n) and locate its parts.
 * ANN_ECORRUPT naming the store and the node on failure.
 */
int hnsw_node_parse(const hnsw_meta *m, const char *store, uint32_t id, const uint8_t *rec,
                    size_t len, hnsw_node_view *out);

/* The list of level l of a parsed node: *count and a pointer to count u32. */
const uint8_t *hnsw_node_list(const hnsw_node_view *v, uint32_t l, uint32_t *count);

/* Encode / decode the metadata record (HNSW_META_BYTES). */
void hnsw_meta_encode(const hnsw_meta *m, uint8_t *out);
int hnsw_meta_decode(const uint8_t *rec, size_t len, const char *store, hnsw_meta *out);

int hnsw_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report);
int hnsw_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats);

extern const ann_param_spec hnsw_build_params[];

#endif
