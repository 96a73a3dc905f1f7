/*
 * test_vamana.c: the Vamana graph.  Built graphs pass the checker and reach
 * recall@10 >= 0.95 at L = 100 on 10k x 128-d clustered data (L2) and on
 * cosine data; int8 build distances stay near it (within 0.025 of half
 * precision at a low L); single-threaded builds are deterministic; the checker
 * catches each injected defect with a message naming the node; the graph
 * file round-trips byte-exactly and a corrupted file is refused naming the
 * file and node; the candidate list and visited map behave.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/binio.h"
#include "engines/core/candlist.h"
#include "engines/core/exact.h"
#include "engines/core/i8.h"
#include "engines/core/status.h"
#include "engines/core/vamana.h"
#include "engines/core/visited.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/*
 * n x dim rows around `clusters` Gaussian centres with member noise of the
 * same scale as the centre spread, so clusters overlap heavily and the
 * nearest neighbours of a point often lie in other clusters (much harder
 * than well-separated blobs, closer to real embeddings).
 */
static float *overlapping(uint64_t n, uint32_t dim, uint32_t clusters, float noise, uint64_t seed)
{
    uint64_t s = seed;
    float *c = malloc((size_t)clusters * dim * sizeof *c);
    float *x = malloc((size_t)n * dim * sizeof *x);
    for (size_t i = 0; i < (size_t)clusters * dim; i++)
        c[i] = tu_gauss(&s);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)(tu_rand(&s) % clusters);
        for (uint32_t d = 0; d < dim; d++)
            x[i * dim + d] = c[(size_t)k * dim + d] + noise * tu_gauss(&s);
    }
    free(c);
    return x;
}

static double recall_at_10(const vamana_graph *g, const float *x, uint64_t n, uint32_t dim,
                           ann_metric metric, const float *q, uint32_t nq, uint32_t L)
{
    const uint32_t k = 10;
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(x, n, dim, metric, &src), 0);
    int32_t *gt = malloc((size_t)nq * k * sizeof *gt);
    float *gtd = malloc((size_t)nq * k * sizeof *gtd);
    assert_int_equal(ann_exact_knn(src, q, nq, k, 2, gt, gtd), 0);
    vamana_searcher *s = NULL;
    assert_int_equal(vamana_searcher_create(g, x, dim, metric, L, &s), 0);
    uint32_t ids[10];
    float dists[10];
    uint64_t hits = 0;
    for (uint32_t i = 0; i < nq; i++) {
        int got = vamana_search(s, q + (size_t)i * dim, k, L, ids, dists, NULL);
        assert_int_equal(got, (int)k);
        for (uint32_t a = 1; a < k; a++)
            assert_true(dists[a - 1] <= dists[a]);
        for (uint32_t a = 0; a < k; a++)
            for (uint32_t b = 0; b < k; b++)
                if (ids[a] == (uint32_t)gt[(size_t)i * k + b]) {
                    hits++;
                    break;
                }
    }
    vamana_searcher_destroy(s);
    ann_vecsrc_destroy(src);
    free(gt);
    free(gtd);
    return (double)hits / ((double)nq * k);
}

static void test_vamana_recall_l2_10k(void **state)
{
    (void)state;
    const uint64_t n = 10000;
    const uint32_t dim = 128, nq = 200;
    /* queries: held-out rows of the same distribution */
    float *x = overlapping(n + nq, dim, 200, 2.0f, 1234);
    const float *q = x + n * dim;
    vamana_params p;
    vamana_params_default(&p);
    p.threads = 2;
    vamana_graph *g = NULL;
    vamana_build_stats st;
    assert_int_equal(vamana_build_from_memory(x, n, dim, ANN_METRIC_L2, &p, &g, &st), 0);
    assert_int_equal(g->R, 64);
    assert_int_equal(g->stride, 64);
    assert_int_equal(vamana_check(g, g->R, "graph"), 0);
    double r = recall_at_10(g, x, n, dim, ANN_METRIC_L2, q, nq, 100);
    print_message("recall@10 L=100 (L2, 10k x 128): %.4f\n", r);
    assert_true(r >= 0.95);
    /* the entry is the medoid */
    assert_int_equal(g->entry, vamana_medoid(x, n, dim, ANN_METRIC_L2, 1));
    vamana_graph_destroy(g);
    free(x);
}

