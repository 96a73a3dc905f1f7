/*
 * i8.c: int8 row codes for graph-build distances (i8.h): coding, the
 * left operand, and the u8 x s8 dot product (scalar, AVX-512 VNNI).
 */
#include "engines/core/i8.h"

#include "engines/core/distance.h"
#include "engines/core/parallel.h"
#include "engines/core/populate.h"
#include "engines/core/status.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

int32_t ann_i8_dot_scalar(const uint8_t *u, const int8_t *b, size_t stride)
{
    int32_t s = 0;
    for (size_t i = 0; i < stride; i++)
        s += (int32_t)u[i] * (int32_t)b[i];
    return s;
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static int32_t
dot_avx512vnni(const uint8_t *u, const int8_t *b, size_t stride)
{
    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 128 <= stride; i += 128) {
        s0 = _mm512_dpbusd_epi32(s0, _mm512_loadu_si512(u + i), _mm512_loadu_si512(b + i));
        s1 = _mm512_dpbusd_epi32(s1, _mm512_loadu_si512(u + i + 64),
                                 _mm512_loadu_si512(b + i + 64));
    }
    if (i < stride) /* stride is a multiple of 64 */
        s0 = _mm512_dpbusd_epi32(s0, _mm512_loadu_si512(u + i), _mm512_loadu_si512(b + i));
    return _mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));
}

static const ann_i8_kernels k_vnni = { "avx512vnni", dot_avx512vnni };
#endif

static const ann_i8_kernels k_scalar = { "scalar", ann_i8_dot_scalar };
static const ann_i8_kernels *i8_active = &k_scalar;
static pthread_once_t i8_once = PTHREAD_ONCE_INIT;

/* Follows distance.c's choice (ANNLAB_SIMD included): VNNI when the float
 * kernels are AVX-512 ones and the CPU has it, else scalar (the same values). */
static void i8_choose(void)
{
    const ann_i8_kernels *k = NULL;
    if (!strcmp(ann_dist_active()->name, "avx512"))
        k = ann_i8_variant("avx512vnni");
    if (k)
        i8_active = k;
}

const ann_i8_kernels *ann_i8_active(void)
{
    pthread_once(&i8_once, i8_choose);
    return i8_active;
}

const ann_i8_kernels *ann_i8_variant(const char *name)
{
    if (!name)
        return NULL;
    if (!strcmp(name, "scalar"))
        return &k_scalar;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!strcmp(name, "avx512vnni") && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
        return &k_vnni;
#endif
    return NULL;
}

/* ---- coding ------------------------------------------------------------ */

#define I8_BLOCK 4096u

typedef struct i8_job {
    const float *x;
    uint64_t n;
    uint32_t dim;
    float *lo, *hi; /* per block: dim each (range pass) */
    double *sum, *sq; /* per block: dim each (range pass) */
    atomic_int bad; /* a value that is not finite (range pass) */
    ann_i8_rows *r;
} i8_job;

static int i8_range_run(void *arg, uint64_t bgn, uint64_t end, int worker)
{
    (void)worker;
    i8_job *j = arg;
    for (uint64_t blk = bgn; blk < end; blk++) {
        float *lo = j->lo + blk * j->dim, *hi = j->hi + blk * j->dim;
        double *sum = j->sum + blk * j->dim, *sq = j->sq + blk * j->dim;
        uint64_t r0 = blk * I8_BLOCK, r1 = r0 + I8_BLOCK < j->n ? r0 + I8_BLOCK : j->n;
        for (uint32_t d = 0; d < j->dim; d++) {
            lo[d] = INFINITY;
            hi[d] = -INFINITY;
            sum[d] = sq[d] = 0.0;
        }
        for (uint64_t r = r0; r < r1; r++) {
            const float *v = j->x + r * j->dim;
            for (uint32_t d = 0; d < j->dim; d++) {
                if (!isfinite(v[d]))
                    atomic_store_explicit(&j->bad, 1, memory_order_relaxed);
                lo[d] = v[d] < lo[d] ? v[d] : lo[d];
                hi[d] = v[d] > hi[d] ? v[d] : hi[d];
                sum[d] += v[d];
                sq[d] += (double)v[d] * v[d];
            }
        }
    }
    return 0;
}

static int i8_code_run(void *arg, uint64_t bgn, uint64_t end, int worker)
{
    (void)worker;
    i8_job *j = arg;
    ann_i8_rows *r = j->r;
    const float inv = 1.0f / r->step;
    for (uint64_t row = bgn; row < end; row++) {
        const float *v = j->x + row * j->dim;
        int8_t *a = r->rows + row * r->stride;
        int32_t norm = 0, sum = 0;
        for (uint32_t d = 0; d < j->dim; d++) {
            float q = rintf((v[d] - r->centre[d]) * inv);
            q = q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q;
            a[d] = (int8_t)q;
            norm += (int32_t)a[d] * a[d];
            sum += a[d];
        }
        memset(a + j->dim, 0, r->stride - j->dim);
        r->bias[row] = norm + 256 * sum;
        r->norm[row] = norm;
    }
    return 0;
}

