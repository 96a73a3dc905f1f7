/*
 * bench_pq_recall.c: how well PQ codes rank a bundle's true neighbours, with
 * no graph: a cheap proxy for the recall a PQ-ranked engine (DiskANN's
 * search, IVF-PQ) can reach on that data.  For each code size it trains a
 * codebook on the base as a build does (pq_train, default sample), encodes
 * every vector, then for each of the first Q test queries ranks all n codes
 * by ADC distance and reports the share of the true top 10 (the bundle's
 * ground truth) found among the D best by PQ, for each depth D.
 *
 *   make bench && ./build/bench/bench_pq_recall BUNDLE_DIR [--pq-bytes 96,192]
 *       [--queries 200] [--depths 10,20,50,100,200] [--threads 0] [--seed 1]
 *       [--sample-rows N]   (the training sample's row cap, in place of the
 *                            build's caps: 200,000 rows and 128 MiB)
 *       [--iters N]         (k-means iterations a subspace, in place of the
 *                            build's 12)
 *       [--ms-pq PREFIX_disk.index]  (no training: the codebook and codes of a
 *                            Microsoft DiskANN build on the same base, its
 *                            _pq_pivots.bin and _pq_compressed.bin, read as
 *                            `annlab import-graph --ms-pq` reads them;
 *                            --pq-bytes must be its chunk count)
 *
 * Why: a DiskANN search re-ranks by full vectors only the nodes it expands,
 * and chooses them by PQ distance; when PQ puts the true neighbours far
 * down the order the search misses them at small L whatever the graph.  A
 * 1M stand-in is checked against recall figures published on real data
 * (datasets/README.md); a full 1M graph takes 15-20 minutes here, this
 * about one (training, encoding and 200 exhaustive ADC scans).  The
 * figures are the data's and the codebook's, not any engine's.
 */
#include "datasets/bundle.h"
#include "engines/core/msdiskann.h"
#include "engines/core/parallel.h"
#include "engines/core/pq.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
#include "engines/core/topk.h"
#include "bench/benchutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 8
#define TRUE_K 10u

typedef struct {
    const char *bundle;
    const char *ms_pq; /* a Microsoft disk index whose PQ files are ranked instead */
    int pq[MAX_LIST], npq, depths[MAX_LIST], ndepth;
    int queries, threads;
    unsigned long long seed, sample_rows;
    int iters; /* 0: the build's */
} opts;

/* One scan job: queries [begin, end) of the run, each worker its own buffers. */
typedef struct {
    const pq_codebook *cb;
    const uint8_t *codes;
    uint64_t n;
    const float *queries;
    const ann_gt *gt;
    const int *depths;
    int ndepth, max_depth;
    float **table, **dist, **top_d;
    uint32_t **top_i, **ids;
    uint64_t *found; /* ndepth counters per query: found[q * ndepth + d] */
} scan_job;

