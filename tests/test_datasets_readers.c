/*
 * test_datasets_readers.c: every dataset reader and writer, byte-exact:
 * TEXMEX .fvecs/.bvecs/.ivecs, ann-benchmarks HDF5 (written by h5py in
 * every published layout), gzipped idx (written here with zlib), the wink GloVe JSON
 * scanner, and big-ann .fbin/.u8bin/.i8bin through import; plus the
 * malformed inputs each reader must refuse, with their exact messages.
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
#include "engines/core/distance.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "tests/support/hdf5_fixture.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir("dsreaders");
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(dir);
    return 0;
}

static void path_of(char *buf, const char *name)
{
    snprintf(buf, 4096, "%s/%s", dir, name);
}

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* The message of the last failure contains want. */
static void assert_msg(int rc, const char *want)
{
    assert_true(rc < 0);
    const char *msg = ann_errmsg(rc);
    if (!strstr(msg, want))
        fail_msg("message \"%s\" lacks \"%s\"", msg, want);
}

/* ---- TEXMEX ------------------------------------------------------------ */

static void test_fvecs_round_trip_byte_exact(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "a.fvecs");
    const uint32_t n = 3, dim = 5;
    float rows[15];
    for (int i = 0; i < 15; i++)
        rows[i] = (float)i * 0.25f - 1.5f;
    assert_int_equal(ds_texmex_write(p, ANN_ELEM_F32, rows, n, dim), 0);

    /* The file is exactly: per row int32 dim, then dim float32. */
    unsigned char want[3 * (4 + 20)];
    for (uint32_t r = 0; r < n; r++) {
        put_le32(want + r * 24, dim);
        memcpy(want + r * 24 + 4, rows + r * dim, 20);
    }
    size_t len = 0;
    unsigned char *bytes = tu_read_file(p, &len);
    assert_non_null(bytes);
    assert_int_equal(len, sizeof want);
    assert_memory_equal(bytes, want, sizeof want);
    free(bytes);

    ann_vecsrc *src = NULL;
    assert_int_equal(ds_texmex_open(p, ANN_METRIC_L2, &src), 0);
    assert_int_equal(src->n, n);
    assert_int_equal(src->dim, dim);
    float back[15];
    assert_int_equal(ann_vecsrc_read(src, 0, n, back), 0);
    assert_memory_equal(back, rows, sizeof rows);
    float one[5];
    assert_int_equal(ann_vecsrc_read(src, 2, 1, one), 0);
    assert_memory_equal(one, rows + 10, sizeof one);
    ann_vecsrc_destroy(src);
}

static void test_bvecs_widen_exact(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "b.bvecs");
    uint8_t rows[2 * 4] = { 0, 1, 127, 255, 9, 8, 7, 200 };
    assert_int_equal(ds_texmex_write(p, ANN_ELEM_U8, rows, 2, 4), 0);
    size_t len = 0;
    unsigned char *bytes = tu_read_file(p, &len);
    assert_int_equal(len, 2 * (4 + 4));
    assert_int_equal(bytes[0], 4);
    assert_memory_equal(bytes + 4, rows, 4);
    assert_memory_equal(bytes + 12, rows + 4, 4);
    free(bytes);
    ann_vecsrc *src = NULL;
    assert_int_equal(ds_texmex_open(p, ANN_METRIC_L2, &src), 0);
    float back[8];
    assert_int_equal(ann_vecsrc_read(src, 0, 2, back), 0);
    for (int i = 0; i < 8; i++)
        assert_true(back[i] == (float)rows[i]);
    ann_vecsrc_destroy(src);
}

static void test_ivecs_gt_round_trip(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "g.ivecs");
    int32_t ids[2 * 3] = { 4, 0, 2, 1, 3, 5 };
    assert_int_equal(ds_texmex_write(p, ANN_ELEM_I32, ids, 2, 3), 0);
    ann_gt gt;
    assert_int_equal(ds_ivecs_load_gt(p, 6, &gt), 0);
    assert_int_equal(gt.nq, 2);
    assert_int_equal(gt.k, 3);
    assert_null(gt.dists);
    assert_memory_equal(gt.ids, ids, sizeof ids);
    ann_gt_free(&gt);
    /* Range check against a base of 5 rows: id 5 is out. */
    assert_msg(ds_ivecs_load_gt(p, 5, &gt), "g.ivecs: query 1 rank 2: id 5 out of range [0, 5)");
}

