/*
 * cell.c: `annlab cell SPEC.json OUT.json`, the measurement protocol of
 * DESIGN.md for one cell, in a fresh process.
 *
 *   prepare   cold: open the index, then evict its files from the page cache
 *             (cgroups/evict.h: fadvise, global drop when permitted, then
 *             residency verified with mincore; the report is recorded);
 *             warm: read the index files once, open, run warm-up queries
 *             from warmup.fbin (never the test queries).
 *   latency   one thread, one query at a time, CLOCK_MONOTONIC around each
 *             search; `repeats` passes (cold: evicted before each), the
 *             percentiles reported are the medians over passes; raw
 *             latencies of every pass go to latency_path.
 *   qps       T threads (pinned through hwloc to one processing unit each
 *             when pin_threads is true), each with its own context and
 *             one query in flight, pulling query numbers from a shared
 *             counter; at least one full pass (warm: passes until
 *             qps_min_seconds), qps = queries / wall time.  Cold evicts
 *             again first.  Median over repeats.
 *   recall    from the first latency pass, recomputed against base.fbin
 *             after measuring, so reading the base cannot disturb the
 *             measured phase.
 *
 * Peak RSS covers the latency and QPS passes (VmHWM after clear_refs "5");
 * device reads are the latency pass's, per query, beside the engine's own.
 */
#include "harness/child.h"

#include "engines/core/status.h"
#include "engines/engine.h"
#include "datasets/bundle.h"
#include "harness/measure.h"
#include "cgroups/cgroup.h"
#include "cgroups/devstat.h"
#include "cgroups/evict.h"
#include "harness/metrics.h"
#include "harness/tune.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the QPS pass ------------------------------------------------------ */

typedef struct qps_shared {
    const ann_engine_ops *ops;
    ann_ctx **ctxs;
    const float *queries;
    uint32_t nq, dim, k, threads;
    uint64_t total;            /* queries to issue */
    atomic_uint_fast64_t next; /* next query number */
    atomic_int failed_rc;
    atomic_int pinned;
    int pin; /* pin_threads */
    atomic_int go; /* threads spin until the main thread starts the clock */
} qps_shared;

typedef struct qps_thread {
    qps_shared *sh;
    unsigned index;
    uint32_t *ids;
    float *dists;
} qps_thread;

static void *qps_worker(void *arg)
{
    qps_thread *t = arg;
    qps_shared *sh = t->sh;
    if (sh->pin && harness_pin_thread(t->index) == 0)
        atomic_fetch_add(&sh->pinned, 1);
    ann_ctx *ctx = sh->ctxs[t->index];
    ann_stats st;
    while (!atomic_load(&sh->go))
        sched_yield();
    for (;;) {
        uint64_t i = atomic_fetch_add(&sh->next, 1);
        if (i >= sh->total || atomic_load(&sh->failed_rc))
            break;
        memset(&st, 0, sizeof st);
        const float *q = sh->queries + (size_t)(i % sh->nq) * sh->dim;
        int r = sh->ops->search(ctx, q, sh->k, t->ids, t->dists, &st);
        if (r < 0) {
            int expected = 0;
            atomic_compare_exchange_strong(&sh->failed_rc, &expected, r);
            break;
        }
    }
    return NULL;
}

