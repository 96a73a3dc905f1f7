/*
 * bundle.c: opening, finishing and verifying prepared datasets (bundle.h).
 *
 * ann_bundle_finish turns member files already in place into a bundle:
 * ground truth is computed by exact search (engines/core/exact.h: BLAS
 * scoring, float64 re-scoring) when gt.ibin is absent; when it was shipped
 * it is checked, tie-aware, against exact search on a seeded sample of
 * queries (the big-ann rule: an id is right when its true distance is
 * within the true k-th distance).  Deliberate choice: shipped ground truth
 * that fails the check is not trusted; it is replaced by exact ground truth
 * and the manifest records both the failed check and the replacement.
 * Checksums are sha256 (OpenSSL EVP, streamed).  manifest.json is written
 * last, to a temporary name, fsync'd and renamed, so a directory without
 * it is never taken for a bundle.
 */
#include "datasets/bundle.h"

#include "datasets/dsutil.h"
#include "engines/core/digest.h"
#include "engines/core/exact.h"
#include "engines/core/progress.h"
#include "engines/core/fileio.h"
#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MANIFEST_FILE "manifest.json"
#define BUNDLE_FORMAT "annlab-bundle"
#define BUNDLE_VERSION 1
#define GT_CHECK_SEED 20240601u

void ann_bundle_path(const ann_bundle *b, const char *file, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", b->dir, file);
}

void ann_bundle_close(ann_bundle *b)
{
    if (!b)
        return;
    json_decref(b->manifest);
    b->manifest = NULL;
}

