/*
 * cgroup.c: per-cell memory caps through Linux control groups, v1 and v2.
 *
 * This is the mechanism behind the source article's memory-cap table: the
 * cell process joins a group whose limit counts page cache, with swap
 * excluded, before it opens the index, so an index larger than the cap must
 * be served from the device.  Detection reads this process's own group from
 * /proc/self/cgroup and nests cell groups under it (under a delegated
 * subtree the harness can write; the machine root when the process is in
 * the root group).  v1 needs two hierarchies, memory for the cap and blkio
 * for per-cell read counters; v2 has one.
 *
 * Departures: v2 groups are not given memory.oom.group (a cell is one
 * process), and a v2 parent that holds processes (and therefore cannot
 * enable controllers for children) is reported as unsupported rather than
 * reorganised: moving the harness itself into a leaf is the operator's
 * decision.
 */
#include "cgroups/cgroup.h"

#include "cgroups/sysfs.h"
#include "engines/core/owner.h"
#include "engines/core/status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CG_TEXT_BYTES (64 * 1024)

struct cg_group {
    cg_version version;
    bool owned;   /* created here: destroy removes the directories */
    bool io_watched; /* v1: a throttle rule makes blkio count reads */
    int peak_fd;  /* v2: memory.peak kept open after a reset, else -1 */
    uint64_t cap_bytes;
    char mem_parent[CG_PATH_BYTES];
    char mem_dir[CG_PATH_BYTES];
    char io_parent[CG_PATH_BYTES]; /* v1 blkio parent, "" when none */
    char io_dir[CG_PATH_BYTES];    /* v1 blkio group, v2 = mem_dir, "" when none */
};

/* ---- detection ---------------------------------------------------------- */

/* True when the comma-separated list holds item. */
static bool list_has(const char *list, size_t len, const char *item)
{
    size_t ilen = strlen(item);
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);
        if (n == ilen && memcmp(p, item, n) == 0)
            return true;
        p += n + 1;
    }
    return false;
}

/* True when the whitespace-separated text holds word. */
static bool words_have(const char *text, const char *word)
{
    size_t wlen = strlen(word);
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\n' || *p == '\t')
            p++;
        size_t n = strcspn(p, " \n\t");
        if (n == wlen && memcmp(p, word, n) == 0)
            return true;
        p += n;
    }
    return false;
}

/*
 * Parse /proc/<pid>/cgroup: "id:controllers:path" lines.  Copies the path
 * of the v1 hierarchy holding `controller` into v1_path (or "" when none)
 * and the v2 path ("0::") into v2_path (or "").
 */
static int parse_proc_cgroup(const char *text, const char *what, const char *controller,
                             char *v1_path, char *v2_path, size_t cap)
{
    int lineno = 0;
    v1_path[0] = v2_path[0] = '\0';
    for (const char *line = text; *line;) {
        lineno++;
        size_t len = strcspn(line, "\n");
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (!c1 || !c2)
            return ann_fail(ANN_EFORMAT, "%s: line %d: expected id:controllers:path", what, lineno);
        const char *path = c2 + 1;
        size_t plen = len - (size_t)(path - line);
        if (plen == 0 || path[0] != '/')
            return ann_fail(ANN_EFORMAT, "%s: line %d: path does not start with '/'", what, lineno);
        if (plen >= cap)
            return ann_fail(ANN_EFORMAT, "%s: line %d: path too long", what, lineno);
        bool is_v2 = (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1);
        char *dst = NULL;
        if (is_v2)
            dst = v2_path;
        else if (list_has(c1 + 1, (size_t)(c2 - c1 - 1), controller))
            dst = v1_path;
        if (dst) {
            memcpy(dst, path, plen);
            dst[plen] = '\0';
        }
        line += len;
        if (*line == '\n')
            line++;
    }
    return 0;
}

/* "<mount><path>", without a doubled slash for the root group. */
static int join_group(char *dst, const char *mount, const char *path)
{
    return sysfs_path(dst, CG_PATH_BYTES, "%s%s", mount, strcmp(path, "/") == 0 ? "" : path);
}

