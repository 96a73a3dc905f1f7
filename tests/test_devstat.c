/*
 * test_devstat.c: block-device resolution through fake /sys trees
 * (partition -> disk, single-slave device-mapper -> slave, striped dm kept,
 * a loop chain cut at its depth limit), stat parsing and errors, per-query
 * JSON; then on this machine an O_DIRECT read of a 32 MiB file written by
 * the test, evicted first, counted at the device (at least 95% of it: the
 * counter is machine-wide and other processes only ever add to it, so no
 * upper bound is asserted here; test_cgroups checks both bounds on a
 * group's own counter) and exactly by /proc/self/io read_bytes (a reported
 * skip where the kernel keeps no such counter).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cgroups/devstat.h"
#include "cgroups/evict.h"
#include "engines/core/status.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)

static char *tmp;

static int setup(void **state)
{
    (void)state;
    tmp = tu_tmpdir("devstat");
    return tmp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(tmp);
    return 0;
}

static void mkdirs(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    for (char *p = path + strlen(tmp) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    mkdir(path, 0755);
}

static void put(const char *rel, const char *text)
{
    char path[4096], parent[4096];
    snprintf(parent, sizeof parent, "%s", rel);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = '\0';
        mkdirs(parent);
    }
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
}

static void link_to(const char *target, const char *rel)
{
    char path[4096], parent[4096];
    snprintf(parent, sizeof parent, "%s", rel);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = '\0';
        mkdirs(parent);
    }
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    assert_int_equal(symlink(target, path), 0);
}

/* sys/dev/block/<M:m of the temp dir> -> target (relative to sys/dev/block). */
static void link_tmp_device(const char *target)
{
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0);
    if (major(st.st_dev) == 0) {
        printf("# the temporary directory has no block device; fake-tree paths use its st_dev anyway\n");
    }
    char rel[256];
    snprintf(rel, sizeof rel, "sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
    link_to(target, rel);
}

static bool tmp_has_block_device(void)
{
    struct stat st;
    return stat(tmp, &st) == 0 && major(st.st_dev) != 0;
}

static void sys_root(char *buf)
{
    snprintf(buf, 4096, "%s/sys", tmp);
}

static void test_partition_resolves_to_disk(void **state)
{
    (void)state;
    char sys[4096], want[8192];
    devstat_dev d;
    if (!tmp_has_block_device()) {
        printf("# skipped: %s is on a filesystem without a block device\n", tmp);
        skip();
        return;
    }
    put("sys/devices/pci/virtio1/block/sdz/dev", "8:0\n");
    put("sys/devices/pci/virtio1/block/sdz/stat", "    5 0 40 1 0 0 0 0 0 1 1\n");
    put("sys/devices/pci/virtio1/block/sdz/sdz2/partition", "2\n");
    put("sys/devices/pci/virtio1/block/sdz/sdz2/dev", "8:2\n");
    link_tmp_device("../../devices/pci/virtio1/block/sdz/sdz2");
    link_to("../../devices/pci/virtio1/block/sdz", "sys/dev/block/8:0");
    sys_root(sys);
    assert_int_equal(devstat_resolve(tmp, sys, &d), 0);
    assert_string_equal(d.chain, "sdz2 -> sdz");
    assert_string_equal(d.name, "sdz");
    assert_int_equal(d.major, 8);
    assert_int_equal(d.minor, 0);
    assert_true(devstat_devt(&d) == makedev(8, 0));
    snprintf(want, sizeof want, "%s/dev/block/8:0/stat", sys);
    assert_string_equal(d.stat_path, want);

    devstat_sample s;
    assert_int_equal(devstat_sample_take(&d, 0, &s), 0);
    assert_true(s.dev_known);
    assert_int_equal(s.dev_read_ios, 5);
    assert_int_equal(s.dev_read_sectors, 40);
}

static void test_dm_single_slave_followed_striped_kept(void **state)
{
    (void)state;
    char sys[4096];
    devstat_dev d;
    if (!tmp_has_block_device()) {
        skip();
        return;
    }
    put("sys/devices/virtual/block/dm-0/dm/name", "vg-root\n");
    put("sys/devices/virtual/block/dm-0/stat", "1 0 8 0 0 0 0 0 0 0 0\n");
    put("sys/devices/pci/nvme/block/nvme0n1/dev", "259:0\n");
    put("sys/devices/pci/nvme/block/nvme0n1/stat", "1 0 8 0 0 0 0 0 0 0 0\n");
    put("sys/devices/pci/nvme/block/nvme0n1/nvme0n1p3/partition", "3\n");
    put("sys/devices/pci/nvme/block/nvme0n1/nvme0n1p3/dev", "259:3\n");
    link_to("../../../../pci/nvme/block/nvme0n1/nvme0n1p3", "sys/devices/virtual/block/dm-0/slaves/nvme0n1p3");
    link_tmp_device("../../devices/virtual/block/dm-0");
    link_to("../../devices/pci/nvme/block/nvme0n1/nvme0n1p3", "sys/dev/block/259:3");
    link_to("../../devices/pci/nvme/block/nvme0n1", "sys/dev/block/259:0");
    sys_root(sys);
    assert_int_equal(devstat_resolve(tmp, sys, &d), 0);
    assert_string_equal(d.chain, "dm-0 -> nvme0n1p3 -> nvme0n1");
    assert_string_equal(d.name, "nvme0n1");

    /* A second slave: the volume itself is counted. */
    link_to("../../../../pci/nvme/block/nvme0n1", "sys/devices/virtual/block/dm-0/slaves/nvme0n1");
    assert_int_equal(devstat_resolve(tmp, sys, &d), 0);
    assert_string_equal(d.chain, "dm-0");
    assert_string_equal(d.name, "dm-0");
}

