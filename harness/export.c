/*
 * export.c: `annlab export`, a run's cells as other tools' result files
 * (formats in export.h).  Each format follows the tool's own code, not its
 * documentation: ann-benchmarks' results.py store_results and runner.py
 * (attributes, dataset types, -1/inf padding, best_search_time = the best
 * run's mean seconds per query) with plotting/metrics.py (k-nn recall is
 * recomputed from our distances against the dataset's, so distances are in
 * its convention: Euclidean, not squared; 1 - cos for angular);
 * big-ann-benchmarks' benchmark/plotting/metrics.py and data_export.py
 * (mean_latency in microseconds, indexsize in kB, distcomps per query);
 * VectorDBBench's models.py TestResult and metric.py Metric (latencies in
 * seconds, recall and ndcg by serial_runner's rules on ids).
 *
 * One exported entry is one parameter set and mode: cells that differ only
 * in their QPS thread count are one entry, whose latency and per-query
 * results come from the cell with the fewest threads and whose QPS is the
 * best over thread counts.  Capped and unfinished cells are left out.
 */
#include "harness/export.h"

#include "datasets/bundle.h"
#include "engines/core/exact.h"
#include "engines/core/fileio.h"
#include "engines/core/status.h"
#include "harness/run.h"

#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct ex_entry {
    const json_t *cell; /* fewest threads: latency pass and per-query results */
    json_t *threads;    /* thread counts of the entry's cells, ascending as met */
    json_t *qps;        /* QPS at each */
    double qps_best;
} ex_entry;

typedef struct ex_ctx {
    const char *run_dir;
    json_t *cells, *cfg, *machine;
    ex_entry *e;
    size_t n;
    ann_bundle ds;
    int ds_open;
    ann_vecsrc *base;
    float *queries;
    ann_gt gt;
    int gt_loaded;
} ex_ctx;

int harness_export_format_parse(const char *name, harness_export_format *fmt)
{
    if (!strcmp(name, "ann-benchmarks"))
        *fmt = HARNESS_EXPORT_ANN_BENCHMARKS;
    else if (!strcmp(name, "big-ann"))
        *fmt = HARNESS_EXPORT_BIG_ANN;
    else if (!strcmp(name, "vectordbbench"))
        *fmt = HARNESS_EXPORT_VECTORDBBENCH;
    else
        return -1;
    return 0;
}

/* "R=64 L_build=100" from a parameter object ("" when empty). */
static void params_text(const json_t *obj, char *buf, size_t len)
{
    buf[0] = '\0';
    char *s = json_is_object(obj) && json_object_size(obj)
                  ? json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS)
                  : NULL;
    if (!s)
        return;
    size_t w = 0;
    for (const char *p = s; *p && w + 1 < len; p++) {
        if (*p == '{' || *p == '}' || *p == '"')
            continue;
        buf[w++] = *p == ':' ? '=' : *p == ',' ? ' ' : *p;
    }
    buf[w] = '\0';
    free(s);
}

/* "label (R=64 L_build=100, io=buffered, L=50)": the parameters of a cell. */
static void cell_name(const json_t *c, char *buf, size_t len)
{
    char b[512], o[512], s[512];
    params_text(json_object_get(c, "build"), b, sizeof b);
    params_text(json_object_get(c, "open"), o, sizeof o);
    /* what a target recall found, when it did (harness/tune.h) */
    const json_t *used = json_object_get(c, "search_used");
    params_text(json_is_object(used) ? used : json_object_get(c, "search"), s, sizeof s);
    const char *parts[3] = { b, o, s };
    size_t w = (size_t)snprintf(buf, len, "%s (", harness_jstr(c, "label"));
    int any = 0;
    for (int i = 0; i < 3 && w < len; i++)
        if (parts[i][0]) {
            w += (size_t)snprintf(buf + w, len - w, "%s%s", any ? ", " : "", parts[i]);
            any = 1;
        }
    if (w < len)
        snprintf(buf + w, len - w, "%s%s", any ? "" : "defaults", ")");
}

/* The algorithm name: the label, "-cold" for cold cells (ann-benchmarks
 * and big-ann compare algorithms, and a cold curve is another one). */
