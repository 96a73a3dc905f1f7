/*
 * test_datasets_bundle.c: bundles end to end in the library: ground truth
 * computed by ann_bundle_finish against a naive float64 reference (ids and
 * distances, on data full of exact ties), the tie-aware check of shipped
 * ground truth (a tied alternative passes, a wrong id fails and is
 * replaced), verification, and the bad inputs of the import path, each
 * with its exact message and with nothing half-written left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/bundle.h"
#include "datasets/import.h"
#include "datasets/readers.h"
#include "engines/core/exact.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "tests/support/testutil.h"

#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir("dsbundle");
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(dir);
    return 0;
}

static void path_of(char *buf, const char *name)
{
    snprintf(buf, 4096, "%s/%s", dir, name);
}

static void assert_msg(int rc, const char *want)
{
    assert_true(rc < 0);
    const char *msg = ann_errmsg(rc);
    if (!strstr(msg, want))
        fail_msg("message \"%s\" lacks \"%s\"", msg, want);
}

static void write_fbin(const char *p, const float *rows, uint32_t n, uint32_t dim)
{
    ann_vecwriter w;
    assert_int_equal(ann_vecwriter_open(&w, p, dim, ANN_ELEM_F32), 0);
    assert_int_equal(ann_vecwriter_append(&w, rows, n), 0);
    assert_int_equal(ann_vecwriter_finish(&w), 0);
}

/* Small integers: every distance is exact in float32, and ties abound. */
static float *int_rows(uint32_t n, uint32_t dim, uint64_t seed)
{
    uint64_t st = seed;
    float *x = malloc((size_t)n * dim * sizeof(float));
    for (size_t i = 0; i < (size_t)n * dim; i++)
        x[i] = (float)((int)(tu_rand(&st) % 5) - 2);
    return x;
}

typedef struct {
    double d;
    int32_t id;
} ref_pair;

