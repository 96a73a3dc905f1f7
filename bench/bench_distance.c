/*
 * bench_distance.c: distances per second of each kernel variant (scalar,
 * avx2, avx512) for L2-squared and inner product at 128, 768 and 960
 * dimensions; median of 7 repeats, and the ratio to scalar in the same run.
 *
 *   make bench && ./build/bench/bench_distance [repeats]
 *
 * The working set (4,096 vectors) fits in L2/L3, so this measures the
 * kernels, not memory bandwidth.
 */
#include "engines/core/distance.h"
#include "engines/core/ticks.h"
#include "bench/benchutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NVEC 4096

static volatile float sink;

static double rate(ann_dist_fn fn, const float *q, const float *base, size_t dim, int repeats)
{
    double *r = malloc((size_t)repeats * sizeof *r);
    size_t passes = 20000000 / (NVEC * dim) + 1;
    for (int t = 0; t < repeats; t++) {
        float acc = 0;
        double t0 = ann_mono_s();
        for (size_t p = 0; p < passes; p++)
            for (size_t i = 0; i < NVEC; i++)
                acc += fn(q, base + i * dim, dim);
        double dt = ann_mono_s() - t0;
        sink = acc;
        r[t] = (double)(passes * NVEC) / dt;
    }
    qsort(r, (size_t)repeats, sizeof *r, bench_cmp_double);
    double med = r[repeats / 2];
    free(r);
    return med;
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 7;
    if (repeats < 1)
        repeats = 1;
    const size_t dims[] = { 128, 768, 960 };
    const char *variants[] = { "scalar", "avx2", "avx512" };
    printf("# distances/second, median of %d repeats, %d vectors; active kernel: %s\n", repeats,
           NVEC, ann_dist_active()->name);
    printf("%-8s %5s %14s %8s %14s %8s\n", "variant", "dim", "l2sq/s", "x scalar", "ip/s",
           "x scalar");
    for (size_t d = 0; d < 3; d++) {
        size_t dim = dims[d];
        float *base = malloc(NVEC * dim * sizeof(float)), *q = malloc(dim * sizeof(float));
        uint64_t s = 1;
        for (size_t i = 0; i < NVEC * dim; i++)
            base[i] = (float)((s = s * 6364136223846793005ULL + 1) >> 40) / (1 << 24);
        memcpy(q, base, dim * sizeof(float));
        double ref_l2 = 0, ref_ip = 0;
        for (size_t v = 0; v < 3; v++) {
            const ann_dist_kernels *k = ann_dist_variant(variants[v]);
            if (!k) {
                printf("%-8s %5zu %14s\n", variants[v], dim, "unsupported");
                continue;
            }
            double l2 = rate(k->l2sq, q, base, dim, repeats);
            double ip = rate(k->ip, q, base, dim, repeats);
            if (v == 0) {
                ref_l2 = l2;
                ref_ip = ip;
            }
            printf("%-8s %5zu %14.0f %8.2f %14.0f %8.2f\n", variants[v], dim, l2, l2 / ref_l2, ip,
                   ip / ref_ip);
        }
        free(base);
        free(q);
    }
    return 0;
}
