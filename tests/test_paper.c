/*
 * test_paper.c: the source articles' tables (harness/paper.c) and the
 * configs that produce them (configs/paper/): every shipped paper config is
 * valid and has its -100k twin with the same layout; an unknown layout is
 * refused naming the field; each layout renders the rows, columns and units
 * of the source from hand-written cells (latency in ms, QPS, reads per
 * query, MiB), shows a failed cell's status instead of a number, and keeps
 * the config's row order.  Run from the repository root (as `make test`
 * does).
 */
#include "engines/core/status.h"
#include "harness/config.h"
#include "harness/paper.h"
#include "tests/support/testutil.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad test JSON: %s (line %d)", e.text, e.line);
    return v;
}

/* Render cfg's layout over cells into a new string (caller frees). */
static char *render(const char *cfg_text, const char *cells_text)
{
    json_t *cfg = parse(cfg_text), *cells = parse(cells_text);
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    assert_int_equal(harness_paper_render(cfg, cells, fp), 0);
    fclose(fp);
    json_decref(cfg);
    json_decref(cells);
    return buf;
}

#define assert_contains(hay, needle)                                                            \
    do {                                                                                        \
        if (!strstr((hay), (needle)))                                                           \
            fail_msg("missing line:\n%s\nin:\n%s", (needle), (hay));                            \
    } while (0)

static void test_paper_configs_valid_and_twinned(void **state)
{
    (void)state;
    DIR *d = opendir("configs/paper");
    if (!d)
        fail_msg("configs/paper: cannot open (run from the repository root)");
    int full = 0, twins = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json"))
            continue;
        char path[512];
        snprintf(path, sizeof path, "configs/paper/%s", de->d_name);
        json_error_t e;
        json_t *cfg = json_load_file(path, 0, &e);
        if (!cfg)
            fail_msg("%s: %s", path, e.text);
        harness_problems p = { 0 };
        int np = harness_config_check(cfg, &p);
        for (int i = 0; i < p.n && i < p.cap; i++)
            print_error("%s: %s\n", path, p.msgs[i]);
        harness_problems_fini(&p);
        assert_int_equal(np, 0);
        const char *layout = json_string_value(json_object_get(cfg, "tables"));
        if (!layout)
            fail_msg("%s: no \"tables\" layout", path);
        const char *name = json_string_value(json_object_get(cfg, "name"));
        size_t nl = strlen(name);
        int is_twin = strstr(de->d_name, "-100k") || strstr(de->d_name, "-synth");
        if (is_twin) {
            twins++;
            /* a twin runs on generated data, never on the paper datasets */
            const json_t *ds = json_object_get(cfg, "dataset");
            const char *dsn = json_is_string(ds) ? json_string_value(ds)
                                                 : json_string_value(json_object_get(ds, "path"));
            if (!strstr(dsn, "synth-"))
                fail_msg("%s: twin on %s, not generated data", path, dsn);
        } else if (strcmp(de->d_name, "cohere-rss-200k.json")) {
            full++;
            /* its twin: same file name with -100k before .json, same layout */
            char twin[512];
            snprintf(twin, sizeof twin, "configs/paper/%.*s-100k.json", (int)(n - 5), de->d_name);
            if (!strcmp(de->d_name, "cohere-rss-1m.json"))
                snprintf(twin, sizeof twin, "configs/paper/cohere-rss-100k.json");
            json_t *t = json_load_file(twin, 0, &e);
            if (!t)
                fail_msg("%s: no twin %s", path, twin);
            assert_string_equal(json_string_value(json_object_get(t, "tables")), layout);
            assert_true(json_equal(json_object_get(t, "threads"), json_object_get(cfg, "threads")));
            assert_true(json_equal(json_object_get(t, "modes"), json_object_get(cfg, "modes")));
            json_decref(t);
        }
        assert_true(nl > 0);
        json_decref(cfg);
    }
    closedir(d);
    assert_int_equal(full, 8);
    assert_true(twins >= 6);
}

/* The stand-in check's configs (configs/standin/, datasets/README.md) and the
 * 512 MiB probe beside them: valid, and each one DiskANN's published build. */
