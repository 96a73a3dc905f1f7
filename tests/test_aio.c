/*
 * test_aio.c: the three read backends of engines/core/aio.h read known
 * byte patterns exactly, report a short read at end of file, report a bad
 * descriptor as a failed completion, and fall back (or refuse) as told.
 */
#include "engines/core/aio.h"
#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define FILE_BYTES (16 * 4096 + 100) /* 16 sectors and a 100-byte tail */

static char g_dir[256];
static char g_path[300];

static uint8_t pattern_byte(uint64_t off)
{
    return (uint8_t)((off * 2654435761u) >> 13);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/annlab-aio-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_path, sizeof g_path, "%s/data.bin", g_dir);
    FILE *fp = fopen(g_path, "wb");
    if (!fp)
        return -1;
    for (uint64_t i = 0; i < FILE_BYTES; i++)
        fputc(pattern_byte(i), fp);
    return fclose(fp);
}

static int teardown(void **state)
{
    (void)state;
    unlink(g_path);
    rmdir(g_dir);
    unsetenv("ANNLAB_AIO_DISABLE");
    return 0;
}

static ann_aio_queue *make_queue_reg(ann_aio_kind kind, int fd, uint32_t depth, int sqpoll,
                                     void *reg, size_t reg_bytes)
{
    ann_aio_opts o = { .kind = kind, .strict = 1, .fd = fd, .depth = depth, .sqpoll = sqpoll,
                       .buf = reg, .buf_bytes = reg_bytes };
    ann_aio_queue *q = NULL;
    int rc = ann_aio_queue_create(&o, &q);
    if (rc == ANN_EUNSUPPORTED && sqpoll) {
        close(fd);
        fprintf(stderr, "skipped: %s\n", ann_errmsg(rc));
        skip();
    }
    if (rc)
        fail_msg("%s: %s", ann_aio_kind_name(kind), ann_errmsg(rc));
    assert_int_equal(ann_aio_queue_kind(q), kind);
    assert_int_equal(ann_aio_queue_sqpoll(q), sqpoll);
    return q;
}

static ann_aio_queue *make_queue_sq(ann_aio_kind kind, int fd, uint32_t depth, int sqpoll)
{
    return make_queue_reg(kind, fd, depth, sqpoll, NULL, 0);
}

static ann_aio_queue *make_queue(ann_aio_kind kind, int fd, uint32_t depth)
{
    return make_queue_sq(kind, fd, depth, 0);
}

/* Reap until all n requests are back; returns how many came back. */
static uint32_t reap_all(ann_aio_queue *q, uint32_t n, ann_aio_req **done)
{
    uint32_t got = 0;
    while (got < n) {
        int rc = ann_aio_reap(q, 1, done + got, n - got);
        assert_true(rc >= 0);
        if (rc == 0)
            break;
        got += (uint32_t)rc;
    }
    return got;
}

/* Eight reads, twice, through a queue of kind (sqpoll: submission
 * polling; reg_bytes > 0: the first reg_bytes of the buffer registered, so
 * the reads past it go unregistered): every byte is the file's. */
static void check_patterns_with(ann_aio_kind kind, int sqpoll, size_t reg_bytes)
{
    int direct = 0;
    int fd = ann_aio_open(g_path, 1, &direct);
    assert_true(fd >= 0);
    enum { NREQ = 8 };
    ann_aio_req reqs[NREQ];
    ann_aio_req *ptrs[NREQ], *done[NREQ];
    uint8_t *buf = ann_aio_buf_alloc(NREQ * 8192);
    assert_non_null(buf);
    ann_aio_queue *q = make_queue_reg(kind, fd, 8, sqpoll, reg_bytes ? buf : NULL, reg_bytes);
    if (reg_bytes) { /* io_uring takes both registrations; libaio has none */
        int file = -1, reg = -1;
        ann_aio_queue_registered(q, &file, &reg);
        assert_int_equal(file, kind == ANN_AIO_IO_URING);
        assert_int_equal(reg, kind == ANN_AIO_IO_URING);
    }
    assert_int_equal((uintptr_t)buf % ANN_AIO_ALIGN, 0);
    /* Two rounds, so slots are reused; mixed sizes; scattered offsets. */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < NREQ; i++) {
            uint64_t sector = (uint64_t)((i * 5 + round * 3) % 15);
            reqs[i] = (ann_aio_req){ .buf = buf + i * 8192, .offset_bytes = sector * 4096,
                                     .len_bytes = (i % 2 ? 8192 : 4096), .user = (uint64_t)i };
            ptrs[i] = &reqs[i];
        }
        assert_int_equal(ann_aio_submit(q, ptrs, NREQ), 0);
        assert_int_equal(ann_aio_inflight(q), NREQ);
        assert_int_equal(reap_all(q, NREQ, done), NREQ);
        assert_int_equal(ann_aio_inflight(q), 0);
        int seen[NREQ] = { 0 };
        for (int i = 0; i < NREQ; i++) {
            ann_aio_req *r = done[i];
            seen[r->user]++;
            assert_int_equal(r->result, (int32_t)r->len_bytes);
            const uint8_t *b = r->buf;
            for (uint32_t j = 0; j < r->len_bytes; j++)
                if (b[j] != pattern_byte(r->offset_bytes + j))
                    fail_msg("%s: byte %u of read at %llu differs", ann_aio_kind_name(kind), j,
                             (unsigned long long)r->offset_bytes);
        }
        for (int i = 0; i < NREQ; i++)
            assert_int_equal(seen[i], 1);
    }
    ann_aio_queue_destroy(q);
    ann_aio_buf_free(buf);
    close(fd);
}

