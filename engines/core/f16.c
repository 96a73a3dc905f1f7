/*
 * f16.c: half-precision conversion and distance kernels (see f16.h).  The
 * SIMD kernels widen 16 (AVX-512F vcvtph2ps) or 8 (F16C) halves to floats
 * per step and accumulate in four independent float32 registers; tails
 * go through the scalar conversion.
 */
#include "engines/core/f16.h"

#include "engines/core/distance.h"
#include "engines/core/status.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#if defined(__FLT16_MANT_DIG__)
/* The compiler's _Float16 (GCC on x86-64, clang 15 and later). */
static inline float half_to_float(ann_f16 h)
{
    _Float16 f;
    memcpy(&f, &h, sizeof f);
    return (float)f;
}

static inline ann_f16 float_to_half(float v)
{
    _Float16 f = (_Float16)v;
    ann_f16 h;
    memcpy(&h, &f, sizeof h);
    return h;
}
#else
/*
 * Without _Float16 (clang 14 on x86-64, which `make fuzz` uses): the IEEE
 * binary16 conversions by hand, round to nearest even, the same bits as
 * the compiler's.  Callers pass finite values within +-ANN_F16_MAX.
 */
static inline float half_to_float(ann_f16 h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                man <<= 1;
                e++;
            } while (!(man & 0x400u));
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline ann_f16 float_to_half(float v)
{
    uint32_t x;
    memcpy(&x, &v, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
    uint32_t man = x & 0x7fffffu;
    if (((x >> 23) & 0xffu) == 0xffu) /* inf or NaN */
        return (ann_f16)(sign | 0x7c00u | (man ? 0x200u : 0));
    if (exp >= 31)
        return (ann_f16)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (ann_f16)sign; /* rounds to zero */
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1)))
            half++;
        return (ann_f16)(sign | half);
    }
    uint32_t half = (uint32_t)exp << 10 | man >> 13, rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1)))
        half++; /* a carry into the exponent is the right result, up to inf */
    return (ann_f16)(sign | half);
}
#endif

float ann_f16_to_f32(ann_f16 h)
{
    return half_to_float(h);
}

int ann_f16_from_f32(const float *in, size_t count, ann_f16 *out)
{
    for (size_t i = 0; i < count; i++) {
        float v = in[i];
        if (!(fabsf(v) <= ANN_F16_MAX))
            return ann_fail(ANN_EDATA, "element %zu (%g) is outside the half-precision range",
                            i, (double)v);
        out[i] = float_to_half(v);
    }
    return 0;
}

float ann_f16_l2sq_scalar(const ann_f16 *a, const ann_f16 *b, size_t dim)
{
    float s = 0;
    for (size_t i = 0; i < dim; i++) {
        float d = ann_f16_to_f32(a[i]) - ann_f16_to_f32(b[i]);
        s += d * d;
    }
    return s;
}

float ann_f16_ip_scalar(const ann_f16 *a, const ann_f16 *b, size_t dim)
{
    float s = 0;
    for (size_t i = 0; i < dim; i++)
        s += ann_f16_to_f32(a[i]) * ann_f16_to_f32(b[i]);
    return s;
}

void ann_f16_widen(const ann_f16 *a, size_t count, float *out)
{
    for (size_t i = 0; i < count; i++)
        out[i] = half_to_float(a[i]);
}

float ann_f16_l2sq_mixed_scalar(const float *a, const ann_f16 *b, size_t dim)
{
    float s = 0;
    for (size_t i = 0; i < dim; i++) {
        float d = a[i] - ann_f16_to_f32(b[i]);
        s += d * d;
    }
    return s;
}

float ann_f16_ip_mixed_scalar(const float *a, const ann_f16 *b, size_t dim)
{
    float s = 0;
    for (size_t i = 0; i < dim; i++)
        s += a[i] * ann_f16_to_f32(b[i]);
    return s;
}

#if defined(__x86_64__)
#define LOAD512(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define LOAD256(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))

/*
 * The kernel bodies, once per width: LOADA widens a's 16 (8) values or loads
 * them as float32 (the mixed kernels), so a kernel and its mixed twin do the
 * same operations in the same order; TAIL is the matching scalar kernel.
 */