static void test_loop_chain_depth_limit(void **state)
{
    (void)state;
    char sys[4096], backing[4096], want[8192];
    devstat_dev d;
    if (!tmp_has_block_device()) {
        skip();
        return;
    }
    /* A loop device whose backing file lives on the loop device itself: a
     * cycle the resolver must cut rather than follow forever. */
    snprintf(backing, sizeof backing, "%s/backing.img\n", tmp);
    put("backing.img", "");
    put("sys/devices/virtual/block/loop9/loop/backing_file", backing);
    put("sys/devices/virtual/block/loop9/stat", "0 0 0 0 0 0 0 0 0 0 0\n");
    link_tmp_device("../../devices/virtual/block/loop9");
    sys_root(sys);
    assert_int_equal(devstat_resolve(tmp, sys, &d), ANN_EUNSUPPORTED);
    snprintf(want, sizeof want, "%s: device chain deeper than 8: loop9 -> loop9 -> loop9 -> loop9 -> loop9 -> loop9 -> loop9 -> loop9", tmp);
    assert_string_equal(d.reason, want);
}

static void test_unknown_device_and_missing_path(void **state)
{
    (void)state;
    char sys[4096], want[8192], path[4096];
    devstat_dev d;
    sys_root(sys);
    mkdirs("sys/dev/block");
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0);
    int rc = devstat_resolve(tmp, sys, &d);
    assert_int_equal(rc, ANN_EUNSUPPORTED);
    if (major(st.st_dev) != 0) {
        snprintf(want, sizeof want, "%s: device %u:%u has no %s/dev/block/%u:%u", tmp, major(st.st_dev),
                 minor(st.st_dev), sys, major(st.st_dev), minor(st.st_dev));
        assert_string_equal(d.reason, want);
    }
    assert_string_equal(ann_errmsg(rc), d.reason);

    snprintf(path, sizeof path, "%s/absent", tmp);
    assert_int_equal(devstat_resolve(path, sys, &d), -ENOENT);
    snprintf(want, sizeof want, "%s: No such file or directory", path);
    assert_string_equal(ann_errmsg(-ENOENT), want);
}

static void test_tmpfs_is_unsupported(void **state)
{
    (void)state;
    devstat_dev d;
    struct stat st;
    if (stat("/dev/shm", &st) != 0 || major(st.st_dev) != 0) {
        printf("# skipped: /dev/shm is not an anonymous-device filesystem here\n");
        skip();
        return;
    }
    assert_int_equal(devstat_resolve("/dev/shm", NULL, &d), ANN_EUNSUPPORTED);
    assert_non_null(strstr(d.reason, "/dev/shm: filesystem tmpfs has no block device"));
}

static void test_parse_stat(void **state)
{
    (void)state;
    devstat_sample s = { 0 };
    assert_int_equal(devstat_parse_stat("   52838     7528  3025946    21659    16336     7109  1418856     7095"
                                        "        0    11140    29268     5402       56   224024      406     2407      106\n",
                                        "vda/stat", &s),
                     0);
    assert_int_equal(s.dev_read_ios, 52838);
    assert_int_equal(s.dev_read_merges, 7528);
    assert_int_equal(s.dev_read_sectors, 3025946);
    assert_int_equal(s.dev_read_ms, 21659);
    assert_int_equal(devstat_parse_stat("1 2 x 4\n", "vda/stat", &s), ANN_EFORMAT);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), "vda/stat: field 3 is not a number");
    assert_int_equal(devstat_parse_stat("1 2\n", "vda/stat", &s), ANN_EFORMAT);
    assert_string_equal(ann_errmsg(ANN_EFORMAT), "vda/stat: field 3 is not a number");
}

