/*
 * vecsrc.h: the vectors an engine builds from, and the metric.
 *
 * Engines never see dataset formats: a build reads the base vectors through
 * an ann_vecsrc, in chunks, so a 1M x 960 base is never required in memory
 * at once (an engine may still choose to hold it, e.g. for a graph build).
 * Cosine data is normalised when a bundle is prepared, so engines treat
 * ANN_METRIC_COSINE exactly as inner product on unit vectors.
 */
#ifndef ANNLAB_CORE_VECSRC_H
#define ANNLAB_CORE_VECSRC_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ANN_METRIC_L2 = 0,     /* distance = squared Euclidean */
    ANN_METRIC_IP = 1,     /* distance = -<a,b> */
    ANN_METRIC_COSINE = 2, /* distance = 1 - <a,b> on unit vectors */
} ann_metric;

/* "l2" | "ip" | "cosine"; NULL for an invalid value. */
const char *ann_metric_name(ann_metric m);
/* Parse a metric name (also accepts "euclidean" and "angular"). 0 or ANN_EPARAM. */
int ann_metric_parse(const char *name, ann_metric *out);

typedef struct ann_vecsrc ann_vecsrc;

struct ann_vecsrc {
    uint64_t n;        /* number of vectors */
    uint32_t dim;      /* dimensions */
    ann_metric metric; /* how distances are computed */
    char id[80];       /* identity for build caches (dataset checksum or name) */
    /*
     * Copy vectors [first, first+count) as float32 into out (count*dim
     * floats).  Thread-safe: several build threads may read at once.
     * Returns 0, or a negative code with the detail message set.
     */
    int (*read)(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out);
    /*
     * Optional, NULL when the source has no float32 rows of its own to lend
     * (converted or generated data): point *out at rows [first,
     * first+count) as read-only float32, without copying; valid until the
     * source is destroyed.  The rows are checked as read() checks them.
     * Thread-safe.  Returns 0, or a negative code with the detail set.
     * Use it through ann_vecsrc_view / ann_vecsrc_hold, which fall back to
     * read() when it is NULL.
     */
    int (*rows)(const ann_vecsrc *src, uint64_t first, uint64_t count, const float **out);
    void (*destroy)(ann_vecsrc *src);
    void *impl;
};

/* Read through src->read (convenience). */
static inline int ann_vecsrc_read(const ann_vecsrc *src, uint64_t first, uint64_t count,
                                  float *out)
{
    return src->read(src, first, count, out);
}

/*
 * Rows [first, first+count) as float32 for reading: through src->rows when
 * the source has it (*out points into the source, buf is untouched), else
 * read into buf (count*dim floats, caller-owned; *out = buf).
 */
int ann_vecsrc_view(const ann_vecsrc *src, uint64_t first, uint64_t count, float *buf,
                    const float **out);

/*
 * Every row of a source at once, for builds that need random access to
 * the whole base (a graph build): x points into the source when it lends
 * rows (a mapped .fbin, caller memory: no second copy, `copy` NULL), or
 * into a copy read on `threads` threads (<= 0: all cores) that
 * ann_vecsrc_unhold frees.  Errors: read errors of src, -ENOMEM.
 */
typedef struct ann_vecsrc_held {
    const float *x; /* n * dim floats, row-major */
    float *copy;    /* the copy x points into, or NULL when the source lends its rows */
} ann_vecsrc_held;

int ann_vecsrc_hold(const ann_vecsrc *src, int threads, ann_vecsrc_held *out);

/* src read whole into a new array (n x dim floats, caller frees), in
 * chunks on `threads` threads.  Errors: read errors of src, -ENOMEM. */
int ann_vecsrc_read_all(const ann_vecsrc *src, int threads, float **out);
void ann_vecsrc_unhold(ann_vecsrc_held *h);

/*
 * A source over caller-owned memory (n*dim floats, row-major); the memory
 * must outlive the source.  For tests and for in-memory pipelines.
 */
int ann_vecsrc_from_memory(const float *data, uint64_t n, uint32_t dim, ann_metric metric,
                           ann_vecsrc **out);

/*
 * A source over a big-ann vector file (.fbin, .u8bin, .i8bin; see
 * vecfile.h).  A .fbin is also mapped read-only and lends its rows
 * (src->rows); .u8bin/.i8bin rows need conversion, so those sources have
 * no rows hook and are only read (copied).  A failed mapping leaves the
 * source without the hook (reads still work).
 */
int ann_vecsrc_open_file(const char *path, ann_metric metric, ann_vecsrc **out);

/* Destroy a source (NULL is fine). */
void ann_vecsrc_destroy(ann_vecsrc *src);

#endif