static void test_fvecs_row_with_other_dim_refused(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "bad-dim.fvecs");
    /* Three rows of 24 bytes; row 2 claims dim 7 instead of 5. */
    float rows[15] = { 0 };
    assert_int_equal(ds_texmex_write(p, ANN_ELEM_F32, rows, 3, 5), 0);
    size_t len = 0;
    unsigned char *bytes = tu_read_file(p, &len);
    put_le32(bytes + 48, 7);
    assert_int_equal(tu_write_file(p, bytes, len), 0);
    free(bytes);
    ann_vecsrc *src = NULL;
    assert_int_equal(ds_texmex_open(p, ANN_METRIC_L2, &src), 0);
    float back[15];
    assert_msg(ann_vecsrc_read(src, 0, 3, back), "bad-dim.fvecs: row 2 has dim 7, expected 5 "
                                                  "(from row 0)");
    ann_vecsrc_destroy(src);
}

static void test_fvecs_partial_row_refused(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "short.fvecs");
    float rows[10] = { 0 };
    assert_int_equal(ds_texmex_write(p, ANN_ELEM_F32, rows, 2, 5), 0);
    assert_int_equal(truncate(p, 2 * 24 - 3), 0);
    ann_vecsrc *src = NULL;
    assert_msg(ds_texmex_open(p, ANN_METRIC_L2, &src),
               "short.fvecs: size 45 bytes is not a whole number of 24-byte rows (dim 5 from "
               "row 0)");
    assert_null(src);
}

static void test_fvecs_inf_refused(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "inf.fvecs");
    float rows[8] = { 1, 2, 3, 4, 5, 6, INFINITY, 8 };
    assert_int_equal(ds_texmex_write(p, ANN_ELEM_F32, rows, 2, 4), 0);
    ann_vecsrc *src = NULL;
    assert_int_equal(ds_texmex_open(p, ANN_METRIC_L2, &src), 0);
    float back[8];
    assert_msg(ann_vecsrc_read(src, 0, 2, back), "inf.fvecs: row 1, component 2 is Inf");
    ann_vecsrc_destroy(src);
}

/* ---- HDF5 (files written by h5py, tests/support/ann_hdf5.py) ----------- */

/* train 20 x 6, test 4 x 6, neighbors 4 x 3 */
static void h5_data(float *train, float *test, int64_t *nb)
{
    uint64_t st = 11;
    for (int i = 0; i < 20 * 6; i++)
        train[i] = tu_gauss(&st);
    for (int i = 0; i < 4 * 6; i++)
        test[i] = tu_gauss(&st);
    for (int i = 0; i < 12; i++)
        nb[i] = (i * 7) % 20;
}

static void h5_write(tu_h5_variant *v, int nv, const float *train, const float *test,
                     const int64_t *nb)
{
    int rc = tu_h5py_write(v, nv, train, 20, test, 4, 6, nb, 3);
    if (rc == -2)
        fail_msg("python3-h5py is a test dependency: run `make deps`");
    assert_int_equal(rc, 0);
}

/* Every layout the published files use opens, with the right metric,
 * values and ground truth: h5py's variable-length UTF-8 attributes (the
 * case libhdf5 refused to convert into an ASCII memory type), variable
 * ASCII, fixed ASCII (numpy bytes), fixed UTF-8; int32 and int64
 * neighbours; float32 and float64 vectors; with and without the type,
 * point_type and dimension attributes. */
