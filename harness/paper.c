/*
 * paper.c: the source articles' table layouts for `annlab table` (contract
 * in harness/paper.h).  A config in configs/paper/ names its layout in
 * "tables"; this file turns the run's cells into the rows and columns the
 * source prints, in the source's units (latency in ms, QPS, device reads per
 * query, memory in MiB), so a reader can put our table beside the article's.
 *
 * Rows come in the order the config lists engines and efforts (first-seen
 * order of the cells), so a table reads like the config.  Everything is
 * derived from cells.jsonl alone.  Deliberate departure from the sources:
 * every row also names its effort parameters exactly as run, and failed
 * cells show their status ("oom", "timeout") where the source would leave a
 * blank, because a missing figure must never look like a measured one.
 */
#include "harness/paper.h"

#include "engines/core/status.h"
#include "engines/engine.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char harness_paper_layout_names[] =
    "paper-cohere-effort, paper-cohere-memcap, paper-cohere-rss, paper-cohere-build, paper-sector, "
    "paper-cohere-updates";

static const double paper_mib = 1048576.0;

/* ---- cell accessors ---------------------------------------------------- */

static const char *paper_str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* A number at o.k1 or o.k1.k2, NULL when absent or not a number. */
static const json_t *paper_num(const json_t *o, const char *k1, const char *k2)
{
    const json_t *v = json_object_get(o, k1);
    if (k2)
        v = json_object_get(v, k2);
    return json_is_number(v) ? v : NULL;
}

static int paper_is_ok(const json_t *c)
{
    return !strcmp(paper_str(c, "status"), "ok");
}

static int paper_is_capped(const json_t *c)
{
    return json_is_integer(json_object_get(c, "memory_cap_bytes"));
}

static long long paper_threads(const json_t *c)
{
    return (long long)json_integer_value(json_object_get(c, "threads"));
}

/*
 * One figure into buf: the number at o.k1[.k2] times scale with format f,
 * "-" when the cell is absent or the figure missing, the cell's status when
 * the cell did not finish; marked "+" when the cell stopped at
 * max_cell_seconds (its figures cover only the queries it answered).
 */
static const char *paper_fig(char *buf, size_t len, const json_t *c, const char *k1, const char *k2,
                             const char *f, double scale)
{
    if (!c) {
        snprintf(buf, len, "-");
        return buf;
    }
    if (!paper_is_ok(c)) {
        snprintf(buf, len, "%s", paper_str(c, "status"));
        return buf;
    }
    const json_t *v = paper_num(c, k1, k2);
    if (v)
        snprintf(buf, len, f, json_number_value(v) * scale);
    else
        snprintf(buf, len, "-");
    if (v && json_is_true(json_object_get(c, "partial")) && strlen(buf) + 2 <= len)
        strcat(buf, "+");
    return buf;
}

/* The name an engine declares for tables (ann_engine_ops.title); an
 * engine this binary does not know, or one without a title, prints as
 * itself. */
static const char *paper_index_name(const char *engine)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    return ops && ops->title ? ops->title : engine;
}

/* The row's index column: the source's name, plus the label when it differs
 * from the engine name (one engine run twice). */
static void paper_index_col(char *buf, size_t len, const json_t *c)
{
    const char *engine = paper_str(c, "engine"), *label = paper_str(c, "label");
    if (*label && strcmp(label, engine))
        snprintf(buf, len, "%s [%s]", paper_index_name(engine), label);
    else
        snprintf(buf, len, "%s", paper_index_name(engine));
}

