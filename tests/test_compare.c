/*
 * test_compare.c: the regression gate flags an injected recall drop, an
 * injected 2x slowdown, a failed cell and a missing cell, and does not flag
 * a rerun whose figures differ only by the noise of its repeats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness/compare.h"
#include "tests/support/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* A run: 2 engines x 2 efforts x 3 repeats, with seeded noise of about +-8%. */
static json_t *make_run(uint64_t seed, double recall_delta, double slowdown, const char *fail_engine,
                        int drop_last)
{
    json_t *cells = json_array();
    uint64_t s = seed;
    const char *engines[2] = { "flat", "diskann-sector" };
    for (int e = 0; e < 2; e++)
        for (int L = 50; L <= 100; L += 50) {
            if (drop_last && e == 1 && L == 100)
                continue;
            for (int rep = 0; rep < 3; rep++) {
                double noise = 1.0 + 0.16 * (tu_uniform(&s) - 0.5);
                double p50 = (e ? 800.0 : 3000.0) * (L / 50.0) * noise * slowdown;
                double recall = (e ? 0.90 + L / 1000.0 : 1.0) + recall_delta;
                json_t *c = json_pack(
                    "{s:s, s:s, s:{s:i}, s:{}, s:{}, s:s, s:i, s:n, s:i, s:s, s:f, s:{s:f, s:f},"
                    " s:f, s:{s:f}, s:{s:I}, s:{s:f}, s:i}",
                    "dataset", "synth", "engine", engines[e], "search", "L", L, "build", "open",
                    "mode", "warm", "threads", 1, "memory_cap_bytes", "k", 10, "status",
                    fail_engine && !strcmp(fail_engine, engines[e]) ? "error" : "ok", "recall",
                    recall, "latency_us", "p50", p50, "p99", 2.5 * p50, "qps", 1e6 / p50,
                    "engine_stats", "reads", e ? (double)L + 3 : 0.0, "memory", "peak_rss_bytes",
                    (json_int_t)100 << 20, "index", "build_seconds", e ? 12.0 * noise : 0.5,
                    "repeat", rep);
                assert_non_null(c);
                json_array_append_new(cells, c);
            }
        }
    return cells;
}

static cmp_result compare(json_t *a, json_t *b, char **report)
{
    cmp_options o;
    cmp_options_default(&o);
    cmp_result r;
    size_t len = 0;
    char *buf = NULL;
    FILE *rep = open_memstream(&buf, &len);
    assert_int_equal(cmp_cells(a, b, &o, "base", "new", NULL, rep, &r), 0);
    fclose(rep);
    if (report)
        *report = buf;
    else
        free(buf);
    return r;
}

static void test_rerun_is_not_flagged(void **state)
{
    (void)state;
    json_t *a = make_run(1, 0, 1.0, NULL, 0), *b = make_run(2, 0, 1.0, NULL, 0);
    cmp_result r = compare(a, b, NULL);
    assert_int_equal(r.matched, 4);
    assert_int_equal(r.regressions, 0);
    assert_int_equal(r.missing, 0);
    json_decref(a);
    json_decref(b);
}

static void test_recall_drop_is_flagged(void **state)
{
    (void)state;
    json_t *a = make_run(1, 0, 1.0, NULL, 0), *b = make_run(2, -0.02, 1.0, NULL, 0);
    char *rep;
    cmp_result r = compare(a, b, &rep);
    assert_int_equal(r.regressions, 4); /* recall in every cell */
    assert_non_null(strstr(rep, "| recall | 0.95 | 0.93 | -0.0200 | 0.0050 | **regression** |"));
    free(rep);
    json_decref(a);
    json_decref(b);
}

