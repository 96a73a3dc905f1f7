/*
 * test_cgroups.c: cgroup v1 and v2 detection, path logic, cap writes and
 * counter parsing on fake trees written in a temporary directory; then, on
 * a machine where this process may create memory cgroups (root, a memory
 * controller), a real group created and removed, a child under a 64 MiB
 * cap that touches 256 MiB classified as oom, the start gate, and the
 * group's own read counters against an O_DIRECT read of known size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cgroups/cgroup.h"
#include "cgroups/devstat.h"
#include "engines/core/owner.h"
#include "engines/core/status.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)

static char *tmp;
static pid_t sleeper_pid = -1; /* killed by teardown even when a test fails */

static int setup(void **state)
{
    (void)state;
    tmp = tu_tmpdir("cgroups");
    return tmp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (sleeper_pid > 0) {
        kill(sleeper_pid, SIGKILL);
        waitpid(sleeper_pid, NULL, 0);
        sleeper_pid = -1;
    }
    tu_rmdir(tmp);
    return 0;
}

/* mkdir -p tmp/rel */
static void mk(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    for (char *p = path + strlen(tmp) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    mkdir(path, 0755);
}

/* Write tmp/rel with text (parents created). */
static void put(const char *rel, const char *text)
{
    char path[4096];
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", rel);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = '\0';
        mk(parent);
    }
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
}

/* Contents of tmp/rel (static buffer). */
static const char *get(const char *rel)
{
    static char buf[4096];
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    size_t len = 0;
    char *data = tu_read_file(path, &len);
    assert_non_null(data);
    snprintf(buf, sizeof buf, "%.*s", (int)len, data);
    free(data);
    return buf;
}

static void fake_params(cg_detect_params *p, char *root, char *proc)
{
    snprintf(root, 4096, "%s/sys", tmp);
    snprintf(proc, 4096, "%s/proc_cgroup", tmp);
    p->cgroup_root = root;
    p->proc_cgroup = proc;
}

/* The layout of this machine: v1 memory nested under process_api/<id>,
 * blkio at its root, a v2 hierarchy at unified without memory. */
static void fake_v1_tree(void)
{
    put("proc_cgroup", "9:name=systemd:/\n7:blkio:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/\n");
    put("sys/memory/cgroup.procs", "");
    put("sys/memory/process_api/abc/cgroup.procs", "1\n");
    put("sys/memory/process_api/abc/memory.limit_in_bytes", "9223372036854771712\n");
    put("sys/memory/process_api/abc/memory.memsw.limit_in_bytes", "9223372036854771712\n");
    put("sys/memory/process_api/abc/memory.max_usage_in_bytes", "0\n");
    put("sys/blkio/cgroup.procs", "");
    put("sys/blkio/blkio.throttle.io_service_bytes", "Total 0\n");
    put("sys/unified/cgroup.controllers", "hugetlb\n");
}

static void test_detect_v1_nested(void **state)
{
    (void)state;
    char root[4096], proc[4096], want[4096];
    cg_detect_params p;
    cg_system sys;
    fake_v1_tree();
    fake_params(&p, root, proc);
    assert_int_equal(cg_detect(&p, &sys), 0);
    assert_int_equal(sys.version, CG_V1);
    snprintf(want, sizeof want, "%s/sys/memory/process_api/abc", tmp);
    assert_string_equal(sys.memory_parent, want);
    snprintf(want, sizeof want, "%s/sys/blkio", tmp);
    assert_string_equal(sys.io_parent, want);
    assert_true(sys.has_memsw);
    assert_true(sys.has_io);
    assert_true(sys.has_peak);
}