/* Search parameters as "L 100, beam_width 4" ("ef" for ef_search). */
static void paper_effort_col(char *buf, size_t len, const json_t *c)
{
    const json_t *s = json_object_get(c, "search");
    size_t used = 0;
    buf[0] = '\0';
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)s, key, v) {
        const char *name = !strcmp(key, "ef_search") ? "ef" : key;
        char val[64];
        if (json_is_integer(v))
            snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
        else if (json_is_number(v))
            snprintf(val, sizeof val, "%g", json_number_value(v));
        else
            snprintf(val, sizeof val, "%s", json_is_string(v) ? json_string_value(v) : "?");
        int w = snprintf(buf + used, len - used, "%s%s %s", used ? ", " : "", name, val);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    if (!buf[0])
        snprintf(buf, len, "-");
}

/* Build parameters as compact JSON without quotes or braces. */
static void paper_build_col(char *buf, size_t len, const json_t *c)
{
    char *s = json_dumps(json_object_get(c, "build"), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    size_t w = 0;
    for (const char *p = s ? s : ""; *p && w + 1 < len; p++) {
        if (*p == '{' || *p == '}' || *p == '"')
            continue;
        buf[w++] = *p == ':' ? '=' : *p == ',' ? ' ' : *p;
    }
    buf[w] = '\0';
    free(s);
    if (!buf[0])
        snprintf(buf, len, "defaults");
}

static void paper_cap_col(char *buf, size_t len, long long cap_bytes)
{
    if (cap_bytes % (1LL << 30) == 0)
        snprintf(buf, len, "%lld GiB", cap_bytes >> 30);
    else
        snprintf(buf, len, "%lld MiB", cap_bytes >> 20);
}

/* ---- row grouping ------------------------------------------------------ */

/* Key of a row: label, open and search parameters (compact, sorted). */
static char *paper_row_key(const json_t *c)
{
    json_t *k = json_pack("[s, O, O]", paper_str(c, "label"),
                          json_object_get(c, "open") ? json_object_get(c, "open") : json_null(),
                          json_object_get(c, "search") ? json_object_get(c, "search") : json_null());
    char *s = k ? json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(k);
    return s;
}

/* Representative cells of the distinct rows of cells passing want, in
 * first-seen order (new array of borrowed references). */
static json_t *paper_rows(const json_t *cells, int (*want)(const json_t *, const void *), const void *arg)
{
    json_t *out = json_array(), *seen = json_object();
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        if (!want(c, arg))
            continue;
        char *k = paper_row_key(c);
        if (k && !json_object_get(seen, k)) {
            json_object_set_new(seen, k, json_true());
            json_array_append(out, c);
        }
        free(k);
    }
    json_decref(seen);
    return out;
}

/* A cell query: same row as `row`, the given mode (NULL = any), the given
 * cap (-1 = uncapped), threads == want_threads (0 = the largest present). */
typedef struct paper_query {
    const json_t *row;
    const char *mode;
    long long cap_bytes;
    long long want_threads;
} paper_query;

static const json_t *paper_find(const json_t *cells, const paper_query *q)
{
    char *rk = paper_row_key(q->row);
    const json_t *best = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        if (q->mode && strcmp(paper_str(c, "mode"), q->mode))
            continue;
        const json_t *cap = json_object_get(c, "memory_cap_bytes");
        if (q->cap_bytes < 0 ? json_is_integer(cap)
                             : !json_is_integer(cap) || json_integer_value(cap) != q->cap_bytes)
            continue;
        if (q->want_threads && paper_threads(c) != q->want_threads)
            continue;
        char *k = paper_row_key(c);
        int match = rk && k && !strcmp(k, rk);
        free(k);
        if (!match)
            continue;
        /* prefer a finished cell, then more threads */
        if (!best || (paper_is_ok(c) && !paper_is_ok(best)) ||
            (paper_is_ok(c) == paper_is_ok(best) && paper_threads(c) > paper_threads(best)))
            best = c;
    }
    free(rk);
    return best;
}

static int paper_want_uncapped(const json_t *c, const void *arg)
{
    (void)arg;
    return !paper_is_capped(c);
}

