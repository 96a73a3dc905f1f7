/*
 * compare.c: the regression gate.  Two runs' cells are matched by their
 * parameters; repeats of a cell are grouped and reduced to medians.
 *
 * Recall and reads per query are nearly deterministic, so their tolerances
 * are tight and fixed.  Latency and QPS are noisy on shared machines: their
 * tolerance is the larger of a floor and spread_factor times the relative
 * spread ((max - min) / median) measured across the repeats of either run,
 * and the report gives the ratio with that spread, so a reader sees whether
 * a change stands out of the noise.  A figure that worsens past its
 * tolerance, an ok cell that now fails, or a cell missing from the new run
 * is a regression.
 *
 * What is judged is honest about what the runs can show: timings need the
 * spread of repeats (a run of one repeat per cell gates recall and reads
 * only) and one machine (runs whose machine.json differ, or lack one, gate
 * recall, reads and peak RSS); a config change is named, and the cells it
 * removed are dropped, not missing.
 */
#include "harness/compare.h"

#include "engines/core/status.h"
#include "harness/run.h"
#include "harness/config.h"
#include "harness/measure.h"
#include "harness/summary.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cmp_options_default(cmp_options *o)
{
    o->recall_abs = 0.005;
    o->reads_rel = 0.02;
    o->latency_rel = 0.30;
    o->spread_factor = 3.0;
    o->rss_rel = 0.10;
    o->build_rel = 0.50;
    o->gate_timings = 1;
    o->why_not_timed = NULL;
    o->new_expansion = NULL;
    o->config_diff = NULL;
}

/* Cores other processes kept busy while a cell ran (its machine_cpu record);
 * -1 when the run predates the record. */
static double others_cores(const json_t *cell)
{
    const json_t *v = json_object_get(json_object_get(cell, "machine_cpu"), "others_cores");
    return json_is_number(v) ? json_number_value(v) : -1;
}

typedef enum { TOL_ABS, TOL_REL, TOL_NOISY } tol_kind;

typedef struct {
    const char *name;   /* column name */
    const char *path;   /* dotted path in the cell */
    int higher_better;  /* 1: a drop is a regression; 0: a rise is */
    tol_kind kind;
    const char *repeats; /* per-repeat values inside one cell ("per_repeat.*"), or NULL */
} figure;

static const figure figures[] = {
    { "recall", "recall", 1, TOL_ABS, NULL },
    { "reads/q", "engine_stats.reads", 0, TOL_REL, NULL },
    { "p50 us", "latency_us.p50", 0, TOL_NOISY, "p50_us" },
    { "p99 us", "latency_us.p99", 0, TOL_NOISY, "p99_us" },
    { "QPS", "qps", 1, TOL_NOISY, "qps" },
    { "peak RSS", "memory.peak_rss_bytes", 0, TOL_REL, NULL },
    { "build s", "index.build_seconds", 0, TOL_NOISY, NULL },
    /* workload steps (their search steps use recall, p50, p99 and QPS above) */
    { "insert p50 us", "insert_latency_us.p50", 0, TOL_NOISY, NULL },
    { "inserts/s", "inserts_per_s", 1, TOL_NOISY, NULL },
    { "merge s", "merge_seconds", 0, TOL_NOISY, NULL },
};
#define NFIG (sizeof figures / sizeof figures[0])

/* step and op: a workload's step lines match step by step */
static const char *const key_fields[] = { "dataset", "engine", "build", "open", "search",
                                          "mode", "threads", "memory_cap_bytes", "k",
                                          "step", "op" };

/* Canonical identity of a cell: its parameters, sorted and compact. */
static char *cell_key(const json_t *cell)
{
    json_t *k = json_object();
    for (size_t i = 0; i < sizeof key_fields / sizeof key_fields[0]; i++) {
        json_t *v = json_object_get(cell, key_fields[i]);
        if (v)
            json_object_set(k, key_fields[i], v);
    }
    char *s = json_dumps(k, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(k);
    return s;
}

static int get_number(const json_t *cell, const char *path, double *out)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *v = cell;
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok;
         tok = strtok_r(NULL, ".", &save))
        v = json_object_get(v, tok);
    if (!json_is_number(v))
        return 0;
    *out = json_number_value(v);
    return 1;
}

typedef struct {
    char *key;
    const json_t *first; /* for labels */
    int n, ok;           /* cells in the group, of which status ok */
    double *vals[NFIG];  /* ok cells' values per figure (NaN where absent) */
    double *reps[NFIG];  /* per-repeat values recorded inside the cells */
    int nreps[NFIG], capreps[NFIG];
} group;

