/*
 * aio.c: the three read backends behind aio.h.
 *
 * io_uring (liburing) is the default: one ring per queue, sized to the
 * queue depth, so the completion ring can never overflow (at most `depth`
 * reads are in flight).  libaio uses one io_context per queue and one iocb
 * per slot.  pread performs each read at submission and parks it on the
 * ready list, so callers see the same submit/reap protocol everywhere.
 *
 * Each in-flight request occupies a slot; the slot number travels as the
 * kernel's user data, so a short read is continued in the same slot.
 * Requests the kernel refuses, or that fail, complete with result -errno:
 * the caller sees one error path (the completion), never a lost request.
 * Microsoft DiskANN's Linux reader exits the process when io_submit fails;
 * here a refused submission is an ordinary failed completion.
 */
#include "engines/core/aio.h"

#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <liburing.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Retries of a submission the kernel answered with EINTR/EAGAIN/EBUSY. */
#define AIO_SUBMIT_RETRIES 64

struct ann_aio_queue {
    ann_aio_kind kind;
    int fd;
    uint32_t depth;
    uint32_t inflight;     /* submitted, not yet reaped (includes ready) */
    int broken;            /* io_uring: stale entries left in the SQ after a failed submit */
    ann_aio_req **slot;    /* depth: the request occupying each slot, or NULL */
    uint32_t *free_slots;  /* stack of free slot numbers */
    uint32_t nfree;
    ann_aio_req **ready;   /* completed, not yet handed out */
    uint32_t nready;
    struct io_uring ring;
    int ring_ok;
    int sqpoll;            /* io_uring set up with IORING_SETUP_SQPOLL */
    int fixed_file;        /* io_uring: fd registered as fixed file 0 */
    char *fixed_buf;       /* io_uring: registered buffer 0 (opts.buf), or NULL */
    size_t fixed_buf_bytes;
    io_context_t actx;
    struct iocb *iocbs;    /* depth */
};

static const char *const kind_names[] = { "io_uring", "libaio", "pread" };

const char *ann_aio_kind_name(ann_aio_kind kind)
{
    return (unsigned)kind < 3 ? kind_names[kind] : "?";
}

int ann_aio_kind_parse(const char *name, ann_aio_kind *out)
{
    for (int i = 0; i < 3; i++)
        if (name && !strcmp(name, kind_names[i])) {
            *out = (ann_aio_kind)i;
            return 0;
        }
    return ann_fail(ANN_EPARAM, "io: unknown backend \"%s\" (io_uring|libaio|pread)",
                    name ? name : "(null)");
}

void *ann_aio_buf_alloc(size_t bytes)
{
    size_t n = (bytes + ANN_AIO_ALIGN - 1) / ANN_AIO_ALIGN * ANN_AIO_ALIGN;
    if (n == 0)
        n = ANN_AIO_ALIGN;
    void *p = NULL;
    if (posix_memalign(&p, ANN_AIO_ALIGN, n) != 0)
        return NULL;
    memset(p, 0, n);
    return p;
}

void ann_aio_buf_free(void *buf)
{
    free(buf);
}

int ann_aio_open(const char *path, int direct, int *direct_out)
{
    int fd = -1;
    if (direct) {
        fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
        if (fd < 0 && errno == EINVAL) {
            fprintf(stderr, "annlab: %s: O_DIRECT refused by the filesystem; reading buffered\n",
                    path);
            direct = 0;
        } else if (fd < 0) {
            return ann_fail_errno("%s: open", path);
        }
    }
    if (fd < 0) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return ann_fail_errno("%s: open", path);
    }
    if (direct_out)
        *direct_out = direct;
    return fd;
}

/* ANNLAB_AIO_DISABLE lists backends to treat as unavailable (tests). */
static int kind_disabled(ann_aio_kind kind)
{
    const char *env = getenv("ANNLAB_AIO_DISABLE");
    if (!env)
        return 0;
    const char *name = ann_aio_kind_name(kind);
    size_t len = strlen(name);
    for (const char *p = env; (p = strstr(p, name)) != NULL; p += len) {
        int start = p == env || p[-1] == ',';
        int end = p[len] == '\0' || p[len] == ',';
        if (start && end)
            return 1;
    }
    return 0;
}