static void test_detect_v1_without_memsw_or_blkio(void **state)
{
    (void)state;
    char root[4096], proc[4096];
    cg_detect_params p;
    cg_system sys;
    put("proc_cgroup", "4:memory:/\n0::/\n");
    put("sys/memory/cgroup.procs", "");
    put("sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
    fake_params(&p, root, proc);
    assert_int_equal(cg_detect(&p, &sys), 0);
    assert_int_equal(sys.version, CG_V1);
    char want[4096];
    snprintf(want, sizeof want, "%s/sys/memory", tmp);
    assert_string_equal(sys.memory_parent, want);
    assert_false(sys.has_memsw);
    assert_false(sys.has_io);
    assert_string_equal(sys.io_parent, "");
}

static void fake_v2_tree(const char *mount)
{
    char rel[512];
    put("proc_cgroup", "0::/user.slice/annlab\n");
    snprintf(rel, sizeof rel, "%s/cgroup.controllers", mount);
    put(rel, "cpuset cpu io memory hugetlb pids\n");
    snprintf(rel, sizeof rel, "%s/user.slice/annlab/cgroup.controllers", mount);
    put(rel, "io memory pids\n");
    snprintf(rel, sizeof rel, "%s/user.slice/annlab/cgroup.subtree_control", mount);
    put(rel, "\n");
    snprintf(rel, sizeof rel, "%s/user.slice/annlab/memory.swap.max", mount);
    put(rel, "max\n");
    snprintf(rel, sizeof rel, "%s/user.slice/annlab/memory.peak", mount);
    put(rel, "1000\n");
}

static void test_detect_v2_pure(void **state)
{
    (void)state;
    char root[4096], proc[4096], want[4096];
    cg_detect_params p;
    cg_system sys;
    fake_v2_tree("sys");
    fake_params(&p, root, proc);
    assert_int_equal(cg_detect(&p, &sys), 0);
    assert_int_equal(sys.version, CG_V2);
    snprintf(want, sizeof want, "%s/sys/user.slice/annlab", tmp);
    assert_string_equal(sys.memory_parent, want);
    assert_string_equal(sys.io_parent, want);
    assert_true(sys.has_io);
    assert_true(sys.has_swap_max);
    assert_true(sys.has_peak);
}

static void test_detect_v2_hybrid_unified(void **state)
{
    (void)state;
    char root[4096], proc[4096], want[4096];
    cg_detect_params p;
    cg_system sys;
    fake_v2_tree("sys/unified");
    fake_params(&p, root, proc);
    assert_int_equal(cg_detect(&p, &sys), 0);
    assert_int_equal(sys.version, CG_V2);
    snprintf(want, sizeof want, "%s/sys/unified/user.slice/annlab", tmp);
    assert_string_equal(sys.memory_parent, want);
}

static void test_detect_unsupported_reasons(void **state)
{
    (void)state;
    char root[4096], proc[4096], want[8192];
    cg_detect_params p;
    cg_system sys;
    fake_params(&p, root, proc);

    /* This machine's v2 hierarchy alone: no memory controller in it. */
    put("proc_cgroup", "0::/\n");
    put("sys/unified/cgroup.controllers", "hugetlb\n");
    assert_int_equal(cg_detect(&p, &sys), ANN_EUNSUPPORTED);
    assert_int_equal(sys.version, CG_NONE);
    snprintf(want, sizeof want, "cgroup v2: the memory controller is not available in %s/sys/unified/cgroup.controllers", tmp);
    assert_string_equal(sys.reason, want);
    assert_string_equal(ann_errmsg(ANN_EUNSUPPORTED), want);

    /* v1 memory mounted but this process's group is not visible. */
    put("proc_cgroup", "4:memory:/elsewhere\n");
    put("sys/memory/cgroup.procs", "");
    assert_int_equal(cg_detect(&p, &sys), ANN_EUNSUPPORTED);
    snprintf(want, sizeof want, "cgroup v1: this process's memory group /elsewhere is not visible at %s/sys/memory/elsewhere", tmp);
    assert_string_equal(sys.reason, want);

    /* No proc file at all. */
    snprintf(proc, 4096, "%s/absent", tmp);
    assert_int_equal(cg_detect(&p, &sys), ANN_EUNSUPPORTED);
    snprintf(want, sizeof want, "cannot read %s/absent: No such file or directory", tmp);
    assert_string_equal(sys.reason, want);
}

static void test_detect_malformed_proc_cgroup(void **state)
{
    (void)state;
    char root[4096], proc[4096], want[8192];
    cg_detect_params p;
    cg_system sys;
    fake_params(&p, root, proc);
    put("proc_cgroup", "4:memory:/a\nnonsense\n");
    assert_int_equal(cg_detect(&p, &sys), ANN_EFORMAT);
    snprintf(want, sizeof want, "%s/proc_cgroup: line 2: expected id:controllers:path", tmp);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), want);

    put("proc_cgroup", "4:memory:relative\n");
    assert_int_equal(cg_detect(&p, &sys), ANN_EFORMAT);
    snprintf(want, sizeof want, "%s/proc_cgroup: line 1: path does not start with '/'", tmp);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), want);
}

static void test_group_name_rejected(void **state)
{
    (void)state;
    char root[4096], proc[4096];
    cg_detect_params p;
    cg_system sys;
    cg_group *g = NULL;
    fake_v1_tree();
    fake_params(&p, root, proc);
    assert_int_equal(cg_detect(&p, &sys), 0);
    assert_int_equal(cg_group_create(&sys, "../escape", MIB, &g), ANN_EPARAM);
    assert_null(g);
    assert_string_equal(ann_errmsg(ANN_EPARAM), "cgroup name \"../escape\": use one component of [A-Za-z0-9._-]");
    cg_system none = { .version = CG_NONE, .reason = "no memory controller" };
    assert_int_equal(cg_group_create(&none, "x", MIB, &g), ANN_EUNSUPPORTED);
    assert_string_equal(ann_errmsg(ANN_EUNSUPPORTED), "no usable cgroup: no memory controller");
}

/* A child that sleeps until killed: a real pid for fake cgroup.procs. */
static pid_t sleeper(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (;;)
            pause();
    }
    sleeper_pid = pid;
    return pid;
}

