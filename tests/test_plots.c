/*
 * test_plots.c: the figures a paper would print, checked through the data,
 * the variables annlab sets for each figure's gnuplot template and the SVG
 * gnuplot draws: recall axes that end at 1 in three scales (linear, log of
 * 1 - recall, logit); one colour per engine and one line style and marker
 * per variant, with the variant in the legend's words; a legend sized to
 * its entries; reads_vs_L naming sector reads and kv gets, with the
 * device's reads in a larger open marker so a series that coincides with
 * another stays visible; recall_p99 drawn as a frontier (higher recall,
 * lower p99).  The templates: the repository's plots/ found from any
 * directory, an edited copy given with --template restyling its figure
 * only, and every bad template (missing, unreadable, no or unknown kind,
 * another kind, two for one kind, one for a figure not drawn, one gnuplot
 * rejects, one that draws nothing) an exact error that writes no figure.
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
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
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

/* The repository's templates (plots/ above this test binary). */
static const char *repo_plots(void)
{
    static char found[4200];
    if (found[0])
        return found;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    for (char *slash; (slash = strrchr(exe, '/')) && slash != exe;) {
        *slash = '\0';
        snprintf(found, sizeof found, "%s/plots/README.md", exe);
        if (access(found, F_OK) == 0) {
            snprintf(found, sizeof found, "%s/plots", exe);
            return found;
        }
    }
    fail_msg("no plots/README.md above the test binary");
    return NULL;
}

static void test_linear_axis_styles_legend(void **state)
{
    (void)state;
    render("linear");
    char *gp = slurp("plots/recall_qps.gp");
    /* drawn by the repository's template, whatever the current directory */
    char want_from[4400];
    snprintf(want_from, sizeof want_from, "from the template %s/recall_qps.gp.\n", repo_plots());
    want(gp, want_from);
    want(gp, "\n# annlab figure: recall_qps\n");
    /* recall ends at 1 */
    want(gp, "x_range = \"[0.85:1]\"\n");
    want(gp, "x_tics = \"auto\"\n");
    /* one colour per engine: both diskann-sector variants 0, hnsw-record 1; a
     * variant each (line style and marker); cold series open markers */
    want(gp, "series_name[1] = \"diskann-sector warm\"; series_color[1] = 0; series_variant[1] = 0; "
             "series_cold[1] = 0; series_device[1] = 0\n");
    want(gp, "series_name[2] = \"diskann-sector io='buffered' warm\"; series_color[2] = 0; "
             "series_variant[2] = 1; series_cold[2] = 0;");
    want(gp, "series_name[3] = \"diskann-sector cold\"; series_color[3] = 0; series_variant[3] = 2; "
             "series_cold[3] = 1;");
    want(gp, "series_name[4] = \"hnsw-record cold\"; series_color[4] = 1; series_variant[4] = 0; "
             "series_cold[4] = 1;");
    /* the legend: 4 entries, the longest 33 characters: 3 columns, 2 rows, a taller canvas */
    want(gp, "width = 1200\nheight = 660\nkey_cols = 3\nkey_rows = 2\nn_series = 4\n");
    free(gp);
    /* the template's look: blue diskann-sector, red hnsw-record, every variant in the legend */
    char *svg = slurp("recall_qps.svg");
    want(svg, "stroke='rgb( 31, 119, 180)'");
    want(svg, "stroke='rgb(214,  39,  40)'");
    want(svg, "<text>diskann-sector io='buffered' warm</text>");
    want(svg, "<text>Throughput against recall (1 thread; lines: each series' Pareto frontier)</text>");
    free(svg);
    gp = slurp("plots/recall_p99.gp");
    want(gp, "x_range = \"[0.85:1]\"\n");
    want(gp, "\n# annlab figure: recall_p99\n");
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
    /* the engine's count (filled) and the device's (series_device: a large open marker) */
    want(gp, "series_name[1] = \"diskann-sector warm: sector reads (engine)\"; series_color[1] = 0; "
             "series_variant[1] = 0; series_cold[1] = 0; series_device[1] = 0\n");
    want(gp, "series_name[2] = \"diskann-sector warm: device reads (cgroup)\"; series_color[2] = 0; "
             "series_variant[2] = 0; series_cold[2] = 0; series_device[2] = 1\n");
    want(gp, "series_name[7] = \"hnsw-record cold: kv gets (engine)\"; series_color[7] = 1; "
             "series_variant[7] = 0; series_cold[7] = 1; series_device[7] = 0\n");
    want(gp, "series_name[8] = \"hnsw-record cold: device reads (cgroup)\"; series_color[8] = 1; "
             "series_variant[8] = 0; series_cold[8] = 1; series_device[8] = 1\n");
    want(gp, "x_range = \"[*:*]\"\n");
    free(gp);
    char *svg = slurp("reads_vs_L.svg");
    want(svg, "<text>hnsw-record cold: kv gets (engine)</text>");
    free(svg);
    /* never the disk's 999 */
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
    want(gp, "x_tics = '(\"0.9\" 1, \"0.99\" 2, \"0.999\" 3, \"1\" 4)'\n");
    want(gp, "x_range = \"[0.75:4]\"\n");
    want(gp, "x_label = \"recall@10 (tie-aware) (log scale of 1 - recall)\"\n");
    free(gp);
    char *svg = slurp("recall_qps.svg");
    want(svg, "<text>0.999</text>");
    free(svg);
    render("logit");
    gp = slurp("plots/recall_qps.gp");
    want(gp, "\"0.9\" 0.954243");
    want(gp, "(logit scale)");
    free(gp);
    int made = 0;
    assert_int_equal(harness_plots_render_axis(dir, "sqrt", &made), ANN_EPARAM);
}

