/*
 * parquet.c: VectorDBBench parquet files into a bundle, by running
 * datasets/node/parquet2fbin.mjs under Node.
 *
 * The child's stdout (one JSON summary line) and stderr (the reason when it
 * fails) are both read through pipes with poll(), so neither can fill and
 * stall the child.  Exit status 1 is bad input (ANN_EFORMAT, with the
 * converter's message, which names the file, row and field), 2 a usage
 * error (ANN_EPARAM).  The converter writes every output under a temporary
 * name and renames it when complete, and removes its temporaries on
 * failure, so a failed import leaves no half-written file.
 */
#include "datasets/parquet.h"

#include "datasets/bundle.h"
#include "datasets/dsutil.h"
#include "engines/core/fileio.h"
#include "engines/core/stagedir.h"
#include "engines/core/status.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define PARQUET_SCRIPT "parquet2fbin.mjs"
#define PARQUET_OUT_MAX (1u << 20) /* bytes kept of the child's stdout / stderr */

int ann_parquet_classify(const char *const *files, size_t nfiles, ann_parquet_files *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < nfiles; i++) {
        const char *base = strrchr(files[i], '/');
        base = base ? base + 1 : files[i];
        const char **slot = strstr(base, "neighbors") ? &out->neighbors
                            : strstr(base, "test")    ? &out->test
                            : strstr(base, "train")   ? &out->train
                                                      : NULL;
        if (!slot)
            return ann_fail(ANN_EPARAM,
                            "%s: not a VectorDBBench file name (want *train*.parquet, "
                            "*test*.parquet or *neighbors*.parquet)",
                            files[i]);
        if (*slot)
            return ann_fail(ANN_EPARAM, "%s: a second %s file (already have %s)", files[i],
                            slot == &out->neighbors ? "neighbors"
                            : slot == &out->test    ? "test"
                                                    : "train",
                            *slot);
        *slot = files[i];
    }
    return 0;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The folder holding parquet2fbin.mjs and its node_modules. */
static int parquet_node_dir(char *buf, size_t len)
{
    char path[PATH_MAX + 64];
    const char *env = getenv("ANNLAB_NODE_DIR");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        snprintf(path, sizeof path, "%s/" PARQUET_SCRIPT, buf);
        if (!file_exists(path))
            return ann_fail(ANN_ENOTFOUND, "%s: no " PARQUET_SCRIPT " (from ANNLAB_NODE_DIR)",
                            env);
        return 0;
    }
    /* walk up from the executable (build/annlab, build/tests/test_x) */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (int up = 0; up < 4; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash || slash == exe)
                break;
            *slash = '\0';
            snprintf(path, sizeof path, "%s/datasets/node/" PARQUET_SCRIPT, exe);
            if (file_exists(path)) {
                snprintf(buf, len, "%s/datasets/node", exe);
                return 0;
            }
        }
    }
    if (file_exists("datasets/node/" PARQUET_SCRIPT)) {
        snprintf(buf, len, "datasets/node");
        return 0;
    }
    return ann_fail(ANN_ENOTFOUND, "datasets/node/" PARQUET_SCRIPT
                                   ": not found above the executable nor in the current "
                                   "directory (set ANNLAB_NODE_DIR)");
}

typedef struct {
    char *data;
    size_t len;
} capture;

static void capture_add(capture *c, const char *p, size_t n)
{
    if (c->len + n > PARQUET_OUT_MAX)
        n = PARQUET_OUT_MAX - c->len;
    if (n == 0 || !c->data)
        return;
    memcpy(c->data + c->len, p, n);
    c->len += n;
    c->data[c->len] = '\0';
}

