/*
 * bench_pq_train.c: where PQ training's time goes on a vector file: drawing
 * the training sample from the file (pq_sample_read) and the k-means over
 * it, each timed on its own, then the whole pq_train from the file source
 * as a build runs it.  With --cold 1 the file's pages are dropped from the
 * page cache first (posix_fadvise DONTNEED on this file only, no global
 * drop), as for a base that is not in the page cache.
 *
 *   build/bench/bench_pq_train BASE.fbin [--pq-bytes B] [--threads T]
 *       [--seed S] [--cold 0|1] [--hold 0|1] [--repeats K]
 *
 * With --hold 1 the whole base is first read into memory, as a DiskANN
 * build holds it for its graph before PQ training (artifacts.c).  Prints
 * wall and CPU seconds per step, the bytes the process read from storage
 * (/proc/self/io read_bytes) and the share of the file resident in the
 * page cache before and after each step.
 */
#include "engines/core/parallel.h"
#include "engines/core/pq.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
#include "engines/core/vecsrc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* Share of path's pages in the page cache (mincore over a mapping), or -1. */
static double resident_share(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    long pg = sysconf(_SC_PAGESIZE);
    size_t pages = ((size_t)st.st_size + (size_t)pg - 1) / (size_t)pg;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    unsigned char *vec = malloc(pages);
    double share = -1;
    if (map != MAP_FAILED && vec && mincore(map, (size_t)st.st_size, vec) == 0) {
        size_t in = 0;
        for (size_t i = 0; i < pages; i++)
            in += vec[i] & 1;
        share = (double)in / (double)pages;
    }
    if (map != MAP_FAILED)
        munmap(map, (size_t)st.st_size);
    free(vec);
    close(fd);
    return share;
}

/* Bytes this process has read from storage so far (/proc/self/io), or 0. */
static uint64_t io_read_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    unsigned long long v = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "read_bytes: %llu", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/* Drop path's clean pages from the page cache (this file only). */
static int evict(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BASE.fbin [--pq-bytes B] [--threads T] [--seed S] "
                        "[--cold 0|1] [--repeats K]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    int threads = ann_ncores(), cold = 0, reps = 1, hold = 0;
    uint32_t pq_bytes = 0;
    uint64_t seed = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--pq-bytes"))
            pq_bytes = (uint32_t)atoi(v);
        else if (!strcmp(k, "--threads"))
            threads = atoi(v);
        else if (!strcmp(k, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--cold"))
            cold = atoi(v);
        else if (!strcmp(k, "--hold"))
            hold = atoi(v);
        else if (!strcmp(k, "--repeats"))
            reps = atoi(v);
        else {
            fprintf(stderr, "bench_pq_train: unknown option %s\n", k);
            return 2;
        }
    }
    ann_vecsrc *src = NULL, *mem = NULL;
    int rc = ann_vecsrc_open_file(path, ANN_METRIC_COSINE, &src);
    if (rc) {
        fprintf(stderr, "bench_pq_train: %s\n", ann_errmsg(rc));
        return 1;
    }
    pq_params pp;
    pq_params_default(&pp, src->dim);
    if (pq_bytes)
        pp.pq_bytes = pq_bytes;
    pp.threads = threads;
    pp.seed = seed;
    uint64_t rows = pq_sample_rows(&pp, src->n, src->dim);
    float *sample = malloc(rows * src->dim * sizeof(float));
    if (!sample) {
        fprintf(stderr, "bench_pq_train: no memory for the sample\n");
        return 1;
    }
    printf("bench_pq_train: %s, n %llu, dim %u, pq_bytes %u, threads %d, sample %llu rows "
           "(%.0f MiB), %s cache\n",
           path, (unsigned long long)src->n, src->dim, pp.pq_bytes, threads,
           (unsigned long long)rows, rows * src->dim * 4.0 / 1048576.0, cold ? "cold" : "warm");
    float *all = NULL;
    if (hold) {
        double h0 = ann_mono_s();
        all = malloc(src->n * src->dim * sizeof(float));
        rc = all ? ann_vecsrc_read(src, 0, src->n, all) : -12;
        printf("  hold: whole base read into memory in %.2f s (%.2f GiB)\n", ann_mono_s() - h0,
               src->n * src->dim * 4.0 / 1073741824.0);
    }
    for (int r = 0; r < reps && rc == 0; r++) {
        pq_codebook *cb = NULL;
        if (cold)
            evict(path);
        double res0 = resident_share(path), w0 = ann_mono_s(), c0 = cpu_s();
        uint64_t io0 = io_read_bytes();
        rc = pq_sample_read(src, &pp, sample);
        double w1 = ann_mono_s(), c1 = cpu_s(), res1 = resident_share(path);
        uint64_t io1 = io_read_bytes();
        if (rc == 0)
            rc = ann_vecsrc_from_memory(sample, rows, src->dim, src->metric, &mem);
        if (rc == 0)
            rc = pq_train(mem, &pp, &cb);
        double w2 = ann_mono_s(), c2 = cpu_s();
        pq_codebook_destroy(cb);
        ann_vecsrc_destroy(mem);
        mem = NULL;
        if (rc)
            break;
        printf("  sample read      %8.2f s wall %8.2f s CPU  (file resident %.1f%% -> %.1f%%, "
               "%.0f MiB read from storage)\n",
               w1 - w0, c1 - c0, 100 * res0, 100 * res1, (io1 - io0) / 1048576.0);
        printf("  k-means (memory) %8.2f s wall %8.2f s CPU\n", w2 - w1, c2 - c1);
        if (cold)
            evict(path);
        double res2 = resident_share(path), w3 = ann_mono_s(), c3 = cpu_s();
        rc = pq_train(src, &pp, &cb);
        double w4 = ann_mono_s(), c4 = cpu_s();
        pq_codebook_destroy(cb);
        if (rc)
            break;
        printf("  pq_train (file)  %8.2f s wall %8.2f s CPU  (file resident %.1f%% before)\n",
               w4 - w3, c4 - c3, 100 * res2);
    }
    if (rc)
        fprintf(stderr, "bench_pq_train: %s\n", ann_errmsg(rc));
    free(sample);
    free(all);
    ann_vecsrc_destroy(src);
    return rc ? 1 : 0;
}