/* ---- templates ---------------------------------------------------------- */

/* A run directory holding the fixture's cells.jsonl only. */
static char *fresh_run(void)
{
    char *run = tu_tmpdir("plots-run");
    char from[4400], to[4400];
    snprintf(from, sizeof from, "%s/cells.jsonl", dir);
    snprintf(to, sizeof to, "%s/cells.jsonl", run);
    size_t len = 0;
    char *cells = tu_read_file(from, &len);
    assert_non_null(cells);
    assert_int_equal(tu_write_file(to, cells, len), 0);
    free(cells);
    return run;
}

/* Write text to dir/name; returns the path (static buffer rotated over 4). */
static const char *put(const char *d, const char *name, const char *text)
{
    static char paths[4][4400];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", d, name);
    assert_int_equal(tu_write_file(p, text, strlen(text)), 0);
    return p;
}

/* text with every `from` replaced by `to` (at least one); malloc'd. */
static char *replaced(const char *text, const char *from, const char *to)
{
    size_t len = strlen(text), fl = strlen(from), tl = strlen(to);
    char *out = calloc(1, len * (tl > fl ? tl / fl + 1 : 1) + 1);
    size_t o = 0;
    int hits = 0;
    for (size_t i = 0; i < len;) {
        if (!strncmp(text + i, from, fl)) {
            memcpy(out + o, to, tl);
            o += tl;
            i += fl;
            hits++;
        } else {
            out[o++] = text[i++];
        }
    }
    if (!hits)
        fail_msg("no \"%s\" to replace", from);
    return out;
}

/* The repository's template of kind, with every `from` replaced by `to`. */
static char *edited(const char *kind, const char *from, const char *to)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s.gp", repo_plots(), kind);
    size_t len = 0;
    char *t = tu_read_file(p, &len);
    assert_non_null(t);
    t = realloc(t, len + 1);
    t[len] = '\0';
    char *out = replaced(t, from, to);
    free(t);
    return out;
}

/* How many entries of d start with prefix. */
static int entries(const char *d, const char *prefix)
{
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null | grep -c '^%s'", d, prefix);
    FILE *f = popen(cmd, "r");
    int n = 0;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        pclose(f);
    }
    return n;
}