static int cmp_ref(const void *a, const void *b)
{
    const ref_pair *x = a, *y = b;
    if (x->d != y->d)
        return x->d < y->d ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Naive reference: all distances in float64, sorted by (distance, id). */
static void naive_knn(ann_metric m, const float *base, uint32_t n, const float *q, uint32_t dim,
                      uint32_t k, int32_t *ids, double *dists)
{
    ref_pair *all = malloc(n * sizeof *all);
    for (uint32_t i = 0; i < n; i++) {
        double s = 0;
        for (uint32_t j = 0; j < dim; j++) {
            if (m == ANN_METRIC_L2) {
                double t = (double)q[j] - (double)base[(size_t)i * dim + j];
                s += t * t;
            } else {
                s += (double)q[j] * (double)base[(size_t)i * dim + j];
            }
        }
        all[i].d = m == ANN_METRIC_L2 ? s : 1.0 - s;
        all[i].id = (int32_t)i;
    }
    qsort(all, n, sizeof *all, cmp_ref);
    for (uint32_t r = 0; r < k; r++) {
        ids[r] = all[r].id;
        dists[r] = all[r].d;
    }
    free(all);
}

static void check_gt_against_naive(ann_metric m, const char *sub, float *base, uint32_t n,
                                   float *q, uint32_t nq, uint32_t dim, uint32_t k)
{
    char d[4096], p[4200];
    path_of(d, sub);
    assert_int_equal(ds_mkdir_p(d), 0);
    snprintf(p, sizeof p, "%s/base.fbin", d);
    write_fbin(p, base, n, dim);
    snprintf(p, sizeof p, "%s/query.fbin", d);
    write_fbin(p, q, nq, dim);
    assert_int_equal(ann_bundle_finish(d, sub, m, k, NULL), 0);

    ann_bundle b;
    ann_gt gt;
    assert_int_equal(ann_bundle_open(d, &b), 0);
    assert_int_equal(ann_bundle_gt(&b, &gt), 0);
    assert_int_equal(gt.k, k);
    int32_t *ids = malloc(k * sizeof *ids);
    double *dists = malloc(k * sizeof *dists);
    for (uint32_t i = 0; i < nq; i++) {
        naive_knn(m, base, n, q + (size_t)i * dim, dim, k, ids, dists);
        for (uint32_t r = 0; r < k; r++) {
            assert_int_equal(gt.ids[(size_t)i * k + r], ids[r]);
            assert_true(gt.dists[(size_t)i * k + r] == (float)dists[r]);
        }
    }
    free(ids);
    free(dists);
    ann_gt_free(&gt);
    ann_bundle_close(&b);
}

static void test_gt_matches_naive_reference_with_ties(void **state)
{
    (void)state;
    const uint32_t n = 500, nq = 25, dim = 6, k = 20;
    float *base = int_rows(n, dim, 1), *q = int_rows(nq, dim, 2);
    /* Exact duplicates too: rows 400.. repeat rows 0.. */
    memcpy(base + 400 * dim, base, 100 * dim * sizeof(float));
    check_gt_against_naive(ANN_METRIC_L2, "naive-l2", base, n, q, nq, dim, k);
    free(base);
    free(q);

    float *cb = tu_clustered(n, 16, 8, 3, 1), *cq = tu_clustered(nq, 16, 8, 4, 1);
    check_gt_against_naive(ANN_METRIC_COSINE, "naive-cos", cb, n, cq, nq, 16, k);
    free(cb);
    free(cq);
}

/*
 * Base in 2-d: ids 0..3 at distance 1 from the origin (tied), ids 4.. far.
 * One query at the origin, k = 2: exact ground truth is [0, 1].
 */
static void tie_base(float *base, uint32_t n)
{
    const float unit[4][2] = { { 1, 0 }, { 0, 1 }, { -1, 0 }, { 0, -1 } };
    for (uint32_t i = 0; i < n; i++) {
        base[2 * i] = i < 4 ? unit[i][0] : 5.0f + (float)i;
        base[2 * i + 1] = i < 4 ? unit[i][1] : 3.0f;
    }
}

static void test_gt_check_is_tie_aware(void **state)
{
    (void)state;
    float base[2 * 12], q[2] = { 0, 0 };
    tie_base(base, 12);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(base, 12, 2, ANN_METRIC_L2, &src), 0);
    int32_t ids[2] = { 3, 2 }; /* tied alternatives to [0, 1] */
    ann_gt gt = { .nq = 1, .k = 2, .ids = ids };
    ann_gt_check c;
    assert_int_equal(ann_gt_check_sample(src, q, &gt, 10, 1, 1, &c), 0);
    assert_true(c.pass);
    assert_int_equal(c.agreed, 2);
    assert_int_equal(c.plain_agreed, 0);

    ids[1] = 7; /* far away: wrong */
    assert_int_equal(ann_gt_check_sample(src, q, &gt, 10, 1, 1, &c), 0);
    assert_false(c.pass);
    assert_int_equal(c.agreed, 1);
    assert_int_equal(c.first_bad_query, 0);

    ids[1] = 3; /* the same id twice: a duplicate is wrong */
    assert_int_equal(ann_gt_check_sample(src, q, &gt, 10, 1, 1, &c), 0);
    assert_false(c.pass);

    float dists[2] = { 1.0f, 1.5f }; /* right ids, wrong stored distance */
    ids[1] = 2;
    gt.dists = dists;
    assert_int_equal(ann_gt_check_sample(src, q, &gt, 10, 1, 1, &c), 0);
    assert_false(c.pass);
    assert_int_equal(c.dist_mismatch, 1);
    ann_vecsrc_destroy(src);
}