/* Append a cell's per-repeat values of figure f (cells record every repeat). */
static void add_repeats(group *g, size_t f, const json_t *cell)
{
    const json_t *arr = json_object_get(json_object_get(cell, "per_repeat"), figures[f].repeats);
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v) {
        if (!json_is_number(v))
            continue;
        if (g->nreps[f] == g->capreps[f]) {
            int cap = g->capreps[f] ? 2 * g->capreps[f] : 16;
            double *nr = realloc(g->reps[f], (size_t)cap * sizeof *nr);
            if (!nr)
                return;
            g->reps[f] = nr;
            g->capreps[f] = cap;
        }
        g->reps[f][g->nreps[f]++] = json_number_value(v);
    }
}

typedef struct {
    group *g;
    int n, cap;
} groups;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(((const group *)a)->key, ((const group *)b)->key);
}

static int group_cells(const json_t *cells, groups *out)
{
    out->g = NULL;
    out->n = out->cap = 0;
    size_t i;
    const json_t *cell;
    json_array_foreach(cells, i, cell) {
        char *key = cell_key(cell);
        if (!key)
            return ann_fail(-ENOMEM, "compare: no memory");
        group *g = NULL;
        for (int j = 0; j < out->n; j++)
            if (!strcmp(out->g[j].key, key)) {
                g = &out->g[j];
                break;
            }
        if (!g) {
            if (out->n == out->cap) {
                out->cap = out->cap ? 2 * out->cap : 64;
                group *ng = realloc(out->g, (size_t)out->cap * sizeof *ng);
                if (!ng) {
                    free(key);
                    return ann_fail(-ENOMEM, "compare: no memory");
                }
                out->g = ng;
            }
            g = &out->g[out->n++];
            memset(g, 0, sizeof *g);
            g->key = key;
            g->first = cell;
            for (size_t f = 0; f < NFIG; f++)
                g->vals[f] = calloc(json_array_size(cells), sizeof(double));
        } else {
            free(key);
        }
        g->n++;
        const char *status = json_string_value(json_object_get(cell, "status"));
        if (status && strcmp(status, "ok"))
            continue;
        for (size_t f = 0; f < NFIG; f++) {
            double v;
            g->vals[f][g->ok] = get_number(cell, figures[f].path, &v) ? v : NAN;
            if (figures[f].repeats)
                add_repeats(g, f, cell);
        }
        g->ok++;
    }
    qsort(out->g, (size_t)out->n, sizeof *out->g, cmp_str);
    return 0;
}