static void test_slowdown_is_flagged(void **state)
{
    (void)state;
    json_t *a = make_run(1, 0, 1.0, NULL, 0), *b = make_run(2, 0, 2.0, NULL, 0);
    char *rep;
    cmp_result r = compare(a, b, &rep);
    /* p50, p99 and QPS of each of the 4 cells */
    assert_int_equal(r.regressions, 12);
    assert_non_null(strstr(rep, "| QPS |"));
    assert_non_null(strstr(rep, "(spread "));
    /* quiet runs (no machine_cpu record) carry no busy note */
    assert_null(strstr(rep, "machine busy"));
    free(rep);
    /* the same slowdown measured while other processes kept 1.5 cores busy:
     * still a regression, now with the load beside it */
    size_t i;
    json_t *c;
    json_array_foreach(b, i, c)
        json_object_set_new(c, "machine_cpu", json_pack("{s:f}", "others_cores", 1.5));
    r = compare(a, b, &rep);
    assert_int_equal(r.regressions, 12);
    assert_non_null(strstr(rep, "**regression** (machine busy: other processes 0.00 -> 1.50 cores) |"));
    /* recall is not a timing: never annotated */
    assert_null(strstr(rep, "| recall |"));
    free(rep);
    json_decref(a);
    json_decref(b);
}

static void test_failed_and_missing_cells_are_flagged(void **state)
{
    (void)state;
    json_t *a = make_run(1, 0, 1.0, NULL, 0);
    json_t *b = make_run(2, 0, 1.0, "flat", 1);
    char *rep;
    cmp_result r = compare(a, b, &rep);
    assert_int_equal(r.regressions, 2); /* both flat cells now error */
    assert_int_equal(r.missing, 1);
    assert_non_null(strstr(rep, "| status | ok | error |"));
    assert_non_null(strstr(rep, "| cell | present | missing |"));
    free(rep);
    json_decref(a);
    json_decref(b);
}

/* One cell per key carrying its repeats inside (per_repeat): the spread of
 * those repeats sets the noise tolerance. */
static json_t *one_cell(double p50, double spread)
{
    return json_pack("[{s:s, s:{s:i}, s:s, s:i, s:s, s:f, s:{s:f, s:f}, s:f,"
                     " s:{s:[f, f, f], s:[f, f, f], s:[f, f, f]}}]",
                     "engine", "flat", "search", "L", 1, "mode", "warm", "threads", 1, "status",
                     "ok", "recall", 1.0, "latency_us", "p50", p50, "p99", 2 * p50, "qps",
                     1e6 / p50, "per_repeat", "p50_us", p50 * (1 - spread / 2), p50,
                     p50 * (1 + spread / 2), "p99_us", 2 * p50, 2 * p50, 2 * p50, "qps",
                     1e6 / p50, 1e6 / p50, 1e6 / p50);
}

static void test_spread_inside_cells_sets_tolerance(void **state)
{
    (void)state;
    json_t *a = one_cell(1000, 0.02), *b = one_cell(1500, 0.02);
    cmp_result r = compare(a, b, NULL);
    /* p50 and QPS past the 30% floor; p99's floor is doubled (60%): x1.5 is not past it */
    assert_int_equal(r.regressions, 2);
    json_decref(a);
    json_decref(b);
    a = one_cell(1000, 0.5);
    b = one_cell(1500, 0.5);
    r = compare(a, b, NULL);
    /* p50's repeats spread 50%: tolerance 150%, so x1.5 is noise there; QPS still flagged */
    assert_int_equal(r.regressions, 1);
    json_decref(a);
    json_decref(b);
}

static int write_run(const char *dir, const char *name, json_t *cells)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.jsonl", dir, name);
    FILE *fp = fopen(path, "w");
    if (!fp)
        return -1;
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        char *s = json_dumps(c, JSON_COMPACT);
        fprintf(fp, "%s\n", s);
        free(s);
    }
    return fclose(fp);
}

static int run_cli(const char *dir, const char *a, const char *b)
{
    const char *bin = getenv("ANNLAB_BIN");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s compare %s/%s.jsonl %s/%s.jsonl >/dev/null 2>&1", bin, dir, a,
             dir, b);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A run directory: cells.jsonl, and machine.json / config.json when given. */
static void write_run_dir(const char *dir, const char *name, json_t *cells, const json_t *machine,
                          const json_t *cfg)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mkdir(path, 0755);
    assert_int_equal(write_run(path, "cells", cells), 0);
    snprintf(path, sizeof path, "%s/%s/machine.json", dir, name);
    if (machine)
        assert_int_equal(json_dump_file(machine, path, 0), 0);
    snprintf(path, sizeof path, "%s/%s/config.json", dir, name);
    if (cfg)
        assert_int_equal(json_dump_file(cfg, path, 0), 0);
}

