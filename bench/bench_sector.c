/*
 * bench_sector.c: the diskann-sector table of issue 4 on a prepared bundle.
 *
 *   build/bench/bench_sector BUNDLE_DIR INDEX_DIR [--R 64] [--L-build 100]
 *       [--alpha 1.2] [--pq-bytes 96] [--threads 2] [--precision i8] [--seed 1]
 *       [--io io_uring|libaio|pread|buffered|mmap] [--sqpoll 0|1]
 *       [--Ls 50,100,200] [--Ws 2,4,8] [--caches 0,10000] [--repeats 3]
 *       [--modes round,pipeline] [--groups 0,2] [--adaptive 1] [--queries N]
 *       [--device-batches 2000]
 *
 * Builds INDEX_DIR through ann_engine_build when it does not exist (and
 * prints the build's wall time and phases), or reuses it (and prints the
 * build time recorded in its build.json).  Then:
 *
 *  1. The device's own latency for a batch of W random 4 KiB O_DIRECT reads
 *     at queue depth W (submit W, wait for all), through the same io
 *     backend, over the index file: median and mean per W.
 *  2. For each cache size x L x W x search mode: recall@10 (id-set, against
 *     the bundle's ground truth), per-query means of the engine's stats
 *     (reads, hops, cache hits), latency (mean, p99; one query at a time,
 *     CLOCK_MONOTONIC) with 1 thread and with 2 threads each running one
 *     query at a time, QPS at 1 and 2 threads (queries / wall time), and the
 *     searching thread's user and kernel CPU per query (getrusage at the
 *     pass's start and end, divided by the queries).  Latency and QPS are
 *     medians over --repeats passes; proc_cpu_us is the whole process's CPU
 *     per query in the single-thread pass (with --sqpoll 1 it includes the
 *     kernel thread polling submissions, which the searching thread's
 *     user/sys do not).
 *     Two floors beside them: cpu_floor = user + kernel CPU per
 *     query (the latency if reads were free), dev_floor = reads/q x the
 *     device's time per read at queue depth W (step 1's batch latency / W:
 *     the latency if the CPU were free and the device kept busy at depth W).
 *  3. The same rows again as a breakdown of the single-thread mean latency
 *     into the engine's stages (ann_stats.stage_ns: PQ table, ADC,
 *     candidate list, full distances, node decode, I/O submission, waiting
 *     for completions) and the rest (harness call, untimed instructions).
 *
 * With an O_DIRECT backend every pass is cold with respect to the page
 * cache (the device or hypervisor below may still cache; the device figure
 * of step 1 is measured the same way).  With --io buffered or mmap the
 * passes after the first are warm: the file stays in the page cache.
 */
#include "datasets/bundle.h"
#include "engines/core/aio.h"
#include "engines/core/status.h"
#include "engines/diskann_sector/layout.h"
#include "engines/engine.h"
#include "engines/core/ticks.h"
#include "bench/benchutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define K 10
#define MAX_LIST 8
#define MAX_T 2

typedef struct {
    const char *bundle, *index;
    int R, L_build, pq_bytes, threads, repeats, queries, device_batches, seed;
    double alpha;
    const char *io, *precision;
    int Ls[MAX_LIST], nL, Ws[MAX_LIST], nW, caches[MAX_LIST], ncache;
    const char *modes[MAX_LIST];
    int nmodes, adaptive, sqpoll;
    int groups[MAX_LIST], ngroup; /* submit_group values (pipeline rows) */
} bench_opts;

static double thread_cpu_s(int user)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    const struct timeval *tv = user ? &ru.ru_utime : &ru.ru_stime;
    return (double)tv->tv_sec + 1e-6 * (double)tv->tv_usec;
}

/* The whole process's user + kernel CPU (every thread, including an
 * io_uring submission-polling thread, which belongs to the process). */
static double process_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* A comma list of non-negative integers (-1 when one is not). */
static int parse_list(const char *s, int *out)
{
    return bench_parse_ints(s, out, MAX_LIST, 0, INT_MAX);
}

