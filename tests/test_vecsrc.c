/*
 * test_vecsrc.c: vector sources that lend their rows (the rows hook): a
 * .fbin source lends rows from its mapping, equal to what read() copies;
 * .u8bin/.i8bin sources have no hook (mapping them is refused) and
 * ann_vecsrc_view / ann_vecsrc_hold fall back to converted copies; lent
 * rows are checked for NaN/Inf as read rows are; memory sources lend the
 * caller's memory; out-of-range requests fail; pq_sample_read gives the
 * same sample from every kind of source.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/pq.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 5000
#define DIM 24

static char *dir;
static float *base;

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir("vecsrc");
    base = tu_clustered(N, DIM, 10, 99, 0);
    return dir && base ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(dir);
    free(base);
    return 0;
}

static void write_vecs(const char *path, ann_elem e, const void *rows, uint64_t n)
{
    ann_vecwriter w;
    assert_int_equal(ann_vecwriter_open(&w, path, DIM, e), 0);
    assert_int_equal(ann_vecwriter_append(&w, rows, n), 0);
    assert_int_equal(ann_vecwriter_finish(&w), 0);
}

static void test_fbin_lends(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/base.fbin", dir);
    write_vecs(path, ANN_ELEM_F32, base, N);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_open_file(path, ANN_METRIC_L2, &src), 0);
    assert_non_null(src->rows);
    const float *rows = NULL;
    assert_int_equal(src->rows(src, 100, 50, &rows), 0);
    assert_memory_equal(rows, base + 100 * DIM, 50 * DIM * sizeof(float));
    /* view lends (the buffer stays untouched), hold lends (no copy) */
    float buf[DIM] = { 0 };
    const float *v = NULL;
    assert_int_equal(ann_vecsrc_view(src, 7, 1, buf, &v), 0);
    assert_ptr_not_equal(v, buf);
    assert_memory_equal(v, base + 7 * DIM, sizeof buf);
    assert_true(buf[0] == 0.0f);
    ann_vecsrc_held h;
    assert_int_equal(ann_vecsrc_hold(src, 2, &h), 0);
    assert_null(h.copy);
    assert_memory_equal(h.x, base, (size_t)N * DIM * sizeof(float));
    ann_vecsrc_unhold(&h);
    /* beyond n */
    assert_int_equal(src->rows(src, N - 1, 2, &rows), ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), "beyond n=5000"));
    ann_vecsrc_destroy(src);
}

static void test_u8_i8_copy(void **state)
{
    (void)state;
    uint8_t *u = malloc((size_t)N * DIM);
    for (size_t i = 0; i < (size_t)N * DIM; i++)
        u[i] = (uint8_t)(i * 37 % 251);
    const char *ext[2] = { "u8bin", "i8bin" };
    for (int e = 0; e < 2; e++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/base.%s", dir, ext[e]);
        write_vecs(path, e ? ANN_ELEM_I8 : ANN_ELEM_U8, u, N);
        ann_vecfile vf;
        assert_int_equal(ann_vecfile_open(path, &vf), 0);
        assert_int_equal(ann_vecfile_map(&vf), ANN_EFORMAT);
        assert_non_null(strstr(ann_errmsg(ANN_EFORMAT), path));
        assert_non_null(strstr(ann_errmsg(ANN_EFORMAT), "not float32"));
        ann_vecfile_close(&vf);
        ann_vecsrc *src = NULL;
        assert_int_equal(ann_vecsrc_open_file(path, ANN_METRIC_L2, &src), 0);
        assert_null(src->rows);
        float buf[3 * DIM];
        const float *v = NULL;
        assert_int_equal(ann_vecsrc_view(src, 10, 3, buf, &v), 0);
        assert_ptr_equal(v, buf);
        for (int i = 0; i < 3 * DIM; i++) {
            uint8_t raw = u[10 * DIM + i];
            assert_true(v[i] == (e ? (float)(int8_t)raw : (float)raw));
        }
        ann_vecsrc_held h;
        assert_int_equal(ann_vecsrc_hold(src, 2, &h), 0);
        assert_non_null(h.copy);
        assert_ptr_equal(h.x, h.copy);
        for (size_t i = 0; i < (size_t)N * DIM; i++)
            assert_true(h.x[i] == (e ? (float)(int8_t)u[i] : (float)u[i]));
        ann_vecsrc_unhold(&h);
        assert_null(h.x);
        ann_vecsrc_destroy(src);
    }
    free(u);
}

