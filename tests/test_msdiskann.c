/*
 * test_msdiskann.c: the import of a Microsoft DiskANN disk index's graph
 * (engines/core/msdiskann.h, `annlab import-graph`).  The files are written
 * here from the layout drawn in msdiskann.h: a graph annlab built, laid out
 * as Microsoft's build_disk_index lays it out, must come back list for
 * list, and an index built on it must be byte-identical to the one annlab
 * builds on the same graph itself.  Hostile files fail with messages
 * naming the file and field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/bundle.h"
#include "engines/core/artifacts.h"
#include "engines/core/binio.h"
#include "engines/core/diskann_params.h"
#include "engines/core/msdiskann.h"
#include "engines/core/status.h"
#include "engines/core/vamana.h"
#include "engines/diskann_sector/dsec.h"
#include "engines/diskann_sector/layout.h"
#include "engines/engine.h"
#include "tests/support/harness_fixture.h"
#include "tests/support/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 600
#define DIM 32
#define DEG 8
#define PARAMS "{\"R\":8,\"L_build\":24,\"pq_bytes\":8,\"threads\":1}"

typedef struct {
    char *dir;
    char bundle[4096], cache[4096], native[4096], ms[4096], gpath[4096];
    ann_bundle b;
    ann_vecsrc *src;
    float *rows;
    vamana_graph *g; /* the graph of the native build, from the artifact cache */
} fixture;

/* Write g over rows (n x dim) as a Microsoft DiskANN disk index at path,
 * following msdiskann.h; frozen and the metadata count as given. */
static void write_ms(const char *path, const float *rows, uint64_t n, uint32_t dim,
                     const vamana_graph *g, uint32_t max_degree, uint64_t frozen, uint32_t nr)
{
    uint64_t node_len = 4ull * dim + 4ull * (1 + max_degree);
    uint64_t per = 4096 / node_len;
    uint64_t spn = per ? 1 : (node_len + 4095) / 4096;
    uint64_t sectors = 1 + (per ? (n + per - 1) / per : n * spn);
    uint8_t *f = calloc(sectors, 4096);
    assert_non_null(f);
    uint64_t meta[16] = { n, dim, g->entry, node_len, per, frozen, 0, 0 };
    meta[nr - 1] = sectors * 4096; /* the file's size, the last value */
    ann_put_u32(f, nr);
    ann_put_u32(f + 4, 1);
    for (uint32_t i = 0; i < nr; i++)
        ann_put_u64(f + 8 + 8 * i, meta[i]);
    for (uint64_t v = 0; v < n; v++) {
        uint8_t *p = per ? f + (1 + v / per) * 4096 + (v % per) * node_len : f + (1 + v * spn) * 4096;
        for (uint32_t d = 0; d < dim; d++)
            ann_put_f32(p + 4 * d, rows[v * dim + d]);
        uint32_t deg;
        const uint32_t *nb = vamana_neighbors(g, (uint32_t)v, &deg);
        ann_put_u32(p + 4 * dim, deg);
        for (uint32_t i = 0; i < deg; i++)
            ann_put_u32(p + 4 * dim + 4 + 4 * i, nb[i]);
    }
    assert_int_equal(tu_write_file(path, f, sectors * 4096), 0);
    free(f);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    fx->dir = tu_tmpdir("msdiskann");
    snprintf(fx->bundle, sizeof fx->bundle, "%s/bundle", fx->dir);
    snprintf(fx->cache, sizeof fx->cache, "%s/artifacts", fx->dir);
    snprintf(fx->native, sizeof fx->native, "%s/native", fx->dir);
    snprintf(fx->ms, sizeof fx->ms, "%s/ms_disk.index", fx->dir);
    assert_int_equal(hf_bundle(fx->bundle, N, DIM, 20, 4, 10, 7), 0);
    assert_int_equal(ann_bundle_open(fx->bundle, &fx->b), 0);
    assert_int_equal(ann_bundle_base(&fx->b, &fx->src), 0);
    assert_int_equal(ann_vecsrc_read_all(fx->src, 1, &fx->rows), 0);

    /* annlab's own build, its graph kept in the artifact cache */
    const ann_engine_ops *ops = ann_engine_find("diskann-sector");
    json_t *params = json_loads(PARAMS, 0, NULL);
    ann_build_ctx bctx = { .artifact_dir = fx->cache };
    assert_int_equal(ann_engine_build(ops, fx->src, params, fx->native, &bctx, NULL), 0);
    ann_artifacts_params ap;
    assert_int_equal(ann_diskann_build_read(params, dsec_build_params, fx->src, &bctx, &ap), 0);
    assert_int_equal(ann_artifacts_path(fx->src, &ap, "graph", fx->gpath, sizeof fx->gpath), 0);
    assert_int_equal(vamana_graph_load(fx->gpath, &fx->g), 0);
    json_decref(params);
    write_ms(fx->ms, fx->rows, N, DIM, fx->g, DEG, 0, 9);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    vamana_graph_destroy(fx->g);
    free(fx->rows);
    ann_vecsrc_destroy(fx->src);
    ann_bundle_close(&fx->b);
    tu_rmdir(fx->dir);
    free(fx);
    return 0;
}

