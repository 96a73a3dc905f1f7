/*
 * test_export.c: `annlab export` read back by each tool's own conventions
 * (tests/support/read_export.py: h5py and ann-benchmarks' metric code for
 * the HDF5 results, csv.DictReader for big-ann's CSV, json for
 * VectorDBBench's result file).  The run is written here by hand, so every
 * figure the readers compute is known exactly: an exact engine (recall 1),
 * an approximate one whose last two answers per query are the two farthest
 * points (recall 0.8), measured at 1 and 2 threads, a cold cell, a capped
 * and a failed cell (both left out); on an l2 and a cosine bundle.
 */
#include "datasets/bundle.h"
#include "engines/core/exact.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "harness/export.h"
#include "tests/support/harness_fixture.h"
#include "tests/support/hdf5_fixture.h"
#include "tests/support/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

enum { N = 500, DIM = 8, NQ = 20, K = 10 };
#define FINISHED 1796032864 /* 2026-12-01 */

typedef struct fx {
    char *dir;
    char bundle[4200], run[4200];
    ann_metric metric;
} fx;

static void write_latencies(const char *path, double base_ns)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# repeat query latency_ns (single thread, CLOCK_MONOTONIC)\n");
    /* repeat 1 is the faster one: ann-benchmarks keeps the best run */
    for (int r = 0; r < 2; r++)
        for (int q = 0; q < NQ; q++)
            fprintf(f, "%d %d %.0f\n", r, q, (r == 0 ? 2 : 1) * (base_ns + 1000.0 * q));
    fclose(f);
}

static json_t *cell(const char *id, const char *label, const char *engine, const char *mode, int threads,
                    double qps, double recall, double lat_base_ns)
{
    json_t *c = json_pack(
        "{s:s, s:s, s:s, s:{}, s:{}, s:{}, s:s, s:i, s:n, s:s, s:n, s:f, s:f, s:i, s:i, s:i,"
        " s:{s:f, s:f, s:f, s:f}, s:f, s:{s:f, s:f, s:f}, s:{s:f, s:{s:f}},"
        " s:{s:I}, s:{s:f, s:I}, s:{s:s, s:s}, s:s, s:s, s:I}",
        "id", id, "label", label, "engine", engine, "build", "open", "search", "mode", mode,
        "threads", threads, "memory_cap_bytes", "status", "ok", "reason", "recall", recall,
        "recall_plain", recall, "queries", NQ, "repeats", 2, "k", K, "latency_us", "p50",
        lat_base_ns / 1000 + 10, "p95", lat_base_ns / 1000 + 18, "p99", lat_base_ns / 1000 + 19,
        "mean", lat_base_ns / 1000 + 9.5, "qps", qps, "engine_stats", "reads", 3.0, "full_dists",
        400.0, "code_dists", 100.0, "device", "reads_per_query", 157.0, "cgroup", "reads_per_query",
        0.0, "memory", "peak_rss_bytes", (json_int_t)10 << 20, "index", "build_seconds", 0.5,
        "bytes_on_disk", (json_int_t)4 << 20, "dataset", "name", "fixture", "checksum", "sha256:x",
        "latency_file", "", "neighbors_file", "", "finished_at", (json_int_t)FINISHED);
    assert_non_null(c);
    char rel[64];
    snprintf(rel, sizeof rel, "latencies/%s.txt", id);
    json_object_set_new(c, "latency_file", json_string(rel));
    snprintf(rel, sizeof rel, "neighbors/%s.ibin", id);
    json_object_set_new(c, "neighbors_file", json_string(rel));
    return c;
}

/* Ground-truth ids, with the last two of each query swapped for the two
 * points farthest from it when far != 0. */
