/*
 * test_owner.c: owner tags and liveness, temporaries of dead owners
 * reaped and live ones left, flock locks that name their holder, and
 * staged output directories (replaced whole or not at all, refused when
 * they exist unless forced).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/engine.h"
#include "engines/core/fileio.h"
#include "engines/core/owner.h"
#include "engines/core/stagedir.h"
#include "engines/core/status.h"
#include "tests/support/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
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
    dir = tu_tmpdir("owner");
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(dir);
    return 0;
}

/* A process that has exited (and been reaped): its owner record. */
static ann_owner dead_owner(void)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        ann_owner me;
        ann_owner_self(&me);
        if (write(fds[1], &me, sizeof me) != (ssize_t)sizeof me)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    ann_owner o;
    assert_int_equal(read(fds[0], &o, sizeof o), (ssize_t)sizeof o);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    return o;
}

static void test_owner_tags_and_liveness(void **state)
{
    (void)state;
    ann_owner me, back;
    assert_int_equal(ann_owner_self(&me), 0);
    assert_int_equal(me.pid, (int)getpid());
    assert_true(me.start > 0);
    assert_true(ann_owner_alive(&me));
    char tag[48];
    ann_owner_tag(&me, tag, sizeof tag);
    assert_int_equal(ann_owner_parse(tag, &back), 0);
    assert_int_equal(back.pid, me.pid);
    assert_true(back.start == me.start);
    /* the same pid with another start time is another process */
    back.start = me.start + 1;
    assert_false(ann_owner_alive(&back));
    /* a bare pid (no start time) is judged by the pid alone */
    assert_int_equal(ann_owner_parse("1", &back), 0);
    assert_true(back.start == 0);
    assert_int_equal(ann_owner_parse("12x", &back), ANN_EFORMAT);
    assert_int_equal(ann_owner_parse("-3", &back), ANN_EFORMAT);
    assert_int_equal(ann_owner_parse("7-", &back), ANN_EFORMAT);
    ann_owner d = dead_owner();
    assert_false(ann_owner_alive(&d));
}

static void mkdir_with_file(const char *path)
{
    char f[PATH_MAX + 16];
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(f, sizeof f, "%s/x", path);
    assert_int_equal(tu_write_file(f, "x", 1), 0);
}

static void test_tmp_reap_removes_only_the_dead(void **state)
{
    (void)state;
    char dead[4200], live[4200], odd[4200], other[4200], tag[48];
    ann_owner d = dead_owner(), me;
    ann_owner_self(&me);
    ann_owner_tag(&d, tag, sizeof tag);
    snprintf(dead, sizeof dead, "%s/idx.tmp.%s", dir, tag);
    ann_owner_tag(&me, tag, sizeof tag);
    snprintf(live, sizeof live, "%s/idx.tmp.%s", dir, tag);
    snprintf(odd, sizeof odd, "%s/idx.tmp.notatag", dir);
    ann_owner_tag(&d, tag, sizeof tag);
    snprintf(other, sizeof other, "%s/other.tmp.%s", dir, tag);
    mkdir_with_file(dead);
    mkdir_with_file(live);
    mkdir_with_file(odd);
    mkdir_with_file(other);
    unsigned removed = 99;
    assert_int_equal(ann_tmp_reap(dir, "idx", &removed), 0);
    assert_int_equal(removed, 1);
    assert_int_equal(access(dead, F_OK), -1);
    assert_int_equal(access(live, F_OK), 0);  /* a live sibling's work in progress */
    assert_int_equal(access(odd, F_OK), 0);   /* not named by an owner: not ours to judge */
    assert_int_equal(access(other, F_OK), 0); /* another name */
    assert_int_equal(ann_tree_remove(live), 0);
    assert_int_equal(ann_tree_remove(odd), 0);
    assert_int_equal(ann_tree_remove(other), 0);
    assert_int_equal(ann_tmp_reap("/nonexistent/dir", "idx", &removed), 0);
}

static void test_lock_names_its_holder(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/run.lock", dir);
    ann_lock a = { .fd = -1 }, b = { .fd = -1 };
    assert_int_equal(ann_lock_take(&a, path, "annlab run configs/x.json", 0, 0), 0);
    /* flock conflicts between two opens even in one process */
    int rc = ann_lock_take(&b, path, "second", 0, 0);
    assert_int_equal(rc, ANN_EBUSY);
    assert_int_equal(b.fd, -1);
    char want[4400];
    snprintf(want, sizeof want, "%s: held by pid %d since ", path, (int)getpid());
    if (strncmp(ann_errmsg(rc), want, strlen(want)) != 0)
        fail_msg("message \"%s\" does not start with \"%s\"", ann_errmsg(rc), want);
    assert_non_null(strstr(ann_errmsg(rc), ": annlab run configs/x.json"));
    assert_true(ann_is_transient(rc));
    /* a child that inherited the descriptor keeps the lock after we let go */
    ann_lock c = { .fd = -1 };
    ann_lock_release(&a);
    assert_int_equal(ann_lock_take(&c, path, "parent", 0, 1), 0);
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    if (pid == 0) {
        char x;
        close(go[1]);
        if (read(go[0], &x, 1) < 0)
            _exit(1);
        _exit(0);
    }
    close(go[0]);
    ann_lock_release(&c);
    assert_int_equal(ann_lock_take(&b, path, "third", 0, 0), ANN_EBUSY);
    close(go[1]); /* the child exits: the lock is free */
    int st;
    waitpid(pid, &st, 0);
    assert_int_equal(ann_lock_take(&b, path, "third", 0, 0), 0);
    ann_lock_release(&b);
    ann_lock_release(&b); /* twice is fine */
}