static int paper_want_cap(const json_t *c, const void *arg)
{
    const long long *cap = arg;
    return paper_is_capped(c) && json_integer_value(json_object_get(c, "memory_cap_bytes")) == *cap;
}

static int paper_want_label_1thread(const json_t *c, const void *arg)
{
    return !paper_is_capped(c) && paper_threads(c) == 1 && !strcmp(paper_str(c, "label"), arg);
}

/* ---- layouts ----------------------------------------------------------- */

static long long paper_cfg_k(const json_t *cfg)
{
    const json_t *k = json_object_get(cfg, "k");
    return json_is_integer(k) ? (long long)json_integer_value(k) : 10;
}

static void paper_effort(const json_t *cfg, const json_t *cells, FILE *fp)
{
    long long k = paper_cfg_k(cfg);
    json_t *rows = paper_rows(cells, paper_want_uncapped, NULL);
    long long qps_threads = 0;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const json_t *w = paper_find(cells, &(paper_query){ r, "warm", -1, 0 });
        if (w && paper_threads(w) > qps_threads)
            qps_threads = paper_threads(w);
    }
    fprintf(fp, "## Table 1: recall, latency and throughput per index and effort\n\n"
                "Latency: one thread, one query at a time, ms (median over repeats of each "
                "percentile). QPS: warm, %lld threads.\n\n",
            qps_threads);
    fprintf(fp, "| Index | Effort | Recall@%lld | Cold p50 (ms) | Cold p99 (ms) | Warm p50 (ms) | "
                "Warm p99 (ms) | Warm QPS |\n|---|---|--:|--:|--:|--:|--:|--:|\n",
            k);
    json_array_foreach(rows, i, r) {
        const json_t *cold = paper_find(cells, &(paper_query){ r, "cold", -1, 0 });
        const json_t *warm = paper_find(cells, &(paper_query){ r, "warm", -1, 0 });
        const json_t *any = warm && paper_is_ok(warm) ? warm : cold ? cold : warm;
        char ix[160], ef[160], rec[32], c50[32], c99[32], w50[32], w99[32], qps[32];
        paper_index_col(ix, sizeof ix, r);
        paper_effort_col(ef, sizeof ef, r);
        fprintf(fp, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", ix, ef,
                paper_fig(rec, sizeof rec, any, "recall", NULL, "%.3f", 1),
                paper_fig(c50, sizeof c50, cold, "latency_us", "p50", "%.2f", 1e-3),
                paper_fig(c99, sizeof c99, cold, "latency_us", "p99", "%.2f", 1e-3),
                paper_fig(w50, sizeof w50, warm, "latency_us", "p50", "%.2f", 1e-3),
                paper_fig(w99, sizeof w99, warm, "latency_us", "p99", "%.2f", 1e-3),
                paper_fig(qps, sizeof qps, warm, "qps", NULL, "%.0f", 1));
    }
    json_decref(rows);
}

