/*
 * engine.h: the one contract between the harness and every index engine.
 *
 * An engine is a static const ann_engine_ops filled with designated
 * initializers and listed in engines/registry.c.  The harness reaches
 * engines only through this header and the registry.
 *
 * Life cycle:
 *
 *   ann_engine_build(ops, src, build_params, index_dir, &bctx, &report)
 *       -> ops->build(src, params, &bctx, tmp_dir, report) into a temporary
 *          directory beside index_dir, then build.json, fsync, rename.
 *          A crashed or failed build never leaves a directory that opens.
 *   ann_engine_open(ops, index_dir, open_params, &eng, &open_report)
 *       -> ops->open(index_dir, params, &eng, open_report)  ... ops->close(eng)
 *   ann_engine_ctx_new(ops, eng, search_params, k_max, &ctx)
 *       -> ops->ctx_new(eng, params, k_max, &ctx)   one per thread
 *   ops->search(ctx, query, k, ids, dists, &stats)  many threads at once,
 *          each with its own ctx; allocates nothing, takes no global lock.
 *   ops->ctx_free(ctx)
 *
 * Parameters travel as jansson objects.  Each engine declares its
 * parameters in build_params / open_params / search_params (see params.h).
 * The three wrappers validate them against those tables before the engine
 * sees them (unknown or out-of-range parameters are ANN_EPARAM naming the
 * parameter, a search list shorter than k_max too), so an engine never
 * validates its own parameters: callers go through the wrappers, never
 * through ops->build / open / ctx_new directly.  Sweeps (lists) are
 * expanded by the harness: engines see scalars only.
 *
 * Distances returned are those of engines/core/distance.h: squared L2 for
 * l2, -ip for ip, 1 - ip for cosine (smaller is better).
 */
#ifndef ANNLAB_ENGINE_H
#define ANNLAB_ENGINE_H

#include "engines/core/params.h"
#include "engines/core/vecsrc.h"

#include <jansson.h>
#include <stdint.h>

typedef struct ann_engine ann_engine; /* an open index; engine-defined */
typedef struct ann_ctx ann_ctx;       /* a per-thread search context; engine-defined */

/*
 * Stages of a query whose time an engine may measure (ann_stats.stage_ns).
 * An engine sets the bit (1 << stage) in stage_mask for every stage it
 * times; a stage whose bit is clear was not measured (reported as null,
 * never as 0).  Stages are wall-clock time on the searching thread and do
 * not overlap; together with the untimed rest they make up the latency.
 */
typedef enum ann_stage {
    ANN_STAGE_PQ_TABLE = 0,  /* the query's PQ distance table */
    ANN_STAGE_ADC,           /* PQ (asymmetric) distances of candidates */
    ANN_STAGE_CANDLIST,      /* visited checks, candidate list inserts and picks */
    ANN_STAGE_FULL_DIST,     /* full-precision distances */
    ANN_STAGE_DECODE,        /* node records decoded and checked */
    ANN_STAGE_IO_SUBMIT,     /* handing reads to the kernel (submission calls) */
    ANN_STAGE_IO_WAIT,       /* waiting for (and collecting) completions */
    ANN_STAGE_COUNT
} ann_stage;

/* "pq_table", "adc", "candlist", "full_dist", "decode", "io_submit", "io_wait". */
const char *ann_stage_name(ann_stage s);

/*
 * Per-query statistics, the engine's own view of its work.  search() adds
 * to *stats (the caller zeroes it); the harness averages over queries.
 */
typedef struct ann_stats {
    uint64_t reads;       /* storage requests issued: kv gets or sector reads */
    uint64_t bytes_read;  /* bytes those requests returned */
    uint64_t hops;        /* the engine's unit of search progress, per engine:
                               diskann-sector   rounds (search_mode round) or waits for a
                                                completion (pipeline)
                               diskann-record,  node records read = nodes expanded
                               -resident
                               hnsw-record      candidates expanded, upper layers included
                               ivfpq-record     inverted lists probed
                               flat, ref-*      0 (not counted) */
    uint64_t full_dists;  /* full-precision distance computations */
    uint64_t code_dists;  /* compressed-code (PQ) distance computations */
    uint64_t cache_hits;  /* reads served by the engine's own cache */
    uint64_t io_wait_ns;  /* time blocked waiting for storage */
    uint64_t cpu_ns;      /* thread CPU time of the query */
    uint32_t stage_mask;  /* bit s set: stage_ns[s] was measured */
    uint64_t stage_ns[ANN_STAGE_COUNT];
} ann_stats;

