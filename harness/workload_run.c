/*
 * workload_run.c: `annlab cell` for a cell with a workload (child.h): the
 * steps of a streaming runbook run through the engine's update calls on a
 * copy of the cell's index, each step measured (docs/protocol.md,
 * "Workload cells").
 *
 *   wl_prepare  the spec, the steps, the queries and the ground truth of
 *               every search step (computed by the runner, workload_gt.h).
 *   wl_open     copy the cached index (built over the vectors of the first
 *               step, an insert of [0, end)) into the run's work directory,
 *               open the copy with the cell's open parameters, one search
 *               context per thread.  The cached build is never written.
 *   wl_step     one step: insert (writers threads share the range, each
 *               insert timed; with search_during_inserts the cell's search
 *               threads query meanwhile), delete (each remove timed), replace (remove
 *               the ids, merge when the engine merges, insert them with
 *               their new rows), merge (timed), search (the latency pass on
 *               one thread, then one QPS pass on `threads` threads; recall
 *               of the latency pass against the step's ground truth; the
 *               ids it returned to neighbors/<cell id>.<step>.ibin).
 *               Every step records the bytes of the copy's files.
 *   the record  {"steps": [...]} written to OUT.json atomically; the runner
 *               makes one cells.jsonl line of each step.
 *
 * Pending and deleted counts are the harness's: inserts and deletes issued
 * since the last merge step (an engine's background merges are not seen).
 * An id a search returns that is not live at that step (deleted, or never
 * inserted) is counted in "returned_not_live" and is a miss.
 */
#include "harness/child.h"
#include "harness/workload.h"

#include "datasets/bundle.h"
#include "engines/core/fileio.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
#include "engines/core/vecfile.h"
#include "engines/engine.h"
#include "harness/metrics.h"
#include "harness/run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* rows read and inserted at a time (the writers share each chunk) */
#define WL_CHUNK_ROWS 4096

/* ---- copying the index ------------------------------------------------- */

static int copy_file(const char *from, const char *to, mode_t mode)
{
    int rc = 0, in = -1, out = -1;
    char *buf = malloc(1 << 20);
    if (!buf)
        return ann_fail(-ENOMEM, "%s: no memory to copy", from);
    if ((in = open(from, O_RDONLY | O_CLOEXEC)) < 0) {
        rc = ann_fail_errno("%s: open", from);
        goto out;
    }
    if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 0777)) < 0) {
        rc = ann_fail_errno("%s: create", to);
        goto out;
    }
    for (;;) {
        ssize_t n = read(in, buf, 1 << 20);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = ann_fail_errno("%s: read", from);
            goto out;
        }
        if (n == 0)
            break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                rc = ann_fail_errno("%s: write", to);
                goto out;
            }
            off += w;
        }
    }
out:
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0 && !rc)
        rc = ann_fail_errno("%s: close", to);
    free(buf);
    return rc;
}

/* Copy the tree at from into to (created; must not exist). */
static int copy_tree(const char *from, const char *to)
{
    if (mkdir(to, 0775) != 0)
        return ann_fail_errno("%s: mkdir", to);
    DIR *d = opendir(from);
    if (!d)
        return ann_fail_errno("%s: opendir", from);
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char a[4400], b[4400];
        snprintf(a, sizeof a, "%s/%s", from, e->d_name);
        snprintf(b, sizeof b, "%s/%s", to, e->d_name);
        struct stat st;
        if (lstat(a, &st) != 0)
            rc = ann_fail_errno("%s: stat", a);
        else if (S_ISDIR(st.st_mode))
            rc = copy_tree(a, b);
        else if (S_ISREG(st.st_mode))
            rc = copy_file(a, b, st.st_mode);
        /* sockets, links: an index has none */
    }
    closedir(d);
    return rc;
}

/* ---- the state of a workload cell -------------------------------------- */

typedef struct wl_cell {
    const ann_engine_ops *ops;
    ann_engine *eng;
    ann_ctx **ctxs;
    uint32_t threads, k, nq, dim;
    ann_bundle ds;
    ann_vecsrc *base;
    float *queries;
    ann_gt gt;
    harness_workload w;
    harness_wl_state st;
    const char *work_dir;
    const char *neighbors_prefix; /* "<out>/neighbors/<cell id>": + ".<step>.ibin" */
    json_t *open_report;
    int in_memory;           /* the engine keeps its updates in memory only */
    uint64_t pending, deleted; /* since the last merge step */
    size_t search_no;        /* search steps run so far */
    uint32_t *ids, *counts;
    float *dists;
    uint64_t *lat_ns;
} wl_cell;

