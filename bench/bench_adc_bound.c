/*
 * bench_adc_bound.c: what dropping part-summed PQ codes saves on a bundle's
 * own data (pq_adc_distance_bounded and pq_adc_distance_floored against
 * pq_adc_distance, one thread).
 *
 *   make bench && ./build/bench/bench_adc_bound BUNDLE_DIR [--pq-bytes 96]
 *       [--codes 100000] [--list 100] [--queries 200] [--repeats 5] [--seed 1]
 *
 * The setting is diskann-record's scan of the pending inserts: the graph
 * walk has filled a candidate list of L entries, and every pending code is
 * offered to it.  Here the list is the `list` best codes of the whole base
 * by ADC (what a walk that found them all would hold; a real walk holds
 * worse ones, so its bound drops fewer codes), and the codes offered are
 * those of the last `codes` rows of the base (on a topic-ordered stand-in,
 * as in the update table, topics of their own).  Three scans: every code
 * summed in full; each code dropped once its partial sum passes the bound
 * (pq_adc_distance_bounded); the same with the floor of the subspaces left
 * (pq_adc_distance_floored, pq_table_floor); and the floored scan behind
 * the byte-table filter of pq_lb.h (64 codes at a time, transposed; only
 * the codes it passes are summed), as diskann-record's pending scan does
 * since 2026-12-07 when the CPU has AVX-512 VBMI.  For each query the
 * scans run `repeats` times, interleaved; the figures are the medians of
 * the per-code times over the repeats (the floor's and the byte table's
 * computation, once a query, included).
 * Also printed: after how many subspaces the codes were dropped.  Every code
 * is checked in every scan: one the bound keeps must get the full
 * distance's bits, one it drops a value above the bound and not above its
 * full sum (exit 1 otherwise).  Needs an L2 or cosine bundle (the
 * inner-product table has negative entries and is never bounded).
 */
#include "datasets/bundle.h"
#include "engines/core/parallel.h"
#include "engines/core/pq.h"
#include "engines/core/pq_lb.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
#include "engines/core/topk.h"
#include "bench/benchutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEP PQ_BOUND_STEP
#define SCANS 4
#define MAX_STOPS 64u /* m <= 1024 */

typedef struct {
    const char *bundle;
    int pq_bytes, codes, list, queries, repeats;
    unsigned long long seed;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (o->bundle)
                return -1;
            o->bundle = a;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (!strcmp(a, "--pq-bytes"))
            o->pq_bytes = atoi(v);
        else if (!strcmp(a, "--codes"))
            o->codes = atoi(v);
        else if (!strcmp(a, "--list"))
            o->list = atoi(v);
        else if (!strcmp(a, "--queries"))
            o->queries = atoi(v);
        else if (!strcmp(a, "--repeats"))
            o->repeats = atoi(v);
        else if (!strcmp(a, "--seed"))
            o->seed = strtoull(v, NULL, 10);
        else
            return -1;
    }
    if (!o->bundle || o->pq_bytes < 1 || o->pq_bytes > 1024 || o->codes < 1 || o->list < 1 ||
        o->queries < 1 || o->repeats < 1)
        return -1;
    return 0;
}

/* The number of subspaces summed before pq_adc_distance_floored drops the
 * code (floor NULL: pq_adc_distance_bounded), or 0 when it sums it in full:
 * the same partial sums in the same order. */