static void algo_name(const json_t *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", harness_jstr(c, "label"), !strcmp(harness_jstr(c, "mode"), "cold") ? "-cold" : "");
    for (char *p = buf; *p; p++)
        if (*p == '/')
            *p = '_';
}

static void ex_fini(ex_ctx *x)
{
    for (size_t i = 0; i < x->n; i++) {
        json_decref(x->e[i].threads);
        json_decref(x->e[i].qps);
    }
    free(x->e);
    json_decref(x->cells);
    json_decref(x->cfg);
    json_decref(x->machine);
    ann_vecsrc_destroy(x->base);
    free(x->queries);
    if (x->gt_loaded)
        ann_gt_free(&x->gt);
    if (x->ds_open)
        ann_bundle_close(&x->ds);
}

static int ex_load(ex_ctx *x, const char *run_dir)
{
    char path[4200];
    x->run_dir = run_dir;
    snprintf(path, sizeof path, "%s/cells.jsonl", run_dir);
    if (access(path, R_OK) != 0)
        return ann_fail(ANN_ENOTFOUND, "%s: not a run directory (no cells.jsonl)", run_dir);
    int rc = harness_cells_load(run_dir, &x->cells);
    if (rc)
        return rc;
    snprintf(path, sizeof path, "%s/config.json", run_dir);
    x->cfg = json_load_file(path, 0, NULL);
    snprintf(path, sizeof path, "%s/machine.json", run_dir);
    x->machine = json_load_file(path, 0, NULL);
    /* group finished uncapped cells by parameters and mode */
    json_t *index = json_object();
    x->e = calloc(json_array_size(x->cells) + 1, sizeof *x->e);
    if (!index || !x->e) {
        json_decref(index);
        return ann_fail(-ENOMEM, "export: no memory");
    }
    size_t i;
    json_t *c;
    json_array_foreach(x->cells, i, c) {
        if (strcmp(harness_jstr(c, "status"), "ok") || !json_is_null(json_object_get(c, "memory_cap_bytes")))
            continue;
        /* a workload's step lines: no static result to export (configs/README.md) */
        if (json_object_get(c, "workload_cell"))
            continue;
        json_t *k = json_pack("[O?, O?, O?, O?, O?]", json_object_get(c, "label"), json_object_get(c, "build"),
                              json_object_get(c, "open"), json_object_get(c, "search"),
                              json_object_get(c, "mode"));
        char *ks = k ? json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
        json_decref(k);
        if (!ks) {
            json_decref(index);
            return ann_fail(-ENOMEM, "export: no memory");
        }
        json_t *at = json_object_get(index, ks);
        ex_entry *e;
        if (!at) {
            e = &x->e[x->n];
            json_object_set_new(index, ks, json_integer((json_int_t)x->n++));
            e->threads = json_array();
            e->qps = json_array();
        } else {
            e = &x->e[json_integer_value(at)];
        }
        free(ks);
        json_int_t t = json_integer_value(json_object_get(c, "threads"));
        if (!e->cell || t < json_integer_value(json_object_get(e->cell, "threads")))
            e->cell = c;
        double q = harness_jnum(c, "qps", NULL);
        json_array_append_new(e->threads, json_integer(t));
        json_array_append_new(e->qps, json_real(isfinite(q) ? q : 0));
        if (isfinite(q) && q > e->qps_best)
            e->qps_best = q;
    }
    json_decref(index);
    if (x->n == 0)
        return ann_fail(ANN_ENOTFOUND, "%s: no finished uncapped cell to export", run_dir);
    return 0;
}

/* The dataset bundle the run measured (machine.json's dataset.dir), with
 * its base, queries and ground truth. */
static int ex_bundle(ex_ctx *x)
{
    if (x->ds_open)
        return 0;
    const char *dir = harness_jstr(json_object_get(x->machine, "dataset"), "dir");
    if (!dir[0])
        return ann_fail(ANN_ENOTFOUND, "%s/machine.json: names no dataset directory", x->run_dir);
    int rc = ann_bundle_open(dir, &x->ds);
    if (rc)
        return ann_fail_wrap(rc, "%s/machine.json: dataset %s (run the export from the directory "
                                 "the run was made in)",
                             x->run_dir, dir);
    x->ds_open = 1;
    if ((rc = ann_bundle_base(&x->ds, &x->base)) || (rc = ann_bundle_queries(&x->ds, &x->queries)) ||
        (rc = ann_bundle_gt(&x->ds, &x->gt)))
        return rc;
    x->gt_loaded = 1;
    return 0;
}