static int unsupported(cg_system *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int unsupported(cg_system *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof out->reason, fmt, ap);
    va_end(ap);
    out->version = CG_NONE;
    return ann_fail(ANN_EUNSUPPORTED, "%s", out->reason);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Writable for creating children; the reason goes to out->reason. */
static int check_writable(cg_system *out, const char *dir)
{
    if (access(dir, W_OK) == 0)
        return 0;
    int e = errno;
    return unsupported(out, "cannot create cgroups in %s: %s%s", dir, strerror(e),
                       geteuid() != 0 ? " (not root)" : "");
}

static int detect_v1(const char *root, const char *mem_path, const char *blkio_path, cg_system *out)
{
    char mount[CG_PATH_BYTES], probe[CG_PATH_BYTES];
    int rc = sysfs_path(mount, sizeof mount, "%s/memory", root);
    if (rc)
        return rc;
    rc = join_group(out->memory_parent, mount, mem_path);
    if (rc)
        return rc;
    if (!is_dir(out->memory_parent))
        return unsupported(out, "cgroup v1: this process's memory group %s is not visible at %s",
                           mem_path, out->memory_parent);
    rc = sysfs_path(probe, sizeof probe, "%s/memory.limit_in_bytes", out->memory_parent);
    if (rc)
        return rc;
    if (!sysfs_exists(probe))
        return unsupported(out, "cgroup v1: %s has no memory.limit_in_bytes", out->memory_parent);
    rc = check_writable(out, out->memory_parent);
    if (rc)
        return rc;
    out->version = CG_V1;
    rc = sysfs_path(probe, sizeof probe, "%s/memory.memsw.limit_in_bytes", out->memory_parent);
    if (rc)
        return rc;
    out->has_memsw = sysfs_exists(probe);
    rc = sysfs_path(probe, sizeof probe, "%s/memory.max_usage_in_bytes", out->memory_parent);
    if (rc)
        return rc;
    out->has_peak = sysfs_exists(probe);

    /* blkio is optional: without it, reads are counted at the device only. */
    out->io_parent[0] = '\0';
    if (blkio_path[0]) {
        char io_mount[CG_PATH_BYTES], io_dir[CG_PATH_BYTES];
        rc = sysfs_path(io_mount, sizeof io_mount, "%s/blkio", root);
        if (rc)
            return rc;
        rc = join_group(io_dir, io_mount, blkio_path);
        if (rc)
            return rc;
        rc = sysfs_path(probe, sizeof probe, "%s/blkio.throttle.io_service_bytes", io_dir);
        if (rc)
            return rc;
        if (is_dir(io_dir) && sysfs_exists(probe) && access(io_dir, W_OK) == 0) {
            memcpy(out->io_parent, io_dir, sizeof io_dir);
            out->has_io = true;
        }
    }
    return 0;
}

static int detect_v2(const char *root, const char *v2_path, cg_system *out)
{
    char mount[CG_PATH_BYTES], probe[CG_PATH_BYTES], text[1024];
    int rc = sysfs_path(probe, sizeof probe, "%s/cgroup.controllers", root);
    if (rc)
        return rc;
    if (sysfs_exists(probe))
        rc = sysfs_path(mount, sizeof mount, "%s", root);
    else
        rc = sysfs_path(mount, sizeof mount, "%s/unified", root);
    if (rc)
        return rc;
    rc = join_group(out->memory_parent, mount, v2_path);
    if (rc)
        return rc;
    rc = sysfs_path(probe, sizeof probe, "%s/cgroup.controllers", out->memory_parent);
    if (rc)
        return rc;
    if (sysfs_read(probe, text, sizeof text, true) != 0)
        return unsupported(out, "cgroup v2: this process's group %s is not visible at %s", v2_path,
                           out->memory_parent);
    if (!words_have(text, "memory"))
        return unsupported(out, "cgroup v2: the memory controller is not available in %s", probe);
    rc = check_writable(out, out->memory_parent);
    if (rc)
        return rc;
    out->version = CG_V2;
    memcpy(out->io_parent, out->memory_parent, sizeof out->io_parent);
    out->has_io = words_have(text, "io");
    rc = sysfs_path(probe, sizeof probe, "%s/memory.swap.max", out->memory_parent);
    if (rc)
        return rc;
    out->has_swap_max = sysfs_exists(probe);
    if (!out->has_swap_max) { /* the root group has no memory.swap.max of its own */
        rc = sysfs_path(probe, sizeof probe, "%s/memory.swap.current", out->memory_parent);
        if (rc)
            return rc;
        out->has_swap_max = sysfs_exists(probe) || strcmp(v2_path, "/") == 0;
    }
    rc = sysfs_path(probe, sizeof probe, "%s/memory.peak", out->memory_parent);
    if (rc)
        return rc;
    out->has_peak = sysfs_exists(probe) || strcmp(v2_path, "/") == 0;
    return 0;
}

int cg_detect(const cg_detect_params *params, cg_system *out)
{
    const char *root = params && params->cgroup_root ? params->cgroup_root : "/sys/fs/cgroup";
    const char *proc = params && params->proc_cgroup ? params->proc_cgroup : "/proc/self/cgroup";
    char *text = malloc(CG_TEXT_BYTES);
    char mem_path[CG_PATH_BYTES], blkio_path[CG_PATH_BYTES], v2_path[CG_PATH_BYTES];
    char probe[CG_PATH_BYTES];
    int rc = 0;

    memset(out, 0, sizeof *out);
    if (!text) {
        rc = ann_fail(-ENOMEM, "cg_detect: out of memory");
        goto out;
    }
    rc = sysfs_read(proc, text, CG_TEXT_BYTES, true);
    if (rc) {
        rc = unsupported(out, "cannot read %s: %s", proc, strerror(-rc));
        goto out;
    }
    rc = parse_proc_cgroup(text, proc, "memory", mem_path, v2_path, CG_PATH_BYTES);
    if (rc)
        goto out;
    rc = parse_proc_cgroup(text, proc, "blkio", blkio_path, v2_path, CG_PATH_BYTES);
    if (rc)
        goto out;

    rc = sysfs_path(probe, sizeof probe, "%s/memory", root);
    if (rc)
        goto out;
    if (mem_path[0] && is_dir(probe)) {
        rc = detect_v1(root, mem_path, blkio_path, out);
    } else if (v2_path[0]) {
        rc = detect_v2(root, v2_path, out);
    } else {
        rc = unsupported(out, "no memory cgroup controller: %s names no memory or v2 group", proc);
    }
out:
    free(text);
    return rc;
}

/* ---- groups ------------------------------------------------------------- */

static bool name_ok(const char *name)
{
    if (!name || !name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strlen(name) > 200)
        return false;
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* 1 when dir/cgroup.procs lists no process, 0 when it does, <0 on error. */
static int procs_empty(const char *dir)
{
    char path[CG_PATH_BYTES], text[256];
    int rc = sysfs_path(path, sizeof path, "%s/cgroup.procs", dir);
    if (rc)
        return rc;
    rc = sysfs_read(path, text, sizeof text, false);
    if (rc == -EFBIG)
        return 0;
    if (rc)
        return rc;
    return text[strspn(text, " \n")] == '\0';
}

/* mkdir a group directory; *made tells whether it was created. */
static int make_group_dir(const char *dir, bool *made)
{
    *made = false;
    if (mkdir(dir, 0755) == 0) {
        *made = true;
        return 0;
    }
    int e = errno;
    if (e == EACCES || e == EPERM || e == EROFS)
        return ann_fail(ANN_EUNSUPPORTED, "cannot create cgroup %s: %s", dir, strerror(e));
    if (e != EEXIST)
        return ann_fail(-e, "mkdir %s: %s", dir, strerror(e));
    int empty = procs_empty(dir);
    if (empty < 0)
        return empty;
    if (!empty)
        return ann_fail(ANN_ESTATE, "cgroup %s already exists and holds processes", dir);
    return 0;
}

static int write_in(const char *dir, const char *file, const char *text)
{
    char path[CG_PATH_BYTES];
    int rc = sysfs_path(path, sizeof path, "%s/%s", dir, file);
    return rc ? rc : sysfs_write(path, text);
}

static bool exists_in(const char *dir, const char *file)
{
    char path[CG_PATH_BYTES];
    return sysfs_path(path, sizeof path, "%s/%s", dir, file) == 0 && sysfs_exists(path);
}

/* v2: make sure the parent hands `ctrl` to its children. */
static int v2_enable(const char *parent, const char *ctrl, bool required)
{
    char path[CG_PATH_BYTES], text[1024], word[32];
    int rc = sysfs_path(path, sizeof path, "%s/cgroup.subtree_control", parent);
    if (rc)
        return rc;
    rc = sysfs_read(path, text, sizeof text, false);
    if (rc)
        return rc;
    if (words_have(text, ctrl))
        return 0;
    snprintf(word, sizeof word, "+%s", ctrl);
    rc = sysfs_write(path, word);
    if (rc && !required)
        return 0;
    if (rc == -EBUSY)
        return ann_fail(ANN_EUNSUPPORTED,
                        "cannot enable the %s controller in %s: the group holds processes "
                        "(run annlab in a leaf of a delegated subtree)",
                        ctrl, path);
    if (rc == -EACCES || rc == -EPERM || rc == -EROFS)
        return ann_fail_wrap(ANN_EUNSUPPORTED, "cgroup v2");
    return rc;
}

static int v1_set_cap(const cg_group *g, bool memsw)
{
    char cap[32];
    if (g->cap_bytes)
        snprintf(cap, sizeof cap, "%" PRIu64, g->cap_bytes);
    else
        snprintf(cap, sizeof cap, "-1");
    /* limit <= memsw.limit must hold after each write: raise memsw first
     * when lifting, lower the limit first when capping. */
    int rc = 0;
    if (memsw && !g->cap_bytes) {
        rc = write_in(g->mem_dir, "memory.memsw.limit_in_bytes", cap);
        if (rc)
            return rc;
    }
    rc = write_in(g->mem_dir, "memory.limit_in_bytes", cap);
    if (rc == -EINVAL && memsw) { /* a reused group whose memsw is below the new cap */
        rc = write_in(g->mem_dir, "memory.memsw.limit_in_bytes", cap);
        if (!rc)
            rc = write_in(g->mem_dir, "memory.limit_in_bytes", cap);
    }
    if (rc)
        return rc;
    if (memsw && g->cap_bytes)
        rc = write_in(g->mem_dir, "memory.memsw.limit_in_bytes", cap);
    if (rc)
        return rc;
    /* Reset the peak and failure counters of a reused group; fresh groups
     * start at zero, and kernels that refuse the reset lose nothing. */
    (void)write_in(g->mem_dir, "memory.max_usage_in_bytes", "0");
    (void)write_in(g->mem_dir, "memory.failcnt", "0");
    (void)write_in(g->mem_dir, "memory.memsw.failcnt", "0");
    ann_err_clear();
    return 0;
}

static int v2_set_cap(const cg_group *g)
{
    char cap[32];
    if (g->cap_bytes)
        snprintf(cap, sizeof cap, "%" PRIu64, g->cap_bytes);
    else
        snprintf(cap, sizeof cap, "max");
    int rc = write_in(g->mem_dir, "memory.max", cap);
    if (rc)
        return rc;
    if (exists_in(g->mem_dir, "memory.swap.max")) {
        rc = write_in(g->mem_dir, "memory.swap.max", "0");
        if (rc)
            return rc;
    }
    return 0;
}

int cg_group_create(const cg_system *sys, const char *name, uint64_t cap_bytes, cg_group **out)
{
    cg_group *g = NULL;
    bool made_mem = false, made_io = false;
    int rc = 0;

    *out = NULL;
    if (!sys || sys->version == CG_NONE) {
        rc = ann_fail(ANN_EUNSUPPORTED, "no usable cgroup: %s", sys ? sys->reason : "not detected");
        goto out;
    }
    if (!name_ok(name)) {
        rc = ann_fail(ANN_EPARAM, "cgroup name \"%s\": use one component of [A-Za-z0-9._-]",
                      name ? name : "(null)");
        goto out;
    }
    g = calloc(1, sizeof *g);
    if (!g) {
        rc = ann_fail(-ENOMEM, "cg_group_create: out of memory");
        goto out;
    }
    g->version = sys->version;
    g->owned = true;
    g->peak_fd = -1;
    g->cap_bytes = cap_bytes;
    memcpy(g->mem_parent, sys->memory_parent, sizeof g->mem_parent);
    rc = sysfs_path(g->mem_dir, sizeof g->mem_dir, "%s/%s", sys->memory_parent, name);
    if (rc)
        goto out;

    if (sys->version == CG_V2) {
        rc = v2_enable(sys->memory_parent, "memory", true);
        if (rc)
            goto out;
        if (sys->has_io)
            (void)v2_enable(sys->memory_parent, "io", false);
    }
    rc = make_group_dir(g->mem_dir, &made_mem);
    if (rc)
        goto out;
    rc = sys->version == CG_V1 ? v1_set_cap(g, sys->has_memsw) : v2_set_cap(g);
    if (rc)
        goto out;

    if (sys->version == CG_V2) {
        if (exists_in(g->mem_dir, "io.stat"))
            memcpy(g->io_dir, g->mem_dir, sizeof g->io_dir);
    } else if (sys->io_parent[0]) {
        memcpy(g->io_parent, sys->io_parent, sizeof g->io_parent);
        rc = sysfs_path(g->io_dir, sizeof g->io_dir, "%s/%s", sys->io_parent, name);
        if (rc)
            goto out;
        rc = make_group_dir(g->io_dir, &made_io);
        if (rc)
            goto out;
        (void)write_in(g->io_dir, "blkio.reset_stats", "1");
        ann_err_clear();
    }
    *out = g;
    g = NULL;
out:
    if (g) {
        if (made_io)
            rmdir(g->io_dir);
        if (made_mem)
            rmdir(g->mem_dir);
        free(g);
    }
    return rc;
}

const char *cg_group_path(const cg_group *g)
{
    return g->mem_dir;
}

uint64_t cg_group_cap_bytes(const cg_group *g)
{
    return g->cap_bytes;
}

int cg_group_add_pid(cg_group *g, pid_t pid)
{
    char text[32];
    snprintf(text, sizeof text, "%ld", (long)pid);
    int rc = write_in(g->mem_dir, "cgroup.procs", text);
    if (rc)
        return rc;
    if (g->version == CG_V1 && g->io_dir[0])
        rc = write_in(g->io_dir, "cgroup.procs", text);
    return rc;
}

/* Far above any device's bandwidth: the rule only switches counting on. */
#define CG_V1_WATCH_BPS ((uint64_t)1 << 50)

int cg_group_watch_device(cg_group *g, dev_t dev)
{
    char rule[64];
    if (!g->io_dir[0])
        return ann_fail(ANN_EUNSUPPORTED, "cgroup %s: no I/O controller to count reads", g->mem_dir);
    if (g->version == CG_V2)
        return 0;
    snprintf(rule, sizeof rule, "%u:%u %" PRIu64, major(dev), minor(dev), CG_V1_WATCH_BPS);
    int rc = write_in(g->io_dir, "blkio.throttle.read_bps_device", rule);
    if (rc)
        return rc;
    g->io_watched = true;
    return 0;
}

/* v1: whether the group carries a read rule (set by the parent's watch). */
static bool v1_has_read_rule(const char *io_dir)
{
    char path[CG_PATH_BYTES], text[1024];
    if (sysfs_path(path, sizeof path, "%s/blkio.throttle.read_bps_device", io_dir) != 0)
        return false;
    if (sysfs_read(path, text, sizeof text, true) != 0)
        return false;
    return text[strspn(text, " \n")] != '\0';
}

int cg_group_open_self(const cg_system *sys, cg_group **out)
{
    cg_group *g = NULL;
    int rc = 0;
    *out = NULL;
    if (!sys || sys->version == CG_NONE) {
        rc = ann_fail(ANN_EUNSUPPORTED, "no usable cgroup: %s", sys ? sys->reason : "not detected");
        goto out;
    }
    g = calloc(1, sizeof *g);
    if (!g) {
        rc = ann_fail(-ENOMEM, "cg_group_open_self: out of memory");
        goto out;
    }
    g->version = sys->version;
    g->owned = false;
    g->peak_fd = -1;
    memcpy(g->mem_dir, sys->memory_parent, sizeof g->mem_dir);
    if (sys->version == CG_V1) {
        memcpy(g->io_dir, sys->io_parent, sizeof g->io_dir);
        g->io_watched = g->io_dir[0] && v1_has_read_rule(g->io_dir);
    } else if (exists_in(g->mem_dir, "io.stat")) {
        memcpy(g->io_dir, g->mem_dir, sizeof g->io_dir);
    }
    uint64_t limit = 0;
    char path[CG_PATH_BYTES];
    rc = sysfs_path(path, sizeof path, "%s/%s", g->mem_dir,
                    sys->version == CG_V1 ? "memory.limit_in_bytes" : "memory.max");
    if (rc)
        goto out;
    if (sysfs_exists(path)) {
        rc = sysfs_read_u64(path, &limit);
        if (rc)
            goto out;
    }
    /* v1 reports "unlimited" as the largest page-aligned signed value. */
    g->cap_bytes = limit >= ((uint64_t)1 << 62) ? 0 : limit;
    *out = g;
    g = NULL;
out:
    free(g);
    return rc;
}

int cg_group_reset_peak(cg_group *g)
{
    char path[CG_PATH_BYTES];
    int rc = 0;
    if (g->version == CG_V1) {
        rc = write_in(g->mem_dir, "memory.max_usage_in_bytes", "0");
        if (rc)
            rc = ann_fail_wrap(ANN_EUNSUPPORTED, "cannot reset the peak");
        return rc;
    }
    if (g->peak_fd >= 0) {
        close(g->peak_fd);
        g->peak_fd = -1;
    }
    rc = sysfs_path(path, sizeof path, "%s/memory.peak", g->mem_dir);
    if (rc)
        return rc;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return ann_fail(ANN_EUNSUPPORTED, "cannot reset the peak: %s: %s", path, strerror(errno));
    if (write(fd, "0", 1) != 1) {
        int e = errno;
        close(fd);
        return ann_fail(ANN_EUNSUPPORTED, "cannot reset the peak: %s: %s", path, strerror(e));
    }
    g->peak_fd = fd;
    return 0;
}

/* ---- counters ----------------------------------------------------------- */

/* An optional one-number file: absent is fine (known = false). */
static int read_opt_u64(const char *dir, const char *file, uint64_t *val, bool *known)
{
    char path[CG_PATH_BYTES];
    int rc = sysfs_path(path, sizeof path, "%s/%s", dir, file);
    if (rc)
        return rc;
    *known = false;
    if (!sysfs_exists(path))
        return 0;
    rc = sysfs_read_u64(path, val);
    if (rc)
        return rc;
    *known = true;
    return 0;
}

/* An optional keyed value in an already-read text: absent is fine. */
static int keyed_opt(const char *text, const char *key, const char *what, uint64_t *val, bool *known)
{
    int rc = sysfs_keyed_u64(text, key, ' ', what, val);
    if (known)
        *known = (rc == 0);
    if (rc == ANN_ENOTFOUND)
        return 0;
    return rc;
}

/* "M:m" at the start of a line matches dev (or any device when dev is 0). */
static int line_device(const char *line, const char *what, int lineno, unsigned *maj, unsigned *min,
                       const char **rest)
{
    char *e = NULL;
    errno = 0;
    unsigned long a = strtoul(line, &e, 10);
    if (errno || e == line || *e != ':')
        return ann_fail(ANN_EFORMAT, "%s: line %d: expected MAJOR:MINOR", what, lineno);
    const char *m = e + 1;
    unsigned long b = strtoul(m, &e, 10);
    if (errno || e == m || (*e != ' ' && *e != '\t'))
        return ann_fail(ANN_EFORMAT, "%s: line %d: expected MAJOR:MINOR", what, lineno);
    *maj = (unsigned)a;
    *min = (unsigned)b;
    *rest = e + 1;
    return 0;
}

static bool dev_match(dev_t dev, unsigned maj, unsigned min)
{
    return dev == 0 || (major(dev) == maj && minor(dev) == min);
}

/*
 * v1 blkio.throttle.io_service_bytes / io_serviced: "M:m Op N" per device
 * and op, then "Total N".  Sums the Read lines of matching devices.
 */
static int parse_v1_blkio(const char *text, const char *what, dev_t dev, uint64_t *sum)
{
    int lineno = 0;
    *sum = 0;
    for (const char *line = text; *line;) {
        lineno++;
        size_t len = strcspn(line, "\n");
        if (len && strncmp(line, "Total", 5) != 0) {
            unsigned maj, min;
            const char *rest = NULL;
            int rc = line_device(line, what, lineno, &maj, &min, &rest);
            if (rc)
                return rc;
            if (strncmp(rest, "Read ", 5) == 0 && dev_match(dev, maj, min)) {
                char *e = NULL;
                errno = 0;
                unsigned long long v = strtoull(rest + 5, &e, 10);
                if (errno || e == rest + 5)
                    return ann_fail(ANN_EFORMAT, "%s: line %d: Read count is not a number", what, lineno);
                *sum += v;
            }
        }
        line += len;
        if (*line == '\n')
            line++;
    }
    return 0;
}

/* v2 io.stat: "M:m rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N". */
static int parse_v2_iostat(const char *text, const char *what, dev_t dev, uint64_t *rbytes, uint64_t *rios)
{
    int lineno = 0;
    *rbytes = *rios = 0;
    for (const char *line = text; *line;) {
        lineno++;
        size_t len = strcspn(line, "\n");
        if (len) {
            unsigned maj, min;
            const char *rest = NULL;
            int rc = line_device(line, what, lineno, &maj, &min, &rest);
            if (rc)
                return rc;
            if (dev_match(dev, maj, min)) {
                const char *end = line + len;
                for (const char *p = rest; p < end;) {
                    size_t n = strcspn(p, " \n");
                    const char *eq = memchr(p, '=', n);
                    if (!eq)
                        return ann_fail(ANN_EFORMAT, "%s: line %d: expected key=value", what, lineno);
                    uint64_t *dst = NULL;
                    if ((size_t)(eq - p) == 6 && memcmp(p, "rbytes", 6) == 0)
                        dst = rbytes;
                    else if ((size_t)(eq - p) == 4 && memcmp(p, "rios", 4) == 0)
                        dst = rios;
                    if (dst) {
                        char *e = NULL;
                        errno = 0;
                        unsigned long long v = strtoull(eq + 1, &e, 10);
                        if (errno || e == eq + 1)
                            return ann_fail(ANN_EFORMAT, "%s: line %d: %.*s is not a number", what,
                                            lineno, (int)(eq - p), p);
                        *dst += v;
                    }
                    p += n;
                    while (p < end && *p == ' ')
                        p++;
                }
            }
        }
        line += len;
        if (*line == '\n')
            line++;
    }
    return 0;
}

static int read_in(const char *dir, const char *file, char *text, char *path)
{
    int rc = sysfs_path(path, CG_PATH_BYTES, "%s/%s", dir, file);
    return rc ? rc : sysfs_read(path, text, CG_TEXT_BYTES, false);
}

static int read_v1(const cg_group *g, dev_t dev, char *text, cg_counters *c)
{
    char path[CG_PATH_BYTES];
    bool known = false;
    int rc = read_opt_u64(g->mem_dir, "memory.usage_in_bytes", &c->usage_bytes, &known);
    if (!rc)
        rc = read_opt_u64(g->mem_dir, "memory.max_usage_in_bytes", &c->peak_bytes, &c->peak_known);
    if (!rc)
        rc = read_opt_u64(g->mem_dir, "memory.failcnt", &c->limit_hits, &known);
    /* With memsw.limit equal to the limit, the memory+swap counter is the
     * one that hits first: its failures count as hits of the cap. */
    uint64_t memsw_hits = 0;
    if (!rc)
        rc = read_opt_u64(g->mem_dir, "memory.memsw.failcnt", &memsw_hits, &known);
    if (rc)
        return rc;
    if (memsw_hits > c->limit_hits)
        c->limit_hits = memsw_hits;
    if (exists_in(g->mem_dir, "memory.oom_control")) {
        uint64_t under = 0;
        rc = read_in(g->mem_dir, "memory.oom_control", text, path);
        if (!rc)
            rc = keyed_opt(text, "under_oom", path, &under, NULL);
        if (!rc)
            rc = keyed_opt(text, "oom_kill", path, &c->oom_kills, &c->oom_kill_known);
        if (rc)
            return rc;
        c->under_oom = under != 0;
        c->oom_events = under ? 1 : 0;
    }
    if (exists_in(g->mem_dir, "memory.stat")) {
        rc = read_in(g->mem_dir, "memory.stat", text, path);
        if (!rc)
            rc = keyed_opt(text, "cache", path, &c->page_cache_bytes, &c->page_cache_known);
        if (rc)
            return rc;
    }
    if (g->io_dir[0] && g->io_watched && exists_in(g->io_dir, "blkio.throttle.io_service_bytes")) {
        rc = read_in(g->io_dir, "blkio.throttle.io_service_bytes", text, path);
        if (!rc)
            rc = parse_v1_blkio(text, path, dev, &c->read_bytes);
        if (!rc)
            rc = read_in(g->io_dir, "blkio.throttle.io_serviced", text, path);
        if (!rc)
            rc = parse_v1_blkio(text, path, dev, &c->read_ios);
        if (rc)
            return rc;
        c->io_known = true;
    }
    return 0;
}

/* The peak through the descriptor that reset it (v2 per-open-file peak). */
static int read_peak_fd(const cg_group *g, cg_counters *c)
{
    char text[64];
    ssize_t got = pread(g->peak_fd, text, sizeof text - 1, 0);
    if (got < 0)
        return ann_fail_errno("%s/memory.peak", g->mem_dir);
    text[got] = '\0';
    char *e = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &e, 10);
    if (errno || e == text || (*e != '\n' && *e != '\0'))
        return ann_fail(ANN_EFORMAT, "%s/memory.peak: expected one number, found \"%.32s\"", g->mem_dir, text);
    c->peak_bytes = v;
    c->peak_known = true;
    return 0;
}

static int read_v2(const cg_group *g, dev_t dev, char *text, cg_counters *c)
{
    char path[CG_PATH_BYTES];
    bool known = false;
    int rc = read_opt_u64(g->mem_dir, "memory.current", &c->usage_bytes, &known);
    if (!rc && g->peak_fd >= 0)
        rc = read_peak_fd(g, c);
    else if (!rc)
        rc = read_opt_u64(g->mem_dir, "memory.peak", &c->peak_bytes, &c->peak_known);
    if (rc)
        return rc;
    if (exists_in(g->mem_dir, "memory.events")) {
        rc = read_in(g->mem_dir, "memory.events", text, path);
        if (!rc)
            rc = keyed_opt(text, "max", path, &c->limit_hits, NULL);
        if (!rc)
            rc = keyed_opt(text, "oom", path, &c->oom_events, NULL);
        if (!rc)
            rc = keyed_opt(text, "oom_kill", path, &c->oom_kills, &c->oom_kill_known);
        if (rc)
            return rc;
    }
    if (exists_in(g->mem_dir, "memory.stat")) {
        rc = read_in(g->mem_dir, "memory.stat", text, path);
        if (!rc)
            rc = keyed_opt(text, "file", path, &c->page_cache_bytes, &c->page_cache_known);
        if (rc)
            return rc;
    }
    if (g->io_dir[0] && exists_in(g->io_dir, "io.stat")) {
        rc = read_in(g->io_dir, "io.stat", text, path);
        if (!rc)
            rc = parse_v2_iostat(text, path, dev, &c->read_bytes, &c->read_ios);
        if (rc)
            return rc;
        c->io_known = true;
    }
    return 0;
}

int cg_group_read(const cg_group *g, dev_t dev, cg_counters *out)
{
    char *text = malloc(CG_TEXT_BYTES);
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->cap_bytes = g->cap_bytes;
    if (!text) {
        rc = ann_fail(-ENOMEM, "cg_group_read: out of memory");
        goto out;
    }
    rc = g->version == CG_V1 ? read_v1(g, dev, text, out) : read_v2(g, dev, text, out);
out:
    free(text);
    return rc;
}

/* ---- removal ------------------------------------------------------------ */

/* Empty dir of processes: v1 moves them to parent, v2 kills them. */
static int evacuate(cg_version version, const char *dir, const char *parent)
{
    char path[CG_PATH_BYTES];
    char *text = malloc(CG_TEXT_BYTES);
    int rc = 0;
    if (!text) {
        rc = ann_fail(-ENOMEM, "cg_group_destroy: out of memory");
        goto out;
    }
    rc = read_in(dir, "cgroup.procs", text, path);
    if (rc)
        goto out;
    if (text[strspn(text, " \n")] == '\0')
        goto out;
    if (version == CG_V2 && exists_in(dir, "cgroup.kill")) {
        rc = write_in(dir, "cgroup.kill", "1");
        goto out;
    }
    for (char *p = text; *p;) {
        char *e = NULL;
        long pid = strtol(p, &e, 10);
        if (e == p)
            break;
        if (version == CG_V1) {
            char num[32];
            snprintf(num, sizeof num, "%ld", pid);
            int wrc = write_in(parent, "cgroup.procs", num);
            if (wrc && wrc != -ESRCH && !rc)
                rc = wrc;
        } else if (kill((pid_t)pid, SIGKILL) != 0 && errno != ESRCH && !rc) {
            rc = ann_fail_errno("kill %ld in %s", pid, dir);
        }
        p = e;
        while (*p == '\n' || *p == ' ')
            p++;
    }
out:
    free(text);
    return rc;
}

/* rmdir, retrying EBUSY for up to a second while the kernel lets go. */
static int remove_dir(const char *dir)
{
    for (int attempt = 0;; attempt++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY || attempt >= 100)
            return ann_fail_errno("rmdir %s", dir);
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

int cg_group_destroy(cg_group *g)
{
    int rc = 0;
    if (!g)
        return 0;
    if (g->peak_fd >= 0)
        close(g->peak_fd);
    if (!g->owned) {
        free(g);
        return 0;
    }
    const char *dirs[2] = { g->mem_dir, g->version == CG_V1 ? g->io_dir : "" };
    const char *parents[2] = { g->mem_parent, g->io_parent };
    for (int i = 0; i < 2; i++) {
        if (!dirs[i][0] || !is_dir(dirs[i]))
            continue;
        int erc = evacuate(g->version, dirs[i], parents[i]);
        int drc = remove_dir(dirs[i]);
        if (!rc)
            rc = erc ? erc : drc;
    }
    free(g);
    return rc;
}

/* ---- outcome ------------------------------------------------------------ */

void cg_classify(int wait_status, const cg_counters *c, cg_outcome *out)
{
    memset(out, 0, sizeof *out);
    bool oom_seen = c->oom_kills > 0 ||
                    (!c->oom_kill_known && (c->oom_events > 0 || c->under_oom ||
                                            (c->cap_bytes && c->limit_hits > 0)));
    if (WIFEXITED(wait_status)) {
        int code = WEXITSTATUS(wait_status);
        if (code == 0) {
            out->status = CG_OK;
            return;
        }
        out->status = CG_ERROR;
        snprintf(out->reason, sizeof out->reason, "exited with status %d", code);
        if (c->oom_kills > 0 && c->cap_bytes) {
            out->status = CG_OOM;
            snprintf(out->reason, sizeof out->reason,
                     "exited with status %d after the OOM killer acted under memory cap %" PRIu64
                     " bytes (oom_kill=%" PRIu64 ")",
                     code, c->cap_bytes, c->oom_kills);
        }
        return;
    }
    if (WIFSIGNALED(wait_status)) {
        int sig = WTERMSIG(wait_status);
        if (sig == SIGKILL && oom_seen && c->cap_bytes) {
            out->status = CG_OOM;
            snprintf(out->reason, sizeof out->reason,
                     "killed by the OOM killer under memory cap %" PRIu64 " bytes (oom_kill=%" PRIu64
                     ", limit hits %" PRIu64 ", peak %" PRIu64 " bytes)",
                     c->cap_bytes, c->oom_kills, c->limit_hits, c->peak_bytes);
            return;
        }
        out->status = CG_ERROR;
        snprintf(out->reason, sizeof out->reason, "killed by signal %d (%s)", sig, strsignal(sig));
        return;
    }
    out->status = CG_ERROR;
    snprintf(out->reason, sizeof out->reason, "unexpected wait status 0x%x", (unsigned)wait_status);
}

json_t *cg_counters_json(const cg_counters *c)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= json_object_set_new(o, "cap_bytes", c->cap_bytes ? json_integer((json_int_t)c->cap_bytes) : json_null());
    bad |= json_object_set_new(o, "usage_bytes", json_integer((json_int_t)c->usage_bytes));
    bad |= json_object_set_new(o, "peak_bytes", c->peak_known ? json_integer((json_int_t)c->peak_bytes) : json_null());
    bad |= json_object_set_new(o, "limit_hits", json_integer((json_int_t)c->limit_hits));
    bad |= json_object_set_new(o, "oom_events", json_integer((json_int_t)c->oom_events));
    bad |= json_object_set_new(o, "oom_kills", c->oom_kill_known ? json_integer((json_int_t)c->oom_kills) : json_null());
    bad |= json_object_set_new(o, "read_bytes", c->io_known ? json_integer((json_int_t)c->read_bytes) : json_null());
    bad |= json_object_set_new(o, "read_ios", c->io_known ? json_integer((json_int_t)c->read_ios) : json_null());
    bad |= json_object_set_new(o, "page_cache_bytes",
                               c->page_cache_known ? json_integer((json_int_t)c->page_cache_bytes)
                                                   : json_null());
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- start gate --------------------------------------------------------- */

int cg_gate_init(cg_gate *gate)
{
    gate->fds[0] = gate->fds[1] = -1;
    /* A socket pair rather than a pipe: send(MSG_NOSIGNAL) lets the parent
     * learn that the child died without taking SIGPIPE. */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate->fds) != 0) {
        gate->fds[0] = gate->fds[1] = -1;
        return ann_fail_errno("cg_gate_init: socketpair");
    }
    return 0;
}

