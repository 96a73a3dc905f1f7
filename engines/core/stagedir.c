/*
 * stagedir.c: named outputs replaced whole or not at all (stagedir.h).
 *
 * The order is the usual one for crash safety, applied to a directory:
 * every byte reaches the disk (fsync of each file and directory) before a
 * rename makes the new tree visible under the final name, and the old tree
 * is removed only after that rename.
 */
#include "engines/core/stagedir.h"

#include "engines/core/fileio.h"
#include "engines/core/owner.h"
#include "engines/core/status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when path exists and is anything but an empty directory. */
static int holds_something(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return 1;
    DIR *d = opendir(path);
    if (!d)
        return 1;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL)
        found = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return found;
}

static int refuse_existing(const char *final)
{
    return ann_fail(-EEXIST, "%s: already exists; --force replaces it (the old one stays until "
                             "the new one is complete)",
                    final);
}

int ann_stagedir_refuses(const char *final)
{
    return holds_something(final) ? refuse_existing(final) : 0;
}

int ann_stagedir_begin(ann_stagedir *s, const char *final, unsigned flags)
{
    memset(s, 0, sizeof *s);
    s->flags = flags;
    size_t len = strlen(final);
    while (len > 1 && final[len - 1] == '/')
        len--; /* "out/" names "out" */
    if (len == 0)
        return ann_fail(ANN_EPARAM, "an output directory needs a name");
    if (len >= sizeof s->final)
        return ann_fail(ANN_EPARAM, "%.64s...: path too long (%zu bytes; PATH_MAX is %d)", final,
                        len, PATH_MAX);
    memcpy(s->final, final, len);
    s->final[len] = '\0';
    if (flags & ANN_OUT_IN_PLACE) {
        snprintf(s->tmp, sizeof s->tmp, "%s", s->final);
        return ann_mkdir_p(s->final, 0755, "cannot create directory");
    }
    int rc = ann_tmp_path(s->final, s->tmp, sizeof s->tmp);
    if (rc)
        return rc;
    if (!(flags & ANN_OUT_FORCE) && holds_something(s->final))
        return refuse_existing(s->final);
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", s->final);
    char *slash = strrchr(parent, '/');
    const char *base = s->final;
    if (slash && slash != parent) {
        *slash = '\0';
        base = slash + 1;
        if ((rc = ann_mkdir_p(parent, 0755, "cannot create directory")))
            return rc;
    } else if (slash) {
        base = slash + 1;
        snprintf(parent, sizeof parent, "/");
    } else
        snprintf(parent, sizeof parent, ".");
    /* leftovers of writers of the same name that died */
    (void)ann_tmp_reap(parent, base, NULL);
    ann_err_clear();
    if (ann_tree_remove(s->tmp) != 0 || mkdir(s->tmp, 0755) != 0)
        return ann_fail_errno("%s: cannot create directory (its temporary %s)", s->final, s->tmp);
    s->active = 1;
    return 0;
}

const char *ann_stagedir_path(const ann_stagedir *s)
{
    return s->tmp;
}

int ann_stagedir_commit(ann_stagedir *s)
{
    if (s->flags & ANN_OUT_IN_PLACE)
        return 0;
    if (!s->active)
        return ann_fail(ANN_ESTATE, "%s: nothing staged to commit", s->final);
    int rc = ann_tree_fsync(s->tmp);
    if (rc)
        return rc;
    struct stat st;
    int exists = lstat(s->final, &st) == 0;
    if (exists && !(s->flags & ANN_OUT_FORCE) && holds_something(s->final))
        return refuse_existing(s->final);
    if (!exists) {
        if (rename(s->tmp, s->final) != 0) {
            if (errno == EEXIST || errno == ENOTEMPTY)
                return refuse_existing(s->final);
            return ann_fail_errno("%s: rename to %s", s->tmp, s->final);
        }
        s->active = 0;
        return ann_fsync_parent(s->final);
    }
    /* swap: the temporary's name now holds the old output */
    if (renameat2(AT_FDCWD, s->tmp, AT_FDCWD, s->final, RENAME_EXCHANGE) == 0) {
        rc = ann_fsync_parent(s->final);
        int r = ann_tree_remove(s->tmp);
        s->active = 0;
        return rc ? rc : r;
    }
    if (errno != EINVAL && errno != ENOSYS)
        return ann_fail_errno("%s: exchange with %s", s->tmp, s->final);
    /* no exchange here: the old output aside, the new one in, the old one back on failure */
    char aside[PATH_MAX + 16];
    if (snprintf(aside, sizeof aside, "%s.old", s->tmp) >= (int)sizeof aside)
        return ann_fail(ANN_EPARAM, "%s: path too long", s->tmp);
    if (rename(s->final, aside) != 0)
        return ann_fail_errno("%s: rename to %s", s->final, aside);
    if (rename(s->tmp, s->final) != 0) {
        rc = ann_fail_errno("%s: rename to %s", s->tmp, s->final);
        (void)rename(aside, s->final);
        return rc;
    }
    s->active = 0;
    rc = ann_fsync_parent(s->final);
    int r = ann_tree_remove(aside);
    return rc ? rc : r;
}

void ann_stagedir_abort(ann_stagedir *s)
{
    if (!s || !s->active || (s->flags & ANN_OUT_IN_PLACE))
        return;
    (void)ann_tree_remove(s->tmp);
    s->active = 0;
}
