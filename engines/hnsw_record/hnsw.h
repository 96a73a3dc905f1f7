/*
 * hnsw.h: internals shared by the hnsw-record engine's files: the open
 * index, the per-thread search context, the record codec, and the phases
 * (build.c, search.c; the vtable is in engine.c).
 */
#ifndef ANNLAB_HNSW_RECORD_HNSW_H
#define ANNLAB_HNSW_RECORD_HNSW_H

#include "engines/core/candlist.h"
#include "engines/core/kv.h"
#include "engines/core/paged.h"
#include "engines/core/visited.h"
#include "engines/engine.h"

#include <pthread.h>
#include <stdatomic.h>
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

/* Live-update state (insert.c).  Searches read it without a lock. */
typedef struct hnsw_live {
    int enabled;            /* opened with "updates": true */
    int inited;             /* wlock initialised */
    pthread_mutex_t wlock;  /* one writer (insert, remove, merge) at a time */
    kv_reader *wrd;         /* the writer's reader */
    ann_idbits dead;        /* ids with a tombstone */
    /* entry point | max level << 32: published after the commit that makes
     * the entry's record exist (searches read it before their snapshot) */
    _Atomic uint64_t entry;
    /* every id in a node record is below it: raised before the commit
     * (searches read it after their snapshot) */
    _Atomic uint32_t id_bound;
    _Atomic uint64_t nodes;   /* node records */
    _Atomic uint64_t deleted; /* of them, with a tombstone */
    _Atomic int any_dead;     /* an id was ever deleted: searches filter (never reset:
                                 a search of a snapshot before a merge may meet one) */
    uint64_t merges;
} hnsw_live;

struct ann_engine {
    hnsw_meta meta;       /* the metadata record, as built */
    hnsw_live live;
    kv_store *kv;
    char store_dir[4200]; /* named in corruption messages */
};

struct ann_ctx {
    ann_engine *eng;
    kv_reader *rd;
    hnsw_meta m;            /* this query's view: entry, max level, n = id bound */
    uint32_t k_max, ef;
    uint32_t W;             /* reads_in_flight */
    uint64_t id_cap;        /* ids slot_of and visited cover */
    float *res_dist;        /* k_max: the results when some ids are deleted */
    uint32_t *res_id;
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

/* Vectors by id, for the select-neighbours heuristic shared by the build
 * (vectors in memory) and inserts (nodes loaded from the store). */
typedef struct hnsw_vecs {
    const float *(*vec)(void *arg, uint32_t id);
    void *arg;
    ann_metric metric;
    uint32_t dim;
} hnsw_vecs;

/* SELECT-NEIGHBORS-HEURISTIC (Algorithm 4 of the HNSW paper) over cand
 * (sorted ascending by distance to the base element): keep e when it is
 * closer to the base than to every neighbour kept so far.  Writes up to
 * max ids to out; returns how many.  build.c. */
uint32_t hnsw_select(const hnsw_vecs *vs, const ann_cand *cand, uint32_t count, uint32_t max,
                     uint32_t *out);

/* Add v to the list (count, then ids) of node base, unless it is there;
 * when the list holds max already, re-select it from its ids and v with
 * the heuristic.  shrink: scratch of max + 1 candidates.  build.c. */
void hnsw_list_add(const hnsw_vecs *vs, uint32_t *list, uint32_t max, uint32_t base, uint32_t v,
                   ann_cand *shrink);

/* A node's top level, floor(-ln(U) mL) with mL = 1 / ln(M), U drawn from
 * the splitmix64 stream *state; capped at HNSW_MAX_LEVEL.  build.c. */
uint32_t hnsw_level_draw(uint64_t *state, uint32_t M);

/* Live updates (insert.c).  open: load the live-state record and the
 * tombstones (every open; the writer's state only with "updates"); close
 * accepts a state never opened.  insert / remove / merge: engine.h. */
int hnsw_live_open(ann_engine *e, kv_reader *rd, int enabled);
void hnsw_live_close(ann_engine *e);
int hnsw_insert(ann_engine *e, uint32_t id, const float *vec, uint32_t dim);
int hnsw_remove(ann_engine *e, uint32_t id);
int hnsw_merge(ann_engine *e);

/* The live-state record (layout.h), encoded / decoded. */
typedef struct hnsw_state {
    uint32_t entry, max_level, id_bound;
    uint64_t nodes, merges;
} hnsw_state;
void hnsw_state_encode(const hnsw_state *st, uint8_t *out);
int hnsw_state_decode(const uint8_t *rec, size_t len, const char *store, hnsw_state *out);

int hnsw_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report);
int hnsw_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats);

extern const ann_param_spec hnsw_build_params[];

#endif
