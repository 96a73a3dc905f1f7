/*
 * summary.c: each engine's figures at matched recall (summary.h).
 *
 * An engine's settings (build, open and search parameters) are points in
 * recall-QPS space; only its Pareto frontier matters to a reader who asks
 * "how fast at recall 0.95?", since any other point is beaten on both.
 * Between two frontier points the figures are interpolated linearly in
 * recall, the way ann-benchmarks and big-ann readers read their plots; a
 * target outside the frontier is never extrapolated: below it the lowest-
 * recall point's own figures are given and marked, above it nothing.
 */
#include "harness/run.h"
#include "harness/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int by_recall(const void *a, const void *b)
{
    const harness_point *p = a, *q = b;
    if (p->recall != q->recall)
        return p->recall < q->recall ? -1 : 1;
    return (p->qps < q->qps) - (p->qps > q->qps); /* higher QPS first */
}

static double lerp(double a, double b, double t)
{
    return isfinite(a) && isfinite(b) ? a + t * (b - a) : NAN;
}

harness_at harness_frontier_at(const harness_point *pts, size_t n, double target, harness_point *out,
                               double *edge)
{
    harness_point *f = malloc((n ? n : 1) * sizeof *f);
    size_t m = 0;
    harness_at at = HARNESS_AT_EMPTY;
    *edge = NAN;
    for (size_t i = 0; f && i < n; i++)
        if (isfinite(pts[i].recall) && isfinite(pts[i].qps))
            f[m++] = pts[i];
    if (!f || m == 0)
        goto out;
    /* the frontier: keep points no other beats on both axes */
    size_t w = 0;
    for (size_t i = 0; i < m; i++) {
        int dominated = 0;
        for (size_t j = 0; j < m && !dominated; j++)
            dominated = j != i && f[j].recall >= f[i].recall && f[j].qps >= f[i].qps &&
                        (f[j].recall > f[i].recall || f[j].qps > f[i].qps || j < i);
        if (!dominated)
            f[w++] = f[i];
    }
    m = w;
    qsort(f, m, sizeof *f, by_recall);
    if (f[m - 1].recall < target) {
        at = HARNESS_AT_ABOVE;
        *edge = f[m - 1].recall;
        goto out;
    }
    if (f[0].recall >= target) {
        at = f[0].recall == target ? HARNESS_AT_INSIDE : HARNESS_AT_BELOW;
        *out = f[0];
        *edge = f[0].recall;
        goto out;
    }
    at = HARNESS_AT_INSIDE;
    for (size_t i = 0; i + 1 < m; i++) {
        const harness_point *a = &f[i], *b = &f[i + 1];
        if (a->recall < target && target <= b->recall) {
            double t = (target - a->recall) / (b->recall - a->recall);
            *out = (harness_point){ .recall = target,
                                    .qps = lerp(a->qps, b->qps, t),
                                    .p50_us = lerp(a->p50_us, b->p50_us, t),
                                    .p99_us = lerp(a->p99_us, b->p99_us, t),
                                    .reads = lerp(a->reads, b->reads, t),
                                    .rss_bytes = lerp(a->rss_bytes, b->rss_bytes, t) };
            break;
        }
    }
out:
    free(f);
    return at;
}

void harness_fmt_bytes(double bytes, char *buf, size_t len)
{
    if (!isfinite(bytes))
        snprintf(buf, len, "-");
    else if (bytes < 1048576.0)
        snprintf(buf, len, "%.0f KiB", bytes / 1024.0);
    else if (bytes < 1073741824.0)
        snprintf(buf, len, "%.1f MiB", bytes / 1048576.0);
    else
        snprintf(buf, len, "%.2f GiB", bytes / 1073741824.0);
}

/* One engine (label) in one mode: its points, one per parameter setting. */
typedef struct sm_engine {
    const char *label, *mode;
    json_t *points; /* parameter key -> {"cell_lat": cell (fewest threads), "qps": best} */
    harness_point *pts;
    size_t n;
} sm_engine;

