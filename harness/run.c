/*
 * run.c: `annlab run`, the experiment runner.
 *
 * harness_run_main runs five stages, one function each:
 *
 *   run_config     the command line and the config; validate everything
 *                  (config, engines' parameter tables, dataset, output
 *                  directory) and report every problem before touching
 *                  anything.
 *   run_plan_make  (a dry run lists the cells and stops) the run directory,
 *                  locked; the dataset, prepared if needed and checked; the
 *                  run's files; the expanded cells and what is recorded.
 *   run_builds     every index the cells to run need, before the first cell.
 *   run_cells      each cell, in order, in its own child process.
 *   run_outputs    tables.md and the figures.
 *
 * Each index is built once, in a child process, into
 * index_root/<engine>/<hash of engine, build params, dataset checksum, metric>
 * followed by -f<N> when the engine's on-disk format version N
 * (ann_engine_ops.format_version) is 2 or more (ann_engine_build renames a
 * complete build into place, so a cached directory is always whole).  A
 * cached index is reused only when its build.json records that format, and
 * no index is ever deleted.  Each cell runs as `annlab cell` in a fresh
 * child process in its own process group, so a timeout or Ctrl-C can stop
 * it and whatever it started.  A cell's record is appended to cells.jsonl
 * with one write() followed by fsync, so an interrupted run leaves whole
 * lines only; resuming skips every cell whose id is already recorded.
 *
 * Harness rules every child inherits (docs/protocol.md): the build spec
 * names the shared DiskANN artifact cache <index_root>/artifacts
 * (ann_build_ctx.artifact_dir); OMP_WAIT_POLICY=PASSIVE is set for every
 * build and cell child unless the caller's environment sets it (libgomp,
 * used by FAISS, otherwise spin-waits between parallel regions and steals
 * the CPU of the threads being measured).
 */
#include "harness/run.h"

#include "engines/core/digest.h"
#include "engines/core/fileio.h"
#include "engines/core/owner.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
#include "engines/engine.h"
#include "harness/buildinfo.h"
#include "harness/child.h"
#include "harness/config.h"
#include "datasets/bundle.h"
#include "datasets/prepare.h"
#include "harness/measure.h"
#include "harness/tune.h"
#include "harness/workload.h"
#include "harness/workload_gt.h"
#include "engines/core/exact.h"
#include "engines/core/progress.h"
#include "cgroups/cgroup.h"
#include "cgroups/devstat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef ANNLAB_COVERAGE
void __gcov_dump(void); /* libgcov: write this process's counters now (make coverage) */
#endif

static volatile sig_atomic_t run_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    run_interrupted = 1;
}

static int mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return ann_fail_errno("%s: mkdir", buf);
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return ann_fail_errno("%s: mkdir", buf);
    return 0;
}

static int write_json_atomic(const json_t *v, const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (json_dump_file(v, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
        unlink(tmp);
        return ann_fail(-EIO, "%s: cannot write", tmp);
    }
    if (rename(tmp, path) != 0) {
        int rc = ann_fail_errno("%s: rename", path);
        unlink(tmp);
        return rc;
    }
    return 0;
}

/* ---- cells.jsonl -------------------------------------------------------- */

int harness_cells_load(const char *run_dir, json_t **cells)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/cells.jsonl", run_dir);
    *cells = json_array();
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? 0 : ann_fail_errno("%s: open", path);
    int rc = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned lineno = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (line[len - 1] != '\n')
            break; /* torn last line: its cell was not finished */
        json_error_t jerr;
        json_t *c = json_loads(line, 0, &jerr);
        if (!json_is_object(c)) {
            json_decref(c);
            rc = ann_fail(ANN_ECORRUPT, "%s: line %u: %s", path, lineno,
                          c ? "not an object" : jerr.text);
            break;
        }
        json_array_append_new(*cells, c);
    }
    free(line);
    fclose(f);
    if (!rc)
        harness_cells_latest(*cells);
    return rc;
}

void harness_cells_latest(json_t *cells)
{
    json_t *pos = json_object(); /* id -> index of its first record */
    size_t i = 0;
    while (pos && i < json_array_size(cells)) {
        json_t *c = json_array_get(cells, i);
        const char *id = json_string_value(json_object_get(c, "id"));
        json_t *at = id ? json_object_get(pos, id) : NULL;
        if (!id) {
            i++;
        } else if (!at) {
            json_object_set_new(pos, id, json_integer((json_int_t)i));
            i++;
        } else {
            /* a later record of the same cell (a retry) takes the first one's place */
            json_array_set(cells, (size_t)json_integer_value(at), c);
            json_array_remove(cells, i);
        }
    }
    json_decref(pos);
}

/* Cut a torn last line off cells.jsonl before appending to it. */
static int cells_trim(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : ann_fail_errno("%s: open", path);
    int rc = 0;
    off_t size = lseek(fd, 0, SEEK_END), keep = size;
    char c;
    while (keep > 0 && pread(fd, &c, 1, keep - 1) == 1 && c != '\n')
        keep--;
    if (keep != size && ftruncate(fd, keep) != 0)
        rc = ann_fail_errno("%s: truncate torn line", path);
    close(fd);
    return rc;
}

static int cells_append(const char *path, const json_t *rec)
{
    char *s = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(10));
    if (!s)
        return ann_fail(-ENOMEM, "cells.jsonl: cannot serialise a record");
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return ann_fail(-ENOMEM, "cells.jsonl: no memory");
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    int rc = 0;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        rc = ann_fail_errno("%s: open", path);
    else if (write(fd, line, n + 1) != (ssize_t)(n + 1))
        rc = ann_fail_errno("%s: append", path);
    else if (fsync(fd) != 0)
        rc = ann_fail_errno("%s: fsync", path);
    if (fd >= 0)
        close(fd);
    free(line);
    return rc;
}

/* ---- children ----------------------------------------------------------- */

typedef struct child_result {
    int exited, code, signaled, sig, timed_out, interrupted;
    int wait_status;
    double seconds;
    double cpu_s; /* user + system time of the child and what it reaped */
    char last_line[1024]; /* the last non-empty line the child printed ("" = none) */
    int log_errno;        /* the first error writing its log (0 = none) */
} child_result;

/* A child in its own cgroup (capped, or accounting only): the group it
 * runs in and what it counted. */
typedef struct child_cg {
    const cg_system *sys;
    uint64_t cap_bytes;
    char name[64];       /* group name */
    dev_t dev;           /* disk whose reads the group counts (0 = all) */
    int setup_failed;    /* the child was told to quit: reason in reason[] */
    char reason[600];
    cg_counters counters;
    cg_outcome outcome;
} child_cg;

/* What the child printed: copied to its log, the last line kept. */
typedef struct child_out {
    int log_fd;
    char line[1024]; /* the line being read */
    size_t used;
    child_result *res;
} child_out;

static void out_line_done(child_out *o)
{
    o->line[o->used] = '\0';
    o->used = 0;
    const char *msg = o->line;
    /* the child's own "annlab cell: " prefix says nothing here */
    if (!strncmp(msg, "annlab cell: ", 13) || !strncmp(msg, "annlab build: ", 14))
        msg = strchr(msg, ':') + 2;
    if (msg[strspn(msg, " \t\r")])
        snprintf(o->res->last_line, sizeof o->res->last_line, "%s", msg);
}

static void out_take(child_out *o, const char *buf, size_t n)
{
    if (o->log_fd >= 0 && !o->res->log_errno) {
        size_t off = 0;
        while (off < n) {
            ssize_t w = write(o->log_fd, buf + off, n - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                o->res->log_errno = w < 0 ? errno : EIO;
                break;
            }
            off += (size_t)w;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n')
            out_line_done(o);
        else if (o->used < sizeof o->line - 1)
            o->line[o->used++] = buf[i];
    }
}

/* Read what is available on fd (non-blocking); 1 at end of file. */
static int out_drain(child_out *o, int fd)
{
    char buf[4096];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r > 0) {
            out_take(o, buf, (size_t)r);
            continue;
        }
        if (r == 0)
            return 1;
        return errno == EINTR ? 0 : errno == EAGAIN ? 0 : 1;
    }
}

/*
 * Progress of a child shown by the runner: the child writes "progress: "
 * lines (engines/core/progress.h) into its log; the runner shows them, on
 * a terminal as its status line, otherwise as they come (one per 10%).
 */
typedef struct child_relay {
    const char *tag; /* "build diskann-sector", "prepare glove-100-angular" */
    int tty;
    off_t off;       /* bytes of the log already looked at */
} child_relay;

static void relay_poll(child_relay *r, const char *log_path)
{
    if (!r)
        return;
    int fd = open(log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[8192];
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof buf - 1, r->off);
        if (n <= 0)
            break;
        buf[n] = '\0';
        /* whole lines only: a partial last line waits for the next poll */
        char *end = strrchr(buf, '\n');
        if (!end)
            break;
        *end = '\0';
        r->off += end - buf + 1;
        for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save)) {
            if (strncmp(line, "progress: ", 10) != 0)
                continue;
            if (r->tty)
                fprintf(stderr, "\r\033[K[%s] %s", r->tag, line + 10);
            else
                fprintf(stderr, "%s: %s\n", r->tag, line + 10);
        }
    }
    close(fd);
}

/*
 * Run argv in a child in its own process group, its stdout and stderr
 * through a pipe into log_path (so that the last line it printed is known
 * even when the log cannot be written: a full output disk); wait for it,
 * killing the group after timeout_s or on Ctrl-C.  keep_fd: a descriptor
 * the child keeps across exec (an index lock it then shares), or -1.
 * relay (may be NULL) shows the child's progress lines meanwhile.
 */