static void test_v1_group_on_fake_tree(void **state)
{
    (void)state;
    char root[4096], proc[4096];
    cg_detect_params p;
    cg_system sys;
    cg_group *g = NULL;
    cg_counters c;
    fake_v1_tree();
    fake_params(&p, root, proc);
    assert_int_equal(cg_detect(&p, &sys), 0);

    /* The kernel would populate these on mkdir; a fake tree pre-creates
     * them, and an existing group with no process is reused. */
    const char *m = "sys/memory/process_api/abc/cell-1/";
    char rel[512];
#define PUTM(file, text) (snprintf(rel, sizeof rel, "%s%s", m, file), put(rel, text))
    PUTM("cgroup.procs", "");
    PUTM("memory.limit_in_bytes", "9223372036854771712\n");
    PUTM("memory.memsw.limit_in_bytes", "9223372036854771712\n");
    PUTM("memory.usage_in_bytes", "4096\n");
    PUTM("memory.max_usage_in_bytes", "0\n");
    PUTM("memory.failcnt", "0\n");
    PUTM("memory.oom_control", "oom_kill_disable 0\nunder_oom 1\noom_kill 2\n");
    put("sys/blkio/cell-1/cgroup.procs", "");
    put("sys/blkio/cell-1/blkio.reset_stats", "");
    put("sys/blkio/cell-1/blkio.throttle.read_bps_device", "");
    put("sys/blkio/cell-1/blkio.throttle.io_service_bytes",
        "254:0 Read 8192\n254:0 Write 4096\n254:0 Sync 0\n254:0 Async 12288\n254:0 Discard 0\n"
        "254:0 Total 12288\n7:1 Read 512\n7:1 Write 0\n7:1 Total 512\nTotal 12800\n");
    put("sys/blkio/cell-1/blkio.throttle.io_serviced",
        "254:0 Read 2\n254:0 Write 1\n254:0 Total 3\n7:1 Read 1\n7:1 Total 1\nTotal 4\n");

    assert_int_equal(cg_group_create(&sys, "cell-1", 64 * MIB, &g), 0);
    assert_string_equal(get("sys/memory/process_api/abc/cell-1/memory.limit_in_bytes"), "67108864");
    assert_string_equal(get("sys/memory/process_api/abc/cell-1/memory.memsw.limit_in_bytes"), "67108864");
    assert_string_equal(get("sys/memory/process_api/abc/cell-1/memory.max_usage_in_bytes"), "0");
    assert_int_equal(cg_group_cap_bytes(g), 64 * MIB);
    /* v1 counts reads only on devices with a throttle rule. */
    assert_int_equal(cg_group_read(g, makedev(254, 0), &c), 0);
    assert_false(c.io_known);
    assert_int_equal(cg_group_watch_device(g, makedev(254, 0)), 0);
    assert_string_equal(get("sys/blkio/cell-1/blkio.throttle.read_bps_device"), "254:0 1125899906842624");
    /* The counters a cell leaves behind (written after the reset). */
    PUTM("memory.max_usage_in_bytes", "67108864\n");
    PUTM("memory.failcnt", "31\n");

    pid_t pid = sleeper();
    assert_int_equal(cg_group_add_pid(g, pid), 0);
    char want[32];
    snprintf(want, sizeof want, "%ld", (long)pid);
    assert_string_equal(get("sys/memory/process_api/abc/cell-1/cgroup.procs"), want);
    assert_string_equal(get("sys/blkio/cell-1/cgroup.procs"), want);

    assert_int_equal(cg_group_read(g, makedev(254, 0), &c), 0);
    assert_int_equal(c.cap_bytes, 64 * MIB);
    assert_int_equal(c.usage_bytes, 4096);
    assert_true(c.peak_known);
    assert_int_equal(c.peak_bytes, 64 * MIB);
    assert_int_equal(c.limit_hits, 31);
    assert_true(c.under_oom);
    assert_true(c.oom_kill_known);
    assert_int_equal(c.oom_kills, 2);
    assert_true(c.io_known);
    assert_int_equal(c.read_bytes, 8192);
    assert_int_equal(c.read_ios, 2);
    assert_int_equal(cg_group_read(g, 0, &c), 0);
    assert_int_equal(c.read_bytes, 8192 + 512);
    assert_int_equal(c.read_ios, 3);

    /* Destroy moves the straggler to the parent group (v1), then rmdir
     * fails on the fake tree because the files are ordinary files. */
    assert_int_equal(cg_group_destroy(g), -ENOTEMPTY);
    assert_string_equal(get("sys/memory/process_api/abc/cgroup.procs"), want);
    assert_string_equal(get("sys/blkio/cgroup.procs"), want);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    sleeper_pid = -1;
#undef PUTM
}

