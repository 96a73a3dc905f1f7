/*
 * test_distance.c: every SIMD kernel agrees with the scalar reference on
 * every dimension from 1 to 1,536 (tails included), at unaligned addresses;
 * metric conventions of ann_distance.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/distance.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIM 1536

static void check_variant(const char *name)
{
    const ann_dist_kernels *k = ann_dist_variant(name);
    if (!k) {
        print_message("%s not supported by this CPU: skipping\n", name);
        skip();
        return;
    }
    uint64_t s = 42;
    /* +1 float so a/b can start at an odd (unaligned) address */
    float *abuf = malloc((MAX_DIM + 1) * sizeof(float));
    float *bbuf = malloc((MAX_DIM + 1) * sizeof(float));
    assert_non_null(abuf);
    assert_non_null(bbuf);
    for (int i = 0; i < MAX_DIM + 1; i++) {
        abuf[i] = tu_gauss(&s);
        bbuf[i] = tu_gauss(&s);
    }
    for (size_t dim = 1; dim <= MAX_DIM; dim++) {
        for (int off = 0; off < 2; off++) {
            const float *a = abuf + off, *b = bbuf + (1 - off);
            double ref_l2 = 0, ref_ip = 0, mag = 0;
            for (size_t i = 0; i < dim; i++) {
                double d = (double)a[i] - b[i];
                ref_l2 += d * d;
                ref_ip += (double)a[i] * b[i];
                mag += fabs((double)a[i] * b[i]);
            }
            float l2 = k->l2sq(a, b, dim), ip = k->ip(a, b, dim);
            float sl2 = ann_l2sq_scalar(a, b, dim), sip = ann_ip_scalar(a, b, dim);
            /* float32 summation error bound, relative to the magnitudes summed */
            double tol_l2 = 1e-5 * ref_l2 + 1e-6, tol_ip = 1e-5 * mag + 1e-6;
            if (fabs(l2 - ref_l2) > tol_l2 || fabs(l2 - sl2) > 2 * tol_l2)
                fail_msg("%s l2sq dim %zu off %d: %g vs ref %g scalar %g", name, dim, off, l2,
                         ref_l2, sl2);
            if (fabs(ip - ref_ip) > tol_ip || fabs(ip - sip) > 2 * tol_ip)
                fail_msg("%s ip dim %zu off %d: %g vs ref %g scalar %g", name, dim, off, ip,
                         ref_ip, sip);
        }
    }
    free(abuf);
    free(bbuf);
}

/*
 * Vectors read in place from store values and sector buffers need not be
 * 4-byte aligned.  Every kernel at byte offsets 1..3 (SIMD body and
 * scalar tail: dims 100, 101 and 960), equal to the aligned result.  Under
 * SAN=undefined a plain a[i] in a tail aborted ("load of misaligned
 * address ... for type 'const float'", the AVX2 inner-product tail at dim 100).
 */
static void check_misaligned(const char *name)
{
    const ann_dist_kernels *k = ann_dist_variant(name);
    if (!k) {
        print_message("%s not supported by this CPU: skipping\n", name);
        skip();
        return;
    }
    static const size_t dims[] = { 100, 101, 960 };
    uint64_t s = 7;
    float a[960], b[960];
    for (int i = 0; i < 960; i++) {
        a[i] = tu_gauss(&s);
        b[i] = tu_gauss(&s);
    }
    unsigned char *buf = malloc(2 * 960 * sizeof(float) + 16);
    assert_non_null(buf);
    for (size_t d = 0; d < 3; d++)
        for (size_t off = 1; off < 4; off++) {
            unsigned char *pa = buf + off, *pb = buf + off + 960 * sizeof(float) + 4;
            memcpy(pa, a, dims[d] * sizeof(float));
            memcpy(pb, b, dims[d] * sizeof(float));
            const float *ma = (const float *)(const void *)pa;
            const float *mb = (const float *)(const void *)pb;
            float l2 = k->l2sq(ma, mb, dims[d]), ip = k->ip(ma, mb, dims[d]);
            float l2a = k->l2sq(a, b, dims[d]), ipa = k->ip(a, b, dims[d]);
            if (l2 != l2a || ip != ipa)
                fail_msg("%s dim %zu byte offset %zu: l2 %g ip %g, aligned %g %g", name, dims[d],
                         off, l2, ip, l2a, ipa);
        }
    free(buf);
}

/* one case per kernel, so a CPU without one reports a skip, not a pass */
static void test_byte_misaligned_scalar(void **state)
{
    (void)state;
    check_misaligned("scalar");
}

static void test_byte_misaligned_avx2(void **state)
{
    (void)state;
    check_misaligned("avx2");
}

static void test_byte_misaligned_avx512(void **state)
{
    (void)state;
    check_misaligned("avx512");
}

static void test_scalar(void **state)
{
    (void)state;
    check_variant("scalar");
}

static void test_avx2(void **state)
{
    (void)state;
    check_variant("avx2");
}

static void test_avx512(void **state)
{
    (void)state;
    check_variant("avx512");
}

static void test_unknown_variant(void **state)
{
    (void)state;
    assert_null(ann_dist_variant("sse9"));
    assert_null(ann_dist_variant(NULL));
    assert_non_null(ann_dist_active());
}

static void test_metric_conventions(void **state)
{
    (void)state;
    float a[3] = { 1, 0, 0 }, b[3] = { 0, 1, 0 }, c[3] = { 2, 0, 0 };
    assert_float_equal(ann_distance(ANN_METRIC_L2, a, b, 3), 2.0f, 1e-6);
    assert_float_equal(ann_distance(ANN_METRIC_IP, a, c, 3), -2.0f, 1e-6);
    assert_float_equal(ann_distance(ANN_METRIC_COSINE, a, b, 3), 1.0f, 1e-6);
    assert_float_equal(ann_distance(ANN_METRIC_COSINE, a, a, 3), 0.0f, 1e-6);
    float v[4] = { 3, 4, 0, 0 };
    ann_normalize(v, 4);
    assert_float_equal(v[0], 0.6f, 1e-6);
    assert_float_equal(v[1], 0.8f, 1e-6);
    float z[2] = { 0, 0 };
    ann_normalize(z, 2);
    assert_float_equal(z[0], 0.0f, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalar),
        cmocka_unit_test(test_avx2),
        cmocka_unit_test(test_avx512),
        cmocka_unit_test(test_byte_misaligned_scalar),
        cmocka_unit_test(test_byte_misaligned_avx2),
        cmocka_unit_test(test_byte_misaligned_avx512),
        cmocka_unit_test(test_unknown_variant),
        cmocka_unit_test(test_metric_conventions),
    };
    return cmocka_run_group_tests_name("distance", tests, NULL, NULL);
}