static void test_hdf5_layouts_as_published(void **state)
{
    (void)state;
    float train[120], test[24];
    int64_t nb[12];
    h5_data(train, test, nb);
    static const struct {
        const char *file, *layout, *distance, *strings;
        int float64;
        ann_metric metric;
    } cases[] = {
        { "modern-angular.hdf5", NULL, "angular", NULL, 0, ANN_METRIC_COSINE },
        { "modern-euclidean.hdf5", NULL, "euclidean", NULL, 0, ANN_METRIC_L2 },
        { "legacy-angular.hdf5", "legacy", "angular", NULL, 0, ANN_METRIC_COSINE },
        { "legacy-euclidean-fixed.hdf5", "legacy", "euclidean", "fixed-ascii", 0, ANN_METRIC_L2 },
        { "vlen-ascii.hdf5", NULL, "euclidean", "vlen-ascii", 0, ANN_METRIC_L2 },
        { "fixed-utf8.hdf5", NULL, "angular", "fixed-utf8", 0, ANN_METRIC_COSINE },
        { "float64.hdf5", NULL, "euclidean", NULL, 1, ANN_METRIC_L2 },
    };
    enum { NC = sizeof cases / sizeof cases[0] };
    char paths[NC][4096];
    tu_h5_variant v[NC];
    for (int i = 0; i < NC; i++) {
        path_of(paths[i], cases[i].file);
        v[i] = (tu_h5_variant){ .out = paths[i], .layout = cases[i].layout,
                                .distance = cases[i].distance, .strings = cases[i].strings,
                                .float64 = cases[i].float64 };
    }
    h5_write(v, NC, train, test, nb);
    for (int i = 0; i < NC; i++) {
        ds_hdf5 *h = NULL;
        ann_metric m = ANN_METRIC_IP;
        int rc = ds_hdf5_open(paths[i], &h, &m);
        if (rc)
            fail_msg("%s: %s", cases[i].file, ann_errmsg(rc));
        assert_int_equal(m, cases[i].metric);
        const ann_vecsrc *tr = ds_hdf5_train(h), *te = ds_hdf5_test(h);
        assert_int_equal(tr->n, 20);
        assert_int_equal(tr->dim, 6);
        assert_int_equal(te->n, 4);
        float back[120];
        assert_int_equal(ann_vecsrc_read(tr, 0, 20, back), 0);
        assert_memory_equal(back, train, sizeof train);
        assert_int_equal(ann_vecsrc_read(tr, 13, 2, back), 0); /* a hyperslab inside */
        assert_memory_equal(back, train + 13 * 6, 2 * 6 * sizeof(float));
        assert_int_equal(ann_vecsrc_read(te, 0, 4, back), 0);
        assert_memory_equal(back, test, sizeof test);
        assert_true(ds_hdf5_has_distances(h));
        ann_gt gt;
        assert_int_equal(ds_hdf5_gt(h, &gt), 0);
        assert_int_equal(gt.nq, 4);
        assert_int_equal(gt.k, 3);
        for (int j = 0; j < 12; j++)
            assert_int_equal(gt.ids[j], nb[j]);
        ann_gt_free(&gt);
        ds_hdf5_close(h);
    }
}

/* Binary sets (jaccard: sparse item sets; hamming: bit vectors), a bit
 * point type and a dimension attribute that disagrees with the data are
 * refused with messages that say so. */
static void test_hdf5_binary_and_inconsistent_refused(void **state)
{
    (void)state;
    float train[120], test[24];
    int64_t nb[12];
    h5_data(train, test, nb);
    char p[5][4096];
    path_of(p[0], "kosarak-like.hdf5");
    path_of(p[1], "hamming.hdf5");
    path_of(p[2], "bits-euclidean.hdf5");
    path_of(p[3], "dimension.hdf5");
    path_of(p[4], "sparse-named-angular.hdf5");
    tu_h5_variant v[5] = {
        { .out = p[0], .layout = "sparse", .distance = "jaccard" },
        { .out = p[1], .layout = "binary", .distance = "hamming" },
        { .out = p[2], .layout = "binary", .distance = "euclidean" },
        { .out = p[3], .distance = "euclidean", .dimension = 7 },
        { .out = p[4], .layout = "sparse", .distance = "angular" },
    };
    h5_write(v, 5, train, test, nb);
    ds_hdf5 *h = NULL;
    int rc = ds_hdf5_open(p[0], &h, NULL);
    assert_int_equal(rc, ANN_EUNSUPPORTED);
    assert_msg(rc, "kosarak-like.hdf5: distance 'jaccard' is not supported: ann-benchmarks' "
                   "jaccard sets are binary (sparse sets of item ids); annlab imports dense "
                   "float vectors under euclidean, angular or dot");
    assert_msg(ds_hdf5_open(p[1], &h, NULL),
               "hamming.hdf5: distance 'hamming' is not supported: ann-benchmarks' hamming sets "
               "are binary (bit vectors); annlab imports dense float vectors");
    assert_msg(ds_hdf5_open(p[2], &h, NULL),
               "bits-euclidean.hdf5: point_type 'bit' is not supported: annlab imports float "
               "vectors only");
    assert_msg(ds_hdf5_open(p[3], &h, NULL),
               "dimension.hdf5: attribute 'dimension' is 7 but 'train' has 6 columns");
    assert_msg(ds_hdf5_open(p[4], &h, NULL),
               "sparse-named-angular.hdf5: type 'sparse' is not supported: annlab imports dense "
               "vectors only");
    assert_null(h);
}

