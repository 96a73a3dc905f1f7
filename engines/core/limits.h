/*
 * limits.h: the bounds every reader of an on-disk header applies to the
 * fields it cannot trust, in one place, so an index one engine (or the
 * shared artifact cache) accepts is never refused by another for being too
 * large, and a corrupt header cannot ask for absurd memory:
 *
 *   ANN_MAX_DIM  2^20   vector dimension: the diskann-sector header, the
 *                       diskann-record, hnsw-record and ivfpq-record metadata
 *                       records, the PQ codebook, the reference peers'
 *                       metadata (engines/core/idxmeta.h), big-ann vector
 *                       files (engines/core/vecfile.h: flat's index, dataset
 *                       bundles) and texmex .fvecs/.bvecs files
 *   ANN_MAX_R    4096   out-degree of a stored Vamana graph: the
 *                       diskann-sector header and the Vamana graph file
 *                       (the build parameter R stops at 512)
 *
 * A 2^20-dimensional float vector is 4 MiB, a diskann-sector node of it
 * spans 1,025 sectors; every size derived from these bounds fits 32 bits.
 */
#ifndef ANNLAB_CORE_LIMITS_H
#define ANNLAB_CORE_LIMITS_H

#define ANN_MAX_DIM (1u << 20)
#define ANN_MAX_R 4096u

#endif
