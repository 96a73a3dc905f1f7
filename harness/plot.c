/*
 * plot.c: `annlab plot RUN_DIR`, figures of a run through gnuplot, each as
 * PNG (pngcairo) and SVG:
 *
 *   recall_qps     QPS against recall@k per engine (warm, the largest thread
 *                  count), all points plus each engine's Pareto frontier
 *                  (points no other point of the engine beats on both axes)
 *   recall_p99     p99 latency against recall@k, per engine and mode
 *   reads_vs_L     engine reads and device reads per query against the
 *                  search parameter L (when cells sweep L)
 *   memory_caps    QPS and p50 latency against the memory cap (when capped
 *                  cells finished)
 *
 * The data behind each figure is written beside it (plots/<figure>.dat, one
 * gnuplot index per series) with the script (plots/<figure>.gp), so a figure
 * can be redrawn or restyled by hand.  Axes switch to log scale when the
 * data spans more than a decade.
 */
#include "harness/run.h"

#include "engines/core/status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

typedef struct pt {
    double x, y;
} pt;

typedef struct series {
    char name[200];
    int color; /* index of the engine entry (and build): one colour per engine */
    int hollow; /* cold mode: open symbols, dashed lines */
    int alt;    /* a second quantity of the same engine (device reads): other symbol */
    pt *p;
    size_t n, cap;
} series;

typedef struct figure {
    series *s;
    size_t n, cap;
} figure;

static series *fig_series_styled(figure *f, const char *name, int color, int hollow, int alt)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->s[i].name, name))
            return &f->s[i];
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 8;
        series *s = realloc(f->s, cap * sizeof *s);
        if (!s)
            return NULL;
        f->s = s;
        f->cap = cap;
    }
    series *s = &f->s[f->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->color = color;
    s->hollow = hollow;
    s->alt = alt;
    return s;
}

static int series_add(series *s, double x, double y)
{
    if (!s || !isfinite(x) || !isfinite(y))
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        pt *p = realloc(s->p, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        s->p = p;
        s->cap = cap;
    }
    s->p[s->n++] = (pt){ x, y };
    return 0;
}

static void fig_free(figure *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->s[i].p);
    free(f->s);
    memset(f, 0, sizeof *f);
}

static int cmp_x(const void *a, const void *b)
{
    const pt *p = a, *q = b;
    return (p->x > q->x) - (p->x < q->x) ?: (p->y > q->y) - (p->y < q->y);
}

/* Does the data on one axis span more than a decade (and stay positive)? */
static int wants_log(const figure *f, int y)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < f->n; i++)
        for (size_t j = 0; j < f->s[i].n; j++) {
            double v = y ? f->s[i].p[j].y : f->s[i].p[j].x;
            if (v <= 0)
                return 0;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
    return isfinite(lo) && hi / lo > 10;
}

/* The Pareto frontier (maximise x and y) of s, sorted by x. */
static size_t pareto(const series *s, pt *out)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        int dominated = 0;
        for (size_t j = 0; j < s->n && !dominated; j++)
            dominated = j != i && s->p[j].x >= s->p[i].x && s->p[j].y >= s->p[i].y &&
                        (s->p[j].x > s->p[i].x || s->p[j].y > s->p[i].y);
        if (!dominated)
            out[n++] = s->p[i];
    }
    qsort(out, n, sizeof *out, cmp_x);
    return n;
}

typedef struct plot_spec {
    const char *name, *title, *xlabel, *ylabel;
    int frontier;   /* draw each series' Pareto frontier */
    int lines;      /* connect points sorted by x */
    int xrange_recall;
} plot_spec;

