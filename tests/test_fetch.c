/*
 * test_fetch.c: downloads (datasets/fetch.h) and `annlab dataset fetch /
 * prepare` of download-kind entries, without the internet: file:// sources
 * and tests/fetch_server.py on a free 127.0.0.1 port (with and without
 * Range support).  Covered: byte-exact copies and their sha256, resuming a
 * .part (file://, HTTP 206 after a redirect, an interrupted transfer, a
 * .part already whole), a server that ignores Range (restart from byte 0),
 * size and sha256 mismatches, no network, a dead connection (the
 * low-speed limit), HTTP 404, ANNLAB_MIRROR, and
 * prepare end to end from a mirror (HDF5; VectorDBBench parquet when node
 * and its packages are installed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/dsutil.h"
#include "datasets/fetch.h"
#include "datasets/import.h"
#include "engines/core/status.h"
#include "tests/support/harness_fixture.h"
#include "tests/support/hdf5_fixture.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DATA_BYTES (3u * 1024 * 1024 + 4321) /* a few MB, no multiple of any buffer */

static char *dir;
static unsigned char *data; /* DATA_BYTES seeded bytes, also in dir/src/data.bin */
static char data_sum[80];   /* their "sha256:<hex>" */
static char src_dir[4200];
static char src_url[4300];  /* file:// URL of dir/src/data.bin */

static int setup(void **state)
{
    (void)state;
    char p[4300];
    dir = tu_tmpdir("fetch");
    data = malloc(DATA_BYTES);
    if (!dir || !data)
        return -1;
    uint64_t st = 2024;
    for (size_t i = 0; i < DATA_BYTES; i++)
        data[i] = (unsigned char)(tu_rand(&st) >> 56);
    snprintf(src_dir, sizeof src_dir, "%s/src", dir);
    snprintf(p, sizeof p, "%s/data.bin", src_dir);
    if (ds_mkdir_p(src_dir) != 0 || tu_write_file(p, data, DATA_BYTES) != 0 ||
        ds_sha256_file(p, data_sum, NULL) != 0)
        return -1;
    snprintf(src_url, sizeof src_url, "file://%s", p);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(data);
    tu_rmdir(dir);
    return 0;
}

/* dir/<name> into buf (4096 bytes), with an earlier file and its .part removed. */
static void fresh_dest(char *buf, const char *name)
{
    char part[4200];
    snprintf(buf, 4096, "%s/%s", dir, name);
    snprintf(part, sizeof part, "%s.part", buf);
    unlink(buf);
    unlink(part);
}

/* Write the first len bytes of buf as dest's .part. */
static void write_part(const char *dest, const void *buf, size_t len)
{
    char part[4200];
    snprintf(part, sizeof part, "%s.part", dest);
    assert_int_equal(tu_write_file(part, buf, len), 0);
}

static void assert_is_data(const char *path)
{
    size_t len = 0;
    unsigned char *got = tu_read_file(path, &len);
    assert_non_null(got);
    assert_int_equal(len, DATA_BYTES);
    assert_memory_equal(got, data, DATA_BYTES);
    free(got);
}

static void assert_absent(const char *path)
{
    if (access(path, F_OK) == 0)
        fail_msg("%s should not exist", path);
}

static void assert_no_part(const char *dest)
{
    char part[4200];
    snprintf(part, sizeof part, "%s.part", dest);
    assert_absent(part);
}

static int fetch(const char *url, const char *dest, uint64_t bytes, const char *sha,
                 ds_fetch_result *res)
{
    ds_fetch_spec s = { .name = "t", .url = url, .dest = dest, .expect_bytes = bytes,
                        .expect_sha256 = sha,
                        .offline_hint = "download it elsewhere and run `annlab dataset "
                                        "prepare t --from FILE.hdf5`" };
    ann_err_clear();
    return ds_fetch_file(&s, res);
}