static void wl_cell_fini(wl_cell *c)
{
    for (uint32_t i = 0; c->ctxs && i < c->threads; i++)
        if (c->ctxs[i])
            c->ops->ctx_free(c->ctxs[i]);
    free(c->ctxs);
    if (c->eng)
        c->ops->close(c->eng);
    ann_vecsrc_destroy(c->base);
    ann_bundle_close(&c->ds);
    free(c->queries);
    ann_gt_free(&c->gt);
    harness_workload_fini(&c->w);
    harness_wl_state_fini(&c->st);
    json_decref(c->open_report);
    free(c->ids);
    free(c->counts);
    free(c->dists);
    free(c->lat_ns);
}

static json_t *lat_json(const uint64_t *ns, size_t n)
{
    harness_latency l;
    if (n == 0 || harness_latency_summary(ns, n, &l) != 0)
        return json_null();
    return json_pack("{s:f, s:f}", "p50", l.p50, "p99", l.p99);
}

/* ---- insert: writers share each chunk of rows -------------------------- */

typedef struct wl_ins {
    wl_cell *c;
    const float *rows;   /* the chunk's vectors */
    const uint32_t *ids; /* the id each row goes in under */
    uint64_t n;
    atomic_uint_fast64_t next;
    atomic_int failed_rc;
    uint64_t *lat_ns;    /* n, this chunk's */
} wl_ins;

static void *wl_writer(void *arg)
{
    wl_ins *in = arg;
    for (;;) {
        uint64_t i = atomic_fetch_add(&in->next, 1);
        if (i >= in->n || atomic_load(&in->failed_rc))
            break;
        uint64_t t0 = ann_mono_ns();
        int r = in->c->ops->insert(in->c->eng, in->ids[i], in->rows + i * in->c->dim, in->c->dim);
        in->lat_ns[i] = ann_mono_ns() - t0;
        if (r < 0) {
            int expected = 0;
            atomic_compare_exchange_strong(&in->failed_rc, &expected, r);
            break;
        }
    }
    return NULL;
}

/*
 * Insert rows[i] under ids[i] for every i < n on `writers` threads; the
 * latencies go to lat_ns (n).  Returns 0 or the first failure.
 */
static int wl_insert_rows(wl_cell *c, const float *rows, const uint32_t *ids, uint64_t n,
                          uint32_t writers, uint64_t *lat_ns)
{
    wl_ins in = { .c = c, .rows = rows, .ids = ids, .n = n, .lat_ns = lat_ns };
    atomic_store(&in.next, 0);
    atomic_store(&in.failed_rc, 0);
    if (writers <= 1) {
        wl_writer(&in);
        return atomic_load(&in.failed_rc);
    }
    pthread_t tids[1024];
    uint32_t started = 0;
    for (; started < writers; started++)
        if (pthread_create(&tids[started], NULL, wl_writer, &in) != 0)
            break;
    if (started == 0)
        wl_writer(&in);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    return atomic_load(&in.failed_rc);
}

static int wl_merge(wl_cell *c, double *seconds);

/*
 * Insert, under ids [id0, id0 + n), the rows [row0, row0 + n) of the base,
 * chunk by chunk; *lat_ns (n, malloc'd) receives every insert's latency
 * and *wall_s the wall time of the inserts (reading excluded).  With
 * merge_every > 0, the engine's merge runs after every merge_every
 * inserts and after the last (their count and total time into *merges and
 * *merge_s, not into the inserts' figures).
 */