static json_t *machine(const char *cpu)
{
    return json_pack("{s:s, s:{s:i, s:i, s:i}, s:s, s:I, s:{s:s, s:s, s:s}, s:s, s:s}", "cpu_model",
                     cpu, "topology", "packages", 1, "cores", 2, "pus", 2, "simd", "avx512",
                     "memory_bytes", (json_int_t)25276502016, "disk", "model", "unknown", "rotational",
                     "1", "filesystem", "ext4", "hostname", cpu, "kernel", "Linux");
}

/* `annlab compare A B` in dir: exit code, output in *out. */
static int run_cli_out(const char *dir, const char *a, const char *b, char **out)
{
    const char *bin = getenv("ANNLAB_BIN");
    char cmd[8192], log[4200];
    snprintf(log, sizeof log, "%s/cli.out", dir);
    snprintf(cmd, sizeof cmd, "%s compare %s/%s %s/%s >%s 2>&1", bin, dir, a, dir, b, log);
    int st = system(cmd);
    size_t len = 0;
    char *text = tu_read_file(log, &len);
    *out = realloc(text, len + 1);
    (*out)[len] = '\0';
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void want(const char *out, const char *s)
{
    if (!strstr(out, s))
        fail_msg("lacks \"%s\":\n%s", s, out);
}

/* Timings are judged only between runs on one machine; recall, reads and
 * RSS always are. */
static void test_cli_machines(void **state)
{
    (void)state;
    if (!getenv("ANNLAB_BIN")) {
        skip();
        return;
    }
    char *dir = tu_tmpdir("compare-m");
    json_t *a = make_run(1, 0, 1.0, NULL, 0), *c = make_run(3, 0, 2.0, NULL, 0),
           *r = make_run(3, -0.02, 2.0, NULL, 0);
    json_t *m1 = machine("AMD EPYC"), *m2 = machine("Intel Xeon");
    write_run_dir(dir, "a", a, m1, NULL);
    write_run_dir(dir, "same", c, m1, NULL);
    write_run_dir(dir, "other", c, m2, NULL);
    write_run_dir(dir, "other-recall", r, m2, NULL);
    write_run_dir(dir, "unknown", c, NULL, NULL);
    char *out = NULL;
    /* the same machine: the 2x slowdown is a regression */
    assert_int_equal(run_cli_out(dir, "a", "same", &out), 1);
    free(out);
    /* another machine: said, timings shown but not judged */
    assert_int_equal(run_cli_out(dir, "a", "other", &out), 0);
    want(out, "- timings not gated: the runs measured different machines (cpu_model: \"AMD EPYC\" -> "
              "\"Intel Xeon\"); recall, reads per query and peak RSS are gated\n");
    want(out, "(not gated)");
    assert_null(strstr(out, "REGRESSION"));
    free(out);
    /* ... but recall still is */
    assert_int_equal(run_cli_out(dir, "a", "other-recall", &out), 1);
    free(out);
    /* no machine.json: cannot tell, so not judged either */
    assert_int_equal(run_cli_out(dir, "a", "unknown", &out), 0);
    want(out, "whether both runs measured the same machine is unknown");
    free(out);
    json_decref(a);
    json_decref(c);
    json_decref(r);
    json_decref(m1);
    json_decref(m2);
    tu_rmdir(dir);
}

/* A config change is named; the cells it removed are dropped, not missing. */
static void test_cli_config_change(void **state)
{
    (void)state;
    if (!getenv("ANNLAB_BIN")) {
        skip();
        return;
    }
    char *dir = tu_tmpdir("compare-c");
    json_t *a = make_run(1, 0, 1.0, NULL, 0), *b = make_run(2, 0, 1.0, NULL, 1);
    json_t *m = machine("AMD EPYC");
    json_t *ca = json_pack("{s:s, s:s, s:[{s:s, s:{s:[i, i]}}, {s:s, s:{s:[i, i]}}], s:[s]}", "name", "x",
                           "dataset", "synth", "engines", "engine", "flat", "search", "L", 50, 100,
                           "engine", "diskann-sector", "search", "L", 50, 100, "modes", "warm");
    json_t *cb = json_deep_copy(ca);
    json_object_set_new(json_object_get(json_array_get(json_object_get(cb, "engines"), 1), "search"), "L",
                        json_pack("[i]", 50));
    write_run_dir(dir, "a", a, m, ca);
    write_run_dir(dir, "b", b, m, cb);
    write_run_dir(dir, "b-same-config", b, m, ca);
    char *out = NULL;
    assert_int_equal(run_cli_out(dir, "a", "b", &out), 0);
    want(out, "- the configs differ: engines[1].search.L: [50,100] -> [50]. Cells of the base run that "
              "the new config no longer has are dropped, not missing\n");
    want(out, "not in the new config (dropped)");
    want(out, "3 cells matched; **0 regressions**, 0 improvements, 0 missing, 0 new, 1 dropped by the "
              "new config.");
    free(out);
    /* the same config: the cell is missing, a regression */
    assert_int_equal(run_cli_out(dir, "a", "b-same-config", &out), 1);
    want(out, "missing from the new run  REGRESSION");
    free(out);
    json_decref(a);
    json_decref(b);
    json_decref(m);
    json_decref(ca);
    json_decref(cb);
    tu_rmdir(dir);
}

/* One repeat per cell: no noise measured, so timings and RSS are shown
 * but not judged; recall and reads are. */
static void test_one_repeat_gates_recall_and_reads_only(void **state)
{
    (void)state;
    json_t *a = one_cell(1000, 0.02), *b = one_cell(2000, 0.02);
    /* one repeat each: per_repeat of one value */
    json_t *runs[2] = { a, b };
    for (int i = 0; i < 2; i++) {
        json_t *c = json_array_get(runs[i], 0);
        json_object_set_new(c, "repeats", json_integer(1));
        json_t *per = json_object_get(c, "per_repeat");
        const char *key;
        json_t *v;
        json_object_foreach(per, key, v)
            while (json_array_size(v) > 1)
                json_array_remove(v, 1);
        json_object_set_new(c, "memory", json_pack("{s:I}", "peak_rss_bytes", (json_int_t)(i ? 300 : 100) << 20));
    }
    char *rep;
    cmp_result r = compare(a, b, &rep);
    assert_int_equal(r.regressions, 0);
    assert_false(r.timings_gated);
    assert_false(r.rss_gated);
    want(rep, "- timings and peak RSS not gated: both runs have one repeat per cell, so their noise "
              "cannot be measured; recall and reads per query are gated");
    free(rep);
    /* a recall drop is still caught */
    json_object_set_new(json_array_get(b, 0), "recall", json_real(0.9));
    r = compare(a, b, &rep);
    assert_int_equal(r.regressions, 1);
    free(rep);
    json_decref(a);
    json_decref(b);
}

/* A workload run's step lines (one cell, four steps), as cells.jsonl holds them. */
static json_t *workload_run(double recall4, double insert_p50, int steps)
{
    json_t *cells = json_array();
    for (int st = 1; st <= steps; st++) {
        const char *op = st % 2 ? "insert" : "search";
        char id[32];
        snprintf(id, sizeof id, "c1.%d", st);
        json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:{s:i}, s:{}, s:{s:b}, s:s, s:i, s:i, s:s,"
                              " s:i, s:s}",
                              "id", id, "workload_cell", "c1", "dataset", "synth", "engine",
                              "diskann-record", "search", "L", 50, "build", "open", "updates", 1,
                              "mode", "warm", "threads", 2, "k", 10, "status", "ok", "step", st,
                              "op", op);
        if (st == 1)
            json_object_set_new(c, "built", json_true());
        else if (st % 2)
            json_object_set_new(c, "insert_latency_us",
                                json_pack("{s:f, s:f}", "p50", insert_p50, "p99", 3 * insert_p50));
        else
            json_object_set_new(c, "recall", json_real(st == 4 ? recall4 : 0.95));
        json_array_append_new(cells, c);
    }
    return cells;
}