static int sm_collect(const json_t *cells, sm_engine **out, size_t *nout)
{
    size_t cap = json_array_size(cells) + 1, n = 0;
    sm_engine *e = calloc(cap, sizeof *e);
    if (!e)
        return -1;
    size_t i;
    const json_t *c;
    json_array_foreach(cells, i, c) {
        if (strcmp(harness_jstr(c, "status"), "ok") || !json_is_null(json_object_get(c, "memory_cap_bytes")))
            continue;
        const char *label = harness_jstr(c, "label"), *mode = harness_jstr(c, "mode");
        sm_engine *g = NULL;
        for (size_t j = 0; j < n && !g; j++)
            if (!strcmp(e[j].label, label) && !strcmp(e[j].mode, mode))
                g = &e[j];
        if (!g) {
            g = &e[n++];
            g->label = label;
            g->mode = mode;
            g->points = json_object();
        }
        json_t *k = json_pack("[O?, O?, O?]", json_object_get(c, "build"), json_object_get(c, "open"),
                              json_object_get(c, "search"));
        char *ks = k ? json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(k);
        if (!ks)
            continue;
        json_t *p = json_object_get(g->points, ks);
        if (!p) {
            p = json_object();
            json_object_set_new(g->points, ks, p);
        }
        free(ks);
        const json_t *lat = json_object_get(p, "cell_lat");
        if (!lat || json_integer_value(json_object_get(c, "threads")) <
                        json_integer_value(json_object_get(lat, "threads")))
            json_object_set(p, "cell_lat", (json_t *)c);
        double q = harness_jnum(c, "qps", NULL);
        if (isfinite(q) && !(harness_jnum(p, "qps", NULL) >= q))
            json_object_set_new(p, "qps", json_real(q));
    }
    for (size_t j = 0; j < n; j++) {
        e[j].pts = calloc(json_object_size(e[j].points) + 1, sizeof *e[j].pts);
        const char *key;
        json_t *p;
        json_object_foreach(e[j].points, key, p) {
            const json_t *l = json_object_get(p, "cell_lat");
            if (e[j].pts)
                e[j].pts[e[j].n++] = (harness_point){
                    .recall = harness_jnum(l, "recall", NULL),
                    .qps = harness_jnum(p, "qps", NULL),
                    .p50_us = harness_jnum(l, "latency_us", "p50"),
                    .p99_us = harness_jnum(l, "latency_us", "p99"),
                    .reads = harness_jnum(l, "engine_stats", "reads"),
                    .rss_bytes = harness_jnum(l, "memory", "peak_rss_bytes"),
                };
        }
    }
    *out = e;
    *nout = n;
    return 0;
}

static void sm_free(sm_engine *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_decref(e[i].points);
        free(e[i].pts);
    }
    free(e);
}

/* The baseline's label: asked, the config's, the first engine entry's, the first met. */
static const char *pick_baseline(const json_t *cfg, const char *asked, const sm_engine *e, size_t n)
{
    if (asked)
        return asked;
    const char *b = json_string_value(json_object_get(cfg, "baseline"));
    if (b)
        return b;
    const json_t *first = json_array_get(json_object_get(cfg, "engines"), 0);
    if (first) {
        b = json_string_value(json_object_get(first, "label"));
        return b ? b : json_string_value(json_object_get(first, "engine"));
    }
    return n ? e[0].label : NULL;
}

static void fmt_num(char *buf, size_t len, double v, const char *f)
{
    if (isfinite(v))
        snprintf(buf, len, f, v);
    else
        snprintf(buf, len, "-");
}