static void test_hdf5_missing_parts_and_bad_ids_refused(void **state)
{
    (void)state;
    float train[120], test[24];
    int64_t nb[12];
    h5_data(train, test, nb);
    char p[3][4096];
    path_of(p[0], "notest.hdf5");
    path_of(p[1], "noattr.hdf5");
    tu_h5_variant v[2] = {
        { .out = p[0], .distance = "euclidean", .omit = "test" },
        { .out = p[1], .layout = "legacy", .omit = "distance" },
    };
    h5_write(v, 2, train, test, nb);
    ds_hdf5 *h = NULL;
    assert_msg(ds_hdf5_open(p[0], &h, NULL),
               "notest.hdf5: no dataset 'test' (an ann-benchmarks file has train, test and "
               "neighbors)");
    assert_null(h);
    assert_msg(ds_hdf5_open(p[1], &h, NULL), "noattr.hdf5: no root attribute 'distance'");

    path_of(p[2], "badid.hdf5");
    nb[5] = 20;
    tu_h5_variant bad = { .out = p[2], .distance = "euclidean", .omit = "distances" };
    h5_write(&bad, 1, train, test, nb);
    assert_int_equal(ds_hdf5_open(p[2], &h, NULL), 0);
    assert_false(ds_hdf5_has_distances(h));
    ann_gt gt;
    assert_msg(ds_hdf5_gt(h, &gt),
               "badid.hdf5: dataset 'neighbors': query 1 rank 2: id 20 out of range [0, 20)");
    ds_hdf5_close(h);

    path_of(p[2], "not-hdf5.hdf5");
    assert_int_equal(tu_write_file(p[2], "hello", 5), 0);
    assert_msg(ds_hdf5_open(p[2], &h, NULL), "not-hdf5.hdf5: not an HDF5 file");
}

/* ---- idx.gz ------------------------------------------------------------ */

static void write_idx_gz(const char *p, uint32_t magic, uint32_t n, uint32_t r, uint32_t c,
                         const uint8_t *px, size_t px_len)
{
    unsigned char hdr[16];
    uint32_t v[4] = { magic, n, r, c };
    for (int i = 0; i < 4; i++) {
        hdr[4 * i] = (unsigned char)(v[i] >> 24);
        hdr[4 * i + 1] = (unsigned char)(v[i] >> 16);
        hdr[4 * i + 2] = (unsigned char)(v[i] >> 8);
        hdr[4 * i + 3] = (unsigned char)v[i];
    }
    gzFile gz = gzopen(p, "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, hdr, 16), 16);
    if (px_len)
        assert_int_equal(gzwrite(gz, px, (unsigned)px_len), (int)px_len);
    assert_int_equal(gzclose(gz), Z_OK);
}

static void test_idx_round_trip_and_errors(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "img.idx3-ubyte.gz");
    uint8_t px[5 * 3 * 2];
    for (int i = 0; i < 30; i++)
        px[i] = (uint8_t)(i * 9);
    write_idx_gz(p, 0x803, 5, 3, 2, px, sizeof px);
    ann_vecsrc *src = NULL;
    assert_int_equal(ds_idx_open(p, ANN_METRIC_L2, &src), 0);
    assert_int_equal(src->n, 5);
    assert_int_equal(src->dim, 6);
    float back[30];
    assert_int_equal(ann_vecsrc_read(src, 0, 5, back), 0);
    for (int i = 0; i < 30; i++)
        assert_true(back[i] == (float)px[i]);
    ann_vecsrc_destroy(src);

    write_idx_gz(p, 0x801, 5, 3, 2, px, sizeof px);
    assert_msg(ds_idx_open(p, ANN_METRIC_L2, &src), "magic 0x00000801, want 0x00000803");
    write_idx_gz(p, 0x803, 5, 3, 2, px, sizeof px - 4);
    assert_msg(ds_idx_open(p, ANN_METRIC_L2, &src),
               "img.idx3-ubyte.gz: truncated pixel data (4 bytes missing)");
}