static int scan_range(void *arg, uint64_t begin, uint64_t end, int worker)
{
    scan_job *j = arg;
    const uint32_t m = j->cb->m, dim = j->cb->dim;
    for (uint64_t q = begin; q < end; q++) {
        pq_table_compute(j->cb, j->queries + q * dim, j->table[worker]);
        pq_adc_scan(j->table[worker], m, j->codes, j->n, j->dist[worker]);
        ann_topk t;
        ann_topk_init(&t, j->top_d[worker], j->top_i[worker], (uint32_t)j->max_depth);
        for (uint64_t i = 0; i < j->n; i++)
            ann_topk_push(&t, j->dist[worker][i], (uint32_t)i);
        float *sd = j->dist[worker]; /* scratch for the sorted distances */
        uint32_t got = ann_topk_sorted(&t, j->ids[worker], sd);
        const int32_t *truth = j->gt->ids + q * j->gt->k;
        for (int d = 0; d < j->ndepth; d++) {
            uint32_t depth = (uint32_t)j->depths[d] < got ? (uint32_t)j->depths[d] : got;
            uint64_t f = 0;
            for (uint32_t a = 0; a < TRUE_K; a++)
                for (uint32_t b = 0; b < depth; b++)
                    if (j->ids[worker][b] == (uint32_t)truth[a]) {
                        f++;
                        break;
                    }
            j->found[q * (uint64_t)j->ndepth + (uint64_t)d] = f;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o = { .queries = 200, .seed = 1 };
    o.npq = bench_parse_ints("96", o.pq, MAX_LIST, 1, 65536);
    o.ndepth = bench_parse_ints("10,20,50,100,200", o.depths, MAX_LIST, 10, 100000);
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            bad |= o.bundle != NULL;
            o.bundle = a;
            continue;
        }
        if (!v) {
            bad = 1;
            break;
        }
        i++;
        if (!strcmp(a, "--pq-bytes"))
            o.npq = bench_parse_ints(v, o.pq, MAX_LIST, 1, 65536);
        else if (!strcmp(a, "--depths"))
            o.ndepth = bench_parse_ints(v, o.depths, MAX_LIST, 10, 100000);
        else if (!strcmp(a, "--queries"))
            o.queries = atoi(v);
        else if (!strcmp(a, "--threads"))
            o.threads = atoi(v);
        else if (!strcmp(a, "--seed"))
            o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--sample-rows"))
            o.sample_rows = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--iters"))
            o.iters = atoi(v);
        else if (!strcmp(a, "--ms-pq"))
            o.ms_pq = v;
        else
            bad = 1;
    }
    if (bad || !o.bundle || o.npq <= 0 || o.ndepth <= 0 || o.queries < 1 || o.iters < 0 ||
        o.iters > 1000) {
        fprintf(stderr, "usage: bench_pq_recall BUNDLE_DIR [--pq-bytes 96,192] [--queries 200] "
                        "[--depths 10,20,50,100,200] [--threads 0] [--seed 1] "
                        "[--sample-rows N] [--iters N] [--ms-pq PREFIX_disk.index]\n"
                        "  (depths >= 10: the share of the true top 10 among the D best by PQ)\n");
        return 2;
    }
    ann_bundle b = { 0 };
    ann_gt gt = { 0 };
    ann_vecsrc *src = NULL;
    float *queries = NULL;
    int rc = ann_bundle_open(o.bundle, &b);
    if (!rc)
        rc = ann_bundle_queries(&b, &queries);
    if (!rc)
        rc = ann_bundle_gt(&b, &gt);
    if (!rc)
        rc = ann_bundle_base(&b, &src);
    if (!rc && gt.k < TRUE_K)
        rc = ann_fail(ANN_EFORMAT, "%s: ground truth depth %u is below %u", o.bundle, gt.k,
                      TRUE_K);
    if (rc) {
        fprintf(stderr, "bench_pq_recall: %s\n", ann_errmsg(rc));
        return 1;
    }
    uint32_t nq = (uint32_t)o.queries < b.nq ? (uint32_t)o.queries : b.nq;
    int max_depth = 0;
    for (int d = 0; d < o.ndepth; d++)
        if (o.depths[d] > max_depth)
            max_depth = o.depths[d];
    if ((uint64_t)max_depth > b.n)
        max_depth = (int)b.n;
    int nt = o.threads > 0 ? o.threads : ann_ncores();
    pq_params sp;
    pq_params_default(&sp, b.dim);
    if (o.sample_rows) { /* the row cap instead of the build's caps */
        sp.sample_max_rows = o.sample_rows;
        sp.sample_max_bytes = o.sample_rows * b.dim * sizeof(float);
    }
    printf("bundle %s: n %llu, dim %u, %s; first %u queries; true top %u from gt.ibin; ",
           b.name, (unsigned long long)b.n, b.dim, ann_metric_name(b.metric), nq, TRUE_K);
    if (o.ms_pq)
        printf("codebook and codes of %s (Microsoft DiskANN)\n", o.ms_pq);
    else
        printf("training sample %llu rows, %u k-means iterations\n",
               (unsigned long long)pq_sample_rows(&sp, b.n, b.dim), o.iters ? (unsigned)o.iters : sp.iters);
    printf("%8s %9s %9s %9s", "pq_bytes", "train_s", "encode_s", "scan_s");
    for (int d = 0; d < o.ndepth; d++)
        printf("  in_top%-5d", o.depths[d]);
    printf("\n");
    for (int p = 0; p < o.npq && !rc; p++) {
        pq_params pp = sp; /* the sample's caps as printed above */
        pp.pq_bytes = (uint32_t)o.pq[p];
        pp.seed = o.seed;
        if (o.iters)
            pp.iters = (uint32_t)o.iters;
        pp.threads = nt;
        pq_codebook *cb = NULL;
        uint8_t *codes = NULL;
        double t0 = ann_mono_s();
        rc = o.ms_pq ? msda_pq_load(o.ms_pq, src, pp.pq_bytes, &cb, &codes, NULL)
                     : pq_train(src, &pp, &cb);
        double t1 = ann_mono_s();
        if (!rc && !o.ms_pq) {
            codes = malloc((size_t)b.n * cb->m);
            rc = codes ? pq_encode_vecsrc(cb, src, nt, codes) : ann_fail(-ENOMEM, "bench_pq_recall: no memory");
        }
        double t2 = ann_mono_s();
        scan_job j = { .cb = cb, .codes = codes, .n = b.n, .queries = queries, .gt = &gt,
                       .depths = o.depths, .ndepth = o.ndepth, .max_depth = max_depth };
        j.table = calloc((size_t)nt, sizeof *j.table);
        j.dist = calloc((size_t)nt, sizeof *j.dist);
        j.top_d = calloc((size_t)nt, sizeof *j.top_d);
        j.top_i = calloc((size_t)nt, sizeof *j.top_i);
        j.ids = calloc((size_t)nt, sizeof *j.ids);
        j.found = calloc((size_t)nq * o.ndepth, sizeof *j.found);
        if (!rc && (!j.table || !j.dist || !j.top_d || !j.top_i || !j.ids || !j.found))
            rc = ann_fail(-ENOMEM, "bench_pq_recall: no memory");
        for (int w = 0; !rc && w < nt; w++) {
            j.table[w] = malloc(pq_table_floats(cb) * sizeof(float));
            j.dist[w] = malloc((size_t)b.n * sizeof(float));
            j.top_d[w] = malloc((size_t)max_depth * sizeof(float));
            j.top_i[w] = malloc((size_t)max_depth * sizeof(uint32_t));
            j.ids[w] = malloc((size_t)max_depth * sizeof(uint32_t));
            if (!j.table[w] || !j.dist[w] || !j.top_d[w] || !j.top_i[w] || !j.ids[w])
                rc = ann_fail(-ENOMEM, "bench_pq_recall: no memory");
        }
        if (!rc)
            rc = ann_parallel_for(nt, nq, 1, scan_range, &j);
        double t3 = ann_mono_s();
        if (!rc) {
            printf("%8u %9.1f %9.1f %9.1f", cb->m, t1 - t0, t2 - t1, t3 - t2);
            for (int d = 0; d < o.ndepth; d++) {
                uint64_t f = 0;
                for (uint32_t q = 0; q < nq; q++)
                    f += j.found[(uint64_t)q * o.ndepth + (uint64_t)d];
                printf("  %11.4f", (double)f / ((double)nq * TRUE_K));
            }
            printf("\n");
            fflush(stdout);
        }
        for (int w = 0; w < nt && j.table; w++) {
            free(j.table[w]);
            free(j.dist ? j.dist[w] : NULL);
            free(j.top_d ? j.top_d[w] : NULL);
            free(j.top_i ? j.top_i[w] : NULL);
            free(j.ids ? j.ids[w] : NULL);
        }
        free(j.table);
        free(j.dist);
        free(j.top_d);
        free(j.top_i);
        free(j.ids);
        free(j.found);
        free(codes);
        pq_codebook_destroy(cb);
    }
    if (rc)
        fprintf(stderr, "bench_pq_recall: %s\n", ann_errmsg(rc));
    ann_vecsrc_destroy(src);
    free(queries);
    ann_gt_free(&gt);
    ann_bundle_close(&b);
    return rc ? 1 : 0;
}