#define F16_L2SQ_512(LOADA, TAIL)                                                              \
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();                                 \
    __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();                                 \
    size_t i = 0;                                                                              \
    for (; i + 64 <= dim; i += 64) {                                                           \
        __m512 d0 = _mm512_sub_ps(LOADA(a + i), LOAD512(b + i));                               \
        __m512 d1 = _mm512_sub_ps(LOADA(a + i + 16), LOAD512(b + i + 16));                     \
        __m512 d2 = _mm512_sub_ps(LOADA(a + i + 32), LOAD512(b + i + 32));                     \
        __m512 d3 = _mm512_sub_ps(LOADA(a + i + 48), LOAD512(b + i + 48));                     \
        s0 = _mm512_fmadd_ps(d0, d0, s0);                                                      \
        s1 = _mm512_fmadd_ps(d1, d1, s1);                                                      \
        s2 = _mm512_fmadd_ps(d2, d2, s2);                                                      \
        s3 = _mm512_fmadd_ps(d3, d3, s3);                                                      \
    }                                                                                          \
    for (; i + 16 <= dim; i += 16) {                                                           \
        __m512 d = _mm512_sub_ps(LOADA(a + i), LOAD512(b + i));                                \
        s0 = _mm512_fmadd_ps(d, d, s0);                                                        \
    }                                                                                          \
    float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3))); \
    return s + TAIL(a + i, b + i, dim - i)

#define F16_IP_512(LOADA, TAIL)                                                                \
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();                                 \
    __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();                                 \
    size_t i = 0;                                                                              \
    for (; i + 64 <= dim; i += 64) {                                                           \
        s0 = _mm512_fmadd_ps(LOADA(a + i), LOAD512(b + i), s0);                                \
        s1 = _mm512_fmadd_ps(LOADA(a + i + 16), LOAD512(b + i + 16), s1);                      \
        s2 = _mm512_fmadd_ps(LOADA(a + i + 32), LOAD512(b + i + 32), s2);                      \
        s3 = _mm512_fmadd_ps(LOADA(a + i + 48), LOAD512(b + i + 48), s3);                      \
    }                                                                                          \
    for (; i + 16 <= dim; i += 16)                                                             \
        s0 = _mm512_fmadd_ps(LOADA(a + i), LOAD512(b + i), s0);                                \
    float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3))); \
    return s + TAIL(a + i, b + i, dim - i)

#define F16_L2SQ_256(LOADA, TAIL)                                                              \
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();                                 \
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();                                 \
    size_t i = 0;                                                                              \
    for (; i + 32 <= dim; i += 32) {                                                           \
        __m256 d0 = _mm256_sub_ps(LOADA(a + i), LOAD256(b + i));                               \
        __m256 d1 = _mm256_sub_ps(LOADA(a + i + 8), LOAD256(b + i + 8));                       \
        __m256 d2 = _mm256_sub_ps(LOADA(a + i + 16), LOAD256(b + i + 16));                     \
        __m256 d3 = _mm256_sub_ps(LOADA(a + i + 24), LOAD256(b + i + 24));                     \
        s0 = _mm256_fmadd_ps(d0, d0, s0);                                                      \
        s1 = _mm256_fmadd_ps(d1, d1, s1);                                                      \
        s2 = _mm256_fmadd_ps(d2, d2, s2);                                                      \
        s3 = _mm256_fmadd_ps(d3, d3, s3);                                                      \
    }                                                                                          \
    for (; i + 8 <= dim; i += 8) {                                                             \
        __m256 d = _mm256_sub_ps(LOADA(a + i), LOAD256(b + i));                                \
        s0 = _mm256_fmadd_ps(d, d, s0);                                                        \
    }                                                                                          \
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));           \
    return s + TAIL(a + i, b + i, dim - i)

#define F16_IP_256(LOADA, TAIL)                                                                \
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();                                 \
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();                                 \
    size_t i = 0;                                                                              \
    for (; i + 32 <= dim; i += 32) {                                                           \
        s0 = _mm256_fmadd_ps(LOADA(a + i), LOAD256(b + i), s0);                                \
        s1 = _mm256_fmadd_ps(LOADA(a + i + 8), LOAD256(b + i + 8), s1);                        \
        s2 = _mm256_fmadd_ps(LOADA(a + i + 16), LOAD256(b + i + 16), s2);                      \
        s3 = _mm256_fmadd_ps(LOADA(a + i + 24), LOAD256(b + i + 24), s3);                      \
    }                                                                                          \
    for (; i + 8 <= dim; i += 8)                                                               \
        s0 = _mm256_fmadd_ps(LOADA(a + i), LOAD256(b + i), s0);                                \
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));           \
    return s + TAIL(a + i, b + i, dim - i)

