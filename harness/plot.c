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
 *   memory_caps_qps, memory_caps_latency
 *                  QPS and p50 latency against the memory cap (when capped
 *                  cells finished)
 *
 * A reader tells series apart by two marks: one colour per engine (label),
 * and one line style and marker per variant of it (the open parameters,
 * the build when an engine has several, cold or warm: the repository's
 * templates draw filled markers warm, open ones cold), and every legend
 * entry names the variant in words.  The legend sits below the plot in as
 * many columns as its entries' length allows, and the canvas grows with
 * it, so every entry shows.
 *
 * Recall axes end at 1 and come in three scales (--recall-axis): linear;
 * log, the distance to 1 on a log scale (0.9, 0.99, 0.999 equally spaced,
 * where high-recall differences are); logit.  A recall of exactly 1 is drawn
 * at 1 - 1e-4 on the log and logit scales, and the tick there reads 1.
 *
 * The data behind each figure is written beside it (plots/<figure>.dat, two
 * gnuplot indexes per series, the raw recall in a third column when the axis
 * is transformed) with the script that drew it (plots/<figure>.gp), so a
 * figure can be redrawn by hand.  Value axes switch to log scale when the
 * data spans more than a decade.
 *
 * How a figure looks is not decided here: each kind is drawn by a gnuplot
 * template of the repository (plots/<kind>.gp, plots/README.md), or by an
 * edited copy given with --template.  This file computes what depends on the
 * data (series, their colour and variant indexes, ranges, log scales, tics,
 * the legend's columns) and writes it as gnuplot variables before the
 * template's text; colours, markers, fonts and titles are the template's.
 */
#include "harness/run.h"

#include "engines/core/status.h"
#include "engines/engine.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
    const char *name, *title, *xlabel, *ylabel; /* name: the figure kind */
    int frontier;  /* 1: frontier maximising y; -1: minimising y; 0: none */
    int lines;     /* connect points sorted by x (no frontier) */
    int recall_x;  /* the x axis is recall */
} plot_spec;

/* The figure kinds, in the order they are drawn; each is drawn by the
 * template plots/<kind>.gp. */
static const char *const figure_kinds[] = { "recall_qps",      "recall_p99",
                                            "reads_vs_L",      "memory_caps_qps",
                                            "memory_caps_latency", "workload_recall",
                                            "workload_latency", "workload_insert_latency",
                                            "workload_insert_vs_pending" };
#define N_KINDS (sizeof figure_kinds / sizeof figure_kinds[0])
#define KINDS_TEXT                                                                                 \
    "recall_qps, recall_p99, reads_vs_L, memory_caps_qps, memory_caps_latency, workload_recall, "  \
    "workload_latency, workload_insert_latency, workload_insert_vs_pending"
#define TEMPLATE_TAG "# annlab figure:"

typedef struct plot_template {
    char path[4096];
    char *text; /* the whole file, NUL-terminated */
} plot_template;

/* Read a template file whole. */
static int template_read(const char *path, plot_template *t)
{
    snprintf(t->path, sizeof t->path, "%s", path);
    t->text = NULL;
    int rc = 0;
    FILE *f = fopen(path, "re");
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!f) {
        rc = ann_fail_errno("%s: read template", path);
        goto out;
    }
    if (!m) {
        rc = ann_fail_errno("%s: read template", path);
        goto out;
    }
    char chunk[8192];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, got, m);
    if (ferror(f)) { /* a directory, an I/O error */
        rc = ann_fail_errno("%s: read template", path);
        goto out;
    }
    fclose(m);
    m = NULL;
    if (strlen(buf) != len) {
        rc = ann_fail(ANN_EFORMAT, "%s: a template is text; this file holds a NUL byte", path);
        goto out;
    }
    t->text = buf;
    buf = NULL;
out:
    if (m)
        fclose(m);
    free(buf);
    if (f)
        fclose(f);
    return rc;
}

/* The figure kind a template declares on its "# annlab figure: KIND" line,
 * which comes in the comment block that opens it: its index in
 * figure_kinds. */