/* An unsigned integer field of the manifest, or ANN_EFORMAT naming it. */
static int manifest_uint(const char *path, const json_t *m, const char *key, uint64_t max,
                         uint64_t *out)
{
    const json_t *v = json_object_get(m, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > max)
        return ann_fail(ANN_EFORMAT, "%s: field \"%s\" is missing or not an integer in [0, %llu]",
                        path, key, (unsigned long long)max);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* Open a member vector file and check its shape against the manifest. */
static int check_member(const ann_bundle *b, const char *file, uint64_t n, uint32_t dim)
{
    char path[4096];
    ann_vecfile vf;
    ann_bundle_path(b, file, path, sizeof path);
    int rc = ann_vecfile_open(path, &vf);
    if (rc)
        return rc;
    if (vf.n != n || vf.dim != dim)
        rc = ann_fail(ANN_ECORRUPT, "%s: holds %llu x %u but manifest.json says %llu x %u", path,
                      (unsigned long long)vf.n, vf.dim, (unsigned long long)n, dim);
    ann_vecfile_close(&vf);
    return rc;
}

/*
 * manifest.json's own digest: the sha256 of the manifest without its
 * "manifest_sha256" field, dumped compact with sorted keys (jansson dumps
 * what it parsed identically), so a changed byte anywhere in it, the
 * provenance included, is caught.  out: 72 bytes.
 */
static int manifest_digest(const json_t *m, char *out)
{
    json_t *copy = json_copy((json_t *)m);
    if (!copy)
        return ann_fail(-ENOMEM, "manifest.json: no memory for its digest");
    json_object_del(copy, "manifest_sha256");
    char *text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(copy);
    if (!text)
        return ann_fail(-ENOMEM, "manifest.json: no memory for its digest");
    int rc = ann_sha256_buf(text, strlen(text), out);
    free(text);
    return rc;
}

/*
 * A manifest that records its own digest must match it; one without
 * (written before annlab sealed manifests) is read as it is, and
 * `dataset verify` says so.
 */
static int manifest_check_seal(const char *path, const json_t *m, int *sealed)
{
    const json_t *want = json_object_get(m, "manifest_sha256");
    *sealed = want != NULL;
    if (!want)
        return 0;
    if (!json_is_string(want))
        return ann_fail(ANN_EFORMAT, "%s: field \"manifest_sha256\" must be a string", path);
    char have[72];
    int rc = manifest_digest(m, have);
    if (rc)
        return rc;
    if (strcmp(have, json_string_value(want)) != 0)
        return ann_fail(ANN_ECORRUPT,
                        "%s: changed since it was written (its content hashes to %s, "
                        "manifest_sha256 records %s)",
                        path, have, json_string_value(want));
    return 0;
}

int ann_bundle_open(const char *dir, ann_bundle *b)
{
    int rc = 0;
    char path[4096];
    json_error_t jerr;
    uint64_t v = 0;

    memset(b, 0, sizeof *b);
    snprintf(b->dir, sizeof b->dir, "%s", dir);
    ann_bundle_path(b, MANIFEST_FILE, path, sizeof path);
    if (access(path, F_OK) != 0)
        return ann_fail(ANN_ENOTFOUND, "%s: not a prepared dataset (no %s)", dir, MANIFEST_FILE);
    if ((rc = ann_check_regular(path))) /* a FIFO would block the load */
        goto out;
    b->manifest = json_load_file(path, 0, &jerr);
    if (!b->manifest) {
        rc = ann_fail(ANN_EFORMAT, "%s: line %d: %s", path, jerr.line, jerr.text);
        goto out;
    }
    const json_t *m = b->manifest;
    if (!json_is_object(m)) {
        rc = ann_fail(ANN_EFORMAT, "%s: not a JSON object", path);
        goto out;
    }
    /* its own digest first: a damaged field reads as damage, not as a
     * wrong format or version */
    if ((rc = manifest_check_seal(path, m, &b->sealed)))
        goto out;
    if (!json_is_string(json_object_get(m, "format")) ||
        strcmp(json_string_value(json_object_get(m, "format")), BUNDLE_FORMAT) != 0) {
        rc = ann_fail(ANN_EFORMAT, "%s: field \"format\" is not \"%s\"", path, BUNDLE_FORMAT);
        goto out;
    }
    rc = manifest_uint(path, m, "version", UINT32_MAX, &v);
    if (rc)
        goto out;
    if (v != BUNDLE_VERSION) {
        rc = ann_fail(ANN_EVERSION, "%s: bundle version %llu, this build reads version %d", path,
                      (unsigned long long)v, BUNDLE_VERSION);
        goto out;
    }
    const json_t *name = json_object_get(m, "name");
    const json_t *metric = json_object_get(m, "metric");
    const json_t *checksum = json_object_get(m, "checksum");
    if (!json_is_string(name) || !json_is_string(metric) || !json_is_string(checksum)) {
        rc = ann_fail(ANN_EFORMAT, "%s: fields \"name\", \"metric\" and \"checksum\" must be "
                                   "strings",
                      path);
        goto out;
    }
    snprintf(b->name, sizeof b->name, "%s", json_string_value(name));
    snprintf(b->checksum, sizeof b->checksum, "%s", json_string_value(checksum));
    rc = ann_metric_parse(json_string_value(metric), &b->metric);
    if (rc) {
        rc = ann_fail_wrap(ANN_EFORMAT, "%s: field \"metric\"", path);
        goto out;
    }
    if ((rc = manifest_uint(path, m, "n", UINT32_MAX, &b->n)))
        goto out;
    if ((rc = manifest_uint(path, m, "dim", UINT32_MAX, &v)))
        goto out;
    b->dim = (uint32_t)v;
    if ((rc = manifest_uint(path, m, "nq", UINT32_MAX, &v)))
        goto out;
    b->nq = (uint32_t)v;
    if ((rc = manifest_uint(path, m, "gt_k", UINT32_MAX, &v)))
        goto out;
    b->gt_k = (uint32_t)v;
    if ((rc = manifest_uint(path, m, "n_warmup", UINT32_MAX, &v)))
        goto out;
    b->n_warmup = (uint32_t)v;

    if ((rc = check_member(b, "base.fbin", b->n, b->dim)))
        goto out;
    if ((rc = check_member(b, "query.fbin", b->nq, b->dim)))
        goto out;
    if (b->n_warmup && (rc = check_member(b, "warmup.fbin", b->n_warmup, b->dim)))
        goto out;
    ann_bundle_path(b, "gt.ibin", path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0) {
        rc = ann_fail_errno("%s: stat", path);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = ann_fail(ANN_EFORMAT, "%s: not a regular file (%s)", path,
                      ann_file_kind((unsigned)st.st_mode));
        goto out;
    }
    uint64_t want = 0;
    char what[4200];
    snprintf(what, sizeof what, "%s: nq x gt_k x 8 bytes of manifest.json", path);
    if ((rc = ann_mul_u64((uint64_t)b->nq * b->gt_k, 8, &want, what)) ||
        (rc = ann_add_u64(want, 8, &want, what)))
        goto out;
    if ((uint64_t)st.st_size != want) {
        rc = ann_fail(ANN_ECORRUPT,
                      "%s: size %lld bytes, but nq=%u gt_k=%u in manifest.json need %llu (ids and "
                      "distances)",
                      path, (long long)st.st_size, b->nq, b->gt_k, (unsigned long long)want);
        goto out;
    }
out:
    if (rc)
        ann_bundle_close(b);
    return rc;
}

int ann_bundle_base(const ann_bundle *b, ann_vecsrc **out)
{
    char path[4096];
    ann_bundle_path(b, "base.fbin", path, sizeof path);
    int rc = ann_vecsrc_open_file(path, b->metric, out);
    if (!rc)
        snprintf((*out)->id, sizeof (*out)->id, "%s", b->checksum);
    return rc;
}

/* Read a whole float32 member file of `want_n` rows into a new buffer. */
static int load_rows(const char *path, uint64_t want_n, uint32_t dim, float **out)
{
    int rc = 0;
    ann_vecfile vf;
    float *buf = NULL;
    *out = NULL;
    rc = ann_vecfile_open(path, &vf);
    if (rc)
        return rc;
    if (vf.n != want_n || vf.dim != dim) {
        rc = ann_fail(ANN_ECORRUPT, "%s: holds %llu x %u, expected %llu x %u", path,
                      (unsigned long long)vf.n, vf.dim, (unsigned long long)want_n, dim);
        goto out;
    }
    buf = malloc((size_t)(want_n ? want_n : 1) * dim * sizeof(float));
    if (!buf) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %llu rows", path, (unsigned long long)want_n);
        goto out;
    }
    rc = ann_vecfile_read_f32(&vf, 0, want_n, buf);
    if (rc)
        goto out;
    *out = buf;
    buf = NULL;
out:
    free(buf);
    ann_vecfile_close(&vf);
    return rc;
}

