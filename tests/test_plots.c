/*
 * test_plots.c: the figures a paper would print, checked through the data
 * and gnuplot scripts annlab writes beside each figure: recall axes that
 * end at 1 in three scales (linear, log of 1 - recall, logit); one colour
 * per engine and one line style and marker per variant, with the variant
 * in the legend's words; a legend sized to its entries; reads_vs_L naming
 * sector reads and kv gets, with the device's reads in a larger open marker
 * so a series that coincides with another stays visible; recall_p99 drawn
 * as a frontier (higher recall, lower p99).  gnuplot renders every figure.
 */
#include "engines/core/status.h"
#include "harness/run.h"
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
#include <unistd.h>

#include <cmocka.h>

static json_t *cell(const char *label, const char *engine, const char *mode, json_t *open, int L, double recall,
                    double qps, double p99, double reads, double dev)
{
    json_t *c = json_pack("{s:s, s:s, s:s, s:{}, s:o, s:{s:i}, s:i, s:n, s:s, s:f, s:f, s:{s:f, s:f},"
                          " s:{s:f}, s:{s:f, s:{s:f}}, s:i}",
                          "label", label, "engine", engine, "mode", mode, "build", "open", open, "search",
                          /* each engine's effort parameter (ann_engine_ops.effort_param) */
                          strcmp(engine, "hnsw-record") ? "L" : "ef_search", L, "threads", 1,
                          "memory_cap_bytes", "status", "ok", "recall", recall, "qps",
                          qps, "latency_us", "p50", p99 / 3, "p99", p99, "engine_stats", "reads", reads,
                          "device", "reads_per_query", 999.0, "cgroup", "reads_per_query", dev, "k", 10);
    assert_non_null(c);
    return c;
}

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir("plots");
    json_t *cells = json_array();
    /* diskann-sector: two open variants, warm, and cold for one */
    json_array_append_new(cells, cell("diskann-sector", "diskann-sector", "warm", json_object(), 20, 0.90, 3000, 900, 30, 0));
    json_array_append_new(cells, cell("diskann-sector", "diskann-sector", "warm", json_object(), 50, 0.97, 1500, 1500, 60, 0));
    json_array_append_new(cells, cell("diskann-sector", "diskann-sector", "warm", json_object(), 100, 0.999, 800, 2500, 110, 0));
    json_array_append_new(cells, cell("diskann-sector", "diskann-sector", "warm", json_pack("{s:s}", "io", "buffered"), 50, 0.97, 1200, 1600, 60, 0));
    json_array_append_new(cells, cell("diskann-sector", "diskann-sector", "cold", json_object(), 50, 0.97, 300, 9000, 60, 60));
    /* a dominated point: recall 0.93 at p99 2000 is beaten by 0.97 at 1500 */
    json_array_append_new(cells, cell("diskann-sector", "diskann-sector", "warm", json_object(), 30, 0.93, 1000, 2000, 45, 0));
    /* hnsw-record: kv gets; the device read as much as the engine asked (identical series) */
    json_array_append_new(cells, cell("hnsw-record", "hnsw-record", "cold", json_object(), 50, 1.0, 200, 8000, 80, 80));
    char p[4200];
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
    json_decref(cells);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(dir);
    return 0;
}

static char *slurp(const char *name)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    size_t len = 0;
    char *s = tu_read_file(p, &len);
    if (!s)
        fail_msg("%s missing", p);
    char *z = realloc(s, len + 1);
    z[len] = '\0';
    return z;
}

static void want(const char *text, const char *s)
{
    if (!strstr(text, s))
        fail_msg("lacks \"%s\" in:\n%s", s, text);
}

static void render(const char *axis)
{
    int made = 0;
    int rc = harness_plots_render_axis(dir, axis, &made);
    if (rc)
        fail_msg("%s", ann_errmsg(rc));
    assert_int_equal(made, 3); /* recall_qps, recall_p99, reads_vs_L */
    static const char *const files[] = { "recall_qps.png", "recall_qps.svg", "recall_p99.png", "reads_vs_L.png" };
    for (size_t i = 0; i < 4; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        if (access(p, F_OK) != 0)
            fail_msg("%s not drawn", p);
    }
}