static void test_standin_configs_valid(void **state)
{
    (void)state;
    const char *names[] = { "configs/standin/cohere-1m.json", "configs/standin/cohere-100k.json",
                            "configs/standin/cohere-1m-pq.json",
                            "configs/standin/cohere-cal-1m.json",
                            "configs/standin/cohere-cal-doc-1m.json",
                            "configs/standin/cohere-cal5-1m.json",
                            "configs/standin/record-512mib-cal5-1m.json" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        json_error_t e;
        json_t *cfg = json_load_file(names[i], 0, &e);
        if (!cfg)
            fail_msg("%s: %s", names[i], e.text);
        harness_problems p = { 0 };
        int np = harness_config_check(cfg, &p);
        for (int j = 0; j < p.n && j < p.cap; j++)
            print_error("%s: %s\n", names[i], p.msgs[j]);
        harness_problems_fini(&p);
        assert_int_equal(np, 0);
        /* DiskANN's published settings: R 64, L_build 100, alpha 1.2 */
        const json_t *b = json_object_get(json_array_get(json_object_get(cfg, "engines"), 0), "build");
        assert_int_equal(json_integer_value(json_object_get(b, "R")), 64);
        assert_int_equal(json_integer_value(json_object_get(b, "L_build")), 100);
        assert_true(json_real_value(json_object_get(b, "alpha")) == 1.2);
        json_decref(cfg);
    }
}

/* The config scripts/reproduce-1m.sh derives for config c under out. */
static json_t *derived_config(const char *out, const char *c)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/config.json", out, c);
    json_error_t e;
    json_t *v = json_load_file(path, 0, &e);
    if (!v)
        fail_msg("%s: %s", path, e.text);
    return v;
}

static const char *str_field(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "(none)";
}

/* scripts/reproduce-1m.sh's derived configs (DRY=1: nothing runs): STANDIN
 * swaps the dataset and names the run, SHARE_BUILDS gives the search-only
 * document-database configs the build table's index root and leaves the
 * configs with a root of their own alone; a bad value is usage (exit 2). */
static void test_reproduce_script_configs(void **state)
{
    (void)state;
    if (!getenv("ANNLAB_BIN")) {
        skip(); /* the script runs the program (make test sets ANNLAB_BIN) */
        return;
    }
    char *out = tu_tmpdir("repro"), cmd[8800];
    assert_non_null(out);
    snprintf(cmd, sizeof cmd,
             "OUT=%s DRY=1 STANDIN=1 SHARE_BUILDS=1 "
             "ONLY='cohere-build cohere-effort sector-cohere' scripts/reproduce-1m.sh "
             ">%s/log 2>&1",
             out, out);
    assert_int_equal(system(cmd), 0);
    json_t *eff = derived_config(out, "cohere-effort"), *sec = derived_config(out, "sector-cohere");
    assert_string_equal(str_field(eff, "index_root"), "index/paper-build");
    assert_string_equal(str_field(eff, "dataset"), "synth-768-cosine-cal5-1m");
    assert_string_equal(str_field(eff, "name"), "paper-cohere-effort-standin");
    assert_string_equal(str_field(sec, "index_root"), "index/paper-sector");
    json_decref(eff);
    json_decref(sec);

    /* sharing alone: the real dataset, the config's own name */
    snprintf(cmd, sizeof cmd,
             "OUT=%s/real DRY=1 SHARE_BUILDS=1 ONLY=cohere-memcap scripts/reproduce-1m.sh "
             ">%s/log2 2>&1",
             out, out);
    assert_int_equal(system(cmd), 0);
    char real[4300];
    snprintf(real, sizeof real, "%s/real", out);
    json_t *mem = derived_config(real, "cohere-memcap");
    assert_string_equal(str_field(mem, "index_root"), "index/paper-build");
    assert_string_equal(str_field(mem, "dataset"), "cohere-768-cosine-1m");
    assert_string_equal(str_field(mem, "name"), "paper-cohere-memcap");
    json_decref(mem);

    snprintf(cmd, sizeof cmd, "OUT=%s DRY=1 SHARE_BUILDS=yes scripts/reproduce-1m.sh >/dev/null 2>&1",
             out);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 2);
    tu_rmdir(out);
}