static int render_with(const char *run, const char *const *templates, size_t n)
{
    harness_plot_opts o = { .recall_axis = NULL, .templates = templates, .n_templates = n };
    int made = 0;
    return harness_plots_render_opts(run, &o, &made);
}

/* An edited copy restyles its figure only, and the run's script keeps the edit. */
static void test_template_restyles_one_figure(void **state)
{
    (void)state;
    char *run = fresh_run();
    char *text = edited("recall_qps", "#1f77b4", "#123456");
    char *both = replaced(text, "set title fig_title", "set title \"Our QPS figure\"");
    const char *tp = put(run, "my_qps.gp", both);
    const char *const ts[] = { tp };
    int made = 0;
    harness_plot_opts o = { .templates = ts, .n_templates = 1 };
    int rc = harness_plots_render_opts(run, &o, &made);
    if (rc)
        fail_msg("%s", ann_errmsg(rc));
    assert_int_equal(made, 3);
    char p[4400];
    snprintf(p, sizeof p, "%s/recall_qps.svg", run);
    size_t len = 0;
    char *svg = tu_read_file(p, &len);
    assert_non_null(svg);
    svg = realloc(svg, len + 1);
    svg[len] = '\0';
    want(svg, "stroke='rgb( 18,  52,  86)'");
    want(svg, "<text>Our QPS figure</text>");
    assert_null(strstr(svg, "rgb( 31, 119, 180)"));
    free(svg);
    /* the other figures keep the repository's look */
    snprintf(p, sizeof p, "%s/recall_p99.svg", run);
    svg = tu_read_file(p, &len);
    assert_non_null(svg);
    svg = realloc(svg, len + 1);
    svg[len] = '\0';
    want(svg, "stroke='rgb( 31, 119, 180)'");
    free(svg);
    snprintf(p, sizeof p, "%s/plots/recall_qps.gp", run);
    char *gp = tu_read_file(p, &len);
    gp = realloc(gp, len + 1);
    gp[len] = '\0';
    char from[4500];
    snprintf(from, sizeof from, "from the template %s.\n", tp);
    want(gp, from);
    want(gp, "set title \"Our QPS figure\"\n");
    free(gp);
    /* nothing half-written is left behind */
    assert_int_equal(entries(run, "\\."), 0);
    snprintf(p, sizeof p, "%s/plots", run);
    assert_int_equal(entries(p, "\\."), 0);
    free(text);
    free(both);
    tu_rmdir(run);
}

/* One bad template: rc and message exact, and no figure written. */
static void refused(const char *run, const char *const *ts, size_t n, int code, const char *msg)
{
    int rc = render_with(run, ts, n);
    if (rc != code)
        fail_msg("rc %d, want %d: %s", rc, code, rc ? ann_errmsg(rc) : "");
    if (strcmp(ann_errmsg(rc), msg))
        fail_msg("message:\n  %s\nwant:\n  %s", ann_errmsg(rc), msg);
    char p[4400];
    snprintf(p, sizeof p, "%s/plots", run);
    assert_int_equal(access(p, F_OK), -1); /* refused before anything was written */
    assert_int_equal(entries(run, "recall_"), 0);
}