static int wl_insert_range(wl_cell *c, uint64_t id0, uint64_t row0, uint64_t n, uint64_t **lat_ns,
                           double *wall_s, uint64_t merge_every, uint64_t *merges, double *merge_s)
{
    int rc = 0;
    uint64_t since_merge = 0;
    float *rows = malloc((size_t)WL_CHUNK_ROWS * c->dim * sizeof *rows);
    uint32_t *ids = malloc(WL_CHUNK_ROWS * sizeof *ids);
    *lat_ns = malloc((n ? n : 1) * sizeof **lat_ns);
    *wall_s = 0;
    if (!rows || !ids || !*lat_ns) {
        rc = ann_fail(-ENOMEM, "insert: no memory");
        goto out;
    }
    for (uint64_t done = 0; done < n;) {
        uint64_t m = n - done < WL_CHUNK_ROWS ? n - done : WL_CHUNK_ROWS;
        if (merge_every && m > merge_every - since_merge)
            m = merge_every - since_merge;
        if ((rc = ann_vecsrc_read(c->base, row0 + done, m, rows)))
            goto out;
        for (uint64_t i = 0; i < m; i++)
            ids[i] = (uint32_t)(id0 + done + i);
        uint64_t t0 = ann_mono_ns();
        rc = wl_insert_rows(c, rows, ids, m, c->w.writers, *lat_ns + done);
        *wall_s += (double)(ann_mono_ns() - t0) / 1e9;
        if (rc) {
            rc = ann_fail_wrap(rc, "insert of ids [%llu, %llu)", (unsigned long long)(id0 + done),
                               (unsigned long long)(id0 + done + m));
            goto out;
        }
        done += m;
        since_merge += m;
        if (merge_every && (since_merge == merge_every || done == n)) {
            double sec = 0;
            if ((rc = wl_merge(c, &sec)))
                goto out;
            since_merge = 0;
            (*merges)++;
            *merge_s += isnan(sec) ? 0 : sec;
        }
    }
out:
    free(rows);
    free(ids);
    return rc;
}

/* Remove ids [a, b), each timed; *lat_ns (malloc'd) and *wall_s as above. */
static int wl_remove_range(wl_cell *c, uint64_t a, uint64_t b, uint64_t **lat_ns, double *wall_s)
{
    *lat_ns = malloc((b - a ? b - a : 1) * sizeof **lat_ns);
    if (!*lat_ns)
        return ann_fail(-ENOMEM, "delete: no memory");
    uint64_t t0 = ann_mono_ns();
    for (uint64_t id = a; id < b; id++) {
        uint64_t s = ann_mono_ns();
        int r = c->ops->remove(c->eng, (uint32_t)id);
        (*lat_ns)[id - a] = ann_mono_ns() - s;
        if (r < 0)
            return ann_fail_wrap(r, "delete of id %llu", (unsigned long long)id);
    }
    *wall_s = (double)(ann_mono_ns() - t0) / 1e9;
    return 0;
}

/* The engine's merge, timed; *seconds is NAN when the engine has none. */
static int wl_merge(wl_cell *c, double *seconds)
{
    *seconds = NAN;
    if (!c->ops->merge)
        return 0;
    uint64_t t0 = ann_mono_ns();
    int r = c->ops->merge(c->eng);
    *seconds = (double)(ann_mono_ns() - t0) / 1e9;
    return r < 0 ? ann_fail_wrap(r, "merge") : 0;
}

/* ---- search: the latency pass, one QPS pass, recall -------------------- */

typedef struct wl_qps {
    wl_cell *c;
    atomic_uint_fast32_t next;
    atomic_int failed_rc;
} wl_qps;

typedef struct wl_qps_thread {
    wl_qps *sh;
    uint32_t index;
} wl_qps_thread;

static void *wl_qps_worker(void *arg)
{
    wl_qps_thread *t = arg;
    wl_cell *c = t->sh->c;
    uint32_t ids[1024];
    float dists[1024];
    for (;;) {
        uint32_t q = atomic_fetch_add(&t->sh->next, 1);
        if (q >= c->nq || atomic_load(&t->sh->failed_rc))
            break;
        ann_stats st;
        memset(&st, 0, sizeof st);
        int r = c->ops->search(c->ctxs[t->index], c->queries + (size_t)q * c->dim, c->k, ids,
                               dists, &st);
        if (r < 0) {
            int expected = 0;
            atomic_compare_exchange_strong(&t->sh->failed_rc, &expected, r);
            break;
        }
    }
    return NULL;
}

/* The ids each query returned, as a ground-truth file of ids only
 * (vecfile.h), -1 past what a query returned: what `annlab export` and a
 * reader of the run use (cell.c writes the same for static cells). */
