/*
 * summary.h: the answer a researcher reads first: each engine's figures at
 * a matched recall (0.90, 0.95, 0.99), read off its recall-QPS Pareto
 * frontier, with the ratio to a named baseline engine.  tables.md opens
 * with it (harness/table.c).
 */
#ifndef ANNLAB_HARNESS_SUMMARY_H
#define ANNLAB_HARNESS_SUMMARY_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* One measured setting of an engine (NAN for a figure not measured). */
typedef struct harness_point {
    double recall, qps, p50_us, p99_us, reads, rss_bytes;
} harness_point;

typedef enum harness_at {
    HARNESS_AT_INSIDE, /* the frontier spans the target: figures interpolated */
    HARNESS_AT_BELOW,  /* every point is above the target: the lowest-recall frontier point */
    HARNESS_AT_ABOVE,  /* no point reaches the target: nothing (edge = the best recall) */
    HARNESS_AT_EMPTY,  /* no point with recall and QPS */
} harness_at;

/*
 * The figures of pts (n points) at recall target: the Pareto frontier
 * (points no other point beats on both recall and QPS) sorted by recall,
 * then each figure interpolated linearly in recall between the two
 * frontier points around the target (a point exactly at it is taken as
 * is).  *out receives the figures (recall = target when inside), *edge the
 * recall of the point used when BELOW, the best recall when ABOVE.  pts
 * is not modified.  Thread-safe.
 */
harness_at harness_frontier_at(const harness_point *pts, size_t n, double target, harness_point *out,
                               double *edge);

/* Targets of the summary. */
#define HARNESS_SUMMARY_TARGETS { 0.90, 0.95, 0.99 }

/*
 * Render the summary of a run's cells (finished, uncapped) as markdown:
 * one table per target recall, a row per engine (label) and mode, columns
 * QPS, ratio to baseline, p50, p99, reads per query, peak RSS.  baseline
 * is a label (NULL: the config's "baseline", else the first engine entry
 * of cfg, else the first label met); a baseline with no finished cells is
 * said so under the tables.  k names the recall (recall@k).  Returns 0.
 */
int harness_summary_render(const json_t *cells, const json_t *cfg, const char *baseline, long long k,
                           FILE *fp);

/* Bytes as "812 KiB", "37.2 MiB" or "1.25 GiB" into buf. */
void harness_fmt_bytes(double bytes, char *buf, size_t len);

#endif
