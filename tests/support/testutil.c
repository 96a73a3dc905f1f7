/*
 * testutil.c: helpers for tests (see testutil.h).
 */
#include "tests/support/testutil.h"

#include "engines/core/status.h"
#include "engines/engine.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void tu_mount_tmpfs(const char *dir, unsigned size_mb)
{
    assert_int_equal(mkdir(dir, 0755), 0);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=%um annlab-test '%s' 2>/dev/null", size_mb,
             dir);
    if (system(cmd) != 0) {
        rmdir(dir);
        print_message("mounting a tmpfs is not allowed here: skipped\n");
        skip();
    }
}

int tu_count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += !strncmp(de->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

char *tu_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/annlab-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(tmpl))
        return NULL;
    return strdup(tmpl);
}

void tu_rmdir(char *dir)
{
    if (!dir)
        return;
    ann_dir_remove(dir);
    free(dir);
}

uint64_t tu_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

float tu_uniform(uint64_t *s)
{
    return (float)((tu_rand(s) >> 40) * (1.0 / (1ULL << 24)));
}

float tu_gauss(uint64_t *s)
{
    float u1 = tu_uniform(s), u2 = tu_uniform(s);
    if (u1 < 1e-12f)
        u1 = 1e-12f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

float *tu_clustered(uint64_t n, uint32_t dim, uint32_t clusters, uint64_t seed, int normalize)
{
    uint64_t s = seed;
    float *centres = malloc((size_t)clusters * dim * sizeof(float));
    float *x = malloc((size_t)n * dim * sizeof(float));
    if (!centres || !x) {
        free(centres);
        free(x);
        return NULL;
    }
    for (size_t i = 0; i < (size_t)clusters * dim; i++)
        centres[i] = tu_gauss(&s);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t c = (uint32_t)(tu_rand(&s) % clusters);
        float *row = x + i * dim;
        double norm = 0;
        for (uint32_t j = 0; j < dim; j++) {
            row[j] = centres[(size_t)c * dim + j] + 0.3f * tu_gauss(&s);
            norm += (double)row[j] * row[j];
        }
        if (normalize && norm > 0)
            for (uint32_t j = 0; j < dim; j++)
                row[j] = (float)(row[j] / sqrt(norm));
    }
    free(centres);
    return x;
}

int tu_write_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    size_t w = fwrite(data, 1, len, fp);
    int rc = fclose(fp);
    return w == len && rc == 0 ? 0 : -1;
}

void *tu_read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    void *buf = malloc(sz > 0 ? (size_t)sz : 1);
    if (buf && fread(buf, 1, (size_t)sz, fp) != (size_t)sz) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf && len)
        *len = (size_t)sz;
    return buf;
}

const char *tu_shared_data(void)
{
    static char path[4096];
    const char *env = getenv("ANNLAB_SHARED");
    snprintf(path, sizeof path, "%s/data", env && *env ? env : "../shared");
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? path : NULL;
}

static int copy_only_read(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out)
{
    return ann_vecsrc_read(src->impl, first, count, out);
}

ann_vecsrc tu_copy_only(const ann_vecsrc *over)
{
    return (ann_vecsrc){ .n = over->n, .dim = over->dim, .metric = over->metric,
                         .id = "copy-only", .read = copy_only_read, .impl = (void *)over };
}

void tu_build_base_rows(const char *engine, const ann_vecsrc *src, const char *params,
                        const char *path, char how[16])
{
    json_error_t err;
    json_t *bp = json_loads(params, 0, &err), *rep = NULL;
    if (!bp)
        fail_msg("bad JSON: %s", params);
    int rc = ann_engine_build(ann_engine_find(engine), src, bp, path, NULL, &rep);
    if (rc)
        fail_msg("build %s: %s", path, ann_errmsg(rc));
    const char *b = json_string_value(
        json_object_get(json_object_get(rep, "engine_report"), "base_rows"));
    snprintf(how, 16, "%s", b ? b : "?");
    json_decref(rep);
    json_decref(bp);
}

