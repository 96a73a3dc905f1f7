/*
 * distance.c: L2-squared and inner-product kernels, scalar reference plus
 * AVX2/FMA and AVX-512F variants compiled with target attributes, so the
 * binary runs on any x86-64 and picks the best at start-up (no -march=native).
 * Each SIMD kernel keeps several independent accumulators to hide FMA
 * latency and finishes the tail with a masked (AVX-512) or scalar loop.
 */
#include "engines/core/distance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define ANN_X86 1
#endif

/*
 * One float from a pointer of any alignment.  Vectors are read in place
 * from sector buffers and store values (an LMDB value need not be 4-byte
 * aligned): a plain a[i] there is undefined behaviour (UBSan: "load of
 * misaligned address"), a memcpy is not, and compiles to the same movss.
 */
static inline float ldf(const float *p)
{
    float x;
    memcpy(&x, p, sizeof x);
    return x;
}

float ann_l2sq_scalar(const float *a, const float *b, size_t dim)
{
    float s = 0.0f;
    for (size_t i = 0; i < dim; i++) {
        float d = ldf(a + i) - ldf(b + i);
        s += d * d;
    }
    return s;
}

float ann_ip_scalar(const float *a, const float *b, size_t dim)
{
    float s = 0.0f;
    for (size_t i = 0; i < dim; i++)
        s += ldf(a + i) * ldf(b + i);
    return s;
}

#ifdef ANN_X86
__attribute__((target("avx2,fma"))) static inline float hsum256(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) static float l2sq_avx2(const float *a, const float *b,
                                                           size_t dim)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= dim; i += 32) {
        __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
        __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
        __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
        __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
        s0 = _mm256_fmadd_ps(d0, d0, s0);
        s1 = _mm256_fmadd_ps(d1, d1, s1);
        s2 = _mm256_fmadd_ps(d2, d2, s2);
        s3 = _mm256_fmadd_ps(d3, d3, s3);
    }
    for (; i + 8 <= dim; i += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
        s0 = _mm256_fmadd_ps(d, d, s0);
    }
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < dim; i++) {
        float d = ldf(a + i) - ldf(b + i);
        s += d * d;
    }
    return s;
}

__attribute__((target("avx2,fma"))) static float ip_avx2(const float *a, const float *b,
                                                         size_t dim)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= dim; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= dim; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < dim; i++)
        s += ldf(a + i) * ldf(b + i);
    return s;
}

__attribute__((target("avx512f"))) static float l2sq_avx512(const float *a, const float *b,
                                                            size_t dim)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 64 <= dim; i += 64) {
        __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
        __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
        __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32));
        __m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48));
        s0 = _mm512_fmadd_ps(d0, d0, s0);
        s1 = _mm512_fmadd_ps(d1, d1, s1);
        s2 = _mm512_fmadd_ps(d2, d2, s2);
        s3 = _mm512_fmadd_ps(d3, d3, s3);
    }
    for (; i + 16 <= dim; i += 16) {
        __m512 d = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
        s0 = _mm512_fmadd_ps(d, d, s0);
    }
    if (i < dim) {
        __mmask16 m = (__mmask16)((1u << (dim - i)) - 1);
        __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i));
        s1 = _mm512_fmadd_ps(d, d, s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

__attribute__((target("avx512f"))) static float ip_avx512(const float *a, const float *b,
                                                          size_t dim)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 64 <= dim; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i + 16 <= dim; i += 16)
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    if (i < dim) {
        __mmask16 m = (__mmask16)((1u << (dim - i)) - 1);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}
#endif

static const ann_dist_kernels k_scalar = { "scalar", ann_l2sq_scalar, ann_ip_scalar };
#ifdef ANN_X86
static const ann_dist_kernels k_avx2 = { "avx2", l2sq_avx2, ip_avx2 };
static const ann_dist_kernels k_avx512 = { "avx512", l2sq_avx512, ip_avx512 };
#endif

static const ann_dist_kernels *active = &k_scalar;

const ann_dist_kernels *ann_dist_variant(const char *name)
{
    if (!name)
        return NULL;
    if (!strcmp(name, "scalar"))
        return &k_scalar;
#ifdef ANN_X86
    __builtin_cpu_init();
    if (!strcmp(name, "avx2") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &k_avx2;
    if (!strcmp(name, "avx512") && __builtin_cpu_supports("avx512f"))
        return &k_avx512;
#endif
    return NULL;
}

__attribute__((constructor)) static void dist_init(void)
{
    const ann_dist_kernels *best = ann_dist_variant("avx512");
    if (!best)
        best = ann_dist_variant("avx2");
    if (!best)
        best = &k_scalar;
    const char *force = getenv("ANNLAB_SIMD");
    if (force && *force) {
        const ann_dist_kernels *k = ann_dist_variant(force);
        if (k)
            best = k;
        else
            fprintf(stderr, "annlab: ANNLAB_SIMD=%s is unknown or unsupported here; using %s\n",
                    force, best->name);
    }
    active = best;
}

const ann_dist_kernels *ann_dist_active(void)
{
    return active;
}

float ann_distance(ann_metric metric, const float *a, const float *b, size_t dim)
{
    switch (metric) {
    case ANN_METRIC_L2: return active->l2sq(a, b, dim);
    case ANN_METRIC_IP: return -active->ip(a, b, dim);
    case ANN_METRIC_COSINE: return 1.0f - active->ip(a, b, dim);
    }
    return 0.0f;
}

void ann_normalize(float *v, size_t dim)
{
    double s = 0.0;
    for (size_t i = 0; i < dim; i++)
        s += (double)v[i] * v[i];
    if (s <= 0.0)
        return;
    float inv = (float)(1.0 / __builtin_sqrt(s));
    for (size_t i = 0; i < dim; i++)
        v[i] *= inv;
}
