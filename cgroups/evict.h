/*
 * evict.h: cold and warm page-cache states for an index, done and then
 * verified.
 *
 * Cold: every regular file of the index is fsync'ed (so its pages are
 * clean), then posix_fadvise(POSIX_FADV_DONTNEED) drops its pages; when
 * permitted the whole page cache is dropped too (/proc/sys/vm/drop_caches,
 * "1" after sync: page cache only).  Residency is then measured with
 * mincore() over a read-only mapping of each file.
 * Warm: each file is read sequentially once (1 MiB reads, FADV_SEQUENTIAL),
 * then residency is measured the same way.  Under a memory cap smaller than
 * the index, warm residency is below 1 and the report says so.
 *
 * The report is what the harness records in each cell as "cache_eviction".
 * Thread-safety: reentrant; concurrent calls on the same files are allowed
 * but make residency figures meaningless.
 */
#ifndef ANNLAB_CGROUPS_EVICT_H
#define ANNLAB_CGROUPS_EVICT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct evict_params {
    bool drop_caches;       /* try the global drop (root only); default true */
    const char *drop_path;  /* "/proc/sys/vm/drop_caches" when NULL */
} evict_params;

/* Defaults: drop_caches = true, drop_path = NULL. */
evict_params evict_params_default(void);

typedef struct evict_report {
    char mode[8];                  /* "cold" or "warm" */
    uint32_t files;                /* regular files handled */
    uint64_t file_bytes;           /* their total size */
    uint64_t resident_before_bytes;/* resident when the call started */
    uint64_t resident_after_bytes; /* resident when it ended (mincore) */
    double resident_fraction;      /* after / file_bytes (0 when no bytes) */
    bool fadvise_done;             /* cold: DONTNEED issued on every file */
    bool drop_caches_done;         /* cold: global drop written */
    char drop_caches_reason[256];  /* "" when done; why not otherwise
                                      ("disabled", "not root", "open ...: EROFS") */
    uint64_t preload_bytes;        /* warm: bytes read */
    uint64_t elapsed_ns;           /* wall time of the whole call */
} evict_report;

/*
 * Evict files from the page cache.  paths: n regular files (a directory in
 * the list is walked recursively).  params: NULL for defaults.  A failed
 * global drop is not an error (the report says why); a file that cannot be
 * opened, synced, advised or mapped is -errno naming it.
 */
int evict_cold_files(const char *const *paths, size_t n, const evict_params *params,
                     evict_report *out);

/* evict_cold_files on every regular file under dir (recursive). */
int evict_cold_dir(const char *dir, const evict_params *params, evict_report *out);

/* Read files sequentially into the page cache, then measure residency.
 * Directories are walked.  -errno naming the file on read failure. */
int evict_warm_files(const char *const *paths, size_t n, evict_report *out);
int evict_warm_dir(const char *dir, evict_report *out);

/*
 * Resident bytes of one file (pages in the page cache * page size, the last
 * page counted up to the file size).  -errno naming the file on failure.
 */
int evict_residency(const char *path, uint64_t *resident_bytes, uint64_t *file_bytes);

/* The "cache_eviction" object: {"mode", "files", "file_bytes",
 * "resident_before_bytes", "resident_after_bytes", "resident_fraction",
 * "fadvise", "drop_caches", "drop_caches_reason", "preload_bytes",
 * "elapsed_s"}.  New reference, NULL on allocation failure. */
json_t *evict_report_json(const evict_report *r);

#endif
