/*
 * devstat.c: read requests and bytes at the block device holding a path,
 * from the kernel's per-disk counters (Documentation/block/stat.rst:
 * field 1 read I/Os, field 3 read sectors of 512 bytes), and the process's
 * own storage reads from /proc/<pid>/io (read_bytes).
 *
 * The device is found from the path's st_dev through /sys/dev/block/M:m
 * and then walked down to what is physically read: a partition to its
 * disk, a single-slave device-mapper volume to its slave, a loop device to
 * the device of its backing file.  Filesystems with an anonymous st_dev
 * (btrfs) are mapped through their mount source in /proc/self/mountinfo.
 * A striped or mirrored device-mapper volume (several slaves) is counted
 * at the volume itself: splitting its reads between disks would not be a
 * per-query figure any engine can be compared with.
 */
#include "cgroups/devstat.h"

#include "cgroups/sysfs.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define DEVSTAT_MAX_DEPTH 8
#define DEVSTAT_TEXT_BYTES 4096

static int dev_unsupported(devstat_dev *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int dev_unsupported(devstat_dev *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof out->reason, fmt, ap);
    va_end(ap);
    return ann_fail(ANN_EUNSUPPORTED, "%s", out->reason);
}

static void chain_add(devstat_dev *out, const char *name)
{
    size_t len = strlen(out->chain);
    snprintf(out->chain + len, sizeof out->chain - len, "%s%s", len ? " -> " : "", name);
}

/* Parse "M:m\n" (a sysfs dev file or a mountinfo field). */
static int parse_majmin(const char *text, unsigned *maj, unsigned *min)
{
    char *e = NULL;
    errno = 0;
    unsigned long a = strtoul(text, &e, 10);
    if (errno || e == text || *e != ':')
        return -1;
    const char *m = e + 1;
    unsigned long b = strtoul(m, &e, 10);
    if (errno || e == m)
        return -1;
    *maj = (unsigned)a;
    *min = (unsigned)b;
    return 0;
}

/* Read "<dir>/dev" into maj:min. */
static int read_dev_file(const char *dir, unsigned *maj, unsigned *min)
{
    char path[DEVSTAT_PATH_BYTES], text[64];
    int rc = sysfs_path(path, sizeof path, "%s/dev", dir);
    if (!rc)
        rc = sysfs_read(path, text, sizeof text, false);
    if (rc)
        return rc;
    if (parse_majmin(text, maj, min) != 0)
        return ann_fail(ANN_EFORMAT, "%s: expected MAJOR:MINOR", path);
    return 0;
}

/* Name of the device directory (the last component of its real path). */
static int dev_dir_name(const char *dir, char *name, size_t cap, char *real)
{
    if (!realpath(dir, real))
        return ann_fail_errno("%s", dir);
    const char *slash = strrchr(real, '/');
    snprintf(name, cap, "%s", slash ? slash + 1 : real);
    return 0;
}

/* The only entry of dir (other than . and ..), or 0 when there are 0 or 2+. */
static int only_entry(const char *dir, char *name, size_t cap)
{
    DIR *d = opendir(dir);
    int count = 0;
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (count++ == 0)
            snprintf(name, cap, "%s", de->d_name);
    }
    closedir(d);
    return count;
}

/* st_dev of a filesystem without a block device of its own (btrfs): the
 * device of its mount source, from /proc/self/mountinfo. */
static int dev_from_mountinfo(dev_t fs_dev, unsigned *maj, unsigned *min, char *fstype, size_t cap)
{
    FILE *fp = fopen("/proc/self/mountinfo", "re");
    char *line = NULL;
    size_t line_cap = 0;
    int rc = ANN_ENOTFOUND;
    if (!fp)
        return ANN_ENOTFOUND;
    while (getline(&line, &line_cap, fp) > 0) {
        /* id parent M:m root mountpoint opts [optional...] - fstype source superopts */
        char *save = NULL;
        char *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 2; i++)
            tok = strtok_r(NULL, " ", &save);
        unsigned a, b;
        if (!tok || parse_majmin(tok, &a, &b) != 0 || makedev(a, b) != fs_dev)
            continue;
        while ((tok = strtok_r(NULL, " ", &save)) != NULL && strcmp(tok, "-") != 0)
            ;
        char *type = tok ? strtok_r(NULL, " ", &save) : NULL;
        char *source = type ? strtok_r(NULL, " ", &save) : NULL;
        if (type)
            snprintf(fstype, cap, "%s", type);
        struct stat st;
        if (source && strncmp(source, "/dev/", 5) == 0 && stat(source, &st) == 0 && S_ISBLK(st.st_mode)) {
            *maj = major(st.st_rdev);
            *min = minor(st.st_rdev);
            rc = 0;
        }
        break;
    }
    free(line);
    fclose(fp);
    return rc;
}

