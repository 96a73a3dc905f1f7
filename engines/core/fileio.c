/*
 * fileio.c: exact preads and atomic temporary-file commits (see fileio.h).
 * The commit order is the usual one for crash safety: data reaches the
 * disk (fsync) before the rename makes it visible under the final name.
 */
#include "engines/core/fileio.h"

#include "engines/core/status.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
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

const char *ann_file_kind(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "not a file";
    }
}

int ann_open_stat(const char *path, int *fd, struct stat *st)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (*fd < 0)
        return ann_fail_errno("%s: open", path);
    int rc = 0;
    if (fstat(*fd, st) != 0)
        rc = ann_fail_errno("%s: stat", path);
    else if (!S_ISREG(st->st_mode))
        rc = ann_fail(ANN_EFORMAT, "%s: not a regular file (%s)", path,
                      ann_file_kind((unsigned)st->st_mode));
    else {
        int fl = fcntl(*fd, F_GETFL);
        if (fl < 0 || fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
            rc = ann_fail_errno("%s: fcntl", path);
    }
    if (rc) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

int ann_check_regular(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return ann_fail_errno("%s: stat", path);
    if (!S_ISREG(st.st_mode))
        return ann_fail(ANN_EFORMAT, "%s: not a regular file (%s)", path,
                        ann_file_kind((unsigned)st.st_mode));
    return 0;
}

int ann_mul_u64(uint64_t a, uint64_t b, uint64_t *out, const char *what)
{
    if (__builtin_mul_overflow(a, b, out))
        return ann_fail(ANN_EFORMAT, "%s: %llu x %llu overflows 64 bits", what,
                        (unsigned long long)a, (unsigned long long)b);
    return 0;
}

int ann_add_u64(uint64_t a, uint64_t b, uint64_t *out, const char *what)
{
    if (__builtin_add_overflow(a, b, out))
        return ann_fail(ANN_EFORMAT, "%s: %llu + %llu overflows 64 bits", what,
                        (unsigned long long)a, (unsigned long long)b);
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

int ann_tree_remove(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : ann_fail_errno("%s: stat", path);
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0 && errno != ENOENT)
            return ann_fail_errno("%s: unlink", path);
        return 0;
    }
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : ann_fail_errno("%s: opendir", path);
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[4096];
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub) {
            rc = ann_fail(ANN_EPARAM, "%s/%s: path too long", path, e->d_name);
            break;
        }
        rc = ann_tree_remove(sub);
    }
    closedir(d);
    if (!rc && rmdir(path) != 0 && errno != ENOENT)
        rc = ann_fail_errno("%s: rmdir", path);
    return rc;
}

static int fsync_one(const char *path, int dir)
{
    int fd = open(path, (dir ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ann_fail_errno("%s: open for fsync", path);
    int rc = fsync(fd) == 0 ? 0 : ann_fail_errno("%s: fsync", path);
    close(fd);
    return rc;
}

int ann_tree_fsync(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return ann_fail_errno("%s: opendir", dir);
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[4096];
        if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub) {
            rc = ann_fail(ANN_EPARAM, "%s/%s: path too long", dir, e->d_name);
            break;
        }
        struct stat st;
        if (lstat(sub, &st) != 0)
            rc = ann_fail_errno("%s: stat", sub);
        else if (S_ISDIR(st.st_mode))
            rc = ann_tree_fsync(sub);
        else if (S_ISREG(st.st_mode))
            rc = fsync_one(sub, 0);
    }
    closedir(d);
    return rc ? rc : fsync_one(dir, 1);
}

int ann_fsync_parent(const char *path)
{
    char parent[4096];
    if (snprintf(parent, sizeof parent, "%s", path) >= (int)sizeof parent)
        return ann_fail(ANN_EPARAM, "%s: path too long", path);
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == parent)
        parent[1] = '\0';
    else
        *slash = '\0';
    return fsync_one(parent, 1);
}

int ann_exists_nonempty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return access(path, F_OK) == 0;
    struct dirent *e;
    int any = 0;
    while (!any && (e = readdir(d)) != NULL)
        any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return any;
}