static void test_wrong_shipped_gt_is_replaced_and_recorded(void **state)
{
    (void)state;
    char d[4096], p[4200];
    path_of(d, "replaced");
    assert_int_equal(ds_mkdir_p(d), 0);
    float base[2 * 12], q[2] = { 0, 0 };
    tie_base(base, 12);
    snprintf(p, sizeof p, "%s/base.fbin", d);
    write_fbin(p, base, 12, 2);
    snprintf(p, sizeof p, "%s/query.fbin", d);
    write_fbin(p, q, 1, 2);
    int32_t ids[2] = { 0, 9 };
    ann_gt shipped = { .nq = 1, .k = 2, .ids = ids };
    snprintf(p, sizeof p, "%s/gt.ibin", d);
    assert_int_equal(ann_gt_save(p, &shipped), 0);
    assert_int_equal(ann_bundle_finish(d, "replaced", ANN_METRIC_L2, 2, NULL), 0);

    ann_bundle b;
    assert_int_equal(ann_bundle_open(d, &b), 0);
    json_t *chk = json_object_get(b.manifest, "gt_check");
    assert_string_equal(json_string_value(json_object_get(chk, "verdict")), "fail");
    assert_string_equal(json_string_value(json_object_get(chk, "action")),
                        "replaced by exact ground truth");
    assert_true(json_real_value(json_object_get(chk, "agreement")) == 0.5);
    ann_gt gt;
    assert_int_equal(ann_bundle_gt(&b, &gt), 0);
    assert_int_equal(gt.ids[0], 0);
    assert_int_equal(gt.ids[1], 1);
    assert_true(gt.dists[0] == 1.0f && gt.dists[1] == 1.0f);
    ann_gt_free(&gt);
    ann_bundle_close(&b);
    assert_int_equal(ann_bundle_verify(d, 10, NULL), 0);
}

static void test_verify_catches_tampering(void **state)
{
    (void)state;
    char d[4096], p[4200];
    path_of(d, "tamper");
    float *base = int_rows(200, 8, 5), *q = int_rows(10, 8, 6);
    assert_int_equal(ds_mkdir_p(d), 0);
    snprintf(p, sizeof p, "%s/base.fbin", d);
    write_fbin(p, base, 200, 8);
    snprintf(p, sizeof p, "%s/query.fbin", d);
    write_fbin(p, q, 10, 8);
    assert_int_equal(ann_bundle_finish(d, "tamper", ANN_METRIC_L2, 10, NULL), 0);
    json_t *rep = NULL;
    assert_int_equal(ann_bundle_verify(d, 100, &rep), 0);
    assert_string_equal(json_string_value(json_object_get(rep, "verdict")), "pass");
    assert_string_equal(json_string_value(json_object_get(rep, "manifest")),
                        "sealed (manifest_sha256 matches)");
    json_decref(rep);

    /* Flip one byte of a query: the checksum no longer matches. */
    size_t len = 0;
    unsigned char *bytes = tu_read_file(p, &len); /* query.fbin */
    bytes[20] ^= 0x40;
    assert_int_equal(tu_write_file(p, bytes, len), 0);
    free(bytes);
    char want[4300];
    snprintf(want, sizeof want, "%s: sha256 sha256:", p);
    assert_msg(ann_bundle_verify(d, 100, &rep), want);
    json_decref(rep);
    assert_msg(ann_bundle_verify(d, 100, &rep), "differs from manifest.json");
    assert_string_equal(json_string_value(json_object_get(rep, "verdict")), "fail");
    json_decref(rep);

    /* The manifest records its own digest: any changed field is refused
     * as a change, the provenance nobody else reads included. */
    snprintf(p, sizeof p, "%s/manifest.json", d);
    json_t *m = json_load_file(p, 0, NULL);
    assert_non_null(m);
    assert_true(json_is_string(json_object_get(m, "manifest_sha256")));
    json_object_set_new(m, "made_by", json_string("someone else"));
    assert_int_equal(json_dump_file(m, p, JSON_INDENT(2)), 0);
    char want_changed[4300];
    snprintf(want_changed, sizeof want_changed,
             "%s: changed since it was written (its content hashes to sha256:", p);
    ann_bundle b0;
    assert_msg(ann_bundle_open(d, &b0), want_changed);
    assert_msg(ann_bundle_open(d, &b0), ", manifest_sha256 records sha256:");
    json_object_set_new(m, "manifest_sha256", json_integer(1));
    assert_int_equal(json_dump_file(m, p, 0), 0);
    assert_msg(ann_bundle_open(d, &b0), "field \"manifest_sha256\" must be a string");

    /* A manifest without the seal (written by an older annlab) is read;
     * one whose n disagrees with base.fbin is refused, naming both. */
    json_object_del(m, "manifest_sha256");
    json_object_set_new(m, "n", json_integer(199));
    assert_int_equal(json_dump_file(m, p, 0), 0);
    json_decref(m);
    assert_msg(ann_bundle_open(d, &b0), "base.fbin: holds 200 x 8 but manifest.json says 199 x 8");

    /* Without a manifest the directory is not a bundle. */
    assert_int_equal(unlink(p), 0);
    ann_bundle b;
    assert_msg(ann_bundle_open(d, &b), "not a prepared dataset (no manifest.json)");
    free(base);
    free(q);
}