static void test_paper_unknown_layout_refused(void **state)
{
    (void)state;
    json_t *cfg = parse("{\"name\": \"x\", \"dataset\": \"synth-768-cosine-10k\", "
                        "\"engines\": [{\"engine\": \"flat\"}], \"tables\": \"paper-nope\"}");
    harness_problems p = { 0 };
    assert_int_equal(harness_config_check(cfg, &p), 1);
    assert_string_equal(p.msgs[0], "tables: \"paper-nope\" is not a table layout (known: "
                                   "paper-cohere-effort, paper-cohere-memcap, paper-cohere-rss, "
                                   "paper-cohere-build, paper-sector, paper-cohere-updates)");
    harness_problems_fini(&p);
    json_object_set_new(cfg, "tables", json_integer(3));
    assert_int_equal(harness_config_check(cfg, &p), 1);
    assert_string_equal(p.msgs[0], "tables: expected a table layout name (one of paper-cohere-effort, "
                                   "paper-cohere-memcap, paper-cohere-rss, paper-cohere-build, "
                                   "paper-sector, paper-cohere-updates)");
    harness_problems_fini(&p);
    /* rendering a run whose config names an unknown layout is an error too */
    json_object_set_new(cfg, "tables", json_string("paper-nope"));
    json_t *cells = json_array();
    FILE *fp = fopen("/dev/null", "w");
    assert_int_equal(harness_paper_render(cfg, cells, fp), ANN_ECONFIG);
    fclose(fp);
    json_decref(cells);
    json_decref(cfg);
}

/* Cells shaped like cells.jsonl, only the fields the layouts read. */
#define CELL(engine, search, mode, threads, cap, status, rec, p50, p99, qps, devr, engr, rss)      \
    "{\"engine\": \"" engine "\", \"label\": \"" engine "\", \"build\": {\"R\": 64}, \"open\": {}, " \
    "\"search\": " search ", \"mode\": \"" mode "\", \"threads\": " #threads ", "                    \
    "\"memory_cap_bytes\": " cap ", \"status\": \"" status "\", \"recall\": " rec ", "              \
    "\"latency_us\": {\"p50\": " p50 ", \"p99\": " p99 "}, \"qps\": " qps ", "                      \
    "\"device\": {\"reads_per_query\": " devr "}, \"engine_stats\": {\"reads\": " engr ", "         \
    "\"cache_hits\": 0}, \"memory\": {\"peak_rss_bytes\": " rss ", \"peak_anon_bytes\": 1048576, "  \
    "\"peak_file_bytes\": 2097152}, \"dataset\": {\"name\": \"synth-768-cosine-100k\"}, "           \
    "\"index\": {\"dir\": \"index/" engine "/1\", \"build_seconds\": 61.25, "                       \
    "\"build_cpu_seconds\": 120.5, \"build_peak_rss_bytes\": 524288000, \"bytes_on_disk\": 1073741824}}"

static void test_paper_effort_table(void **state)
{
    (void)state;
    char *out = render(
        "{\"tables\": \"paper-cohere-effort\", \"k\": 10}",
        "[" CELL("diskann-record", "{\"L\": 50}", "cold", 8, "null", "ok", "0.951", "2345.6", "9876", "100", "40", "30", "1")
        "," CELL("diskann-record", "{\"L\": 50}", "warm", 8, "null", "ok", "0.952", "812", "1500", "4321.4", "0", "30", "1")
        "," CELL("hnsw-record", "{\"ef_search\": 256}", "cold", 8, "null", "timeout", "0", "0", "0", "0", "0", "0", "1")
        "," CELL("hnsw-record", "{\"ef_search\": 256}", "warm", 8, "null", "ok", "0.981", "5000", "7000", "400", "0", "300", "1")
        "," CELL("diskann-record", "{\"L\": 50}", "cold", 8, "536870912", "ok", "0.5", "1", "1", "1", "1", "1", "1") "]");
    assert_contains(out, "QPS: warm, 8 threads.");
    assert_contains(out, "| Index | Effort | Recall@10 | Cold p50 (ms) | Cold p99 (ms) | Warm p50 (ms) | "
                         "Warm p99 (ms) | Warm QPS |");
    assert_contains(out, "| DiskANN (records) | L 50 | 0.952 | 2.35 | 9.88 | 0.81 | 1.50 | 4321 |\n"
                         "| HNSW (records) | ef 256 | 0.981 | timeout | timeout | 5.00 | 7.00 | 400 |\n");
    /* the capped cell is not a row of table 1 */
    assert_null(strstr(out, "0.500"));
    free(out);
}

