/*
 * test_core_files.c: big-ann vector files and ground truth: byte-exact
 * round trips, uint8/int8 widening, and refusal of bad files with messages
 * naming the file and the fault; the error model and parameter tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/params.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/engine.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir("files");
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(dir);
    return 0;
}

static void path_of(char *buf, const char *name)
{
    snprintf(buf, 4096, "%s/%s", dir, name);
}

static void test_fbin_round_trip_byte_exact(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "a.fbin");
    float rows[3 * 5];
    for (int i = 0; i < 15; i++)
        rows[i] = (float)i * 0.5f - 3.0f;
    ann_vecwriter w;
    assert_int_equal(ann_vecwriter_open(&w, p, 5, ANN_ELEM_F32), 0);
    assert_int_equal(ann_vecwriter_append(&w, rows, 2), 0);
    assert_int_equal(ann_vecwriter_append(&w, rows + 10, 1), 0);
    assert_int_equal(ann_vecwriter_finish(&w), 0);

    size_t len = 0;
    unsigned char *bytes = tu_read_file(p, &len);
    assert_non_null(bytes);
    assert_int_equal(len, 8 + 15 * 4);
    unsigned char hdr[8] = { 3, 0, 0, 0, 5, 0, 0, 0 };
    assert_memory_equal(bytes, hdr, 8);
    assert_memory_equal(bytes + 8, rows, 15 * 4);
    free(bytes);

    ann_vecfile vf;
    assert_int_equal(ann_vecfile_open(p, &vf), 0);
    assert_int_equal(vf.n, 3);
    assert_int_equal(vf.dim, 5);
    float back[15];
    assert_int_equal(ann_vecfile_read_f32(&vf, 0, 3, back), 0);
    assert_memory_equal(back, rows, sizeof back);
    assert_int_equal(ann_vecfile_read_f32(&vf, 1, 3, back), ANN_EPARAM);
    ann_vecfile_close(&vf);

    /* no temporary left behind */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", p, (int)getpid());
    assert_int_not_equal(access(tmp, F_OK), 0);
}

static void test_u8_i8_widen(void **state)
{
    (void)state;
    char p[4096];
    unsigned char u8[8 + 6] = { 2, 0, 0, 0, 3, 0, 0, 0, 0, 1, 255, 7, 128, 9 };
    path_of(p, "b.u8bin");
    assert_int_equal(tu_write_file(p, u8, sizeof u8), 0);
    ann_vecfile vf;
    assert_int_equal(ann_vecfile_open(p, &vf), 0);
    float out[6];
    assert_int_equal(ann_vecfile_read_f32(&vf, 0, 2, out), 0);
    const float want[6] = { 0, 1, 255, 7, 128, 9 };
    assert_memory_equal(out, want, sizeof want);
    ann_vecfile_close(&vf);

    path_of(p, "c.i8bin");
    assert_int_equal(tu_write_file(p, u8, sizeof u8), 0);
    assert_int_equal(ann_vecfile_open(p, &vf), 0);
    assert_int_equal(ann_vecfile_read_f32(&vf, 1, 1, out), 0);
    assert_float_equal(out[0], 7, 0);
    assert_float_equal(out[1], -128, 0);
    assert_float_equal(out[2], 9, 0);
    ann_vecfile_close(&vf);
}

static void test_truncated_file_is_refused(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "trunc.fbin");
    unsigned char bad[8 + 4 * 5] = { 2, 0, 0, 0, 3, 0, 0, 0 }; /* header says 6 floats, has 5 */
    assert_int_equal(tu_write_file(p, bad, sizeof bad), 0);
    ann_vecfile vf;
    int rc = ann_vecfile_open(p, &vf);
    assert_int_equal(rc, ANN_EFORMAT);
    assert_non_null(strstr(ann_errmsg(rc), "trunc.fbin: size 28 bytes does not match header n=2 "
                                           "dim=3 (float32): expected 32 bytes"));

    path_of(p, "short.fbin");
    assert_int_equal(tu_write_file(p, bad, 5), 0);
    rc = ann_vecfile_open(p, &vf);
    assert_int_equal(rc, ANN_EFORMAT);
    assert_non_null(strstr(ann_errmsg(rc), "shorter than the 8-byte header"));

    path_of(p, "missing.fbin");
    rc = ann_vecfile_open(p, &vf);
    assert_int_equal(rc, -ENOENT);
    assert_non_null(strstr(ann_errmsg(rc), "missing.fbin: open"));

    path_of(p, "x.txt");
    assert_int_equal(ann_vecfile_open(p, &vf), ANN_EFORMAT);
}