static void check_patterns(ann_aio_kind kind)
{
    check_patterns_with(kind, 0, 0);
}

/* Six of the eight requests' buffers in a registered region, two past it. */
static void check_patterns_registered(ann_aio_kind kind)
{
    check_patterns_with(kind, 0, 6 * 8192);
}

static void test_patterns_registered_io_uring(void **s)
{
    (void)s;
    check_patterns_registered(ANN_AIO_IO_URING);
}
static void test_patterns_registered_libaio(void **s)
{
    (void)s;
    check_patterns_registered(ANN_AIO_LIBAIO);
}

static void test_patterns_io_uring(void **s) { (void)s; check_patterns(ANN_AIO_IO_URING); }
/* io_uring with a kernel thread polling submissions: the same bytes. */
static void test_patterns_io_uring_sqpoll(void **s) { (void)s; check_patterns_with(ANN_AIO_IO_URING, 1, 0); }
static void test_patterns_libaio(void **s) { (void)s; check_patterns(ANN_AIO_LIBAIO); }
static void test_patterns_pread(void **s) { (void)s; check_patterns(ANN_AIO_PREAD); }

/* A read over the end of the file completes with the bytes that exist. */
static void test_short_read_at_eof(void **s)
{
    (void)s;
    for (int k = 0; k < 3; k++) {
        int fd = ann_aio_open(g_path, 1, NULL);
        assert_true(fd >= 0);
        ann_aio_queue *q = make_queue((ann_aio_kind)k, fd, 2);
        uint8_t *buf = ann_aio_buf_alloc(3 * 4096);
        memset(buf, 0xEE, 3 * 4096);
        int64_t got = ann_aio_read_sync(q, buf, 15 * 4096, 3 * 4096);
        assert_int_equal(got, 4096 + 100);
        for (uint32_t j = 0; j < 4096 + 100; j++)
            assert_int_equal(buf[j], pattern_byte(15 * 4096 + j));
        /* entirely past the end: zero bytes, not an error */
        assert_int_equal(ann_aio_read_sync(q, buf, 20 * 4096, 4096), 0);
        ann_aio_queue_destroy(q);
        ann_aio_buf_free(buf);
        close(fd);
    }
}

/* A closed descriptor: every backend returns a failed completion (-EBADF). */
static void test_bad_fd(void **s)
{
    (void)s;
    for (int k = 0; k < 3; k++) {
        /* A high descriptor number that names nothing (a freshly closed
         * low one would be reused by the queue's own ring). */
        int fd = 987;
        assert_int_equal(fcntl(fd, F_GETFD), -1);
        ann_aio_queue *q = make_queue((ann_aio_kind)k, fd, 4);
        uint8_t *buf = ann_aio_buf_alloc(4096);
        ann_aio_req r = { .buf = buf, .offset_bytes = 0, .len_bytes = 4096 };
        ann_aio_req *rp = &r, *done = NULL;
        assert_int_equal(ann_aio_submit(q, &rp, 1), 0);
        assert_int_equal(reap_all(q, 1, &done), 1);
        assert_ptr_equal(done, &r);
        assert_int_equal(r.result, -EBADF);
        assert_int_equal(ann_aio_inflight(q), 0);
        ann_aio_queue_destroy(q);
        ann_aio_buf_free(buf);
    }
    ann_aio_opts o = { .kind = ANN_AIO_PREAD, .fd = -1, .depth = 4 };
    ann_aio_queue *q = NULL;
    assert_int_equal(ann_aio_queue_create(&o, &q), ANN_EPARAM);
    assert_string_equal(ann_errmsg(ANN_EPARAM), "aio: bad file descriptor -1");
    assert_null(q);
}