static int template_kind(const plot_template *t, size_t *kind)
{
    const char *line = t->text;
    while (*line == '#' || *line == '\n') {
        size_t n = strcspn(line, "\n");
        if (!strncmp(line, TEMPLATE_TAG, strlen(TEMPLATE_TAG))) {
            const char *k = line + strlen(TEMPLATE_TAG);
            k += strspn(k, " \t");
            size_t kn = strcspn(k, " \t\n");
            for (size_t i = 0; i < N_KINDS; i++)
                if (strlen(figure_kinds[i]) == kn && !strncmp(k, figure_kinds[i], kn)) {
                    *kind = i;
                    return 0;
                }
            return ann_fail(ANN_EFORMAT, "%s: figure kind \"%.*s\" is not one annlab draws (" KINDS_TEXT ")",
                            t->path, (int)(kn > 64 ? 64 : kn), k);
        }
        line += n + (line[n] == '\n');
    }
    return ann_fail(ANN_EFORMAT,
                    "%s: no \"" TEMPLATE_TAG " KIND\" line in the comments that open it (KIND: " KINDS_TEXT ")",
                    t->path);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/*
 * The directory of the repository's templates: $ANNLAB_PLOTS_DIR when set;
 * else the plots/ (recognised by its README.md) of the first directory
 * above the executable that has one (build/annlab and build/tests/test_x
 * are in the source tree, whatever the current directory); else ./plots.
 */
static int templates_dir(char *dir, size_t len)
{
    const char *env = getenv("ANNLAB_PLOTS_DIR");
    if (env && *env) {
        snprintf(dir, len, "%s", env);
        return 0;
    }
    char exe[4096], cand[4200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (int up = 0; up < 4; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash || slash == exe)
                break;
            *slash = '\0';
            snprintf(cand, sizeof cand, "%s/plots/README.md", exe);
            if (file_exists(cand)) {
                snprintf(dir, len, "%s/plots", exe);
                return 0;
            }
        }
    }
    if (file_exists("plots/README.md")) {
        snprintf(dir, len, "plots");
        return 0;
    }
    return ann_fail(ANN_ENOTFOUND,
                    "the figure templates (plots/README.md and plots/*.gp) are not above the annlab "
                    "executable nor in the current directory (set ANNLAB_PLOTS_DIR to their directory)");
}

/* gnuplot source for the string s: "s", or 's' (quotes doubled) when s
 * holds a double quote or a backslash, which a double-quoted string would
 * take as escapes; control characters become spaces. */
static void gp_string(FILE *g, const char *s)
{
    int single = strpbrk(s, "\"\\") != NULL;
    fputc(single ? '\'' : '"', g);
    for (const char *c = s; *c; c++) {
        if (single && *c == '\'')
            fputc('\'', g);
        fputc((unsigned char)*c < ' ' ? ' ' : *c, g);
    }
    fputc(single ? '\'' : '"', g);
}

static int run_gnuplot(const char *script, const plot_template *t, int preamble_lines)
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
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return ann_fail(ANN_EUNSUPPORTED, "gnuplot: not found (install gnuplot-nox)");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ann_fail(ANN_EUNSUPPORTED,
                        "%s: gnuplot failed on this template (exit %d; in its message above, line N "
                        "of the script is line N - %d of the template)",
                        t->path, WIFEXITED(status) ? WEXITSTATUS(status) : -1, preamble_lines);
    return 0;
}

/* gnuplot's tic list of a transformed recall axis, between lo and hi (axis
 * units): ("0.9" 1, "0.99" 2, ...). */
static void recall_tics(char *buf, size_t len, recall_axis a, double lo, double hi)
{
    static const double marks[] = { 0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999 };
    size_t used = (size_t)snprintf(buf, len, "(");
    int first = 1;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0] && used < len; i++) {
        double x = axis_x(a, marks[i]);
        if (x < lo - 1e-9 || x > hi + 1e-9)
            continue;
        /* the log scale keeps its decades; 0.8, 0.95 and 0.995 only on logit */
        if (a == AXIS_LOG && (marks[i] == 0.8 || marks[i] == 0.95 || marks[i] == 0.995))
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s\"%g\" %.6g", first ? "" : ", ",
                                 marks[i] == 0.9999 ? 1.0 : marks[i], x);
        first = 0;
    }
    if (used < len)
        snprintf(buf + used, len - used, ")");
}