static void paper_memcap(const json_t *cfg, const json_t *cells, FILE *fp)
{
    long long k = paper_cfg_k(cfg);
    fprintf(fp, "## Table 2: under memory caps\n\n"
                "Cap: cgroup memory limit counting page cache, swap off. Median latency: one "
                "thread, ms. QPS at the thread count shown. Device reads: read requests at the "
                "disk holding the index during the latency pass, per query; engine reads: the "
                "engine's own storage requests per query.\n");
    /* caps in first-seen order */
    json_t *caps = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        if (!paper_is_capped(c))
            continue;
        json_t *cap = json_object_get(c, "memory_cap_bytes");
        int seen = 0;
        size_t j;
        json_t *x;
        json_array_foreach(caps, j, x) seen |= json_equal(x, cap);
        if (!seen)
            json_array_append(caps, cap);
    }
    if (json_array_size(caps) == 0)
        fprintf(fp, "\n(no capped cells in this run)\n");
    json_t *capv;
    json_array_foreach(caps, i, capv) {
        long long cap = (long long)json_integer_value(capv);
        char capname[32];
        paper_cap_col(capname, sizeof capname, cap);
        fprintf(fp, "\n### %s cap\n\n| Index | Effort | Mode | Recall@%lld | Median latency (ms) | "
                    "QPS | Threads | Device reads/query | Engine reads/query |\n"
                    "|---|---|---|--:|--:|--:|--:|--:|--:|\n",
                capname, k);
        json_t *rows = paper_rows(cells, paper_want_cap, &cap);
        size_t j;
        json_t *r;
        json_array_foreach(rows, j, r) {
            const json_t *m = paper_find(cells, &(paper_query){ r, NULL, cap, 0 });
            char ix[160], ef[160], rec[32], p50[32], qps[32], dev[32], eng[32];
            paper_index_col(ix, sizeof ix, r);
            paper_effort_col(ef, sizeof ef, r);
            fprintf(fp, "| %s | %s | %s | %s | %s | %s | %lld | %s | %s |\n", ix, ef,
                    paper_str(m, "mode"), paper_fig(rec, sizeof rec, m, "recall", NULL, "%.3f", 1),
                    paper_fig(p50, sizeof p50, m, "latency_us", "p50", "%.2f", 1e-3),
                    paper_fig(qps, sizeof qps, m, "qps", NULL, "%.0f", 1), paper_threads(m),
                    paper_fig(dev, sizeof dev, m, "device", "reads_per_query", "%.1f", 1),
                    paper_fig(eng, sizeof eng, m, "engine_stats", "reads", "%.1f", 1));
        }
        json_decref(rows);
    }
    json_decref(caps);
}

static void paper_rss(const json_t *cells, FILE *fp)
{
    const json_t *first = json_array_get(cells, 0);
    fprintf(fp, "## Table 3: peak RSS per index\n\nDataset %s. Peak RSS of the measured phase "
                "(warm when run, else cold; the largest thread count), MiB. Anonymous and "
                "file-backed: the split at the end of that phase. Cgroup peak: the cell's memory "
                "cgroup over the same phase, page cache included (what a store read through "
                "the page cache, as RocksDB is, holds outside its RSS); \"-\" where cgroups "
                "were unavailable.\n\n"
                "| Index | Effort | Mode | Peak RSS (MiB) | Anonymous (MiB) | File-backed (MiB) | "
                "Cgroup peak (MiB) |\n"
                "|---|---|---|--:|--:|--:|--:|\n",
            paper_str(json_object_get(first, "dataset"), "name"));
    json_t *rows = paper_rows(cells, paper_want_uncapped, NULL);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const json_t *m = paper_find(cells, &(paper_query){ r, "warm", -1, 0 });
        if (!m)
            m = paper_find(cells, &(paper_query){ r, "cold", -1, 0 });
        char ix[160], ef[160], p[32], a[32], f[32], g[32];
        paper_index_col(ix, sizeof ix, r);
        paper_effort_col(ef, sizeof ef, r);
        fprintf(fp, "| %s | %s | %s | %s | %s | %s | %s |\n", ix, ef, paper_str(m, "mode"),
                paper_fig(p, sizeof p, m, "memory", "peak_rss_bytes", "%.0f", 1 / paper_mib),
                paper_fig(a, sizeof a, m, "memory", "peak_anon_bytes", "%.0f", 1 / paper_mib),
                paper_fig(f, sizeof f, m, "memory", "peak_file_bytes", "%.0f", 1 / paper_mib),
                paper_fig(g, sizeof g, m, "memory", "cgroup_peak_bytes", "%.0f", 1 / paper_mib));
    }
    json_decref(rows);
}

