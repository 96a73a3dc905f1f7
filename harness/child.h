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

/*
 * Build spec: {"engine", "build": {...}, "dataset_dir", "index_dir"}.
 * Builds with ann_engine_build (atomic: nothing is left at index_dir on
 * failure).  Returns the exit code: 0, or 1 with the error on stderr.
 */
int harness_build_main(const char *spec_path);

/*
 * Cell spec: {"cell": {engine, label, build, open, search, mode, threads,
 * memory_cap_bytes, id}, "k", "dataset_dir", "index_dir", "queries" (0 =
 * all), "warmup_queries", "repeats", "qps_min_seconds", "drop_caches",
 * "latency_path", "neighbors_path" (optional)}.  Runs the measurement protocol of DESIGN.md (cold or
 * warm preparation, single-thread latency pass, T-thread QPS pass, recall,
 * memory, device reads, engine stats) and writes one JSON object to
 * out_path atomically (temporary + rename) and the raw per-query latencies
 * to latency_path, the ids each query returned (first pass) to neighbors_path
 * (vecfile.h ground-truth format, ids only, -1 padding).  Returns the exit code: 0 when the cell's figures are
 * written, 1 with the error on stderr (the runner records it as the
 * cell's reason).
 */
int harness_cell_main(const char *spec_path, const char *out_path);

#endif
