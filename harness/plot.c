/*
 * plot.c: `annlab plot RUN_DIR`, figures of a run through gnuplot, each as
 * PNG (pngcairo) and SVG:
 *
 *   recall_qps     QPS against recall@k (the largest thread count), every
 *                  point plus each series' Pareto frontier (points no other
 *                  point of the series beats on both axes)
 *   recall_p99     p99 latency against recall@k (one thread), every point
 *                  plus the frontier (higher recall, lower p99)
 *   reads_vs_L     reads per query against the search effort (each engine's
 *                  effort_param: L, ef_search, nprobe): the engine's own,
 *                  named for what they are (its reads_unit: sector reads,
 *                  kv gets), beside the device reads of the cell's own cgroup
 *   memory_caps    QPS and p50 latency against the memory cap (when capped
 *                  cells finished)
 *
 * A reader tells series apart by two marks: one colour per engine (label),
 * and one line style and marker per variant of it (the open parameters,
 * the build when an engine has several, cold or warm: filled markers warm,
 * open ones cold), and every legend entry names the variant in words.  The
 * legend sits below the plot in as many columns as its entries' length
 * allows, and the canvas grows with it, so every entry shows.
 *
 * Recall axes end at 1 and come in three scales (--recall-axis): linear;
 * log, the distance to 1 on a log scale (0.9, 0.99, 0.999 equally spaced,
 * where high-recall differences are); logit.  A recall of exactly 1 is drawn
 * at 1 - 1e-4 on the log and logit scales, and the tick there reads 1.
 *
 * The data behind each figure is written beside it (plots/<figure>.dat, one
 * gnuplot index per series, the raw recall in a third column when the axis
 * is transformed) with the script (plots/<figure>.gp), so a figure can be
 * redrawn or restyled by hand.  Value axes switch to log scale when the data
 * spans more than a decade.
 */
#include "harness/run.h"

#include "engines/core/status.h"
#include "engines/engine.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#ifdef ANNLAB_COVERAGE
void __gcov_dump(void); /* libgcov: write this process's counters now (make coverage) */
#endif

typedef struct pt {
    double x, y, raw; /* raw: the recall before the axis transform */
} pt;

typedef struct series {
    char name[240];
    int color;   /* the engine (label): one colour each */
    int variant; /* the engine's variant: line style and marker */
    int hollow;  /* cold: open markers */
    int alt;     /* a second quantity of the same series (device reads): big open marker */
    pt *p;
    size_t n, cap;
} series;

typedef struct figure {
    series *s;
    size_t n, cap;
} figure;

typedef enum { AXIS_LINEAR, AXIS_LOG, AXIS_LOGIT } recall_axis;

static series *fig_series(figure *f, const char *name, int color, int variant, int hollow, int alt)
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
    s->variant = variant;
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
    s->p[s->n++] = (pt){ x, y, x };
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

/* The Pareto frontier of s, sorted by x: maximise x, and y (dir 1) or
 * minimise y (dir -1). */
static size_t pareto(const series *s, pt *out, int dir)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        int dominated = 0;
        for (size_t j = 0; j < s->n && !dominated; j++) {
            double yi = dir * s->p[i].y, yj = dir * s->p[j].y;
            dominated = j != i && s->p[j].x >= s->p[i].x && yj >= yi &&
                        (s->p[j].x > s->p[i].x || yj > yi || j < i);
        }
        if (!dominated)
            out[n++] = s->p[i];
    }
    qsort(out, n, sizeof *out, cmp_x);
    return n;
}

/* A recall on the chosen axis: 1 is drawn at 1 - 1e-4 where 1 is infinitely far. */
#define RECALL_CLIP 1e-4
static double axis_x(recall_axis a, double r)
{
    if (a == AXIS_LINEAR)
        return r > 1 ? 1 : r;
    double m = 1 - r;
    if (m < RECALL_CLIP)
        m = RECALL_CLIP;
    if (a == AXIS_LOG)
        return -log10(m); /* 0.9 -> 1, 0.99 -> 2 */
    double p = 1 - m;
    if (p < RECALL_CLIP)
        p = RECALL_CLIP;
    return log10(p / m); /* logit */
}

