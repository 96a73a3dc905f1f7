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
    int sealed;        /* the manifest records its own digest (manifest_sha256) */
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
 * query, optional warm-up, optional gt.ibin), and write manifest.json
 * atomically, last.
 *  - gt.ibin absent: exact ground truth of depth gt_k (0 means 100; capped
 *    at n) is computed (ann_exact_knn, all cores) and saved.
 *  - gt.ibin present (shipped): ids range-checked, rows must match the
 *    queries, then checked on ANN_GT_SAMPLE_DEFAULT seeded queries
 *    (ann_gt_check_sample); gt_k becomes its k.  When the check fails, or
 *    the file has no distances, it is replaced by exact ground truth of
 *    the same k; manifest "gt_check" records the check and the action.
 * sha256 of every member goes to "files", base.fbin's to "checksum".
 * extra (borrowed, may be NULL) is merged into the manifest: "source",
 * "made_by", "statistics", ...; the core fields (name, metric, n, dim,
 * nq, gt_k, n_warmup, checksum, files, gt_check) always win.
 * Not thread-safe for the same dir.  Errors: those of the vector files
 * (naming file and field), ANN_EFORMAT (dim or row-count mismatch between
 * members, empty base or queries), ANN_EDATA (NaN/Inf, ids out of range),
 * -errno.  On failure no manifest is written (members are left for the
 * caller, which owns them).
 */
int ann_bundle_finish(const char *dir, const char *name, ann_metric metric, uint32_t gt_k,
                      const json_t *extra);

/*
 * A tie-aware check of ground truth against exact search on a seeded
 * sample of queries.  A listed id counts as right when its true distance
 * (float64) is <= the true k-th distance + eps (eps = ANN_GT_EPS_REL x
 * max(1, |k-th|)) and it does not repeat in its row; stored distances, when
 * present, must equal the recomputed ones within the same eps.  The check
 * passes when agreement >= ANN_GT_PASS_AGREEMENT and no stored distance
 * disagrees.
 */
#define ANN_GT_EPS_REL 1e-5
#define ANN_GT_PASS_AGREEMENT 0.999
#define ANN_GT_SAMPLE_DEFAULT 100u

typedef struct ann_gt_check {
    uint32_t queries;        /* queries checked */
    uint32_t k;              /* ground-truth depth checked */
    uint64_t seed;           /* sample seed */
    uint64_t checked;        /* ids checked (queries x k) */
    uint64_t agreed;         /* ids within the true top-k, ties included */
    uint64_t plain_agreed;   /* ids in the exact top-k id set (no tie allowance) */
    uint64_t dist_mismatch;  /* stored distances that differ from recomputed */
    double agreement;        /* agreed / checked */
    int pass;
    uint32_t first_bad_query; /* first query with a miss or mismatch (when !pass) */
} ann_gt_check;

/*
 * Check gt against exact search over base for `sample` seeded queries (all
 * when sample >= gt->nq).  queries: gt->nq x base->dim (normalised for
 * cosine).  Reads the whole base once (ann_exact_knn, `threads` threads;
 * <= 0 means all cores) plus one row per listed id.  Returns 0 when the
 * check ran (pass or not: see out->pass), a negative code when it could
 * not (read errors, ids out of range, ENOMEM).
 */
int ann_gt_check_sample(const ann_vecsrc *base, const float *queries, const ann_gt *gt,
                        uint32_t sample, uint64_t seed, int threads, ann_gt_check *out);

/* The check as a JSON object (new reference) for manifests and reports. */
json_t *ann_gt_check_json(const ann_gt_check *c);

/*
 * Verify a bundle: manifest and sizes (ann_bundle_open), sha256 of every
 * member against the manifest, every value finite (the base is read once
 * by the check), ground-truth ids in range and rows sorted by distance, and
 * the ground truth against exact search on `sample` seeded queries.
 * *report (may be NULL) receives a JSON object describing what was checked
 * (new reference, also on failure when the bundle opened).  Returns 0 only
 * when everything holds; ANN_ECORRUPT (naming the file and what differs),
 * or the error of ann_bundle_open, otherwise.
 */
int ann_bundle_verify(const char *dir, uint32_t sample, json_t **report);

#endif
