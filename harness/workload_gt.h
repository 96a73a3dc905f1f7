/*
 * workload_gt.h: exact ground truth of a workload's search steps.
 */
#ifndef ANNLAB_HARNESS_WORKLOAD_GT_H
#define ANNLAB_HARNESS_WORKLOAD_GT_H

#include "datasets/bundle.h"
#include "engines/core/vecfile.h"
#include "harness/workload.h"

#include <stddef.h>
#include <stdint.h>

/* How many search steps w has. */
size_t harness_workload_search_steps(const harness_workload *w);

/*
 * The exact top-k of each of nq queries over the vectors live at each
 * search step of w (played from the start, harness_wl_apply), by the
 * blocked exact search of engines/core/exact.h.  *out receives nq rows per
 * search step, in step order, with distances; ids are rows of base (the
 * vector an id holds at that step).  Holds the whole base in memory.
 * Errors: ANN_ECONFIG naming the step when fewer than k vectors are live
 * (or the steps are invalid), read errors of base, -ENOMEM.
 * *out is freed with ann_gt_free, also on failure.
 */
int harness_workload_gt_compute(const harness_workload *w, const ann_vecsrc *base,
                                const float *queries, uint32_t nq, uint32_t k, ann_gt *out);

/*
 * The ground truth of w over the first nq test queries of ds at depth k,
 * from the cache beside the bundle (<bundle>/workload-gt/, keyed by the
 * steps' hash; workload_gt.c describes the files) when it is there and
 * whole, else computed and written there atomically.  path (len bytes)
 * receives the .ibin's path; *computed whether it was computed now.
 * A stale or corrupt cache is recomputed (saying why on stderr).
 */
int harness_workload_gt_ensure(const harness_workload *w, const ann_bundle *ds, uint32_t nq,
                               uint32_t k, char *path, size_t len, int *computed);

#endif
