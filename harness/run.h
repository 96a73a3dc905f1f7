/*
 * run.h: the `annlab` subcommands of the harness.
 *
 *   annlab run CONFIG.json [--out DIR] [--resume | --retry-failed] [--wait]
 *              [--only ENGINE] [--dry-run]
 *   annlab table RUN_DIR [--baseline LABEL]
 *   annlab plot RUN_DIR [--recall-axis linear|log|logit]
 *
 * Each takes argv with argv[0] = the subcommand name and returns the
 * process exit code: 0 success, 1 failure, 2 bad usage or invalid config
 * (nothing was run), or a lock held by another run (the run directory, or
 * an index it must build: the holder is named; --wait waits instead), 130
 * interrupted (the run is resumable).
 */
#ifndef ANNLAB_HARNESS_RUN_H
#define ANNLAB_HARNESS_RUN_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>

/*
 * `annlab run`: validate the config (every problem with its JSON path, exit
 * 2 before any work), prepare the dataset when it is a registry name not yet
 * prepared, expand the sweep into cells, build each distinct index once in a
 * child process (cached under index_root by a hash of engine, build
 * parameters and dataset checksum), run every cell in a fresh child process
 * and append its record to cells.jsonl (one write + fsync per line), then
 * write tables.md and figures.  --dry-run stops after validation and prints
 * the cells.  Environment: ANNLAB_CELL_WRAPPER, when set,
 * is a program the cell children run under (`$ANNLAB_CELL_WRAPPER annlab
 * cell SPEC OUT`, e.g. a script calling perf or numactl).
 */
int harness_run_main(int argc, char **argv);

/* `annlab table RUN_DIR`: write RUN_DIR/tables.md and print it. */
int harness_table_main(int argc, char **argv);

/* `annlab plot RUN_DIR`: write gnuplot figures (PNG and SVG) into RUN_DIR. */
int harness_plot_main(int argc, char **argv);

/* `annlab import-graph ENGINE DATASET_DIR DISK_INDEX INDEX_DIR`: a DiskANN
 * index on the graph of a Microsoft DiskANN disk index (harness/import.c). */
int harness_import_main(int argc, char **argv);
/* `annlab export-graph DATASET_DIR GRAPH.vamana OUT_disk.index`: the other way. */
int harness_export_graph_main(int argc, char **argv);

/*
 * Read RUN_DIR/cells.jsonl into a new array (caller decrefs).  A torn last
 * line (no newline: the writer was killed mid-line) is ignored; any other
 * unparsable line is ANN_ECORRUPT naming the file and line.  A cell
 * recorded more than once (a transient failure retried by --resume) is
 * given by its last record, in the place of its first.
 */
/* Readers of cells.jsonl records: the string at key k ("" when absent), and
 * the number at "k1" or "k1.k2" (NAN when absent or null). */
static inline const char *harness_jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static inline double harness_jnum(const json_t *o, const char *k1, const char *k2)
{
    const json_t *v = json_object_get(o, k1);
    if (k2)
        v = json_object_get(v, k2);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

int harness_cells_load(const char *run_dir, json_t **cells);

/* Keep the last record of each cell id in cells, in the place of its
 * first record (in place; records without an id are kept as they are). */
void harness_cells_latest(json_t *cells);

/*
 * What a build took from the shared artifact cache (engines/core/artifacts.h)
 * instead of computing it, from build.json's object (info): a new array of
 * "pq" and/or "graph" (empty when nothing); its build time leaves that work
 * out.  Reads engine_report.{pq,graph}_cached and, as diskann-sector
 * reports them, engine_report.phases.{pq,graph}_cached.
 */
json_t *harness_reused_artifacts(const json_t *info);

/* Render the tables of a run (markdown) to fp.  Returns 0 or a code. */
int harness_tables_render(const char *run_dir, FILE *fp);

/* The same with the summary's baseline engine named (a label; NULL: the
 * config's "baseline", else its first engine). */
int harness_tables_render_opts(const char *run_dir, const char *baseline, FILE *fp);

/* Write the figures of a run; *made receives how many figures were written. */
int harness_plots_render(const char *run_dir, int *made);

/* The same with the recall axis "linear" (NULL), "log" (1 - recall on a
 * log scale) or "logit"; ANN_EPARAM for another name. */
int harness_plots_render_axis(const char *run_dir, const char *axis, int *made);

/* How `annlab plot` draws a run's figures. */
typedef struct harness_plot_opts {
    const char *recall_axis;       /* "linear" (NULL), "log", "logit" */
    const char *const *templates;  /* --template files: each replaces the repository's
                                      template of the figure kind it declares */
    size_t n_templates;
} harness_plot_opts;

/*
 * Write the figures of a run, each through its gnuplot template (plots/ in
 * the repository, found by plots/README.md above the executable, else in
 * the current directory; $ANNLAB_PLOTS_DIR overrides; plots/README.md says
 * what a template reads).  Every template is read and its
 * "# annlab figure: KIND" line checked before anything is written:
 * a missing or unreadable file is its -errno, a template without that line
 * or of another kind than the file it stands for ANN_EFORMAT, two for one
 * kind or one for a figure the run does not draw ANN_EPARAM, each naming
 * the file.  A figure whose template gnuplot rejects is not written (its
 * previous files stay) and the error names the template.  *made receives
 * how many figures were written.
 */
int harness_plots_render_opts(const char *run_dir, const harness_plot_opts *o, int *made);

#endif