/* What the harness computes for a figure from its data: the variables a
 * template reads (plots/README.md). */
typedef struct figure_vars {
    char x_label[160];
    int x_log, y_log;
    char x_range[64], y_range[64], x_tics[512];
    int width, height, key_cols, key_rows;
} figure_vars;

static void figure_vars_make(const plot_spec *ps, const figure *f, recall_axis axis, figure_vars *v)
{
    snprintf(v->x_label, sizeof v->x_label, "%s%s", ps->xlabel,
             ps->recall_x && axis == AXIS_LOG     ? " (log scale of 1 - recall)"
             : ps->recall_x && axis == AXIS_LOGIT ? " (logit scale)"
                                                  : "");
    v->x_log = !ps->recall_x && wants_log(f, 0);
    v->y_log = wants_log(f, 1);
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
    v->width = 1200;
    v->key_cols = (int)(v->width / (7 * (int)longest + 90));
    if (v->key_cols < 1)
        v->key_cols = 1;
    if (v->key_cols > 4)
        v->key_cols = 4;
    v->key_rows = (int)((f->n + (size_t)v->key_cols - 1) / (size_t)v->key_cols);
    v->height = 620 + 20 * v->key_rows;
    snprintf(v->x_tics, sizeof v->x_tics, "auto");
    snprintf(v->x_range, sizeof v->x_range, "[*:*]");
    snprintf(v->y_range, sizeof v->y_range, "[*:*]");
    if (ps->recall_x) {
        /* recall ends at 1; the low end a round value below the lowest point */
        double hi = axis_x(axis, 1.0), lo;
        if (axis != AXIS_LINEAR && floor(xhi) + 1.0 < hi)
            hi = floor(xhi) + 1.0; /* the next decade of nines above the data */
        if (axis == AXIS_LINEAR) {
            lo = fmax(0, floor((xlo - 0.02) * 20) / 20);
        } else {
            lo = floor(xlo * 2) / 2 - 0.25;
            recall_tics(v->x_tics, sizeof v->x_tics, axis, lo, hi);
        }
        if (lo >= hi)
            lo = hi - 0.1;
        snprintf(v->x_range, sizeof v->x_range, "[%g:%g]", lo, hi);
    } else if (xlo == xhi) { /* one x value: centre it (gnuplot cannot scale an empty range) */
        snprintf(v->x_range, sizeof v->x_range, "[%g:%g]", xlo - fabs(xlo) * 0.5 - 1, xhi + fabs(xhi) * 0.5 + 1);
    }
    if (ylo == yhi) /* one y value: centre it */
        snprintf(v->y_range, sizeof v->y_range, "[%g:%g]", ylo - fabs(ylo) * 0.5 - 1, yhi + fabs(yhi) * 0.5 + 1);
}

/* The data of a figure: gnuplot index 2i its series' points, 2i+1 its
 * frontier (or the points sorted by x); columns x, y, raw recall. */
static int write_dat(const char *path, const plot_spec *ps, figure *f)
{
    FILE *d = fopen(path, "we");
    if (!d)
        return ann_fail_errno("%s: create", path);
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
    if (fclose(d) != 0)
        return ann_fail_errno("%s: write", path);
    return 0;
}

/*
 * The script of a figure: the variables the template reads, then the
 * template.  data and output name the data file and the figures' path
 * without extension.  *lines receives the variables' line count.
 */