static int wl_write_neighbors(const wl_cell *c, size_t step, json_t *rec)
{
    char path[4400];
    snprintf(path, sizeof path, "%s.%zu.ibin", c->neighbors_prefix, step);
    ann_gt g = { .nq = c->nq, .k = c->k, .ids = malloc((size_t)c->nq * c->k * sizeof(int32_t)) };
    if (!g.ids)
        return ann_fail(-ENOMEM, "%s: no memory", path);
    for (uint32_t q = 0; q < c->nq; q++)
        for (uint32_t r = 0; r < c->k; r++)
            g.ids[(size_t)q * c->k + r] =
                r < c->counts[q] ? (int32_t)c->ids[(size_t)q * c->k + r] : -1;
    int rc = ann_gt_save(path, &g);
    free(g.ids);
    if (!rc) {
        const char *slash = strrchr(c->neighbors_prefix, '/');
        json_object_set_new(rec, "neighbors_file",
                            json_sprintf("neighbors/%s.%zu.ibin", slash ? slash + 1 : "", step));
    }
    return rc;
}

static int wl_search(wl_cell *c, size_t step, json_t *rec)
{
    int rc = 0;
    const uint32_t nq = c->nq, k = c->k;
    for (uint32_t q = 0; q < nq; q++) {
        ann_stats st;
        memset(&st, 0, sizeof st);
        uint64_t t0 = ann_mono_ns();
        int got = c->ops->search(c->ctxs[0], c->queries + (size_t)q * c->dim, k,
                                 c->ids + (size_t)q * k, c->dists, &st);
        c->lat_ns[q] = ann_mono_ns() - t0;
        if (got < 0)
            return ann_fail_wrap(got, "query %u", q);
        c->counts[q] = (uint32_t)got > k ? k : (uint32_t)got;
    }
    /* QPS: one pass of every query on `threads` threads */
    wl_qps sh = { .c = c };
    atomic_store(&sh.next, 0);
    atomic_store(&sh.failed_rc, 0);
    wl_qps_thread ts[1024];
    pthread_t tids[1024];
    uint32_t started = 0;
    uint64_t t0 = ann_mono_ns();
    for (; started < c->threads; started++) {
        ts[started] = (wl_qps_thread){ .sh = &sh, .index = started };
        if (pthread_create(&tids[started], NULL, wl_qps_worker, &ts[started]) != 0)
            break;
    }
    for (uint32_t i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    double wall = (double)(ann_mono_ns() - t0) / 1e9;
    if (started == 0)
        return ann_fail(-EAGAIN, "search: cannot start a QPS thread");
    if ((rc = atomic_load(&sh.failed_rc)))
        return ann_fail_wrap(rc, "QPS pass");
    /* the ids as the engine returned them, before recall maps them to rows */
    if (c->neighbors_prefix && (rc = wl_write_neighbors(c, step, rec)))
        return rc;
    /* recall: returned ids to the rows they hold now; an id not live is a miss */
    uint64_t not_live = 0;
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t *row = c->ids + (size_t)q * k, kept = 0;
        for (uint32_t r = 0; r < c->counts[q]; r++) {
            uint32_t id = row[r];
            if (id >= c->st.n_base || c->st.row_of_id[id] < 0) {
                not_live++;
                continue;
            }
            row[kept++] = (uint32_t)c->st.row_of_id[id];
        }
        c->counts[q] = kept;
    }
    ann_gt view = { .nq = nq, .k = c->gt.k,
                    .ids = c->gt.ids + (size_t)c->search_no * nq * c->gt.k,
                    .dists = c->gt.dists + (size_t)c->search_no * nq * c->gt.k };
    harness_recall_in rin = { .base = c->base, .queries = c->queries, .nq = nq, .k = k,
                              .ids = c->ids, .counts = c->counts, .gt = &view };
    harness_recall_out rout;
    if ((rc = harness_recall(&rin, &rout, NULL)))
        return ann_fail_wrap(rc, "recall");
    c->search_no++;
    json_object_set_new(rec, "recall", json_real(rout.recall));
    json_object_set_new(rec, "recall_plain", json_real(rout.recall_plain));
    json_object_set_new(rec, "returned_not_live", json_integer((json_int_t)not_live));
    json_object_set_new(rec, "latency_us", lat_json(c->lat_ns, nq));
    json_object_set_new(rec, "qps", json_real((double)nq / wall));
    json_object_set_new(rec, "queries", json_integer(nq));
    json_object_set_new(rec, "live", json_integer((json_int_t)c->st.live));
    return 0;
}

/* ---- searches while an insert step runs (search_during_inserts) -------- */

#define WL_BG_LAT_MAX 65536 /* latencies kept per search thread */

