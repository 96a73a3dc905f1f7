/*
 * diskann_params.h: the build parameters of the DiskANN engines
 * (diskann-sector, diskann-record, diskann-resident), declared once and
 * read once, so the same config builds the same PQ codebook and Vamana
 * graph through any of them (engines/core/artifacts.h):
 *
 *   R                1..512      64     max out-degree of the graph
 *   L_build          1..10000    100    search list size while building
 *   alpha            1.0..4.0    1.2    RobustPrune distance factor
 *   pq_bytes         0..1024     0      PQ code bytes per vector (0: dim/8);
 *                                       1024 is diskann-record's format bound
 *                                       (the medoid code in its metadata)
 *   seed             1..2^32-1   1      PQ training sample and insertion order
 *   pq_sample_rows   0..2^32-1   0      PQ training sample rows (0: the caps of
 *                                       pq.h, 200,000 rows and 128 MiB)
 *   pq_iters         0..1000     0      k-means iterations a PQ subspace (0: 12)
 *   threads          0..1024     0      build threads (0: all cores); a build
 *                                       on one thread is bit-reproducible
 *   build_precision  f16|f32|i8  i8     graph build distances on f16 copies,
 *                                       the float32 rows, or int8 codes (i8.h;
 *                                       half precision where they do not apply)
 *
 * An engine's table is ANN_DISKANN_BUILD_PARAMS followed by its own entries
 * (diskann-record: kv) and its end entry.
 */
#ifndef ANNLAB_CORE_DISKANN_PARAMS_H
#define ANNLAB_CORE_DISKANN_PARAMS_H

#include "engines/core/artifacts.h"
#include "engines/core/params.h"
#include "engines/engine.h"

#include <jansson.h>

#define ANN_DISKANN_MAX_PQ_BYTES 1024u

extern const char *const ann_diskann_precision_choices[]; /* "f16", "f32", "i8" */
extern const char *const ann_diskann_order_choices[];     /* "shuffled", "file" */
extern const char *const ann_diskann_pool_choices[];      /* "neighbors", "expanded" */

#define ANN_DISKANN_BUILD_PARAMS                                                                  \
    { .name = "R", .type = ANN_PARAM_INT, .min = 1, .max = 512, .def = 64,                        \
      .help = "max out-degree of the Vamana graph" },                                             \
    { .name = "L_build", .type = ANN_PARAM_INT, .min = 1, .max = 10000, .def = 100,               \
      .help = "search list size while building" },                                                \
    { .name = "alpha", .type = ANN_PARAM_REAL, .min = 1.0, .max = 4.0, .def = 1.2,                \
      .help = "RobustPrune distance factor" },                                                    \
    { .name = "pq_bytes", .type = ANN_PARAM_INT, .min = 0, .max = ANN_DISKANN_MAX_PQ_BYTES,       \
      .def = 0, .help = "PQ code bytes per vector (0: dim/8)" },                                  \
    { .name = "seed", .type = ANN_PARAM_INT, .min = 1, .max = 4294967295.0, .def = 1,             \
      .help = "seed of PQ training and insertion order" },                                        \
    { .name = "pq_sample_rows", .type = ANN_PARAM_INT, .min = 0, .max = 4294967295.0, .def = 0,   \
      .help = "rows of the PQ training sample, at most n (0: 200,000 rows and 128 MiB, the "     \
              "lesser)" },                                                                        \
    { .name = "pq_iters", .type = ANN_PARAM_INT, .min = 0, .max = 1000, .def = 0,                 \
      .help = "k-means iterations a PQ subspace (0: 12)" },                                       \
    { .name = "insert_order", .type = ANN_PARAM_ENUM, .choices = ann_diskann_order_choices,       \
      .def_str = "shuffled",                                                                      \
      .help = "order the graph build inserts points in: a seeded shuffle, or file (id) order, "  \
              "as a database loading documents" },                                                \
    { .name = "saturate", .type = ANN_PARAM_BOOL, .def = 0,                                     \
      .help = "fill every pruned list up to R with the nearest candidates alpha dropped, as "    \
              "Microsoft DiskANN's one-shot disk build does" },                                   \
    { .name = "prune_pool", .type = ANN_PARAM_ENUM, .choices = ann_diskann_pool_choices,        \
      .def_str = "neighbors",                                                                     \
      .help = "what an insert prunes: the nodes its search expanded and the node's current "     \
              "neighbours (the paper), or the expanded nodes only, as Microsoft DiskANN does" },  \
    { .name = "threads", .type = ANN_PARAM_INT, .min = 0, .max = 1024, .def = 0,                  \
      .help = "build threads (0: all cores)" },                                                   \
    { .name = "build_precision", .type = ANN_PARAM_ENUM,                                          \
      .choices = ann_diskann_precision_choices, .def_str = "i8", .keyed_default = 1,             \
      .help = "graph build distances on int8 codes (a quarter of the memory traffic; L2 and "   \
              "cosine with AVX-512 VNNI, else f16), f16 copies (half), or f32" }

/*
 * Fill *ap (ann_artifacts_get's parameters: graph, PQ with the graph's seed
 * and threads, want_graph, keep_vectors, the cache directory of bctx) from
 * params, already validated against specs (a table that begins with
 * ANN_DISKANN_BUILD_PARAMS), for the vectors of src.  ANN_EPARAM
 * "build.pq_bytes: <m> exceeds dim <dim>" when the code is longer than a
 * vector.
 */
int ann_diskann_build_read(const json_t *params, const ann_param_spec *specs,
                           const ann_vecsrc *src, const ann_build_ctx *bctx,
                           ann_artifacts_params *ap);

#endif
