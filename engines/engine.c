/*
 * engine.c: the engine-independent half of the contract: the wrappers every
 * caller goes through (atomic builds with their build.json, open with its
 * report, search contexts), each validating parameters against the
 * engine's declared tables so no engine has to; per-query statistics; and
 * directory helpers.
 */
#include "engines/engine.h"

#include "engines/core/digest.h"
#include "engines/core/fileio.h"
#include "engines/core/stagedir.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *ann_stage_name(ann_stage s)
{
    static const char *const names[ANN_STAGE_COUNT] = {
        "pq_table", "adc", "candlist", "full_dist", "decode", "io_submit", "io_wait",
    };
    return (unsigned)s < ANN_STAGE_COUNT ? names[s] : "?";
}

void ann_stats_add(ann_stats *acc, const ann_stats *q)
{
    acc->reads += q->reads;
    acc->bytes_read += q->bytes_read;
    acc->hops += q->hops;
    acc->full_dists += q->full_dists;
    acc->code_dists += q->code_dists;
    acc->cache_hits += q->cache_hits;
    acc->io_wait_ns += q->io_wait_ns;
    acc->cpu_ns += q->cpu_ns;
    acc->stage_mask |= q->stage_mask;
    for (int s = 0; s < ANN_STAGE_COUNT; s++)
        acc->stage_ns[s] += q->stage_ns[s];
}

/*
 * Call visit(path, st, ctx) for every entry of dir but "." and "..", in
 * readdir order, stopping at the first non-zero return, which is returned.
 * st is NULL when lstat failed (errno still set).  A missing dir returns
 * DIR_WALK_MISSING (positive, not an error) when missing_ok, else -errno
 * "<dir>: opendir" like any other opendir failure.
 */
#define DIR_WALK_MISSING 1

typedef int (*dir_visit_fn)(const char *path, const struct stat *st, void *ctx);

static int dir_walk(const char *dir, int missing_ok, dir_visit_fn visit, void *ctx)
{
    int rc = 0;
    DIR *d = opendir(dir);
    if (!d)
        return missing_ok && errno == ENOENT ? DIR_WALK_MISSING
                                             : ann_fail_errno("%s: opendir", dir);
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        rc = visit(path, lstat(path, &st) == 0 ? &st : NULL, ctx);
    }
    closedir(d);
    return rc;
}

/* A live store's files come and go while they are counted (RocksDB deletes
 * compacted tables in the background): one gone between readdir and lstat
 * has no bytes left to count. */
static int dir_bytes_visit(const char *path, const struct stat *st, void *ctx)
{
    uint64_t *bytes = ctx;
    if (!st)
        return errno == ENOENT ? 0 : ann_fail_errno("%s: stat", path);
    if (S_ISDIR(st->st_mode)) {
        int rc = dir_walk(path, 1, dir_bytes_visit, bytes);
        return rc == DIR_WALK_MISSING ? 0 : rc;
    }
    if (S_ISREG(st->st_mode))
        *bytes += (uint64_t)st->st_size;
    return 0;
}

int ann_dir_bytes(const char *dir, uint64_t *bytes)
{
    return dir_walk(dir, 0, dir_bytes_visit, bytes);
}

int ann_dir_remove(const char *dir)
{
    return ann_tree_remove(dir);
}