static void test_paper_memcap_table(void **state)
{
    (void)state;
    char *out = render(
        "{\"tables\": \"paper-cohere-memcap\", \"k\": 10}",
        "[" CELL("diskann-record", "{\"L\": 100}", "cold", 8, "2147483648", "ok", "0.961", "1500", "3000", "800", "12.25", "11", "1")
        "," CELL("ivfpq-record", "{\"nprobe\": 64}", "cold", 8, "2147483648", "ok", "0.94", "6000", "9000", "200", "60", "70", "1")
        "," CELL("diskann-record", "{\"L\": 100}", "cold", 8, "536870912", "ok", "0.960", "2500", "3000", "500", "20", "11", "1")
        "," CELL("ref-hnswlib", "{\"ef_search\": 256}", "cold", 8, "536870912", "oom", "0", "0", "0", "0", "0", "0", "1")
        "," CELL("diskann-record", "{\"L\": 100}", "cold", 8, "null", "ok", "0.9", "1", "1", "1", "1", "1", "1") "]");
    const char *g2 = strstr(out, "### 2 GiB cap"), *m512 = strstr(out, "### 512 MiB cap");
    assert_non_null(g2);
    assert_non_null(m512);
    assert_true(g2 < m512); /* caps in the config's order */
    assert_contains(out, "| Index | Effort | Mode | Recall@10 | Median latency (ms) | QPS | Threads | "
                         "Device reads/query | Engine reads/query |");
    assert_contains(g2, "| DiskANN (records) | L 100 | cold | 0.961 | 1.50 | 800 | 8 | 12.2 | 11.0 |\n"
                        "| IVF-PQ (records) | nprobe 64 | cold | 0.940 | 6.00 | 200 | 8 | 60.0 | 70.0 |\n");
    assert_contains(m512, "| DiskANN (records) | L 100 | cold | 0.960 | 2.50 | 500 | 8 | 20.0 | 11.0 |\n"
                          "| HNSW in memory (hnswlib) | ef 256 | cold | oom | oom | oom | 8 | oom | oom |\n");
    free(out);
}

