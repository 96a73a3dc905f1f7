/*
 * measure.h: what the harness observes outside the engine: page-cache state
 * of the index files, process memory, device and process I/O counters, and
 * the machine description.
 *
 * These are the harness's own, minimal versions; cgroups/ (memory caps,
 * cgroup I/O counters) supersedes them where it offers the same figure.
 */
#ifndef ANNLAB_HARNESS_MEASURE_H
#define ANNLAB_HARNESS_MEASURE_H

#include <jansson.h>
#include <stdint.h>

/*
 * Cold protocol: for every regular file under dir, fsync then
 * posix_fadvise(POSIX_FADV_DONTNEED); then, when drop_global, sync and
 * write 1 to /proc/sys/vm/drop_caches (recorded as "done" or the reason it
 * was not permitted); finally count the bytes still resident with mincore.
 * *report (new object, caller decrefs) says what was done: {"method",
 * "files", "bytes", "resident_bytes_after", "drop_caches"}.
 * Returns 0 or a negative code (a file that cannot be opened).
 */
int harness_evict_dir(const char *dir, int drop_global, json_t **report);

/* Bytes of dir's regular files resident in the page cache (mincore). */
int harness_resident_bytes(const char *dir, uint64_t *resident, uint64_t *total);

/* Warm protocol, first step: read every regular file under dir once, so it
 * is in the page cache.  *bytes receives how much was read. */
int harness_warm_dir(const char *dir, uint64_t *bytes);

/* Reset the process's peak RSS (writes "5" to /proc/self/clear_refs).
 * Returns 0, or -errno when the kernel refuses (the peak then covers the
 * whole process life; callers record that). */
int harness_rss_reset(void);

typedef struct harness_mem {
    uint64_t peak_rss_bytes; /* VmHWM */
    uint64_t anon_bytes;     /* RssAnon at the time of reading */
    uint64_t file_bytes;     /* RssFile at the time of reading */
} harness_mem;

/* Read VmHWM, RssAnon and RssFile from /proc/self/status. */
int harness_mem_read(harness_mem *m);

/* Block-device counters for the disk holding a path. */
typedef struct harness_dev {
    char name[64];      /* "vda"; empty when unresolved */
    char source[128];   /* "/sys/dev/block/253:0/stat" or why unavailable */
    int ok;
} harness_dev;

/*
 * Resolve the block device holding path: st_dev -> /sys/dev/block/M:m,
 * a partition resolved to its whole disk.  On failure (a virtual or
 * network filesystem) dev->ok = 0 and dev->source says why; returns 0
 * either way, so a cell still runs and records the reason.
 */
int harness_dev_resolve(const char *path, harness_dev *dev);

/* Read completed reads and bytes read (sectors x 512) of a resolved device. */
int harness_dev_read(const harness_dev *dev, uint64_t *reads, uint64_t *bytes);

/* /proc/self/io: read_bytes (storage reads of this process) and syscr. */
int harness_proc_io(uint64_t *read_bytes, uint64_t *syscr);

/*
 * Describe this machine: hwloc topology counts and CPU model, SIMD kernels
 * in use, kernel, the disk and filesystem holding index_dir, the git commit
 * of the source tree (when git is available).  New object; NULL on ENOMEM.
 */
json_t *harness_machine_describe(const char *index_dir);

/*
 * Pin the calling thread to the i-th processing unit (modulo their number)
 * through hwloc.  Returns 0, or a negative code when binding is refused
 * (callers record it and go on unpinned).
 */
int harness_pin_thread(unsigned i);

#endif
