/*
 * measure.c: page-cache eviction and residency, process memory, device and
 * process I/O counters, thread pinning and the machine description.
 *
 * Eviction follows DESIGN.md's cold protocol: fsync (DONTNEED cannot drop
 * dirty pages), posix_fadvise(DONTNEED) on each file, a global drop of
 * caches when the kernel permits it, then mincore over a fresh mapping of
 * each file to report how much remains resident, since DONTNEED is advice
 * and pages mapped by another process stay.
 */
#include "harness/measure.h"

#include "engines/core/distance.h"
#include "engines/core/status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

typedef int (*file_fn)(const char *path, const struct stat *st, void *user);

/* Apply fn to each regular file under dir, recursively. */
static int walk_files(const char *dir, file_fn fn, void *user)
{
    DIR *d = opendir(dir);
    if (!d)
        return ann_fail_errno("%s: opendir", dir);
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            rc = walk_files(path, fn, user);
        else if (S_ISREG(st.st_mode))
            rc = fn(path, &st, user);
    }
    closedir(d);
    return rc;
}

typedef struct evict_acc {
    uint64_t files, bytes, resident, advise_failed;
} evict_acc;

static int evict_one(const char *path, const struct stat *st, void *user)
{
    evict_acc *a = user;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ann_fail_errno("%s: open for eviction", path);
    fsync(fd); /* read-only files may refuse; DONTNEED still drops clean pages */
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
        a->advise_failed++;
    close(fd);
    a->files++;
    a->bytes += (uint64_t)st->st_size;
    return 0;
}

static int resident_one(const char *path, const struct stat *st, void *user)
{
    evict_acc *a = user;
    a->files++;
    a->bytes += (uint64_t)st->st_size;
    if (st->st_size == 0)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ann_fail_errno("%s: open for mincore", path);
    int rc = 0;
    long page = sysconf(_SC_PAGESIZE);
    size_t len = (size_t)st->st_size;
    size_t pages = (len + (size_t)page - 1) / (size_t)page;
    unsigned char *vec = malloc(pages);
    void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (!vec || map == MAP_FAILED) {
        rc = vec ? ann_fail_errno("%s: mmap for mincore", path) : ann_fail(-ENOMEM, "mincore: no memory");
        goto out;
    }
    if (mincore(map, len, vec) != 0) {
        rc = ann_fail_errno("%s: mincore", path);
        goto out;
    }
    for (size_t i = 0; i < pages; i++)
        if (vec[i] & 1)
            a->resident += (uint64_t)page;
out:
    if (map != MAP_FAILED)
        munmap(map, len);
    free(vec);
    close(fd);
    return rc;
}

int harness_resident_bytes(const char *dir, uint64_t *resident, uint64_t *total)
{
    evict_acc a = { 0 };
    int rc = walk_files(dir, resident_one, &a);
    *resident = a.resident;
    *total = a.bytes;
    return rc;
}

int harness_evict_dir(const char *dir, int drop_global, json_t **report)
{
    evict_acc a = { 0 };
    int rc = walk_files(dir, evict_one, &a);
    if (rc)
        return rc;
    char drop[256] = "not requested";
    if (drop_global) {
        sync();
        int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "1", 1) != 1)
            snprintf(drop, sizeof drop, "not permitted: %s", strerror(errno));
        else
            snprintf(drop, sizeof drop, "done");
        if (fd >= 0)
            close(fd);
    }
    uint64_t resident = 0, total = 0;
    rc = harness_resident_bytes(dir, &resident, &total);
    if (rc)
        return rc;
    *report = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s}", "method",
                        a.advise_failed ? "fsync+fadvise(DONTNEED) (advice refused on some files)"
                                        : "fsync+fadvise(DONTNEED)",
                        "files", (json_int_t)a.files, "bytes", (json_int_t)a.bytes,
                        "resident_bytes_after", (json_int_t)resident, "advise_failed",
                        (json_int_t)a.advise_failed, "drop_caches", drop);
    return *report ? 0 : ann_fail(-ENOMEM, "eviction report: no memory");
}