static void test_linear_axis_styles_legend(void **state)
{
    (void)state;
    render("linear");
    char *gp = slurp("plots/recall_qps.gp");
    /* recall ends at 1 */
    want(gp, "set xrange [0.85:1]\n");
    /* one colour per engine: both diskann-sector variants blue, hnsw-record red */
    want(gp, "dt 1 lc rgb '#1f77b4' title \"diskann-sector warm\"");
    want(gp, "dt 2 lc rgb '#1f77b4' title \"diskann-sector io='buffered' warm\"");
    want(gp, "dt 4 lc rgb '#1f77b4' title \"diskann-sector cold\"");
    want(gp, "lc rgb '#d62728' title \"hnsw-record cold\"");
    /* warm filled markers, cold open ones */
    want(gp, "pt 7 ps 1.3 lw 2 dt 1 lc rgb '#1f77b4' title \"diskann-sector warm\"");
    /* a cold marker rings a warm one of the same value: larger */
    want(gp, "pt 8 ps 1.8 lw 2 dt 4 lc rgb '#1f77b4' title \"diskann-sector cold\"");
    /* the legend: 4 entries, the longest 33 characters: 3 columns, 2 rows, a taller canvas */
    want(gp, "maxcols 3 maxrows 2");
    want(gp, "size 1200,660");
    free(gp);
    gp = slurp("plots/recall_p99.gp");
    want(gp, "set xrange [0.85:1]\n");
    free(gp);
    /* recall_p99: the frontier keeps 0.90/900, 0.97/1500, 0.999/2500 and drops 0.93/2000 */
    char *dat = slurp("plots/recall_p99.dat");
    want(dat, "# diskann-sector warm frontier\n0.9 900 0.9\n0.97 1500 0.97\n0.999 2500 0.999\n\n\n");
    free(dat);
}

static void test_reads_vs_L(void **state)
{
    (void)state;
    render(NULL);
    char *gp = slurp("plots/reads_vs_L.gp");
    want(gp, "title \"diskann-sector warm: sector reads (engine)\"");
    want(gp, "title \"diskann-sector warm: device reads (cgroup)\"");
    want(gp, "title \"hnsw-record cold: kv gets (engine)\"");
    /* the device's reads: a large open marker around the engine's filled one */
    want(gp, "pt 6 ps 2.6 lw 2 dt 1 lc rgb '#1f77b4' title \"diskann-sector warm: device reads (cgroup)\"");
    want(gp, "pt 6 ps 1.8 lw 2 dt 1 lc rgb '#d62728' title \"hnsw-record cold: kv gets (engine)\"");
    want(gp, "pt 4 ps 2.6 lw 2 dt 1 lc rgb '#d62728' title \"hnsw-record cold: device reads (cgroup)\"");
    /* never the disk's 999 */
    free(gp);
    char *dat = slurp("plots/reads_vs_L.dat");
    assert_null(strstr(dat, " 999 "));
    free(dat);
}

static void test_log_and_logit_axes(void **state)
{
    (void)state;
    render("log");
    char *dat = slurp("plots/recall_qps.dat");
    /* x = -log10(1 - recall); a recall of 1 sits at 4 (1 - 1e-4), its raw value kept */
    want(dat, "# diskann-sector warm\n1 3000 0.9\n");
    want(dat, "# hnsw-record cold\n4 200 1\n");
    free(dat);
    char *gp = slurp("plots/recall_qps.gp");
    want(gp, "set xtics (\"0.9\" 1, \"0.99\" 2, \"0.999\" 3, \"1\" 4)\n");
    want(gp, "set xrange [0.75:4]\n");
    want(gp, "recall@10 (tie-aware) (log scale of 1 - recall)");
    free(gp);
    render("logit");
    gp = slurp("plots/recall_qps.gp");
    want(gp, "\"0.9\" 0.954243");
    want(gp, "(logit scale)");
    free(gp);
    int made = 0;
    assert_int_equal(harness_plots_render_axis(dir, "sqrt", &made), ANN_EPARAM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_axis_styles_legend),
        cmocka_unit_test(test_reads_vs_L),
        cmocka_unit_test(test_log_and_logit_axes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