/* One row per distinct index directory: build cost from the index's build.json. */
static void paper_build_rows(const json_t *cells, FILE *fp)
{
    fprintf(fp, "| Index | Build parameters | Build time (s) | Build CPU (s) | Peak memory (MiB) | "
                "On disk (MiB) |\n|---|---|--:|--:|--:|--:|\n");
    json_t *seen = json_object();
    size_t i, reused = 0;
    json_t *c;
    json_array_foreach(cells, i, c) {
        const json_t *ix = json_object_get(c, "index");
        const char *dir = paper_str(ix, "dir");
        if (!json_is_object(ix) || !*dir || json_object_get(seen, dir))
            continue;
        json_object_set_new(seen, dir, json_true());
        /* the engine, not the label: labels that share a build share its row */
        const char *name = paper_index_name(paper_str(c, "engine"));
        char b[256], w[32], cpu[32], rss[32], disk[32];
        paper_build_col(b, sizeof b, c);
        const json_t *wv = paper_num(ix, "build_seconds", NULL), *cv = paper_num(ix, "build_cpu_seconds", NULL),
                     *rv = paper_num(ix, "build_peak_rss_bytes", NULL), *dv = paper_num(ix, "bytes_on_disk", NULL);
        snprintf(w, sizeof w, wv ? "%.1f" : "-", wv ? json_number_value(wv) : 0);
        const json_t *ru = json_object_get(ix, "reused");
        if (wv && json_array_size(ru) > 0) {
            /* the build took its PQ and/or graph from the artifact cache */
            const char *what = json_array_size(ru) == 2 ? "PQ, graph" : json_string_value(json_array_get(ru, 0));
            size_t n = strlen(w);
            snprintf(w + n, sizeof w - n, " (%s reused)", strcmp(what, "pq") == 0 ? "PQ" : what);
            reused++;
        }
        snprintf(cpu, sizeof cpu, cv ? "%.1f" : "-", cv ? json_number_value(cv) : 0);
        snprintf(rss, sizeof rss, rv ? "%.0f" : "-", rv ? json_number_value(rv) / paper_mib : 0);
        snprintf(disk, sizeof disk, dv ? "%.0f" : "-", dv ? json_number_value(dv) / paper_mib : 0);
        fprintf(fp, "| %s | %s | %s | %s | %s | %s |\n", name, b, w, cpu, rss, disk);
    }
    if (json_object_size(seen) == 0)
        fprintf(fp, "| (no cell recorded an index) ||||||\n");
    if (reused)
        fprintf(fp, "\n\"reused\": the build took its PQ codebook and/or Vamana graph from the shared "
                    "artifact cache (`<index_root>/artifacts`), made by an earlier build of the same graph "
                    "parameters; its time leaves that work out. A fresh `index_root` times full builds.\n");
    json_decref(seen);
}

static void paper_build(const json_t *cells, FILE *fp)
{
    fprintf(fp, "## Table 4: build time and peak memory\n\nFrom each index's build.json (the build "
                "ran in its own process). An index the build cache already held keeps the figures "
                "of the run that built it.\n\n");
    paper_build_rows(cells, fp);
}