/* One QPS measurement: `passes` passes over the queries; *qps and *wall_s set. */
static int qps_run(qps_shared *sh, uint64_t passes, double *qps, double *wall_s)
{
    int rc = 0;
    unsigned started = 0;
    pthread_t *tids = calloc(sh->threads, sizeof *tids);
    qps_thread *ts = calloc(sh->threads, sizeof *ts);
    if (!tids || !ts) {
        rc = ann_fail(-ENOMEM, "qps: no memory");
        goto out;
    }
    sh->total = passes * sh->nq;
    atomic_store(&sh->next, 0);
    atomic_store(&sh->failed_rc, 0);
    atomic_store(&sh->pinned, 0);
    atomic_store(&sh->go, 0);
    for (unsigned i = 0; i < sh->threads; i++) {
        ts[i] = (qps_thread){ .sh = sh, .index = i };
        ts[i].ids = malloc(sh->k * sizeof(uint32_t));
        ts[i].dists = malloc(sh->k * sizeof(float));
        if (!ts[i].ids || !ts[i].dists || pthread_create(&tids[i], NULL, qps_worker, &ts[i]) != 0) {
            rc = ann_fail(-ENOMEM, "qps: cannot start thread %u", i);
            sh->total = 0; /* the started threads exit at once */
            break;
        }
        started++;
    }
    uint64_t t0 = now_ns();
    atomic_store(&sh->go, 1);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    uint64_t t1 = now_ns();
    if (!rc && atomic_load(&sh->failed_rc))
        rc = atomic_load(&sh->failed_rc);
    if (!rc) {
        *wall_s = (double)(t1 - t0) / 1e9;
        *qps = (double)sh->total / *wall_s;
    }
out:
    if (ts)
        for (unsigned i = 0; i < sh->threads; i++) {
            free(ts[i].ids);
            free(ts[i].dists);
        }
    free(ts);
    free(tids);
    return rc;
}

/* ---- the cell ---------------------------------------------------------- */

typedef struct cell_state {
    const ann_engine_ops *ops;
    ann_engine *eng;
    ann_ctx **ctxs;
    unsigned nctx;
    ann_bundle ds;
    float *queries, *warmup;
    ann_gt gt;
    ann_vecsrc *base;
    uint32_t *ids, *counts;
    float *dists;
    uint64_t *lat_ns;
    double *rep_p[6], *rep_qps;
    cg_group *cg; /* this process's own group when in one (attached, not owned) */
} cell_state;

/* Resident bytes of every file under dir (cgroups/evict.h's mincore). */
static int resident_dir_bytes(const char *dir, uint64_t *resident, uint64_t *total, uint64_t *files)
{
    DIR *d = opendir(dir);
    if (!d)
        return ann_fail_errno("%s: opendir", dir);
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            rc = resident_dir_bytes(path, resident, total, files);
        } else if (S_ISREG(st.st_mode)) {
            uint64_t r = 0, b = 0;
            rc = evict_residency(path, &r, &b);
            *resident += r;
            *total += b;
            (*files)++;
        }
    }
    closedir(d);
    return rc;
}

static void cell_state_fini(cell_state *s)
{
    for (unsigned i = 0; i < s->nctx; i++)
        if (s->ops && s->ctxs[i])
            s->ops->ctx_free(s->ctxs[i]);
    free(s->ctxs);
    if (s->ops && s->eng)
        s->ops->close(s->eng);
    ann_bundle_close(&s->ds);
    cg_group_destroy(s->cg);
    free(s->queries);
    free(s->warmup);
    ann_gt_free(&s->gt);
    ann_vecsrc_destroy(s->base);
    free(s->ids);
    free(s->counts);
    free(s->dists);
    free(s->lat_ns);
    for (int i = 0; i < 6; i++)
        free(s->rep_p[i]);
    free(s->rep_qps);
}

static int write_latencies(const char *path, const uint64_t *lat_ns, uint32_t nq, uint32_t reps)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "we");
    if (!f)
        return ann_fail_errno("%s: create", tmp);
    int err = 0;
    if (fprintf(f, "# repeat query latency_ns (single thread, CLOCK_MONOTONIC)\n") < 0)
        err = errno ? errno : EIO;
    for (uint32_t r = 0; !err && r < reps; r++)
        for (uint32_t q = 0; !err && q < nq; q++)
            if (fprintf(f, "%u %u %llu\n", r, q,
                        (unsigned long long)lat_ns[(size_t)r * nq + q]) < 0)
                err = errno ? errno : EIO;
    if (!err && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        err = errno ? errno : EIO;
    if (fclose(f) != 0 && !err)
        err = errno ? errno : EIO;
    if (!err && rename(tmp, path) != 0)
        err = errno ? errno : EIO;
    if (err) {
        unlink(tmp);
        /* ENOSPC stays ENOSPC: a full disk is a transient failure of the cell */
        return ann_fail(-err, "%s: write: %s", path, strerror(err));
    }
    return 0;
}

