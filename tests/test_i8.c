/*
 * test_i8.c: int8 row codes for build distances (engines/core/i8.h).
 * Coding: no value is clamped, each code decodes to within half a step;
 * the squared L2 between codes equals the integer sum of squared
 * differences times step^2 exactly, in every kernel this CPU runs, at
 * dims 1..130 and 768 (padding included); and it ranks near neighbours as
 * float32 does within the coding error.  Rows that cannot be coded (NaN,
 * all equal, too wide, one dimension's range far above the rest) are
 * refused with 1 and nothing allocated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/i8.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static float *gauss_rows(uint64_t n, uint32_t dim, uint64_t seed)
{
    float *x = malloc(n * dim * sizeof *x);
    assert_non_null(x);
    for (uint64_t i = 0; i < n * dim; i++)
        x[i] = tu_gauss(&seed) * (1.0f + (float)(i % dim) / (float)dim); /* unequal ranges */
    return x;
}

static void test_i8_coding(void **state)
{
    (void)state;
    const uint64_t n = 500;
    for (uint32_t dim = 1; dim <= 770; dim = dim < 130 ? dim + 1 : dim + 638) {
        float *x = gauss_rows(n, dim, dim);
        ann_i8_rows r;
        assert_int_equal(ann_i8_rows_make(x, n, dim, 2, &r, NULL), 0);
        assert_int_equal(r.stride % 64, 0);
        assert_true(r.stride >= dim && r.stride < dim + 64);
        for (uint64_t i = 0; i < n; i++) {
            const int8_t *a = r.rows + i * r.stride;
            int32_t norm = 0, sum = 0;
            for (uint32_t d = 0; d < dim; d++) {
                assert_true(a[d] >= -127 && a[d] <= 127);
                float back = r.centre[d] + r.step * (float)a[d];
                if (!(fabsf(back - x[i * dim + d]) <= 0.5001f * r.step + 1e-6f))
                    fail_msg("dim %u row %llu [%u]: %.9g decodes to %.9g (step %.9g)", dim,
                             (unsigned long long)i, d, (double)x[i * dim + d], (double)back,
                             (double)r.step);
                norm += a[d] * a[d];
                sum += a[d];
            }
            for (uint32_t d = dim; d < r.stride; d++)
                assert_int_equal(a[d], 0);
            assert_int_equal(r.norm[i], norm);
            assert_int_equal(r.bias[i], norm + 256 * sum);
        }
        ann_i8_rows_free(&r);
        free(x);
    }
}

/* Every kernel gives sum (a - b)^2 exactly, through the left operand. */
static void test_i8_kernels_exact(void **state)
{
    (void)state;
    const char *names[] = { "scalar", "avx512vnni" };
    const uint64_t n = 40;
    int tested = 0;
    for (int v = 0; v < 2; v++) {
        const ann_i8_kernels *k = ann_i8_variant(names[v]);
        if (!k)
            continue;
        tested++;
        for (uint32_t dim = 1; dim <= 770; dim = dim < 130 ? dim + 1 : dim + 638) {
            float *x = gauss_rows(n, dim, 100 + dim);
            ann_i8_rows r;
            assert_int_equal(ann_i8_rows_make(x, n, dim, 1, &r, NULL), 0);
            uint8_t *u = malloc(r.stride);
            for (uint64_t i = 0; i < n; i++) {
                int32_t na = ann_i8_left(&r, i, u);
                for (uint64_t j = 0; j < n; j++) {
                    int32_t want = 0;
                    for (uint32_t d = 0; d < dim; d++) {
                        int32_t t = r.rows[i * r.stride + d] - r.rows[j * r.stride + d];
                        want += t * t;
                    }
                    float got = ann_i8_l2(&r, k->dot, u, na, j);
                    float exp = (float)want * r.step2;
                    if (memcmp(&got, &exp, sizeof got))
                        fail_msg("%s dim %u rows %llu, %llu: %.9g, want %.9g", names[v], dim,
                                 (unsigned long long)i, (unsigned long long)j, (double)got,
                                 (double)exp);
                }
            }
            free(u);
            ann_i8_rows_free(&r);
            free(x);
        }
    }
    assert_true(tested >= 1);
    assert_null(ann_i8_variant("sse9"));
    print_message("i8 kernels checked exactly: %d (active: %s)\n", tested, ann_i8_active()->name);
}