typedef struct wl_bg wl_bg;

typedef struct wl_bg_thread {
    wl_bg *bg;
    uint32_t index;
} wl_bg_thread;

struct wl_bg {
    wl_cell *c;
    atomic_int stop;
    atomic_uint_fast64_t next;
    atomic_int failed_rc;
    uint64_t *lat[1024];
    uint64_t nlat[1024];
    pthread_t tids[1024];
    wl_bg_thread th[1024];
    uint32_t started;
    uint64_t t0;
};

static void *wl_bg_worker(void *arg)
{
    wl_bg_thread *t = arg;
    wl_bg *bg = t->bg;
    wl_cell *c = bg->c;
    uint32_t ids[1024];
    float dists[1024];
    while (!atomic_load(&bg->stop) && !atomic_load(&bg->failed_rc)) {
        uint64_t q = atomic_fetch_add(&bg->next, 1) % c->nq;
        ann_stats st;
        memset(&st, 0, sizeof st);
        uint64_t t0 = ann_mono_ns();
        int r = c->ops->search(c->ctxs[t->index], c->queries + q * c->dim, c->k, ids, dists, &st);
        uint64_t ns = ann_mono_ns() - t0;
        if (r < 0) {
            int expected = 0;
            atomic_compare_exchange_strong(&bg->failed_rc, &expected, r);
            break;
        }
        if (bg->nlat[t->index] < WL_BG_LAT_MAX)
            bg->lat[t->index][bg->nlat[t->index]++] = ns;
    }
    return NULL;
}

/* Start the cell's search threads (each its own context), querying until wl_bg_stop. */
static int wl_bg_start(wl_cell *c, wl_bg *bg)
{
    memset(bg, 0, sizeof *bg);
    bg->c = c;
    atomic_store(&bg->stop, 0);
    atomic_store(&bg->next, 0);
    atomic_store(&bg->failed_rc, 0);
    for (uint32_t i = 0; i < c->threads; i++)
        if (!(bg->lat[i] = malloc(WL_BG_LAT_MAX * sizeof *bg->lat[i])))
            return ann_fail(-ENOMEM, "search during inserts: no memory");
    bg->t0 = ann_mono_ns();
    for (; bg->started < c->threads; bg->started++) {
        bg->th[bg->started] = (wl_bg_thread){ .bg = bg, .index = bg->started };
        if (pthread_create(&bg->tids[bg->started], NULL, wl_bg_worker, &bg->th[bg->started]))
            break;
    }
    return bg->started ? 0 : ann_fail(-EAGAIN, "search during inserts: cannot start a thread");
}

/* Stop them; their figures into rec as "search_during_inserts". */
static int wl_bg_stop(wl_bg *bg, json_t *rec)
{
    atomic_store(&bg->stop, 1);
    for (uint32_t i = 0; i < bg->started; i++)
        pthread_join(bg->tids[i], NULL);
    double wall = (double)(ann_mono_ns() - bg->t0) / 1e9;
    int rc = atomic_load(&bg->failed_rc);
    uint64_t total = 0;
    for (uint32_t i = 0; i < bg->started; i++)
        total += bg->nlat[i];
    uint64_t *all = malloc((total ? total : 1) * sizeof *all), n = 0;
    if (all)
        for (uint32_t i = 0; i < bg->started; i++) {
            memcpy(all + n, bg->lat[i], bg->nlat[i] * sizeof *all);
            n += bg->nlat[i];
        }
    if (!rc && rec)
        json_object_set_new(rec, "search_during_inserts",
                            json_pack("{s:I, s:i, s:f, s:o}", "queries",
                                      (json_int_t)atomic_load(&bg->next), "threads",
                                      (int)bg->started, "qps",
                                      (double)atomic_load(&bg->next) / (wall > 0 ? wall : 1e-9),
                                      "latency_us", all ? lat_json(all, n) : json_null()));
    free(all);
    for (uint32_t i = 0; i < 1024; i++)
        free(bg->lat[i]);
    return rc ? ann_fail_wrap(rc, "search during inserts") : 0;
}

/* ---- one step ---------------------------------------------------------- */

