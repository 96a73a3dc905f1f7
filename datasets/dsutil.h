/*
 * dsutil.h: helpers shared by the dataset readers, importers and bundle
 * code: a seeded sample of row numbers, sha256 of a file, streaming a
 * vector source into a bundle member with NaN/Inf checks and cosine
 * normalisation, and little-endian decoding.
 */
#ifndef ANNLAB_DATASETS_DSUTIL_H
#define ANNLAB_DATASETS_DSUTIL_H

#include "engines/core/vecsrc.h"

#include <jansson.h>

#include <stdint.h>

/* Rows converted per chunk when streaming (bounded memory: rows x dim floats). */
#define DS_CHUNK_ROWS 4096u

/* splitmix64: the datasets module's one seeded generator. */
uint64_t ds_rng_next(uint64_t *state);

/*
 * Choose count distinct row numbers from [0, n), seeded, returned sorted
 * ascending in out (caller-allocated, count entries).  count <= n.
 * Deterministic for (n, count, seed).  Memory: O(count).
 * Errors: ANN_EPARAM when count > n, -ENOMEM.
 */
int ds_sample_rows(uint64_t n, uint64_t count, uint64_t seed, uint64_t *out);

/*
 * sha256 of a whole file, streamed in 1 MiB reads, as "sha256:<64 hex>"
 * into out (at least 72 bytes).  *bytes (may be NULL) gets the file size.
 * Errors: -errno naming the file; ANN_EFORMAT "<path>: not a regular file
 * (...)" (a device or FIFO is refused, never read); ANN_EINTERNAL when
 * libcrypto fails.
 */
int ds_sha256_file(const char *path, char *out, uint64_t *bytes);

/*
 * Append {"role", "path", "bytes", "sha256"} for the source file path to
 * the JSON array list (a manifest's "sources").  Strings are copied.
 * Errors: as ds_sha256_file (nothing appended then).
 */
int ds_source_entry(json_t *list, const char *role, const char *path);

/*
 * Check rows of floats for NaN/Inf: ANN_EDATA "<what>: row R, component C
 * is NaN" with R counted from first_row.
 */
int ds_check_finite(const char *what, const float *rows, uint64_t count, uint32_t dim,
                    uint64_t first_row);

/* L2 norms of rows as read (before any normalisation), for manifests. */
typedef struct ds_norm_stats {
    uint64_t rows;
    uint64_t zero_rows;
    double min, max, sum;
} ds_norm_stats;

/* Add one row's norm. */
void ds_norm_stats_add(ds_norm_stats *st, const float *row, uint32_t dim);

/* {"rows", "zero_norm_rows", "norm_min", "norm_mean", "norm_max"} (new reference). */
json_t *ds_norm_stats_json(const ds_norm_stats *st);

/*
 * Stream rows [first, first+count) of src into the float32 vector file
 * path (temporary name + rename), checking every value (errors name
 * src_name and the source row) and normalising each row when metric is
 * cosine.  rows may be NULL (all rows in order) or a sorted list of count
 * row numbers to copy (a sample).  stats (may be NULL) receives the rows'
 * norms as read; rows of norm 0 stay zeros under cosine.  On failure
 * nothing is left at path.
 */
typedef struct ds_copy_spec {
    const ann_vecsrc *src;
    const char *src_name; /* for messages: the input file and dataset */
    const char *path;     /* output .fbin */
    ann_metric metric;
    uint64_t first, count;
    const uint64_t *rows; /* NULL, or count sorted row numbers */
    ds_norm_stats *stats; /* may be NULL */
} ds_copy_spec;
int ds_copy_rows(const ds_copy_spec *spec);

/* Big-endian decoding (MNIST idx); little-endian is engines/core/binio.h's
 * ann_get_u32. */
static inline uint32_t ds_be32(const unsigned char *p)
{
    return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

/* "dir/file" into buf; ANN_EPARAM when it does not fit. */
int ds_join(char *buf, size_t len, const char *dir, const char *file);

#endif