static char *read_text(const char *path)
{
    size_t len = 0;
    char *s = tu_read_file(path, &len);
    if (!s)
        return NULL;
    char *z = realloc(s, len + 1);
    z[len] = '\0';
    return z;
}

static int count_entries(const char *d)
{
    DIR *dh = opendir(d);
    if (!dh)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dh)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(dh);
    return n;
}

static void write_in(const char *d, const char *name, const char *text)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", d, name);
    assert_int_equal(tu_write_file(p, text, strlen(text)), 0);
}

static void test_stagedir_replaces_whole_or_not_at_all(void **state)
{
    (void)state;
    char parent[4200], out[4300], p[4400];
    snprintf(parent, sizeof parent, "%s/stage", dir);
    snprintf(out, sizeof out, "%s/bundle", parent);
    snprintf(p, sizeof p, "%s/member", out);

    /* a new output: parents made, the temporary renamed into place */
    ann_stagedir sd;
    assert_int_equal(ann_stagedir_begin(&sd, out, 0), 0);
    assert_string_not_equal(ann_stagedir_path(&sd), out);
    assert_int_equal(access(out, F_OK), -1);
    write_in(ann_stagedir_path(&sd), "member", "old");
    assert_int_equal(ann_stagedir_commit(&sd), 0);
    ann_stagedir_abort(&sd); /* no-op after a commit */
    char *t = read_text(p);
    assert_string_equal(t, "old");
    free(t);
    assert_int_equal(count_entries(parent), 1);

    /* existing: refused without force, before anything is made */
    int rc = ann_stagedir_begin(&sd, out, 0);
    assert_int_equal(rc, -EEXIST);
    char want[4600];
    snprintf(want, sizeof want, "%s: already exists; --force replaces it", out);
    assert_non_null(strstr(ann_errmsg(rc), want));
    assert_int_equal(ann_stagedir_refuses(out), -EEXIST);
    ann_stagedir_abort(&sd);
    assert_int_equal(count_entries(parent), 1);

    /* forced but failed (abort): the old output exactly as it was */
    assert_int_equal(ann_stagedir_begin(&sd, out, ANN_OUT_FORCE), 0);
    write_in(ann_stagedir_path(&sd), "member", "half");
    ann_stagedir_abort(&sd);
    t = read_text(p);
    assert_string_equal(t, "old");
    free(t);
    assert_int_equal(count_entries(parent), 1);

    /* forced and complete: the new output whole, the old one gone */
    assert_int_equal(ann_stagedir_begin(&sd, out, ANN_OUT_FORCE), 0);
    write_in(ann_stagedir_path(&sd), "member", "new");
    write_in(ann_stagedir_path(&sd), "other", "2");
    assert_int_equal(ann_stagedir_commit(&sd), 0);
    ann_stagedir_abort(&sd);
    t = read_text(p);
    assert_string_equal(t, "new");
    free(t);
    assert_int_equal(count_entries(out), 2);
    assert_int_equal(count_entries(parent), 1);

    /* an empty directory is no output: written without force */
    char empty[4300];
    snprintf(empty, sizeof empty, "%s/empty", parent);
    assert_int_equal(mkdir(empty, 0755), 0);
    assert_int_equal(ann_stagedir_begin(&sd, empty, 0), 0);
    write_in(ann_stagedir_path(&sd), "member", "x");
    assert_int_equal(ann_stagedir_commit(&sd), 0);
    assert_int_equal(count_entries(empty), 1);

    /* a dead writer's temporary is removed by the next writer of the name */
    char stale[4400], tag[48];
    ann_owner d = dead_owner();
    ann_owner_tag(&d, tag, sizeof tag);
    snprintf(stale, sizeof stale, "%s.tmp.%s", out, tag);
    mkdir_with_file(stale);
    assert_int_equal(ann_stagedir_begin(&sd, out, ANN_OUT_FORCE), 0);
    assert_int_equal(access(stale, F_OK), -1);
    ann_stagedir_abort(&sd);

    /* in place: the caller's directory, left to the caller */
    assert_int_equal(ann_stagedir_begin(&sd, out, ANN_OUT_IN_PLACE), 0);
    assert_string_equal(ann_stagedir_path(&sd), out);
    assert_int_equal(ann_stagedir_commit(&sd), 0);
    ann_stagedir_abort(&sd);
    assert_int_equal(count_entries(out), 2);

    /* a name whose temporary cannot fit PATH_MAX is refused */
    char *longp = malloc(PATH_MAX + 10);
    memset(longp, 'a', PATH_MAX - 8);
    longp[0] = '/';
    longp[PATH_MAX - 8] = '\0';
    rc = ann_stagedir_begin(&sd, longp, 0);
    assert_int_equal(rc, ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(rc), "path too long"));
    free(longp);
}

