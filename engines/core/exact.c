/*
 * exact.c: exact k-NN by blocked BLAS scoring, for ground truth and the
 * flat engine's batch mode.
 *
 * For a chunk X of the base and all queries Q, S = Q X^T comes from one
 * sgemm.  L2 distances are |q|^2 + |x|^2 - 2 S, which loses precision in
 * float32 for near-equal distances, so each query keeps k + margin
 * candidates from the fast pass and they are re-scored exactly with
 * float64 accumulation before the final top k is taken.
 */
#include "engines/core/exact.h"

#include "engines/core/distance.h"
#include "engines/core/progress.h"
#include "engines/core/status.h"
#include "engines/core/topk.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCORE_BUDGET_FLOATS (32u << 20) /* 128 MiB of scores per chunk */
#define RESCORE_MARGIN 16

double ann_distance_f64(ann_metric metric, const float *a, const float *b, uint32_t dim)
{
    double s = 0.0;
    if (metric == ANN_METRIC_L2) {
        for (uint32_t i = 0; i < dim; i++) {
            double d = (double)a[i] - (double)b[i];
            s += d * d;
        }
        return s;
    }
    for (uint32_t i = 0; i < dim; i++)
        s += (double)a[i] * (double)b[i];
    return metric == ANN_METRIC_IP ? -s : 1.0 - s;
}

typedef struct {
    const float *scores;  /* nq x chunk */
    const float *xnorm;   /* chunk */
    const float *qnorm;   /* nq */
    uint64_t base0;       /* id of the chunk's first row */
    uint32_t chunk, nq;
    ann_metric metric;
    ann_topk *heaps;      /* nq */
    uint32_t q_begin, q_end;
} select_job;

static void *select_run(void *arg)
{
    select_job *j = arg;
    for (uint32_t q = j->q_begin; q < j->q_end; q++) {
        const float *row = j->scores + (size_t)q * j->chunk;
        ann_topk *h = &j->heaps[q];
        for (uint32_t i = 0; i < j->chunk; i++) {
            float d;
            if (j->metric == ANN_METRIC_L2)
                d = j->qnorm[q] + j->xnorm[i] - 2.0f * row[i];
            else if (j->metric == ANN_METRIC_IP)
                d = -row[i];
            else
                d = 1.0f - row[i];
            if (d < ann_topk_bound(h))
                ann_topk_push(h, d, (uint32_t)(j->base0 + i));
        }
    }
    return NULL;
}

typedef struct {
    uint32_t a, b;
    uint32_t id;
    double d;
} rescored;

static int cmp_rescored(const void *x, const void *y)
{
    const rescored *a = x, *b = y;
    if (a->d < b->d)
        return -1;
    if (a->d > b->d)
        return 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

int ann_exact_knn(const ann_vecsrc *base, const float *queries, uint32_t nq, uint32_t k,
                  int threads, int32_t *out_ids, float *out_dists)
{
    return ann_exact_knn_progress(base, queries, nq, k, threads, out_ids, out_dists, NULL);
}

int ann_exact_knn_progress(const ann_vecsrc *base, const float *queries, uint32_t nq, uint32_t k,
                           int threads, int32_t *out_ids, float *out_dists, ann_progress *prog)
{
    int rc = 0;
    const uint32_t dim = base->dim;
    const uint32_t keep = k + RESCORE_MARGIN;
    uint32_t chunk = SCORE_BUDGET_FLOATS / (nq ? nq : 1);
    if (chunk < 256)
        chunk = 256;
    if (chunk > 65536)
        chunk = 65536;
    if (threads <= 0)
        threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1)
        threads = 1;

    float *x = NULL, *scores = NULL, *xnorm = NULL, *qnorm = NULL, *hd = NULL, *row = NULL;
    uint32_t *hi = NULL;
    ann_topk *heaps = NULL;
    rescored *rs = NULL;
    pthread_t *tids = NULL;
    select_job *jobs = NULL;

    x = malloc((size_t)chunk * dim * sizeof(float));
    scores = malloc((size_t)chunk * (nq ? nq : 1) * sizeof(float));
    xnorm = malloc((size_t)chunk * sizeof(float));
    qnorm = malloc((size_t)(nq ? nq : 1) * sizeof(float));
    hd = malloc((size_t)(nq ? nq : 1) * keep * sizeof(float));
    hi = malloc((size_t)(nq ? nq : 1) * keep * sizeof(uint32_t));
    heaps = calloc(nq ? nq : 1, sizeof *heaps);
    rs = malloc(keep * sizeof *rs);
    row = malloc((size_t)dim * sizeof(float));
    tids = calloc((size_t)threads, sizeof *tids);
    jobs = calloc((size_t)threads, sizeof *jobs);
    if (!x || !scores || !xnorm || !qnorm || !hd || !hi || !heaps || !rs || !row || !tids ||
        !jobs) {
        rc = ann_fail(-ENOMEM, "exact search: no memory for %u queries x %u rows", nq, chunk);
        goto out;
    }
    for (uint32_t q = 0; q < nq; q++) {
        qnorm[q] = ann_ip(queries + (size_t)q * dim, queries + (size_t)q * dim, dim);
        ann_topk_init(&heaps[q], hd + (size_t)q * keep, hi + (size_t)q * keep, keep);
    }

    for (uint64_t b0 = 0; b0 < base->n && nq > 0; b0 += chunk) {
        uint32_t c = (uint32_t)(base->n - b0 < chunk ? base->n - b0 : chunk);
        rc = ann_vecsrc_read(base, b0, c, x);
        if (rc)
            goto out;
        for (uint32_t i = 0; i < c; i++)
            xnorm[i] = ann_ip(x + (size_t)i * dim, x + (size_t)i * dim, dim);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)c, (int)dim, 1.0f,
                    queries, (int)dim, x, (int)dim, 0.0f, scores, (int)c);
        uint32_t per = (nq + (uint32_t)threads - 1) / (uint32_t)threads;
        int started = 0;
        for (int t = 0; t < threads; t++) {
            uint32_t qb = (uint32_t)t * per, qe = qb + per > nq ? nq : qb + per;
            if (qb >= qe)
                break;
            jobs[t] = (select_job){ scores, xnorm, qnorm, b0, c, nq, base->metric, heaps, qb, qe };
            if (pthread_create(&tids[t], NULL, select_run, &jobs[t]) != 0) {
                select_run(&jobs[t]);
                tids[t] = 0;
            }
            started++;
        }
        for (int t = 0; t < started; t++)
            if (tids[t])
                pthread_join(tids[t], NULL);
        ann_progress_add(prog, c);
    }

    /* Re-score the kept candidates exactly and take the best k. */
    for (uint32_t q = 0; q < nq; q++) {
        ann_topk *h = &heaps[q];
        uint32_t m = h->n;
        for (uint32_t i = 0; i < m; i++) {
            rc = ann_vecsrc_read(base, h->id[i], 1, row);
            if (rc)
                goto out;
            rs[i].id = h->id[i];
            rs[i].d = ann_distance_f64(base->metric, queries + (size_t)q * dim, row, dim);
        }
        qsort(rs, m, sizeof *rs, cmp_rescored);
        for (uint32_t r = 0; r < k; r++) {
            out_ids[(size_t)q * k + r] = r < m ? (int32_t)rs[r].id : -1;
            out_dists[(size_t)q * k + r] = r < m ? (float)rs[r].d : INFINITY;
        }
    }
out:
    free(x);
    free(scores);
    free(xnorm);
    free(qnorm);
    free(hd);
    free(hi);
    free(heaps);
    free(rs);
    free(row);
    free(tids);
    free(jobs);
    return rc;
}
