/*
 * workload.h: streaming workloads: a runbook of insert, delete, search,
 * merge and replace steps that a cell runs through an engine's update
 * calls (engines/engine.h insert / remove / merge) instead of a static
 * sweep.  configs/README.md ("Workloads") documents the config keys.
 *
 * A workload comes in one of two forms, read into the same steps:
 *
 *   "workload": {"steps": [{"op": "insert", "start": 0, "end": 10000},
 *                          {"op": "search"}, {"op": "delete", "start": 0, "end": 2000},
 *                          {"op": "merge"}, {"op": "search"}]}
 *   "workload": {"runbook": "file.yaml", "dataset": "name"}
 *
 * The runbook is big-ann-benchmarks' streaming format (neurips23/streaming),
 * read with libyaml: a mapping from dataset names to a mapping of
 * "max_pts" (optional), "gt_url" (ignored) and steps numbered 1, 2, ...
 * without gaps, each with "operation": insert | delete | search | replace
 * (and annlab's merge); insert and delete take "start" and "end", replace
 * "tags_start", "tags_end", "ids_start", "ids_end" (tag t takes the vector
 * of row ids_start + t - tags_start).  "dataset" picks the runbook's entry
 * (needed when it has several).  A relative runbook path is relative to
 * the config file's directory.  "writers": N (default 1) is how many
 * threads share an insert step; "search_during_inserts": true (default
 * false) runs the cell's `threads` search threads during each insert step
 * too, until its inserts are done (their QPS and latency are recorded
 * beside the inserts').
 *
 * Ids are tags in big-ann's sense: an insert of [start, end) inserts rows
 * start..end-1 of base.fbin under ids equal to the rows; a replace gives a
 * live id another row's vector.  The first step must insert [0, end): the
 * cell's index is built over those vectors; unless "live_build": true
 * (default false): then the index is built over no vectors and every
 * step, the first included, runs through the engine (diskann-record and
 * diskann-resident train PQ and build their first graph on the insert that
 * brings them to 1,024 live vectors: engines/diskann_record/layout.h).
 *
 * An insert step may also take "merge_every": N (JSON or runbook; one
 * writer): the engine's merge is called after every N of its inserts (and
 * after the last ones), each waited for, so that N = 1 merges after every
 * insert; the step records the merges' count and total time beside the
 * inserts' latency, which excludes them.
 */
#ifndef ANNLAB_HARNESS_WORKLOAD_H
#define ANNLAB_HARNESS_WORKLOAD_H

#include "harness/config.h"

#include <jansson.h>
#include <stdint.h>

typedef enum harness_wl_op {
    HARNESS_WL_INSERT = 0,
    HARNESS_WL_DELETE,
    HARNESS_WL_SEARCH,
    HARNESS_WL_MERGE,
    HARNESS_WL_REPLACE,
} harness_wl_op;

/* "insert", "delete", "search", "merge", "replace". */
const char *harness_wl_op_name(harness_wl_op op);

typedef struct harness_wl_step {
    harness_wl_op op;
    uint64_t start, end;         /* insert, delete: ids [start, end); replace: the tags */
    uint64_t ids_start, ids_end; /* replace: the rows the tags take */
    uint64_t merge_every;        /* insert: merge after every this many (0: never) */
    char where[160];             /* "workload.steps[3]" or "<runbook>:<line>: step 4" */
} harness_wl_step;

typedef struct harness_workload {
    harness_wl_step *steps;
    size_t n;
    uint64_t max_pts;  /* the runbook's max_pts; 0 when not given */
    uint32_t writers;  /* threads of an insert step (>= 1) */
    int search_during_inserts; /* insert steps also run the cell's search threads */
    int live_build;    /* the index is built empty; the first step is inserted too */
    char hash[17];     /* harness_json_hash16 of harness_workload_steps_json */
} harness_workload;

/*
 * Read the config's "workload" object wl (borrowed) into *out.  The JSON
 * form is checked key by key ("workload.steps[2].end: missing"); a runbook
 * is read only when config_dir is non-NULL (the directory a relative
 * runbook path is taken from), and its problems name the file and line
 * ("dir/rb.yaml:14: step 3: unknown operation \"upsert\" ...").  Appends
 * every problem to probs; returns how many (0: *out holds the steps, else
 * it is empty).  Ranges are checked by harness_workload_check, which needs
 * the dataset.  *out is freed with harness_workload_fini.
 */
int harness_workload_parse(const json_t *wl, const char *config_dir, harness_workload *out,
                           harness_problems *probs);

/*
 * Check the steps against a dataset of n_base vectors by playing them:
 * the first step inserts [0, end) (unless live_build); ranges lie in the dataset; an insert's
 * ids and rows are not live; a delete's and a replace's ids are live; a
 * replace's rows are not live and as many as its ids; never more vectors
 * live than max_pts; at least k live at every search step (k 0: not
 * checked).  Stops at the first problem (later steps would be judged on a
 * state that never exists).  Returns the problems appended.
 */
int harness_workload_check(const harness_workload *w, uint64_t n_base, uint32_t k,
                           harness_problems *probs);

/* The steps in canonical JSON (a new array: what cell specs carry and what
 * the hash covers; equal for a runbook and its JSON twin). */
json_t *harness_workload_steps_json(const harness_workload *w);

void harness_workload_fini(harness_workload *w); /* accepts a zeroed struct */

/*
 * The live set while steps are played: which row's vector each id holds.
 * harness_wl_apply checks a step against the state and applies it when
 * valid (0), else leaves the state as it was and returns 1 with why[] set.
 */
typedef struct harness_wl_state {
    uint64_t n_base;
    int64_t *row_of_id; /* n_base entries; -1: the id is not live */
    int64_t *id_of_row; /* n_base entries; -1: no live id holds the row */
    uint64_t live;
} harness_wl_state;

int harness_wl_state_init(harness_wl_state *s, uint64_t n_base); /* 0 or -ENOMEM */
void harness_wl_state_fini(harness_wl_state *s);
int harness_wl_apply(harness_wl_state *s, const harness_wl_step *st, char *why, size_t len);

#endif
