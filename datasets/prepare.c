/*
 * prepare.c: the dataset registry and `annlab dataset prepare NAME`.
 *
 * Each registry kind has one recipe: idx (gzipped idx files from a Debian
 * package, e.g. Fashion-MNIST), wink (the GloVe JSON of an npm package),
 * files (big-ann/TEXMEX files in the shared data folder, e.g. bigann-10k),
 * download-hdf5 / download-parquet (fetched into the downloads folder by
 * fetch.h, or taken already downloaded with --from: the same conversion
 * either way), synth (the generator of generate.h).  Source files with a
 * sha256 in the registry are checked before use.
 */
#include "datasets/prepare.h"

#include "datasets/bundle.h"
#include "datasets/dsutil.h"
#include "datasets/fetch.h"
#include "datasets/generate.h"
#include "datasets/import.h"
#include "datasets/parquet.h"
#include "datasets/readers.h"
#include "datasets/wink.h"
#include "engines/core/stagedir.h"
#include "engines/core/status.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const kinds[] = { "idx", "wink", "files", "download-hdf5",
                                     "download-parquet", "synth" };

static int validate(ds_registry *reg)
{
    const json_t *list = json_object_get(reg->root, "datasets");
    if (!json_is_array(list))
        return ann_fail(ANN_EFORMAT, "%s: \"datasets\" must be an array", reg->path);
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *kind = json_string_value(json_object_get(e, "kind"));
        const char *metric = json_string_value(json_object_get(e, "metric"));
        ann_metric m;
        if (!name || !kind || !metric || !json_is_string(json_object_get(e, "description")))
            return ann_fail(ANN_EFORMAT,
                            "%s: datasets[%zu]: \"name\", \"kind\", \"metric\" and "
                            "\"description\" must be strings",
                            reg->path, i);
        int known = 0;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            known |= !strcmp(kind, kinds[k]);
        if (!known)
            return ann_fail(ANN_EFORMAT, "%s: datasets[%zu] (%s): unknown kind \"%s\"", reg->path,
                            i, name, kind);
        if (ann_metric_parse(metric, &m))
            return ann_fail(ANN_EFORMAT, "%s: datasets[%zu] (%s): unknown metric \"%s\"",
                            reg->path, i, name, metric);
    }
    return 0;
}

static int try_load(ds_registry *reg, const char *path)
{
    json_error_t jerr;
    if (access(path, R_OK) != 0)
        return ANN_ENOTFOUND;
    char real[PATH_MAX];
    if (realpath(path, real))
        path = real;
    snprintf(reg->path, sizeof reg->path, "%s", path);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    snprintf(reg->dir, sizeof reg->dir, "%s", dirname(tmp));
    reg->root = json_load_file(path, 0, &jerr);
    if (!reg->root)
        return ann_fail(ANN_EFORMAT, "%s: line %d: %s", path, jerr.line, jerr.text);
    int rc = validate(reg);
    if (rc) {
        json_decref(reg->root);
        reg->root = NULL;
    }
    return rc;
}

int ds_registry_load(const char *path, ds_registry *reg)
{
    memset(reg, 0, sizeof *reg);
    if (path) {
        int rc = try_load(reg, path);
        return rc == ANN_ENOTFOUND ? ann_fail(ANN_ENOTFOUND, "%s: no such registry", path) : rc;
    }
    const char *env = getenv("ANNLAB_REGISTRY");
    if (env && *env) {
        int rc = try_load(reg, env);
        return rc == ANN_ENOTFOUND ? ann_fail(ANN_ENOTFOUND, "%s (ANNLAB_REGISTRY): no such file",
                                              env)
                                   : rc;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char cand[PATH_MAX + 64];
        char *d = dirname(exe); /* build/ or build/tests/ */
        snprintf(cand, sizeof cand, "%s/../datasets/registry.json", d);
        int rc = try_load(reg, cand);
        if (rc != ANN_ENOTFOUND)
            return rc;
        snprintf(cand, sizeof cand, "%s/../../datasets/registry.json", d);
        rc = try_load(reg, cand);
        if (rc != ANN_ENOTFOUND)
            return rc;
    }
    int rc = try_load(reg, "datasets/registry.json");
    return rc == ANN_ENOTFOUND
               ? ann_fail(ANN_ENOTFOUND, "datasets/registry.json not found next to the annlab "
                                         "binary nor in the current directory (set "
                                         "ANNLAB_REGISTRY)")
               : rc;
}