/* Workload runs compare step by step: recall per search step is gated,
 * the insert latency shown (one repeat: not gated), a missing step flagged. */
static void test_workload_steps_compared(void **state)
{
    (void)state;
    json_t *a = workload_run(0.95, 40, 4), *b = workload_run(0.95, 44, 4);
    char *rep;
    cmp_result r = compare(a, b, &rep);
    assert_int_equal(r.matched, 4);
    assert_int_equal(r.regressions, 0);
    free(rep);
    json_decref(b);
    /* recall at step 4 drops; the inserts got 2x slower (not gated: one repeat) */
    b = workload_run(0.90, 80, 4);
    r = compare(a, b, &rep);
    assert_int_equal(r.regressions, 1);
    want(rep, "step 4 search | recall | 0.95 | 0.9 | -0.0500 | 0.0050 | **regression** |");
    assert_null(strstr(rep, "step 2 search | recall"));
    free(rep);
    json_decref(b);
    /* the new run stopped after step 3 */
    b = workload_run(0.95, 40, 3);
    r = compare(a, b, &rep);
    assert_int_equal(r.missing, 1);
    want(rep, "step 4 search | cell | present | missing |");
    free(rep);
    json_decref(a);
    json_decref(b);
}

/* Bytes read as bytes: peak RSS in MiB/GiB in the report. */
static void test_rss_in_mib(void **state)
{
    (void)state;
    json_t *a = make_run(1, 0, 1.0, NULL, 0), *b = make_run(2, 0, 1.0, NULL, 0);
    size_t i;
    json_t *c;
    json_array_foreach(b, i, c)
        json_object_set_new(c, "memory", json_pack("{s:I}", "peak_rss_bytes", (json_int_t)1536 << 20));
    char *rep;
    cmp_result r = compare(a, b, &rep);
    assert_int_equal(r.regressions, 4);
    want(rep, "| peak RSS | 100.0 MiB | 1.50 GiB | x15.360 | 10% | **regression** |");
    free(rep);
    json_decref(a);
    json_decref(b);
}

