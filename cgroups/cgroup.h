/*
 * cgroup.h: per-cell memory caps and accounting through Linux control
 * groups, v1 and v2.
 *
 * The harness runs each capped cell in a child process that joins a fresh
 * group before it opens anything:
 *
 *   cg_system sys;                      once per run
 *   if (cg_detect(NULL, &sys) != 0)     ANN_EUNSUPPORTED: record capped
 *       ... skip, reason = ann_errmsg(rc) ...   cells as "skipped"
 *
 *   cg_gate gate;  cg_gate_init(&gate);
 *   pid = fork();
 *   child:  if (cg_gate_wait(&gate) != 0) _exit(...);   blocks until moved
 *           ... open the index, run the cell ...
 *   parent: cg_group_create(&sys, "cell-17", cap_bytes, &g);
 *           cg_group_add_pid(g, pid);
 *           cg_gate_release(&gate, 1);           or 0 to make the child quit
 *           waitpid(pid, &wstatus, 0);
 *           cg_group_read(g, dev, &counters);
 *           cg_classify(wstatus, &counters, &outcome);   ok / oom / error
 *           cg_group_destroy(g);
 *
 * Where groups go.  The process's own group for the memory controller is
 * read from /proc/self/cgroup ("4:memory:/process_api/abc" in v1,
 * "0::/user.slice/x" in v2) and joined to the controller's mount point, so
 * cell groups nest under the harness's own group (a delegated subtree).
 * v1 also gets a sibling group in the blkio hierarchy for per-cell read
 * counters.  Every path below is built from cg_detect_params, so the
 * parsing and path logic run against fake trees in tests.
 *
 * What is set.  v2: memory.max = cap, memory.swap.max = 0 (when the file
 * exists), "+memory +io" in the parent's cgroup.subtree_control.  v1:
 * memory.limit_in_bytes = cap and memory.memsw.limit_in_bytes = cap when
 * swap accounting is present (so the cell cannot spill to swap), and
 * memory.move_charge_at_immigrate is left alone: the child joins before it
 * touches memory.  The cap counts page cache in both versions.
 *
 * Thread-safety: cg_detect is reentrant; a cg_group is used by one thread
 * at a time.  All functions set the detail message (ann_errmsg) on error.
 */
#ifndef ANNLAB_CGROUPS_CGROUP_H
#define ANNLAB_CGROUPS_CGROUP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define CG_PATH_BYTES 4096
#define CG_REASON_BYTES 512

typedef enum cg_version {
    CG_NONE = 0, /* no usable memory controller */
    CG_V1 = 1,
    CG_V2 = 2,
} cg_version;

/* Where to look; NULL fields take the defaults shown. */
typedef struct cg_detect_params {
    const char *cgroup_root; /* "/sys/fs/cgroup": v1 controllers as <root>/memory,
                                <root>/blkio; v2 as <root> itself (when it holds
                                cgroup.controllers) or <root>/unified */
    const char *proc_cgroup; /* "/proc/self/cgroup": this process's groups */
} cg_detect_params;

/* What cg_detect found: plain data, copyable. */
typedef struct cg_system {
    cg_version version;
    char memory_parent[CG_PATH_BYTES]; /* directory cell groups are created in */
    char io_parent[CG_PATH_BYTES];     /* v1: blkio parent ("" when blkio is absent);
                                          v2: same as memory_parent */
    bool has_memsw;    /* v1: memory.memsw.limit_in_bytes exists (swap accounting) */
    bool has_swap_max; /* v2: memory.swap.max exists */
    bool has_io;       /* per-group read counters available (v1 blkio / v2 io) */
    bool has_peak;     /* v1 max_usage_in_bytes / v2 memory.peak exists */
    char reason[CG_REASON_BYTES]; /* why unusable, when cg_detect fails */
} cg_system;

/*
 * Find the cgroup version with a memory controller and the directory this
 * process may create children in.  v1 is preferred when its memory
 * controller is mounted (the controller then cannot be in v2).
 *   params: may be NULL (all defaults).
 *   out:    filled on success; on ANN_EUNSUPPORTED, out->version is CG_NONE
 *           and out->reason says why (also the detail message).
 * Returns 0; ANN_EUNSUPPORTED when no memory controller is mounted, this
 * process's group is not found under it, or it is not writable (not root,
 * read-only mount); ANN_EFORMAT when proc_cgroup cannot be parsed (naming
 * the file and line).  Thread-safe.
 */
