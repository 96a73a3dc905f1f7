/*
 * compare.h: `annlab compare BASE_RUN NEW_RUN`: line up two runs cell by
 * cell and flag regressions past per-figure tolerances (the nightly gate).
 */
#ifndef ANNLAB_HARNESS_COMPARE_H
#define ANNLAB_HARNESS_COMPARE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

typedef struct cmp_options {
    double recall_abs;    /* recall drop tolerated, absolute (default 0.005) */
    double reads_rel;     /* reads/query increase tolerated, relative (0.02) */
    double latency_rel;   /* floor for latency/QPS tolerances, relative (0.30) */
    double spread_factor; /* noisy tolerance = max(floor, factor x measured spread) (3) */
    double rss_rel;       /* peak RSS increase tolerated (0.10) */
    double build_rel;     /* build time increase tolerated (0.50) */
    /*
     * Set by cmp_cli from the runs' machine.json and config.json (defaults
     * 1, NULL): whether latency, QPS and build time may be gated (only
     * between runs on the same machine), why not (printed), and the cells
     * the new run's config expands to (NULL: unknown), so a cell the new
     * config no longer has is reported as dropped, not missing.
     */
    int gate_timings;
    const char *why_not_timed;
    const json_t *new_expansion;
    const char *config_diff; /* "engines[1].search.L: [50,100] -> [50]; ..." or NULL */
} cmp_options;

void cmp_options_default(cmp_options *o);

typedef struct cmp_result {
    int matched, regressions, improvements, missing, added;
    int dropped;        /* base cells the new run's config no longer has (not regressions) */
    int timings_gated;  /* 0: latency, QPS, build time (and peak RSS when one repeat) shown, not judged */
    int rss_gated;
} cmp_result;

/*
 * Compare two lists of cells (JSON arrays of cell objects, as read from
 * cells.jsonl).  Cells are matched by (engine, build, open, search, mode,
 * threads, memory_cap_bytes, k); repeats of one cell are grouped and
 * compared by their medians.  Timings are not judged when either run has
 * one repeat per cell (their noise cannot be measured: recall and reads
 * are still gated) or when o->gate_timings is 0 (recall, reads and peak RSS
 * are); the table and report say why.  table (may be NULL) receives the
 * full per-figure table; report (may be NULL) the compact Markdown report.
 * Returns 0 and fills *res, or a negative code.
 */
int cmp_cells(const json_t *base, const json_t *fresh, const cmp_options *o, const char *base_name,
              const char *new_name, FILE *table, FILE *report, cmp_result *res);

/*
 * The differences between two configs (the key "description" aside), as
 * "path: old -> new" joined by "; " into buf (at most 8, then "and N
 * more").  Returns how many.
 */
int cmp_config_diff(const json_t *a, const json_t *b, char *buf, size_t len);

/*
 * Whether two machine.json describe the same machine: CPU model, packages,
 * cores, hardware threads, SIMD kernels, memory (within 2%), disk model,
 * rotation and filesystem (hostname and kernel may differ).  Returns how
 * many fields differ, naming them into buf ("cpu_model: \"A\" -> \"B\"").
 */
int cmp_machine_diff(const json_t *a, const json_t *b, char *buf, size_t len);

/* Read a run's cells.jsonl (RUN_DIR/cells.jsonl, or a .jsonl path) into a JSON array. */
int cmp_load_cells(const char *run, json_t **out);

/* `annlab compare ...`: argv[0] is "compare".  Returns the exit code:
 * 0 no regression, 1 regression, 2 usage or input error. */
int cmp_cli(int argc, char **argv);

#endif
