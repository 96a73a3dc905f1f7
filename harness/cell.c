/*
 * cell.c: `annlab cell SPEC.json OUT.json`, the measurement protocol for
 * one cell, in a fresh process (docs/protocol.md describes it in full).
 * harness_cell_main runs one function per phase, in this order:
 *
 *   cell_prepare   read the spec, load queries and ground truth, allocate
 *                  every buffer; find the index's disk and the cell's cgroup.
 *   cell_preload   warm: read the index files into the page cache (a capped
 *                  cell evicts them first, so they are charged to its group).
 *   cell_open      open the index (ann_engine_open, its open report kept),
 *                  tune a target recall on the warm-up queries, one search
 *                  context per thread.
 *   cell_warm_up   warm: warm-up queries from warmup.fbin (never the test
 *                  queries); cold: evict the index from the page cache
 *                  (cgroups/evict.h: fadvise, global drop when permitted,
 *                  residency verified with mincore).
 *   cell_latency   one thread, one query at a time, CLOCK_MONOTONIC around
 *                  each search; `repeats` passes (cold: evicted before each);
 *                  the percentiles reported are the medians over passes.
 *   cell_qps       T threads (pinned through hwloc to one processing unit
 *                  each when pin_threads is true), each with its own context
 *                  and one query in flight, pulling query numbers from a
 *                  shared counter; at least one full pass (warm: passes until
 *                  qps_min_seconds), qps = queries / wall time.  Cold evicts
 *                  again first.  Median over repeats.
 *   cell_recall    from the first latency pass, recomputed against base.fbin
 *                  after measuring, so reading the base cannot disturb the
 *                  measured phase; raw latencies and answers written.
 *   cell_record    the cell's JSON object, written atomically to OUT.json.
 *
 * Peak RSS covers the latency and QPS passes (VmHWM after clear_refs "5");
 * device reads are the latency passes', per query, beside the engine's own.
 */
#include "harness/child.h"

#include "engines/core/digest.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
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
#include <limits.h>
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

/* ---- the QPS pass ------------------------------------------------------ */

typedef struct qps_shared {
    const ann_engine_ops *ops;
    ann_ctx **ctxs;
    const float *queries;
    uint32_t nq, dim, k, threads;
    uint64_t total;            /* queries to issue */
    uint64_t deadline_ns;      /* ann_mono_ns() past which no query starts; 0: none */
    atomic_uint_fast64_t next; /* next query number */
    atomic_uint_fast64_t done; /* queries answered */
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
        if (sh->deadline_ns && ann_mono_ns() > sh->deadline_ns)
            break; /* max_cell_seconds */
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
        atomic_fetch_add(&sh->done, 1);
    }
    return NULL;
}

/* One QPS measurement: `passes` passes over the queries, or what of them
 * starts before sh->deadline_ns; *qps (queries answered per second),
 * *wall_s and *done set. */
