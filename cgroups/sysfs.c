/*
 * sysfs.c: read and write the kernel's small interface files (cgroupfs,
 * /sys/block, /proc) for the cgroups module.  Everything is text; values
 * are parsed with strtoull and checked, since a kernel that changes a
 * format must produce a clear error rather than a wrong figure.
 */
#include "cgroups/sysfs.h"

#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sysfs_read(const char *path, char *buf, size_t cap, bool quiet)
{
    int rc = 0;
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = quiet ? -errno : ann_fail_errno("%s", path);
        goto out;
    }
    for (;;) {
        if (len + 1 >= cap) {
            rc = quiet ? -EFBIG : ann_fail(-EFBIG, "%s: larger than %zu bytes", path, cap - 1);
            goto out;
        }
        ssize_t got = read(fd, buf + len, cap - 1 - len);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            rc = quiet ? -errno : ann_fail_errno("%s: read", path);
            goto out;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
out:
    if (cap)
        buf[rc == 0 ? len : 0] = '\0';
    if (fd >= 0)
        close(fd);
    return rc;
}

int sysfs_write(const char *path, const char *text)
{
    int rc = 0;
    size_t len = strlen(text);
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) {
        rc = ann_fail_errno("%s", path);
        goto out;
    }
    ssize_t put = write(fd, text, len);
    if (put < 0) {
        rc = ann_fail_errno("%s: write \"%s\"", path, text);
        goto out;
    }
    if ((size_t)put != len) {
        rc = ann_fail(-EIO, "%s: short write of \"%s\"", path, text);
        goto out;
    }
out:
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = ann_fail_errno("%s: close after writing \"%s\"", path, text);
    return rc;
}

bool sysfs_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int parse_u64(const char *s, const char **end, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *e = NULL;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno)
        return -1;
    *out = v;
    *end = e;
    return 0;
}

int sysfs_keyed_u64(const char *text, const char *key, char sep, const char *what, uint64_t *out)
{
    size_t klen = strlen(key);
    const char *line = text;
    while (line && *line && (strncmp(line, key, klen) != 0 || line[klen] != sep)) {
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    if (line && *line) {
        const char *v = line + klen + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        const char *end = NULL;
        if (parse_u64(v, &end, out) != 0 || (*end != '\n' && *end != '\0' && *end != ' '))
            return ann_fail(ANN_EFORMAT, "%s: value of \"%s\" is not a number", what, key);
        return 0;
    }
    return ANN_ENOTFOUND;
}

int sysfs_read_u64(const char *path, uint64_t *out)
{
    char buf[64];
    int rc = sysfs_read(path, buf, sizeof buf, false);
    if (rc)
        return rc;
    if (strcmp(buf, "max\n") == 0 || strcmp(buf, "max") == 0) {
        *out = UINT64_MAX;
        return 0;
    }
    const char *end = NULL;
    if (parse_u64(buf, &end, out) != 0 || (*end != '\n' && *end != '\0'))
        return ann_fail(ANN_EFORMAT, "%s: expected one number, found \"%.32s\"", path, buf);
    return 0;
}

int sysfs_path(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap)
        return ann_fail(-ENAMETOOLONG, "path too long: %.64s...", dst);
    return 0;
}
