/*
 * fetch.c: one source file from a URL to disk with libcurl (see fetch.h).
 *
 * The bytes go to DEST.part, appended; a later run continues it with a
 * Range request (CURLOPT_RESUME_FROM_LARGE).  libcurl refuses a 200 answer
 * to a range request (CURLE_RANGE_ERROR) before writing any of it, so that
 * case truncates DEST.part and asks again from byte 0: a server without
 * range support costs a restart, never a file with its head twice.  When
 * the transfer ends, the size is checked against what the server announced
 * (the 206's Content-Range total or the 200's Content-Length) and against
 * the caller's expected size, then the sha256 (dsutil's streamed digest)
 * against the expected one; only then is DEST.part fsync'd and renamed
 * (fileio's commit).  A dead connection fails through a low-speed limit
 * rather than hanging; not reaching the host at all is reported as "no
 * network", with the caller's hint for getting the file another way.
 */
#include "datasets/fetch.h"

#include "datasets/dsutil.h"
#include "engines/core/fileio.h"
#include "engines/core/progress.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_S 30L
#define MAX_REDIRECTS 10L

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* One transfer's state, shared with the callbacks. */
typedef struct xfer {
    const ds_fetch_spec *spec;
    CURL *curl;
    FILE *fp;             /* DEST.part, opened for appending */
    uint64_t kept;        /* bytes of DEST.part this transfer continues */
    uint64_t received;    /* body bytes written by this call */
    int64_t range_total;  /* the last response's Content-Range total (-1: none) */
    int write_errno;      /* errno of a failed write to DEST.part */
    int body_started;     /* the response's first body bytes were seen */
    double t0_s, last_s;  /* progress clock */
} xfer;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    xfer *x = arg;
    size_t len = size * nmemb;
    if (!x->body_started) {
        long status = 0;
        x->body_started = 1;
        curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 400)
            return 0; /* an error page is not the file: stop, the status is reported */
    }
    if (fwrite(data, 1, len, x->fp) != len) {
        x->write_errno = errno ? errno : EIO;
        return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    x->received += len;
    return len;
}

/* Keep the total of the last response's Content-Range: "bytes 100-999/1000" (a 206), or
 * the same with "*" for the range (a 416). */
static size_t on_header(char *data, size_t size, size_t nitems, void *arg)
{
    xfer *x = arg;
    size_t len = size * nitems;
    char line[256];
    size_t n = len < sizeof line - 1 ? len : sizeof line - 1;
    memcpy(line, data, n);
    line[n] = '\0';
    if (!strncmp(line, "HTTP/", 5)) {
        x->range_total = -1; /* a new response (after a redirect) */
    } else if (!strncasecmp(line, "Content-Range:", 14)) {
        const char *slash = strchr(line, '/');
        char *end = NULL;
        long long total = slash ? strtoll(slash + 1, &end, 10) : -1;
        if (slash && end != slash + 1 && total >= 0)
            x->range_total = total;
    }
    return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)ultotal;
    (void)ulnow;
    xfer *x = arg;
    double now = ann_mono_s();
    if (now - x->last_s < DS_FETCH_PROGRESS_S)
        return 0;
    x->last_s = now;
    const char *file = strrchr(x->spec->dest, '/');
    file = file ? file + 1 : x->spec->dest;
    double have_mb = (double)(x->kept + (uint64_t)dlnow) / 1e6;
    double rate = (double)dlnow / 1e6 / (now - x->t0_s);
    if (dltotal > 0) {
        double total_mb = (double)(x->kept + (uint64_t)dltotal) / 1e6;
        char left[32] = "?";
        if (rate > 0)
            ann_progress_duration((total_mb - have_mb) / rate, left, sizeof left);
        fprintf(x->spec->progress, "%s: %s: %.1f of %.1f MB (%.0f%%), %.1f MB/s, about %s left\n",
                x->spec->name, file, have_mb, total_mb, 100.0 * have_mb / total_mb, rate, left);
    } else {
        fprintf(x->spec->progress, "%s: %s: %.1f MB, %.1f MB/s\n", x->spec->name, file,
                have_mb, rate);
    }
    fflush(x->spec->progress);
    return 0;
}

static int is_hex64(const char *s)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (!strchr("0123456789abcdefABCDEF", s[i]))
            return 0;
    return i == 64;
}

static void url_host(const char *url, char *out, size_t len)
{
    CURLU *u = curl_url();
    char *host = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
        snprintf(out, len, "%s", host);
    else
        snprintf(out, len, "%s", url);
    curl_free(host);
    curl_url_cleanup(u);
}

/*
 * The size (already known) and sha256 of path against the spec; the digest
 * goes into res.  part names DEST.part when path is one (a bad digest then
 * deletes it: no resume can repair it), NULL when path is DEST itself.
 */