/* Every list, degree and the entry come back as written. */
static void test_msda_round_trip(void **state)
{
    fixture *fx = *state;
    vamana_graph *g = NULL;
    json_t *info = NULL;
    assert_int_equal(msda_graph_load(fx->ms, fx->src, 0, &g, &info), 0);
    assert_int_equal(g->n, N);
    assert_int_equal(g->R, DEG);
    assert_int_equal(g->entry, fx->g->entry);
    uint64_t edges = 0;
    for (uint32_t v = 0; v < N; v++) {
        uint32_t da, db;
        const uint32_t *a = vamana_neighbors(g, v, &da), *b = vamana_neighbors(fx->g, v, &db);
        assert_int_equal(da, db);
        assert_memory_equal(a, b, (size_t)da * 4);
        edges += da;
    }
    assert_string_equal(json_string_value(json_object_get(info, "format")), "microsoft-diskann");
    assert_int_equal(json_integer_value(json_object_get(info, "max_degree")), DEG);
    assert_int_equal(json_integer_value(json_object_get(info, "medoid")), fx->g->entry);
    assert_true(json_real_value(json_object_get(info, "mean_degree")) == (double)edges / N);
    assert_int_equal(json_integer_value(json_object_get(info, "self_loops")), 0);
    assert_int_equal(json_integer_value(json_object_get(info, "repeated_ids")), 0);
    assert_int_equal(json_integer_value(json_object_get(info, "unreachable")), 0);
    json_decref(info);
    vamana_graph_destroy(g);
}

/* Nodes wider than a sector (Microsoft's nnodes_per_sector 0): 1,100-d. */
static void test_msda_spanning(void **state)
{
    fixture *fx = *state;
    enum { n = 40, dim = 1100 };
    float *rows = tu_clustered(n, dim, 4, 3, 0);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(rows, n, dim, ANN_METRIC_L2, &src), 0);
    vamana_graph *w = NULL, *g = NULL;
    assert_int_equal(vamana_graph_create(n, 4, 4, &w), 0);
    for (uint32_t v = 0; v < n; v++) { /* a ring both ways, and a self-loop at 5 */
        w->adj[v * 4] = (v + 1) % n;
        w->adj[v * 4 + 1] = (v + n - 1) % n;
        w->degree[v] = 2;
    }
    w->adj[5 * 4 + 2] = 5;
    w->adj[5 * 4 + 3] = 6; /* and 6 again */
    w->degree[5] = 4;
    w->entry = 3;
    char path[4096];
    snprintf(path, sizeof path, "%s/wide_disk.index", fx->dir);
    write_ms(path, rows, n, dim, w, 4, 0, 10);
    msda_header h;
    assert_int_equal(msda_header_read(path, &h), 0);
    assert_int_equal(h.nodes_per_sector, 0);
    assert_int_equal(h.sectors_per_node, 2);
    json_t *info = NULL;
    assert_int_equal(msda_graph_load(path, src, 4, &g, &info), 0);
    for (uint32_t v = 0; v < n; v++)
        assert_memory_equal(g->adj + v * 4, w->adj + v * 4, w->degree[v] * 4);
    assert_int_equal(g->entry, 3);
    assert_int_equal(json_integer_value(json_object_get(info, "self_loops")), 1);
    assert_int_equal(json_integer_value(json_object_get(info, "repeated_ids")), 1);
    json_decref(info);
    vamana_graph_destroy(g);
    vamana_graph_destroy(w);
    ann_vecsrc_destroy(src);
    free(rows);
}

