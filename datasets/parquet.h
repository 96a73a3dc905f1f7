/*
 * parquet.h: VectorDBBench parquet datasets, through the Node converter.
 *
 * Debian has no C parquet reader, so datasets/node/parquet2fbin.mjs (Node,
 * npm packages hyparquet and hyparquet-compressors, installed by `make
 * deps`) turns the files into big-ann files; this module finds the
 * converter, runs it as a child process, and makes the result a bundle.
 *
 * VectorDBBench layout: shuffle_train.parquet or train.parquet (`id`,
 * `emb` list<float>), test.parquet (`id`, `emb`), neighbors.parquet (`id`
 * of a test row, `neighbors_id` list of train ids).  Train ids are mapped
 * to row positions (the shuffled file is permuted); base_ids.i64bin and
 * query_ids.i64bin (uint32 n, uint32 1, n int64 ids) stay in the bundle
 * as the id -> row maps.
 */
#ifndef ANNLAB_DATASETS_PARQUET_H
#define ANNLAB_DATASETS_PARQUET_H

#include "engines/core/vecsrc.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ann_parquet_files {
    const char *train;     /* base vectors; NULL only for a neighbours-only check */
    const char *test;      /* queries */
    const char *neighbors; /* ground truth as train ids; NULL: computed exactly */
} ann_parquet_files;

/*
 * Sort paths into train / test / neighbors by file name: a name containing
 * "neighbors" is the ground truth, else "test" the queries, else "train"
 * the base.  Borrowed pointers into files[].  Errors: ANN_EPARAM naming the
 * path that fits no role or repeats one.
 */
int ann_parquet_classify(const char *const *files, size_t nfiles, ann_parquet_files *out);

typedef struct ann_parquet_opts {
    uint32_t window_rows;  /* rows per read window (0: the converter's default, 1024) */
    uint32_t gt_k;         /* keep the first gt_k neighbours (0: all; every row must agree) */
    int own_offset_index;  /* build page indexes from page headers and check them */
} ann_parquet_opts;

/*
 * Run the converter on f into out_dir (created if needed): base.fbin,
 * base_ids.i64bin, query.fbin, query_ids.i64bin, gt.ibin (ids only) for
 * whichever inputs are given; cosine rows are normalised.  With only
 * f->neighbors, the file is checked and summarised, nothing is written.
 * o may be NULL.  *summary (may be NULL) receives the converter's JSON
 * summary (new reference).  The converter is found through
 * $ANNLAB_NODE_DIR, else datasets/node above the running executable, else
 * ./datasets/node.  Errors: ANN_EUNSUPPORTED (no node, or npm packages not
 * installed: "run make deps"), ANN_EFORMAT with the converter's message
 * (naming file, row and field) on bad input, -errno when the child cannot
 * be run.  On failure the converter leaves no output file behind.
 */
int ann_parquet_convert(const ann_parquet_files *f, const char *out_dir, ann_metric metric,
                        const ann_parquet_opts *o, json_t **summary);

/*
 * `annlab dataset import *.parquet`: classify files, convert into out_dir
 * and finish the bundle (ann_bundle_finish: shipped ground truth checked
 * against exact search on a sample, distances added; computed when there
 * is no neighbors file).  name NULL: the last component of out_dir.  The
 * manifest records the source files with sha256 and the converter summary.
 * Parquet carries no metric, so metric must be given.  gt_k 0: all
 * shipped neighbours (100 when computed).  The bundle is written into a
 * temporary sibling that takes the name when complete
 * (engines/core/stagedir.h): an existing out_dir is refused unless
 * out_flags has ANN_OUT_FORCE, and left as it was on failure.  Inputs
 * must be regular files.
 */
int ann_import_parquet(const char *const *files, size_t nfiles, const char *out_dir,
                       const char *name, ann_metric metric, uint32_t gt_k, unsigned out_flags);

#endif
