/*
 * ivfpq.h: internals shared by the ivfpq-record engine's files: the open
 * index (coarse centroids, codebook and list directory in RAM, records in
 * the store), the per-thread search context, the record codec, and the
 * phases (build.c, search.c; the vtable is in engine.c).
 */
#ifndef ANNLAB_IVFPQ_RECORD_IVFPQ_H
#define ANNLAB_IVFPQ_RECORD_IVFPQ_H

#include "engines/core/kv.h"
#include "engines/core/paged.h"
#include "engines/core/pq.h"
#include "engines/core/topk.h"
#include "engines/engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The metadata record, decoded. */
typedef struct ivfpq_meta {
    ann_metric metric;
    uint64_t n;
    uint32_t dim, nlist, lists, pq_bytes, chunk_entries;
    uint64_t seed;
    uint32_t coarse_sum; /* ann_checksum of the centroids as coarse.fbin stores them */
} ivfpq_meta;

/* Live-update state (insert.c). */
typedef struct ivfpq_live {
    int enabled;              /* opened with "updates": true */
    int inited;               /* wlock initialised */
    pthread_mutex_t wlock;    /* one writer at a time */
    kv_reader *wrd;           /* the writer's reader */
    ann_idbits dead;          /* ids with a tombstone */
    _Atomic uint32_t *app_len; /* lists: appended entries of each list */
    _Atomic uint64_t appended, deleted;
    _Atomic uint64_t entries;  /* entries in the lists' chunk records */
    _Atomic uint32_t id_bound; /* every id in a chunk or appended record is below it */
    _Atomic int any_dead;      /* an id was ever deleted: searches filter (never reset:
                                  a search of a snapshot before a merge may meet one) */
    uint32_t merges;
} ivfpq_live;

struct ann_engine {
    ivfpq_meta meta;
    ivfpq_live live;
    float *centroids;      /* lists x dim */
    pq_codebook *cb;       /* residual codebook (IP for ip/cosine data) */
    uint32_t *list_len;    /* lists */
    kv_store *kv;
    char store_dir[4200];  /* named in corruption messages */
};

struct ann_ctx {
    ann_engine *eng;
    kv_reader *rd;
    uint32_t k_max, nprobe, rerank;
    uint32_t W;            /* reads_in_flight */
    float *coarse_dist;    /* nprobe: the probed lists' heap */
    uint32_t *coarse_id;
    uint8_t *coarse_app;   /* nprobe: the list had appended entries before the snapshot */
    float *table;          /* m x 256: -<q_j, c'>, one per query */
    uint32_t *chunk_ids;   /* chunk entries */
    float *chunk_dists;
    float *cand_dist;      /* rerank x k_max */
    uint32_t *cand_id;
    float *top_dist;       /* k_max */
    uint32_t *top_id;
    float *vec;            /* dim */
};

void ivfpq_meta_encode(const ivfpq_meta *m, uint8_t *out);
/* Decode and check the metadata record.  ANN_ECORRUPT (bad frame or
 * fields), ANN_EVERSION (another format version: rebuild the index), each
 * naming the store. */
int ivfpq_meta_decode(const uint8_t *rec, size_t len, const char *store, ivfpq_meta *out);

/* beta of an entry (layout.h): <centroid, residual> + |residual|^2 / 2,
 * residual being the decoded one (dim floats each), summed in double. */
float ivfpq_beta(const float *centroid, const float *residual, uint32_t dim);

/* Encode / decode the list directory (layout.h).  dir_bytes = 8 + 4 lists. */
size_t ivfpq_dir_bytes(uint32_t lists);
void ivfpq_dir_encode(const uint32_t *len, uint32_t lists, uint8_t *out);
int ivfpq_dir_decode(const uint8_t *rec, size_t len, const ivfpq_meta *m, const char *store,
                     uint32_t *out);

/* Check a chunk record against what the directory expects (list, chunk,
 * count, length, ids < n, finite betas); ANN_ECORRUPT naming the store,
 * list, chunk and entry. */
int ivfpq_chunk_check(const ivfpq_meta *m, const char *store, uint32_t list, uint32_t chunk,
                      uint32_t expect_count, const uint8_t *rec, size_t len);

/*
 * The estimated distance of the entries of a list, in three steps (search.c
 * uses them; tests check them against decoded vectors):
 *   ivfpq_query_table: the query's inner-product table (pq_table_floats),
 *     once per query;
 *   ivfpq_list_term: the list's centroid term, |q - c|^2 (l2),
 *     |q - c|^2 / 2 (cosine) or -<q, c> (ip), once per list: the search
 *     ranks lists by it and adds it to their entries' estimates;
 *   ivfpq_chunk_estimate: out[j] for the count entries of a chunk record
 *     that passed ivfpq_chunk_check: |q - c - r'|^2 (l2), its half
 *     (cosine), -<q, c> - <q, r'> (ip).
 * They read the open index only and allocate nothing: thread-safe.
 */
void ivfpq_query_table(const ann_engine *e, const float *query, float *table);
float ivfpq_list_term(const ann_engine *e, const float *query, uint32_t list);
void ivfpq_chunk_estimate(const ann_engine *e, const float *table, float list_term,
                          const uint8_t *rec, uint32_t count, float *out);

/* Live updates (insert.c).  open: load the appended-entry counts and the
 * tombstones (every open; writable state only with "updates"); close
 * accepts a state never opened.  insert/remove: engine.h's contract. */
int ivfpq_live_open(ann_engine *e, kv_reader *rd, int enabled);
void ivfpq_live_close(ann_engine *e);
int ivfpq_insert(ann_engine *e, uint32_t id, const float *vec, uint32_t dim);
int ivfpq_remove(ann_engine *e, uint32_t id);
int ivfpq_merge(ann_engine *e);

/* The live-state record (layout.h): encode; decode and check, ANN_ECORRUPT
 * naming the store. */
void ivfpq_state_encode(uint32_t id_bound, uint64_t entries, uint32_t merges, uint8_t *out);
int ivfpq_state_decode(const uint8_t *rec, size_t len, const char *store, uint32_t *id_bound,
                       uint64_t *entries, uint32_t *merges);

/* Whether id carries a tombstone (lock-free; searches). */
static inline int ivfpq_is_dead(const ann_engine *e, uint32_t id)
{
    return ann_idbits_test(&e->live.dead, id);
}

/* The estimate of one entry of beta `beta` and PQ code `code` (an
 * appended entry, layout.h), as ivfpq_chunk_estimate computes it. */
float ivfpq_entry_estimate(const ann_engine *e, const float *table, float list_term, float beta,
                           const uint8_t *code);

int ivfpq_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
                const char *dir, json_t *report);
int ivfpq_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                 ann_stats *stats);

extern const ann_param_spec ivfpq_build_params[];

#endif
