/*
 * bench_merge.c: what a FreshDiskANN merge in diskann-record (or
 * diskann-resident, --engine) costs against
 * the one-pass build it stands in for.  Issue 15 asks that merging run at
 * least half as fast, in vectors per second at 2 threads, as the one-pass
 * build inserts them, and that the merged graph finds as many true
 * neighbours.  This prints both, from the same run:
 *
 *   build/bench/bench_merge BUNDLE_DIR WORK_DIR [--n-build 20000]
 *       [--inserts 2000] [--batch INSERTS] [--kv rocksdb|lmdb] [--threads 2]
 *       [--L 100] [--queries 200] [--repeats 1] [--R 64] [--L-build 100]
 *       [--pq-bytes 96] [--engine diskann-record|diskann-resident]
 *       [--merge-cache-mb MB] [--merge-snapshot-mb MB]
 *
 * WORK_DIR must not exist.  The bench builds (threads threads) a one-pass
 * index of the engine over the bundle's first n-build + inserts vectors
 * (WORK_DIR/onepass) and, per repeat, one over the first n-build
 * (WORK_DIR/base-R); opens the latter with updates (merge_every 0,
 * merge_threads threads, merge_cache_mb and merge_snapshot_mb MB when
 * given, else the engine's defaults), inserts the next `inserts` rows one at a time,
 * and merges after every `batch` of them (default: one merge of all);
 * the merge time is the sum of the merges.  Rates: the one-pass build's graph phase
 * (phases.graph_s: Vamana over every vector, PQ training excluded) and its
 * wall time, in vectors per second, against vectors merged per second.
 * Recall@10 at L over the bundle's first `queries` queries, against the
 * exact top 10 over the same n-build + inserts vectors, for the merged and
 * the one-pass index, with what a query cost: node records read (hops),
 * records read in all, and mean latency on one thread (the index warm
 * from the merge or the recall pass before; a figure, not a benchmark of
 * search).  WORK_DIR is left for inspection.
 */
#include "datasets/bundle.h"
#include "engines/core/exact.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
#include "engines/engine.h"
#include "harness/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_REPEATS 9
#define K 10

typedef struct {
    const char *bundle, *work, *kv, *engine;
    int n_build, inserts, batch, threads, L, queries, repeats, R, L_build, pq_bytes;
    double merge_cache_mb; /* < 0: the engine's default */
    double merge_snapshot_mb; /* < 0: the engine's default */
} opts;

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){ .kv = "rocksdb", .engine = "diskann-record", .n_build = 20000,
                 .inserts = 2000, .threads = 2, .L = 100, .queries = 200, .repeats = 1,
                 .R = 64, .L_build = 100, .pq_bytes = 96, .merge_cache_mb = -1,
                 .merge_snapshot_mb = -1 };
    int pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (pos == 0)
                o->bundle = a;
            else if (pos == 1)
                o->work = a;
            pos++;
            continue;
        }
        if (!v)
            return -1;
        i++;
        int *field = !strcmp(a, "--n-build")    ? &o->n_build
                     : !strcmp(a, "--inserts")  ? &o->inserts
                     : !strcmp(a, "--batch")    ? &o->batch
                     : !strcmp(a, "--threads")  ? &o->threads
                     : !strcmp(a, "--L")        ? &o->L
                     : !strcmp(a, "--queries")  ? &o->queries
                     : !strcmp(a, "--repeats")  ? &o->repeats
                     : !strcmp(a, "--R")        ? &o->R
                     : !strcmp(a, "--L-build")  ? &o->L_build
                     : !strcmp(a, "--pq-bytes") ? &o->pq_bytes
                                                : NULL;
        if (!strcmp(a, "--kv"))
            o->kv = v;
        else if (!strcmp(a, "--merge-cache-mb") || !strcmp(a, "--merge-snapshot-mb")) {
            char *end;
            double *mb = !strcmp(a, "--merge-cache-mb") ? &o->merge_cache_mb
                                                         : &o->merge_snapshot_mb;
            *mb = strtod(v, &end);
            if (*end || *mb < 0)
                return -1;
        }
        else if (!strcmp(a, "--engine")) {
            if (strcmp(v, "diskann-record") && strcmp(v, "diskann-resident"))
                return -1;
            o->engine = v;
        } else if (field)
            *field = atoi(v);
        else
            return -1;
    }
    if (o->batch <= 0 || o->batch > o->inserts)
        o->batch = o->inserts;
    return pos == 2 && o->n_build > 0 && o->inserts > 0 && o->threads >= 1 && o->L >= K &&
                   o->queries > 0 && o->repeats >= 1 && o->repeats <= MAX_REPEATS
               ? 0
               : -1;
}