/* An index built on the imported graph is the index annlab builds on that
 * graph: the sector file, checksums and PQ files byte for byte. */
static void test_import_same_index(void **state)
{
    fixture *fx = *state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/imported", fx->dir);
    const ann_engine_ops *ops = ann_engine_find("diskann-sector");
    assert_true(ops->imports_graph);
    json_t *params = json_loads(PARAMS, 0, NULL), *report = NULL;
    ann_build_ctx bctx = { .graph_import = fx->ms }; /* no cache: PQ trained again */
    assert_int_equal(ann_engine_build(ops, fx->src, params, dir, &bctx, &report), 0);
    const char *files[] = { DSEC_INDEX_FILE, DSEC_SUMS_FILE, DSEC_PQ_CODEBOOK_FILE,
                            DSEC_PQ_CODES_FILE };
    for (size_t i = 0; i < 4; i++) {
        char a[4200], b[4200];
        snprintf(a, sizeof a, "%s/%s", fx->native, files[i]);
        snprintf(b, sizeof b, "%s/%s", dir, files[i]);
        size_t la = 0, lb = 0;
        uint8_t *da = tu_read_file(a, &la), *db = tu_read_file(b, &lb);
        assert_non_null(da);
        assert_non_null(db);
        assert_int_equal(la, lb);
        assert_memory_equal(da, db, la);
        free(da);
        free(db);
    }
    const json_t *gi =
        json_object_get(json_object_get(report, "engine_report"), "graph_imported");
    assert_string_equal(json_string_value(json_object_get(gi, "path")), fx->ms);
    json_decref(report);

    /* R other than the file's max degree */
    json_object_set_new(params, "R", json_integer(16));
    snprintf(dir, sizeof dir, "%s/imported-r16", fx->dir);
    assert_int_equal(ann_engine_build(ops, fx->src, params, dir, &bctx, NULL), ANN_EPARAM);
    char want[8300];
    snprintf(want, sizeof want, "build.R: 16, but the graph in %s has max degree 8", fx->ms);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), want));
    struct stat st;
    assert_int_not_equal(stat(dir, &st), 0); /* nothing left behind */
    json_decref(params);
}

/* The record engines take the import too: on the imported graph they
 * answer every query exactly as their own build on the same graph does
 * (their stores' files are not comparable byte for byte). */
