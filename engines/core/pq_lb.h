/*
 * pq_lb.h: lower bounds on PQ (ADC) distances for blocks of 64 codes, from
 * a table quantised to one byte an entry: a filter that lets a scan skip,
 * 64 codes at a time, every code that cannot enter a candidate list,
 * before summing the float table for the few that might.
 *
 * For a table with entries >= 0 (pq_table_nonneg: L2 and cosine), subspace
 * j's entries are stored as q[j][k] = floor((table[j][k] - min_j) / step),
 * never rounded up, with one step for all subspaces (the widest
 * subspace's range over 255).  So for every code c,
 *
 *     base + step * sum_j q[j][c_j]  <=  sum_j table[j][c_j],
 *
 * base = sum_j min_j.  pq_lb_limit turns a list's worst distance into a
 * limit on the byte sums, with room for the float sums' rounding, and
 * pq_lb_block returns the lanes of a block whose sum is within it: every
 * code whose float ADC distance (pq_adc_distance, in any order of
 * summing) does not exceed the bound is among them.  The caller sums the
 * float table for those lanes only and decides on that, so a scan with
 * the filter keeps exactly the codes a scan without it keeps.
 *
 * A block holds 64 codes transposed: row j (64 bytes) holds byte j of the
 * codes of lanes 0..63, lane l's at pq_lb_pos(l) (PQ_LB_BLOCK_BYTES(m)
 * bytes in all).  The byte sums
 * are kept in 16 bits with saturating adds (a saturated sum is still a
 * lower bound).  With AVX-512 VBMI (pq_lb_fast) a block costs about a
 * dozen instructions a subspace for all 64 codes, stopping early once few
 * lanes can be within the limit; the scalar kernel returns the same lanes.
 */
#ifndef ANNLAB_CORE_PQ_LB_H
#define ANNLAB_CORE_PQ_LB_H

#include <stddef.h>
#include <stdint.h>

#define PQ_LB_LANES 64u
#define PQ_LB_MAX_M 1024u /* subspaces pq_lb_build takes at most */
#define PQ_LB_BLOCK_BYTES(m) ((size_t)(m) * PQ_LB_LANES)

/* Where lane l's byte sits in a row of a block: lanes 0-31 in bytes 0-7 of
 * each 16, lanes 32-63 in bytes 8-15 (the halves the AVX-512 kernel widens
 * to 16 bits in place, within each 16 bytes). */
static inline uint32_t pq_lb_pos(uint32_t lane)
{
    const uint32_t l = lane & 31;
    return 16 * (l / 8) + l % 8 + (lane & 32 ? 8 : 0);
}

/* Write an m-byte code into lane `lane` of a block. */
static inline void pq_lb_set_lane(uint8_t *block, uint32_t m, uint32_t lane, const uint8_t *code)
{
    const uint32_t pos = pq_lb_pos(lane);
    for (uint32_t j = 0; j < m; j++)
        block[(size_t)j * PQ_LB_LANES + pos] = code[j];
}

typedef struct pq_lb {
    uint8_t *q; /* m * 256 quantised entries (the caller's buffer), row j at q + j*256 */
    uint32_t m;
    float base; /* sum of every subspace's least entry */
    float step; /* the value of one unit of q */
} pq_lb;

/* Quantise a table of m * 256 entries (m <= PQ_LB_MAX_M), all >= 0, into q
 * (m * 256 bytes) and fill *lb. */
void pq_lb_build(const float *table, uint32_t m, uint8_t *q, pq_lb *lb);
/* The same without AVX-512 (the same bytes; tests compare). */
void pq_lb_build_scalar(const float *table, uint32_t m, uint8_t *q, pq_lb *lb);

/*
 * The largest byte sum a code whose float ADC distance is at most bound
 * can have (every such code's sum is at most this), or -1 when no code's
 * can be (bound below base).  Infinite or huge bounds give 65535, which
 * every lane passes.
 */
int32_t pq_lb_limit(const pq_lb *lb, float bound);

/*
 * The lanes of the block (PQ_LB_BLOCK_BYTES(lb->m) bytes, transposed) that
 * may be within limit: bit i clear only when lane i's byte sum over the
 * first subspaces already exceeds it.  The sums are checked every
 * PQ_LB_CHECK subspaces, and once PQ_LB_FEW lanes or fewer are left the
 * block stops there and returns them (summing the float table for a few
 * codes costs less than the rest of the block).  limit < 0: 0.
 */
#define PQ_LB_CHECK 16u
#define PQ_LB_FEW 8
uint64_t pq_lb_block(const pq_lb *lb, const uint8_t *block, int32_t limit);

/* The same with the portable kernel (the same lanes; tests compare). */
uint64_t pq_lb_block_scalar(const pq_lb *lb, const uint8_t *block, int32_t limit);

/* 1 when pq_lb_block runs the AVX-512 VBMI kernel on this CPU.  The
 * scalar kernel does a table lookup a subspace for every code, as the
 * float scan it would spare does, so callers skip the filter without it. */
int pq_lb_fast(void);

#endif