/* At 768-d the coded distance is float32's within the coding error: the
 * relative error of a squared distance between two random rows stays under
 * 1%, and the nearest of 500 rows by codes is float32's nearest or within
 * 1% of its distance. */
static void test_i8_ranks_like_f32(void **state)
{
    (void)state;
    const uint64_t n = 500;
    const uint32_t dim = 768;
    float *x = gauss_rows(n, dim, 77);
    ann_i8_rows r;
    assert_int_equal(ann_i8_rows_make(x, n, dim, 2, &r, NULL), 0);
    uint8_t *u = malloc(r.stride);
    double worst = 0;
    for (uint64_t i = 0; i < 50; i++) {
        int32_t na = ann_i8_left(&r, i, u);
        uint64_t best_f = 0, best_q = 0;
        float bf = INFINITY, bq = INFINITY, fq_best = 0;
        for (uint64_t j = 0; j < n; j++) {
            if (j == i)
                continue;
            float f = 0;
            for (uint32_t d = 0; d < dim; d++) {
                float t = x[i * dim + d] - x[j * dim + d];
                f += t * t;
            }
            float q = ann_i8_l2(&r, ann_i8_active()->dot, u, na, j);
            double rel = fabs((double)q - f) / f;
            worst = rel > worst ? rel : worst;
            if (f < bf) {
                bf = f;
                best_f = j;
            }
            if (q < bq) {
                bq = q;
                best_q = j;
                fq_best = f;
            }
        }
        assert_true(best_q == best_f || fq_best <= 1.01f * bf);
    }
    assert_true(worst < 0.01);
    print_message("i8 at 768-d: worst relative error of a squared distance %.5f\n", worst);
    free(u);
    ann_i8_rows_free(&r);
    free(x);
}

static void test_i8_refuses(void **state)
{
    (void)state;
    ann_i8_rows r;
    float same[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    assert_int_equal(ann_i8_rows_make(same, 2, 4, 1, &r, NULL), 1);
    assert_null(r.rows);
    float nan[4] = { 0, 1, NAN, 2 };
    assert_int_equal(ann_i8_rows_make(nan, 2, 2, 1, &r, NULL), 1);
    assert_null(r.rows);
    float inf[4] = { 0, 1, INFINITY, 2 };
    assert_int_equal(ann_i8_rows_make(inf, 2, 2, 1, &r, NULL), 1);
    assert_int_equal(ann_i8_rows_make(same, 1, ANN_I8_MAX_DIM + 1, 1, &r, NULL), 1);
    assert_int_equal(ann_i8_rows_make(same, 0, 4, 1, &r, NULL), 1);

    /* one dimension 1,000 times wider than the other 127: refused for the
     * noise, which is reported; 3 times wider is coded */
    const uint64_t n = 300;
    const uint32_t dim = 128;
    float *x = gauss_rows(n, dim, 3);
    for (uint64_t i = 0; i < n; i++)
        x[i * dim] *= 1000.0f;
    double noise = 0;
    assert_int_equal(ann_i8_rows_make(x, n, dim, 2, &r, &noise), 1);
    assert_null(r.rows);
    assert_true(noise > ANN_I8_MAX_NOISE);
    for (uint64_t i = 0; i < n; i++)
        x[i * dim] *= 3.0f / 1000.0f;
    assert_int_equal(ann_i8_rows_make(x, n, dim, 2, &r, &noise), 0);
    assert_true(noise > 0 && noise <= ANN_I8_MAX_NOISE);
    assert_true(r.noise == noise);
    ann_i8_rows_free(&r);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_i8_coding),
        cmocka_unit_test(test_i8_kernels_exact),
        cmocka_unit_test(test_i8_ranks_like_f32),
        cmocka_unit_test(test_i8_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
