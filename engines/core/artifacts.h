/*
 * artifacts.h: the build cache that makes the DiskANN engines share one
 * PQ codebook, one set of PQ codes and one Vamana graph.
 *
 * ann_artifacts_get() returns the intermediate products of a DiskANN
 * build.  When the parameters name a cache directory (cache_dir: the
 * build's ann_build_ctx.artifact_dir, engines/engine.h), each product is
 * looked up there first, keyed by its own parameters, and written there
 * after it is built:
 *
 *   <cache_dir>/<source>/pq-b<pq_bytes>-s<seed>-r<sample_rows>-i<iters>.pqcb
 *   <cache_dir>/<source>/pq-b<pq_bytes>-s<seed>-r<sample_rows>-i<iters>.pqcodes
 *   <cache_dir>/<source>/vamana-R<R>-L<L_build>-a<alpha>-p<passes>-k<slack>-s<seed>-<f16|f32|i8>.vamana
 *
 * The codebook and graph files are pq.h's and vamana.h's.  The codes file:
 *     0  char[8]  magic "ANNPQCD\0"
 *     8  u32      version (1)
 *    12  u32      m (bytes per code)
 *    16  u64      n (codes)
 *    24  u8[n*m]  codes, row v at 24 + v*m
 *   end  u32      crc32 (zlib) of every byte before it
 *
 * <source> is the vecsrc id (the dataset checksum) with every character
 * outside [A-Za-z0-9._-] replaced by '_', followed by -n<n>-d<dim>-<metric>.
 * The graph key leaves out pq_bytes and the PQ key leaves out the graph
 * parameters, so a record engine and a sector engine built with the same
 * graph parameters but a different PQ budget still share the graph.
 * Every file is written atomically (temporary + fsync + rename), so a
 * crashed build leaves nothing that loads, and verified at load (magic,
 * version, crc32, graph invariants, n/dim/m against the source); a cached
 * file that fails verification is an error naming it, never rebuilt over
 * silently.  With cache_dir NULL or empty nothing is cached.
 * Multi-threaded builds are not bit-reproducible, so a cache hit returns
 * the graph built first for that key; that is the point of the cache.
 */
#ifndef ANNLAB_CORE_ARTIFACTS_H
#define ANNLAB_CORE_ARTIFACTS_H

#include "engines/core/pq.h"
#include "engines/core/vamana.h"
#include "engines/core/vecsrc.h"

#include <jansson.h>
#include <stdint.h>

typedef struct ann_artifacts_params {
    vamana_params graph;  /* graph parameters (seed also seeds PQ when pq.seed == 0) */
    pq_params pq;         /* pq.pq_bytes == 0: no PQ artifacts */
    int want_graph;       /* 0: PQ only (e.g. IVF-PQ) */
    int keep_vectors;     /* 1: out->vectors holds the base vectors (read from the
                             source if no build step needed them) */
    const char *cache_dir; /* the artifact cache (see above); NULL or "": none */
    const char *graph_import; /* a Microsoft DiskANN `_disk.index` (msdiskann.h): the graph
                                 is read from it, over the same vectors, instead of built
                                 or cached; NULL: none */
    int pq_import;        /* 1: with graph_import, the PQ codebook and codes too, from the
                             Microsoft files beside it (msda_pq_load), not trained or cached */
} ann_artifacts_params;

/* Defaults: vamana_params_default, pq_params_default(dim), want_graph 1. */
void ann_artifacts_params_default(ann_artifacts_params *p, uint32_t dim);

typedef struct ann_artifacts {
    pq_codebook *pq;      /* NULL when pq_bytes == 0 */
    uint8_t *pq_codes;    /* n * pq->m bytes, or NULL */
    vamana_graph *graph;  /* NULL when want_graph == 0 */
    float *vectors;       /* n * dim floats when keep_vectors, else NULL */
    /* wall-clock seconds per phase (0 for a phase served from the cache) */
    double pq_train_s, pq_encode_s, graph_s, load_s;
    int pq_cached;        /* 1: codebook and codes came from the cache */
    int graph_cached;     /* 1: graph came from the cache */
    json_t *graph_import; /* the graph came from graph_import: what msda_graph_load said
                             of it (owned), else NULL */
    json_t *pq_import;    /* the PQ came from pq_import: msda_pq_load's report (owned) */
    vamana_build_stats graph_stats; /* phases of the graph build (zero when cached) */
} ann_artifacts;

/*
 * Get or build the artifacts of src under p (see above).  *out is filled
 * on success and must be released with ann_artifacts_fini (also on
 * failure: partial results are freed by the callee, out is zeroed).
 * Errors: parameter errors of pq_train/vamana_build (ANN_EPARAM), read
 * errors of src, cache files that fail verification (ANN_EFORMAT,
 * ANN_EVERSION, ANN_ECORRUPT naming the file), -errno creating or writing
 * the cache (naming the path), -ENOMEM.
 * Thread-safe for distinct keys; two processes building the same key race
 * harmlessly (the last rename wins, both files are complete).
 */
int ann_artifacts_get(const ann_vecsrc *src, const ann_artifacts_params *p, ann_artifacts *out);

/* Free everything held by a (NULL or zeroed is fine); a is zeroed. */
void ann_artifacts_fini(ann_artifacts *a);

/*
 * Add to a build report what a graph built here (not from the cache) was
 * computed on: graph_precision (the rows actually used) and, when int8
 * was asked, graph_i8_noise (the codes' noise share); for an imported
 * graph, graph_imported (msda_graph_load's report) instead; for imported
 * PQ files, pq_imported (msda_pq_load's).
 */
void ann_artifacts_report_graph(const ann_artifacts *a, json_t *report);

/*
 * The cache path of one artifact for src and p ("pqcb", "pqcodes" or
 * "graph") into buf (size cap), or ANN_ENOTFOUND when caching is off,
 * ANN_EPARAM for an unknown `what` or a path longer than cap.
 * For tools and tests.
 */
int ann_artifacts_path(const ann_vecsrc *src, const ann_artifacts_params *p, const char *what,
                       char *buf, size_t cap);

/*
 * The PQ codes file of the header comment, for engines that keep their own
 * copy of the codes beside an index.  save: atomic (temporary + fsync +
 * rename), -errno naming the file.  load: n codes of m bytes into *out
 * (malloc'd, caller frees); ANN_EFORMAT (magic, size), ANN_EVERSION,
 * ANN_ECORRUPT (n or m differ from those expected, checksum), each naming
 * the file.
 */
int ann_artifacts_codes_save(const char *path, const uint8_t *codes, uint64_t n, uint32_t m);
int ann_artifacts_codes_load(const char *path, uint64_t n, uint32_t m, uint8_t **out);

#endif
