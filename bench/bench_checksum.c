/*
 * bench_checksum.c: what annlab's record checksums cost.  Every record
 * annlab reads from its own formats is checked (crc32c.h): a sector-file
 * node (4 KiB at 768-d and 960-d), a DiskANN record (a node with its
 * neighbours' codes, a full vector), a flat block at open.  This prints the
 * time of one ann_checksum over a record of each size (the sizes of R 64,
 * 96-byte-code indexes at 768 and 960 dimensions) and the throughput,
 * median of 7 repeats, beside memcpy of the same bytes in the same run
 * (what touching the record costs anyway).  Multiply by a cell's records
 * read per query (engine_stats.reads) for the per-query cost.
 *
 *   make bench && ./build/bench/bench_checksum [repeats]
 *
 * Records are taken round-robin from a 64 MiB buffer, so each is read
 * from memory (not L1) as a freshly read record would be, though a record
 * just read from the device or the page cache is usually in L2/L3.
 */
#include "engines/core/crc32c.h"
#include "engines/core/ticks.h"
#include "bench/benchutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_BYTES (64u << 20)

static volatile uint32_t sink;

/* Median ns per record of fn over records of len bytes (0: memcpy). */
static double ns_per_record(const uint8_t *pool, uint8_t *dst, size_t len, int crc, int repeats)
{
    size_t per_pool = POOL_BYTES / len;
    size_t calls = (size_t)(256u << 20) / len; /* 256 MiB a repeat */
    double *r = malloc((size_t)repeats * sizeof *r);
    if (!r)
        return -1;
    for (int t = 0; t < repeats; t++) {
        uint32_t acc = 0;
        double t0 = ann_mono_s();
        for (size_t i = 0; i < calls; i++) {
            const uint8_t *rec = pool + (i % per_pool) * len;
            if (crc) {
                acc ^= ann_checksum(rec, len);
            } else {
                memcpy(dst, rec, len);
                acc ^= dst[i % len];
            }
        }
        r[t] = (ann_mono_s() - t0) * 1e9 / (double)calls;
        sink = acc;
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
    uint8_t *pool = malloc(POOL_BYTES), *dst = malloc(2u << 20);
    if (!pool || !dst) {
        fprintf(stderr, "bench_checksum: out of memory\n");
        return 1;
    }
    uint64_t s = 1;
    for (size_t i = 0; i < POOL_BYTES; i++)
        pool[i] = (uint8_t)((s = s * 6364136223846793005ULL + 1) >> 56);
    static const struct {
        size_t len;
        const char *what;
    } recs[] = {
        { 3072, "full vector, 768-d (diskann-record, hnsw-record)" },
        { 3840, "full vector, 960-d" },
        { 3332, "sector-file node, 768-d, R 64 (4*dim + 4 + 4*R)" },
        { 4100, "sector-file node, 960-d, R 64" },
        { 6500, "diskann-record node record, R 64, 96-byte codes" },
        { 1u << 20, "flat: 1 MiB of a block (flat checks every block at open)" },
    };
    printf("# ann_checksum (%s) against memcpy of the same bytes; median of %d repeats; "
           "records round-robin over %u MiB\n",
           ann_crc32c_impl(), repeats, POOL_BYTES >> 20);
    printf("%9s %12s %10s %12s %8s  %s\n", "bytes", "checksum ns", "GB/s", "memcpy ns", "x memcpy",
           "record");
    for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) {
        double c = ns_per_record(pool, dst, recs[i].len, 1, repeats);
        double m = ns_per_record(pool, dst, recs[i].len, 0, repeats);
        printf("%9zu %12.1f %10.2f %12.1f %8.2f  %s\n", recs[i].len, c, (double)recs[i].len / c, m,
               c / m, recs[i].what);
    }
    free(pool);
    free(dst);
    return 0;
}