/* ---- wink GloVe JSON --------------------------------------------------- */

static void test_wink_split_and_values(void **state)
{
    (void)state;
    char p[4096], out[4096];
    path_of(p, "wink.json");
    path_of(out, "wink-bundle");
    const uint32_t n = 40, dim = 4;
    float v[40 * 4];
    uint64_t st = 5;
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fprintf(fp, "{\"precision\":8,\"l2NormIndex\":4,\"wordIndex\":5,\"size\":%u,"
                "\"dimensions\":%u,\"words\":[\"a\",\"b\\\"q\",{\"x\":[1,2]}],\"vectors\":{",
            n, dim);
    for (uint32_t i = 0; i < n; i++) {
        double norm = 0;
        for (uint32_t j = 0; j < dim; j++) {
            v[i * dim + j] = (float)(int)(tu_gauss(&st) * 1000) / 1000.0f;
            norm += (double)v[i * dim + j] * v[i * dim + j];
        }
        fprintf(fp, "%s\"w%u\\\"x\":[", i ? "," : "", i);
        for (uint32_t j = 0; j < dim; j++)
            fprintf(fp, "%.9g,", (double)v[i * dim + j]);
        fprintf(fp, "%.9g,%u]", sqrt(norm), i);
    }
    fprintf(fp, "},\"unkVector\":[0,0,0,0,0,-1]}");
    fclose(fp);

    ds_wink_spec w = { .json_path = p, .out_dir = out, .name = "wink-test", .n_query = 6,
                       .n_warmup = 3, .seed = 9, .gt_k = 5 };
    assert_int_equal(ds_wink_convert(&w), 0);
    ann_bundle b;
    assert_int_equal(ann_bundle_open(out, &b), 0);
    assert_int_equal(b.n, n - 9);
    assert_int_equal(b.nq, 6);
    assert_int_equal(b.n_warmup, 3);
    assert_int_equal(b.metric, ANN_METRIC_COSINE);
    /* Every input row appears exactly once across base, query and warm-up, normalised. */
    float *q = NULL, *wu = NULL;
    uint32_t nw = 0;
    assert_int_equal(ann_bundle_queries(&b, &q), 0);
    assert_int_equal(ann_bundle_warmup(&b, &wu, &nw), 0);
    ann_vecsrc *base = NULL;
    assert_int_equal(ann_bundle_base(&b, &base), 0);
    float *all = malloc((size_t)n * dim * sizeof(float));
    assert_int_equal(ann_vecsrc_read(base, 0, base->n, all), 0);
    memcpy(all + base->n * dim, q, 6 * dim * sizeof(float));
    memcpy(all + (base->n + 6) * dim, wu, 3 * dim * sizeof(float));
    int *seen = calloc(n, sizeof(int));
    for (uint32_t i = 0; i < n; i++) {
        float want[4];
        memcpy(want, v + i * dim, sizeof want);
        ann_normalize(want, dim);
        int found = 0;
        for (uint32_t r = 0; r < n; r++)
            if (!seen[r] && !memcmp(all + r * dim, want, sizeof want)) {
                seen[r] = 1;
                found = 1;
                break;
            }
        assert_true(found);
    }
    free(seen);
    free(all);
    free(q);
    free(wu);
    ann_vecsrc_destroy(base);
    ann_bundle_close(&b);

    /* A vector with the wrong count is refused, naming it; nothing is left. */
    char out2[4096];
    path_of(out2, "wink-bad");
    fp = fopen(p, "w");
    fprintf(fp, "{\"size\":2,\"dimensions\":2,\"vectors\":{\"a\":[1,2,2.2,0],\"bb\":[1,2.2,1]}}");
    fclose(fp);
    w = (ds_wink_spec){ .json_path = p, .out_dir = out2, .name = "x", .n_query = 1, .seed = 1,
                        .gt_k = 1 };
    assert_msg(ds_wink_convert(&w), "wink.json: vector 1 ('bb') has 3 numbers, want 4 "
                                    "(dimensions + norm + index)");
    assert_int_equal(access(out2, F_OK), -1);
}

