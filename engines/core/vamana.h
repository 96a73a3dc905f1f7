/*
 * vamana.h: the Vamana graph of DiskANN (Subramanya et al., "DiskANN: Fast
 * Accurate Billion-point Nearest Neighbor Search on a Single Node",
 * NeurIPS 2019): build, in-memory greedy search, invariant checker, and a
 * contiguous on-disk form.  One graph feeds both DiskANN layouts (sector
 * file and kv records), so the engines are compared on the same graph.
 *
 * Memory: the graph is one uint32 array of n * stride neighbour slots plus
 * one uint32 degree per node; no per-node allocation.  During a build the
 * stride is ceil(slack * R) (the back-edge slack, default 1.3 R) and the
 * finished graph is compacted in place to stride R.
 *
 * Graph file (`*.vamana`), little-endian:
 *     0  char[8]  magic "ANNVAMG\0"
 *     8  u32      version (1)
 *    12  u32      R (max degree = stride of the adjacency array)
 *    16  u64      n (nodes)
 *    24  u32      entry (medoid id)
 *    28  u32      dim of the vectors it was built on (informational)
 *    32  u32      L_build
 *    36  f32      alpha
 *    40  u64      seed
 *    48  u32[n]   degree of each node
 *        u32[n*R] neighbour ids, node v at slot v*R; unused slots 0xFFFFFFFF
 *   end  u32      crc32 (zlib) of every byte before it
 * Version history: 1 (initial).
 */
#ifndef ANNLAB_CORE_VAMANA_H
#define ANNLAB_CORE_VAMANA_H

#include "engines/core/vecsrc.h"

#include <stddef.h>
#include <stdint.h>

#define VAMANA_FILE_VERSION 1u
/* The graph file header's fields (the diagram above; magic, version and
 * the crc trailer are its binio framing, engines/core/binio.h). */
#define VAMANA_HEADER_BYTES 48
#define VAMANA_OFF_R 12
#define VAMANA_OFF_N 16
#define VAMANA_OFF_ENTRY 24
#define VAMANA_OFF_DIM 28
#define VAMANA_OFF_L_BUILD 32
#define VAMANA_OFF_ALPHA 36
#define VAMANA_OFF_SEED 40
#define VAMANA_NO_ID 0xFFFFFFFFu
#define VAMANA_DEFAULT_SLACK 1.3f /* back-edge slack of Microsoft DiskANN */
#define VAMANA_PREC_F32 0
#define VAMANA_PREC_F16 1
#define VAMANA_PREC_I8 2

typedef struct vamana_params {
    uint32_t R;        /* max out-degree (default 64) */
    uint32_t L_build;  /* search list size while building (default 100), >= R recommended */
    float alpha;       /* RobustPrune distance factor of the last pass (default 1.2) */
    uint32_t passes;   /* 1: one pass with alpha (Microsoft DiskANN's current build);
                          2: alpha = 1 then alpha (the paper) (default 1) */
    float slack;       /* back-edges may grow a node to ceil(slack*R) before it is
                          re-pruned to R (default 1.3) */
    uint64_t seed;     /* insertion order (default 1) */
    int file_order;    /* 1: insert points in id order, as a database loads documents
                          (the seed then orders nothing); 0: a seeded shuffle (default) */
    int saturate;      /* 1: after RobustPrune, fill each list up to R with the nearest
                          candidates alpha dropped, as Microsoft DiskANN's one-shot disk
                          build does (saturate_graph; every node then has degree R when its
                          pool holds R others); 0: no fill (default) */
    int prune_expanded; /* 1: an insert prunes only the nodes its search expanded and
                          replaces the node's list, as Microsoft DiskANN's link() does;
                          0: it prunes those and the node's current neighbours (the
                          back-edges it already holds), as the paper's RobustPrune(p,
                          V u N_out(p)) (default) */
    int threads;       /* <= 0: all online cores (default 0) */
    int build_f16;     /* build distances on copies of the rows (default VAMANA_PREC_I8):
                          VAMANA_PREC_F32 (0): the float32 rows;
                          VAMANA_PREC_F16 (1): half-precision copies (half the memory
                          traffic; n * dim * 2 bytes more memory; float32 is kept when a
                          value is outside the half range);
                          VAMANA_PREC_I8 (2): int8 codes with one step for all dimensions
                          (engines/core/i8.h; a quarter of the traffic, n * dim bytes more;
                          L2 and cosine, on a CPU with AVX-512 VNNI; inner product, rows
                          it cannot code well (i8.h) or another CPU fall back to half
                          precision; vamana_build_stats.precision_used says which) */
} vamana_params;

