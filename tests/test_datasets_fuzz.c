/*
 * test_datasets_fuzz.c: seeded mutation fuzzing of the dataset readers
 * (data from disk is untrusted).  Valid small files in each
 * format (.fvecs, .ivecs, idx.gz, wink JSON, a bundle's manifest.json) get
 * a few hundred seeded byte flips, truncations and insertions each; every
 * mutant must either be read or be refused with a negative code and a
 * message naming the file, never crash (the suite runs under ASan/UBSan
 * in CI), and a refused wink conversion must leave no manifest behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/bundle.h"
#include "datasets/import.h"
#include "datasets/readers.h"
#include "datasets/wink.h"
#include "engines/core/fileio.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "tests/support/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define MUTANTS 200

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir("dsfuzz");
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(dir);
    return 0;
}

/* One seeded mutation of src into a new buffer (*len updated). */
static unsigned char *mutate(const unsigned char *src, size_t src_len, uint64_t *st,
                             size_t *len)
{
    unsigned char *m = malloc(src_len + 16);
    memcpy(m, src, src_len);
    *len = src_len;
    int kind = (int)(tu_rand(st) % 4);
    int edits = 1 + (int)(tu_rand(st) % 4);
    for (int e = 0; e < edits && *len > 0; e++) {
        size_t at = (size_t)(tu_rand(st) % *len);
        if (kind == 0)
            m[at] ^= (unsigned char)(1u << (tu_rand(st) % 8));
        else if (kind == 1)
            m[at] = (unsigned char)tu_rand(st);
        else if (kind == 2)
            *len = at; /* truncate */
        else if (*len < src_len + 16) {
            memmove(m + at + 1, m + at, *len - at);
            m[at] = (unsigned char)tu_rand(st);
            (*len)++;
        }
    }
    return m;
}

/* A refusal: negative code, message naming the file. */
static void assert_refusal_names(int rc, const char *name)
{
    assert_true(rc < 0);
    const char *msg = ann_errmsg(rc);
    if (!strstr(msg, name))
        fail_msg("message \"%s\" does not name %s", msg, name);
}

static void fuzz_file(const char *name, const char *named, const unsigned char *good,
                      size_t good_len, int (*probe)(const char *path), uint64_t seed)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    uint64_t st = seed;
    int refused = 0;
    for (int i = 0; i < MUTANTS; i++) {
        size_t len = 0;
        unsigned char *m = mutate(good, good_len, &st, &len);
        assert_int_equal(tu_write_file(p, m, len), 0);
        free(m);
        ann_err_clear();
        int rc = probe(p);
        if (rc) {
            assert_refusal_names(rc, named);
            refused++;
        }
    }
    /* The mutations are not all harmless: most must be caught. */
    assert_true(refused > MUTANTS / 4);
}

static int probe_fvecs(const char *path)
{
    ann_vecsrc *s = NULL;
    int rc = ds_texmex_open(path, ANN_METRIC_L2, &s);
    if (rc)
        return rc;
    float *buf = malloc((size_t)s->n * s->dim * sizeof(float) + 4);
    rc = buf ? ann_vecsrc_read(s, 0, s->n, buf) : -12;
    free(buf);
    ann_vecsrc_destroy(s);
    return rc;
}

static int probe_ivecs(const char *path)
{
    ann_gt gt;
    int rc = ds_ivecs_load_gt(path, 50, &gt);
    if (!rc)
        ann_gt_free(&gt);
    return rc;
}

static int probe_idx(const char *path)
{
    ann_vecsrc *s = NULL;
    int rc = ds_idx_open(path, ANN_METRIC_L2, &s);
    ann_vecsrc_destroy(s);
    return rc;
}

static char wink_out[4096];

static int probe_wink(const char *path)
{
    ds_wink_spec w = { .json_path = path, .out_dir = wink_out, .name = "f", .n_query = 2,
                       .n_warmup = 1, .seed = 3, .gt_k = 3 };
    assert_int_equal(ann_tree_remove(wink_out), 0); /* an earlier mutant's bundle */
    int rc = ds_wink_convert(&w);
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/manifest.json", wink_out);
    if (rc)
        assert_int_equal(access(mp, F_OK), -1);
    return rc;
}