int ann_bundle_queries(const ann_bundle *b, float **out)
{
    char path[4096];
    ann_bundle_path(b, "query.fbin", path, sizeof path);
    return load_rows(path, b->nq, b->dim, out);
}

int ann_bundle_warmup(const ann_bundle *b, float **out, uint32_t *n)
{
    char path[4096];
    *out = NULL;
    *n = 0;
    if (!b->n_warmup)
        return ann_fail(ANN_ENOTFOUND, "%s: bundle has no warm-up queries", b->dir);
    ann_bundle_path(b, "warmup.fbin", path, sizeof path);
    int rc = load_rows(path, b->n_warmup, b->dim, out);
    if (!rc)
        *n = b->n_warmup;
    return rc;
}

int ann_bundle_gt(const ann_bundle *b, ann_gt *gt)
{
    char path[4096];
    ann_bundle_path(b, "gt.ibin", path, sizeof path);
    int rc = ann_gt_load(path, b->n, gt);
    if (rc)
        return rc;
    if (gt->nq != b->nq || gt->k != b->gt_k || !gt->dists) {
        rc = ann_fail(ANN_ECORRUPT, "%s: %u x %u%s, but manifest.json says nq=%u gt_k=%u with "
                                    "distances",
                      path, gt->nq, gt->k, gt->dists ? "" : " without distances", b->nq, b->gt_k);
        ann_gt_free(gt);
    }
    return rc;
}