static void test_v2_group_on_fake_tree(void **state)
{
    (void)state;
    char root[4096], proc[4096];
    cg_detect_params p;
    cg_system sys;
    cg_group *g = NULL;
    cg_counters c;
    fake_v2_tree("sys");
    fake_params(&p, root, proc);
    assert_int_equal(cg_detect(&p, &sys), 0);
    const char *m = "sys/user.slice/annlab/cell-2/";
    char rel[512];
#define PUTM(file, text) (snprintf(rel, sizeof rel, "%s%s", m, file), put(rel, text))
    PUTM("cgroup.procs", "");
    PUTM("memory.max", "max\n");
    PUTM("memory.swap.max", "max\n");
    PUTM("memory.current", "8192\n");
    PUTM("memory.peak", "50331648\n");
    PUTM("memory.events", "low 0\nhigh 0\nmax 17\noom 1\noom_kill 1\noom_group_kill 0\n");
    PUTM("io.stat", "254:0 rbytes=1048576 wbytes=4096 rios=3 wios=1 dbytes=0 dios=0\n"
                    "7:2 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n");

    assert_int_equal(cg_group_create(&sys, "cell-2", 48 * MIB, &g), 0);
    assert_string_equal(get("sys/user.slice/annlab/cell-2/memory.max"), "50331648");
    assert_string_equal(get("sys/user.slice/annlab/cell-2/memory.swap.max"), "0");
    /* memory, then io, were enabled for the children (each a write). */
    assert_string_equal(get("sys/user.slice/annlab/cgroup.subtree_control"), "+io");

    assert_int_equal(cg_group_read(g, makedev(254, 0), &c), 0);
    assert_int_equal(c.usage_bytes, 8192);
    assert_true(c.peak_known);
    assert_int_equal(c.peak_bytes, 48 * MIB);
    assert_int_equal(c.limit_hits, 17);
    assert_int_equal(c.oom_events, 1);
    assert_true(c.oom_kill_known);
    assert_int_equal(c.oom_kills, 1);
    assert_true(c.io_known);
    assert_int_equal(c.read_bytes, 1048576);
    assert_int_equal(c.read_ios, 3);
    assert_int_equal(cg_group_read(g, 0, &c), 0);
    assert_int_equal(c.read_bytes, 1048576 + 4096);
    assert_int_equal(c.read_ios, 4);

    json_t *j = cg_counters_json(&c);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "cap_bytes")), 48 * MIB);
    assert_int_equal(json_integer_value(json_object_get(j, "oom_kills")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "read_bytes")), 1048576 + 4096);
    json_decref(j);

    /* v2 stragglers are killed (a parent with controllers holds no process). */
    pid_t pid = sleeper();
    assert_int_equal(cg_group_add_pid(g, pid), 0);
    assert_int_equal(cg_group_destroy(g), -ENOTEMPTY);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    sleeper_pid = -1;
    assert_true(WIFSIGNALED(ws));
    assert_int_equal(WTERMSIG(ws), SIGKILL);
#undef PUTM
}

static void test_v2_corrupt_counters(void **state)
{
    (void)state;
    char root[4096], proc[4096], want[8192];
    cg_detect_params p;
    cg_system sys;
    cg_group *g = NULL;
    cg_counters c;
    fake_v2_tree("sys");
    fake_params(&p, root, proc);
    assert_int_equal(cg_detect(&p, &sys), 0);
    put("sys/user.slice/annlab/cell-3/cgroup.procs", "");
    put("sys/user.slice/annlab/cell-3/memory.max", "max\n");
    put("sys/user.slice/annlab/cell-3/io.stat", "254:0 rbytes=1 rios=1\ngarbage\n");
    assert_int_equal(cg_group_create(&sys, "cell-3", 0, &g), 0);
    assert_string_equal(get("sys/user.slice/annlab/cell-3/memory.max"), "max");
    assert_int_equal(cg_group_read(g, 0, &c), ANN_EFORMAT);
    snprintf(want, sizeof want, "%s/sys/user.slice/annlab/cell-3/io.stat: line 2: expected MAJOR:MINOR", tmp);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), want);

    put("sys/user.slice/annlab/cell-3/io.stat", "");
    put("sys/user.slice/annlab/cell-3/memory.events", "max x\n");
    assert_int_equal(cg_group_read(g, 0, &c), ANN_EFORMAT);
    snprintf(want, sizeof want, "%s/sys/user.slice/annlab/cell-3/memory.events: value of \"max\" is not a number", tmp);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), want);

    put("sys/user.slice/annlab/cell-3/memory.events", "");
    put("sys/user.slice/annlab/cell-3/memory.peak", "12 MB\n");
    assert_int_equal(cg_group_read(g, 0, &c), ANN_EFORMAT);
    snprintf(want, sizeof want, "%s/sys/user.slice/annlab/cell-3/memory.peak: expected one number, found \"12 MB\n\"", tmp);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), want);

    /* A leftover group that still holds a process is not reused. */
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%ld\n", (long)getpid());
    put("sys/user.slice/annlab/cell-4/cgroup.procs", pidtext);
    cg_group *g2 = NULL;
    assert_int_equal(cg_group_create(&sys, "cell-4", MIB, &g2), ANN_ESTATE);
    assert_null(g2);
    snprintf(want, sizeof want, "cgroup %s/sys/user.slice/annlab/cell-4 already exists and holds processes", tmp);
    assert_string_equal(ann_errmsg(ANN_ESTATE), want);
    put("sys/user.slice/annlab/cell-3/cgroup.procs", "");
    cg_group_destroy(g);
}