static int qps_run(qps_shared *sh, uint64_t passes, double *qps, double *wall_s, uint64_t *done)
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
    atomic_store(&sh->done, 0);
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
    uint64_t t0 = ann_mono_ns();
    atomic_store(&sh->go, 1);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    uint64_t t1 = ann_mono_ns();
    if (!rc && atomic_load(&sh->failed_rc))
        rc = atomic_load(&sh->failed_rc);
    if (!rc) {
        *wall_s = (double)(t1 - t0) / 1e9;
        *done = atomic_load(&sh->done);
        *qps = (double)*done / *wall_s;
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
            if (rc == -ENOENT) /* deleted since readdir (a compacted table) */
                rc = 0;
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
    const ann_param_spec *sp = harness_tune_effort_spec(s->ops);
    if (!sp || strcmp(sp->name, param))
        return ann_fail(ANN_EPARAM, "search.%s: a target recall tunes the effort parameter of %s, which is %s",
                        param, s->ops->name, sp ? sp->name : "none");
    const char *gt_path = json_string_value(json_object_get(spec, "tune_gt_path"));
    if (!gt_path || !s->ds.n_warmup)
        return ann_fail(ANN_EPARAM,
                        "search.%s: a target recall is found on warm-up queries, and dataset %s has "
                        "none (no warmup.fbin); it is never tuned on the test queries",
                        param, s->ds.name);
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

/* ---- the protocol, one function per phase ------------------------------ */

/* The cell as its spec describes it (read by cell_prepare). */
typedef struct cell_spec {
    const json_t *spec, *cell;
    const char *engine, *dataset_dir, *index_dir, *latency_path, *neighbors_path;
    uint32_t k, threads, reps, want_warm;
    double qps_min_s;
    double max_s;      /* max_cell_seconds: each measured phase's time bound; 0: none */
    int pin, cold, capped, in_cg;
    uint32_t nq, dim;  /* the queries measured, their dimension */
    devstat_dev dev;   /* the disk holding the index, when dev_ok */
    int dev_ok;
    evict_params ep;
} cell_spec;

/* What the phases measured, in the order they measure it; cell_record
 * writes it out. */
typedef struct cell_figures {
    json_t *open_report, *search, *tuned; /* search: the parameters measured; tuned: a
                                             target recall's report */
    evict_report prep, pre_evict;
    json_t *evict, *qps_evict, *warm;
    uint64_t res_now, res_total;          /* resident bytes as the measured phase starts */
    int lat_pinned, rss_reset_rc, cg_peak_reset;
    cg_counters cg0, cg1;                 /* the cell's group around the latency passes */
    devstat_sample ds0, ds1;              /* the disk around the latency passes */
    ann_stats sum;                        /* the engine's statistics, every latency pass */
    uint64_t user_ns, sys_ns;             /* the searching thread's CPU, every latency pass */
    double wall_s;                        /* the last QPS measurement's */
    uint64_t passes_done;
    int pinned;
    /* max_cell_seconds: the queries and repeats the figures cover, and
     * which phases the bound cut short (CUT_* bits) */
    uint32_t nq_done, reps_done, warm_done;
    uint64_t qps_queries; /* answered in the last QPS measurement */
    uint64_t stat_queries; /* the latency-pass queries in sum, user_ns, the disk counters */
    unsigned cut;
    harness_mem mem;
    harness_recall_out rout;
} cell_figures;

enum { CUT_WARM_UP = 1, CUT_LATENCY = 2, CUT_QPS = 4 };

/* Past max_cell_seconds since t0_ns (never when there is no bound). */
static int out_of_time(const cell_spec *c, uint64_t t0_ns)
{
    return c->max_s > 0 && (double)(ann_mono_ns() - t0_ns) / 1e9 > c->max_s;
}

static void cell_figures_fini(cell_figures *f)
{
    json_decref(f->open_report);
    json_decref(f->search);
    json_decref(f->tuned);
    json_decref(f->evict);
    json_decref(f->qps_evict);
    json_decref(f->warm);
}

/*
 * The index's files as its build.json recorded them (whole-file digests,
 * cached by size, mtime and inode, so after `annlab run` has checked them
 * nothing is read again here).  A cell started by hand, or a file changed
 * since the run checked it, is refused here, before an engine trusts a byte
 * (LMDB's pages carry no checksums: a flipped byte in a B-tree page can
 * crash mdb_get).  An index without build.json (made without
 * ann_engine_build) has nothing to check against.
 */
static int cell_verify_index(const cell_spec *c)
{
    char path[PATH_MAX + 16];
    if (snprintf(path, sizeof path, "%s/build.json", c->index_dir) >= (int)sizeof path)
        return ann_fail(ANN_ECONFIG, "%s: index path too long", c->index_dir);
    if (access(path, F_OK) != 0)
        return 0;
    json_error_t jerr;
    json_t *info = json_load_file(path, 0, &jerr);
    if (!info)
        return ann_fail(ANN_ECORRUPT, "%s: unreadable (%s); remove %s to rebuild it", path,
                        jerr.text, c->index_dir);
    const json_t *files = json_object_get(info, "files");
    int rc = files ? ann_digest_verify(c->index_dir, files, "build.json", NULL) : 0;
    json_decref(info);
    return rc;
}

/*
 * prepare: read the spec, load the inputs (queries, ground truth), check
 * the index against its build.json (cell_verify_index) and allocate every
 * buffer before anything is measured; find the disk of the
 * index and, in a cgroup, the cell's own group.
 */
static int cell_prepare(const char *spec_path, const json_t *spec, int in_cg, cell_spec *c,
                        cell_state *s)
{
    int rc = 0;
    c->spec = spec;
    c->cell = json_object_get(spec, "cell");
    c->in_cg = in_cg;
    c->engine = json_string_value(json_object_get(c->cell, "engine"));
    const char *mode = json_string_value(json_object_get(c->cell, "mode"));
    c->dataset_dir = json_string_value(json_object_get(spec, "dataset_dir"));
    c->index_dir = json_string_value(json_object_get(spec, "index_dir"));
    c->latency_path = json_string_value(json_object_get(spec, "latency_path"));
    c->neighbors_path = json_string_value(json_object_get(spec, "neighbors_path"));
    c->k = (uint32_t)json_integer_value(json_object_get(spec, "k"));
    c->threads = (uint32_t)json_integer_value(json_object_get(c->cell, "threads"));
    c->reps = (uint32_t)json_integer_value(json_object_get(spec, "repeats"));
    uint32_t want_q = (uint32_t)json_integer_value(json_object_get(spec, "queries"));
    c->want_warm = (uint32_t)json_integer_value(json_object_get(spec, "warmup_queries"));
    c->qps_min_s = json_number_value(json_object_get(spec, "qps_min_seconds"));
    c->max_s = json_number_value(json_object_get(c->cell, "max_cell_seconds")); /* 0 if absent */
    int drop = json_is_true(json_object_get(spec, "drop_caches"));
    c->pin = json_is_true(json_object_get(spec, "pin_threads"));
    c->cold = mode && !strcmp(mode, "cold");
    c->capped = json_is_integer(json_object_get(c->cell, "memory_cap_bytes"));
    s->ops = ann_engine_find(c->engine);
    if (!s->ops || !mode || !c->dataset_dir || !c->index_dir || !c->latency_path || c->k == 0 ||
        c->threads == 0 || c->reps == 0)
        return ann_fail(ANN_ECONFIG, "%s: incomplete cell spec", spec_path);

    /* inputs, loaded before anything is measured */
    if ((rc = ann_bundle_open(c->dataset_dir, &s->ds)) ||
        (rc = ann_bundle_queries(&s->ds, &s->queries)) || (rc = ann_bundle_gt(&s->ds, &s->gt)))
        return rc;
    if ((rc = cell_verify_index(c)))
        return rc;
    c->nq = want_q && want_q < s->ds.nq ? want_q : s->ds.nq;
    c->dim = s->ds.dim;
    if (c->nq == 0)
        return ann_fail(ANN_EDATA, "%s: no queries", c->dataset_dir);
    uint32_t nq = c->nq, k = c->k, reps = c->reps;
    s->ids = calloc((size_t)nq * k, sizeof *s->ids);
    s->dists = calloc(k, sizeof *s->dists);
    s->counts = calloc(nq, sizeof *s->counts);
    s->lat_ns = calloc((size_t)nq * reps, sizeof *s->lat_ns);
    s->rep_qps = calloc(reps, sizeof *s->rep_qps);
    for (int i = 0; i < 6; i++)
        s->rep_p[i] = calloc(reps, sizeof(double));
    s->ctxs = calloc(c->threads, sizeof *s->ctxs);
    if (!s->ids || !s->dists || !s->counts || !s->lat_ns || !s->rep_qps || !s->rep_p[5] ||
        !s->ctxs)
        return ann_fail(-ENOMEM, "cell: no memory for %u queries", nq);
    c->dev_ok = devstat_resolve(c->index_dir, NULL, &c->dev) == 0;
    c->ep = evict_params_default();
    c->ep.drop_caches = drop;
    /* in its own group (capped or accounting only): read the group's counters */
    cg_system cgs;
    if (c->in_cg && cg_detect(NULL, &cgs) == 0 && cg_group_open_self(&cgs, &s->cg) != 0)
        s->cg = NULL;
    return 0;
}

/*
 * evict/preload (warm cells, before open): read the index files once into
 * the page cache.  A capped warm cell first evicts them: a page already in
 * the page cache stays charged to the group that read it first (the build,
 * an earlier cell), and the cap never applies to it, so a warm capped cell
 * would run from a cache larger than its cap.  The index leaves the cache
 * (DONTNEED only: the global drop is not needed) and the preload reads it
 * back from inside this cell's own group, under its cap.  Cold cells evict
 * after open and warm-up instead (cell_warm_up).
 */
static int cell_preload(const cell_spec *c, const cell_state *s, cell_figures *f)
{
    int rc = 0;
    if (c->cold)
        return 0;
    if (c->capped && s->cg) {
        evict_params only_mine = c->ep;
        only_mine.drop_caches = false;
        if ((rc = evict_cold_dir(c->index_dir, &only_mine, &f->pre_evict)))
            return rc;
    }
    return evict_warm_dir(c->index_dir, &f->prep);
}

/*
 * open: the index through ann_engine_open (its open report kept); a target
 * recall is tuned on the warm-up queries now, before cold eviction and
 * warm-up, so neither is disturbed; then one search context per thread.
 */
static int cell_open(const cell_spec *c, cell_state *s, cell_figures *f)
{
    int rc = ann_engine_open(s->ops, c->index_dir, json_object_get(c->cell, "open"), &s->eng,
                             &f->open_report);
    if (rc)
        return ann_fail_wrap(rc, "open %s", c->index_dir);
    f->search = json_deep_copy(json_object_get(c->cell, "search"));
    if (!f->search)
        f->search = json_object();
    const char *tparam;
    double target;
    if (harness_tune_target(f->search, &tparam, &target) &&
        (rc = tune_cell(s, c->spec, f->search, tparam, target, c->k, &f->tuned)))
        return rc;
    for (; s->nctx < c->threads; s->nctx++)
        if ((rc = ann_engine_ctx_new(s->ops, s->eng, f->search, c->k, &s->ctxs[s->nctx])))
            return rc;
    return 0;
}

/*
 * warm-up: a warm cell runs warmup_queries queries from warmup.fbin (never
 * the test queries) on the first context; a cold cell evicts the index
 * instead (cgroups/evict.h: fadvise, global drop when permitted, residency
 * verified with mincore).  Either way, what is resident as the measured
 * phase starts is recorded.
 */
static int cell_warm_up(const cell_spec *c, cell_state *s, cell_figures *f)
{
    int rc = 0;
    uint32_t n_warm = 0;
    if (!c->cold) {
        if (s->ds.n_warmup && c->want_warm) {
            if ((rc = ann_bundle_warmup(&s->ds, &s->warmup, &n_warm)))
                return rc;
            if (n_warm > c->want_warm)
                n_warm = c->want_warm;
        }
        uint64_t t0 = ann_mono_ns();
        uint32_t i = 0;
        for (; i < n_warm; i++) {
            if (i > 0 && out_of_time(c, t0)) {
                f->cut |= CUT_WARM_UP;
                break;
            }
            ann_stats st;
            memset(&st, 0, sizeof st);
            int r = s->ops->search(s->ctxs[0], s->warmup + (size_t)i * c->dim, c->k, s->ids,
                                   s->dists, &st);
            if (r < 0)
                return ann_fail_wrap(r, "warm-up query %u", i);
        }
        f->warm_done = i;
        f->warm = json_pack("{s:I, s:i, s:s}", "bytes_read_into_cache",
                            (json_int_t)f->prep.preload_bytes, "warmup_queries", (int)i,
                            "warmup_source",
                            s->ds.n_warmup ? "warmup.fbin" : "none (dataset has no warmup.fbin)");
        if (c->capped && s->cg)
            json_object_set_new(f->warm, "evicted_before_preload",
                                json_pack("{s:I, s:I}", "resident_before_bytes",
                                          (json_int_t)f->pre_evict.resident_before_bytes,
                                          "resident_after_bytes",
                                          (json_int_t)f->pre_evict.resident_after_bytes));
    } else if ((rc = evict_cold_dir(c->index_dir, &c->ep, &f->prep))) {
        return rc;
    }
    f->evict = evict_report_json(&f->prep);
    /* what is resident as the measured phase starts (warm-up queries included) */
    uint64_t res_files = 0;
    return resident_dir_bytes(c->index_dir, &f->res_now, &f->res_total, &res_files);
}

/*
 * latency passes: one thread, one query at a time, CLOCK_MONOTONIC around
 * each search, `repeats` passes (cold: evicted before each but the first);
 * the engine's statistics, the thread's CPU, the disk's and the group's
 * counters cover every pass.  On the first processing unit when
 * pin_threads, else where the scheduler puts the thread.  Pinning is off
 * by default: on a VM whose device interrupts land on another CPU, every
 * completion then costs a cross-CPU wake-up (measured: diskann-sector
 * 1.4-10x slower pinned to the CPU without the disk's interrupts).
 * max_cell_seconds after the first query no further query starts: cut in
 * the first pass, every later figure covers the queries it answered; cut
 * in a later pass, that pass is dropped.
 */
static int cell_latency(const cell_spec *c, cell_state *s, cell_figures *f)
{
    int rc = 0;
    const uint32_t nq = c->nq, k = c->k;
    f->lat_pinned = c->pin && harness_pin_thread(0) == 0;
    f->rss_reset_rc = harness_rss_reset();
    f->cg_peak_reset = s->cg ? cg_group_reset_peak(s->cg) == 0 : 0;
    if (s->cg)
        cg_group_read(s->cg, c->dev_ok ? devstat_devt(&c->dev) : 0, &f->cg0);
    if ((rc = devstat_sample_take(c->dev_ok ? &c->dev : NULL, 0, &f->ds0)))
        return rc;
    f->nq_done = nq;
    f->reps_done = 0;
    uint64_t t_start = ann_mono_ns();
    for (uint32_t r = 0; r < c->reps; r++) {
        if (r > 0 && out_of_time(c, t_start)) {
            f->cut |= CUT_LATENCY; /* no time for another pass (nor its eviction) */
            break;
        }
        if (c->cold && r > 0) {
            evict_report again;
            if ((rc = evict_cold_dir(c->index_dir, &c->ep, &again)))
                return rc;
        }
        uint32_t q = 0;
        for (; q < f->nq_done; q++) {
            if ((r > 0 || q > 0) && out_of_time(c, t_start)) {
                f->cut |= CUT_LATENCY;
                break;
            }
            ann_stats st;
            memset(&st, 0, sizeof st);
            uint32_t *out_ids = s->ids + (size_t)q * k;
            harness_thread_cpu c0, c1;
            harness_thread_cpu_take(&c0); /* outside the timed span */
            uint64_t t0 = ann_mono_ns();
            int got = s->ops->search(s->ctxs[0], s->queries + (size_t)q * c->dim, k, out_ids,
                                     s->dists, &st);
            uint64_t t1 = ann_mono_ns();
            harness_thread_cpu_take(&c1);
            if (got < 0)
                return ann_fail_wrap(got, "query %u", q);
            if ((uint32_t)got > k)
                return ann_fail(ANN_EDATA, "query %u: engine returned %d results for k=%u", q,
                                got, k);
            s->lat_ns[(size_t)r * nq + q] = t1 - t0;
            if (r == 0)
                s->counts[q] = (uint32_t)got;
            /* every repeat: on a VM the first pass after warm-up can be
             * several times slower (page-table work on first touch) */
            ann_stats_add(&f->sum, &st);
            f->stat_queries++;
            f->user_ns += c1.user_ns - c0.user_ns;
            f->sys_ns += c1.sys_ns - c0.sys_ns;
        }
        if (q < f->nq_done) {
            if (r > 0)
                break; /* this pass is incomplete: the ones before it count */
            f->nq_done = q;
        }
        f->reps_done = r + 1;
        harness_latency lat;
        if ((rc = harness_latency_summary(s->lat_ns + (size_t)r * nq, f->nq_done, &lat)))
            return rc;
        s->rep_p[0][r] = lat.p50;
        s->rep_p[1][r] = lat.p95;
        s->rep_p[2][r] = lat.p99;
        s->rep_p[3][r] = lat.p999;
        s->rep_p[4][r] = lat.mean;
        s->rep_p[5][r] = lat.max;
    }
    if ((rc = devstat_sample_take(c->dev_ok ? &c->dev : NULL, 0, &f->ds1)))
        return rc;
    if (s->cg)
        cg_group_read(s->cg, c->dev_ok ? devstat_devt(&c->dev) : 0, &f->cg1);
    return 0;
}

/*
 * QPS passes: T threads, one query in flight each (qps_run); per repeat
 * one full pass (cold: evicted again before it), and a warm cell runs more
 * passes until qps_min_seconds.  Peak memory is read after them: it covers
 * the latency and QPS passes.
 */
static int cell_qps(const cell_spec *c, cell_state *s, cell_figures *f)
{
    int rc = 0;
    qps_shared sh = { .pin = c->pin, .ops = s->ops, .ctxs = s->ctxs, .queries = s->queries,
                      .nq = f->nq_done, .dim = c->dim, .k = c->k, .threads = c->threads };
    for (uint32_t r = 0; r < f->reps_done; r++) {
        if (c->cold) {
            evict_report again;
            if ((rc = evict_cold_dir(c->index_dir, &c->ep, &again)))
                return rc;
            json_decref(f->qps_evict);
            f->qps_evict = evict_report_json(&again);
        }
        /* one pass first; warm runs more until qps_min_seconds is reached;
         * max_cell_seconds after it starts no query starts */
        double qps = 0, w = 0;
        uint64_t done = 0;
        sh.deadline_ns = c->max_s > 0 ? ann_mono_ns() + (uint64_t)(c->max_s * 1e9) : 0;
        if ((rc = qps_run(&sh, 1, &qps, &w, &done)))
            return rc;
        uint64_t passes = 1;
        if (done < sh.nq) {
            f->cut |= CUT_QPS;
        } else if (!c->cold && w < c->qps_min_s) {
            passes = (uint64_t)(c->qps_min_s / (w > 1e-6 ? w : 1e-6)) + 1;
            if (passes > 100000)
                passes = 100000;
            sh.deadline_ns = c->max_s > 0 ? ann_mono_ns() + (uint64_t)(c->max_s * 1e9) : 0;
            if ((rc = qps_run(&sh, passes, &qps, &w, &done)))
                return rc;
            if (done < passes * sh.nq)
                f->cut |= CUT_QPS;
        }
        f->qps_queries = done;
        s->rep_qps[r] = qps;
        f->wall_s = w;
        f->passes_done = passes;
        f->pinned = atomic_load(&sh.pinned);
    }
    harness_mem_read(&f->mem);
    return 0;
}

/*
 * recall, after measuring (reading the base cannot disturb the measured
 * phase): the first latency pass's answers, recomputed against base.fbin;
 * then the raw latencies and the answers are written.
 */
static int cell_recall(const cell_spec *c, cell_state *s, cell_figures *f)
{
    int rc = ann_bundle_base(&s->ds, &s->base);
    if (rc)
        return rc;
    harness_recall_in rin = { .base = s->base, .queries = s->queries, .nq = f->nq_done,
                              .k = c->k, .ids = s->ids, .counts = s->counts, .gt = &s->gt };
    if ((rc = harness_recall(&rin, &f->rout, NULL)))
        return ann_fail_wrap(rc, "recall of %s", c->engine);
    /* cut in the first pass: one pass of nq_done; else reps_done whole ones */
    if ((rc = write_latencies(c->latency_path, s->lat_ns, f->nq_done, f->reps_done)))
        return rc;
    if (c->neighbors_path &&
        (rc = write_neighbors(c->neighbors_path, s->ids, s->counts, f->nq_done, c->k)))
        return rc;
    return 0;
}

/* record: the cell's figures as one JSON object, written to out_path
 * atomically (the runner adds it to cells.jsonl). */
static int cell_record(const cell_spec *c, const cell_state *s, cell_figures *f,
                       const char *out_path)
{
    const uint32_t reps = f->reps_done;
    double nall = (double)f->stat_queries;
    json_t *result = json_object();
    json_object_set_new(result, "recall", json_real(f->rout.recall));
    json_object_set_new(result, "recall_plain", json_real(f->rout.recall_plain));
    json_object_set_new(result, "recall_p5", json_real(f->rout.recall_p5));
    json_object_set_new(result, "queries", json_integer(f->nq_done));
    json_object_set_new(result, "repeats", json_integer(reps));
    /* max_cell_seconds: every figure covers the queries done, and says so */
    json_object_set_new(result, "queries_done", json_integer(f->nq_done));
    json_object_set_new(result, "partial", json_boolean(f->cut != 0));
    if (c->max_s > 0) {
        json_t *cut = json_array();
        if (f->cut & CUT_WARM_UP)
            json_array_append_new(cut, json_string("warm-up"));
        if (f->cut & CUT_LATENCY)
            json_array_append_new(cut, json_string("latency"));
        if (f->cut & CUT_QPS)
            json_array_append_new(cut, json_string("qps"));
        json_object_set_new(result, "time_bound",
                            json_pack("{s:f, s:o, s:i, s:i, s:i, s:I}", "max_cell_seconds",
                                      c->max_s, "cut", cut, "queries_asked", (int)c->nq,
                                      "repeats_asked", (int)c->reps, "warmup_queries_done",
                                      (int)f->warm_done, "qps_queries_last",
                                      (json_int_t)f->qps_queries));
    }
    json_object_set_new(
        result, "latency_us",
        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "p50", harness_median(s->rep_p[0], reps),
                  "p95", harness_median(s->rep_p[1], reps), "p99",
                  harness_median(s->rep_p[2], reps), "p999", harness_median(s->rep_p[3], reps),
                  "mean", harness_median(s->rep_p[4], reps), "max",
                  harness_median(s->rep_p[5], reps)));
    json_object_set_new(result, "qps", json_real(harness_median(s->rep_qps, reps)));
    /* every repeat's figures, so `annlab compare` can derive noise tolerances */
    json_t *per = json_pack("{s:[], s:[], s:[]}", "p50_us", "p99_us", "qps");
    for (uint32_t r = 0; per && r < reps; r++) {
        json_array_append_new(json_object_get(per, "p50_us"), json_real(s->rep_p[0][r]));
        json_array_append_new(json_object_get(per, "p99_us"), json_real(s->rep_p[2][r]));
        json_array_append_new(json_object_get(per, "qps"), json_real(s->rep_qps[r]));
    }
    json_object_set_new(result, "per_repeat", per);
    json_object_set_new(result, "qps_detail",
                        json_pack("{s:I, s:f, s:i, s:i, s:b}", "passes",
                                  (json_int_t)f->passes_done, "wall_seconds_last", f->wall_s,
                                  "threads_pinned", f->pinned, "threads", (int)c->threads,
                                  "latency_thread_pinned", f->lat_pinned));
    const ann_stats *sum = &f->sum;
    json_t *es = json_pack(
        "{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "reads", sum->reads / nall,
        "bytes_read", sum->bytes_read / nall, "hops", sum->hops / nall, "full_dists",
        sum->full_dists / nall, "code_dists", sum->code_dists / nall, "cache_hits",
        sum->cache_hits / nall, "io_wait_ns", sum->io_wait_ns / nall, "cpu_ns",
        sum->cpu_ns / nall, "user_ns", f->user_ns / nall, "sys_ns", f->sys_ns / nall);
    json_object_set_new(es, "stages_ns", harness_stages_json(sum, nall));
    json_object_set_new(result, "engine_stats", es);
    json_object_set_new(result, "open_report", f->open_report ? f->open_report : json_null());
    f->open_report = NULL;
    if (f->tuned) {
        json_object_set(result, "search_used", f->search);
        json_object_set(result, "target_recall", f->tuned);
    }
    devstat_delta dd;
    devstat_diff(&f->ds0, &f->ds1, &dd);
    char source[400];
    if (c->dev_ok)
        snprintf(source, sizeof source, "device %s (%s), whole disk during the latency passes",
                 c->dev.name, c->dev.chain[0] ? c->dev.chain : c->dev.stat_path);
    else
        snprintf(source, sizeof source, "unavailable: %s", c->dev.reason);
    json_t *devj = devstat_delta_json(&dd, (uint64_t)nall, source);
    const cg_counters *cg0 = &f->cg0, *cg1 = &f->cg1;
    if (s->cg && cg0->io_known && cg1->io_known)
        json_object_set_new(devj, "cgroup",
                            json_pack("{s:f, s:f}", "reads_per_query",
                                      (double)(cg1->read_ios - cg0->read_ios) / nall,
                                      "bytes_per_query",
                                      (double)(cg1->read_bytes - cg0->read_bytes) / nall));
    json_object_set_new(result, "device", devj);
    json_t *memj = json_pack("{s:I, s:I, s:I}", "peak_rss_bytes",
                             (json_int_t)f->mem.peak_rss_bytes, "peak_anon_bytes",
                             (json_int_t)f->mem.anon_bytes, "peak_file_bytes",
                             (json_int_t)f->mem.file_bytes);
    cg_counters cg2;
    memset(&cg2, 0, sizeof cg2);
    if (s->cg)
        cg_group_read(s->cg, 0, &cg2);
    json_object_set_new(memj, "cgroup_peak_bytes",
                        s->cg && cg2.peak_known ? json_integer((json_int_t)cg2.peak_bytes)
                                                : json_null());
    /* the page cache charged to this cell's group as the latency passes
     * start and end: under a cap, how much of the index it could hold */
    json_object_set_new(memj, "cgroup_page_cache_bytes",
                        s->cg && cg0->page_cache_known && cg1->page_cache_known
                            ? json_pack("{s:I, s:I}", "start",
                                        (json_int_t)cg0->page_cache_bytes, "end",
                                        (json_int_t)cg1->page_cache_bytes)
                            : json_null());
    if (s->cg)
        json_object_set_new(memj, "cgroup_peak_scope",
                            json_string(f->cg_peak_reset
                                            ? "measured phase (peak reset before it)"
                                            : "whole cell (the kernel refused a peak reset)"));
    json_object_set_new(memj, "peak_reset",
                        json_string(f->rss_reset_rc == 0
                                        ? "clear_refs"
                                        : "refused: peak covers the whole process"));
    json_object_set_new(memj, "anon_file_split",
                        json_string("RssAnon/RssFile at the end of the measured phase"));
    json_object_set_new(result, "memory", memj);
    json_t *ce = json_incref(f->evict);
    json_object_set_new(ce, "resident_at_measure_start_bytes",
                        json_integer((json_int_t)f->res_now));
    json_object_set_new(ce, "index_bytes", json_integer((json_int_t)f->res_total));
    if (f->qps_evict)
        json_object_set_new(ce, "before_qps", json_incref(f->qps_evict));
    json_object_set_new(result, "cache_eviction", ce);
    if (f->warm)
        json_object_set_new(result, "warm", json_incref(f->warm));
    int rc = write_json_atomic(result, out_path);
    json_decref(result);
    return rc;
}

int harness_cell_main(const char *spec_path, const char *out_path)
{
    int rc = 0;
    json_error_t jerr;
    cell_state s = { 0 };
    cell_spec c = { 0 };
    cell_figures f = { 0 };
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
    if (json_object_get(spec, "workload")) {
        /* a streaming workload: its own protocol (workload_run.c) */
        int code = harness_workload_cell_main(spec, out_path);
        json_decref(spec);
        return code;
    }
    if (!(rc = cell_prepare(spec_path, spec, in_cg, &c, &s)) && !(rc = cell_preload(&c, &s, &f)) &&
        !(rc = cell_open(&c, &s, &f)) && !(rc = cell_warm_up(&c, &s, &f)) &&
        !(rc = cell_latency(&c, &s, &f)) && !(rc = cell_qps(&c, &s, &f)) &&
        !(rc = cell_recall(&c, &s, &f)))
        rc = cell_record(&c, &s, &f, out_path);
    if (rc)
        fprintf(stderr, "annlab cell: %s\n", ann_errmsg(rc));
    cell_state_fini(&s);
    cell_figures_fini(&f);
    json_decref(spec);
    return rc ? (ann_is_transient(rc) ? HARNESS_EXIT_TRANSIENT : 1) : 0;
}