/* ---- bad input: exact messages, nothing left behind ---------------------- */

/* The import's output directory holds no manifest and no temporary file. */
static void assert_nothing_left(const char *out)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/manifest.json", out);
    assert_int_equal(access(p, F_OK), -1);
    DIR *dh = opendir(out);
    if (!dh)
        return; /* removed entirely: nothing left */
    struct dirent *e;
    while ((e = readdir(dh)))
        if (e->d_name[0] != '.')
            fail_msg("%s: left behind after a failed import", e->d_name);
    closedir(dh);
}

static void test_bad_input_truncated_file(void **state)
{
    (void)state;
    char b[4096], q[4096], out[4096];
    path_of(b, "trunc-base.fbin");
    path_of(q, "trunc-q.fbin");
    path_of(out, "trunc-out");
    float *x = int_rows(10, 4, 1);
    write_fbin(b, x, 10, 4);
    write_fbin(q, x, 2, 4);
    assert_int_equal(truncate(b, 8 + 9 * 16 + 3), 0);
    ds_import_files f = { .out_dir = out, .base = b, .query = q, .metric_set = 1 };
    assert_msg(ds_import_from_files(&f),
               "trunc-base.fbin: size 155 bytes does not match header n=10 dim=4 (float32): "
               "expected 168 bytes");
    assert_nothing_left(out);
    free(x);
}

static void test_bad_input_dim_mismatch(void **state)
{
    (void)state;
    char b[4096], q[4096], out[4096];
    path_of(b, "dm-base.fbin");
    path_of(q, "dm-q.fvecs");
    path_of(out, "dm-out");
    float *x = int_rows(10, 8, 1);
    write_fbin(b, x, 10, 8);
    assert_int_equal(ds_texmex_write(q, ANN_ELEM_F32, x, 3, 6), 0);
    ds_import_files f = { .out_dir = out, .base = b, .query = q, .metric_set = 1 };
    char want[8400];
    snprintf(want, sizeof want, "dim mismatch: queries %s have dim 6 but base %s has dim 8", q, b);
    assert_msg(ds_import_from_files(&f), want);
    assert_nothing_left(out);
    free(x);
}

static void test_bad_input_nan(void **state)
{
    (void)state;
    char b[4096], q[4096], out[4096];
    path_of(b, "nan-base.fbin");
    path_of(q, "nan-q.fbin");
    path_of(out, "nan-out");
    float *x = int_rows(10, 4, 1);
    write_fbin(q, x, 2, 4);
    x[3 * 4 + 1] = NAN;
    write_fbin(b, x, 10, 4);
    ds_import_files f = { .out_dir = out, .base = b, .query = q, .metric_set = 1 };
    assert_msg(ds_import_from_files(&f), "nan-base.fbin: row 3, component 1 is NaN");
    assert_nothing_left(out);
    free(x);
}