static int child_run(char *const argv[], const char *log_path, double timeout_s, child_cg *cg,
                     int keep_fd, child_relay *relay, child_result *res)
{
    memset(res, 0, sizeof *res);
    cg_gate gate = { { -1, -1 } };
    cg_group *group = NULL;
    int pipefd[2] = { -1, -1 };
    child_out out = { .log_fd = -1, .res = res };
    out.log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out.log_fd < 0)
        res->log_errno = errno; /* the child still runs; its last line is still kept */
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        int rc = ann_fail_errno("pipe for %s", log_path);
        if (out.log_fd >= 0)
            close(out.log_fd);
        return rc;
    }
    if (cg && cg_gate_init(&gate) != 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        if (out.log_fd >= 0)
            close(out.log_fd);
        return ann_fail_errno("cgroup gate");
    }
    double t0 = ann_mono_s();
    pid_t pid = fork();
    if (pid < 0) {
        int rc = ann_fail_errno("fork");
        close(pipefd[0]);
        close(pipefd[1]);
        if (out.log_fd >= 0)
            close(out.log_fd);
        cg_gate_fini(&gate);
        return rc;
    }
    if (pid == 0) {
        if (cg) {
            /* the cell waits on this descriptor until it is in its group */
            char fdbuf[16];
            fcntl(gate.fds[0], F_SETFD, 0);
            snprintf(fdbuf, sizeof fdbuf, "%d", gate.fds[0]);
            setenv("ANNLAB_CG_GATE_FD", fdbuf, 1);
        }
        if (keep_fd >= 0) {
            char fdbuf[16];
            fcntl(keep_fd, F_SETFD, 0);
            snprintf(fdbuf, sizeof fdbuf, "%d", keep_fd);
            setenv("ANNLAB_INDEX_LOCK_FD", fdbuf, 1);
        }
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
#ifdef ANNLAB_COVERAGE
        __gcov_dump(); /* exec discards this process's counters: keep the child's lines */
#endif
        execvp(argv[0], argv);
        dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    fcntl(pipefd[0], F_SETFL, fcntl(pipefd[0], F_GETFL) | O_NONBLOCK);
    setpgid(pid, pid);
    if (cg) {
        int rc = cg_group_create(cg->sys, cg->name, cg->cap_bytes, &group);
        if (!rc && cg->dev) /* v1 blkio counts reads only where a rule is set */
            (void)cg_group_watch_device(group, cg->dev);
        if (!rc)
            rc = cg_group_add_pid(group, pid);
        if (rc) {
            cg->setup_failed = 1;
            snprintf(cg->reason, sizeof cg->reason, "memory cap not applied: %s", ann_errmsg(rc));
        }
        cg_gate_release(&gate, rc == 0);
        cg_gate_fini(&gate);
    }
    int status = 0, killed = 0, eof = 0, rc = 0;
    double last_relay = ann_mono_s();
    if (relay)
        relay->off = 0;
    for (;;) {
        struct rusage ru;
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid) {
            res->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
            break;
        }
        if (w < 0 && errno != EINTR) {
            rc = ann_fail_errno("wait4");
            break;
        }
        if (!killed && run_interrupted) {
            res->interrupted = 1;
            kill(-pid, SIGKILL);
            killed = 1;
        } else if (!killed && ann_mono_s() - t0 > timeout_s) {
            res->timed_out = 1;
            kill(-pid, SIGKILL);
            killed = 1;
        }
        if (!eof) {
            struct pollfd pf = { .fd = pipefd[0], .events = POLLIN };
            if (poll(&pf, 1, 10) > 0)
                eof = out_drain(&out, pipefd[0]);
        } else {
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
        if (relay && ann_mono_s() - last_relay > 0.25) {
            relay_poll(relay, log_path);
            last_relay = ann_mono_s();
        }
    }
    relay_poll(relay, log_path);
    if (killed)
        kill(-pid, SIGKILL); /* anything the child left in its group */
    if (!eof)
        (void)out_drain(&out, pipefd[0]); /* what is left; never waits for grandchildren */
    if (out.used)
        out_line_done(&out);
    close(pipefd[0]);
    if (out.log_fd >= 0) {
        if (!res->log_errno && fsync(out.log_fd) != 0 && errno != EINVAL)
            res->log_errno = errno;
        if (close(out.log_fd) != 0 && !res->log_errno)
            res->log_errno = errno;
    }
    if (rc)
        return rc;
    res->seconds = ann_mono_s() - t0;
    res->wait_status = status;
    if (group) {
        cg_group_read(group, cg->dev, &cg->counters);
        cg_classify(status, &cg->counters, &cg->outcome);
        cg_group_destroy(group);
    }
    res->exited = WIFEXITED(status);
    res->code = res->exited ? WEXITSTATUS(status) : -1;
    res->signaled = WIFSIGNALED(status);
    res->sig = res->signaled ? WTERMSIG(status) : 0;
    return 0;
}

/* 1 when the log could not be written because its disk or quota is full. */
static int log_disk_full(const child_result *res)
{
    return res->log_errno == ENOSPC || res->log_errno == EDQUOT;
}

/*
 * Why a child that exited non-zero failed, for a record: the last line it
 * printed, or, when it printed nothing, its exit status; and when its log
 * could not be written, why.  Never empty.
 */
static void child_reason(const child_result *res, const char *log_path, char *buf, size_t len)
{
    if (res->last_line[0])
        snprintf(buf, len, "%s", res->last_line);
    else
        snprintf(buf, len, "exited with status %d and printed nothing (log %s)", res->code,
                 log_path);
    if (res->log_errno) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "; its log %s could not be written: %s", log_path,
                 strerror(res->log_errno));
    }
}

/* 1 when a child's failure is transient (harness/child.h): its exit code says
 * so, or its output could not be logged for want of space. */
static int child_transient(const child_result *res)
{
    return (res->exited && res->code == HARNESS_EXIT_TRANSIENT) || log_disk_full(res);
}

static void self_exe(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        snprintf(buf, len, "annlab");
    else
        buf[n] = '\0';
}

/* ---- the runner --------------------------------------------------------- */

typedef struct run_ctx {
    const char *config_path;
    json_t *cfg;
    char out_dir[4096];
    char dataset_dir[4096];
    char index_root[4096];
    char artifact_dir[4200]; /* <index_root>/artifacts: the builds' shared DiskANN artifacts */
    char exe[4096];
    ann_bundle ds;
    json_t *builds; /* directory name -> {"status": "ok"|"error"|"transient"|"busy", "reason",
                       "index_dir", "info"} */
    int tty;
    int wait;        /* --wait: wait for locks instead of stopping */
    double t_start;
    cg_system cgs;   /* memory caps: usable when cg_ok */
    int cg_ok;
    dev_t index_dev; /* disk of the index root, for cgroup read counters */
    char owner_tag[48]; /* this run's "<pid>-<start>", in the names of its cgroups */
    char tune_gt[4400]; /* warm-up queries' exact ground truth, when a cell has a target recall */
    harness_workload wl; /* the config's workload, when has_wl */
    int has_wl;
    char wl_gt[4400];    /* its search steps' ground truth */
} run_ctx;

/*
 * The vectors a cell's index is built over: the whole base, or with a
 * workload the rows its first step inserts ([0, end): workload.h), or
 * none with a live build.
 */
static uint64_t build_rows(const run_ctx *x)
{
    if (x->has_wl && x->wl.live_build)
        return 0;
    if (x->has_wl && x->wl.n && x->wl.steps[0].end < x->ds.n)
        return x->wl.steps[0].end;
    return x->ds.n;
}

/*
 * The config's cells (harness_config_expand); with a workload each names
 * it ({"steps_hash", "writers"}), which is part of its id.
 */
static json_t *expand_cells(const run_ctx *x)
{
    json_t *cells = harness_config_expand(x->cfg);
    if (!cells || !x->has_wl)
        return cells;
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        json_object_set_new(c, "workload",
                            json_pack("{s:s, s:i, s:b}", "steps_hash", x->wl.hash, "writers",
                                      (int)x->wl.writers, "search_during_inserts",
                                      x->wl.search_during_inserts));
        if (x->wl.live_build) /* only then: the ids of other cells stay as they were */
            json_object_set_new(json_object_get(c, "workload"), "live_build", json_true());
        char id[17];
        harness_cell_id(c, id);
        json_object_set_new(c, "id", json_string(id));
    }
    return cells;
}

static const char *signame(int sig)
{
    const char *s = sigabbrev_np(sig);
    return s ? s : "?";
}