static void test_vamana_recall_cosine_two_passes(void **state)
{
    (void)state;
    const uint64_t n = 4000;
    const uint32_t dim = 64, nq = 100;
    float *x = tu_clustered(n + nq, dim, 40, 77, 1);
    const float *q = x + n * dim;
    vamana_params p;
    vamana_params_default(&p);
    p.R = 32;
    p.L_build = 64;
    p.passes = 2;
    p.threads = 2;
    vamana_graph *g = NULL;
    assert_int_equal(vamana_build_from_memory(x, n, dim, ANN_METRIC_COSINE, &p, &g, NULL), 0);
    assert_int_equal(vamana_check(g, 32, "graph"), 0);
    double r = recall_at_10(g, x, n, dim, ANN_METRIC_COSINE, q, nq, 64);
    print_message("recall@10 L=64 (cosine, 4k x 64, R 32): %.4f\n", r);
    assert_true(r >= 0.95);
    vamana_graph_destroy(g);
    free(x);
}

/*
 * int8 build distances (VAMANA_PREC_I8, the default): recall at a low L
 * within 0.025 of the half-precision graph's on the hard 10k x 128-d L2 set
 * and within 0.01 on a cosine set; a single-threaded i8 build is
 * deterministic, and inner product falls back to half precision (the codes'
 * centring does not keep inner products), saying so in the stats.
 */
static void test_vamana_i8_build(void **state)
{
    (void)state;
    const uint64_t n = 10000;
    const uint32_t dim = 128, nq = 200;
    float *x = overlapping(n + nq, dim, 200, 2.0f, 1234);
    const float *q = x + n * dim;
    vamana_params p;
    vamana_params_default(&p);
    p.threads = 2;
    vamana_graph *gh = NULL, *gi = NULL;
    vamana_build_stats st;
    /* int8 where a vector kernel sums it, else half rows (the default) */
    const int want = strcmp(ann_i8_active()->name, "scalar") ? VAMANA_PREC_I8 : VAMANA_PREC_F16;
    assert_int_equal(p.build_f16, VAMANA_PREC_I8);
    p.build_f16 = VAMANA_PREC_F16;
    assert_int_equal(vamana_build_from_memory(x, n, dim, ANN_METRIC_L2, &p, &gh, &st), 0);
    assert_int_equal(st.precision_used, VAMANA_PREC_F16);
    assert_true(st.i8_noise == -1.0);
    p.build_f16 = VAMANA_PREC_I8;
    assert_int_equal(vamana_build_from_memory(x, n, dim, ANN_METRIC_L2, &p, &gi, &st), 0);
    assert_int_equal(st.precision_used, want);
    if (want == VAMANA_PREC_I8)
        assert_true(st.i8_noise > 0 && st.i8_noise <= ANN_I8_MAX_NOISE);
    assert_int_equal(vamana_check(gi, gi->R, "graph"), 0);
    double rh = recall_at_10(gh, x, n, dim, ANN_METRIC_L2, q, nq, 20);
    double ri = recall_at_10(gi, x, n, dim, ANN_METRIC_L2, q, nq, 20);
    print_message("recall@10 L=20 (L2, 10k x 128): f16 %.4f, i8 %.4f\n", rh, ri);
    /* heavily overlapping clusters, where the codes' error could show: on
     * these 200 queries i8 finds 0.005-0.013 less than f16 at L 20 in every
     * build (0.002 at L 48); on three other draws of the same family with
     * 2,000 queries each, within 0.003 of f16 either way at L 12-48, so the
     * gap here belongs to this query sample (docs/reproducing.md) */
    assert_true(ri >= rh - 0.025);
    assert_true(ri >= 0.80);
    vamana_graph_destroy(gh);
    vamana_graph_destroy(gi);
    free(x);

    const uint64_t nc = 4000;
    const uint32_t dc = 64;
    float *y = tu_clustered(nc + 100, dc, 40, 77, 1);
    p.R = 32;
    p.L_build = 64;
    p.build_f16 = VAMANA_PREC_F16;
    assert_int_equal(vamana_build_from_memory(y, nc, dc, ANN_METRIC_COSINE, &p, &gh, NULL), 0);
    p.build_f16 = VAMANA_PREC_I8;
    assert_int_equal(vamana_build_from_memory(y, nc, dc, ANN_METRIC_COSINE, &p, &gi, &st), 0);
    assert_int_equal(st.precision_used, want);
    rh = recall_at_10(gh, y, nc, dc, ANN_METRIC_COSINE, y + nc * dc, 100, 16);
    ri = recall_at_10(gi, y, nc, dc, ANN_METRIC_COSINE, y + nc * dc, 100, 16);
    print_message("recall@10 L=16 (cosine, 4k x 64): f16 %.4f, i8 %.4f\n", rh, ri);
    assert_true(ri >= rh - 0.01);
    vamana_graph_destroy(gh);
    vamana_graph_destroy(gi);

    /* one thread: the same graph twice */
    p.threads = 1;
    assert_int_equal(vamana_build_from_memory(y, 1500, dc, ANN_METRIC_L2, &p, &gh, NULL), 0);
    assert_int_equal(vamana_build_from_memory(y, 1500, dc, ANN_METRIC_L2, &p, &gi, NULL), 0);
    assert_memory_equal(gh->degree, gi->degree, gh->n * sizeof *gh->degree);
    assert_memory_equal(gh->adj, gi->adj, (size_t)gh->n * gh->stride * sizeof *gh->adj);
    vamana_graph_destroy(gh);
    vamana_graph_destroy(gi);

    /* inner product: half precision instead */
    p.threads = 2;
    assert_int_equal(vamana_build_from_memory(y, nc, dc, ANN_METRIC_IP, &p, &gi, &st), 0);
    assert_int_equal(st.precision_used, VAMANA_PREC_F16);
    vamana_graph_destroy(gi);
    free(y);
}