void vamana_params_default(vamana_params *p);

/* "f32", "f16" or "i8" for a VAMANA_PREC_* value. */
const char *vamana_precision_name(int precision);

typedef struct vamana_graph {
    uint64_t n;        /* nodes, ids in [0, n) */
    uint32_t R;        /* max degree */
    uint32_t stride;   /* slots per node in adj (R once built) */
    uint32_t entry;    /* search entry point (the medoid) */
    uint32_t dim;      /* dimension of the vectors (informational) */
    uint32_t L_build;  /* build parameters, recorded in the file */
    float alpha;
    uint64_t seed;
    uint32_t *degree;  /* n degrees */
    uint32_t *adj;     /* n * stride ids; node v's neighbours at adj + v*stride */
} vamana_graph;

/* Neighbour list of node v (degree in *deg). */
static inline const uint32_t *vamana_neighbors(const vamana_graph *g, uint32_t v, uint32_t *deg)
{
    *deg = g->degree[v];
    return g->adj + (size_t)v * g->stride;
}

/*
 * An empty graph of n nodes (degree 0) with stride slots per node.
 * Errors: ANN_EPARAM (n == 0, n >= 2^32 - 1, stride == 0), -ENOMEM.
 */
int vamana_graph_create(uint64_t n, uint32_t R, uint32_t stride, vamana_graph **out);

/* Free a graph (NULL is fine). */
void vamana_graph_destroy(vamana_graph *g);

/* Seconds spent per phase of a build (wall clock). */
typedef struct vamana_build_stats {
    double load_s;      /* reading the source into memory (vamana_build only) */
    double medoid_s;    /* centroid and medoid */
    double graph_s;     /* all insertion passes */
    double finalize_s;  /* final prune to R and compaction */
    uint64_t dist_evals;/* full-precision distances computed */
    uint64_t prune_dist_evals; /* of which inside RobustPrune */
    uint64_t reprunes;  /* back-edge overflows that re-pruned a node */
    int half_precision; /* 1: distances were computed on half-precision rows */
    int precision_used; /* VAMANA_PREC_*: the rows the distances were computed on */
    double i8_noise;    /* VAMANA_PREC_I8 asked: the codes' noise share (ann_i8_rows_make; over
                           ANN_I8_MAX_NOISE: half precision instead), or -1 when not computed */
} vamana_build_stats;

/*
 * Build the graph over vectors (n rows of dim floats, row-major, caller-
 * owned, unchanged): entry = the point nearest the centroid (the medoid
 * rule of DiskANN), then `passes` passes over all points in a seeded
 * random order, each point: greedy search from the entry with L_build,
 * RobustPrune(alpha) of the visited set to R, then back-edges to each new
 * neighbour, which is re-pruned to R only when it would exceed
 * ceil(slack*R).  Last, every node above R is pruned to R.
 * Multi-threaded with striped locks; with threads == 1 the graph is a
 * deterministic function of (vectors, params).
 * stats may be NULL.  *out owned by the caller.
 * Errors: ANN_EPARAM (R == 0, L_build == 0, alpha < 1, passes not 1 or 2,
 * slack < 1, n == 0 or n >= 2^32 - 1), -ENOMEM, ANN_EINTERNAL (the built
 * graph failed vamana_check: a bug, with the checker's message).
 */
int vamana_build_from_memory(const float *vectors, uint64_t n, uint32_t dim, ann_metric metric,
                             const vamana_params *p, vamana_graph **out,
                             vamana_build_stats *stats);

