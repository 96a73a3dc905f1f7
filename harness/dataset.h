/*
 * dataset.h: the harness's view of a prepared dataset bundle
 * (datasets/bundle.h describes the directory).
 *
 * The harness needs a bundle's identity (name, metric, sizes, checksum) and
 * its query, warm-up and ground-truth files; the base vectors are read only
 * row by row, for recall.  This wraps that minimal access so cells and the
 * runner share one reader.
 */
#ifndef ANNLAB_HARNESS_DATASET_H
#define ANNLAB_HARNESS_DATASET_H

#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"

#include <stdint.h>

typedef struct harness_dataset {
    char dir[4096];
    char name[256];
    ann_metric metric;
    uint64_t n;
    uint32_t dim, nq, gt_k, n_warmup;
    char checksum[80];
} harness_dataset;

/*
 * Read dir/manifest.json and check the member files against it.  Errors:
 * ANN_ENOTFOUND "<dir>: not a prepared dataset (no manifest.json)",
 * ANN_EFORMAT naming manifest.json and the field, or a member file whose
 * header disagrees with the manifest.
 */
int harness_dataset_open(const char *dir, harness_dataset *ds);

/* Load nq x dim test queries (malloc'd; caller frees). */
int harness_dataset_queries(const harness_dataset *ds, float **out);
/* Load up to max warm-up queries (malloc'd); *n = 0 and *out = NULL when
 * the bundle has none. */
int harness_dataset_warmup(const harness_dataset *ds, uint32_t max, float **out, uint32_t *n);
/* Load the ground truth (ids range-checked against n). */
int harness_dataset_gt(const harness_dataset *ds, ann_gt *gt);
/* The base vectors as a row source (caller destroys). */
int harness_dataset_base(const harness_dataset *ds, ann_vecsrc **out);

#endif
