/*
 * buildinfo.h: reading an index's build.json, the record ann_engine_build
 * writes last into a complete build (engines/engine.h), and deciding
 * whether it is the finished build a cell asks for.  `annlab run` reads
 * it for every cached index and after every build; the fuzz target
 * tests/fuzz/fuzz_buildjson.c feeds it hostile bytes.
 */
#ifndef ANNLAB_HARNESS_BUILDINFO_H
#define ANNLAB_HARNESS_BUILDINFO_H

#include "datasets/bundle.h"

#include <jansson.h>

/*
 * Load and check the build.json at path against the cell's engine and
 * build parameters (params: NULL reads as {}) and the dataset ds.
 * Returns the object (new reference), or NULL with why[] saying what is
 * wrong: unreadable or truncated JSON, or a field that does not describe
 * this index (engine, build parameters, dataset checksum, metric, n, dim).
 * An empty {} is not a build.json.
 */
json_t *harness_build_info_load(const char *path, const char *engine, const json_t *params,
                                const ann_bundle *ds, char *why, size_t len);

/* The same for an index built over the first n_rows rows of ds's base
 * (a workload's first step, harness/workload.h): "n" must be n_rows. */
json_t *harness_build_info_load_n(const char *path, const char *engine, const json_t *params,
                                  const ann_bundle *ds, uint64_t n_rows, char *why, size_t len);

/*
 * The on-disk format of the index whose build.json is info: its
 * "engine_format"; 1 when build.json has none (written before
 * ann_engine_build recorded it, when every engine's format was 1 but
 * ivfpq-record's, whose later formats live in -f<N> directories) or null
 * (an engine that declared none, counted as format 1); -1 when the field
 * is anything else.
 */
long long harness_build_info_format(const json_t *info);

#endif