static void write_neighbors(const fx *f, const char *id, int far)
{
    ann_bundle b;
    ann_gt gt;
    ann_vecsrc *base = NULL;
    float *q = NULL, *x = malloc((size_t)N * DIM * sizeof *x);
    assert_int_equal(ann_bundle_open(f->bundle, &b), 0);
    assert_int_equal(ann_bundle_gt(&b, &gt), 0);
    assert_int_equal(ann_bundle_queries(&b, &q), 0);
    assert_int_equal(ann_bundle_base(&b, &base), 0);
    assert_int_equal(ann_vecsrc_read(base, 0, N, x), 0);
    ann_gt out = { .nq = NQ, .k = K, .ids = malloc(NQ * K * sizeof(int32_t)) };
    for (int i = 0; i < NQ; i++) {
        for (int r = 0; r < K; r++)
            out.ids[i * K + r] = gt.ids[i * gt.k + r];
        if (!far)
            continue;
        int a = -1, c = -1;
        double da = -1, dc = -1;
        for (int j = 0; j < N; j++) {
            double d = ann_distance_f64(b.metric, q + (size_t)i * DIM, x + (size_t)j * DIM, DIM);
            if (d > da) {
                c = a, dc = da;
                a = j, da = d;
            } else if (d > dc) {
                c = j, dc = d;
            }
        }
        out.ids[i * K + K - 2] = a;
        out.ids[i * K + K - 1] = c;
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/neighbors/%s.ibin", f->run, id);
    assert_int_equal(ann_gt_save(path, &out), 0);
    free(out.ids);
    free(q);
    free(x);
    ann_vecsrc_destroy(base);
    ann_gt_free(&gt);
    ann_bundle_close(&b);
}

static void make_run(fx *f)
{
    char p[4400];
    snprintf(f->run, sizeof f->run, "%s/run", f->dir);
    mkdir(f->run, 0755);
    snprintf(p, sizeof p, "%s/latencies", f->run);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/neighbors", f->run);
    mkdir(p, 0755);
    json_t *cfg = json_pack("{s:s, s:i}", "name", "exp", "k", K);
    snprintf(p, sizeof p, "%s/config.json", f->run);
    assert_int_equal(hf_write_json(p, cfg), 0);
    json_decref(cfg);
    json_t *m = json_pack("{s:{s:s, s:s}, s:s}", "dataset", "dir", f->bundle, "name", "fixture",
                          "git_commit", "0123abcd");
    snprintf(p, sizeof p, "%s/machine.json", f->run);
    assert_int_equal(hf_write_json(p, m), 0);
    json_decref(m);
    json_t *cells[6] = {
        cell("a1", "exact", "flat", "warm", 1, 9000, 1.0, 100000),
        cell("a2", "exact", "flat", "cold", 1, 3000, 1.0, 300000),
        cell("b1", "approx", "hnsw-record", "warm", 1, 20000, 0.8, 40000),
        cell("b2", "approx", "hnsw-record", "warm", 2, 35000, 0.8, 40000),
        cell("c1", "approx", "hnsw-record", "warm", 1, 100, 0.8, 40000),
        cell("d1", "broken", "flat", "warm", 1, 0, 0, 0),
    };
    for (int i = 2; i < 5; i++) {
        json_object_set_new(json_object_get(cells[i], "build"), "M", json_integer(8));
        json_object_set_new(json_object_get(cells[i], "search"), "ef_search", json_integer(10));
    }
    json_object_set_new(cells[4], "memory_cap_bytes", json_integer(256 << 20));
    json_object_set_new(cells[5], "status", json_string("error"));
    snprintf(p, sizeof p, "%s/cells.jsonl", f->run);
    FILE *fp = fopen(p, "w");
    for (int i = 0; i < 6; i++) {
        char *s = json_dumps(cells[i], JSON_COMPACT);
        fprintf(fp, "%s\n", s);
        free(s);
        char lat[4500];
        snprintf(lat, sizeof lat, "%s/latencies/%s.txt", f->run, json_string_value(json_object_get(cells[i], "id")));
        write_latencies(lat, json_number_value(json_object_get(json_object_get(cells[i], "latency_us"), "p50")) * 1000 - 10000);
        json_decref(cells[i]);
    }
    fclose(fp);
    write_neighbors(f, "a1", 0);
    write_neighbors(f, "a2", 0);
    write_neighbors(f, "b1", 1);
    write_neighbors(f, "b2", 1);
    write_neighbors(f, "c1", 1);
}

static int setup_metric(void **state, ann_metric metric)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir("export");
    f->metric = metric;
    snprintf(f->bundle, sizeof f->bundle, "%s/bundle", f->dir);
    if (hf_bundle_metric(f->bundle, N, DIM, NQ, 10, K, 5, metric) != 0)
        return -1;
    *state = f;
    return 0;
}