int cg_detect(const cg_detect_params *params, cg_system *out);

/* A cell group: created by cg_group_create, freed by cg_group_destroy. */
typedef struct cg_group cg_group;

/*
 * Create <memory_parent>/<name> (and, in v1, <io_parent>/<name>) and set
 * the memory cap.  name: one path component of [A-Za-z0-9._-] (ANN_EPARAM
 * otherwise).  cap_bytes: the limit, page cache included, swap excluded;
 * 0 means no cap (accounting only).  A directory that already exists is
 * reused only when it holds no process (a leftover of a crashed run); its
 * peak counter is reset where the kernel allows.
 * Errors: ANN_EUNSUPPORTED (EACCES, EPERM, EROFS: no right to create, with
 * the path), -errno naming the file that could not be written, ANN_ESTATE
 * when an existing group still holds processes.  On failure nothing is
 * left behind.  *out is owned by the caller (cg_group_destroy).
 */
int cg_group_create(const cg_system *sys, const char *name, uint64_t cap_bytes, cg_group **out);

/* Directory of the group in the memory hierarchy (owned by g). */
const char *cg_group_path(const cg_group *g);
/* The cap given at creation (0 = none). */
uint64_t cg_group_cap_bytes(const cg_group *g);

/*
 * Move process pid (all its threads) into the group, in every hierarchy the
 * group spans.  Call before the process allocates or opens the index: in
 * v1, charges made before the move stay with the old group.  -errno naming
 * the cgroup.procs file on failure (ESRCH when pid is gone).
 */
int cg_group_add_pid(cg_group *g, pid_t pid);

/*
 * Count reads on block device dev (a whole disk, devstat_devt) in the
 * group's own I/O counters.  v2's io.stat counts every device: nothing to
 * do.  v1's blkio.throttle counters only count devices that carry a
 * throttle rule (kernel 5.x and later), so a read-bandwidth rule far above
 * any device (2^50 bytes/s, never reached) is installed for dev; a v1
 * group without this call reports no I/O counters (io_known false).
 * Returns 0; ANN_EUNSUPPORTED when the group has no I/O controller;
 * -errno naming the file.
 */
int cg_group_watch_device(cg_group *g, dev_t dev);

/*
 * Attach to the group this process itself is in, as found by cg_detect (a
 * cell process reads its own group's counters around the measured phase).
 * The directories are not owned: cg_group_destroy only frees g.  The cap
 * reported is the group's current limit (0 when unlimited).
 * Errors: ANN_EUNSUPPORTED when sys has no usable cgroup; -errno naming a
 * file that cannot be read.  *out is owned by the caller.
 */
int cg_group_open_self(const cg_system *sys, cg_group **out);

/*
 * Restart the peak-memory counter from the current usage, so the peak
 * covers one phase.  v1: writes 0 to memory.max_usage_in_bytes.  v2: writes
 * to memory.peak through a descriptor g keeps open, which later reads of
 * the peak use (the reset is per open file, kernel 6.12 and later).
 * ANN_EUNSUPPORTED when the kernel refuses (the peak then covers the
 * group's whole life; callers record that).
 */
int cg_group_reset_peak(cg_group *g);

/* Counters of a group; fields whose file is absent stay 0 / false. */
typedef struct cg_counters {
    uint64_t cap_bytes;       /* as set (0 = none) */
    uint64_t usage_bytes;     /* now: v1 usage_in_bytes, v2 memory.current */
    uint64_t peak_bytes;      /* v1 max_usage_in_bytes, v2 memory.peak */
    bool peak_known;
    uint64_t limit_hits;      /* times usage hit the cap: v1 failcnt (the larger of memory
                                 and memsw), v2 events "max" */
    uint64_t oom_events;      /* v2 events "oom"; v1 1 when under_oom was seen */
    uint64_t oom_kills;       /* processes killed by the OOM killer (v2 events
                                 "oom_kill", v1 oom_control "oom_kill") */
    bool oom_kill_known;      /* the kernel reports oom_kill */
    bool under_oom;           /* v1 oom_control under_oom now */
    uint64_t read_bytes;      /* v2 io.stat rbytes, v1 throttle.io_service_bytes Read
                                 (v1: watched devices only, cg_group_watch_device) */
    uint64_t read_ios;        /* v2 io.stat rios,   v1 throttle.io_serviced Read */
    bool io_known;
    uint64_t page_cache_bytes; /* page cache charged to the group now: v1 memory.stat
                                  "cache", v2 memory.stat "file" */
    bool page_cache_known;
} cg_counters;

