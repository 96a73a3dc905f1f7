/*
 * bench_generate.c: how fast the synthetic generator makes rows, against
 * writing the same bytes to a file in the same run (which of the two bounds
 * `annlab dataset generate`), and what the manifest statistics cost.
 *
 *   make bench && ./build/bench/bench_generate [repeats] [rows]
 *
 * Figures are medians of `repeats` runs (default 5) over `rows` rows
 * (default 20,000) of the two preset shapes (768-d cosine, 960-d L2);
 * "gen/write" is the generator's row rate over the write rate.  The
 * file is written with the bundle writer (ann_vecwriter_*) under $TMPDIR,
 * fsync included, then removed.
 */
#include "datasets/generate.h"
#include "datasets/stats.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/core/ticks.h"
#include "bench/benchutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

static int bench_shape(uint32_t dim, ann_metric metric, uint64_t rows, int repeats)
{
    int rc = 0;
    ann_gen_params p = {.dim = dim, .metric = metric, .seed = 42};
    ann_generator *g = NULL;
    float *x = malloc((size_t)rows * dim * sizeof *x);
    double *gen_s = malloc((size_t)repeats * sizeof *gen_s);
    double *write_s = malloc((size_t)repeats * sizeof *write_s);
    double *stats_s = malloc((size_t)repeats * sizeof *stats_s);
    char path[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/annlab-bench-generate-%d.fbin", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    if (!x || !gen_s || !write_s || !stats_s) {
        rc = 1;
        goto out;
    }
    if ((rc = ann_generator_create(&p, &g)))
        goto out;
    for (int r = 0; r < repeats; r++) {
        double t0 = ann_mono_s();
        if ((rc = ann_generator_rows(g, ANN_GEN_BASE, 0, rows, x)))
            goto out;
        gen_s[r] = ann_mono_s() - t0;

        ann_vecwriter w;
        t0 = ann_mono_s();
        if ((rc = ann_vecwriter_open(&w, path, dim, ANN_ELEM_F32)))
            goto out;
        if ((rc = ann_vecwriter_append(&w, x, rows))) {
            ann_vecwriter_abort(&w);
            goto out;
        }
        if ((rc = ann_vecwriter_finish(&w)))
            goto out;
        write_s[r] = ann_mono_s() - t0;
        unlink(path);

        ann_data_stats st;
        t0 = ann_mono_s();
        if ((rc = ann_stats_compute(x, 1000, dim, metric, 100, &st)))
            goto out;
        stats_s[r] = ann_mono_s() - t0;
    }
    double gs = median(gen_s, repeats), ws = median(write_s, repeats);
    double mib = (double)rows * dim * sizeof(float) / (1024.0 * 1024.0);
    printf("%5u %-7s %12.0f %10.1f %12.0f %10.1f %8.2f %10.3f\n", dim, ann_metric_name(metric),
           (double)rows / gs, mib / gs, (double)rows / ws, mib / ws, ws / gs,
           median(stats_s, repeats));
out:
    if (rc)
        fprintf(stderr, "bench_generate: %s\n", ann_errmsg(rc));
    ann_generator_destroy(g);
    free(x);
    free(gen_s);
    free(write_s);
    free(stats_s);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 5;
    long long rows = argc > 2 ? atoll(argv[2]) : 20000;
    if (repeats < 1)
        repeats = 1;
    if (rows < 1000)
        rows = 1000;
    printf("# generator vs writing the same rows (fsync'd), median of %d repeats, %lld rows; "
           "statistics of 1,000 rows\n",
           repeats, rows);
    printf("%5s %-7s %12s %10s %12s %10s %8s %10s\n", "dim", "metric", "gen rows/s", "gen MiB/s",
           "write rows/s", "write MiB/s", "gen/write", "stats s");
    int rc = bench_shape(768, ANN_METRIC_COSINE, (uint64_t)rows, repeats);
    rc |= bench_shape(960, ANN_METRIC_L2, (uint64_t)rows, repeats);
    return rc;
}