static void paper_sector(const json_t *cfg, const json_t *cells, FILE *fp)
{
    long long k = paper_cfg_k(cfg);
    fprintf(fp, "## Single-thread QPS against L\n\nOne thread; QPS = queries / wall time of the "
                "pass; latency ms; reads and cache hits: the engine's own, per query.\n");
    /* labels in first-seen order that have single-thread cells */
    json_t *labels = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        if (paper_is_capped(c) || paper_threads(c) != 1)
            continue;
        const char *l = paper_str(c, "label");
        int seen = 0;
        size_t j;
        json_t *x;
        json_array_foreach(labels, j, x) seen |= !strcmp(json_string_value(x), l);
        if (!seen)
            json_array_append_new(labels, json_string(l));
    }
    json_t *lv;
    json_array_foreach(labels, i, lv) {
        const char *label = json_string_value(lv);
        json_t *rows = paper_rows(cells, paper_want_label_1thread, label);
        const json_t *r0 = json_array_get(rows, 0);
        char ix[160];
        paper_index_col(ix, sizeof ix, r0);
        char *open = json_dumps(json_object_get(r0, "open"), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        fprintf(fp, "\n### %s, open %s\n\n| Effort | Mode | Recall@%lld | QPS (1 thread) | p50 (ms) | "
                    "p99 (ms) | Reads/query | Cache hits/query |\n|---|---|--:|--:|--:|--:|--:|--:|\n",
                ix, open ? open : "{}", k);
        free(open);
        size_t j;
        json_t *r;
        json_array_foreach(rows, j, r) {
            const char *modes[] = { "warm", "cold" };
            for (int m = 0; m < 2; m++) {
                const json_t *cell = paper_find(cells, &(paper_query){ r, modes[m], -1, 1 });
                if (!cell)
                    continue;
                char ef[160], rec[32], qps[32], p50[32], p99[32], rd[32], ch[32];
                paper_effort_col(ef, sizeof ef, r);
                fprintf(fp, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", ef, modes[m],
                        paper_fig(rec, sizeof rec, cell, "recall", NULL, "%.3f", 1),
                        paper_fig(qps, sizeof qps, cell, "qps", NULL, "%.0f", 1),
                        paper_fig(p50, sizeof p50, cell, "latency_us", "p50", "%.2f", 1e-3),
                        paper_fig(p99, sizeof p99, cell, "latency_us", "p99", "%.2f", 1e-3),
                        paper_fig(rd, sizeof rd, cell, "engine_stats", "reads", "%.1f", 1),
                        paper_fig(ch, sizeof ch, cell, "engine_stats", "cache_hits", "%.1f", 1));
            }
        }
        json_decref(rows);
    }
    json_decref(labels);

    fprintf(fp, "\n## Thread scaling\n\nQPS at each thread count (warm when run), speed-up "
                "against the same row at 1 thread.\n\n| Index | Effort | Threads | Recall@%lld | QPS | "
                "Speed-up |\n|---|---|--:|--:|--:|--:|\n",
            k);
    json_t *rows = paper_rows(cells, paper_want_uncapped, NULL);
    int any = 0;
    json_t *r;
    json_array_foreach(rows, i, r) {
        /* distinct thread counts of this row, ascending */
        long long ts[64];
        int nt = 0;
        size_t j;
        json_array_foreach(cells, j, c) {
            if (paper_is_capped(c))
                continue;
            char *a = paper_row_key(c), *b = paper_row_key(r);
            int same = a && b && !strcmp(a, b);
            free(a);
            free(b);
            if (!same)
                continue;
            long long t = paper_threads(c);
            int dup = 0;
            for (int q = 0; q < nt; q++)
                dup |= ts[q] == t;
            if (!dup && nt < 64)
                ts[nt++] = t;
        }
        if (nt < 2)
            continue;
        for (int a = 1; a < nt; a++)
            for (int b = a; b > 0 && ts[b - 1] > ts[b]; b--) {
                long long t = ts[b];
                ts[b] = ts[b - 1];
                ts[b - 1] = t;
            }
        const json_t *one = paper_find(cells, &(paper_query){ r, "warm", -1, 1 });
        if (!one)
            one = paper_find(cells, &(paper_query){ r, "cold", -1, 1 });
        const json_t *q1 = one && paper_is_ok(one) ? paper_num(one, "qps", NULL) : NULL;
        for (int t = 0; t < nt; t++) {
            const json_t *cell = paper_find(cells, &(paper_query){ r, "warm", -1, ts[t] });
            if (!cell)
                cell = paper_find(cells, &(paper_query){ r, "cold", -1, ts[t] });
            const json_t *qv = cell && paper_is_ok(cell) ? paper_num(cell, "qps", NULL) : NULL;
            char ix[160], ef[160], rec[32], qps[32], sp[32];
            paper_index_col(ix, sizeof ix, r);
            paper_effort_col(ef, sizeof ef, r);
            if (q1 && qv && json_number_value(q1) > 0)
                snprintf(sp, sizeof sp, "%.2fx", json_number_value(qv) / json_number_value(q1));
            else
                snprintf(sp, sizeof sp, "-");
            fprintf(fp, "| %s | %s | %lld | %s | %s | %s |\n", ix, ef, ts[t],
                    paper_fig(rec, sizeof rec, cell, "recall", NULL, "%.3f", 1),
                    paper_fig(qps, sizeof qps, cell, "qps", NULL, "%.0f", 1), sp);
            any = 1;
        }
    }
    if (!any)
        fprintf(fp, "| (no row was run at more than one thread count) ||||||\n");
    json_decref(rows);

    fprintf(fp, "\n## Build time and peak memory\n\n");
    paper_build_rows(cells, fp);
}