/*
 * Read the group's counters.  dev: count reads on this block device only
 * (makedev(major, minor) of the whole disk, see devstat.h), or 0 for the
 * sum over all devices.  Returns 0, or -errno / ANN_EFORMAT naming the file
 * and line that could not be read or parsed.
 */
int cg_group_read(const cg_group *g, dev_t dev, cg_counters *out);

/*
 * Remove the group (unless it was attached by cg_group_open_self, which
 * is only freed): processes still in it are moved to the parent group
 * (v1) or killed (v2, where a parent with controllers enabled cannot hold
 * processes), then the directories are removed (retrying briefly while the
 * kernel finishes releasing them), then g is freed.  Accepts NULL.
 * Returns 0 or -errno naming the directory that could not be removed; g is
 * freed either way.
 */
int cg_group_destroy(cg_group *g);

/*
 * Remove the groups of runs that died without cleaning up (kill -9 of the
 * harness): every directory under the memory parent (and, in v1, the
 * blkio parent) named "<prefix><id>-<pid>-<start>" (or the older
 * "<prefix><id>-<pid>") whose owner, engines/core/owner.h, is no longer
 * alive.  Processes still in such a group (cells the dead run left
 * running) are killed first.  Groups of live owners are never touched.
 * *removed (may be NULL) counts memory groups removed.  Returns 0 or the
 * first error (-errno naming the directory); the others are still tried.
 */
int cg_reap_stale(const cg_system *sys, const char *prefix, unsigned *removed);

/* Outcome of a capped cell. */
typedef enum cg_status {
    CG_OK = 0,    /* exited 0 */
    CG_OOM = 1,   /* killed by the OOM killer (or died with the group at its cap) */
    CG_ERROR = 2, /* any other failure */
} cg_status;

typedef struct cg_outcome {
    cg_status status;
    char reason[CG_REASON_BYTES]; /* "" when ok; e.g. "killed by the OOM killer
                                     under memory cap 67108864 bytes (oom_kill=1)" */
} cg_outcome;

/*
 * Classify a cell from its waitpid status and its group's counters read
 * after it ended.  OOM when the child died of SIGKILL and the group counted
 * an OOM kill (or, on kernels without the oom_kill counter, an OOM event or
 * limit hits at the cap); ERROR for other signals and non-zero exits; OK for
 * exit 0.  Pure function, thread-safe.
 */
void cg_classify(int wait_status, const cg_counters *c, cg_outcome *out);

/* Counters as a JSON object {"cap_bytes", "peak_bytes", "limit_hits",
 * "oom_kills", "read_bytes", "read_ios", ...}; unknown fields are null.
 * New reference, NULL on allocation failure. */
json_t *cg_counters_json(const cg_counters *c);

/*
 * A start gate: the parent forks a child that blocks in cg_gate_wait until
 * the parent has moved it into its group and calls cg_gate_release (a
 * one-byte message on a socket pair).
 * Embedded object: cg_gate_init before fork, each side closes the end it
 * does not use inside wait/release; cg_gate_fini closes what is left.
 */
typedef struct cg_gate {
    int fds[2]; /* socket pair: [0] the child's end, [1] the parent's; -1 when closed */
} cg_gate;

/* Create the channel (close-on-exec).  -errno on failure. */
int cg_gate_init(cg_gate *gate);
/* Child: wait for the parent's word.  0 when released with go != 0;
 * ANN_ESTATE when the parent said no or closed its end (parent died, or
 * the group could not be set up): the child must then exit without running. */
int cg_gate_wait(cg_gate *gate);
/* Child after fork+exec: the same on an inherited read end fd (the
 * parent clears FD_CLOEXEC on fds[0] for that child and passes the
 * number); fd is closed on return. */
int cg_gate_wait_fd(int fd);
/* Parent: let the child run (go != 0) or tell it to quit (go == 0).
 * Never raises SIGPIPE; ANN_ESTATE when the child has already gone. */
int cg_gate_release(cg_gate *gate, int go);
/* Close both ends if still open.  Accepts a gate whose fds are -1. */
void cg_gate_fini(cg_gate *gate);

#endif
