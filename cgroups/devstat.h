/*
 * devstat.h: read requests and bytes at the block device that holds a
 * path, and the process's own read_bytes, sampled before and after a
 * measured phase so the harness can report device reads per query beside
 * the engine's own count.
 *
 *   devstat_dev dev;
 *   int rc = devstat_resolve(index_dir, NULL, &dev);  ANN_EUNSUPPORTED on
 *                                                     tmpfs/overlay: dev.reason
 *   devstat_sample a, b;  devstat_delta d;
 *   devstat_sample_take(rc == 0 ? &dev : NULL, 0, &a);
 *   ... run the queries ...
 *   devstat_sample_take(rc == 0 ? &dev : NULL, 0, &b);
 *   devstat_diff(&a, &b, &d);
 *   json_t *j = devstat_delta_json(&d, nq, "device");  reads_per_query, ...
 *
 * Resolution: stat(path).st_dev -> <sys>/dev/block/M:m; a partition is
 * replaced by its parent disk (the "partition" attribute), a device-mapper
 * device with exactly one slave by that slave, a loop device by the device
 * holding its backing file, repeatedly.  The steps taken are recorded in
 * devstat_dev.chain ("vda1 -> vda").  Device counters are machine-wide: any
 * other process reading the same disk is counted too, so keep windows short
 * (or use the cgroup's own counters, cgroup.h).
 *
 * Thread-safety: all functions are reentrant.
 */
#ifndef ANNLAB_CGROUPS_DEVSTAT_H
#define ANNLAB_CGROUPS_DEVSTAT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DEVSTAT_PATH_BYTES 4096
#define DEVSTAT_SECTOR_BYTES 512 /* unit of the sector fields of block/stat */

/* The resolved device; plain data, copyable. */
typedef struct devstat_dev {
    unsigned fs_major, fs_minor; /* st_dev of the path */
    unsigned major, minor;       /* the whole disk counted */
    char name[64];               /* kernel name of that disk, "vda" */
    char stat_path[DEVSTAT_PATH_BYTES]; /* <sys>/dev/block/M:m/stat */
    char chain[256];             /* resolution steps, "vda1 -> vda" */
    char reason[256];            /* why not resolvable, on ANN_EUNSUPPORTED */
} devstat_dev;

/*
 * Find the block device holding path.
 *   path:     any existing file or directory.
 *   sys_root: "/sys" when NULL (a fake tree in tests).
 * Returns 0; -errno naming path when it cannot be stat'ed; ANN_EUNSUPPORTED
 * when its filesystem has no block device (tmpfs, overlay, network: major 0)
 * or the device has no stat file, with out->reason set (also the detail
 * message).
 */
int devstat_resolve(const char *path, const char *sys_root, devstat_dev *out);

/* dev_t of the resolved disk, for cg_group_read(). */
dev_t devstat_devt(const devstat_dev *dev);

/* One sample of the counters. */
typedef struct devstat_sample {
    bool dev_known;             /* device fields valid */
    uint64_t dev_read_ios;      /* completed read requests (field 1) */
    uint64_t dev_read_merges;   /* reads merged into others (field 2) */
    uint64_t dev_read_sectors;  /* 512-byte sectors read (field 3) */
    uint64_t dev_read_ms;       /* ms spent reading (field 4) */
    bool proc_known;            /* /proc/<pid>/io fields valid */
    uint64_t proc_read_bytes;   /* bytes this process caused to be fetched
                                   from storage ("read_bytes") */
    uint64_t proc_rchar;        /* bytes passed to read-like calls ("rchar") */
    uint64_t t_ns;              /* CLOCK_MONOTONIC */
} devstat_sample;

/*
 * Take a sample.  dev: NULL to skip the device; pid: 0 for this process
 * (/proc/self/io), else that process's /proc/<pid>/io.  A missing io file
 * (no task I/O accounting) leaves proc_known false and is not an error.
 * Returns 0, or -errno / ANN_EFORMAT naming the stat file that could not be
 * read or parsed.
 */
int devstat_sample_take(const devstat_dev *dev, pid_t pid, devstat_sample *out);

/* Parse the 11-to-17-field body of a block "stat" file.  ANN_EFORMAT when
 * fewer than 4 fields; names `what` in the message. */
int devstat_parse_stat(const char *text, const char *what, devstat_sample *out);

/* Differences after - before. */
typedef struct devstat_delta {
    bool dev_known;
    uint64_t read_ios;
    uint64_t read_bytes;       /* sectors * 512 */
    uint64_t read_ms;
    bool proc_known;
    uint64_t proc_read_bytes;
    uint64_t proc_rchar;
    uint64_t elapsed_ns;
} devstat_delta;

/* Counters that went backwards (device reset) give 0. */
void devstat_diff(const devstat_sample *before, const devstat_sample *after, devstat_delta *out);

/*
 * The cell's "device" object: {"reads_per_query", "bytes_per_query",
 * "source", "read_ios", "read_bytes", "proc_read_bytes",
 * "proc_read_bytes_per_query", "elapsed_s"}; per-query figures divide by
 * nqueries (null when nqueries is 0 or the device was unknown).
 * source: what the figures are, e.g. "device vda" or "cgroup blkio".
 * New reference, NULL on allocation failure.
 */
json_t *devstat_delta_json(const devstat_delta *d, uint64_t nqueries, const char *source);

#endif