/* io_uring with a submission-polling kernel thread; -errno on failure. */
static int uring_init_sqpoll(ann_aio_queue *q)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SQPOLL;
    p.sq_thread_idle = ANN_AIO_SQPOLL_IDLE_MS;
    return io_uring_queue_init_params(q->depth, &q->ring, &p);
}

/* Set up the backend's kernel state; -errno (or ANN_EUNSUPPORTED) on failure.
 * sqpoll/strict: see ann_aio_opts. */
static int backend_init(ann_aio_queue *q, ann_aio_kind kind, int sqpoll, int strict)
{
    if (kind_disabled(kind))
        return ann_fail(ANN_EUNSUPPORTED, "%s: disabled by ANNLAB_AIO_DISABLE",
                        ann_aio_kind_name(kind));
    int rc = 0;
    switch (kind) {
    case ANN_AIO_IO_URING:
        if (sqpoll) {
            rc = uring_init_sqpoll(q);
            if (rc == 0) {
                q->ring_ok = q->sqpoll = 1;
                return 0;
            }
            if (strict)
                return ann_fail(ANN_EUNSUPPORTED, "io_uring: submission polling (sqpoll) "
                                "unavailable (%s)", strerror(-rc));
            fprintf(stderr, "annlab: io_uring: submission polling (sqpoll) unavailable (%s); "
                            "submitting with system calls\n", strerror(-rc));
        }
        rc = io_uring_queue_init(q->depth, &q->ring, 0);
        if (rc < 0)
            return ann_fail(ANN_EUNSUPPORTED, "io_uring: unavailable (%s)", strerror(-rc));
        q->ring_ok = 1;
        return 0;
    case ANN_AIO_LIBAIO:
        q->actx = 0;
        rc = io_setup((int)q->depth, &q->actx);
        if (rc < 0)
            return ann_fail(ANN_EUNSUPPORTED, "libaio: unavailable (%s)", strerror(-rc));
        q->iocbs = calloc(q->depth, sizeof *q->iocbs);
        if (!q->iocbs) {
            io_destroy(q->actx);
            q->actx = 0;
            return ann_fail(-ENOMEM, "libaio: no memory");
        }
        return 0;
    case ANN_AIO_PREAD:
        return 0;
    }
    return ann_fail(ANN_EPARAM, "io: bad backend %d", (int)kind);
}

/*
 * Register the file and the buffer region with the ring, each only when the
 * kernel takes it (else reads go unregistered, with the same results).  On
 * the 2-core development VM (2026-12-03, diskann-sector W 16, 10k cache,
 * eight interleaved pairs) this cut the searching thread's kernel time per
 * query by 7% at L 50 and 14% at L 75.
 */
static void uring_register(ann_aio_queue *q, const ann_aio_opts *opts)
{
    if (io_uring_register_files(&q->ring, &q->fd, 1) == 0)
        q->fixed_file = 1;
    if (opts->buf && opts->buf_bytes) {
        struct iovec iov = { .iov_base = opts->buf, .iov_len = opts->buf_bytes };
        if (io_uring_register_buffers(&q->ring, &iov, 1) == 0) {
            q->fixed_buf = opts->buf;
            q->fixed_buf_bytes = opts->buf_bytes;
        }
    }
}

/* Test hook: what registration took (file, buffer). */
void ann_aio_queue_registered(const ann_aio_queue *q, int *file, int *buf)
{
    *file = q->fixed_file;
    *buf = q->fixed_buf != NULL;
}

