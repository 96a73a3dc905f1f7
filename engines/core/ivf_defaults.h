/*
 * ivf_defaults.h: the default sizes of IVF-PQ indexes, in one place so
 * ivfpq-record and the FAISS reference build the same shape by default.
 *
 *   nlist    = round(4 * sqrt(n)), at least 1 and at most n (4,000 at 1M)
 *   pq_bytes = the largest divisor of dim not above min(96, dim / 8)
 *              (96 for 768-d and 960-d, 16 for 128-d): PQ sub-quantizers
 *              of 256 centroids need dim % pq_bytes == 0.
 */
#ifndef ANNLAB_CORE_IVF_DEFAULTS_H
#define ANNLAB_CORE_IVF_DEFAULTS_H

#include <math.h>
#include <stdint.h>

static inline uint32_t ann_ivf_default_nlist(uint64_t n)
{
    double v = floor(4.0 * sqrt((double)n) + 0.5);
    if (v > (double)n)
        v = (double)n;
    return v < 1.0 ? 1u : (uint32_t)v;
}

static inline uint32_t ann_pq_default_bytes(uint32_t dim)
{
    uint32_t cap = dim / 8 < 96 ? dim / 8 : 96;
    if (cap < 1)
        cap = 1;
    for (uint32_t m = cap; m > 1; m--)
        if (dim % m == 0)
            return m;
    return 1;
}

#endif