/*
 * Tune the cell's target effort (harness/tune.h) on the warm-up queries and
 * their exact ground truth (spec "tune_gt_path", computed by the runner),
 * then set it in search.  *report receives what the tuning did.
 */
static int tune_cell(cell_state *s, const json_t *spec, json_t *search, const char *param,
                     double target, uint32_t k, json_t **report)
{
    int rc = 0;
    ann_gt gt = { 0 };
    float *warm = NULL;
    ann_vecsrc *base = NULL;
    uint32_t n_warm = 0;
    const char *gt_path = json_string_value(json_object_get(spec, "tune_gt_path"));
    if (!gt_path || !s->ds.n_warmup)
        return ann_fail(ANN_EPARAM,
                        "search.%s: a target recall is found on warm-up queries, and dataset %s has "
                        "none (no warmup.fbin); it is never tuned on the test queries",
                        param, s->ds.name);
    const ann_param_spec *sp = NULL;
    for (const ann_param_spec *p = s->ops->search_params; p && p->name; p++)
        if (!strcmp(p->name, param))
            sp = p;
    if (!sp)
        return ann_fail(ANN_EPARAM, "search.%s: not a search parameter of %s", param, s->ops->name);
    if ((rc = ann_gt_load(gt_path, s->ds.n, &gt)) || (rc = ann_bundle_warmup(&s->ds, &warm, &n_warm)) ||
        (rc = ann_bundle_base(&s->ds, &base)))
        goto out;
    if (gt.nq > n_warm || gt.k < k) {
        rc = ann_fail(ANN_ECORRUPT, "%s: %u x %u ground truth for %u warm-up queries at k=%u", gt_path,
                      gt.nq, gt.k, n_warm, k);
        goto out;
    }
    harness_tune_in in = { .ops = s->ops, .eng = s->eng, .search = search, .param = param,
                           .target = target, .spec = sp, .k = k, .queries = warm, .nq = gt.nq,
                           .gt = &gt, .base = base };
    int64_t found = 0;
    if ((rc = harness_tune_run(&in, &found, report)))
        goto out;
    json_object_set_new(search, param, json_integer(found));
out:
    ann_gt_free(&gt);
    free(warm);
    ann_vecsrc_destroy(base);
    return rc;
}

/* The ids each query returned in the first latency pass, as a ground-truth
 * file of ids only (vecfile.h), -1 past what a query returned: what
 * `annlab export` turns into other tools' result files. */
static int write_neighbors(const char *path, const uint32_t *ids, const uint32_t *counts,
                           uint32_t nq, uint32_t k)
{
    ann_gt g = { .nq = nq, .k = k, .ids = malloc((size_t)nq * k * sizeof(int32_t)) };
    if (!g.ids)
        return ann_fail(-ENOMEM, "%s: no memory", path);
    for (uint32_t q = 0; q < nq; q++)
        for (uint32_t r = 0; r < k; r++)
            g.ids[(size_t)q * k + r] = r < counts[q] ? (int32_t)ids[(size_t)q * k + r] : -1;
    int rc = ann_gt_save(path, &g);
    free(g.ids);
    return rc;
}

static int write_json_atomic(const json_t *v, const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "we");
    if (!f)
        return ann_fail_errno("%s: create", tmp);
    int err = 0;
    if (json_dumpf(v, f, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10)) != 0)
        err = errno ? errno : EIO;
    if (!err && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        err = errno ? errno : EIO;
    if (fclose(f) != 0 && !err)
        err = errno ? errno : EIO;
    if (!err && rename(tmp, path) != 0)
        err = errno ? errno : EIO;
    if (err) {
        unlink(tmp);
        return ann_fail(-err, "%s: write: %s", path, strerror(err));
    }
    return 0;
}