/* ---- big-ann files through import --------------------------------------- */

static void test_bigann_import_exact(void **state)
{
    (void)state;
    char b[4096], q[4096], out[4096];
    path_of(b, "x.i8bin");
    path_of(q, "x.u8bin");
    path_of(out, "bigann-bundle");
    const uint32_t n = 30, dim = 8;
    int8_t base[30 * 8];
    uint8_t qs[4 * 8];
    uint64_t st = 3;
    for (uint32_t i = 0; i < n * dim; i++)
        base[i] = (int8_t)(tu_rand(&st) % 256 - 128);
    for (uint32_t i = 0; i < 4 * dim; i++)
        qs[i] = (uint8_t)(tu_rand(&st) % 256);
    ann_vecwriter w;
    assert_int_equal(ann_vecwriter_open(&w, b, dim, ANN_ELEM_I8), 0);
    assert_int_equal(ann_vecwriter_append(&w, base, n), 0);
    assert_int_equal(ann_vecwriter_finish(&w), 0);
    assert_int_equal(ann_vecwriter_open(&w, q, dim, ANN_ELEM_U8), 0);
    assert_int_equal(ann_vecwriter_append(&w, qs, 4), 0);
    assert_int_equal(ann_vecwriter_finish(&w), 0);
    ds_import_files f = { .out_dir = out, .base = b, .query = q, .gt_k = 5, .metric_set = 1 };
    assert_int_equal(ds_import_from_files(&f), 0);

    /* base.fbin is exactly the header and the widened values. */
    size_t len = 0;
    char bp[4200];
    snprintf(bp, sizeof bp, "%s/base.fbin", out);
    unsigned char *bytes = tu_read_file(bp, &len);
    assert_int_equal(len, 8 + n * dim * 4);
    unsigned char hdr[8];
    put_le32(hdr, n);
    put_le32(hdr + 4, dim);
    assert_memory_equal(bytes, hdr, 8);
    for (uint32_t i = 0; i < n * dim; i++) {
        float f32;
        memcpy(&f32, bytes + 8 + 4 * i, 4);
        assert_true(f32 == (float)base[i]);
    }
    free(bytes);
    ann_bundle bb;
    assert_int_equal(ann_bundle_open(out, &bb), 0);
    assert_int_equal(bb.nq, 4);
    assert_int_equal(bb.gt_k, 5);
    assert_int_equal(bb.n_warmup, 0);
    /* The manifest's statistics are the input rows' norms. */
    double nmin = 1e300, nmax = 0;
    for (uint32_t i = 0; i < n; i++) {
        double s2 = 0;
        for (uint32_t j = 0; j < dim; j++)
            s2 += (double)base[i * dim + j] * base[i * dim + j];
        nmin = fmin(nmin, sqrt(s2));
        nmax = fmax(nmax, sqrt(s2));
    }
    json_t *sb = json_object_get(json_object_get(bb.manifest, "statistics"), "base");
    assert_int_equal(json_integer_value(json_object_get(sb, "rows")), n);
    assert_true(json_real_value(json_object_get(sb, "norm_min")) == nmin);
    assert_true(json_real_value(json_object_get(sb, "norm_max")) == nmax);
    ann_bundle_close(&bb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fvecs_round_trip_byte_exact),
        cmocka_unit_test(test_bvecs_widen_exact),
        cmocka_unit_test(test_ivecs_gt_round_trip),
        cmocka_unit_test(test_fvecs_row_with_other_dim_refused),
        cmocka_unit_test(test_fvecs_partial_row_refused),
        cmocka_unit_test(test_fvecs_inf_refused),
        cmocka_unit_test(test_hdf5_layouts_as_published),
        cmocka_unit_test(test_hdf5_binary_and_inconsistent_refused),
        cmocka_unit_test(test_hdf5_missing_parts_and_bad_ids_refused),
        cmocka_unit_test(test_idx_round_trip_and_errors),
        cmocka_unit_test(test_wink_split_and_values),
        cmocka_unit_test(test_bigann_import_exact),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
