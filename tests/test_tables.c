/*
 * test_tables.c: tables.md as a reader sees it.  The matched-recall
 * summary (frontier, interpolation, out-of-range marks, ratio to the named
 * baseline) on hand-made points and cells; the header naming the machine,
 * commit, queries, repeats and load; warm-only runs without cold columns;
 * device reads from the cell's own cgroup; engine caveats as notes; builds
 * that reused shared artifacts marked.  Exact lines.
 */
#include "harness/run.h"
#include "harness/summary.h"
#include "tests/support/harness_fixture.h"
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

#include <cmocka.h>

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1, fabs(want)))
        fail_msg("got %.12g, want %.12g", got, want);
}

static void test_frontier_interpolation(void **state)
{
    (void)state;
    /* (0.85, 500) is beaten by (0.90, 800): not on the frontier */
    const harness_point pts[] = {
        { 0.97, 400, 300, 900, 40, 100e6 },
        { 0.80, 1000, 100, 300, 10, 100e6 },
        { 0.85, 500, 999, 999, 99, 999e6 },
        { 0.90, 800, 150, 400, 20, 100e6 },
    };
    harness_point p;
    double edge;
    assert_int_equal(harness_frontier_at(pts, 4, 0.95, &p, &edge), HARNESS_AT_INSIDE);
    double t = 0.05 / 0.07;
    near(p.recall, 0.95);
    near(p.qps, 800 + t * (400 - 800));
    near(p.p50_us, 150 + t * 150);
    near(p.p99_us, 400 + t * 500);
    near(p.reads, 20 + t * 20);
    near(p.rss_bytes, 100e6);
    /* a point exactly at the target is taken as it is */
    assert_int_equal(harness_frontier_at(pts, 4, 0.90, &p, &edge), HARNESS_AT_INSIDE);
    near(p.qps, 800);
    /* between 0.80 and 0.90 the dominated point plays no part */
    assert_int_equal(harness_frontier_at(pts, 4, 0.85, &p, &edge), HARNESS_AT_INSIDE);
    near(p.qps, 900);
    /* beyond the best recall: nothing, and the best recall said */
    assert_int_equal(harness_frontier_at(pts, 4, 0.99, &p, &edge), HARNESS_AT_ABOVE);
    near(edge, 0.97);
    /* below the lowest: the lowest point's own figures, marked */
    assert_int_equal(harness_frontier_at(pts, 4, 0.70, &p, &edge), HARNESS_AT_BELOW);
    near(edge, 0.80);
    near(p.qps, 1000);
    near(p.recall, 0.80);
    const harness_point none[] = { { NAN, 5, 1, 1, 1, 1 } };
    assert_int_equal(harness_frontier_at(none, 1, 0.9, &p, &edge), HARNESS_AT_EMPTY);
    assert_int_equal(harness_frontier_at(NULL, 0, 0.9, &p, &edge), HARNESS_AT_EMPTY);
}

static void test_bytes_format(void **state)
{
    (void)state;
    char b[32];
    harness_fmt_bytes(812 * 1024.0, b, sizeof b);
    assert_string_equal(b, "812 KiB");
    harness_fmt_bytes(37.25 * 1048576, b, sizeof b);
    assert_string_equal(b, "37.2 MiB");
    harness_fmt_bytes(1.25 * 1073741824.0, b, sizeof b);
    assert_string_equal(b, "1.25 GiB");
    harness_fmt_bytes(NAN, b, sizeof b);
    assert_string_equal(b, "-");
}

/* A finished cell. */
static json_t *cell(const char *label, const char *engine, const char *mode, int L, int threads, double recall,
                    double qps, double p50, double reads)
{
    json_t *c = json_pack(
        "{s:s, s:s, s:s, s:{}, s:{}, s:{s:i}, s:s, s:i, s:n, s:s, s:f, s:f, s:{s:f, s:f, s:f},"
        " s:{s:f}, s:{s:f, s:{s:f}, s:f}, s:{s:I}, s:i, s:i, s:{s:s, s:s}, s:{s:f}, s:i}",
        "label", label, "engine", engine, "mode", mode, "build", "open", "search", "L", L, "id", label,
        "threads", threads, "memory_cap_bytes", "status", "ok", "recall", recall, "qps", qps,
        "latency_us", "p50", p50, "p99", 3 * p50, "mean", p50, "engine_stats", "reads", reads, "device",
        "reads_per_query", 157.0, "cgroup", "reads_per_query", reads / 2, "proc_read_bytes_per_query",
        2048.0, "memory", "peak_rss_bytes", (json_int_t)64 << 20, "queries", 300, "repeats", 3,
        "dataset", "name", "glove", "checksum", "sha256:ab", "machine_cpu", "others_cores", 0.02, "k",
        10);
    assert_non_null(c);
    return c;
}

