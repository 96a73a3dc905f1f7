/*
 * test_parquet.c: VectorDBBench parquet import through the Node converter.
 *
 * Parquet files are written by datasets/node/make_test_parquet.mjs (with
 * hyparquet-writer) together with the answers, computed there without the
 * converter: base and query rows in file order, and the exact neighbours
 * as base row positions.  The import must reproduce them byte for byte,
 * with and without offset indexes, across row groups and inside one large
 * row group read in small windows; bad files must be refused with a message
 * naming the file, row and field, leaving no output behind.  The real
 * VectorDBBench neighbour files in shared/data are checked when present.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/bundle.h"
#include "datasets/parquet.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "tests/support/testutil.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *node_dir(void)
{
    const char *d = getenv("ANNLAB_NODE_DIR");
    return d && *d ? d : "datasets/node";
}

/* Write the fixture files into dir with make_test_parquet.mjs. */
static void make_fixture(const char *dir, const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "node %s/make_test_parquet.mjs %s %s", node_dir(), dir, args);
    if (system(cmd) != 0)
        fail_msg("fixture writer failed: %s", cmd);
}

static void fixture_files(const char *dir, char paths[3][4096], const char *files[3])
{
    snprintf(paths[0], 4096, "%s/shuffle_train.parquet", dir);
    snprintf(paths[1], 4096, "%s/test.parquet", dir);
    snprintf(paths[2], 4096, "%s/neighbors.parquet", dir);
    for (int i = 0; i < 3; i++)
        files[i] = paths[i];
}

/* Byte-compare a converter output with the fixture's expected file. */
static void assert_same_file(const char *dir_a, const char *a, const char *dir_b, const char *b)
{
    char pa[4096], pb[4096];
    size_t la = 0, lb = 0;
    snprintf(pa, sizeof pa, "%s/%s", dir_a, a);
    snprintf(pb, sizeof pb, "%s/%s", dir_b, b);
    unsigned char *x = tu_read_file(pa, &la);
    unsigned char *y = tu_read_file(pb, &lb);
    if (!x || !y)
        fail_msg("missing %s or %s", pa, pb);
    if (la != lb)
        fail_msg("%s: %zu bytes, %s: %zu bytes", pa, la, pb, lb);
    assert_memory_equal(x, y, la);
    free(x);
    free(y);
}

/* No output and no temporary file in dir (which may not exist). */
static void assert_no_outputs(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        fail_msg("%s: left behind %s", dir, e->d_name);
    }
    closedir(d);
}

static void test_parquet_classify(void **state)
{
    (void)state;
    const char *files[] = {"/x/neighbors.parquet", "/x/shuffle_train.parquet", "/y/test.parquet"};
    ann_parquet_files f;
    assert_int_equal(ann_parquet_classify(files, 3, &f), 0);
    assert_string_equal(f.train, "/x/shuffle_train.parquet");
    assert_string_equal(f.test, "/y/test.parquet");
    assert_string_equal(f.neighbors, "/x/neighbors.parquet");

    const char *bad[] = {"/x/train.parquet", "/x/vectors.parquet"};
    assert_int_equal(ann_parquet_classify(bad, 2, &f), ANN_EPARAM);
    assert_string_equal(ann_errmsg(ANN_EPARAM),
                        "/x/vectors.parquet: not a VectorDBBench file name (want "
                        "*train*.parquet, *test*.parquet or *neighbors*.parquet)");
    const char *twice[] = {"/x/train.parquet", "/y/shuffle_train.parquet"};
    assert_int_equal(ann_parquet_classify(twice, 2, &f), ANN_EPARAM);
    assert_string_equal(ann_errmsg(ANN_EPARAM),
                        "/y/shuffle_train.parquet: a second train file (already have "
                        "/x/train.parquet)");
}