/* Set a build entry's status and reason. */
static json_t *build_status(json_t *b, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static json_t *build_status(json_t *b, const char *status, const char *fmt, ...)
{
    char reason[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    json_object_set_new(b, "status", json_string(status));
    json_object_set_new(b, "reason", json_string(reason));
    return b;
}

/*
 * Make sure the index for cell exists; returns its build entry (borrowed),
 * or NULL when interrupted.
 *
 * The cache directory: index_root/<engine>/<hash>, hash over the engine,
 * build parameters (with the default of any keyed_default parameter the
 * config leaves out, params.h), dataset checksum and metric, with -f<N> appended when
 * the engine's format version N is 2 or more.  So an engine that raises its
 * format builds into a new directory and leaves the old one as it is,
 * while the directories of format-1 indexes keep the names they had before
 * the format entered the name (a full rebuild of every cache would have
 * bought nothing).  A directory whose build.json records another format
 * than the engine declares (edited by hand, or an engine that wrote a
 * format it does not declare) is neither reused nor touched: every cell
 * on it is an error saying so.
 *
 * Concurrency: a complete index appears under its name in one rename, so
 * a build.json that is there is whole.  Otherwise the index is built under
 * the lock index_root/<engine>/<name>.lock (owner.h), which the build
 * child shares: another run that needs the same index meanwhile stops
 * (status "busy": `annlab run` exits 2 naming the holder) or, with --wait,
 * waits and then finds the index built.  Under the lock, temporaries of
 * builders that died (kill -9, a crash) are removed; a live builder's
 * never are.
 */
/* The cache directory name of a cell's index (see ensure_build) into
 * name (32 bytes); *format receives the engine's format version. */
static void build_name(const run_ctx *rc_, const json_t *cell, char name[32], uint32_t *format)
{
    const char *engine = json_string_value(json_object_get(cell, "engine"));
    const ann_engine_ops *ops = ann_engine_find(engine); /* validated with the config */
    /* an engine that declares no format (0) counts as format 1 */
    *format = ops && ops->format_version ? ops->format_version : 1;
    /* the metric too: two bundles of the same base.fbin (one imported as
     * cosine, one as l2) have the same checksum but need their own index */
    const json_t *build = json_object_get(cell, "build");
    json_t *key = json_pack("{s:s, s:O, s:s, s:s}", "engine", engine, "build", build,
                            "dataset", rc_->ds.checksum, "metric",
                            ann_metric_name(rc_->ds.metric));
    /* a default that changed (build_precision: f16, then i8) is part of the
     * name when the config leaves it out, so an index built under the old
     * default is not taken for one built under the new.  It goes in beside
     * the build parameters, not among them: the index records the
     * parameters as the config gave them (build.json), so a config naming
     * the default explicitly has an index of its own.  Every other index
     * keeps its name. */
    json_t *defaults = json_object();
    for (const ann_param_spec *s = ops ? ops->build_params : NULL; s && s->name; s++)
        if (s->keyed_default && !json_object_get(build, s->name))
            json_object_set_new(defaults, s->name,
                                s->type == ANN_PARAM_ENUM ? json_string(s->def_str)
                                                          : json_real(s->def));
    if (json_object_size(defaults) > 0)
        json_object_set(key, "defaults", defaults);
    json_decref(defaults);
    /* an index over the first rows only (a workload's first step) is its own */
    if (build_rows(rc_) < rc_->ds.n)
        json_object_set_new(key, "base_rows", json_integer((json_int_t)build_rows(rc_)));
    char hash[17];
    harness_json_hash16(key, hash);
    json_decref(key);
    if (*format >= 2)
        snprintf(name, 32, "%s-f%u", hash, *format);
    else
        snprintf(name, 32, "%s", hash);
}

static json_t *ensure_build(run_ctx *rc_, const json_t *cell)
{
    const char *engine = json_string_value(json_object_get(cell, "engine"));
    char name[32];
    uint32_t format;
    build_name(rc_, cell, name, &format);
    json_t *b = json_object_get(rc_->builds, name);
    if (b)
        return b;
    char index_dir[4300], path[4400], parent[4300], lock_path[4400], why[2048];
    snprintf(index_dir, sizeof index_dir, "%s/%s/%s", rc_->index_root, engine, name);
    snprintf(path, sizeof path, "%s/build.json", index_dir);
    snprintf(parent, sizeof parent, "%s/%s", rc_->index_root, engine);
    snprintf(lock_path, sizeof lock_path, "%s/%s.lock", parent, name);
    b = json_pack("{s:s}", "index_dir", index_dir);
    json_object_set_new(rc_->builds, name, b);
    ann_lock lock = { .fd = -1 };
    json_t *info = NULL;
    int rc = 0;
    for (int locked = 0;; locked = 1) {
        if (access(path, F_OK) == 0) {
            info = harness_build_info_load_n(path, engine, json_object_get(cell, "build"),
                                             &rc_->ds, build_rows(rc_), why, sizeof why);
            if (!info) {
                build_status(b, "error", "%s; remove %s to rebuild it", why, index_dir);
                goto out;
            }
            long long have = harness_build_info_format(info);
            if (have != (long long)format) {
                char what[256];
                if (have < 0)
                    snprintf(what, sizeof what, "no valid %s format", engine);
                else
                    snprintf(what, sizeof what, "%s format %lld", engine, have);
                build_status(b, "error",
                             "%s: build.json records %s, this annlab reads format %u; not "
                             "reused and left as it is (move or remove it to rebuild)",
                             index_dir, what, format);
                json_decref(info);
                goto out;
            }
            /* every file as build.json recorded it (once per run, cached
             * by size, mtime and inode): a flipped byte in a store or
             * vector file is an error here, not a crash or a wrong recall */
            const json_t *files = json_object_get(info, "files");
            if (files && (rc = ann_digest_verify(index_dir, files, "build.json", NULL))) {
                build_status(b, ann_is_transient(rc) ? "transient" : "error",
                             "%s; remove %s to rebuild it", ann_errmsg(rc), index_dir);
                json_decref(info);
                goto out;
            }
            json_object_set_new(b, "status", json_string("ok"));
            json_object_set_new(b, "cached", json_true());
            json_object_set_new(b, "info", info);
            goto out;
        }
        if (locked)
            break;
        if ((rc = mkdirs(parent))) {
            build_status(b, ann_is_transient(rc) ? "transient" : "error", "%s", ann_errmsg(rc));
            goto out;
        }
        char what[4600];
        snprintf(what, sizeof what, "annlab run %s (building %s)", rc_->config_path, index_dir);
        rc = ann_lock_take(&lock, lock_path, what, 0, 1);
        if (rc == ANN_EBUSY && rc_->wait) {
            fprintf(stderr, "%swaiting for %s\n", rc_->tty ? "\r\033[K" : "", ann_errmsg(rc));
            rc = ann_lock_take(&lock, lock_path, what, 1, 1);
        }
        if (rc == ANN_EBUSY) {
            build_status(b, "busy", "%s: being built by another run (%s)", index_dir,
                         ann_errmsg(rc));
            goto out;
        }
        if (rc) {
            build_status(b, ann_is_transient(rc) ? "transient" : "error", "%s", ann_errmsg(rc));
            goto out;
        }
        /* the holder we waited for may have finished it: look again */
    }
    /* ours to build: first what dead builders of this name left */
    unsigned reaped = 0;
    if (ann_tmp_reap(parent, name, &reaped) == 0 && reaped)
        fprintf(stderr, "%sremoved %u temporary director%s of a dead build of %s\n",
                rc_->tty ? "\r\033[K" : "", reaped, reaped == 1 ? "y" : "ies", index_dir);
    if (access(index_dir, F_OK) == 0) {
        /* not made by ann_engine_build, which renames only complete builds */
        build_status(b, "error", "%s exists without build.json (not a complete build); remove it",
                     index_dir);
        goto out;
    }
    char spec_path[4400], log_path[4400];
    snprintf(spec_path, sizeof spec_path, "%s/specs/build-%s.json", rc_->out_dir, name);
    snprintf(log_path, sizeof log_path, "%s/logs/build-%s.log", rc_->out_dir, name);
    json_t *spec = json_pack("{s:s, s:O, s:s, s:s, s:s}", "engine", engine, "build",
                             json_object_get(cell, "build"), "dataset_dir", rc_->dataset_dir,
                             "index_dir", index_dir, "artifact_dir", rc_->artifact_dir);
    if (build_rows(rc_) < rc_->ds.n)
        json_object_set_new(spec, "base_rows", json_integer((json_int_t)build_rows(rc_)));
    rc = write_json_atomic(spec, spec_path);
    json_decref(spec);
    if (rc) {
        build_status(b, ann_is_transient(rc) ? "transient" : "error", "%s", ann_errmsg(rc));
        goto out;
    }
    if (rc_->tty)
        fprintf(stderr, "\r\033[Kbuilding %s %s ...", engine, name);
    else
        fprintf(stderr, "building %s index %s\n", engine, name);
    char *argv[] = { rc_->exe, "build", spec_path, NULL };
    child_result res;
    /* the child's stderr is its log, so its progress comes in lines per 10%,
     * which the runner shows */
    char tag[200];
    snprintf(tag, sizeof tag, "build %s", engine);
    child_relay relay = { .tag = tag, .tty = rc_->tty };
    rc = child_run(argv, log_path, harness_cfg_real(rc_->cfg, "build_timeout_s"), NULL, lock.fd,
                   &relay, &res);
    /* a killed child could not clean up after itself: its temporary is now a
     * dead owner's (a live sibling's never is: it would hold the lock) */
    if (rc || res.interrupted || res.timed_out || res.signaled)
        (void)ann_tmp_reap(parent, name, NULL);
    if (rc) {
        build_status(b, ann_is_transient(rc) ? "transient" : "error", "%s", ann_errmsg(rc));
    } else if (res.interrupted) {
        json_object_del(rc_->builds, name);
        b = NULL;
    } else if (res.timed_out) {
        build_status(b, "timeout", "build exceeded build_timeout_s=%g",
                     harness_cfg_real(rc_->cfg, "build_timeout_s"));
    } else if (res.signaled) {
        build_status(b, "error", "build killed by SIG%s%s%s", signame(res.sig),
                     res.last_line[0] ? "; it last printed: " : "", res.last_line);
    } else if (res.code != 0) {
        char tail[1400];
        child_reason(&res, log_path, tail, sizeof tail);
        build_status(b, child_transient(&res) ? "transient" : "error", "build failed: %s", tail);
    } else if (!(info = harness_build_info_load_n(path, engine, json_object_get(cell, "build"),
                                                  &rc_->ds, build_rows(rc_), why, sizeof why))) {
        build_status(b, "error", "%s", why);
    } else {
        json_object_set_new(b, "status", json_string("ok"));
        json_object_set_new(b, "cached", json_false());
        json_object_set_new(b, "info", info);
    }
out:
    ann_lock_release(&lock);
    return b;
}

/* The record of a cell that produced no figures. */
static json_t *record_empty(const json_t *cell)
{
    json_t *r = json_deep_copy(cell);
    static const char *const nulls[] = { "recall", "recall_plain", "recall_p5", "latency_us", "qps",
                                         "engine_stats", "device", "memory", "cache_eviction", "index" };
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        json_object_set_new(r, nulls[i], json_null());
    return r;
}

json_t *harness_reused_artifacts(const json_t *info)
{
    const json_t *rep = json_object_get(info, "engine_report");
    const json_t *phases = json_object_get(rep, "phases");
    json_t *a = json_array();
    /* the record engines report at the top of engine_report, diskann-sector
     * among its phases */
    if (json_is_true(json_object_get(rep, "pq_cached")) ||
        json_is_true(json_object_get(phases, "pq_cached")))
        json_array_append_new(a, json_string("pq"));
    if (json_is_true(json_object_get(rep, "graph_cached")) ||
        json_is_true(json_object_get(phases, "graph_cached")))
        json_array_append_new(a, json_string("graph"));
    return a;
}

static void set_index_fields(json_t *rec, const json_t *build)
{
    const json_t *info = json_object_get(build, "info");
    if (!info)
        return;
    json_object_set_new(rec, "index",
                        json_pack("{s:O, s:O, s:O, s:O, s:O, s:b, s:o}", "bytes_on_disk",
                                  json_object_get(info, "bytes_on_disk"), "build_seconds",
                                  json_object_get(info, "build_seconds"), "build_cpu_seconds",
                                  json_object_get(info, "build_cpu_seconds"), "build_peak_rss_bytes",
                                  json_object_get(info, "build_peak_rss_bytes"), "dir",
                                  json_object_get(build, "index_dir"), "cached_at_run",
                                  json_is_true(json_object_get(build, "cached")), "reused",
                                  harness_reused_artifacts(info)));
}

/* How busy the machine was while a cell ran, beside the cell's own CPU time
 * (harness_cpu_busy_take): others_cores is the average number of cores other
 * processes kept busy, so a reader can tell a quiet-machine figure from one
 * taken under load; irq_cores the cores interrupt work took (mostly the
 * cell's own device reads completing: an I/O-bound cell shows 0.1-0.6 on
 * an otherwise idle machine here, an in-memory one about 0.03) and
 * steal_cores what the hypervisor took.  busy_s is the sum of all three
 * parts.  Null figures when /proc/stat could not be read.  Until this split
 * (2026-12-02) others_cores included the interrupt and steal parts. */
static json_t *machine_cpu_json(const child_result *res, const harness_cpu_busy *b0,
                                const harness_cpu_busy *b1)
{
    if (!b0 || !b1 || res->seconds <= 0)
        return json_pack("{s:n, s:f, s:n, s:n, s:n, s:s}", "busy_s", "cell_cpu_s", res->cpu_s,
                         "others_cores", "irq_cores", "steal_cores", "reason",
                         "/proc/stat unreadable");
    double tasks = b1->tasks_s - b0->tasks_s, irq = b1->irq_s - b0->irq_s,
           steal = b1->steal_s - b0->steal_s, others = tasks - res->cpu_s;
    if (others < 0)
        others = 0; /* clock-tick rounding, or interrupt ticks charged to the cell */
    return json_pack("{s:f, s:f, s:f, s:f, s:f}", "busy_s", tasks + irq + steal, "cell_cpu_s",
                     res->cpu_s, "others_cores", others / res->seconds, "irq_cores",
                     irq / res->seconds, "steal_cores", steal / res->seconds);
}

/* Run one cell; *rec receives its record, or NULL when interrupted. */
static int run_cell(run_ctx *x, const json_t *cell, json_t **rec)
{
    *rec = NULL;
    const char *id = json_string_value(json_object_get(cell, "id"));
    json_t *r = NULL;
    int capped = !json_is_null(json_object_get(cell, "memory_cap_bytes"));
    if (capped && !x->cg_ok) {
        /* never run uncapped in place of a capped cell */
        r = record_empty(cell);
        json_object_set_new(r, "status", json_string("skipped"));
        json_object_set_new(r, "reason", json_sprintf("memory caps unavailable here: %s", x->cgs.reason));
        goto done;
    }
    json_t *b = ensure_build(x, cell);
    if (!b)
        return 0; /* interrupted */
    const char *bst = json_string_value(json_object_get(b, "status"));
    if (!strcmp(bst, "busy")) /* another run builds it: the run stops (or waited) */
        return ann_fail(ANN_EBUSY, "%s", json_string_value(json_object_get(b, "reason")));
    if (strcmp(bst, "ok") != 0) {
        /* error, transient or timeout: the cell's class is its build's */
        r = record_empty(cell);
        json_object_set_new(r, "status", json_string(bst));
        json_object_set_new(r, "reason", json_copy(json_object_get(b, "reason")));
        goto done;
    }
    char spec_path[4400], out_path[4400], log_path[4400], lat_path[4400], lat_rel[64];
    char nb_path[4400], nb_rel[64];
    snprintf(spec_path, sizeof spec_path, "%s/specs/%s.json", x->out_dir, id);
    snprintf(out_path, sizeof out_path, "%s/specs/%s.result.json", x->out_dir, id);
    snprintf(log_path, sizeof log_path, "%s/logs/%s.log", x->out_dir, id);
    snprintf(lat_rel, sizeof lat_rel, "latencies/%s.txt", id);
    snprintf(lat_path, sizeof lat_path, "%s/%s", x->out_dir, lat_rel);
    snprintf(nb_rel, sizeof nb_rel, "neighbors/%s.ibin", id);
    snprintf(nb_path, sizeof nb_path, "%s/%s", x->out_dir, nb_rel);
    unlink(out_path);
    json_t *spec = json_pack(
        "{s:O, s:I, s:s, s:O, s:I, s:I, s:I, s:f, s:b, s:b, s:s}", "cell", cell, "k",
        (json_int_t)harness_cfg_int(x->cfg, "k"), "dataset_dir", x->dataset_dir, "index_dir",
        json_object_get(b, "index_dir"), "queries", (json_int_t)harness_cfg_int(x->cfg, "queries"),
        "warmup_queries", (json_int_t)harness_cfg_int(x->cfg, "warmup_queries"), "repeats",
        (json_int_t)harness_cfg_int(x->cfg, "repeats"), "qps_min_seconds",
        harness_cfg_real(x->cfg, "qps_min_seconds"), "drop_caches",
        harness_cfg_bool(x->cfg, "drop_caches"), "pin_threads",
        harness_cfg_bool(x->cfg, "pin_threads"), "latency_path", lat_path);
    json_object_set_new(spec, "neighbors_path", json_string(nb_path));
    if (x->tune_gt[0])
        json_object_set_new(spec, "tune_gt_path", json_string(x->tune_gt));
    if (x->has_wl) {
        char work[4400];
        snprintf(work, sizeof work, "%s/work/%s", x->out_dir, id);
        json_object_set_new(spec, "workload",
                            json_pack("{s:o, s:i, s:b}", "steps",
                                      harness_workload_steps_json(&x->wl), "writers",
                                      (int)x->wl.writers, "search_during_inserts",
                                      x->wl.search_during_inserts));
        if (x->wl.live_build)
            json_object_set_new(json_object_get(spec, "workload"), "live_build", json_true());
        json_object_set_new(spec, "workload_gt", json_string(x->wl_gt));
        json_object_set_new(spec, "work_dir", json_string(work));
        char nbp[4400];
        snprintf(nbp, sizeof nbp, "%s/neighbors/%s", x->out_dir, id);
        json_object_set_new(spec, "neighbors_prefix", json_string(nbp));
    }
    int rc = write_json_atomic(spec, spec_path);
    json_decref(spec);
    if (rc)
        return rc;
    const char *wrapper = getenv("ANNLAB_CELL_WRAPPER");
    char *argv_plain[] = { x->exe, "cell", spec_path, out_path, NULL };
    char *argv_wrap[] = { (char *)wrapper, x->exe, "cell", spec_path, out_path, NULL };
    child_result res;
    child_cg cg = { .sys = &x->cgs, .dev = x->index_dev };
    /* Where cgroups work every cell runs in its own group, uncapped ones
     * with no limit (accounting only): the group's read counters are the
     * cell's own, whatever else reads the disk meanwhile. */
    int in_cg = capped || x->cg_ok;
    if (in_cg) {
        if (capped)
            cg.cap_bytes = (uint64_t)json_integer_value(json_object_get(cell, "memory_cap_bytes"));
        /* named by its run, so a later run can tell a dead run's groups (cg_reap_stale) */
        snprintf(cg.name, sizeof cg.name, "annlab-%s-%s", id, x->owner_tag);
    }
    double timeout_s = harness_cfg_real(x->cfg, "timeout_s");
    harness_cpu_busy busy0, busy1;
    int have_busy = harness_cpu_busy_take(&busy0) == 0;
    rc = child_run(wrapper && *wrapper ? argv_wrap : argv_plain, log_path, timeout_s,
                   in_cg ? &cg : NULL, -1, NULL, &res);
    if (x->has_wl) {
        /* the workload's copy of the index, also when the child was killed
         * (timeout, Ctrl-C) before it could remove it */
        char work[4400];
        snprintf(work, sizeof work, "%s/work/%s", x->out_dir, id);
        (void)ann_tree_remove(work);
    }
    if (rc)
        return rc;
    have_busy = have_busy && harness_cpu_busy_take(&busy1) == 0;
    if (res.interrupted)
        return 0;
    r = record_empty(cell);
    char reason[1200] = "";
    const char *status = "ok";
    json_error_t jerr;
    json_t *figures = NULL;
    if (in_cg && cg.setup_failed) {
        status = "error";
        snprintf(reason, sizeof reason, "%s", cg.reason);
    } else if (res.timed_out) {
        status = "timeout";
        snprintf(reason, sizeof reason, "exceeded timeout_s=%g", timeout_s);
    } else if (capped && cg.outcome.status == CG_OOM) {
        status = "oom";
        snprintf(reason, sizeof reason, "%s", cg.outcome.reason);
    } else if (res.signaled) {
        status = "error";
        snprintf(reason, sizeof reason, "cell process killed by SIG%s%s%s%s", signame(res.sig),
                 res.sig == SIGKILL ? " (not by the harness)" : "",
                 res.last_line[0] ? "; it last printed: " : "", res.last_line);
    } else if (res.code != 0) {
        /* a full disk, a lock, ...: retried by --resume; the rest is deterministic */
        status = child_transient(&res) ? "transient" : "error";
        child_reason(&res, log_path, reason, sizeof reason);
    } else if (!(figures = json_load_file(out_path, 0, &jerr))) {
        status = log_disk_full(&res) ? "transient" : "error";
        snprintf(reason, sizeof reason, "%s: %s", out_path, jerr.text);
    } else if (json_is_array(json_object_get(figures, "steps"))) {
        /* a workload: one record per step (workload_records, below) */
        json_object_set_new(r, "steps", json_incref(json_object_get(figures, "steps")));
        json_object_set_new(r, "open_report", json_incref(json_object_get(figures, "open_report")));
        json_decref(figures);
        unlink(out_path);
    } else {
        json_object_update(r, figures);
        json_decref(figures);
        json_object_set_new(r, "latency_file", json_string(lat_rel));
        json_object_set_new(r, "neighbors_file", json_string(nb_rel));
        unlink(out_path);
    }
    json_object_set_new(r, "status", json_string(status));
    json_object_set_new(r, "reason", reason[0] ? json_string(reason) : json_null());
    json_object_set_new(r, "cell_seconds", json_real(res.seconds));
    json_object_set_new(
        r, "machine_cpu",
        machine_cpu_json(&res, have_busy ? &busy0 : NULL, have_busy ? &busy1 : NULL));
    if (in_cg && !cg.setup_failed)
        json_object_set_new(r, "cgroup", cg_counters_json(&cg.counters));
    set_index_fields(r, b);
done:
    json_object_set_new(r, "k", json_integer(harness_cfg_int(x->cfg, "k")));
    json_object_set_new(r, "dataset", json_pack("{s:s, s:s}", "name", x->ds.name, "checksum", x->ds.checksum));
    json_object_set_new(r, "finished_at", json_integer((json_int_t)time(NULL)));
    *rec = r;
    return 0;
}

/*
 * A workload cell's record r (with "steps") as the cells.jsonl lines it
 * makes: one per step, each the cell's record with the step's figures, the
 * id "<cell id>.<step>" (steps numbered from 1) and "workload_cell": the
 * cell's id.  A new array.
 */
static json_t *workload_records(const json_t *r)
{
    json_t *out = json_array();
    const json_t *steps = json_object_get(r, "steps");
    const char *cid = json_string_value(json_object_get(r, "id"));
    size_t i;
    json_t *st;
    json_array_foreach(steps, i, st) {
        json_t *line = json_deep_copy(r);
        json_object_del(line, "steps");
        json_object_update(line, st);
        char id[64];
        snprintf(id, sizeof id, "%s.%zu", cid ? cid : "", i + 1); /* its step number */
        json_object_set_new(line, "id", json_string(id));
        json_object_set_new(line, "workload_cell", json_string(cid ? cid : ""));
        json_object_set_new(line, "repeats", json_integer(1)); /* a workload runs once */
        json_array_append_new(out, line);
    }
    return out;
}

static void describe_cell(const json_t *c, char *buf, size_t len)
{
    char *s = json_dumps(json_object_get(c, "search"), JSON_COMPACT | JSON_SORT_KEYS);
    char *b = json_dumps(json_object_get(c, "build"), JSON_COMPACT | JSON_SORT_KEYS);
    char *o = json_dumps(json_object_get(c, "open"), JSON_COMPACT | JSON_SORT_KEYS);
    int has_open = o && strcmp(o, "{}");
    snprintf(buf, len, "%s %s T=%lld build=%s%s%s search=%s%s",
             json_string_value(json_object_get(c, "label")),
             json_string_value(json_object_get(c, "mode")),
             (long long)json_integer_value(json_object_get(c, "threads")), b ? b : "{}",
             has_open ? " open=" : "", has_open ? o : "", s ? s : "{}",
             json_is_null(json_object_get(c, "memory_cap_bytes")) ? "" : " capped");
    free(s);
    free(b);
    free(o);
}

static int latest_run(const char *name, char *out, size_t len);

/* Cells of a run directory by id (an empty object when there are none). */
static json_t *cells_by_id(const char *dir)
{
    json_t *cells = NULL, *by = json_object();
    if (dir && dir[0] && harness_cells_load(dir, &cells) == 0) {
        size_t i;
        json_t *c;
        json_array_foreach(cells, i, c)
            if (json_is_string(json_object_get(c, "id")))
                json_object_set(by, json_string_value(json_object_get(c, "id")), c);
    }
    json_decref(cells);
    return by;
}

/*
 * `annlab run --dry-run`: the cells with every parameter (build, open,
 * search), which indexes are already built, and the time the run should
 * take, from what the same cells and builds took in this config's last
 * run here (and in --out's own cells.jsonl when resuming); cells and
 * builds never timed here are counted and said, not guessed.
 */
static void dry_run_report(run_ctx *x, const char *name, const char *only, const char *prepare_name,
                           int ds_ok)
{
    json_t *list = expand_cells(x);
    char prev_dir[4096] = "";
    if (name && latest_run(name, prev_dir, sizeof prev_dir) != 0)
        prev_dir[0] = '\0';
    json_t *prev = cells_by_id(prev_dir), *done = cells_by_id(x->out_dir);
    size_t i, shown = 0, recorded = 0, untimed_cells = 0, nbuilds = 0, cached = 0, untimed_builds = 0;
    double est = 0;
    json_t *c;
    printf("cells:\n");
    json_array_foreach(list, i, c) {
        if (only && strcmp(only, json_string_value(json_object_get(c, "engine"))) &&
            strcmp(only, json_string_value(json_object_get(c, "label"))))
            continue;
        shown++;
        const char *id = json_string_value(json_object_get(c, "id"));
        char desc[1024], when[96] = "";
        describe_cell(c, desc, sizeof desc);
        const json_t *had = json_object_get(done, id);
        if (had) {
            recorded++;
            snprintf(when, sizeof when, "  [already recorded: skipped by --resume]");
        } else {
            const json_t *p = json_object_get(prev, id);
            const json_t *s = json_object_get(p, "cell_seconds");
            if (json_is_number(s)) {
                est += json_number_value(s);
                char d[32];
                ann_progress_duration(json_number_value(s), d, sizeof d);
                snprintf(when, sizeof when, "  [%s last time]", d);
            } else {
                untimed_cells++;
            }
        }
        printf("  %s %s%s\n", id, desc, when);
    }
    printf("builds:\n");
    if (!ds_ok) {
        printf("  (the dataset is not prepared yet: every index is built after it; times unknown)\n");
    } else {
        json_t *seen = json_object();
        json_array_foreach(list, i, c) {
            if (only && strcmp(only, json_string_value(json_object_get(c, "engine"))) &&
                strcmp(only, json_string_value(json_object_get(c, "label"))))
                continue;
            char bname[32], index_dir[4300], path[4400];
            uint32_t format;
            build_name(x, c, bname, &format);
            const char *engine = json_string_value(json_object_get(c, "engine"));
            snprintf(index_dir, sizeof index_dir, "%s/%s/%s", x->index_root, engine, bname);
            if (json_object_get(seen, index_dir))
                continue;
            json_object_set_new(seen, index_dir, json_true());
            nbuilds++;
            char *b = json_dumps(json_object_get(c, "build"), JSON_COMPACT | JSON_SORT_KEYS);
            snprintf(path, sizeof path, "%s/build.json", index_dir);
            json_t *info = json_load_file(path, 0, NULL);
            if (info && harness_build_info_format(info) == (long long)format) {
                cached++;
                printf("  %s build=%s: cached in %s\n", engine, b ? b : "{}", index_dir);
            } else {
                /* what building it took in the last run */
                double took = -1;
                const char *key;
                json_t *p;
                json_object_foreach(prev, key, p) {
                    const json_t *ix = json_object_get(p, "index");
                    if (!strcmp(json_string_value(json_object_get(ix, "dir")) ?: "", index_dir) &&
                        json_is_number(json_object_get(ix, "build_seconds")))
                        took = json_number_value(json_object_get(ix, "build_seconds"));
                }
                if (took >= 0) {
                    char d[32];
                    ann_progress_duration(took, d, sizeof d);
                    est += took;
                    printf("  %s build=%s: to build into %s (%s last time)\n", engine, b ? b : "{}",
                           index_dir, d);
                } else {
                    untimed_builds++;
                    printf("  %s build=%s: to build into %s (never built here: time unknown)\n", engine,
                           b ? b : "{}", index_dir);
                }
            }
            json_decref(info);
            free(b);
        }
        json_decref(seen);
    }
    char d[32];
    ann_progress_duration(est, d, sizeof d);
    printf("%zu cells (%zu already recorded); %zu builds (%zu cached); dataset %s%s; output %s\n", shown,
           recorded, nbuilds, cached, x->dataset_dir, prepare_name ? " (would be prepared)" : "",
           x->out_dir);
    printf("estimated time: about %s", d);
    if (untimed_cells || untimed_builds || prepare_name)
        printf(" plus what was never timed here: %zu cells, %zu builds%s", untimed_cells, untimed_builds,
               prepare_name ? ", the dataset's preparation" : "");
    printf(" (from %s)\n", prev_dir[0] ? prev_dir : "no earlier run of this config");
    json_decref(prev);
    json_decref(done);
    json_decref(list);
}

static void figures_line(const json_t *r, char *buf, size_t len)
{
    const char *status = json_string_value(json_object_get(r, "status"));
    if (strcmp(status, "ok") != 0) {
        snprintf(buf, len, "%s: %s", status, json_string_value(json_object_get(r, "reason")));
        return;
    }
    const json_t *steps = json_object_get(r, "steps");
    if (steps) {
        /* a workload: its steps, and the recall of its last search */
        double last = NAN;
        size_t i, searches = 0;
        const json_t *st;
        json_array_foreach(steps, i, st)
            if (json_is_number(json_object_get(st, "recall"))) {
                last = json_number_value(json_object_get(st, "recall"));
                searches++;
            }
        snprintf(buf, len, "%zu steps, %zu searches, last recall=%.3f", json_array_size(steps),
                 searches, last);
        return;
    }
    const json_t *lat = json_object_get(r, "latency_us");
    const json_t *dev = json_object_get(r, "device");
    /* the cell's own reads (its cgroup's) when counted, else the whole disk's */
    const json_t *cg = json_object_get(json_object_get(dev, "cgroup"), "reads_per_query");
    snprintf(buf, len, "recall=%.3f p50=%.0fus p99=%.0fus qps=%.0f dev_reads/q=%.2f%s",
             json_number_value(json_object_get(r, "recall")), json_number_value(json_object_get(lat, "p50")),
             json_number_value(json_object_get(lat, "p99")), json_number_value(json_object_get(r, "qps")),
             json_number_value(cg ? cg : json_object_get(dev, "reads_per_query")), cg ? "" : " (disk)");
    /* a figure taken while other processes kept a core busy says so */
    const json_t *oc = json_object_get(json_object_get(r, "machine_cpu"), "others_cores");
    if (json_is_number(oc) && json_number_value(oc) >= HARNESS_BUSY_CORES) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, " [other processes busy: %.2f cores]", json_number_value(oc));
    }
}