static void test_fuzz_texmex(void **state)
{
    (void)state;
    char p[4096];
    snprintf(p, sizeof p, "%s/good.fvecs", dir);
    float *x = tu_clustered(12, 5, 2, 1, 0);
    assert_int_equal(ds_texmex_write(p, ANN_ELEM_F32, x, 12, 5), 0);
    free(x);
    size_t len = 0;
    unsigned char *good = tu_read_file(p, &len);
    fuzz_file("mutant.fvecs", "mutant.fvecs", good, len, probe_fvecs, 1);
    free(good);

    int32_t ids[8 * 6];
    for (int i = 0; i < 48; i++)
        ids[i] = i % 50;
    snprintf(p, sizeof p, "%s/good.ivecs", dir);
    assert_int_equal(ds_texmex_write(p, ANN_ELEM_I32, ids, 8, 6), 0);
    good = tu_read_file(p, &len);
    fuzz_file("mutant.ivecs", "mutant.ivecs", good, len, probe_ivecs, 2);
    free(good);
}

static void test_fuzz_idx_gz(void **state)
{
    (void)state;
    char p[4096];
    snprintf(p, sizeof p, "%s/good.gz", dir);
    unsigned char raw[16 + 6 * 9] = { 0, 0, 8, 3, 0, 0, 0, 6, 0, 0, 0, 3, 0, 0, 0, 3 };
    for (int i = 16; i < (int)sizeof raw; i++)
        raw[i] = (unsigned char)(i * 13);
    gzFile gz = gzopen(p, "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, raw, sizeof raw), (int)sizeof raw);
    assert_int_equal(gzclose(gz), Z_OK);
    size_t len = 0;
    unsigned char *good = tu_read_file(p, &len);
    fuzz_file("mutant.gz", "mutant.gz", good, len, probe_idx, 3);
    free(good);
}

static void test_fuzz_wink_json(void **state)
{
    (void)state;
    const char *good = "{\"precision\":8,\"size\":6,\"dimensions\":3,\"words\":[\"a\",\"b\"],"
                       "\"vectors\":{\"a\":[1,2,3,3.7416,0],\"b\":[0.5,-1,2e-1,1.1,1],"
                       "\"c\\\"\":[1,0,0,1,2],\"d\":[0,1,0,1,3],\"e\":[0,0,1,1,4],"
                       "\"f\":[1,1,1,1.73,5]},\"unkVector\":[0,0,0,0,-1]}";
    snprintf(wink_out, sizeof wink_out, "%s/wink-out", dir);
    fuzz_file("mutant.json", "mutant.json", (const unsigned char *)good, strlen(good), probe_wink, 4);
}

static char bundle_dir[4096];

static int probe_manifest(const char *path)
{
    (void)path;
    json_t *rep = NULL;
    int rc = ann_bundle_verify(bundle_dir, 10, &rep);
    json_decref(rep);
    return rc;
}

static void test_fuzz_manifest(void **state)
{
    (void)state;
    char p[4200];
    snprintf(bundle_dir, sizeof bundle_dir, "%s/bundle", dir);
    assert_int_equal(ds_mkdir_p(bundle_dir), 0);
    float *x = tu_clustered(40, 4, 2, 5, 0);
    ann_vecwriter w;
    snprintf(p, sizeof p, "%s/base.fbin", bundle_dir);
    assert_int_equal(ann_vecwriter_open(&w, p, 4, ANN_ELEM_F32), 0);
    assert_int_equal(ann_vecwriter_append(&w, x, 40), 0);
    assert_int_equal(ann_vecwriter_finish(&w), 0);
    snprintf(p, sizeof p, "%s/query.fbin", bundle_dir);
    assert_int_equal(ann_vecwriter_open(&w, p, 4, ANN_ELEM_F32), 0);
    assert_int_equal(ann_vecwriter_append(&w, x, 5), 0);
    assert_int_equal(ann_vecwriter_finish(&w), 0);
    free(x);
    assert_int_equal(ann_bundle_finish(bundle_dir, "fz", ANN_METRIC_L2, 4, NULL), 0);
    snprintf(p, sizeof p, "%s/manifest.json", bundle_dir);
    size_t len = 0;
    unsigned char *good = tu_read_file(p, &len);
    /* Every refusal names the bundle (its manifest or a member file). */
    fuzz_file("bundle/manifest.json", "/bundle", good, len, probe_manifest, 6);
    free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuzz_texmex),
        cmocka_unit_test(test_fuzz_idx_gz),
        cmocka_unit_test(test_fuzz_wink_json),
        cmocka_unit_test(test_fuzz_manifest),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
