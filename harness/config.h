/*
 * config.h: experiment configurations: validation and sweep expansion.
 *
 * A config (configs/README.md documents the schema) is checked as a whole
 * before anything runs: every problem is reported with its JSON path
 * ("engines[1].search.L[2]: 0 is out of range [1, 100000]"), so a user fixes
 * them all at once.  Engine parameters are checked against each engine's
 * declared tables (engines/core/params.h).  A valid config expands into an
 * ordered list of cells, deterministically: the same config always gives the
 * same cells in the same order with the same ids.
 */
#ifndef ANNLAB_HARNESS_CONFIG_H
#define ANNLAB_HARNESS_CONFIG_H

#include "engines/core/params.h"
#include "engines/engine.h"

#include <jansson.h>
#include <stdint.h>

/* Problems found while validating, each "path: message". */
typedef struct harness_problems {
    char **msgs;
    int n, cap;
} harness_problems;

/* Append one problem (printf-style).  Out of memory drops the message but
 * still counts it, so validation never passes by accident. */
void harness_problem(harness_problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void harness_problems_fini(harness_problems *p); /* frees messages; accepts a zeroed struct */

/*
 * Check cfg (the parsed config file) against the schema and the engine
 * registry.  Appends every problem to *probs; returns how many were found
 * (0 = valid).  Besides each value on its own: a search parameter that
 * must be at least k (L, ef_search) below k; a sweep, thread, mode or
 * memory cap listed twice (caps compared in bytes, numbers by value); a
 * label used twice or equal to another engine's name; an "exclude" entry
 * naming an engine, label or parameter absent from the config, or
 * matching no cell; and, when everything else is valid, two cells of the
 * expansion that are the same cell (parameters compared with their
 * defaults filled in), named by both JSON paths.  Does not look at the
 * dataset's files (see harness_config_check_dataset).  Thread-safe.
 */
int harness_config_check(const json_t *cfg, harness_problems *probs);

/*
 * Check one engine parameter object (build, open or search) whose values may
 * be sweeps (lists) against an engine's declared table.  path is the JSON
 * path of the object ("engines[0].search"); a bad element of a sweep is
 * named with its index ("engines[0].search.L[2]: ...").  ops is the engine
 * (NULL: none): a {"target_recall": R} value must stand for its effort
 * parameter (harness/tune.h).  Appends problems; returns how many.
 */
int harness_check_engine_params(const json_t *obj, const ann_param_spec *specs, const ann_engine_ops *ops,
                                const char *path, harness_problems *probs);

/*
 * Checks that need the prepared dataset: "k" at most the ground truth depth
 * gt_k, "warmup_queries" against the warm-up file.  Appends problems.
 */
int harness_config_check_dataset(const json_t *cfg, uint32_t gt_k, harness_problems *probs);

/* The smallest memory cap accepted: below it no engine can even load. */
#define HARNESS_MIN_CAP_BYTES (4ll << 20)

/*
 * Parse a memory size: JSON null (uncapped: *bytes = 0), an integer number
 * of bytes, or a string "<number><unit>" with unit B, KiB, MiB, GiB, KB,
 * MB, GB; at least HARNESS_MIN_CAP_BYTES.  Returns 0, or ANN_ECONFIG with
 * the detail message set.
 */
int harness_parse_bytes(const json_t *v, uint64_t *bytes);

/*
 * Expand a valid config into cells: a new JSON array (caller decrefs) of
 * objects {"id", "engine", "label", "build", "open", "search", "mode",
 * "threads", "memory_cap_bytes"} (and "max_cell_seconds" when the entry
 * or the config sets one), in the order engine entry, build sweep,
 * open sweep, search sweep, threads, mode, memory cap (the last varies
 * fastest).  A list value in build/open/search is a sweep: the Cartesian
 * product over keys in sorted order, each list in its given order.  Cells
 * matched by an "exclude" entry are dropped.  "id" is a hash of the cell's
 * identity (see harness_cell_id).  Returns NULL when out of memory.
 */
json_t *harness_config_expand(const json_t *cfg);

/*
 * The identity of a cell: the first 16 hex digits of SHA-256 over the
 * canonical JSON (sorted keys, compact) of {engine, label, build, open,
 * search, mode, threads, memory_cap_bytes, max_cell_seconds}, the last
 * only when set (an unbounded cell's id is what it always was).  out must hold 17 bytes.
 */
void harness_cell_id(const json_t *cell, char out[17]);

/* SHA-256 of the canonical JSON of v, first 16 hex digits (17 bytes). */
void harness_json_hash16(const json_t *v, char out[17]);

/* Config value getters with the schema's defaults applied. */
int64_t harness_cfg_int(const json_t *cfg, const char *key);
double harness_cfg_real(const json_t *cfg, const char *key);
int harness_cfg_bool(const json_t *cfg, const char *key);

#endif
