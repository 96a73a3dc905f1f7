/*
 * stats.c: realism and difficulty statistics of a vector sample.
 *
 * Cosine figures come from one Gram matrix of the unit-normalised sample
 * (float64 dgemm).  The spectrum is the eigenvalues of the centred sample's
 * smaller Gram matrix (n x n when n <= dim, else the dim x dim covariance:
 * both have the same non-zero eigenvalues), from LAPACK dsyevd as shipped
 * in OpenBLAS.  Relative contrast follows He, Kumar and Chang (ICML 2012)
 * and the intrinsic dimensionality estimate is the MLE of Levina and
 * Bickel (NIPS 2004), both computed within the sample (each point against
 * the n - 1 others), medians over points.
 */
#include "datasets/stats.h"

#include "engines/core/status.h"
#include "engines/core/topk.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK (Fortran ABI, from OpenBLAS): eigenvalues of a symmetric matrix. */
extern void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                    double *w, double *work, const int *lwork, int *iwork, const int *liwork,
                    int *info, size_t jobz_len, size_t uplo_len);

#define STATS_LID_K 20
#define STATS_HUB_K 10

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (reorders v). */
static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Fraction of variance in the top k eigenvalues of the centred sample. */
static int stats_spectrum(const double *xd, uint32_t n, uint32_t dim, uint32_t k, double *out)
{
    int rc = 0;
    double *xc = malloc((size_t)n * dim * sizeof *xc);
    double *mean = calloc(dim, sizeof *mean);
    uint32_t m = n <= dim ? n : dim;
    double *a = malloc((size_t)m * m * sizeof *a);
    double *w = malloc((size_t)m * sizeof *w);
    double *work = NULL;
    int *iwork = NULL;
    if (!xc || !mean || !a || !w) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < dim; d++)
            mean[d] += xd[(size_t)i * dim + d];
    for (uint32_t d = 0; d < dim; d++)
        mean[d] /= n;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < dim; d++)
            xc[(size_t)i * dim + d] = xd[(size_t)i * dim + d] - mean[d];
    if (n <= dim)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)dim, 1.0, xc,
                    (int)dim, xc, (int)dim, 0.0, a, (int)n);
    else
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)dim, (int)dim, (int)n, 1.0, xc,
                    (int)dim, xc, (int)dim, 0.0, a, (int)dim);

    int mi = (int)m, info = 0, lwork = -1, liwork = -1, iwq = 0;
    double wq = 0.0;
    dsyevd_("N", "U", &mi, a, &mi, w, &wq, &lwork, &iwq, &liwork, &info, 1, 1);
    if (info != 0) {
        rc = ann_fail(ANN_EINTERNAL, "stats: dsyevd workspace query failed (info %d)", info);
        goto out;
    }
    lwork = (int)wq;
    liwork = iwq > 1 ? iwq : 1;
    work = malloc((size_t)lwork * sizeof *work);
    iwork = malloc((size_t)liwork * sizeof *iwork);
    if (!work || !iwork) {
        rc = -ENOMEM;
        goto out;
    }
    dsyevd_("N", "U", &mi, a, &mi, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    if (info != 0) {
        rc = ann_fail(ANN_EINTERNAL, "stats: dsyevd failed (info %d)", info);
        goto out;
    }
    /* eigenvalues ascending; tiny negatives are rounding */
    double total = 0.0, top = 0.0;
    for (uint32_t i = 0; i < m; i++)
        total += w[i] > 0 ? w[i] : 0.0;
    for (uint32_t i = 0; i < k && i < m; i++)
        top += w[m - 1 - i] > 0 ? w[m - 1 - i] : 0.0;
    *out = total > 0 ? fmin(1.0, top / total) : 0.0;
out:
    free(xc);
    free(mean);
    free(a);
    free(w);
    free(work);
    free(iwork);
    return rc;
}

/* Spread of centrality: the cosine of each row of v (n x dim) with the
 * rows' mean; its standard deviation and 99th percentile (nearest rank)
 * into out.  m: dim doubles, tmp: n doubles, both scratch. */
