/*
 * diskann_params.c: the one reader of the DiskANN build parameters
 * (diskann_params.h).
 */
#include "engines/core/diskann_params.h"

#include "engines/core/status.h"

#include <string.h>

const char *const ann_diskann_precision_choices[] = { "f16", "f32", "i8", NULL };
const char *const ann_diskann_order_choices[] = { "shuffled", "file", NULL };
const char *const ann_diskann_pool_choices[] = { "neighbors", "expanded", NULL };

int ann_diskann_build_read(const json_t *params, const ann_param_spec *specs,
                           const ann_vecsrc *src, const ann_build_ctx *bctx,
                           ann_artifacts_params *ap)
{
    ann_artifacts_params_default(ap, src->dim);
    ap->graph.R = (uint32_t)ann_param_int(params, specs, "R");
    ap->graph.L_build = (uint32_t)ann_param_int(params, specs, "L_build");
    ap->graph.alpha = (float)ann_param_real(params, specs, "alpha");
    ap->graph.seed = (uint64_t)ann_param_int(params, specs, "seed");
    ap->graph.threads = (int)ann_param_int(params, specs, "threads");
    ap->graph.file_order = !strcmp(ann_param_enum(params, specs, "insert_order"), "file");
    ap->graph.saturate = ann_param_bool(params, specs, "saturate");
    ap->graph.prune_expanded = !strcmp(ann_param_enum(params, specs, "prune_pool"), "expanded");
    const char *prec = ann_param_enum(params, specs, "build_precision");
    ap->graph.build_f16 = !strcmp(prec, "f16")  ? VAMANA_PREC_F16
                          : !strcmp(prec, "i8") ? VAMANA_PREC_I8
                                                : VAMANA_PREC_F32;
    uint32_t m = (uint32_t)ann_param_int(params, specs, "pq_bytes");
    ap->pq.pq_bytes = m ? m : pq_default_bytes(src->dim);
    ap->pq.seed = ap->graph.seed;
    uint64_t rows = (uint64_t)ann_param_int(params, specs, "pq_sample_rows");
    if (rows > 0) { /* this row count instead of both caps (pq_sample_rows: at most n) */
        ap->pq.sample_max_rows = rows;
        ap->pq.sample_max_bytes = rows * src->dim * sizeof(float);
    }
    uint32_t iters = (uint32_t)ann_param_int(params, specs, "pq_iters");
    if (iters > 0)
        ap->pq.iters = iters;
    ap->pq.threads = ap->graph.threads;
    ap->want_graph = 1;
    ap->keep_vectors = 1;
    ap->cache_dir = bctx ? bctx->artifact_dir : NULL;
    ap->graph_import = bctx ? bctx->graph_import : NULL;
    ap->pq_import = bctx ? bctx->pq_import : 0;
    if (ap->pq.pq_bytes > src->dim)
        return ann_fail(ANN_EPARAM, "build.pq_bytes: %u exceeds dim %u", ap->pq.pq_bytes,
                        src->dim);
    return 0;
}