static vamana_graph *small_graph(uint64_t n, int threads, float **xs)
{
    const uint32_t dim = 16;
    float *x = tu_clustered(n, dim, 10, 5, 0);
    vamana_params p;
    vamana_params_default(&p);
    p.R = 12;
    p.L_build = 24;
    p.threads = threads;
    vamana_graph *g = NULL;
    assert_int_equal(vamana_build_from_memory(x, n, dim, ANN_METRIC_L2, &p, &g, NULL), 0);
    if (xs)
        *xs = x;
    else
        free(x);
    return g;
}

static void test_vamana_deterministic_single_thread(void **state)
{
    (void)state;
    vamana_graph *a = small_graph(1500, 1, NULL);
    vamana_graph *b = small_graph(1500, 1, NULL);
    assert_int_equal(a->entry, b->entry);
    assert_memory_equal(a->degree, b->degree, a->n * sizeof *a->degree);
    assert_memory_equal(a->adj, b->adj, a->n * a->R * sizeof *a->adj);
    vamana_graph_destroy(a);
    vamana_graph_destroy(b);
}

/* file_order: points go in in id order, so the seed orders nothing: one
 * thread and two seeds give one graph (two seeds give two graphs when
 * shuffled), and the graph is as sound as a shuffled one (degree, links,
 * recall on held-out queries). */
/* The rule tests' parameters: R 16, L_build 32, one thread (one graph per
 * seed), defaults otherwise. */
static vamana_params rule_params(void)
{
    vamana_params p;
    vamana_params_default(&p);
    p.R = 16;
    p.L_build = 32;
    p.threads = 1;
    return p;
}

/* The graph of x's first n rows under p, checked. */
static vamana_graph *rule_graph(const float *x, uint64_t n, uint32_t dim, const vamana_params *p)
{
    vamana_graph *g = NULL;
    assert_int_equal(vamana_build_from_memory(x, n, dim, ANN_METRIC_L2, p, &g, NULL), 0);
    assert_int_equal(vamana_check(g, g->R, "graph"), 0);
    return g;
}

static vamana_graph *seeded_graph(const float *x, uint64_t n, uint32_t dim, uint64_t seed,
                                  int file_order)
{
    vamana_params p = rule_params();
    p.seed = seed;
    p.file_order = file_order;
    return rule_graph(x, n, dim, &p);
}

/* recall@10 at L 40 of the nq held-out rows after x's first n */
static double held_out_recall(const vamana_graph *g, const float *x, uint64_t n, uint32_t dim,
                              uint32_t nq)
{
    return recall_at_10(g, x, n, dim, ANN_METRIC_L2, x + n * dim, nq, 40);
}

