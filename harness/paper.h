/*
 * paper.h: table layouts of the source articles, chosen by a config's
 * "tables" field, rendered from a run's cells by `annlab table` before the
 * generic tables (configs/paper/ holds the configs, docs/reproducing.md the
 * mapping from each source table to its config).
 *
 * Layouts:
 *   paper-cohere-effort  index x effort: recall@k, cold and warm p50/p99 (ms),
 *                        warm QPS at the config's largest thread count
 *   paper-cohere-memcap  one block per memory cap: recall@k, median latency
 *                        (ms), QPS, device reads per query, per index
 *   paper-cohere-rss     peak RSS (MiB) of the measured phase per index
 *   paper-cohere-build   build wall time (s), CPU time (s), peak build
 *                        memory (MiB), bytes on disk (MiB) per index
 *   paper-sector         single-thread QPS and recall against L per label,
 *                        thread scaling, build time and peak build memory
 *
 * A figure that was not measured (the cell failed, was skipped or is
 * absent) prints as "-" or the cell's status, never as a number.
 */
#ifndef ANNLAB_HARNESS_PAPER_H
#define ANNLAB_HARNESS_PAPER_H

#include "harness/config.h"

#include <jansson.h>
#include <stdio.h>

/* The layout names, comma-separated, for messages and usage. */
extern const char harness_paper_layout_names[];

/*
 * Validate the config's optional "tables" field: a string naming one of the
 * layouts above.  Appends "tables: ..." problems to *probs; returns how many.
 * Thread-safe.
 */
int harness_paper_check(const json_t *cfg, harness_problems *probs);

/*
 * Render the layout named by cfg's "tables" field from cells (the parsed
 * cells.jsonl, an array of cell objects) as markdown to fp.  Does nothing
 * and returns 0 when cfg is NULL or has no "tables".  Borrows cfg and
 * cells.  Returns 0, or ANN_ECONFIG naming the unknown layout.
 */
int harness_paper_render(const json_t *cfg, const json_t *cells, FILE *fp);

#endif