static int wl_step(wl_cell *c, size_t i, json_t *rec)
{
    const harness_wl_step *s = &c->w.steps[i];
    int rc = 0;
    uint64_t *lat = NULL, *lat2 = NULL;
    double wall = 0, wall2 = 0, merge_s = NAN;
    uint64_t merges = 0;
    char why[512];
    /* numbered from 1, as runbooks number their steps (workload.steps[i] is step i + 1) */
    json_object_set_new(rec, "step", json_integer((json_int_t)i + 1));
    json_object_set_new(rec, "op", json_string(harness_wl_op_name(s->op)));
    json_object_set_new(rec, "where", json_string(s->where));
    switch (s->op) {
    case HARNESS_WL_INSERT:
        json_object_set_new(rec, "start", json_integer((json_int_t)s->start));
        json_object_set_new(rec, "end", json_integer((json_int_t)s->end));
        if (i == 0 && !c->w.live_build) {
            /* the build: the cell's index holds these vectors already */
            json_object_set_new(rec, "built", json_true());
            break;
        }
        if (s->merge_every)
            merge_s = 0;
        /* the pending list the inserts join (insert latency against it: plot.c) */
        json_object_set_new(rec, "pending_before", json_integer((json_int_t)c->pending));
        if (c->w.search_during_inserts) {
            wl_bg *bg = malloc(sizeof *bg); /* about 50 KiB: not on the stack */
            if (!bg) {
                rc = ann_fail(-ENOMEM, "search during inserts: no memory");
                break;
            }
            if ((rc = wl_bg_start(c, bg))) {
                wl_bg_stop(bg, NULL);
                free(bg);
                break;
            }
            rc = wl_insert_range(c, s->start, s->start, s->end - s->start, &lat, &wall,
                                 s->merge_every, &merges, &merge_s);
            int rc2 = wl_bg_stop(bg, rec);
            free(bg);
            if (!rc)
                rc = rc2;
        } else {
            rc = wl_insert_range(c, s->start, s->start, s->end - s->start, &lat, &wall,
                                 s->merge_every, &merges, &merge_s);
        }
        if (rc)
            break;
        if (s->merge_every && c->ops->merge) {
            /* merged up to the step's end */
            c->pending = c->deleted = 0;
            json_object_set_new(rec, "merge_every", json_integer((json_int_t)s->merge_every));
            json_object_set_new(rec, "merges", json_integer((json_int_t)merges));
            json_object_set_new(rec, "merge_seconds", json_real(merge_s));
        } else {
            c->pending += s->end - s->start;
        }
        json_object_set_new(rec, "insert_latency_us", lat_json(lat, s->end - s->start));
        json_object_set_new(rec, "inserts_per_s",
                            json_real((double)(s->end - s->start) / (wall > 0 ? wall : 1e-9)));
        json_object_set_new(rec, "writers", json_integer(c->w.writers));
        break;
    case HARNESS_WL_DELETE:
        json_object_set_new(rec, "start", json_integer((json_int_t)s->start));
        json_object_set_new(rec, "end", json_integer((json_int_t)s->end));
        if ((rc = wl_remove_range(c, s->start, s->end, &lat, &wall)))
            break;
        c->deleted += s->end - s->start;
        json_object_set_new(rec, "delete_latency_us", lat_json(lat, s->end - s->start));
        json_object_set_new(rec, "deletes_per_s",
                            json_real((double)(s->end - s->start) / (wall > 0 ? wall : 1e-9)));
        break;
    case HARNESS_WL_REPLACE: {
        /* an id removed is inserted again only after a merge (the record
         * engines refuse an id deleted but not yet merged) */
        uint64_t n = s->end - s->start;
        json_object_set_new(rec, "tags_start", json_integer((json_int_t)s->start));
        json_object_set_new(rec, "tags_end", json_integer((json_int_t)s->end));
        json_object_set_new(rec, "ids_start", json_integer((json_int_t)s->ids_start));
        json_object_set_new(rec, "ids_end", json_integer((json_int_t)s->ids_end));
        if ((rc = wl_remove_range(c, s->start, s->end, &lat, &wall)) ||
            (rc = wl_merge(c, &merge_s)))
            break;
        if (c->ops->merge)
            c->pending = c->deleted = 0;
        else
            c->deleted += n;
        if ((rc = wl_insert_range(c, s->start, s->ids_start, n, &lat2, &wall2, 0, NULL, NULL)))
            break;
        c->pending += n;
        json_object_set_new(rec, "delete_latency_us", lat_json(lat, n));
        json_object_set_new(rec, "merge_seconds", isnan(merge_s) ? json_null() : json_real(merge_s));
        json_object_set_new(rec, "insert_latency_us", lat_json(lat2, n));
        json_object_set_new(rec, "inserts_per_s", json_real((double)n / (wall2 > 0 ? wall2 : 1e-9)));
        break;
    }
    case HARNESS_WL_MERGE:
        if ((rc = wl_merge(c, &merge_s)))
            break;
        json_object_set_new(rec, "merge_seconds", isnan(merge_s) ? json_null() : json_real(merge_s));
        if (isnan(merge_s))
            json_object_set_new(rec, "merge_reason",
                                json_sprintf("%s has no merge: updates are in the index at once",
                                             c->ops->name));
        else
            c->pending = c->deleted = 0;
        break;
    case HARNESS_WL_SEARCH:
        /* pending and deleted as the search sees them */
        json_object_set_new(rec, "pending", json_integer((json_int_t)c->pending));
        json_object_set_new(rec, "deleted", json_integer((json_int_t)c->deleted));
        rc = wl_search(c, i + 1, rec);
        break;
    }
    free(lat);
    free(lat2);
    if (rc)
        return ann_fail_wrap(rc, "%s (%s)", s->where, harness_wl_op_name(s->op));
    if (harness_wl_apply(&c->st, s, why, sizeof why))
        return ann_fail(ANN_EINTERNAL, "%s: %s (the runner checked the steps)", s->where, why);
    if (c->in_memory) {
        json_object_set_new(rec, "store_bytes", json_null());
        json_object_set_new(rec, "store_bytes_reason",
                            json_sprintf("%s keeps its updates in memory; its files are the build's",
                                         c->ops->name));
    } else {
        uint64_t bytes = 0;
        if ((rc = ann_dir_bytes(c->work_dir, &bytes)))
            return rc;
        json_object_set_new(rec, "store_bytes", json_integer((json_int_t)bytes));
    }
    return 0;
}