static void test_nan_is_refused(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "nan.fbin");
    float rows[4] = { 1, 2, 3, NAN };
    ann_vecwriter w;
    assert_int_equal(ann_vecwriter_open(&w, p, 2, ANN_ELEM_F32), 0);
    assert_int_equal(ann_vecwriter_append(&w, rows, 2), 0);
    assert_int_equal(ann_vecwriter_finish(&w), 0);
    ann_vecfile vf;
    assert_int_equal(ann_vecfile_open(p, &vf), 0);
    float out[4];
    int rc = ann_vecfile_read_f32(&vf, 0, 2, out);
    assert_int_equal(rc, ANN_EDATA);
    assert_non_null(strstr(ann_errmsg(rc), "nan.fbin: row 1, component 1 is NaN"));
    ann_vecfile_close(&vf);
}

static void test_gt_round_trip_and_range(void **state)
{
    (void)state;
    char p[4096];
    path_of(p, "gt.ibin");
    int32_t ids[6] = { 0, 4, 2, 1, 3, 5 };
    float dists[6] = { 0.f, 1.f, 2.f, 0.5f, 0.5f, 9.f };
    ann_gt gt = { .nq = 2, .k = 3, .ids = ids, .dists = dists };
    assert_int_equal(ann_gt_save(p, &gt), 0);
    size_t len;
    unsigned char *bytes = tu_read_file(p, &len);
    assert_int_equal(len, 8 + 6 * 8);
    assert_memory_equal(bytes + 8, ids, sizeof ids);
    assert_memory_equal(bytes + 8 + sizeof ids, dists, sizeof dists);
    free(bytes);

    ann_gt back;
    assert_int_equal(ann_gt_load(p, 6, &back), 0);
    assert_int_equal(back.nq, 2);
    assert_int_equal(back.k, 3);
    assert_memory_equal(back.ids, ids, sizeof ids);
    assert_memory_equal(back.dists, dists, sizeof dists);
    ann_gt_free(&back);

    int rc = ann_gt_load(p, 5, &back); /* id 5 is out of range for n=5 */
    assert_int_equal(rc, ANN_EDATA);
    assert_non_null(strstr(ann_errmsg(rc), "gt.ibin: query 1 rank 2: id 5 out of range [0, 5)"));

    /* ids-only files load with dists NULL */
    ann_gt ids_only = { .nq = 2, .k = 3, .ids = ids, .dists = NULL };
    assert_int_equal(ann_gt_save(p, &ids_only), 0);
    assert_int_equal(ann_gt_load(p, 6, &back), 0);
    assert_null(back.dists);
    ann_gt_free(&back);

    assert_int_equal(tu_write_file(p, bytes = calloc(1, 8 + 7), 8 + 7), 0);
    free(bytes);
    rc = ann_gt_load(p, 0, &back);
    assert_int_equal(rc, ANN_EFORMAT);
}

/*
 * Issue 14: header fields are untrusted.  A gt.ibin of nq = k = 2^31 and a
 * .fbin of n = dim = 2^31 describe 2^65 and 2^64 bytes, which wrapped to
 * the 8 bytes of a bare header: the size check passed, and the loader
 * asked malloc for the wrapped size and pread for the real one.
 */