static void test_paper_rss_and_build_tables(void **state)
{
    (void)state;
    char *out = render(
        "{\"tables\": \"paper-cohere-rss\"}",
        "[" CELL("diskann-resident", "{\"L\": 100}", "warm", 8, "null", "ok", "0.9", "1", "1", "1", "1", "1", "104857600") "]");
    assert_contains(out, "Dataset synth-768-cosine-100k.");
    /* the CELL fixture records no cgroup peak: "-", never a made-up 0 */
    assert_contains(out, "| DiskANN, resident codes | L 100 | warm | 100 | 1 | 2 | - |\n");
    free(out);
    out = render("{\"tables\": \"paper-cohere-rss\"}",
                 "[{\"engine\": \"diskann-record\", \"label\": \"diskann-record\", \"mode\": \"warm\", "
                 "\"status\": \"ok\", \"threads\": 8, \"memory_cap_bytes\": null, "
                 "\"build\": {\"R\": 64}, \"search\": {\"L\": 100}, "
                 "\"dataset\": {\"name\": \"synth-768-cosine-100k\"}, "
                 "\"memory\": {\"peak_rss_bytes\": 47185920, \"peak_anon_bytes\": 23068672, "
                 "\"peak_file_bytes\": 23068672, \"cgroup_peak_bytes\": 943718400}}]");
    assert_contains(out, "Cgroup peak (MiB) |");
    assert_contains(out, "| DiskANN (records) | L 100 | warm | 45 | 22 | 22 | 900 |\n");
    free(out);
    out = render(
        "{\"tables\": \"paper-cohere-build\"}",
        "[" CELL("hnsw-record", "{\"ef_search\": 64}", "warm", 1, "null", "ok", "0.9", "1", "1", "1", "1", "1", "1")
        "," CELL("hnsw-record", "{\"ef_search\": 256}", "warm", 1, "null", "ok", "0.9", "1", "1", "1", "1", "1", "1") "]");
    assert_contains(out, "| Index | Build parameters | Build time (s) | Build CPU (s) | Peak memory (MiB) | "
                         "On disk (MiB) |");
    /* two cells, one index directory: one row */
    const char *row = "| HNSW (records) | R=64 | 61.2 | 120.5 | 500 | 1024 |\n";
    const char *first = strstr(out, row);
    assert_non_null(first);
    assert_null(strstr(first + 1, row));
    assert_null(strstr(out, "reused"));
    free(out);
    /* a build that took PQ and graph from the artifact cache says so, with a note */
    out = render("{\"tables\": \"paper-cohere-build\"}",
                 "[{\"engine\": \"diskann-resident\", \"label\": \"diskann-resident\", \"mode\": \"warm\", "
                 "\"status\": \"ok\", \"threads\": 1, \"memory_cap_bytes\": null, "
                 "\"build\": {\"R\": 64}, \"search\": {\"L\": 100}, "
                 "\"index\": {\"dir\": \"index/diskann-resident/1\", \"build_seconds\": 1.61, "
                 "\"build_cpu_seconds\": 1.5, \"build_peak_rss_bytes\": 1048576, \"bytes_on_disk\": 2097152, "
                 "\"reused\": [\"pq\", \"graph\"]}}]");
    assert_contains(out, "| DiskANN, resident codes | R=64 | 1.6 (PQ, graph reused) | 1.5 | 1 | 2 |\n");
    assert_contains(out, "\"reused\": the build took its PQ codebook and/or Vamana graph");
    free(out);
}

static void test_paper_sector_table(void **state)
{
    (void)state;
    char *out = render(
        "{\"tables\": \"paper-sector\", \"k\": 10}",
        "[" CELL("diskann-sector", "{\"L\": 100}", "warm", 1, "null", "ok", "0.95", "900", "2000", "1100", "0", "30", "1")
        "," CELL("diskann-sector", "{\"L\": 200}", "warm", 1, "null", "ok", "0.98", "1800", "4000", "550", "0", "55", "1")
        "," CELL("diskann-sector", "{\"L\": 200}", "warm", 2, "null", "ok", "0.98", "1800", "4000", "1100", "0", "55", "1")
        "," CELL("diskann-sector", "{\"L\": 200}", "warm", 4, "null", "error", "0", "0", "0", "0", "0", "0", "1") "]");
    assert_contains(out, "| Effort | Mode | Recall@10 | QPS (1 thread) | p50 (ms) | p99 (ms) | Reads/query | "
                         "Cache hits/query |");
    assert_contains(out, "| L 100 | warm | 0.950 | 1100 | 0.90 | 2.00 | 30.0 | 0.0 |\n"
                         "| L 200 | warm | 0.980 | 550 | 1.80 | 4.00 | 55.0 | 0.0 |\n");
    assert_contains(out, "| DiskANN (sector file) | L 200 | 1 | 0.980 | 550 | 1.00x |\n"
                         "| DiskANN (sector file) | L 200 | 2 | 0.980 | 1100 | 2.00x |\n"
                         "| DiskANN (sector file) | L 200 | 4 | error | error | - |\n");
    /* L 100 ran at one thread only: no scaling rows */
    assert_null(strstr(out, "| DiskANN (sector file) | L 100 | 1 |"));
    assert_contains(out, "| DiskANN (sector file) | R=64 | 61.2 | 120.5 | 500 | 1024 |");
    free(out);
}

