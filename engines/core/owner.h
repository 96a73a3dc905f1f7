/*
 * owner.h: who owns a temporary or a lock, whether that owner still lives,
 * and exclusive locks that say who holds them.
 *
 * A process is named by its pid and its start time (field 22 of
 * /proc/<pid>/stat, clock ticks since boot): a pid alone is reused, the
 * pair is not within one boot.  Temporaries that can outlive a crash (a
 * build directory, a staged dataset) are named "<final>.tmp.<pid>-<start>"
 * (ann_tmp_path), so whoever next needs the name can tell a dead owner's
 * leftovers, which it removes (ann_tmp_reap), from a live sibling's work
 * in progress, which it leaves alone.
 *
 * Locks are flock(2) locks on a small file: the kernel drops them when the
 * last descriptor sharing the lock closes, so a killed holder never leaves
 * a lock behind, and a child that inherits the descriptor keeps holding it
 * after its parent dies.  The holder writes one line into the file (pid,
 * start time, since when, what it is doing) so that a process refused the
 * lock can say who holds it.
 */
#ifndef ANNLAB_CORE_OWNER_H
#define ANNLAB_CORE_OWNER_H

#include <stddef.h>
#include <stdint.h>

typedef struct ann_owner {
    int pid;
    uint64_t start; /* clock ticks after boot; 0 = unknown (a tag without one) */
} ann_owner;

/* This process.  Returns 0, or -errno when /proc/self/stat is unreadable
 * (start is then 0 and pid set: still usable). */
int ann_owner_self(ann_owner *o);

/* Process pid as it is now.  -ESRCH when there is no such process. */
int ann_owner_of_pid(int pid, ann_owner *o);

/* "<pid>-<start>" into buf (at least 32 bytes). */
void ann_owner_tag(const ann_owner *o, char *buf, size_t len);

/* Parse "<pid>-<start>" or a bare "<pid>" (start 0) that makes up the
 * whole of s.  ANN_EFORMAT otherwise. */
int ann_owner_parse(const char *s, ann_owner *o);

/* 1 when the owner is alive: a process with that pid exists and, when
 * start is known, started at that time; 0 otherwise. */
int ann_owner_alive(const ann_owner *o);

/*
 * "<path>.tmp.<tag>" with this process's tag into buf.  ANN_EPARAM
 * "<path>: path too long ..." when it does not fit in len bytes.
 */
int ann_tmp_path(const char *path, char *buf, size_t len);

/*
 * In directory dir, remove every entry "<name>.tmp.<tag>" whose tag parses
 * and whose owner is dead (directories with everything in them); entries
 * of live owners, and names whose tag does not parse, are left.  *removed
 * (may be NULL) receives how many were removed.  A missing dir is 0.
 * Errors: -errno naming dir or the entry that could not be removed.
 */
int ann_tmp_reap(const char *dir, const char *name, unsigned *removed);

/* An exclusive lock held through fd (-1: not held). */
typedef struct ann_lock {
    int fd;
    char path[4096];
} ann_lock;

/*
 * Take the lock file path (created with mode 0644 when missing).  what: a
 * few words written beside the owner into the file ("annlab run
 * configs/x.json").  wait: block until the lock is free; else fail at once.
 * inheritable: leave the descriptor open across exec (children started
 * afterwards share the lock: it is held until the last of them exits);
 * else close-on-exec.
 * Errors: ANN_EBUSY "<path>: held by <holder>" (not waiting); -errno
 * naming the file.  lk->fd is -1 on failure.
 */
int ann_lock_take(ann_lock *lk, const char *path, const char *what, int wait, int inheritable);

/* What the holder of path wrote ("pid 123 since 2026-12-01T10:00:00Z:
 * annlab run x.json"), or "an unknown process" when the file is empty. */
void ann_lock_holder(const char *path, char *buf, size_t len);

/* Release (close the descriptor); the file stays.  Accepts a lock not held. */
void ann_lock_release(ann_lock *lk);

#endif
