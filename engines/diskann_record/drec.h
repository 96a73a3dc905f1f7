/*
 * drec.h: internals shared by the files of the diskann-record and
 * diskann-resident engines (one folder, two vtables, one search loop).
 *
 * The two engines differ only in where a neighbour's PQ code comes from:
 * diskann-record reads it from the expanded node's record (every edge of a
 * node is ranked with the one read), diskann-resident from an array of all
 * codes loaded at open (records hold only ids).  The layout flag in the
 * engine selects the source; everything else is the same code.
 */
#ifndef ANNLAB_DISKANN_RECORD_DREC_H
#define ANNLAB_DISKANN_RECORD_DREC_H

#include "engines/core/candlist.h"
#include "engines/core/kv.h"
#include "engines/core/pq.h"
#include "engines/core/visited.h"
#include "engines/diskann_record/layout.h"
#include "engines/engine.h"

#include <stdint.h>

struct ann_engine {
    char store_dir[4200]; /* <index>/<backend>, named in messages */
    drec_meta meta;
    kv_store *kv;
    pq_codebook *pq; /* graph mode only */
    uint8_t *codes;  /* resident layout: n * m bytes, node v at codes + v*m */
};

struct ann_ctx {
    ann_engine *eng;
    kv_reader *rd;
    uint32_t L, rerank, k_max;
    float *table;     /* PQ distance table, m * 256 floats */
    ann_candlist cand; /* storage max(L, k_max) */
    ann_visited visited;
    float *top_dist;  /* k_max */
    uint32_t *top_id; /* k_max */
    float *vec;       /* dim floats: a vector record decoded (big-endian hosts) */
};

/* The declared parameters (engine.c), shared by both vtables. */
extern const ann_param_spec drec_build_params[];
extern const ann_param_spec drec_open_params[];
extern const ann_param_spec drec_search_params[];

/*
 * Build an index of the given layout (DREC_LAYOUT_FULL / _RESIDENT) for
 * engine `name` into dir: PQ codebook and Vamana graph through the shared
 * artifacts (engines/core/artifacts.h), then records into each store the
 * `kv` parameter selects, the metadata record last.
 */
int drec_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report, uint32_t layout, const char *name);

/* Open an index built for engine `name` with the given layout; fills the
 * open report (kv_open_report). */
int drec_open(const char *dir, const json_t *open_params, uint32_t layout, const char *name,
              ann_engine **out, json_t *report);
void drec_close(ann_engine *e);

/* The search of both engines (search.c); see engine.h for the contract. */
int drec_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats);

#endif
