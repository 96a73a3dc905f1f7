/*
 * tune.c: target-recall search (tune.h).
 *
 * Recall grows with effort (the engine's effort_param: L, ef_search,
 * nprobe), nearly monotonically: a larger candidate list or more probed
 * lists only adds candidates.  So
 * the smallest effort reaching a target is found by doubling from the
 * smallest sensible value (k, since a list shorter than k cannot return k
 * results) and bisecting the last interval.  The recall is measured on the
 * warm-up queries against their own exact ground truth, never on the test
 * queries, so the measured recall of the cell is an honest out-of-sample
 * figure and may land a little below or above the target.
 */
#include "harness/tune.h"

#include "engines/core/status.h"
#include "harness/metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const ann_param_spec *harness_tune_effort_spec(const ann_engine_ops *ops)
{
    if (!ops || !ops->effort_param)
        return NULL;
    for (const ann_param_spec *s = ops->search_params; s && s->name; s++)
        if (!strcmp(s->name, ops->effort_param))
            return s->type == ANN_PARAM_INT ? s : NULL;
    return NULL;
}

int harness_tune_check(const json_t *v, const char *key, const ann_engine_ops *ops, const char *path,
                       const char *keypath, harness_problems *probs)
{
    int before = probs->n;
    size_t plen = strlen(path);
    const ann_param_spec *effort = harness_tune_effort_spec(ops);
    const json_t *t = json_object_get(v, "target_recall");
    if (plen < 7 || strcmp(path + plen - 7, ".search") != 0)
        harness_problem(probs, "%s: target_recall applies to search parameters only", keypath);
    else if (!effort)
        harness_problem(probs, "%s: target_recall needs an effort parameter, and %s declares none", keypath,
                        ops ? ops->name : "this engine");
    else if (strcmp(key, effort->name))
        harness_problem(probs, "%s: target_recall applies to %s's effort parameter, %s", keypath, ops->name,
                        effort->name);
    if (json_object_size(v) != 1 || !t)
        harness_problem(probs, "%s: expected a number or {\"target_recall\": R}", keypath);
    else if (!json_is_number(t) || json_number_value(t) <= 0 || json_number_value(t) >= 1)
        harness_problem(probs, "%s.target_recall: expected a recall in (0, 1)", keypath);
    return probs->n - before;
}

int harness_tune_target(const json_t *search, const char **param, double *target)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)search, key, v) {
        const json_t *t = json_object_get(v, "target_recall");
        if (json_is_object(v) && json_is_number(t)) {
            *param = key;
            *target = json_number_value(t);
            return 1;
        }
    }
    return 0;
}

/* Recall@k on the warm-up queries with the effort set to e. */
static int evaluate(const harness_tune_in *in, int64_t e, double *recall)
{
    int rc = 0;
    ann_ctx *ctx = NULL;
    json_t *search = json_deep_copy(in->search);
    uint32_t *ids = calloc((size_t)in->nq * in->k + 1, sizeof *ids);
    uint32_t *counts = calloc(in->nq + 1, sizeof *counts);
    float *dists = calloc(in->k + 1, sizeof *dists);
    if (!search || !ids || !counts || !dists) {
        rc = ann_fail(-ENOMEM, "target recall: no memory for %u queries", in->nq);
        goto out;
    }
    json_object_set_new(search, in->param, json_integer(e));
    if ((rc = ann_engine_ctx_new(in->ops, in->eng, search, in->k, &ctx)))
        goto out;
    uint32_t dim = in->base->dim;
    for (uint32_t q = 0; q < in->nq; q++) {
        ann_stats st;
        memset(&st, 0, sizeof st);
        int got = in->ops->search(ctx, in->queries + (size_t)q * dim, in->k, ids + (size_t)q * in->k,
                                  dists, &st);
        if (got < 0) {
            rc = ann_fail_wrap(got, "target recall: warm-up query %u at %s %lld", q, in->param,
                               (long long)e);
            goto out;
        }
        counts[q] = (uint32_t)got > in->k ? in->k : (uint32_t)got;
    }
    harness_recall_in rin = { .base = in->base, .queries = in->queries, .nq = in->nq, .k = in->k,
                              .ids = ids, .counts = counts, .gt = in->gt };
    harness_recall_out rout;
    if ((rc = harness_recall(&rin, &rout, NULL)))
        goto out;
    *recall = rout.recall;
out:
    if (ctx)
        in->ops->ctx_free(ctx);
    json_decref(search);
    free(ids);
    free(counts);
    free(dists);
    return rc;
}

int harness_tune_run(const harness_tune_in *in, int64_t *found, json_t **report)
{
    int rc = 0;
    *report = NULL;
    int64_t lo_bound = (int64_t)in->spec->min, hi_bound = (int64_t)in->spec->max;
    if (lo_bound < (int64_t)in->k)
        lo_bound = in->k; /* fewer candidates than k cannot return k results */
    if (lo_bound > hi_bound)
        lo_bound = hi_bound;
    json_t *evals = json_array();
    double r = 0, r_found = 0;
    /* double from the smallest value until the target is reached, or the
     * recall stops growing (an IVF-PQ index whose every list is probed, a
     * graph that saturates below the target): then the smallest effort with
     * the best recall seen is measured, and the report says so */
    int64_t below = lo_bound - 1, above = -1, e = lo_bound, best_e = lo_bound;
    double best_r = -1;
    int flat = 0;
    for (;;) {
        if ((rc = evaluate(in, e, &r)))
            goto out;
        json_array_append_new(evals, json_pack("[I, f]", (json_int_t)e, r));
        if (r >= in->target) {
            above = e;
            r_found = r;
            break;
        }
        below = e;
        flat = r > best_r + 1e-9 ? 0 : flat + 1;
        if (r > best_r + 1e-9) {
            best_r = r;
            best_e = e;
        }
        if (e >= hi_bound || flat >= 2)
            break;
        e = e * 2 > hi_bound ? hi_bound : e * 2;
    }
    int reached = above >= 0;
    if (!reached) {
        above = best_e;
        r_found = best_r;
    }
    /* bisect (below, above]: recall(below) < target <= recall(above) */
    while (reached && above - below > 1) {
        int64_t mid = below + (above - below) / 2;
        if ((rc = evaluate(in, mid, &r)))
            goto out;
        json_array_append_new(evals, json_pack("[I, f]", (json_int_t)mid, r));
        if (r >= in->target) {
            above = mid;
            r_found = r;
        } else {
            below = mid;
        }
    }
    *found = above;
    *report = json_pack("{s:s, s:f, s:I, s:b, s:f, s:i, s:s, s:O}", "param", in->param, "target",
                        in->target, "found", (json_int_t)above, "reached", reached,
                        "recall_at_found", r_found, "queries", (int)in->nq, "source",
                        "warm-up queries", "evaluations", evals);
    if (!*report)
        rc = ann_fail(-ENOMEM, "target recall: no memory");
out:
    json_decref(evals);
    return rc;
}