/*
 * Read src whole into one contiguous array and build over it.  When
 * out_vectors is not NULL the array is handed to the caller (free());
 * otherwise it is freed.  Errors: as above, plus read errors of src.
 */
int vamana_build(const ann_vecsrc *src, const vamana_params *p, vamana_graph **out,
                 float **out_vectors, vamana_build_stats *stats);

/* The medoid: id of the vector nearest (by metric) to the mean vector. */
uint32_t vamana_medoid(const float *vectors, uint64_t n, uint32_t dim, ann_metric metric,
                       int threads);

/*
 * Check graph invariants: every degree <= max_degree (pass g->R), no
 * self-loops, every id < n, no duplicate neighbours of a node, entry < n,
 * and every node reachable from the entry (BFS).  label names the graph in
 * messages (a file path, or "graph").  Returns 0 or ANN_ECORRUPT with a
 * message naming the node, e.g. "index/graph.vamana: node 17: self-loop".
 * Errors also: -ENOMEM (BFS queue).  Thread-safe on a graph not being built.
 */
int vamana_check(const vamana_graph *g, uint32_t max_degree, const char *label);

/* Slots a node may fill with back-edges before it is re-pruned to R:
 * ceil(slack * R) (the 1.3 R rule with VAMANA_DEFAULT_SLACK). */
uint32_t vamana_slack_degree(uint32_t R, float slack);

/*
 * RobustPrune (Algorithm 2) over a pool the caller holds, for indexes
 * whose vectors are not one array in memory (diskann-record's merge reads
 * them from records): candidate i has its vector at rows + i*dim and its
 * squared L2 distance to the point being pruned in dist[i]; candidates
 * must be distinct and exclude the point itself.  Writes up to R chosen
 * candidate positions (indices into the pool, nearest first) to out and
 * returns how many (only the 750 nearest are considered, the build's
 * cap).  The same rule and code as the build.
 * Allocates scratch; -ENOMEM on failure.  Thread-safe.
 */
int vamana_prune_rows(const float *rows, uint32_t dim, const float *dist, uint32_t np,
                      float alpha, uint32_t R, uint32_t *out);

/* Per-thread search scratch: a candidate list and a visited map. */
typedef struct vamana_searcher vamana_searcher;

/* Per-query counters of vamana_search. */
typedef struct vamana_search_stats {
    uint32_t hops;       /* nodes expanded */
    uint32_t dist_evals; /* distances computed */
} vamana_search_stats;

/*
 * A searcher over g and its vectors (n rows of dim floats, as built), for
 * any L <= L_max.  g and vectors are borrowed and must outlive it.
 * Errors: ANN_EPARAM (L_max == 0), -ENOMEM.
 */
int vamana_searcher_create(const vamana_graph *g, const float *vectors, uint32_t dim,
                           ann_metric metric, uint32_t L_max, vamana_searcher **out);
void vamana_searcher_destroy(vamana_searcher *s);

/*
 * Greedy search (Algorithm 1 of the paper) from the entry with list size L
 * (clamped to [k, L_max]); writes the best min(k, reachable) ids and
 * distances, sorted ascending, and returns that count (>= 0).  Neighbour
 * vectors are prefetched before their distances are computed.  Allocates
 * nothing.  Not thread-safe on one searcher; many searchers may share g.
 * stats may be NULL.
 */
int vamana_search(vamana_searcher *s, const float *query, uint32_t k, uint32_t L,
                  uint32_t *out_ids, float *out_dists, vamana_search_stats *stats);

/*
 * Write g to path atomically (path.tmp.<pid>, fsync, rename); the graph
 * must be compacted (stride == R, as every built or loaded graph is).
 * Errors: ANN_ESTATE (stride != R), -errno naming the file.
 */
int vamana_graph_save(const vamana_graph *g, const char *path);

/*
 * Read a graph file and verify it: magic (ANN_EFORMAT), version
 * (ANN_EVERSION), size against n and R (ANN_EFORMAT), crc32 and
 * vamana_check (ANN_ECORRUPT, naming the file and node).  *out owned by
 * the caller.
 */
int vamana_graph_load(const char *path, vamana_graph **out);

#endif