static int warm_one(const char *path, const struct stat *st, void *user)
{
    (void)st;
    uint64_t *bytes = user;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ann_fail_errno("%s: open for warming", path);
    static __thread char buf[1 << 20];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        *bytes += (uint64_t)r;
    int rc = r < 0 ? ann_fail_errno("%s: read", path) : 0;
    close(fd);
    return rc;
}

int harness_warm_dir(const char *dir, uint64_t *bytes)
{
    *bytes = 0;
    return walk_files(dir, warm_one, bytes);
}

int harness_rss_reset(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = write(fd, "5", 1) == 1 ? 0 : -errno;
    close(fd);
    return rc;
}

int harness_mem_read(harness_mem *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return ann_fail_errno("/proc/self/status: open");
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
            m->peak_rss_bytes = kb * 1024;
        else if (sscanf(line, "RssAnon: %llu kB", &kb) == 1)
            m->anon_bytes = kb * 1024;
        else if (sscanf(line, "RssFile: %llu kB", &kb) == 1)
            m->file_bytes = kb * 1024;
    }
    fclose(f);
    return 0;
}

int harness_dev_resolve(const char *path, harness_dev *dev)
{
    memset(dev, 0, sizeof *dev);
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(dev->source, sizeof dev->source, "unavailable: %s: %s", path, strerror(errno));
        return 0;
    }
    unsigned maj = major(st.st_dev), min = minor(st.st_dev);
    char sys[128], real[PATH_MAX];
    snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", maj, min);
    if (!realpath(sys, real)) {
        snprintf(dev->source, sizeof dev->source, "unavailable: %u:%u is not a block device", maj,
                 min);
        return 0;
    }
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/partition", real);
    if (access(probe, F_OK) == 0) { /* a partition: its disk is the parent directory */
        char *slash = strrchr(real, '/');
        if (slash)
            *slash = '\0';
    }
    const char *base = strrchr(real, '/');
    snprintf(dev->name, sizeof dev->name, "%s", base ? base + 1 : real);
    snprintf(dev->source, sizeof dev->source, "/sys/block/%s/stat", dev->name);
    dev->ok = access(dev->source, R_OK) == 0;
    if (!dev->ok)
        snprintf(dev->source, sizeof dev->source, "unavailable: /sys/block/%s/stat unreadable",
                 dev->name);
    return 0;
}

int harness_dev_read(const harness_dev *dev, uint64_t *reads, uint64_t *bytes)
{
    *reads = *bytes = 0;
    if (!dev->ok)
        return ANN_EUNSUPPORTED;
    FILE *f = fopen(dev->source, "re");
    if (!f)
        return ann_fail_errno("%s: open", dev->source);
    unsigned long long r = 0, merged = 0, sectors = 0;
    int n = fscanf(f, "%llu %llu %llu", &r, &merged, &sectors);
    fclose(f);
    if (n != 3)
        return ann_fail(ANN_EFORMAT, "%s: unexpected format", dev->source);
    *reads = r;
    *bytes = sectors * 512;
    return 0;
}

int harness_proc_io(uint64_t *read_bytes, uint64_t *syscr)
{
    *read_bytes = *syscr = 0;
    FILE *f = fopen("/proc/self/io", "re");
    if (!f)
        return -errno;
    char line[128];
    unsigned long long v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "read_bytes: %llu", &v) == 1)
            *read_bytes = v;
        else if (sscanf(line, "syscr: %llu", &v) == 1)
            *syscr = v;
    }
    fclose(f);
    return 0;
}

static void read_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fgets(buf, (int)len, f))
        buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

/* Filesystem type of path from the longest matching /proc/mounts entry. */
static void fs_type(const char *path, char *buf, size_t len)
{
    char real[PATH_MAX];
    snprintf(buf, len, "unknown");
    if (!realpath(path, real))
        return;
    FILE *f = fopen("/proc/mounts", "re");
    if (!f)
        return;
    char dev[512], mnt[1024], type[64];
    size_t best = 0;
    while (fscanf(f, "%511s %1023s %63s %*[^\n]", dev, mnt, type) == 3) {
        size_t n = strlen(mnt);
        if (strncmp(real, mnt, n) == 0 && (real[n] == '/' || real[n] == '\0' || n == 1) &&
            n >= best) {
            best = n;
            snprintf(buf, len, "%s", type);
        }
    }
    fclose(f);
}

