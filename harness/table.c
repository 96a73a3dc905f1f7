/*
 * table.c: `annlab table RUN_DIR`, the paper-style tables of a run,
 * rendered as markdown from cells.jsonl alone (so a table can be redrawn
 * from a copied results directory):
 *
 *   (a) engines x effort: recall@k, cold p50/p99, warm p50/p99, QPS, and
 *       device reads per query cold and warm beside the engine's own reads
 *   (b) per memory cap: recall, median latency, QPS, device reads/query
 *   (c) peak RSS of the measured phase, anonymous and file-backed
 *   (d) build cost: wall and CPU time, peak RSS, bytes on disk
 *
 * plus the cells that did not finish, with their reasons.  A figure that was
 * not measured prints as "-", never as a number.
 */
#include "harness/paper.h"
#include "harness/run.h"

#include "engines/core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *compact(const json_t *v)
{
    if (!v)
        return strdup("-");
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!s)
        return strdup("?");
    /* {"L":50} -> L=50 for table cells */
    char *o = s, *w = s;
    for (; *o; o++) {
        if (*o == '{' || *o == '}' || *o == '"')
            continue;
        *w++ = *o == ':' ? '=' : *o == ',' ? ' ' : *o;
    }
    *w = '\0';
    if (!s[0]) {
        free(s);
        return strdup("-");
    }
    return s;
}

static const char *sget(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* A number at a path "a.b", or NULL when absent or null. */
static const json_t *num(const json_t *o, const char *k1, const char *k2)
{
    const json_t *v = json_object_get(o, k1);
    if (k2)
        v = json_object_get(v, k2);
    return json_is_number(v) ? v : NULL;
}

static void fmt(char *buf, size_t len, const json_t *v, const char *f, double scale)
{
    if (!v)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, f, json_number_value(v) * scale);
}

/* Row key of a cell for grouping: label, build, open, search. */
static char *row_key(const json_t *c, int with_mode, int with_cap)
{
    char *b = compact(json_object_get(c, "build")), *o = compact(json_object_get(c, "open")),
         *s = compact(json_object_get(c, "search"));
    char cap[32] = "";
    if (with_cap)
        snprintf(cap, sizeof cap, "%lld", (long long)json_integer_value(json_object_get(c, "memory_cap_bytes")));
    size_t len = strlen(b) + strlen(o) + strlen(s) + 256;
    char *k = malloc(len);
    if (k)
        snprintf(k, len, "%s|%s|%s|%s|%s|%s", sget(c, "label"), b, o, s, with_mode ? sget(c, "mode") : "", cap);
    free(b);
    free(o);
    free(s);
    return k;
}

/* Distinct row keys in first-seen order, of cells passing want(). */
static json_t *rows(const json_t *cells, int with_mode, int with_cap, int (*want)(const json_t *))
{
    json_t *keys = json_array(), *seen = json_object();
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        if (!want(c))
            continue;
        char *k = row_key(c, with_mode, with_cap);
        if (k && !json_object_get(seen, k)) {
            json_object_set_new(seen, k, json_true());
            json_array_append_new(keys, json_string(k));
        }
        free(k);
    }
    json_decref(seen);
    return keys;
}

static int is_ok(const json_t *c)
{
    return !strcmp(sget(c, "status"), "ok");
}
static int is_uncapped_ok(const json_t *c)
{
    return is_ok(c) && json_is_null(json_object_get(c, "memory_cap_bytes"));
}
static int is_capped(const json_t *c)
{
    return !json_is_null(json_object_get(c, "memory_cap_bytes"));
}

/* First cell with this key passing want (and mode when given); best = max threads. */
static const json_t *find(const json_t *cells, const char *key, int with_mode, int with_cap,
                          const char *mode, int (*want)(const json_t *), int max_threads)
{
    const json_t *best = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        if (!want(c) || (mode && strcmp(sget(c, "mode"), mode)))
            continue;
        char *k = row_key(c, with_mode, with_cap);
        int match = k && !strcmp(k, key);
        free(k);
        if (!match)
            continue;
        if (!max_threads)
            return c;
        if (!best || json_integer_value(json_object_get(c, "threads")) >
                         json_integer_value(json_object_get(best, "threads")))
            best = c;
    }
    return best;
}

/* The first matching cell with threads == 1 (latency is single-threaded anyway). */
static const json_t *find_lat(const json_t *cells, const char *key, const char *mode)
{
    return find(cells, key, 0, 0, mode, is_uncapped_ok, 0);
}

static void engine_cols(FILE *fp, const json_t *c)
{
    char *b = compact(json_object_get(c, "build")), *o = compact(json_object_get(c, "open")),
         *s = compact(json_object_get(c, "search"));
    fprintf(fp, "| %s | %s | %s | %s ", sget(c, "label"), b, o, s);
    free(b);
    free(o);
    free(s);
}

