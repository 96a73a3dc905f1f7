/*
 * table.c: `annlab table RUN_DIR`, the paper-style tables of a run,
 * rendered as markdown from cells.jsonl (with config.json and machine.json
 * when present), so a table can be redrawn from a copied results directory:
 *
 *   header  the machine (CPU, cores, SIMD kernels, RAM, disk, kernel), the
 *           commit, queries, repeats, and how busy other processes kept the
 *           machine while the cells ran
 *   summary each engine at recall 0.90 / 0.95 / 0.99 (harness/summary.h)
 *   (a) engines x effort: recall@k, cold p50/p99, warm p50/p99, QPS, and
 *       device reads per query cold and warm (the cell's own cgroup's)
 *       beside the engine's own reads; a mode's columns only when the run
 *       measured it; the engines' caveats from machine.json as notes
 *   (b) per memory cap: recall, median latency, QPS, device reads/query
 *   (c) peak RSS of the measured phase, anonymous and file-backed
 *   (d) build cost: wall and CPU time, peak RSS, bytes on disk, and what
 *       the build reused (shared PQ/graph artifacts, a cached index)
 *
 * plus the cells that did not finish, with their reasons.  A figure that was
 * not measured prints as "-", never as a number.
 */
#include "harness/paper.h"
#include "harness/run.h"
#include "harness/measure.h"
#include "harness/summary.h"

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

/* ", partial 32/500" when cell c stopped at max_cell_seconds (cell.c),
 * else "": its figures cover only the queries it answered. */
static void partial_mark(char *buf, size_t len, const json_t *c)
{
    buf[0] = '\0';
    if (!c || !json_is_true(json_object_get(c, "partial")))
        return;
    snprintf(buf, len, ", partial %lld/%lld",
             (long long)json_integer_value(json_object_get(c, "queries_done")),
             (long long)json_integer_value(
                 json_object_get(json_object_get(c, "time_bound"), "queries_asked")));
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
        snprintf(k, len, "%s|%s|%s|%s|%s|%s", harness_jstr(c, "label"), b, o, s, with_mode ? harness_jstr(c, "mode") : "", cap);
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
    return !strcmp(harness_jstr(c, "status"), "ok");
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
        if (!want(c) || (mode && strcmp(harness_jstr(c, "mode"), mode)))
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

/* The search parameters measured: what a target recall found (harness/tune.h),
 * "L=73 (target recall 0.95)", or those configured. */
static char *search_text(const json_t *c)
{
    const json_t *used = json_object_get(c, "search_used");
    const json_t *t = json_object_get(c, "target_recall");
    if (!json_is_object(used) || !json_is_object(t))
        return compact(json_object_get(c, "search"));
    char *s = compact(used);
    size_t len = strlen(s) + 64;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%s (target recall %g%s)", s, json_number_value(json_object_get(t, "target")),
                 json_is_false(json_object_get(t, "reached")) ? ", not reached" : "");
    free(s);
    return out ? out : strdup("?");
}

static void engine_cols(FILE *fp, const json_t *c)
{
    char *b = compact(json_object_get(c, "build")), *o = compact(json_object_get(c, "open")),
         *s = search_text(c);
    fprintf(fp, "| %s | %s | %s | %s ", harness_jstr(c, "label"), b, o, s);
    free(b);
    free(o);
    free(s);
}

/* The figure of a cell's device reads per query: its own cgroup's when
 * recorded (what this cell read), else the whole disk's, marked. */
