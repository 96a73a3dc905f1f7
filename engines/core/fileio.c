/*
 * fileio.c: exact preads and atomic temporary-file commits (see fileio.h).
 * The commit order is the usual one for crash safety: data reaches the
 * disk (fsync) before the rename makes it visible under the final name.
 */
#include "engines/core/fileio.h"

#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ann_pread_full(int fd, void *buf, size_t len, uint64_t off, const char *path)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return ann_fail_errno("%s: read at offset %llu", path, (unsigned long long)off);
        }
        if (r == 0)
            return ann_fail(ANN_EFORMAT, "%s: unexpected end of file at offset %llu", path,
                            (unsigned long long)off);
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int ann_open_stat(const char *path, int *fd, struct stat *st)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return ann_fail_errno("%s: open", path);
    if (fstat(*fd, st) != 0) {
        int rc = ann_fail_errno("%s: stat", path);
        close(*fd);
        *fd = -1;
        return rc;
    }
    return 0;
}

int ann_str_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

int ann_tmpfile_create(const char *path, char *tmp, size_t tmp_len, FILE **out)
{
    snprintf(tmp, tmp_len, "%s.tmp.%d", path, (int)getpid());
    *out = fopen(tmp, "wb");
    if (!*out)
        return ann_fail_errno("%s: create", tmp);
    return 0;
}

int ann_tmpfile_commit(FILE *fp, const char *tmp, const char *path)
{
    int rc = 0;
    if (fflush(fp) != 0 || fsync(fileno(fp)) != 0) {
        rc = ann_fail_errno("%s: write", tmp);
        fclose(fp);
        goto out;
    }
    if (fclose(fp) != 0) {
        rc = ann_fail_errno("%s: close", tmp);
        goto out;
    }
    if (rename(tmp, path) != 0)
        rc = ann_fail_errno("%s: rename", tmp);
out:
    if (rc)
        unlink(tmp);
    return rc;
}

void ann_tmpfile_discard(FILE *fp, const char *tmp)
{
    if (fp)
        fclose(fp);
    unlink(tmp);
}

int ann_mkdir_p(const char *path, unsigned mode, const char *what)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return ann_fail(ANN_EPARAM, "%s: path too long", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST)
            return ann_fail_errno("%s: %s", buf, what);
        *p = '/';
    }
    if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST)
        return ann_fail_errno("%s: %s", buf, what);
    return 0;
}