static int verify(const ds_fetch_spec *s, const char *path, uint64_t size, const char *part,
                  ds_fetch_result *res)
{
    char remedy[8400];
    if (part)
        snprintf(remedy, sizeof remedy,
                 "nothing was kept as %s; delete %s to download it again", s->dest, part);
    else
        snprintf(remedy, sizeof remedy, "delete it to download it again");
    if (s->expect_bytes && size != s->expect_bytes)
        return ann_fail(ANN_ECORRUPT, "%s: %s: %llu bytes, expected %llu (%s); %s", s->name,
                        path, (unsigned long long)size, (unsigned long long)s->expect_bytes,
                        s->url, remedy);
    int rc = ds_sha256_file(path, res->sha256, &res->bytes);
    if (rc)
        return rc;
    if (s->expect_sha256 && strcasecmp(res->sha256 + 7, s->expect_sha256) != 0) {
        if (part) {
            unlink(part);
            snprintf(remedy, sizeof remedy, "%s was deleted and nothing kept as %s", part,
                     s->dest);
        }
        return ann_fail(ANN_ECORRUPT, "%s: %s: sha256 %s, expected %s (%s); %s", s->name, path,
                        res->sha256 + 7, s->expect_sha256, s->url, remedy);
    }
    return 0;
}

/* The message for a failed curl_easy_perform. */
static int transfer_failure(const ds_fetch_spec *s, CURL *curl, CURLcode cres,
                            const char *errbuf, const char *part, uint64_t part_bytes,
                            uint64_t received)
{
    const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(cres);
    char *where = NULL;
    char host[1024], resume[8400] = "";
    curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &where);
    url_host(where ? where : s->url, host, sizeof host);
    if (part_bytes)
        snprintf(resume, sizeof resume, " (%s holds %llu bytes: run the command again to resume)",
                 part, (unsigned long long)part_bytes);
    long status = 0;
    /* A timeout once this call received bytes is a stalled transfer, not a missing network. */
    if (cres == CURLE_OPERATION_TIMEDOUT && received > 0)
        return ann_fail(-EIO, "%s: cannot download %s: the transfer stalled (%s)%s", s->name,
                        s->url, detail, resume);
    switch (cres) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT: {
        char why[1200];
        if (cres == CURLE_COULDNT_CONNECT)
            snprintf(why, sizeof why, "could not connect to '%s'", host);
        else if (cres == CURLE_OPERATION_TIMEDOUT)
            snprintf(why, sizeof why, "%s", detail);
        else
            snprintf(why, sizeof why, "could not resolve host '%s'", host);
        return ann_fail(-ENETUNREACH, "%s: cannot download %s: no network (%s)%s%s%s", s->name,
                        s->url, why, s->offline_hint ? "; " : "",
                        s->offline_hint ? s->offline_hint : "", resume);
    }
    case CURLE_HTTP_RETURNED_ERROR:
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        return ann_fail(status == 404 || status == 410 ? ANN_ENOTFOUND : -EIO,
                        "%s: cannot download %s: HTTP %ld%s%s%s", s->name, s->url, status,
                        where && strcmp(where, s->url) ? " (from " : "",
                        where && strcmp(where, s->url) ? where : "",
                        where && strcmp(where, s->url) ? ")" : "");
    case CURLE_FILE_COULDNT_READ_FILE:
        return ann_fail(ANN_ENOTFOUND, "%s: cannot download %s: %s", s->name, s->url, detail);
    case CURLE_UNSUPPORTED_PROTOCOL:
        return ann_fail(ANN_EPARAM, "%s: cannot download %s: only http, https and file URLs "
                                    "are fetched (%s)",
                        s->name, s->url, detail);
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return ann_fail(-EIO, "%s: cannot download %s: the transfer was interrupted (%s)%s",
                        s->name, s->url, detail, resume);
    default:
        return ann_fail(-EIO, "%s: cannot download %s: %s%s", s->name, s->url, detail, resume);
    }
}