static int write_script(const char *path, const plot_spec *ps, const figure *f, const figure_vars *v,
                        const plot_template *t, const char *data, const char *output, int *lines)
{
    char *pre = NULL;
    size_t len = 0;
    FILE *g = open_memstream(&pre, &len);
    if (!g)
        return ann_fail_errno("%s: compose", path);
    fprintf(g, "# %s: drawn by `annlab plot` from the template %s.\n"
               "# The variables annlab sets for this run (plots/README.md in the annlab\n"
               "# repository), then the template.  gnuplot draws it again from this file.\n",
            ps->name, t->path);
    fprintf(g, "data = ");
    gp_string(g, data);
    fprintf(g, "\noutput = ");
    gp_string(g, output);
    fprintf(g, "\nfig_title = ");
    gp_string(g, ps->title);
    fprintf(g, "\nx_label = ");
    gp_string(g, v->x_label);
    fprintf(g, "\ny_label = ");
    gp_string(g, ps->ylabel);
    fprintf(g, "\nx_log = %d\ny_log = %d\nx_range = ", v->x_log, v->y_log);
    gp_string(g, v->x_range);
    fprintf(g, "\ny_range = ");
    gp_string(g, v->y_range);
    fprintf(g, "\nx_tics = ");
    gp_string(g, v->x_tics);
    fprintf(g, "\n");
    fprintf(g, "width = %d\nheight = %d\nkey_cols = %d\nkey_rows = %d\n", v->width, v->height, v->key_cols,
            v->key_rows);
    fprintf(g, "n_series = %zu\narray series_name[%zu]\narray series_color[%zu]\narray series_variant[%zu]\n"
               "array series_cold[%zu]\narray series_device[%zu]\n",
            f->n, f->n, f->n, f->n, f->n, f->n);
    for (size_t i = 0; i < f->n; i++) {
        const series *se = &f->s[i];
        fprintf(g, "series_name[%zu] = ", i + 1);
        gp_string(g, se->name);
        fprintf(g, "; series_color[%zu] = %d; series_variant[%zu] = %d; series_cold[%zu] = %d; "
                   "series_device[%zu] = %d\n",
                i + 1, se->color, i + 1, se->variant, i + 1, se->hollow, i + 1, se->alt);
    }
    fprintf(g, "\n");
    if (fclose(g) != 0) {
        free(pre);
        return ann_fail_errno("%s: compose", path);
    }
    *lines = 0;
    for (const char *c = pre; *c; c++)
        *lines += *c == '\n';
    int rc = 0;
    FILE *out = fopen(path, "we");
    if (!out)
        rc = ann_fail_errno("%s: create", path);
    else {
        fputs(pre, out);
        fputs(t->text, out);
        if (fclose(out) != 0)
            rc = ann_fail_errno("%s: write", path);
    }
    free(pre);
    return rc;
}

/* The files gnuplot drew at <dir>/.<kind>.part.EXT: renamed to
 * <dir>/<kind>.EXT (rename 1), or removed (rename 0).  *count receives how
 * many there were. */
static int part_outputs(const char *dir, const char *kind, int rename_them, int *count)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, ".%s.part.", kind);
    *count = 0;
    DIR *dd = opendir(dir);
    if (!dd)
        return ann_fail_errno("%s: list", dir);
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(dd))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) || !e->d_name[strlen(prefix)])
            continue;
        char from[4400], to[4400];
        snprintf(from, sizeof from, "%s/%s", dir, e->d_name);
        snprintf(to, sizeof to, "%s/%s.%s", dir, kind, e->d_name + strlen(prefix));
        if (!rename_them)
            unlink(from);
        else if (rename(from, to) != 0 && !rc)
            rc = ann_fail_errno("%s: rename", from);
        (*count)++;
    }
    closedir(dd);
    return rc;
}

/*
 * Draw one figure through its template.  Everything is written under a
 * .part name first (data, script, and the figures gnuplot draws at
 * output.EXT) and renamed when gnuplot succeeded, so a failed template
 * leaves no half-drawn figure and the last good one stays.
 */