/*
 * Cells with a target recall tune their effort on the warm-up queries
 * (harness/tune.h) against exact ground truth, computed here once per run
 * into <out>/tune/warmup-gt.ibin (kept for --resume): the first
 * warmup_queries warm-up queries (1000 when warm-up is off), depth k.
 * Without warm-up queries nothing is computed and those cells fail saying so.
 */
static int prepare_tune_gt(run_ctx *x, const json_t *cells)
{
    int need = 0;
    size_t i;
    const json_t *c;
    json_array_foreach(cells, i, c) {
        const char *p;
        double t;
        if (!json_is_true(json_object_get(c, "filtered")) &&
            harness_tune_target(json_object_get(c, "search"), &p, &t))
            need = 1;
    }
    if (!need || !x->ds.n_warmup)
        return 0;
    int64_t want = harness_cfg_int(x->cfg, "warmup_queries");
    uint32_t n = (uint32_t)(want > 0 ? want : 1000), k = (uint32_t)harness_cfg_int(x->cfg, "k");
    if (n > x->ds.n_warmup)
        n = x->ds.n_warmup;
    char dir[4300], path[4400];
    snprintf(dir, sizeof dir, "%s/tune", x->out_dir);
    snprintf(path, sizeof path, "%s/warmup-gt.ibin", dir);
    int rc = mkdirs(dir);
    if (rc)
        return rc;
    ann_gt gt = { 0 };
    if (ann_gt_load(path, x->ds.n, &gt) == 0 && gt.nq == n && gt.k == k) {
        ann_gt_free(&gt);
        snprintf(x->tune_gt, sizeof x->tune_gt, "%s", path);
        return 0;
    }
    ann_gt_free(&gt);
    ann_err_clear();
    float *warm = NULL;
    uint32_t n_warm = 0;
    ann_vecsrc *base = NULL;
    gt = (ann_gt){ .nq = n, .k = k, .ids = malloc((size_t)n * k * sizeof(int32_t) + 1),
                   .dists = malloc((size_t)n * k * sizeof(float) + 1) };
    if (!gt.ids || !gt.dists)
        rc = ann_fail(-ENOMEM, "target recall: no memory for %u x %u ground truth", n, k);
    if (!rc && !(rc = ann_bundle_warmup(&x->ds, &warm, &n_warm)) && !(rc = ann_bundle_base(&x->ds, &base))) {
        ann_progress prog;
        char what[128];
        snprintf(what, sizeof what, "ground truth of %u warm-up queries (target recall)", n);
        ann_progress_begin(&prog, what, base->n, "vectors");
        rc = ann_exact_knn_progress(base, warm, n, k, 0, gt.ids, gt.dists, &prog);
        ann_progress_end(&prog);
        if (!rc)
            rc = ann_gt_save(path, &gt);
    }
    if (!rc)
        snprintf(x->tune_gt, sizeof x->tune_gt, "%s", path);
    ann_gt_free(&gt);
    free(warm);
    ann_vecsrc_destroy(base);
    return rc;
}

