/*
 * status.c: error codes to text, and the thread-local detail message that
 * lets every error name the file, record or parameter at fault.
 */
#include "engines/core/status.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define ERRMSG_BYTES 1024

static _Thread_local char errmsg[ERRMSG_BYTES];

const char *ann_strerror(int code)
{
    switch (code) {
    case ANN_OK: return "success";
    case ANN_EPARAM: return "invalid parameter";
    case ANN_EFORMAT: return "bad file format";
    case ANN_ECORRUPT: return "corrupt data";
    case ANN_EVERSION: return "unsupported format version";
    case ANN_ENOTFOUND: return "not found";
    case ANN_EUNSUPPORTED: return "not supported here";
    case ANN_EDATA: return "invalid data values";
    case ANN_ECONFIG: return "invalid configuration";
    case ANN_ESTATE: return "invalid state";
    case ANN_EINTERNAL: return "internal error";
    case ANN_EBUSY: return "held by another process";
    default:
        if (code < 0 && code > -4096)
            return strerror(-code);
        return "unknown error";
    }
}

static void vset(const char *fmt, va_list ap)
{
    vsnprintf(errmsg, sizeof errmsg, fmt, ap);
}

int ann_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(fmt, ap);
    va_end(ap);
    return code;
}

int ann_fail_errno(const char *fmt, ...)
{
    int code = errno ? -errno : -EIO;
    char head[ERRMSG_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    snprintf(errmsg, sizeof errmsg, "%s: %s", head, strerror(-code));
    return code;
}

int ann_fail_wrap(int code, const char *fmt, ...)
{
    char head[ERRMSG_BYTES], tail[ERRMSG_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    if (errmsg[0])
        snprintf(tail, sizeof tail, "%s", errmsg);
    else
        snprintf(tail, sizeof tail, "%s", ann_strerror(code));
    snprintf(errmsg, sizeof errmsg, "%s: %s", head, tail);
    return code;
}

const char *ann_errmsg(int code)
{
    return errmsg[0] ? errmsg : ann_strerror(code);
}

void ann_err_clear(void)
{
    errmsg[0] = '\0';
}

int ann_is_transient(int code)
{
    switch (code) {
    case ANN_EBUSY:
    case -ENOSPC:
    case -EDQUOT:
    case -EBUSY:
    case -EAGAIN:
    case -ETXTBSY:
    case -EINTR:
    case -EMFILE:
    case -ENFILE:
    case -ESTALE:
    case -ETIMEDOUT:
        return 1;
    default:
        return 0;
    }
}