/* ---- ground-truth check ------------------------------------------------ */

static double gt_eps(double kth)
{
    return ANN_GT_EPS_REL * (fabs(kth) > 1.0 ? fabs(kth) : 1.0);
}

int ann_gt_check_sample(const ann_vecsrc *base, const float *queries, const ann_gt *gt,
                        uint32_t sample, uint64_t seed, int threads, ann_gt_check *out)
{
    int rc = 0;
    const uint32_t dim = base->dim, k = gt->k;
    uint32_t m = sample < gt->nq ? sample : gt->nq;
    uint64_t *picks = NULL;
    float *sq = NULL, *row = NULL, *ex_d = NULL;
    int32_t *ex_i = NULL;

    memset(out, 0, sizeof *out);
    out->k = k;
    out->seed = seed;
    if (k > base->n) {
        return ann_fail(ANN_ECORRUPT, "ground truth: k=%u is larger than the base (%llu rows)",
                        k, (unsigned long long)base->n);
    }
    picks = malloc((m ? m : 1) * sizeof *picks);
    sq = malloc((size_t)(m ? m : 1) * dim * sizeof(float));
    row = malloc((size_t)dim * sizeof(float));
    ex_d = malloc((size_t)(m ? m : 1) * k * sizeof(float));
    ex_i = malloc((size_t)(m ? m : 1) * k * sizeof(int32_t));
    if (!picks || !sq || !row || !ex_d || !ex_i) {
        rc = ann_fail(-ENOMEM, "ground truth check: no memory for %u queries", m);
        goto out;
    }
    rc = ds_sample_rows(gt->nq, m, seed, picks);
    if (rc)
        goto out;
    for (uint32_t i = 0; i < m; i++)
        memcpy(sq + (size_t)i * dim, queries + (size_t)picks[i] * dim, dim * sizeof(float));
    ann_progress prog;
    char what[96];
    snprintf(what, sizeof what, "ground-truth check (%u sampled queries)", m);
    ann_progress_begin(&prog, what, base->n, "vectors");
    rc = ann_exact_knn_progress(base, sq, m, k, threads, ex_i, ex_d, &prog);
    ann_progress_end(&prog);
    if (rc)
        goto out;
    out->first_bad_query = UINT32_MAX;
    for (uint32_t i = 0; i < m; i++) {
        uint32_t q = (uint32_t)picks[i];
        const int32_t *ids = gt->ids + (size_t)q * k;
        double kth = ex_d[(size_t)i * k + k - 1];
        double eps = gt_eps(kth);
        int bad = 0;
        for (uint32_t r = 0; r < k; r++) {
            int32_t id = ids[r];
            if (id < 0 || (uint64_t)id >= base->n) {
                rc = ann_fail(ANN_EDATA, "ground truth: query %u rank %u: id %d out of range "
                                         "[0, %llu)",
                              q, r, id, (unsigned long long)base->n);
                goto out;
            }
            int dup = 0;
            for (uint32_t s = 0; s < r && !dup; s++)
                dup = ids[s] == id;
            rc = ann_vecsrc_read(base, (uint64_t)id, 1, row);
            if (rc)
                goto out;
            double d = ann_distance_f64(base->metric, sq + (size_t)i * dim, row, dim);
            for (uint32_t s = 0; s < k && !dup; s++)
                if (ex_i[(size_t)i * k + s] == id) {
                    out->plain_agreed++;
                    break;
                }
            if (!dup && d <= kth + eps)
                out->agreed++;
            else
                bad = 1;
            if (gt->dists && fabs((double)gt->dists[(size_t)q * k + r] - d) > gt_eps(d)) {
                out->dist_mismatch++;
                bad = 1;
            }
        }
        out->checked += k;
        if (bad && out->first_bad_query == UINT32_MAX)
            out->first_bad_query = q;
    }
    out->queries = m;
    out->agreement = out->checked ? (double)out->agreed / (double)out->checked : 1.0;
    out->pass = out->agreement >= ANN_GT_PASS_AGREEMENT && out->dist_mismatch == 0;
out:
    free(picks);
    free(sq);
    free(row);
    free(ex_d);
    free(ex_i);
    return rc;
}

