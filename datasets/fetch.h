/*
 * fetch.h: downloading one source file (libcurl), resumably and checked.
 *
 * A download is written to DEST.part and reaches DEST only once it is
 * complete and checked: its size against the length the server announced
 * and against the expected size when one is given, its sha256 against the
 * expected digest when one is given.  A later call continues an existing
 * DEST.part with a Range request; a server that answers a range request
 * with the whole file (200) is followed from byte 0 instead.  URLs may be
 * http, https or file (redirects: http and https only).
 */
#ifndef ANNLAB_DATASETS_FETCH_H
#define ANNLAB_DATASETS_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Default seconds below DS_FETCH_LOW_SPEED_BYTES per second before a transfer is abandoned. */
#define DS_FETCH_LOW_SPEED_S 60
#define DS_FETCH_LOW_SPEED_BYTES 1024
/* Seconds between two progress lines. */
#define DS_FETCH_PROGRESS_S 5.0

typedef struct ds_fetch_spec {
    const char *name;          /* for messages: the dataset ("gist-960-euclidean") */
    const char *url;           /* source (http, https, file) */
    const char *dest;          /* final path; the folder must exist */
    uint64_t expect_bytes;     /* 0: no expected size */
    const char *expect_sha256; /* 64 lowercase hex digits, or NULL */
    const char *offline_hint;  /* appended to the "no network" message, or NULL */
    long low_speed_s;          /* 0: DS_FETCH_LOW_SPEED_S */
    FILE *progress;            /* a line every DS_FETCH_PROGRESS_S seconds, or NULL */
} ds_fetch_spec;

typedef struct ds_fetch_result {
    uint64_t bytes;        /* size of DEST */
    uint64_t resumed_from; /* bytes of an earlier DEST.part kept (0: from the start) */
    uint64_t transferred;  /* body bytes received by this call */
    int restarted;         /* 1: the server ignored the range; DEST.part was rewritten */
    int already;           /* 1: DEST was there and checked; nothing was downloaded */
    char sha256[72];       /* "sha256:<64 hex>" of DEST */
} ds_fetch_result;

/*
 * Download spec->url to spec->dest through spec->dest + ".part".
 *
 * When DEST exists it is not downloaded again: it is checked against
 * expect_bytes / expect_sha256 and its sha256 returned (res->already = 1).
 * On success DEST holds the checked file (data fsync'd before the rename)
 * and res (out, filled by the call) describes it.  On failure DEST is not
 * created; DEST.part is kept when it holds bytes a later call can resume
 * from, and removed when it is empty, failed the sha256 check, or could
 * not be fsync'd and renamed.  DEST.part is locked (flock) while in use.
 *
 * spec and its strings are borrowed.  Thread-safe (one curl handle per
 * call; libcurl's global initialisation runs once, under pthread_once).
 *
 * Errors (messages start "<name>: "):
 *   -ENETUNREACH  "cannot download <url>: no network (could not resolve host
 *                 'H' | could not connect to 'H' | <timeout>); <offline_hint>"
 *   ANN_ENOTFOUND "cannot download <url>: HTTP 404" (and 410), or a missing
 *                 file:// source
 *   -EIO          other HTTP statuses >= 400 ("HTTP 503"), an interrupted
 *                 or stalled transfer (a timeout after bytes arrived: "the
 *                 transfer stalled (...)"; "... run the command again to
 *                 resume"), other
 *                 transfer failures (curl's own text)
 *   ANN_ECORRUPT  size or sha256 differs (expected and got, the file, and
 *                 what to delete), the server's length included
 *   ANN_EPARAM    missing name/url/dest, a malformed expect_sha256, a path
 *                 too long, a protocol other than http/https/file
 *   -EBUSY        another process holds DEST.part
 *   -errno        creating, writing or renaming DEST.part
 *   ANN_EINTERNAL libcurl could not be initialised
 */
int ds_fetch_file(const ds_fetch_spec *spec, ds_fetch_result *res);

/*
 * The URL to fetch url from when mirror (e.g. $ANNLAB_MIRROR) is set:
 * everything up to url's last '/' is replaced by mirror ("http://a/b/x.hdf5"
 * with mirror "file:///srv/m" gives "file:///srv/m/x.hdf5").  mirror NULL
 * or "" copies url.  out: len bytes.  Errors: ANN_EPARAM when url has no
 * file name after its last '/' or the result does not fit.
 */
int ds_fetch_mirror_url(const char *url, const char *mirror, char *out, size_t len);

#endif