static int parse_args(int argc, char **argv, bench_opts *o)
{
    *o = (bench_opts){ .R = 64, .L_build = 100, .alpha = 1.2, .pq_bytes = 96, .threads = 2,
                       .repeats = 3, .device_batches = 2000, .io = "io_uring",
                       .precision = "i8", .adaptive = 1, .seed = 1 };
    static char default_modes[] = "round,pipeline";
    o->nmodes = bench_parse_words(default_modes, o->modes, MAX_LIST);
    o->ngroup = parse_list("0", o->groups);
    o->nL = parse_list("50,100,200", o->Ls);
    o->nW = parse_list("2,4,8", o->Ws);
    o->ncache = parse_list("0,10000", o->caches);
    int pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (pos == 0)
                o->bundle = a;
            else if (pos == 1)
                o->index = a;
            pos++;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (!strcmp(a, "--R"))
            o->R = atoi(v);
        else if (!strcmp(a, "--L-build"))
            o->L_build = atoi(v);
        else if (!strcmp(a, "--alpha"))
            o->alpha = atof(v);
        else if (!strcmp(a, "--pq-bytes"))
            o->pq_bytes = atoi(v);
        else if (!strcmp(a, "--threads"))
            o->threads = atoi(v);
        else if (!strcmp(a, "--io"))
            o->io = v;
        else if (!strcmp(a, "--precision"))
            o->precision = v;
        else if (!strcmp(a, "--seed"))
            o->seed = atoi(v);
        else if (!strcmp(a, "--Ls"))
            o->nL = parse_list(v, o->Ls);
        else if (!strcmp(a, "--Ws"))
            o->nW = parse_list(v, o->Ws);
        else if (!strcmp(a, "--caches"))
            o->ncache = parse_list(v, o->caches);
        else if (!strcmp(a, "--repeats"))
            o->repeats = atoi(v);
        else if (!strcmp(a, "--queries"))
            o->queries = atoi(v);
        else if (!strcmp(a, "--device-batches"))
            o->device_batches = atoi(v);
        else if (!strcmp(a, "--modes"))
            o->nmodes = bench_parse_words(argv[i], o->modes, MAX_LIST);
        else if (!strcmp(a, "--groups"))
            o->ngroup = parse_list(v, o->groups);
        else if (!strcmp(a, "--adaptive"))
            o->adaptive = atoi(v);
        else if (!strcmp(a, "--sqpoll"))
            o->sqpoll = atoi(v);
        else
            return -1;
    }
    return pos == 2 && o->repeats >= 1 && o->nL > 0 && o->nW > 0 && o->ncache > 0 &&
                   o->nmodes > 0 && o->ngroup > 0
               ? 0
               : -1;
}

/* Build (or reuse) the index; print the build time either way. */
static int build_or_reuse(const bench_opts *o, const ann_bundle *b, const ann_engine_ops *ops)
{
    struct stat st;
    char path[4200];
    json_t *report = NULL;
    int rc = 0;
    if (stat(o->index, &st) == 0) {
        snprintf(path, sizeof path, "%s/build.json", o->index);
        json_error_t err;
        report = json_load_file(path, 0, &err);
        if (!report)
            return ann_fail(ANN_ENOTFOUND, "%s: %s", path, err.text);
        printf("index %s exists: reusing it (build figures as recorded in build.json)\n",
               o->index);
    } else {
        ann_vecsrc *src = NULL;
        rc = ann_bundle_base(b, &src);
        if (rc)
            return rc;
        json_t *bp = json_pack("{s:i, s:i, s:f, s:i, s:i, s:s, s:i}", "R", o->R, "L_build",
                               o->L_build, "alpha", o->alpha, "pq_bytes", o->pq_bytes, "threads",
                               o->threads, "build_precision", o->precision, "seed", o->seed);
        printf("building %s: R %d, L_build %d, alpha %.2f, pq_bytes %d, threads %d, %s, seed %d"
               " ...\n",
               o->index, o->R, o->L_build, o->alpha, o->pq_bytes, o->threads, o->precision,
               o->seed);
        fflush(stdout);
        rc = ann_engine_build(ops, src, bp, o->index, NULL, &report);
        json_decref(bp);
        ann_vecsrc_destroy(src);
        if (rc)
            return rc;
    }
    char *txt = json_dumps(report, JSON_COMPACT);
    printf("build.json: %s\n", txt ? txt : "?");
    free(txt);
    json_decref(report);
    return 0;
}

