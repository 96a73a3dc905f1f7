/*
 * pq_lb.c: the quantised lower-bound table and its block kernels (pq_lb.h).
 */
#include "engines/core/pq_lb.h"

#include "engines/core/pq.h"

#include <math.h>
#include <pthread.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#if defined(__x86_64__)
/* pq_lb_build's second pass, 16 entries at a time: the same operations on
 * each entry (subtract, divide, multiply, truncate, clamp), so the same
 * bytes as the scalar loop. */
__attribute__((target("avx512f,avx512bw"))) static void
lb_quantise_avx512(const float *table, uint32_t m, const float *least, float step, uint8_t *q)
{
    const __m512 vstep = _mm512_set1_ps(step), shrink = _mm512_set1_ps(1.0f - 0x1p-20f);
    const __m512 cap = _mm512_set1_ps(255.0f);
    for (uint32_t j = 0; j < m; j++) {
        const __m512 lo = _mm512_set1_ps(least[j]);
        for (uint32_t k = 0; k < PQ_KSUB; k += 16) {
            __m512 x = _mm512_loadu_ps(table + (size_t)j * PQ_KSUB + k);
            x = _mm512_mul_ps(_mm512_div_ps(_mm512_sub_ps(x, lo), vstep), shrink);
            x = _mm512_min_ps(x, cap);
            _mm_storeu_si128((__m128i *)(q + (size_t)j * PQ_KSUB + k),
                             _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(x)));
        }
    }
}
#endif

static void lb_build(const float *table, uint32_t m, uint8_t *q, pq_lb *lb, int fast)
{
    float widest = 0.0f, base = 0.0f, least[PQ_LB_MAX_M], most[PQ_LB_MAX_M];
    pq_table_extremes(table, m, least, most);
    for (uint32_t j = 0; j < m; j++) {
        base += least[j];
        widest = most[j] - least[j] > widest ? most[j] - least[j] : widest;
    }
    /* one step for every subspace, so byte sums add like the floats do */
    const float step = widest > 0.0f ? widest / 255.0f : 1.0f;
#if defined(__x86_64__)
    if (fast)
        lb_quantise_avx512(table, m, least, step, q);
    else
#else
    (void)fast;
#endif
        for (uint32_t j = 0; j < m; j++)
            for (uint32_t k = 0; k < PQ_KSUB; k++) {
                /* rounded down, and shrunk by more than the subtraction's
                 * and the division's rounding can add: q never exceeds the
                 * exact (t - lo) / step */
                const float x =
                    (table[(size_t)j * PQ_KSUB + k] - least[j]) / step * (1.0f - 0x1p-20f);
                q[(size_t)j * PQ_KSUB + k] = x >= 255.0f ? 255 : (uint8_t)x;
            }
    lb->q = q;
    lb->m = m;
    lb->base = base;
    lb->step = step;
}

void pq_lb_build(const float *table, uint32_t m, uint8_t *q, pq_lb *lb)
{
    lb_build(table, m, q, lb, pq_lb_fast());
}

void pq_lb_build_scalar(const float *table, uint32_t m, uint8_t *q, pq_lb *lb)
{
    lb_build(table, m, q, lb, 0);
}

int32_t pq_lb_limit(const pq_lb *lb, float bound)
{
    /* A float sum of m terms >= 0 is within (m - 1) * 2^-24 of the exact
     * sum, relatively; the room below is four times that for the bound's
     * distance and for base. */
    const double room = ((double)lb->m + 8.0) * 0x1p-22;
    const double x = ((double)bound * (1.0 + room) - (double)lb->base * (1.0 - room)) / lb->step;
    if (!(x < 65534.0)) /* also NaN: every lane passes */
        return 65535;
    if (x < 0.0)
        return -1;
    return (int32_t)floor(x) + 1;
}