static void test_lent_rows_checked(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/nan.fbin", dir);
    float *x = malloc(100 * DIM * sizeof(float));
    memcpy(x, base, 100 * DIM * sizeof(float));
    x[42 * DIM + 5] = NAN;
    write_vecs(path, ANN_ELEM_F32, x, 100);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_open_file(path, ANN_METRIC_L2, &src), 0);
    const float *rows = NULL;
    assert_int_equal(src->rows(src, 0, 42, &rows), 0); /* rows before the bad one */
    assert_int_equal(src->rows(src, 40, 10, &rows), ANN_EDATA);
    assert_non_null(strstr(ann_errmsg(ANN_EDATA), "row 42, component 5 is NaN"));
    ann_vecsrc_held h;
    assert_int_equal(ann_vecsrc_hold(src, 1, &h), ANN_EDATA);
    assert_null(h.x);
    ann_vecsrc_destroy(src);
    free(x);
}

static void test_memory_lends(void **state)
{
    (void)state;
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(base, N, DIM, ANN_METRIC_L2, &src), 0);
    const float *rows = NULL;
    assert_int_equal(src->rows(src, 3, 2, &rows), 0);
    assert_ptr_equal(rows, base + 3 * DIM);
    ann_vecsrc_held h;
    assert_int_equal(ann_vecsrc_hold(src, 1, &h), 0);
    assert_ptr_equal(h.x, base);
    assert_null(h.copy);
    assert_int_equal(src->rows(src, N, 1, &rows), ANN_EPARAM);
    ann_vecsrc_destroy(src);
}


/* PQ training's sample: the same rows from a file, from memory and from a
 * source that only reads */
static void test_pq_sample_sources(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/base.fbin", dir);
    ann_vecsrc *file = NULL, *mem = NULL;
    assert_int_equal(ann_vecsrc_open_file(path, ANN_METRIC_L2, &file), 0);
    assert_int_equal(ann_vecsrc_from_memory(base, N, DIM, ANN_METRIC_L2, &mem), 0);
    ann_vecsrc copy = tu_copy_only(file);
    pq_params pp;
    pq_params_default(&pp, DIM);
    pp.sample_max_rows = 700;
    uint64_t rows = pq_sample_rows(&pp, N, DIM);
    assert_int_equal(rows, 700);
    float *a = malloc(rows * DIM * sizeof(float)), *b = malloc(rows * DIM * sizeof(float)),
          *c = malloc(rows * DIM * sizeof(float));
    assert_int_equal(pq_sample_read(file, &pp, a), 0);
    assert_int_equal(pq_sample_read(mem, &pp, b), 0);
    assert_int_equal(pq_sample_read(&copy, &pp, c), 0);
    assert_memory_equal(a, b, rows * DIM * sizeof(float));
    assert_memory_equal(a, c, rows * DIM * sizeof(float));
    /* distinct rows of the base, ascending */
    int64_t last = -1;
    for (uint64_t i = 0; i < rows; i++) {
        int64_t found = -1;
        for (int64_t r = last + 1; r < N && found < 0; r++)
            if (!memcmp(a + i * DIM, base + r * DIM, DIM * sizeof(float)))
                found = r;
        assert_true(found > last);
        last = found;
    }
    /* and so the same codebook: DiskANN's artifacts train on the vectors
     * the graph phase holds (a memory source) instead of the file */
    pq_codebook *from_file = NULL, *from_mem = NULL;
    pp.pq_bytes = 3;
    pp.threads = 2;
    assert_int_equal(pq_train(file, &pp, &from_file), 0);
    assert_int_equal(pq_train(mem, &pp, &from_mem), 0);
    assert_memory_equal(from_file->centroids, from_mem->centroids,
                        (size_t)3 * PQ_KSUB * from_file->dsub * sizeof(float));
    pq_codebook_destroy(from_file);
    pq_codebook_destroy(from_mem);
    free(a);
    free(b);
    free(c);
    ann_vecsrc_destroy(file);
    ann_vecsrc_destroy(mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fbin_lends),
        cmocka_unit_test(test_u8_i8_copy),
        cmocka_unit_test(test_lent_rows_checked),
        cmocka_unit_test(test_memory_lends),
        cmocka_unit_test(test_pq_sample_sources),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