/* Run argv[0] (found in PATH); capture stdout and stderr; *status = exit code. */
static int run_child(char *const argv[], capture *out, capture *err, int *status)
{
    int rc = 0;
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    int fa_init = 0;
    pid_t pid = -1;
    if (pipe(po) != 0 || pipe(pe) != 0) {
        rc = ann_fail_errno("pipe for the parquet converter");
        goto out;
    }
    if ((rc = -posix_spawn_file_actions_init(&fa)) != 0)
        goto out;
    fa_init = 1;
    posix_spawn_file_actions_adddup2(&fa, po[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, pe[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&fa, po[0]);
    posix_spawn_file_actions_addclose(&fa, pe[0]);
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    if (e != 0) {
        pid = -1;
        rc = e == ENOENT ? ann_fail(ANN_EUNSUPPORTED,
                                    "%s: not found in PATH (the parquet converter needs Node; "
                                    "install nodejs, e.g. with make deps)",
                                    argv[0])
                         : ann_fail(-e, "%s: cannot start: %s", argv[0], strerror(e));
        goto out;
    }
    close(po[1]);
    close(pe[1]);
    po[1] = pe[1] = -1;
    struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = ann_fail_errno("poll on the parquet converter");
            goto out;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                capture_add(i == 0 ? out : err, buf, (size_t)n);
            } else if (n == 0 || errno != EINTR) {
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0) {
        if (errno != EINTR) {
            rc = ann_fail_errno("waitpid on the parquet converter");
            goto out;
        }
    }
    pid = -1;
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
out:
    if (pid > 0)
        waitpid(pid, NULL, 0);
    if (fa_init)
        posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0)
            close(po[i]);
        if (pe[i] >= 0)
            close(pe[i]);
    }
    return rc;
}

int ann_parquet_convert(const ann_parquet_files *f, const char *out_dir, ann_metric metric,
                        const ann_parquet_opts *o, json_t **summary)
{
    int rc = 0, status = 0;
    char dir[PATH_MAX], script[PATH_MAX + 32], probe[PATH_MAX + 64];
    char window[24], gtk[24];
    char *argv[24];
    int argc = 0;
    capture out = {0}, err = {0};
    json_t *js = NULL;
    if (summary)
        *summary = NULL;
    if (!f->train && !f->test && !f->neighbors)
        return ann_fail(ANN_EPARAM, "parquet: no input files");
    if ((f->train || f->test) && !out_dir)
        return ann_fail(ANN_EPARAM, "parquet: an output directory is required");
    if (!ann_metric_name(metric))
        return ann_fail(ANN_EPARAM, "parquet: invalid metric %d", (int)metric);
    if ((rc = parquet_node_dir(dir, sizeof dir)))
        return rc;
    snprintf(probe, sizeof probe, "%s/node_modules/hyparquet/package.json", dir);
    if (!file_exists(probe))
        return ann_fail(ANN_EUNSUPPORTED,
                        "%s/node_modules: the npm packages hyparquet and hyparquet-compressors "
                        "are not installed (run make deps)",
                        dir);
    snprintf(script, sizeof script, "%s/" PARQUET_SCRIPT, dir);

    argv[argc++] = "node";
    argv[argc++] = script;
    argv[argc++] = "--metric";
    argv[argc++] = (char *)ann_metric_name(metric);
    if (out_dir) {
        argv[argc++] = "--out";
        argv[argc++] = (char *)out_dir;
    }
    if (f->train) {
        argv[argc++] = "--train";
        argv[argc++] = (char *)f->train;
    }
    if (f->test) {
        argv[argc++] = "--test";
        argv[argc++] = (char *)f->test;
    }
    if (f->neighbors) {
        argv[argc++] = "--neighbors";
        argv[argc++] = (char *)f->neighbors;
    }
    if (o && o->window_rows) {
        snprintf(window, sizeof window, "%u", o->window_rows);
        argv[argc++] = "--window";
        argv[argc++] = window;
    }
    if (o && o->gt_k) {
        snprintf(gtk, sizeof gtk, "%u", o->gt_k);
        argv[argc++] = "--gt-k";
        argv[argc++] = gtk;
    }
    if (o && o->own_offset_index)
        argv[argc++] = "--own-offset-index";
    argv[argc] = NULL;

    out.data = malloc(PARQUET_OUT_MAX + 1);
    err.data = malloc(PARQUET_OUT_MAX + 1);
    if (!out.data || !err.data) {
        rc = -ENOMEM;
        goto out;
    }
    out.data[0] = err.data[0] = '\0';
    if ((rc = run_child(argv, &out, &err, &status)))
        goto out;
    /* the converter's message, without its "parquet2fbin: " prefix and newline */
    char *msg = err.data;
    if (!strncmp(msg, "parquet2fbin: ", 14))
        msg += 14;
    size_t ml = strlen(msg);
    while (ml > 0 && (msg[ml - 1] == '\n' || msg[ml - 1] == '\r'))
        msg[--ml] = '\0';
    if (status == 1) {
        rc = ann_fail(ANN_EFORMAT, "%s", *msg ? msg : "parquet conversion failed");
        goto out;
    }
    if (status != 0) {
        rc = ann_fail(status == 2 ? ANN_EPARAM : ANN_EINTERNAL, "parquet converter exit %d: %s",
                      status, *msg ? msg : "(no message)");
        goto out;
    }
    json_error_t je;
    js = json_loads(out.data, 0, &je);
    if (!js || !json_is_object(js)) {
        rc = ann_fail(ANN_EINTERNAL, "parquet converter: unreadable summary (%s)", je.text);
        goto out;
    }
    if (summary) {
        *summary = js;
        js = NULL;
    }
out:
    json_decref(js);
    free(out.data);
    free(err.data);
    return rc;
}