typedef struct plot_spec {
    const char *name, *title, *xlabel, *ylabel;
    int frontier;  /* 1: frontier maximising y; -1: minimising y; 0: none */
    int lines;     /* connect points sorted by x (no frontier) */
    int recall_x;  /* the x axis is recall */
} plot_spec;

static int run_gnuplot(const char *script)
{
    pid_t pid = fork();
    if (pid < 0)
        return ann_fail_errno("fork gnuplot");
    if (pid == 0) {
#ifdef ANNLAB_COVERAGE
        __gcov_dump(); /* exec discards this process's counters: keep the child's lines */
#endif
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

/* gnuplot's tics of a transformed recall axis, between lo and hi (axis units). */
static void recall_tics(FILE *g, recall_axis a, double lo, double hi)
{
    static const double marks[] = { 0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999 };
    fprintf(g, "set xtics (");
    int first = 1;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        double x = axis_x(a, marks[i]);
        if (x < lo - 1e-9 || x > hi + 1e-9)
            continue;
        /* the log scale keeps its decades; 0.8, 0.95 and 0.995 only on logit */
        if (a == AXIS_LOG && (marks[i] == 0.8 || marks[i] == 0.95 || marks[i] == 0.995))
            continue;
        fprintf(g, "%s\"%g\" %.6g", first ? "" : ", ", marks[i] == 0.9999 ? 1.0 : marks[i], x);
        first = 0;
    }
    fprintf(g, ")\n");
}

static int write_figure(const char *dir, const plot_spec *ps, figure *f, recall_axis axis)
{
    if (f->n == 0)
        return 0;
    char dat[4400], gp[4400];
    snprintf(dat, sizeof dat, "%s/plots/%s.dat", dir, ps->name);
    snprintf(gp, sizeof gp, "%s/plots/%s.gp", dir, ps->name);
    /* the recall axis transform, applied once to every point */
    if (ps->recall_x)
        for (size_t i = 0; i < f->n; i++)
            for (size_t j = 0; j < f->s[i].n; j++)
                f->s[i].p[j].x = axis_x(axis, f->s[i].p[j].raw);
    FILE *d = fopen(dat, "we");
    if (!d)
        return ann_fail_errno("%s: create", dat);
    /* index 2i: the points; index 2i+1: the frontier (or the sorted line) */
    for (size_t i = 0; i < f->n; i++) {
        series *s = &f->s[i];
        qsort(s->p, s->n, sizeof *s->p, cmp_x);
        fprintf(d, "# %s\n", s->name);
        for (size_t j = 0; j < s->n; j++)
            fprintf(d, "%.9g %.9g %.9g\n", s->p[j].x, s->p[j].y, s->p[j].raw);
        fprintf(d, "\n\n# %s %s\n", s->name, ps->frontier ? "frontier" : "line");
        pt *fr = malloc((s->n ? s->n : 1) * sizeof *fr);
        size_t nf = fr ? (ps->frontier ? pareto(s, fr, ps->frontier) : s->n) : 0;
        if (fr && !ps->frontier)
            memcpy(fr, s->p, s->n * sizeof *fr);
        for (size_t j = 0; j < nf; j++)
            fprintf(d, "%.9g %.9g %.9g\n", fr[j].x, fr[j].y, fr[j].raw);
        free(fr);
        fprintf(d, "\n\n");
    }
    fclose(d);
    FILE *g = fopen(gp, "we");
    if (!g)
        return ann_fail_errno("%s: create", gp);
    int logx = !ps->recall_x && wants_log(f, 0), logy = wants_log(f, 1);
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    size_t longest = 0;
    for (size_t i = 0; i < f->n; i++) {
        longest = strlen(f->s[i].name) > longest ? strlen(f->s[i].name) : longest;
        for (size_t j = 0; j < f->s[i].n; j++) {
            xlo = fmin(xlo, f->s[i].p[j].x);
            xhi = fmax(xhi, f->s[i].p[j].x);
            ylo = fmin(ylo, f->s[i].p[j].y);
            yhi = fmax(yhi, f->s[i].p[j].y);
        }
    }
    /* the legend below the plot: as many columns as fit 1200 pixels at
     * about 7 pixels a character plus the sample line, rows as needed */
    const int width = 1200;
    int cols = (int)(width / (7 * (int)longest + 90));
    if (cols < 1)
        cols = 1;
    if (cols > 4)
        cols = 4;
    int rows = (int)((f->n + (size_t)cols - 1) / (size_t)cols);
    int height = 620 + 20 * rows;
    /* one colour per engine, distinct for up to 12 engines */
    static const char *const colors[] = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
                                          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#000000", "#393b79" };
    /* per variant: dash type, filled marker, its open twin */
    static const int dts[] = { 1, 2, 4, 5, 3 };
    static const int filled[] = { 7, 5, 9, 13, 11 }, open[] = { 6, 4, 8, 12, 10 };
    for (int t = 0; t < 2; t++) {
        if (t == 0)
            fprintf(g, "set terminal pngcairo noenhanced size %d,%d font 'Sans,11'\nset output '%s/%s.png'\n",
                    width, height, dir, ps->name);
        else
            fprintf(g, "set terminal svg noenhanced size %d,%d font 'Sans,11' dynamic\nset output '%s/%s.svg'\n",
                    width, height, dir, ps->name);
        fprintf(g, "set title \"%s\"\nset xlabel \"%s%s\"\nset ylabel \"%s\"\n", ps->title, ps->xlabel,
                ps->recall_x && axis == AXIS_LOG     ? " (log scale of 1 - recall)"
                : ps->recall_x && axis == AXIS_LOGIT ? " (logit scale)"
                                                     : "",
                ps->ylabel);
        fprintf(g, "set grid\nset key outside below center Left reverse maxcols %d maxrows %d box spacing 1.1 "
                   "samplen 3 width 1\nset format y '%%g'\n",
                cols, rows);
        fprintf(g, "set bmargin %d\n", rows + 5);
        fprintf(g, logx ? "set logscale x\n" : "unset logscale x\n");
        fprintf(g, logy ? "set logscale y\n" : "unset logscale y\n");
        if (ps->recall_x) {
            /* recall ends at 1; the low end a round value below the lowest point */
            double hi = axis_x(axis, 1.0), lo;
            if (axis != AXIS_LINEAR && floor(xhi) + 1.0 < hi)
                hi = floor(xhi) + 1.0; /* the next decade of nines above the data */
            if (axis == AXIS_LINEAR) {
                lo = fmax(0, floor((xlo - 0.02) * 20) / 20);
                fprintf(g, "set xtics auto\n");
            } else {
                lo = floor(xlo * 2) / 2 - 0.25;
                recall_tics(g, axis, lo, hi);
            }
            if (lo >= hi)
                lo = hi - 0.1;
            fprintf(g, "set xrange [%g:%g]\nset offsets 0, 0, graph 0.05, graph 0.05\n", lo, hi);
        } else {
            if (xlo == xhi) /* one x value: centre it (gnuplot cannot scale an empty range) */
                fprintf(g, "set xrange [%g:%g]\n", xlo - fabs(xlo) * 0.5 - 1, xhi + fabs(xhi) * 0.5 + 1);
            fprintf(g, "set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n");
        }
        if (ylo == yhi) /* one y value: centre it */
            fprintf(g, "set yrange [%g:%g]\n", ylo - fabs(ylo) * 0.5 - 1, yhi + fabs(yhi) * 0.5 + 1);
        fprintf(g, "plot ");
        for (size_t i = 0; i < f->n; i++) {
            const series *se = &f->s[i];
            const char *rgb = colors[(size_t)se->color % (sizeof colors / sizeof colors[0])];
            int v = se->variant % 5;
            int ptype = se->alt ? (se->hollow ? 4 : 6) : se->hollow ? open[v] : filled[v];
            /* sizes nest: a cold (open) marker rings a warm (filled) one of the
             * same value, the device's large open marker rings both, so
             * series that coincide (cold and warm engine reads) stay visible */
            double psize = se->alt ? 2.6 : se->hollow ? 1.8 : 1.3;
            int line = ps->frontier || ps->lines;
            /* the legend sample shows the line style and the marker together */
            fprintf(g, "%s'%s' index %zu using 1:2 with %s pt %d ps %.1f lw 2 dt %d lc rgb '%s' title \"%s\"",
                    i ? ", \\\n  " : "", dat, 2 * i + (line ? 1 : 0), line ? "linespoints" : "points", ptype,
                    psize, dts[v], rgb, se->name);
            if (ps->frontier)
                /* every point, frontier or not, with the series' marker */
                fprintf(g, ", \\\n  '%s' index %zu using 1:2 with points pt %d ps %.1f lc rgb '%s' notitle", dat,
                        2 * i, ptype, psize, rgb);
        }
        fprintf(g, "\n");
    }
    fclose(g);
    return run_gnuplot(gp);
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

/* What an engine's reads per query count (ann_engine_ops.reads_unit). */
static const char *reads_noun(const char *engine)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    return ops && ops->reads_unit ? ops->reads_unit : "reads";
}

/* The cell's value of its engine's effort parameter (ann_engine_ops.
 * effort_param: L, ef_search, nprobe), or NULL. */
static const json_t *effort_of(const json_t *cell, const json_t *search)
{
    const ann_engine_ops *ops = ann_engine_find(harness_jstr(cell, "engine"));
    return ops && ops->effort_param ? json_object_get(search, ops->effort_param) : NULL;
}

/* The index of key in obj, added at the end when new. */
static int index_of(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (v)
        return (int)json_integer_value(v);
    int i = (int)json_object_size(obj);
    json_object_set_new(obj, key, json_integer(i));
    return i;
}

int harness_plots_render_axis(const char *run_dir, const char *axis_name, int *made)
{
    *made = 0;
    recall_axis axis = AXIS_LINEAR;
    if (axis_name && !strcmp(axis_name, "log"))
        axis = AXIS_LOG;
    else if (axis_name && !strcmp(axis_name, "logit"))
        axis = AXIS_LOGIT;
    else if (axis_name && strcmp(axis_name, "linear"))
        return ann_fail(ANN_EPARAM, "--recall-axis '%s': want linear, log or logit", axis_name);
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
    /* largest thread count among ok cells, for the QPS figure */
    json_int_t tmax = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c)
        if (!strcmp(harness_jstr(c, "status"), "ok") && json_integer_value(json_object_get(c, "threads")) > tmax)
            tmax = json_integer_value(json_object_get(c, "threads"));
    /* builds per engine label: the build is named in a variant only when it varies */
    json_t *builds = json_object(), *colors = json_object(), *variants = json_object();
    json_array_foreach(cells, i, c) {
        char btext[96];
        params_text(json_object_get(c, "build"), btext, sizeof btext);
        json_t *set = json_object_get(builds, harness_jstr(c, "label"));
        if (!set) {
            set = json_object();
            json_object_set_new(builds, harness_jstr(c, "label"), set);
        }
        json_object_set_new(set, btext, json_true());
    }
    /* a workload's steps: recall, query latency and insert latency against step */
    figure fwr = { 0 }, fwl = { 0 }, fwi = { 0 }, fwp = { 0 };
    json_t *wl_colors = json_object();
    json_array_foreach(cells, i, c) {
        if (!json_object_get(c, "workload_cell") || strcmp(harness_jstr(c, "status"), "ok"))
            continue;
        k = json_integer_value(json_object_get(c, "k"));
        char stext[160], name[400];
        params_text(json_object_get(c, "search"), stext, sizeof stext);
        snprintf(name, sizeof name, "%s%s%s T=%lld", harness_jstr(c, "label"), stext[0] ? " " : "",
                 stext, (long long)json_integer_value(json_object_get(c, "threads")));
        int color = index_of(wl_colors, harness_jstr(c, "workload_cell"));
        double step = harness_jnum(c, "step", NULL);
        series_add(fig_series(&fwr, name, color, 0, 0, 0), step, harness_jnum(c, "recall", NULL));
        series_add(fig_series(&fwl, name, color, 0, 0, 0), step, harness_jnum(c, "latency_us", "p99"));
        char p50[480];
        snprintf(p50, sizeof p50, "%s p50", name);
        series_add(fig_series(&fwl, p50, color, 1, 0, 0), step, harness_jnum(c, "latency_us", "p50"));
        series_add(fig_series(&fwi, name, color, 0, 0, 0), step,
                   harness_jnum(c, "insert_latency_us", "p50"));
        snprintf(p50, sizeof p50, "%s p99", name);
        series_add(fig_series(&fwi, p50, color, 1, 0, 0), step,
                   harness_jnum(c, "insert_latency_us", "p99"));
        series_add(fig_series(&fwp, name, color, 0, 0, 0), harness_jnum(c, "pending_before", NULL),
                   harness_jnum(c, "insert_latency_us", "p50"));
    }
    json_decref(wl_colors);
    json_array_foreach(cells, i, c) {
        if (strcmp(harness_jstr(c, "status"), "ok") || json_object_get(c, "workload_cell"))
            continue;
        k = json_integer_value(json_object_get(c, "k"));
        const char *label = harness_jstr(c, "label"), *mode = harness_jstr(c, "mode");
        int cold = !strcmp(mode, "cold");
        /* the variant: build (when the engine has several), open parameters, mode */
        char btext[96], otext[160], stext[160], variant[320], name[400];
        params_text(json_object_get(c, "build"), btext, sizeof btext);
        params_text(json_object_get(c, "open"), otext, sizeof otext);
        const json_t *used = json_object_get(c, "search_used");
        const json_t *search = json_is_object(used) ? used : json_object_get(c, "search");
        params_text(search, stext, sizeof stext);
        int several = json_object_size(json_object_get(builds, label)) > 1;
        snprintf(variant, sizeof variant, "%s%s%s%s%s", several ? btext : "", several ? " " : "", otext,
                 otext[0] ? " " : "", mode);
        int color = index_of(colors, label);
        json_t *vs = json_object_get(variants, label);
        if (!vs) {
            vs = json_object();
            json_object_set_new(variants, label, vs);
        }
        int var = index_of(vs, variant);
        int capped = !json_is_null(json_object_get(c, "memory_cap_bytes"));
        json_int_t t = json_integer_value(json_object_get(c, "threads"));
        double recall = harness_jnum(c, "recall", NULL);
        snprintf(name, sizeof name, "%s %s", label, variant);
        if (!capped) {
            if (t == tmax)
                series_add(fig_series(&fq, name, color, var, cold, 0), recall, harness_jnum(c, "qps", NULL));
            if (t == 1 || tmax == 0)
                series_add(fig_series(&fl, name, color, var, cold, 0), recall, harness_jnum(c, "latency_us", "p99"));
            const json_t *L = effort_of(c, search);
            if (json_is_number(L) && t == 1) {
                char rn[480];
                snprintf(rn, sizeof rn, "%s: %s (engine)", name, reads_noun(harness_jstr(c, "engine")));
                series_add(fig_series(&fr, rn, color, var, cold, 0), json_number_value(L),
                           harness_jnum(c, "engine_stats", "reads"));
                /* the device reads this cell's own cgroup counted, else the disk's */
                double dev = harness_jnum(json_object_get(c, "device"), "cgroup", "reads_per_query");
                const char *src = "cgroup";
                if (!isfinite(dev)) {
                    dev = harness_jnum(c, "device", "reads_per_query");
                    src = "whole disk";
                }
                snprintf(rn, sizeof rn, "%s: device reads (%s)", name, src);
                series_add(fig_series(&fr, rn, color, var, cold, 1), json_number_value(L), dev);
            }
        } else {
            double cap_mib = harness_jnum(c, "memory_cap_bytes", NULL) / 1048576.0;
            char cn[600];
            snprintf(cn, sizeof cn, "%s%s%s T=%lld", name, stext[0] ? " " : "", stext, (long long)t);
            series_add(fig_series(&fcq, cn, color, var, cold, 0), cap_mib, harness_jnum(c, "qps", NULL));
            series_add(fig_series(&fcl, cn, color, var, cold, 0), cap_mib, harness_jnum(c, "latency_us", "p50"));
        }
    }
    char xl[64], title[200];
    snprintf(xl, sizeof xl, "recall@%lld (tie-aware)", k);
    snprintf(title, sizeof title,
             "Throughput against recall (%lld thread%s; lines: each series' Pareto frontier)",
             (long long)tmax, tmax == 1 ? "" : "s");
    const plot_spec specs[] = {
        { "recall_qps", title, xl, "queries per second", 1, 0, 1 },
        { "recall_p99", "Tail latency against recall (1 thread; lines: each series' frontier)", xl,
          "p99 latency (microseconds)", -1, 0, 1 },
        { "reads_vs_L", "Reads per query against search effort (filled: the engine's count; "
                        "large open: the device's)",
          "search effort (L, ef_search or nprobe: each engine's)", "reads per query", 0, 1, 0 },
        { "memory_caps_qps", "Throughput against memory cap", "memory cap (MiB)", "queries per second", 0, 1, 0 },
        { "memory_caps_latency", "Median latency against memory cap", "memory cap (MiB)",
          "p50 latency (microseconds)", 0, 1, 0 },
    };
    char wxl[64];
    snprintf(wxl, sizeof wxl, "recall@%lld (tie-aware, against the vectors live at the step)", k);
    const plot_spec wl_specs[] = {
        { "workload_recall", "Recall at each search step of the workload", "step", wxl, 0, 1, 0 },
        { "workload_latency", "Query latency at each search step (1 thread; dashed: p50)", "step",
          "latency (microseconds)", 0, 1, 0 },
        { "workload_insert_latency", "Insert latency at each insert step (dashed: p99)", "step",
          "insert latency (microseconds)", 0, 1, 0 },
        { "workload_insert_vs_pending", "Median insert latency against the pending inserts it joins",
          "inserts pending (since the last merge) as the step starts", "insert p50 (microseconds)",
          0, 0, 0 },
    };
    /* the workload's y axis is recall itself, not a transformed x */
    figure *figs[] = { &fq, &fl, &fr, &fcq, &fcl, &fwr, &fwl, &fwi, &fwp };
    for (size_t j = 0; j < 9 && !rc; j++) {
        if (figs[j]->n) {
            rc = write_figure(run_dir, j < 5 ? &specs[j] : &wl_specs[j - 5], figs[j], axis);
            if (!rc)
                (*made)++;
        }
    }
    for (size_t j = 0; j < 9; j++)
        fig_free(figs[j]);
    json_decref(builds);
    json_decref(colors);
    json_decref(variants);
    json_decref(cells);
    return rc;
}

