/*
 * export.h: `annlab export RUN_DIR --format F [--out DIR]`: a run's cells as
 * the result files other benchmark tools read, so their plotting and
 * tables take our runs beside theirs.
 *
 *   ann-benchmarks  one HDF5 file per cell, as ann_benchmarks/results.py
 *                   store_results writes it: OUT/results/<dataset>/<k>/<algo>/
 *                   <parameters>.hdf5 with attributes algo, name, dataset,
 *                   distance, count, batch_mode, best_search_time (seconds
 *                   per query, the best repeat's mean), candidates, run_count,
 *                   build_time (s), index_size (kB: peak RSS of the measured
 *                   phase), dist_comps (total over run_count passes), and
 *                   datasets times (seconds, float32), neighbors (int32, -1
 *                   padding), distances (float32, ann-benchmarks' own metric:
 *                   Euclidean distance, or 1 - cos for angular).  Cold cells
 *                   are the algorithm "<label>-cold".
 *   big-ann         OUT/<run name>.csv: one row per cell with big-ann-
 *                   benchmarks' data_export columns algorithm, parameters,
 *                   dataset, count, qps, distcomps, build, indexsize,
 *                   mean_ssd_ios, mean_latency (microseconds), recall.
 *   vectordbbench   OUT/result_<YYYYMMDD>_<run name>_annlab.json, a
 *                   VectorDBBench TestResult: one case result per cell with
 *                   metrics qps, serial_latency_p99 (seconds), recall (plain
 *                   id-set, VectorDBBench's rule), ndcg, load_duration (the
 *                   build), under db "test" with the engine as db_label.
 *
 * Exports need the run's per-query results (neighbors/<cell id>.ibin,
 * written since 2026-12) and, for ann-benchmarks and VectorDBBench, the
 * dataset bundle named in machine.json (true distances, ground truth).
 */
#ifndef ANNLAB_HARNESS_EXPORT_H
#define ANNLAB_HARNESS_EXPORT_H

#include <stdio.h>

typedef enum harness_export_format {
    HARNESS_EXPORT_ANN_BENCHMARKS,
    HARNESS_EXPORT_BIG_ANN,
    HARNESS_EXPORT_VECTORDBBENCH,
} harness_export_format;

/* "ann-benchmarks" | "big-ann" | "vectordbbench" -> *fmt; -1 when unknown. */
int harness_export_format_parse(const char *name, harness_export_format *fmt);

/*
 * Export the finished uncapped cells of run_dir into out_dir (created).
 * Every file is written atomically (temporary + rename).  log (may be
 * NULL) receives one line per file written.  *files receives how many.
 * Errors: ANN_ENOTFOUND "<run>: not a run directory (no cells.jsonl)",
 * "<run>: no finished cell to export"; ANN_EDATA naming a cell without the
 * per-query results a format needs; the bundle's and libhdf5's errors.
 */
int harness_export(const char *run_dir, harness_export_format fmt, const char *out_dir, FILE *log,
                   int *files);

/* `annlab export ...`: argv[0] is "export".  Exit 0, 1 failure, 2 usage. */
int harness_export_main(int argc, char **argv);

#endif
