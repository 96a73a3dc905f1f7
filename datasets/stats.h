/*
 * stats.h: statistics that say how "real" a set of vectors looks.
 *
 * Used to tune and check the synthetic generator against real embeddings,
 * and recorded in a generated bundle's manifest.  All figures are computed
 * on a sample the caller provides (typically 1,000 vectors); cost is
 * O(n^2 dim) for the pairwise figures and O(min(n,dim)^3) for the spectrum.
 *
 *   pair_cos_median   median cosine over all pairs i < j
 *   nn_cos_median     median over i of max_{j != i} cosine(x_i, x_j)
 *   pca_top_frac      fraction of the total variance (vectors centred, not
 *                     normalised) held by the top pca_k principal components
 *   rc_median         relative contrast (He, Kumar, Chang, ICML 2012): per
 *                     point, mean distance to the others / nearest distance;
 *                     median over points.  Near 1 means a hard dataset.
 *   lid_median        local intrinsic dimensionality, MLE of Levina and
 *                     Bickel (NIPS 2004) on the lid_k nearest neighbours;
 *                     median over points.  Higher means harder.
 *   centre_cos_sd,    spread of how central the points are: the standard
 *   centre_cos_p99    deviation and 99th percentile of the cosine between
 *                     each vector and the sample's mean vector.  Points
 *                     nearer the common direction than the rest become
 *                     hubs (Radovanovic, Nanopoulos, Ivanovic, JMLR 2010).
 *   hub_skew          hubness: the skewness of N_hub_k, the number of
 *                     times a point is among the hub_k nearest neighbours
 *                     of the others (within the sample).  0 for no hubs;
 *                     large when a few points are near nearly everyone.
 *
 * Distances for rc and lid are Euclidean (not squared) under the metric:
 * on the raw vectors for L2, on unit-normalised vectors for cosine and IP.
 */
#ifndef ANNLAB_DATASETS_STATS_H
#define ANNLAB_DATASETS_STATS_H

#include "engines/core/vecsrc.h"

#include <jansson.h>
#include <stdint.h>

typedef struct ann_data_stats {
    uint32_t n, dim;
    uint32_t pca_k;   /* components counted in pca_top_frac */
    uint32_t lid_k;   /* neighbours used by the LID estimate */
    uint32_t hub_k;   /* neighbours counted by hub_skew */
    double pair_cos_median;
    double nn_cos_median;
    double pca_top_frac;
    double rc_median;
    double lid_median;
    double centre_cos_sd;
    double centre_cos_p99;
    double hub_skew;
} ann_data_stats;

/*
 * Compute every statistic above on x (n x dim floats, row-major, borrowed,
 * not modified).  pca_k is clamped to min(n, dim); lid_k is 20 and hub_k
 * 10 (each clamped to n - 2).  n must be at least 3.  Allocates O(n^2 + min(n,dim)^2) doubles.
 * Thread-safe (no shared state; BLAS may use its own threads).
 * Errors: ANN_EPARAM (n < 3, dim 0), -ENOMEM, ANN_EINTERNAL (the LAPACK
 * eigensolver failed), ANN_EDATA (a zero vector: its cosine is undefined).
 */
int ann_stats_compute(const float *x, uint32_t n, uint32_t dim, ann_metric metric,
                      uint32_t pca_k, ann_data_stats *out);

/* The figures as a new JSON object (caller owns), or NULL on ENOMEM. */
json_t *ann_stats_to_json(const ann_data_stats *s);

#endif
