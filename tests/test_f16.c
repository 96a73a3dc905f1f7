/*
 * test_f16.c: half-precision rows.  Conversion rounds to nearest and
 * refuses values outside the half range naming the element; every SIMD
 * kernel this CPU supports equals the scalar reference on every dimension
 * from 1 to 100 and 768 (tails included).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/f16.h"
#include "engines/core/status.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_f16_conversion(void **state)
{
    (void)state;
    const float in[6] = { 0.0f, 1.0f, -2.5f, 65504.0f, 1.0f / 3.0f, 1e-8f };
    ann_f16 h[6];
    assert_int_equal(ann_f16_from_f32(in, 6, h), 0);
    assert_true(ann_f16_to_f32(h[0]) == 0.0f);
    assert_true(ann_f16_to_f32(h[1]) == 1.0f);
    assert_true(ann_f16_to_f32(h[2]) == -2.5f);
    assert_true(ann_f16_to_f32(h[3]) == 65504.0f);
    assert_true(fabsf(ann_f16_to_f32(h[4]) - 1.0f / 3.0f) <= 1.0f / 3.0f / 1024.0f);
    assert_int_equal(h[1], 0x3c00);

    const float bad[3] = { 1.0f, 2.0f, 70000.0f };
    assert_int_equal(ann_f16_from_f32(bad, 3, h), ANN_EDATA);
    assert_string_equal(ann_errmsg(ANN_EDATA),
                        "element 2 (70000) is outside the half-precision range");
    const float nan[1] = { NAN };
    assert_int_equal(ann_f16_from_f32(nan, 1, h), ANN_EDATA);
}

static void test_f16_kernels_match_scalar(void **state)
{
    (void)state;
    const char *names[] = { "avx2", "avx512" };
    uint64_t s = 5;
    float *a = malloc(768 * sizeof *a), *b = malloc(768 * sizeof *b);
    ann_f16 *ha = malloc(768 * sizeof *ha), *hb = malloc(768 * sizeof *hb);
    int tested = 0;
    for (int v = 0; v < 2; v++) {
        const ann_f16_kernels *k = ann_f16_variant(names[v]);
        if (!k)
            continue;
        tested++;
        for (uint32_t dim = 1; dim <= 769; dim = dim < 100 ? dim + 1 : dim + 668) {
            for (uint32_t i = 0; i < dim; i++) {
                a[i] = tu_gauss(&s);
                b[i] = tu_gauss(&s);
            }
            assert_int_equal(ann_f16_from_f32(a, dim, ha), 0);
            assert_int_equal(ann_f16_from_f32(b, dim, hb), 0);
            float l_ref = ann_f16_l2sq_scalar(ha, hb, dim), l = k->l2sq(ha, hb, dim);
            float i_ref = ann_f16_ip_scalar(ha, hb, dim), ip = k->ip(ha, hb, dim);
            assert_true(fabsf(l - l_ref) <= 1e-5f * (1.0f + fabsf(l_ref)) + 1e-5f * dim);
            assert_true(fabsf(ip - i_ref) <= 1e-5f * (1.0f + fabsf(i_ref)) + 1e-5f * dim);
        }
    }
    print_message("f16 SIMD variants tested against scalar: %d (active: %s)\n", tested,
                  ann_f16_active()->name);
    assert_non_null(ann_f16_variant("scalar"));
    assert_null(ann_f16_variant("sse9"));
    free(a);
    free(b);
    free(ha);
    free(hb);
}

/* The mixed kernels (a widened once, b half) give the half kernels' value
 * bit for bit, in every variant: the build's graph does not change when
 * its searches and RobustPrune widen a row once and use them. */
static void test_f16_mixed_kernels_exact(void **state)
{
    (void)state;
    const char *names[] = { "scalar", "avx2", "avx512" };
    uint64_t s = 9;
    float *a = malloc(1100 * sizeof *a), *b = malloc(1100 * sizeof *b);
    float *wide = malloc(1100 * sizeof *wide);
    ann_f16 *ha = malloc(1100 * sizeof *ha), *hb = malloc(1100 * sizeof *hb);
    int tested = 0;
    for (int v = 0; v < 3; v++) {
        const ann_f16_kernels *k = ann_f16_variant(names[v]);
        if (!k)
            continue;
        tested++;
        for (uint32_t dim = 1; dim <= 1100; dim = dim < 130 ? dim + 1 : dim + 319) {
            for (uint32_t i = 0; i < dim; i++) {
                a[i] = tu_gauss(&s);
                b[i] = tu_gauss(&s);
            }
            assert_int_equal(ann_f16_from_f32(a, dim, ha), 0);
            assert_int_equal(ann_f16_from_f32(b, dim, hb), 0);
            k->widen(ha, dim, wide);
            for (uint32_t i = 0; i < dim; i++)
                assert_true(wide[i] == ann_f16_to_f32(ha[i]));
            float l = k->l2sq(ha, hb, dim), lm = k->l2sq_mixed(wide, hb, dim);
            float ip = k->ip(ha, hb, dim), ipm = k->ip_mixed(wide, hb, dim);
            if (memcmp(&l, &lm, sizeof l) || memcmp(&ip, &ipm, sizeof ip))
                fail_msg("%s, dim %u: l2sq %.9g mixed %.9g, ip %.9g mixed %.9g", names[v], dim,
                         (double)l, (double)lm, (double)ip, (double)ipm);
        }
    }
    assert_true(tested >= 1);
    print_message("f16 mixed kernels checked bit for bit in %d variants\n", tested);
    free(a);
    free(b);
    free(wide);
    free(ha);
    free(hb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_conversion),
        cmocka_unit_test(test_f16_kernels_match_scalar),
        cmocka_unit_test(test_f16_mixed_kernels_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
