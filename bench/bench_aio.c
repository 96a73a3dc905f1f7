/*
 * bench_aio.c: what one O_DIRECT 4 KiB read costs through annlab's read
 * layer (engines/core/aio.h), by how reads are grouped into submissions and
 * how many submissions are kept in flight.  The sector engine's search
 * schedules (round, pipeline, submit_group) are choices on exactly these
 * two axes, so this is the device model they run against.
 *
 *   make bench && ./build/bench/bench_aio FILE [--backends io_uring,libaio]
 *       [--batches 1,4,8,16] [--groups 1,2,4] [--cycles 2000] [--repeats 3]
 *
 * FILE is any large file on the device to measure (an index.sector, a
 * bundle's base.fbin); it is opened O_DIRECT and read at random 4 KiB-aligned
 * offsets, never written.  For each backend x batch x groups the program
 * keeps `groups` submissions of `batch` reads in flight: it waits until the
 * oldest submission's reads have all completed, then submits a new batch in
 * its place, `cycles` times.  It prints, as medians over the repeats:
 *   submit_us   time inside one ann_aio_submit call (the system call and,
 *               on a virtual disk, the notification of the device)
 *   cycle_us    wall time per submission in the steady state
 *   read_us     cycle_us / batch: the wall time one read costs at that depth
 *   cpu_us      this thread's CPU (user + kernel) per read
 * groups 1 is DiskANN's round (submit W, wait for all W); groups > 1 is a
 * pipeline that submits while earlier reads are in flight.
 */
#include "engines/core/aio.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
#include "bench/benchutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST 8
#define MAX_INFLIGHT 256u
#define READ_BYTES 4096u

typedef struct {
    const char *file;
    const char *backends[MAX_LIST];
    int nbackend;
    int batches[MAX_LIST], nbatch, groups[MAX_LIST], ngroup;
    int cycles, repeats;
} opts;

static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A random 4 KiB-aligned offset below sectors * 4096 (xorshift64*). */
static uint64_t next_offset(uint64_t *state, uint64_t sectors)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return ((x * 0x2545F4914F6CDD1Dull) >> 11) % sectors * READ_BYTES;
}

typedef struct {
    double submit_us, cycle_us, cpu_us_per_read;
} pass_result;

/* Give group g's batch reads new random offsets and submit them as one
 * submission, timing the call into *submit_s. */
static int submit_group(ann_aio_queue *q, ann_aio_req *reqs, int g, int batch, uint64_t sectors,
                        uint64_t *rng, double *submit_s)
{
    ann_aio_req *ptrs[MAX_INFLIGHT];
    for (int b = 0; b < batch; b++) {
        ann_aio_req *r = &reqs[g * batch + b];
        r->offset_bytes = next_offset(rng, sectors);
        ptrs[b] = r;
    }
    double t0 = ann_mono_s();
    int rc = ann_aio_submit(q, ptrs, (uint32_t)batch);
    *submit_s += ann_mono_s() - t0;
    return rc;
}

/* One pass: groups submissions of batch reads kept in flight, cycles times. */
static int pass(ann_aio_queue *q, uint8_t *bufs, uint64_t sectors, int batch, int groups,
                int cycles, uint64_t *rng, pass_result *out)
{
    static ann_aio_req reqs[MAX_INFLIGHT];
    ann_aio_req *done[MAX_INFLIGHT];
    int left[MAX_INFLIGHT] = { 0 }; /* reads of group g not yet completed */
    double submit_s = 0;
    for (int i = 0; i < batch * groups; i++)
        reqs[i] = (ann_aio_req){ .buf = bufs + (size_t)i * READ_BYTES, .len_bytes = READ_BYTES,
                                 .user = (uint64_t)(i / batch) };
    /* fill: one submission per group */
    for (int g = 0; g < groups; g++) {
        int rc = submit_group(q, reqs, g, batch, sectors, rng, &submit_s);
        if (rc)
            return rc;
        left[g] = batch;
    }
    double t0 = ann_mono_s(), c0 = thread_cpu_s();
    int oldest = 0;
    for (int cyc = 0; cyc < cycles; cyc++) {
        while (left[oldest] > 0) {
            int got = ann_aio_reap(q, 1, done, MAX_INFLIGHT);
            if (got < 0)
                return got;
            for (int i = 0; i < got; i++) {
                int32_t res = done[i]->result;
                if (res != (int32_t)READ_BYTES)
                    return ann_fail(res < 0 ? res : -EIO, "read at %llu returned %d",
                                    (unsigned long long)done[i]->offset_bytes, res);
                left[done[i]->user]--;
            }
        }
        int rc = submit_group(q, reqs, oldest, batch, sectors, rng, &submit_s);
        if (rc)
            return rc;
        left[oldest] = batch;
        oldest = (oldest + 1) % groups;
    }
    double wall = ann_mono_s() - t0, cpu = thread_cpu_s() - c0;
    /* drain */
    while (ann_aio_inflight(q) > 0)
        if (ann_aio_reap(q, ann_aio_inflight(q), done, MAX_INFLIGHT) < 0)
            break;
    out->submit_us = submit_s / (double)(groups + cycles) * 1e6;
    out->cycle_us = wall / cycles * 1e6;
    out->cpu_us_per_read = cpu / ((double)cycles * batch) * 1e6;
    return 0;
}