void ds_registry_free(ds_registry *reg)
{
    if (reg) {
        json_decref(reg->root);
        reg->root = NULL;
    }
}

const json_t *ds_registry_find(const ds_registry *reg, const char *name)
{
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(reg->root, "datasets"), i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "name")), name))
            return e;
    }
    return NULL;
}

void ds_shared_data_dir(const ds_registry *reg, char *buf, size_t len)
{
    const char *env = getenv("ANNLAB_SHARED");
    if (env && *env)
        snprintf(buf, len, "%s/data", env);
    else
        snprintf(buf, len, "%s/../../shared/data", reg->dir);
}

static uint64_t entry_uint(const json_t *e, const char *key, uint64_t dflt)
{
    const json_t *v = json_object_get(e, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t)json_integer_value(v)
                                                            : dflt;
}

/* Resolve a source path (relative ones are relative to the registry's folder). */
static void resolve(const ds_registry *reg, const char *p, char *out, size_t len)
{
    if (p[0] == '/')
        snprintf(out, len, "%s", p);
    else
        snprintf(out, len, "%s/%s", reg->dir, p);
}

/*
 * Check a {path, sha256} source object: the file exists (else ANN_ENOTFOUND
 * with `hint`) and its sha256 matches (else ANN_ECORRUPT).  Resolved path
 * into out.
 */
static int check_source_file(const ds_registry *reg, const char *name, const json_t *src,
                             const char *hint, char *out, size_t len)
{
    const char *p = json_string_value(json_object_get(src, "path"));
    const char *want = json_string_value(json_object_get(src, "sha256"));
    if (!p)
        return ann_fail(ANN_EFORMAT, "%s: %s: source has no \"path\"", reg->path, name);
    resolve(reg, p, out, len);
    if (access(out, R_OK) != 0)
        return ann_fail(ANN_ENOTFOUND, "%s: %s: source file missing (%s)", name, out, hint);
    if (want) {
        char sum[80];
        int rc = ds_sha256_file(out, sum, NULL);
        if (rc)
            return rc;
        if (strcmp(sum + 7, want) != 0)
            return ann_fail(ANN_ECORRUPT, "%s: %s: sha256 %s differs from the registry's %s", name,
                            out, sum + 7, want);
    }
    return 0;
}

static json_t *extra_for(const json_t *e)
{
    json_t *x = json_object();
    json_object_set(x, "registry_entry", (json_t *)e);
    json_object_set_new(x, "description", json_string(json_string_value(
                                              json_object_get(e, "description"))));
    return x;
}

static void warmup_rule(const json_t *e, uint32_t *count, uint64_t *seed)
{
    const json_t *w = json_object_get(e, "warmup");
    *count = (uint32_t)entry_uint(w, "count", 0);
    *seed = entry_uint(w, "seed", DS_WARMUP_SEED);
}

static int prepare_idx(const ds_registry *reg, const json_t *e, const char *name,
                       const char *out_dir)
{
    int rc = 0;
    char base_path[4096], query_path[4096];
    ann_vecsrc *base = NULL, *query = NULL;
    json_t *extra = extra_for(e);
    const json_t *src = json_object_get(e, "source");
    const char *pkg = json_string_value(json_object_get(src, "debian_package"));
    char hint[256];
    snprintf(hint, sizeof hint, "install the Debian package %s: make deps", pkg ? pkg : "?");
    ann_metric metric;
    ann_metric_parse(json_string_value(json_object_get(e, "metric")), &metric);
    if ((rc = check_source_file(reg, name, json_object_get(src, "base"), hint, base_path,
                                sizeof base_path)) ||
        (rc = check_source_file(reg, name, json_object_get(src, "query"), hint, query_path,
                                sizeof query_path)))
        goto out;
    if ((rc = ds_idx_open(base_path, metric, &base)) ||
        (rc = ds_idx_open(query_path, metric, &query)))
        goto out;
    uint64_t want_n = entry_uint(e, "n", 0), want_dim = entry_uint(e, "dim", 0);
    if ((want_n && base->n != want_n) || (want_dim && base->dim != want_dim)) {
        rc = ann_fail(ANN_EFORMAT, "%s: holds %llu x %u images, the registry says %llu x %llu",
                      base_path, (unsigned long long)base->n, base->dim,
                      (unsigned long long)want_n, (unsigned long long)want_dim);
        goto out;
    }
    ds_import_spec s = { .out_dir = out_dir, .name = name, .metric = metric, .base = base,
                         .base_name = base_path, .query = query, .query_name = query_path,
                         .gt_k = (uint32_t)entry_uint(e, "gt_k", 100), .extra = extra,
                         .out_flags = ANN_OUT_IN_PLACE };
    warmup_rule(e, &s.warmup_sample, &s.warmup_seed);
    rc = ds_import_bundle(&s);
out:
    ann_vecsrc_destroy(base);
    ann_vecsrc_destroy(query);
    json_decref(extra);
    return rc;
}