static void test_cli_exit_codes(void **state)
{
    (void)state;
    if (!getenv("ANNLAB_BIN")) {
        skip();
        return;
    }
    char *dir = tu_tmpdir("compare");
    json_t *a = make_run(1, 0, 1.0, NULL, 0), *b = make_run(2, 0, 1.0, NULL, 0),
           *c = make_run(3, 0, 2.0, NULL, 0);
    assert_int_equal(write_run(dir, "a", a), 0);
    assert_int_equal(write_run(dir, "b", b), 0);
    assert_int_equal(write_run(dir, "c", c), 0);
    /* the .jsonl files share a directory: one machine.json describes both */
    json_t *m = machine("AMD EPYC");
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/machine.json", dir);
    assert_int_equal(json_dump_file(m, mp, 0), 0);
    json_decref(m);
    assert_int_equal(run_cli(dir, "a", "b"), 0);
    assert_int_equal(run_cli(dir, "a", "c"), 1);
    assert_int_equal(run_cli(dir, "a", "nope"), 2);
    char bad[4096];
    snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
    assert_int_equal(tu_write_file(bad, "{\"engine\": 1}\n[1]\n", 18), 0);
    assert_int_equal(run_cli(dir, "a", "bad"), 2);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    tu_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rerun_is_not_flagged),
        cmocka_unit_test(test_recall_drop_is_flagged),
        cmocka_unit_test(test_slowdown_is_flagged),
        cmocka_unit_test(test_failed_and_missing_cells_are_flagged),
        cmocka_unit_test(test_spread_inside_cells_sets_tolerance),
        cmocka_unit_test(test_cli_exit_codes),
        cmocka_unit_test(test_cli_machines),
        cmocka_unit_test(test_cli_config_change),
        cmocka_unit_test(test_one_repeat_gates_recall_and_reads_only),
        cmocka_unit_test(test_rss_in_mib),
        cmocka_unit_test(test_workload_steps_compared),
    };
    return cmocka_run_group_tests_name("compare", tests, NULL, NULL);
}