int ds_fetch_file(const ds_fetch_spec *spec, ds_fetch_result *res)
{
    int rc = 0;
    CURL *curl = NULL;
    FILE *fp = NULL;
    char part[4200];
    char errbuf[CURL_ERROR_SIZE] = "";
    int locked = 0; /* ours to remove when empty: no other process is writing it */
    struct stat st;
    xfer x = { .spec = spec, .range_total = -1 };

    memset(res, 0, sizeof *res);
    if (!spec->name || !spec->url || !spec->dest)
        return ann_fail(ANN_EPARAM, "fetch: name, url and dest are required");
    if (spec->expect_sha256 && !is_hex64(spec->expect_sha256))
        return ann_fail(ANN_EPARAM, "%s: expected sha256 \"%s\" (%s) is not 64 hex digits",
                        spec->name, spec->expect_sha256, spec->url);
    if (snprintf(part, sizeof part, "%s.part", spec->dest) >= (int)sizeof part)
        return ann_fail(ANN_EPARAM, "%s: %s: path too long", spec->name, spec->dest);

    if (stat(spec->dest, &st) == 0) {
        res->already = 1;
        return verify(spec, spec->dest, (uint64_t)st.st_size, NULL, res);
    }

    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK)
        return ann_fail(ANN_EINTERNAL, "%s: libcurl could not be initialised: %s", spec->name,
                        curl_easy_strerror(curl_init_rc));

    fp = fopen(part, "ab");
    if (!fp)
        return ann_fail_errno("%s: create", part);
    if (flock(fileno(fp), LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK
                 ? ann_fail(-EBUSY, "%s: another process is downloading into %s", spec->name,
                            part)
                 : ann_fail_errno("%s: lock", part);
        goto out;
    }
    locked = 1;
    if (fstat(fileno(fp), &st) != 0) {
        rc = ann_fail_errno("%s: stat", part);
        goto out;
    }
    x.kept = (uint64_t)st.st_size;
    x.fp = fp;

    curl = curl_easy_init();
    if (!curl) {
        rc = ann_fail(ANN_EINTERNAL, "%s: curl_easy_init failed", spec->name);
        goto out;
    }
    x.curl = curl;
    curl_easy_setopt(curl, CURLOPT_URL, spec->url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https,file");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "annlab (libcurl)");
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, (long)DS_FETCH_LOW_SPEED_BYTES);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     spec->low_speed_s > 0 ? spec->low_speed_s : (long)DS_FETCH_LOW_SPEED_S);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &x);
    if (spec->progress) {
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &x);
    }
    x.t0_s = x.last_s = ann_mono_s();
    res->resumed_from = x.kept;
    curl_easy_setopt(curl, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x.kept);
    CURLcode cres = curl_easy_perform(curl);
    if (cres == CURLE_RANGE_ERROR && x.kept > 0) {
        /* The server sent the whole file to a range request: start over from byte 0. */
        if (fflush(fp) != 0 || ftruncate(fileno(fp), 0) != 0) {
            rc = ann_fail_errno("%s: truncate", part);
            goto out;
        }
        x.kept = 0;
        x.body_started = 0;
        res->resumed_from = 0;
        res->restarted = 1;
        errbuf[0] = '\0';
        curl_easy_setopt(curl, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)0);
        cres = curl_easy_perform(curl);
    }
    res->transferred = x.received;
    if (fflush(fp) != 0 && !x.write_errno)
        x.write_errno = errno;
    if (x.write_errno) {
        errno = x.write_errno;
        rc = ann_fail_errno("%s: write", part);
        goto out;
    }
    if (fstat(fileno(fp), &st) != 0) {
        rc = ann_fail_errno("%s: stat", part);
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    /* A 416 to a range request starting at the end means the .part is whole. */
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 400 && !(status == 416 && x.kept > 0)) {
        rc = transfer_failure(spec, curl, CURLE_HTTP_RETURNED_ERROR, errbuf, part, size,
                              x.received);
        goto out;
    }
    if (cres != CURLE_OK) {
        rc = transfer_failure(spec, curl, cres, errbuf, part, size, x.received);
        goto out;
    }

    /* What the server announced: 206 and 416 carry the total in Content-Range; a
     * 200 (or a file:// source) gives the length of what it sent after x.kept. */
    curl_off_t length = -1;
    curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    int64_t announced = -1;
    if (x.range_total >= 0)
        announced = x.range_total;
    else if (status == 200 && length >= 0)
        announced = (int64_t)length; /* the whole file (x.kept is 0, or libcurl found it equal) */
    else if (status != 416 && length >= 0)
        announced = (int64_t)(x.kept + (uint64_t)length);
    if (announced >= 0 && size != (uint64_t)announced) {
        rc = ann_fail(ANN_ECORRUPT,
                      "%s: %s: %llu bytes, but the server announced %lld (%s); nothing was kept "
                      "as %s; delete %s to download it again",
                      spec->name, part, (unsigned long long)size, (long long)announced,
                      spec->url, spec->dest, part);
        goto out;
    }
    if ((rc = verify(spec, part, size, part, res)))
        goto out;
    rc = ann_tmpfile_commit(fp, part, spec->dest); /* fsync, close, rename */
    fp = NULL;
out:
    if (fp) {
        if (rc && locked && fstat(fileno(fp), &st) == 0 && st.st_size == 0)
            unlink(part); /* nothing to resume from */
        fclose(fp);
    }
    curl_easy_cleanup(curl);
    return rc;
}

int ds_fetch_mirror_url(const char *url, const char *mirror, char *out, size_t len)
{
    if (!mirror || !*mirror) {
        if (snprintf(out, len, "%s", url) >= (int)len)
            return ann_fail(ANN_EPARAM, "%s: URL too long", url);
        return 0;
    }
    const char *file = strrchr(url, '/');
    if (!file || !file[1])
        return ann_fail(ANN_EPARAM, "%s: no file name after the last '/' to fetch from the "
                                    "mirror %s",
                        url, mirror);
    size_t m = strlen(mirror);
    while (m > 0 && mirror[m - 1] == '/')
        m--;
    if (snprintf(out, len, "%.*s%s", (int)m, mirror, file) >= (int)len)
        return ann_fail(ANN_EPARAM, "%s: mirror URL too long", mirror);
    return 0;
}
