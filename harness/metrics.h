/*
 * metrics.h: the figures computed from a measured pass: recall against
 * ground truth and latency percentiles.
 */
#ifndef ANNLAB_HARNESS_METRICS_H
#define ANNLAB_HARNESS_METRICS_H

#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"

#include <stddef.h>
#include <stdint.h>

/* Inputs of harness_recall.  All borrowed. */
typedef struct harness_recall_in {
    const ann_vecsrc *base;   /* base vectors: each returned id's row is read from it */
    const float *queries;     /* nq x base->dim */
    uint32_t nq, k;
    const uint32_t *ids;      /* nq x k returned ids, row-major */
    const uint32_t *counts;   /* nq: how many ids each query returned (<= k) */
    const ann_gt *gt;         /* ground truth, gt->k >= k, gt->nq >= nq */
} harness_recall_in;

typedef struct harness_recall_out {
    double recall;       /* mean tie-aware recall@k (the headline) */
    double recall_plain; /* mean |returned ∩ gt[:k]| / k */
    double recall_p5;    /* 5th percentile (nearest rank) of per-query tie-aware recall */
} harness_recall_out;

/*
 * Recall@k of returned ids against ground truth, by big-ann's rule: the true
 * distance of every returned id is recomputed from the base (float64
 * accumulation) and a returned id is a hit when its distance is at most the
 * true k-th neighbour's distance (also recomputed), so any member of a tie
 * at the k-th distance counts.  per_query (optional, nq doubles) receives
 * each query's tie-aware recall.
 *
 * Errors: ANN_EDATA naming the query and rank for an id >= base->n or an id
 * returned twice for one query; ANN_EPARAM when gt is shallower than k;
 * read errors of base; -ENOMEM.  Thread-safe (reads only).
 */
int harness_recall(const harness_recall_in *in, harness_recall_out *out, double *per_query);

/*
 * The p-th percentile (0 < p <= 100) of n values by the nearest-rank rule:
 * the value of rank ceil(p/100 * n) in ascending order.  sorted must be
 * ascending.  n = 0 gives 0.
 */
double harness_percentile(const double *sorted, size_t n, double p);

/* Latency summary in microseconds. */
typedef struct harness_latency {
    double p50, p95, p99, p999, mean, max;
} harness_latency;

/* Summarise n latencies given in nanoseconds (the array is not modified).
 * Returns 0 or -ENOMEM. */
int harness_latency_summary(const uint64_t *ns, size_t n, harness_latency *out);

/* Sort n doubles ascending in place. */
void harness_sort_doubles(double *v, size_t n);

/* Median of n doubles (sorts a copy); 0 when n = 0. */
double harness_median(const double *v, size_t n);

#endif