/* The block device (maj:min) holding path, through mountinfo when needed. */
static int path_device(const char *path, devstat_dev *out, unsigned *maj, unsigned *min, bool first)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return ann_fail_errno("%s", path);
    if (first) {
        out->fs_major = major(st.st_dev);
        out->fs_minor = minor(st.st_dev);
    }
    *maj = major(st.st_dev);
    *min = minor(st.st_dev);
    if (*maj != 0)
        return 0;
    char fstype[64] = "";
    if (dev_from_mountinfo(st.st_dev, maj, min, fstype, sizeof fstype) == 0)
        return 0;
    if (!fstype[0]) {
        struct statfs sfs;
        if (statfs(path, &sfs) == 0)
            snprintf(fstype, sizeof fstype, "fs type 0x%lx", (unsigned long)sfs.f_type);
    }
    return dev_unsupported(out, "%s: filesystem %s has no block device (st_dev 0:%u)", path,
                           fstype[0] ? fstype : "(unknown)", minor(st.st_dev));
}

int devstat_resolve(const char *path, const char *sys_root, devstat_dev *out)
{
    const char *sys = sys_root ? sys_root : "/sys";
    char dir[DEVSTAT_PATH_BYTES], real[PATH_MAX], probe[DEVSTAT_PATH_BYTES], name[256];
    unsigned maj = 0, min = 0;
    int rc = 0;

    memset(out, 0, sizeof *out);
    rc = path_device(path, out, &maj, &min, true);
    if (rc)
        return rc;
    for (int depth = 0;; depth++) {
        if (depth >= DEVSTAT_MAX_DEPTH)
            return dev_unsupported(out, "%s: device chain deeper than %d: %s", path,
                                   DEVSTAT_MAX_DEPTH, out->chain);
        rc = sysfs_path(dir, sizeof dir, "%s/dev/block/%u:%u", sys, maj, min);
        if (rc)
            return rc;
        if (!sysfs_exists(dir))
            return dev_unsupported(out, "%s: device %u:%u has no %s", path, maj, min, dir);
        rc = dev_dir_name(dir, name, sizeof name, real);
        if (rc)
            return rc;
        chain_add(out, name);
        out->major = maj;
        out->minor = min;
        snprintf(out->name, sizeof out->name, "%s", name);

        /* A partition: its parent directory is the disk. */
        rc = sysfs_path(probe, sizeof probe, "%s/partition", dir);
        if (rc)
            return rc;
        if (sysfs_exists(probe)) {
            char *slash = strrchr(real, '/');
            if (!slash)
                return dev_unsupported(out, "%s: cannot find the disk of partition %s", path, name);
            *slash = '\0';
            rc = read_dev_file(real, &maj, &min);
            if (rc)
                return rc;
            continue;
        }
        /* Device-mapper with exactly one slave: follow it. */
        rc = sysfs_path(probe, sizeof probe, "%s/dm", dir);
        if (rc)
            return rc;
        if (sysfs_exists(probe)) {
            char slave[256], slave_dir[DEVSTAT_PATH_BYTES];
            rc = sysfs_path(probe, sizeof probe, "%s/slaves", dir);
            if (rc)
                return rc;
            if (only_entry(probe, slave, sizeof slave) != 1)
                break;
            rc = sysfs_path(slave_dir, sizeof slave_dir, "%s/%s", probe, slave);
            if (!rc)
                rc = read_dev_file(slave_dir, &maj, &min);
            if (rc)
                return rc;
            continue;
        }
        /* Loop device: the device holding its backing file. */
        rc = sysfs_path(probe, sizeof probe, "%s/loop/backing_file", dir);
        if (rc)
            return rc;
        if (sysfs_exists(probe)) {
            char backing[DEVSTAT_PATH_BYTES];
            rc = sysfs_read(probe, backing, sizeof backing, false);
            if (rc)
                return rc;
            backing[strcspn(backing, "\n")] = '\0';
            rc = path_device(backing, out, &maj, &min, false);
            if (rc) {
                char why[256];
                snprintf(why, sizeof why, "%s", ann_errmsg(rc));
                return dev_unsupported(out, "%s: loop device %s: %s", path, name, why);
            }
            continue;
        }
        break;
    }
    rc = sysfs_path(out->stat_path, sizeof out->stat_path, "%s/dev/block/%u:%u/stat", sys, out->major,
                    out->minor);
    if (rc)
        return rc;
    if (!sysfs_exists(out->stat_path))
        return dev_unsupported(out, "%s: device %s has no %s", path, out->name, out->stat_path);
    return 0;
}

