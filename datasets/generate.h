/*
 * generate.h: seeded synthetic datasets shaped like real embeddings.
 *
 * The model (generate.c has the details and the tuning figures): every
 * vector is  x = mu + B^T (c_k + w) + e,  where mu is a common direction,
 * B a random orthonormal basis of a rank-r subspace, c_k the centre of one
 * of K clusters and w a within-cluster draw (both with a power-law
 * spectrum across the r latent directions), and e isotropic noise.  Cosine
 * data is normalised to unit length.  The distribution depends on the seed,
 * dim, metric and shape only, never on n: a sample of 1,000 vectors of a 1M
 * bundle has the statistics of a 1,000-vector bundle with the same seed.
 *
 * Row i of a stream is drawn from its own counter-based generator state
 * (seed, stream, i), so any range of rows can be generated on its own, in
 * any order, on any thread, with identical bytes.
 */
#ifndef ANNLAB_DATASETS_GENERATE_H
#define ANNLAB_DATASETS_GENERATE_H

#include "engines/core/vecsrc.h"

#include <stdint.h>

/* The order of the base rows in a generated file.  A corpus kept in document
 * order holds each document's passages together, so a build that takes
 * rows in file order inserts neighbours together. */
typedef enum {
    ANN_GEN_ORDER_DRAWN = 0,   /* as drawn: independent rows, a random order */
    ANN_GEN_ORDER_GROUPED = 1, /* by cluster, then sub-centre, then draw */
    ANN_GEN_ORDER_RUNS = 2,    /* each group (sub-centre, or cluster without
                                  them) in one run, the runs in a seeded
                                  random order, rows in draw order within */
} ann_gen_order;

/* The shape of the distribution; see ann_gen_shape_default. */
typedef struct ann_gen_shape {
    uint32_t rank;       /* latent dimensions r (clamped to dim) */
    double decay;        /* latent variance of direction j is j^-decay */
    uint32_t clusters;   /* K */
    double between_frac; /* share of latent variance between cluster centres */
    double noise_frac;   /* share of the total variance in isotropic noise */
    double mean_sq;      /* |mu|^2 relative to the total variance (1) */
    int positive_mean;   /* mu has non-negative coordinates (descriptor-like) */
    double scale;        /* every coordinate multiplied by this (L2 only) */
    uint32_t subclusters;/* S sub-centres per cluster (0: none, the presets) */
    double sub_frac;     /* share of the within-cluster latent variance between
                            the sub-centres of a cluster (used when S > 0) */
    double spread_sd;    /* standard deviation of log t, a per-row factor on
                            x - mu: rows with a small t sit near the common
                            direction and become hubs (0: none, the presets) */
    double query_scale;  /* test and warm-up rows' departure from mu times
                            this: below 1 they sit nearer the common
                            direction than the base rows (0 is read as 1,
                            the presets) */
    int order;           /* the base rows' order in base.fbin (ann_gen_order;
                            0: as drawn, the presets) */
} ann_gen_shape;

/*
 * The tuned default shape for a metric: ANN_METRIC_COSINE matches the real
 * Cohere 768-d embeddings' statistics (pairwise and nearest-neighbour
 * cosine medians, top-100 spectrum share); ANN_METRIC_L2 is GIST-like.
 */
void ann_gen_shape_default(ann_metric metric, ann_gen_shape *out);

/* 0 when every field of s is in range; ANN_EPARAM naming the field
 * ("generate: shape.noise_frac 1.5 outside [0, 1]") otherwise. */
int ann_gen_shape_check(const ann_gen_shape *s);

typedef struct ann_gen_params {
    uint64_t n;          /* base vectors */
    uint32_t dim;
    ann_metric metric;   /* ANN_METRIC_L2 or ANN_METRIC_COSINE */
    uint32_t queries;    /* test queries (default 1000) */
    uint32_t warmup;     /* warm-up queries (default 2000) */
    uint64_t seed;
    uint32_t gt_k;       /* ground-truth depth (default 100) */
    const char *name;    /* bundle name for the manifest */
    const ann_gen_shape *shape; /* borrowed; NULL: ann_gen_shape_default(metric) */
} ann_gen_params;

