/*
 * test_fileio.c: engines/core/fileio.h, the helpers the vector-file,
 * ground-truth, TEXMEX and bundle code share: byte-exact atomic commits
 * that leave no temporary, discards that leave nothing, exact preads with
 * the end-of-file message naming the file and offset, open+fstat, mkdir -p
 * and its message naming the component that failed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/fileio.h"
#include "engines/core/status.h"
#include "tests/support/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = tu_tmpdir("fileio");
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(dir);
    return 0;
}

/* Entries in dir other than "." and "..". */
static int count_entries(const char *d)
{
    int n = 0;
    DIR *h = opendir(d);
    assert_non_null(h);
    struct dirent *e;
    while ((e = readdir(h)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(h);
    return n;
}

static void test_tmpfile_commit_byte_exact_no_temporary(void **state)
{
    (void)state;
    char sub[4096], p[4096], tmp[4200];
    snprintf(sub, sizeof sub, "%s/commit", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(p, sizeof p, "%s/out.bin", sub);
    assert_int_equal(tu_write_file(p, "old", 3), 0);
    FILE *fp = NULL;
    assert_int_equal(ann_tmpfile_create(p, tmp, sizeof tmp, &fp), 0);
    char want[4200];
    snprintf(want, sizeof want, "%s.tmp.%d", p, (int)getpid());
    assert_string_equal(tmp, want);
    const unsigned char bytes[] = { 0, 1, 2, 0xff, 0x80, 7 };
    assert_int_equal(fwrite(bytes, 1, sizeof bytes, fp), sizeof bytes);
    /* Before the commit the old content still stands under the name. */
    size_t len = 0;
    unsigned char *got = tu_read_file(p, &len);
    assert_int_equal(len, 3);
    free(got);
    assert_int_equal(ann_tmpfile_commit(fp, tmp, p), 0);
    got = tu_read_file(p, &len);
    assert_int_equal(len, sizeof bytes);
    assert_memory_equal(got, bytes, sizeof bytes);
    free(got);
    assert_int_equal(count_entries(sub), 1);
}

static void test_tmpfile_discard_and_failed_rename_leave_nothing(void **state)
{
    (void)state;
    char sub[4096], p[4096], tmp[4200];
    snprintf(sub, sizeof sub, "%s/discard", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(p, sizeof p, "%s/x.bin", sub);
    FILE *fp = NULL;
    assert_int_equal(ann_tmpfile_create(p, tmp, sizeof tmp, &fp), 0);
    fputs("half", fp);
    ann_tmpfile_discard(fp, tmp);
    assert_int_equal(count_entries(sub), 0);

    /* A non-empty directory in the way: rename fails, the temporary goes. */
    char blocker[4200];
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(blocker, sizeof blocker, "%s/inside", p);
    assert_int_equal(tu_write_file(blocker, "x", 1), 0);
    assert_int_equal(ann_tmpfile_create(p, tmp, sizeof tmp, &fp), 0);
    fputs("data", fp);
    int rc = ann_tmpfile_commit(fp, tmp, p);
    assert_true(rc < 0);
    char want[4400];
    snprintf(want, sizeof want, "%s: rename", tmp);
    assert_non_null(strstr(ann_errmsg(rc), want));
    assert_int_equal(count_entries(sub), 1); /* only the blocking directory */
}

static void test_pread_full_exact_and_eof_message(void **state)
{
    (void)state;
    char p[4096];
    snprintf(p, sizeof p, "%s/ten.bin", dir);
    assert_int_equal(tu_write_file(p, "0123456789", 10), 0);
    int fd = -1;
    struct stat st;
    assert_int_equal(ann_open_stat(p, &fd, &st), 0);
    assert_true(fd >= 0);
    assert_int_equal(st.st_size, 10);
    char buf[16] = { 0 };
    assert_int_equal(ann_pread_full(fd, buf, 4, 3, p), 0);
    assert_memory_equal(buf, "3456", 4);
    int rc = ann_pread_full(fd, buf, 8, 6, p);
    assert_int_equal(rc, ANN_EFORMAT);
    char want[4200];
    snprintf(want, sizeof want, "%s: unexpected end of file at offset 10", p);
    assert_string_equal(ann_errmsg(rc), want);
    close(fd);

    char missing[4200];
    snprintf(missing, sizeof missing, "%s/absent.bin", dir);
    rc = ann_open_stat(missing, &fd, &st);
    assert_int_equal(rc, -ENOENT);
    assert_int_equal(fd, -1);
    snprintf(want, sizeof want, "%s: open", missing);
    assert_non_null(strstr(ann_errmsg(rc), want));
}

static void test_mkdir_p_nested_and_blocked(void **state)
{
    (void)state;
    char p[4096];
    snprintf(p, sizeof p, "%s/a/b/c", dir);
    assert_int_equal(ann_mkdir_p(p, 0755, "mkdir"), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(ann_mkdir_p(p, 0755, "mkdir"), 0); /* existing: fine */

    char file[4096], below[4200];
    snprintf(file, sizeof file, "%s/plain", dir);
    assert_int_equal(tu_write_file(file, "x", 1), 0);
    snprintf(below, sizeof below, "%s/sub/dir", file);
    int rc = ann_mkdir_p(below, 0755, "cannot create directory");
    assert_int_equal(rc, -ENOTDIR);
    char want[4400];
    snprintf(want, sizeof want, "%s/sub: cannot create directory", file);
    assert_non_null(strstr(ann_errmsg(rc), want));
}

static void test_str_ends_with(void **state)
{
    (void)state;
    assert_true(ann_str_ends_with("base.fbin", ".fbin"));
    assert_true(ann_str_ends_with(".fbin", ".fbin"));
    assert_false(ann_str_ends_with("fbin", ".fbin"));
    assert_false(ann_str_ends_with("base.fbin.gz", ".fbin"));
    assert_true(ann_str_ends_with("x", ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tmpfile_commit_byte_exact_no_temporary),
        cmocka_unit_test(test_tmpfile_discard_and_failed_rename_leave_nothing),
        cmocka_unit_test(test_pread_full_exact_and_eof_message),
        cmocka_unit_test(test_mkdir_p_nested_and_blocked),
        cmocka_unit_test(test_str_ends_with),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