int cg_gate_wait_fd(int fd)
{
    char word = 0;
    ssize_t got;
    do
        got = read(fd, &word, 1);
    while (got < 0 && errno == EINTR);
    close(fd);
    if (got == 1 && word == 'g')
        return 0;
    return ann_fail(ANN_ESTATE, "cgroup start gate: parent %s", got == 1 ? "cancelled the cell" : "went away");
}

int cg_gate_wait(cg_gate *gate)
{
    if (gate->fds[1] >= 0) { /* so the parent's death reads as EOF */
        close(gate->fds[1]);
        gate->fds[1] = -1;
    }
    int fd = gate->fds[0];
    gate->fds[0] = -1;
    return cg_gate_wait_fd(fd);
}

int cg_gate_release(cg_gate *gate, int go)
{
    int rc = 0;
    char word = go ? 'g' : 'n';
    if (gate->fds[0] >= 0) {
        close(gate->fds[0]);
        gate->fds[0] = -1;
    }
    ssize_t put;
    do
        put = send(gate->fds[1], &word, 1, MSG_NOSIGNAL);
    while (put < 0 && errno == EINTR);
    if (put != 1)
        rc = put < 0 && (errno == EPIPE || errno == ECONNRESET)
                 ? ann_fail(ANN_ESTATE, "cgroup start gate: the child went away")
                 : ann_fail_errno("cgroup start gate: send");
    close(gate->fds[1]);
    gate->fds[1] = -1;
    return rc;
}

