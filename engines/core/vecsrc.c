/*
 * vecsrc.c: vector sources over memory and over big-ann vector files.
 */
#include "engines/core/vecsrc.h"

#include "engines/core/parallel.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ann_metric_name(ann_metric m)
{
    switch (m) {
    case ANN_METRIC_L2: return "l2";
    case ANN_METRIC_IP: return "ip";
    case ANN_METRIC_COSINE: return "cosine";
    }
    return NULL;
}

int ann_metric_parse(const char *name, ann_metric *out)
{
    if (!name)
        return ann_fail(ANN_EPARAM, "metric: missing");
    if (!strcmp(name, "l2") || !strcmp(name, "euclidean"))
        *out = ANN_METRIC_L2;
    else if (!strcmp(name, "ip") || !strcmp(name, "dot"))
        *out = ANN_METRIC_IP;
    else if (!strcmp(name, "cosine") || !strcmp(name, "angular"))
        *out = ANN_METRIC_COSINE;
    else
        return ann_fail(ANN_EPARAM, "metric: \"%s\" is not one of l2, ip, cosine", name);
    return 0;
}

static int mem_read(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out)
{
    if (first > src->n || count > src->n - first)
        return ann_fail(ANN_EPARAM, "vector source: rows [%llu, %llu) beyond n=%llu",
                        (unsigned long long)first, (unsigned long long)(first + count),
                        (unsigned long long)src->n);
    const float *data = src->impl;
    memcpy(out, data + first * src->dim, count * src->dim * sizeof(float));
    return 0;
}

static int mem_rows(const ann_vecsrc *src, uint64_t first, uint64_t count, const float **out)
{
    if (first > src->n || count > src->n - first)
        return ann_fail(ANN_EPARAM, "vector source: rows [%llu, %llu) beyond n=%llu",
                        (unsigned long long)first, (unsigned long long)(first + count),
                        (unsigned long long)src->n);
    *out = (const float *)src->impl + first * src->dim;
    return 0;
}

static void mem_destroy(ann_vecsrc *src)
{
    free(src);
}

int ann_vecsrc_from_memory(const float *data, uint64_t n, uint32_t dim, ann_metric metric,
                           ann_vecsrc **out)
{
    ann_vecsrc *s = calloc(1, sizeof *s);
    if (!s)
        return ann_fail(-ENOMEM, "vector source: no memory");
    s->n = n;
    s->dim = dim;
    s->metric = metric;
    snprintf(s->id, sizeof s->id, "memory-%llux%u", (unsigned long long)n, dim);
    s->read = mem_read;
    s->rows = mem_rows;
    s->destroy = mem_destroy;
    s->impl = (void *)data;
    *out = s;
    return 0;
}

static int file_read(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out)
{
    return ann_vecfile_read_f32(src->impl, first, count, out);
}

static int file_rows(const ann_vecsrc *src, uint64_t first, uint64_t count, const float **out)
{
    return ann_vecfile_rows_f32(src->impl, first, count, out);
}

static void file_destroy(ann_vecsrc *src)
{
    ann_vecfile_close(src->impl);
    free(src->impl);
    free(src);
}

int ann_vecsrc_open_file(const char *path, ann_metric metric, ann_vecsrc **out)
{
    int rc = 0;
    ann_vecsrc *s = calloc(1, sizeof *s);
    ann_vecfile *vf = calloc(1, sizeof *vf);
    if (!s || !vf) {
        rc = ann_fail(-ENOMEM, "vector source: no memory");
        goto out;
    }
    rc = ann_vecfile_open(path, vf);
    if (rc)
        goto out;
    s->n = vf->n;
    s->dim = vf->dim;
    s->metric = metric;
    snprintf(s->id, sizeof s->id, "file-%llux%u", (unsigned long long)vf->n, vf->dim);
    s->read = file_read;
    /* float32 files lend their rows from a read-only mapping; without one
     * (u8/i8, or mmap failing) the source still reads */
    if (vf->elem == ANN_ELEM_F32 && vf->n > 0 && ann_vecfile_map(vf) == 0)
        s->rows = file_rows;
    s->destroy = file_destroy;
    s->impl = vf;
    *out = s;
    s = NULL;
    vf = NULL;
out:
    free(vf);
    free(s);
    return rc;
}

int ann_vecsrc_view(const ann_vecsrc *src, uint64_t first, uint64_t count, float *buf,
                    const float **out)
{
    if (src->rows)
        return src->rows(src, first, count, out);
    int rc = src->read(src, first, count, buf);
    if (rc == 0)
        *out = buf;
    return rc;
}

#define HOLD_CHUNK 4096 /* rows per read of a held copy */

typedef struct hold_job {
    const ann_vecsrc *src;
    float *x;
} hold_job;

static int hold_run(void *arg, uint64_t b, uint64_t e, int worker)
{
    (void)worker;
    const hold_job *j = arg;
    uint64_t r0 = b * HOLD_CHUNK, r1 = e * HOLD_CHUNK;
    if (r1 > j->src->n)
        r1 = j->src->n;
    return ann_vecsrc_read(j->src, r0, r1 - r0, j->x + r0 * j->src->dim);
}

int ann_vecsrc_read_all(const ann_vecsrc *src, int threads, float **out)
{
    *out = NULL;
    float *x = malloc((src->n ? src->n : 1) * (size_t)src->dim * sizeof(float));
    if (!x)
        return ann_fail(-ENOMEM, "%s: no memory for %llu x %u vectors", src->id,
                        (unsigned long long)src->n, src->dim);
    hold_job j = { src, x };
    int rc = ann_parallel_for(threads, (src->n + HOLD_CHUNK - 1) / HOLD_CHUNK, 1, hold_run, &j);
    if (rc) {
        free(x);
        return rc;
    }
    *out = x;
    return 0;
}

int ann_vecsrc_hold(const ann_vecsrc *src, int threads, ann_vecsrc_held *out)
{
    *out = (ann_vecsrc_held){ 0 };
    if (src->rows && src->n > 0)
        return src->rows(src, 0, src->n, &out->x);
    int rc = ann_vecsrc_read_all(src, threads, &out->copy);
    out->x = out->copy;
    return rc;
}

void ann_vecsrc_unhold(ann_vecsrc_held *h)
{
    if (!h)
        return;
    free(h->copy);
    *h = (ann_vecsrc_held){ 0 };
}

void ann_vecsrc_destroy(ann_vecsrc *src)
{
    if (src && src->destroy)
        src->destroy(src);
}