static void test_template_errors(void **state)
{
    (void)state;
    char *run = fresh_run();
    char *tdir = tu_tmpdir("plots-templates");
    char m[4800], p[4400];
    /* missing */
    snprintf(p, sizeof p, "%s/none.gp", tdir);
    const char *const missing[] = { p };
    snprintf(m, sizeof m, "%s: read template: No such file or directory", p);
    refused(run, missing, 1, -ENOENT, m);
    /* unreadable: a directory (the tests may run as root, whom modes do not stop) */
    const char *const unreadable[] = { tdir };
    snprintf(m, sizeof m, "%s: read template: Is a directory", tdir);
    refused(run, unreadable, 1, -EISDIR, m);
    /* no kind declared */
    const char *const nokind[] = { put(tdir, "nokind.gp", "# my figure\nplot x\n") };
    snprintf(m, sizeof m,
             "%s: no \"# annlab figure: KIND\" line in the comments that open it (KIND: recall_qps, "
             "recall_p99, reads_vs_L, memory_caps_qps, memory_caps_latency, "
             "workload_recall, workload_latency, workload_insert_latency, workload_insert_vs_pending)",
             nokind[0]);
    refused(run, nokind, 1, ANN_EFORMAT, m);
    /* an unknown kind */
    const char *const unknown[] = { put(tdir, "unknown.gp", "# annlab figure: recall_qqs\nplot x\n") };
    snprintf(m, sizeof m,
             "%s: figure kind \"recall_qqs\" is not one annlab draws (recall_qps, recall_p99, reads_vs_L, "
             "memory_caps_qps, memory_caps_latency, workload_recall, workload_latency, "
             "workload_insert_latency, workload_insert_vs_pending)",
             unknown[0]);
    refused(run, unknown, 1, ANN_EFORMAT, m);
    /* a kind this run does not draw (no memory-capped cells) */
    char *caps = edited("memory_caps_qps", "lw 2", "lw 3");
    const char *const notdrawn[] = { put(tdir, "caps.gp", caps) };
    free(caps);
    snprintf(m, sizeof m, "%s: a template for memory_caps_qps, a figure this run has no cells for", notdrawn[0]);
    refused(run, notdrawn, 1, ANN_EPARAM, m);
    /* two for one kind */
    char *qps = edited("recall_qps", "#1f77b4", "#123456");
    char first[4400];
    snprintf(first, sizeof first, "%s", put(tdir, "a.gp", qps));
    const char *const twice[] = { first, put(tdir, "b.gp", qps) };
    snprintf(m, sizeof m, "%s: a second template for recall_qps (the first: %s)", twice[1], first);
    refused(run, twice, 2, ANN_EPARAM, m);
    /* the repository's folder ($ANNLAB_PLOTS_DIR here) holding another kind under a kind's name */
    char *p99 = edited("recall_p99", "lw 2", "lw 3");
    put(tdir, "README.md", "templates\n");
    put(tdir, "recall_qps.gp", p99);
    free(p99);
    setenv("ANNLAB_PLOTS_DIR", tdir, 1);
    snprintf(m, sizeof m, "%s/recall_qps.gp: a template for recall_p99, not recall_qps", tdir);
    refused(run, NULL, 0, ANN_EFORMAT, m);
    /* ... or missing one */
    snprintf(p, sizeof p, "%s/recall_qps.gp", tdir);
    unlink(p);
    snprintf(m, sizeof m, "%s/recall_qps.gp: read template: No such file or directory", tdir);
    refused(run, NULL, 0, -ENOENT, m);
    unsetenv("ANNLAB_PLOTS_DIR");
    free(qps);
    tu_rmdir(tdir);
    tu_rmdir(run);
}

/* A template gnuplot rejects, or one that draws nothing, leaves the last
 * good figure as it was and nothing half-written. */
