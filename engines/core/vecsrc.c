/*
 * vecsrc.c: vector sources over memory and over big-ann vector files.
 */
#include "engines/core/vecsrc.h"

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
    s->destroy = mem_destroy;
    s->impl = (void *)data;
    *out = s;
    return 0;
}

static int file_read(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out)
{
    return ann_vecfile_read_f32(src->impl, first, count, out);
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

void ann_vecsrc_destroy(ann_vecsrc *src)
{
    if (src && src->destroy)
        src->destroy(src);
}