uint64_t pq_lb_block_scalar(const pq_lb *lb, const uint8_t *block, int32_t limit)
{
    if (limit < 0)
        return 0;
    uint32_t s[PQ_LB_LANES] = { 0 };
    uint64_t alive = ~0ull;
    for (uint32_t j = 0; j < lb->m; j++) {
        const uint8_t *t = lb->q + (size_t)j * PQ_KSUB, *c = block + (size_t)j * PQ_LB_LANES;
        for (uint32_t lane = 0; lane < PQ_LB_LANES; lane++)
            s[lane] += t[c[pq_lb_pos(lane)]];
        if ((j & (PQ_LB_CHECK - 1)) == PQ_LB_CHECK - 1 || j + 1 == lb->m) {
            alive = 0;
            for (uint32_t lane = 0; lane < PQ_LB_LANES; lane++)
                alive |= (uint64_t)((int32_t)(s[lane] > 65535 ? 65535 : s[lane]) <= limit) << lane;
            if (__builtin_popcountll(alive) <= PQ_LB_FEW)
                return alive;
        }
    }
    return alive;
}

#if defined(__x86_64__)
/*
 * 64 lanes a subspace: the code bytes index the subspace's 256 entries
 * with two two-register byte permutes (entries 0-127 and 128-255, picked
 * by the code's low seven bits) and a blend on its top bit; the 64 bytes
 * are widened to 16 bits in place (unpacking with zero, lanes laid out by
 * pq_lb_pos) and added with saturation to two accumulators.
 * Every PQ_LB_CHECK subspaces, a block with PQ_LB_FEW lanes or fewer left
 * within the limit stops (pq_lb.h).
 */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static uint64_t
lb_block_vbmi(const pq_lb *lb, const uint8_t *block, int32_t limit)
{
    if (limit < 0)
        return 0;
    const __m512i lim = _mm512_set1_epi16((short)(uint16_t)(limit > 65535 ? 65535 : limit));
    const __m512i zero = _mm512_setzero_si512();
    __m512i acc0 = zero, acc1 = zero; /* lanes 0-31 and 32-63 (pq_lb_pos) */
    const uint32_t m = lb->m;
    for (uint32_t j = 0; j < m; j++) {
        const uint8_t *t = lb->q + (size_t)j * PQ_KSUB;
        const __m512i c = _mm512_loadu_si512(block + (size_t)j * PQ_LB_LANES);
        const __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(t), c,
                                                    _mm512_loadu_si512(t + 64));
        const __m512i hi = _mm512_permutex2var_epi8(_mm512_loadu_si512(t + 128), c,
                                                    _mm512_loadu_si512(t + 192));
        const __m512i v = _mm512_mask_blend_epi8(_mm512_movepi8_mask(c), lo, hi);
        acc0 = _mm512_adds_epu16(acc0, _mm512_unpacklo_epi8(v, zero));
        acc1 = _mm512_adds_epu16(acc1, _mm512_unpackhi_epi8(v, zero));
        if ((j & (PQ_LB_CHECK - 1)) == PQ_LB_CHECK - 1) {
            const uint64_t alive = (uint64_t)_mm512_cmple_epu16_mask(acc0, lim) |
                                   (uint64_t)_mm512_cmple_epu16_mask(acc1, lim) << 32;
            if (__builtin_popcountll(alive) <= PQ_LB_FEW)
                return alive;
        }
    }
    return (uint64_t)_mm512_cmple_epu16_mask(acc0, lim) |
           (uint64_t)_mm512_cmple_epu16_mask(acc1, lim) << 32;
}
#endif

static pthread_once_t lb_once = PTHREAD_ONCE_INIT;
static int lb_vbmi;

static void lb_choose(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    lb_vbmi = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vbmi");
#endif
}

int pq_lb_fast(void)
{
    pthread_once(&lb_once, lb_choose);
    return lb_vbmi;
}

uint64_t pq_lb_block(const pq_lb *lb, const uint8_t *block, int32_t limit)
{
#if defined(__x86_64__)
    if (pq_lb_fast())
        return lb_block_vbmi(lb, block, limit);
#endif
    return pq_lb_block_scalar(lb, block, limit);
}