/* Several row groups with offset indexes: a complete bundle, byte-exact. */
static void test_parquet_import_bundle(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pq");
    char out[4096], paths[3][4096];
    const char *files[3];
    make_fixture(dir, "--n 3000 --nq 30 --dim 12 --k 7 --seed 5 --row-group 1000 "
                      "--page-bytes 2000");
    fixture_files(dir, paths, files);
    snprintf(out, sizeof out, "%s/bundle", dir);
    int rc = ann_import_parquet(files, 3, out, NULL, ANN_METRIC_L2, 0, 0);
    if (rc)
        fail_msg("import: %s", ann_errmsg(rc));

    assert_same_file(out, "base.fbin", dir, "expect_base.fbin");
    assert_same_file(out, "query.fbin", dir, "expect_query.fbin");
    ann_bundle b;
    assert_int_equal(ann_bundle_open(out, &b), 0);
    assert_string_equal(b.name, "bundle");
    assert_int_equal(b.n, 3000);
    assert_int_equal(b.dim, 12);
    assert_int_equal(b.nq, 30);
    assert_int_equal(b.gt_k, 7);
    ann_gt gt, want;
    char path[4096];
    snprintf(path, sizeof path, "%s/expect_gt.ibin", dir);
    assert_int_equal(ann_gt_load(path, 3000, &want), 0);
    assert_int_equal(ann_bundle_gt(&b, &gt), 0);
    assert_int_equal(gt.k, 7);
    assert_memory_equal(gt.ids, want.ids, (size_t)30 * 7 * sizeof *gt.ids);
    assert_non_null(gt.dists); /* added by the bundle's check */
    json_t *check = json_object_get(b.manifest, "gt_check");
    assert_string_equal(json_string_value(json_object_get(check, "source")), "shipped");
    json_t *conv = json_object_get(b.manifest, "converter");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(conv, "base"),
                                                        "row_groups")),
                     3);
    assert_int_equal(json_array_size(json_object_get(json_object_get(b.manifest, "source"),
                                                     "files")),
                     3);
    json_t *report = NULL;
    rc = ann_bundle_verify(out, 10, &report);
    json_decref(report);
    assert_int_equal(rc, 0);
    ann_gt_free(&gt);
    ann_gt_free(&want);
    ann_bundle_close(&b);
    tu_rmdir(dir);
}

/* One row group, no offset index, sparse ids, read in windows of 100 rows:
 * the converter builds the page index itself; the result is the same. */
static void test_parquet_one_row_group_without_index(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pq1");
    char out[4096], paths[3][4096];
    const char *files[3];
    make_fixture(dir, "--n 2500 --nq 12 --dim 10 --k 5 --seed 8 --no-offset-index "
                      "--page-bytes 1500 --sparse-ids");
    fixture_files(dir, paths, files);
    snprintf(out, sizeof out, "%s/out", dir);
    ann_parquet_files f = {.train = files[0], .test = files[1], .neighbors = files[2]};
    ann_parquet_opts o = {.window_rows = 100};
    json_t *summary = NULL;
    int rc = ann_parquet_convert(&f, out, ANN_METRIC_L2, &o, &summary);
    if (rc)
        fail_msg("convert: %s", ann_errmsg(rc));
    json_t *base = json_object_get(summary, "base");
    assert_int_equal(json_integer_value(json_object_get(base, "row_groups")), 1);
    assert_int_equal(json_integer_value(json_object_get(base, "synthetic_offset_indexes")), 2);
    assert_int_equal(json_integer_value(json_object_get(summary, "window_rows")), 100);
    assert_same_file(out, "base.fbin", dir, "expect_base.fbin");
    assert_same_file(out, "query.fbin", dir, "expect_query.fbin");
    assert_same_file(out, "gt.ibin", dir, "expect_gt.ibin");
    json_decref(summary);

    /* gt_k keeps the first neighbours of every row; more than the file has fails */
    char path[4096];
    ann_gt want, got;
    snprintf(path, sizeof path, "%s/expect_gt.ibin", dir);
    assert_int_equal(ann_gt_load(path, 2500, &want), 0);
    o.gt_k = 3;
    assert_int_equal(ann_parquet_convert(&f, out, ANN_METRIC_L2, &o, NULL), 0);
    snprintf(path, sizeof path, "%s/gt.ibin", out);
    assert_int_equal(ann_gt_load(path, 2500, &got), 0);
    assert_int_equal(got.nq, 12);
    assert_int_equal(got.k, 3);
    for (uint32_t q = 0; q < 12; q++)
        assert_memory_equal(got.ids + q * 3, want.ids + q * 5, 3 * sizeof *got.ids);
    ann_gt_free(&got);
    ann_gt_free(&want);
    o.gt_k = 6;
    int rc6 = ann_parquet_convert(&f, out, ANN_METRIC_L2, &o, NULL);
    assert_int_equal(rc6, ANN_EFORMAT);
    assert_non_null(strstr(ann_errmsg(rc6), "neighbors.parquet: row 0: neighbors_id has 5 ids, "
                                            "expected 6"));
    tu_rmdir(dir);
}