static int setup_l2(void **state)
{
    return setup_metric(state, ANN_METRIC_L2);
}

static int setup_cosine(void **state)
{
    return setup_metric(state, ANN_METRIC_COSINE);
}

static int teardown(void **state)
{
    fx *f = *state;
    tu_rmdir(f->dir);
    free(f);
    return 0;
}

/* Run tests/support/read_export.py with args; its JSON output. */
static json_t *read_back(const char *args)
{
    char script[4200], cmd[9000];
    if (tu_support_script("read_export.py", script, sizeof script) != 0 || !tu_python_has("h5py, numpy"))
        fail_msg("python3-h5py is a test dependency: run `make deps`");
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s", tu_python(), script, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t e;
    json_t *j = json_loadf(p, 0, &e);
    int st = pclose(p);
    if (!j || st != 0)
        fail_msg("%s: exit %d, %s", cmd, st, j ? "" : e.text);
    return j;
}

static const json_t *by(const json_t *arr, const char *key, const char *val)
{
    size_t i;
    const json_t *r;
    json_array_foreach(arr, i, r)
        if (!strcmp(json_string_value(json_object_get(r, key)) ?: "", val))
            return r;
    fail_msg("no entry with %s = %s", key, val);
    return NULL;
}

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_number(v))
        fail_msg("%s is not a number", k);
    return json_number_value(v);
}

static void near(double got, double want, double tol)
{
    if (fabs(got - want) > tol)
        fail_msg("got %.9g, want %.9g (+- %g)", got, want, tol);
}

static void test_ann_benchmarks(void **state)
{
    fx *f = *state;
    make_run(f);
    char out[4400], args[9000];
    snprintf(out, sizeof out, "%s/ab", f->dir);
    int files = 0;
    int rc = harness_export(f->run, HARNESS_EXPORT_ANN_BENCHMARKS, out, NULL, &files);
    if (rc)
        fail_msg("%s", ann_errmsg(rc));
    assert_int_equal(files, 3); /* exact, exact-cold, approx: not the capped or failed cell */
    snprintf(args, sizeof args, "ann-benchmarks '%s' '%s' fixture %d", out, f->bundle, K);
    json_t *res = read_back(args);
    assert_int_equal(json_array_size(res), 3);
    const json_t *a = by(res, "file", "results/fixture/10/approx/M_8_ef_search_10.hdf5");
    const json_t *e = by(res, "file", "results/fixture/10/exact/defaults.hdf5");
    const json_t *c = by(res, "file", "results/fixture/10/exact-cold/defaults.hdf5");
    /* recall as ann-benchmarks computes it, from our distances against the dataset's */
    near(num(a, "k-nn"), 0.8, 1e-12);
    near(num(e, "k-nn"), 1.0, 1e-12);
    near(num(c, "k-nn"), 1.0, 1e-12);
    /* qps = 1 / best_search_time: the faster repeat's mean (40 us + 9.5 us) */
    near(num(a, "qps"), 1 / 49.5e-6, 1e-3);
    near(num(e, "qps"), 1 / 109.5e-6, 1e-3);
    /* p50 of that repeat's times, in ms */
    near(num(e, "p50"), 0.1095, 1e-7);
    near(num(a, "distcomps"), 500, 1e-9);
    near(num(a, "build"), 0.5, 1e-12);
    near(num(a, "indexsize"), 10240, 1e-9);
    near(num(a, "candidates"), 10, 1e-12);
    assert_string_equal(json_string_value(json_object_get(a, "algo")), "approx");
    assert_string_equal(json_string_value(json_object_get(c, "algo")), "exact-cold");
    assert_string_equal(json_string_value(json_object_get(a, "name")), "approx (M=8, ef_search=10)");
    assert_string_equal(json_string_value(json_object_get(e, "name")), "exact (defaults)");
    assert_string_equal(json_string_value(json_object_get(a, "distance")),
                        f->metric == ANN_METRIC_L2 ? "euclidean" : "angular");
    assert_string_equal(json_string_value(json_object_get(a, "neighbors_dtype")), "int32");
    assert_int_equal(json_integer_value(json_object_get(a, "nq")), NQ);
    json_decref(res);
}

