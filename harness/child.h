/*
 * child.h: the two programs the runner starts in fresh processes, as hidden
 * subcommands of the annlab binary itself:
 *
 *   annlab build SPEC.json           build one index (cached by the runner)
 *   annlab cell SPEC.json OUT.json   measure one cell, write its figures
 *
 * Running each in its own process is the point: no cell inherits another's
 * page-cache warmth in its heap, its engine caches or its allocator state,
 * and a crash, OOM kill or timeout of one cell cannot take the sweep down.
 */
#ifndef ANNLAB_HARNESS_CHILD_H
#define ANNLAB_HARNESS_CHILD_H

#include <jansson.h>

/*
 * The exit code of a child whose failure may not happen again
 * (ann_is_transient: a full disk, another process in the way, ...): the
 * runner records such a cell as "transient" and `annlab run --resume`
 * runs it again.  EX_TEMPFAIL of sysexits.h.
 */
#define HARNESS_EXIT_TRANSIENT 75

/*
 * Build spec: {"engine", "build": {...}, "dataset_dir", "index_dir"}.
 * Builds with ann_engine_build (atomic: nothing is left at index_dir on
 * failure).  When the environment names ANNLAB_INDEX_LOCK_FD (the
 * runner's lock on the index, inherited), the builder writes itself into
 * the lock file, so a run refused the lock names the process building.
 * Returns the exit code: 0, HARNESS_EXIT_TRANSIENT or 1 with the error on
 * stderr.
 */
int harness_build_main(const char *spec_path);

/*
 * Cell spec: {"cell": {engine, label, build, open, search, mode, threads,
 * memory_cap_bytes, id}, "k", "dataset_dir", "index_dir", "queries" (0 =
 * all), "warmup_queries", "repeats", "qps_min_seconds", "drop_caches",
 * "latency_path", "neighbors_path" (optional)}.  Runs the measurement protocol of docs/protocol.md (cold or
 * warm preparation, single-thread latency pass, T-thread QPS pass, recall,
 * memory, device reads, engine stats) and writes one JSON object to
 * out_path atomically (temporary + rename) and the raw per-query latencies
 * to latency_path, the ids each query returned (first pass) to neighbors_path
 * (vecfile.h ground-truth format, ids only, -1 padding).  Returns the exit
 * code: 0 when the cell's figures are written, HARNESS_EXIT_TRANSIENT or 1
 * with the error on stderr (the runner records it as the cell's reason).
 */
int harness_cell_main(const char *spec_path, const char *out_path);

/*
 * A cell spec with "workload" ({"steps": [...], "writers",
 * "search_during_inserts"}), "workload_gt" (the search steps' ground
 * truth, workload_gt.h), "work_dir" (where the index is copied; removed at
 * the end) and "neighbors_prefix" (optional: each search step's returned
 * ids go to "<prefix>.<step>.ibin"): harness_cell_main hands it here.  Runs the steps on a copy of index_dir (workload_run.c) and writes
 * {"steps": [one object per step], "open_report", "workload"} to out_path
 * atomically.  Returns the exit code as harness_cell_main does.
 */
int harness_workload_cell_main(const json_t *spec, const char *out_path);

#endif