static void test_diff_and_json(void **state)
{
    (void)state;
    devstat_sample a = { .dev_known = true, .dev_read_ios = 10, .dev_read_sectors = 80,
                         .proc_known = true, .proc_read_bytes = 4096, .t_ns = 1000 };
    devstat_sample b = { .dev_known = true, .dev_read_ios = 110, .dev_read_sectors = 880,
                         .proc_known = true, .proc_read_bytes = 413696, .t_ns = 2000001000 };
    devstat_delta d;
    devstat_diff(&a, &b, &d);
    assert_int_equal(d.read_ios, 100);
    assert_int_equal(d.read_bytes, 800 * 512);
    assert_int_equal(d.proc_read_bytes, 409600);
    assert_int_equal(d.elapsed_ns, 2000000000);
    json_t *j = devstat_delta_json(&d, 50, "device vda");
    assert_non_null(j);
    assert_true(json_real_value(json_object_get(j, "reads_per_query")) == 2.0);
    assert_true(json_real_value(json_object_get(j, "bytes_per_query")) == 8192.0);
    assert_true(json_real_value(json_object_get(j, "proc_read_bytes_per_query")) == 8192.0);
    assert_string_equal(json_string_value(json_object_get(j, "source")), "device vda");
    json_decref(j);

    devstat_diff(&b, &a, &d); /* counters reset in between: never negative */
    assert_int_equal(d.read_ios, 0);
    assert_int_equal(d.read_bytes, 0);
    a.dev_known = false;
    devstat_diff(&a, &b, &d);
    j = devstat_delta_json(&d, 50, "device vda");
    assert_true(json_is_null(json_object_get(j, "reads_per_query")));
    assert_true(json_is_null(json_object_get(j, "source")));
    json_decref(j);
}

static void test_odirect_read_counted_at_device(void **state)
{
    (void)state;
    const uint64_t file_bytes = 32 * MIB;
    const size_t chunk = MIB;
    char path[4096];
    devstat_dev dev;
    int rc = devstat_resolve(tmp, NULL, &dev);
    if (rc) {
        printf("# skipped: device of %s not identifiable: %s\n", tmp, ann_errmsg(rc));
        skip();
        return;
    }
    snprintf(path, sizeof path, "%s/direct.bin", tmp);
    void *buf = NULL;
    assert_int_equal(posix_memalign(&buf, 4096, chunk), 0);
    memset(buf, 0x3c, chunk);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    for (uint64_t off = 0; off < file_bytes; off += chunk)
        assert_int_equal(write(fd, buf, chunk), (ssize_t)chunk);
    assert_int_equal(fsync(fd), 0);
    close(fd);
    evict_params ep = evict_params_default();
    ep.drop_caches = false;
    evict_report er;
    assert_int_equal(evict_cold_files((const char *const[]){ path }, 1, &ep, &er), 0);

    fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0 && errno == EINVAL) {
        printf("# skipped: O_DIRECT not supported on %s\n", tmp);
        free(buf);
        skip();
        return;
    }
    assert_true(fd >= 0);
    devstat_sample a, b;
    devstat_delta d;
    assert_int_equal(devstat_sample_take(&dev, 0, &a), 0);
    for (uint64_t off = 0; off < file_bytes; off += chunk)
        assert_int_equal(pread(fd, buf, chunk, (off_t)off), (ssize_t)chunk);
    assert_int_equal(devstat_sample_take(&dev, 0, &b), 0);
    close(fd);
    free(buf);
    devstat_diff(&a, &b, &d);
    printf("# %s (%s): read %llu bytes with O_DIRECT; device %llu bytes in %llu requests; "
           "proc read_bytes %s %llu\n",
           dev.name, dev.chain, (unsigned long long)file_bytes, (unsigned long long)d.read_bytes,
           (unsigned long long)d.read_ios, d.proc_known ? "" : "(unknown)",
           (unsigned long long)d.proc_read_bytes);
    /* The device counter is machine-wide: other processes only ever add to
     * it, so the lower bound is the check that cannot depend on them (the
     * upper bound needs a counter of this process's own group:
     * test_cgroups' test_real_group_counts_its_reads). */
    assert_true(d.dev_known);
    assert_true(d.read_bytes >= file_bytes - file_bytes / 20);
    assert_true(d.read_ios > 0);
    /* /proc/self/io counts this process alone: exact. */
    if (!d.proc_known) {
        printf("# skipped: /proc/self/io read_bytes unknown here (no task I/O accounting)\n");
        skip();
        return;
    }
    assert_int_equal(d.proc_read_bytes, file_bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_partition_resolves_to_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dm_single_slave_followed_striped_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_chain_depth_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_device_and_missing_path, setup, teardown),
        cmocka_unit_test(test_tmpfs_is_unsupported),
        cmocka_unit_test(test_parse_stat),
        cmocka_unit_test(test_diff_and_json),
        cmocka_unit_test_setup_teardown(test_odirect_read_counted_at_device, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