static int same_graph(const vamana_graph *a, const vamana_graph *b)
{
    return a->entry == b->entry &&
           !memcmp(a->degree, b->degree, a->n * sizeof *a->degree) &&
           !memcmp(a->adj, b->adj, a->n * a->R * sizeof *a->adj);
}

static void test_vamana_file_order(void **state)
{
    (void)state;
    const uint64_t n = 3000;
    const uint32_t dim = 32, nq = 100;
    float *x = overlapping(n + nq, dim, 30, 2.0f, 77);
    vamana_graph *f1 = seeded_graph(x, n, dim, 1, 1), *f2 = seeded_graph(x, n, dim, 2, 1);
    vamana_graph *s1 = seeded_graph(x, n, dim, 1, 0), *s2 = seeded_graph(x, n, dim, 2, 0);
    assert_true(same_graph(f1, f2));
    assert_false(same_graph(s1, s2));
    assert_false(same_graph(f1, s1));
    double rf = held_out_recall(f1, x, n, dim, nq), rs = held_out_recall(s1, x, n, dim, nq);
    print_message("recall@10 L=40: file order %.4f, shuffled %.4f\n", rf, rs);
    assert_true(rf >= 0.9);
    vamana_graph_destroy(f1);
    vamana_graph_destroy(f2);
    vamana_graph_destroy(s1);
    vamana_graph_destroy(s2);
    free(x);
}

/* saturate: every node of a graph whose searches find at least R others
 * ends with exactly R neighbours (the alpha rule alone leaves some below
 * R), the lists still begin with what the alpha rule kept, and the graph
 * stays sound. */
static void test_vamana_saturate(void **state)
{
    (void)state;
    const uint64_t n = 3000;
    const uint32_t dim = 32, nq = 100;
    float *x = overlapping(n + nq, dim, 30, 2.0f, 77);
    vamana_params p = rule_params();
    vamana_graph *plain = rule_graph(x, n, dim, &p);
    p.saturate = 1;
    vamana_graph *sat = rule_graph(x, n, dim, &p);
    uint64_t below = 0, plain_sum = 0;
    for (uint64_t v = 0; v < n; v++) {
        assert_int_equal(sat->degree[v], p.R);
        below += plain->degree[v] < p.R;
        plain_sum += plain->degree[v];
    }
    print_message("degree: plain mean %.2f (%llu of %llu below R), saturated %u everywhere\n",
                  (double)plain_sum / (double)n, (unsigned long long)below, (unsigned long long)n,
                  p.R);
    assert_true(below > n / 10);
    double rp = held_out_recall(plain, x, n, dim, nq), rs = held_out_recall(sat, x, n, dim, nq);
    print_message("recall@10 L=40: plain %.4f, saturated %.4f\n", rp, rs);
    assert_true(rs >= 0.9);
    vamana_graph_destroy(plain);
    vamana_graph_destroy(sat);
    free(x);
}

/* prune_expanded: an insert prunes only what its search expanded (the
 * node's earlier back-edges are dropped), as Microsoft DiskANN's link():
 * another graph, as sound (every node reachable, recall on held-out
 * queries). */
static void test_vamana_prune_expanded(void **state)
{
    (void)state;
    const uint64_t n = 3000;
    const uint32_t dim = 32, nq = 100;
    float *x = overlapping(n + nq, dim, 30, 2.0f, 77);
    vamana_params p = rule_params();
    p.L_build = 16; /* few expanded nodes: earlier back-edges are not all among them */
    p.file_order = 1;
    vamana_graph *paper = rule_graph(x, n, dim, &p);
    p.prune_expanded = 1;
    vamana_graph *xp = rule_graph(x, n, dim, &p);
    /* the rule changes the graph (with L_build 32 here the two graphs come
     * out the same: few nodes hold back-edges before their turn in id order) */
    assert_false(same_graph(paper, xp));
    double rp = held_out_recall(paper, x, n, dim, nq), rx = held_out_recall(xp, x, n, dim, nq);
    print_message("recall@10 L=40, file order: V u N_out(p) %.4f, V only %.4f\n", rp, rx);
    assert_true(rx >= 0.85); /* 0.887 measured (0.886 with the paper's rule) */
    vamana_graph_destroy(paper);
    vamana_graph_destroy(xp);
    free(x);
}