static void test_big_ann(void **state)
{
    fx *f = *state;
    make_run(f);
    char out[4400], args[9000];
    snprintf(out, sizeof out, "%s/bigann", f->dir);
    int files = 0;
    int rc = harness_export(f->run, HARNESS_EXPORT_BIG_ANN, out, NULL, &files);
    if (rc)
        fail_msg("%s", ann_errmsg(rc));
    assert_int_equal(files, 1);
    snprintf(args, sizeof args, "big-ann '%s/exp.csv'", out);
    json_t *rows = read_back(args);
    assert_int_equal(json_array_size(rows), 3);
    const json_t *a = by(rows, "algorithm", "approx");
    assert_string_equal(json_string_value(json_object_get(a, "parameters")), "approx (M=8, ef_search=10)");
    assert_string_equal(json_string_value(json_object_get(a, "dataset")), "fixture");
    near(num(a, "count"), 10, 0);
    near(num(a, "qps"), 35000, 1e-9); /* the best over its thread counts */
    near(num(a, "distcomps"), 500, 1e-9);
    near(num(a, "build"), 0.5, 1e-12);
    near(num(a, "indexsize"), 10240, 1e-9);
    near(num(a, "mean_ssd_ios"), 0, 0); /* its own cgroup's reads, not the disk's 157 */
    near(num(a, "mean_latency"), 49.5, 1e-9);
    near(num(a, "recall"), 0.8, 1e-12);
    by(rows, "algorithm", "exact-cold");
    json_decref(rows);
}

static void test_vectordbbench(void **state)
{
    fx *f = *state;
    make_run(f);
    char out[4400], args[9000];
    snprintf(out, sizeof out, "%s/vdb", f->dir);
    int files = 0;
    int rc = harness_export(f->run, HARNESS_EXPORT_VECTORDBBENCH, out, NULL, &files);
    if (rc)
        fail_msg("%s", ann_errmsg(rc));
    char date[16];
    time_t t = FINISHED;
    struct tm tm;
    strftime(date, sizeof date, "%Y%m%d", gmtime_r(&t, &tm));
    snprintf(args, sizeof args, "vectordbbench '%s/result_%s_exp_annlab.json'", out, date);
    json_t *d = read_back(args);
    assert_string_equal(json_string_value(json_object_get(d, "task_label")), "exp");
    const json_t *results = json_object_get(d, "results");
    assert_int_equal(json_array_size(results), 3);
    const json_t *a = NULL;
    size_t i;
    const json_t *r;
    json_array_foreach(results, i, r) {
        const char *label = json_string_value(
            json_object_get(json_object_get(json_object_get(r, "task_config"), "db_config"), "db_label"));
        if (!strcmp(label, "approx"))
            a = r;
    }
    assert_non_null(a);
    const json_t *m = json_object_get(a, "metrics");
    near(num(m, "qps"), 35000, 1e-9);
    near(num(m, "serial_latency_p99"), 59e-6, 1e-12); /* seconds */
    near(num(m, "recall"), 0.8, 1e-12);
    double dcg = 0, ideal = 0;
    for (int j = 0; j < K; j++) {
        ideal += 1 / log2(j + 2.0);
        if (j < K - 2)
            dcg += 1 / log2(j + 2.0);
    }
    near(num(m, "ndcg"), dcg / ideal, 1e-12);
    near(num(m, "load_duration"), 0.5, 1e-12);
    const json_t *conc = json_object_get(m, "conc_num_list");
    assert_int_equal(json_array_size(conc), 2);
    const json_t *tc = json_object_get(a, "task_config");
    assert_string_equal(json_string_value(json_object_get(tc, "db")), "test");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(tc, "case_config"), "k")), K);
    assert_string_equal(json_string_value(json_object_get(json_object_get(tc, "db_case_config"), "metric_type")),
                        f->metric == ANN_METRIC_L2 ? "L2" : "COSINE");
    json_decref(d);
}