static void test_import_record_engines(void **state)
{
    fixture *fx = *state;
    /* below DREC_SCAN_BELOW rows a record index has no graph: refused, not ignored */
    char dir[2][4096], want[8400];
    snprintf(dir[0], sizeof dir[0], "%s/drec-small", fx->dir);
    json_t *params = json_loads(PARAMS, 0, NULL), *report = NULL;
    ann_build_ctx small = { .graph_import = fx->ms };
    const ann_engine_ops *rec = ann_engine_find("diskann-record");
    assert_int_equal(ann_engine_build(rec, fx->src, params, dir[0], &small, NULL), ANN_EPARAM);
    snprintf(want, sizeof want, "diskann-record build: 600 vectors are scanned, not searched by a "
             "graph (below 1024), so %s has nothing to import into", fx->ms);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), want));

    /* 1,200 rows: a graph, built by annlab and imported */
    enum { n = 1200 };
    char bundle[4096], cache[4096], ms[4096], gpath[4096];
    snprintf(bundle, sizeof bundle, "%s/bundle-rec", fx->dir);
    snprintf(cache, sizeof cache, "%s/artifacts-rec", fx->dir);
    snprintf(ms, sizeof ms, "%s/rec_disk.index", fx->dir);
    assert_int_equal(hf_bundle(bundle, n, DIM, 20, 4, 10, 11), 0);
    ann_bundle b = { 0 };
    ann_vecsrc *src = NULL;
    float *queries = NULL;
    assert_int_equal(ann_bundle_open(bundle, &b), 0);
    assert_int_equal(ann_bundle_base(&b, &src), 0);
    assert_int_equal(ann_bundle_queries(&b, &queries), 0);
    const char *engines[] = { "diskann-record", "diskann-resident" };
    for (size_t e = 0; e < 2; e++) {
        const ann_engine_ops *ops = ann_engine_find(engines[e]);
        assert_true(ops->imports_graph);
        snprintf(dir[0], sizeof dir[0], "%s/%s-native", fx->dir, engines[e]);
        snprintf(dir[1], sizeof dir[1], "%s/%s-imported", fx->dir, engines[e]);
        ann_build_ctx native = { .artifact_dir = cache }; /* the graph, cached */
        assert_int_equal(ann_engine_build(ops, src, params, dir[0], &native, NULL), 0);
        if (e == 0) { /* lay the cached graph out as Microsoft's file */
            ann_artifacts_params ap;
            vamana_graph *g = NULL;
            assert_int_equal(ann_diskann_build_read(params, dsec_build_params, src, &native, &ap),
                             0);
            assert_int_equal(ann_artifacts_path(src, &ap, "graph", gpath, sizeof gpath), 0);
            assert_int_equal(vamana_graph_load(gpath, &g), 0);
            assert_int_equal(msda_graph_save(ms, src, g), 0);
            vamana_graph_destroy(g);
        }
        ann_build_ctx imported = { .artifact_dir = cache, .graph_import = ms };
        assert_int_equal(ann_engine_build(ops, src, params, dir[1], &imported, &report), 0);
        assert_non_null(
            json_object_get(json_object_get(report, "engine_report"), "graph_imported"));
        json_decref(report);
        report = NULL;
        ann_engine *eng[2] = { 0 };
        ann_ctx *ctx[2] = { 0 };
        json_t *sp = json_loads("{\"L\":24}", 0, NULL);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(ann_engine_open(ops, dir[i], NULL, &eng[i], NULL), 0);
            assert_int_equal(ann_engine_ctx_new(ops, eng[i], sp, 10, &ctx[i]), 0);
        }
        for (uint32_t q = 0; q < 20; q++) {
            uint32_t ids[2][10];
            float d[2][10];
            ann_stats st[2];
            for (int i = 0; i < 2; i++) {
                memset(&st[i], 0, sizeof st[i]);
                assert_int_equal(ops->search(ctx[i], queries + (size_t)q * DIM, 10, ids[i], d[i],
                                             &st[i]),
                                 10);
            }
            assert_memory_equal(ids[0], ids[1], sizeof ids[0]);
            assert_memory_equal(d[0], d[1], sizeof d[0]);
            assert_int_equal(st[0].reads, st[1].reads);
        }
        for (int i = 0; i < 2; i++) {
            ops->ctx_free(ctx[i]);
            ops->close(eng[i]);
        }
        json_decref(sp);
    }
    json_decref(params);
    free(queries);
    ann_vecsrc_destroy(src);
    ann_bundle_close(&b);
}

/* Copy the fixture's file, patch it with fn, and expect code and a message. */
static void hostile(fixture *fx, const char *tag, void (*fn)(uint8_t *f, size_t *len), int code,
                    const char *want)
{
    size_t len = 0;
    uint8_t *f = tu_read_file(fx->ms, &len);
    assert_non_null(f);
    fn(f, &len);
    char path[4096], msg[8300];
    snprintf(path, sizeof path, "%s/%s_disk.index", fx->dir, tag);
    assert_int_equal(tu_write_file(path, f, len), 0);
    free(f);
    vamana_graph *g = NULL;
    int rc = msda_graph_load(path, fx->src, 0, &g, NULL);
    snprintf(msg, sizeof msg, "%s: %s", path, want);
    if (rc != code || !strstr(ann_errmsg(rc), msg))
        fail_msg("%s: rc %d, message '%s'; expected %d, '%s'", tag, rc, ann_errmsg(rc), code, msg);
    assert_null(g);
}

