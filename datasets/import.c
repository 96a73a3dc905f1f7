/*
 * import.c: any supported input -> bundle (bundle.h).
 *
 * Vectors are streamed chunk by chunk from the reader into base.fbin,
 * query.fbin and warmup.fbin (checked for NaN/Inf, normalised for cosine);
 * shipped ground-truth ids are kept but their distances are recomputed in
 * float64 from the bundle's own (normalised) vectors, because input
 * conventions differ (ann-benchmarks stores Euclidean distance, bundles
 * squared L2); ann_bundle_finish then checks them against exact search.
 * Memory: one chunk of rows, the queries, and the ground truth.
 */
#include "datasets/import.h"

#include "datasets/bundle.h"
#include "datasets/dsutil.h"
#include "datasets/readers.h"
#include "engines/core/exact.h"
#include "engines/core/fileio.h"
#include "engines/core/stagedir.h"
#include "engines/core/status.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ds_mkdir_p(const char *path)
{
    return ann_mkdir_p(path, 0755, "mkdir");
}

typedef struct {
    double d;
    int32_t id;
} id_dist;

static int cmp_id_dist(const void *a, const void *b)
{
    const id_dist *x = a, *y = b;
    if (x->d != y->d)
        return x->d < y->d ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Recompute distances of shipped ids from the bundle's files; save gt.ibin. */
static int write_shipped_gt(const char *dir, const ds_import_spec *s)
{
    int rc = 0;
    char base_path[4096], query_path[4096], gt_path[4096];
    ann_vecsrc *base = NULL, *qsrc = NULL;
    float *queries = NULL, *row = NULL;
    id_dist *tmp = NULL;
    const ann_gt *in = s->gt;
    ann_gt out = { .nq = in->nq, .k = in->k };

    if ((rc = ds_join(base_path, sizeof base_path, dir, "base.fbin")) ||
        (rc = ds_join(query_path, sizeof query_path, dir, "query.fbin")) ||
        (rc = ds_join(gt_path, sizeof gt_path, dir, "gt.ibin")))
        return rc;
    if (in->nq != s->query->n) {
        return ann_fail(ANN_EFORMAT, "%s: ground truth has %u rows but the queries %s have %llu",
                        s->gt_name, in->nq, s->query_name, (unsigned long long)s->query->n);
    }
    if (in->k > s->base->n)
        return ann_fail(ANN_EFORMAT, "%s: ground truth k=%u exceeds the %llu base vectors",
                        s->gt_name, in->k, (unsigned long long)s->base->n);
    if ((rc = ann_vecsrc_open_file(base_path, s->metric, &base)) ||
        (rc = ann_vecsrc_open_file(query_path, s->metric, &qsrc)))
        goto out;
    const uint32_t dim = base->dim;
    size_t cells = (size_t)in->nq * in->k;
    queries = malloc((size_t)(in->nq ? in->nq : 1) * dim * sizeof(float));
    row = malloc((size_t)dim * sizeof(float));
    tmp = malloc((size_t)in->k * sizeof *tmp);
    out.ids = malloc((cells ? cells : 1) * sizeof(int32_t));
    out.dists = malloc((cells ? cells : 1) * sizeof(float));
    if (!queries || !row || !tmp || !out.ids || !out.dists) {
        rc = ann_fail(-ENOMEM, "%s: no memory for the ground truth", s->gt_name);
        goto out;
    }
    rc = ann_vecsrc_read(qsrc, 0, in->nq, queries);
    if (rc)
        goto out;
    for (uint32_t q = 0; q < in->nq; q++) {
        for (uint32_t r = 0; r < in->k; r++) {
            int32_t id = in->ids[(size_t)q * in->k + r];
            if (id < 0 || (uint64_t)id >= base->n) {
                rc = ann_fail(ANN_EDATA, "%s: query %u rank %u: id %d out of range [0, %llu)",
                              s->gt_name, q, r, id, (unsigned long long)base->n);
                goto out;
            }
            rc = ann_vecsrc_read(base, (uint64_t)id, 1, row);
            if (rc)
                goto out;
            tmp[r].id = id;
            tmp[r].d = ann_distance_f64(s->metric, queries + (size_t)q * dim, row, dim);
        }
        qsort(tmp, in->k, sizeof *tmp, cmp_id_dist);
        for (uint32_t r = 0; r < in->k; r++) {
            out.ids[(size_t)q * in->k + r] = tmp[r].id;
            out.dists[(size_t)q * in->k + r] = (float)tmp[r].d;
        }
    }
    rc = ann_gt_save(gt_path, &out);
out:
    ann_gt_free(&out);
    free(queries);
    free(row);
    free(tmp);
    ann_vecsrc_destroy(base);
    ann_vecsrc_destroy(qsrc);
    return rc;
}

int ds_import_bundle(const ds_import_spec *s)
{
    int rc = 0;
    char path[4096];
    uint64_t *picks = NULL;
    json_t *extra = NULL, *made = NULL;
    ds_norm_stats st_base = { 0 }, st_query = { 0 };
    ann_stagedir sd;
    memset(&sd, 0, sizeof sd);

    if (s->query->dim != s->base->dim)
        return ann_fail(ANN_EFORMAT, "dim mismatch: queries %s have dim %u but base %s has dim %u",
                        s->query_name, s->query->dim, s->base_name, s->base->dim);
    if (s->warmup && s->warmup->dim != s->base->dim)
        return ann_fail(ANN_EFORMAT,
                        "dim mismatch: warm-up queries %s have dim %u but base %s has dim %u",
                        s->warmup_name, s->warmup->dim, s->base_name, s->base->dim);
    if (s->base->n == 0 || s->query->n == 0)
        return ann_fail(ANN_EFORMAT, "%s: no vectors (base %llu rows, queries %llu rows)",
                        s->base->n == 0 ? s->base_name : s->query_name,
                        (unsigned long long)s->base->n, (unsigned long long)s->query->n);
    if (s->base->n > UINT32_MAX || s->query->n > UINT32_MAX)
        return ann_fail(ANN_EFORMAT, "%s: more than 2^32-1 rows", s->base_name);
    /* everything goes to a temporary sibling; the name changes hands last */
    rc = ann_stagedir_begin(&sd, s->out_dir, s->out_flags);
    if (rc)
        return rc;
    const char *dir = ann_stagedir_path(&sd);

    ds_copy_spec c = { .src = s->base, .src_name = s->base_name, .metric = s->metric,
                       .count = s->base->n, .stats = &st_base };
    if ((rc = ds_join(path, sizeof path, dir, "base.fbin")))
        goto out;
    c.path = path;
    if ((rc = ds_copy_rows(&c)))
        goto out;

    c = (ds_copy_spec){ .src = s->query, .src_name = s->query_name, .metric = s->metric,
                        .count = s->query->n, .stats = &st_query };
    if ((rc = ds_join(path, sizeof path, dir, "query.fbin")))
        goto out;
    c.path = path;
    if ((rc = ds_copy_rows(&c)))
        goto out;

    if ((rc = ds_join(path, sizeof path, dir, "warmup.fbin")))
        goto out;
    if (s->warmup) {
        c = (ds_copy_spec){ .src = s->warmup, .src_name = s->warmup_name, .path = path,
                            .metric = s->metric, .count = s->warmup->n };
        if ((rc = ds_copy_rows(&c)))
            goto out;
    } else if (s->warmup_sample) {
        uint64_t m = s->warmup_sample < s->base->n ? s->warmup_sample : s->base->n;
        picks = malloc(m * sizeof *picks);
        if (!picks) {
            rc = ann_fail(-ENOMEM, "%s: no memory for the warm-up sample", dir);
            goto out;
        }
        if ((rc = ds_sample_rows(s->base->n, m, s->warmup_seed, picks)))
            goto out;
        c = (ds_copy_spec){ .src = s->base, .src_name = s->base_name, .path = path,
                            .metric = s->metric, .count = m, .rows = picks };
        if ((rc = ds_copy_rows(&c)))
            goto out;
    }

    if (s->gt && (rc = write_shipped_gt(dir, s)))
        goto out;

    extra = s->extra ? json_deep_copy(s->extra) : json_object();
    if (!json_is_object(extra)) {
        rc = ann_fail(ANN_EPARAM, "%s: extra manifest fields must be an object", dir);
        goto out;
    }
    made = json_object_get(extra, "made_by");
    if (!json_is_object(made)) {
        made = json_object();
        json_object_set_new(extra, "made_by", made);
    }
    json_object_set_new(made, "tool", json_string("annlab dataset import"));
    json_object_set_new(made, "base_from", json_string(s->base_name));
    json_object_set_new(made, "queries_from", json_string(s->query_name));
    if (s->warmup)
        json_object_set_new(made, "warmup_from", json_string(s->warmup_name));
    else if (s->warmup_sample)
        json_object_set_new(made, "warmup_from",
                            json_pack("{s:s, s:I, s:I}", "rule",
                                      "seeded sample of base rows (outside the test queries; "
                                      "each finds itself at distance 0)",
                                      "count", (json_int_t)s->warmup_sample, "seed",
                                      (json_int_t)s->warmup_seed));
    json_object_set_new(made, "ground_truth_from",
                        json_string(s->gt ? s->gt_name : "computed by exact search"));
    if (s->gt)
        json_object_set_new(made, "ground_truth_distances",
                            json_string("recomputed in float64 from the bundle's vectors; rows "
                                        "sorted by (distance, id)"));
    json_object_set_new(extra, "statistics",
                        json_pack("{s:s, s:o, s:o}", "what",
                                  "L2 norms of the input rows, before any normalisation", "base",
                                  ds_norm_stats_json(&st_base), "query",
                                  ds_norm_stats_json(&st_query)));
    rc = ann_bundle_finish(dir, s->name, s->metric, s->gt_k, extra);
    if (!rc)
        rc = ann_stagedir_commit(&sd);
out:
    ann_stagedir_abort(&sd);
    free(picks);
    json_decref(extra);
    return rc;
}

int ds_import_from_files(const ds_import_files *f)
{
    int rc = 0;
    ds_hdf5 *h5 = NULL;
    ann_vecsrc *base = NULL, *query = NULL, *warm = NULL;
    ann_gt gt = { 0 };
    int have_gt = 0;
    json_t *extra = NULL, *sources = NULL;
    ann_metric metric = f->metric;
    const char *metric_from = "given";
    char name_buf[256], tmp[4096], b_name[4200], q_name[4200];
    const char *name = f->name;

    if (!name) {
        snprintf(tmp, sizeof tmp, "%s", f->out_dir);
        snprintf(name_buf, sizeof name_buf, "%s", basename(tmp));
        name = name_buf;
    }
    /* refused before a byte of input is read (hashing a large base takes a while) */
    if (!(f->out_flags & (ANN_OUT_FORCE | ANN_OUT_IN_PLACE)) &&
        (rc = ann_stagedir_refuses(f->out_dir)))
        return rc;
    extra = f->extra ? json_deep_copy(f->extra) : json_object();
    sources = json_array();
    if (!extra || !sources) {
        rc = ann_fail(-ENOMEM, "import: no memory");
        goto out;
    }

    ds_import_spec s = { .out_dir = f->out_dir, .name = name, .warmup_sample = f->warmup_sample,
                         .warmup_seed = DS_WARMUP_SEED, .gt_k = f->gt_k,
                         .out_flags = f->out_flags };
    if (f->hdf5) {
        ann_metric file_metric;
        if ((rc = ds_source_entry(sources, "hdf5", f->hdf5)))
            goto out;
        if ((rc = ds_hdf5_open(f->hdf5, &h5, &file_metric)))
            goto out;
        if (f->metric_set && f->metric != file_metric) {
            rc = ann_fail(ANN_EPARAM, "%s: --metric %s contradicts the file's 'distance' "
                                      "attribute (%s)",
                          f->hdf5, ann_metric_name(f->metric), ann_metric_name(file_metric));
            goto out;
        }
        metric = file_metric;
        metric_from = "the file's 'distance' attribute";
        if ((rc = ds_hdf5_gt(h5, &gt)))
            goto out;
        have_gt = 1;
        snprintf(b_name, sizeof b_name, "%s: dataset 'train'", f->hdf5);
        snprintf(q_name, sizeof q_name, "%s: dataset 'test'", f->hdf5);
        s.base = ds_hdf5_train(h5);
        s.query = ds_hdf5_test(h5);
        s.base_name = b_name;
        s.query_name = q_name;
        s.gt_name = f->hdf5;
        json_object_set_new(extra, "source_format", json_string("ann-benchmarks hdf5"));
        json_object_set_new(extra, "source_had_distances",
                            json_boolean(ds_hdf5_has_distances(h5)));
    } else {
        if (!f->base || !f->query) {
            rc = ann_fail(ANN_EPARAM, "import: need a base and a query file (or one .hdf5 file)");
            goto out;
        }
        if (!f->metric_set) {
            rc = ann_fail(ANN_EPARAM, "import: %s and %s do not say which metric their vectors "
                                      "are compared with: give the metric",
                          f->base, f->query);
            goto out;
        }
        if ((rc = ds_source_entry(sources, "base", f->base)) ||
            (rc = ds_source_entry(sources, "query", f->query)) ||
            (f->gt && (rc = ds_source_entry(sources, "gt", f->gt))) ||
            (f->warmup && (rc = ds_source_entry(sources, "warmup", f->warmup))))
            goto out;
        if ((rc = ds_vecsrc_open_any(f->base, metric, &base)) ||
            (rc = ds_vecsrc_open_any(f->query, metric, &query)) ||
            (f->warmup && (rc = ds_vecsrc_open_any(f->warmup, metric, &warm))))
            goto out;
        if (f->gt) {
            if ((rc = ds_gt_load_any(f->gt, base->n, &gt)))
                goto out;
            have_gt = 1;
        }
        s.base = base;
        s.query = query;
        s.warmup = warm;
        s.base_name = f->base;
        s.query_name = f->query;
        s.warmup_name = f->warmup;
        s.gt_name = f->gt;
    }
    if ((f->expect_n && s.base->n != f->expect_n) ||
        (f->expect_dim && s.base->dim != f->expect_dim)) {
        rc = ann_fail(ANN_EFORMAT, "%s: base holds %llu x %u, but %s is %llu x %u", s.base_name,
                      (unsigned long long)s.base->n, s.base->dim, name,
                      (unsigned long long)f->expect_n, f->expect_dim);
        goto out;
    }
    s.metric = metric;
    s.gt = have_gt ? &gt : NULL;
    json_object_set_new(extra, "source", sources);
    sources = NULL;
    json_object_set_new(extra, "metric_from", json_string(metric_from));
    s.extra = extra;
    rc = ds_import_bundle(&s);
out:
    ann_gt_free(&gt);
    ann_vecsrc_destroy(base);
    ann_vecsrc_destroy(query);
    ann_vecsrc_destroy(warm);
    ds_hdf5_close(h5);
    json_decref(sources);
    json_decref(extra);
    return rc;
}