/* Cosine: rows normalised to unit length, directions kept. */
static void test_parquet_cosine_normalised(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pqc");
    char out[4096], paths[3][4096], path[4096];
    const char *files[3];
    make_fixture(dir, "--n 400 --nq 5 --dim 9 --k 3 --seed 2");
    fixture_files(dir, paths, files);
    snprintf(out, sizeof out, "%s/out", dir);
    ann_parquet_files f = {.train = files[0], .test = files[1]};
    assert_int_equal(ann_parquet_convert(&f, out, ANN_METRIC_COSINE, NULL, NULL), 0);
    ann_vecfile got = {.fd = -1}, want = {.fd = -1};
    snprintf(path, sizeof path, "%s/base.fbin", out);
    assert_int_equal(ann_vecfile_open(path, &got), 0);
    snprintf(path, sizeof path, "%s/expect_base.fbin", dir);
    assert_int_equal(ann_vecfile_open(path, &want), 0);
    float g[400 * 9], w[400 * 9];
    assert_int_equal(ann_vecfile_read_f32(&got, 0, 400, g), 0);
    assert_int_equal(ann_vecfile_read_f32(&want, 0, 400, w), 0);
    for (int i = 0; i < 400; i++) {
        double ng = 0, nw = 0;
        for (int d = 0; d < 9; d++) {
            ng += (double)g[i * 9 + d] * g[i * 9 + d];
            nw += (double)w[i * 9 + d] * w[i * 9 + d];
        }
        assert_true(fabs(ng - 1.0) < 1e-5);
        for (int d = 0; d < 9; d++)
            assert_true(fabs(g[i * 9 + d] - w[i * 9 + d] / sqrt(nw)) < 1e-6);
    }
    ann_vecfile_close(&got);
    ann_vecfile_close(&want);
    tu_rmdir(dir);
}