static int prepare_wink(const ds_registry *reg, const json_t *e, const char *name,
                        const char *out_dir)
{
    char path[4096];
    const json_t *src = json_object_get(e, "source");
    const json_t *split = json_object_get(e, "split");
    int rc = check_source_file(reg, name, json_object_get(src, "file"),
                               "install the npm package: make deps", path, sizeof path);
    if (rc)
        return rc;
    json_t *extra = extra_for(e);
    ds_wink_spec w = { .json_path = path, .out_dir = out_dir, .name = name,
                       .n_query = (uint32_t)entry_uint(split, "queries", 10000),
                       .n_warmup = (uint32_t)entry_uint(split, "warmup", 2000),
                       .seed = entry_uint(split, "seed", 100),
                       .gt_k = (uint32_t)entry_uint(e, "gt_k", 100), .extra = extra,
                       .out_flags = ANN_OUT_IN_PLACE };
    rc = ds_wink_convert(&w);
    json_decref(extra);
    return rc;
}

static int prepare_files(const ds_registry *reg, const json_t *e, const char *name,
                         const char *out_dir)
{
    char shared[4096], dir[4400], base[4500], query[4500], gt[4500];
    const json_t *src = json_object_get(e, "source");
    const char *sub = json_string_value(json_object_get(src, "shared_data"));
    const char *b = json_string_value(json_object_get(src, "base"));
    const char *q = json_string_value(json_object_get(src, "query"));
    const char *g = json_string_value(json_object_get(src, "gt"));
    if (!sub || !b || !q)
        return ann_fail(ANN_EFORMAT, "%s: %s: source needs shared_data, base and query",
                        reg->path, name);
    ds_shared_data_dir(reg, shared, sizeof shared);
    snprintf(dir, sizeof dir, "%s/%s", shared, sub);
    if (access(dir, R_OK) != 0)
        return ann_fail(ANN_ENOTFOUND, "%s: %s: shared data folder missing (set ANNLAB_SHARED)",
                        name, dir);
    snprintf(base, sizeof base, "%s/%s", dir, b);
    snprintf(query, sizeof query, "%s/%s", dir, q);
    if (g)
        snprintf(gt, sizeof gt, "%s/%s", dir, g);
    json_t *extra = extra_for(e);
    ds_import_files f = { .out_dir = out_dir, .name = name, .base = base, .query = query,
                          .gt = g ? gt : NULL, .metric_set = 1,
                          .gt_k = (uint32_t)entry_uint(e, "gt_k", 100),
                          .expect_n = entry_uint(e, "n", 0),
                          .expect_dim = (uint32_t)entry_uint(e, "dim", 0), .extra = extra,
                          .out_flags = ANN_OUT_IN_PLACE };
    ann_metric_parse(json_string_value(json_object_get(e, "metric")), &f.metric);
    uint64_t seed_unused;
    warmup_rule(e, &f.warmup_sample, &seed_unused);
    int rc = ds_import_from_files(&f);
    json_decref(extra);
    return rc;
}

/*
 * VectorDBBench parquet already downloaded into from_dir: convert it
 * (parquet.h), check the shape against the registry, add warm-up queries
 * sampled from the base (VectorDBBench has no third split) and finish the
 * bundle again so the manifest covers them (and fetched, the download
 * record, when set).
 */