static void test_depth_exceeded(void **s)
{
    (void)s;
    int fd = ann_aio_open(g_path, 1, NULL);
    ann_aio_queue *q = make_queue(ANN_AIO_IO_URING, fd, 2);
    uint8_t *buf = ann_aio_buf_alloc(3 * 4096);
    ann_aio_req r[3];
    ann_aio_req *p[3];
    for (int i = 0; i < 3; i++) {
        r[i] = (ann_aio_req){ .buf = buf + i * 4096, .offset_bytes = (uint64_t)i * 4096, .len_bytes = 4096 };
        p[i] = &r[i];
    }
    assert_int_equal(ann_aio_submit(q, p, 3), ANN_ESTATE);
    assert_string_equal(ann_errmsg(ANN_ESTATE), "aio: 0 requests in flight + 3 exceed depth 2");
    assert_int_equal(ann_aio_inflight(q), 0);
    ann_aio_queue_destroy(q);
    ann_aio_buf_free(buf);
    close(fd);
}

static void test_fallback(void **s)
{
    (void)s;
    int fd = ann_aio_open(g_path, 1, NULL);
    ann_aio_queue *q = NULL;
    ann_aio_opts o = { .kind = ANN_AIO_IO_URING, .strict = 0, .fd = fd, .depth = 4 };

    setenv("ANNLAB_AIO_DISABLE", "io_uring", 1);
    assert_int_equal(ann_aio_queue_create(&o, &q), 0);
    assert_int_equal(ann_aio_queue_kind(q), ANN_AIO_LIBAIO);
    ann_aio_queue_destroy(q);
    q = NULL;

    setenv("ANNLAB_AIO_DISABLE", "io_uring,libaio", 1);
    assert_int_equal(ann_aio_queue_create(&o, &q), 0);
    assert_int_equal(ann_aio_queue_kind(q), ANN_AIO_PREAD);
    /* the fallen-back queue still reads correctly */
    uint8_t *buf = ann_aio_buf_alloc(4096);
    assert_int_equal(ann_aio_read_sync(q, buf, 4096, 4096), 4096);
    assert_int_equal(buf[7], pattern_byte(4096 + 7));
    ann_aio_buf_free(buf);
    ann_aio_queue_destroy(q);
    q = NULL;

    /* explicitly requested: an error naming the backend, no fallback */
    o.strict = 1;
    assert_int_equal(ann_aio_queue_create(&o, &q), ANN_EUNSUPPORTED);
    assert_string_equal(ann_errmsg(ANN_EUNSUPPORTED), "io_uring: disabled by ANNLAB_AIO_DISABLE");
    assert_null(q);
    o.kind = ANN_AIO_LIBAIO;
    assert_int_equal(ann_aio_queue_create(&o, &q), ANN_EUNSUPPORTED);
    assert_string_equal(ann_errmsg(ANN_EUNSUPPORTED), "libaio: disabled by ANNLAB_AIO_DISABLE");

    /* "io_uringx" must not disable io_uring */
    setenv("ANNLAB_AIO_DISABLE", "io_uringx", 1);
    o.kind = ANN_AIO_IO_URING;
    assert_int_equal(ann_aio_queue_create(&o, &q), 0);
    assert_int_equal(ann_aio_queue_kind(q), ANN_AIO_IO_URING);
    ann_aio_queue_destroy(q);
    unsetenv("ANNLAB_AIO_DISABLE");
    close(fd);
}

static void test_kind_names(void **s)
{
    (void)s;
    ann_aio_kind k;
    assert_int_equal(ann_aio_kind_parse("libaio", &k), 0);
    assert_int_equal(k, ANN_AIO_LIBAIO);
    assert_string_equal(ann_aio_kind_name(ANN_AIO_IO_URING), "io_uring");
    assert_int_equal(ann_aio_kind_parse("uring", &k), ANN_EPARAM);
    assert_string_equal(ann_errmsg(ANN_EPARAM),
                        "io: unknown backend \"uring\" (io_uring|libaio|pread)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns_io_uring),
        cmocka_unit_test(test_patterns_io_uring_sqpoll),
        cmocka_unit_test(test_patterns_libaio),
        cmocka_unit_test(test_patterns_registered_io_uring),
        cmocka_unit_test(test_patterns_registered_libaio),
        cmocka_unit_test(test_patterns_pread),
        cmocka_unit_test(test_short_read_at_eof),
        cmocka_unit_test(test_bad_fd),
        cmocka_unit_test(test_depth_exceeded),
        cmocka_unit_test(test_fallback),
        cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