int main(int argc, char **argv)
{
    opts o = { .cycles = 2000, .repeats = 3 };
    static char def_backends[] = "io_uring,libaio";
    o.nbackend = bench_parse_words(def_backends, o.backends, MAX_LIST);
    o.nbatch = bench_parse_ints("1,4,8,16", o.batches, MAX_LIST, 1, 256);
    o.ngroup = bench_parse_ints("1,2,4", o.groups, MAX_LIST, 1, 256);
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (o.file)
                bad = 1;
            o.file = a;
            continue;
        }
        if (!v) {
            bad = 1;
            break;
        }
        i++;
        if (!strcmp(a, "--backends"))
            o.nbackend = bench_parse_words(argv[i], o.backends, MAX_LIST);
        else if (!strcmp(a, "--batches"))
            o.nbatch = bench_parse_ints(v, o.batches, MAX_LIST, 1, 256);
        else if (!strcmp(a, "--groups"))
            o.ngroup = bench_parse_ints(v, o.groups, MAX_LIST, 1, 256);
        else if (!strcmp(a, "--cycles"))
            o.cycles = atoi(v);
        else if (!strcmp(a, "--repeats"))
            o.repeats = atoi(v);
        else
            bad = 1;
    }
    if (bad || !o.file || o.nbatch <= 0 || o.ngroup <= 0 || o.nbackend <= 0 || o.cycles < 1 ||
        o.repeats < 1) {
        fprintf(stderr, "usage: bench_aio FILE [--backends io_uring,libaio] "
                        "[--batches 1,4,8,16] [--groups 1,2,4] [--cycles 2000] [--repeats 3]\n"
                        "  (each batch and group count 1..256; batch x groups at most %u)\n",
                MAX_INFLIGHT);
        return 2;
    }
    int direct = 0;
    int fd = ann_aio_open(o.file, 1, &direct);
    if (fd < 0) {
        fprintf(stderr, "bench_aio: %s\n", ann_errmsg(fd));
        return 1;
    }
    off_t size = lseek(fd, 0, SEEK_END);
    uint64_t sectors = size > 0 ? (uint64_t)size / READ_BYTES : 0;
    if (sectors < 1024) {
        fprintf(stderr, "bench_aio: %s: %lld bytes; need at least 4 MiB to read at random\n",
                o.file, (long long)size);
        close(fd);
        return 1;
    }
    uint8_t *bufs = ann_aio_buf_alloc((size_t)MAX_INFLIGHT * READ_BYTES);
    double *rs = malloc((size_t)o.repeats * 3 * sizeof *rs);
    if (!bufs || !rs) {
        fprintf(stderr, "bench_aio: no memory\n");
        return 1;
    }
    printf("file %s: %llu sectors, O_DIRECT %s, %d cycles, %d repeats (medians)\n", o.file,
           (unsigned long long)sectors, direct ? "yes" : "no (refused; reads are buffered)",
           o.cycles, o.repeats);
    printf("%-9s %6s %7s %9s %9s %8s %7s\n", "backend", "batch", "groups", "submit_us",
           "cycle_us", "read_us", "cpu_us");
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    int status = 0;
    for (int k = 0; k < o.nbackend; k++) {
        ann_aio_kind kind;
        if (ann_aio_kind_parse(o.backends[k], &kind)) {
            fprintf(stderr, "bench_aio: %s\n", ann_errmsg(ANN_EPARAM));
            status = 2;
            break;
        }
        for (int bi = 0; bi < o.nbatch; bi++) {
            for (int gi = 0; gi < o.ngroup; gi++) {
                int batch = o.batches[bi], groups = o.groups[gi];
                if ((unsigned)(batch * groups) > MAX_INFLIGHT) {
                    printf("%-9s %6d %7d  (skipped: more than %u in flight)\n",
                           o.backends[k], batch, groups, MAX_INFLIGHT);
                    continue;
                }
                ann_aio_opts ao = { .kind = kind, .strict = 1, .fd = fd,
                                    .depth = (uint32_t)(batch * groups) };
                ann_aio_queue *q = NULL;
                int rc = ann_aio_queue_create(&ao, &q);
                if (rc) {
                    printf("%-9s %6d %7d  (unavailable: %s)\n", o.backends[k], batch, groups,
                           ann_errmsg(rc));
                    continue;
                }
                for (int r = 0; r < o.repeats && !rc; r++) {
                    pass_result pr;
                    rc = pass(q, bufs, sectors, batch, groups, o.cycles, &rng, &pr);
                    rs[r] = pr.submit_us;
                    rs[o.repeats + r] = pr.cycle_us;
                    rs[2 * o.repeats + r] = pr.cpu_us_per_read;
                }
                ann_aio_queue_destroy(q);
                if (rc) {
                    fprintf(stderr, "bench_aio: %s\n", ann_errmsg(rc));
                    status = 1;
                    continue;
                }
                double sub = bench_median(rs, o.repeats),
                       cyc = bench_median(rs + o.repeats, o.repeats),
                       cpu = bench_median(rs + 2 * o.repeats, o.repeats);
                printf("%-9s %6d %7d %9.1f %9.1f %8.2f %7.2f\n", o.backends[k], batch, groups,
                       sub, cyc, cyc / batch, cpu);
                fflush(stdout);
            }
        }
    }
    ann_aio_buf_free(bufs);
    free(rs);
    close(fd);
    return status;
}
