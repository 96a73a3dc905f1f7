/*
 * bench_prefetch.c: what reads in flight buy a record store's gets, the
 * mechanism behind the record engines' beam_width / reads_in_flight
 * (kv_prefetch, engines/core/kv.h).
 *
 *   bench_prefetch STORE_DIR --kv rocksdb|lmdb [--table 1] [--ids N]
 *                  [--depths 1,4,8,16] [--gets 2000] [--repeats 3] [--warm] [--direct]
 *
 * STORE_DIR is a record store (e.g. <index>/rocksdb of a diskann-record
 * index); it is opened read-only and never written.  Each pass reads
 * --gets records kv_key_u32(table, id) with ids drawn uniformly from
 * [0, --ids) (the same ids for every depth of a repeat), in groups of
 * `depth`: the group's records but the first are hinted with kv_prefetch,
 * then all are read with kv_get, as a beam round does.  Before each pass
 * the store's files are evicted from the page cache (posix_fadvise
 * DONTNEED, cgroups/evict.h); with --warm they are read once instead, so
 * the pass measures what a hint costs when nothing is to be read.  Depths
 * are interleaved within each repeat.  --direct (RocksDB only) opens the
 * store with kv_options.direct_reads: each get reads the device with
 * O_DIRECT, outside the page cache, which tells the page cache's share of a
 * cold get's kernel time from the block request's.  The store has no block
 * cache here, so a hinted record is read twice (hint and get) and depths
 * above 1 say nothing with --direct.
 *
 * Printed per depth, medians over the repeats: wall time per get, the
 * process's CPU per get (user and kernel; RocksDB's helper threads
 * included), bytes the process fetched from storage per get
 * (/proc/self/io read_bytes), and the speed-up of the wall time over depth 1.
 */
#include "bench/benchutil.h"
#include "cgroups/evict.h"
#include "engines/core/kv.h"
#include "engines/core/status.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_DEPTHS 16
#define MAX_REPEATS 32

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void cpu_s(double *user, double *sys)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    *user = (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6;
    *sys = (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

/* read_bytes of /proc/self/io, or 0 when unreadable. */
static uint64_t io_read_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    unsigned long long v = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "read_bytes: %llu", &v) == 1)
            break;
    fclose(f);
    return v;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_prefetch STORE_DIR --kv rocksdb|lmdb [--table 1] [--ids N] "
                    "[--depths 1,4,8,16] [--gets 2000] [--repeats 3] [--warm] "
                    "[--direct]\n");
    exit(2);
}

typedef struct {
    double wall, user, sys, bytes;
} pass_result;