static void groups_free(groups *gs)
{
    for (int i = 0; i < gs->n; i++) {
        free(gs->g[i].key);
        for (size_t f = 0; f < NFIG; f++) {
            free(gs->g[i].vals[f]);
            free(gs->g[i].reps[f]);
        }
    }
    free(gs->g);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median and relative spread of the non-NaN values; returns how many. */
static int summarize(const double *vals, int n, double *median, double *spread)
{
    double tmp[256];
    int m = 0;
    for (int i = 0; i < n && m < 256; i++)
        if (!isnan(vals[i]))
            tmp[m++] = vals[i];
    if (m == 0)
        return 0;
    qsort(tmp, (size_t)m, sizeof *tmp, cmp_double);
    *median = m % 2 ? tmp[m / 2] : 0.5 * (tmp[m / 2 - 1] + tmp[m / 2]);
    *spread = *median != 0 ? (tmp[m - 1] - tmp[0]) / fabs(*median) : 0;
    return m;
}

/* A short label: engine and its search parameters, mode, threads, cap. */
static void label_of(const json_t *cell, char *buf, size_t len)
{
    char *search = json_dumps(json_object_get(cell, "search"), JSON_COMPACT | JSON_SORT_KEYS);
    char *build = json_dumps(json_object_get(cell, "build"), JSON_COMPACT | JSON_SORT_KEYS);
    char *open = json_dumps(json_object_get(cell, "open"), JSON_COMPACT | JSON_SORT_KEYS);
    const json_t *cap = json_object_get(cell, "memory_cap_bytes");
    char capbuf[32] = "";
    if (json_is_integer(cap))
        snprintf(capbuf, sizeof capbuf, " cap=%lldMiB",
                 (long long)(json_integer_value(cap) >> 20));
    const json_t *step = json_object_get(cell, "step");
    char stepbuf[64] = "";
    if (json_is_integer(step))
        snprintf(stepbuf, sizeof stepbuf, " step %lld %s", (long long)json_integer_value(step),
                 json_string_value(json_object_get(cell, "op")) ?: "?");
    snprintf(buf, len, "%s %s%s%s%s %s T=%lld%s%s",
             json_string_value(json_object_get(cell, "engine")) ?: "?",
             build && strcmp(build, "{}") ? build : "", open && strcmp(open, "{}") ? open : "",
             (build && strcmp(build, "{}")) || (open && strcmp(open, "{}")) ? " " : "",
             search ? search : "{}", json_string_value(json_object_get(cell, "mode")) ?: "?",
             (long long)json_integer_value(json_object_get(cell, "threads")), capbuf, stepbuf);
    free(search);
    free(build);
    free(open);
}

/*
 * Noisy figures get a floor: latency_rel, doubled for p99 (the few slowest
 * queries of a pass: sampling noise) and for cold cells (their cost follows
 * the host's cache state, which a guest cannot reset).  Measured here: a
 * rerun of the same build moved a cold p50 by x1.57 and a warm p99 by x1.51
 * while warm p50 and QPS stayed within 30%.
 */
static double tolerance_of(const figure *f, const cmp_options *o, double spread, int cold)
{
    if (f->kind == TOL_ABS)
        return o->recall_abs;
    if (f->kind == TOL_REL)
        return strcmp(f->name, "peak RSS") == 0 ? o->rss_rel : o->reads_rel;
    int build_like = !strcmp(f->name, "build s") || !strcmp(f->name, "merge s");
    double floor = build_like ? o->build_rel : o->latency_rel;
    if (!build_like && (cold || strcmp(f->name, "p99 us") == 0))
        floor *= 2;
    double t = o->spread_factor * spread;
    return t > floor ? t : floor;
}

/* The fewest repeats any cell of a run was measured with: cells recorded
 * once per repeat, or once with every repeat inside (per_repeat, "repeats"). */
static int min_repeats(const groups *gs)
{
    int m = 0;
    for (int i = 0; i < gs->n; i++) {
        const group *g = &gs->g[i];
        if (g->ok == 0)
            continue;
        int r = g->ok;
        for (size_t f = 0; f < NFIG; f++)
            if (figures[f].repeats && g->nreps[f] > r)
                r = g->nreps[f];
        long long field = (long long)json_integer_value(json_object_get(g->first, "repeats"));
        if (field * g->ok > r)
            r = (int)(field * g->ok);
        if (m == 0 || r < m)
            m = r;
    }
    return m;
}

/* Whether the new config still has a cell of these parameters. */
static int in_expansion(const json_t *expansion, const json_t *cell)
{
    static const char *const objs[] = { "build", "open", "search" };
    size_t i;
    const json_t *e;
    json_array_foreach(expansion, i, e) {
        int same = json_equal(json_object_get(e, "engine"), json_object_get(cell, "engine")) &&
                   json_equal(json_object_get(e, "mode"), json_object_get(cell, "mode")) &&
                   json_integer_value(json_object_get(e, "threads")) ==
                       json_integer_value(json_object_get(cell, "threads"));
        const json_t *ca = json_object_get(e, "memory_cap_bytes"), *cb = json_object_get(cell, "memory_cap_bytes");
        same = same && (json_is_null(ca) || !ca) == (json_is_null(cb) || !cb) &&
               json_integer_value(ca) == json_integer_value(cb);
        for (size_t k = 0; same && k < 3; k++) {
            json_t *empty = json_object();
            const json_t *x = json_object_get(e, objs[k]), *y = json_object_get(cell, objs[k]);
            same = json_equal(x ? x : empty, y ? y : empty);
            json_decref(empty);
        }
        if (same)
            return 1;
    }
    return 0;
}

/* A figure's value for the table and report: bytes in KiB/MiB/GiB. */
static void fig_value(const figure *f, double v, const char *numfmt, char *buf, size_t len)
{
    if (!strcmp(f->name, "peak RSS"))
        harness_fmt_bytes(v, buf, len);
    else
        snprintf(buf, len, numfmt, v);
}

int cmp_cells(const json_t *base, const json_t *fresh, const cmp_options *o, const char *base_name,
              const char *new_name, FILE *table, FILE *report, cmp_result *res)
{
    groups a, b;
    memset(res, 0, sizeof *res);
    int rc = group_cells(base, &a);
    if (rc)
        return rc;
    rc = group_cells(fresh, &b);
    if (rc) {
        groups_free(&a);
        return rc;
    }
    /* what may be judged: timings need repeats (their noise) and one machine */
    int reps_a = min_repeats(&a), reps_b = min_repeats(&b);
    int one_repeat = (reps_a == 1) || (reps_b == 1);
    res->timings_gated = o->gate_timings && !one_repeat;
    res->rss_gated = !one_repeat;
    char notes[2048] = "";
    size_t nl = 0;
    if (one_repeat)
        nl += (size_t)snprintf(notes + nl, sizeof notes - nl,
                               "- timings and peak RSS not gated: %s %s one repeat per cell, so their "
                               "noise cannot be measured; recall and reads per query are gated "
                               "(\"repeats\": 3 or more gates timings)\n",
                               reps_a == 1 && reps_b == 1 ? "both runs" : reps_a == 1 ? base_name : new_name,
                               reps_a == 1 && reps_b == 1 ? "have" : "has");
    else if (!o->gate_timings)
        nl += (size_t)snprintf(notes + nl, sizeof notes - nl,
                               "- timings not gated: %s; recall, reads per query and peak RSS are "
                               "gated\n",
                               o->why_not_timed ? o->why_not_timed : "asked");
    if (o->config_diff && nl < sizeof notes)
        nl += (size_t)snprintf(notes + nl, sizeof notes - nl,
                               "- the configs differ: %s. Cells of the base run that the new config "
                               "no longer has are dropped, not missing\n",
                               o->config_diff);
    if (table && notes[0])
        fprintf(table, "%s\n", notes);
    /* flagged lines collected for the compact report */
    size_t rep_cap = 1 << 16, rep_len = 0;
    char *rep = calloc(1, rep_cap);
#define REP(...)                                                                              \
    do {                                                                                      \
        if (rep && rep_len < rep_cap)                                                         \
            rep_len += (size_t)snprintf(rep + rep_len, rep_cap - rep_len, __VA_ARGS__);       \
    } while (0)

    if (table)
        fprintf(table, "%-58s %-9s %12s %12s %9s %8s  %s\n", "cell", "figure", "base", "new",
                "change", "tol", "verdict");
    int i = 0, j = 0;
    while (i < a.n || j < b.n) {
        int c = i >= a.n ? 1 : j >= b.n ? -1 : strcmp(a.g[i].key, b.g[j].key);
        char label[512];
        if (c < 0) {
            label_of(a.g[i].first, label, sizeof label);
            if (o->new_expansion && !in_expansion(o->new_expansion, a.g[i].first)) {
                res->dropped++;
                if (table)
                    fprintf(table, "%-58s not in the new config (dropped)\n", label);
                i++;
                continue;
            }
            res->missing++;
            if (table)
                fprintf(table, "%-58s missing from the new run  REGRESSION\n", label);
            REP("| %s | cell | present | missing | | | **regression** |\n", label);
            i++;
            continue;
        }
        if (c > 0) {
            label_of(b.g[j].first, label, sizeof label);
            res->added++;
            if (table)
                fprintf(table, "%-58s new cell (not in the base run)\n", label);
            j++;
            continue;
        }
        group *ga = &a.g[i++], *gb = &b.g[j++];
        res->matched++;
        label_of(ga->first, label, sizeof label);
        if (ga->ok > 0 && gb->ok == 0) {
            const char *st = json_string_value(json_object_get(gb->first, "status"));
            res->regressions++;
            if (table)
                fprintf(table, "%-58s status ok -> %s  REGRESSION\n", label, st ? st : "?");
            REP("| %s | status | ok | %s | | | **regression** |\n", label, st ? st : "?");
            continue;
        }
        for (size_t f = 0; f < NFIG; f++) {
            const figure *fig = &figures[f];
            double ma, mb, sa = 0, sb = 0;
            if (!summarize(ga->vals[f], ga->ok, &ma, &sa) ||
                !summarize(gb->vals[f], gb->ok, &mb, &sb))
                continue;
            /* noise: the spread of the repeats, across cells of a group or,
             * when each cell ran its repeats inside, across those */
            double ra, rb;
            if (ga->nreps[f] > 1 && gb->nreps[f] > 1) {
                double sra = 0, srb = 0;
                summarize(ga->reps[f], ga->nreps[f], &ra, &sra);
                summarize(gb->reps[f], gb->nreps[f], &rb, &srb);
                sa = sa > sra ? sa : sra;
                sb = sb > srb ? sb : srb;
            }
            double spread = sa > sb ? sa : sb;
            const char *mode = json_string_value(json_object_get(ga->first, "mode"));
            double tol = tolerance_of(fig, o, spread, mode && !strcmp(mode, "cold"));
            double change = fig->kind == TOL_ABS ? mb - ma : (ma != 0 ? mb / ma - 1.0 : 0.0);
            double worse = fig->higher_better ? -change : change;
            const char *verdict = "";
            int gated = fig->kind == TOL_NOISY         ? res->timings_gated
                        : !strcmp(fig->name, "peak RSS") ? res->rss_gated
                                                         : 1;
            if (!gated) {
                if (worse > tol || -worse > tol)
                    verdict = "(not gated)";
            } else if (worse > tol) {
                verdict = "REGRESSION";
                res->regressions++;
            } else if (-worse > tol) {
                verdict = "improved";
                res->improvements++;
            }
            char chg[32], tolbuf[32];
            if (fig->kind == TOL_ABS) {
                snprintf(chg, sizeof chg, "%+.4f", change);
                snprintf(tolbuf, sizeof tolbuf, "%.4f", tol);
            } else {
                snprintf(chg, sizeof chg, "x%.3f", 1.0 + change);
                snprintf(tolbuf, sizeof tolbuf, "%.0f%%", 100 * tol);
            }
            /* a timing moved while other processes kept the machine busy: say so
             * beside the verdict (the verdict stands; the reader judges) */
            char busy[96] = "";
            double oa = others_cores(ga->first), ob = others_cores(gb->first);
            if (gated && *verdict && fig->kind == TOL_NOISY &&
                (oa >= HARNESS_BUSY_CORES || ob >= HARNESS_BUSY_CORES))
                snprintf(busy, sizeof busy, " (machine busy: other processes %.2f -> %.2f cores)",
                         oa < 0 ? 0 : oa, ob < 0 ? 0 : ob);
            char va[32], vb[32], sa4[32], sb4[32];
            fig_value(fig, ma, "%.5g", va, sizeof va);
            fig_value(fig, mb, "%.5g", vb, sizeof vb);
            fig_value(fig, ma, "%.4g", sa4, sizeof sa4);
            fig_value(fig, mb, "%.4g", sb4, sizeof sb4);
            if (table)
                fprintf(table, "%-58s %-9s %12s %12s %9s %8s  %s%s\n", label, fig->name, va, vb, chg,
                        tolbuf, verdict, busy);
            if (*verdict && gated) {
                if (fig->kind == TOL_NOISY)
                    REP("| %s | %s | %s | %s | %s (spread %.0f%%) | %s | %s%s |\n", label,
                        fig->name, sa4, sb4, chg, 100 * spread, tolbuf,
                        worse > tol ? "**regression**" : "improved", busy);
                else
                    REP("| %s | %s | %s | %s | %s | %s | %s |\n", label, fig->name, sa4, sb4, chg,
                        tolbuf, worse > tol ? "**regression**" : "improved");
            }
        }
    }
    if (report) {
        fprintf(report, "## annlab compare: `%s` -> `%s`\n\n", base_name, new_name);
        fprintf(report,
                "%d cells matched; **%d regression%s**, %d improvement%s, %d missing, %d new",
                res->matched, res->regressions + res->missing,
                res->regressions + res->missing == 1 ? "" : "s", res->improvements,
                res->improvements == 1 ? "" : "s", res->missing, res->added);
        if (res->dropped)
            fprintf(report, ", %d dropped by the new config", res->dropped);
        fprintf(report, ".\n\n%s%s", notes, notes[0] ? "\n" : "");
        if (rep_len) {
            fprintf(report, "| cell | figure | base | new | change | tolerance | verdict |\n");
            fprintf(report, "| --- | --- | --- | --- | --- | --- | --- |\n");
            fputs(rep, report);
        } else {
            fprintf(report, "No figure moved past its tolerance.\n");
        }
        fprintf(report,
                "\nTolerances: recall %.3f absolute; reads/query %.0f%%; peak RSS %.0f%%; "
                "latency and QPS max(%.0f%% (x2 for p99 and cold cells), %.0f x spread of "
                "repeats); build time max(%.0f%%, %.0f x spread).\n",
                o->recall_abs, 100 * o->reads_rel, 100 * o->rss_rel, 100 * o->latency_rel,
                o->spread_factor, 100 * o->build_rel, o->spread_factor);
    }
#undef REP
    free(rep);
    groups_free(&a);
    groups_free(&b);
    return 0;
}

/* ---- what differs between two runs' configs and machines ---------------- */

typedef struct diff_buf {
    char *buf;
    size_t len, used;
    int n, shown;
} diff_buf;

static void diff_add(diff_buf *d, const char *path, const json_t *a, const json_t *b)
{
    d->n++;
    if (d->shown >= 8)
        return;
    char *sa = a ? json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    char *sb = b ? json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    if (d->used < d->len)
        d->used += (size_t)snprintf(d->buf + d->used, d->len - d->used, "%s%s: %s -> %s",
                                    d->shown ? "; " : "", path, sa ? sa : "(absent)",
                                    sb ? sb : "(absent)");
    d->shown++;
    free(sa);
    free(sb);
}

static void diff_json(diff_buf *d, const char *path, const json_t *a, const json_t *b)
{
    char sub[1024];
    if (json_is_object(a) && json_is_object(b)) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)a, key, v) {
            if (!path[0] && !strcmp(key, "description"))
                continue;
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
            diff_json(d, sub, v, json_object_get(b, key));
        }
        json_object_foreach((json_t *)b, key, v) {
            if ((!path[0] && !strcmp(key, "description")) || json_object_get(a, key))
                continue;
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
            diff_add(d, sub, NULL, v);
        }
    } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b) &&
               json_array_size(a) && (json_is_object(json_array_get(a, 0)) || json_is_array(json_array_get(a, 0)))) {
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            diff_json(d, sub, json_array_get(a, i), json_array_get(b, i));
        }
    } else if (!a || !b || !json_equal(a, b)) {
        diff_add(d, path[0] ? path : "(top level)", a, b);
    }
}