static void test_refusals(void **state)
{
    fx *f = *state;
    make_run(f);
    harness_export_format fmt;
    assert_int_equal(harness_export_format_parse("big-ann", &fmt), 0);
    assert_int_equal(fmt, HARNESS_EXPORT_BIG_ANN);
    assert_int_equal(harness_export_format_parse("faiss", &fmt), -1);
    char out[4400], p[4400];
    snprintf(out, sizeof out, "%s/none", f->dir);
    int files = 0;
    int rc = harness_export(f->dir, HARNESS_EXPORT_BIG_ANN, out, NULL, &files);
    assert_int_equal(rc, ANN_ENOTFOUND);
    assert_non_null(strstr(ann_errmsg(rc), "not a run directory (no cells.jsonl)"));
    /* a run from before per-query results were kept */
    snprintf(p, sizeof p, "%s/neighbors/a1.ibin", f->run);
    unlink(p);
    rc = harness_export(f->run, HARNESS_EXPORT_ANN_BENCHMARKS, out, NULL, &files);
    assert_true(rc < 0);
    if (!strstr(ann_errmsg(rc), "neighbors/a1.ibin"))
        fail_msg("%s", ann_errmsg(rc));
}

/* `annlab export`: an existing --out is refused unless --force; usage errors exit 2. */
static void test_cli_out_and_usage(void **state)
{
    fx *f = *state;
    make_run(f);
    char out[4400], p[4500];
    snprintf(out, sizeof out, "%s/cli", f->dir);
    char *ok[] = { "export", f->run, "--format", "big-ann", "--out", out, NULL };
    assert_int_equal(harness_export_main(6, ok), 0);
    snprintf(p, sizeof p, "%s/exp.csv", out);
    assert_int_equal(access(p, R_OK), 0);
    /* again: refused, the file left as it is */
    assert_int_equal(unlink(p), 0);
    assert_int_equal(tu_write_file(p, "mine\n", 5), 0);
    assert_int_equal(harness_export_main(6, ok), 2);
    size_t len = 0;
    char *kept = tu_read_file(p, &len);
    assert_int_equal(len, 5);
    assert_memory_equal(kept, "mine\n", 5);
    free(kept);
    char *forced[] = { "export", f->run, "--format", "big-ann", "--out", out, "--force", NULL };
    assert_int_equal(harness_export_main(7, forced), 0);
    kept = tu_read_file(p, &len);
    assert_true(len > 5 && !memcmp(kept, "algorithm,parameters,", 21));
    free(kept);
    /* an empty directory is not "existing" */
    snprintf(out, sizeof out, "%s/empty", f->dir);
    mkdir(out, 0755);
    char *empty[] = { "export", f->run, "--format", "big-ann", "--out", out, NULL };
    assert_int_equal(harness_export_main(6, empty), 0);
    char *bad[] = { "export", f->run, "--format", "faiss", NULL };
    assert_int_equal(harness_export_main(4, bad), 2);
    char *noformat[] = { "export", f->run, NULL };
    assert_int_equal(harness_export_main(2, noformat), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ann_benchmarks, setup_l2, teardown),
        cmocka_unit_test_setup_teardown(test_ann_benchmarks, setup_cosine, teardown),
        cmocka_unit_test_setup_teardown(test_big_ann, setup_l2, teardown),
        cmocka_unit_test_setup_teardown(test_vectordbbench, setup_l2, teardown),
        cmocka_unit_test_setup_teardown(test_vectordbbench, setup_cosine, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup_l2, teardown),
        cmocka_unit_test_setup_teardown(test_cli_out_and_usage, setup_l2, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
