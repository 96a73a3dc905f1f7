/*
 * metrics.c: recall and latency percentiles.
 *
 * Recall follows big-ann-benchmarks: ties at the k-th true distance count
 * as hits, so an engine is not penalised for returning a different member
 * of a tie than the ground-truth file happened to list.  Unlike big-ann,
 * which trusts the distances in the ground-truth file, this recomputes
 * both sides from the base vectors in float64, so a stale or float32-rounded
 * ground-truth distance cannot turn a tie into a miss.  Duplicate and
 * out-of-range ids are errors: a silent pass would inflate recall.
 */
#include "harness/metrics.h"

#include "engines/core/exact.h"
#include "engines/core/status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void harness_sort_doubles(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
}

double harness_percentile(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    double r = ceil(p / 100.0 * (double)n - 1e-9);
    size_t rank = r < 1 ? 1 : (size_t)r;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

double harness_median(const double *v, size_t n)
{
    if (n == 0)
        return 0;
    double *c = malloc(n * sizeof *c);
    if (!c)
        return NAN;
    memcpy(c, v, n * sizeof *c);
    harness_sort_doubles(c, n);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

int harness_latency_summary(const uint64_t *ns, size_t n, harness_latency *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return 0;
    double *us = malloc(n * sizeof *us);
    if (!us)
        return ann_fail(-ENOMEM, "latency summary: no memory");
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        us[i] = (double)ns[i] / 1000.0;
        sum += us[i];
    }
    harness_sort_doubles(us, n);
    out->p50 = harness_percentile(us, n, 50);
    out->p95 = harness_percentile(us, n, 95);
    out->p99 = harness_percentile(us, n, 99);
    out->p999 = harness_percentile(us, n, 99.9);
    out->mean = sum / (double)n;
    out->max = us[n - 1];
    free(us);
    return 0;
}

int harness_recall(const harness_recall_in *in, harness_recall_out *out, double *per_query)
{
    int rc = 0;
    uint32_t dim = in->base->dim;
    float *row = malloc((size_t)dim * sizeof *row);
    double *rq = malloc((in->nq ? in->nq : 1) * sizeof *rq);
    memset(out, 0, sizeof *out);
    if (!row || !rq) {
        rc = ann_fail(-ENOMEM, "recall: no memory");
        goto out;
    }
    if (in->gt->k < in->k || in->gt->nq < in->nq) {
        rc = ann_fail(ANN_EPARAM, "recall: ground truth is %u x %u, need %u x %u", in->gt->nq,
                      in->gt->k, in->nq, in->k);
        goto out;
    }
    double sum = 0, sum_plain = 0;
    for (uint32_t q = 0; q < in->nq; q++) {
        const float *query = in->queries + (size_t)q * dim;
        const uint32_t *ids = in->ids + (size_t)q * in->k;
        const int32_t *gt = in->gt->ids + (size_t)q * in->gt->k;
        uint32_t cnt = in->counts[q];
        /* the k-th true distance; ground truth shorter than k (k > n) has -1 ids */
        uint32_t kk = in->k;
        while (kk > 0 && gt[kk - 1] < 0)
            kk--;
        double kth = INFINITY;
        if (kk > 0) {
            rc = ann_vecsrc_read(in->base, (uint64_t)gt[kk - 1], 1, row);
            if (rc)
                goto out;
            kth = ann_distance_f64(in->base->metric, query, row, dim);
        }
        /* ties computed in float64 from float32 data agree exactly; allow
         * rounding of the order of one float32 ulp of the distance */
        double tol = fabs(kth) * 1e-6 + 1e-12;
        uint32_t hits = 0, plain = 0;
        for (uint32_t r = 0; r < cnt; r++) {
            uint32_t id = ids[r];
            if ((uint64_t)id >= in->base->n) {
                rc = ann_fail(ANN_EDATA, "query %u rank %u: id %u is out of range (base has %llu vectors)",
                              q, r, id, (unsigned long long)in->base->n);
                goto out;
            }
            for (uint32_t s = 0; s < r; s++)
                if (ids[s] == id) {
                    rc = ann_fail(ANN_EDATA, "query %u rank %u: id %u duplicates rank %u", q, r, id, s);
                    goto out;
                }
            for (uint32_t g = 0; g < kk; g++)
                if ((int64_t)gt[g] == (int64_t)id) {
                    plain++;
                    break;
                }
            rc = ann_vecsrc_read(in->base, id, 1, row);
            if (rc)
                goto out;
            double d = ann_distance_f64(in->base->metric, query, row, dim);
            if (d <= kth + tol)
                hits++;
        }
        rq[q] = (double)hits / in->k;
        sum += rq[q];
        sum_plain += (double)plain / in->k;
    }
    if (in->nq) {
        out->recall = sum / in->nq;
        out->recall_plain = sum_plain / in->nq;
        if (per_query)
            memcpy(per_query, rq, in->nq * sizeof *rq);
        harness_sort_doubles(rq, in->nq);
        out->recall_p5 = harness_percentile(rq, in->nq, 5);
    }
out:
    free(row);
    free(rq);
    return rc;
}