int cmp_config_diff(const json_t *a, const json_t *b, char *buf, size_t len)
{
    diff_buf d = { buf, len, 0, 0, 0 };
    buf[0] = '\0';
    diff_json(&d, "", a, b);
    if (d.n > d.shown && d.used < len)
        snprintf(buf + d.used, len - d.used, "; and %d more", d.n - d.shown);
    return d.n;
}

int cmp_machine_diff(const json_t *a, const json_t *b, char *buf, size_t len)
{
    static const char *const fields[] = { "cpu_model", "topology.packages", "topology.cores",
                                          "topology.pus", "simd", "disk.model", "disk.rotational",
                                          "disk.filesystem" };
    diff_buf d = { buf, len, 0, 0, 0 };
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "%s", fields[i]);
        char *dot = strchr(path, '.');
        const json_t *va = a, *vb = b;
        if (dot) {
            *dot = '\0';
            va = json_object_get(va, path);
            vb = json_object_get(vb, path);
            *dot = '.';
        }
        va = json_object_get(va, dot ? dot + 1 : path);
        vb = json_object_get(vb, dot ? dot + 1 : path);
        if (!json_equal(va, vb) && (va || vb))
            diff_add(&d, fields[i], va, vb);
    }
    double ma = json_number_value(json_object_get(a, "memory_bytes"));
    double mb = json_number_value(json_object_get(b, "memory_bytes"));
    if (fabs(ma - mb) > 0.02 * fmax(ma, mb)) {
        char sa[32], sb[32], what[96];
        harness_fmt_bytes(ma, sa, sizeof sa);
        harness_fmt_bytes(mb, sb, sizeof sb);
        snprintf(what, sizeof what, "memory %s -> %s", sa, sb);
        d.n++;
        if (d.shown < 8 && d.used < len) {
            d.used += (size_t)snprintf(buf + d.used, len - d.used, "%s%s", d.shown ? "; " : "", what);
            d.shown++;
        }
    }
    return d.n;
}