int ann_engine_build(const ann_engine_ops *ops, const ann_vecsrc *src, const json_t *params,
                     const char *index_dir, const ann_build_ctx *bctx, json_t **report_out)
{
    static const ann_build_ctx no_ctx = { 0 };
    int rc = 0;
    ann_stagedir sd;
    json_t *report = NULL, *info = NULL;

    memset(&sd, 0, sizeof sd);
    rc = ann_params_validate(params, ops->build_params, "build");
    if (rc)
        return rc;
    struct stat st;
    if (stat(index_dir, &st) == 0)
        return ann_fail(-EEXIST, "%s: index directory already exists", index_dir);
    /* "<index_dir>.tmp.<pid>-<start>": temporaries of dead builders are
     * removed here, a live sibling's are left to it */
    rc = ann_stagedir_begin(&sd, index_dir, 0);
    if (rc)
        return rc;
    const char *tmp = ann_stagedir_path(&sd);

    report = json_object();
    double w0 = ann_clock_s(CLOCK_MONOTONIC), c0 = ann_clock_s(CLOCK_PROCESS_CPUTIME_ID);
    rc = ops->build(src, params, bctx ? bctx : &no_ctx, tmp, report);
    if (rc) {
        rc = ann_fail_wrap(rc, "build %s into %s", ops->name, index_dir);
        goto out;
    }
    double wall = ann_clock_s(CLOCK_MONOTONIC) - w0, cpu = ann_clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t bytes = 0;
    rc = ann_dir_bytes(tmp, &bytes);
    if (rc)
        goto out;
    /* whole-file digests: `annlab run` checks them before it trusts a cached index */
    json_t *files = NULL;
    rc = ann_digest_tree(tmp, &files);
    if (rc)
        goto out;

    json_t *params_copy = params ? json_deep_copy(params) : json_object();
    /* "format" is build.json's own; "engine_format" the index's (engine.h) */
    json_t *engine_format =
        ops->format_version ? json_integer(ops->format_version) : json_null();
    info = json_pack("{s:s, s:i, s:o, s:o, s:s, s:I, s:i, s:s, s:f, s:f, s:I, s:I, s:O}",
                     "engine", ops->name, "format", 1, "engine_format", engine_format, "params",
                     params_copy, "source", src->id,
                     "n", (json_int_t)src->n, "dim", (int)src->dim,
                     "metric", ann_metric_name(src->metric), "build_seconds", wall,
                     "build_cpu_seconds", cpu, "build_peak_rss_bytes",
                     (json_int_t)ru.ru_maxrss * 1024, "bytes_on_disk", (json_int_t)bytes,
                     "engine_report", report);
    if (info)
        json_object_set_new(info, "files", files);
    else
        json_decref(files);
    if (!info) {
        rc = ann_fail(-ENOMEM, "build.json: cannot assemble");
        goto out;
    }
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/build.json", tmp);
    if (json_dump_file(info, path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
        rc = ann_fail_errno("%s: cannot write", path); /* ENOSPC stays ENOSPC */
        goto out;
    }
    /* fsync, rename into place; a sibling that got there first (EEXIST) is
     * a transient failure of this build (ANN_EBUSY: another process in the
     * way), whose index is then the other's */
    rc = ann_stagedir_commit(&sd);
    if (rc == -EEXIST)
        rc = ann_fail(ANN_EBUSY, "%s: another build renamed its index there first", index_dir);
    if (rc)
        goto out;
    if (report_out) {
        *report_out = info;
        info = NULL;
    }
out:
    ann_stagedir_abort(&sd);
    json_decref(report);
    json_decref(info);
    return rc;
}

void ann_open_report_set(json_t *report, const char *io, int o_direct, uint64_t cache_bytes)
{
    json_object_set_new(report, "io", json_string(io));
    json_object_set_new(report, "o_direct", json_boolean(o_direct));
    json_object_set_new(report, "cache_bytes", json_integer((json_int_t)cache_bytes));
}

int ann_engine_open(const ann_engine_ops *ops, const char *index_dir, const json_t *open_params,
                    ann_engine **out, json_t **report_out)
{
    *out = NULL;
    if (report_out)
        *report_out = NULL;
    int rc = ann_params_validate(open_params, ops->open_params, "open");
    if (rc)
        return rc;
    json_t *report = json_object();
    if (!report)
        return ann_fail(-ENOMEM, "open %s: no memory", index_dir);
    rc = ops->open(index_dir, open_params, out, report);
    if (!rc && report_out) {
        *report_out = report;
        report = NULL;
    }
    json_decref(report);
    return rc;
}

int ann_engine_ctx_new(const ann_engine_ops *ops, ann_engine *eng, const json_t *search_params,
                       uint32_t k_max, ann_ctx **out)
{
    *out = NULL;
    if (k_max == 0)
        k_max = 1;
    int rc = ann_params_validate(search_params, ops->search_params, "search");
    /* a search list shorter than k used to run as L = k while the cell said L */
    if (!rc)
        rc = ann_params_check_k(search_params, ops->search_params, k_max, "search");
    if (rc)
        return rc;
    return ops->ctx_new(eng, search_params, k_max, out);
}