/* Build dir over the first n rows of x; wall and graph-phase seconds. */
static int build(const opts *o, const ann_engine_ops *ops, const float *x, uint64_t n,
                 uint32_t dim, ann_metric metric, const char *dir, double *wall, double *graph)
{
    ann_vecsrc *src = NULL;
    json_t *report = NULL;
    json_t *bp = json_pack("{s:i, s:i, s:f, s:i, s:s, s:i}", "R", o->R, "L_build", o->L_build,
                           "alpha", 1.2, "pq_bytes", o->pq_bytes, "kv", o->kv, "threads",
                           o->threads);
    int rc = bp ? ann_vecsrc_from_memory(x, n, dim, metric, &src) : -12;
    if (!rc) {
        double t0 = ann_mono_s();
        rc = ann_engine_build(ops, src, bp, dir, NULL, &report);
        *wall = ann_mono_s() - t0;
    }
    if (!rc) {
        json_t *er = json_object_get(report, "engine_report");
        json_t *ph = json_object_get(er ? er : report, "phases");
        *graph = json_number_value(json_object_get(ph, "graph_s"));
    }
    json_decref(bp);
    json_decref(report);
    ann_vecsrc_destroy(src);
    return rc;
}

/* What a query costs: node records read (hops) and records read in all
 * (node and vector records), per query, and the mean latency (ms, one
 * thread, queries one at a time). */
typedef struct {
    double recall, hops, reads, ms;
} qcost;