int ann_aio_queue_create(const ann_aio_opts *opts, ann_aio_queue **out)
{
    if (opts->depth == 0)
        return ann_fail(ANN_EPARAM, "aio: queue depth 0");
    if (opts->fd < 0)
        return ann_fail(ANN_EPARAM, "aio: bad file descriptor %d", opts->fd);
    if ((unsigned)opts->kind > ANN_AIO_PREAD)
        return ann_fail(ANN_EPARAM, "aio: bad backend %d", (int)opts->kind);
    int rc = 0;
    ann_aio_queue *q = calloc(1, sizeof *q);
    if (!q)
        return ann_fail(-ENOMEM, "aio: no memory");
    q->fd = opts->fd;
    q->depth = opts->depth;
    q->slot = calloc(q->depth, sizeof *q->slot);
    q->free_slots = calloc(q->depth, sizeof *q->free_slots);
    q->ready = calloc(q->depth, sizeof *q->ready);
    if (!q->slot || !q->free_slots || !q->ready) {
        rc = ann_fail(-ENOMEM, "aio: no memory");
        goto out;
    }
    for (uint32_t i = 0; i < q->depth; i++)
        q->free_slots[i] = q->depth - 1 - i;
    q->nfree = q->depth;

    ann_aio_kind kind = opts->kind;
    for (;;) {
        rc = backend_init(q, kind, opts->sqpoll, opts->strict);
        if (rc == 0)
            break;
        if (opts->strict || kind == ANN_AIO_PREAD)
            goto out;
        ann_aio_kind next = kind == ANN_AIO_IO_URING ? ANN_AIO_LIBAIO : ANN_AIO_PREAD;
        fprintf(stderr, "annlab: %s; falling back to %s\n", ann_errmsg(rc),
                ann_aio_kind_name(next));
        kind = next;
    }
    q->kind = kind;
    if (kind == ANN_AIO_IO_URING)
        uring_register(q, opts);
    *out = q;
    q = NULL;
out:
    ann_aio_queue_destroy(q);
    return rc;
}

ann_aio_kind ann_aio_queue_kind(const ann_aio_queue *q)
{
    return q->kind;
}

int ann_aio_queue_sqpoll(const ann_aio_queue *q)
{
    return q->sqpoll;
}

uint32_t ann_aio_inflight(const ann_aio_queue *q)
{
    return q->inflight;
}

/* Complete r with result res and park it on the ready list. */
static void finish_ready(ann_aio_queue *q, ann_aio_req *r, int32_t res)
{
    r->result = res;
    q->ready[q->nready++] = r;
}

static void slot_release(ann_aio_queue *q, uint32_t s)
{
    q->slot[s] = NULL;
    q->free_slots[q->nfree++] = s;
}

/* pread backend: the whole request, short reads continued, EOF respected. */
static int32_t pread_full(int fd, ann_aio_req *r)
{
    while (r->done_bytes < r->len_bytes) {
        ssize_t got = pread(fd, (char *)r->buf + r->done_bytes, r->len_bytes - r->done_bytes,
                            (off_t)(r->offset_bytes + r->done_bytes));
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        if (got == 0)
            break;
        r->done_bytes += (uint32_t)got;
    }
    return (int32_t)r->done_bytes;
}

/* Queue the remainder of the request in slot s on the ring (not yet submitted). */
static int uring_prep(ann_aio_queue *q, uint32_t s)
{
    ann_aio_req *r = q->slot[s];
    struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
    if (!sqe)
        return -EBUSY; /* cannot happen: the ring holds depth entries */
    char *dst = (char *)r->buf + r->done_bytes;
    unsigned len = r->len_bytes - r->done_bytes;
    int fd = q->fixed_file ? 0 : q->fd;
    if (q->fixed_buf && dst >= q->fixed_buf && dst + len <= q->fixed_buf + q->fixed_buf_bytes)
        io_uring_prep_read_fixed(sqe, fd, dst, len, r->offset_bytes + r->done_bytes, 0);
    else
        io_uring_prep_read(sqe, fd, dst, len, r->offset_bytes + r->done_bytes);
    if (q->fixed_file)
        sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, s);
    return 0;
}

static int uring_flush(ann_aio_queue *q)
{
    for (int tries = 0;; tries++) {
        int rc = io_uring_submit(&q->ring);
        if (rc >= 0)
            return 0;
        if ((rc == -EINTR || rc == -EAGAIN || rc == -EBUSY) && tries < AIO_SUBMIT_RETRIES) {
            sched_yield();
            continue;
        }
        return rc;
    }
}

