/*
 * workload_gt.c: the ground truth of a workload's search steps
 * (workload_gt.h): the exact top-k over the vectors live at each search
 * step, by the blocked exact search (engines/core/exact.h, the one that
 * computes every bundle's ground truth), cached beside the bundle.
 *
 * Cache: <bundle>/workload-gt/<steps hash>-q<nq>-k<k>.ibin (the ground-
 * truth file format of vecfile.h, ids and distances, one block of nq rows
 * per search step in step order; ids are rows of base.fbin) and, written
 * after it, <same>.json: {"steps_hash", "dataset" (the base's checksum),
 * "queries", "k", "search_steps", "sha256" (of the .ibin)}.  Each is
 * written to a temporary and renamed.  A cache whose .json does not
 * describe this workload, dataset, query count and depth, or whose .ibin
 * does not have the recorded sha256, is recomputed, never trusted.
 */
#include "harness/workload_gt.h"

#include "engines/core/digest.h"
#include "engines/core/exact.h"
#include "engines/core/fileio.h"
#include "engines/core/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t harness_workload_search_steps(const harness_workload *w)
{
    size_t s = 0;
    for (size_t i = 0; i < w->n; i++)
        s += w->steps[i].op == HARNESS_WL_SEARCH;
    return s;
}

int harness_workload_gt_compute(const harness_workload *w, const ann_vecsrc *base,
                                const float *queries, uint32_t nq, uint32_t k, ann_gt *out)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    const size_t S = harness_workload_search_steps(w);
    const uint32_t dim = base->dim;
    float *all = NULL, *live = NULL;
    int32_t *pos = NULL;
    int64_t *rows = NULL;
    harness_wl_state st = { 0 };
    if (S == 0 || nq == 0 || k == 0)
        return ann_fail(ANN_ECONFIG, "workload ground truth: %zu search steps, %u queries, k %u", S,
                        nq, k);
    all = malloc(base->n * dim * sizeof *all + 1);
    live = malloc(base->n * dim * sizeof *live + 1);
    rows = malloc(base->n * sizeof *rows + 1);
    pos = malloc((size_t)nq * k * sizeof *pos);
    out->nq = (uint32_t)(S * nq);
    out->k = k;
    out->ids = malloc(S * nq * k * sizeof *out->ids);
    out->dists = malloc(S * nq * k * sizeof *out->dists);
    if (!all || !live || !rows || !pos || !out->ids || !out->dists ||
        harness_wl_state_init(&st, base->n)) {
        rc = ann_fail(-ENOMEM, "workload ground truth: no memory for %llu x %u vectors",
                      (unsigned long long)base->n, dim);
        goto out;
    }
    if ((rc = ann_vecsrc_read(base, 0, base->n, all)))
        goto out;
    size_t done = 0;
    char why[512];
    for (size_t i = 0; i < w->n; i++) {
        const harness_wl_step *s = &w->steps[i];
        if (harness_wl_apply(&st, s, why, sizeof why)) {
            rc = ann_fail(ANN_ECONFIG, "%s: %s", s->where, why);
            goto out;
        }
        if (s->op != HARNESS_WL_SEARCH)
            continue;
        if (st.live < k) {
            rc = ann_fail(ANN_ECONFIG, "%s: %llu vectors live, fewer than k = %u", s->where,
                          (unsigned long long)st.live, k);
            goto out;
        }
        /* the live vectors, by row */
        uint64_t n_live = 0;
        for (uint64_t r = 0; r < base->n; r++)
            if (st.id_of_row[r] >= 0) {
                memcpy(live + n_live * dim, all + r * dim, dim * sizeof *live);
                rows[n_live++] = (int64_t)r;
            }
        ann_vecsrc *src = NULL;
        if ((rc = ann_vecsrc_from_memory(live, n_live, dim, base->metric, &src)))
            goto out;
        int32_t *ids = out->ids + done * nq * k;
        float *dists = out->dists + done * nq * k;
        rc = ann_exact_knn(src, queries, nq, k, 0, pos, dists);
        ann_vecsrc_destroy(src);
        if (rc)
            goto out;
        for (size_t j = 0; j < (size_t)nq * k; j++)
            ids[j] = (int32_t)rows[pos[j]];
        done++;
    }
out:
    if (rc)
        ann_gt_free(out);
    harness_wl_state_fini(&st);
    free(all);
    free(live);
    free(rows);
    free(pos);
    return rc;
}

/* The cache's sidecar for this workload, dataset, nq and k (sha256 unset). */
static json_t *gt_key(const harness_workload *w, const ann_bundle *ds, uint32_t nq, uint32_t k)
{
    return json_pack("{s:s, s:s, s:i, s:i, s:I}", "steps_hash", w->hash, "dataset", ds->checksum,
                     "queries", (int)nq, "k", (int)k, "search_steps",
                     (json_int_t)harness_workload_search_steps(w));
}