static int prepare_parquet(const json_t *e, const char *name, const char *out_dir,
                           const char *from_dir, const json_t *fetched)
{
    int rc = 0;
    char train[4096], test[4096], nb[4096], base_path[4096], warm_path[4096];
    const char *files[3];
    size_t nfiles = 0;
    ann_bundle b = { 0 };
    int opened = 0;
    ann_vecsrc *base = NULL;
    uint64_t *picks = NULL;
    json_t *extra = NULL;
    ann_metric metric;
    ann_metric_parse(json_string_value(json_object_get(e, "metric")), &metric);
    uint32_t gt_k = (uint32_t)entry_uint(e, "gt_k", 100);

    snprintf(train, sizeof train, "%s/shuffle_train.parquet", from_dir);
    if (access(train, R_OK) != 0)
        snprintf(train, sizeof train, "%s/train.parquet", from_dir);
    snprintf(test, sizeof test, "%s/test.parquet", from_dir);
    snprintf(nb, sizeof nb, "%s/neighbors.parquet", from_dir);
    if (access(train, R_OK) != 0 || access(test, R_OK) != 0)
        return ann_fail(ANN_ENOTFOUND, "%s: %s must hold shuffle_train.parquet (or "
                                       "train.parquet) and test.parquet (and neighbors.parquet)",
                        name, from_dir);
    files[nfiles++] = train;
    files[nfiles++] = test;
    if (access(nb, R_OK) == 0)
        files[nfiles++] = nb;
    if ((rc = ann_import_parquet(files, nfiles, out_dir, name, metric, gt_k, ANN_OUT_IN_PLACE)))
        goto out;
    if ((rc = ann_bundle_open(out_dir, &b)))
        goto out;
    opened = 1;
    uint64_t want_n = entry_uint(e, "n", 0), want_dim = entry_uint(e, "dim", 0);
    if ((want_n && b.n != want_n) || (want_dim && b.dim != want_dim)) {
        rc = ann_fail(ANN_EFORMAT, "%s: base holds %llu x %u, but %s is %llu x %llu", train,
                      (unsigned long long)b.n, b.dim, name, (unsigned long long)want_n,
                      (unsigned long long)want_dim);
        goto out;
    }
    uint32_t count;
    uint64_t seed, m = 0;
    warmup_rule(e, &count, &seed);
    if (count) {
        m = count < b.n ? count : b.n;
        picks = malloc(m * sizeof *picks);
        if (!picks) {
            rc = ann_fail(-ENOMEM, "%s: no memory for the warm-up sample", name);
            goto out;
        }
        ann_bundle_path(&b, "base.fbin", base_path, sizeof base_path);
        ann_bundle_path(&b, "warmup.fbin", warm_path, sizeof warm_path);
        /* rows are copied as stored (already normalised for cosine) */
        if ((rc = ds_sample_rows(b.n, m, seed, picks)) ||
            (rc = ann_vecsrc_open_file(base_path, ANN_METRIC_L2, &base)))
            goto out;
        ds_copy_spec c = { .src = base, .src_name = base_path, .path = warm_path,
                           .metric = ANN_METRIC_L2, .count = m, .rows = picks };
        if ((rc = ds_copy_rows(&c)))
            goto out;
    }
    if (count || fetched) {
        extra = json_deep_copy(b.manifest);
        if (count)
            json_object_set_new(extra, "warmup_from",
                                json_pack("{s:s, s:I, s:I}", "rule",
                                          "seeded sample of base rows (outside the test queries)",
                                          "count", (json_int_t)m, "seed", (json_int_t)seed));
        json_object_set(extra, "registry_entry", (json_t *)e);
        json_object_set(extra, "gt_check_at_import", json_object_get(b.manifest, "gt_check"));
        if (fetched)
            json_object_set(extra, "download", (json_t *)fetched);
        rc = ann_bundle_finish(out_dir, name, metric, b.gt_k, extra);
    }
out:
    if (opened)
        ann_bundle_close(&b);
    ann_vecsrc_destroy(base);
    free(picks);
    json_decref(extra);
    return rc;
}

/* How to get a download kind's files without this machine's network. */
static void offline_hint(const char *kind, const char *name, char *buf, size_t len)
{
    if (!strcmp(kind, "download-parquet"))
        snprintf(buf, len,
                 "download them elsewhere and run `annlab dataset prepare %s --from DIR` (DIR "
                 "holding shuffle_train.parquet, test.parquet, neighbors.parquet)",
                 name);
    else
        snprintf(buf, len,
                 "download it elsewhere and run `annlab dataset prepare %s --from FILE.hdf5`",
                 name);
}

/*
 * The entry's source.files, checked: a non-empty array of {name (a plain
 * file name), url, bytes (integer > 0), sha256 (64 hex digits)}, the last
 * two optional; download-hdf5 takes exactly one file.
 */