static void stats_centre(const double *v, uint32_t n, uint32_t dim, double *m, double *tmp,
                         ann_data_stats *out)
{
    double mnorm = 0.0;
    for (uint32_t d = 0; d < dim; d++)
        m[d] = 0.0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < dim; d++)
            m[d] += v[(size_t)i * dim + d];
    for (uint32_t d = 0; d < dim; d++)
        mnorm += m[d] * m[d];
    mnorm = sqrt(mnorm);
    double sum = 0.0, sq = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        double dot = 0.0, vn = 0.0;
        for (uint32_t d = 0; d < dim; d++) {
            dot += v[(size_t)i * dim + d] * m[d];
            vn += v[(size_t)i * dim + d] * v[(size_t)i * dim + d];
        }
        tmp[i] = mnorm > 0 && vn > 0 ? dot / (mnorm * sqrt(vn)) : 0.0;
        sum += tmp[i];
    }
    double avg = sum / n;
    for (uint32_t i = 0; i < n; i++)
        sq += (tmp[i] - avg) * (tmp[i] - avg);
    out->centre_cos_sd = sqrt(sq / n);
    qsort(tmp, n, sizeof *tmp, cmp_double);
    out->centre_cos_p99 = tmp[(size_t)ceil(0.99 * n) - 1];
}

/* Hubness: the skewness of N_k(j), how many rows i != j have j among their
 * k nearest (squared distances d2(i, j) = sqn[i] + sqn[j] - 2 g[i][j], kept
 * by engines/core/topk.h: ties with the k-th go to the lower index).
 * ids: k, best: k, cnt: n, scratch. */
static double stats_hub_skew(const double *g, const double *sqn, uint32_t n, uint32_t k,
                             uint32_t *ids, float *best, double *cnt)
{
    for (uint32_t j = 0; j < n; j++)
        cnt[j] = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        ann_topk t;
        ann_topk_init(&t, best, ids, k);
        for (uint32_t j = 0; j < n; j++)
            if (j != i)
                ann_topk_push(&t, (float)(sqn[i] + sqn[j] - 2.0 * g[(size_t)i * n + j]), j);
        for (uint32_t m = 0; m < t.n; m++)
            cnt[ids[m]] += 1.0;
    }
    /* the mean of N_k is k exactly */
    double m2 = 0.0, m3 = 0.0;
    for (uint32_t j = 0; j < n; j++) {
        double e = cnt[j] - k;
        m2 += e * e;
        m3 += e * e * e;
    }
    m2 /= n;
    m3 /= n;
    return m2 > 0 ? m3 / pow(m2, 1.5) : 0.0;
}