static void test_open_self_on_fake_trees(void **state)
{
    (void)state;
    char root[4096], proc[4096], want[4096];
    cg_detect_params p;
    cg_system sys;
    cg_group *g = NULL;
    cg_counters c;
    fake_v1_tree();
    put("sys/blkio/blkio.throttle.read_bps_device", "254:0 1125899906842624\n"); /* the parent's watch */
    fake_params(&p, root, proc);
    assert_int_equal(cg_detect(&p, &sys), 0);
    assert_int_equal(cg_group_open_self(&sys, &g), 0);
    snprintf(want, sizeof want, "%s/sys/memory/process_api/abc", tmp);
    assert_string_equal(cg_group_path(g), want);
    assert_int_equal(cg_group_cap_bytes(g), 0); /* v1's "unlimited" */
    put("sys/memory/process_api/abc/memory.max_usage_in_bytes", "777\n");
    assert_int_equal(cg_group_reset_peak(g), 0);
    assert_string_equal(get("sys/memory/process_api/abc/memory.max_usage_in_bytes"), "0");
    put("sys/blkio/blkio.throttle.io_serviced", "254:0 Read 4\nTotal 4\n");
    put("sys/blkio/blkio.throttle.io_service_bytes", "254:0 Read 16384\nTotal 16384\n");
    assert_int_equal(cg_group_read(g, 0, &c), 0);
    assert_int_equal(c.read_bytes, 16384);
    assert_int_equal(c.read_ios, 4);
    assert_int_equal(cg_group_destroy(g), 0); /* not owned: only freed */
    struct stat st;
    assert_int_equal(stat(want, &st), 0);

    fake_v2_tree("sys");
    put("proc_cgroup", "0::/user.slice/annlab\n");
    put("sys/user.slice/annlab/memory.max", "50331648\n");
    assert_int_equal(cg_detect(&p, &sys), 0);
    assert_int_equal(cg_group_open_self(&sys, &g), 0);
    assert_int_equal(cg_group_cap_bytes(g), 48 * MIB);
    assert_int_equal(cg_group_reset_peak(g), 0);
    assert_int_equal(cg_group_read(g, 0, &c), 0);
    assert_true(c.peak_known);
    assert_int_equal(c.peak_bytes, 0); /* "1000" with its first byte overwritten by the reset's "0" */
    cg_group_destroy(g);
}

static void test_classify(void **state)
{
    (void)state;
    cg_outcome o;
    cg_counters c = { .cap_bytes = 64 * MIB, .peak_bytes = 64 * MIB, .limit_hits = 5,
                      .oom_kills = 1, .oom_kill_known = true };
    cg_classify(W_EXITCODE(0, SIGKILL), &c, &o);
    assert_int_equal(o.status, CG_OOM);
    assert_string_equal(o.reason, "killed by the OOM killer under memory cap 67108864 bytes "
                                  "(oom_kill=1, limit hits 5, peak 67108864 bytes)");

    cg_classify(W_EXITCODE(0, 0), &c, &o);
    assert_int_equal(o.status, CG_OK);
    assert_string_equal(o.reason, "");

    cg_classify(W_EXITCODE(3, 0), &c, &o);
    assert_int_equal(o.status, CG_OOM); /* a helper process was OOM-killed */
    cg_classify(W_EXITCODE(0, SIGSEGV), &c, &o);
    assert_int_equal(o.status, CG_ERROR);
    assert_string_equal(o.reason, "killed by signal 11 (Segmentation fault)");

    cg_counters clean = { .cap_bytes = 64 * MIB, .oom_kill_known = true };
    cg_classify(W_EXITCODE(0, SIGKILL), &clean, &o);
    assert_int_equal(o.status, CG_ERROR);
    assert_string_equal(o.reason, "killed by signal 9 (Killed)");
    cg_classify(W_EXITCODE(3, 0), &clean, &o);
    assert_int_equal(o.status, CG_ERROR);
    assert_string_equal(o.reason, "exited with status 3");

    /* Old v1 kernels without oom_kill: under_oom or limit hits decide. */
    cg_counters old = { .cap_bytes = 64 * MIB, .limit_hits = 9 };
    cg_classify(W_EXITCODE(0, SIGKILL), &old, &o);
    assert_int_equal(o.status, CG_OOM);
    /* Uncapped: a SIGKILL is never an oom of ours. */
    cg_counters uncapped = { .oom_kills = 1, .oom_kill_known = true };
    cg_classify(W_EXITCODE(0, SIGKILL), &uncapped, &o);
    assert_int_equal(o.status, CG_ERROR);
}

/* ---- on this machine ---------------------------------------------------- */

static bool real_system(cg_system *sys)
{
    int rc = cg_detect(NULL, sys);
    if (rc) {
        printf("# skipped: no usable cgroup here: %s\n", ann_errmsg(rc));
        return false;
    }
    return true;
}