/* ---- the update table (workload cells) --------------------------------- */

static int paper_want_step(const json_t *c, const void *arg)
{
    (void)arg;
    return json_is_integer(json_object_get(c, "step"));
}

/* The step lines of row r's workload cell in cells.jsonl order (the
 * steps' order): its search steps (search != 0) or every other step. */
static void paper_update_rows(const json_t *cells, const json_t *r, int search, FILE *fp)
{
    char *rk = paper_row_key(r);
    char ix[160];
    paper_index_col(ix, sizeof ix, r);
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        if (!paper_want_step(c, NULL))
            continue;
        char *k = paper_row_key(c);
        int match = rk && k && !strcmp(k, rk);
        free(k);
        const char *op = paper_str(c, "op");
        if (!match || (search != !strcmp(op, "search")))
            continue;
        long long step = (long long)json_integer_value(json_object_get(c, "step"));
        char a[32], b[32], d[32], e[32], f[32];
        if (search) {
            fprintf(fp, "| %s | %lld | %s | %s | %s | %s | %s |\n", ix, step,
                    paper_fig(a, sizeof a, c, "pending", NULL, "%.0f", 1),
                    paper_fig(b, sizeof b, c, "recall", NULL, "%.3f", 1),
                    paper_fig(d, sizeof d, c, "latency_us", "p50", "%.2f", 1e-3),
                    paper_fig(e, sizeof e, c, "latency_us", "p99", "%.2f", 1e-3),
                    paper_fig(f, sizeof f, c, "qps", NULL, "%.0f", 1));
            continue;
        }
        char n[32] = "-";
        const json_t *st = paper_num(c, "start", NULL), *en = paper_num(c, "end", NULL);
        if (st && en)
            snprintf(n, sizeof n, "%.0f", json_number_value(en) - json_number_value(st));
        if (json_is_true(json_object_get(c, "built"))) {
            fprintf(fp, "| %s | %lld | %s | %s | built over them | | | | |\n", ix, step, op, n);
            continue;
        }
        char g[32], m[64] = "";
        if (!strcmp(op, "merge") || !strcmp(op, "replace"))
            paper_fig(m, sizeof m, c, "merge_seconds", NULL, "%.1f", 1);
        else if (paper_num(c, "merges", NULL)) /* an insert step's merge_every merges */
            snprintf(m, sizeof m, "%.1f in %.0f merges",
                     json_number_value(paper_num(c, "merge_seconds", NULL)),
                     json_number_value(paper_num(c, "merges", NULL)));
        fprintf(fp, "| %s | %lld | %s | %s | %s | %s | %s | %s | %s |\n", ix, step, op, n,
                paper_fig(a, sizeof a, c, "pending_before", NULL, "%.0f", 1),
                paper_fig(b, sizeof b, c, "insert_latency_us", "p50", "%.3f", 1e-3),
                paper_fig(d, sizeof d, c, "insert_latency_us", "p99", "%.3f", 1e-3),
                paper_fig(g, sizeof g, c, "inserts_per_s", NULL, "%.0f", 1), m);
    }
    free(rk);
}