/* Report a failure of the run itself (not of a cell); the exit code. */
static int run_failed(int rc)
{
    fprintf(stderr, "annlab run: %s\n", ann_errmsg(rc));
    return 1;
}

static void usage_run(FILE *fp)
{
    fprintf(fp, "usage: annlab run CONFIG.json [--out DIR] [--resume | --retry-failed] [--wait]\n"
                "                  [--only ENGINE] [--dry-run]\n"
                "  --resume        continue a run: cells recorded are skipped, but those that\n"
                "                  failed transiently (a full disk, a lock) are run again\n"
                "  --retry-failed  the same, and every failed cell is run again\n"
                "  --wait          wait for a lock another run holds (its run directory, an\n"
                "                  index it builds) instead of stopping with exit code 2\n");
}

/* Newest run directory under results/<name>/ holding a config.json. */
static int latest_run(const char *name, char *out, size_t len)
{
    char root[512];
    snprintf(root, sizeof root, "results/%s", name);
    DIR *d = opendir(root);
    if (!d)
        return ANN_ENOTFOUND;
    char best[256] = "";
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s/config.json", root, e->d_name);
        if (e->d_name[0] != '.' && access(p, F_OK) == 0 && strcmp(e->d_name, best) > 0)
            snprintf(best, sizeof best, "%s", e->d_name);
    }
    closedir(d);
    if (!best[0])
        return ANN_ENOTFOUND;
    snprintf(out, len, "%s/%s", root, best);
    return 0;
}

