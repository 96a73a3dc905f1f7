/*
 * test_artifacts.c: the build cache.  Without a cache_dir nothing
 * is written; with it, the first get builds and writes the codebook, codes
 * and graph, the second returns byte-identical artifacts from the cache;
 * another pq_bytes reuses the graph; a corrupted cached file is an error
 * naming it; no temporary files are left behind.  The DiskANN build
 * parameters that set the PQ training sample and iterations reach the key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/artifacts.h"
#include "engines/core/diskann_params.h"
#include "engines/core/status.h"
#include "engines/diskann_sector/dsec.h"
#include "tests/support/testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count_files(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int c = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strstr(e->d_name, needle))
            c++;
    closedir(d);
    return c;
}

/* n clustered rows of dim (seed) as an L2 source named as a bundle's
 * checksum would name it; *x receives the rows, freed by the caller. */
static ann_vecsrc *clustered_src(uint64_t n, uint32_t dim, uint64_t seed, float **x)
{
    *x = tu_clustered(n, dim, 10, seed, 0);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(*x, n, dim, ANN_METRIC_L2, &src), 0);
    snprintf(src->id, sizeof src->id, "sha256:abc/def");
    return src;
}

/* The graph artifact's path under p in dir: the name of the test source's
 * default graph with suffix before ".vamana". */
static void expect_graph_name(const ann_vecsrc *src, const ann_artifacts_params *p,
                              const char *dir, const char *suffix)
{
    char path[4096], want[4200];
    assert_int_equal(ann_artifacts_path(src, p, "graph", path, sizeof path), 0);
    snprintf(want, sizeof want,
             "%s/sha256_abc_def-n1200-d32-l2/vamana-R16-L32-a1.2-p1-k1.3-s1-i8%s.vamana", dir,
             suffix);
    assert_string_equal(path, want);
}

static void test_artifacts_cache(void **state)
{
    (void)state;
    const uint64_t n = 1200;
    const uint32_t dim = 32;
    float *x = NULL;
    ann_vecsrc *src = clustered_src(n, dim, 99, &x);
    ann_artifacts_params p;
    ann_artifacts_params_default(&p, dim);
    p.graph.R = 16;
    p.graph.L_build = 32;
    p.graph.threads = 2;
    p.pq.pq_bytes = 8;
    p.keep_vectors = 1;

    /* caching off */
    p.cache_dir = NULL;
    char path[4096];
    assert_int_equal(ann_artifacts_path(src, &p, "graph", path, sizeof path), ANN_ENOTFOUND);
    ann_artifacts a;
    assert_int_equal(ann_artifacts_get(src, &p, &a), 0);
    assert_non_null(a.graph);
    assert_non_null(a.pq);
    assert_non_null(a.pq_codes);
    assert_non_null(a.vectors);
    assert_memory_equal(a.vectors, x, n * dim * sizeof *x);
    assert_int_equal(a.graph_cached, 0);
    assert_int_equal(a.pq_cached, 0);
    ann_artifacts_fini(&a);

    char *dir = tu_tmpdir("artifacts");
    p.cache_dir = dir;
    expect_graph_name(src, &p, dir, "");
    /* a graph built in file order is a graph of its own, and so are a
     * saturated one and one whose inserts prune the expanded set only */
    p.graph.file_order = 1;
    expect_graph_name(src, &p, dir, "-file");
    p.graph.saturate = 1;
    expect_graph_name(src, &p, dir, "-file-sat");
    p.graph.prune_expanded = 1;
    expect_graph_name(src, &p, dir, "-file-sat-xp");
    p.graph.prune_expanded = 0;
    p.graph.saturate = 0;
    p.graph.file_order = 0;
    assert_int_equal(ann_artifacts_path(src, &p, "graph", path, sizeof path), 0);

    ann_artifacts b, c;
    assert_int_equal(ann_artifacts_get(src, &p, &b), 0);
    assert_int_equal(b.graph_cached, 0);
    assert_int_equal(b.pq_cached, 0);
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/sha256_abc_def-n1200-d32-l2", dir);
    assert_int_equal(count_files(sub, ".vamana"), 1);
    assert_int_equal(count_files(sub, ".pqcb"), 1);
    assert_int_equal(count_files(sub, ".pqcodes"), 1);
    assert_int_equal(count_files(sub, ".tmp."), 0);

    assert_int_equal(ann_artifacts_get(src, &p, &c), 0);
    assert_int_equal(c.graph_cached, 1);
    assert_int_equal(c.pq_cached, 1);
    assert_int_equal(c.graph->entry, b.graph->entry);
    assert_memory_equal(c.graph->degree, b.graph->degree, n * 4);
    assert_memory_equal(c.graph->adj, b.graph->adj, n * 16 * 4);
    assert_memory_equal(c.pq->centroids, b.pq->centroids, 8 * 256 * 4 * 4);
    assert_memory_equal(c.pq_codes, b.pq_codes, n * 8);
    assert_non_null(c.vectors); /* loaded although nothing was built */
    ann_artifacts_fini(&c);

    /* another PQ budget: new codes, same graph */
    p.pq.pq_bytes = 4;
    assert_int_equal(ann_artifacts_get(src, &p, &c), 0);
    assert_int_equal(c.graph_cached, 1);
    assert_int_equal(c.pq_cached, 0);
    assert_int_equal(count_files(sub, ".pqcb"), 2);
    ann_artifacts_fini(&c);
    p.pq.pq_bytes = 8;

    /* a corrupted cached graph is an error naming it, not a silent rebuild */
    size_t len = 0;
    uint8_t *file = tu_read_file(path, &len);
    file[60] ^= 1;
    assert_int_equal(tu_write_file(path, file, len), 0);
    free(file);
    assert_int_equal(ann_artifacts_get(src, &p, &c), ANN_ECORRUPT);
    char msg[4600];
    snprintf(msg, sizeof msg, "%s: checksum mismatch", path);
    assert_memory_equal(ann_errmsg(ANN_ECORRUPT), msg, strlen(msg));
    assert_null(c.graph);

    ann_artifacts_fini(&b);
    tu_rmdir(dir);
    ann_vecsrc_destroy(src);
    free(x);
}

