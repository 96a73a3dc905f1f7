/*
 * flat.h: internals shared by the flat engine's files.
 */
#ifndef ANNLAB_FLAT_FLAT_H
#define ANNLAB_FLAT_FLAT_H

#include "engines/core/vecsrc.h"
#include "engines/engine.h"

#include <stddef.h>
#include <stdint.h>

struct ann_engine {
    const float *vectors; /* n * dim, inside the mapping */
    void *map;
    size_t map_bytes;
    uint64_t n;
    uint32_t dim;
    ann_metric metric;
};

struct ann_ctx {
    ann_engine *eng;
    uint32_t k_max;
    float *heap_dist;
    uint32_t *heap_id;
};

int flat_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report);
int flat_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats);

#endif