/* ---- the cell ---------------------------------------------------------- */

static int wl_prepare(const json_t *spec, wl_cell *c)
{
    int rc = 0;
    harness_problems probs = { 0 };
    const json_t *cell = json_object_get(spec, "cell");
    const char *dataset_dir = json_string_value(json_object_get(spec, "dataset_dir"));
    const char *gt_path = json_string_value(json_object_get(spec, "workload_gt"));
    c->ops = ann_engine_find(json_string_value(json_object_get(cell, "engine")));
    c->k = (uint32_t)json_integer_value(json_object_get(spec, "k"));
    c->threads = (uint32_t)json_integer_value(json_object_get(cell, "threads"));
    c->work_dir = json_string_value(json_object_get(spec, "work_dir"));
    c->neighbors_prefix = json_string_value(json_object_get(spec, "neighbors_prefix"));
    if (!c->ops || !dataset_dir || !gt_path || !c->work_dir || c->k == 0 || c->k > 1024 ||
        c->threads == 0 || c->threads > 1024)
        return ann_fail(ANN_ECONFIG, "workload cell spec: needs a registered engine, dataset_dir, "
                                     "workload_gt, work_dir, k in [1, 1024], threads in [1, 1024]");
    if (harness_workload_parse(json_object_get(spec, "workload"), NULL, &c->w, &probs)) {
        rc = ann_fail(ANN_ECONFIG, "workload cell spec: %s", probs.msgs[0]);
        harness_problems_fini(&probs);
        return rc;
    }
    if ((rc = ann_bundle_open(dataset_dir, &c->ds)) || (rc = ann_bundle_base(&c->ds, &c->base)) ||
        (rc = ann_bundle_queries(&c->ds, &c->queries)) ||
        (rc = ann_gt_load(gt_path, c->ds.n, &c->gt)))
        return rc;
    uint32_t want_q = (uint32_t)json_integer_value(json_object_get(spec, "queries"));
    c->nq = want_q && want_q < c->ds.nq ? want_q : c->ds.nq;
    c->dim = c->ds.dim;
    size_t searches = 0;
    for (size_t i = 0; i < c->w.n; i++)
        searches += c->w.steps[i].op == HARNESS_WL_SEARCH;
    if (!c->gt.dists || c->gt.k < c->k || (uint64_t)c->gt.nq != (uint64_t)searches * c->nq)
        return ann_fail(ANN_ECORRUPT, "%s: %u x %u ground truth, not %zu search steps x %u queries "
                                      "at k %u with distances",
                        gt_path, c->gt.nq, c->gt.k, searches, c->nq, c->k);
    if ((rc = harness_wl_state_init(&c->st, c->ds.n)))
        return ann_fail(rc, "workload: no memory for the live set");
    c->ids = calloc((size_t)c->nq * c->k, sizeof *c->ids);
    c->counts = calloc(c->nq, sizeof *c->counts);
    c->dists = calloc(c->k, sizeof *c->dists);
    c->lat_ns = calloc(c->nq, sizeof *c->lat_ns);
    if (!c->ids || !c->counts || !c->dists || !c->lat_ns)
        return ann_fail(-ENOMEM, "workload: no memory for %u queries", c->nq);
    return 0;
}