/* Median and mean seconds of a batch of W random sector reads at QD W. */
static int device_latency(const char *index_path, const char *io, uint32_t W, int batches,
                          double *med_s, double *mean_s)
{
    int rc = 0, direct = 0;
    ann_aio_queue *q = NULL;
    uint8_t *buf = NULL;
    double *t = calloc((size_t)batches, sizeof *t);
    ann_aio_req reqs[64];
    ann_aio_req *ptrs[64], *done[64];
    int fd = ann_aio_open(index_path, 1, &direct);
    if (fd < 0)
        return fd;
    struct stat st;
    fstat(fd, &st);
    uint64_t sectors = (uint64_t)st.st_size / DSEC_SECTOR_BYTES;
    ann_aio_kind kind;
    rc = ann_aio_kind_parse(io, &kind);
    if (rc)
        goto out;
    ann_aio_opts ao = { .kind = kind, .strict = 1, .fd = fd, .depth = W };
    rc = ann_aio_queue_create(&ao, &q);
    if (rc)
        goto out;
    buf = ann_aio_buf_alloc((size_t)W * DSEC_SECTOR_BYTES);
    if (!buf || !t) {
        rc = -12;
        goto out;
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int b = 0; b < batches; b++) {
        for (uint32_t i = 0; i < W; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            reqs[i] = (ann_aio_req){ .buf = buf + (size_t)i * DSEC_SECTOR_BYTES,
                                     .offset_bytes = ((s >> 17) % sectors) * DSEC_SECTOR_BYTES,
                                     .len_bytes = DSEC_SECTOR_BYTES };
            ptrs[i] = &reqs[i];
        }
        double t0 = ann_mono_s();
        rc = ann_aio_submit(q, ptrs, W);
        if (rc)
            goto out;
        for (uint32_t got = 0; got < W;) {
            int n = ann_aio_reap(q, 1, done, W);
            if (n < 0) {
                rc = n;
                goto out;
            }
            for (int i = 0; i < n; i++)
                if (done[i]->result != (int32_t)DSEC_SECTOR_BYTES) {
                    rc = ann_fail(-5, "%s: device probe read returned %d", index_path,
                                  done[i]->result);
                    goto out;
                }
            got += (uint32_t)n;
        }
        t[b] = ann_mono_s() - t0;
    }
    double sum = 0;
    for (int b = 0; b < batches; b++)
        sum += t[b];
    *mean_s = sum / batches;
    *med_s = bench_median(t, batches);
    if (!direct)
        printf("note: %s is not O_DIRECT here; device figures include the page cache\n",
               index_path);
out:
    ann_aio_queue_destroy(q);
    ann_aio_buf_free(buf);
    free(t);
    close(fd);
    return rc;
}

typedef struct {
    const ann_engine_ops *ops;
    ann_engine *eng;
    json_t *sp;
    const float *queries;
    uint32_t dim, nq;
    atomic_uint next;
    double *lat; /* nq: each query's latency in this pass */
    int rc;
} qps_job;