/* 0 when the cache at ibin/side holds this ground truth; else why[] says why not. */
static int gt_cached(const char *ibin, const char *side, const json_t *key, uint64_t n_base,
                     char *why, size_t len)
{
    json_error_t jerr;
    json_t *have = json_load_file(side, 0, &jerr);
    int bad = 1;
    if (!have) {
        snprintf(why, len, "%s: %s", side, jerr.text);
        return 1;
    }
    const char *sha = json_string_value(json_object_get(have, "sha256"));
    json_t *cmp = json_deep_copy(have);
    json_object_del(cmp, "sha256");
    char now[80];
    ann_gt g = { 0 };
    int rc;
    if (!sha || !json_equal(cmp, key)) {
        snprintf(why, len, "%s: describes another workload, dataset, query count or depth", side);
    } else if ((rc = ann_sha256_file(ibin, now, NULL)) != 0) {
        snprintf(why, len, "%s", ann_errmsg(rc));
    } else if (strcmp(now, sha)) {
        snprintf(why, len, "%s: sha256 %s, not the %s its .json records (corrupt)", ibin, now, sha);
    } else if ((rc = ann_gt_load(ibin, n_base, &g)) != 0) {
        snprintf(why, len, "%s", ann_errmsg(rc));
    } else if ((int64_t)g.nq != json_integer_value(json_object_get(key, "search_steps")) *
                                    json_integer_value(json_object_get(key, "queries")) ||
               (int64_t)g.k != json_integer_value(json_object_get(key, "k")) || !g.dists) {
        snprintf(why, len, "%s: %u x %u, not the shape its .json describes", ibin, g.nq, g.k);
    } else {
        bad = 0;
    }
    ann_gt_free(&g);
    ann_err_clear();
    json_decref(cmp);
    json_decref(have);
    return bad;
}

int harness_workload_gt_ensure(const harness_workload *w, const ann_bundle *ds, uint32_t nq,
                               uint32_t k, char *path, size_t len, int *computed)
{
    int rc = 0;
    char dir[4200], side[4400], why[1200];
    ann_vecsrc *base = NULL;
    float *queries = NULL;
    ann_gt gt = { 0 };
    json_t *key = gt_key(w, ds, nq, k);
    *computed = 0;
    snprintf(dir, sizeof dir, "%s/workload-gt", ds->dir);
    int n = snprintf(path, len, "%s/%s-q%u-k%u.ibin", dir, w->hash, nq, k);
    if (n < 0 || (size_t)n >= len) {
        rc = ann_fail(ANN_EPARAM, "%s: path too long for the workload ground truth", dir);
        goto out;
    }
    snprintf(side, sizeof side, "%s/%s-q%u-k%u.json", dir, w->hash, nq, k);
    if (access(side, F_OK) == 0) {
        if (gt_cached(path, side, key, ds->n, why, sizeof why) == 0)
            goto out;
        fprintf(stderr, "workload ground truth not reused: %s; recomputing\n", why);
    }
    if ((rc = ann_mkdir_p(dir, 0775, "cannot create directory")) ||
        (rc = ann_bundle_base(ds, &base)) || (rc = ann_bundle_queries(ds, &queries)))
        goto out;
    if (nq > ds->nq) {
        rc = ann_fail(ANN_ECONFIG, "%u queries asked, the dataset has %u", nq, ds->nq);
        goto out;
    }
    fprintf(stderr, "workload ground truth: %zu search steps x %u queries, k %u -> %s\n",
            harness_workload_search_steps(w), nq, k, path);
    if ((rc = harness_workload_gt_compute(w, base, queries, nq, k, &gt)) ||
        (rc = ann_gt_save(path, &gt)))
        goto out;
    char sha[80];
    if ((rc = ann_sha256_file(path, sha, NULL)))
        goto out;
    json_object_set_new(key, "sha256", json_string(sha));
    char tmp[4500];
    FILE *fp = NULL;
    if ((rc = ann_tmpfile_create(side, tmp, sizeof tmp, &fp)))
        goto out;
    if (json_dumpf(key, fp, JSON_INDENT(1) | JSON_SORT_KEYS) != 0) {
        ann_tmpfile_discard(fp, tmp);
        rc = ann_fail(-EIO, "%s: write failed", tmp);
        goto out;
    }
    if ((rc = ann_tmpfile_commit(fp, tmp, side)))
        goto out;
    *computed = 1;
out:
    json_decref(key);
    ann_vecsrc_destroy(base);
    free(queries);
    ann_gt_free(&gt);
    return rc;
}