__attribute__((target("avx512f"))) static float l2sq_avx512(const ann_f16 *a, const ann_f16 *b,
                                                            size_t dim)
{
    F16_L2SQ_512(LOAD512, ann_f16_l2sq_scalar);
}

__attribute__((target("avx512f"))) static float ip_avx512(const ann_f16 *a, const ann_f16 *b,
                                                          size_t dim)
{
    F16_IP_512(LOAD512, ann_f16_ip_scalar);
}

__attribute__((target("avx2,fma,f16c"))) static float hsum256(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_hadd_ps(lo, lo);
    lo = _mm_hadd_ps(lo, lo);
    return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma,f16c"))) static float l2sq_avx2(const ann_f16 *a,
                                                                const ann_f16 *b, size_t dim)
{
    F16_L2SQ_256(LOAD256, ann_f16_l2sq_scalar);
}

__attribute__((target("avx2,fma,f16c"))) static float ip_avx2(const ann_f16 *a, const ann_f16 *b,
                                                              size_t dim)
{
    F16_IP_256(LOAD256, ann_f16_ip_scalar);
}

__attribute__((target("avx512f"))) static void widen_avx512(const ann_f16 *a, size_t count,
                                                            float *out)
{
    size_t i = 0;
    for (; i + 16 <= count; i += 16)
        _mm512_storeu_ps(out + i, LOAD512(a + i));
    ann_f16_widen(a + i, count - i, out + i);
}

__attribute__((target("avx2,f16c"))) static void widen_avx2(const ann_f16 *a, size_t count,
                                                           float *out)
{
    size_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(out + i, LOAD256(a + i));
    ann_f16_widen(a + i, count - i, out + i);
}

__attribute__((target("avx512f"))) static float l2sq_mixed_avx512(const float *a,
                                                                  const ann_f16 *b, size_t dim)
{
    F16_L2SQ_512(_mm512_loadu_ps, ann_f16_l2sq_mixed_scalar);
}

__attribute__((target("avx512f"))) static float ip_mixed_avx512(const float *a, const ann_f16 *b,
                                                                size_t dim)
{
    F16_IP_512(_mm512_loadu_ps, ann_f16_ip_mixed_scalar);
}

__attribute__((target("avx2,fma,f16c"))) static float l2sq_mixed_avx2(const float *a,
                                                                      const ann_f16 *b,
                                                                      size_t dim)
{
    F16_L2SQ_256(_mm256_loadu_ps, ann_f16_l2sq_mixed_scalar);
}

__attribute__((target("avx2,fma,f16c"))) static float ip_mixed_avx2(const float *a,
                                                                    const ann_f16 *b, size_t dim)
{
    F16_IP_256(_mm256_loadu_ps, ann_f16_ip_mixed_scalar);
}

static const ann_f16_kernels k_avx512 = { "avx512", l2sq_avx512, ip_avx512, l2sq_mixed_avx512,
                                          ip_mixed_avx512, widen_avx512 };
static const ann_f16_kernels k_avx2 = { "avx2", l2sq_avx2, ip_avx2, l2sq_mixed_avx2,
                                        ip_mixed_avx2, widen_avx2 };
#endif

static const ann_f16_kernels k_scalar = { "scalar", ann_f16_l2sq_scalar, ann_f16_ip_scalar,
                                          ann_f16_l2sq_mixed_scalar, ann_f16_ip_mixed_scalar,
                                          ann_f16_widen };
static const ann_f16_kernels *f16_active = &k_scalar;
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
/* F16C by cpuid (leaf 1, ecx bit 29): clang 14's __builtin_cpu_supports
 * does not know "f16c". */
static int has_f16c(void)
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

static void f16_choose(void)
{
#if defined(__x86_64__)
    const char *name = ann_dist_active()->name;
    __builtin_cpu_init();
    if (!strcmp(name, "avx512"))
        f16_active = &k_avx512;
    else if (!strcmp(name, "avx2") && has_f16c())
        f16_active = &k_avx2;
#endif
}

const ann_f16_kernels *ann_f16_active(void)
{
    pthread_once(&f16_once, f16_choose);
    return f16_active;
}

const ann_f16_kernels *ann_f16_variant(const char *name)
{
    if (!name)
        return NULL;
    if (!strcmp(name, "scalar"))
        return &k_scalar;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!strcmp(name, "avx512") && __builtin_cpu_supports("avx512f"))
        return &k_avx512;
    if (!strcmp(name, "avx2") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma") && has_f16c())
        return &k_avx2;
#endif
    return NULL;
}