static void test_header_sizes_overflow_checked(void **state)
{
    (void)state;
    char p[4096], want[4300];
    unsigned char hdr[8] = { 0, 0, 0, 0x80, 0, 0, 0, 0x80 }; /* 2^31, 2^31 little-endian */
    path_of(p, "wrap.ibin");
    assert_int_equal(tu_write_file(p, hdr, 8), 0);
    ann_gt gt;
    int rc = ann_gt_load(p, 0, &gt);
    assert_int_equal(rc, ANN_EFORMAT);
    snprintf(want, sizeof want, "%s: header nq=2147483648 k=2147483648 describes more than 2^64 bytes", p);
    assert_string_equal(ann_errmsg(rc), want);
    assert_null(gt.ids);

    path_of(p, "wrap.fbin");
    assert_int_equal(tu_write_file(p, hdr, 8), 0);
    ann_vecfile vf;
    rc = ann_vecfile_open(p, &vf);
    assert_int_equal(rc, ANN_EFORMAT);
    /* refused by the dimension bound before any size arithmetic (with dim at
     * most ANN_MAX_DIM, n * dim * 4 stays below 2^55) */
    snprintf(want, sizeof want, "%s: header says dim 2147483648, more than 1048576", p);
    assert_string_equal(ann_errmsg(rc), want);
    assert_int_equal(vf.fd, -1);
}

static const char *const io_choices[] = { "io_uring", "libaio", "pread", NULL };
static const ann_param_spec specs[] = {
    { .name = "L", .type = ANN_PARAM_INT, .min = 1, .max = 1000, .def = 100 },
    { .name = "alpha", .type = ANN_PARAM_REAL, .min = 1.0, .max = 2.0, .def = 1.2 },
    { .name = "io", .type = ANN_PARAM_ENUM, .choices = io_choices, .def_str = "io_uring" },
    { .name = "flag", .type = ANN_PARAM_BOOL, .def = 1 },
    ANN_PARAM_END,
};

static void collect(void *user, const char *msg)
{
    char *buf = user;
    strcat(buf, msg);
    strcat(buf, "\n");
}

static void test_params(void **state)
{
    (void)state;
    json_t *ok = json_pack("{s:i, s:f, s:s}", "L", 50, "alpha", 1.5, "io", "pread");
    assert_int_equal(ann_params_validate(ok, specs, "search"), 0);
    assert_int_equal(ann_param_int(ok, specs, "L"), 50);
    assert_true(fabs(ann_param_real(ok, specs, "alpha") - 1.5) < 1e-12);
    assert_string_equal(ann_param_enum(ok, specs, "io"), "pread");
    assert_int_equal(ann_param_bool(ok, specs, "flag"), 1);
    assert_int_equal(ann_param_int(NULL, specs, "L"), 100);
    json_decref(ok);

    json_t *bad = json_pack("{s:i, s:s, s:s, s:i}", "L", 0, "alpha", "x", "io", "mmap", "Q", 1);
    char buf[2048] = "";
    assert_int_equal(ann_params_check(bad, specs, "engines[2].search", collect, buf), 4);
    assert_non_null(strstr(buf, "engines[2].search.L: 0 is out of range [1, 1000]"));
    assert_non_null(strstr(buf, "engines[2].search.alpha: expected a number in [1, 2]"));
    assert_non_null(strstr(buf, "engines[2].search.io: \"mmap\" is not one of: io_uring, libaio, "
                                "pread"));
    assert_non_null(strstr(buf, "engines[2].search.Q: unknown parameter (known: L, alpha, io, "
                                "flag)"));
    int rc = ann_params_validate(bad, specs, "search");
    assert_int_equal(rc, ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(rc), "search."));
    json_decref(bad);
}

/*
 * Run lookup(name) in a child with stderr on a pipe: returns the child's
 * stderr in buf and the signal that ended it (0 when it exited).
 */
static int lookup_in_child(const ann_param_spec *table, const char *name, char *buf, size_t cap)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        /* a looked-up name the table does not declare never reads as 0 */
        _exit(ann_param_int(NULL, table, name) == 0 ? 3 : 4);
    }
    close(fds[1]);
    size_t used = 0;
    ssize_t got;
    while (used + 1 < cap && (got = read(fds[0], buf + used, cap - 1 - used)) > 0)
        used += (size_t)got;
    buf[used] = '\0';
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* Issue 16: a misspelt lookup ("beam_widht") used to return 0, so W = 0;
 * now it is a programming error naming the parameter and the table. */