static uint32_t stop_point(const float *table, const uint8_t *code, uint32_t m, float bound,
                           const float *floor)
{
    const float hi = floor ? pq_floor_margin(bound, m) : bound;
    float s[4] = { 0, 0, 0, 0 };
    uint32_t j = 0;
    for (; j + STEP <= m; j += STEP) {
        for (uint32_t g = j; g < j + STEP; g++)
            s[g % 4] += table[(size_t)g * PQ_KSUB + code[g]];
        float partial = (s[0] + s[1]) + (s[2] + s[3]);
        if ((floor ? partial + floor[j + STEP] : partial) > hi)
            return j + STEP;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o = { .pq_bytes = 96, .codes = 100000, .list = 100, .queries = 200, .repeats = 5,
               .seed = 1 };
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_adc_bound BUNDLE_DIR [--pq-bytes 96] [--codes 100000] "
                        "[--list 100] [--queries 200] [--repeats 5] [--seed 1]\n");
        return 2;
    }
    static const char *const names[SCANS] = { "full sum", "bounded", "floored",
                                               "byte filter + floored" };
    ann_bundle b = { 0 };
    ann_vecsrc *src = NULL;
    float *queries = NULL;
    pq_codebook *cb = NULL;
    uint8_t *codes = NULL, *blocks = NULL, *qt = NULL;
    float *table = NULL, *floor = NULL, *all = NULL, *top_d = NULL, *out[SCANS] = { NULL };
    uint32_t *top_i = NULL;
    double *ns = NULL, sum[SCANS] = { 0 };
    uint64_t stops[2][MAX_STOPS + 1] = { { 0 } }, kept = 0, wrong[SCANS] = { 0 }, passed = 0;
    int rc = ann_bundle_open(o.bundle, &b);
    if (!rc)
        rc = ann_bundle_queries(&b, &queries);
    if (!rc)
        rc = ann_bundle_base(&b, &src);
    if (!rc && b.metric != ANN_METRIC_L2 && b.metric != ANN_METRIC_COSINE)
        rc = ann_fail(ANN_EUNSUPPORTED, "%s: metric %s: bounded ADC needs l2 or cosine", o.bundle,
                      ann_metric_name(b.metric));
    if (rc)
        goto out;
    const uint64_t n = b.n;
    const uint32_t nq = (uint32_t)o.queries < b.nq ? (uint32_t)o.queries : b.nq;
    const uint64_t nc = (uint64_t)o.codes < n ? (uint64_t)o.codes : n;
    const uint32_t list = (uint64_t)o.list < n ? (uint32_t)o.list : (uint32_t)n;
    pq_params pp;
    pq_params_default(&pp, b.dim);
    pp.pq_bytes = (uint32_t)o.pq_bytes;
    pp.seed = o.seed;
    pp.threads = ann_ncores();
    rc = pq_train(src, &pp, &cb);
    if (rc)
        goto out;
    const uint32_t m = cb->m;
    codes = malloc((size_t)n * m);
    table = malloc(pq_table_floats(cb) * sizeof *table);
    floor = malloc(pq_floor_len(m) * sizeof *floor);
    all = malloc((size_t)n * sizeof *all);
    top_d = malloc((size_t)list * sizeof *top_d);
    top_i = malloc((size_t)list * sizeof *top_i);
    ns = malloc((size_t)SCANS * (size_t)o.repeats * sizeof *ns);
    const uint64_t nblocks = (nc + PQ_LB_LANES - 1) / PQ_LB_LANES;
    blocks = calloc(nblocks, PQ_LB_BLOCK_BYTES(m));
    qt = malloc((size_t)m * PQ_KSUB);
    int nomem = !codes || !table || !floor || !all || !top_d || !top_i || !ns || !blocks || !qt;
    for (int k = 0; k < SCANS; k++)
        nomem |= !(out[k] = malloc((size_t)nc * sizeof *out[k]));
    if (nomem) {
        rc = ann_fail(-ENOMEM, "bench_adc_bound: no memory");
        goto out;
    }
    rc = pq_encode_vecsrc(cb, src, pp.threads, codes);
    if (rc)
        goto out;
    const uint8_t *scan = codes + (size_t)(n - nc) * m;
    for (uint64_t i = 0; i < nc; i++) /* the filter's copy: blocks of 64, transposed */
        pq_lb_set_lane(blocks + (i / PQ_LB_LANES) * PQ_LB_BLOCK_BYTES(m), m,
                       (uint32_t)(i % PQ_LB_LANES), scan + (size_t)i * m);
    printf("bundle %s: n %llu, dim %u, %s; pq %u bytes; %u queries; the last %llu codes "
           "offered to a list of the %u best of all %llu; %d repeats, one thread; byte "
           "filter kernel: %s\n",
           b.name, (unsigned long long)n, b.dim, ann_metric_name(b.metric), m, nq,
           (unsigned long long)nc, list, (unsigned long long)n, o.repeats,
           pq_lb_fast() ? "AVX-512 VBMI" : "scalar");
    volatile float sink = 0;
    for (uint32_t q = 0; q < nq; q++) {
        pq_table_compute(cb, queries + (size_t)q * b.dim, table);
        pq_adc_scan(table, m, codes, n, all);
        ann_topk t;
        ann_topk_init(&t, top_d, top_i, list);
        for (uint64_t i = 0; i < n; i++)
            ann_topk_push(&t, all[i], (uint32_t)i);
        const float bound = ann_topk_bound(&t);
        for (int r = 0; r < o.repeats; r++) {
            double t0 = ann_mono_s(), t1, t2, t3, t4;
            for (uint64_t i = 0; i < nc; i++)
                out[0][i] = pq_adc_distance(table, scan + (size_t)i * m, m);
            t1 = ann_mono_s();
            for (uint64_t i = 0; i < nc; i++)
                out[1][i] = pq_adc_distance_bounded(table, scan + (size_t)i * m, m, bound);
            t2 = ann_mono_s();
            pq_table_floor(table, m, floor);
            for (uint64_t i = 0; i < nc; i++)
                out[2][i] = pq_adc_distance_floored(table, scan + (size_t)i * m, m, bound, floor);
            t3 = ann_mono_s();
            pq_table_floor(table, m, floor);
            pq_lb lb;
            pq_lb_build(table, m, qt, &lb);
            const int32_t limit = pq_lb_limit(&lb, bound);
            const float dropped = pq_float_up(bound);
            uint64_t pass = 0;
            for (uint64_t blk = 0; blk < nblocks; blk++) {
                uint64_t mask = pq_lb_block(&lb, blocks + blk * PQ_LB_BLOCK_BYTES(m), limit);
                const uint64_t i0 = blk * PQ_LB_LANES;
                const uint8_t *b = blocks + blk * PQ_LB_BLOCK_BYTES(m);
                for (uint64_t l = 0; l < PQ_LB_LANES && i0 + l < nc; l++)
                    out[3][i0 + l] = dropped;
                for (; mask; mask &= mask - 1) {
                    const uint32_t lane = (uint32_t)__builtin_ctzll(mask);
                    if (i0 + lane < nc) {
                        out[3][i0 + lane] = pq_adc_distance_floored_strided(
                            table, b + pq_lb_pos(lane), PQ_LB_LANES, m, bound, floor);
                        pass++;
                    }
                }
            }
            t4 = ann_mono_s();
            if (r == 0)
                passed += pass;
            const double tk[SCANS + 1] = { t0, t1, t2, t3, t4 };
            for (int k = 0; k < SCANS; k++) {
                ns[k * o.repeats + r] = (tk[k + 1] - tk[k]) * 1e9 / (double)nc;
                sink += out[k][nc / 2];
            }
        }
        for (int k = 0; k < SCANS; k++)
            sum[k] += bench_median(ns + k * o.repeats, o.repeats);
        for (uint64_t i = 0; i < nc; i++) {
            const uint8_t *c = scan + (size_t)i * m;
            float d = pq_adc_distance(table, c, m);
            kept += d <= bound;
            for (int k = 1; k < SCANS; k++)
                wrong[k] += d <= bound ? memcmp(&d, &out[k][i], sizeof d) != 0
                                       : !(out[k][i] > bound && out[k][i] <= d);
            stops[0][stop_point(table, c, m, bound, NULL) / STEP]++;
            stops[1][stop_point(table, c, m, bound, floor) / STEP]++;
        }
    }
    for (int k = 0; k < SCANS; k++)
        printf("%-20s %7.2f ns a code (median over repeats, mean over queries): %.2fx the full "
               "sum's speed\n",
               names[k], sum[k] / nq, sum[0] / sum[k]);
    printf("kept %llu of %llu codes offered (%.4f%%); the byte filter passed %llu (%.4f%%)\n",
           (unsigned long long)kept, (unsigned long long)nc * nq,
           100.0 * (double)kept / ((double)nc * nq), (unsigned long long)passed,
           100.0 * (double)passed / ((double)nc * nq));
    for (int h = 0; h < 2; h++) {
        printf("%s: dropped after s subspaces:", names[h + 1]);
        for (uint32_t s = 1; s * STEP <= m; s++)
            printf(" %u: %.3f", s * STEP, (double)stops[h][s] / ((double)nc * nq));
        printf("; summed in full: %.3f\n", (double)stops[h][0] / ((double)nc * nq));
    }
    (void)sink;
    for (int k = 1; k < SCANS; k++)
        if (wrong[k] && !rc)
            rc = ann_fail(ANN_EINTERNAL, "bench_adc_bound: %s: %llu codes broke the contract",
                          names[k], (unsigned long long)wrong[k]);
out:
    if (rc)
        fprintf(stderr, "bench_adc_bound: %s\n", ann_errmsg(rc));
    free(codes);
    free(blocks);
    free(qt);
    free(table);
    free(floor);
    free(all);
    for (int k = 0; k < SCANS; k++)
        free(out[k]);
    free(top_d);
    free(top_i);
    free(ns);
    pq_codebook_destroy(cb);
    ann_vecsrc_destroy(src);
    free(queries);
    ann_bundle_close(&b);
    return rc ? 1 : 0;
}