static int wl_open(const json_t *spec, wl_cell *c)
{
    int rc = 0;
    const json_t *cell = json_object_get(spec, "cell");
    const char *index_dir = json_string_value(json_object_get(spec, "index_dir"));
    if (!c->ops->insert || !c->ops->remove)
        return ann_fail(ANN_ECONFIG, "%s has no insert/remove; a workload needs an engine that "
                                     "accepts updates", c->ops->name);
    if (!index_dir)
        return ann_fail(ANN_ECONFIG, "workload cell spec: no index_dir");
    /* a copy: the cached build is never written */
    if ((rc = ann_tree_remove(c->work_dir)) || (rc = copy_tree(index_dir, c->work_dir)))
        return rc;
    if ((rc = ann_engine_open(c->ops, c->work_dir, json_object_get(cell, "open"), &c->eng,
                              &c->open_report)))
        return rc;
    c->in_memory = !strcmp(harness_jstr(c->open_report, "io"), "memory");
    if (c->w.live_build && c->ops->size(c->eng) != 0)
        return ann_fail(ANN_ECORRUPT, "%s: holds %llu vectors, a live build starts from none",
                        index_dir, (unsigned long long)c->ops->size(c->eng));
    if (!c->w.live_build && c->ops->size(c->eng) != c->w.steps[0].end)
        return ann_fail(ANN_ECORRUPT, "%s: holds %llu vectors, the workload's first step inserts %llu",
                        index_dir, (unsigned long long)c->ops->size(c->eng),
                        (unsigned long long)c->w.steps[0].end);
    c->ctxs = calloc(c->threads, sizeof *c->ctxs);
    if (!c->ctxs)
        return ann_fail(-ENOMEM, "workload: no memory");
    for (uint32_t i = 0; i < c->threads; i++)
        if ((rc = ann_engine_ctx_new(c->ops, c->eng, json_object_get(cell, "search"), c->k,
                                     &c->ctxs[i])))
            return rc;
    return 0;
}

int harness_workload_cell_main(const json_t *spec, const char *out_path)
{
    int rc = 0;
    wl_cell c = { 0 };
    json_t *steps = json_array(), *result = NULL;
    if (!(rc = wl_prepare(spec, &c)) && !(rc = wl_open(spec, &c))) {
        for (size_t i = 0; !rc && i < c.w.n; i++) {
            json_t *rec = json_object();
            if (!(rc = wl_step(&c, i, rec)))
                json_array_append(steps, rec);
            json_decref(rec);
        }
    }
    if (!rc) {
        result = json_pack("{s:O, s:O, s:{s:s, s:i, s:i}}", "steps", steps, "open_report",
                           c.open_report ? c.open_report : json_null(), "workload", "steps_hash",
                           c.w.hash, "writers", (int)c.w.writers, "search_steps",
                           (int)c.search_no);
        char tmp[4400];
        FILE *fp = NULL;
        if (!(rc = ann_tmpfile_create(out_path, tmp, sizeof tmp, &fp))) {
            if (json_dumpf(result, fp, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10))) {
                ann_tmpfile_discard(fp, tmp);
                rc = ann_fail(-EIO, "%s: write", tmp);
            } else {
                rc = ann_tmpfile_commit(fp, tmp, out_path);
            }
        }
    }
    if (rc)
        fprintf(stderr, "annlab cell: %s\n", ann_errmsg(rc));
    wl_cell_fini(&c);
    if (c.work_dir)
        ann_tree_remove(c.work_dir);
    json_decref(steps);
    json_decref(result);
    return rc ? (ann_is_transient(rc) ? HARNESS_EXIT_TRANSIENT : 1) : 0;
}