static void libaio_prep(ann_aio_queue *q, uint32_t s)
{
    ann_aio_req *r = q->slot[s];
    io_prep_pread(&q->iocbs[s], q->fd, (char *)r->buf + r->done_bytes,
                  r->len_bytes - r->done_bytes, (long long)(r->offset_bytes + r->done_bytes));
    q->iocbs[s].data = (void *)(uintptr_t)s;
}

/* Submit the iocbs of slots s[0..n); those refused complete with -errno. */
static void libaio_submit_slots(ann_aio_queue *q, const uint32_t *s, uint32_t n)
{
    struct iocb *cbs[n ? n : 1];
    for (uint32_t i = 0; i < n; i++)
        cbs[i] = &q->iocbs[s[i]];
    uint32_t done = 0;
    int tries = 0;
    while (done < n) {
        int rc = io_submit(q->actx, (long)(n - done), cbs + done);
        if (rc > 0) {
            done += (uint32_t)rc;
            continue;
        }
        if ((rc == -EINTR || rc == -EAGAIN || rc == 0) && tries++ < AIO_SUBMIT_RETRIES) {
            sched_yield();
            continue;
        }
        for (uint32_t i = done; i < n; i++) {
            ann_aio_req *r = q->slot[s[i]];
            slot_release(q, s[i]);
            finish_ready(q, r, rc < 0 ? rc : -EIO);
        }
        return;
    }
}

int ann_aio_submit(ann_aio_queue *q, ann_aio_req *const *reqs, uint32_t n)
{
    if (q->inflight + n > q->depth)
        return ann_fail(ANN_ESTATE, "aio: %u requests in flight + %u exceed depth %u", q->inflight,
                        n, q->depth);
    if (q->broken)
        return ann_fail(q->broken, "aio: queue unusable after a failed io_uring submission");
    uint32_t slots[n ? n : 1];
    for (uint32_t i = 0; i < n; i++) {
        ann_aio_req *r = reqs[i];
        r->done_bytes = 0;
        r->result = 0;
        q->inflight++;
        if (q->kind == ANN_AIO_PREAD) {
            finish_ready(q, r, pread_full(q->fd, r));
            continue;
        }
        uint32_t s = q->free_slots[--q->nfree];
        q->slot[s] = r;
        slots[i] = s;
        if (q->kind == ANN_AIO_IO_URING)
            uring_prep(q, s);
        else
            libaio_prep(q, s);
    }
    if (q->kind == ANN_AIO_IO_URING) {
        int rc = uring_flush(q);
        if (rc < 0) {
            q->broken = rc;
            for (uint32_t i = 0; i < n; i++) {
                slot_release(q, slots[i]);
                finish_ready(q, reqs[i], rc);
            }
        }
    } else if (q->kind == ANN_AIO_LIBAIO) {
        libaio_submit_slots(q, slots, n);
    }
    return 0;
}

/*
 * Account for res bytes (or an error) on the request in slot s.  Returns 1
 * when the request is complete (moved to the ready list), 0 when its
 * remainder was queued again (*requeue set).
 */
static int on_completion(ann_aio_queue *q, uint32_t s, long res, int *requeue)
{
    ann_aio_req *r = q->slot[s];
    if (res == -EINTR || res == -EAGAIN) {
        *requeue = 1;
        return 0;
    }
    if (res < 0) {
        slot_release(q, s);
        finish_ready(q, r, (int32_t)res);
        return 1;
    }
    r->done_bytes += (uint32_t)res;
    if (res == 0 || r->done_bytes >= r->len_bytes) {
        slot_release(q, s);
        finish_ready(q, r, (int32_t)r->done_bytes);
        return 1;
    }
    *requeue = 1; /* short read: continue from where it stopped */
    return 0;
}

