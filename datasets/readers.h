/*
 * readers.h: input formats turned into vector sources and ground truth.
 *
 * Every reader yields an ann_vecsrc (vecsrc.h) of float32 rows, read in
 * chunks on demand, so converting a dataset never holds its base in memory,
 * and ground truth as an ann_gt (vecfile.h; ids only: bundle distances are
 * always recomputed from the bundle's own base).  Sources are thread-safe
 * as vecsrc.h requires.  All errors name the file and the field or row.
 *
 *   TEXMEX  .fvecs/.bvecs/.ivecs: each row is int32 dim (little-endian),
 *           then dim float32 / uint8 / int32.  Every row's dim is checked;
 *           the file size must be a whole number of rows.
 *   HDF5    ann-benchmarks layout: datasets train, test (n x dim floats),
 *           neighbors (int32 or int64), optional distances, root attribute
 *           "distance" = euclidean | angular (| dot); optional "type"
 *           (dense), "point_type" (float), "dimension" (= train columns).
 *           String attributes fixed or variable length, ASCII or UTF-8
 *           (h5py writes variable-length UTF-8).  jaccard and hamming sets
 *           are refused by name (ANN_EUNSUPPORTED).
 *   idx     gzipped idx3-ubyte images (MNIST, Fashion-MNIST), uint8.
 *   big-ann .fbin/.u8bin/.i8bin/.ibin go through engines/core/vecfile.h.
 */
#ifndef ANNLAB_DATASETS_READERS_H
#define ANNLAB_DATASETS_READERS_H

#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"

#include <jansson.h>
#include <stdint.h>

/*
 * Open a .fvecs or .bvecs file as a source (uint8 rows become floats).
 * Checks the size is a whole number of rows now, and each row's dim
 * prefix when it is read.  Errors: -errno, ANN_EFORMAT ("<file>: row R
 * has dim D, expected E (from row 0)", "<file>: size S bytes is not a
 * whole number of R-byte rows").  Caller destroys the source.
 */
int ds_texmex_open(const char *path, ann_metric metric, ann_vecsrc **out);

/*
 * Load a .ivecs ground-truth file (rows of k int32 ids), ids checked to
 * lie in [0, n_base) when n_base > 0 (ANN_EDATA "<file>: query Q rank R:
 * id I out of range [0, N)").  gt->dists is NULL.  Caller frees with
 * ann_gt_free.
 */
int ds_ivecs_load_gt(const char *path, uint64_t n_base, ann_gt *gt);

/*
 * Write rows (n x dim elements of elem: F32 -> .fvecs, U8 -> .bvecs,
 * I32 -> .ivecs) atomically (temporary + rename).  For exports and tests.
 */
int ds_texmex_write(const char *path, ann_elem elem, const void *rows, uint64_t n, uint32_t dim);

/* Ground truth from a .ibin or .ivecs file, by extension. */
int ds_gt_load_any(const char *path, uint64_t n_base, ann_gt *gt);

/* A vector source over a file of any supported extension (.fbin .u8bin .i8bin .fvecs .bvecs). */
int ds_vecsrc_open_any(const char *path, ann_metric metric, ann_vecsrc **out);

/* ---- ann-benchmarks HDF5 ------------------------------------------------- */

typedef struct ds_hdf5 ds_hdf5;

/*
 * Open an ann-benchmarks file: checks that train, test and neighbors
 * exist, are two-dimensional, and agree (same dim; neighbors has as many
 * rows as test), and reads the "distance" attribute into *metric (may be
 * NULL).  Errors: ANN_EFORMAT "<file>: no dataset 'test' (an ann-benchmarks
 * file has train, test and neighbors)", "<file>: attribute 'dimension' is D but
 * 'train' has C columns", etc.; ANN_EUNSUPPORTED "<file>: distance 'jaccard' is
 * not supported: ..." for binary sets (also type sparse, point_type bit).
 */
int ds_hdf5_open(const char *path, ds_hdf5 **out, ann_metric *metric);

/*
 * Sources over train and test (owned by h: valid until ds_hdf5_close;
 * do not destroy them).  Rows are read by hyperslab, chunk by chunk.
 */
const ann_vecsrc *ds_hdf5_train(const ds_hdf5 *h);
const ann_vecsrc *ds_hdf5_test(const ds_hdf5 *h);

/* neighbors (int32 or int64) as ground-truth ids, range-checked against train. */
int ds_hdf5_gt(ds_hdf5 *h, ann_gt *gt);

/* Whether the file has a "distances" dataset (kept for the manifest). */
int ds_hdf5_has_distances(const ds_hdf5 *h);

void ds_hdf5_close(ds_hdf5 *h);

/* ---- idx (MNIST layout), gzipped ----------------------------------------- */

/*
 * Inflate a gzipped idx3-ubyte file (magic 0x00000803, big-endian dims
 * n x rows x cols) into memory as uint8 and expose it as a source of
 * n x (rows*cols) floats (the source owns the bytes).  Errors:
 * ANN_EFORMAT naming the file (bad magic, truncated data, trailing bytes).
 */
int ds_idx_open(const char *path_gz, ann_metric metric, ann_vecsrc **out);

#endif