static char *render_summary(const json_t *cells, const json_t *cfg, const char *baseline)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_int_equal(harness_summary_render(cells, cfg, baseline, 10, fp), 0);
    fclose(fp);
    return buf;
}

static void want(const char *text, const char *s)
{
    if (!strstr(text, s))
        fail_msg("lacks \"%s\" in:\n%s", s, text);
}

static void test_summary_rows(void **state)
{
    (void)state;
    json_t *cells = json_array();
    /* base: 0.90 at 1000 QPS, 0.96 at 500 */
    json_array_append_new(cells, cell("base", "ref-hnswlib", "warm", 10, 1, 0.90, 1000, 100, 10));
    json_array_append_new(cells, cell("base", "ref-hnswlib", "warm", 20, 1, 0.96, 500, 200, 20));
    /* fast: 0.93 at 3000 (QPS best over 1 and 2 threads), 0.97 at 2000 */
    json_array_append_new(cells, cell("fast", "diskann-sector", "warm", 10, 1, 0.93, 2500, 50, 30));
    json_array_append_new(cells, cell("fast", "diskann-sector", "warm", 10, 2, 0.93, 3000, 70, 30));
    json_array_append_new(cells, cell("fast", "diskann-sector", "warm", 20, 1, 0.97, 2000, 80, 50));
    json_array_append_new(cells, cell("fast", "diskann-sector", "cold", 20, 1, 0.97, 200, 900, 50));
    json_t *cfg = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}]}", "name", "t", "engines", "engine",
                            "diskann-sector", "label", "fast", "engine", "ref-hnswlib", "label", "base");
    json_object_set_new(cfg, "baseline", json_string("base"));
    char *s = render_summary(cells, cfg, NULL);
    want(s, "## Summary at matched recall\n");
    want(s, "`x base`: QPS relative to base in the same mode at the same recall.");
    want(s, "### recall@10 = 0.90\n\n| engine | mode | QPS | x base | p50 (us) | p99 (us) | reads/q | peak RSS | at |\n");
    /* 0.90: fast's frontier starts at 0.93 (its cheapest setting, QPS of 2 threads, p50 of 1) */
    want(s, "| fast | warm | 3000 | 3.00 | 50 | 150 | 30.0 | 64.0 MiB | lowest point 0.930 |\n");
    want(s, "| base | warm | 1000 | 1.00 | 100 | 300 | 10.0 | 64.0 MiB | interpolated |\n");
    /* cold: only fast, the baseline has no cold cells: no ratio */
    want(s, "| fast | cold | 200 | - | 900 | 2700 | 50.0 | 64.0 MiB | lowest point 0.970 |\n");
    /* 0.95: fast between 0.93 and 0.97 (t = 0.5); base between 0.90 and 0.96 (t = 5/6) */
    want(s, "### recall@10 = 0.95\n");
    char line[200];
    double bq = 1000 + 5.0 / 6 * (500 - 1000);
    snprintf(line, sizeof line, "| fast | warm | 2500 | %.2f | 65 | 195 | 40.0 | 64.0 MiB | interpolated |\n",
             2500 / bq);
    want(s, line);
    /* 0.99: nobody reaches it */
    want(s, "### recall@10 = 0.99\n");
    want(s, "| fast | warm | - | - | - | - | - | - | reaches only 0.970 |\n");
    want(s, "| base | warm | - | - | - | - | - | - | reaches only 0.960 |\n");
    free(s);
    /* --baseline names another engine; an unknown one is said */
    s = render_summary(cells, cfg, "fast");
    want(s, "| engine | mode | QPS | x fast |");
    want(s, "| fast | warm | 3000 | 1.00 |");
    free(s);
    s = render_summary(cells, cfg, "nosuch");
    want(s, "Baseline nosuch has no finished uncapped cells in this run: no ratios.\n");
    free(s);
    /* without a "baseline" in the config: its first engine */
    json_object_del(cfg, "baseline");
    s = render_summary(cells, cfg, NULL);
    want(s, "| x fast |");
    free(s);
    json_decref(cfg);
    json_decref(cells);
}

/* A run directory with config.json, machine.json and cells.jsonl. */
static char *write_run(json_t *cells)
{
    char *dir = tu_tmpdir("tables");
    char p[4400];
    json_t *cfg = json_pack("{s:s, s:i, s:[{s:s}, {s:s}]}", "name", "glove-run", "k", 10, "engines",
                            "engine", "ref-hnswlib", "engine", "diskann-sector");
    snprintf(p, sizeof p, "%s/config.json", dir);
    assert_int_equal(hf_write_json(p, cfg), 0);
    json_decref(cfg);
    json_t *m = json_pack("{s:s, s:{s:i, s:i}, s:s, s:I, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:b,"
                          " s:{s:s, s:s}}",
                          "cpu_model", "AMD EPYC        ", "topology", "cores", 2, "pus", 2, "simd", "avx512",
                          "memory_bytes", (json_int_t)25276502016, "disk", "device", "vda", "filesystem",
                          "ext4", "rotational", "1", "model", "unknown", "kernel",
                          "Linux 6.18.44 x86_64", "git_commit", "1ff9ed9c0a1b2c3d4e5f", "git_dirty", 1,
                          "engine_notes", "ref-hnswlib", "compiled without -march: understates hnswlib",
                          "ref-faiss-ivfpq", "not in this table");
    snprintf(p, sizeof p, "%s/machine.json", dir);
    assert_int_equal(hf_write_json(p, m), 0);
    json_decref(m);
    snprintf(p, sizeof p, "%s/cells.jsonl", dir);
    FILE *f = fopen(p, "w");
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        char *s = json_dumps(c, JSON_COMPACT);
        fprintf(f, "%s\n", s);
        free(s);
    }
    fclose(f);
    return dir;
}