/* The ids each query of the cell returned (neighbors/<id>.ibin). */
static int ex_neighbors(const ex_ctx *x, const json_t *c, ann_gt *g)
{
    const char *rel = harness_jstr(c, "neighbors_file");
    memset(g, 0, sizeof *g);
    if (!rel[0])
        return ann_fail(ANN_EDATA,
                        "%s: cell %s has no per-query results (runs before 2026-12-02 did not keep "
                        "them): run it again to export it",
                        x->run_dir, harness_jstr(c, "id"));
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", x->run_dir, rel);
    return ann_gt_load(path, 0, g);
}

/*
 * The latencies of the cell's best repeat (smallest mean), in seconds:
 * ann-benchmarks keeps the best of run_count runs.  *times (malloc'd) has
 * *nq entries; *best_s is that repeat's mean, *runs the repeats seen.
 */
static int ex_times(const ex_ctx *x, const json_t *c, float **times, uint32_t *nq, double *best_s,
                    uint32_t *runs)
{
    *times = NULL;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", x->run_dir, harness_jstr(c, "latency_file"));
    FILE *f = harness_jstr(c, "latency_file")[0] ? fopen(path, "re") : NULL;
    if (!f)
        return ann_fail(ANN_EDATA, "%s: cell %s: no latency file %s", x->run_dir, harness_jstr(c, "id"), path);
    uint32_t n = (uint32_t)json_integer_value(json_object_get(c, "queries"));
    uint32_t reps = (uint32_t)json_integer_value(json_object_get(c, "repeats"));
    if (reps == 0)
        reps = 1;
    double *ns = calloc((size_t)n * reps + 1, sizeof *ns);
    int rc = 0;
    if (!ns) {
        fclose(f);
        return ann_fail(-ENOMEM, "export: no memory");
    }
    char line[256];
    size_t lines = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned r, q;
        unsigned long long v;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "%u %u %llu", &r, &q, &v) != 3 || r >= reps || q >= n) {
            rc = ann_fail(ANN_ECORRUPT, "%s: line %zu: want \"repeat query ns\" within %u x %u", path,
                          lines + 1, reps, n);
            break;
        }
        ns[(size_t)r * n + q] = (double)v;
        lines++;
    }
    fclose(f);
    if (!rc && lines != (size_t)n * reps)
        rc = ann_fail(ANN_ECORRUPT, "%s: %zu latencies, want %u queries x %u repeats", path, lines, n,
                      reps);
    if (rc) {
        free(ns);
        return rc;
    }
    uint32_t best = 0;
    double best_mean = INFINITY;
    for (uint32_t r = 0; r < reps; r++) {
        double s = 0;
        for (uint32_t q = 0; q < n; q++)
            s += ns[(size_t)r * n + q];
        if (n && s / n < best_mean) {
            best_mean = s / n;
            best = r;
        }
    }
    *times = malloc((n ? n : 1) * sizeof **times);
    if (!*times) {
        free(ns);
        return ann_fail(-ENOMEM, "export: no memory");
    }
    for (uint32_t q = 0; q < n; q++)
        (*times)[q] = (float)(ns[(size_t)best * n + q] / 1e9);
    *nq = n;
    *best_s = best_mean / 1e9;
    *runs = reps;
    free(ns);
    return 0;
}

/* ---- ann-benchmarks ------------------------------------------------------ */

/* A string attribute as h5py writes a Python str: scalar, variable length, UTF-8. */
static int h5_attr_str(hid_t loc, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR), a = -1;
    int ok = t >= 0 && s >= 0 && H5Tset_size(t, H5T_VARIABLE) >= 0 &&
             H5Tset_cset(t, H5T_CSET_UTF8) >= 0 &&
             (a = H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT)) >= 0 &&
             H5Awrite(a, t, &value) >= 0;
    if (a >= 0)
        H5Aclose(a);
    if (s >= 0)
        H5Sclose(s);
    if (t >= 0)
        H5Tclose(t);
    return ok ? 0 : -1;
}