/*
 * The DiskANN build parameters pq_sample_rows and pq_iters reach the PQ
 * trainer and its cache key: left out, the caps of pq.h (all 1,200 rows
 * here) and 12 iterations; given, that many rows (at most n) and
 * iterations, and another codebook than the default's; the row count the
 * default already takes names the same artifact.
 */
static void test_pq_training_params(void **state)
{
    (void)state;
    const uint64_t n = 1200;
    const uint32_t dim = 32;
    float *x = NULL;
    ann_vecsrc *src = clustered_src(n, dim, 7, &x);
    ann_build_ctx bctx = { .artifact_dir = "/nonexistent-cache" };
    const char *cases[4] = { "{\"pq_bytes\": 8}", "{\"pq_bytes\": 8, \"pq_sample_rows\": 500, "
                             "\"pq_iters\": 3}", "{\"pq_bytes\": 8, \"pq_sample_rows\": 5000}",
                             "{\"pq_bytes\": 8, \"pq_sample_rows\": 1200, \"pq_iters\": 12}" };
    const char *want[4] = { "pq-b8-s1-r1200-i12.pqcb", "pq-b8-s1-r500-i3.pqcb",
                            "pq-b8-s1-r1200-i12.pqcb", "pq-b8-s1-r1200-i12.pqcb" };
    float *cent[2] = { NULL, NULL };
    for (int i = 0; i < 4; i++) {
        json_error_t e;
        json_t *params = json_loads(cases[i], 0, &e);
        assert_non_null(params);
        ann_artifacts_params ap;
        assert_int_equal(ann_diskann_build_read(params, dsec_build_params, src, &bctx, &ap), 0);
        char path[4096];
        assert_int_equal(ann_artifacts_path(src, &ap, "pqcb", path, sizeof path), 0);
        const char *base = strrchr(path, '/');
        assert_non_null(base);
        assert_string_equal(base + 1, want[i]);
        if (i < 2) { /* train both: they differ */
            pq_codebook *cb = NULL;
            ap.pq.threads = 1;
            assert_int_equal(pq_train(src, &ap.pq, &cb), 0);
            assert_int_equal(cb->n_train, i == 0 ? 1200 : 500);
            size_t len = (size_t)cb->m * PQ_KSUB * cb->dsub * sizeof(float);
            cent[i] = malloc(len);
            assert_non_null(cent[i]);
            memcpy(cent[i], cb->centroids, len);
            if (i == 1)
                assert_memory_not_equal(cent[0], cent[1], len);
            pq_codebook_destroy(cb);
        }
        json_decref(params);
    }
    free(cent[0]);
    free(cent[1]);
    ann_vecsrc_destroy(src);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_artifacts_cache),
        cmocka_unit_test(test_pq_training_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
