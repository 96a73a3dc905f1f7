/*
 * status.h: the one error model of annlab.
 *
 * Every fallible function returns an int: 0 (ANN_OK) on success, a negative
 * code on failure.  System failures are -errno, as liburing does; annlab's
 * own failures are the ANN_E* codes below, all below -4096 so they never
 * collide with an errno.  ann_strerror() maps any code to a short phrase.
 *
 * The code says *what kind* of failure; the detail ("base.fbin: size 1234
 * does not match header n=10 dim=32") goes to a thread-local message set by
 * ann_fail() at the point of failure, so the message can name the file,
 * record or parameter at fault.  Callers that add context wrap it with
 * ann_fail_wrap().  Library code never exits or aborts.
 */
#ifndef ANNLAB_CORE_STATUS_H
#define ANNLAB_CORE_STATUS_H

#include <stdarg.h>

enum {
    ANN_OK = 0,
    ANN_EPARAM = -5001,       /* unknown, mistyped or out-of-range parameter */
    ANN_EFORMAT = -5002,      /* file is not in the expected format, or truncated */
    ANN_ECORRUPT = -5003,     /* on-disk data fails a consistency check */
    ANN_EVERSION = -5004,     /* on-disk format version this build cannot read */
    ANN_ENOTFOUND = -5005,    /* a record, file or name that should exist does not */
    ANN_EUNSUPPORTED = -5006, /* feature unavailable here (kernel, package, engine op) */
    ANN_EDATA = -5007,        /* bad values in input data: NaN/Inf, ids out of range */
    ANN_ECONFIG = -5008,      /* invalid experiment configuration */
    ANN_ESTATE = -5009,       /* call not valid in the object's current state */
    ANN_EINTERNAL = -5010,    /* a bug in annlab: an invariant did not hold */
    ANN_EBUSY = -5011,        /* held by another live process (a lock), try later */
};

/* Short, static description of code (any ANN_E* or -errno). Thread-safe. */
const char *ann_strerror(int code);

/*
 * Record a detail message for this thread and return code unchanged, so a
 * failure site reads:  return ann_fail(ANN_EFORMAT, "%s: bad magic", path);
 */
int ann_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like ann_fail for a system call that set errno: returns -errno. */
int ann_fail_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prefix the current detail message with context ("index/graph: ...").  */
int ann_fail_wrap(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The detail message of this thread's last failure, or ann_strerror(code)
 * for the given code when none was recorded.  Valid until the next ann_fail
 * on this thread.
 */
const char *ann_errmsg(int code);

/* Forget this thread's detail message. */
void ann_err_clear(void);

/*
 * 1 when code is a failure that may not happen again on a later attempt
 * with the same inputs: the disk or a quota full (ENOSPC, EDQUOT), another
 * process in the way (ANN_EBUSY, EBUSY, EAGAIN, ETXTBSY), an interrupted
 * call (EINTR), exhausted descriptors (EMFILE, ENFILE), a stale or
 * timed-out network file (ESTALE, ETIMEDOUT); else 0.  Everything else is
 * deterministic: the corruption and format errors, and EEXIST / ENOTEMPTY
 * (an output that is already there stays there on the next attempt; the one
 * race that meets them, a sibling build renaming its index into place
 * first, is reported as ANN_EBUSY by ann_engine_build).  `annlab run` records a cell that failed with a transient
 * code as "transient" and retries it on --resume.  Thread-safe.
 */
int ann_is_transient(int code);

#endif
