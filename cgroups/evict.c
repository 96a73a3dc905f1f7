/*
 * evict.c: put an index's files in a known page-cache state and prove it.
 *
 * Cold follows the usual recipe for per-file eviction without rebooting:
 * fsync (DONTNEED skips dirty pages), posix_fadvise(POSIX_FADV_DONTNEED)
 * over the whole file, and, where permitted, a global drop of clean page
 * cache through /proc/sys/vm/drop_caches.  Warm reads each file once,
 * sequentially.  Either way the result is measured, not assumed: mincore()
 * over a read-only shared mapping reports which pages are resident, without
 * faulting any in.  Pages another process holds mapped survive DONTNEED;
 * the residency figure shows it when that happens.
 */
#include "cgroups/evict.h"

#include "cgroups/sysfs.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EVICT_CHUNK_BYTES ((uint64_t)1 << 30) /* mincore window */
#define EVICT_READ_BYTES ((size_t)1 << 20)    /* warm read size */
#define EVICT_PATH_BYTES 4096

evict_params evict_params_default(void)
{
    evict_params p = { .drop_caches = true, .drop_path = NULL };
    return p;
}

/* ---- file lists --------------------------------------------------------- */

typedef struct evict_list {
    char **paths;
    size_t n, cap;
} evict_list;

static void list_fini(evict_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
    l->paths = NULL;
    l->n = l->cap = 0;
}

static int list_push(evict_list *l, const char *path)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **p = realloc(l->paths, cap * sizeof *p);
        if (!p)
            return ann_fail(-ENOMEM, "evict: out of memory listing files");
        l->paths = p;
        l->cap = cap;
    }
    l->paths[l->n] = strdup(path);
    if (!l->paths[l->n])
        return ann_fail(-ENOMEM, "evict: out of memory listing files");
    l->n++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add path: a regular file itself, a directory's regular files recursively;
 * other types (sockets, fifos) are ignored. */
static int list_add(evict_list *l, const char *path, int depth)
{
    struct stat st;
    DIR *d = NULL;
    int rc = 0;
    if (stat(path, &st) != 0) {
        /* below the root, a file deleted since readdir (a live store's
         * compacted table) is simply not there */
        if (!(depth > 0 && errno == ENOENT))
            rc = ann_fail_errno("%s", path);
        goto out;
    }
    if (S_ISREG(st.st_mode)) {
        rc = list_push(l, path);
        goto out;
    }
    if (!S_ISDIR(st.st_mode))
        goto out;
    if (depth > 64) {
        rc = ann_fail(-ELOOP, "%s: directories nested too deeply", path);
        goto out;
    }
    d = opendir(path);
    if (!d) {
        if (!(depth > 0 && errno == ENOENT))
            rc = ann_fail_errno("%s", path);
        goto out;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char child[EVICT_PATH_BYTES];
        rc = sysfs_path(child, sizeof child, "%s/%s", path, de->d_name);
        if (!rc)
            rc = list_add(l, child, depth + 1);
        if (rc)
            goto out;
    }
out:
    if (d)
        closedir(d);
    return rc;
}

static int list_build(evict_list *l, const char *const *paths, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = list_add(l, paths[i], 0);
        if (rc)
            return rc;
    }
    qsort(l->paths, l->n, sizeof *l->paths, cmp_str);
    return 0;
}

/* ---- residency ---------------------------------------------------------- */

