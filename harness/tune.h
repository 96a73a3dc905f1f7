/*
 * tune.h: target-recall search.  An engine's effort parameter (its
 * ann_engine_ops.effort_param: L, ef_search, nprobe) may be given as
 * {"target_recall": 0.95} instead of a number: the
 * cell then finds the smallest effort whose recall@k on the warm-up queries
 * (never the test queries) reaches the target, by doubling and bisection,
 * and measures that effort as an ordinary cell, recording what it found.
 */
#ifndef ANNLAB_HARNESS_TUNE_H
#define ANNLAB_HARNESS_TUNE_H

#include "engines/core/params.h"
#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"
#include "engines/engine.h"
#include "harness/config.h"

#include <jansson.h>
#include <stdint.h>

/* The declaration of the parameter a target recall tunes: ops's
 * effort_param among its search_params, an integer; NULL when ops is NULL,
 * declares none, or declares it wrongly. */
const ann_param_spec *harness_tune_effort_spec(const ann_engine_ops *ops);

/*
 * Check one search parameter value that is an object ({"target_recall":
 * x}): the parameter is the engine's effort parameter (ops->effort_param,
 * a declared integer; ops NULL: no engine, none), the object holds
 * target_recall only, 0 < x < 1, and it is a search parameter (path ends
 * in ".search").  keypath names it in problems ("engines[0].search.L").
 * Returns how many problems it added.
 */
int harness_tune_check(const json_t *v, const char *key, const ann_engine_ops *ops, const char *path,
                       const char *keypath, harness_problems *probs);

/*
 * The target of a cell's search parameters, if any: *param (borrowed from
 * search) and *target set, returns 1; 0 when no parameter is a target.
 */
int harness_tune_target(const json_t *search, const char **param, double *target);

typedef struct harness_tune_in {
    const ann_engine_ops *ops;
    ann_engine *eng;
    const json_t *search;       /* the cell's search parameters (one is the target) */
    const char *param;          /* the effort parameter tuned (ops->effort_param) */
    double target;              /* recall@k to reach, tie-aware */
    const ann_param_spec *spec; /* its declaration: the range searched is [max(min, k), max] */
    uint32_t k;
    const float *queries;       /* warm-up queries, nq x dim */
    uint32_t nq;
    const ann_gt *gt;           /* their exact ground truth (depth >= k) */
    const ann_vecsrc *base;     /* for tie-aware recall */
} harness_tune_in;

/*
 * Find the smallest effort reaching the target: from max(min, k), double
 * until the recall reaches it, then bisect between the last value below
 * and the first at or above.  Doubling stops short when the recall stops
 * growing for two doublings or at the declared maximum: the target is then
 * not reached, and the smallest effort with the best recall seen is taken.  Each
 * evaluation creates a context with the effort set, searches every
 * warm-up query, and frees the context (engines whose contexts share
 * state, like FAISS's HNSW, see one at a time).  *found receives the
 * effort, *report a
 * new object {"param", "target", "found", "reached", "recall_at_found",
 * "queries", "source": "warm-up queries", "evaluations": [[effort, recall],
 * ...]}.  Returns 0, or the engine's or recall's error.
 */
int harness_tune_run(const harness_tune_in *in, int64_t *found, json_t **report);

#endif
