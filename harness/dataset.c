/*
 * dataset.c: read-only access to a prepared bundle for the harness: the
 * manifest's identity fields and the query, warm-up, ground-truth and base
 * files, each checked against the manifest before use.
 */
#include "harness/dataset.h"

#include "engines/core/status.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int manifest_u64(const json_t *m, const char *path, const char *key, uint64_t *out)
{
    const json_t *v = json_object_get(m, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return ann_fail(ANN_EFORMAT, "%s: field \"%s\" missing or not a non-negative integer", path,
                        key);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int check_file(const harness_dataset *ds, const char *file, uint64_t n, uint32_t dim)
{
    char path[4400];
    ann_vecfile vf = { .fd = -1 };
    snprintf(path, sizeof path, "%s/%s", ds->dir, file);
    int rc = ann_vecfile_open(path, &vf);
    if (rc)
        return rc;
    if (vf.n != n || vf.dim != dim)
        rc = ann_fail(ANN_ECORRUPT, "%s: %llu x %u, manifest.json says %llu x %u", path,
                      (unsigned long long)vf.n, vf.dim, (unsigned long long)n, dim);
    ann_vecfile_close(&vf);
    return rc;
}

int harness_dataset_open(const char *dir, harness_dataset *ds)
{
    int rc = 0;
    char path[4400];
    json_error_t jerr;
    json_t *m = NULL;
    memset(ds, 0, sizeof *ds);
    snprintf(ds->dir, sizeof ds->dir, "%s", dir);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (access(path, F_OK) != 0)
        return ann_fail(ANN_ENOTFOUND, "%s: not a prepared dataset (no manifest.json)", dir);
    m = json_load_file(path, 0, &jerr);
    if (!m) {
        rc = ann_fail(ANN_EFORMAT, "%s: line %d: %s", path, jerr.line, jerr.text);
        goto out;
    }
    uint64_t n = 0, dim = 0, nq = 0, gt_k = 0;
    if ((rc = manifest_u64(m, path, "n", &n)) || (rc = manifest_u64(m, path, "dim", &dim)) ||
        (rc = manifest_u64(m, path, "nq", &nq)) || (rc = manifest_u64(m, path, "gt_k", &gt_k)))
        goto out;
    if (dim == 0 || dim > 65536 || nq > UINT32_MAX || gt_k > UINT32_MAX) {
        rc = ann_fail(ANN_EFORMAT, "%s: dim/nq/gt_k out of range", path);
        goto out;
    }
    ds->n = n;
    ds->dim = (uint32_t)dim;
    ds->nq = (uint32_t)nq;
    ds->gt_k = (uint32_t)gt_k;
    if (ann_metric_parse(json_string_value(json_object_get(m, "metric")), &ds->metric)) {
        rc = ann_fail(ANN_EFORMAT, "%s: field \"metric\" must be l2, ip or cosine", path);
        goto out;
    }
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *sum = json_string_value(json_object_get(m, "checksum"));
    if (!name || !sum) {
        rc = ann_fail(ANN_EFORMAT, "%s: field \"%s\" missing", path, name ? "checksum" : "name");
        goto out;
    }
    snprintf(ds->name, sizeof ds->name, "%s", name);
    snprintf(ds->checksum, sizeof ds->checksum, "%s", sum);
    if ((rc = check_file(ds, "base.fbin", ds->n, ds->dim)) ||
        (rc = check_file(ds, "query.fbin", ds->nq, ds->dim)))
        goto out;
    snprintf(path, sizeof path, "%s/warmup.fbin", dir);
    if (access(path, F_OK) == 0) {
        ann_vecfile vf = { .fd = -1 };
        rc = ann_vecfile_open(path, &vf);
        if (rc)
            goto out;
        if (vf.dim != ds->dim)
            rc = ann_fail(ANN_ECORRUPT, "%s: dim %u, manifest.json says %u", path, vf.dim, ds->dim);
        ds->n_warmup = vf.n > UINT32_MAX ? UINT32_MAX : (uint32_t)vf.n;
        ann_vecfile_close(&vf);
    }
out:
    json_decref(m);
    return rc;
}

static int load_rows(const harness_dataset *ds, const char *file, uint64_t count, float **out)
{
    char path[4400];
    ann_vecfile vf = { .fd = -1 };
    float *rows = NULL;
    snprintf(path, sizeof path, "%s/%s", ds->dir, file);
    int rc = ann_vecfile_open(path, &vf);
    if (rc)
        goto out;
    if (count > vf.n)
        count = vf.n;
    rows = malloc((count ? count : 1) * ds->dim * sizeof(float));
    if (!rows) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %llu rows", path, (unsigned long long)count);
        goto out;
    }
    rc = ann_vecfile_read_f32(&vf, 0, count, rows);
    if (rc)
        goto out;
    *out = rows;
    rows = NULL;
out:
    free(rows);
    ann_vecfile_close(&vf);
    return rc;
}

int harness_dataset_queries(const harness_dataset *ds, float **out)
{
    return load_rows(ds, "query.fbin", ds->nq, out);
}

int harness_dataset_warmup(const harness_dataset *ds, uint32_t max, float **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (ds->n_warmup == 0 || max == 0)
        return 0;
    *n = max < ds->n_warmup ? max : ds->n_warmup;
    return load_rows(ds, "warmup.fbin", *n, out);
}

int harness_dataset_gt(const harness_dataset *ds, ann_gt *gt)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/gt.ibin", ds->dir);
    int rc = ann_gt_load(path, ds->n, gt);
    if (rc)
        return rc;
    if (gt->nq != ds->nq || gt->k != ds->gt_k) {
        rc = ann_fail(ANN_ECORRUPT, "%s: %u x %u, manifest.json says nq=%u gt_k=%u", path, gt->nq,
                      gt->k, ds->nq, ds->gt_k);
        ann_gt_free(gt);
    }
    return rc;
}

int harness_dataset_base(const harness_dataset *ds, ann_vecsrc **out)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/base.fbin", ds->dir);
    int rc = ann_vecsrc_open_file(path, ds->metric, out);
    if (!rc)
        snprintf((*out)->id, sizeof (*out)->id, "%s", ds->checksum);
    return rc;
}