static int run_gnuplot(const char *script)
{
    pid_t pid = fork();
    if (pid < 0)
        return ann_fail_errno("fork gnuplot");
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ann_fail(ANN_EUNSUPPORTED, "gnuplot %s: exit %d (is gnuplot-nox installed?)", script,
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

static int write_figure(const char *dir, const plot_spec *ps, figure *f)
{
    if (f->n == 0)
        return 0;
    char dat[4400], gp[4400];
    snprintf(dat, sizeof dat, "%s/plots/%s.dat", dir, ps->name);
    snprintf(gp, sizeof gp, "%s/plots/%s.gp", dir, ps->name);
    FILE *d = fopen(dat, "we");
    if (!d)
        return ann_fail_errno("%s: create", dat);
    /* index 2i: the points; index 2i+1: the frontier (or the sorted line) */
    for (size_t i = 0; i < f->n; i++) {
        series *s = &f->s[i];
        qsort(s->p, s->n, sizeof *s->p, cmp_x);
        fprintf(d, "# %s\n", s->name);
        for (size_t j = 0; j < s->n; j++)
            fprintf(d, "%.9g %.9g\n", s->p[j].x, s->p[j].y);
        fprintf(d, "\n\n# %s frontier\n", s->name);
        pt *fr = malloc((s->n ? s->n : 1) * sizeof *fr);
        size_t nf = fr ? (ps->frontier ? pareto(s, fr) : s->n) : 0;
        if (fr && !ps->frontier)
            memcpy(fr, s->p, s->n * sizeof *fr);
        for (size_t j = 0; j < nf; j++)
            fprintf(d, "%.9g %.9g\n", fr[j].x, fr[j].y);
        free(fr);
        fprintf(d, "\n\n");
    }
    fclose(d);
    FILE *g = fopen(gp, "we");
    if (!g)
        return ann_fail_errno("%s: create", gp);
    int logx = wants_log(f, 0), logy = wants_log(f, 1);
    double ylo = INFINITY, yhi = -INFINITY;
    for (size_t i = 0; i < f->n; i++)
        for (size_t j = 0; j < f->s[i].n; j++) {
            ylo = fmin(ylo, f->s[i].p[j].y);
            yhi = fmax(yhi, f->s[i].p[j].y);
        }
    /* the key goes below the plot in two columns; the canvas grows with it */
    int height = 600 + 24 * (int)((f->n + 1) / 2);
    /* one colour per engine, distinct for up to 12 engines */
    static const char *const colors[] = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
                                          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#000000", "#393b79" };
    for (int t = 0; t < 2; t++) {
        if (t == 0)
            fprintf(g, "set terminal pngcairo noenhanced size 1100,%d font 'Sans,11'\nset output '%s/%s.png'\n",
                    height, dir, ps->name);
        else
            fprintf(g, "set terminal svg noenhanced size 1100,%d font 'Sans,11' dynamic\nset output '%s/%s.svg'\n",
                    height, dir, ps->name);
        fprintf(g, "set title \"%s\"\nset xlabel \"%s\"\nset ylabel \"%s\"\n", ps->title, ps->xlabel, ps->ylabel);
        fprintf(g, "set grid\nset key outside below left Left reverse maxcols 2 box\nset format y '%%g'\n");
        fprintf(g, "set bmargin %d\n", 6 + (int)((f->n + 1) / 2));
        fprintf(g, logx ? "set logscale x\n" : "unset logscale x\n");
        fprintf(g, logy ? "set logscale y\n" : "unset logscale y\n");
        if (ps->xrange_recall) {
            /* recall axis: from a round value below the lowest point to 1 */
            double lo = 1;
            for (size_t i = 0; i < f->n; i++)
                for (size_t j = 0; j < f->s[i].n; j++)
                    lo = fmin(lo, f->s[i].p[j].x);
            lo = fmax(0, floor((lo - 0.02) * 20) / 20);
            fprintf(g, "set xrange [%g:1.01]\n", lo);
            fprintf(g, "set offsets 0, 0, 0, 0\n");
        } else {
            double lo = INFINITY, hi = -INFINITY;
            for (size_t i = 0; i < f->n; i++)
                for (size_t j = 0; j < f->s[i].n; j++) {
                    lo = fmin(lo, f->s[i].p[j].x);
                    hi = fmax(hi, f->s[i].p[j].x);
                }
            if (lo == hi) /* one x value: centre it (gnuplot cannot scale an empty range) */
                fprintf(g, "set xrange [%g:%g]\n", lo - fabs(lo) * 0.5 - 1, hi + fabs(hi) * 0.5 + 1);
            fprintf(g, "set offsets graph 0.05, graph 0.05, 0, 0\n");
        }
        if (ylo == yhi) /* one y value: centre it */
            fprintf(g, "set yrange [%g:%g]\n", ylo - fabs(ylo) * 0.5 - 1, yhi + fabs(yhi) * 0.5 + 1);
        fprintf(g, "plot ");
        for (size_t i = 0; i < f->n; i++) {
            const series *se = &f->s[i];
            const char *rgb = colors[(size_t)se->color % (sizeof colors / sizeof colors[0])];
            /* filled square/circle warm, open ones cold; triangles for the second quantity */
            int ptype = se->alt ? (se->hollow ? 8 : 9) : se->hollow ? 4 + 2 * (se->color % 2) : 5 + 2 * (se->color % 2);
            fprintf(g, "%s'%s' index %zu using 1:2 with points pt %d ps 1.4 lc rgb '%s' title \"%s\"",
                    i ? ", \\\n  " : "", dat, 2 * i, ptype, rgb, se->name);
            if (ps->frontier || ps->lines)
                fprintf(g, ", \\\n  '%s' index %zu using 1:2 with lines lw 2 dt %d lc rgb '%s' notitle", dat,
                        2 * i + 1, se->hollow ? 2 : 1, rgb);
        }
        fprintf(g, "\n");
    }
    fclose(g);
    return run_gnuplot(gp);
}

static const char *sget(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static double nget(const json_t *o, const char *k1, const char *k2)
{
    const json_t *v = json_object_get(o, k1);
    if (k2)
        v = json_object_get(v, k2);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "R=32 L=50" from a parameter object; "" for an empty or absent one. */
static void params_text(const json_t *obj, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t used = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        char *val = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        int w = snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", key, val ? val : "?");
        free(val);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    for (char *q = buf; *q; q++)
        if (*q == '"')
            *q = '\'';
}

int harness_plots_render(const char *run_dir, int *made)
{
    *made = 0;
    json_t *cells = NULL;
    int rc = harness_cells_load(run_dir, &cells);
    if (rc)
        return rc;
    char pdir[4200];
    snprintf(pdir, sizeof pdir, "%s/plots", run_dir);
    if (mkdir(pdir, 0755) != 0 && errno != EEXIST) {
        json_decref(cells);
        return ann_fail_errno("%s: mkdir", pdir);
    }
    long long k = 10;
    figure fq = { 0 }, fl = { 0 }, fr = { 0 }, fcq = { 0 }, fcl = { 0 };
    /* largest thread count among warm ok cells, for the QPS figure */
    json_int_t tmax = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c)
        if (!strcmp(sget(c, "status"), "ok") && json_integer_value(json_object_get(c, "threads")) > tmax)
            tmax = json_integer_value(json_object_get(c, "threads"));
    /* builds per engine label: the build is named in a series only when it varies */
    json_t *builds = json_object(), *groups = json_object();
    json_array_foreach(cells, i, c) {
        char btext[96];
        params_text(json_object_get(c, "build"), btext, sizeof btext);
        json_t *set = json_object_get(builds, sget(c, "label"));
        if (!set) {
            set = json_object();
            json_object_set_new(builds, sget(c, "label"), set);
        }
        json_object_set_new(set, btext, json_true());
    }
    json_array_foreach(cells, i, c) {
        if (strcmp(sget(c, "status"), "ok"))
            continue;
        k = json_integer_value(json_object_get(c, "k"));
        const char *mode = sget(c, "mode");
        int cold = !strcmp(mode, "cold");
        /* a series per engine entry (and build when several); efforts are its points */
        char label[160], btext[96], stext[96];
        params_text(json_object_get(c, "build"), btext, sizeof btext);
        params_text(json_object_get(c, "search"), stext, sizeof stext);
        int several = json_object_size(json_object_get(builds, sget(c, "label"))) > 1;
        snprintf(label, sizeof label, "%s%s%s", sget(c, "label"), several ? " " : "", several ? btext : "");
        if (!json_object_get(groups, label))
            json_object_set_new(groups, label, json_integer((json_int_t)json_object_size(groups)));
        int color = (int)json_integer_value(json_object_get(groups, label));
        int capped = !json_is_null(json_object_get(c, "memory_cap_bytes"));
        json_int_t t = json_integer_value(json_object_get(c, "threads"));
        double recall = nget(c, "recall", NULL);
        char name[200];
        if (!capped) {
            if (t == tmax) {
                snprintf(name, sizeof name, "%s %s", label, mode);
                series_add(fig_series_styled(&fq, name, color, cold, 0), recall, nget(c, "qps", NULL));
            }
            if (t == 1 || tmax == 0) {
                snprintf(name, sizeof name, "%s %s", label, mode);
                series_add(fig_series_styled(&fl, name, color, cold, 0), recall, nget(c, "latency_us", "p99"));
            }
            const json_t *L = json_object_get(json_object_get(c, "search"), "L");
            if (json_is_number(L) && t == 1) {
                snprintf(name, sizeof name, "%s %s engine reads", label, mode);
                series_add(fig_series_styled(&fr, name, color, cold, 0), json_number_value(L),
                           nget(c, "engine_stats", "reads"));
                snprintf(name, sizeof name, "%s %s device reads", label, mode);
                series_add(fig_series_styled(&fr, name, color, cold, 1), json_number_value(L),
                           nget(c, "device", "reads_per_query"));
            }
        } else {
            double cap_mib = nget(c, "memory_cap_bytes", NULL) / 1048576.0;
            snprintf(name, sizeof name, "%s %s%s%s T=%lld", label, mode, stext[0] ? " " : "", stext,
                     (long long)t);
            series_add(fig_series_styled(&fcq, name, color, cold, 0), cap_mib, nget(c, "qps", NULL));
            series_add(fig_series_styled(&fcl, name, color, cold, 0), cap_mib, nget(c, "latency_us", "p50"));
        }
    }
    char xl[64], title[160];
    snprintf(xl, sizeof xl, "recall@%lld (tie-aware)", k);
    snprintf(title, sizeof title,
             "Throughput against recall (%lld thread%s; lines: each engine's Pareto frontier, dashed = cold)",
             (long long)tmax, tmax == 1 ? "" : "s");
    const plot_spec specs[] = {
        { "recall_qps", title, xl, "queries per second", 1, 0, 1 },
        { "recall_p99", "Tail latency against recall (1 thread; dashed = cold)", xl, "p99 latency (microseconds)", 0, 1, 1 },
        { "reads_vs_L", "Reads per query against search list size L", "L (search list size)", "reads per query", 0, 1, 0 },
        { "memory_caps_qps", "Throughput against memory cap", "memory cap (MiB)", "queries per second", 0, 1, 0 },
        { "memory_caps_latency", "Median latency against memory cap", "memory cap (MiB)", "p50 latency (microseconds)", 0, 1, 0 },
    };
    figure *figs[] = { &fq, &fl, &fr, &fcq, &fcl };
    for (size_t j = 0; j < 5 && !rc; j++) {
        if (figs[j]->n) {
            rc = write_figure(run_dir, &specs[j], figs[j]);
            if (!rc)
                (*made)++;
        }
    }
    for (size_t j = 0; j < 5; j++)
        fig_free(figs[j]);
    json_decref(builds);
    json_decref(groups);
    json_decref(cells);
    return rc;
}

int harness_plot_main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: annlab plot RUN_DIR\n");
        return 2;
    }
    int made = 0;
    int rc = harness_plots_render(argv[1], &made);
    if (rc) {
        fprintf(stderr, "annlab plot: %s\n", ann_errmsg(rc));
        return 1;
    }
    printf("%d figures in %s (*.png, *.svg)\n", made, argv[1]);
    return 0;
}