static void test_vamana_checker_catches_defects(void **state)
{
    (void)state;
    vamana_graph *g = small_graph(800, 2, NULL);
    assert_int_equal(vamana_check(g, g->R, "graph"), 0);
    uint32_t v = 17, *nb = g->adj + (size_t)v * g->R;
    assert_true(g->degree[v] >= 2);
    uint32_t save0 = nb[0], save1 = nb[1];

    nb[0] = v;
    assert_int_equal(vamana_check(g, g->R, "graph"), ANN_ECORRUPT);
    assert_string_equal(ann_errmsg(ANN_ECORRUPT), "graph: node 17: self-loop");

    nb[0] = 800;
    assert_int_equal(vamana_check(g, g->R, "graph"), ANN_ECORRUPT);
    assert_string_equal(ann_errmsg(ANN_ECORRUPT),
                        "graph: node 17: neighbour 800 out of range (n 800)");

    nb[0] = save1;
    assert_int_equal(vamana_check(g, g->R, "graph"), ANN_ECORRUPT);
    char msg[128];
    snprintf(msg, sizeof msg, "graph: node 17: duplicate neighbour %u", save1);
    assert_string_equal(ann_errmsg(ANN_ECORRUPT), msg);
    nb[0] = save0;

    uint32_t deg = g->degree[v];
    g->degree[v] = g->R + 1;
    assert_int_equal(vamana_check(g, g->R, "graph"), ANN_ECORRUPT);
    assert_string_equal(ann_errmsg(ANN_ECORRUPT), "graph: node 17: degree 13 exceeds 12");
    g->degree[v] = deg;
    assert_int_equal(vamana_check(g, g->R, "graph"), 0);

    /* remove every edge into node u (not the entry): unreachable */
    uint32_t u = g->entry == 300 ? 301 : 300;
    for (uint64_t w = 0; w < g->n; w++) {
        uint32_t *l = g->adj + w * g->R, d = g->degree[w], o = 0;
        for (uint32_t i = 0; i < d; i++)
            if (l[i] != u)
                l[o++] = l[i];
        g->degree[w] = o;
    }
    assert_int_equal(vamana_check(g, g->R, "graph"), ANN_ECORRUPT);
    snprintf(msg, sizeof msg, "graph: node %u: unreachable from entry %u", u, g->entry);
    assert_string_equal(ann_errmsg(ANN_ECORRUPT), msg);
    vamana_graph_destroy(g);
}

static void rewrite_crc(uint8_t *file, size_t len)
{
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, file, (uInt)(len - 4));
    ann_put_u32(file + len - 4, (uint32_t)c);
}

