/*
 * import.h: turning input files (any reader of readers.h) into a bundle.
 */
#ifndef ANNLAB_DATASETS_IMPORT_H
#define ANNLAB_DATASETS_IMPORT_H

#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"

#include <jansson.h>
#include <stdint.h>

/* Default warm-up: rows sampled from the base when no warm-up file is given. */
#define DS_WARMUP_SEED 7u

/*
 * What to write into a bundle.  Sources and ground truth are borrowed.
 * Warm-up queries come from `warmup` when set, else from `warmup_sample`
 * seeded rows of the base (0: no warm-up file).  When gt is NULL exact
 * ground truth of depth gt_k is computed; when set, its ids are kept, each
 * row re-sorted by the distances recomputed (float64) from the bundle's own
 * base, and checked by ann_bundle_finish.
 */
typedef struct ds_import_spec {
    const char *out_dir;
    const char *name;
    ann_metric metric;
    const ann_vecsrc *base;
    const char *base_name; /* for messages: the input file (and dataset) */
    const ann_vecsrc *query;
    const char *query_name;
    const ann_vecsrc *warmup; /* may be NULL */
    const char *warmup_name;
    uint32_t warmup_sample;
    uint64_t warmup_seed;
    const ann_gt *gt; /* may be NULL */
    const char *gt_name;
    uint32_t gt_k;
    const json_t *extra; /* merged into the manifest (may be NULL) */
    unsigned out_flags;  /* ANN_OUT_FORCE, ANN_OUT_IN_PLACE (engines/core/stagedir.h) */
} ds_import_spec;

/*
 * Write the bundle spec->out_dir (parents created if missing) through a
 * temporary sibling (engines/core/stagedir.h): every member is written,
 * checked and fsynced there, and only then does the new bundle take the
 * name.  An output that exists (anything but an empty directory) is
 * refused unless out_flags has ANN_OUT_FORCE; it is then replaced whole
 * when the new bundle is complete, and left exactly as it was when the
 * import fails (bad input, a full disk, a crash).  On failure nothing of
 * this call is left.
 * Errors: those of the readers (naming the input file and row), ANN_EFORMAT
 * "dim mismatch: ...", ANN_EDATA for NaN/Inf values and ids out of range.
 */
int ds_import_bundle(const ds_import_spec *spec);

/*
 * Files to import: either hdf5 (ann-benchmarks), or base + query (+ gt, +
 * warmup) in TEXMEX or big-ann formats, chosen by extension.
 */
typedef struct ds_import_files {
    const char *out_dir;
    const char *name;       /* default: the output directory's last component */
    const char *hdf5;
    const char *base, *query, *gt, *warmup;
    int metric_set;         /* metric given by the user; required unless hdf5 (whose attribute says) */
    ann_metric metric;
    uint32_t warmup_sample; /* when no warm-up file */
    uint32_t gt_k;          /* when there is no ground truth to import */
    uint64_t expect_n;      /* when > 0, the base must have this many rows (registry) */
    uint32_t expect_dim;    /* when > 0, and this dim */
    const json_t *extra;
    unsigned out_flags;     /* as ds_import_spec's */
} ds_import_files;

/* Open the files (each must be a regular file), record their sha256 in the
 * manifest's "source", import (ds_import_bundle).  An existing output is
 * refused before any input is read, unless forced. */
int ds_import_from_files(const ds_import_files *f);

/* mkdir -p; 0 or -errno naming the path. */
int ds_mkdir_p(const char *path);

#endif