static void group_name(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "annlab-test-%ld-%s", (long)getpid(), tag);
}

/* After a failed assertion a real group may be left: remove any of ours
 * (their processes have exited or been reaped by then). */
static int teardown_real(void **state)
{
    static const char *const tags[] = { "create", "oom", "ok", "self", "io" };
    cg_system sys;
    char name[64], path[8192];
    (void)teardown(state);
    if (cg_detect(NULL, &sys) != 0)
        return 0;
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        group_name(name, sizeof name, tags[i]);
        snprintf(path, sizeof path, "%s/%s", sys.memory_parent, name);
        rmdir(path);
        if (sys.version == CG_V1 && sys.io_parent[0]) {
            snprintf(path, sizeof path, "%s/%s", sys.io_parent, name);
            rmdir(path);
        }
    }
    return 0;
}

static void test_real_create_and_remove(void **state)
{
    (void)state;
    cg_system sys;
    cg_group *g = NULL;
    char name[64], path[4096];
    if (!real_system(&sys)) {
        skip();
        return;
    }
    group_name(name, sizeof name, "create");
    assert_int_equal(cg_group_create(&sys, name, 96 * MIB, &g), 0);
    snprintf(path, sizeof path, "%s/%s", sys.memory_parent, name);
    assert_string_equal(cg_group_path(g), path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    char file[4200];
    snprintf(file, sizeof file, "%s/%s", path, sys.version == CG_V1 ? "memory.limit_in_bytes" : "memory.max");
    FILE *fp = fopen(file, "r");
    assert_non_null(fp);
    unsigned long long limit = 0;
    assert_int_equal(fscanf(fp, "%llu", &limit), 1);
    fclose(fp);
    assert_int_equal(limit, 96 * MIB);
    assert_int_equal(cg_group_destroy(g), 0);
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(errno, ENOENT);
}

/* Write every page of p through a volatile pointer, so the compiler
 * cannot drop an allocation that is never read. */
static void touch(char *p, uint64_t bytes)
{
    volatile char *v = p;
    for (uint64_t i = 0; i < bytes; i += 4096)
        v[i] = (char)(i >> 12);
}

/* Runs in the child: allocate and touch `bytes`, then exit 0. */
static void child_hog(cg_gate *gate, uint64_t bytes)
{
    if (cg_gate_wait(gate) != 0)
        _exit(7);
    for (uint64_t done = 0; done < bytes; done += MIB) {
        char *p = malloc(MIB);
        if (!p)
            _exit(8);
        touch(p, MIB);
    }
    _exit(0);
}

/* Fork a child that allocates `bytes` inside a group capped at cap. */
static void run_capped(const cg_system *sys, const char *tag, uint64_t cap, uint64_t bytes,
                       cg_counters *c, cg_outcome *o)
{
    char name[64];
    cg_group *g = NULL;
    cg_gate gate;
    group_name(name, sizeof name, tag);
    assert_int_equal(cg_gate_init(&gate), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        child_hog(&gate, bytes);
    assert_int_equal(cg_group_create(sys, name, cap, &g), 0);
    assert_int_equal(cg_group_add_pid(g, pid), 0);
    assert_int_equal(cg_gate_release(&gate, 1), 0);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_int_equal(cg_group_read(g, 0, c), 0);
    cg_classify(ws, c, o);
    assert_int_equal(cg_group_destroy(g), 0);
    cg_gate_fini(&gate);
}

static void test_real_child_past_cap_is_oom(void **state)
{
    (void)state;
    cg_system sys;
    cg_counters c;
    cg_outcome o;
    if (!real_system(&sys)) {
        skip();
        return;
    }
    run_capped(&sys, "oom", 64 * MIB, 256 * MIB, &c, &o);
    assert_int_equal(o.status, CG_OOM);
    assert_non_null(strstr(o.reason, "killed by the OOM killer under memory cap 67108864 bytes"));
    assert_true(c.oom_kills >= 1 || !c.oom_kill_known);
    printf("# oom: %s; limit hits %llu\n", o.reason, (unsigned long long)c.limit_hits);
    if (c.peak_known) {
        assert_true(c.peak_bytes <= 64 * MIB);
        assert_true(c.peak_bytes > 32 * MIB);
    }
}

static void test_real_child_under_cap_is_ok(void **state)
{
    (void)state;
    cg_system sys;
    cg_counters c;
    cg_outcome o;
    if (!real_system(&sys)) {
        skip();
        return;
    }
    run_capped(&sys, "ok", 128 * MIB, 16 * MIB, &c, &o);
    assert_int_equal(o.status, CG_OK);
    assert_int_equal(c.oom_kills, 0);
    if (c.peak_known)
        assert_true(c.peak_bytes >= 16 * MIB);
}

/* In the child: attach to its own group, reset the peak after freeing a
 * large allocation, and check the peak then covers only the second phase.
 * Exit codes: 0 pass, 2.. which check failed. */
static void child_phases(cg_gate *gate, uint64_t cap)
{
    cg_system sys;
    cg_group *g = NULL;
    cg_counters c;
    if (cg_gate_wait(gate) != 0)
        _exit(7);
    if (cg_detect(NULL, &sys) != 0 || cg_group_open_self(&sys, &g) != 0)
        _exit(2);
    if (cg_group_cap_bytes(g) != cap)
        _exit(3);
    /* mmap, not malloc: freed memory must really leave (ASan's allocator
     * keeps freed blocks in quarantine). */
    char *big = mmap(NULL, 48 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (big == MAP_FAILED)
        _exit(4);
    touch(big, 48 * MIB);
    munmap(big, 48 * MIB);
    if (cg_group_reset_peak(g) != 0)
        _exit(5);
    char *small = mmap(NULL, 8 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (small == MAP_FAILED)
        _exit(4);
    touch(small, 8 * MIB);
    if (cg_group_read(g, 0, &c) != 0 || !c.peak_known)
        _exit(6);
    if (c.peak_bytes < 8 * MIB)
        _exit(8);
    if (c.peak_bytes > 32 * MIB)
        _exit(9);
    munmap(small, 8 * MIB);
    cg_group_destroy(g);
    _exit(0);
}

static void test_real_self_peak_reset(void **state)
{
    (void)state;
    cg_system sys;
    cg_group *g = NULL;
    cg_gate gate;
    char name[64];
    if (!real_system(&sys)) {
        skip();
        return;
    }
    group_name(name, sizeof name, "self");
    assert_int_equal(cg_gate_init(&gate), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        child_phases(&gate, 128 * MIB);
    assert_int_equal(cg_group_create(&sys, name, 128 * MIB, &g), 0);
    assert_int_equal(cg_group_add_pid(g, pid), 0);
    assert_int_equal(cg_gate_release(&gate, 1), 0);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    cg_counters c;
    assert_int_equal(cg_group_read(g, 0, &c), 0);
    assert_int_equal(cg_group_destroy(g), 0);
    cg_gate_fini(&gate);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    if (c.peak_known) /* the parent's view: the group's peak saw the reset too */
        assert_true(c.peak_bytes <= 32 * MIB);
}

/* Child: read path with O_DIRECT in 1 MiB requests; exit 0 when all read. */
static void child_read_direct(cg_gate *gate, const char *path, uint64_t bytes)
{
    void *buf = NULL;
    if (cg_gate_wait(gate) != 0)
        _exit(7);
    if (posix_memalign(&buf, 4096, MIB) != 0)
        _exit(2);
    int fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0)
        _exit(errno == EINVAL ? 3 : 4);
    for (uint64_t off = 0; off < bytes; off += MIB)
        if (pread(fd, buf, MIB, (off_t)off) != (ssize_t)MIB)
            _exit(5);
    _exit(0);
}

static void test_real_group_counts_its_reads(void **state)
{
    (void)state;
    const uint64_t file_bytes = 16 * MIB;
    cg_system sys;
    cg_group *g = NULL;
    cg_gate gate;
    devstat_dev dev;
    char name[64], path[4096];
    if (!real_system(&sys)) {
        skip();
        return;
    }
    if (!sys.has_io) {
        printf("# skipped: no per-group I/O counters (blkio/io controller) here\n");
        skip();
        return;
    }
    int rc = devstat_resolve(tmp, NULL, &dev);
    if (rc) {
        printf("# skipped: %s\n", ann_errmsg(rc));
        skip();
        return;
    }
    snprintf(path, sizeof path, "%s/direct.bin", tmp);
    char *data = malloc(file_bytes);
    assert_non_null(data);
    memset(data, 0x61, file_bytes);
    assert_int_equal(tu_write_file(path, data, file_bytes), 0);
    free(data);

    group_name(name, sizeof name, "io");
    assert_int_equal(cg_gate_init(&gate), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        child_read_direct(&gate, path, file_bytes);
    assert_int_equal(cg_group_create(&sys, name, 0, &g), 0);
    assert_int_equal(cg_group_watch_device(g, devstat_devt(&dev)), 0);
    assert_int_equal(cg_group_add_pid(g, pid), 0);
    assert_int_equal(cg_gate_release(&gate, 1), 0);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    cg_counters c;
    assert_int_equal(cg_group_read(g, devstat_devt(&dev), &c), 0);
    assert_int_equal(cg_group_destroy(g), 0);
    cg_gate_fini(&gate);
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 3) {
        printf("# skipped: O_DIRECT not supported on %s\n", tmp);
        skip();
        return;
    }
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    printf("# group read %llu bytes in %llu requests on %s for %llu bytes read\n",
           (unsigned long long)c.read_bytes, (unsigned long long)c.read_ios, dev.name,
           (unsigned long long)file_bytes);
    assert_true(c.io_known);
    /* Only this child is in the group: its reads, nobody else's. */
    assert_true(c.read_bytes >= file_bytes - file_bytes / 20);
    assert_true(c.read_bytes <= file_bytes + file_bytes / 20);
    assert_true(c.read_ios >= 1);
}

static void test_gate_cancel(void **state)
{
    (void)state;
    cg_gate gate;
    assert_int_equal(cg_gate_init(&gate), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(cg_gate_wait(&gate) == ANN_ESTATE ? 7 : 1);
    assert_int_equal(cg_gate_release(&gate, 0), 0);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 7);
    cg_gate_fini(&gate);

    /* The parent's end closed without a word: the child must not run. */
    assert_int_equal(cg_gate_init(&gate), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(cg_gate_wait(&gate) == ANN_ESTATE ? 7 : 1);
    cg_gate_fini(&gate);
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_int_equal(WEXITSTATUS(ws), 7);

    /* Releasing a child that is gone is an error, not a SIGPIPE. */
    assert_int_equal(cg_gate_init(&gate), 0);
    pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    close(gate.fds[0]);
    gate.fds[0] = -1;
    assert_int_equal(cg_gate_release(&gate, 1), ANN_ESTATE);
    cg_gate_fini(&gate);
}

/* A process that has exited and been reaped: its owner tag (owner.h). */
static void dead_tag(char *buf, size_t len)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ann_owner me;
        ann_owner_self(&me);
        char tag[48];
        ann_owner_tag(&me, tag, sizeof tag);
        if (write(fds[1], tag, sizeof tag) != (ssize_t)sizeof tag)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    char tag[48] = "";
    assert_int_equal(read(fds[0], tag, sizeof tag), (ssize_t)sizeof tag);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    snprintf(buf, len, "%s", tag);
}

/*
 * Issue 14: the groups of a run killed with -9 are removed by the next
 * run (cg_reap_stale), the processes it left in them killed; groups of a
 * live run are left alone, and so are names of another form.
 */
static void test_real_reap_stale(void **state)
{
    (void)state;
    cg_system sys;
    if (!real_system(&sys)) {
        skip();
        return;
    }
    char dead[48], live[48], gdead[4400], glive[4400], gother[4400], procs[4500];
    ann_owner me;
    ann_owner_self(&me);
    ann_owner_tag(&me, live, sizeof live);
    dead_tag(dead, sizeof dead);
    snprintf(gdead, sizeof gdead, "%s/annlab-00000000000000d1-%s", sys.memory_parent, dead);
    snprintf(glive, sizeof glive, "%s/annlab-00000000000000a1-%s", sys.memory_parent, live);
    snprintf(gother, sizeof gother, "%s/annlab-test-%ld-other", sys.memory_parent, (long)getpid());
    assert_int_equal(mkdir(gdead, 0755), 0);
    assert_int_equal(mkdir(glive, 0755), 0);
    assert_int_equal(mkdir(gother, 0755), 0);
    /* a cell the dead run left running, in its group */
    pid_t orphan = fork();
    assert_true(orphan >= 0);
    if (orphan == 0) {
        for (;;)
            pause();
    }
    snprintf(procs, sizeof procs, "%s/cgroup.procs", gdead);
    FILE *fp = fopen(procs, "w");
    assert_non_null(fp);
    fprintf(fp, "%d\n", (int)orphan);
    assert_int_equal(fclose(fp), 0);
    unsigned removed = 0;
    int rc = cg_reap_stale(&sys, "annlab-", &removed);
    if (rc)
        print_message("cg_reap_stale: %s\n", ann_errmsg(rc));
    int ws = 0;
    assert_int_equal(waitpid(orphan, &ws, 0), orphan);
    assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
    struct stat st;
    assert_int_equal(stat(gdead, &st), -1);
    assert_int_equal(stat(glive, &st), 0);
    assert_int_equal(stat(gother, &st), 0);
    assert_true(removed >= 1);
    assert_int_equal(rmdir(glive), 0);
    assert_int_equal(rmdir(gother), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_detect_v1_nested, setup, teardown),
        cmocka_unit_test_setup_teardown(test_detect_v1_without_memsw_or_blkio, setup, teardown),
        cmocka_unit_test_setup_teardown(test_detect_v2_pure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_detect_v2_hybrid_unified, setup, teardown),
        cmocka_unit_test_setup_teardown(test_detect_unsupported_reasons, setup, teardown),
        cmocka_unit_test_setup_teardown(test_detect_malformed_proc_cgroup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_name_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_group_on_fake_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_group_on_fake_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_corrupt_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_self_on_fake_trees, setup, teardown),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_gate_cancel),
        cmocka_unit_test_setup_teardown(test_real_create_and_remove, setup, teardown_real),
        cmocka_unit_test_setup_teardown(test_real_child_past_cap_is_oom, setup, teardown_real),
        cmocka_unit_test_setup_teardown(test_real_child_under_cap_is_ok, setup, teardown_real),
        cmocka_unit_test_setup_teardown(test_real_self_peak_reset, setup, teardown_real),
        cmocka_unit_test_setup_teardown(test_real_group_counts_its_reads, setup, teardown_real),
        cmocka_unit_test_setup_teardown(test_real_reap_stale, setup, teardown_real),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