static void dev_reads(char *buf, size_t len, const json_t *c, int *disk_marked)
{
    const json_t *dev = json_object_get(c, "device");
    const json_t *cg = num(json_object_get(dev, "cgroup"), "reads_per_query", NULL);
    if (cg) {
        snprintf(buf, len, "%.2f", json_number_value(cg));
    } else if (num(dev, "reads_per_query", NULL)) {
        snprintf(buf, len, "%.2f (disk)", json_number_value(num(dev, "reads_per_query", NULL)));
        *disk_marked = 1;
    } else {
        snprintf(buf, len, "-");
    }
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The header: what was measured where, by which code, how quietly. */
static void render_header(FILE *fp, const json_t *cfg, const json_t *machine, const json_t *cells,
                          const char *run_dir, long long k)
{
    const json_t *first = json_array_get(cells, 0);
    /* a workload cell counts once, however many step lines it has */
    size_t n_cells = 0, wi;
    const json_t *wc;
    json_t *wl_seen = json_object();
    json_array_foreach(cells, wi, wc) {
        const char *w = json_string_value(json_object_get(wc, "workload_cell"));
        if (w && json_object_get(wl_seen, w))
            continue;
        if (w)
            json_object_set_new(wl_seen, w, json_true());
        n_cells++;
    }
    fprintf(fp, "# %s\n\nrun: `%s`, dataset %s (%s), %zu cells%s\n\n", cfg ? harness_jstr(cfg, "name") : "run",
            run_dir, harness_jstr(json_object_get(first, "dataset"), "name"),
            harness_jstr(json_object_get(first, "dataset"), "checksum"), n_cells,
            json_object_size(wl_seen) ? " (workload cells: one line per step in cells.jsonl)" : "");
    json_decref(wl_seen);
    if (machine) {
        const json_t *topo = json_object_get(machine, "topology"), *disk = json_object_get(machine, "disk");
        char mem[32];
        harness_fmt_bytes(json_number_value(json_object_get(machine, "memory_bytes")), mem, sizeof mem);
        const char *rot = harness_jstr(disk, "rotational");
        /* /proc/cpuinfo pads some model names with blanks */
        char cpu[256];
        snprintf(cpu, sizeof cpu, "%s", harness_jstr(machine, "cpu_model"));
        for (size_t n = strlen(cpu); n > 0 && (cpu[n - 1] == ' ' || cpu[n - 1] == '\t'); n--)
            cpu[n - 1] = '\0';
        fprintf(fp,
                "machine: %s, %lld cores (%lld hardware threads), SIMD kernels %s, %s RAM; disk %s "
                "(%s, %s, model %s); %s\n\n",
                cpu[0] ? cpu : "unknown CPU",
                (long long)json_integer_value(json_object_get(topo, "cores")),
                (long long)json_integer_value(json_object_get(topo, "pus")), harness_jstr(machine, "simd"), mem,
                harness_jstr(disk, "device")[0] ? harness_jstr(disk, "device") : "?", harness_jstr(disk, "filesystem"),
                !strcmp(rot, "1") ? "rotational" : !strcmp(rot, "0") ? "non-rotational" : "rotation unknown",
                harness_jstr(disk, "model"), harness_jstr(machine, "kernel"));
    } else {
        fprintf(fp, "machine: unknown (no machine.json)\n\n");
    }
    /* queries and repeats as the cells record them */
    long long nq = -1, reps = -1;
    size_t i;
    const json_t *c;
    json_array_foreach(cells, i, c)
        if (json_is_integer(json_object_get(c, "queries"))) {
            nq = (long long)json_integer_value(json_object_get(c, "queries"));
            reps = (long long)json_integer_value(json_object_get(c, "repeats"));
            break;
        }
    const char *commit = machine ? harness_jstr(machine, "git_commit") : "";
    fprintf(fp, "commit %.12s%s; ", commit[0] ? commit : "unknown",
            json_is_true(json_object_get(machine, "git_dirty")) ? " (with uncommitted changes)" : "");
    if (nq >= 0)
        fprintf(fp, "%lld test queries, %lld repeat%s per cell, k = %lld\n\n", nq, reps,
                reps == 1 ? "" : "s", k);
    else
        fprintf(fp, "k = %lld\n\n", k);
    /* how busy other processes kept the machine while cells ran */
    double *oc = calloc(json_array_size(cells) + 1, sizeof *oc);
    size_t n = 0, flagged = 0;
    json_array_foreach(cells, i, c) {
        const json_t *v = json_object_get(json_object_get(c, "machine_cpu"), "others_cores");
        if (oc && json_is_number(v)) {
            oc[n++] = json_number_value(v);
            flagged += json_number_value(v) >= HARNESS_BUSY_CORES;
        }
    }
    if (n) {
        qsort(oc, n, sizeof *oc, cmp_dbl);
        double med = n % 2 ? oc[n / 2] : (oc[n / 2 - 1] + oc[n / 2]) / 2;
        fprintf(fp,
                "machine load while measuring: other processes kept %.2f cores busy (median over %zu "
                "cells; max %.2f); %zu cell%s at %.2f cores or more%s\n\n",
                med, n, oc[n - 1], flagged, flagged == 1 ? "" : "s", HARNESS_BUSY_CORES,
                flagged ? ": their timings were taken on a busy machine" : "");
    } else {
        fprintf(fp, "machine load while measuring: not recorded (cells before machine_cpu)\n\n");
    }
    free(oc);
    size_t partial = 0;
    json_array_foreach(cells, i, c) partial += json_is_true(json_object_get(c, "partial"));
    if (partial)
        fprintf(fp,
                "time bound: %zu cell%s reached max_cell_seconds and stopped issuing queries; "
                "their figures cover only the queries answered (`partial n/N` below, "
                "`time_bound` in cells.jsonl)\n\n",
                partial, partial == 1 ? "" : "s");
}

/*
 * Workload steps (harness/workload.h): the lines cells.jsonl holds for
 * each step of a workload cell, one table per cell, steps in order.
 */
static void render_workload(FILE *fp, const json_t *steps, long long k)
{
    fprintf(fp, "## Workload steps\n\nOne row per step of each workload cell (`workload` in the "
                "config). Recall@%lld is against the exact top-k over the vectors live at that "
                "step; pending and deleted count the inserts and deletes issued since the last "
                "merge step; latency is one thread, QPS the cell's thread count; insert latency "
                "and rate are the step's inserts (a replace's too); store is the bytes of the "
                "index's files after the step.\n",
            k);
    json_t *done = json_object();
    size_t i, j;
    const json_t *c, *d;
    json_array_foreach(steps, i, c) {
        const char *cell = harness_jstr(c, "workload_cell");
        if (json_object_get(done, cell))
            continue;
        json_object_set_new(done, cell, json_true());
        char *b = compact(json_object_get(c, "build")), *o = compact(json_object_get(c, "open"));
        char *sp = compact(json_object_get(c, "search"));
        fprintf(fp, "\n### %s (build %s, open %s, search %s, %lld thread%s)\n\n"
                    "| step | op | range | recall@%lld | pending | deleted | p50 (us) | p99 (us) | QPS "
                    "| inserts/s | insert p50 (us) | insert p99 (us) | merge (s) | store (MiB) |\n"
                    "|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
                harness_jstr(c, "label"), b, o, sp,
                (long long)json_integer_value(json_object_get(c, "threads")),
                json_integer_value(json_object_get(c, "threads")) == 1 ? "" : "s", k);
        free(b);
        free(o);
        free(sp);
        json_array_foreach(steps, j, d) {
            if (strcmp(harness_jstr(d, "workload_cell"), cell))
                continue;
            char range[96] = "", rec[32], pend[32], del[32], p50[32], p99[32], qps[32], ips[32],
                 ip50[32], ip99[32], mg[32], st[32];
            if (num(d, "tags_start", NULL))
                snprintf(range, sizeof range, "ids [%lld, %lld) <- rows [%lld, %lld)",
                         (long long)json_integer_value(json_object_get(d, "tags_start")),
                         (long long)json_integer_value(json_object_get(d, "tags_end")),
                         (long long)json_integer_value(json_object_get(d, "ids_start")),
                         (long long)json_integer_value(json_object_get(d, "ids_end")));
            else if (num(d, "start", NULL))
                snprintf(range, sizeof range, "[%lld, %lld)%s",
                         (long long)json_integer_value(json_object_get(d, "start")),
                         (long long)json_integer_value(json_object_get(d, "end")),
                         json_is_true(json_object_get(d, "built")) ? " built" : "");
            fmt(rec, sizeof rec, num(d, "recall", NULL), "%.4f", 1);
            fmt(pend, sizeof pend, num(d, "pending", NULL), "%.0f", 1);
            fmt(del, sizeof del, num(d, "deleted", NULL), "%.0f", 1);
            fmt(p50, sizeof p50, num(d, "latency_us", "p50"), "%.0f", 1);
            fmt(p99, sizeof p99, num(d, "latency_us", "p99"), "%.0f", 1);
            fmt(qps, sizeof qps, num(d, "qps", NULL), "%.0f", 1);
            fmt(ips, sizeof ips, num(d, "inserts_per_s", NULL), "%.0f", 1);
            fmt(ip50, sizeof ip50, num(d, "insert_latency_us", "p50"), "%.1f", 1);
            fmt(ip99, sizeof ip99, num(d, "insert_latency_us", "p99"), "%.1f", 1);
            fmt(mg, sizeof mg, num(d, "merge_seconds", NULL), "%.3f", 1);
            fmt(st, sizeof st, num(d, "store_bytes", NULL), "%.1f", 1.0 / 1048576);
            fprintf(fp, "| %lld | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                    (long long)json_integer_value(json_object_get(d, "step")),
                    harness_jstr(d, "op"), range[0] ? range : "-", rec, pend, del, p50, p99, qps,
                    ips, ip50, ip99, mg, st);
        }
    }
    fprintf(fp, "\n");
    json_decref(done);
}

int harness_tables_render(const char *run_dir, FILE *fp)
{
    return harness_tables_render_opts(run_dir, NULL, fp);
}

int harness_tables_render_opts(const char *run_dir, const char *baseline, FILE *fp)
{
    json_t *cells = NULL;
    int rc = harness_cells_load(run_dir, &cells);
    if (rc)
        return rc;
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", run_dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    snprintf(path, sizeof path, "%s/machine.json", run_dir);
    json_t *machine = json_load_file(path, 0, NULL);
    long long k = cfg && json_is_integer(json_object_get(cfg, "k")) ? (long long)json_integer_value(json_object_get(cfg, "k")) : 10;
    render_header(fp, cfg, machine, cells, run_dir, k);
    /* a workload's step lines have their own table; the generic tables
     * below take the other records (a failed workload cell's among them) */
    json_t *steps = json_array(), *rest = json_array();
    {
        size_t wi;
        json_t *wc;
        json_array_foreach(cells, wi, wc)
            json_array_append(json_object_get(wc, "workload_cell") ? steps : rest, wc);
    }
    json_decref(cells);
    cells = rest;
    size_t n_steps = json_array_size(steps);
    /* a paper layout over workload steps (paper-cohere-updates) comes first */
    if (n_steps && cfg && json_object_get(cfg, "tables")) {
        if ((rc = harness_paper_render(cfg, steps, fp))) {
            json_decref(steps);
            json_decref(cfg);
            json_decref(machine);
            json_decref(cells);
            return rc;
        }
        fprintf(fp, "# Generic tables\n\n");
    }
    if (n_steps)
        render_workload(fp, steps, k);
    json_decref(steps);
    if (n_steps && !json_array_size(cells)) {
        json_decref(cfg);
        json_decref(machine);
        json_decref(cells);
        return 0;
    }
    harness_summary_render(cells, cfg, baseline, k, fp);
    if (!n_steps && cfg && json_object_get(cfg, "tables")) {
        if ((rc = harness_paper_render(cfg, cells, fp))) {
            json_decref(cfg);
            json_decref(machine);
            json_decref(cells);
            return rc;
        }
        fprintf(fp, "# Generic tables\n\n");
    }

    /* (a): a mode's columns only when the run measured that mode */
    int has_cold = 0, has_warm = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        if (!is_uncapped_ok(c))
            continue;
        has_cold |= !strcmp(harness_jstr(c, "mode"), "cold");
        has_warm |= !strcmp(harness_jstr(c, "mode"), "warm");
    }
    fprintf(fp, "## (a) Engines x effort\n\nLatency: one thread, median over repeats of each "
                "percentile. QPS: %s, the largest thread count run. Dev reads: read requests this "
                "cell's own cgroup sent to the disk during the latency passes, per query (`(disk)`: "
                "the cell ran outside a cgroup, and the figure is the whole disk's, other processes "
                "included); proc read: bytes this cell's process fetched from storage "
                "(/proc/self/io), per query.\n\n",
            has_warm ? "warm" : "cold");
    fprintf(fp, "| engine | build | open | search | recall@%lld |", k);
    if (has_cold)
        fprintf(fp, " cold p50 (us) | cold p99 (us) |");
    if (has_warm)
        fprintf(fp, " warm p50 (us) | warm p99 (us) |");
    fprintf(fp, " QPS | threads |");
    if (has_cold)
        fprintf(fp, " dev reads/q cold |");
    if (has_warm)
        fprintf(fp, " dev reads/q warm |");
    if (has_cold)
        fprintf(fp, " proc read KiB/q cold |");
    if (has_warm)
        fprintf(fp, " proc read KiB/q warm |");
    fprintf(fp, " engine reads/q |\n|---|---|---|---|--:|");
    int modes = has_cold + has_warm;
    for (int j = 0; j < 2 * modes + 2 + 2 * modes + 1; j++)
        fprintf(fp, "--:|");
    fprintf(fp, "\n");
    json_t *keys = rows(cells, 0, 0, is_uncapped_ok);
    json_t *kv;
    int disk_marked = 0;
    json_t *engines_seen = json_object();
    json_array_foreach(keys, i, kv) {
        const char *key = json_string_value(kv);
        const json_t *cold = find_lat(cells, key, "cold"), *warm = find_lat(cells, key, "warm");
        const json_t *any = warm ? warm : cold;
        const json_t *q = find(cells, key, 0, 0, "warm", is_uncapped_ok, 1);
        if (!q)
            q = find(cells, key, 0, 0, "cold", is_uncapped_ok, 1);
        json_object_set_new(engines_seen, harness_jstr(any, "engine"), json_true());
        char r[32], c50[32], c99[32], w50[32], w99[32], qps[32], dc[48], dw[48], er[32], bc[32], bw[32];
        fmt(r, sizeof r, num(any, "recall", NULL), "%.3f", 1);
        fmt(c50, sizeof c50, num(cold, "latency_us", "p50"), "%.0f", 1);
        fmt(c99, sizeof c99, num(cold, "latency_us", "p99"), "%.0f", 1);
        fmt(w50, sizeof w50, num(warm, "latency_us", "p50"), "%.0f", 1);
        fmt(w99, sizeof w99, num(warm, "latency_us", "p99"), "%.0f", 1);
        fmt(qps, sizeof qps, num(q, "qps", NULL), "%.0f", 1);
        if (cold)
            dev_reads(dc, sizeof dc, cold, &disk_marked);
        else
            snprintf(dc, sizeof dc, "-");
        if (warm)
            dev_reads(dw, sizeof dw, warm, &disk_marked);
        else
            snprintf(dw, sizeof dw, "-");
        fmt(er, sizeof er, num(any, "engine_stats", "reads"), "%.2f", 1);
        fmt(bc, sizeof bc, num(cold, "device", "proc_read_bytes_per_query"), "%.1f", 1.0 / 1024);
        fmt(bw, sizeof bw, num(warm, "device", "proc_read_bytes_per_query"), "%.1f", 1.0 / 1024);
        engine_cols(fp, any);
        char pm[64] = "";
        const json_t *marked[3] = { cold, warm, q };
        for (int m = 0; m < 3 && !pm[0]; m++)
            partial_mark(pm, sizeof pm, marked[m]);
        fprintf(fp, "| %s%s |", r, pm);
        if (has_cold)
            fprintf(fp, " %s | %s |", c50, c99);
        if (has_warm)
            fprintf(fp, " %s | %s |", w50, w99);
        fprintf(fp, " %s | %lld |", qps, q ? (long long)json_integer_value(json_object_get(q, "threads")) : 0LL);
        if (has_cold)
            fprintf(fp, " %s |", dc);
        if (has_warm)
            fprintf(fp, " %s |", dw);
        if (has_cold)
            fprintf(fp, " %s |", bc);
        if (has_warm)
            fprintf(fp, " %s |", bw);
        fprintf(fp, " %s |\n", er);
    }
    if (json_array_size(keys) == 0)
        fprintf(fp, "| (no finished uncapped cells) |||||||||||||||\n");
    json_decref(keys);
    /* notes: the caveats machine.json records for the engines in the table */
    const json_t *notes = json_object_get(machine, "engine_notes");
    const char *nk;
    json_t *nv;
    int noted = 0;
    json_object_foreach((json_t *)notes, nk, nv) {
        if (!json_object_get(engines_seen, nk) || !json_is_string(nv))
            continue;
        fprintf(fp, "%s- %s: %s\n", noted ? "" : "\nNotes:\n\n", nk, json_string_value(nv));
        noted = 1;
    }
    if (disk_marked)
        fprintf(fp, "%s- `(disk)`: no cgroup of its own for this cell, so the disk's counter, "
                    "which counts every process's reads\n",
                noted ? "" : "\nNotes:\n\n");
    json_decref(engines_seen);

    /* (b) */
    fprintf(fp, "\n## (b) Memory caps\n\n");
    keys = rows(cells, 1, 1, is_capped);
    if (json_array_size(keys) == 0) {
        fprintf(fp, "(no memory caps in this run)\n");
    } else {
        fprintf(fp, "| engine | build | open | search | mode | cap (MiB) | status | recall@%lld | p50 (us) | QPS | dev reads/q | cgroup reads/q |\n", k);
        fprintf(fp, "|---|---|---|---|---|--:|---|--:|--:|--:|--:|--:|\n");
        json_array_foreach(keys, i, kv) {
            const json_t *cc = find(cells, json_string_value(kv), 1, 1, NULL, is_capped, 1);
            char r[32], p50[32], qps[32], dr[32], cr[32], cap[32];
            fmt(r, sizeof r, num(cc, "recall", NULL), "%.3f", 1);
            fmt(p50, sizeof p50, num(cc, "latency_us", "p50"), "%.0f", 1);
            fmt(qps, sizeof qps, num(cc, "qps", NULL), "%.0f", 1);
            fmt(dr, sizeof dr, num(cc, "device", "reads_per_query"), "%.2f", 1);
            fmt(cr, sizeof cr, num(json_object_get(cc, "device"), "cgroup", "reads_per_query"), "%.2f", 1);
            fmt(cap, sizeof cap, num(cc, "memory_cap_bytes", NULL), "%.0f", 1.0 / 1048576);
            char pm[64];
            partial_mark(pm, sizeof pm, cc);
            engine_cols(fp, cc);
            fprintf(fp, "| %s | %s | %s%s | %s | %s | %s | %s | %s |\n", harness_jstr(cc, "mode"),
                    cap, harness_jstr(cc, "status"), pm, r, p50, qps, dr, cr);
        }
    }
    json_decref(keys);

    /* (c) */
    fprintf(fp, "\n## (c) Peak memory of the measured phase\n\n");
    fprintf(fp, "| engine | build | open | search | mode | peak RSS (MiB) | anon (MiB) | file (MiB) |\n");
    fprintf(fp, "|---|---|---|---|---|--:|--:|--:|\n");
    keys = rows(cells, 1, 0, is_uncapped_ok);
    json_array_foreach(keys, i, kv) {
        const json_t *cc = find(cells, json_string_value(kv), 1, 0, NULL, is_uncapped_ok, 1);
        char p[32], a[32], f[32];
        fmt(p, sizeof p, num(cc, "memory", "peak_rss_bytes"), "%.1f", 1.0 / 1048576);
        fmt(a, sizeof a, num(cc, "memory", "peak_anon_bytes"), "%.1f", 1.0 / 1048576);
        fmt(f, sizeof f, num(cc, "memory", "peak_file_bytes"), "%.1f", 1.0 / 1048576);
        engine_cols(fp, cc);
        fprintf(fp, "| %s | %s | %s | %s |\n", harness_jstr(cc, "mode"), p, a, f);
    }
    json_decref(keys);

    /* (d) */
    fprintf(fp, "\n## (d) Build cost\n\n");
    fprintf(fp, "| engine | build | wall (s) | CPU (s) | peak RSS (MiB) | on disk (MiB) | reused |\n");
    fprintf(fp, "|---|---|--:|--:|--:|--:|---|\n");
    json_t *seen = json_object();
    int any_reused = 0, any_cached = 0;
    json_array_foreach(cells, i, c) {
        const json_t *ix = json_object_get(c, "index");
        if (!json_is_object(ix))
            continue;
        const char *dir = harness_jstr(ix, "dir");
        if (json_object_get(seen, dir))
            continue;
        json_object_set_new(seen, dir, json_true());
        char w[32], cpu[32], rss[32], disk[32], reused[96] = "";
        fmt(w, sizeof w, num(ix, "build_seconds", NULL), "%.2f", 1);
        fmt(cpu, sizeof cpu, num(ix, "build_cpu_seconds", NULL), "%.2f", 1);
        fmt(rss, sizeof rss, num(ix, "build_peak_rss_bytes", NULL), "%.1f", 1.0 / 1048576);
        fmt(disk, sizeof disk, num(ix, "bytes_on_disk", NULL), "%.1f", 1.0 / 1048576);
        /* what the build took from the shared artifacts instead of computing it */
        size_t j, used = 0;
        const json_t *a;
        json_array_foreach(json_object_get(ix, "reused"), j, a)
            if (json_is_string(a) && used < sizeof reused)
                used += (size_t)snprintf(reused + used, sizeof reused - used, "%s%s", used ? ", " : "",
                                         json_string_value(a));
        any_reused |= used > 0;
        if (json_is_true(json_object_get(ix, "cached_at_run")) && used < sizeof reused) {
            used += (size_t)snprintf(reused + used, sizeof reused - used, "%sindex built earlier",
                                     used ? "; " : "");
            any_cached = 1;
        }
        char *b = compact(json_object_get(c, "build"));
        fprintf(fp, "| %s | %s | %s | %s | %s | %s | %s |\n", harness_jstr(c, "label"), b, w, cpu, rss, disk,
                used ? reused : "-");
        free(b);
    }
    json_decref(seen);
    if (any_reused)
        fprintf(fp, "\n`pq`, `graph`: taken from the shared artifact cache (`<index_root>/artifacts`), "
                    "built for another engine of the same graph; the wall and CPU time leave that "
                    "work out.\n");
    if (any_cached)
        fprintf(fp, "%s`index built earlier`: the index came from the build cache; its figures are "
                    "those of the run that built it.\n",
                any_reused ? "" : "\n");

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
        fprintf(fp, "| %s | %s | %s | %lld | %s | %s |\n", harness_jstr(c, "label"), s, harness_jstr(c, "mode"),
                (long long)json_integer_value(json_object_get(c, "threads")), harness_jstr(c, "status"),
                harness_jstr(c, "reason"));
        free(s);
    }
    json_decref(cfg);
    json_decref(machine);
    json_decref(cells);
    return 0;
}