json_t *ann_gt_check_json(const ann_gt_check *c)
{
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:s}", "queries",
                          (json_int_t)c->queries, "k", (json_int_t)c->k, "seed",
                          (json_int_t)c->seed, "ids_checked", (json_int_t)c->checked,
                          "ids_agreed", (json_int_t)c->agreed, "distance_mismatches",
                          (json_int_t)c->dist_mismatch, "agreement", c->agreement,
                          "pass_threshold", ANN_GT_PASS_AGREEMENT, "eps_rel", ANN_GT_EPS_REL,
                          "verdict", c->pass ? "pass" : "fail");
    if (o)
        json_object_set_new(o, "ids_in_exact_topk_plain", json_integer((json_int_t)c->plain_agreed));
    if (o && !c->pass && c->first_bad_query != UINT32_MAX)
        json_object_set_new(o, "first_bad_query", json_integer(c->first_bad_query));
    return o;
}

/* ---- finishing a bundle -------------------------------------------------- */

/* fsync a directory so a rename in it is durable. */
static void fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* Write obj to dir/manifest.json atomically (temporary + fsync + rename). */
static int write_manifest(const char *dir, const json_t *obj)
{
    char path[4096], tmp[4096];
    FILE *fp = NULL;
    int rc = ds_join(path, sizeof path, dir, MANIFEST_FILE);
    if (rc)
        return rc;
    rc = ann_tmpfile_create(path, tmp, sizeof tmp, &fp);
    if (rc)
        return rc;
    if (json_dumpf(obj, fp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0 || fputc('\n', fp) == EOF) {
        rc = ann_fail_errno("%s: write", tmp);
        ann_tmpfile_discard(fp, tmp);
        return rc;
    }
    rc = ann_tmpfile_commit(fp, tmp, path);
    if (rc)
        return rc;
    fsync_dir(dir);
    return 0;
}

/* Compute exact ground truth for all queries and save it to path. */
static int compute_gt(const ann_vecsrc *base, const float *queries, uint32_t nq, uint32_t k,
                      const char *path)
{
    int rc = 0;
    ann_gt gt = { .nq = nq, .k = k };
    gt.ids = malloc((size_t)(nq ? nq : 1) * k * sizeof(int32_t));
    gt.dists = malloc((size_t)(nq ? nq : 1) * k * sizeof(float));
    if (!gt.ids || !gt.dists) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %u x %u ground truth", path, nq, k);
        goto out;
    }
    ann_progress prog;
    char what[160];
    snprintf(what, sizeof what, "ground truth of %u queries, k %u (exact search)", nq, k);
    ann_progress_begin(&prog, what, base->n, "vectors");
    rc = ann_exact_knn_progress(base, queries, nq, k, 0, gt.ids, gt.dists, &prog);
    ann_progress_end(&prog);
    if (!rc)
        rc = ann_gt_save(path, &gt);
out:
    ann_gt_free(&gt);
    return rc;
}

/* Add {"bytes", "sha256"} of dir/file to files; *hex (may be NULL) gets the digest. */
static int add_file_checksum(json_t *files, const char *dir, const char *file, char *hex)
{
    char path[4096], sum[80];
    uint64_t bytes = 0;
    int rc = ds_join(path, sizeof path, dir, file);
    if (!rc)
        rc = ds_sha256_file(path, sum, &bytes);
    if (rc)
        return rc;
    json_object_set_new(files, file,
                        json_pack("{s:I, s:s}", "bytes", (json_int_t)bytes, "sha256", sum));
    if (hex)
        snprintf(hex, 72, "%s", sum);
    return 0;
}