static int prepare_dataset(run_ctx *x, const char *name, const char *root)
{
    char log_path[4400];
    fprintf(stderr, "preparing dataset %s into %s/%s\n", name, root, name);
    int rc = mkdirs(root);
    if (rc)
        return rc;
    snprintf(log_path, sizeof log_path, "%s/.prepare-%s.log", root, name);
    char *argv[] = { x->exe, "dataset", "prepare", (char *)name, "--root", (char *)root, NULL };
    child_result res;
    char tag[300];
    snprintf(tag, sizeof tag, "prepare %s", name);
    child_relay relay = { .tag = tag, .tty = x->tty };
    rc = child_run(argv, log_path, 1e7, NULL, -1, &relay, &res);
    if (rc)
        return rc;
    if (res.interrupted)
        return ann_fail(-EINTR, "dataset preparation interrupted");
    if (!res.exited || res.code != 0) {
        char tail[1400];
        child_reason(&res, log_path, tail, sizeof tail);
        return ann_fail(ANN_ENOTFOUND, "dataset: cannot prepare \"%s\": %s (log: %s)", name, tail,
                        log_path);
    }
    unlink(log_path);
    return 0;
}

/*
 * The bundle's files against its manifest's sha256s, as the index's
 * against build.json (engines/core/digest.h: hashed once, then cached by
 * size, mtime and inode), before any cell reads them.
 */
static int bundle_check(const ann_bundle *b)
{
    const json_t *files = json_object_get(b->manifest, "files");
    const json_t *base = json_object_get(files, "base.fbin");
    if (!json_is_object(files) || !json_is_string(json_object_get(base, "sha256")))
        return ann_fail(ANN_EFORMAT, "%s/manifest.json: lists no \"files\" with the sha256 of "
                                     "base.fbin; prepare the dataset again",
                        b->dir);
    if (strcmp(json_string_value(json_object_get(base, "sha256")), b->checksum) != 0)
        return ann_fail(ANN_ECORRUPT, "%s/manifest.json: \"checksum\" is not base.fbin's sha256",
                        b->dir);
    unsigned hashed = 0;
    int rc = ann_digest_verify(b->dir, files, "manifest.json", &hashed);
    if (!rc && hashed)
        fprintf(stderr, "dataset %s: %u file%s checked against manifest.json\n", b->dir, hashed,
                hashed == 1 ? "" : "s");
    return rc;
}

/*
 * The checks of the output directory (its config.json, what else it
 * holds), appended to probs.  Under the run's lock, or read-only for
 * --dry-run.  The lock file itself (RUN_LOCK_FILE) does not count.
 */
#define RUN_LOCK_FILE ".lock"

static void check_out_dir(const run_ctx *x, int resume, harness_problems *probs)
{
    char cpath[4200];
    json_error_t jerr;
    snprintf(cpath, sizeof cpath, "%s/config.json", x->out_dir);
    json_t *old = x->out_dir[0] ? json_load_file(cpath, 0, &jerr) : NULL;
    DIR *d = x->out_dir[0] ? opendir(x->out_dir) : NULL;
    int nonempty = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
                strcmp(e->d_name, RUN_LOCK_FILE))
                nonempty = 1;
        closedir(d);
    }
    if (old && !json_equal(old, x->cfg))
        harness_problem(probs, "--out %s: holds a different run (its config.json differs from %s)",
                        x->out_dir, x->config_path);
    else if (old && !resume)
        harness_problem(probs, "--out %s: already holds this run; pass --resume to continue it",
                        x->out_dir);
    else if (!old && nonempty)
        harness_problem(probs, "--out %s: not empty and not a run directory (no config.json)",
                        x->out_dir);
    json_decref(old);
}

static void print_problems(const run_ctx *x, const harness_problems *probs, int nothing_run)
{
    for (int i = 0; i < probs->n && i < probs->cap; i++)
        fprintf(stderr, "annlab run: %s: %s\n", x->config_path, probs->msgs[i]);
    if (nothing_run)
        fprintf(stderr, "annlab run: %d problem%s; nothing was run\n", probs->n,
                probs->n > 1 ? "s" : "");
}

/*
 * A path the run writes below must leave room for what it appends
 * ("/specs/<id>.result.json.tmp.<pid>", "/<engine>/<hash>-fN.tmp.<tag>/...").
 * Longer paths used to be cut short silently by snprintf.
 */
#define RUN_PATH_SLACK 160

static void check_path_len(const char *what, const char *path, harness_problems *probs)
{
    size_t len = strlen(path);
    if (len + RUN_PATH_SLACK >= PATH_MAX)
        harness_problem(probs,
                        "%s: a path of %zu bytes is too long (the files below it need %d more; "
                        "PATH_MAX is %d)",
                        what, len, RUN_PATH_SLACK, PATH_MAX);
}

/* ---- the run, one function per stage ----------------------------------- */

/* What `annlab run` was asked on its command line. */
typedef struct run_opts {
    const char *out_arg, *only;
    int resume, retry_failed, dry_run;
} run_opts;

/* What the stages hand on: the config's names, the expanded cells, the
 * run directory and what it already records. */
typedef struct run_plan {
    const char *name;          /* the config's */
    const char *ds_root;
    const char *prepare_name;  /* a registry dataset to prepare first, or NULL */
    int ds_ok;                 /* the bundle opened during validation */
    int made_out;              /* the run directory was created by this run */
    ann_lock run_lock;
    json_t *cells, *done, *machine, *last_status;
    char cells_path[4400];
    size_t selected;
} run_plan;

/* A stage's return: go on to the next, or exit with this code. */
#define RUN_GO_ON (-1)

/*
 * config: the command line, the config file, and every check that needs
 * no side effect (config schema, engines' parameter tables, dataset, output
 * directory name, --only); every problem is reported before anything is
 * touched.  Exit 2 on a problem.
 */