/* Which independent stream of rows: the base, the test queries, the warm-up. */
typedef enum {
    ANN_GEN_BASE = 0,
    ANN_GEN_QUERY = 1,
    ANN_GEN_WARMUP = 2,
} ann_gen_stream;

typedef struct ann_generator ann_generator;

/*
 * Build the model of p (seed, dim, metric, shape; n and counts unused):
 * O(K r + r dim) floats.  Errors: ANN_EPARAM naming the field (dim 0,
 * metric other than l2/cosine, shape out of range), -ENOMEM.
 */
int ann_generator_create(const ann_gen_params *p, ann_generator **out);

/*
 * Write rows [first, first+count) of a stream into out (count x dim floats).
 * Deterministic per row.  Thread-safe: the generator is read-only after
 * create, so threads may fill disjoint ranges at once.  Returns 0 or -ENOMEM.
 */
int ann_generator_rows(const ann_generator *g, ann_gen_stream stream, uint64_t first,
                       uint64_t count, float *out);

/*
 * Rows ids[0..count) of a stream into out, as ann_generator_rows would give
 * each (the order of out follows ids).  Returns 0 or -ENOMEM.
 */
int ann_generator_rows_at(const ann_generator *g, ann_gen_stream stream, const uint32_t *ids,
                          uint64_t count, float *out);

/* The group of row row_id of a stream: cluster k, or k * S + sub-centre
 * when the shape has S sub-centres (the draws gen_row makes first). */
uint64_t ann_generator_group(const ann_generator *g, ann_gen_stream stream, uint64_t row_id);

/* Free a generator (NULL is fine). */
void ann_generator_destroy(ann_generator *g);

/*
 * Write a complete bundle (see bundle.h) as out_dir: base.fbin generated
 * and written in chunks (memory O(chunk), not O(n)), query.fbin, warmup.fbin,
 * then ann_bundle_finish computes the exact ground truth and writes the
 * manifest, with the statistics of a 1,000-row sample of the base (stats.h)
 * and the generator's parameters.  Everything is written into a temporary
 * sibling that takes the name only when complete (engines/core/stagedir.h):
 * an existing out_dir (but an empty directory) is refused unless out_flags
 * has ANN_OUT_FORCE, and is left as it was when generation fails.
 * Errors: those of ann_generator_create, -EEXIST (exists, not forced),
 * -errno naming the file, those of ann_bundle_finish.
 */
int ann_generate_bundle(const ann_gen_params *p, const char *out_dir, unsigned out_flags);

/*
 * Parameters of a named preset: synth-768-cosine-{10k,100k,1m},
 * synth-768-cosine-cal-{10k,100k,1m} (the calibrated Cohere shape, with
 * sub-centres; out->shape points at it), synth-768-cosine-cal-doc-{10k,
 * 100k,1m} (the same rows in document order: ANN_GEN_ORDER_RUNS),
 * synth-768-cosine-cal5-{10k,100k,1m} (a shape fitted to all five
 * published recall figures, in topic order: ANN_GEN_ORDER_GROUPED) and
 * synth-960-l2-{10k,100k,1m}
 * (1,000 queries, 2,000 warm-up, gt_k 100, seed 42).  out->name and
 * out->shape point at static data.  ANN_ENOTFOUND otherwise.
 */
int ann_generate_preset(const char *name, ann_gen_params *out);

/*
 * `annlab dataset generate ...`: argv[0] is "generate".
 *   --n N --dim D --metric l2|cosine [--queries Q] [--warmup W] [--seed S]
 *   [--gt-k K] [--name NAME] --out DIR
 *   --preset NAME [--out DIR]          (default out: datasets/data/NAME)
 * Returns an exit code: 0 ok, 1 failure (message on stderr), 2 usage.
 */
int ann_generate_cli(int argc, char **argv);

#endif