int ann_bundle_finish(const char *dir, const char *name, ann_metric metric, uint32_t gt_k,
                      const json_t *extra)
{
    int rc = 0;
    char base_path[4096], query_path[4096], warm_path[4096], gt_path[4096];
    ann_vecsrc *base = NULL;
    ann_vecfile qf = { .fd = -1 }, wf = { .fd = -1 };
    float *queries = NULL;
    ann_gt gt = { 0 };
    json_t *man = NULL, *files = NULL, *gt_check = NULL;
    int have_warmup = 0;
    char checksum[80] = "";

    if ((rc = ds_join(base_path, sizeof base_path, dir, "base.fbin")) ||
        (rc = ds_join(query_path, sizeof query_path, dir, "query.fbin")) ||
        (rc = ds_join(warm_path, sizeof warm_path, dir, "warmup.fbin")) ||
        (rc = ds_join(gt_path, sizeof gt_path, dir, "gt.ibin")))
        return rc;
    if (!ann_metric_name(metric))
        return ann_fail(ANN_EPARAM, "%s: invalid metric %d", dir, (int)metric);

    rc = ann_vecsrc_open_file(base_path, metric, &base);
    if (rc)
        goto out;
    rc = ann_vecfile_open(query_path, &qf);
    if (rc)
        goto out;
    if (qf.dim != base->dim) {
        rc = ann_fail(ANN_EFORMAT, "%s: queries have dim %u but the base %s has dim %u",
                      query_path, qf.dim, base_path, base->dim);
        goto out;
    }
    if (access(warm_path, F_OK) == 0) {
        rc = ann_vecfile_open(warm_path, &wf);
        if (rc)
            goto out;
        if (wf.dim != base->dim) {
            rc = ann_fail(ANN_EFORMAT, "%s: warm-up queries have dim %u but the base has dim %u",
                          warm_path, wf.dim, base->dim);
            goto out;
        }
        have_warmup = 1;
    }
    if (base->n == 0 || qf.n == 0) {
        rc = ann_fail(ANN_EFORMAT, "%s: a bundle needs at least one base vector and one query "
                                   "(base %llu, queries %llu)",
                      dir, (unsigned long long)base->n, (unsigned long long)qf.n);
        goto out;
    }
    queries = malloc((size_t)qf.n * qf.dim * sizeof(float));
    if (!queries) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %llu queries", query_path,
                      (unsigned long long)qf.n);
        goto out;
    }
    rc = ann_vecfile_read_f32(&qf, 0, qf.n, queries);
    if (rc)
        goto out;

    gt_check = json_object();
    if (access(gt_path, F_OK) == 0) {
        /* Shipped (or generated) ground truth: check it on a sample. */
        rc = ann_gt_load(gt_path, base->n, &gt);
        if (rc)
            goto out;
        if (gt.nq != qf.n) {
            rc = ann_fail(ANN_EFORMAT, "%s: ground truth has %u rows but %s has %llu queries",
                          gt_path, gt.nq, query_path, (unsigned long long)qf.n);
            goto out;
        }
        ann_gt_check c;
        rc = ann_gt_check_sample(base, queries, &gt, ANN_GT_SAMPLE_DEFAULT, GT_CHECK_SEED, 0, &c);
        if (rc)
            goto out;
        json_decref(gt_check);
        gt_check = ann_gt_check_json(&c);
        json_object_set_new(gt_check, "source", json_string("shipped"));
        gt_k = gt.k;
        if (!c.pass || !gt.dists) {
            /* Replace: untrusted ids, or ids without the distances a bundle carries. */
            uint32_t k = gt.k;
            ann_gt_free(&gt);
            rc = compute_gt(base, queries, (uint32_t)qf.n, k, gt_path);
            if (rc)
                goto out;
            json_object_set_new(gt_check, "action",
                                json_string(c.pass ? "distances added by exact search"
                                                   : "replaced by exact ground truth"));
            if (!c.pass)
                fprintf(stderr,
                        "%s: shipped ground truth failed the check (agreement %.4f, %llu "
                        "distance mismatches); replaced by exact ground truth\n",
                        gt_path, c.agreement, (unsigned long long)c.dist_mismatch);
        }
    } else {
        if (gt_k == 0)
            gt_k = 100;
        if (gt_k > base->n)
            gt_k = (uint32_t)base->n;
        rc = compute_gt(base, queries, (uint32_t)qf.n, gt_k, gt_path);
        if (rc)
            goto out;
        json_object_set_new(gt_check, "source", json_string("computed"));
        json_object_set_new(gt_check, "method",
                            json_string("exact search: BLAS float32 scoring, top k+16 "
                                        "re-scored in float64, ties ordered by id"));
    }

    files = json_object();
    if ((rc = add_file_checksum(files, dir, "base.fbin", checksum)) ||
        (rc = add_file_checksum(files, dir, "query.fbin", NULL)) ||
        (rc = add_file_checksum(files, dir, "gt.ibin", NULL)) ||
        (have_warmup && (rc = add_file_checksum(files, dir, "warmup.fbin", NULL))))
        goto out;

    man = extra ? json_deep_copy(extra) : json_object();
    if (!man || !json_is_object(man)) {
        rc = ann_fail(ANN_EPARAM, "%s: extra manifest fields must be a JSON object", dir);
        goto out;
    }
    char created[32];
    time_t now = time(NULL);
    struct tm tmv;
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tmv));
    json_object_set_new(man, "format", json_string(BUNDLE_FORMAT));
    json_object_set_new(man, "version", json_integer(BUNDLE_VERSION));
    json_object_set_new(man, "name", json_string(name));
    json_object_set_new(man, "metric", json_string(ann_metric_name(metric)));
    json_object_set_new(man, "n", json_integer((json_int_t)base->n));
    json_object_set_new(man, "dim", json_integer(base->dim));
    json_object_set_new(man, "element_type", json_string("float32"));
    json_object_set_new(man, "nq", json_integer((json_int_t)qf.n));
    json_object_set_new(man, "gt_k", json_integer(gt_k));
    json_object_set_new(man, "n_warmup", json_integer(have_warmup ? (json_int_t)wf.n : 0));
    json_object_set_new(man, "normalized", json_boolean(metric == ANN_METRIC_COSINE));
    json_object_set_new(man, "checksum", json_string(checksum));
    json_object_set_new(man, "files", files);
    files = NULL;
    json_object_set_new(man, "gt_check", gt_check);
    gt_check = NULL;
    json_object_set_new(man, "created_utc", json_string(created));
    char seal[72];
    if ((rc = manifest_digest(man, seal)))
        goto out;
    json_object_set_new(man, "manifest_sha256", json_string(seal));
    rc = write_manifest(dir, man);