/* Each planted defect is refused, naming file, row and field; nothing is left. */
static void test_parquet_bad_inputs(void **state)
{
    (void)state;
    static const struct {
        const char *bad, *file, *msg;
    } cases[] = {
        {"unknown-neighbour", "neighbors.parquet",
         ": row 3: neighbors_id[1] = 1000000007 is not an id of "},
        {"short-emb", "shuffle_train.parquet", ": row 5: emb has 5 values, expected 6"},
        {"nan", "shuffle_train.parquet", ": row 7: emb[2] is NaN, not a finite number"},
        {"no-emb", "shuffle_train.parquet", ": no column 'emb' (columns: id, vector)"},
        {"dup-id", "shuffle_train.parquet", ": id "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = tu_tmpdir("pqbad");
        char args[256], out[4096], paths[3][4096], want[4096];
        const char *files[3];
        snprintf(args, sizeof args, "--n 300 --nq 10 --dim 6 --k 5 --bad %s", cases[i].bad);
        make_fixture(dir, args);
        fixture_files(dir, paths, files);
        snprintf(out, sizeof out, "%s/out", dir);
        int rc = ann_import_parquet(files, 3, out, NULL, ANN_METRIC_L2, 0, 0);
        assert_int_equal(rc, ANN_EFORMAT);
        snprintf(want, sizeof want, "%s/%s%s", dir, cases[i].file, cases[i].msg);
        if (!strstr(ann_errmsg(rc), want))
            fail_msg("%s: message '%s' lacks '%s'", cases[i].bad, ann_errmsg(rc), want);
        assert_no_outputs(out);
        tu_rmdir(dir);
    }
}

/* A file without offset indexes whose first page header is garbage: the
 * page walk refuses it, naming the file, column and byte. */
static void test_parquet_corrupt_page_header(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pqhdr");
    char out[4096], paths[3][4096], want[4096];
    const char *files[3];
    make_fixture(dir, "--n 200 --nq 3 --dim 4 --k 2 --no-offset-index");
    fixture_files(dir, paths, files);
    size_t len = 0;
    unsigned char *bytes = tu_read_file(files[0], &len);
    assert_non_null(bytes);
    for (size_t i = 4; i < 30; i += 2) { /* a run of list headers with no end */
        bytes[i] = 0x19;
        bytes[i + 1] = 0x1c;
    }
    assert_int_equal(tu_write_file(files[0], bytes, len), 0);
    free(bytes);
    snprintf(out, sizeof out, "%s/out", dir);
    int rc = ann_import_parquet(files, 3, out, NULL, ANN_METRIC_L2, 0, 0);
    assert_int_equal(rc, ANN_EFORMAT);
    snprintf(want, sizeof want, "%s: column id: unreadable page header at byte 4", files[0]);
    assert_string_equal(ann_errmsg(rc), want);
    assert_no_outputs(out);
    tu_rmdir(dir);
}

/* Missing converter inputs and files are clear errors too. */
static void test_parquet_missing_file(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pqmiss");
    char out[4096], train[4096], test[4096];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(train, sizeof train, "%s/train.parquet", dir);
    snprintf(test, sizeof test, "%s/test.parquet", dir);
    assert_int_equal(tu_write_file(test, "PAR1 not really", 15), 0);
    const char *files[] = {train, test};
    int rc = ann_import_parquet(files, 2, out, NULL, ANN_METRIC_L2, 0, 0);
    assert_int_equal(rc, ANN_EFORMAT);
    char want[4096];
    snprintf(want, sizeof want, "%s: no such file", train);
    assert_string_equal(ann_errmsg(rc), want);
    const char *only_test[] = {test};
    assert_int_equal(ann_import_parquet(only_test, 1, out, NULL, ANN_METRIC_L2, 0, 0), ANN_EPARAM);
    assert_no_outputs(out);
    tu_rmdir(dir);
}

/* The real VectorDBBench neighbour files: 1,000 queries x 1,000 ids that
 * parse; on the first, the converter's own page index (built from the page
 * headers, V1 pages of a list column) agrees with the file's and reads the
 * same ids. */
static void test_parquet_real_neighbors(void **state)
{
    (void)state;
    const char *shared = tu_shared_data();
    if (!shared)
        skip();
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/vectordbbench-cohere-neighbors", shared);
    DIR *d = opendir(dir);
    if (!d)
        skip();
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 8, ".parquet") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int is_10m = strstr(e->d_name, "10m") != NULL;
        json_t *s1 = NULL, *s2 = NULL;
        ann_parquet_files f = {.neighbors = path};
        ann_parquet_opts o = {.window_rows = 128};
        int rc = ann_parquet_convert(&f, NULL, ANN_METRIC_COSINE, &o, &s1);
        if (rc)
            fail_msg("%s: %s", path, ann_errmsg(rc));
        json_t *n1 = json_object_get(s1, "neighbors");
        assert_int_equal(json_integer_value(json_object_get(n1, "rows")), 1000);
        assert_int_equal(json_integer_value(json_object_get(n1, "k")), 1000);
        json_int_t lo = json_integer_value(json_object_get(n1, "min_id"));
        json_int_t hi = json_integer_value(json_object_get(n1, "max_id"));
        assert_true(lo >= 0 && lo < hi);
        assert_true(hi < (is_10m ? 10000000 : 1000000));
        if (seen == 0) {
            o.own_offset_index = 1;
            o.window_rows = 300;
            rc = ann_parquet_convert(&f, NULL, ANN_METRIC_COSINE, &o, &s2);
            if (rc)
                fail_msg("%s (own index): %s", path, ann_errmsg(rc));
            json_t *n2 = json_object_get(s2, "neighbors");
            assert_string_equal(json_string_value(json_object_get(n1, "id_fingerprint")),
                                json_string_value(json_object_get(n2, "id_fingerprint")));
            assert_true(json_integer_value(json_object_get(n2, "synthetic_offset_indexes")) > 0);
        }
        json_decref(s1);
        json_decref(s2);
        seen++;
    }
    closedir(d);
    if (!seen)
        skip();
}


/*
 * hubness.mjs: the figures of a hand-worked gt.ibin (ids then distances,
 * as bundles write it), the real VectorDBBench 1% file's figures quoted in
 * datasets/README.md, and errors naming the file or the option.
 */
