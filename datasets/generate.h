/*
 * generate.h: seeded synthetic datasets shaped like real embeddings.
 */
#ifndef ANNLAB_DATASETS_GENERATE_H
#define ANNLAB_DATASETS_GENERATE_H

#include "engines/core/vecsrc.h"

#include <stdint.h>

typedef struct ann_gen_params {
    uint64_t n;          /* base vectors */
    uint32_t dim;
    ann_metric metric;   /* ANN_METRIC_L2 or ANN_METRIC_COSINE */
    uint32_t queries;    /* test queries (default 1000) */
    uint32_t warmup;     /* warm-up queries (default 2000) */
    uint64_t seed;
    uint32_t gt_k;       /* ground-truth depth (default 100) */
    const char *name;    /* bundle name for the manifest */
} ann_gen_params;

/* Write a complete bundle (see bundle.h) into out_dir, atomically. */
int ann_generate_bundle(const ann_gen_params *p, const char *out_dir);

/* Parameters of a named preset ("synth-768-cosine-100k", ...); ANN_ENOTFOUND. */
int ann_generate_preset(const char *name, ann_gen_params *out);

/* `annlab dataset generate ...`: argv[0] is "generate". Returns an exit code. */
int ann_generate_cli(int argc, char **argv);

#endif