#define NODE_LEN (4 * DIM + 4 * (1 + DEG)) /* 164: 24 to a sector */
static uint8_t *node_at(uint8_t *f, uint32_t v)
{
    return f + (1 + v / 24) * 4096 + (v % 24) * NODE_LEN;
}
static void cut_sector(uint8_t *f, size_t *len) { (void)f; *len -= 4096; }
static void frozen(uint8_t *f, size_t *len) { (void)len; ann_put_u64(f + 48, 1); }
static void bad_nc(uint8_t *f, size_t *len) { (void)len; ann_put_u32(f + 4, 2); }
static void bad_per(uint8_t *f, size_t *len) { (void)len; ann_put_u64(f + 40, 23); }
static void bad_medoid(uint8_t *f, size_t *len) { (void)len; ann_put_u64(f + 24, N); }
static void bad_len(uint8_t *f, size_t *len) { (void)len; ann_put_u64(f + 32, 4 * DIM + 2); }
static void big_degree(uint8_t *f, size_t *len)
{
    (void)len;
    ann_put_u32(node_at(f, 77) + 4 * DIM, DEG + 1);
}
static void bad_id(uint8_t *f, size_t *len)
{
    (void)len;
    uint8_t *p = node_at(f, 300) + 4 * DIM;
    assert_true(ann_get_u32(p) > 0);
    ann_put_u32(p + 4, N);
}
static void other_data(uint8_t *f, size_t *len)
{
    (void)len;
    uint8_t *p = node_at(f, 512) + 4 * 3;
    ann_put_f32(p, ann_get_f32(p) + 1.0f);
}

static void test_msda_hostile(void **state)
{
    fixture *fx = *state;
    uint64_t size = (1 + (N + 23) / 24) * 4096ull;
    char want[512];
    snprintf(want, sizeof want, "%llu bytes on disk; its metadata says %llu and 600 nodes need %llu",
             (unsigned long long)size - 4096, (unsigned long long)size, (unsigned long long)size);
    hostile(fx, "cut", cut_sector, ANN_EFORMAT, want);
    hostile(fx, "frozen", frozen, ANN_EUNSUPPORTED,
            "num_frozen_points 1: a streaming index's frozen points are not supported");
    hostile(fx, "nc", bad_nc, ANN_EFORMAT,
            "metadata of 9 x 2 values (a Microsoft DiskANN disk index has at least 9 x 1)");
    hostile(fx, "per", bad_per, ANN_EFORMAT,
            "nnodes_per_sector 23, but 164-byte nodes pack 24 to a sector");
    hostile(fx, "medoid", bad_medoid, ANN_ECORRUPT, "medoid 600, but only 600 nodes");
    hostile(fx, "len", bad_len, ANN_EFORMAT,
            "max_node_len 130 does not hold 32 float coordinates and a neighbour list (only "
            "--data_type float is read)");
    hostile(fx, "degree", big_degree, ANN_ECORRUPT, "node 77: degree 9 above the max 8");
    hostile(fx, "id", bad_id, ANN_ECORRUPT, "node 300: neighbour 0 is id 600, past the 600 nodes");
    hostile(fx, "data", other_data, ANN_EDATA, "node 512's vector differs from row 512 of ");
}

/* annlab's writer and the test's, written apart from the same drawing,
 * agree byte for byte; so does the command. */