static int draw_figure(const char *dir, const plot_spec *ps, figure *f, recall_axis axis, const plot_template *t)
{
    char dat[4400], gp[4400], out[4400], dat_part[4400], gp_part[4400], out_part[4400];
    snprintf(dat, sizeof dat, "%s/plots/%s.dat", dir, ps->name);
    snprintf(gp, sizeof gp, "%s/plots/%s.gp", dir, ps->name);
    snprintf(out, sizeof out, "%s/%s", dir, ps->name);
    snprintf(dat_part, sizeof dat_part, "%s/plots/.%s.part.dat", dir, ps->name);
    snprintf(gp_part, sizeof gp_part, "%s/plots/.%s.part.gp", dir, ps->name);
    snprintf(out_part, sizeof out_part, "%s/.%s.part", dir, ps->name);
    int drawn = 0, lines = 0, rc;
    part_outputs(dir, ps->name, 0, &drawn); /* a killed earlier draw's */
    /* the recall axis transform, applied once to every point */
    if (ps->recall_x)
        for (size_t i = 0; i < f->n; i++)
            for (size_t j = 0; j < f->s[i].n; j++)
                f->s[i].p[j].x = axis_x(axis, f->s[i].p[j].raw);
    figure_vars v;
    figure_vars_make(ps, f, axis, &v);
    if ((rc = write_dat(dat_part, ps, f)) || (rc = write_script(gp_part, ps, f, &v, t, dat_part, out_part, &lines)) ||
        (rc = run_gnuplot(gp_part, t, lines)))
        goto out;
    if ((rc = part_outputs(dir, ps->name, 1, &drawn)))
        goto out;
    if (!drawn) {
        rc = ann_fail(ANN_EFORMAT, "%s: the template drew nothing (it writes each figure to output.EXT: "
                                   "output.\".png\", output.\".svg\")",
                      t->path);
        goto out;
    }
    /* the script kept beside the data names the final files */
    if ((rc = write_script(gp_part, ps, f, &v, t, dat, out, &lines)))
        goto out;
    if (rename(dat_part, dat) != 0)
        rc = ann_fail_errno("%s: rename", dat_part);
    else if (rename(gp_part, gp) != 0)
        rc = ann_fail_errno("%s: rename", gp_part);
out:
    if (rc) {
        unlink(dat_part);
        unlink(gp_part);
        part_outputs(dir, ps->name, 0, &drawn);
    }
    return rc;
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

/*
 * The template of each figure kind the run draws (t[j] for figure_kinds[j],
 * when drawn[j]): the --template file that declares that kind, else the
 * repository's plots/<kind>.gp.  Every file is read and its declared kind
 * checked before any figure is drawn.
 */
static int templates_resolve(const harness_plot_opts *o, const int *drawn, plot_template *t)
{
    int rc = 0;
    plot_template one = { .text = NULL };
    char dir[4096] = "";
    for (size_t i = 0; i < o->n_templates; i++) {
        size_t kind = 0;
        if ((rc = template_read(o->templates[i], &one)) || (rc = template_kind(&one, &kind)))
            goto out;
        if (t[kind].text) {
            rc = ann_fail(ANN_EPARAM, "%s: a second template for %s (the first: %s)", one.path,
                          figure_kinds[kind], t[kind].path);
            goto out;
        }
        if (!drawn[kind]) {
            rc = ann_fail(ANN_EPARAM, "%s: a template for %s, a figure this run has no cells for", one.path,
                          figure_kinds[kind]);
            goto out;
        }
        t[kind] = one;
        one.text = NULL;
    }
    for (size_t j = 0; j < N_KINDS; j++) {
        if (!drawn[j] || t[j].text)
            continue;
        if (!dir[0] && (rc = templates_dir(dir, sizeof dir)))
            goto out;
        char path[4200];
        size_t kind = 0;
        snprintf(path, sizeof path, "%s/%s.gp", dir, figure_kinds[j]);
        if ((rc = template_read(path, &t[j])) || (rc = template_kind(&t[j], &kind)))
            goto out;
        if (kind != j) {
            rc = ann_fail(ANN_EFORMAT, "%s: a template for %s, not %s", path, figure_kinds[kind],
                          figure_kinds[j]);
            goto out;
        }
    }
out:
    free(one.text);
    return rc; /* the caller frees t[] */
}

int harness_plots_render_axis(const char *run_dir, const char *axis_name, int *made)
{
    harness_plot_opts o = { .recall_axis = axis_name };
    return harness_plots_render_opts(run_dir, &o, made);
}

int harness_plots_render_opts(const char *run_dir, const harness_plot_opts *o, int *made)
{
    const char *axis_name = o->recall_axis;
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
        /* a cell cut short by max_cell_seconds is its own series ("... warm
         * partial"): its figures cover fewer queries than its neighbours' */
        snprintf(variant, sizeof variant, "%s%s%s%s%s%s", several ? btext : "", several ? " " : "",
                 otext, otext[0] ? " " : "", mode,
                 json_is_true(json_object_get(c, "partial")) ? " partial" : "");
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
    char wxl[64];
    snprintf(wxl, sizeof wxl, "recall@%lld (tie-aware, against the vectors live at the step)", k);
    const plot_spec specs[N_KINDS] = { /* in the order of figure_kinds */
        { figure_kinds[0], title, xl, "queries per second", 1, 0, 1 },
        { figure_kinds[1], "Tail latency against recall (1 thread; lines: each series' frontier)", xl,
          "p99 latency (microseconds)", -1, 0, 1 },
        { figure_kinds[2], "Reads per query against search effort (filled: the engine's count; "
                        "large open: the device's)",
          "search effort (L, ef_search or nprobe: each engine's)", "reads per query", 0, 1, 0 },
        { figure_kinds[3], "Throughput against memory cap", "memory cap (MiB)", "queries per second", 0, 1, 0 },
        { figure_kinds[4], "Median latency against memory cap", "memory cap (MiB)",
          "p50 latency (microseconds)", 0, 1, 0 },
        /* the workload's y axis is recall itself, not a transformed x */
        { figure_kinds[5], "Recall at each search step of the workload", "step", wxl, 0, 1, 0 },
        { figure_kinds[6], "Query latency at each search step (1 thread; dashed: p50)", "step",
          "latency (microseconds)", 0, 1, 0 },
        { figure_kinds[7], "Insert latency at each insert step (dashed: p99)", "step",
          "insert latency (microseconds)", 0, 1, 0 },
        { figure_kinds[8], "Median insert latency against the pending inserts it joins",
          "inserts pending (since the last merge) as the step starts", "insert p50 (microseconds)",
          0, 0, 0 },
    };
    figure *figs[N_KINDS] = { &fq, &fl, &fr, &fcq, &fcl, &fwr, &fwl, &fwi, &fwp };
    plot_template t[N_KINDS] = { 0 };
    int drawn[N_KINDS];
    for (size_t j = 0; j < N_KINDS; j++)
        drawn[j] = figs[j]->n > 0;
    char pdir[4200];
    snprintf(pdir, sizeof pdir, "%s/plots", run_dir);
    if ((rc = templates_resolve(o, drawn, t)))
        goto out;
    if (mkdir(pdir, 0755) != 0 && errno != EEXIST) {
        rc = ann_fail_errno("%s: mkdir", pdir);
        goto out;
    }
    for (size_t j = 0; j < N_KINDS && !rc; j++) {
        if (drawn[j]) {
            rc = draw_figure(run_dir, &specs[j], figs[j], axis, &t[j]);
            if (!rc)
                (*made)++;
        }
    }
out:
    for (size_t j = 0; j < N_KINDS; j++)
        free(t[j].text);
    for (size_t j = 0; j < N_KINDS; j++)
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

#define PLOT_USAGE "usage: annlab plot RUN_DIR [--recall-axis linear|log|logit] [--template FILE.gp]...\n"

int harness_plot_main(int argc, char **argv)
{
    const char *run = NULL, *axis = NULL;
    const char **templates = calloc((size_t)argc + 1, sizeof *templates);
    size_t n_templates = 0;
    int code = 2;
    if (!templates) {
        fprintf(stderr, "annlab plot: no memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--recall-axis") && i + 1 < argc)
            axis = argv[++i];
        else if (!strcmp(argv[i], "--template") && i + 1 < argc)
            templates[n_templates++] = argv[++i];
        else if (argv[i][0] == '-' || run) {
            fprintf(stderr, "annlab plot: unexpected argument '%s'\n" PLOT_USAGE, argv[i]);
            goto out;
        } else
            run = argv[i];
    }
    if (!run) {
        fprintf(stderr, PLOT_USAGE);
        goto out;
    }
    if (axis && strcmp(axis, "linear") && strcmp(axis, "log") && strcmp(axis, "logit")) {
        fprintf(stderr, "annlab plot: --recall-axis '%s': want linear, log or logit\n", axis);
        goto out;
    }
    int made = 0;
    harness_plot_opts o = { .recall_axis = axis, .templates = templates, .n_templates = n_templates };
    int rc = harness_plots_render_opts(run, &o, &made);
    if (rc) {
        fprintf(stderr, "annlab plot: %s\n", ann_errmsg(rc));
        code = 1;
        goto out;
    }
    printf("%d figures in %s (*.png, *.svg)\n", made, run);
    code = 0;
out:
    free(templates);
    return code;
}
