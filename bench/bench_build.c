/*
 * bench_build.c: wall time per phase of a DiskANN build (PQ training, PQ
 * encoding, Vamana graph: medoid, insertion passes, final prune) and peak
 * RSS, on generated clustered anisotropic data or on a .fbin file; then
 * recall@10 of the in-memory graph at L = 100 against exact search on
 * held-out queries, so a fast build that is a bad graph shows, and a
 * checksum of its edges (equal across builds at --threads 1 that must give
 * the same graph).
 *
 *   build/bench/bench_build N DIM [--metric l2|cosine] [--threads T]
 *       [--R 64] [--L 100] [--alpha 1.2] [--passes 1] [--pq-bytes 96]
 *       [--seed 1] [--repeats 1] [--f16 1] [--data base.fbin [--queries query.fbin]]
 *
 * Without --queries the 200 recall queries are the 200 rows after the first
 * N of the data (held out of the build).
 *
 * With --repeats > 1 every phase is rebuilt and the median is printed with
 * the spread (min..max).  The generated data: 256 cluster centres plus a
 * shared rank-64 subspace with geometrically decaying scales plus small
 * isotropic noise (normalised for cosine), the shape of real embeddings.
 */
#include "engines/core/crc32c.h"
#include "engines/core/distance.h"
#include "engines/core/exact.h"
#include "engines/core/parallel.h"
#include "engines/core/pq.h"
#include "engines/core/status.h"
#include "engines/core/vamana.h"
#include "engines/core/vecfile.h"
#include "engines/core/ticks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float gauss(uint64_t *s)
{
    double u = ((rnd(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    double v = ((rnd(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* CPU seconds (user + system) of all threads of this process so far. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* Peak resident set of this process (VmHWM), bytes. */
static uint64_t peak_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

static float *generate(uint64_t n, uint32_t dim, int cosine, uint64_t seed)
{
    const uint32_t clusters = 256, rank = 64;
    uint64_t s = seed;
    float *x = malloc(n * dim * sizeof *x);
    float *centres = malloc((size_t)clusters * dim * sizeof *centres);
    float *basis = malloc((size_t)rank * dim * sizeof *basis);
    if (!x || !centres || !basis) {
        free(x);
        x = NULL;
        goto out;
    }
    for (size_t i = 0; i < (size_t)clusters * dim; i++)
        centres[i] = 0.5f * gauss(&s);
    for (size_t i = 0; i < (size_t)rank * dim; i++)
        basis[i] = gauss(&s) / sqrtf((float)dim);
    for (uint64_t i = 0; i < n; i++) {
        float *row = x + i * dim;
        const float *c = centres + (rnd(&s) % clusters) * dim;
        for (uint32_t d = 0; d < dim; d++)
            row[d] = c[d] + 0.1f * gauss(&s);
        for (uint32_t r = 0; r < rank; r++) {
            float z = gauss(&s) * 2.0f * powf(0.93f, (float)r);
            const float *b = basis + (size_t)r * dim;
            for (uint32_t d = 0; d < dim; d++)
                row[d] += z * b[d] * sqrtf((float)dim) * 0.25f;
        }
        if (cosine)
            ann_normalize(row, dim);
    }
out:
    free(centres);
    free(basis);
    return x;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void summary(const char *name, double *v, int reps)
{
    double s[64];
    memcpy(s, v, (size_t)reps * sizeof *v);
    qsort(s, (size_t)reps, sizeof *s, cmp_d);
    printf("  %-22s %9.2f s   (min %.2f, max %.2f, %d run%s)\n", name, s[reps / 2], s[0],
           s[reps - 1], reps, reps > 1 ? "s" : "");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s N DIM [--metric l2|cosine] [--threads T] [--R R] [--L L] "
                        "[--alpha A] [--passes P] [--pq-bytes B] [--seed S] [--repeats K] "
                        "[--precision i8|f16|f32] [--data base.fbin [--queries query.fbin]]\n", argv[0]);
        return 2;
    }
    uint64_t n = strtoull(argv[1], NULL, 10);
    uint32_t dim = (uint32_t)strtoul(argv[2], NULL, 10);
    ann_metric metric = ANN_METRIC_COSINE;
    int threads = ann_ncores(), reps = 1;
    const char *data = NULL, *qpath = NULL;
    vamana_params vp;
    vamana_params_default(&vp);
    pq_params pp;
    pq_params_default(&pp, dim);
    for (int i = 3; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--metric")) {
            if (ann_metric_parse(v, &metric)) {
                fprintf(stderr, "bench_build: --metric: unknown metric '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(k, "--threads"))
            threads = atoi(v);
        else if (!strcmp(k, "--R"))
            vp.R = (uint32_t)atoi(v);
        else if (!strcmp(k, "--L"))
            vp.L_build = (uint32_t)atoi(v);
        else if (!strcmp(k, "--alpha"))
            vp.alpha = strtof(v, NULL);
        else if (!strcmp(k, "--passes"))
            vp.passes = (uint32_t)atoi(v);
        else if (!strcmp(k, "--pq-bytes"))
            pp.pq_bytes = (uint32_t)atoi(v);
        else if (!strcmp(k, "--seed"))
            vp.seed = pp.seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--f16")) /* kept: 0 f32, 1 f16 */
            vp.build_f16 = atoi(v) ? VAMANA_PREC_F16 : VAMANA_PREC_F32;
        else if (!strcmp(k, "--precision")) {
            if (strcmp(v, "i8") && strcmp(v, "f16") && strcmp(v, "f32")) {
                fprintf(stderr, "bench_build: --precision must be i8, f16 or f32 (got %s)\n", v);
                return 2;
            }
            vp.build_f16 = !strcmp(v, "i8")    ? VAMANA_PREC_I8
                           : !strcmp(v, "f16") ? VAMANA_PREC_F16
                                               : VAMANA_PREC_F32;
        }
        else if (!strcmp(k, "--repeats"))
            reps = atoi(v);
        else if (!strcmp(k, "--data"))
            data = v;
        else if (!strcmp(k, "--queries"))
            qpath = v;
        else {
            fprintf(stderr, "bench_build: unknown option %s\n", k);
            return 2;
        }
    }
    if (reps < 1 || reps > 64) {
        fprintf(stderr, "bench_build: --repeats must be in [1, 64]\n");
        return 2;
    }
    vp.threads = threads;
    pp.threads = threads;

    const uint32_t nq = 200;
    float *x = NULL;
    int rc = 0;
    double t0 = ann_mono_s();
    if (data) {
        ann_vecfile vf;
        rc = ann_vecfile_open(data, &vf);
        if (rc == 0) {
            n = vf.n < n ? vf.n : n;
            dim = vf.dim;
            pp.pq_bytes = pp.pq_bytes <= dim ? pp.pq_bytes : pq_default_bytes(dim);
            x = malloc((n + nq) * dim * sizeof *x);
            if (!x || (!qpath && vf.n < n + nq)) {
                fprintf(stderr, "bench_build: %s needs %llu rows (N + %u held-out queries)\n",
                        data, (unsigned long long)(n + nq), nq);
                return 1;
            }
            rc = ann_vecfile_read_f32(&vf, 0, qpath ? n : n + nq, x);
            ann_vecfile_close(&vf);
        }
        if (rc == 0 && qpath) {
            ann_vecfile qf;
            rc = ann_vecfile_open(qpath, &qf);
            if (rc == 0 && (qf.dim != dim || qf.n < nq))
                rc = ann_fail(ANN_EPARAM, "%s: need %u queries of dimension %u", qpath, nq, dim);
            if (rc == 0)
                rc = ann_vecfile_read_f32(&qf, 0, nq, x + n * dim);
            if (qf.fd >= 0)
                ann_vecfile_close(&qf);
        }
        if (rc) {
            fprintf(stderr, "bench_build: %s\n", ann_errmsg(rc));
            return 1;
        }
    } else {
        x = generate(n + nq, dim, metric == ANN_METRIC_COSINE, 42);
        if (!x) {
            fprintf(stderr, "bench_build: no memory for %llu x %u\n", (unsigned long long)n, dim);
            return 1;
        }
    }
    const float *queries = x + n * dim;
    printf("bench_build: n %llu, dim %u, metric %s, threads %d, R %u, L_build %u, alpha %.2f, "
           "passes %u, precision %s, pq_bytes %u, SIMD %s, data %s (%.1f s to %s)\n",
           (unsigned long long)n, dim, ann_metric_name(metric), threads, vp.R, vp.L_build,
           (double)vp.alpha, vp.passes, vamana_precision_name(vp.build_f16), pp.pq_bytes, ann_dist_active()->name,
           data ? data : "generated", ann_mono_s() - t0, data ? "read" : "generate");

    double t_train[64], t_encode[64], t_medoid[64], t_graph[64], t_final[64], t_total[64];
    double c_train[64], c_encode[64], c_graph[64], c_total[64];
    vamana_graph *g = NULL;
    uint8_t *codes = malloc(n * pp.pq_bytes);
    ann_vecsrc *src = NULL;
    rc = ann_vecsrc_from_memory(x, n, dim, metric, &src);
    if (rc || !codes) {
        fprintf(stderr, "bench_build: set-up failed\n");
        return 1;
    }
    uint64_t evals = 0, prune_evals = 0, reprunes = 0;
    int used = vp.build_f16;
    for (int r = 0; r < reps; r++) {
        pq_codebook *cb = NULL;
        double a = ann_mono_s(), ca = cpu_s();
        rc = pq_train(src, &pp, &cb);
        double b = ann_mono_s(), cb_ = cpu_s();
        if (rc == 0)
            rc = pq_encode(cb, x, n, threads, codes);
        double c = ann_mono_s(), cc = cpu_s();
        pq_codebook_destroy(cb);
        if (rc) {
            fprintf(stderr, "bench_build: PQ: %s\n", ann_errmsg(rc));
            return 1;
        }
        vamana_graph_destroy(g);
        g = NULL;
        vamana_build_stats st;
        rc = vamana_build_from_memory(x, n, dim, metric, &vp, &g, &st);
        double d = ann_mono_s(), cd = cpu_s();
        if (rc) {
            fprintf(stderr, "bench_build: graph: %s\n", ann_errmsg(rc));
            return 1;
        }
        t_train[r] = b - a;
        t_encode[r] = c - b;
        t_medoid[r] = st.medoid_s;
        t_graph[r] = st.graph_s;
        t_final[r] = st.finalize_s;
        t_total[r] = d - a;
        c_train[r] = cb_ - ca;
        c_encode[r] = cc - cb_;
        c_graph[r] = cd - cc;
        c_total[r] = cd - ca;
        evals = st.dist_evals;
        prune_evals = st.prune_dist_evals;
        reprunes = st.reprunes;
        used = st.precision_used;
    }
    printf("phases (wall clock, median of %d):\n", reps);
    summary("PQ training", t_train, reps);
    summary("PQ encoding", t_encode, reps);
    summary("graph: medoid", t_medoid, reps);
    summary("graph: insertion", t_graph, reps);
    summary("graph: final prune", t_final, reps);
    summary("total (PQ + graph)", t_total, reps);
    printf("CPU time, all threads (user + sys; on an idle machine wall ~ CPU / threads):\n");
    summary("PQ training", c_train, reps);
    summary("PQ encoding", c_encode, reps);
    summary("graph (all phases)", c_graph, reps);
    summary("total (PQ + graph)", c_total, reps);
    uint64_t edges = 0;
    for (uint64_t v = 0; v < g->n; v++)
        edges += g->degree[v];
    printf("graph: distances on %s rows, mean degree %.1f of R %u, %.1f distances per point "
           "(%.1f in prunes), %.2f back-edge re-prunes per point\n",
           vamana_precision_name(used), (double)edges / (double)n, vp.R, (double)evals / (double)n,
           (double)prune_evals / (double)n, (double)reprunes / (double)n);
    printf("peak RSS: %.2f GiB (vectors %.2f GiB)\n", peak_rss_bytes() / 1073741824.0,
           (double)n * dim * 4 / 1073741824.0);

    /* recall@10 at L = 100 on held-out queries (graph quality check) */
    int32_t *gt = malloc((size_t)nq * 10 * sizeof *gt);
    float *gtd = malloc((size_t)nq * 10 * sizeof *gtd);
    vamana_searcher *s = NULL;
    if (!gt || !gtd || ann_exact_knn(src, queries, nq, 10, threads, gt, gtd) != 0 ||
        vamana_searcher_create(g, x, dim, metric, 100, &s) != 0) {
        fprintf(stderr, "bench_build: recall check failed: %s\n", ann_errmsg(-1));
        return 1;
    }
    uint64_t hits = 0;
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t ids[10];
        float ds[10];
        int got = vamana_search(s, queries + (size_t)q * dim, 10, 100, ids, ds, NULL);
        for (int a = 0; a < got; a++)
            for (int b = 0; b < 10; b++)
                if (ids[a] == (uint32_t)gt[q * 10 + b]) {
                    hits++;
                    break;
                }
    }
    printf("in-memory recall@10 at L=100 on %u held-out queries: %.4f\n", nq,
           (double)hits / (nq * 10.0));
    /* the graph's edges as one checksum: two builds at --threads 1 with the
     * same inputs must print the same (a kernel change that keeps values bit
     * for bit keeps it) */
    uint32_t crc = 0;
    for (uint64_t v = 0; v < g->n; v++) {
        crc = ann_crc32c(crc, &g->degree[v], sizeof g->degree[v]);
        crc = ann_crc32c(crc, g->adj + v * g->stride, (size_t)g->degree[v] * sizeof *g->adj);
    }
    printf("graph: entry %u, crc32c of the degrees and neighbour lists %08x\n", g->entry, crc);

    /* build memory model for 1M points of this dimension */
    uint64_t n1 = 1000000;
    uint32_t stride = (uint32_t)ceil(vp.slack * vp.R - 1e-6);
    uint32_t half = vp.build_f16 == VAMANA_PREC_I8   ? (dim + 63) / 64 * 64 + 8
                    : vp.build_f16 == VAMANA_PREC_F16 ? dim * 2
                                                      : 0;
    double per_node = dim * 4.0 + half + stride * 4.0 + 4 + 4 + pp.pq_bytes + threads * 4.0;
    double sample = (double)pq_sample_rows(&pp, n1, dim) * dim * 4;
    printf("build memory model for 1M x %u: %.0f bytes/node (vector %u, build copy %u, "
           "adjacency %u x 4, degree 4, order 4, code %u, visited 4 x %d threads) + PQ sample "
           "%.0f MiB = %.2f GiB\n",
           dim, per_node, dim * 4, half, stride, pp.pq_bytes, threads, sample / 1048576.0,
           (per_node * n1 + sample) / 1073741824.0);

    vamana_searcher_destroy(s);
    vamana_graph_destroy(g);
    ann_vecsrc_destroy(src);
    free(gt);
    free(gtd);
    free(codes);
    free(x);
    return 0;
}
