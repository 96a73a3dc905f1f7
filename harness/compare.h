/*
 * compare.h: `annlab compare BASE_RUN NEW_RUN`: line up two runs cell by
 * cell and flag regressions past per-figure tolerances (the nightly gate).
 */
#ifndef ANNLAB_HARNESS_COMPARE_H
#define ANNLAB_HARNESS_COMPARE_H

#include <jansson.h>
#include <stdio.h>

typedef struct cmp_options {
    double recall_abs;    /* recall drop tolerated, absolute (default 0.005) */
    double reads_rel;     /* reads/query increase tolerated, relative (0.02) */
    double latency_rel;   /* floor for latency/QPS tolerances, relative (0.30) */
    double spread_factor; /* noisy tolerance = max(floor, factor x measured spread) (3) */
    double rss_rel;       /* peak RSS increase tolerated (0.10) */
    double build_rel;     /* build time increase tolerated (0.50) */
} cmp_options;

void cmp_options_default(cmp_options *o);

typedef struct cmp_result {
    int matched, regressions, improvements, missing, added;
} cmp_result;

/*
 * Compare two lists of cells (JSON arrays of cell objects, as read from
 * cells.jsonl).  Cells are matched by (engine, build, open, search, mode,
 * threads, memory_cap_bytes, k); repeats of one cell are grouped and
 * compared by their medians.  table (may be NULL) receives the full
 * per-figure table; report (may be NULL) the compact Markdown report.
 * Returns 0 and fills *res, or a negative code.
 */
int cmp_cells(const json_t *base, const json_t *fresh, const cmp_options *o, const char *base_name,
              const char *new_name, FILE *table, FILE *report, cmp_result *res);

/* Read a run's cells.jsonl (RUN_DIR/cells.jsonl, or a .jsonl path) into a JSON array. */
int cmp_load_cells(const char *run, json_t **out);

/* `annlab compare ...`: argv[0] is "compare".  Returns the exit code:
 * 0 no regression, 1 regression, 2 usage or input error. */
int cmp_cli(int argc, char **argv);

#endif