int harness_summary_render(const json_t *cells, const json_t *cfg, const char *baseline, long long k,
                           FILE *fp)
{
    sm_engine *e = NULL;
    size_t n = 0;
    if (sm_collect(cells, &e, &n) != 0)
        return -1;
    const char *base = pick_baseline(cfg, baseline, e, n);
    fprintf(fp, "## Summary at matched recall\n\n");
    if (n == 0) {
        fprintf(fp, "(no finished uncapped cells)\n\n");
        sm_free(e, n);
        return 0;
    }
    fprintf(fp,
            "Each engine's figures where its recall-QPS Pareto frontier crosses the target "
            "recall@%lld, interpolated linearly between the two frontier points around it. QPS: "
            "the best thread count; p50 and p99: one thread; reads/q: the engine's own reads per "
            "query; peak RSS: the measured phase. `x %s`: QPS relative to %s in the same mode at "
            "the same recall. *at*: where the figures come from: `interpolated`, `lowest point "
            "R` (every setting is above the target: the cheapest setting's own figures, at "
            "recall R), or `reaches only R` (no setting reaches the target).\n\n",
            k, base ? base : "-", base ? base : "-");
    static const double targets[] = HARNESS_SUMMARY_TARGETS;
    static const char *const modes[] = { "warm", "cold" };
    int base_seen = 0;
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        fprintf(fp, "### recall@%lld = %.2f\n\n", k, targets[t]);
        fprintf(fp, "| engine | mode | QPS | x %s | p50 (us) | p99 (us) | reads/q | peak RSS | at |\n",
                base ? base : "-");
        fprintf(fp, "|---|---|--:|--:|--:|--:|--:|--:|---|\n");
        for (size_t m = 0; m < 2; m++) {
            /* the baseline's QPS in this mode at this target */
            double base_qps = NAN;
            for (size_t i = 0; base && i < n; i++)
                if (!strcmp(e[i].label, base) && !strcmp(e[i].mode, modes[m])) {
                    harness_point bp;
                    double edge;
                    harness_at at = harness_frontier_at(e[i].pts, e[i].n, targets[t], &bp, &edge);
                    base_seen = 1;
                    if (at == HARNESS_AT_INSIDE || at == HARNESS_AT_BELOW)
                        base_qps = bp.qps;
                }
            for (size_t i = 0; i < n; i++) {
                if (strcmp(e[i].mode, modes[m]))
                    continue;
                harness_point p;
                double edge;
                harness_at at = harness_frontier_at(e[i].pts, e[i].n, targets[t], &p, &edge);
                char q[32], r[32], p50[32], p99[32], rd[32], rss[32], where[64];
                if (at == HARNESS_AT_ABOVE || at == HARNESS_AT_EMPTY) {
                    snprintf(q, sizeof q, "-");
                    snprintf(r, sizeof r, "-");
                    snprintf(p50, sizeof p50, "-");
                    snprintf(p99, sizeof p99, "-");
                    snprintf(rd, sizeof rd, "-");
                    snprintf(rss, sizeof rss, "-");
                    if (at == HARNESS_AT_ABOVE)
                        snprintf(where, sizeof where, "reaches only %.3f", edge);
                    else
                        snprintf(where, sizeof where, "no recall or QPS measured");
                } else {
                    fmt_num(q, sizeof q, p.qps, "%.0f");
                    fmt_num(r, sizeof r, p.qps / base_qps, "%.2f");
                    fmt_num(p50, sizeof p50, p.p50_us, "%.0f");
                    fmt_num(p99, sizeof p99, p.p99_us, "%.0f");
                    fmt_num(rd, sizeof rd, p.reads, "%.1f");
                    harness_fmt_bytes(p.rss_bytes, rss, sizeof rss);
                    if (at == HARNESS_AT_BELOW)
                        snprintf(where, sizeof where, "lowest point %.3f", edge);
                    else
                        snprintf(where, sizeof where, "interpolated");
                }
                fprintf(fp, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", e[i].label, e[i].mode,
                        q, r, p50, p99, rd, rss, where);
            }
        }
        fprintf(fp, "\n");
    }
    if (base && !base_seen)
        fprintf(fp, "Baseline %s has no finished uncapped cells in this run: no ratios.\n\n", base);
    sm_free(e, n);
    return 0;
}