/* Recall@K at L of eng over nq queries against gt (nq x K ids), and cost. */
static int recall(const opts *o, const ann_engine_ops *ops, ann_engine *eng, const float *q,
                  uint32_t dim, const int32_t *gt, qcost *out)
{
    json_t *sp = json_pack("{s:i}", "L", o->L);
    ann_ctx *ctx = NULL;
    int rc = ops->ctx_new(eng, sp, K, &ctx);
    json_decref(sp);
    uint64_t hit = 0;
    ann_stats st = { 0 };
    double t0 = ann_mono_s();
    for (int i = 0; !rc && i < o->queries; i++) {
        uint32_t ids[K];
        float d[K];
        int got = ops->search(ctx, q + (size_t)i * dim, K, ids, d, &st);
        if (got < 0) {
            rc = got;
            break;
        }
        for (int a = 0; a < got; a++)
            for (int b = 0; b < K; b++)
                hit += (int32_t)ids[a] == gt[(size_t)i * K + b];
    }
    double t = ann_mono_s() - t0;
    ops->ctx_free(ctx);
    *out = (qcost){ .recall = (double)hit / ((double)o->queries * K),
                    .hops = (double)st.hops / o->queries,
                    .reads = (double)st.reads / o->queries,
                    .ms = 1e3 * t / o->queries };
    return rc;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_merge BUNDLE_DIR WORK_DIR [--n-build 20000] "
                        "[--inserts 2000] [--batch INSERTS] [--kv rocksdb|lmdb] [--threads 2] "
                        "[--L 100] [--engine diskann-record|diskann-resident] "
                        "[--queries 200] [--repeats 1 (at most %d)] [--R 64] [--L-build 100] "
                        "[--pq-bytes 96] [--merge-cache-mb MB] [--merge-snapshot-mb MB]\n",
                MAX_REPEATS);
        return 2;
    }
    const ann_engine_ops *ops = ann_engine_find(o.engine);
    ann_bundle b = { 0 };
    ann_vecsrc *base = NULL;
    float *x = NULL, *q = NULL;
    int32_t *gt = NULL;
    const uint64_t total = (uint64_t)o.n_build + (uint64_t)o.inserts;
    char dir[4200];
    int rc = ann_bundle_open(o.bundle, &b);
    if (!rc)
        rc = ann_bundle_base(&b, &base);
    if (!rc && total > b.n)
        rc = ann_fail(ANN_EPARAM, "%s: %llu vectors, fewer than n-build + inserts", o.bundle,
                      (unsigned long long)b.n);
    if (!rc && (uint32_t)o.queries > b.nq)
        rc = ann_fail(ANN_EPARAM, "%s: %u queries, fewer than --queries", o.bundle, b.nq);
    if (!rc && mkdir(o.work, 0755) != 0)
        rc = ann_fail_errno("%s: mkdir (the work directory must not exist)", o.work);
    if (!rc) {
        x = malloc(total * b.dim * sizeof *x);
        gt = malloc((size_t)o.queries * K * sizeof *gt);
        float *gd = malloc((size_t)o.queries * K * sizeof *gd);
        rc = x && gt && gd ? ann_vecsrc_read(base, 0, total, x) : -12;
        if (!rc)
            rc = ann_bundle_queries(&b, &q);
        ann_vecsrc *all = NULL;
        if (!rc)
            rc = ann_vecsrc_from_memory(x, total, b.dim, base->metric, &all);
        if (!rc)
            rc = ann_exact_knn(all, q, (uint32_t)o.queries, K, o.threads, gt, gd);
        ann_vecsrc_destroy(all);
        free(gd);
    }
    double op_wall = 0, op_graph = 0;
    qcost op_q = { 0 };
    if (!rc) {
        snprintf(dir, sizeof dir, "%s/onepass", o.work);
        printf("%s: one-pass build over %llu vectors (R %d, L_build %d, %d-byte PQ, %s, "
               "%d threads) ...\n", o.engine, (unsigned long long)total, o.R, o.L_build,
               o.pq_bytes, o.kv, o.threads);
        fflush(stdout);
        rc = build(&o, ops, x, total, b.dim, base->metric, dir, &op_wall, &op_graph);
    }
    if (!rc) {
        json_t *opn = json_pack("{s:s}", "kv", o.kv);
        ann_engine *eng = NULL;
        json_t *orep = NULL;
        rc = ann_engine_open(ops, dir, opn, &eng, &orep);
        if (!rc)
            rc = recall(&o, ops, eng, q, b.dim, gt, &op_q);
        if (eng)
            ops->close(eng);
        json_decref(opn);
        json_decref(orep);
    }
    double ins_s[MAX_REPEATS], mrg_s[MAX_REPEATS], rec[MAX_REPEATS], hops[MAX_REPEATS],
        reads[MAX_REPEATS], ms[MAX_REPEATS];
    for (int r = 0; !rc && r < o.repeats; r++) {
        double bw = 0, bg = 0;
        snprintf(dir, sizeof dir, "%s/base-%d", o.work, r);
        printf("repeat %d: build over %d, insert %d, merge ...\n", r + 1, o.n_build, o.inserts);
        fflush(stdout);
        rc = build(&o, ops, x, (uint64_t)o.n_build, b.dim, base->metric, dir, &bw, &bg);
        json_t *opn = json_pack("{s:s, s:b, s:i, s:i}", "kv", o.kv, "updates", 1, "merge_every",
                                0, "merge_threads", o.threads);
        if (opn && o.merge_cache_mb >= 0)
            json_object_set_new(opn, "merge_cache_mb", json_real(o.merge_cache_mb));
        if (opn && o.merge_snapshot_mb >= 0)
            json_object_set_new(opn, "merge_snapshot_mb", json_real(o.merge_snapshot_mb));
        ann_engine *eng = NULL;
        json_t *orep = NULL;
        if (!rc)
            rc = ann_engine_open(ops, dir, opn, &eng, &orep);
        json_decref(opn);
        json_decref(orep);
        double tin = 0, tmg = 0;
        for (int i = 0; !rc && i < o.inserts; i++) {
            uint64_t row = (uint64_t)o.n_build + (uint64_t)i;
            double t0 = ann_mono_s();
            rc = ops->insert(eng, (uint32_t)row, x + row * b.dim, b.dim);
            double t1 = ann_mono_s();
            tin += t1 - t0;
            if (!rc && ((i + 1) % o.batch == 0 || i + 1 == o.inserts)) {
                rc = ops->merge(eng);
                tmg += ann_mono_s() - t1;
            }
        }
        qcost qc = { 0 };
        if (!rc)
            rc = recall(&o, ops, eng, q, b.dim, gt, &qc);
        rec[r] = qc.recall;
        hops[r] = qc.hops;
        reads[r] = qc.reads;
        ms[r] = qc.ms;
        if (eng)
            ops->close(eng);
        ins_s[r] = tin;
        mrg_s[r] = tmg;
        if (!rc)
            printf("  inserts %.2f s, merges %.2f s (%.0f vectors/s), recall@%d %.4f\n", ins_s[r],
                   mrg_s[r], o.inserts / mrg_s[r], K, rec[r]);
    }
    if (!rc) {
        const size_t nr = (size_t)o.repeats;
        double m = harness_median(mrg_s, nr), rr = harness_median(rec, nr);
        double mh = harness_median(hops, nr), mr = harness_median(reads, nr),
               mm = harness_median(ms, nr);
        double rate_g = (double)total / op_graph, rate_w = (double)total / op_wall;
        double rate_m = o.inserts / m;
        char mc[32] = "default", ms_[32] = "default";
        if (o.merge_cache_mb >= 0)
            snprintf(mc, sizeof mc, "%g MiB", o.merge_cache_mb);
        if (o.merge_snapshot_mb >= 0)
            snprintf(ms_, sizeof ms_, "%g MiB", o.merge_snapshot_mb);
        printf("\n%s, bundle %s: dim %u; n-build %d + inserts %d, merged every %d; %s; "
               "%d threads; merge cache %s; merge snapshot %s; L %d; %d queries; median of %d\n",
               o.engine, b.name, b.dim, o.n_build, o.inserts, o.batch, o.kv, o.threads, mc, ms_,
               o.L, o.queries, o.repeats);
        printf("%-22s %10s %10s %10s %10s %10s\n", "", "vectors/s", "recall@10", "hops/q",
               "reads/q", "ms/q");
        printf("%-22s %10.0f %10.4f %10.1f %10.1f %10.3f\n", "one-pass (graph phase)", rate_g,
               op_q.recall, op_q.hops, op_q.reads, op_q.ms);
        printf("%-22s %10.0f\n", "one-pass (wall)", rate_w);
        printf("%-22s %10.0f %10.4f %10.1f %10.1f %10.3f\n", "merge", rate_m, rr, mh, mr, mm);
        printf("merge / one-pass graph rate: %.3f; recall difference %+.4f\n", rate_m / rate_g,
               rr - op_q.recall);
    }
    free(x);
    free(q);
    free(gt);
    ann_vecsrc_destroy(base);
    ann_bundle_close(&b);
    if (rc) {
        fprintf(stderr, "bench_merge: %s\n", ann_errmsg(rc));
        return 1;
    }
    return 0;
}