static void test_open_refuses_what_is_not_a_file(void **state)
{
    (void)state;
    int fd = -1;
    struct stat st;
    int rc = ann_open_stat("/dev/zero", &fd, &st);
    assert_int_equal(rc, ANN_EFORMAT);
    assert_string_equal(ann_errmsg(rc), "/dev/zero: not a regular file (a character device)");
    assert_int_equal(fd, -1);
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/fifo.fbin", dir);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    rc = ann_open_stat(fifo, &fd, &st); /* returns at once: no writer is waited for */
    assert_int_equal(rc, ANN_EFORMAT);
    char want[4300];
    snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", fifo);
    assert_string_equal(ann_errmsg(rc), want);
    assert_int_equal(ann_check_regular(fifo), ANN_EFORMAT);
    assert_int_equal(ann_check_regular(dir), ANN_EFORMAT);
    unlink(fifo);
    uint64_t x = 0;
    assert_int_equal(ann_mul_u64(1ull << 32, 1ull << 31, &x, "t"), 0);
    assert_true(x == 1ull << 63);
    rc = ann_mul_u64(1ull << 32, 1ull << 32, &x, "hdr");
    assert_int_equal(rc, ANN_EFORMAT);
    assert_string_equal(ann_errmsg(rc), "hdr: 4294967296 x 4294967296 overflows 64 bits");
    assert_int_equal(ann_add_u64(UINT64_MAX, 1, &x, "hdr"), ANN_EFORMAT);
}

/*
 * Only a failure that may not happen again is transient (--resume retries
 * it): an output that already exists is deterministic, and the one race
 * that meets EEXIST, a sibling build renaming its index into place while
 * this one ran, is reported as ANN_EBUSY.
 */
static const char *race_final;

static int race_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
                      const char *tmp_dir, json_t *report)
{
    (void)src, (void)params, (void)bctx, (void)report;
    write_in(tmp_dir, "ours", "x");
    /* the sibling: a complete index appears at the final name meanwhile */
    if (mkdir(race_final, 0755) != 0)
        return ann_fail_errno("%s: mkdir", race_final);
    write_in(race_final, "theirs", "y");
    return 0;
}

static void test_transient_classes(void **state)
{
    (void)state;
    assert_false(ann_is_transient(-EEXIST));
    assert_false(ann_is_transient(-ENOTEMPTY));
    assert_false(ann_is_transient(ANN_EFORMAT));
    assert_true(ann_is_transient(-ENOSPC));
    assert_true(ann_is_transient(ANN_EBUSY));

    static const ann_param_spec none[] = { ANN_PARAM_END_OF("race build") };
    ann_engine_ops ops = { .name = "race", .build_params = none, .build = race_build };
    ann_vecsrc src = { .n = 1, .dim = 1, .metric = ANN_METRIC_L2, .id = "race" };
    char final[4200];
    snprintf(final, sizeof final, "%s/race-index", dir);
    race_final = final;
    json_t *params = json_object();
    int rc = ann_engine_build(&ops, &src, params, final, NULL, NULL);
    assert_int_equal(rc, ANN_EBUSY);
    assert_true(ann_is_transient(rc));
    char want[4400];
    snprintf(want, sizeof want, "%s: another build renamed its index there first", final);
    assert_string_equal(ann_errmsg(rc), want);
    /* the sibling's index is untouched, ours is gone */
    char theirs[4400];
    snprintf(theirs, sizeof theirs, "%s/theirs", final);
    char *t = read_text(theirs);
    assert_string_equal(t, "y");
    free(t);
    assert_int_equal(count_entries(final), 1);
    /* a second attempt meets the index that is there: deterministic */
    rc = ann_engine_build(&ops, &src, params, final, NULL, NULL);
    assert_int_equal(rc, -EEXIST);
    assert_false(ann_is_transient(rc));
    json_decref(params);
    assert_int_equal(ann_tree_remove(final), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_tags_and_liveness),
        cmocka_unit_test(test_tmp_reap_removes_only_the_dead),
        cmocka_unit_test(test_lock_names_its_holder),
        cmocka_unit_test(test_stagedir_replaces_whole_or_not_at_all),
        cmocka_unit_test(test_open_refuses_what_is_not_a_file),
        cmocka_unit_test(test_transient_classes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