static void *qps_worker(void *arg)
{
    qps_job *j = arg;
    ann_ctx *ctx = NULL;
    uint32_t ids[K];
    float d[K];
    int rc = ann_engine_ctx_new(j->ops, j->eng, j->sp, K, &ctx);
    while (rc == 0) {
        uint32_t q = atomic_fetch_add(&j->next, 1);
        if (q >= j->nq)
            break;
        ann_stats st = { 0 };
        double t0 = ann_mono_s();
        int got = j->ops->search(ctx, j->queries + (size_t)q * j->dim, K, ids, d, &st);
        j->lat[q] = ann_mono_s() - t0;
        if (got < 0)
            rc = got;
    }
    j->ops->ctx_free(ctx);
    if (rc)
        j->rc = rc;
    return NULL;
}

/* Queries per second with T threads over one pass of the queries, and the
 * latency of each query (lat, nq entries). */
static int qps_pass(const ann_engine_ops *ops, ann_engine *eng, json_t *sp, const float *queries,
                    uint32_t dim, uint32_t nq, int T, double *qps, double *lat)
{
    qps_job j = { .ops = ops, .eng = eng, .sp = sp, .queries = queries, .dim = dim, .nq = nq,
                  .lat = lat };
    atomic_init(&j.next, 0);
    pthread_t th[16];
    double t0 = ann_mono_s();
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, qps_worker, &j);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    *qps = nq / (ann_mono_s() - t0);
    return j.rc;
}