static void test_msda_save(void **state)
{
    fixture *fx = *state;
    uint32_t maxdeg = 0;
    for (uint32_t v = 0; v < N; v++)
        maxdeg = fx->g->degree[v] > maxdeg ? fx->g->degree[v] : maxdeg;
    assert_int_equal(maxdeg, DEG); /* the test's file was written with max degree DEG */
    char path[4096];
    snprintf(path, sizeof path, "%s/saved_disk.index", fx->dir);
    assert_int_equal(msda_graph_save(path, fx->src, fx->g), 0);
    size_t la = 0, lb = 0;
    uint8_t *a = tu_read_file(fx->ms, &la), *b = tu_read_file(path, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    if (!hf_bin())
        return;
    snprintf(path, sizeof path, "%s/cli_disk.index", fx->dir);
    char *text = NULL;
    const char *args[] = { "export-graph", fx->bundle, fx->gpath, path, NULL };
    assert_int_equal(hf_annlab(NULL, &text, args), 0);
    free(text);
    b = tu_read_file(path, &lb);
    a = tu_read_file(fx->ms, &la);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    assert_int_equal(hf_annlab(NULL, &text, args), 1);
    assert_non_null(strstr(text, "cli_disk.index: already exists (--force replaces it)"));
    free(text);
    const char *forced[] = { "export-graph", fx->bundle, fx->gpath, path, "--force", NULL };
    assert_int_equal(hf_annlab(NULL, &text, forced), 0);
    free(text);
}

/* Write Microsoft's two PQ files beside the disk index ms (`<p>_disk.index`)
 * from an annlab codebook and codes: pivots = centroids - centroid shift
 * (per dimension), chunk offsets as given (NULL: equal chunks). */
static void write_ms_pq(const char *ms, const pq_codebook *cb, const uint8_t *codes, uint64_t n,
                        const float *shift, const uint32_t *chunk_off, uint32_t noffsets)
{
    char base[4096], path[4200];
    snprintf(base, sizeof base, "%.*s", (int)(strlen(ms) - strlen("_disk.index")), ms);
    const uint32_t dim = cb->dim, m = cb->m, dsub = cb->dsub;
    uint64_t off0 = 4096, off1 = off0 + 8 + 256ull * dim * 4, off2 = off1 + 8 + 4ull * dim;
    uint64_t size = off2 + 8 + 4ull * (m + 1);
    uint8_t *f = calloc(1, size);
    ann_put_u32(f, noffsets);
    ann_put_u32(f + 4, 1);
    uint64_t offs[5] = { off0, off1, off2, size, size };
    for (uint32_t i = 0; i < noffsets; i++)
        ann_put_u64(f + 8 + 8 * i, offs[i]);
    ann_put_u32(f + off0, 256);
    ann_put_u32(f + off0 + 4, dim);
    for (uint32_t k = 0; k < 256; k++)
        for (uint32_t d = 0; d < dim; d++) {
            float c = cb->centroids[((size_t)(d / dsub) * 256 + k) * dsub + d % dsub];
            ann_put_f32(f + off0 + 8 + 4 * ((size_t)k * dim + d), c - (shift ? shift[d] : 0));
        }
    ann_put_u32(f + off1, dim);
    ann_put_u32(f + off1 + 4, 1);
    for (uint32_t d = 0; d < dim; d++)
        ann_put_f32(f + off1 + 8 + 4 * d, shift ? shift[d] : 0);
    ann_put_u32(f + off2, m + 1);
    ann_put_u32(f + off2 + 4, 1);
    for (uint32_t j = 0; j <= m; j++)
        ann_put_u32(f + off2 + 8 + 4 * j, chunk_off ? chunk_off[j] : j * dsub);
    snprintf(path, sizeof path, "%s_pq_pivots.bin", base);
    assert_int_equal(tu_write_file(path, f, size), 0);
    free(f);
    uint8_t *c = malloc(8 + n * m);
    ann_put_u32(c, (uint32_t)n);
    ann_put_u32(c + 4, m);
    memcpy(c + 8, codes, n * m);
    snprintf(path, sizeof path, "%s_pq_compressed.bin", base);
    assert_int_equal(tu_write_file(path, c, 8 + n * m), 0);
    free(c);
}

/* Microsoft's PQ files read as annlab's codebook: with no centroid shift
 * the native build's codebook exactly, and an index whose sector file,
 * checksums and codes are the native build's byte for byte; with a shift,
 * the same centroids up to rounding.  Shapes annlab cannot take are
 * refused by name. */
static void test_msda_pq(void **state)
{
    fixture *fx = *state;
    char cbp[4200], cdp[4200];
    snprintf(cbp, sizeof cbp, "%s/%s", fx->native, DSEC_PQ_CODEBOOK_FILE);
    snprintf(cdp, sizeof cdp, "%s/%s", fx->native, DSEC_PQ_CODES_FILE);
    pq_codebook *cb = NULL, *got = NULL;
    uint8_t *codes = NULL, *gcodes = NULL;
    assert_int_equal(pq_codebook_load(cbp, &cb), 0);
    assert_int_equal(ann_artifacts_codes_load(cdp, N, cb->m, &codes), 0);
    write_ms_pq(fx->ms, cb, codes, N, NULL, NULL, 4);
    json_t *info = NULL;
    assert_int_equal(msda_pq_load(fx->ms, fx->src, cb->m, &got, &gcodes, &info), 0);
    size_t nc = (size_t)cb->m * 256 * cb->dsub;
    assert_memory_equal(got->centroids, cb->centroids, nc * sizeof(float));
    assert_memory_equal(got->centroids_t, cb->centroids_t, nc * sizeof(float));
    assert_memory_equal(gcodes, codes, (size_t)N * cb->m);
    assert_int_equal(json_integer_value(json_object_get(info, "chunks")), cb->m);
    json_decref(info);
    pq_codebook_destroy(got);
    free(gcodes);

    /* the whole index, graph and PQ imported */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/imported-pq", fx->dir);
    json_t *params = json_loads(PARAMS, 0, NULL), *report = NULL;
    ann_build_ctx bctx = { .graph_import = fx->ms, .pq_import = 1 };
    assert_int_equal(ann_engine_build(ann_engine_find("diskann-sector"), fx->src, params, dir,
                                      &bctx, &report),
                     0);
    const char *files[] = { DSEC_INDEX_FILE, DSEC_SUMS_FILE, DSEC_PQ_CODES_FILE };
    for (size_t i = 0; i < 3; i++) {
        char a[4200], b[4200];
        snprintf(a, sizeof a, "%s/%s", fx->native, files[i]);
        snprintf(b, sizeof b, "%s/%s", dir, files[i]);
        size_t la = 0, lb = 0;
        uint8_t *da = tu_read_file(a, &la), *db = tu_read_file(b, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(da, db, la);
        free(da);
        free(db);
    }
    assert_non_null(json_object_get(json_object_get(report, "engine_report"), "pq_imported"));
    json_decref(report);
    json_decref(params);

    /* a centroid shift: the same centroids up to rounding */
    float shift[DIM];
    for (uint32_t d = 0; d < DIM; d++)
        shift[d] = 0.37f * (float)d - 3.1f;
    write_ms_pq(fx->ms, cb, codes, N, shift, NULL, 4);
    assert_int_equal(msda_pq_load(fx->ms, fx->src, cb->m, &got, &gcodes, NULL), 0);
    for (size_t i = 0; i < nc; i++)
        assert_true(fabsf(got->centroids[i] - cb->centroids[i]) <=
                    1e-5f * (1.0f + fabsf(cb->centroids[i]) + 12.0f));
    pq_codebook_destroy(got);
    free(gcodes);

    /* refused: another chunk count, unequal chunks, the old file, OPQ */
    char want[8400];
    assert_int_equal(msda_pq_load(fx->ms, fx->src, cb->m * 2, &got, &gcodes, NULL), ANN_EPARAM);
    snprintf(want, sizeof want, "build.pq_bytes: %u, but %.*s_pq_pivots.bin has %u chunks",
             cb->m * 2, (int)(strlen(fx->ms) - 11), fx->ms, cb->m);
    assert_string_equal(ann_errmsg(ANN_EPARAM), want);
    uint32_t uneven[DIM + 1];
    for (uint32_t j = 0; j <= cb->m; j++)
        uneven[j] = j * cb->dsub;
    uneven[1] = cb->dsub + 1;
    write_ms_pq(fx->ms, cb, codes, N, NULL, uneven, 4);
    assert_int_equal(msda_pq_load(fx->ms, fx->src, cb->m, &got, &gcodes, NULL), ANN_EUNSUPPORTED);
    snprintf(want, sizeof want, "chunk 1 starts at dimension %u; annlab's codebook takes %u equal "
             "chunks of %u", cb->dsub + 1, cb->m, cb->dsub);
    assert_non_null(strstr(ann_errmsg(ANN_EUNSUPPORTED), want));
    write_ms_pq(fx->ms, cb, codes, N, NULL, NULL, 5);
    assert_int_equal(msda_pq_load(fx->ms, fx->src, cb->m, &got, &gcodes, NULL), ANN_EUNSUPPORTED);
    assert_non_null(strstr(ann_errmsg(ANN_EUNSUPPORTED),
                           "5 x 1 offsets (this reader takes the current file, 4 x 1)"));
    write_ms_pq(fx->ms, cb, codes, N, NULL, NULL, 4);
    char rot[4300];
    snprintf(rot, sizeof rot, "%.*s_pq_pivots.bin_rotation_matrix.bin",
             (int)(strlen(fx->ms) - 11), fx->ms);
    assert_int_equal(tu_write_file(rot, "x", 1), 0);
    assert_int_equal(msda_pq_load(fx->ms, fx->src, cb->m, &got, &gcodes, NULL), ANN_EUNSUPPORTED);
    assert_non_null(strstr(ann_errmsg(ANN_EUNSUPPORTED), "a rotation matrix (OPQ) is not supported"));
    unlink(rot);
    assert_null(got);
    assert_null(gcodes);
    pq_codebook_destroy(cb);
    free(codes);
}

/* The command: writes the index once, refuses a second time, an engine
 * without a graph, and other data (leaving nothing behind). */
static void test_import_cli(void **state)
{
    fixture *fx = *state;
    if (!hf_bin())
        skip();
    char out[4096], other[4096];
    snprintf(out, sizeof out, "%s/cli-index", fx->dir);
    char *text = NULL;
    const char *ok[] = { "import-graph", "diskann-sector", fx->bundle, fx->ms, out, "--build",
                         "{\"pq_bytes\":8,\"threads\":1}", NULL };
    assert_int_equal(hf_annlab(NULL, &text, ok), 0);
    assert_non_null(strstr(text, "diskann-sector index of 600 x 32 on the graph of "));
    assert_non_null(strstr(text, "0 self-loops, 0 repeated ids, 0 nodes the medoid does not reach"));
    free(text);
    char bj[4200];
    snprintf(bj, sizeof bj, "%s/build.json", out);
    json_t *b = json_load_file(bj, 0, NULL);
    assert_non_null(b);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "params"), "R")), DEG);
    json_decref(b);

    assert_int_equal(hf_annlab(NULL, &text, ok), 1);
    assert_non_null(strstr(text, "index directory already exists"));
    free(text);

    const char *flat[] = { "import-graph", "flat", fx->bundle, fx->ms, out, NULL };
    assert_int_equal(hf_annlab(NULL, &text, flat), 2);
    assert_non_null(strstr(text, "annlab import-graph: flat does not search a Vamana graph"));
    free(text);

    /* a graph of other data: rows of a bundle with another seed */
    char bundle2[4096];
    snprintf(bundle2, sizeof bundle2, "%s/bundle2", fx->dir);
    assert_int_equal(hf_bundle(bundle2, N, DIM, 20, 4, 10, 8), 0);
    snprintf(other, sizeof other, "%s/cli-other", fx->dir);
    const char *bad[] = { "import-graph", "diskann-sector", bundle2, fx->ms, other, NULL };
    assert_int_equal(hf_annlab(NULL, &text, bad), 1);
    assert_non_null(strstr(text, "node 0's vector differs from row 0 of "));
    free(text);
    struct stat st;
    assert_int_not_equal(stat(other, &st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_msda_round_trip),
        cmocka_unit_test(test_msda_spanning),
        cmocka_unit_test(test_import_same_index),
        cmocka_unit_test(test_import_record_engines),
        cmocka_unit_test(test_msda_hostile),
        cmocka_unit_test(test_msda_save),
        cmocka_unit_test(test_msda_pq),
        cmocka_unit_test(test_import_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