static void test_hubness_script(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("hub");
    char path[4096], cmd[8192], out[8192];
    /* 4 queries, depth 3, counted at k 2 over n 10: row 1 three times,
     * rows 2..6 once, four rows never; queries 0, 1, 2 share row 1 */
    int32_t ids[4][3] = {{1, 2, 9}, {1, 3, 9}, {4, 1, 9}, {5, 6, 9}};
    snprintf(path, sizeof path, "%s/gt.ibin", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint32_t hdr[2] = {4, 3};
    float dist[12] = {0};
    assert_int_equal(fwrite(hdr, sizeof hdr, 1, f), 1);
    assert_int_equal(fwrite(ids, sizeof ids, 1, f), 1);
    assert_int_equal(fwrite(dist, sizeof dist, 1, f), 1);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "node %s/hubness.mjs --n 10 --k 2 %s 2>&1", node_dir(), path);
    assert_int_equal(tu_run_capture(cmd, out, sizeof out), 0);
    /* mean 0.8; m2 = (2.2^2 + 5 * 0.2^2 + 4 * 0.8^2) / 10 = 0.76, m3 = 0.864,
     * skewness 0.864 / 0.76^1.5 = 1.304; uniform: 10 (1 - e^-0.8) = 5.5 */
    char want[8192];
    snprintf(want, sizeof want,
             "{\"file\":\"%s\",\"queries\":4,\"k\":2,\"n\":10,\"distinct\":6,"
             "\"distinct_if_uniform\":6,\"max_occurrence\":3,\"top1pct_slot_share\":0.375,"
             "\"skewness\":1.304,\"query_pairs_sharing\":3,\"query_pairs\":6}\n",
             path);
    assert_string_equal(out, want);

    /* errors: a truncated file, k above the depth, no --n */
    assert_int_equal(truncate(path, 8 + 4 * 11), 0);
    assert_int_equal(tu_run_capture(cmd, out, sizeof out), 1);
    snprintf(want, sizeof want,
             "hubness: %s: 52 bytes, expected 56 (ids) or 104 (ids and distances) for 4 x 3\n",
             path);
    assert_string_equal(out, want);
    snprintf(cmd, sizeof cmd, "node %s/hubness.mjs --k 2 %s 2>&1", node_dir(), path);
    assert_int_equal(tu_run_capture(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "hubness: --n N is required"));

    /* the real file: figures quoted in datasets/README.md ("Hubs") */
    const char *shared = tu_shared_data();
    if (shared) {
        snprintf(path, sizeof path,
                 "%s/vectordbbench-cohere-neighbors/"
                 "cohere_medium_1m__neighbors_labels_label_1p.parquet",
                 shared);
        if (access(path, R_OK) == 0) {
            snprintf(cmd, sizeof cmd, "node %s/hubness.mjs --n 10000 --k 100 %s 2>&1", node_dir(),
                     path);
            assert_int_equal(tu_run_capture(cmd, out, sizeof out), 0);
            assert_non_null(strstr(out, "\"distinct\":8064,"));
            assert_non_null(strstr(out, "\"max_occurrence\":487,"));
            assert_non_null(strstr(out, "\"query_pairs_sharing\":428878,"));
        } else {
            print_message("%s absent: real-file figures not checked\n", path);
        }
    }
    tu_rmdir(dir);
}

/* `annlab dataset import *.parquet --out DIR --metric M` */
static void test_parquet_cli_import(void **state)
{
    (void)state;
    const char *bin = getenv("ANNLAB_BIN");
    if (!bin)
        skip();
    char *dir = tu_tmpdir("pqcli");
    char cmd[16384], out[8192];
    make_fixture(dir, "--n 500 --nq 8 --dim 6 --k 4 --seed 3");
    snprintf(cmd, sizeof cmd,
             "%s dataset import %s/shuffle_train.parquet %s/test.parquet %s/neighbors.parquet "
             "--out %s/b 2>&1",
             bin, dir, dir, dir, dir);
    assert_int_equal(tu_run_capture(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "parquet files carry no metric: give --metric l2, ip or cosine"));

    snprintf(cmd, sizeof cmd,
             "%s dataset import %s/shuffle_train.parquet %s/test.parquet %s/neighbors.parquet "
             "--out %s/b --metric cosine --name cli-pq >/dev/null 2>&1",
             bin, dir, dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/b", dir);
    ann_bundle b;
    assert_int_equal(ann_bundle_open(path, &b), 0);
    assert_string_equal(b.name, "cli-pq");
    assert_int_equal(b.metric, ANN_METRIC_COSINE);
    assert_int_equal(b.n, 500);
    assert_int_equal(b.nq, 8);
    ann_bundle_close(&b);
    tu_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parquet_classify),
        cmocka_unit_test(test_parquet_import_bundle),
        cmocka_unit_test(test_parquet_one_row_group_without_index),
        cmocka_unit_test(test_parquet_cosine_normalised),
        cmocka_unit_test(test_parquet_bad_inputs),
        cmocka_unit_test(test_parquet_corrupt_page_header),
        cmocka_unit_test(test_parquet_missing_file),
        cmocka_unit_test(test_parquet_real_neighbors),
        cmocka_unit_test(test_hubness_script),
        cmocka_unit_test(test_parquet_cli_import),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