static int residency_fd(int fd, const char *path, uint64_t size, uint64_t *resident)
{
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *vec = NULL;
    int rc = 0;
    *resident = 0;
    if (size == 0)
        goto out;
    vec = malloc(EVICT_CHUNK_BYTES / (uint64_t)page);
    if (!vec) {
        rc = ann_fail(-ENOMEM, "%s: out of memory for the residency map", path);
        goto out;
    }
    for (uint64_t off = 0; off < size; off += EVICT_CHUNK_BYTES) {
        size_t len = (size_t)(size - off < EVICT_CHUNK_BYTES ? size - off : EVICT_CHUNK_BYTES);
        void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
        if (map == MAP_FAILED) {
            rc = ann_fail_errno("%s: mmap for mincore", path);
            goto out;
        }
        int mrc = mincore(map, len, vec);
        int merr = errno;
        munmap(map, len);
        if (mrc != 0) {
            errno = merr;
            rc = ann_fail_errno("%s: mincore", path);
            goto out;
        }
        size_t pages = (len + (size_t)page - 1) / (size_t)page;
        for (size_t i = 0; i < pages; i++) {
            if (!(vec[i] & 1))
                continue;
            uint64_t start = off + (uint64_t)i * (uint64_t)page;
            uint64_t end = start + (uint64_t)page;
            *resident += (end > size ? size : end) - start;
        }
    }
out:
    free(vec);
    return rc;
}

int evict_residency(const char *path, uint64_t *resident_bytes, uint64_t *file_bytes)
{
    struct stat st;
    int rc = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    *resident_bytes = 0;
    *file_bytes = 0;
    if (fd < 0) {
        rc = ann_fail_errno("%s", path);
        goto out;
    }
    if (fstat(fd, &st) != 0) {
        rc = ann_fail_errno("%s: fstat", path);
        goto out;
    }
    *file_bytes = (uint64_t)st.st_size;
    rc = residency_fd(fd, path, (uint64_t)st.st_size, resident_bytes);
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Sum residency over the list into *resident (and *total when non-NULL). */
static int residency_list(const evict_list *l, uint64_t *resident, uint64_t *total)
{
    *resident = 0;
    if (total)
        *total = 0;
    for (size_t i = 0; i < l->n; i++) {
        uint64_t r = 0, t = 0;
        int rc = evict_residency(l->paths[i], &r, &t);
        if (rc == -ENOENT) /* deleted since it was listed */
            continue;
        if (rc)
            return rc;
        *resident += r;
        if (total)
            *total += t;
    }
    return 0;
}

static void report_start(evict_report *out, const char *mode)
{
    memset(out, 0, sizeof *out);
    snprintf(out->mode, sizeof out->mode, "%s", mode);
}

static void report_finish(evict_report *out, uint64_t t0)
{
    out->resident_fraction =
        out->file_bytes ? (double)out->resident_after_bytes / (double)out->file_bytes : 0.0;
    out->elapsed_ns = ann_mono_ns() - t0;
}

/* ---- cold --------------------------------------------------------------- */

static int drop_one(const char *path)
{
    int rc = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) /* deleted since it was listed: nothing to drop */
            rc = ann_fail_errno("%s", path);
        goto out;
    }
    /* fsync makes the pages clean; DONTNEED leaves dirty pages in place.
     * EINVAL/EROFS: a filesystem that has nothing to sync. */
    if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
        rc = ann_fail_errno("%s: fsync", path);
        goto out;
    }
    int adv = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (adv != 0) {
        rc = ann_fail(-adv, "%s: posix_fadvise(DONTNEED): %s", path, strerror(adv));
        goto out;
    }
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

static void drop_global(const evict_params *p, evict_report *out)
{
    const char *path = p->drop_path ? p->drop_path : "/proc/sys/vm/drop_caches";
    if (!p->drop_caches) {
        snprintf(out->drop_caches_reason, sizeof out->drop_caches_reason, "disabled");
        return;
    }
    if (geteuid() != 0) {
        snprintf(out->drop_caches_reason, sizeof out->drop_caches_reason, "not root");
        return;
    }
    sync(); /* drop_caches drops clean pages only */
    int rc = sysfs_write(path, "1");
    if (rc) {
        snprintf(out->drop_caches_reason, sizeof out->drop_caches_reason, "%s", ann_errmsg(rc));
        ann_err_clear();
        return;
    }
    out->drop_caches_done = true;
}