static void test_bad_input_gt_ids_out_of_range(void **state)
{
    (void)state;
    char b[4096], q[4096], g[4096], out[4096];
    path_of(b, "oor-base.fbin");
    path_of(q, "oor-q.fbin");
    path_of(g, "oor-gt.ibin");
    path_of(out, "oor-out");
    float *x = int_rows(30, 4, 1);
    write_fbin(b, x, 30, 4);
    write_fbin(q, x, 2, 4);
    int32_t ids[2 * 3] = { 0, 1, 2, 3, 30, 5 };
    ann_gt gt = { .nq = 2, .k = 3, .ids = ids };
    assert_int_equal(ann_gt_save(g, &gt), 0);
    ds_import_files f = { .out_dir = out, .base = b, .query = q, .gt = g, .metric_set = 1 };
    assert_msg(ds_import_from_files(&f), "oor-gt.ibin: query 1 rank 1: id 30 out of range [0, 30)");
    assert_nothing_left(out);

    /* Ground truth with a row count other than the queries'. */
    gt.nq = 1;
    assert_int_equal(ann_gt_save(g, &gt), 0);
    char want[8400];
    snprintf(want, sizeof want, "%s: ground truth has 1 rows but the queries %s have 2", g, q);
    assert_msg(ds_import_from_files(&f), want);
    assert_nothing_left(out);
    free(x);
}

static void test_bad_input_late_failure_leaves_nothing(void **state)
{
    (void)state;
    /* An .fvecs base whose row 4500 has another dim: the first chunk of
     * 4096 rows is already written when the reader meets it. */
    char b[4096], q[4096], out[4096];
    path_of(b, "late-base.fvecs");
    path_of(q, "late-q.fvecs");
    path_of(out, "late-out");
    const uint32_t n = 5000, dim = 2;
    float *x = int_rows(n, dim, 1);
    assert_int_equal(ds_texmex_write(b, ANN_ELEM_F32, x, n, dim), 0);
    assert_int_equal(ds_texmex_write(q, ANN_ELEM_F32, x, 4, dim), 0);
    size_t len = 0;
    unsigned char *bytes = tu_read_file(b, &len);
    bytes[4500 * 12] = 3;
    assert_int_equal(tu_write_file(b, bytes, len), 0);
    free(bytes);
    ds_import_files f = { .out_dir = out, .base = b, .query = q, .metric_set = 1 };
    assert_msg(ds_import_from_files(&f),
               "late-base.fvecs: row 4500 has dim 3, expected 2 (from row 0)");
    assert_nothing_left(out);
    free(x);
}

static void test_bad_input_hdf5_missing_dataset_via_import(void **state)
{
    (void)state;
    char h[4096], out[4096];
    path_of(h, "empty.hdf5");
    path_of(out, "h5-out");
    /* A valid HDF5 file with no datasets at all. */
    hid_t f5 = H5Fcreate(h, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f5 >= 0);
    H5Fclose(f5);
    ds_import_files f = { .out_dir = out, .hdf5 = h };
    /* the attributes are read first (a binary set is refused by its distance) */
    assert_msg(ds_import_from_files(&f), "empty.hdf5: no root attribute 'distance'");
    assert_nothing_left(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gt_matches_naive_reference_with_ties),
        cmocka_unit_test(test_gt_check_is_tie_aware),
        cmocka_unit_test(test_wrong_shipped_gt_is_replaced_and_recorded),
        cmocka_unit_test(test_verify_catches_tampering),
        cmocka_unit_test(test_bad_input_truncated_file),
        cmocka_unit_test(test_bad_input_dim_mismatch),
        cmocka_unit_test(test_bad_input_nan),
        cmocka_unit_test(test_bad_input_gt_ids_out_of_range),
        cmocka_unit_test(test_bad_input_late_failure_leaves_nothing),
        cmocka_unit_test(test_bad_input_hdf5_missing_dataset_via_import),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
