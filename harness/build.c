/*
 * build.c: `annlab build SPEC.json`, one index build in its own process.
 * The engine's build goes through ann_engine_build, which writes to a
 * temporary directory and renames it into place only when complete, so the
 * runner's cache never holds a half-built index.
 *
 * SPEC.json: {"engine", "build" (parameters), "dataset_dir", "index_dir",
 * and optionally "artifact_dir": the shared build-artifact cache,
 * ann_build_ctx.artifact_dir (engines/engine.h), and "base_rows": build
 * over the first base_rows rows of the base only (a workload's first
 * step, harness/workload.h)}.
 */
#include "harness/child.h"

#include "engines/core/status.h"
#include "engines/engine.h"
#include "datasets/bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The first n rows of another source (same id: the artifact cache's key
 * holds n, so a prefix never takes the whole base's PQ or graph). */
typedef struct prefix_src {
    ann_vecsrc *inner;
} prefix_src;

static int prefix_read(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out)
{
    const prefix_src *p = src->impl;
    if (first > src->n || count > src->n - first)
        return ann_fail(ANN_EPARAM, "%s: rows [%llu, %llu) past the first %llu", src->id,
                        (unsigned long long)first, (unsigned long long)(first + count),
                        (unsigned long long)src->n);
    return ann_vecsrc_read(p->inner, first, count, out);
}

static int prefix_rows(const ann_vecsrc *src, uint64_t first, uint64_t count, const float **out)
{
    const prefix_src *p = src->impl;
    if (first > src->n || count > src->n - first)
        return ann_fail(ANN_EPARAM, "%s: rows [%llu, %llu) past the first %llu", src->id,
                        (unsigned long long)first, (unsigned long long)(first + count),
                        (unsigned long long)src->n);
    return p->inner->rows(p->inner, first, count, out);
}

static void prefix_destroy(ann_vecsrc *src)
{
    prefix_src *p = src->impl;
    ann_vecsrc_destroy(p->inner);
    free(p);
    free(src);
}

/* Wrap *src (taken over) as its first n rows. */
static int prefix_wrap(ann_vecsrc **src, uint64_t n)
{
    if (n > (*src)->n) /* 0: an empty index (a workload's live build) */
        return ann_fail(ANN_ECONFIG, "base_rows %llu: the base has %llu rows",
                        (unsigned long long)n, (unsigned long long)(*src)->n);
    ann_vecsrc *s = calloc(1, sizeof *s);
    prefix_src *p = calloc(1, sizeof *p);
    if (!s || !p) {
        free(s);
        free(p);
        return ann_fail(-ENOMEM, "base_rows: no memory");
    }
    *s = **src;
    s->n = n;
    s->read = prefix_read;
    s->rows = (*src)->rows ? prefix_rows : NULL; /* the copy above took the inner's */
    s->destroy = prefix_destroy;
    s->impl = p;
    p->inner = *src;
    *src = s;
    return 0;
}

int harness_build_main(const char *spec_path)
{
    int rc = 0;
    json_error_t jerr;
    ann_bundle ds = { 0 };
    ann_vecsrc *src = NULL;
    json_t *spec = json_load_file(spec_path, 0, &jerr);
    if (!spec) {
        fprintf(stderr, "annlab build: %s: %s\n", spec_path, jerr.text);
        return 1;
    }
    const char *engine = json_string_value(json_object_get(spec, "engine"));
    const char *dataset_dir = json_string_value(json_object_get(spec, "dataset_dir"));
    const char *index_dir = json_string_value(json_object_get(spec, "index_dir"));
    const ann_engine_ops *ops = ann_engine_find(engine);
    const char *lock_fd = getenv("ANNLAB_INDEX_LOCK_FD");
    if (lock_fd && index_dir) {
        /* the lock is shared with the runner: say who is building */
        char line[4400];
        int fd = atoi(lock_fd);
        int n = snprintf(line, sizeof line, "pid %d: annlab build %s\n", (int)getpid(), index_dir);
        if (fd > 2 && n > 0 && ftruncate(fd, 0) == 0 && pwrite(fd, line, (size_t)n, 0) == n)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
        unsetenv("ANNLAB_INDEX_LOCK_FD");
    }
    if (!ops || !dataset_dir || !index_dir) {
        rc = ann_fail(ANN_ECONFIG, "%s: needs a registered engine, dataset_dir and index_dir",
                      spec_path);
        goto out;
    }
    rc = ann_bundle_open(dataset_dir, &ds);
    if (rc)
        goto out;
    rc = ann_bundle_base(&ds, &src);
    if (rc)
        goto out;
    const json_t *rows = json_object_get(spec, "base_rows");
    if (rows && (rc = prefix_wrap(&src, (uint64_t)json_integer_value(rows))))
        goto out;
    /* the shared DiskANN artifact cache, when the runner names one */
    ann_build_ctx bctx = {
        .artifact_dir = json_string_value(json_object_get(spec, "artifact_dir")),
    };
    rc = ann_engine_build(ops, src, json_object_get(spec, "build"), index_dir, &bctx, NULL);
out:
    if (rc)
        fprintf(stderr, "annlab build: %s\n", ann_errmsg(rc));
    ann_vecsrc_destroy(src);
    ann_bundle_close(&ds);
    json_decref(spec);
    return rc ? (ann_is_transient(rc) ? HARNESS_EXIT_TRANSIENT : 1) : 0;
}