dev_t devstat_devt(const devstat_dev *dev)
{
    return makedev(dev->major, dev->minor);
}

int devstat_parse_stat(const char *text, const char *what, devstat_sample *out)
{
    uint64_t f[4];
    const char *p = text;
    for (int i = 0; i < 4; i++) {
        while (*p == ' ' || *p == '\t')
            p++;
        char *e = NULL;
        errno = 0;
        unsigned long long v = strtoull(p, &e, 10);
        if (errno || e == p || (*e != ' ' && *e != '\t' && *e != '\n' && *e != '\0'))
            return ann_fail(ANN_EFORMAT, "%s: field %d is not a number", what, i + 1);
        f[i] = v;
        p = e;
    }
    out->dev_read_ios = f[0];
    out->dev_read_merges = f[1];
    out->dev_read_sectors = f[2];
    out->dev_read_ms = f[3];
    out->dev_known = true;
    return 0;
}

int devstat_sample_take(const devstat_dev *dev, pid_t pid, devstat_sample *out)
{
    char text[DEVSTAT_TEXT_BYTES], path[64];
    int rc = 0;

    memset(out, 0, sizeof *out);
    out->t_ns = ann_mono_ns();
    if (dev) {
        rc = sysfs_read(dev->stat_path, text, sizeof text, false);
        if (!rc)
            rc = devstat_parse_stat(text, dev->stat_path, out);
        if (rc)
            return rc;
    }
    if (pid)
        snprintf(path, sizeof path, "/proc/%ld/io", (long)pid);
    else
        snprintf(path, sizeof path, "/proc/self/io");
    if (sysfs_read(path, text, sizeof text, true) == 0) {
        rc = sysfs_keyed_u64(text, "read_bytes", ':', path, &out->proc_read_bytes);
        if (!rc)
            rc = sysfs_keyed_u64(text, "rchar", ':', path, &out->proc_rchar);
        if (rc == ANN_ENOTFOUND)
            rc = ann_fail(ANN_EFORMAT, "%s: no read_bytes or rchar line", path);
        if (rc)
            return rc;
        out->proc_known = true;
    }
    return 0;
}

static uint64_t sub0(uint64_t after, uint64_t before)
{
    return after >= before ? after - before : 0;
}

void devstat_diff(const devstat_sample *before, const devstat_sample *after, devstat_delta *out)
{
    memset(out, 0, sizeof *out);
    out->dev_known = before->dev_known && after->dev_known;
    if (out->dev_known) {
        out->read_ios = sub0(after->dev_read_ios, before->dev_read_ios);
        out->read_bytes = sub0(after->dev_read_sectors, before->dev_read_sectors) * DEVSTAT_SECTOR_BYTES;
        out->read_ms = sub0(after->dev_read_ms, before->dev_read_ms);
    }
    out->proc_known = before->proc_known && after->proc_known;
    if (out->proc_known) {
        out->proc_read_bytes = sub0(after->proc_read_bytes, before->proc_read_bytes);
        out->proc_rchar = sub0(after->proc_rchar, before->proc_rchar);
    }
    out->elapsed_ns = sub0(after->t_ns, before->t_ns);
}

static json_t *per_query(bool known, uint64_t total, uint64_t nq)
{
    return known && nq ? json_real((double)total / (double)nq) : json_null();
}

json_t *devstat_delta_json(const devstat_delta *d, uint64_t nqueries, const char *source)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= json_object_set_new(o, "reads_per_query", per_query(d->dev_known, d->read_ios, nqueries));
    bad |= json_object_set_new(o, "bytes_per_query", per_query(d->dev_known, d->read_bytes, nqueries));
    bad |= json_object_set_new(o, "source", source && d->dev_known ? json_string(source) : json_null());
    bad |= json_object_set_new(o, "read_ios", d->dev_known ? json_integer((json_int_t)d->read_ios) : json_null());
    bad |= json_object_set_new(o, "read_bytes", d->dev_known ? json_integer((json_int_t)d->read_bytes) : json_null());
    bad |= json_object_set_new(o, "proc_read_bytes",
                               d->proc_known ? json_integer((json_int_t)d->proc_read_bytes) : json_null());
    bad |= json_object_set_new(o, "proc_read_bytes_per_query",
                               per_query(d->proc_known, d->proc_read_bytes, nqueries));
    bad |= json_object_set_new(o, "elapsed_s", json_real((double)d->elapsed_ns / 1e9));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}