void ann_i8_rows_free(ann_i8_rows *r)
{
    if (!r)
        return;
    free(r->rows);
    free(r->bias);
    free(r->norm);
    free(r->centre);
    memset(r, 0, sizeof *r);
}

int ann_i8_rows_make(const float *x, uint64_t n, uint32_t dim, int threads, ann_i8_rows *out,
                     double *noise_out)
{
    memset(out, 0, sizeof *out);
    if (noise_out)
        *noise_out = -1.0;
    if (n == 0 || dim == 0 || dim > ANN_I8_MAX_DIM)
        return 1;
    uint64_t nb = (n + I8_BLOCK - 1) / I8_BLOCK;
    i8_job j = { .x = x, .n = n, .dim = dim };
    j.lo = malloc(nb * dim * sizeof *j.lo);
    j.hi = malloc(nb * dim * sizeof *j.hi);
    j.sum = malloc(nb * dim * sizeof *j.sum);
    j.sq = malloc(nb * dim * sizeof *j.sq);
    float *centre = malloc(dim * sizeof *centre);
    if (!j.lo || !j.hi || !j.sum || !j.sq || !centre) {
        free(j.lo);
        free(j.hi);
        free(j.sum);
        free(j.sq);
        free(centre);
        return ann_fail(-ENOMEM, "i8 rows: no memory for the ranges of %u dimensions", dim);
    }
    ann_parallel_for(threads, nb, 1, i8_range_run, &j);
    float half = 0.0f;
    double var = 0.0; /* total variance over the dimensions */
    int bad = atomic_load(&j.bad);
    for (uint32_t d = 0; d < dim && !bad; d++) {
        float lo = INFINITY, hi = -INFINITY;
        double s1 = 0.0, s2 = 0.0;
        for (uint64_t b = 0; b < nb; b++) {
            lo = j.lo[b * dim + d] < lo ? j.lo[b * dim + d] : lo;
            hi = j.hi[b * dim + d] > hi ? j.hi[b * dim + d] : hi;
            s1 += j.sum[b * dim + d];
            s2 += j.sq[b * dim + d];
        }
        double mean = s1 / (double)n, v = s2 / (double)n - mean * mean;
        var += v > 0.0 ? v : 0.0;
        centre[d] = (float)(0.5 * ((double)lo + (double)hi));
        double h = 0.5 * ((double)hi - (double)lo);
        /* the centre is rounded: cover both ends from it */
        double e = fmax((double)hi - centre[d], (double)centre[d] - lo);
        if (e > h)
            h = e;
        if (h > half)
            half = (float)h;
    }
    free(j.lo);
    free(j.hi);
    free(j.sum);
    free(j.sq);
    if (bad || !(half > 0.0f) || !isfinite(half) || !(var > 0.0)) {
        free(centre);
        return 1;
    }
    double step = (double)half / 127.0;
    double noise = (double)dim * step * step / 12.0 / var;
    if (noise_out)
        *noise_out = noise;
    if (noise > ANN_I8_MAX_NOISE) {
        free(centre);
        return 1;
    }
    ann_i8_rows *r = out;
    r->n = n;
    r->dim = dim;
    r->stride = (dim + 63u) & ~63u;
    r->centre = centre;
    r->step = half / 127.0f;
    r->step2 = r->step * r->step;
    r->noise = noise;
    r->rows = ann_alloc_large(n * r->stride);
    r->bias = malloc(n * sizeof *r->bias);
    r->norm = malloc(n * sizeof *r->norm);
    if (!r->rows || !r->bias || !r->norm || !(r->step > 0.0f)) {
        int nomem = !r->rows || !r->bias || !r->norm;
        ann_i8_rows_free(r);
        return nomem ? ann_fail(-ENOMEM, "i8 rows: no memory for %llu x %u codes",
                                (unsigned long long)n, dim)
                     : 1;
    }
    j.r = r;
    ann_parallel_for(threads, n, 4096, i8_code_run, &j);
    return 0;
}

int32_t ann_i8_left(const ann_i8_rows *r, uint64_t id, uint8_t *u)
{
    /* the stride in a local and restrict pointers: without them the
     * compiler reloads r->stride after every byte store (u might alias r)
     * and the loop runs a byte at a time, about 7% of a build */
    const size_t stride = r->stride;
    const uint8_t *restrict a = (const uint8_t *)(r->rows + id * stride);
    uint8_t *restrict w = u;
    for (size_t i = 0; i < stride; i++)
        w[i] = a[i] ^ 0x80u; /* two's complement a + 128 */
    return r->norm[id];
}