/* A scalar number attribute: file type ftype (float64 or int64, as h5py
 * writes Python floats and ints), memory type mtype. */
static int h5_attr_num(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *v)
{
    hid_t s = H5Screate(H5S_SCALAR), a = -1;
    int ok = s >= 0 && (a = H5Acreate2(loc, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT)) >= 0 &&
             H5Awrite(a, mtype, v) >= 0;
    if (a >= 0)
        H5Aclose(a);
    if (s >= 0)
        H5Sclose(s);
    return ok ? 0 : -1;
}

static int h5_attr_f64(hid_t loc, const char *name, double v)
{
    return h5_attr_num(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

static int h5_attr_i64(hid_t loc, const char *name, long long v)
{
    int64_t x = v;
    return h5_attr_num(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &x);
}

/* A bool attribute as h5py writes numpy.bool_: an int8 enum FALSE = 0, TRUE = 1. */
static int h5_attr_bool(hid_t loc, const char *name, int v)
{
    int8_t f = 0, t = 1, x = v ? 1 : 0;
    hid_t e = H5Tenum_create(H5T_NATIVE_INT8);
    int ok = e >= 0 && H5Tenum_insert(e, "FALSE", &f) >= 0 && H5Tenum_insert(e, "TRUE", &t) >= 0 &&
             h5_attr_num(loc, name, e, e, &x) == 0;
    if (e >= 0)
        H5Tclose(e);
    return ok ? 0 : -1;
}

static int h5_dataset(hid_t f, const char *name, hid_t ftype, hid_t mtype, int rank,
                      const hsize_t *dims, const void *data)
{
    hid_t s = H5Screate_simple(rank, dims, NULL), d = -1;
    int ok = s >= 0 &&
             (d = H5Dcreate2(f, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) >= 0 &&
             H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
    if (d >= 0)
        H5Dclose(d);
    if (s >= 0)
        H5Sclose(s);
    return ok ? 0 : -1;
}

/* ann-benchmarks' file name: re.sub(r"\W+", "_", json.dumps(args)).strip("_"). */
static void ab_file_name(const json_t *c, char *buf, size_t len)
{
    const json_t *used = json_object_get(c, "search_used");
    json_t *args = json_pack("[O?, O?, O?]", json_object_get(c, "build"), json_object_get(c, "open"),
                             json_is_object(used) ? used : json_object_get(c, "search"));
    char *s = args ? json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(args);
    size_t w = 0;
    int gap = 0;
    for (const char *p = s ? s : ""; *p && w + 8 < len; p++) {
        int word = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                   *p == '_';
        if (!word) {
            gap = 1;
            continue;
        }
        if (gap && w)
            buf[w++] = '_';
        gap = 0;
        buf[w++] = *p;
    }
    if (w == 0)
        w = (size_t)snprintf(buf, len, "defaults");
    snprintf(buf + w, len - w, ".hdf5");
    free(s);
}

static int write_ann_benchmarks(ex_ctx *x, const ex_entry *e, const char *out_dir, FILE *log)
{
    const json_t *c = e->cell;
    int rc = ex_bundle(x);
    if (rc)
        return rc;
    ann_gt g;
    float *times = NULL, *dists = NULL, *row = NULL;
    int32_t *ids = NULL;
    uint32_t nq = 0, runs = 1;
    double best_s = 0;
    hid_t f = -1;
    char algo[256], name[2048], dir[4600], file[600], path[5300], tmp[5400] = "";
    if ((rc = ex_neighbors(x, c, &g)))
        return rc;
    if ((rc = ex_times(x, c, &times, &nq, &best_s, &runs)))
        goto out;
    if (g.nq != nq || nq > x->ds.nq) {
        rc = ann_fail(ANN_ECORRUPT, "%s: cell %s: %u per-query results for %u queries (dataset: %u)",
                      x->run_dir, harness_jstr(c, "id"), g.nq, nq, x->ds.nq);
        goto out;
    }
    uint32_t k = g.k, dim = x->ds.dim;
    dists = malloc((size_t)nq * k * sizeof *dists + 1);
    ids = malloc((size_t)nq * k * sizeof *ids + 1);
    row = malloc((size_t)dim * sizeof *row);
    if (!dists || !ids || !row) {
        rc = ann_fail(-ENOMEM, "export: no memory");
        goto out;
    }
    double returned = 0;
    for (uint32_t q = 0; q < nq; q++)
        for (uint32_t r = 0; r < k; r++) {
            int32_t id = g.ids[(size_t)q * k + r];
            ids[(size_t)q * k + r] = id;
            if (id < 0) {
                dists[(size_t)q * k + r] = INFINITY;
                continue;
            }
            if ((uint64_t)id >= x->ds.n) {
                rc = ann_fail(ANN_ECORRUPT, "%s: cell %s: query %u rank %u: id %d beyond the %llu base "
                                            "vectors",
                              x->run_dir, harness_jstr(c, "id"), q, r, id, (unsigned long long)x->ds.n);
                goto out;
            }
            if ((rc = ann_vecsrc_read(x->base, (uint64_t)id, 1, row)))
                goto out;
            double d = ann_distance_f64(x->ds.metric, x->queries + (size_t)q * dim, row, dim);
            /* ann-benchmarks: Euclidean distance (bundles: squared); angular 1 - cos
             * (bundles: the same, of normalised vectors) */
            dists[(size_t)q * k + r] = (float)(x->ds.metric == ANN_METRIC_L2 ? sqrt(d > 0 ? d : 0) : d);
            returned++;
        }
    algo_name(c, algo, sizeof algo);
    cell_name(c, name, sizeof name);
    snprintf(dir, sizeof dir, "%s/results/%s/%u/%s", out_dir, x->ds.name, k, algo);
    if ((rc = ann_mkdir_p(dir, 0755, "mkdir")))
        goto out;
    ab_file_name(c, file, sizeof file);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const char *distance = x->ds.metric == ANN_METRIC_L2       ? "euclidean"
                           : x->ds.metric == ANN_METRIC_COSINE ? "angular"
                                                               : "ip";
    double per_query_comps = harness_jnum(c, "engine_stats", "full_dists") + harness_jnum(c, "engine_stats", "code_dists");
    double rss = harness_jnum(c, "memory", "peak_rss_bytes"), build = harness_jnum(c, "index", "build_seconds");
    hsize_t d1[1] = { nq }, d2[2] = { nq, k };
    if (f < 0 || h5_attr_bool(f, "batch_mode", 0) || h5_attr_f64(f, "best_search_time", best_s) ||
        h5_attr_f64(f, "candidates", returned / (nq ? nq : 1)) || h5_attr_bool(f, "expect_extra", 0) ||
        h5_attr_str(f, "name", name) || h5_attr_i64(f, "run_count", runs) ||
        h5_attr_str(f, "distance", distance) || h5_attr_i64(f, "count", k) ||
        h5_attr_f64(f, "build_time", isfinite(build) ? build : -1) ||
        h5_attr_f64(f, "index_size", isfinite(rss) ? rss / 1024.0 : 0) ||
        h5_attr_str(f, "algo", algo) || h5_attr_str(f, "dataset", x->ds.name) ||
        h5_attr_f64(f, "dist_comps", isfinite(per_query_comps) ? per_query_comps * nq * runs : 0) ||
        h5_attr_str(f, "annlab_cell", harness_jstr(c, "id")) || h5_attr_str(f, "annlab_mode", harness_jstr(c, "mode")) ||
        h5_attr_f64(f, "annlab_recall", harness_jnum(c, "recall", NULL)) ||
        h5_dataset(f, "times", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, d1, times) ||
        h5_dataset(f, "neighbors", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, d2, ids) ||
        h5_dataset(f, "distances", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, d2, dists)) {
        rc = ann_fail(-EIO, "%s: libhdf5 cannot write it", tmp);
        goto out;
    }
    herr_t closed = H5Fclose(f);
    f = -1;
    if (closed < 0 || rename(tmp, path) != 0) {
        rc = closed < 0 ? ann_fail(-EIO, "%s: libhdf5 cannot close it", tmp)
                        : ann_fail_errno("%s: rename", path);
        goto out;
    }
    if (log)
        fprintf(log, "%s\n", path);
out:
    if (f >= 0)
        H5Fclose(f);
    if (rc && tmp[0])
        unlink(tmp);
    ann_gt_free(&g);
    free(times);
    free(dists);
    free(ids);
    free(row);
    return rc;
}

/* ---- big-ann-benchmarks --------------------------------------------------- */

/* A CSV field (RFC 4180: quoted when it holds a comma, quote or newline). */
static void csv_field(FILE *f, const char *s, int last)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

static void csv_num(FILE *f, double v, int last)
{
    char buf[64];
    if (isfinite(v))
        snprintf(buf, sizeof buf, "%.10g", v);
    else
        buf[0] = '\0'; /* not measured: an empty field, never a number */
    csv_field(f, buf, last);
}

static int write_big_ann(ex_ctx *x, const char *out_dir, FILE *log)
{
    char path[4400], tmp[4500];
    const char *run = x->cfg ? harness_jstr(x->cfg, "name") : "";
    snprintf(path, sizeof path, "%s/%s.csv", out_dir, run[0] ? run : "run");
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "we");
    if (!f)
        return ann_fail_errno("%s: create", tmp);
    fputs("algorithm,parameters,dataset,count,qps,distcomps,build,indexsize,mean_ssd_ios,"
          "mean_latency,recall\n",
          f);
    for (size_t i = 0; i < x->n; i++) {
        const json_t *c = x->e[i].cell;
        char algo[256], name[2048];
        algo_name(c, algo, sizeof algo);
        cell_name(c, name, sizeof name);
        /* SSD reads: the cell's own cgroup's device reads when recorded,
         * else what the engine counted */
        double ios = harness_jnum(json_object_get(c, "device"), "cgroup", "reads_per_query");
        if (!isfinite(ios))
            ios = harness_jnum(c, "engine_stats", "reads");
        csv_field(f, algo, 0);
        csv_field(f, name, 0);
        csv_field(f, harness_jstr(json_object_get(c, "dataset"), "name"), 0);
        csv_num(f, harness_jnum(c, "k", NULL), 0);
        csv_num(f, x->e[i].qps_best, 0);
        csv_num(f, harness_jnum(c, "engine_stats", "full_dists") + harness_jnum(c, "engine_stats", "code_dists"), 0);
        csv_num(f, harness_jnum(c, "index", "build_seconds"), 0);
        csv_num(f, harness_jnum(c, "memory", "peak_rss_bytes") / 1024.0, 0);
        csv_num(f, ios, 0);
        csv_num(f, harness_jnum(c, "latency_us", "mean"), 0);
        csv_num(f, harness_jnum(c, "recall", NULL), 1);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        int rc = ann_fail_errno("%s: write", path);
        unlink(tmp);
        return rc;
    }
    if (log)
        fprintf(log, "%s\n", path);
    return 0;
}

/* ---- VectorDBBench ------------------------------------------------------ */

/* VectorDBBench's serial_runner: calc_ndcg(gt[:k], got, ideal_dcg(k)),
 * averaged over queries; returned ids are taken as a set. */
static double ndcg_of(const ann_gt *got, const ann_gt *gt, uint32_t k)
{
    double ideal = 0, sum = 0;
    for (uint32_t i = 0; i < k; i++)
        ideal += 1.0 / log2(i + 2.0);
    for (uint32_t q = 0; q < got->nq; q++) {
        double dcg = 0;
        const int32_t *row = got->ids + (size_t)q * got->k;
        const int32_t *truth = gt->ids + (size_t)q * gt->k;
        for (uint32_t r = 0; r < got->k; r++) {
            if (row[r] < 0)
                continue;
            int dup = 0;
            for (uint32_t s = 0; s < r && !dup; s++)
                dup = row[s] == row[r];
            for (uint32_t t = 0; t < k && !dup; t++)
                if (truth[t] == row[r]) {
                    dcg += 1.0 / log2(t + 2.0);
                    break;
                }
        }
        sum += dcg / ideal;
    }
    return got->nq ? sum / got->nq : 0;
}

static const char *vdb_metric(ann_metric m)
{
    return m == ANN_METRIC_L2 ? "L2" : m == ANN_METRIC_COSINE ? "COSINE" : "IP";
}

static int write_vectordbbench(ex_ctx *x, const char *out_dir, FILE *log)
{
    int rc = ex_bundle(x);
    if (rc)
        return rc;
    const char *run = x->cfg ? harness_jstr(x->cfg, "name") : "";
    if (!run[0])
        run = "run";
    const char *commit = harness_jstr(x->machine, "git_commit");
    json_t *results = json_array(), *top = NULL;
    double last = 0;
    for (size_t i = 0; i < x->n && !rc; i++) {
        const json_t *c = x->e[i].cell;
        ann_gt g;
        if ((rc = ex_neighbors(x, c, &g)))
            break;
        uint32_t k = (uint32_t)harness_jnum(c, "k", NULL);
        if (g.nq > x->gt.nq || k > x->gt.k || k == 0) {
            rc = ann_fail(ANN_ECORRUPT, "%s: cell %s: %u queries at k=%u, ground truth %u x %u",
                          x->run_dir, harness_jstr(c, "id"), g.nq, k, x->gt.nq, x->gt.k);
            ann_gt_free(&g);
            break;
        }
        double ndcg = ndcg_of(&g, &x->gt, k);
        ann_gt_free(&g);
        char label[256];
        algo_name(c, label, sizeof label);
        double build = harness_jnum(c, "index", "build_seconds"), p99 = harness_jnum(c, "latency_us", "p99"),
               p95 = harness_jnum(c, "latency_us", "p95");
        double fin = harness_jnum(c, "finished_at", NULL);
        if (isfinite(fin) && fin > last)
            last = fin;
        json_t *case_cfg = json_pack(
            "{s:s, s:s, s:O?, s:O?, s:O?}", "index", harness_jstr(c, "engine"), "metric_type",
            vdb_metric(x->ds.metric), "annlab_build", json_object_get(c, "build"), "annlab_open",
            json_object_get(c, "open"), "annlab_search", json_object_get(c, "search"));
        json_t *metrics = json_pack(
            "{s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:O, s:O, s:[], s:[]}",
            "max_load_count", 0, "insert_duration", isfinite(build) ? build : 0.0,
            "optimize_duration", 0.0, "load_duration", isfinite(build) ? build : 0.0, "qps",
            x->e[i].qps_best, "serial_latency_p99", isfinite(p99) ? p99 / 1e6 : 0.0,
            "serial_latency_p95", isfinite(p95) ? p95 / 1e6 : 0.0, "recall",
            harness_jnum(c, "recall_plain", NULL), "ndcg", ndcg, "mrr", 0.0, "conc_num_list",
            x->e[i].threads, "conc_qps_list", x->e[i].qps, "conc_latency_p99_list",
            "conc_latency_avg_list");
        char note[600];
        snprintf(note, sizeof note, "annlab run %s, %s cell %s; load_duration is the index build",
                 x->run_dir, harness_jstr(c, "mode"), harness_jstr(c, "id"));
        json_t *task = json_pack(
            "{s:s, s:{s:s, s:s, s:s}, s:o, s:{s:i, s:{s:s, s:s, s:i, s:i, s:{s:s, s:s, s:I, s:i, "
            "s:s, s:i, s:b, s:b}}, s:i, s:{s:O, s:i}}, s:[s, s, s]}",
            "db", "test", "db_config", "db_label", label, "version", commit, "note", note,
            "db_case_config", case_cfg, "case_config", "case_id", 101, "custom_case", "name",
            x->ds.name, "description", "annlab bundle", "load_timeout", 0, "optimize_timeout", 0,
            "dataset_config", "name", x->ds.name, "dir", x->ds.dir, "size", (json_int_t)x->ds.n,
            "dim", (int)x->ds.dim, "metric_type", vdb_metric(x->ds.metric), "file_count", 1,
            "use_shuffled", 0, "with_gt", 1, "k", (int)k, "concurrency_search_config",
            "num_concurrency", x->e[i].threads, "concurrency_duration", 0, "stages", "load",
            "search_serial", "search_concurrent");
        json_t *r = metrics && task ? json_pack("{s:o, s:o, s:s}", "metrics", metrics, "task_config",
                                                task, "label", ":)")
                                    : NULL;
        if (!r) {
            json_decref(metrics);
            json_decref(task);
            rc = ann_fail(-ENOMEM, "export: no memory");
            break;
        }
        json_array_append_new(results, r);
    }
    if (rc) {
        json_decref(results);
        return rc;
    }
    char date[16] = "00000000", run_id[600];
    time_t t = (time_t)last;
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(date, sizeof date, "%Y%m%d", &tm);
    const char *slash = strrchr(x->run_dir, '/');
    snprintf(run_id, sizeof run_id, "%s-%s", run, slash && slash[1] ? slash + 1 : x->run_dir);
    top = json_pack("{s:s, s:s, s:o, s:s, s:f}", "run_id", run_id, "task_label", run, "results",
                    results, "file_fmt", "result_{}_{}_{}.json", "timestamp", last);
    char path[4400], tmp[4500];
    snprintf(path, sizeof path, "%s/result_%s_%s_annlab.json", out_dir, date, run);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (!top || json_dump_file(top, tmp, JSON_INDENT(2)) != 0) {
        rc = ann_fail(-EIO, "%s: cannot write", tmp);
    } else if (rename(tmp, path) != 0) {
        rc = ann_fail_errno("%s: rename", path);
    }
    if (rc)
        unlink(tmp);
    else if (log)
        fprintf(log, "%s\n", path);
    json_decref(top);
    return rc;
}

int harness_export(const char *run_dir, harness_export_format fmt, const char *out_dir, FILE *log,
                   int *files)
{
    ex_ctx x = { 0 };
    *files = 0;
    int rc = ex_load(&x, run_dir);
    if (!rc)
        rc = ann_mkdir_p(out_dir, 0755, "mkdir");
    if (!rc && fmt == HARNESS_EXPORT_ANN_BENCHMARKS) {
        for (size_t i = 0; i < x.n && !rc; i++)
            if (!(rc = write_ann_benchmarks(&x, &x.e[i], out_dir, log)))
                (*files)++;
    } else if (!rc && fmt == HARNESS_EXPORT_BIG_ANN) {
        if (!(rc = write_big_ann(&x, out_dir, log)))
            *files = 1;
    } else if (!rc) {
        if (!(rc = write_vectordbbench(&x, out_dir, log)))
            *files = 1;
    }
    ex_fini(&x);
    return rc;
}

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: annlab export RUN_DIR --format ann-benchmarks|big-ann|vectordbbench [--out DIR]\n"
            "                     [--force]\n"
            "  ann-benchmarks  one HDF5 result file per cell under DIR/results/<dataset>/<k>/<algo>/;\n"
            "                  copy DIR/results into an ann-benchmarks checkout and run its\n"
            "                  plot.py --dataset <dataset> (it reads data/<dataset>.hdf5)\n"
            "  big-ann         DIR/<run name>.csv with big-ann-benchmarks' data_export columns\n"
            "  vectordbbench   DIR/result_<date>_<run name>_annlab.json, a VectorDBBench result\n"
            "                  file (put it under vectordb_bench/results/ to see it in its UI)\n"
            "DIR defaults to RUN_DIR/export/<format>; an existing DIR (not an empty directory) is\n"
            "written into only with --force.  Exit: 0, 1 failure, 2 usage.\n");
}

