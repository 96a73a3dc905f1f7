/*
 * ivf_defaults.h: the default number of lists of IVF indexes, in one place
 * so ivfpq-record and the FAISS reference build the same shape by default:
 *
 *   nlist = round(4 * sqrt(n)), at least 1 and at most n (4,000 at 1M)
 *
 * (The default PQ size is pq.h's pq_default_bytes: 96 bytes for 768-d.)
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

#endif