static void test_template_failure_keeps_figure(void **state)
{
    (void)state;
    char *run = fresh_run();
    int made = 0;
    assert_int_equal(harness_plots_render_axis(run, NULL, &made), 0);
    char p[4400], gp[4400];
    snprintf(p, sizeof p, "%s/recall_qps.svg", run);
    snprintf(gp, sizeof gp, "%s/plots/recall_qps.gp", run);
    size_t len0 = 0, len1 = 0, glen0 = 0, glen1 = 0;
    char *before = tu_read_file(p, &len0), *gp_before = tu_read_file(gp, &glen0);
    assert_non_null(before);
    /* an edit with a gnuplot error after the first figure was opened */
    char *recolored = edited("recall_qps", "#1f77b4", "#123456"); /* drawn if the figure were replaced */
    char *bad = replaced(recolored, "replot\n", "replot\nset bogus_option_of_ours\n");
    const char *const ts[] = { put(run, "bad.gp", bad) };
    free(recolored);
    free(bad);
    int rc = render_with(run, ts, 1);
    assert_int_equal(rc, ANN_EUNSUPPORTED);
    char m[4800];
    /* the variables of 4 series take 28 lines before the template's first */
    snprintf(m, sizeof m, "%s: gnuplot failed on this template (exit 1; in its message above, line N of the "
                          "script is line N - 28 of the template)", ts[0]);
    assert_string_equal(ann_errmsg(rc), m);
    char *after = tu_read_file(p, &len1), *gp_after = tu_read_file(gp, &glen1);
    assert_int_equal(len0, len1);
    assert_memory_equal(before, after, len0);
    assert_int_equal(glen0, glen1);
    assert_memory_equal(gp_before, gp_after, glen0);
    free(after);
    free(gp_after);
    assert_int_equal(entries(run, "\\."), 0);
    snprintf(p, sizeof p, "%s/plots", run);
    assert_int_equal(entries(p, "\\."), 0);
    /* a template that draws nothing */
    const char *const empty[] = { put(run, "empty.gp", "# annlab figure: recall_qps\nn = n_series\n") };
    rc = render_with(run, empty, 1);
    assert_int_equal(rc, ANN_EFORMAT);
    snprintf(m, sizeof m, "%s: the template drew nothing (it writes each figure to output.EXT: "
                          "output.\".png\", output.\".svg\")", empty[0]);
    assert_string_equal(ann_errmsg(rc), m);
    snprintf(p, sizeof p, "%s/recall_qps.svg", run);
    after = tu_read_file(p, &len1);
    assert_int_equal(len0, len1);
    assert_memory_equal(before, after, len0);
    free(after);
    free(before);
    free(gp_before);
    tu_rmdir(run);
}

/* `annlab plot RUN --template F` from another directory: the repository's
 * templates for the rest; a missing template exits 1 naming it. */
static void test_cli_template(void **state)
{
    (void)state;
    if (!hf_bin())
        skip();
    char *run = fresh_run();
    char *elsewhere = tu_tmpdir("plots-cwd");
    char *text = edited("reads_vs_L", "lw 2", "lw 4");
    const char *tp = put(elsewhere, "reads.gp", text);
    free(text);
    const char *args[] = { "plot", run, "--template", tp, NULL };
    char *out = NULL;
    int rc = hf_annlab(elsewhere, &out, args);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    char want_out[4400];
    snprintf(want_out, sizeof want_out, "3 figures in %s (*.png, *.svg)\n", run);
    assert_string_equal(out, want_out);
    free(out);
    char p[4400];
    snprintf(p, sizeof p, "%s/plots/recall_qps.gp", run);
    size_t len = 0;
    char *gp = tu_read_file(p, &len);
    assert_non_null(gp);
    gp = realloc(gp, len + 1);
    gp[len] = '\0';
    char from[4400];
    snprintf(from, sizeof from, "from the template %s/recall_qps.gp.\n", repo_plots());
    want(gp, from);
    free(gp);
    const char *bad[] = { "plot", run, "--template", "nowhere.gp", NULL };
    rc = hf_annlab(elsewhere, &out, bad);
    assert_int_equal(rc, 1);
    assert_string_equal(out, "annlab plot: nowhere.gp: read template: No such file or directory\n");
    free(out);
    tu_rmdir(elsewhere);
    tu_rmdir(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_axis_styles_legend),
        cmocka_unit_test(test_reads_vs_L),
        cmocka_unit_test(test_log_and_logit_axes),
        cmocka_unit_test(test_template_restyles_one_figure),
        cmocka_unit_test(test_template_errors),
        cmocka_unit_test(test_template_failure_keeps_figure),
        cmocka_unit_test(test_cli_template),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