/* One setting's answers into ids / dists (nq x k), stats into *st, the
 * store's kv_prefetch count into *prefetched; every step asserted. */
static void answers(const char *name, const char *index, const char *open_json,
                    const char *search_json, const float *queries, int nq, uint32_t dim,
                    uint32_t k, uint32_t *ids, float *dists, ann_stats *st,
                    kv_store *(*kv_of)(ann_engine *), uint64_t *prefetched)
{
    const ann_engine_ops *ops = ann_engine_find(name);
    ann_engine *eng = NULL;
    ann_ctx *ctx = NULL;
    json_t *op = json_loads(open_json, 0, NULL), *sp = json_loads(search_json, 0, NULL);
    assert_non_null(ops);
    assert_non_null(op);
    assert_non_null(sp);
    assert_int_equal(ann_engine_open(ops, index, op, &eng, NULL), 0);
    assert_int_equal(ann_engine_ctx_new(ops, eng, sp, k, &ctx), 0);
    json_decref(op);
    json_decref(sp);
    for (int i = 0; i < nq; i++)
        assert_int_equal(ops->search(ctx, queries + (size_t)i * dim, k, ids + (size_t)i * k,
                                     dists + (size_t)i * k, st),
                         (int)k);
    kv_stats ks;
    kv_store_stats(kv_of(eng), &ks);
    *prefetched = ks.prefetched;
    ops->ctx_free(ctx);
    ops->close(eng);
}

void tu_same_answers(const char *name, const char *index, const char *open_json,
                     const char *search_plain, const char *search_hinted, const float *queries,
                     int nq, uint32_t dim, uint32_t k, kv_store *(*kv_of)(ann_engine *),
                     ann_stats st[2], uint64_t hinted[2])
{
    size_t n = (size_t)nq * k;
    uint32_t *ids = malloc(2 * n * sizeof *ids);
    float *d = malloc(2 * n * sizeof *d);
    assert_non_null(ids);
    assert_non_null(d);
    const char *search[2] = { search_plain, search_hinted };
    for (int i = 0; i < 2; i++) {
        st[i] = (ann_stats){ 0 };
        answers(name, index, open_json, search[i], queries, nq, dim, k, ids + i * n, d + i * n,
                &st[i], kv_of, &hinted[i]);
    }
    assert_memory_equal(ids, ids + n, n * sizeof *ids);
    assert_memory_equal(d, d + n, n * sizeof *d);
    assert_int_equal(st[0].reads, st[1].reads);
    free(ids);
    free(d);
}

struct tu_churn {
    char file[4200], dir[4200];
    volatile int stop;
    pthread_t th;
};

static void *churn_run(void *arg)
{
    tu_churn *c = arg;
    while (!c->stop) {
        FILE *fp = fopen(c->file, "w");
        if (fp) {
            fputs("gone soon", fp);
            fclose(fp);
        }
        if (mkdir(c->dir, 0755) == 0)
            rmdir(c->dir);
        unlink(c->file);
    }
    return NULL;
}

tu_churn *tu_churn_start(const char *dir)
{
    tu_churn *c = calloc(1, sizeof *c);
    assert_non_null(c);
    snprintf(c->file, sizeof c->file, "%s/churn.tmp", dir);
    snprintf(c->dir, sizeof c->dir, "%s/churn.d", dir);
    assert_int_equal(pthread_create(&c->th, NULL, churn_run, c), 0);
    return c;
}

void tu_churn_stop(tu_churn *c)
{
    c->stop = 1;
    pthread_join(c->th, NULL);
    free(c);
}

int tu_run_capture(const char *cmd, char *out, size_t len)
{
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    size_t got = fread(out, 1, len - 1, fp);
    out[got] = '\0';
    int st = pclose(fp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