static void paper_updates(const json_t *cells, FILE *fp)
{
    const json_t *first = json_array_get(cells, 0);
    json_t *rows = paper_rows(cells, paper_want_step, NULL);
    fprintf(fp, "## Updates: searches with pending inserts, and the inserts and merges\n\n"
                "Dataset %s. Each index row is one workload cell run step by step (steps "
                "numbered as in the config). Searches: pending = inserts since the last merge "
                "step; p50 and p99 over the test queries one at a time (ms); QPS at the cell's "
                "threads.\n\n"
                "| Index | Step | Pending | Recall@10 | p50 (ms) | p99 (ms) | QPS |\n"
                "|---|--:|--:|--:|--:|--:|--:|\n",
            paper_str(json_object_get(first, "dataset"), "name"));
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) paper_update_rows(cells, r, 1, fp);
    fprintf(fp, "\nInserts (into the pending list), deletes and merges: vectors in the step, "
                "pending before it, insert latency per vector (ms), inserts a second (the "
                "step's writers together), merge time (s; an insert step merging every "
                "merge_every inserts: the merges' total and count).\n\n"
                "| Index | Step | Op | Vectors | Pending before | Insert p50 (ms) | "
                "Insert p99 (ms) | Inserts/s | Merge (s) |\n"
                "|---|--:|---|--:|--:|--:|--:|--:|--:|\n");
    json_array_foreach(rows, i, r) paper_update_rows(cells, r, 0, fp);
    json_decref(rows);
}

/* ---- entry points ------------------------------------------------------ */

static const char *const paper_layouts[] = { "paper-cohere-effort", "paper-cohere-memcap",
                                             "paper-cohere-rss", "paper-cohere-build",
                                             "paper-sector", "paper-cohere-updates" };

static int paper_layout_index(const char *name)
{
    for (size_t i = 0; i < sizeof paper_layouts / sizeof paper_layouts[0]; i++)
        if (!strcmp(name, paper_layouts[i]))
            return (int)i;
    return -1;
}

int harness_paper_check(const json_t *cfg, harness_problems *probs)
{
    int before = probs->n;
    const json_t *v = json_object_get(cfg, "tables");
    if (!v)
        return 0;
    if (!json_is_string(v))
        harness_problem(probs, "tables: expected a table layout name (one of %s)",
                        harness_paper_layout_names);
    else if (paper_layout_index(json_string_value(v)) < 0)
        harness_problem(probs, "tables: \"%s\" is not a table layout (known: %s)",
                        json_string_value(v), harness_paper_layout_names);
    return probs->n - before;
}

int harness_paper_render(const json_t *cfg, const json_t *cells, FILE *fp)
{
    const char *name = json_string_value(json_object_get(cfg, "tables"));
    if (!name)
        return 0;
    switch (paper_layout_index(name)) {
    case 0:
        paper_effort(cfg, cells, fp);
        break;
    case 1:
        paper_memcap(cfg, cells, fp);
        break;
    case 2:
        paper_rss(cells, fp);
        break;
    case 3:
        paper_build(cells, fp);
        break;
    case 4:
        paper_sector(cfg, cells, fp);
        break;
    case 5:
        paper_updates(cells, fp);
        break;
    default:
        return ann_fail(ANN_ECONFIG, "tables: \"%s\" is not a table layout (known: %s)", name,
                        harness_paper_layout_names);
    }
    size_t i, partial = 0;
    const json_t *c;
    json_array_foreach(cells, i, c) partial += json_is_true(json_object_get(c, "partial"));
    if (partial)
        fprintf(fp, "\n+ partial: the cell reached max_cell_seconds; its figures cover only the "
                    "queries it answered (`queries_done`, `time_bound` in cells.jsonl).\n");
    fprintf(fp, "\n");
    return 0;
}