/* Add a query's stats into an accumulator (counts, times, stage masks). */
void ann_stats_add(ann_stats *acc, const ann_stats *q);

/*
 * What a build receives besides its parameters: the harness's choices that
 * are not properties of the index.  A zeroed struct (or NULL) is valid.
 */
typedef struct ann_build_ctx {
    /* The shared DiskANN build-artifact cache (engines/core/artifacts.h):
     * the directory where the PQ codebook, codes and Vamana graph are kept
     * per key, so the DiskANN engines build on the same graph; NULL or ""
     * caches nothing.  `annlab run` passes <index_root>/artifacts. */
    const char *artifact_dir;
    /* A Microsoft DiskANN disk index (`<prefix>_disk.index`) whose graph a
     * DiskANN engine takes instead of building one (engines/core/
     * msdiskann.h; `annlab import-graph`); NULL or "": build as usual. */
    const char *graph_import;
    /* 1: with graph_import, the PQ codebook and codes too, from the
     * Microsoft files beside it (`import-graph --ms-pq`). */
    int pq_import;
} ann_build_ctx;

/*
 * The open report: a JSON object the engine's open() fills with what the
 * open index actually uses, recorded in each cell of cells.jsonl as
 * "open_report".  Keys every engine sets:
 *   "io"           the backend that reads the index after any fallback:
 *                  "io_uring" | "libaio" | "pread" | "buffered" | "mmap"
 *                  (diskann-sector, flat: "mmap"), "rocksdb" | "lmdb"
 *                  (record engines), "memory" (in-memory reference peers)
 *   "o_direct"     true when reads bypass the page cache
 *   "cache_bytes"  bytes of the engine's own cache of index data (BFS node
 *                  cache, RocksDB block cache; 0 when none)
 * and where they apply: "kv_profile" ("server" | "embedded", record
 * engines), "io_asked" (the backend asked for), "cache_nodes".
 */

/* Set the three keys every engine's open report has. */
void ann_open_report_set(json_t *report, const char *io, int o_direct, uint64_t cache_bytes);

typedef struct ann_engine_ops {
    const char *name;        /* registry name: "flat", "diskann-sector", ... */
    const char *description; /* one line */
    const char *title;       /* the name tables and papers print: "DiskANN (sector file)" */
    const char *reads_unit;  /* what ann_stats.reads counts, plural: "sector reads",
                                "kv gets"; NULL: "reads" */

    /* Declared parameters (tables end with ANN_PARAM_END; NULL = none). */
    const ann_param_spec *build_params;
    const ann_param_spec *open_params;
    const ann_param_spec *search_params;
    /* The search parameter a recall curve sweeps (recall grows with it):
     * "L", "ef_search", "nprobe"; one of search_params, an integer.  What
     * a target recall tunes and figures plot effort against.  NULL: none. */
    const char *effort_param;

    /*
     * Write a complete index for src into dir (an empty directory that
     * exists).  params: validated build parameters (may be NULL).
     * bctx: never NULL (ann_build_ctx above).
     * report: a JSON object the engine may add figures to, e.g.
     * "phases": {"pq_train_s": ..., "graph_s": ...}; the wrapper adds wall
     * time, CPU time, peak RSS and bytes on disk.  Runs single-process;
     * may use threads (params or nproc).  Returns 0 or a negative code.
     */
    int (*build)(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
                 const char *dir, json_t *report);

    /* Open the index in dir with validated open_params (may be NULL).
     * Corrupt or wrong-version files are ANN_ECORRUPT / ANN_EVERSION naming
     * the file.  On success the engine has filled report (an empty object,
     * never NULL) as "The open report" above says.  Thread-safe once open. */
    int (*open)(const char *dir, const json_t *open_params, ann_engine **out, json_t *report);
    void (*close)(ann_engine *eng); /* accepts NULL */

    /* Number of vectors, dimension and metric of an open index. */
    uint64_t (*size)(const ann_engine *eng);

    /* A search context with every buffer allocated up front, for queries
     * asking at most k_max results (>= 1), search_params validated (and
     * every at_least_k parameter >= k_max).  One per thread. */
    int (*ctx_new)(ann_engine *eng, const json_t *search_params, uint32_t k_max, ann_ctx **out);
    void (*ctx_free)(ann_ctx *ctx); /* accepts NULL */

    /*
     * Search for the k (<= k_max) nearest neighbours of query (dim floats,
     * already normalised for cosine).  Writes up to k ids and distances,
     * best first; returns how many (fewer than k only when the index holds
     * fewer vectors), or a negative code.  A failed read is an error, never
     * a silently shorter result.  Adds its work to *stats.
     */
    int (*search)(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                  ann_stats *stats);

    /*
     * Optional live updates; NULL when unsupported.  insert adds vector
     * vec (dim floats, normalised for cosine as the build's source is)
     * under id; remove deletes id.  Both are durable when they return and
     * visible to every search that starts afterwards (remove: id is never
     * returned again).  An id that exists (insert), one that does not
     * (remove), a dim other than the index's, or a NaN/Inf component are
     * ANN_EDATA / ANN_ENOTFOUND naming the id, and nothing is written.
     * An engine opened without updates enabled returns ANN_ESTATE.
     * Thread-safe against searches and each other.
     * merge folds what the updates left aside into the index (the
     * FreshDiskANN merge: pending vectors into the graph, deleted nodes
     * out of it); searches running meanwhile see every record either
     * before or after it.  NULL when the engine has nothing to merge.
     */
    int (*insert)(ann_engine *eng, uint32_t id, const float *vec, uint32_t dim);
    int (*remove)(ann_engine *eng, uint32_t id);
    int (*merge)(ann_engine *eng);

    /* Optional: a caveat a reader of the results must know (e.g. a generic
     * build of a reference library), recorded in each run's machine.json
     * under "engine_notes".  NULL when none. */
    const char *(*machine_note)(void);

    /*
     * The version of the on-disk format this engine writes, the only one
     * its open() reads: the version its layout.h defines (hnsw-record's
     * HNSW_VERSION, ...).  Raise it with the format.  0 = undeclared,
     * which `annlab run` counts as 1.  ann_engine_build records it in
     * build.json as "engine_format" (null when 0), and `annlab run` keeps
     * an index of format N >= 2 in a cache directory of its own and reuses
     * a cached index only if its build.json records the engine's format,
     * so an index of an earlier format is never reused and never deleted
     * (harness/run.c, configs/README.md).  The C++ shims' designated
     * initializers must follow the declaration order.
     */
    uint32_t format_version;
    /* 1: build() takes its graph from ann_build_ctx.graph_import when one
     * is named (the DiskANN engines; `annlab import-graph`); 0: it would
     * ignore it, so the import refuses the engine. */
    int imports_graph;
} ann_engine_ops;