int harness_tables_render(const char *run_dir, FILE *fp)
{
    json_t *cells = NULL;
    int rc = harness_cells_load(run_dir, &cells);
    if (rc)
        return rc;
    char cfg_path[4200];
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", run_dir);
    json_t *cfg = json_load_file(cfg_path, 0, NULL);
    long long k = cfg && json_is_integer(json_object_get(cfg, "k")) ? (long long)json_integer_value(json_object_get(cfg, "k")) : 10;
    const json_t *first = json_array_get(cells, 0);
    fprintf(fp, "# %s\n\nrun: `%s`, dataset %s (%s), %zu cells\n\n",
            cfg ? sget(cfg, "name") : "run", run_dir, sget(json_object_get(first, "dataset"), "name"),
            sget(json_object_get(first, "dataset"), "checksum"), json_array_size(cells));
    if (cfg && json_object_get(cfg, "tables")) {
        if ((rc = harness_paper_render(cfg, cells, fp))) {
            json_decref(cfg);
            json_decref(cells);
            return rc;
        }
        fprintf(fp, "# Generic tables\n\n");
    }

    /* (a) */
    fprintf(fp, "## (a) Engines x effort\n\nLatency: one thread, median over repeats of each "
                "percentile. QPS: warm, the largest thread count run. Dev reads: read requests of "
                "the whole disk during the latency pass, per query (other processes included); "
                "proc read: bytes this cell's process fetched from storage (/proc/self/io), per "
                "query.\n\n");
    fprintf(fp, "| engine | build | open | search | recall@%lld | cold p50 (us) | cold p99 (us) | "
                "warm p50 (us) | warm p99 (us) | QPS | threads | dev reads/q cold | dev reads/q warm | "
                "proc read KiB/q cold | proc read KiB/q warm | engine reads/q |\n",
            k);
    fprintf(fp, "|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    json_t *keys = rows(cells, 0, 0, is_uncapped_ok);
    size_t i;
    json_t *kv;
    json_array_foreach(keys, i, kv) {
        const char *key = json_string_value(kv);
        const json_t *cold = find_lat(cells, key, "cold"), *warm = find_lat(cells, key, "warm");
        const json_t *any = warm ? warm : cold;
        const json_t *q = find(cells, key, 0, 0, "warm", is_uncapped_ok, 1);
        if (!q)
            q = find(cells, key, 0, 0, "cold", is_uncapped_ok, 1);
        char r[32], c50[32], c99[32], w50[32], w99[32], qps[32], dc[32], dw[32], er[32], bc[32], bw[32];
        fmt(r, sizeof r, num(any, "recall", NULL), "%.3f", 1);
        fmt(c50, sizeof c50, num(cold, "latency_us", "p50"), "%.0f", 1);
        fmt(c99, sizeof c99, num(cold, "latency_us", "p99"), "%.0f", 1);
        fmt(w50, sizeof w50, num(warm, "latency_us", "p50"), "%.0f", 1);
        fmt(w99, sizeof w99, num(warm, "latency_us", "p99"), "%.0f", 1);
        fmt(qps, sizeof qps, num(q, "qps", NULL), "%.0f", 1);
        fmt(dc, sizeof dc, num(cold, "device", "reads_per_query"), "%.2f", 1);
        fmt(dw, sizeof dw, num(warm, "device", "reads_per_query"), "%.2f", 1);
        fmt(er, sizeof er, num(any, "engine_stats", "reads"), "%.2f", 1);
        fmt(bc, sizeof bc, num(cold, "device", "proc_read_bytes_per_query"), "%.1f", 1.0 / 1024);
        fmt(bw, sizeof bw, num(warm, "device", "proc_read_bytes_per_query"), "%.1f", 1.0 / 1024);
        engine_cols(fp, any);
        fprintf(fp, "| %s | %s | %s | %s | %s | %s | %lld | %s | %s | %s | %s | %s |\n", r, c50, c99, w50,
                w99, qps, q ? (long long)json_integer_value(json_object_get(q, "threads")) : 0LL, dc, dw,
                bc, bw, er);
    }
    if (json_array_size(keys) == 0)
        fprintf(fp, "| (no finished uncapped cells) |||||||||||||||\n");
    json_decref(keys);

    /* (b) */
    fprintf(fp, "\n## (b) Memory caps\n\n");
    keys = rows(cells, 1, 1, is_capped);
    if (json_array_size(keys) == 0) {
        fprintf(fp, "(no memory caps in this run)\n");
    } else {
        fprintf(fp, "| engine | build | open | search | mode | cap (MiB) | status | recall@%lld | p50 (us) | QPS | dev reads/q | cgroup reads/q |\n", k);
        fprintf(fp, "|---|---|---|---|---|--:|---|--:|--:|--:|--:|--:|\n");
        json_array_foreach(keys, i, kv) {
            const json_t *c = find(cells, json_string_value(kv), 1, 1, NULL, is_capped, 1);
            char r[32], p50[32], qps[32], dr[32], cr[32], cap[32];
            fmt(r, sizeof r, num(c, "recall", NULL), "%.3f", 1);
            fmt(p50, sizeof p50, num(c, "latency_us", "p50"), "%.0f", 1);
            fmt(qps, sizeof qps, num(c, "qps", NULL), "%.0f", 1);
            fmt(dr, sizeof dr, num(c, "device", "reads_per_query"), "%.2f", 1);
            fmt(cr, sizeof cr, num(json_object_get(c, "device"), "cgroup", "reads_per_query"), "%.2f", 1);
            fmt(cap, sizeof cap, num(c, "memory_cap_bytes", NULL), "%.0f", 1.0 / 1048576);
            engine_cols(fp, c);
            fprintf(fp, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", sget(c, "mode"), cap,
                    sget(c, "status"), r, p50, qps, dr, cr);
        }
    }
    json_decref(keys);

    /* (c) */
    fprintf(fp, "\n## (c) Peak memory of the measured phase\n\n");
    fprintf(fp, "| engine | build | open | search | mode | peak RSS (MiB) | anon (MiB) | file (MiB) |\n");
    fprintf(fp, "|---|---|---|---|---|--:|--:|--:|\n");
    keys = rows(cells, 1, 0, is_uncapped_ok);
    json_array_foreach(keys, i, kv) {
        const json_t *c = find(cells, json_string_value(kv), 1, 0, NULL, is_uncapped_ok, 1);
        char p[32], a[32], f[32];
        fmt(p, sizeof p, num(c, "memory", "peak_rss_bytes"), "%.1f", 1.0 / 1048576);
        fmt(a, sizeof a, num(c, "memory", "peak_anon_bytes"), "%.1f", 1.0 / 1048576);
        fmt(f, sizeof f, num(c, "memory", "peak_file_bytes"), "%.1f", 1.0 / 1048576);
        engine_cols(fp, c);
        fprintf(fp, "| %s | %s | %s | %s |\n", sget(c, "mode"), p, a, f);
    }
    json_decref(keys);

    /* (d) */
    fprintf(fp, "\n## (d) Build cost\n\n");
    fprintf(fp, "| engine | build | wall (s) | CPU (s) | peak RSS (MiB) | on disk (MiB) |\n");
    fprintf(fp, "|---|---|--:|--:|--:|--:|\n");
    json_t *seen = json_object();
    json_t *c;
    json_array_foreach(cells, i, c) {
        const json_t *ix = json_object_get(c, "index");
        if (!json_is_object(ix))
            continue;
        const char *dir = sget(ix, "dir");
        if (json_object_get(seen, dir))
            continue;
        json_object_set_new(seen, dir, json_true());
        char w[32], cpu[32], rss[32], disk[32];
        fmt(w, sizeof w, num(ix, "build_seconds", NULL), "%.2f", 1);
        fmt(cpu, sizeof cpu, num(ix, "build_cpu_seconds", NULL), "%.2f", 1);
        fmt(rss, sizeof rss, num(ix, "build_peak_rss_bytes", NULL), "%.1f", 1.0 / 1048576);
        fmt(disk, sizeof disk, num(ix, "bytes_on_disk", NULL), "%.1f", 1.0 / 1048576);
        char *b = compact(json_object_get(c, "build"));
        fprintf(fp, "| %s | %s | %s | %s | %s | %s |\n", sget(c, "label"), b, w, cpu, rss, disk);
        free(b);
    }
    json_decref(seen);

    /* cells without figures */
    int header = 0;
    json_array_foreach(cells, i, c) {
        if (is_ok(c))
            continue;
        if (!header) {
            fprintf(fp, "\n## Cells without figures\n\n| engine | search | mode | threads | status | reason |\n|---|---|---|--:|---|---|\n");
            header = 1;
        }
        char *s = compact(json_object_get(c, "search"));
        fprintf(fp, "| %s | %s | %s | %lld | %s | %s |\n", sget(c, "label"), s, sget(c, "mode"),
                (long long)json_integer_value(json_object_get(c, "threads")), sget(c, "status"),
                sget(c, "reason"));
        free(s);
    }
    json_decref(cfg);
    json_decref(cells);
    return 0;
}

int harness_table_main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: annlab table RUN_DIR\n");
        return 2;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/cells.jsonl", argv[1]);
    FILE *probe = fopen(path, "re");
    if (!probe) {
        fprintf(stderr, "annlab table: %s: not a run directory (no cells.jsonl)\n", argv[1]);
        return 1;
    }
    fclose(probe);
    snprintf(path, sizeof path, "%s/tables.md", argv[1]);
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "we");
    int rc = f ? harness_tables_render(argv[1], f) : ann_fail_errno("%s: create", tmp);
    if (f && fclose(f) != 0 && !rc)
        rc = ann_fail_errno("%s: write", tmp);
    if (!rc && rename(tmp, path) != 0)
        rc = ann_fail_errno("%s: rename", path);
    if (rc) {
        unlink(tmp);
        fprintf(stderr, "annlab table: %s\n", ann_errmsg(rc));
        return 1;
    }
    harness_tables_render(argv[1], stdout);
    return 0;
}