static void test_param_lookup_undeclared(void **state)
{
    (void)state;
    static const ann_param_spec named[] = {
        { .name = "L", .type = ANN_PARAM_INT, .min = 1, .max = 1000, .def = 100 },
        { .name = "beam_width", .type = ANN_PARAM_INT, .min = 1, .max = 64, .def = 4 },
        ANN_PARAM_END_OF("diskann-sector search"),
    };
    char err[1024];
    assert_int_equal(lookup_in_child(named, "beam_widht", err, sizeof err), SIGABRT);
    assert_string_equal(err, "annlab: programming error: parameter \"beam_widht\" is not declared "
                             "by diskann-sector search (declared: L, beam_width)\n");
    assert_int_equal(lookup_in_child(specs, "Q", err, sizeof err), SIGABRT);
    assert_string_equal(err, "annlab: programming error: parameter \"Q\" is not declared by an "
                             "unnamed parameter table (declared: L, alpha, io, flag)\n");
    /* declared names still read their defaults */
    assert_int_equal(lookup_in_child(named, "beam_width", err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(ann_param_int(NULL, named, "beam_width"), 4);
}

static void test_status(void **state)
{
    (void)state;
    ann_err_clear();
    assert_string_equal(ann_errmsg(ANN_ECORRUPT), "corrupt data");
    assert_string_equal(ann_strerror(-ENOENT), "No such file or directory");
    int rc = ann_fail(ANN_ECORRUPT, "node %d: degree %d > R", 7, 99);
    assert_int_equal(rc, ANN_ECORRUPT);
    rc = ann_fail_wrap(rc, "index.bin");
    assert_string_equal(ann_errmsg(rc), "index.bin: node 7: degree 99 > R");
}

/* ann_dir_bytes counts a directory exactly, and files and directories
 * deleted while it walks (a live RocksDB store dropping compacted tables)
 * are not errors: a workload cell failed on "000012.sst: stat: No such file
 * or directory". */
static void test_dir_bytes_churn(void **state)
{
    (void)state;
    char root[4200], path[4300];
    snprintf(root, sizeof root, "%s/churn", dir);
    assert_int_equal(mkdir(root, 0755), 0);
    snprintf(path, sizeof path, "%s/sub", root);
    assert_int_equal(mkdir(path, 0755), 0);
    static const size_t sizes[] = { 1000, 4096, 12345 };
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, i == 2 ? "%s/sub/f%d" : "%s/f%d", root, i);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        for (size_t b = 0; b < sizes[i]; b++)
            fputc('x', fp);
        fclose(fp);
    }
    uint64_t bytes = 0;
    assert_int_equal(ann_dir_bytes(root, &bytes), 0);
    assert_int_equal(bytes, 1000 + 4096 + 12345);
    tu_churn *c = tu_churn_start(root);
    int errors = 0;
    for (int i = 0; i < 20000; i++) {
        bytes = 0;
        int rc = ann_dir_bytes(root, &bytes);
        errors += rc != 0;
        assert_true(rc != 0 || (bytes >= 17441 && bytes <= 17441 + 9));
    }
    tu_churn_stop(c);
    assert_int_equal(errors, 0);
    snprintf(path, sizeof path, "%s/nowhere", root);
    assert_int_equal(ann_dir_bytes(path, &bytes), -ENOENT); /* the root itself: an error */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fbin_round_trip_byte_exact),
        cmocka_unit_test(test_u8_i8_widen),
        cmocka_unit_test(test_truncated_file_is_refused),
        cmocka_unit_test(test_nan_is_refused),
        cmocka_unit_test(test_gt_round_trip_and_range),
        cmocka_unit_test(test_header_sizes_overflow_checked),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_param_lookup_undeclared),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_dir_bytes_churn),
    };
    return cmocka_run_group_tests_name("core_files", tests, setup, teardown);
}