static int run_config(int argc, char **argv, run_ctx *x, run_opts *o, run_plan *p,
                      harness_problems *probs)
{
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            o->out_arg = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            o->only = argv[++i];
        else if (!strcmp(argv[i], "--resume"))
            o->resume = 1;
        else if (!strcmp(argv[i], "--retry-failed"))
            o->resume = o->retry_failed = 1;
        else if (!strcmp(argv[i], "--wait"))
            x->wait = 1;
        else if (!strcmp(argv[i], "--dry-run"))
            o->dry_run = 1;
        else if (argv[i][0] == '-' || x->config_path) {
            fprintf(stderr, "annlab run: unexpected argument '%s'\n", argv[i]);
            usage_run(stderr);
            return 2;
        } else
            x->config_path = argv[i];
    }
    if (!x->config_path) {
        usage_run(stderr);
        return 2;
    }
    self_exe(x->exe, sizeof x->exe);
    {
        ann_owner me;
        (void)ann_owner_self(&me);
        ann_owner_tag(&me, x->owner_tag, sizeof x->owner_tag);
    }
    x->tty = isatty(2);
    json_error_t jerr;
    if (ann_check_regular(x->config_path) != 0) {
        fprintf(stderr, "annlab run: %s\n", ann_errmsg(ANN_EFORMAT));
        return 2;
    }
    x->cfg = json_load_file(x->config_path, JSON_REJECT_DUPLICATES, &jerr);
    if (!x->cfg) {
        fprintf(stderr, "annlab run: %s: line %d column %d: %s\n", x->config_path, jerr.line,
                jerr.column, jerr.text);
        return 2;
    }

    harness_config_check(x->cfg, probs);
    const json_t *wl = json_object_get(x->cfg, "workload");
    if (wl) {
        /* again with the config's directory: a runbook is read now (the
         * problems harness_config_check reported are not repeated) */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", x->config_path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        harness_problems wp = { 0 };
        x->has_wl = harness_workload_parse(wl, dir, &x->wl, &wp) == 0;
        for (int i = 0; i < wp.n; i++) {
            int seen = 0;
            for (int j = 0; j < probs->n && !seen; j++)
                seen = !strcmp(probs->msgs[j], wp.msgs[i]);
            if (!seen)
                harness_problem(probs, "%s", wp.msgs[i]);
        }
        harness_problems_fini(&wp);
    }
    p->name = json_string_value(json_object_get(x->cfg, "name"));
    const json_t *dsv = json_object_get(x->cfg, "dataset");
    p->ds_root = json_string_value(json_object_get(x->cfg, "dataset_root"));
    const char *ix_root = json_string_value(json_object_get(x->cfg, "index_root"));
    if (!ix_root)
        ix_root = "index";
    if (!p->ds_root)
        p->ds_root = "datasets/data";
    check_path_len("index_root", ix_root, probs);
    check_path_len("dataset_root", p->ds_root, probs);
    if (o->out_arg)
        check_path_len("--out", o->out_arg, probs);
    snprintf(x->index_root, sizeof x->index_root, "%s", ix_root);
    if (json_is_string(dsv)) {
        snprintf(x->dataset_dir, sizeof x->dataset_dir, "%s/%s", p->ds_root,
                 json_string_value(dsv));
        rc = ann_bundle_open(x->dataset_dir, &x->ds);
        if (rc == 0)
            p->ds_ok = 1;
        else if (rc == ANN_ENOTFOUND) {
            /* a registry name: prepared after validation */
            ds_registry reg = { 0 };
            int lrc = ds_registry_load(NULL, &reg);
            if (lrc)
                harness_problem(probs, "dataset: %s", ann_errmsg(lrc));
            else if (!ds_registry_find(&reg, json_string_value(dsv)))
                harness_problem(probs,
                                "dataset: \"%s\" is neither prepared under %s/ nor in the registry "
                                "(annlab dataset list)",
                                json_string_value(dsv), p->ds_root);
            else
                p->prepare_name = json_string_value(dsv);
            ds_registry_free(&reg);
        } else
            harness_problem(probs, "dataset: %s", ann_errmsg(rc));
    } else if (json_is_string(json_object_get(dsv, "path"))) {
        const char *dp = json_string_value(json_object_get(dsv, "path"));
        check_path_len("dataset.path", dp, probs);
        snprintf(x->dataset_dir, sizeof x->dataset_dir, "%s", dp);
        rc = ann_bundle_open(x->dataset_dir, &x->ds);
        if (rc)
            harness_problem(probs, "dataset.path: %s", ann_errmsg(rc));
        else
            p->ds_ok = 1;
    }
    if (p->ds_ok)
        harness_config_check_dataset(x->cfg, x->ds.gt_k, probs);
    if (p->ds_ok && x->has_wl)
        harness_workload_check(&x->wl, x->ds.n, (uint32_t)harness_cfg_int(x->cfg, "k"), probs);
    if (o->only) {
        int found = 0;
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(x->cfg, "engines"), i, e) {
            const char *en = json_string_value(json_object_get(e, "engine"));
            const char *la = json_string_value(json_object_get(e, "label"));
            if ((en && !strcmp(en, o->only)) || (la && !strcmp(la, o->only)))
                found = 1;
        }
        if (!found)
            harness_problem(probs, "--only: \"%s\" is not an engine or label of this config",
                            o->only);
    }
    if (p->name) {
        if (o->out_arg)
            snprintf(x->out_dir, sizeof x->out_dir, "%s", o->out_arg);
        else if (o->resume) {
            if (latest_run(p->name, x->out_dir, sizeof x->out_dir) != 0)
                harness_problem(probs, "--resume: no earlier run of \"%s\" under results/%s/",
                                p->name, p->name);
        } else {
            char stamp[32];
            time_t now = time(NULL);
            struct tm tm;
            gmtime_r(&now, &tm);
            strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
            snprintf(x->out_dir, sizeof x->out_dir, "results/%s/%s", p->name, stamp);
        }
    }
    if (o->dry_run && !probs->n)
        check_out_dir(x, o->resume, probs); /* read-only: a dry run takes no lock */
    if (probs->n) {
        print_problems(x, probs, 1);
        return 2;
    }
    return RUN_GO_ON;
}

/* Whether the sweep runs cell c: selected by --only, and not already
 * recorded (--resume: every cell recorded but a transient failure is done;
 * --retry-failed: every cell recorded ok is).  *done_before: it was. */
static int cell_to_run(const run_opts *o, const run_plan *p, const json_t *c, int *done_before)
{
    *done_before = 0;
    if (json_is_true(json_object_get(c, "filtered")))
        return 0;
    const char *id = json_string_value(json_object_get(c, "id"));
    const char *was = json_string_value(json_object_get(p->last_status, id));
    if (was && (o->retry_failed ? !strcmp(was, "ok") : strcmp(was, "transient") != 0)) {
        *done_before = 1;
        return 0;
    }
    return 1;
}

/*
 * plan: a dry run lists the cells and stops here.  Otherwise: the run
 * directory, locked (one run writes it at a time); the dataset, prepared
 * when the config names a registry dataset, checked against its manifest;
 * the run's files (config.json, machine.json, cells.jsonl trimmed to whole
 * lines); the expanded cells, those --only selects, what cells.jsonl
 * already records; the warm-up ground truth a target recall needs.
 */
static int run_plan_make(run_ctx *x, const run_opts *o, run_plan *p, harness_problems *probs)
{
    int rc = 0;
    char path[4400];
    if (o->dry_run) {
        /* validated: list the cells, builds and time, touch nothing */
        dry_run_report(x, p->name, o->only, p->prepare_name, p->ds_ok);
        return 0;
    }

    /* the run directory, locked: one run writes it at a time */
    p->made_out = access(x->out_dir, F_OK) != 0;
    if ((rc = mkdirs(x->out_dir)))
        return run_failed(rc);
    {
        char what[4400];
        snprintf(path, sizeof path, "%s/" RUN_LOCK_FILE, x->out_dir);
        snprintf(what, sizeof what, "annlab run %s --out %s", x->config_path, x->out_dir);
        rc = ann_lock_take(&p->run_lock, path, what, 0, 0);
        if (rc == ANN_EBUSY && x->wait) {
            fprintf(stderr, "annlab run: waiting for %s\n", ann_errmsg(rc));
            rc = ann_lock_take(&p->run_lock, path, what, 1, 0);
        }
        if (rc == ANN_EBUSY) {
            fprintf(stderr, "annlab run: %s: another run is writing this directory (%s); pass "
                            "--wait to wait for it\n",
                    x->out_dir, ann_errmsg(rc));
            return 2;
        }
        if (rc)
            return run_failed(rc);
    }
    check_out_dir(x, o->resume, probs);
    if (probs->n) {
        print_problems(x, probs, 1);
        return 2;
    }

    /* the dataset */
    if (p->prepare_name) {
        rc = prepare_dataset(x, p->prepare_name, p->ds_root);
        if (!rc)
            rc = ann_bundle_open(x->dataset_dir, &x->ds);
        if (rc) {
            fprintf(stderr, "annlab run: %s: %s\n", x->config_path, ann_errmsg(rc));
            return 2;
        }
        harness_config_check_dataset(x->cfg, x->ds.gt_k, probs);
        if (x->has_wl)
            harness_workload_check(&x->wl, x->ds.n, (uint32_t)harness_cfg_int(x->cfg, "k"), probs);
        if (probs->n) {
            print_problems(x, probs, 0);
            return 2;
        }
    }
    /* the bundle as its manifest describes it, before a cell reads it */
    if ((rc = bundle_check(&x->ds))) {
        fprintf(stderr, "annlab run: %s: %s\n", x->config_path, ann_errmsg(rc));
        return 2;
    }

    /* the run directory's files */
    p->cells = expand_cells(x);
    if (!p->cells) {
        fprintf(stderr, "annlab run: no memory\n");
        return 1;
    }
    static const char *const subdirs[] = { "", "/logs", "/specs", "/latencies", "/neighbors" };
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        snprintf(path, sizeof path, "%s%s", x->out_dir, subdirs[i]);
        if ((rc = mkdirs(path)))
            return run_failed(rc);
    }
    if ((rc = mkdirs(x->index_root)))
        return run_failed(rc);
    /* Build children share the PQ codebook and the Vamana graph through
     * engines/core/artifacts.h, so diskann-sector, -record and -resident
     * are compared on the same graph and it is built once: each build spec
     * names the cache (ann_build_ctx.artifact_dir). */
    snprintf(x->artifact_dir, sizeof x->artifact_dir, "%s/artifacts", x->index_root);
    snprintf(path, sizeof path, "%s/config.json", x->out_dir);
    if (access(path, F_OK) != 0 && (rc = write_json_atomic(x->cfg, path)))
        return run_failed(rc);
    p->made_out = 0; /* from here on the directory holds this run */
    p->machine = harness_machine_describe(x->index_root);
    json_object_set_new(p->machine, "dataset",
                        json_pack("{s:s, s:s, s:s, s:I, s:i}", "name", x->ds.name, "dir",
                                  x->dataset_dir, "checksum", x->ds.checksum, "n",
                                  (json_int_t)x->ds.n, "dim", (int)x->ds.dim));
    {
        /* caveats of the engines in this run (e.g. FAISS built without AVX kernels) */
        json_t *notes = json_object();
        size_t i;
        json_t *entry;
        json_array_foreach(json_object_get(x->cfg, "engines"), i, entry) {
            const ann_engine_ops *ops =
                ann_engine_find(json_string_value(json_object_get(entry, "engine")));
            if (ops && ops->machine_note)
                json_object_set_new(notes, ops->name, json_string(ops->machine_note()));
        }
        json_object_set_new(p->machine, "engine_notes", notes);
    }
    snprintf(path, sizeof path, "%s/machine.json", x->out_dir);
    if ((rc = write_json_atomic(p->machine, path)))
        return run_failed(rc);
    snprintf(p->cells_path, sizeof p->cells_path, "%s/cells.jsonl", x->out_dir);
    if ((rc = cells_trim(p->cells_path)) || (rc = harness_cells_load(x->out_dir, &p->done)))
        return run_failed(rc);

    /* memory caps and read counters, as machine.json records them */
    x->builds = json_object();
    x->cg_ok = cg_detect(NULL, &x->cgs) == 0;
    if (x->cg_ok) {
        /* groups of runs killed before they could remove them */
        unsigned reaped = 0;
        if (cg_reap_stale(&x->cgs, "annlab-", &reaped) == 0 && reaped)
            fprintf(stderr, "removed %u cgroup%s left by dead runs\n", reaped,
                    reaped == 1 ? "" : "s");
    }
    devstat_dev idev;
    if (devstat_resolve(x->index_root, NULL, &idev) == 0)
        x->index_dev = devstat_devt(&idev);
    json_object_set_new(p->machine, "cgroup",
                        x->cg_ok ? json_pack("{s:i, s:s}", "version", (int)x->cgs.version,
                                             "parent", x->cgs.memory_parent)
                                 : json_pack("{s:s}", "unavailable", x->cgs.reason));
    snprintf(path, sizeof path, "%s/machine.json", x->out_dir);
    if ((rc = write_json_atomic(p->machine, path)))
        return run_failed(rc);
    struct sigaction sa = { .sa_handler = on_interrupt };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* what is already recorded: the last record of each cell decides */
    p->last_status = json_object();
    {
        size_t j;
        json_t *d;
        json_array_foreach(p->done, j, d) {
            const char *did = json_string_value(json_object_get(d, "id"));
            const char *st = json_string_value(json_object_get(d, "status"));
            if (did && st)
                json_object_set_new(p->last_status, did, json_string(st));
            /* a workload's step lines record their cell */
            const char *wc = json_string_value(json_object_get(d, "workload_cell"));
            if (wc && st)
                json_object_set_new(p->last_status, wc, json_string(st));
        }
    }
    size_t i;
    json_t *c;
    json_array_foreach(p->cells, i, c) {
        const char *engine = json_string_value(json_object_get(c, "engine"));
        const char *label = json_string_value(json_object_get(c, "label"));
        if (o->only && strcmp(o->only, engine) && strcmp(o->only, label))
            json_object_set_new(c, "filtered", json_true());
        else
            p->selected++;
    }
    fprintf(stderr, "run %s: %zu cells (%zu selected) -> %s\n", p->name,
            json_array_size(p->cells), p->selected, x->out_dir);
    if ((rc = prepare_tune_gt(x, p->cells)))
        return run_failed(rc);
    if (x->has_wl) {
        /* the search steps' ground truth, cached beside the bundle */
        int64_t want = harness_cfg_int(x->cfg, "queries");
        uint32_t nq = want > 0 && (uint64_t)want < x->ds.nq ? (uint32_t)want : x->ds.nq;
        int computed = 0;
        char wdir[4400];
        snprintf(wdir, sizeof wdir, "%s/work", x->out_dir);
        if ((rc = harness_workload_gt_ensure(&x->wl, &x->ds, nq,
                                             (uint32_t)harness_cfg_int(x->cfg, "k"), x->wl_gt,
                                             sizeof x->wl_gt, &computed)) ||
            (rc = mkdirs(wdir)))
            return run_failed(rc);
    }
    return RUN_GO_ON;
}