static int source_files(const ds_registry *reg, const json_t *e, const char *name,
                        const char *hint, const json_t **out)
{
    const char *kind = json_string_value(json_object_get(e, "kind"));
    const json_t *files = json_object_get(json_object_get(e, "source"), "files");
    if (!files)
        return ann_fail(ANN_EUNSUPPORTED, "%s: %s lists no source.files to download; %s", name,
                        reg->path, hint);
    if (!json_is_array(files) || json_array_size(files) == 0 ||
        (!strcmp(kind, "download-hdf5") && json_array_size(files) != 1))
        return ann_fail(ANN_EFORMAT, "%s: %s: source.files must be an array of %s", reg->path,
                        name, strcmp(kind, "download-hdf5") ? "file objects" : "one file object");
    size_t i;
    const json_t *f;
    json_array_foreach(files, i, f)
    {
        const char *file = json_string_value(json_object_get(f, "name"));
        const json_t *bytes = json_object_get(f, "bytes");
        const json_t *sum = json_object_get(f, "sha256");
        const char *hex = json_string_value(sum);
        int sum_ok = !sum || (hex && strlen(hex) == 64 && strspn(hex, "0123456789abcdef") == 64);
        if (!file || !*file || file[0] == '.' || strchr(file, '/') ||
            !json_is_string(json_object_get(f, "url")))
            return ann_fail(ANN_EFORMAT,
                            "%s: %s: source.files[%zu] needs a \"name\" (a file name without "
                            "'/') and a \"url\"",
                            reg->path, name, i);
        if ((bytes && (!json_is_integer(bytes) || json_integer_value(bytes) <= 0)) ||
            !sum_ok)
            return ann_fail(ANN_EFORMAT,
                            "%s: %s: source.files[%zu] (%s): \"bytes\" must be a positive "
                            "integer and \"sha256\" 64 lowercase hex digits",
                            reg->path, name, i, file);
    }
    *out = files;
    return 0;
}

int ds_fetch(const ds_registry *reg, const char *name, const ds_prepare_opts *opts, char *dir,
             size_t dir_len, json_t **report)
{
    int rc = 0;
    json_t *list = NULL;
    const json_t *files = NULL;
    char hint[1024];
    if (report)
        *report = NULL;
    const json_t *e = ds_registry_find(reg, name);
    if (!e)
        return ann_fail(ANN_ENOTFOUND, "%s: no such dataset in %s (see `annlab dataset list`)",
                        name, reg->path);
    const char *kind = json_string_value(json_object_get(e, "kind"));
    if (strncmp(kind, "download-", 9) != 0)
        return ann_fail(ANN_EPARAM, "%s: a %s dataset is not downloaded; `annlab dataset "
                                    "prepare %s` makes it",
                        name, kind, name);
    offline_hint(kind, name, hint, sizeof hint);
    if ((rc = source_files(reg, e, name, hint, &files)))
        return rc;
    const char *downloads = opts && opts->downloads ? opts->downloads : DS_DOWNLOADS_DEFAULT;
    if ((rc = ds_join(dir, dir_len, downloads, name)) ||
        (rc = ds_mkdir_p(dir)))
        return rc;
    const char *mirror = getenv("ANNLAB_MIRROR");
    list = json_array();
    size_t i;
    const json_t *f;
    json_array_foreach(files, i, f)
    {
        char url[4096], dest[4096];
        const char *file = json_string_value(json_object_get(f, "name"));
        if ((rc = ds_fetch_mirror_url(json_string_value(json_object_get(f, "url")), mirror, url,
                                      sizeof url)) ||
            (rc = ds_join(dest, sizeof dest, dir, file)))
            goto out;
        ds_fetch_spec s = { .name = name, .url = url, .dest = dest,
                            .expect_bytes = entry_uint(f, "bytes", 0),
                            .expect_sha256 = json_string_value(json_object_get(f, "sha256")),
                            .offline_hint = hint, .progress = opts ? opts->progress : NULL };
        ds_fetch_result r;
        if ((rc = ds_fetch_file(&s, &r)))
            goto out;
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s, s:I, s:s, s:b, s:I, s:b, s:b}", "file", file, "url",
                            url, "path", dest, "bytes", (json_int_t)r.bytes, "sha256", r.sha256,
                            "already", r.already, "resumed_from", (json_int_t)r.resumed_from,
                            "checked_bytes", s.expect_bytes != 0, "checked_sha256",
                            s.expect_sha256 != NULL));
    }
    if (report) {
        *report = list;
        list = NULL;
    }
out:
    if (rc)
        rmdir(dir); /* only when empty: a resumable FILE.part stays */
    json_decref(list);
    return rc;
}