int harness_plots_render(const char *run_dir, int *made)
{
    return harness_plots_render_axis(run_dir, NULL, made);
}

int harness_plot_main(int argc, char **argv)
{
    const char *run = NULL, *axis = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--recall-axis") && i + 1 < argc)
            axis = argv[++i];
        else if (argv[i][0] == '-' || run) {
            fprintf(stderr, "annlab plot: unexpected argument '%s'\nusage: annlab plot RUN_DIR "
                            "[--recall-axis linear|log|logit]\n",
                    argv[i]);
            return 2;
        } else
            run = argv[i];
    }
    if (!run) {
        fprintf(stderr, "usage: annlab plot RUN_DIR [--recall-axis linear|log|logit]\n");
        return 2;
    }
    if (axis && strcmp(axis, "linear") && strcmp(axis, "log") && strcmp(axis, "logit")) {
        fprintf(stderr, "annlab plot: --recall-axis '%s': want linear, log or logit\n", axis);
        return 2;
    }
    int made = 0;
    int rc = harness_plots_render_axis(run, axis, &made);
    if (rc) {
        fprintf(stderr, "annlab plot: %s\n", ann_errmsg(rc));
        return 1;
    }
    printf("%d figures in %s (*.png, *.svg)\n", made, run);
    return 0;
}