/* How a run that stops at a busy index says so (exit 2). */
static int run_busy(const run_ctx *x, int rc)
{
    fprintf(stderr, "%sannlab run: %s; pass --wait to wait for it.  Continue this run "
                    "later with:\n  annlab run %s --out %s --resume\n",
            x->tty ? "\n" : "", ann_errmsg(rc), x->config_path, x->out_dir);
    return 2;
}

/*
 * builds: every index the cells to run need, each once, in a child
 * process (ensure_build: reused when cached and verified, else built under
 * its lock), before the first cell is measured, so no build runs between
 * measured cells.  A capped cell where caps are unavailable needs none (it
 * is recorded as skipped).  A failed build is recorded with each of its
 * cells by the cells stage; an index another run is building stops the run
 * (exit 2); Ctrl-C stops it (exit 130).
 */
static int run_builds(run_ctx *x, const run_opts *o, const run_plan *p)
{
    size_t i;
    json_t *c;
    json_array_foreach(p->cells, i, c) {
        int done_before;
        if (!cell_to_run(o, p, c, &done_before))
            continue;
        if (!json_is_null(json_object_get(c, "memory_cap_bytes")) && !x->cg_ok)
            continue;
        json_t *b = ensure_build(x, c);
        if (!b || run_interrupted) {
            fprintf(stderr, "%sinterrupted; 0 cells recorded.  Resume with:\n  annlab run %s --out "
                            "%s --resume\n",
                    x->tty ? "\n" : "", x->config_path, x->out_dir);
            return 130;
        }
        if (!strcmp(json_string_value(json_object_get(b, "status")), "busy"))
            return run_busy(x, ann_fail(ANN_EBUSY, "%s",
                                        json_string_value(json_object_get(b, "reason"))));
    }
    return RUN_GO_ON;
}

/*
 * cells: each cell to run in order, as `annlab cell` in a child process
 * (run_cell), its record appended to cells.jsonl (one write, fsync); the
 * progress line names the cell and the last cell's figures.
 */
static int run_cells(run_ctx *x, const run_opts *o, const run_plan *p)
{
    int rc = 0;
    size_t skipped_done = 0, counts[6] = { 0 };
    size_t pos = 0;
    char last[512] = "";
    size_t i;
    json_t *c;
    json_array_foreach(p->cells, i, c) {
        if (json_is_true(json_object_get(c, "filtered")))
            continue;
        pos++;
        const char *id = json_string_value(json_object_get(c, "id"));
        int done_before;
        if (!cell_to_run(o, p, c, &done_before)) {
            skipped_done += done_before;
            continue;
        }
        char desc[512];
        describe_cell(c, desc, sizeof desc);
        if (x->tty)
            fprintf(stderr, "\r\033[K[%zu/%zu %5.0fs] %s%s%s", pos, p->selected,
                    ann_mono_s() - x->t_start, desc, last[0] ? "  | last: " : "", last);
        json_t *rec = NULL;
        if ((rc = run_cell(x, c, &rec)))
            return rc == ANN_EBUSY ? run_busy(x, rc) : run_failed(rc);
        if (!rec || run_interrupted) {
            json_decref(rec);
            fprintf(stderr, "%sinterrupted; %zu cells recorded.  Resume with:\n  annlab run %s --out %s --resume\n",
                    x->tty ? "\n" : "", pos - 1, x->config_path, x->out_dir);
            return 130;
        }
        if (json_object_get(rec, "steps")) {
            json_t *lines = workload_records(rec);
            size_t j;
            json_t *line;
            json_array_foreach(lines, j, line) {
                if ((rc = cells_append(p->cells_path, line)))
                    break;
            }
            json_decref(lines);
        } else {
            rc = cells_append(p->cells_path, rec);
        }
        if (rc) {
            json_decref(rec);
            return run_failed(rc);
        }
        const char *st = json_string_value(json_object_get(rec, "status"));
        counts[!strcmp(st, "ok")          ? 0
               : !strcmp(st, "error")     ? 1
               : !strcmp(st, "timeout")   ? 2
               : !strcmp(st, "oom")       ? 3
               : !strcmp(st, "transient") ? 5
                                          : 4]++;
        figures_line(rec, last, sizeof last);
        if (!x->tty)
            fprintf(stderr, "[%zu/%zu %5.0fs] %s %s: %s\n", pos, p->selected,
                    ann_mono_s() - x->t_start, id, desc, last);
        json_decref(rec);
    }
    if (x->has_wl) {
        /* the workload cells' copies are gone (each removes its own) */
        char wdir[4400];
        snprintf(wdir, sizeof wdir, "%s/work", x->out_dir);
        rmdir(wdir); /* only when empty */
    }
    if (x->tty)
        fprintf(stderr, "\r\033[K[%zu/%zu %5.0fs] done  | last: %s\n", p->selected, p->selected,
                ann_mono_s() - x->t_start, last);
    fprintf(stderr, "run %s: %zu ok, %zu error, %zu timeout, %zu oom, %zu skipped, %zu already recorded; %zu transient%s\n",
            p->name, counts[0], counts[1], counts[2], counts[3], counts[4], skipped_done, counts[5],
            counts[5] ? " (--resume runs them again)" : "");
    return RUN_GO_ON;
}

/* tables and plots: tables.md (written atomically, and printed) and the
 * figures, from cells.jsonl. */
static int run_outputs(const run_ctx *x)
{
    char path[4400], tmp[4500];
    snprintf(path, sizeof path, "%s/tables.md", x->out_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *tf = fopen(tmp, "we");
    if (!tf)
        return run_failed(ann_fail_errno("%s: create", tmp));
    int rc = harness_tables_render(x->out_dir, tf);
    if (fclose(tf) != 0 && !rc)
        rc = ann_fail_errno("%s: write", tmp);
    if (!rc && rename(tmp, path) != 0)
        rc = ann_fail_errno("%s: rename", tmp);
    if (rc) {
        unlink(tmp);
        return run_failed(rc);
    }
    harness_tables_render(x->out_dir, stdout);
    int made = 0;
    rc = harness_plots_render(x->out_dir, &made);
    if (rc)
        fprintf(stderr, "annlab run: figures not written: %s\n", ann_errmsg(rc));
    printf("\nresults: %s/cells.jsonl\ntables:  %s/tables.md\nplots:   %s/*.png (%d figures)\n",
           x->out_dir, x->out_dir, x->out_dir, made);
    return 0;
}

int harness_run_main(int argc, char **argv)
{
    int exit_code;
    run_ctx x = { .t_start = ann_mono_s() };
    run_opts o = { 0 };
    run_plan p = { .run_lock = { .fd = -1 } };
    harness_problems probs = { 0 };
    /* Harness rule (docs/protocol.md): build and cell children inherit
     * this.  libgomp (FAISS) otherwise spin-waits between parallel regions
     * and, on a machine with few cores, steals most of the CPU from the
     * threads doing the work. */
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    if ((exit_code = run_config(argc, argv, &x, &o, &p, &probs)) == RUN_GO_ON &&
        (exit_code = run_plan_make(&x, &o, &p, &probs)) == RUN_GO_ON &&
        (exit_code = run_builds(&x, &o, &p)) == RUN_GO_ON &&
        (exit_code = run_cells(&x, &o, &p)) == RUN_GO_ON)
        exit_code = run_outputs(&x);
    if (p.made_out && p.run_lock.fd >= 0) {
        /* refused before anything was written: the directory is left as a
         * fresh one, holding only its lock file (removing that would let a
         * run waiting on it and a newcomer both hold "the" lock) */
        static const char *const left[] = { "logs", "specs", "latencies" };
        for (size_t i = 0; i < 3; i++) {
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", x.out_dir, left[i]);
            rmdir(path); /* only when empty */
        }
    }
    ann_lock_release(&p.run_lock);
    harness_problems_fini(&probs);
    json_decref(p.cells);
    json_decref(p.done);
    json_decref(p.machine);
    json_decref(p.last_status);
    json_decref(x.builds);
    json_decref(x.cfg);
    ann_bundle_close(&x.ds);
    harness_workload_fini(&x.wl);
    return exit_code;
}