int ann_import_parquet(const char *const *files, size_t nfiles, const char *out_dir,
                       const char *name, ann_metric metric, uint32_t gt_k, unsigned out_flags)
{
    int rc = 0;
    ann_parquet_files f;
    json_t *summary = NULL, *extra = NULL, *sources = NULL;
    ann_stagedir sd;
    memset(&sd, 0, sizeof sd);
    if ((rc = ann_parquet_classify(files, nfiles, &f)))
        return rc;
    if (!f.train || !f.test)
        return ann_fail(ANN_EPARAM, "parquet import: need a *train*.parquet and a "
                                    "*test*.parquet file (neighbors optional)");
    for (size_t i = 0; i < nfiles; i++) {
        struct stat st;
        if (stat(files[i], &st) == 0 && !S_ISREG(st.st_mode))
            return ann_fail(ANN_EFORMAT, "%s: not a regular file (%s)", files[i],
                            ann_file_kind((unsigned)st.st_mode));
    }
    if (!name) {
        const char *slash = strrchr(out_dir, '/');
        name = slash && slash[1] ? slash + 1 : out_dir;
    }
    /* a temporary sibling, in place of the output only once complete */
    if ((rc = ann_stagedir_begin(&sd, out_dir, out_flags)))
        return rc;
    const char *dir = ann_stagedir_path(&sd);

    ann_parquet_opts o = {.gt_k = gt_k};
    if ((rc = ann_parquet_convert(&f, dir, metric, &o, &summary)))
        goto out;
    sources = json_array();
    if ((rc = ds_source_entry(sources, "train", f.train)) ||
        (rc = ds_source_entry(sources, "test", f.test)) ||
        (f.neighbors && (rc = ds_source_entry(sources, "neighbors", f.neighbors))))
        goto out;
    extra = json_object();
    json_object_set_new(extra, "made_by", json_string("annlab dataset import (parquet2fbin.mjs)"));
    json_object_set_new(extra, "source",
                        json_pack("{s:s, s:O}", "kind", "vectordbbench-parquet", "files",
                                  sources));
    json_object_set_new(extra, "id_maps",
                        json_pack("{s:s, s:s}", "base", "base_ids.i64bin", "query",
                                  "query_ids.i64bin"));
    json_object_set(extra, "converter", summary);
    rc = ann_bundle_finish(dir, name, metric, gt_k, extra);
    if (!rc)
        rc = ann_stagedir_commit(&sd);
out:
    ann_stagedir_abort(&sd);
    json_decref(sources);
    json_decref(extra);
    json_decref(summary);
    return rc;
}
