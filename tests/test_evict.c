/*
 * test_evict.c: cold eviction then mincore shows about 0% resident, a warm
 * preload about 100%, on files written by the test; directory walks;
 * residency of partial last pages; errors naming the file; the global drop
 * reported as not done (with why) when its file cannot be written; the
 * cache_eviction JSON.  The tests never drop the machine's caches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cgroups/evict.h"
#include "engines/core/status.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)

static char *tmp;

static int setup(void **state)
{
    (void)state;
    tmp = tu_tmpdir("evict");
    return tmp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(tmp);
    return 0;
}

/* Write `bytes` of a pattern to tmp/rel through the page cache. */
static void write_file(const char *rel, uint64_t bytes, char *path)
{
    snprintf(path, 4096, "%s/%s", tmp, rel);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdir(path, 0755);
    *slash = '/';
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    char block[65536];
    memset(block, 0x42, sizeof block);
    for (uint64_t done = 0; done < bytes;) {
        size_t n = bytes - done < sizeof block ? (size_t)(bytes - done) : sizeof block;
        assert_int_equal(write(fd, block, n), (ssize_t)n);
        done += n;
    }
    close(fd);
}

static evict_params no_global_drop(void)
{
    evict_params p = evict_params_default();
    p.drop_caches = false;
    return p;
}

static void test_cold_then_warm(void **state)
{
    (void)state;
    char path[4096];
    evict_report r;
    evict_params p = no_global_drop();
    write_file("index/graph.bin", 16 * MIB, path);

    assert_int_equal(evict_cold_files((const char *const[]){ path }, 1, &p, &r), 0);
    printf("# cold: %.4f resident (%llu of %llu bytes), before %llu\n", r.resident_fraction,
           (unsigned long long)r.resident_after_bytes, (unsigned long long)r.file_bytes,
           (unsigned long long)r.resident_before_bytes);
    assert_string_equal(r.mode, "cold");
    assert_int_equal(r.files, 1);
    assert_int_equal(r.file_bytes, 16 * MIB);
    assert_true(r.resident_before_bytes > 8 * MIB); /* just written: in the cache */
    assert_true(r.fadvise_done);
    assert_false(r.drop_caches_done);
    assert_string_equal(r.drop_caches_reason, "disabled");
    assert_true(r.resident_fraction < 0.01);

    uint64_t resident = 1, size = 0;
    assert_int_equal(evict_residency(path, &resident, &size), 0);
    assert_int_equal(size, 16 * MIB);
    assert_true(resident < 16 * MIB / 100);

    assert_int_equal(evict_warm_files((const char *const[]){ path }, 1, &r), 0);
    printf("# warm: %.4f resident\n", r.resident_fraction);
    assert_string_equal(r.mode, "warm");
    assert_int_equal(r.preload_bytes, 16 * MIB);
    assert_true(r.resident_before_bytes < 16 * MIB / 100);
    assert_true(r.resident_fraction > 0.99);
    assert_int_equal(evict_residency(path, &resident, &size), 0);
    assert_true(resident > 16 * MIB * 99 / 100);
}

static void test_directory_walk(void **state)
{
    (void)state;
    char path[4096], dir[4096];
    evict_report r;
    evict_params p = no_global_drop();
    write_file("idx/a.bin", 3 * MIB, path);
    write_file("idx/sub/b.bin", 5000, path);  /* partial last page */
    write_file("idx/sub/empty.bin", 0, path);
    snprintf(dir, sizeof dir, "%s/idx", tmp);

    assert_int_equal(evict_warm_dir(dir, &r), 0);
    assert_int_equal(r.files, 3);
    assert_int_equal(r.file_bytes, 3 * MIB + 5000);
    assert_int_equal(r.preload_bytes, 3 * MIB + 5000);
    assert_int_equal(r.resident_after_bytes, 3 * MIB + 5000); /* last page counted to the size */
    assert_true(r.resident_fraction == 1.0);

    assert_int_equal(evict_cold_dir(dir, &p, &r), 0);
    assert_int_equal(r.files, 3);
    assert_int_equal(r.resident_before_bytes, 3 * MIB + 5000);
    assert_int_equal(r.resident_after_bytes, 0);
    assert_true(r.resident_fraction == 0.0);

    json_t *j = evict_report_json(&r);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "mode")), "cold");
    assert_int_equal(json_integer_value(json_object_get(j, "files")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "file_bytes")), 3 * MIB + 5000);
    assert_true(json_is_true(json_object_get(j, "fadvise")));
    assert_true(json_is_false(json_object_get(j, "drop_caches")));
    assert_string_equal(json_string_value(json_object_get(j, "drop_caches_reason")), "disabled");
    assert_true(json_real_value(json_object_get(j, "resident_fraction")) == 0.0);
    json_decref(j);
}

static void test_drop_not_permitted_is_reported(void **state)
{
    (void)state;
    char path[4096], drop[4096], want[8192];
    evict_report r;
    write_file("f.bin", 4096, path);
    snprintf(drop, sizeof drop, "%s/no-such-dir/drop_caches", tmp);
    evict_params p = { .drop_caches = true, .drop_path = drop };
    assert_int_equal(evict_cold_files((const char *const[]){ path }, 1, &p, &r), 0);
    assert_false(r.drop_caches_done);
    if (geteuid() != 0) {
        assert_string_equal(r.drop_caches_reason, "not root");
    } else {
        snprintf(want, sizeof want, "%s: No such file or directory", drop);
        assert_string_equal(r.drop_caches_reason, want);
    }
    assert_true(r.fadvise_done);
    assert_true(r.resident_fraction < 0.01);
}

static void test_missing_file_names_it(void **state)
{
    (void)state;
    char path[4096], want[8192];
    evict_report r;
    evict_params p = no_global_drop();
    snprintf(path, sizeof path, "%s/absent.bin", tmp);
    assert_int_equal(evict_cold_files((const char *const[]){ path }, 1, &p, &r), -ENOENT);
    snprintf(want, sizeof want, "%s: No such file or directory", path);
    assert_string_equal(ann_errmsg(-ENOENT), want);
    assert_int_equal(evict_warm_dir(path, &r), -ENOENT);
    assert_string_equal(ann_errmsg(-ENOENT), want);
    uint64_t a, b;
    assert_int_equal(evict_residency(path, &a, &b), -ENOENT);
}

/* A directory whose files come and go while it is evicted (a live RocksDB
 * store dropping compacted tables): a file deleted after the walk listed it
 * is not an error; the root missing still is (above). */
static void test_directory_churn(void **state)
{
    (void)state;
    char path[4096], dir[4096];
    evict_report r;
    evict_params p = no_global_drop();
    write_file("live/a.bin", 8192, path);
    snprintf(dir, sizeof dir, "%s/live", tmp);
    tu_churn *c = tu_churn_start(dir);
    int errors = 0;
    for (int i = 0; i < 2000; i++)
        errors += evict_cold_dir(dir, &p, &r) != 0 || evict_warm_dir(dir, &r) != 0;
    tu_churn_stop(c);
    assert_int_equal(errors, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cold_then_warm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_not_permitted_is_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_names_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_churn, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