int ann_stats_compute(const float *x, uint32_t n, uint32_t dim, ann_metric metric,
                      uint32_t pca_k, ann_data_stats *out)
{
    int rc = 0;
    double *xd = NULL, *xn = NULL, *g = NULL, *pairs = NULL, *row = NULL;
    double *nn = NULL, *rcs = NULL, *lids = NULL, *sqn = NULL, *mvec = NULL;
    float *hbest = NULL;
    uint32_t *hids = NULL;
    if (n < 3 || dim == 0)
        return ann_fail(ANN_EPARAM, "stats: need at least 3 vectors of dim >= 1 (got %u x %u)",
                        n, dim);
    size_t npairs = (size_t)n * (n - 1) / 2;
    xd = malloc((size_t)n * dim * sizeof *xd);
    xn = malloc((size_t)n * dim * sizeof *xn);
    g = malloc((size_t)n * n * sizeof *g);
    pairs = malloc(npairs * sizeof *pairs);
    row = malloc((size_t)n * sizeof *row);
    nn = malloc((size_t)n * sizeof *nn);
    rcs = malloc((size_t)n * sizeof *rcs);
    lids = malloc((size_t)n * sizeof *lids);
    sqn = malloc((size_t)n * sizeof *sqn);
    mvec = malloc((size_t)dim * sizeof *mvec);
    hbest = malloc(STATS_HUB_K * sizeof *hbest);
    hids = malloc(STATS_HUB_K * sizeof *hids);
    if (!xd || !xn || !g || !pairs || !row || !nn || !rcs || !lids || !sqn || !mvec || !hbest ||
        !hids) {
        rc = -ENOMEM;
        goto out;
    }
    memset(out, 0, sizeof *out);
    out->n = n;
    out->dim = dim;
    out->pca_k = pca_k < (n < dim ? n : dim) ? pca_k : (n < dim ? n : dim);
    out->lid_k = STATS_LID_K < n - 2 ? STATS_LID_K : n - 2;
    out->hub_k = STATS_HUB_K < n - 2 ? STATS_HUB_K : n - 2;

    for (uint32_t i = 0; i < n; i++) {
        double s = 0.0;
        for (uint32_t d = 0; d < dim; d++) {
            double v = x[(size_t)i * dim + d];
            xd[(size_t)i * dim + d] = v;
            s += v * v;
        }
        if (!(s > 0.0)) {
            rc = ann_fail(ANN_EDATA, "stats: vector %u is zero (cosine undefined)", i);
            goto out;
        }
        double inv = 1.0 / sqrt(s);
        for (uint32_t d = 0; d < dim; d++)
            xn[(size_t)i * dim + d] = xd[(size_t)i * dim + d] * inv;
    }

    /* cosine Gram matrix */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)dim, 1.0, xn,
                (int)dim, xn, (int)dim, 0.0, g, (int)n);
    size_t p = 0;
    for (uint32_t i = 0; i < n; i++) {
        double best = -INFINITY;
        for (uint32_t j = 0; j < n; j++) {
            if (j == i)
                continue;
            double c = g[(size_t)i * n + j];
            if (j > i)
                pairs[p++] = c;
            if (c > best)
                best = c;
        }
        nn[i] = best;
    }
    out->pair_cos_median = median_of(pairs, npairs);
    out->nn_cos_median = median_of(nn, n);

    /* Euclidean distances under the metric: raw vectors for L2 */
    if (metric == ANN_METRIC_L2) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)dim, 1.0, xd,
                    (int)dim, xd, (int)dim, 0.0, g, (int)n);
    }
    for (uint32_t i = 0; i < n; i++)
        sqn[i] = g[(size_t)i * n + i];
    uint32_t nrc = 0, nlid = 0, k = out->lid_k;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t m = 0;
        double sum = 0.0;
        for (uint32_t j = 0; j < n; j++) {
            if (j == i)
                continue;
            double d2 = sqn[i] + sqn[j] - 2.0 * g[(size_t)i * n + j];
            double d = d2 > 0 ? sqrt(d2) : 0.0;
            row[m++] = d;
            sum += d;
        }
        qsort(row, m, sizeof *row, cmp_double);
        if (row[0] > 0)
            rcs[nrc++] = (sum / m) / row[0];
        if (row[0] > 0 && row[k - 1] > 0) {
            double s = 0.0;
            for (uint32_t j = 0; j + 1 < k; j++)
                s += log(row[k - 1] / row[j]);
            if (s > 0)
                lids[nlid++] = (double)(k - 1) / s;
        }
    }
    out->rc_median = nrc ? median_of(rcs, nrc) : 0.0;
    out->lid_median = nlid ? median_of(lids, nlid) : 0.0;
    out->hub_skew = stats_hub_skew(g, sqn, n, out->hub_k, hids, hbest, row);
    stats_centre(metric == ANN_METRIC_L2 ? xd : xn, n, dim, mvec, row, out);

    rc = stats_spectrum(xd, n, dim, out->pca_k, &out->pca_top_frac);
out:
    free(xd);
    free(xn);
    free(g);
    free(pairs);
    free(row);
    free(nn);
    free(rcs);
    free(lids);
    free(sqn);
    free(mvec);
    free(hbest);
    free(hids);
    return rc;
}

json_t *ann_stats_to_json(const ann_data_stats *s)
{
    return json_pack("{s:i, s:i, s:f, s:f, s:i, s:f, s:f, s:i, s:f, s:f, s:f, s:i, s:f}",
                     "sample_n", (json_int_t)s->n, "dim", (json_int_t)s->dim,
                     "pairwise_cosine_median", s->pair_cos_median, "nn_cosine_median",
                     s->nn_cos_median, "pca_k", (json_int_t)s->pca_k,
                     "pca_top_variance_fraction", s->pca_top_frac, "relative_contrast_median",
                     s->rc_median, "lid_k", (json_int_t)s->lid_k, "lid_median", s->lid_median,
                     "centre_cosine_sd", s->centre_cos_sd, "centre_cosine_p99",
                     s->centre_cos_p99, "hub_k", (json_int_t)s->hub_k, "hub_skewness",
                     s->hub_skew);
}