/* One pass of gets at one depth; 0 or a negative code. */
static int pass(kv_store *s, uint8_t table, const uint32_t *ids, int gets, int depth,
                pass_result *out)
{
    kv_reader *r = NULL;
    int rc = kv_reader_create(s, &r);
    if (rc)
        return rc;
    rc = kv_reader_begin(r);
    if (rc) {
        kv_reader_destroy(r);
        return rc;
    }
    double u0, s0, u1, s1, t0 = wall_s();
    cpu_s(&u0, &s0);
    uint64_t b0 = io_read_bytes();
    for (int i = 0; i < gets && !rc; i += depth) {
        int nb = depth < gets - i ? depth : gets - i;
        uint8_t keys[64 * KV_KEY_U32_BYTES];
        for (int j = 1; j < nb; j++)
            kv_key_u32(keys + (size_t)(j - 1) * KV_KEY_U32_BYTES, table, ids[i + j]);
        if (nb > 1)
            kv_prefetch(r, keys, KV_KEY_U32_BYTES, (size_t)nb - 1);
        for (int j = 0; j < nb && !rc; j++) {
            uint8_t key[KV_KEY_U32_BYTES];
            kv_val v = { 0 };
            rc = kv_get(r, key, kv_key_u32(key, table, ids[i + j]), &v);
            kv_val_release(&v);
        }
    }
    out->wall = wall_s() - t0;
    cpu_s(&u1, &s1);
    out->user = u1 - u0;
    out->sys = s1 - s0;
    out->bytes = (double)(io_read_bytes() - b0);
    kv_reader_end(r);
    kv_reader_destroy(r);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-')
        usage();
    const char *dir = argv[1], *kv = NULL;
    long table = 1, n_ids = 0, gets = 2000, repeats = 3;
    int depths[MAX_DEPTHS] = { 1, 4, 8, 16 }, n_depths = 4, warm = 0, direct = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--warm")) {
            warm = 1;
            continue;
        }
        if (!strcmp(a, "--direct")) {
            direct = 1;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--kv"))
            kv = v;
        else if (!strcmp(a, "--table"))
            table = strtol(v, NULL, 10);
        else if (!strcmp(a, "--ids"))
            n_ids = strtol(v, NULL, 10);
        else if (!strcmp(a, "--gets"))
            gets = strtol(v, NULL, 10);
        else if (!strcmp(a, "--repeats"))
            repeats = strtol(v, NULL, 10);
        else if (!strcmp(a, "--depths")) {
            n_depths = bench_parse_ints(v, depths, MAX_DEPTHS, 1, 64);
            if (n_depths <= 0) {
                fprintf(stderr, "bench_prefetch: --depths '%s': integers 1..64\n", v);
                return 2;
            }
        } else
            usage();
    }
    kv_options o = { .profile = KV_PROFILE_EMBEDDED, .read_only = 1, .direct_reads = direct };
    if (!kv || kv_backend_parse(kv, &o.backend) != 0) {
        fprintf(stderr, "bench_prefetch: --kv: rocksdb or lmdb\n");
        return 2;
    }
    if (table < 0 || table > 255 || gets < 1 || gets > 10000000 || repeats < 1 ||
        repeats > MAX_REPEATS) {
        fprintf(stderr, "bench_prefetch: --table 0..255, --gets 1..1e7, --repeats 1..%d\n",
                MAX_REPEATS);
        return 2;
    }
    kv_store *s = NULL;
    int rc = kv_open(dir, &o, &s);
    if (rc) {
        fprintf(stderr, "bench_prefetch: %s\n", ann_errmsg(rc));
        return 1;
    }
    if (n_ids <= 0) { /* the table's size, counted */
        kv_reader *r = NULL;
        kv_iter *it = NULL;
        uint8_t prefix = (uint8_t)table;
        kv_val k, v;
        if (kv_reader_create(s, &r) || kv_reader_begin(r) || kv_iter_create(r, &prefix, 1, &it)) {
            fprintf(stderr, "bench_prefetch: %s: cannot count table %ld\n", dir, table);
            return 1;
        }
        while (kv_iter_next(it, &k, &v) == 1)
            n_ids++;
        kv_iter_destroy(it);
        kv_reader_end(r);
        kv_reader_destroy(r);
    }
    if (n_ids <= 0 || n_ids > UINT32_MAX) {
        fprintf(stderr, "bench_prefetch: %s: table %ld has no records (--ids N)\n", dir, table);
        return 1;
    }
    uint32_t *ids = malloc((size_t)gets * sizeof *ids);
    static double wall[MAX_DEPTHS][MAX_REPEATS], user[MAX_DEPTHS][MAX_REPEATS],
        sys[MAX_DEPTHS][MAX_REPEATS], bytes[MAX_DEPTHS][MAX_REPEATS];
    if (!ids)
        return 1;
    printf("store %s (%s%s), table %ld, ids 0..%ld, %ld gets a pass, %s, %ld repeats (medians)\n",
           dir, kv, direct ? ", O_DIRECT reads" : "", table, n_ids - 1, gets,
           warm ? "warm" : "cold (evicted before each pass)", repeats);
    for (int rep = 0; rep < repeats; rep++) {
        uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(rep + 1);
        for (long i = 0; i < gets; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            ids[i] = (uint32_t)((seed >> 33) % (uint64_t)n_ids);
        }
        for (int d = 0; d < n_depths; d++) {
            evict_params ep = evict_params_default();
            ep.drop_caches = false;
            evict_report er;
            rc = warm ? evict_warm_dir(dir, &er) : evict_cold_dir(dir, &ep, &er);
            pass_result pr = { 0 };
            if (!rc)
                rc = pass(s, (uint8_t)table, ids, (int)gets, depths[d], &pr);
            if (rc) {
                fprintf(stderr, "bench_prefetch: %s\n", ann_errmsg(rc));
                return 1;
            }
            wall[d][rep] = pr.wall * 1e6 / (double)gets;
            user[d][rep] = pr.user * 1e6 / (double)gets;
            sys[d][rep] = pr.sys * 1e6 / (double)gets;
            bytes[d][rep] = pr.bytes / (double)gets;
        }
    }
    printf("depth  wall_us/get  user_us/get  sys_us/get  read_KB/get  speedup\n");
    double med[MAX_DEPTHS], base = 0;
    for (int d = 0; d < n_depths; d++) {
        med[d] = bench_median(wall[d], (int)repeats);
        if (depths[d] == 1)
            base = med[d];
    }
    for (int d = 0; d < n_depths; d++) {
        printf("%5d  %11.1f  %11.1f  %10.1f  %11.1f", depths[d], med[d],
               bench_median(user[d], (int)repeats), bench_median(sys[d], (int)repeats),
               bench_median(bytes[d], (int)repeats) / 1024.0);
        if (base > 0)
            printf("  %7.2f\n", base / med[d]);
        else
            printf("  %7s\n", "-"); /* no depth 1 to compare with */
    }
    free(ids);
    return kv_close(s) ? 1 : 0;
}
