/*
 * search.c: exact search by a full scan of the mapped vectors, keeping the
 * k best in a bounded heap that lives in the per-thread context.
 */
#include "engines/flat/flat.h"

#include "engines/core/distance.h"
#include "engines/core/topk.h"
#include "engines/core/ticks.h"

#include <time.h>

int flat_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats)
{
    const ann_engine *e = ctx->eng;
    uint64_t c0 = ann_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (k > ctx->k_max)
        k = ctx->k_max;
    ann_topk top;
    ann_topk_init(&top, ctx->heap_dist, ctx->heap_id, k);
    const ann_dist_kernels *kern = ann_dist_active();
    const float *v = e->vectors;
    for (uint64_t i = 0; i < e->n; i++, v += e->dim) {
        float d;
        if (e->metric == ANN_METRIC_L2)
            d = kern->l2sq(query, v, e->dim);
        else if (e->metric == ANN_METRIC_IP)
            d = -kern->ip(query, v, e->dim);
        else
            d = 1.0f - kern->ip(query, v, e->dim);
        if (d < ann_topk_bound(&top))
            ann_topk_push(&top, d, (uint32_t)i);
    }
    uint32_t got = ann_topk_sorted(&top, ids, dists);
    uint64_t c1 = ann_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    stats->full_dists += e->n;
    stats->bytes_read += e->n * e->dim * sizeof(float);
    stats->cpu_ns += c1 - c0;
    return (int)got;
}