int harness_cell_main(const char *spec_path, const char *out_path)
{
    int rc = 0;
    json_error_t jerr;
    cell_state s = { 0 };
    json_t *result = NULL, *evict = NULL, *qps_evict = NULL, *warm = NULL, *open_report = NULL;
    json_t *search = NULL, *tuned = NULL; /* the search parameters measured; a target's report */
    /* a cell in a cgroup starts only once the runner has moved it there */
    const char *gate_fd = getenv("ANNLAB_CG_GATE_FD");
    int in_cg = gate_fd != NULL;
    if (gate_fd) {
        unsetenv("ANNLAB_CG_GATE_FD");
        if (cg_gate_wait_fd(atoi(gate_fd)) != 0) {
            fprintf(stderr, "annlab cell: not started: its memory cgroup was not set up\n");
            return 1;
        }
    }
    json_t *spec = json_load_file(spec_path, 0, &jerr);
    if (!spec) {
        fprintf(stderr, "annlab cell: %s: %s\n", spec_path, jerr.text);
        return 1;
    }
    const json_t *cell = json_object_get(spec, "cell");
    const char *engine = json_string_value(json_object_get(cell, "engine"));
    const char *mode = json_string_value(json_object_get(cell, "mode"));
    const char *dataset_dir = json_string_value(json_object_get(spec, "dataset_dir"));
    const char *index_dir = json_string_value(json_object_get(spec, "index_dir"));
    const char *latency_path = json_string_value(json_object_get(spec, "latency_path"));
    const char *neighbors_path = json_string_value(json_object_get(spec, "neighbors_path"));
    uint32_t k = (uint32_t)json_integer_value(json_object_get(spec, "k"));
    uint32_t threads = (uint32_t)json_integer_value(json_object_get(cell, "threads"));
    uint32_t reps = (uint32_t)json_integer_value(json_object_get(spec, "repeats"));
    uint32_t want_q = (uint32_t)json_integer_value(json_object_get(spec, "queries"));
    uint32_t want_warm = (uint32_t)json_integer_value(json_object_get(spec, "warmup_queries"));
    double qps_min_s = json_number_value(json_object_get(spec, "qps_min_seconds"));
    int drop = json_is_true(json_object_get(spec, "drop_caches"));
    int pin = json_is_true(json_object_get(spec, "pin_threads"));
    int cold = mode && !strcmp(mode, "cold");
    s.ops = ann_engine_find(engine);
    if (!s.ops || !mode || !dataset_dir || !index_dir || !latency_path || k == 0 || threads == 0 ||
        reps == 0) {
        rc = ann_fail(ANN_ECONFIG, "%s: incomplete cell spec", spec_path);
        goto out;
    }

    /* inputs, loaded before anything is measured */
    if ((rc = ann_bundle_open(dataset_dir, &s.ds)) || (rc = ann_bundle_queries(&s.ds, &s.queries)) ||
        (rc = ann_bundle_gt(&s.ds, &s.gt)))
        goto out;
    uint32_t nq = want_q && want_q < s.ds.nq ? want_q : s.ds.nq;
    uint32_t dim = s.ds.dim;
    if (nq == 0) {
        rc = ann_fail(ANN_EDATA, "%s: no queries", dataset_dir);
        goto out;
    }
    s.ids = calloc((size_t)nq * k, sizeof *s.ids);
    s.dists = calloc(k, sizeof *s.dists);
    s.counts = calloc(nq, sizeof *s.counts);
    s.lat_ns = calloc((size_t)nq * reps, sizeof *s.lat_ns);
    s.rep_qps = calloc(reps, sizeof *s.rep_qps);
    for (int i = 0; i < 6; i++)
        s.rep_p[i] = calloc(reps, sizeof(double));
    s.ctxs = calloc(threads, sizeof *s.ctxs);
    if (!s.ids || !s.dists || !s.counts || !s.lat_ns || !s.rep_qps || !s.rep_p[5] || !s.ctxs) {
        rc = ann_fail(-ENOMEM, "cell: no memory for %u queries", nq);
        goto out;
    }
    devstat_dev dev;
    int dev_ok = devstat_resolve(index_dir, NULL, &dev) == 0;
    evict_params ep = evict_params_default();
    ep.drop_caches = drop;
    /* in its own group (capped or accounting only): read the group's counters */
    cg_system cgs;
    if (in_cg && cg_detect(NULL, &cgs) == 0 && cg_group_open_self(&cgs, &s.cg) != 0)
        s.cg = NULL;

    /* prepare: warm reads the files before opening, cold evicts after */
    evict_report prep, pre_evict;
    memset(&prep, 0, sizeof prep);
    memset(&pre_evict, 0, sizeof pre_evict);
    int capped = json_is_integer(json_object_get(cell, "memory_cap_bytes"));
    if (!cold && capped && s.cg) {
        /* A page already in the page cache stays charged to the group that
         * read it first (the build, an earlier cell), and the cap never
         * applies to it: a warm capped cell would run from a cache larger
         * than its cap.  So the index leaves the cache first (DONTNEED only:
         * the global drop is not needed), and the preload below reads it
         * back from inside this cell's own group, under its cap. */
        evict_params only_mine = ep;
        only_mine.drop_caches = false;
        if ((rc = evict_cold_dir(index_dir, &only_mine, &pre_evict)))
            goto out;
    }
    if (!cold && (rc = evict_warm_dir(index_dir, &prep)))
        goto out;
    rc = ann_engine_open(s.ops, index_dir, json_object_get(cell, "open"), &s.eng, &open_report);
    if (rc) {
        rc = ann_fail_wrap(rc, "open %s", index_dir);
        goto out;
    }
    /* a target recall: find the effort on the warm-up queries first (before
     * cold eviction and warm-up, so neither is disturbed) */
    search = json_deep_copy(json_object_get(cell, "search"));
    if (!search)
        search = json_object();
    const char *tparam;
    double target;
    if (harness_tune_target(search, &tparam, &target) &&
        (rc = tune_cell(&s, spec, search, tparam, target, k, &tuned)))
        goto out;
    for (; s.nctx < threads; s.nctx++) {
        rc = ann_engine_ctx_new(s.ops, s.eng, search, k, &s.ctxs[s.nctx]);
        if (rc)
            goto out;
    }
    ann_stats st;
    uint32_t n_warm = 0;
    if (!cold) {
        if (s.ds.n_warmup && want_warm) {
            if ((rc = ann_bundle_warmup(&s.ds, &s.warmup, &n_warm)))
                goto out;
            if (n_warm > want_warm)
                n_warm = want_warm;
        }
        for (uint32_t i = 0; i < n_warm; i++) {
            memset(&st, 0, sizeof st);
            int r = s.ops->search(s.ctxs[0], s.warmup + (size_t)i * dim, k, s.ids, s.dists, &st);
            if (r < 0) {
                rc = ann_fail_wrap(r, "warm-up query %u", i);
                goto out;
            }
        }
        warm = json_pack("{s:I, s:i, s:s}", "bytes_read_into_cache", (json_int_t)prep.preload_bytes,
                         "warmup_queries", (int)n_warm, "warmup_source",
                         s.ds.n_warmup ? "warmup.fbin" : "none (dataset has no warmup.fbin)");
        if (capped && s.cg)
            json_object_set_new(warm, "evicted_before_preload",
                                json_pack("{s:I, s:I}", "resident_before_bytes",
                                          (json_int_t)pre_evict.resident_before_bytes,
                                          "resident_after_bytes",
                                          (json_int_t)pre_evict.resident_after_bytes));
    } else if ((rc = evict_cold_dir(index_dir, &ep, &prep))) {
        goto out;
    }
    evict = evict_report_json(&prep);
    /* what is resident as the measured phase starts (warm-up queries included) */
    uint64_t res_now = 0, res_files = 0, res_total = 0;
    rc = resident_dir_bytes(index_dir, &res_now, &res_total, &res_files);
    if (rc)
        goto out;

    /* latency passes: on the first processing unit when pin_threads, else
     * where the scheduler puts the thread.  Pinning is off by default: on a
     * VM whose device interrupts land on another CPU, every completion then
     * costs a cross-CPU wake-up (measured: diskann-sector 1.4-10x slower
     * pinned to the CPU without the disk's interrupts) */
    int lat_pinned = pin && harness_pin_thread(0) == 0;
    int rss_reset_rc = harness_rss_reset();
    int cg_peak_reset = s.cg ? cg_group_reset_peak(s.cg) == 0 : 0;
    cg_counters cg0, cg1;
    memset(&cg0, 0, sizeof cg0);
    memset(&cg1, 0, sizeof cg1);
    if (s.cg)
        cg_group_read(s.cg, dev_ok ? devstat_devt(&dev) : 0, &cg0);
    devstat_sample ds0, ds1;
    if ((rc = devstat_sample_take(dev_ok ? &dev : NULL, 0, &ds0)))
        goto out;
    ann_stats sum = { 0 };
    uint64_t user_ns = 0, sys_ns = 0; /* the searching thread's, all passes */
    for (uint32_t r = 0; r < reps; r++) {
        if (cold && r > 0) {
            evict_report again;
            if ((rc = evict_cold_dir(index_dir, &ep, &again)))
                goto out;
        }
        for (uint32_t q = 0; q < nq; q++) {
            memset(&st, 0, sizeof st);
            uint32_t *out_ids = s.ids + (size_t)q * k;
            harness_thread_cpu c0, c1;
            harness_thread_cpu_take(&c0); /* outside the timed span */
            uint64_t t0 = now_ns();
            int got = s.ops->search(s.ctxs[0], s.queries + (size_t)q * dim, k, out_ids, s.dists, &st);
            uint64_t t1 = now_ns();
            harness_thread_cpu_take(&c1);
            if (got < 0) {
                rc = ann_fail_wrap(got, "query %u", q);
                goto out;
            }
            if ((uint32_t)got > k) {
                rc = ann_fail(ANN_EDATA, "query %u: engine returned %d results for k=%u", q, got, k);
                goto out;
            }
            s.lat_ns[(size_t)r * nq + q] = t1 - t0;
            if (r == 0)
                s.counts[q] = (uint32_t)got;
            /* every repeat: on a VM the first pass after warm-up can be
             * several times slower (page-table work on first touch) */
            ann_stats_add(&sum, &st);
            user_ns += c1.user_ns - c0.user_ns;
            sys_ns += c1.sys_ns - c0.sys_ns;
        }
        harness_latency lat;
        if ((rc = harness_latency_summary(s.lat_ns + (size_t)r * nq, nq, &lat)))
            goto out;
        s.rep_p[0][r] = lat.p50;
        s.rep_p[1][r] = lat.p95;
        s.rep_p[2][r] = lat.p99;
        s.rep_p[3][r] = lat.p999;
        s.rep_p[4][r] = lat.mean;
        s.rep_p[5][r] = lat.max;
    }
    if ((rc = devstat_sample_take(dev_ok ? &dev : NULL, 0, &ds1)))
        goto out;
    if (s.cg)
        cg_group_read(s.cg, dev_ok ? devstat_devt(&dev) : 0, &cg1);

    /* QPS passes */
    qps_shared sh = { .pin = pin, .ops = s.ops, .ctxs = s.ctxs, .queries = s.queries, .nq = nq, .dim = dim,
                      .k = k, .threads = threads };
    double wall_s = 0;
    uint64_t passes_done = 0;
    int pinned = 0;
    for (uint32_t r = 0; r < reps; r++) {
        if (cold) {
            evict_report again;
            if ((rc = evict_cold_dir(index_dir, &ep, &again)))
                goto out;
            json_decref(qps_evict);
            qps_evict = evict_report_json(&again);
        }
        /* one pass first; warm runs more until qps_min_seconds is reached */
        double qps = 0, w = 0;
        if ((rc = qps_run(&sh, 1, &qps, &w)))
            goto out;
        uint64_t passes = 1;
        if (!cold && w < qps_min_s) {
            passes = (uint64_t)(qps_min_s / (w > 1e-6 ? w : 1e-6)) + 1;
            if (passes > 100000)
                passes = 100000;
            if ((rc = qps_run(&sh, passes, &qps, &w)))
                goto out;
        }
        s.rep_qps[r] = qps;
        wall_s = w;
        passes_done = passes;
        pinned = atomic_load(&sh.pinned);
    }
    harness_mem mem;
    harness_mem_read(&mem);

    /* recall, after measuring */
    if ((rc = ann_bundle_base(&s.ds, &s.base)))
        goto out;
    harness_recall_in rin = { .base = s.base, .queries = s.queries, .nq = nq, .k = k, .ids = s.ids,
                              .counts = s.counts, .gt = &s.gt };
    harness_recall_out rout;
    if ((rc = harness_recall(&rin, &rout, NULL))) {
        rc = ann_fail_wrap(rc, "recall of %s", engine);
        goto out;
    }
    if ((rc = write_latencies(latency_path, s.lat_ns, nq, reps)))
        goto out;
    if (neighbors_path && (rc = write_neighbors(neighbors_path, s.ids, s.counts, nq, k)))
        goto out;

    double nall = (double)nq * reps;
    (void)res_files;
    result = json_object();
    json_object_set_new(result, "recall", json_real(rout.recall));
    json_object_set_new(result, "recall_plain", json_real(rout.recall_plain));
    json_object_set_new(result, "recall_p5", json_real(rout.recall_p5));
    json_object_set_new(result, "queries", json_integer(nq));
    json_object_set_new(result, "repeats", json_integer(reps));
    json_object_set_new(
        result, "latency_us",
        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "p50", harness_median(s.rep_p[0], reps), "p95",
                  harness_median(s.rep_p[1], reps), "p99", harness_median(s.rep_p[2], reps), "p999",
                  harness_median(s.rep_p[3], reps), "mean", harness_median(s.rep_p[4], reps), "max",
                  harness_median(s.rep_p[5], reps)));
    json_object_set_new(result, "qps", json_real(harness_median(s.rep_qps, reps)));
    /* every repeat's figures, so `annlab compare` can derive noise tolerances */
    json_t *per = json_pack("{s:[], s:[], s:[]}", "p50_us", "p99_us", "qps");
    for (uint32_t r = 0; per && r < reps; r++) {
        json_array_append_new(json_object_get(per, "p50_us"), json_real(s.rep_p[0][r]));
        json_array_append_new(json_object_get(per, "p99_us"), json_real(s.rep_p[2][r]));
        json_array_append_new(json_object_get(per, "qps"), json_real(s.rep_qps[r]));
    }
    json_object_set_new(result, "per_repeat", per);
    json_object_set_new(result, "qps_detail",
                        json_pack("{s:I, s:f, s:i, s:i, s:b}", "passes", (json_int_t)passes_done,
                                  "wall_seconds_last", wall_s, "threads_pinned", pinned,
                                  "threads", (int)threads, "latency_thread_pinned", lat_pinned));
    json_t *es =
        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "reads", sum.reads / nall,
                  "bytes_read", sum.bytes_read / nall, "hops", sum.hops / nall, "full_dists",
                  sum.full_dists / nall, "code_dists", sum.code_dists / nall, "cache_hits",
                  sum.cache_hits / nall, "io_wait_ns", sum.io_wait_ns / nall, "cpu_ns", sum.cpu_ns / nall,
                  "user_ns", user_ns / nall, "sys_ns", sys_ns / nall);
    json_object_set_new(es, "stages_ns", harness_stages_json(&sum, nall));
    json_object_set_new(result, "engine_stats", es);
    json_object_set_new(result, "open_report", open_report ? open_report : json_null());
    if (tuned) {
        json_object_set(result, "search_used", search);
        json_object_set(result, "target_recall", tuned);
    }
    open_report = NULL;
    devstat_delta dd;
    devstat_diff(&ds0, &ds1, &dd);
    char source[400];
    if (dev_ok)
        snprintf(source, sizeof source, "device %s (%s), whole disk during the latency passes",
                 dev.name, dev.chain[0] ? dev.chain : dev.stat_path);
    else
        snprintf(source, sizeof source, "unavailable: %s", dev.reason);
    json_t *devj = devstat_delta_json(&dd, (uint64_t)nall, source);
    if (s.cg && cg0.io_known && cg1.io_known)
        json_object_set_new(devj, "cgroup",
                            json_pack("{s:f, s:f}", "reads_per_query",
                                      (double)(cg1.read_ios - cg0.read_ios) / nall, "bytes_per_query",
                                      (double)(cg1.read_bytes - cg0.read_bytes) / nall));
    json_object_set_new(result, "device", devj);
    json_t *memj = json_pack("{s:I, s:I, s:I}", "peak_rss_bytes", (json_int_t)mem.peak_rss_bytes,
                             "peak_anon_bytes", (json_int_t)mem.anon_bytes, "peak_file_bytes",
                             (json_int_t)mem.file_bytes);
    cg_counters cg2;
    memset(&cg2, 0, sizeof cg2);
    if (s.cg)
        cg_group_read(s.cg, 0, &cg2);
    json_object_set_new(memj, "cgroup_peak_bytes",
                        s.cg && cg2.peak_known ? json_integer((json_int_t)cg2.peak_bytes) : json_null());
    /* the page cache charged to this cell's group as the latency passes
     * start and end: under a cap, how much of the index it could hold */
    json_object_set_new(memj, "cgroup_page_cache_bytes",
                        s.cg && cg0.page_cache_known && cg1.page_cache_known
                            ? json_pack("{s:I, s:I}", "start", (json_int_t)cg0.page_cache_bytes,
                                        "end", (json_int_t)cg1.page_cache_bytes)
                            : json_null());
    if (s.cg)
        json_object_set_new(memj, "cgroup_peak_scope",
                            json_string(cg_peak_reset ? "measured phase (peak reset before it)"
                                                      : "whole cell (the kernel refused a peak reset)"));
    json_object_set_new(memj, "peak_reset",
                        json_string(rss_reset_rc == 0 ? "clear_refs" : "refused: peak covers the whole process"));
    json_object_set_new(memj, "anon_file_split", json_string("RssAnon/RssFile at the end of the measured phase"));
    json_object_set_new(result, "memory", memj);
    json_t *ce = json_incref(evict);
    json_object_set_new(ce, "resident_at_measure_start_bytes", json_integer((json_int_t)res_now));
    json_object_set_new(ce, "index_bytes", json_integer((json_int_t)res_total));
    if (qps_evict)
        json_object_set_new(ce, "before_qps", json_incref(qps_evict));
    json_object_set_new(result, "cache_eviction", ce);
    if (warm)
        json_object_set_new(result, "warm", json_incref(warm));
    rc = write_json_atomic(result, out_path);
out:
    if (rc)
        fprintf(stderr, "annlab cell: %s\n", ann_errmsg(rc));
    cell_state_fini(&s);
    json_decref(result);
    json_decref(evict);
    json_decref(qps_evict);
    json_decref(warm);
    json_decref(open_report);
    json_decref(search);
    json_decref(tuned);
    json_decref(spec);
    return rc ? (ann_is_transient(rc) ? HARNESS_EXIT_TRANSIENT : 1) : 0;
}