out:
    json_decref(man);
    json_decref(files);
    json_decref(gt_check);
    ann_gt_free(&gt);
    free(queries);
    ann_vecfile_close(&qf);
    ann_vecfile_close(&wf);
    ann_vecsrc_destroy(base);
    return rc;
}

/* ---- verification -------------------------------------------------------- */

int ann_bundle_verify(const char *dir, uint32_t sample, json_t **report)
{
    int rc = 0;
    ann_bundle b = { 0 };
    ann_vecsrc *base = NULL;
    float *queries = NULL, *warm = NULL;
    uint32_t n_warm = 0;
    ann_gt gt = { 0 };
    json_t *rep = NULL;
    char path[4096];

    if (report)
        *report = NULL;
    rc = ann_bundle_open(dir, &b);
    if (rc)
        return rc;
    rep = json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:i}", "dir", dir, "name", b.name,
                    "metric", ann_metric_name(b.metric), "n", (json_int_t)b.n, "dim", (int)b.dim,
                    "nq", (int)b.nq, "gt_k", (int)b.gt_k, "n_warmup", (int)b.n_warmup);

    /* Checksums of every member listed in the manifest. */
    const json_t *files = json_object_get(b.manifest, "files");
    if (!json_is_object(files) || !json_object_get(files, "base.fbin")) {
        rc = ann_fail(ANN_EFORMAT, "%s/manifest.json: field \"files\" lists no base.fbin", dir);
        goto out;
    }
    const char *fname;
    const json_t *fobj;
    json_object_foreach((json_t *)files, fname, fobj)
    {
        char sum[80];
        const char *want = json_string_value(json_object_get(fobj, "sha256"));
        if (strchr(fname, '/') || !want) {
            rc = ann_fail(ANN_EFORMAT, "%s/manifest.json: files.\"%s\" is malformed", dir, fname);
            goto out;
        }
        ann_bundle_path(&b, fname, path, sizeof path);
        rc = ds_sha256_file(path, sum, NULL);
        if (rc)
            goto out;
        if (strcmp(sum, want) != 0) {
            rc = ann_fail(ANN_ECORRUPT, "%s: sha256 %s differs from manifest.json (%s)", path,
                          sum, want);
            goto out;
        }
    }
    if (strcmp(b.checksum, json_string_value(json_object_get(json_object_get(files, "base.fbin"),
                                                            "sha256"))) != 0) {
        rc = ann_fail(ANN_ECORRUPT, "%s/manifest.json: \"checksum\" is not base.fbin's sha256", dir);
        goto out;
    }
    json_object_set_new(rep, "checksums", json_string("ok"));
    json_object_set_new(rep, "manifest",
                        json_string(b.sealed ? "sealed (manifest_sha256 matches)"
                                             : "not sealed (written before annlab recorded "
                                               "manifest_sha256; making the bundle again "
                                               "with --force seals it)"));

    /* Queries and warm-up: finite values (checked by the reader). */
    rc = ann_bundle_queries(&b, &queries);
    if (rc)
        goto out;
    if (b.n_warmup && (rc = ann_bundle_warmup(&b, &warm, &n_warm)))
        goto out;

    /* Ground truth: ids in range, rows sorted by distance. */
    rc = ann_bundle_gt(&b, &gt);
    if (rc)
        goto out;
    ann_bundle_path(&b, "gt.ibin", path, sizeof path);
    for (uint32_t q = 0; q < gt.nq; q++)
        for (uint32_t r = 1; r < gt.k; r++)
            if (gt.dists[(size_t)q * gt.k + r] < gt.dists[(size_t)q * gt.k + r - 1]) {
                rc = ann_fail(ANN_ECORRUPT, "%s: query %u: distances not ascending at rank %u",
                              path, q, r);
                goto out;
            }

    /* Exact search on a sample (reads and checks the whole base). */
    rc = ann_bundle_base(&b, &base);
    if (rc)
        goto out;
    ann_gt_check c;
    rc = ann_gt_check_sample(base, queries, &gt, sample, GT_CHECK_SEED, 0, &c);
    if (rc)
        goto out;
    json_object_set_new(rep, "gt_check", ann_gt_check_json(&c));
    if (!c.pass) {
        rc = ann_fail(ANN_ECORRUPT,
                      "%s: ground truth disagrees with exact search: agreement %.4f over %u "
                      "queries (need %.3f), %llu distance mismatches, first at query %u",
                      path, c.agreement, c.queries, ANN_GT_PASS_AGREEMENT,
                      (unsigned long long)c.dist_mismatch, c.first_bad_query);
        goto out;
    }
out:
    if (rep) {
        json_object_set_new(rep, "verdict", json_string(rc ? "fail" : "pass"));
        if (rc)
            json_object_set_new(rep, "error", json_string(ann_errmsg(rc)));
    }
    if (report)
        *report = rep;
    else
        json_decref(rep);
    ann_vecsrc_destroy(base);
    ann_gt_free(&gt);
    free(queries);
    free(warm);
    ann_bundle_close(&b);
    return rc;
}