/* Move kernel completions to the ready list; block for one when wait. */
static int poll_kernel(ann_aio_queue *q, int wait)
{
    if (q->kind == ANN_AIO_IO_URING) {
        struct io_uring_cqe *cqe = NULL;
        int rc = wait ? io_uring_wait_cqe(&q->ring, &cqe) : io_uring_peek_cqe(&q->ring, &cqe);
        if (rc == -EAGAIN || rc == -EINTR)
            return 0;
        if (rc < 0)
            return rc;
        int again = 0;
        while (io_uring_peek_cqe(&q->ring, &cqe) == 0 && cqe) {
            uint32_t s = (uint32_t)io_uring_cqe_get_data64(cqe);
            long res = cqe->res;
            io_uring_cqe_seen(&q->ring, cqe);
            int requeue = 0;
            if (s < q->depth && q->slot[s]) {
                on_completion(q, s, res, &requeue);
                if (requeue && uring_prep(q, s) == 0)
                    again = 1;
            }
        }
        if (again) {
            rc = uring_flush(q);
            if (rc < 0) {
                q->broken = rc;
                for (uint32_t s = 0; s < q->depth; s++)
                    if (q->slot[s]) {
                        ann_aio_req *r = q->slot[s];
                        slot_release(q, s);
                        finish_ready(q, r, rc);
                    }
            }
        }
        return 0;
    }
    if (q->kind == ANN_AIO_LIBAIO) {
        struct io_event ev[64];
        long nmax = q->depth < 64 ? q->depth : 64;
        struct timespec zero = { 0, 0 };
        int rc = io_getevents(q->actx, wait ? 1 : 0, nmax, ev, wait ? NULL : &zero);
        if (rc == -EINTR)
            return 0;
        if (rc < 0)
            return rc;
        uint32_t resub[64];
        uint32_t nresub = 0;
        for (int i = 0; i < rc; i++) {
            uint32_t s = (uint32_t)(uintptr_t)ev[i].data;
            long res = (long)ev[i].res;
            int requeue = 0;
            if (s < q->depth && q->slot[s]) {
                on_completion(q, s, res, &requeue);
                if (requeue) {
                    libaio_prep(q, s);
                    resub[nresub++] = s;
                }
            }
        }
        if (nresub)
            libaio_submit_slots(q, resub, nresub);
        return 0;
    }
    return 0;
}

int ann_aio_reap(ann_aio_queue *q, uint32_t min_complete, ann_aio_req **done, uint32_t max)
{
    uint32_t want = min_complete < q->inflight ? min_complete : q->inflight;
    if (want > max)
        want = max;
    uint32_t got = 0;
    for (;;) {
        while (q->nready > 0 && got < max) {
            /* hand out in completion order */
            done[got++] = q->ready[0];
            memmove(q->ready, q->ready + 1, (q->nready - 1) * sizeof *q->ready);
            q->nready--;
            q->inflight--;
        }
        if (got >= max || q->inflight == q->nready)
            break; /* nothing more can arrive from the kernel for this call */
        int wait = got < want;
        uint32_t before = q->nready;
        int rc = poll_kernel(q, wait);
        if (rc < 0)
            return got ? (int)got : ann_fail(rc, "aio: waiting for completions: %s",
                                             strerror(-rc));
        if (!wait && q->nready == before)
            break;
    }
    return (int)got;
}

int64_t ann_aio_read_sync(ann_aio_queue *q, void *buf, uint64_t offset_bytes, uint32_t len_bytes)
{
    if (q->inflight)
        return ann_fail(ANN_ESTATE, "aio: read_sync on a busy queue");
    ann_aio_req req = { .buf = buf, .offset_bytes = offset_bytes, .len_bytes = len_bytes };
    ann_aio_req *rp = &req;
    int rc = ann_aio_submit(q, &rp, 1);
    if (rc)
        return rc;
    ann_aio_req *done = NULL;
    while ((rc = ann_aio_reap(q, 1, &done, 1)) == 0)
        ;
    if (rc < 0)
        return rc;
    return req.result;
}

void ann_aio_queue_destroy(ann_aio_queue *q)
{
    if (!q)
        return;
    /* The kernel may still write into callers' buffers: drain first. */
    while (q->slot && q->inflight > 0) {
        ann_aio_req *sink[16];
        if (ann_aio_reap(q, q->inflight, sink, 16) <= 0)
            break; /* waiting failed: nothing more can be done safely */
    }
    if (q->ring_ok)
        io_uring_queue_exit(&q->ring);
    if (q->actx)
        io_destroy(q->actx);
    free(q->iocbs);
    free(q->slot);
    free(q->free_slots);
    free(q->ready);
    free(q);
}