static void test_vamana_save_load(void **state)
{
    (void)state;
    vamana_graph *g = small_graph(500, 1, NULL);
    char *dir = tu_tmpdir("vamana");
    char path[4096], msg[4600];
    snprintf(path, sizeof path, "%s/g.vamana", dir);
    assert_int_equal(vamana_graph_save(g, path), 0);
    size_t len = 0;
    uint8_t *file = tu_read_file(path, &len);
    assert_int_equal(len, 48 + 4 * 500 + 4 * 500 * 12 + 4);
    assert_memory_equal(file, "ANNVAMG", 8);
    assert_int_equal(ann_get_u32(file + 8), 1);
    assert_int_equal(ann_get_u32(file + 12), 12);
    assert_int_equal(ann_get_u64(file + 16), 500);
    assert_int_equal(ann_get_u32(file + 24), g->entry);
    assert_int_equal(ann_get_u32(file + 28), 16);
    assert_int_equal(ann_get_u32(file + 32), 24);
    assert_int_equal(ann_get_u32(file + 48 + 4 * 7), g->degree[7]);
    assert_int_equal(ann_get_u32(file + 48 + 4 * 500 + 4 * (7 * 12)), g->adj[7 * 12]);

    vamana_graph *back = NULL;
    assert_int_equal(vamana_graph_load(path, &back), 0);
    assert_int_equal(back->entry, g->entry);
    assert_memory_equal(back->degree, g->degree, 500 * 4);
    assert_memory_equal(back->adj, g->adj, 500 * 12 * 4);
    vamana_graph_destroy(back);
    back = NULL;

    /* a neighbour id out of range, with a valid checksum: the checker speaks */
    size_t off = 48 + 4 * 500 + 4 * (9 * 12);
    uint32_t saved = ann_get_u32(file + off);
    ann_put_u32(file + off, 123456);
    rewrite_crc(file, len);
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(vamana_graph_load(path, &back), ANN_ECORRUPT);
    snprintf(msg, sizeof msg, "%s: node 9: neighbour 123456 out of range (n 500)", path);
    assert_string_equal(ann_errmsg(ANN_ECORRUPT), msg);
    assert_null(back);

    /* the same flip without fixing the checksum */
    rewrite_crc(file, len);
    file[len - 1] ^= 1;
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(vamana_graph_load(path, &back), ANN_ECORRUPT);
    assert_non_null(strstr(ann_errmsg(ANN_ECORRUPT), "checksum mismatch"));
    ann_put_u32(file + off, saved);
    rewrite_crc(file, len);

    /* degree beyond R */
    ann_put_u32(file + 48 + 4 * 3, 13);
    rewrite_crc(file, len);
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(vamana_graph_load(path, &back), ANN_ECORRUPT);
    snprintf(msg, sizeof msg, "%s: node 3: degree 13 exceeds 12", path);
    assert_string_equal(ann_errmsg(ANN_ECORRUPT), msg);
    ann_put_u32(file + 48 + 4 * 3, g->degree[3]);
    rewrite_crc(file, len);

    /* version, magic (checksums valid: a damaged header is a checksum
     * mismatch, test_headers), truncation */
    file[8] = 9;
    rewrite_crc(file, len);
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(vamana_graph_load(path, &back), ANN_EVERSION);
    snprintf(msg, sizeof msg, "%s: Vamana graph version 9, this build reads 1; rebuild the index",
             path);
    assert_string_equal(ann_errmsg(ANN_EVERSION), msg);
    file[8] = 1;
    file[1] = 'x';
    rewrite_crc(file, len);
    assert_int_equal(tu_write_file(path, file, len), 0);
    assert_int_equal(vamana_graph_load(path, &back), ANN_EFORMAT);
    snprintf(msg, sizeof msg, "%s: bad magic, expected \"ANNVAMG\" (Vamana graph)", path);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), msg);
    file[1] = 'N';
    rewrite_crc(file, len);
    assert_int_equal(tu_write_file(path, file, len - 4), 0);
    assert_int_equal(vamana_graph_load(path, &back), ANN_EFORMAT);
    assert_non_null(strstr(ann_errmsg(ANN_EFORMAT), ": size "));
    assert_int_equal(tu_write_file(path, file, 20), 0);
    assert_int_equal(vamana_graph_load(path, &back), ANN_EFORMAT);
    snprintf(msg, sizeof msg, "%s: truncated reading header at offset 0", path);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), msg);

    free(file);
    tu_rmdir(dir);
    vamana_graph_destroy(g);
}

/*
 * Seeded mutation fuzzing of the graph file: random byte changes with the
 * checksum recomputed (so the structural checks, not the crc, must catch
 * them) and random truncations.  Every load either fails with a format or
 * corruption code or returns a graph that passes vamana_check; nothing
 * crashes (run under ASan/UBSan by `make test SAN=...`).
 */
static void test_vamana_load_fuzz(void **state)
{
    (void)state;
    vamana_graph *g = small_graph(300, 1, NULL);
    char *dir = tu_tmpdir("vamana-fuzz");
    char path[4096];
    snprintf(path, sizeof path, "%s/g.vamana", dir);
    assert_int_equal(vamana_graph_save(g, path), 0);
    size_t len = 0;
    uint8_t *orig = tu_read_file(path, &len);
    uint8_t *buf = malloc(len);
    uint64_t rs = 2024;
    int ok = 0, refused = 0;
    for (int iter = 0; iter < 600; iter++) {
        memcpy(buf, orig, len);
        size_t cut = len;
        int flips = 1 + (int)(tu_rand(&rs) % 4);
        for (int f = 0; f < flips; f++) {
            /* bias towards the header and degrees, where structure lives */
            size_t at = (tu_rand(&rs) & 1) ? tu_rand(&rs) % 48 : tu_rand(&rs) % (len - 4);
            buf[at] = (uint8_t)tu_rand(&rs);
        }
        rewrite_crc(buf, len);
        if (iter % 10 == 0)
            cut = tu_rand(&rs) % len;
        assert_int_equal(tu_write_file(path, buf, cut), 0);
        vamana_graph *back = NULL;
        int rc = vamana_graph_load(path, &back);
        if (rc == 0) {
            assert_int_equal(vamana_check(back, back->R, "fuzz"), 0);
            vamana_graph_destroy(back);
            ok++;
        } else {
            assert_true(rc == ANN_EFORMAT || rc == ANN_ECORRUPT || rc == ANN_EVERSION ||
                        rc == -ENOMEM);
            assert_null(back);
            refused++;
        }
    }
    print_message("graph fuzz: %d loaded (harmless changes), %d refused\n", ok, refused);
    assert_true(refused > 200);
    free(buf);
    free(orig);
    tu_rmdir(dir);
    vamana_graph_destroy(g);
}