int main(int argc, char **argv)
{
    bench_opts o;
    if (parse_args(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_sector BUNDLE_DIR INDEX_DIR [--R 64] [--L-build 100] "
                        "[--alpha 1.2] [--pq-bytes 96] [--threads 2] [--precision f16|f32|i8] [--seed 1] "
                        "[--io io_uring] [--sqpoll 0|1] "
                        "[--Ls 50,100,200] [--Ws 2,4,8] [--caches 0,10000] [--repeats 3] "
                        "[--modes round,pipeline] [--groups 0,2] [--adaptive 1] [--queries N] "
                        "[--device-batches 2000]\n");
        return 2;
    }
    const ann_engine_ops *ops = ann_engine_find("diskann-sector");
    ann_bundle b = { 0 };
    ann_gt gt = { 0 };
    float *queries = NULL;
    int rc = ann_bundle_open(o.bundle, &b);
    if (rc == 0)
        rc = ann_bundle_queries(&b, &queries);
    if (rc == 0)
        rc = ann_bundle_gt(&b, &gt);
    if (rc == 0)
        rc = build_or_reuse(&o, &b, ops);
    if (rc) {
        fprintf(stderr, "bench_sector: %s\n", ann_errmsg(rc));
        return 1;
    }
    uint32_t nq = o.queries > 0 && (uint32_t)o.queries < b.nq ? (uint32_t)o.queries : b.nq;
    printf("bundle %s: n %llu, dim %u, %u queries used, io %s, %d repeats\n", b.name,
           (unsigned long long)b.n, b.dim, nq, o.io, o.repeats);

    char index_file[4200];
    snprintf(index_file, sizeof index_file, "%s/%s", o.index, DSEC_INDEX_FILE);
    double dev_med[MAX_LIST], dev_mean[MAX_LIST];
    printf("\ndevice: batch of W random 4 KiB O_DIRECT reads at queue depth W (%d batches)\n",
           o.device_batches);
    printf("  W   median_us   mean_us\n");
    for (int w = 0; w < o.nW; w++) {
        ann_aio_kind probe_kind;
        const char *probe_io = ann_aio_kind_parse(o.io, &probe_kind) == 0 ? o.io : "io_uring";
        rc = device_latency(index_file, probe_io, (uint32_t)o.Ws[w], o.device_batches,
                            &dev_med[w], &dev_mean[w]);
        if (rc) {
            fprintf(stderr, "bench_sector: device probe: %s\n", ann_errmsg(rc));
            return 1;
        }
        printf("  %-3d %9.1f %9.1f\n", o.Ws[w], dev_med[w] * 1e6, dev_mean[w] * 1e6);
    }

    double *lat = malloc(nq * sizeof *lat);
    /* per repeat: mean, p99, qps 1t, qps 2t, mean 2t, p99 2t, user, sys, process cpu */
    double *rep[9];
    for (int i = 0; i < 9; i++)
        rep[i] = malloc((size_t)o.repeats * sizeof(double));
    uint32_t *ids = malloc((size_t)nq * K * sizeof *ids);
    float *dists = malloc((size_t)nq * K * sizeof *dists);
    enum { ROWS = MAX_LIST * MAX_LIST * MAX_LIST * MAX_LIST };
    static struct row {
        int cache, L, W;
        char mode[16];
        double mean_s;
        ann_stats st;
    } rows[ROWS];
    int nrows = 0;
    printf("\n cache     L   W  mode      recall@10  reads/q  hops/q  hits/q  mean_us   p99_us"
           "  mean2t_us  p99_2t_us  qps_1t  qps_2t  user_us  sys_us  cpu_floor_us"
           "  dev_floor_us  proc_cpu_us\n");
    for (int c = 0; c < o.ncache; c++) {
        json_t *op = json_pack("{s:s, s:i, s:b}", "io", o.io, "cache_nodes", o.caches[c],
                               "sqpoll", o.sqpoll);
        ann_engine *eng = NULL;
        json_t *orep = NULL;
        rc = ann_engine_open(ops, o.index, op, &eng, &orep);
        json_decref(op);
        if (rc) {
            fprintf(stderr, "bench_sector: open: %s\n", ann_errmsg(rc));
            return 1;
        }
        if (c == 0) {
            char *txt = json_dumps(orep, JSON_COMPACT);
            printf("open_report: %s\n", txt ? txt : "?");
            free(txt);
        }
        json_decref(orep);
        for (int l = 0; l < o.nL; l++) {
            for (int w = 0; w < o.nW; w++) {
                for (int mg = 0; mg < o.nmodes * o.ngroup; mg++) {
                    int m = mg / o.ngroup, g = o.groups[mg % o.ngroup];
                    int pipe = strcmp(o.modes[m], "round") != 0;
                    if (!pipe && mg % o.ngroup)
                        continue; /* submit_group is a pipeline parameter */
                    char label[32];
                    if (pipe && g > 0)
                        snprintf(label, sizeof label, "pipe/g%d", g);
                    else
                        snprintf(label, sizeof label, "%s", o.modes[m]);
                    json_t *sp = json_pack("{s:i, s:i, s:s, s:b, s:i}", "L", o.Ls[l],
                                           "beam_width", o.Ws[w], "search_mode", o.modes[m],
                                           "adaptive_beam", o.adaptive, "submit_group",
                                           pipe ? g : 0);
                    ann_ctx *ctx = NULL;
                    rc = ann_engine_ctx_new(ops, eng, sp, K, &ctx);
                    if (rc) {
                        fprintf(stderr, "bench_sector: ctx: %s\n", ann_errmsg(rc));
                        return 1;
                    }
                    ann_stats st = { 0 };
                    for (int r = 0; r < o.repeats; r++) {
                        /* the thread's CPU over the whole pass, not per query: four
                         * getrusage calls a query would be timed in the QPS */
                        double u0 = thread_cpu_s(1), s0 = thread_cpu_s(0);
                        double t0 = ann_mono_s(), pcpu0 = process_cpu_s();
                        memset(&st, 0, sizeof st);
                        for (uint32_t q = 0; q < nq; q++) {
                            double q0 = ann_mono_s();
                            int got = ops->search(ctx, queries + (size_t)q * b.dim, K,
                                                  ids + (size_t)q * K, dists + (size_t)q * K,
                                                  &st);
                            lat[q] = ann_mono_s() - q0;
                            if (got < 0) {
                                fprintf(stderr, "bench_sector: search: %s\n", ann_errmsg(got));
                                return 1;
                            }
                        }
                        rep[2][r] = nq / (ann_mono_s() - t0);
                        double user = thread_cpu_s(1) - u0, sys = thread_cpu_s(0) - s0;
                        rep[8][r] = (process_cpu_s() - pcpu0) / nq;
                        double sum = 0;
                        for (uint32_t q = 0; q < nq; q++)
                            sum += lat[q];
                        rep[0][r] = sum / nq;
                        qsort(lat, nq, sizeof *lat, bench_cmp_double);
                        rep[1][r] = lat[(size_t)((nq - 1) * 0.99)];
                        rep[6][r] = user / nq;
                        rep[7][r] = sys / nq;
                        rc = qps_pass(ops, eng, sp, queries, b.dim, nq, MAX_T, &rep[3][r], lat);
                        if (rc) {
                            fprintf(stderr, "bench_sector: 2-thread pass: %s\n", ann_errmsg(rc));
                            return 1;
                        }
                        sum = 0;
                        for (uint32_t q = 0; q < nq; q++)
                            sum += lat[q];
                        rep[4][r] = sum / nq;
                        qsort(lat, nq, sizeof *lat, bench_cmp_double);
                        rep[5][r] = lat[(size_t)((nq - 1) * 0.99)];
                    }
                    ops->ctx_free(ctx);
                    json_decref(sp);
                    uint64_t hits = 0;
                    for (uint32_t q = 0; q < nq; q++)
                        for (int i = 0; i < K; i++)
                            for (int j = 0; j < K; j++)
                                hits += ids[(size_t)q * K + i] ==
                                        (uint32_t)gt.ids[(size_t)q * gt.k + j];
                    double med[9];
                    for (int i = 0; i < 9; i++)
                        med[i] = bench_median(rep[i], o.repeats);
                    double reads = (double)st.reads / nq;
                    printf(" %5d %5d %3d  %-8s  %9.4f  %7.1f  %6.1f  %6.1f  %7.1f  %7.1f"
                           "  %9.1f  %9.1f  %6.0f  %6.0f  %7.1f  %6.1f  %12.1f  %12.1f  %11.1f\n",
                           o.caches[c], o.Ls[l], o.Ws[w], label,
                           (double)hits / ((double)nq * K), reads, (double)st.hops / nq,
                           (double)st.cache_hits / nq, med[0] * 1e6, med[1] * 1e6, med[4] * 1e6,
                           med[5] * 1e6, med[2], med[3], med[6] * 1e6, med[7] * 1e6,
                           (med[6] + med[7]) * 1e6, reads * dev_med[w] / o.Ws[w] * 1e6,
                           med[8] * 1e6);
                    fflush(stdout);
                    if (nrows < ROWS) {
                        rows[nrows] = (struct row){ o.caches[c], o.Ls[l], o.Ws[w], "", med[0], st };
                        snprintf(rows[nrows].mode, sizeof rows[nrows].mode, "%s", label);
                        nrows++;
                    }
                }
            }
        }
        ops->close(eng);
    }
    printf("\nwhere the single-thread mean latency goes (us per query, last pass)\n");
    printf(" cache     L   W  mode     ");
    for (int i = 0; i < ANN_STAGE_COUNT; i++)
        printf("  %9s", ann_stage_name((ann_stage)i));
    printf("      rest     mean\n");
    for (int r = 0; r < nrows; r++) {
        printf(" %5d %5d %3d  %-8s", rows[r].cache, rows[r].L, rows[r].W, rows[r].mode);
        double staged = 0;
        for (int i = 0; i < ANN_STAGE_COUNT; i++) {
            double us = (double)rows[r].st.stage_ns[i] / nq * 1e-3;
            staged += us;
            printf("  %9.1f", us);
        }
        printf("  %8.1f %8.1f\n", rows[r].mean_s * 1e6 - staged, rows[r].mean_s * 1e6);
    }
    free(lat);
    for (int i = 0; i < 9; i++)
        free(rep[i]);
    free(ids);
    free(dists);
    free(queries);
    ann_gt_free(&gt);
    ann_bundle_close(&b);
    return 0;
}