int harness_table_main(int argc, char **argv)
{
    const char *run = NULL, *baseline = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--baseline") && i + 1 < argc)
            baseline = argv[++i];
        else if (argv[i][0] == '-' || run) {
            fprintf(stderr, "annlab table: unexpected argument '%s'\nusage: annlab table RUN_DIR "
                            "[--baseline LABEL]\n",
                    argv[i]);
            return 2;
        } else
            run = argv[i];
    }
    if (!run) {
        fprintf(stderr, "usage: annlab table RUN_DIR [--baseline LABEL]\n");
        return 2;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/cells.jsonl", run);
    FILE *probe = fopen(path, "re");
    if (!probe) {
        fprintf(stderr, "annlab table: %s: not a run directory (no cells.jsonl)\n", run);
        return 1;
    }
    fclose(probe);
    snprintf(path, sizeof path, "%s/tables.md", run);
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "we");
    int rc = f ? harness_tables_render_opts(run, baseline, f) : ann_fail_errno("%s: create", tmp);
    if (f && fclose(f) != 0 && !rc)
        rc = ann_fail_errno("%s: write", tmp);
    if (!rc && rename(tmp, path) != 0)
        rc = ann_fail_errno("%s: rename", path);
    if (rc) {
        unlink(tmp);
        fprintf(stderr, "annlab table: %s\n", ann_errmsg(rc));
        return 1;
    }
    harness_tables_render_opts(run, baseline, stdout);
    return 0;
}