static void test_vamana_bad_params(void **state)
{
    (void)state;
    float x[32] = { 0 };
    vamana_params p;
    vamana_params_default(&p);
    p.alpha = 0.9f;
    vamana_graph *g = NULL;
    assert_int_equal(vamana_build_from_memory(x, 4, 8, ANN_METRIC_L2, &p, &g, NULL), ANN_EPARAM);
    assert_null(g);
    assert_non_null(strstr(ann_errmsg(ANN_EPARAM), "alpha 0.9"));
}

static void test_candlist_and_visited(void **state)
{
    (void)state;
    ann_candlist l;
    assert_int_equal(ann_candlist_create(&l, 4), 0);
    assert_int_equal(ann_candlist_insert(&l, 3.0f, 3), 0);
    assert_int_equal(ann_candlist_insert(&l, 1.0f, 1), 0);
    assert_int_equal(ann_candlist_insert(&l, 2.0f, 7), 1);
    assert_int_equal(ann_candlist_insert(&l, 2.0f, 2), 1); /* tie: lower id first */
    assert_true(ann_candlist_bound(&l) == 3.0f);
    assert_int_equal(ann_candlist_insert(&l, 5.0f, 5), -1);
    assert_int_equal(ann_candlist_insert(&l, 3.0f, 9), -1); /* tie with worst, higher id */
    assert_int_equal(ann_candlist_next(&l), 0);             /* id 1 */
    assert_int_equal(l.c[0].id, 1);
    assert_int_equal(ann_candlist_insert(&l, 0.5f, 0), 0); /* before the cursor */
    assert_int_equal(l.n, 4);
    assert_int_equal(l.c[3].id, 7); /* id 3 fell off */
    assert_int_equal(ann_candlist_next(&l), 0);
    assert_int_equal(l.c[0].id, 0);
    assert_int_equal(ann_candlist_next(&l), 2);
    assert_int_equal(ann_candlist_next(&l), 3);
    assert_int_equal(ann_candlist_next(&l), -1);
    ann_candlist_reset_cap(&l, 100);
    assert_int_equal(l.cap, 4);
    ann_candlist_fini(&l);

    ann_visited v;
    assert_int_equal(ann_visited_init(&v, 10), 0);
    assert_int_equal(ann_visited_test_and_set(&v, 3), 0);
    assert_int_equal(ann_visited_test_and_set(&v, 3), 1);
    ann_visited_reset(&v);
    assert_int_equal(ann_visited_test(&v, 3), 0);
    v.epoch = UINT32_MAX; /* wrap: stamps cleared */
    v.stamp[4] = 1;
    ann_visited_reset(&v);
    assert_int_equal(v.epoch, 1);
    assert_int_equal(ann_visited_test(&v, 4), 0);
    ann_visited_fini(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_candlist_and_visited),
        cmocka_unit_test(test_vamana_bad_params),
        cmocka_unit_test(test_vamana_checker_catches_defects),
        cmocka_unit_test(test_vamana_deterministic_single_thread),
        cmocka_unit_test(test_vamana_file_order),
        cmocka_unit_test(test_vamana_saturate),
        cmocka_unit_test(test_vamana_prune_expanded),
        cmocka_unit_test(test_vamana_save_load),
        cmocka_unit_test(test_vamana_load_fuzz),
        cmocka_unit_test(test_vamana_recall_cosine_two_passes),
        cmocka_unit_test(test_vamana_recall_l2_10k),
        cmocka_unit_test(test_vamana_i8_build),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