void cg_gate_fini(cg_gate *gate)
{
    for (int i = 0; i < 2; i++) {
        if (gate->fds[i] >= 0)
            close(gate->fds[i]);
        gate->fds[i] = -1;
    }
}

/* ---- leftovers of dead runs -------------------------------------------- */

/* The owner of a group named "<prefix><id>-<pid>-<start>" (or the older
 * "<prefix><id>-<pid>"); 0 when the name is not of that form. */
static int group_owner(const char *name, const char *prefix, ann_owner *o)
{
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0)
        return 0;
    const char *rest = name + pl;
    const char *first = strchr(rest, '-');
    if (!first || first == rest)
        return 0;
    return ann_owner_parse(first + 1, o) == 0;
}

/* Kill every process in dir (a dead run's cell still running), waiting up
 * to a second for the group to empty. */
static int kill_members(cg_version version, const char *dir)
{
    char path[CG_PATH_BYTES];
    char *text = malloc(CG_TEXT_BYTES);
    int rc = 0;
    if (!text)
        return ann_fail(-ENOMEM, "cg_reap_stale: out of memory");
    for (int attempt = 0; attempt < 100; attempt++) {
        if ((rc = read_in(dir, "cgroup.procs", text, path)))
            break;
        if (text[strspn(text, " \n")] == '\0')
            break;
        if (version == CG_V2 && exists_in(dir, "cgroup.kill"))
            (void)write_in(dir, "cgroup.kill", "1");
        else
            for (char *p = text; *p;) {
                char *e = NULL;
                long pid = strtol(p, &e, 10);
                if (e == p)
                    break;
                (void)kill((pid_t)pid, SIGKILL);
                p = e;
                while (*p == '\n' || *p == ' ')
                    p++;
            }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    free(text);
    return rc;
}

int cg_reap_stale(const cg_system *sys, const char *prefix, unsigned *removed)
{
    if (removed)
        *removed = 0;
    if (!sys || sys->version == CG_NONE)
        return 0;
    const char *parents[2] = { sys->memory_parent,
                               sys->version == CG_V1 ? sys->io_parent : "" };
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        if (!parents[i][0])
            continue;
        DIR *d = opendir(parents[i]);
        if (!d) {
            if (!rc && errno != ENOENT)
                rc = ann_fail_errno("%s: opendir", parents[i]);
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            ann_owner o;
            if (!group_owner(e->d_name, prefix, &o) || ann_owner_alive(&o))
                continue;
            char dir[CG_PATH_BYTES];
            if (sysfs_path(dir, sizeof dir, "%s/%s", parents[i], e->d_name) || !is_dir(dir))
                continue;
            int r = kill_members(sys->version, dir);
            if (!r)
                r = remove_dir(dir);
            if (r && !rc)
                rc = r;
            else if (!r && removed && i == 0)
                (*removed)++;
        }
        closedir(d);
    }
    return rc;
}
