/*
 * owner.c: owner tags of temporaries, liveness of their owners, and flock
 * locks that name their holder (owner.h).
 */
#include "engines/core/owner.h"

#include "engines/core/fileio.h"
#include "engines/core/status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Field 22 (starttime) of /proc/<pid>/stat; the command name (field 2)
 * may hold spaces and parentheses, so fields are counted after its last ')'. */
static int read_start(const char *stat_path, uint64_t *start)
{
    char buf[1024];
    int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int err = errno;
    close(fd);
    if (n <= 0)
        return n < 0 ? -err : -EIO;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    if (!p)
        return -EIO;
    p++;
    /* after ')': field 3 (state) is the first; starttime is field 22 */
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return -EIO;
    }
    char *end = NULL;
    unsigned long long v = strtoull(p + 1, &end, 10);
    if (end == p + 1)
        return -EIO;
    *start = v;
    return 0;
}

int ann_owner_self(ann_owner *o)
{
    o->pid = (int)getpid();
    o->start = 0;
    return read_start("/proc/self/stat", &o->start);
}

int ann_owner_of_pid(int pid, ann_owner *o)
{
    char path[64];
    o->pid = pid;
    o->start = 0;
    if (pid <= 0)
        return -ESRCH;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int rc = read_start(path, &o->start);
    return rc == -ENOENT ? -ESRCH : rc;
}

void ann_owner_tag(const ann_owner *o, char *buf, size_t len)
{
    snprintf(buf, len, "%d-%llu", o->pid, (unsigned long long)o->start);
}

int ann_owner_parse(const char *s, ann_owner *o)
{
    char *end = NULL;
    errno = 0;
    long pid = strtol(s, &end, 10);
    if (end == s || errno || pid <= 0 || pid > 0x7fffffffL)
        return ann_fail(ANN_EFORMAT, "'%s' is not an owner tag", s);
    o->pid = (int)pid;
    o->start = 0;
    if (*end == '\0')
        return 0;
    if (*end != '-' || end[1] < '0' || end[1] > '9')
        return ann_fail(ANN_EFORMAT, "'%s' is not an owner tag", s);
    const char *st = end + 1;
    unsigned long long v = strtoull(st, &end, 10);
    if (errno || *end != '\0')
        return ann_fail(ANN_EFORMAT, "'%s' is not an owner tag", s);
    o->start = v;
    return 0;
}

int ann_owner_alive(const ann_owner *o)
{
    if (o->pid <= 0)
        return 0;
    if (o->start == 0)
        return kill(o->pid, 0) == 0 || errno == EPERM;
    ann_owner now;
    if (ann_owner_of_pid(o->pid, &now) != 0)
        return 0;
    /* zombies keep their start time, and are no longer working */
    char path[64], state = '?';
    snprintf(path, sizeof path, "/proc/%d/stat", o->pid);
    FILE *f = fopen(path, "re");
    if (f) {
        char buf[1024];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        if (p && p[1] == ' ')
            state = p[2];
        fclose(f);
    }
    return now.start == o->start && state != 'Z' && state != 'X';
}

int ann_tmp_path(const char *path, char *buf, size_t len)
{
    ann_owner me;
    char tag[48];
    (void)ann_owner_self(&me);
    ann_owner_tag(&me, tag, sizeof tag);
    int n = snprintf(buf, len, "%s.tmp.%s", path, tag);
    if (n < 0 || (size_t)n >= len)
    {
        /* a path this long would push the reason out of the message: its start only */
        size_t pl = strlen(path);
        return ann_fail(ANN_EPARAM,
                        "%.*s%s: path too long for its temporary (%zu bytes; at most %zu)",
                        pl > 200 ? 200 : (int)pl, path, pl > 200 ? "..." : "",
                        pl + 5 + strlen(tag), len - 1);
    }
    return 0;
}

int ann_tmp_reap(const char *dir, const char *name, unsigned *removed)
{
    if (removed)
        *removed = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : ann_fail_errno("%s: opendir", dir);
    char prefix[512];
    int plen = snprintf(prefix, sizeof prefix, "%s.tmp.", name);
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (plen <= 0 || (size_t)plen >= sizeof prefix || strncmp(e->d_name, prefix, (size_t)plen))
            continue;
        ann_owner o;
        char tag[64];
        snprintf(tag, sizeof tag, "%s", e->d_name + plen);
        size_t tl = strlen(tag);
        if (tl > 4 && !strcmp(tag + tl - 4, ".old"))
            tag[tl - 4] = '\0'; /* stagedir.c's old output set aside */
        if (ann_owner_parse(tag, &o) != 0) {
            ann_err_clear();
            continue;
        }
        if (ann_owner_alive(&o))
            continue;
        char path[4600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int r = ann_tree_remove(path);
        if (r && !rc)
            rc = r;
        else if (!r && removed)
            (*removed)++;
    }
    closedir(d);
    return rc;
}

void ann_lock_holder(const char *path, char *buf, size_t len)
{
    snprintf(buf, len, "an unknown process");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    char text[512];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return;
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    if (text[0])
        snprintf(buf, len, "%s", text);
}

int ann_lock_take(ann_lock *lk, const char *path, const char *what, int wait, int inheritable)
{
    lk->fd = -1;
    if (snprintf(lk->path, sizeof lk->path, "%s", path) >= (int)sizeof lk->path)
        return ann_fail(ANN_EPARAM, "%.200s...: path too long for a lock file", path);
    int fd = open(path, O_RDWR | O_CREAT | (inheritable ? 0 : O_CLOEXEC), 0644);
    if (fd < 0)
        return ann_fail_errno("%s: open lock file", path);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ann_fail(ANN_EFORMAT, "%s: a lock file must be a regular file", path);
    }
    for (;;) {
        if (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) == 0)
            break;
        if (errno == EINTR && wait)
            continue;
        int rc;
        if (errno == EWOULDBLOCK) {
            char who[512];
            ann_lock_holder(path, who, sizeof who);
            rc = ann_fail(ANN_EBUSY, "%s: held by %s", path, who);
        } else
            rc = ann_fail_errno("%s: flock", path);
        close(fd);
        return rc;
    }
    /* the lock is ours: say who we are */
    ann_owner me;
    (void)ann_owner_self(&me);
    char since[32], line[700];
    time_t now = time(NULL);
    struct tm tm;
    strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    int n = snprintf(line, sizeof line, "pid %d since %s: %s\n", me.pid, since,
                     what && *what ? what : "annlab");
    if (n >= (int)sizeof line)
        n = (int)sizeof line - 1;
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != n) {
        int rc = ann_fail_errno("%s: write lock owner", path);
        close(fd);
        return rc;
    }
    lk->fd = fd;
    return 0;
}

void ann_lock_release(ann_lock *lk)
{
    if (lk && lk->fd >= 0) {
        close(lk->fd);
        lk->fd = -1;
    }
}