/* A workload step line: the cell's fields plus the step's. */
#define STEP(label, step, op, extra)                                                              \
    "{\"engine\": \"diskann-record\", \"label\": \"" label "\", \"open\": {\"kv\": \"rocksdb\"}, " \
    "\"search\": {\"L\": 100}, \"mode\": \"warm\", \"threads\": 2, \"status\": \"ok\", "           \
    "\"dataset\": {\"name\": \"synth-768-cosine-100k\"}, \"step\": " #step ", \"op\": \"" op "\"" \
    extra "}"

static void test_paper_updates_table(void **state)
{
    (void)state;
    char *out = render(
        "{\"tables\": \"paper-cohere-updates\", \"k\": 10}",
        "[" STEP("shared-copy", 1, "insert", ", \"start\": 0, \"end\": 900, \"built\": true")
        "," STEP("shared-copy", 2, "search", ", \"pending\": 0, \"recall\": 0.9934, "
                 "\"latency_us\": {\"p50\": 1500, \"p99\": 2100}, \"qps\": 1200.4")
        "," STEP("shared-copy", 3, "insert", ", \"start\": 900, \"end\": 1000, \"pending_before\": 0, "
                 "\"insert_latency_us\": {\"p50\": 41, \"p99\": 95.6}, \"inserts_per_s\": 20000")
        "," STEP("shared-copy", 4, "search", ", \"pending\": 100, \"recall\": 0.991, "
                 "\"latency_us\": {\"p50\": 1750, \"p99\": 2500}, \"qps\": 1000")
        "," STEP("shared-copy", 5, "merge", ", \"merge_seconds\": 12.34")
        "," STEP("storage-scan", 1, "insert", ", \"start\": 0, \"end\": 900, \"built\": true")
        "," STEP("storage-scan", 2, "search", ", \"pending\": 0, \"status\": \"error\"")
        "]");
    assert_contains(out, "| Index | Step | Pending | Recall@10 | p50 (ms) | p99 (ms) | QPS |\n"
                         "|---|--:|--:|--:|--:|--:|--:|\n"
                         "| DiskANN (records) [shared-copy] | 2 | 0 | 0.993 | 1.50 | 2.10 | 1200 |\n"
                         "| DiskANN (records) [shared-copy] | 4 | 100 | 0.991 | 1.75 | 2.50 | 1000 |\n"
                         "| DiskANN (records) [storage-scan] | 2 | error | error | error | error | error |\n");
    assert_contains(out, "| DiskANN (records) [shared-copy] | 1 | insert | 900 | built over them | | | | |\n"
                         "| DiskANN (records) [shared-copy] | 3 | insert | 100 | 0 | 0.041 | 0.096 | 20000 |  |\n"
                         "| DiskANN (records) [shared-copy] | 5 | merge | - | - | - | - | - | 12.3 |\n"
                         "| DiskANN (records) [storage-scan] | 1 | insert | 900 | built over them | | | | |\n");
    free(out);
}

static void test_paper_no_layout_renders_nothing(void **state)
{
    (void)state;
    json_t *cfg = parse("{\"name\": \"x\"}"), *cells = json_array();
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_int_equal(harness_paper_render(cfg, cells, fp), 0);
    assert_int_equal(harness_paper_render(NULL, cells, fp), 0);
    fclose(fp);
    assert_int_equal(len, 0);
    free(buf);
    json_decref(cfg);
    json_decref(cells);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paper_configs_valid_and_twinned),
        cmocka_unit_test(test_paper_unknown_layout_refused),
        cmocka_unit_test(test_standin_configs_valid),
        cmocka_unit_test(test_paper_effort_table),
        cmocka_unit_test(test_paper_memcap_table),
        cmocka_unit_test(test_paper_rss_and_build_tables),
        cmocka_unit_test(test_paper_sector_table),
        cmocka_unit_test(test_paper_updates_table),
        cmocka_unit_test(test_paper_no_layout_renders_nothing),
        cmocka_unit_test(test_reproduce_script_configs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