int cmp_load_cells(const char *run, json_t **out)
{
    char path[4096];
    struct stat st;
    if (stat(run, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(path, sizeof path, "%s/cells.jsonl", run);
    else
        snprintf(path, sizeof path, "%s", run);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return ann_fail_errno("%s: open", path);
    json_t *arr = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    while ((len = getline(&line, &cap, fp)) > 0) {
        lineno++;
        if (len <= 1 && line[0] == '\n')
            continue;
        json_error_t err;
        json_t *cell = json_loads(line, 0, &err);
        if (!json_is_object(cell)) {
            rc = ann_fail(ANN_EFORMAT, "%s:%d: not a JSON object: %s", path, lineno,
                          cell ? "wrong type" : err.text);
            json_decref(cell);
            break;
        }
        json_array_append_new(arr, cell);
    }
    free(line);
    fclose(fp);
    if (!rc) {
        harness_cells_latest(arr); /* a retried cell counts by its last record */
        /* a workload's step lines stay: they match step by step (key_fields) */
    }
    if (rc) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

/* recall-QPS curves of both runs overlaid, one line per engine and run */
static int plot_overlay(const json_t *base, const json_t *fresh, const char *png)
{
    char dat[4200], gp[4200];
    snprintf(dat, sizeof dat, "%s.dat", png);
    snprintf(gp, sizeof gp, "%s.gp", png);
    FILE *fp = fopen(dat, "w");
    if (!fp)
        return ann_fail_errno("%s: create", dat);
    /* one gnuplot data block per (run, engine): recall qps, sorted by recall */
    const json_t *runs[2] = { base, fresh };
    const char *run_names[2] = { "base", "new" };
    char titles[64][96], block_engine[64][64];
    int nblocks = 0;
    for (int r = 0; r < 2; r++) {
        const char *engines[32];
        int ne = 0;
        size_t i;
        const json_t *cell;
        json_array_foreach(runs[r], i, cell) {
            const char *e = json_string_value(json_object_get(cell, "engine"));
            int seen = 0;
            for (int k = 0; k < ne; k++)
                seen |= e && !strcmp(engines[k], e);
            if (e && !seen && ne < 32)
                engines[ne++] = e;
        }
        for (int k = 0; k < ne && nblocks < 64; k++) {
            double pts[512][2];
            int np = 0;
            json_array_foreach(runs[r], i, cell) {
                double rec, qps;
                const char *e = json_string_value(json_object_get(cell, "engine"));
                const char *mode = json_string_value(json_object_get(cell, "mode"));
                if (!e || strcmp(e, engines[k]) || (mode && strcmp(mode, "warm")) ||
                    json_object_get(cell, "step") || /* a workload step: not a curve */
                    !get_number(cell, "recall", &rec) || !get_number(cell, "qps", &qps) ||
                    np >= 512)
                    continue;
                pts[np][0] = rec;
                pts[np][1] = qps;
                np++;
            }
            if (!np)
                continue;
            qsort(pts, (size_t)np, sizeof pts[0], cmp_double);
            for (int p = 0; p < np; p++)
                fprintf(fp, "%g %g\n", pts[p][0], pts[p][1]);
            fprintf(fp, "\n\n");
            snprintf(block_engine[nblocks], sizeof block_engine[0], "%s", engines[k]);
            snprintf(titles[nblocks++], sizeof titles[0], "%s (%s)", engines[k], run_names[r]);
        }
    }
    fclose(fp);
    fp = fopen(gp, "w");
    if (!fp)
        return ann_fail_errno("%s: create", gp);
    fprintf(fp, "set terminal pngcairo size 1000,700 noenhanced\nset output '%s'\n", png);
    fprintf(fp, "set xlabel 'recall@k (tie-aware)'\nset ylabel 'queries per second (warm)'\n");
    fprintf(fp, "set logscale y\nset grid\nset key outside right\n");
    fprintf(fp, "set title 'recall vs QPS: base (dashed) and new (solid)'\nplot ");
    for (int b = 0; b < nblocks; b++) {
        int colour = b; /* one colour per engine, shared by its base and new curves */
        for (int e = 0; e < b; e++)
            if (!strcmp(block_engine[e], block_engine[b])) {
                colour = e;
                break;
            }
        fprintf(fp, "%s'%s' index %d with linespoints lc %d dt %d lw 2 title '%s'",
                b ? ", " : "", dat, b, colour + 1, strstr(titles[b], "(base)") ? 2 : 1,
                titles[b]);
    }
    fprintf(fp, "\n");
    fclose(fp);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", gp);
    int st = nblocks ? system(cmd) : 0;
    if (st != 0)
        return ann_fail(-EIO, "%s: gnuplot failed (exit status %d)", gp, st);
    return 0;
}

/* A file of the run directory holding run (a directory, or its cells.jsonl). */
static json_t *run_file(const char *run, const char *name)
{
    char dir[4096], path[4300];
    struct stat st;
    snprintf(dir, sizeof dir, "%s", run);
    if (stat(run, &st) != 0 || !S_ISDIR(st.st_mode)) {
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return json_load_file(path, 0, NULL);
}

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: annlab compare BASE_RUN NEW_RUN [--report FILE.md] [--plot FILE.png]\n"
            "                      [--recall-tol ABS] [--reads-tol REL] [--latency-tol REL]\n"
            "                      [--spread-factor X] [--rss-tol REL] [--build-tol REL]\n"
            "BASE_RUN/NEW_RUN: run directories (or cells.jsonl files; machine.json and\n"
            "config.json are read beside them).  Timings are judged only when both runs have\n"
            "repeats >= 2 and their machine.json describe the same machine; a config change is\n"
            "named and the cells it removed are dropped, not missing.\n"
            "Exit: 0 no regression, 1 regression, 2 usage or input error.\n");
}

int cmp_cli(int argc, char **argv)
{
    cmp_options o;
    cmp_options_default(&o);
    const char *runs[2] = { NULL, NULL }, *report_path = NULL, *plot_path = NULL;
    int nr = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double *dst = !strcmp(a, "--recall-tol")      ? &o.recall_abs
                      : !strcmp(a, "--reads-tol")     ? &o.reads_rel
                      : !strcmp(a, "--latency-tol")   ? &o.latency_rel
                      : !strcmp(a, "--spread-factor") ? &o.spread_factor
                      : !strcmp(a, "--rss-tol")       ? &o.rss_rel
                      : !strcmp(a, "--build-tol")     ? &o.build_rel
                                                      : NULL;
        if (dst) {
            char *end = NULL;
            if (i + 1 >= argc || (*dst = strtod(argv[i + 1], &end), *end) || *dst < 0) {
                fprintf(stderr, "annlab compare: %s needs a non-negative number\n", a);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--report") && i + 1 < argc) {
            report_path = argv[++i];
        } else if (!strcmp(a, "--plot") && i + 1 < argc) {
            plot_path = argv[++i];
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' || nr == 2) {
            fprintf(stderr, "annlab compare: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            runs[nr++] = a;
        }
    }
    if (nr != 2) {
        usage(stderr);
        return 2;
    }
    json_t *a = NULL, *b = NULL, *expansion = NULL;
    FILE *rep = NULL;
    int code = 2, rc;
    if ((rc = cmp_load_cells(runs[0], &a)) || (rc = cmp_load_cells(runs[1], &b))) {
        fprintf(stderr, "annlab compare: %s\n", ann_errmsg(rc));
        goto out;
    }
    if (report_path && !(rep = fopen(report_path, "w"))) {
        fprintf(stderr, "annlab compare: %s: %s\n", report_path, strerror(errno));
        goto out;
    }
    /* timings only between runs on one machine; a config change is named */
    json_t *ma = run_file(runs[0], "machine.json"), *mb = run_file(runs[1], "machine.json");
    json_t *ca = run_file(runs[0], "config.json"), *cb = run_file(runs[1], "config.json");
    char mdiff[1024], cdiff[2048], why[1200];
    if (!ma || !mb) {
        snprintf(why, sizeof why,
                 "no machine.json beside %s, so whether both runs measured the same machine is "
                 "unknown",
                 !ma ? runs[0] : runs[1]);
        o.gate_timings = 0;
        o.why_not_timed = why;
    } else if (cmp_machine_diff(ma, mb, mdiff, sizeof mdiff) > 0) {
        snprintf(why, sizeof why, "the runs measured different machines (%s)", mdiff);
        o.gate_timings = 0;
        o.why_not_timed = why;
    }
    if (ca && cb && cmp_config_diff(ca, cb, cdiff, sizeof cdiff) > 0) {
        o.config_diff = cdiff;
        o.new_expansion = expansion = harness_config_expand(cb);
    }
    cmp_result res;
    rc = cmp_cells(a, b, &o, runs[0], runs[1], stdout, rep ? rep : NULL, &res);
    json_decref(ma);
    json_decref(mb);
    json_decref(ca);
    json_decref(cb);
    if (rc) {
        fprintf(stderr, "annlab compare: %s\n", ann_errmsg(rc));
        goto out;
    }
    printf("\n");
    cmp_cells(a, b, &o, runs[0], runs[1], NULL, stdout, &res);
    if (plot_path && (rc = plot_overlay(a, b, plot_path)) != 0)
        fprintf(stderr, "annlab compare: plot: %s\n", ann_errmsg(rc));
    code = res.regressions + res.missing > 0 ? 1 : 0;
out:
    if (rep)
        fclose(rep);
    json_decref(a);
    json_decref(b);
    json_decref(expansion);
    return code;
}