/*
 * A download kind: from opts->from when given, else fetched into the
 * downloads folder first; then the same conversion either way.
 */
static int prepare_download(const ds_registry *reg, const json_t *e, const char *name,
                            const char *out_dir, const ds_prepare_opts *opts)
{
    int rc = 0;
    json_t *fetched = NULL, *extra = NULL;
    char dir[4096], file[4096];
    const char *kind = json_string_value(json_object_get(e, "kind"));
    const char *from = opts ? opts->from : NULL;
    int parquet = !strcmp(kind, "download-parquet");
    if (!from) {
        if ((rc = ds_fetch(reg, name, opts, dir, sizeof dir, &fetched)))
            goto out;
        from = dir;
        if (!parquet) {
            const json_t *f = json_array_get(fetched, 0);
            if ((rc = ds_join(file, sizeof file, dir,
                              json_string_value(json_object_get(f, "file")))))
                goto out;
            from = file;
        }
    }
    if (parquet) {
        rc = prepare_parquet(e, name, out_dir, from, fetched);
        goto out;
    }
    extra = extra_for(e);
    if (fetched)
        json_object_set(extra, "download", fetched);
    ds_import_files f = { .out_dir = out_dir, .name = name, .hdf5 = from,
                          .gt_k = (uint32_t)entry_uint(e, "gt_k", 100),
                          .expect_n = entry_uint(e, "n", 0),
                          .expect_dim = (uint32_t)entry_uint(e, "dim", 0), .extra = extra,
                          .out_flags = ANN_OUT_IN_PLACE };
    uint64_t seed_unused;
    warmup_rule(e, &f.warmup_sample, &seed_unused);
    rc = ds_import_from_files(&f);
out:
    json_decref(extra);
    json_decref(fetched);
    return rc;
}

int ds_prepare(const ds_registry *reg, const char *name, const ds_prepare_opts *opts,
               int *already)
{
    char out_dir[4096];
    const char *root = opts && opts->root ? opts->root : "datasets/data";
    if (already)
        *already = 0;
    const json_t *e = ds_registry_find(reg, name);
    if (!e)
        return ann_fail(ANN_ENOTFOUND, "%s: no such dataset in %s (see `annlab dataset list`)",
                        name, reg->path);
    int rc = ds_join(out_dir, sizeof out_dir, root, name);
    if (rc)
        return rc;
    const char *kind = json_string_value(json_object_get(e, "kind"));
    if (opts && opts->from && strncmp(kind, "download-", 9) != 0)
        return ann_fail(ANN_EPARAM, "%s: --from applies to downloaded datasets only", name);
    if (!(opts && opts->force)) {
        ann_bundle b;
        if (ann_bundle_open(out_dir, &b) == 0) {
            ann_bundle_close(&b);
            if (already)
                *already = 1;
            return 0;
        }
        ann_err_clear();
    }
    /* Everything is written into a temporary sibling of root/NAME that
     * takes the name only when the bundle is complete: a failed or
     * interrupted prepare (a download error, bad data, a full disk) leaves
     * an existing root/NAME exactly as it was. */
    ann_stagedir sd;
    rc = ann_stagedir_begin(&sd, out_dir, opts && opts->force ? ANN_OUT_FORCE : 0);
    if (rc == -EEXIST) {
        ann_bundle b;
        int why = ann_bundle_open(out_dir, &b);
        char reason[600];
        snprintf(reason, sizeof reason, "%s", why ? ann_errmsg(why) : "it opened meanwhile");
        if (!why)
            ann_bundle_close(&b);
        return ann_fail(-EEXIST, "%s: exists but is not a prepared bundle (%s); --force replaces it",
                        out_dir, reason);
    }
    if (rc)
        return rc;
    const char *dir = ann_stagedir_path(&sd);
    if (!strcmp(kind, "idx"))
        rc = prepare_idx(reg, e, name, dir);
    else if (!strcmp(kind, "wink"))
        rc = prepare_wink(reg, e, name, dir);
    else if (!strcmp(kind, "files"))
        rc = prepare_files(reg, e, name, dir);
    else if (!strcmp(kind, "synth")) {
        ann_gen_params p;
        rc = ann_generate_preset(name, &p);
        if (!rc)
            rc = ann_generate_bundle(&p, dir, ANN_OUT_IN_PLACE);
    } else
        rc = prepare_download(reg, e, name, dir, opts);
    if (!rc)
        rc = ann_stagedir_commit(&sd);
    ann_stagedir_abort(&sd);
    return rc;
}
