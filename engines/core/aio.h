/*
 * aio.h: batched asynchronous sector reads with three backends.
 *
 * One small interface over io_uring (liburing), Linux native AIO (libaio)
 * and plain pread, chosen by name.  A queue belongs to one thread (one per
 * search context) and reads from one file descriptor:
 *
 *   ann_aio_queue_create(&opts, &q)        backend chosen, with fallback
 *   ann_aio_submit(q, reqs, n)             queue n reads, return at once
 *   ann_aio_reap(q, min, done, max)        completions as they arrive
 *   ann_aio_queue_destroy(q)
 *
 * Every completion is checked: a short read is continued from where it
 * stopped until the request is complete or the file ends (then the request
 * completes with result = bytes read, fewer than asked); a failed read
 * completes with result = -errno.  Nothing here exits or aborts: a failed
 * submission is a returned error and the queue stays usable.
 *
 * Fallback: when the wanted backend cannot be set up (kernel without
 * io_uring, io_uring_disabled, a seccomp filter, no AIO slots) and the
 * caller did not insist on it, the next one is tried (io_uring -> libaio ->
 * pread) and a one-line notice goes to stderr.  When the caller insisted
 * (opts.strict), the failure is ANN_EUNSUPPORTED naming the backend.
 *
 * For tests, ANNLAB_AIO_DISABLE="io_uring,libaio" makes the named backends
 * behave as unavailable.
 *
 * O_DIRECT reads need the buffer, the offset and the length aligned to the
 * device's logical block; annlab aligns all three to ANN_AIO_ALIGN (4096)
 * and allocates every O_DIRECT buffer with ann_aio_buf_alloc.
 */
#ifndef ANNLAB_CORE_AIO_H
#define ANNLAB_CORE_AIO_H

#include <stddef.h>
#include <stdint.h>

#define ANN_AIO_ALIGN 4096u

typedef enum {
    ANN_AIO_IO_URING = 0,
    ANN_AIO_LIBAIO = 1,
    ANN_AIO_PREAD = 2,
} ann_aio_kind;

/* "io_uring" | "libaio" | "pread". */
const char *ann_aio_kind_name(ann_aio_kind kind);
/* Parse a backend name; ANN_EPARAM (message names the value) when unknown. */
int ann_aio_kind_parse(const char *name, ann_aio_kind *out);

/*
 * A 4096-aligned, zeroed buffer of at least bytes (rounded up to 4096).
 * Returns NULL when out of memory.  Free with ann_aio_buf_free (NULL is fine).
 */
void *ann_aio_buf_alloc(size_t bytes);
void ann_aio_buf_free(void *buf);

/*
 * Open path read-only for sector reads.  direct != 0 asks for O_DIRECT;
 * when the filesystem refuses it (EINVAL, e.g. tmpfs) the file is opened
 * buffered and a one-line notice is printed; *direct_out (optional) says
 * which happened.  Returns an fd >= 0, or -errno with the message naming
 * the file.
 */
int ann_aio_open(const char *path, int direct, int *direct_out);

/* One read.  The caller owns the request and its buffer until it completes. */
typedef struct ann_aio_req {
    void *buf;             /* destination, ANN_AIO_ALIGN-aligned for O_DIRECT */
    uint64_t offset_bytes; /* file offset, aligned for O_DIRECT */
    uint32_t len_bytes;    /* bytes wanted, aligned for O_DIRECT */
    uint64_t user;         /* caller's tag, untouched */
    int32_t result;        /* at completion: bytes read (< len only at end of file) or -errno */
    uint32_t done_bytes;   /* internal: progress across short reads */
} ann_aio_req;

typedef struct ann_aio_opts {
    ann_aio_kind kind; /* backend wanted */
    int strict;        /* 1: the wanted backend or an error; 0: fall back with a notice */
    int fd;            /* file every request reads (the queue does not own it) */
    uint32_t depth;    /* most requests in flight at once (>= 1) */
    int sqpoll;        /* io_uring: a kernel thread polls the submission queue
                        * (IORING_SETUP_SQPOLL; it spins up to ANN_AIO_SQPOLL_IDLE_MS
                        * after the last submission, then sleeps), so a submission
                        * needs no system call; refused: plain io_uring with a
                        * notice, or ANN_EUNSUPPORTED when strict */
    void *buf;         /* optional: one region that holds the buffers of most
                        * requests; io_uring registers it (and the file) once, so a
                        * read of it needs no page pinning or file lookup in the
                        * kernel; reads elsewhere, or when the kernel refuses the
                        * registration, go unregistered, with the same results */
    size_t buf_bytes;
} ann_aio_opts;

#define ANN_AIO_SQPOLL_IDLE_MS 20u

typedef struct ann_aio_queue ann_aio_queue;

/*
 * Create a queue.  Errors: ANN_EPARAM (depth 0, bad fd), ANN_EUNSUPPORTED
 * (strict and the backend is unavailable; message names it and the reason),
 * -ENOMEM.  The queue is for one thread at a time.
 */
int ann_aio_queue_create(const ann_aio_opts *opts, ann_aio_queue **out);
/* Destroy; waits for requests still in flight.  NULL is fine. */
void ann_aio_queue_destroy(ann_aio_queue *q);
/* The backend in use (after any fallback). */
ann_aio_kind ann_aio_queue_kind(const ann_aio_queue *q);
/* 1 when the queue's submissions are polled by a kernel thread (sqpoll). */
int ann_aio_queue_sqpoll(const ann_aio_queue *q);
/* What io_uring registration took: *file 1 when the fd is a fixed file,
 * *buf 1 when opts.buf is a registered buffer (both 0 on other backends). */
void ann_aio_queue_registered(const ann_aio_queue *q, int *file, int *buf);
/* Requests submitted and not yet reaped. */
uint32_t ann_aio_inflight(const ann_aio_queue *q);

/*
 * Queue n reads and start them.  The reqs must stay valid until reaped.
 * Errors: ANN_ESTATE when in-flight + n would exceed the depth; -errno
 * when the kernel refuses the submission (then none of the n is in
 * flight; requests already in flight are unaffected).
 */
int ann_aio_submit(ann_aio_queue *q, ann_aio_req *const *reqs, uint32_t n);

/*
 * Collect completed requests: waits until at least min_complete have
 * completed (0 = do not wait; capped at the number in flight), then returns
 * up to max of them in done[], each with its result set.  Returns the count
 * (>= 0) or -errno when waiting itself failed.  A request whose read failed
 * is returned with result < 0: the caller decides, never silently skipped.
 */
int ann_aio_reap(ann_aio_queue *q, uint32_t min_complete, ann_aio_req **done, uint32_t max);

/*
 * Read len bytes at offset into buf through q and wait for it (a
 * convenience for opening files and filling caches).  Returns bytes read
 * (< len only at end of file) or a negative code.  q must be idle.
 */
int64_t ann_aio_read_sync(ann_aio_queue *q, void *buf, uint64_t offset_bytes, uint32_t len_bytes);

#endif