int evict_cold_files(const char *const *paths, size_t n, const evict_params *params, evict_report *out)
{
    evict_params defaults = evict_params_default();
    const evict_params *p = params ? params : &defaults;
    evict_list l = { 0 };
    uint64_t t0 = ann_mono_ns();
    int rc = 0;

    report_start(out, "cold");
    rc = list_build(&l, paths, n);
    if (rc)
        goto out;
    out->files = (uint32_t)l.n;
    rc = residency_list(&l, &out->resident_before_bytes, &out->file_bytes);
    if (rc)
        goto out;
    for (size_t i = 0; i < l.n; i++) {
        rc = drop_one(l.paths[i]);
        if (rc)
            goto out;
    }
    out->fadvise_done = true;
    drop_global(p, out);
    rc = residency_list(&l, &out->resident_after_bytes, NULL);
    if (rc)
        goto out;
    report_finish(out, t0);
out:
    list_fini(&l);
    return rc;
}

int evict_cold_dir(const char *dir, const evict_params *params, evict_report *out)
{
    const char *paths[1] = { dir };
    return evict_cold_files(paths, 1, params, out);
}

/* ---- warm --------------------------------------------------------------- */

static int preload_one(const char *path, char *buf, uint64_t *bytes)
{
    int rc = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) /* deleted since it was listed: nothing to load */
            rc = ann_fail_errno("%s", path);
        goto out;
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    for (;;) {
        ssize_t got = read(fd, buf, EVICT_READ_BYTES);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            rc = ann_fail_errno("%s: read at %llu", path, (unsigned long long)*bytes);
            goto out;
        }
        if (got == 0)
            break;
        *bytes += (uint64_t)got;
    }
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

int evict_warm_files(const char *const *paths, size_t n, evict_report *out)
{
    evict_list l = { 0 };
    char *buf = NULL;
    uint64_t t0 = ann_mono_ns();
    int rc = 0;

    report_start(out, "warm");
    snprintf(out->drop_caches_reason, sizeof out->drop_caches_reason, "warm");
    rc = list_build(&l, paths, n);
    if (rc)
        goto out;
    out->files = (uint32_t)l.n;
    rc = residency_list(&l, &out->resident_before_bytes, &out->file_bytes);
    if (rc)
        goto out;
    buf = malloc(EVICT_READ_BYTES);
    if (!buf) {
        rc = ann_fail(-ENOMEM, "evict: out of memory for the read buffer");
        goto out;
    }
    for (size_t i = 0; i < l.n; i++) {
        rc = preload_one(l.paths[i], buf, &out->preload_bytes);
        if (rc)
            goto out;
    }
    rc = residency_list(&l, &out->resident_after_bytes, NULL);
    if (rc)
        goto out;
    report_finish(out, t0);
out:
    free(buf);
    list_fini(&l);
    return rc;
}

int evict_warm_dir(const char *dir, evict_report *out)
{
    const char *paths[1] = { dir };
    return evict_warm_files(paths, 1, out);
}

json_t *evict_report_json(const evict_report *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    bool cold = strcmp(r->mode, "cold") == 0;
    int bad = 0;
    bad |= json_object_set_new(o, "mode", json_string(r->mode));
    bad |= json_object_set_new(o, "files", json_integer(r->files));
    bad |= json_object_set_new(o, "file_bytes", json_integer((json_int_t)r->file_bytes));
    bad |= json_object_set_new(o, "resident_before_bytes", json_integer((json_int_t)r->resident_before_bytes));
    bad |= json_object_set_new(o, "resident_after_bytes", json_integer((json_int_t)r->resident_after_bytes));
    bad |= json_object_set_new(o, "resident_fraction", json_real(r->resident_fraction));
    bad |= json_object_set_new(o, "fadvise", json_boolean(r->fadvise_done));
    bad |= json_object_set_new(o, "drop_caches", json_boolean(r->drop_caches_done));
    bad |= json_object_set_new(o, "drop_caches_reason",
                               cold && !r->drop_caches_done ? json_string(r->drop_caches_reason) : json_null());
    bad |= json_object_set_new(o, "preload_bytes", json_integer((json_int_t)r->preload_bytes));
    bad |= json_object_set_new(o, "elapsed_s", json_real((double)r->elapsed_ns / 1e9));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}