#define assert_ok(rc)                                                  \
    do {                                                               \
        int rc_ = (rc);                                                \
        if (rc_ != 0)                                                  \
            fail_msg("failed (%d): %s", rc_, ann_errmsg(rc_));         \
    } while (0)

static void assert_msg(int rc, const char *want)
{
    const char *got = ann_errmsg(rc);
    if (strcmp(got, want) != 0)
        fail_msg("message\n  got  \"%s\"\n  want \"%s\"", got, want);
}

/* ---- tests/fetch_server.py ---- */

typedef struct server {
    pid_t pid;
    int stdin_fd; /* closing it stops the server */
    int stdout_fd;
    int port;
} server;

/* Start the server over src_dir (range: honour Range requests); skips without python3. */
static void server_start(server *s, int range)
{
    char exe[PATH_MAX], script[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    snprintf(script, sizeof script, "%s/../../tests/fetch_server.py", dirname(exe));
    if (access(script, R_OK) != 0 || system("python3 -c '' >/dev/null 2>&1") != 0) {
        print_message("python3 or %s absent: skipping\n", script);
        skip();
    }
    int in[2], out[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        const char *argv[] = { "python3", script, src_dir, range ? "--range" : NULL, NULL };
        execvp("python3", (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s->stdin_fd = in[1];
    s->stdout_fd = out[0]; /* open until the server stops: it may still write */
    char line[32] = "";
    size_t got = 0;
    while (got < sizeof line - 1 && !strchr(line, '\n')) {
        ssize_t r = read(s->stdout_fd, line + got, sizeof line - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        line[got] = '\0';
    }
    s->port = atoi(line);
    assert_true(s->port > 0);
}

static void server_stop(server *s)
{
    close(s->stdin_fd);
    waitpid(s->pid, NULL, 0);
    close(s->stdout_fd);
}

/* ---- ds_fetch_file ---- */

static void test_file_url_byte_exact_then_already(void **state)
{
    (void)state;
    char dest[4096];
    ds_fetch_result r;
    fresh_dest(dest, "exact.bin");
    int rc = fetch(src_url, dest, DATA_BYTES, data_sum + 7, &r);
    assert_int_equal(rc, 0);
    assert_is_data(dest);
    assert_no_part(dest);
    assert_string_equal(r.sha256, data_sum);
    assert_int_equal(r.bytes, DATA_BYTES);
    assert_int_equal(r.transferred, DATA_BYTES);
    assert_int_equal(r.resumed_from, 0);
    assert_int_equal(r.already, 0);

    /* Complete and matching: not downloaded again, even from a source that is gone. */
    rc = fetch("file:///nonexistent/data.bin", dest, DATA_BYTES, data_sum + 7, &r);
    assert_int_equal(rc, 0);
    assert_int_equal(r.already, 1);
    assert_int_equal(r.transferred, 0);
    assert_string_equal(r.sha256, data_sum);
}

static void test_file_url_resumes_a_part(void **state)
{
    (void)state;
    char dest[4096];
    ds_fetch_result r;
    fresh_dest(dest, "resume-file.bin");
    write_part(dest, data, 1000003);
    assert_ok(fetch(src_url, dest, 0, NULL, &r));
    assert_is_data(dest);
    assert_no_part(dest);
    assert_int_equal(r.resumed_from, 1000003);
    assert_int_equal(r.transferred, DATA_BYTES - 1000003);
    assert_int_equal(r.restarted, 0);
    assert_string_equal(r.sha256, data_sum);
}

static void test_http_range_resume_and_interruption(void **state)
{
    (void)state;
    server s;
    server_start(&s, 1);
    char url[256], cut[256], dest[4096], part[4200], want[8192];
    ds_fetch_result r;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/redirect/data.bin", s.port);
    snprintf(cut, sizeof cut, "http://127.0.0.1:%d/cut/data.bin", s.port);

    /* A .part holding the head: a 206 after a redirect brings the rest. */
    fresh_dest(dest, "resume-http.bin");
    write_part(dest, data, 777777);
    assert_ok(fetch(url, dest, DATA_BYTES, data_sum + 7, &r));
    assert_is_data(dest);
    assert_int_equal(r.resumed_from, 777777);
    assert_int_equal(r.transferred, DATA_BYTES - 777777);
    assert_int_equal(r.restarted, 0);

    /* A connection closed half-way: the message says so, the .part keeps the bytes... */
    fresh_dest(dest, "cut.bin");
    snprintf(part, sizeof part, "%s.part", dest);
    int rc = fetch(cut, dest, 0, NULL, &r);
    assert_int_equal(rc, -EIO);
    assert_absent(dest);
    uint64_t half = DATA_BYTES / 2;
    snprintf(want, sizeof want, "(%s holds %llu bytes: run the command again to resume)", part,
             (unsigned long long)half);
    if (!strstr(ann_errmsg(rc), "the transfer was interrupted") ||
        !strstr(ann_errmsg(rc), want))
        fail_msg("unexpected message: %s", ann_errmsg(rc));
    /* ...and the next run resumes from them. */
    assert_ok(fetch(url, dest, 0, data_sum + 7, &r));
    assert_is_data(dest);
    assert_int_equal(r.resumed_from, half);
    assert_int_equal(r.transferred, DATA_BYTES - half);

    /* A .part already whole (stopped before its rename): the 416 finishes it. */
    fresh_dest(dest, "whole-part.bin");
    write_part(dest, data, DATA_BYTES);
    assert_ok(fetch(url, dest, 0, NULL, &r));
    assert_is_data(dest);
    assert_no_part(dest);
    assert_int_equal(r.resumed_from, DATA_BYTES);
    assert_int_equal(r.transferred, 0);
    assert_string_equal(r.sha256, data_sum);
    server_stop(&s);
}

static void test_http_server_ignoring_range_restarts(void **state)
{
    (void)state;
    server s;
    server_start(&s, 0);
    char url[256], dest[4096];
    ds_fetch_result r;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/data.bin", s.port);
    fresh_dest(dest, "no-range.bin");
    /* Garbage in the .part: appending the 200's body to it would corrupt the file. */
    unsigned char *junk = malloc(500000);
    memset(junk, 0xAA, 500000);
    write_part(dest, junk, 500000);
    free(junk);
    assert_ok(fetch(url, dest, DATA_BYTES, data_sum + 7, &r));
    assert_is_data(dest);
    assert_no_part(dest);
    assert_int_equal(r.restarted, 1);
    assert_int_equal(r.resumed_from, 0);
    assert_int_equal(r.transferred, DATA_BYTES);
    server_stop(&s);
}

static void test_size_and_sha256_mismatch(void **state)
{
    (void)state;
    char dest[4096], part[4200], want[16384], zeros[65];
    ds_fetch_result r;
    memset(zeros, '0', 64);
    zeros[64] = '\0';
    fresh_dest(dest, "mismatch.bin");
    snprintf(part, sizeof part, "%s.part", dest);

    /* Size: no final file, the .part kept and named for deletion. */
    int rc = fetch(src_url, dest, DATA_BYTES + 1, NULL, &r);
    assert_int_equal(rc, ANN_ECORRUPT);
    snprintf(want, sizeof want,
             "t: %s: %u bytes, expected %u (%s); nothing was kept as %s; delete %s to download "
             "it again",
             part, DATA_BYTES, DATA_BYTES + 1, src_url, dest, part);
    assert_msg(rc, want);
    assert_absent(dest);
    assert_int_equal(access(part, F_OK), 0);
    unlink(part);

    /* sha256: no final file, and the .part (which no resume can repair) deleted. */
    rc = fetch(src_url, dest, DATA_BYTES, zeros, &r);
    assert_int_equal(rc, ANN_ECORRUPT);
    snprintf(want, sizeof want,
             "t: %s: sha256 %s, expected %s (%s); %s was deleted and nothing kept as %s", part,
             data_sum + 7, zeros, src_url, part, dest);
    assert_msg(rc, want);
    assert_absent(dest);
    assert_absent(part);

    /* A final file that no longer matches is reported, not replaced. */
    assert_ok(fetch(src_url, dest, 0, NULL, &r));
    rc = fetch(src_url, dest, 0, zeros, &r);
    assert_int_equal(rc, ANN_ECORRUPT);
    snprintf(want, sizeof want,
             "t: %s: sha256 %s, expected %s (%s); delete it to download it again", dest,
             data_sum + 7, zeros, src_url);
    assert_msg(rc, want);
    assert_is_data(dest);

    /* A malformed expected digest is a parameter error. */
    assert_int_equal(fetch(src_url, dest, 0, "abc", &r), ANN_EPARAM);
}

static void test_no_network(void **state)
{
    (void)state;
    char dest[4096];
    ds_fetch_result r;
    fresh_dest(dest, "offline.hdf5");
    const char *url = "http://nonexistent.invalid/gist-960-euclidean.hdf5";
    int rc = fetch(url, dest, 0, NULL, &r);
    assert_int_equal(rc, -ENETUNREACH);
    assert_msg(rc, "t: cannot download http://nonexistent.invalid/gist-960-euclidean.hdf5: no "
                   "network (could not resolve host 'nonexistent.invalid'); download it "
                   "elsewhere and run `annlab dataset prepare t --from FILE.hdf5`");
    assert_absent(dest);
    assert_no_part(dest); /* zero bytes: nothing to resume */
}

static void test_dead_connection_fails(void **state)
{
    (void)state;
    server s;
    server_start(&s, 1);
    char url[256], dest[4096], part[4200];
    ds_fetch_result r;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/stall/data.bin", s.port);
    fresh_dest(dest, "stalled.bin");
    snprintf(part, sizeof part, "%s.part", dest);
    ds_fetch_spec spec = { .name = "t", .url = url, .dest = dest, .low_speed_s = 1 };
    int rc = ds_fetch_file(&spec, &r);
    assert_int_equal(rc, -EIO); /* the low-speed limit ends it, no hang */
    if (!strstr(ann_errmsg(rc), "the transfer stalled (") || !strstr(ann_errmsg(rc), "holds 1000 bytes"))
        fail_msg("unexpected message: %s", ann_errmsg(rc));
    assert_absent(dest);
    unlink(part);
    server_stop(&s);
}

static void test_http_404_and_missing_file(void **state)
{
    (void)state;
    server s;
    server_start(&s, 1);
    char url[256], dest[4096], want[512];
    ds_fetch_result r;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/missing.bin", s.port);
    fresh_dest(dest, "missing.bin");
    int rc = fetch(url, dest, 0, NULL, &r);
    assert_int_equal(rc, ANN_ENOTFOUND);
    snprintf(want, sizeof want, "t: cannot download %s: HTTP 404", url);
    assert_msg(rc, want);
    assert_absent(dest);
    assert_no_part(dest);
    server_stop(&s);

    rc = fetch("file:///nonexistent/missing.bin", dest, 0, NULL, &r);
    assert_int_equal(rc, ANN_ENOTFOUND);
    if (!strstr(ann_errmsg(rc), "t: cannot download file:///nonexistent/missing.bin: "))
        fail_msg("unexpected message: %s", ann_errmsg(rc));
    assert_no_part(dest);

    rc = fetch("ftp://127.0.0.1/x.bin", dest, 0, NULL, &r);
    assert_int_equal(rc, ANN_EPARAM);
    assert_no_part(dest);
}

static void test_mirror_url(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(ds_fetch_mirror_url("http://a.example/b/c/x.hdf5", "file:///srv/m/", out,
                                         sizeof out),
                     0);
    assert_string_equal(out, "file:///srv/m/x.hdf5");
    assert_int_equal(ds_fetch_mirror_url("https://h/x.parquet", "http://127.0.0.1:8/", out,
                                         sizeof out),
                     0);
    assert_string_equal(out, "http://127.0.0.1:8/x.parquet");
    assert_int_equal(ds_fetch_mirror_url("http://h/x", NULL, out, sizeof out), 0);
    assert_string_equal(out, "http://h/x");
    assert_int_equal(ds_fetch_mirror_url("http://h/x", "", out, sizeof out), 0);
    assert_string_equal(out, "http://h/x");
    assert_int_equal(ds_fetch_mirror_url("http://h/dir/", "file:///m", out, sizeof out),
                     ANN_EPARAM);
    assert_int_equal(ds_fetch_mirror_url("http://h/x", "file:///m", out, 8), ANN_EPARAM);
}

/* ---- annlab dataset fetch / prepare through ANNLAB_MIRROR ---- */

#define NEED_BIN()                                                     \
    do {                                                               \
        if (!hf_bin() || access(hf_bin(), X_OK) != 0) {                \
            print_message("ANNLAB_BIN not set: skipping\n");          \
            skip();                                                    \
        }                                                              \
    } while (0)

static void assert_has(const char *out, const char *want)
{
    if (!out || !strstr(out, want))
        fail_msg("output \"%s\" lacks \"%s\"", out ? out : "(none)", want);
}

static void test_prepare_hdf5_from_a_mirror(void **state)
{
    (void)state;
    NEED_BIN();
    char mirror[4200], h5[4300], reg[4200], root[4200], dl[4200], path[4400], sum[80];
    char mirror_url[4300], want[16384];
    uint64_t bytes = 0;
    snprintf(mirror, sizeof mirror, "%s/mirror", dir);
    snprintf(h5, sizeof h5, "%s/mini.hdf5", mirror);
    snprintf(reg, sizeof reg, "%s/registry.json", dir);
    snprintf(root, sizeof root, "%s/data", dir);
    snprintf(dl, sizeof dl, "%s/downloads", dir);
    snprintf(mirror_url, sizeof mirror_url, "file://%s", mirror);
    assert_int_equal(ds_mkdir_p(mirror), 0);
    float *x = tu_clustered(300, 8, 4, 7, 0), *y = tu_clustered(10, 8, 4, 8, 0);
    assert_int_equal(tu_write_ann_hdf5(h5, x, 300, y, 10, 8, NULL, 5, "euclidean"), 0);
    free(x);
    free(y);
    assert_int_equal(ds_sha256_file(h5, sum, &bytes), 0);

    /* The URLs' hosts do not exist: only the mirror makes these downloads work. */
    json_t *r = json_pack(
        "{s:s, s:i, s:[{s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:{s:[{s:s, s:s, s:I, s:s}]}, "
        "s:{s:s, s:i, s:i}}, {s:s, s:s, s:s, s:s, s:I, s:I, s:{s:[{s:s, s:s, s:I}]}}]}",
        "format", "annlab-dataset-registry", "version", 1, "datasets", "name", "mini-hdf5",
        "description", "test", "kind", "download-hdf5", "metric", "l2", "n", (json_int_t)300,
        "dim", (json_int_t)8, "gt_k", 5, "source", "files", "name", "mini.hdf5", "url",
        "http://nonexistent.invalid/some/folder/mini.hdf5", "bytes", (json_int_t)bytes,
        "sha256", sum + 7, "warmup", "rule", "base-sample", "count", 7, "seed", 7, "name",
        "mini-bad", "description", "test", "kind", "download-hdf5", "metric", "l2", "n",
        (json_int_t)300, "dim", (json_int_t)8, "source", "files", "name", "mini.hdf5", "url",
        "http://nonexistent.invalid/mini.hdf5", "bytes", (json_int_t)(bytes + 10));
    assert_non_null(r);
    assert_int_equal(hf_write_json(reg, r), 0);
    json_decref(r);
    setenv("ANNLAB_REGISTRY", reg, 1);
    setenv("ANNLAB_MIRROR", mirror_url, 1);

    char *out = NULL;
    const char *prep[] = { "dataset", "prepare", "mini-hdf5", "--root", root, "--downloads",
                           dl, NULL };
    int rc = hf_annlab(NULL, &out, prep);
    if (rc != 0)
        fail_msg("prepare mini-hdf5 failed: %s", out);
    assert_has(out, "mini-hdf5: prepared at");
    free(out);
    snprintf(path, sizeof path, "%s/mini-hdf5/mini.hdf5", dl);
    size_t a_len = 0, b_len = 0;
    void *a = tu_read_file(path, &a_len), *b = tu_read_file(h5, &b_len);
    assert_non_null(a);
    assert_int_equal(a_len, b_len);
    assert_memory_equal(a, b, a_len);
    free(a);
    free(b);
    snprintf(path, sizeof path, "%s/mini-hdf5/manifest.json", root);
    json_t *m = json_load_file(path, 0, NULL);
    assert_non_null(m);
    const json_t *d = json_array_get(json_object_get(m, "download"), 0);
    snprintf(want, sizeof want, "%s/mini.hdf5", mirror_url);
    assert_string_equal(json_string_value(json_object_get(d, "url")), want);
    assert_string_equal(json_string_value(json_object_get(d, "sha256")), sum);
    assert_true(json_is_true(json_object_get(d, "checked_sha256")));
    assert_int_equal(json_integer_value(json_object_get(m, "n")), 300);
    assert_int_equal(json_integer_value(json_object_get(m, "n_warmup")), 7);
    json_decref(m);
    snprintf(path, sizeof path, "%s/mini-hdf5", root);
    const char *verify[] = { "dataset", "verify", path, NULL };
    assert_int_equal(hf_annlab(NULL, NULL, verify), 0);

    /* fetch alone: the file is there and checked, not downloaded again. */
    const char *fetch_args[] = { "dataset", "fetch", "mini-hdf5", "--downloads", dl, NULL };
    assert_int_equal(hf_annlab(NULL, &out, fetch_args), 0);
    snprintf(want, sizeof want, "mini-hdf5: %s/mini-hdf5/mini.hdf5: already downloaded, %llu "
                                "bytes, %s",
             dl, (unsigned long long)bytes, sum);
    assert_has(out, want);
    free(out);

    /* The registry's size is wrong: no bundle, no final file, the .part named. */
    const char *bad[] = { "dataset", "prepare", "mini-bad", "--root", root, "--downloads", dl,
                          NULL };
    assert_int_equal(hf_annlab(NULL, &out, bad), 1);
    snprintf(want, sizeof want,
             "mini-bad: %s/mini-bad/mini.hdf5.part: %llu bytes, expected %llu (%s/mini.hdf5); "
             "nothing was kept as %s/mini-bad/mini.hdf5; delete %s/mini-bad/mini.hdf5.part to "
             "download it again",
             dl, (unsigned long long)bytes, (unsigned long long)bytes + 10, mirror_url, dl, dl);
    assert_has(out, want);
    free(out);
    snprintf(path, sizeof path, "%s/mini-bad", root);
    assert_absent(path);
    snprintf(path, sizeof path, "%s/mini-bad/mini.hdf5", dl);
    assert_absent(path);

    /* Usage. */
    const char *no_name[] = { "dataset", "fetch", NULL };
    assert_int_equal(hf_annlab(NULL, NULL, no_name), 2);
    const char *not_dl[] = { "dataset", "fetch", "synth-768-cosine-10k", NULL };
    unsetenv("ANNLAB_REGISTRY");
    assert_int_equal(hf_annlab(NULL, &out, not_dl), 1);
    assert_has(out, "synth-768-cosine-10k: a synth dataset is not downloaded");
    free(out);
    unsetenv("ANNLAB_MIRROR");
}

static void test_prepare_parquet_from_a_mirror(void **state)
{
    (void)state;
    NEED_BIN();
    char nodedir[4096], probe[4200], fix[4200], reg[4200], root[4200], dl[4200], url[4300];
    char cmd[16384], path[4400];
    const char *nd = getenv("ANNLAB_NODE_DIR");
    snprintf(nodedir, sizeof nodedir, "%s", nd && *nd ? nd : "datasets/node");
    snprintf(probe, sizeof probe, "%s/node_modules/hyparquet-writer", nodedir);
    if (system("node --version >/dev/null 2>&1") != 0 || access(probe, R_OK) != 0) {
        print_message("node or hyparquet-writer absent: skipping\n");
        skip();
    }
    snprintf(fix, sizeof fix, "%s/vdb-mirror", dir);
    snprintf(reg, sizeof reg, "%s/registry-pq.json", dir);
    snprintf(root, sizeof root, "%s/data-pq", dir);
    snprintf(dl, sizeof dl, "%s/downloads-pq", dir);
    snprintf(url, sizeof url, "file://%s", fix);
    snprintf(cmd, sizeof cmd,
             "node %s/make_test_parquet.mjs '%s' --n 300 --nq 10 --dim 8 --k 100 --seed 3 "
             ">/dev/null",
             nodedir, fix);
    assert_int_equal(system(cmd), 0);
    json_t *r = json_pack(
        "{s:[{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:{s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]}, "
        "s:{s:s, s:i, s:i}}]}",
        "datasets", "name", "vdb-mini", "description", "t", "kind", "download-parquet",
        "metric", "l2", "n", 300, "dim", 8, "gt_k", 100, "source", "files", "name",
        "shuffle_train.parquet", "url", "https://nonexistent.invalid/shuffle_train.parquet",
        "name", "test.parquet", "url", "https://nonexistent.invalid/test.parquet", "name",
        "neighbors.parquet", "url", "https://nonexistent.invalid/neighbors.parquet", "warmup",
        "rule", "base-sample", "count", 11, "seed", 7);
    assert_non_null(r);
    assert_int_equal(hf_write_json(reg, r), 0);
    json_decref(r);
    setenv("ANNLAB_REGISTRY", reg, 1);
    setenv("ANNLAB_MIRROR", url, 1);
    char *out = NULL;
    const char *prep[] = { "dataset", "prepare", "vdb-mini", "--root", root, "--downloads", dl,
                           NULL };
    int rc = hf_annlab(NULL, &out, prep);
    unsetenv("ANNLAB_REGISTRY");
    unsetenv("ANNLAB_MIRROR");
    if (rc != 0)
        fail_msg("prepare vdb-mini failed: %s", out);
    free(out);
    snprintf(path, sizeof path, "%s/vdb-mini/manifest.json", root);
    json_t *m = json_load_file(path, 0, NULL);
    assert_non_null(m);
    assert_int_equal(json_array_size(json_object_get(m, "download")), 3);
    assert_int_equal(json_integer_value(json_object_get(m, "n_warmup")), 11);
    json_decref(m);
    snprintf(path, sizeof path, "%s/vdb-mini", root);
    const char *verify[] = { "dataset", "verify", path, NULL };
    assert_int_equal(hf_annlab(NULL, NULL, verify), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_url_byte_exact_then_already),
        cmocka_unit_test(test_file_url_resumes_a_part),
        cmocka_unit_test(test_http_range_resume_and_interruption),
        cmocka_unit_test(test_http_server_ignoring_range_restarts),
        cmocka_unit_test(test_size_and_sha256_mismatch),
        cmocka_unit_test(test_no_network),
        cmocka_unit_test(test_dead_connection_fails),
        cmocka_unit_test(test_http_404_and_missing_file),
        cmocka_unit_test(test_mirror_url),
        cmocka_unit_test(test_prepare_hdf5_from_a_mirror),
        cmocka_unit_test(test_prepare_parquet_from_a_mirror),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