int harness_pin_thread(unsigned i)
{
    hwloc_topology_t topo = NULL;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        if (topo)
            hwloc_topology_destroy(topo);
        return ANN_EUNSUPPORTED;
    }
    int rc = 0;
    int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_obj_t pu = npu > 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)(i % (unsigned)npu)) : NULL;
    if (!pu || hwloc_set_cpubind(topo, pu->cpuset, HWLOC_CPUBIND_THREAD) != 0)
        rc = ANN_EUNSUPPORTED;
    hwloc_topology_destroy(topo);
    return rc;
}

json_t *harness_machine_describe(const char *index_dir)
{
    json_t *m = json_object();
    hwloc_topology_t topo = NULL;
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        topo = NULL;
    }
    if (topo) {
        json_t *t = json_pack("{s:i, s:i, s:i, s:i}", "packages",
                              hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE), "numa_nodes",
                              hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE), "cores",
                              hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE), "pus",
                              hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
        hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
        const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
        json_object_set_new(m, "cpu_model", json_string(model ? model : "unknown"));
        hwloc_obj_t l3 = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L3CACHE, 0);
        if (l3 && l3->attr)
            json_object_set_new(t, "l3_bytes", json_integer((json_int_t)l3->attr->cache.size));
        json_object_set_new(m, "topology", t);
        hwloc_topology_destroy(topo);
    }
    json_object_set_new(m, "simd", json_string(ann_dist_active()->name));
    struct utsname u;
    if (uname(&u) == 0) {
        char k[400];
        snprintf(k, sizeof k, "%s %s %s", u.sysname, u.release, u.machine);
        json_object_set_new(m, "kernel", json_string(k));
        json_object_set_new(m, "hostname", json_string(u.nodename));
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    json_object_set_new(m, "memory_bytes", json_integer((json_int_t)pages * page));
    if (index_dir) {
        harness_dev dev;
        harness_dev_resolve(index_dir, &dev);
        char path[256], model[256] = "", rot[16] = "";
        if (dev.ok) {
            snprintf(path, sizeof path, "/sys/block/%s/device/model", dev.name);
            read_line(path, model, sizeof model);
            snprintf(path, sizeof path, "/sys/block/%s/queue/rotational", dev.name);
            read_line(path, rot, sizeof rot);
        }
        char fs[64];
        fs_type(index_dir, fs, sizeof fs);
        json_object_set_new(m, "disk",
                            json_pack("{s:s, s:s, s:s, s:s, s:s}", "device", dev.ok ? dev.name : "",
                                      "model", model[0] ? model : "unknown", "rotational",
                                      rot[0] ? rot : "unknown", "stat_source", dev.source,
                                      "filesystem", fs));
    }
    /* the commit of the source tree the binary was built in (build/annlab -> ..) */
    char exe[PATH_MAX], cmd[PATH_MAX + 200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(cmd, sizeof cmd,
             "cd '%s' 2>/dev/null && git rev-parse HEAD 2>/dev/null && git status --porcelain "
             "--untracked-files=no 2>/dev/null | head -1",
             exe[0] ? exe : ".");
    FILE *g = strchr(exe, '\'') ? NULL : popen(cmd, "r");
    if (g) {
        char commit[128] = "", dirty[256] = "";
        if (fgets(commit, sizeof commit, g))
            commit[strcspn(commit, "\n")] = '\0';
        int is_dirty = fgets(dirty, sizeof dirty, g) != NULL;
        pclose(g);
        json_object_set_new(m, "git_commit", json_string(commit[0] ? commit : "unknown"));
        json_object_set_new(m, "git_dirty", json_boolean(is_dirty));
    }
    return m;
}