static char *render_tables(const char *dir)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_int_equal(harness_tables_render_opts(dir, NULL, fp), 0);
    fclose(fp);
    return buf;
}

static void test_tables_header_columns_notes(void **state)
{
    (void)state;
    json_t *cells = json_array();
    json_t *a = cell("ref-hnswlib", "ref-hnswlib", "warm", 10, 1, 0.95, 4000, 200, 0);
    json_t *b = cell("diskann-sector", "diskann-sector", "warm", 50, 1, 0.96, 900, 1000, 40);
    json_object_set_new(b, "index", json_pack("{s:f, s:f, s:I, s:I, s:s, s:b, s:[s, s]}", "build_seconds", 3.5,
                                              "build_cpu_seconds", 6.0, "build_peak_rss_bytes",
                                              (json_int_t)300 << 20, "bytes_on_disk", (json_int_t)200 << 20,
                                              "dir", "index/diskann-sector/abc", "cached_at_run", 0, "reused",
                                              "pq", "graph"));
    json_object_set_new(json_object_get(a, "machine_cpu"), "others_cores", json_real(0.5));
    json_array_append_new(cells, a);
    json_array_append_new(cells, b);
    char *dir = write_run(cells);
    char *t = render_tables(dir);
    /* the header: machine, commit, queries, repeats, load */
    want(t, "machine: AMD EPYC, 2 cores (2 hardware threads), SIMD kernels avx512, 23.54 GiB RAM; disk vda "
            "(ext4, rotational, model unknown); Linux 6.18.44 x86_64\n");
    want(t, "commit 1ff9ed9c0a1b (with uncommitted changes); 300 test queries, 3 repeats per cell, k = 10\n");
    want(t, "machine load while measuring: other processes kept 0.26 cores busy (median over 2 cells; max "
            "0.50); 1 cell at 0.25 cores or more: their timings were taken on a busy machine\n");
    /* the summary opens the tables, before (a) */
    const char *sum = strstr(t, "## Summary at matched recall"), *ta = strstr(t, "## (a) Engines x effort");
    assert_non_null(sum);
    assert_non_null(ta);
    assert_true(sum < ta);
    want(t, "| x ref-hnswlib |");
    /* a warm-only run has no cold columns */
    want(t, "| engine | build | open | search | recall@10 | warm p50 (us) | warm p99 (us) | QPS | threads | "
            "dev reads/q warm | proc read KiB/q warm | engine reads/q |\n|---|---|---|---|--:|--:|--:|--:|--:|"
            "--:|--:|--:|\n");
    assert_null(strstr(t, "cold p50"));
    /* device reads: the cell's own cgroup's 20, not the disk's 157 */
    want(t, "| diskann-sector | - | - | L=50 | 0.960 | 1000 | 3000 | 900 | 1 | 20.00 | 2.0 | 40.00 |\n");
    assert_null(strstr(t, "157"));
    /* the caveat of an engine in the table, not of one absent */
    want(t, "\nNotes:\n\n- ref-hnswlib: compiled without -march: understates hnswlib\n");
    assert_null(strstr(t, "not in this table"));
    /* the build that reused shared artifacts is marked */
    want(t, "| engine | build | wall (s) | CPU (s) | peak RSS (MiB) | on disk (MiB) | reused |\n");
    want(t, "| diskann-sector | - | 3.50 | 6.00 | 300.0 | 200.0 | pq, graph |\n");
    want(t, "`pq`, `graph`: taken from the shared artifact cache");
    free(t);
    tu_rmdir(dir);

    /* without a cgroup figure the disk's is shown, and marked */
    json_object_del(json_object_get(b, "device"), "cgroup");
    dir = write_run(cells);
    t = render_tables(dir);
    want(t, "| 157.00 (disk) |");
    want(t, "- `(disk)`: no cgroup of its own for this cell");
    free(t);
    tu_rmdir(dir);
    json_decref(cells);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frontier_interpolation),
        cmocka_unit_test(test_bytes_format),
        cmocka_unit_test(test_summary_rows),
        cmocka_unit_test(test_tables_header_columns_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
