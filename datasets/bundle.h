/*
 * bundle.h: a prepared dataset, the only thing downstream code reads.
 *
 *   <dir>/base.fbin     n x dim float32 (big-ann; DiskANN .bin compatible)
 *   <dir>/query.fbin    nq x dim float32
 *   <dir>/gt.ibin       uint32 nq, uint32 k, nq*k int32 ids, nq*k float32
 *                       distances (distance.h conventions)
 *   <dir>/warmup.fbin   optional: queries outside the test set
 *   <dir>/manifest.json name, metric (l2|ip|cosine), n, dim, element type,
 *                       nq, gt_k, checksum (sha256 of base.fbin), source
 *                       files with sha256, how it was made, statistics
 *
 * Cosine data is normalised when the bundle is written.  Every file is
 * written to a temporary name and renamed when complete; manifest.json is
 * written last, so a directory without it is not a bundle.
 */
#ifndef ANNLAB_DATASETS_BUNDLE_H
#define ANNLAB_DATASETS_BUNDLE_H

#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"

#include <jansson.h>
#include <stdint.h>

typedef struct ann_bundle {
    char dir[4096];
    char name[256];
    ann_metric metric;
    uint64_t n;        /* base vectors */
    uint32_t dim;
    uint32_t nq;       /* test queries */
    uint32_t gt_k;     /* ground-truth depth */
    uint32_t n_warmup; /* 0 when there is no warmup.fbin */
    char checksum[72]; /* "sha256:<hex>" of base.fbin, from the manifest */
    json_t *manifest;  /* owned */
} ann_bundle;

/*
 * Open the bundle in dir: parse manifest.json and check that base, query,
 * ground truth (and warm-up) files exist with sizes that agree with it.
 * Errors name the file and field: ANN_ENOTFOUND (no manifest: "not a
 * prepared dataset"), ANN_EFORMAT / ANN_ECORRUPT.  Cheap: reads no vectors.
 */
int ann_bundle_open(const char *dir, ann_bundle *b);
void ann_bundle_close(ann_bundle *b);

/* Path of a member file ("base.fbin", ...) into buf. */
void ann_bundle_path(const ann_bundle *b, const char *file, char *buf, size_t len);

/* The base vectors as a streaming source (id = checksum). Caller destroys. */
int ann_bundle_base(const ann_bundle *b, ann_vecsrc **out);

/* Load all test queries (nq x dim, malloc'd, caller frees). */
int ann_bundle_queries(const ann_bundle *b, float **out);
/* Load warm-up queries (malloc'd), *n set; ANN_ENOTFOUND when absent. */
int ann_bundle_warmup(const ann_bundle *b, float **out, uint32_t *n);
/* Load the ground truth, ids range-checked against n. */
int ann_bundle_gt(const ann_bundle *b, ann_gt *gt);

/*
 * Finish a bundle whose member files are already in place in dir (base,
 * query, optional warm-up; ground truth computed here if gt.ibin is
 * absent, k = gt_k, exact, multi-threaded): compute checksums and write
 * manifest.json atomically, last.  extra (borrowed, may be NULL) is merged
 * into the manifest: "source", "made_by", "statistics", ...
 */
int ann_bundle_finish(const char *dir, const char *name, ann_metric metric, uint32_t gt_k,
                      const json_t *extra);

#endif