int harness_export_main(int argc, char **argv)
{
    const char *run = NULL, *format = NULL, *out = NULL;
    int force = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--force"))
            force = 1;
        else if (!strcmp(argv[i], "--format") && i + 1 < argc)
            format = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || run) {
            fprintf(stderr, "annlab export: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else
            run = argv[i];
    }
    harness_export_format fmt;
    if (!run || !format) {
        fprintf(stderr, "annlab export: %s\n", !run ? "missing RUN_DIR" : "missing --format");
        usage(stderr);
        return 2;
    }
    if (harness_export_format_parse(format, &fmt) != 0) {
        fprintf(stderr, "annlab export: --format '%s' is not ann-benchmarks, big-ann or vectordbbench\n",
                format);
        return 2;
    }
    char def[4400];
    if (!out) {
        snprintf(def, sizeof def, "%s/export/%s", run, format);
        out = def;
    }
    if (!force && ann_exists_nonempty(out)) {
        fprintf(stderr, "annlab export: --out %s already exists; give --force to write into it\n", out);
        return 2;
    }
    int files = 0;
    int rc = harness_export(run, fmt, out, stdout, &files);
    if (rc) {
        fprintf(stderr, "annlab export: %s\n", ann_errmsg(rc));
        return 1;
    }
    fprintf(stderr, "annlab export: %d file%s in %s\n", files, files == 1 ? "" : "s", out);
    return 0;
}