/* The registry: all engines compiled into this binary. */
const ann_engine_ops *ann_engine_find(const char *name);
/* The i-th engine, or NULL past the end. */
const ann_engine_ops *ann_engine_at(size_t i);

/*
 * Build into index_dir atomically: validates params, builds into
 * "<index_dir>.tmp.<pid>-<start>" (engines/core/owner.h: temporaries of
 * dead builders of the same index are removed first, a live one's never),
 * writes build.json (engine, engine_format, params, vector source id, n,
 * dim, metric, wall/CPU seconds, peak RSS, bytes on disk, the engine's
 * report, and "files": the sha256 of every file, engines/core/digest.h),
 * fsyncs, then renames it to index_dir.  Fails with -EEXIST if index_dir
 * exists (also when a sibling renamed its build there first: a transient
 * failure, ann_is_transient).  On failure nothing is left at index_dir and
 * the temporary is removed.  bctx: see ann_build_ctx (NULL = zeroed).
 * *report_out (optional) receives build.json's object (caller decrefs).
 */
int ann_engine_build(const ann_engine_ops *ops, const ann_vecsrc *src, const json_t *params,
                     const char *index_dir, const ann_build_ctx *bctx, json_t **report_out);

/*
 * Open the index in index_dir: validates open_params against
 * ops->open_params (ANN_EPARAM "open.<name>: ..."), then ops->open.
 * *report_out (optional) receives the open report (an object the caller
 * decrefs; see "The open report" above); *out the open index.
 */
int ann_engine_open(const ann_engine_ops *ops, const char *index_dir, const json_t *open_params,
                    ann_engine **out, json_t **report_out);

/*
 * A search context for at most k_max results (0 counts as 1): validates
 * search_params against ops->search_params and every at_least_k parameter
 * against k_max (ANN_EPARAM "search.<name>: ..."), then ops->ctx_new.
 */
int ann_engine_ctx_new(const ann_engine_ops *ops, ann_engine *eng, const json_t *search_params,
                       uint32_t k_max, ann_ctx **out);

/* Total bytes of regular files under dir (recursive). */
int ann_dir_bytes(const char *dir, uint64_t *bytes);
/* Remove dir and everything under it (no error when absent). */
int ann_dir_remove(const char *dir);

#endif
