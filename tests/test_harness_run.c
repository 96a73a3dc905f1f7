/*
 * test_harness_run.c: `annlab run` end to end on a small hand-written
 * bundle, through the real binary (ANNLAB_BIN; skipped when unset):
 * the results schema (every required key of every cell), flat's recall of
 * 1, resume (finished cells are not redone; a torn last line is dropped),
 * failed cells (a cell killed by a signal, a corrupt index, a timeout)
 * recorded while the sweep goes on, bad input refused before any work, an
 * index per metric, and an index per on-disk format version (an index of
 * an earlier format is neither reused nor deleted; a build.json recording
 * another format is not reused; format-1 caches keep their directories).
 */
#include "engines/core/binio.h"
#include "engines/core/kv.h"
#include "engines/core/owner.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/engine.h"
#include "engines/flat/layout.h"
#include "engines/ivfpq_record/layout.h"
#include "harness/config.h"
#include "harness/run.h"
#include "tests/support/harness_fixture.h"
#include "tests/support/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fx {
    char *dir;       /* working directory of the runs: results/, index/ */
    char bundle[4200];
} fx;

static int setup(void **state)
{
    static fx f;
    if (!hf_bin()) {
        print_message("ANNLAB_BIN unset: skipping the CLI tests\n");
        *state = NULL;
        return 0;
    }
    f.dir = tu_tmpdir("harness-run");
    snprintf(f.bundle, sizeof f.bundle, "%s/bundle", f.dir);
    if (hf_bundle(f.bundle, 3000, 16, 60, 100, 20, 7) != 0)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f)
        tu_rmdir(f->dir);
    return 0;
}

static json_t *config(const fx *f, const char *name)
{
    json_t *c = json_pack("{s:s, s:{s:s}, s:i, s:[{s:s}], s:[i, i], s:[s, s], s:b, s:i, s:f}", "name",
                          name, "dataset", "path", f->bundle, "k", 10, "engines", "engine", "flat",
                          "threads", 1, 2, "modes", "cold", "warm", "drop_caches", 0,
                          "warmup_queries", 20, "qps_min_seconds", 0.01);
    return c;
}

static int run(const fx *f, const char *cfg_path, const char *out, int resume, char **log)
{
    const char *args[8] = { "run", cfg_path, "--out", out, resume ? "--resume" : NULL, NULL };
    int rc = hf_annlab(f->dir, log, args);
    return rc;
}

static json_t *load_cells(const char *out_dir)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/cells.jsonl", out_dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    json_t *cells = json_array();
    char line[65536];
    while (fgets(line, sizeof line, fp)) {
        json_error_t e;
        json_t *c = json_loads(line, 0, &e);
        assert_non_null(c);
        json_array_append_new(cells, c);
    }
    fclose(fp);
    return cells;
}

/* Runs cfg_path into out, which must succeed (its log is printed if not),
 * and returns the cells. */
static json_t *run_ok(const fx *f, const char *cfg_path, const char *out)
{
    char *log = NULL;
    int rc = run(f, cfg_path, out, 0, &log);
    if (rc)
        print_message("%s\n", log);
    assert_int_equal(rc, 0);
    free(log);
    return load_cells(out);
}

/* Writes cfg (and drops it) to cfg_path, then run_ok. */
static json_t *run_cells(const fx *f, json_t *cfg, const char *cfg_path, const char *out)
{
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    return run_ok(f, cfg_path, out);
}

static const json_t *cell_by(const json_t *cells, const char *mode, int threads)
{
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c)
        if (!strcmp(json_string_value(json_object_get(c, "mode")), mode) &&
            json_integer_value(json_object_get(c, "threads")) == threads)
            return c;
    return NULL;
}

static void test_schema_and_flat_recall(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char cfg_path[4400], out[4400];
    snprintf(cfg_path, sizeof cfg_path, "%s/schema.json", f->dir);
    snprintf(out, sizeof out, "%s/out-schema", f->dir);
    json_t *cfg = config(f, "schema");
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    char *log = NULL;
    int rc = run(f, cfg_path, out, 0, &log);
    if (rc != 0)
        print_message("%s\n", log);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(log, "## (a) Engines x effort"));
    json_t *cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 4);
    static const char *const required[] = {
        "engine", "build", "open", "search", "mode", "threads", "memory_cap_bytes", "status",
        "reason", "k", "recall", "recall_plain", "recall_p5", "latency_us", "qps", "engine_stats",
        "device", "memory", "cache_eviction", "index", "open_report", "neighbors_file",
    };
    static const char *const lat_keys[] = { "p50", "p95", "p99", "p999", "mean", "max" };
    static const char *const stat_keys[] = { "reads", "bytes_read", "hops", "full_dists",
                                             "code_dists", "cache_hits", "io_wait_ns", "cpu_ns",
                                             "user_ns", "sys_ns" };
    static const char *const dev_keys[] = { "reads_per_query", "bytes_per_query", "source" };
    static const char *const mem_keys[] = { "peak_rss_bytes", "peak_anon_bytes", "peak_file_bytes",
                                            "cgroup_peak_bytes" };
    static const char *const ix_keys[] = { "bytes_on_disk", "build_seconds", "build_cpu_seconds",
                                           "build_peak_rss_bytes" };
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        for (size_t j = 0; j < sizeof required / sizeof *required; j++)
            if (!json_object_get(c, required[j]))
                fail_msg("cell %zu lacks \"%s\"", i, required[j]);
        assert_string_equal(json_string_value(json_object_get(c, "status")), "ok");
        assert_true(json_is_null(json_object_get(c, "reason")));
        assert_true(json_is_null(json_object_get(c, "memory_cap_bytes")));
        assert_int_equal(json_integer_value(json_object_get(c, "k")), 10);
        assert_true(json_real_value(json_object_get(c, "recall")) == 1.0);
        assert_true(json_real_value(json_object_get(c, "recall_plain")) == 1.0);
        assert_true(json_real_value(json_object_get(c, "recall_p5")) == 1.0);
        assert_true(json_number_value(json_object_get(c, "qps")) > 0);
        for (size_t j = 0; j < 6; j++)
            assert_true(json_is_number(json_object_get(json_object_get(c, "latency_us"), lat_keys[j])));
        const json_t *es = json_object_get(c, "engine_stats");
        for (size_t j = 0; j < 10; j++)
            assert_true(json_is_number(json_object_get(es, stat_keys[j])));
        /* the harness's own CPU split: a scan of 3000 vectors costs CPU */
        assert_true(json_number_value(json_object_get(es, "user_ns")) +
                        json_number_value(json_object_get(es, "sys_ns")) > 0);
        /* flat times no stages: every stage null, none invented */
        const json_t *stages = json_object_get(es, "stages_ns");
        assert_int_equal(json_object_size(stages), 7);
        const char *sk;
        const json_t *sv;
        json_object_foreach((json_t *)stages, sk, sv)
            assert_true(json_is_null(sv));
        /* flat reads its mapped vector file through the page cache */
        const json_t *orep = json_object_get(c, "open_report");
        assert_string_equal(json_string_value(json_object_get(orep, "io")), "mmap");
        assert_true(json_is_false(json_object_get(orep, "o_direct")));
        assert_int_equal(json_integer_value(json_object_get(orep, "cache_bytes")), 0);
        for (size_t j = 0; j < 3; j++)
            assert_non_null(json_object_get(json_object_get(c, "device"), dev_keys[j]));
        for (size_t j = 0; j < 4; j++)
            assert_non_null(json_object_get(json_object_get(c, "memory"), mem_keys[j]));
        for (size_t j = 0; j < 4; j++)
            assert_true(json_is_number(json_object_get(json_object_get(c, "index"), ix_keys[j])));
        /* flat builds use no artifact cache */
        assert_int_equal(json_array_size(json_object_get(json_object_get(c, "index"), "reused")), 0);
        assert_true(json_is_array(json_object_get(json_object_get(c, "index"), "reused")));
        /* the machine was busy at least while the cell's own process ran
         * (one clock tick of slack per second of /proc/stat rounding) */
        const json_t *mc = json_object_get(c, "machine_cpu");
        double cell_cpu = json_number_value(json_object_get(mc, "cell_cpu_s"));
        assert_true(cell_cpu > 0);
        assert_true(json_number_value(json_object_get(mc, "busy_s")) >= cell_cpu - 0.05);
        assert_true(json_is_number(json_object_get(mc, "others_cores")));
        assert_true(json_number_value(json_object_get(mc, "others_cores")) >= 0);
        /* interrupt and hypervisor time apart from other processes' */
        assert_true(json_number_value(json_object_get(mc, "irq_cores")) >= 0);
        assert_true(json_number_value(json_object_get(mc, "steal_cores")) >= 0);
        /* pin_threads defaults to false: nothing pinned, and the cell says so */
        const json_t *qd = json_object_get(c, "qps_detail");
        assert_true(json_is_false(json_object_get(qd, "latency_thread_pinned")));
        assert_int_equal(json_integer_value(json_object_get(qd, "threads_pinned")), 0);
        /* flat scans every vector once per query */
        assert_true(json_number_value(json_object_get(json_object_get(c, "engine_stats"), "full_dists")) == 3000);
        /* the raw latencies: header + one line per query */
        char lat[4600];
        snprintf(lat, sizeof lat, "%s/%s", out, json_string_value(json_object_get(c, "latency_file")));
        size_t len = 0;
        char *text = tu_read_file(lat, &len);
        assert_non_null(text);
        size_t lines = 0;
        for (size_t j = 0; j < len; j++)
            lines += text[j] == '\n';
        assert_int_equal(lines, 1 + 60);
        free(text);
        /* the ids each query returned: 60 queries x k 10, what exports are made of */
        snprintf(lat, sizeof lat, "%s/%s", out, json_string_value(json_object_get(c, "neighbors_file")));
        ann_gt nb;
        assert_int_equal(ann_gt_load(lat, 3000, &nb), 0);
        assert_int_equal(nb.nq, 60);
        assert_int_equal(nb.k, 10);
        ann_gt_free(&nb);
    }
    /* a real run exports: each finished cell a row of big-ann's CSV */
    {
        const char *args[] = { "export", out, "--format", "big-ann", NULL };
        char *elog = NULL;
        assert_int_equal(hf_annlab(f->dir, &elog, args), 0);
        assert_non_null(strstr(elog, "/export/big-ann/schema.csv"));
        free(elog);
    }
    const json_t *cold = cell_by(cells, "cold", 1);
    assert_non_null(cold);
    const json_t *ev = json_object_get(cold, "cache_eviction");
    assert_string_equal(json_string_value(json_object_get(ev, "mode")), "cold");
    assert_true(json_is_false(json_object_get(ev, "drop_caches")));
    assert_string_equal(json_string_value(json_object_get(ev, "drop_caches_reason")), "disabled");
    /* nothing of the index resident when the measured pass starts */
    assert_int_equal(json_integer_value(json_object_get(ev, "resident_at_measure_start_bytes")), 0);
    const json_t *warm = cell_by(cells, "warm", 1);
    const json_t *wev = json_object_get(warm, "cache_eviction");
    assert_string_equal(json_string_value(json_object_get(wev, "mode")), "warm");
    assert_true(json_number_value(json_object_get(wev, "resident_fraction")) == 1.0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(warm, "warm"), "warmup_queries")), 20);
    /* run-level files */
    static const char *const files[] = { "config.json", "machine.json", "tables.md", "recall_qps.png",
                                         "recall_qps.svg", "recall_p99.png" };
    for (size_t j = 0; j < sizeof files / sizeof *files; j++) {
        char p[4600];
        snprintf(p, sizeof p, "%s/%s", out, files[j]);
        if (access(p, F_OK) != 0)
            fail_msg("%s missing", p);
    }
    char mp[4600];
    snprintf(mp, sizeof mp, "%s/machine.json", out);
    json_t *m = json_load_file(mp, 0, NULL);
    assert_non_null(json_object_get(m, "simd"));
    assert_non_null(json_object_get(m, "kernel"));
    assert_non_null(json_object_get(m, "topology"));
    /* DAMON's reclaim schemes as the kernel lists them (null without DAMON) */
    const json_t *pr = json_object_get(m, "proactive_reclaim");
    assert_non_null(pr);
    if (access("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds", R_OK) == 0)
        assert_true(json_is_array(json_object_get(pr, "kdamonds")));
    else
        assert_true(json_is_null(pr));
    json_decref(m);
    json_decref(cells);
    json_decref(cfg);
    free(log);
}

static void test_resume_skips_finished(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char cfg_path[4400], out[4400], jl[4600];
    snprintf(cfg_path, sizeof cfg_path, "%s/resume.json", f->dir);
    snprintf(out, sizeof out, "%s/out-resume", f->dir);
    snprintf(jl, sizeof jl, "%s/cells.jsonl", out);
    json_t *cfg = config(f, "resume");
    json_object_set_new(cfg, "pin_threads", json_true());
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    char *log = NULL;
    assert_int_equal(run(f, cfg_path, out, 0, &log), 0);
    free(log);
    json_t *first = load_cells(out);
    assert_int_equal(json_array_size(first), 4);
    /* pin_threads: the latency thread and every QPS thread pinned (hwloc binds
     * threads wherever the harness runs: root or not, any CPU count) */
    for (size_t i = 0; i < 4; i++) {
        const json_t *c = json_array_get(first, i);
        const json_t *qd = json_object_get(c, "qps_detail");
        assert_true(json_is_true(json_object_get(qd, "latency_thread_pinned")));
        assert_int_equal(json_integer_value(json_object_get(qd, "threads_pinned")),
                         json_integer_value(json_object_get(c, "threads")));
    }

    /* the same output without --resume is refused */
    assert_int_equal(run(f, cfg_path, out, 0, &log), 2);
    assert_non_null(strstr(log, "already holds this run; pass --resume to continue it"));
    free(log);

    /* resume: nothing redone */
    assert_int_equal(run(f, cfg_path, out, 1, &log), 0);
    assert_non_null(strstr(log, "0 ok, 0 error, 0 timeout, 0 oom, 0 skipped, 4 already recorded"));
    free(log);
    json_t *second = load_cells(out);
    assert_true(json_equal(first, second));

    /* drop the last record and leave a torn line, as a kill mid-write would */
    size_t len = 0;
    char *text = tu_read_file(jl, &len);
    char *last = text + len - 1;
    while (last > text && last[-1] != '\n')
        last--;
    size_t keep = (size_t)(last - text);
    memcpy(text + keep, "{\"id\": \"torn", 12);
    assert_int_equal(tu_write_file(jl, text, keep + 12), 0);
    free(text);
    assert_int_equal(run(f, cfg_path, out, 1, &log), 0);
    assert_non_null(strstr(log, "1 ok, 0 error, 0 timeout, 0 oom, 0 skipped, 3 already recorded"));
    free(log);
    json_t *third = load_cells(out);
    assert_int_equal(json_array_size(third), 4);
    for (size_t i = 0; i < 3; i++)
        assert_true(json_equal(json_array_get(first, i), json_array_get(third, i)));
    assert_string_equal(json_string_value(json_object_get(json_array_get(third, 3), "id")),
                        json_string_value(json_object_get(json_array_get(first, 3), "id")));

    /* another config into the same directory is refused */
    json_object_set_new(cfg, "k", json_integer(5));
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    assert_int_equal(run(f, cfg_path, out, 1, &log), 2);
    assert_non_null(strstr(log, "holds a different run (its config.json differs from"));
    free(log);
    json_decref(first);
    json_decref(second);
    json_decref(third);
    json_decref(cfg);
}

static void test_failed_cells_do_not_stop_the_sweep(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    /* a wrapper that crashes every warm cell and runs the others */
    char wrapper[4400], cfg_path[4400], out[4400];
    snprintf(wrapper, sizeof wrapper, "%s/crash-warm.sh", f->dir);
    const char *script = "#!/bin/sh\n"
                         "if grep -q '\"mode\": \"warm\"' \"$3\"; then\n"
                         "  echo 'store: rocksdb write: IO error: No space left on device' >&2\n"
                         "  kill -SEGV $$\n"
                         "fi\n"
                         "exec \"$@\"\n";
    assert_int_equal(tu_write_file(wrapper, script, strlen(script)), 0);
    chmod(wrapper, 0755);
    snprintf(cfg_path, sizeof cfg_path, "%s/crash.json", f->dir);
    snprintf(out, sizeof out, "%s/out-crash", f->dir);
    json_t *cfg = config(f, "crash");
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    setenv("ANNLAB_CELL_WRAPPER", wrapper, 1);
    char *log = NULL;
    int rc = run(f, cfg_path, out, 0, &log);
    unsetenv("ANNLAB_CELL_WRAPPER");
    assert_int_equal(rc, 0);
    free(log);
    json_t *cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 4);
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        const char *mode = json_string_value(json_object_get(c, "mode"));
        if (!strcmp(mode, "warm")) {
            assert_string_equal(json_string_value(json_object_get(c, "status")), "error");
            /* what it printed before it died is kept (a full disk that a
             * store's background thread turned into an abort, say) */
            assert_string_equal(json_string_value(json_object_get(c, "reason")),
                                "cell process killed by SIGSEGV; it last printed: store: rocksdb "
                                "write: IO error: No space left on device");
            assert_true(json_is_null(json_object_get(c, "recall")));
        } else {
            assert_string_equal(json_string_value(json_object_get(c, "status")), "ok");
        }
    }
    json_decref(cells);

    /* a corrupt index: every cell fails at open, each recorded with the file at fault;
     * its own index root, so the other tests keep a good index */
    json_object_set_new(cfg, "index_root", json_string("index-corrupt"));
    json_object_set_new(cfg, "name", json_string("corrupt"));
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    snprintf(out, sizeof out, "%s/out-corrupt-1", f->dir);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 0);
    free(log);
    char fj[4600], cmd[4600], hash[64] = "";
    snprintf(cmd, sizeof cmd, "ls %s/index-corrupt/flat", f->dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(fgets(hash, sizeof hash, p));
    pclose(p);
    hash[strcspn(hash, "\n")] = '\0';
    snprintf(fj, sizeof fj, "%s/index-corrupt/flat/%s/flat.json", f->dir, hash);
    json_t *b = json_pack("{s:s, s:i, s:s, s:i, s:i}", "format", "annlab-flat", "version", 99,
                          "metric", "l2", "n", 3000, "dim", 16);
    assert_int_equal(hf_write_json(fj, b), 0);
    json_decref(b);
    snprintf(out, sizeof out, "%s/out-corrupt-2", f->dir);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 0);
    free(log);
    cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 4);
    /* the run checks the index against build.json's digests before a cell opens it */
    char want[4800];
    snprintf(fj, sizeof fj, "index-corrupt/flat/%s/flat.json: ", hash);
    json_array_foreach(cells, i, c) {
        assert_string_equal(json_string_value(json_object_get(c, "status")), "error");
        const char *reason = json_string_value(json_object_get(c, "reason"));
        if (!strstr(reason, fj) || !strstr(reason, "build.json") || !strstr(reason, "to rebuild it"))
            fail_msg("reason \"%s\" does not name %s against build.json", reason, fj);
    }
    json_decref(cells);
    /* an index without digests (built before they were recorded): the engine's own check */
    char bjp[4600];
    snprintf(bjp, sizeof bjp, "%s/index-corrupt/flat/%s/build.json", f->dir, hash);
    json_t *bj = json_load_file(bjp, 0, NULL);
    assert_non_null(bj);
    json_object_del(bj, "files");
    assert_int_equal(hf_write_json(bjp, bj), 0);
    json_decref(bj);
    snprintf(out, sizeof out, "%s/out-corrupt-3", f->dir);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 0);
    free(log);
    cells = load_cells(out);
    snprintf(fj, sizeof fj, "index-corrupt/flat/%s/flat.json", hash);
    snprintf(want, sizeof want, "%s: version 99, this build reads %d", fj, FLAT_VERSION);
    json_array_foreach(cells, i, c) {
        assert_string_equal(json_string_value(json_object_get(c, "status")), "error");
        const char *reason = json_string_value(json_object_get(c, "reason"));
        if (!strstr(reason, want))
            fail_msg("reason \"%s\" does not name %s", reason, want);
    }
    json_decref(cells);
    json_decref(cfg);
}

static void test_timeout_recorded(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char wrapper[4400], cfg_path[4400], out[4400];
    snprintf(wrapper, sizeof wrapper, "%s/hang-cold.sh", f->dir);
    const char *script = "#!/bin/sh\n"
                         "if grep -q '\"mode\": \"cold\"' \"$3\"; then exec sleep 60; fi\n"
                         "exec \"$@\"\n";
    assert_int_equal(tu_write_file(wrapper, script, strlen(script)), 0);
    chmod(wrapper, 0755);
    snprintf(cfg_path, sizeof cfg_path, "%s/hang.json", f->dir);
    snprintf(out, sizeof out, "%s/out-hang", f->dir);
    json_t *cfg = config(f, "hang");
    json_object_set_new(cfg, "threads", json_pack("[i]", 1));
    json_object_set_new(cfg, "timeout_s", json_real(0.5));
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    setenv("ANNLAB_CELL_WRAPPER", wrapper, 1);
    char *log = NULL;
    int rc = run(f, cfg_path, out, 0, &log);
    unsetenv("ANNLAB_CELL_WRAPPER");
    assert_int_equal(rc, 0);
    free(log);
    json_t *cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 2);
    const json_t *cold = cell_by(cells, "cold", 1), *warm = cell_by(cells, "warm", 1);
    assert_string_equal(json_string_value(json_object_get(cold, "status")), "timeout");
    assert_string_equal(json_string_value(json_object_get(cold, "reason")), "exceeded timeout_s=0.5");
    assert_string_equal(json_string_value(json_object_get(warm, "status")), "ok");
    json_decref(cells);
    json_decref(cfg);
}

static void test_interrupt_leaves_resumable_run(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    /* warm cells hang, so SIGINT arrives while the second cell runs */
    char wrapper[4400], cfg_path[4400], out[4400], jl[4600], logp[4400];
    snprintf(wrapper, sizeof wrapper, "%s/hang-warm.sh", f->dir);
    const char *script = "#!/bin/sh\n"
                         "if grep -q '\"mode\": \"warm\"' \"$3\"; then exec sleep 60; fi\n"
                         "exec \"$@\"\n";
    assert_int_equal(tu_write_file(wrapper, script, strlen(script)), 0);
    chmod(wrapper, 0755);
    snprintf(cfg_path, sizeof cfg_path, "%s/intr.json", f->dir);
    snprintf(out, sizeof out, "%s/out-intr", f->dir);
    snprintf(jl, sizeof jl, "%s/cells.jsonl", out);
    snprintf(logp, sizeof logp, "%s/intr.log", f->dir);
    json_t *cfg = config(f, "intr");
    json_object_set_new(cfg, "threads", json_pack("[i]", 1));
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(f->dir) != 0)
            _exit(126);
        setenv("ANNLAB_CELL_WRAPPER", wrapper, 1);
        FILE *lf = freopen(logp, "w", stderr);
        (void)lf;
        execl(hf_bin(), hf_bin(), "run", cfg_path, "--out", out, (char *)NULL);
        _exit(127);
    }
    /* wait for the cold cell's line, then Ctrl-C */
    size_t len = 0;
    for (int i = 0; i < 3000; i++) {
        char *text = tu_read_file(jl, &len);
        free(text);
        if (text && len > 0)
            break;
        usleep(10000);
    }
    assert_true(len > 0);
    usleep(200000);
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 130);
    char *log = tu_read_file(logp, &len);
    assert_non_null(strstr(log, "interrupted; 1 cells recorded.  Resume with:"));
    free(log);
    json_t *cells = load_cells(out); /* every line whole */
    assert_int_equal(json_array_size(cells), 1);
    json_decref(cells);
    /* resume without the hanging wrapper finishes the rest */
    assert_int_equal(run(f, cfg_path, out, 1, &log), 0);
    assert_non_null(strstr(log, "1 ok, 0 error, 0 timeout, 0 oom, 0 skipped, 1 already recorded"));
    free(log);
    cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 2);
    json_decref(cells);
    json_decref(cfg);
}

static void test_bad_config_refused_before_work(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char cfg_path[4400], out[4400];
    snprintf(cfg_path, sizeof cfg_path, "%s/bad.json", f->dir);
    snprintf(out, sizeof out, "%s/out-bad", f->dir);
    const char *text = "{\"name\": \"bad\", \"dataset\": {\"path\": \"/nonexistent/ds\"}, \"k\": 0,"
                       " \"engines\": [{\"engine\": \"flat\", \"search\": {\"L\": 10}}, {\"engine\": \"hnsw-nope\"}],"
                       " \"modes\": [\"tepid\"]}";
    assert_int_equal(tu_write_file(cfg_path, text, strlen(text)), 0);
    char *log = NULL;
    assert_int_equal(run(f, cfg_path, out, 0, &log), 2);
    assert_non_null(strstr(log, "bad.json: k: 0 is out of range [1, 10000]"));
    assert_non_null(strstr(log, "bad.json: engines[0].search.L: unknown parameter (known: none)"));
    assert_non_null(strstr(log, "bad.json: engines[1].engine: unknown engine \"hnsw-nope\""));
    assert_non_null(strstr(log, "bad.json: modes[0]: expected \"cold\" or \"warm\""));
    assert_non_null(strstr(log, "bad.json: dataset.path: /nonexistent/ds: not a prepared dataset (no manifest.json)"));
    assert_non_null(strstr(log, "5 problems; nothing was run"));
    free(log);
    assert_int_not_equal(access(out, F_OK), 0); /* nothing written */

    /* malformed JSON names line and column */
    assert_int_equal(tu_write_file(cfg_path, "{\"name\": }", 10), 0);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 2);
    assert_non_null(strstr(log, "bad.json: line 1 column"));
    free(log);

    /* issue 14: a path the run writes below that cannot fit PATH_MAX is
     * refused before anything runs (it used to be cut short silently) */
    char *longp = malloc(PATH_MAX);
    assert_non_null(longp);
    memset(longp, 'x', PATH_MAX - 100);
    for (size_t i = 50; i < PATH_MAX - 100; i += 50)
        longp[i] = '/';
    longp[PATH_MAX - 100] = '\0';
    json_t *cfg = json_pack("{s:s, s:{s:s}, s:i, s:[{s:s}], s:s}", "name", "long", "dataset",
                            "path", f->bundle, "k", 10, "engines", "engine", "flat", "index_root",
                            longp);
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 2);
    char want[256];
    snprintf(want, sizeof want, "bad.json: index_root: a path of %d bytes is too long", PATH_MAX - 100);
    if (!strstr(log, want))
        fail_msg("log \"%.2000s\" lacks \"%s\"", log, want);
    assert_non_null(strstr(log, "1 problem; nothing was run"));
    free(log);
    assert_int_not_equal(access(out, F_OK), 0); /* nothing written */
    free(longp);
}

/*
 * Two bundles of the same base.fbin (one checksum) under different metrics
 * get their own index: the build key includes the metric.  Before it did,
 * a run on vectors imported as l2 silently reused the index built for the
 * same vectors as cosine, with the cosine PQ codebook and distances.
 */
static void test_index_per_metric(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char ip_bundle[4400], cmd[9200], cfg_path[4400], out[2][4400];
    snprintf(ip_bundle, sizeof ip_bundle, "%s/bundle-ip", f->dir);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", f->bundle, ip_bundle);
    assert_int_equal(system(cmd), 0);
    char mpath[4500];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", ip_bundle);
    json_t *man = json_load_file(mpath, 0, NULL);
    assert_non_null(man);
    assert_string_equal(json_string_value(json_object_get(man, "metric")), "l2");
    json_object_set_new(man, "metric", json_string("ip"));
    json_object_del(man, "manifest_sha256"); /* edited by hand: unsealed, as an older bundle */
    assert_int_equal(hf_write_json(mpath, man), 0);
    json_decref(man);
    const char *dirs[2];
    json_t *cells[2];
    for (int i = 0; i < 2; i++) {
        json_t *cfg = json_pack("{s:s, s:{s:s}, s:i, s:[{s:s}], s:[i], s:[s], s:b, s:i, s:s}",
                                "name", "metric", "dataset", "path", i ? ip_bundle : f->bundle,
                                "k", 10, "engines", "engine", "flat", "threads", 1, "modes",
                                "warm", "drop_caches", 0, "queries", 5, "index_root",
                                "index-metric");
        snprintf(cfg_path, sizeof cfg_path, "%s/metric-%d.json", f->dir, i);
        snprintf(out[i], sizeof out[i], "%s/out-metric-%d", f->dir, i);
        cells[i] = run_cells(f, cfg, cfg_path, out[i]);
        assert_int_equal(json_array_size(cells[i]), 1);
        const json_t *ix = json_object_get(json_array_get(cells[i], 0), "index");
        dirs[i] = json_string_value(json_object_get(ix, "dir"));
        assert_non_null(dirs[i]);
        /* each run built its own index */
        assert_true(json_is_false(json_object_get(ix, "cached_at_run")));
    }
    assert_string_not_equal(dirs[0], dirs[1]);
    json_decref(cells[0]);
    json_decref(cells[1]);
}

/* Reseal the metadata record of the ivfpq-record index in dir (its LMDB
 * store) at another format version: the frame is otherwise the same. */
static void ivfpq_reseal(const char *dir, uint32_t version)
{
    char store[4400];
    snprintf(store, sizeof store, "%s/lmdb", dir);
    kv_options o = { .backend = KV_BACKEND_LMDB };
    kv_store *kv = NULL;
    kv_reader *rd = NULL;
    uint8_t key[KV_KEY_U32_BYTES], meta[IVFPQ_META_BYTES];
    kv_key_u32(key, IVFPQ_TABLE_META, 0);
    assert_int_equal(kv_open(store, &o, &kv), 0);
    assert_int_equal(kv_reader_create(kv, &rd), 0);
    assert_int_equal(kv_reader_begin(rd), 0);
    kv_val v;
    assert_int_equal(kv_get(rd, key, sizeof key, &v), 0);
    assert_int_equal(v.len, IVFPQ_META_BYTES);
    memcpy(meta, v.data, sizeof meta);
    kv_val_release(&v);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    ann_frame_seal(meta, sizeof meta, IVFPQ_MAGIC, version);
    assert_int_equal(kv_put(kv, key, sizeof key, meta, sizeof meta), 0);
    assert_int_equal(kv_close(kv), 0);
}

/* Set (value non-NULL) or remove "engine_format" in dir/build.json. */
static void set_engine_format(const char *dir, json_t *value)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/build.json", dir);
    json_t *info = json_load_file(path, 0, NULL);
    assert_non_null(info);
    if (value)
        json_object_set_new(info, "engine_format", value);
    else
        json_object_del(info, "engine_format");
    assert_int_equal(hf_write_json(path, info), 0);
    json_decref(info);
}

/* dir/build.json's bytes as a string (caller frees). */
static char *read_build_json(const char *dir)
{
    char path[4400];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/build.json", dir);
    char *bytes = tu_read_file(path, &len);
    assert_non_null(bytes);
    char *text = malloc(len + 1);
    memcpy(text, bytes, len);
    text[len] = '\0';
    free(bytes);
    return text;
}

/* The cell of engine in cells; the run's index directory of it, under f->dir. */
static const json_t *cell_of(const json_t *cells, const char *engine)
{
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c)
        if (!strcmp(json_string_value(json_object_get(c, "engine")), engine))
            return c;
    fail_msg("no %s cell", engine);
    return NULL;
}

static void cell_index_dir(const fx *f, const json_t *cell, char *out, size_t cap)
{
    const char *dir = json_string_value(json_object_get(json_object_get(cell, "index"), "dir"));
    assert_non_null(dir);
    snprintf(out, cap, "%s/%s", f->dir, dir);
}

static json_t *format_run(const fx *f, const char *cfg_path, int i)
{
    char out[4400];
    snprintf(out, sizeof out, "%s/out-format-%d", f->dir, i);
    json_t *cells = run_ok(f, cfg_path, out);
    assert_int_equal(json_array_size(cells), 2);
    return cells;
}

/*
 * The build cache and the engines' on-disk format versions.  ivfpq-record
 * (format IVFPQ_VERSION >= 2) builds into <hash>-f<N>, an engine of format
 * 1 (a reference engine; flat is at 2 since its block checksums) into
 * <hash>, and build.json records engine_format.  Then the index root
 * is put in the state the harness left it in before the format entered the
 * directory name, just after ivfpq-record raised its format: the same index
 * in <hash>, of the previous format (which the engine refuses: "rebuild the
 * index"), its build.json without engine_format.  Before the fix the next
 * run reused it and every ivfpq-record cell failed; now it builds afresh
 * into <hash>-f<N> and leaves <hash> as it was, while the format-1
 * engine's cache (no engine_format either) is reused.  Last, a <hash>-f<N>
 * directory whose build.json records another format is neither reused nor
 * rebuilt: its cells fail saying so, and it is left as it was.
 */
static void test_index_per_format(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    /* an engine still at format 1 (flat moved to 2 with its block checksums) */
    const char *one = NULL;
    for (size_t i = 0; ann_engine_at(i) && !one; i++)
        if (ann_engine_at(i)->format_version <= 1)
            one = ann_engine_at(i)->name;
    if (!one) {
        print_message("no engine of format 1 compiled in: skipping\n");
        skip();
    }
    assert_true(IVFPQ_VERSION >= 2);
    assert_int_equal(ann_engine_find("ivfpq-record")->format_version, IVFPQ_VERSION);
    char cfg_path[4400];
    snprintf(cfg_path, sizeof cfg_path, "%s/format.json", f->dir);
    json_t *cfg = json_pack(
        "{s:s, s:{s:s}, s:i, s:[{s:s, s:{s:i, s:i, s:s}, s:{s:s}, s:{s:i, s:i}}, {s:s}], s:[i],"
        " s:[s], s:b, s:i, s:s}",
        "name", "format", "dataset", "path", f->bundle, "k", 10, "engines", "engine",
        "ivfpq-record", "build", "nlist", 8, "pq_bytes", 4, "kv", "lmdb", "open", "kv", "lmdb",
        "search", "nprobe", 8, "rerank", 10, "engine", one, "threads", 1, "modes", "warm",
        "drop_caches", 0, "queries", 5, "index_root", "index-format");
    assert_non_null(cfg);
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);

    /* 1: fresh builds, named and recorded by format */
    json_t *cells = format_run(f, cfg_path, 1);
    size_t i;
    const json_t *c;
    json_array_foreach(cells, i, c)
        if (strcmp(json_string_value(json_object_get(c, "status")), "ok") != 0)
            fail_msg("%s cell: %s", json_string_value(json_object_get(c, "engine")),
                     json_string_value(json_object_get(c, "reason")));
    char ivf[4400], flat[4400], suffix[32];
    cell_index_dir(f, cell_of(cells, "ivfpq-record"), ivf, sizeof ivf);
    cell_index_dir(f, cell_of(cells, one), flat, sizeof flat);
    json_decref(cells);
    snprintf(suffix, sizeof suffix, "-f%u", IVFPQ_VERSION);
    size_t ln = strlen(ivf), ls = strlen(suffix);
    if (ln < ls || strcmp(ivf + ln - ls, suffix) != 0)
        fail_msg("ivfpq-record index %s: not named by its format (%s)", ivf, suffix);
    assert_null(strstr(strrchr(flat, '/'), "-f")); /* format 1: the name it always had */
    char bj[4500];
    snprintf(bj, sizeof bj, "%s/build.json", ivf);
    json_t *info = json_load_file(bj, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(info, "engine_format")), IVFPQ_VERSION);
    json_decref(info);
    snprintf(bj, sizeof bj, "%s/build.json", flat);
    info = json_load_file(bj, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(info, "engine_format")), 1);
    json_decref(info);

    /* 2: the index root as the harness left it before: the previous
     * format's index where the key alone put it, build.json without
     * engine_format (flat's too) */
    char old[4400];
    snprintf(old, sizeof old, "%s", ivf);
    if (strlen(old) > ls && !strcmp(old + strlen(old) - ls, suffix))
        old[strlen(old) - ls] = '\0';
    if (strcmp(old, ivf) != 0)
        assert_int_equal(rename(ivf, old), 0);
    ivfpq_reseal(old, IVFPQ_VERSION - 1);
    set_engine_format(old, NULL);
    set_engine_format(flat, NULL);
    json_t *op = json_pack("{s:s}", "kv", "lmdb");
    ann_engine *e = NULL;
    int rc = ann_engine_open(ann_engine_find("ivfpq-record"), old, op, &e, NULL);
    json_decref(op);
    if (rc != ANN_EVERSION) /* what every cell on it would meet */
        fail_msg("open %s: %s", old, ann_errmsg(rc));
    assert_non_null(strstr(ann_errmsg(rc), "rebuild the index"));
    char *old_json = read_build_json(old);

    /* 3: the run builds the current format afresh and leaves the old one */
    cells = format_run(f, cfg_path, 2);
    c = cell_of(cells, "ivfpq-record");
    if (strcmp(json_string_value(json_object_get(c, "status")), "ok") != 0)
        fail_msg("ivfpq-record cell: %s: %s", json_string_value(json_object_get(c, "status")),
                 json_string_value(json_object_get(c, "reason")));
    char again[4400];
    cell_index_dir(f, c, again, sizeof again);
    assert_string_equal(again, ivf);
    assert_true(json_is_false(json_object_get(json_object_get(c, "index"), "cached_at_run")));
    c = cell_of(cells, one);
    assert_string_equal(json_string_value(json_object_get(c, "status")), "ok");
    assert_true(json_is_true(json_object_get(json_object_get(c, "index"), "cached_at_run")));
    json_decref(cells);
    char *now = read_build_json(old);
    assert_string_equal(now, old_json); /* untouched */
    free(now);
    free(old_json);

    /* 4: a build.json recording another format than the directory's name */
    set_engine_format(ivf, json_integer(IVFPQ_VERSION - 1));
    char *before = read_build_json(ivf);
    cells = format_run(f, cfg_path, 3);
    c = cell_of(cells, "ivfpq-record");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "error");
    char want[4800];
    snprintf(want, sizeof want,
             "index-format/ivfpq-record/%s: build.json records ivfpq-record format %u, this "
             "annlab reads format %u; not reused and left as it is (move or remove it to "
             "rebuild)",
             strrchr(ivf, '/') + 1, IVFPQ_VERSION - 1, IVFPQ_VERSION);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), want);
    assert_string_equal(json_string_value(json_object_get(cell_of(cells, one), "status")),
                        "ok");
    json_decref(cells);
    now = read_build_json(ivf);
    assert_string_equal(now, before);
    free(now);
    free(before);
}

/*
 * A disk engine's cell: open_report says which backend was used (here the
 * page-cache backends, asked for), and every stage diskann-sector times is
 * a number.
 */
static void test_sector_cell_reports(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char cfg_path[4400], out[4400];
    snprintf(cfg_path, sizeof cfg_path, "%s/sector.json", f->dir);
    snprintf(out, sizeof out, "%s/out-sector", f->dir);
    json_t *cfg = json_pack(
        "{s:s, s:{s:s}, s:i, s:[{s:s, s:{s:i, s:i, s:i}, s:{s:[s, s]}, s:{s:i, s:s}}], s:[i],"
        " s:[s], s:b, s:i, s:s}",
        "name", "sector", "dataset", "path", f->bundle, "k", 10, "engines", "engine",
        "diskann-sector", "build", "R", 16, "L_build", 32, "pq_bytes", 8, "open", "io", "buffered",
        "mmap", "search", "L", 30, "search_mode", "pipeline", "threads", 1, "modes", "warm",
        "drop_caches", 0, "queries", 20, "index_root", "index-sector");
    json_t *cells = run_cells(f, cfg, cfg_path, out);
    assert_int_equal(json_array_size(cells), 2);
    for (size_t i = 0; i < 2; i++) {
        const json_t *c = json_array_get(cells, i);
        assert_string_equal(json_string_value(json_object_get(c, "status")), "ok");
        const char *asked = json_string_value(json_object_get(json_object_get(c, "open"), "io"));
        const json_t *rep = json_object_get(c, "open_report");
        assert_true(json_is_object(rep));
        assert_string_equal(json_string_value(json_object_get(rep, "io")), asked);
        assert_true(json_is_false(json_object_get(rep, "o_direct")));
        const json_t *stages = json_object_get(json_object_get(c, "engine_stats"), "stages_ns");
        static const char *const names[] = { "pq_table", "adc", "candlist", "full_dist",
                                             "decode", "io_submit", "io_wait" };
        for (int s = 0; s < 7; s++)
            assert_true(json_is_number(json_object_get(stages, names[s])));
        assert_true(json_number_value(json_object_get(stages, "pq_table")) > 0);
    }
    json_decref(cells);
}

/*
 * build_precision's default changed (f16, then i8): a config that leaves it
 * out names its index with the default beside the parameters, so it is
 * not the index of the same config built under the old default (whose
 * name was the hash without it), nor of a config asking "i8" or "f16"
 * explicitly (build.json records the parameters as given).  A second run
 * of the first config finds its index.
 */
static void test_index_keyed_default(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    static const char *const prec[4] = { NULL, "i8", "f16", NULL };
    const char *dirs[4];
    json_t *cells[4];
    for (int i = 0; i < 4; i++) {
        char cfg_path[4400], out[4400];
        snprintf(cfg_path, sizeof cfg_path, "%s/keyed-%d.json", f->dir, i);
        snprintf(out, sizeof out, "%s/out-keyed-%d", f->dir, i);
        json_t *build = json_pack("{s:i, s:i, s:i}", "R", 8, "L_build", 16, "pq_bytes", 8);
        if (prec[i])
            json_object_set_new(build, "build_precision", json_string(prec[i]));
        json_t *cfg = json_pack("{s:s, s:{s:s}, s:i, s:[{s:s, s:o, s:{s:i}}], s:[i], s:[s], s:b,"
                                " s:i, s:s}",
                                "name", "keyed", "dataset", "path", f->bundle, "k", 10, "engines",
                                "engine", "diskann-sector", "build", build, "search", "L", 20,
                                "threads", 1, "modes", "warm", "drop_caches", 0, "queries", 5,
                                "index_root", "index-keyed");
        cells[i] = run_cells(f, cfg, cfg_path, out);
        const json_t *c = json_array_get(cells[i], 0);
        const json_t *ix = json_object_get(c, "index");
        dirs[i] = json_string_value(json_object_get(ix, "dir"));
        if (!dirs[i])
            fail_msg("%s: %s", json_string_value(json_object_get(c, "status")),
                     json_string_value(json_object_get(c, "reason")));
        /* the last run finds the first one's index; the others build */
        assert_true(json_is_boolean(json_object_get(ix, "cached_at_run")));
        assert_int_equal(json_is_true(json_object_get(ix, "cached_at_run")), i == 3);
    }
    assert_string_not_equal(dirs[0], dirs[1]);
    assert_string_not_equal(dirs[0], dirs[2]);
    assert_string_not_equal(dirs[1], dirs[2]);
    assert_string_equal(dirs[0], dirs[3]);
    /* the name of the first index is not the name it had under the old
     * default: the hash of the same key without "defaults" */
    const json_t *ds = json_object_get(json_array_get(cells[0], 0), "dataset");
    const char *sum = json_string_value(json_object_get(ds, "checksum"));
    assert_non_null(sum);
    json_t *old = json_pack("{s:s, s:{s:i, s:i, s:i}, s:s, s:s}", "engine", "diskann-sector",
                            "build", "R", 8, "L_build", 16, "pq_bytes", 8, "dataset", sum,
                            "metric", "l2");
    char hash[17], want[40];
    harness_json_hash16(old, hash);
    json_decref(old);
    snprintf(want, sizeof want, "/%s-f", hash);
    assert_null(strstr(dirs[0], want));
    for (int i = 0; i < 4; i++)
        json_decref(cells[i]);
}

/* The only index directory under root/engine (its name), for tests that
 * reach into the cache. */
static void only_index(const fx *f, const char *root, const char *engine, char *name, size_t cap)
{
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "ls %s/%s/%s | grep -v '\\.lock$' | grep -v '\\.tmp\\.'", f->dir,
             root, engine);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(name, (int)cap, p));
    pclose(p);
    name[strcspn(name, "\n")] = '\0';
}

static json_t *small_config(const fx *f, const char *name, const char *index_root)
{
    json_t *cfg = config(f, name);
    json_object_set_new(cfg, "threads", json_pack("[i]", 1));
    json_object_set_new(cfg, "queries", json_integer(10));
    json_object_set_new(cfg, "index_root", json_string(index_root));
    return cfg;
}

/*
 * Issue 14: one run at a time writes a run directory.  A second run on the
 * same --out exits 2 naming the holder and writes nothing; with --wait it
 * waits and then proceeds.
 */
static void test_run_dir_locked(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char cfg_path[4400], out[4400], lock_path[4500], logp[4400];
    snprintf(cfg_path, sizeof cfg_path, "%s/locked.json", f->dir);
    snprintf(out, sizeof out, "%s/out-locked", f->dir);
    snprintf(lock_path, sizeof lock_path, "%s/.lock", out);
    snprintf(logp, sizeof logp, "%s/locked-wait.log", f->dir);
    json_t *cfg = small_config(f, "locked", "index");
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    assert_int_equal(mkdir(out, 0755), 0);
    ann_lock held = { .fd = -1 };
    assert_int_equal(ann_lock_take(&held, lock_path, "annlab run other.json (a test)", 0, 0), 0);
    char *log = NULL;
    assert_int_equal(run(f, cfg_path, out, 0, &log), 2);
    char want[4800];
    snprintf(want, sizeof want, "%s: another run is writing this directory (%s: held by pid %d since ",
             out, lock_path, (int)getpid());
    if (!strstr(log, want))
        fail_msg("log \"%s\" lacks \"%s\"", log, want);
    assert_non_null(strstr(log, "annlab run other.json (a test)); pass --wait to wait for it"));
    free(log);
    char cj[4500];
    snprintf(cj, sizeof cj, "%s/config.json", out);
    assert_int_equal(access(cj, F_OK), -1); /* nothing written */

    /* --wait: blocks until the holder lets go, then runs */
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(f->dir) != 0)
            _exit(126);
        FILE *lf = freopen(logp, "w", stderr);
        (void)lf;
        execl(hf_bin(), hf_bin(), "run", cfg_path, "--out", out, "--wait", (char *)NULL);
        _exit(127);
    }
    size_t len = 0;
    int waiting = 0;
    for (int i = 0; i < 1000 && !waiting; i++) {
        char *text = tu_read_file(logp, &len);
        if (text && len && memmem(text, len, "annlab run: waiting for ", 24))
            waiting = 1;
        free(text);
        if (!waiting)
            usleep(10000);
    }
    assert_true(waiting);
    assert_int_equal(access(cj, F_OK), -1); /* still nothing while it waits */
    ann_lock_release(&held);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    json_t *cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 2);
    json_decref(cells);
}

/*
 * Issue 14: an index another run is building is not built a second time:
 * the run stops (exit 2) naming the holder and how to resume; temporaries
 * of a dead builder are removed by the next build of the name, a live
 * builder's are not.
 */
static void test_index_lock_and_dead_temporaries(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char cfg_path[4400], out[4400], name[128], ixdir[4600], lock_path[4700], stale[4800];
    char live[4800], keep[4900];
    snprintf(cfg_path, sizeof cfg_path, "%s/ixlock.json", f->dir);
    json_t *cfg = small_config(f, "ixlock", "index-lock");
    json_object_set_new(cfg, "modes", json_pack("[s]", "warm"));
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    char *log = NULL;
    snprintf(out, sizeof out, "%s/out-ixlock-1", f->dir);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 0);
    free(log);
    only_index(f, "index-lock", "flat", name, sizeof name);
    snprintf(ixdir, sizeof ixdir, "%s/index-lock/flat/%s", f->dir, name);
    snprintf(lock_path, sizeof lock_path, "%s.lock", ixdir);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ixdir);
    assert_int_equal(system(cmd), 0);

    /* another run holds the index lock: this one stops */
    ann_lock held = { .fd = -1 };
    assert_int_equal(ann_lock_take(&held, lock_path, "annlab run x.json (building it)", 0, 0), 0);
    snprintf(out, sizeof out, "%s/out-ixlock-2", f->dir);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 2);
    char want[5000];
    snprintf(want, sizeof want, "index-lock/flat/%s: being built by another run (", name);
    if (!strstr(log, want) || !strstr(log, "annlab run x.json (building it)") ||
        !strstr(log, "pass --wait to wait for it") || !strstr(log, "--resume"))
        fail_msg("log \"%s\" lacks the holder or the way on", log);
    free(log);

    /* a dead builder's temporary (kill -9), and a live one's */
    char dtag[48], ltag[48];
    pid_t d = fork();
    if (d == 0)
        _exit(0);
    ann_owner dead;
    ann_owner_of_pid(d, &dead); /* a zombie still has its start time */
    waitpid(d, NULL, 0);
    ann_owner_tag(&dead, dtag, sizeof dtag);
    ann_owner me;
    ann_owner_self(&me);
    ann_owner_tag(&me, ltag, sizeof ltag);
    snprintf(stale, sizeof stale, "%s.tmp.%s", ixdir, dtag);
    snprintf(live, sizeof live, "%s.tmp.%s", ixdir, ltag);
    assert_int_equal(mkdir(stale, 0755), 0);
    assert_int_equal(mkdir(live, 0755), 0);
    snprintf(keep, sizeof keep, "%s/half-built", stale);
    assert_int_equal(tu_write_file(keep, "x", 1), 0);
    ann_lock_release(&held);
    assert_int_equal(run(f, cfg_path, out, 1, &log), 0);
    assert_non_null(strstr(log, "removed 1 temporary directory of a dead build of"));
    free(log);
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(live, F_OK), 0); /* a live builder's work is never removed */
    rmdir(live);
    json_t *cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cells, 0), "status")), "ok");
    json_decref(cells);
}

/*
 * Issue 14: failures carry a class.  A cell whose output disk fills
 * (its latency file written to /dev/full: ENOSPC) is "transient" and run
 * again by --resume; a cell that dies without a word is "error" with a
 * message saying so, left by --resume and run again by --retry-failed.
 */
/*
 * Every engine's build on a full disk (an index root on a 4 MiB tmpfs, an
 * index of 8-15 MB): a "transient" build naming the file and "No space left
 * on device" (so --resume retries it), and nothing of the index left but
 * its lock file: no staging directory, no index that could pass for built.
 * Skipped where mounting a tmpfs is not allowed.
 */
static void test_full_disk_builds(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char bundle[4400], cfg_path[4400], out[4400], mnt[4400], cmd[4600];
    snprintf(mnt, sizeof mnt, "%s/small-fs", f->dir);
    tu_mount_tmpfs(mnt, 4);
    snprintf(bundle, sizeof bundle, "%s/bundle-full", f->dir);
    assert_int_equal(hf_bundle(bundle, 30000, 64, 20, 0, 10, 13), 0);
    snprintf(cfg_path, sizeof cfg_path, "%s/full.json", f->dir);
    snprintf(out, sizeof out, "%s/out-full", f->dir);
    char root[4500];
    snprintf(root, sizeof root, "%s/index", mnt);
    json_t *cfg = json_pack(
        "{s:s, s:{s:s}, s:i, s:[{s:s}, {s:s, s:{s:i, s:i}}, {s:s, s:{s:i, s:i}},"
        " {s:s, s:{s:i, s:i}}, {s:s, s:{s:i}}, {s:s, s:{s:i, s:i}}, {s:s, s:{s:i}},"
        " {s:s, s:{s:i}}, {s:s, s:{s:i, s:i}}], s:[i], s:[s], s:b, s:i, s:i, s:f, s:s}",
        "name", "full", "dataset", "path", bundle, "k", 10, "engines",
        "engine", "flat",
        "engine", "diskann-sector", "build", "R", 16, "L_build", 32,
        "engine", "diskann-record", "build", "R", 16, "L_build", 32,
        "engine", "diskann-resident", "build", "R", 16, "L_build", 32,
        "engine", "hnsw-record", "build", "M", 8,
        "engine", "ivfpq-record", "build", "nlist", 64, "pq_bytes", 8,
        "engine", "ref-hnswlib", "build", "M", 8,
        "engine", "ref-faiss-hnsw", "build", "M", 8,
        "engine", "ref-faiss-ivfpq", "build", "nlist", 64, "pq_bytes", 8,
        "threads", 1, "modes", "warm", "drop_caches", 0, "queries", 20, "warmup_queries", 0,
        "qps_min_seconds", 0.01, "index_root", root);
    assert_non_null(cfg);
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    char *log = NULL;
    int rc = run(f, cfg_path, out, 0, &log);
    free(log);
    assert_int_equal(rc, 0);
    json_t *cells = load_cells(out);
    size_t i;
    json_t *c;
    int n = 0;
    json_array_foreach(cells, i, c) {
        const char *st = json_string_value(json_object_get(c, "status"));
        const char *why = json_string_value(json_object_get(c, "reason"));
        if (!st || strcmp(st, "transient") || !why || !strstr(why, "No space left on device") ||
            !strstr(why, root))
            fail_msg("%s: %s: %s", json_string_value(json_object_get(c, "engine")), st,
                     why ? why : "(no reason)");
        n++;
    }
    assert_int_equal(n, 9);
    json_decref(cells);
    /* per engine folder, only the build's lock file */
    static const char *engines[] = { "flat", "diskann-sector", "diskann-record",
                                     "diskann-resident", "hnsw-record", "ivfpq-record",
                                     "ref-hnswlib", "ref-faiss-hnsw", "ref-faiss-ivfpq" };
    for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
        char dir[4700];
        snprintf(dir, sizeof dir, "%s/%s", root, engines[e]);
        DIR *d = opendir(dir);
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));) {
            size_t len = strlen(de->d_name);
            if (de->d_name[0] == '.' || (len > 5 && !strcmp(de->d_name + len - 5, ".lock")))
                continue;
            fail_msg("%s/%s left after a failed build", dir, de->d_name);
        }
        closedir(d);
    }
    snprintf(cmd, sizeof cmd, "umount %s", mnt);
    assert_int_equal(system(cmd), 0);
    rmdir(mnt);
}

static void test_failure_classes_and_retries(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char wrapper[4400], cfg_path[4400], out[4400], flag[4400];
    snprintf(wrapper, sizeof wrapper, "%s/classes.sh", f->dir);
    snprintf(flag, sizeof flag, "%s/classes-first", f->dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/classes.json", f->dir);
    snprintf(out, sizeof out, "%s/out-classes", f->dir);
    /* $1 annlab, $2 cell, $3 spec: the cell's pid is this shell's ($$ after exec) */
    char script[2048];
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "if [ -e '%s' ]; then\n"
             "  if grep -q '\"mode\": \"warm\"' \"$3\"; then\n"
             "    lat=$(sed -n 's/.*\"latency_path\": \"\\([^\"]*\\)\".*/\\1/p' \"$3\")\n"
             "    ln -s /dev/full \"$lat.tmp.$$\"\n"
             "  else\n"
             "    exit 3\n"
             "  fi\n"
             "fi\n"
             "exec \"$@\"\n",
             flag);
    assert_int_equal(tu_write_file(wrapper, script, strlen(script)), 0);
    chmod(wrapper, 0755);
    assert_int_equal(tu_write_file(flag, "1", 1), 0);
    json_t *cfg = small_config(f, "classes", "index");
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    setenv("ANNLAB_CELL_WRAPPER", wrapper, 1);
    char *log = NULL;
    int rc = run(f, cfg_path, out, 0, &log);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(log, "0 ok, 1 error, 0 timeout, 0 oom, 0 skipped, 0 already recorded; "
                                "1 transient (--resume runs them again)"));
    free(log);
    json_t *cells = load_cells(out);
    const json_t *cold = cell_by(cells, "cold", 1), *warm = cell_by(cells, "warm", 1);
    assert_string_equal(json_string_value(json_object_get(warm, "status")), "transient");
    const char *why = json_string_value(json_object_get(warm, "reason"));
    if (!strstr(why, ".txt: write: No space left on device"))
        fail_msg("warm reason \"%s\"", why);
    assert_string_equal(json_string_value(json_object_get(cold, "status")), "error");
    why = json_string_value(json_object_get(cold, "reason"));
    if (!strstr(why, "exited with status 3 and printed nothing (log "))
        fail_msg("cold reason \"%s\"", why);
    json_decref(cells);

    /* --resume: the transient cell again, the error left */
    unlink(flag);
    assert_int_equal(run(f, cfg_path, out, 1, &log), 0);
    assert_non_null(strstr(log, "1 ok, 0 error, 0 timeout, 0 oom, 0 skipped, 1 already recorded; "
                                "0 transient"));
    free(log);
    /* --retry-failed: the error too */
    const char *args[] = { "run", cfg_path, "--out", out, "--retry-failed", NULL };
    assert_int_equal(hf_annlab(f->dir, &log, args), 0);
    assert_non_null(strstr(log, "1 ok, 0 error, 0 timeout, 0 oom, 0 skipped, 1 already recorded; "
                                "0 transient"));
    free(log);
    unsetenv("ANNLAB_CELL_WRAPPER");
    /* cells.jsonl keeps every attempt; readers take each cell's last */
    cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 4);
    json_decref(cells);
    json_t *latest = NULL;
    assert_int_equal(harness_cells_load(out, &latest), 0);
    assert_int_equal(json_array_size(latest), 2);
    size_t i;
    json_t *c;
    json_array_foreach(latest, i, c)
        assert_string_equal(json_string_value(json_object_get(c, "status")), "ok");
    json_decref(latest);
}

/*
 * Issue 14: a truncated build.json is not "exists without build.json", an
 * empty {} is not accepted, and a flipped byte in the dataset bundle stops
 * the run before any cell reads it.
 */
static void test_build_json_and_bundle_checked(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char cfg_path[4400], out[4400], name[128], bj[4700];
    snprintf(cfg_path, sizeof cfg_path, "%s/bj.json", f->dir);
    json_t *cfg = small_config(f, "bj", "index-bj");
    json_object_set_new(cfg, "modes", json_pack("[s]", "warm"));
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    char *log = NULL;
    snprintf(out, sizeof out, "%s/out-bj-1", f->dir);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 0);
    free(log);
    only_index(f, "index-bj", "flat", name, sizeof name);
    snprintf(bj, sizeof bj, "%s/index-bj/flat/%s/build.json", f->dir, name);
    size_t len = 0;
    char *text = tu_read_file(bj, &len);
    assert_non_null(text);
    assert_int_equal(tu_write_file(bj, text, len / 2), 0); /* truncated */
    snprintf(out, sizeof out, "%s/out-bj-2", f->dir);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 0);
    free(log);
    json_t *cells = load_cells(out);
    const char *why = json_string_value(json_object_get(json_array_get(cells, 0), "reason"));
    char want[4900];
    snprintf(want, sizeof want, "index-bj/flat/%s/build.json: unreadable (", name);
    if (!strstr(why, want) || !strstr(why, "): truncated or corrupt; remove "))
        fail_msg("reason \"%s\"", why);
    json_decref(cells);
    assert_int_equal(tu_write_file(bj, "{}", 2), 0);
    snprintf(out, sizeof out, "%s/out-bj-3", f->dir);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 0);
    free(log);
    cells = load_cells(out);
    why = json_string_value(json_object_get(json_array_get(cells, 0), "reason"));
    snprintf(want, sizeof want,
             "index-bj/flat/%s/build.json: \"engine\" is missing or names another engine; not an "
             "index ann_engine_build finished for this cell; remove",
             name);
    if (!strstr(why, want))
        fail_msg("reason \"%s\"", why);
    json_decref(cells);
    assert_int_equal(tu_write_file(bj, text, len), 0);
    free(text);

    /* `annlab cell` started by hand on an index changed since the run
     * checked it: refused against build.json before the engine opens it */
    char spec[4500], vec[4700], cell_out[4500];
    snprintf(out, sizeof out, "%s/out-bj-1", f->dir);
    cells = load_cells(out);
    snprintf(spec, sizeof spec, "%s/specs/%s.json", out,
             json_string_value(json_object_get(json_array_get(cells, 0), "id")));
    json_decref(cells);
    snprintf(vec, sizeof vec, "%s/index-bj/flat/%s/vectors.fbin", f->dir, name);
    snprintf(cell_out, sizeof cell_out, "%s/cell-out.json", f->dir);
    unsigned char *vb = tu_read_file(vec, &len);
    assert_non_null(vb);
    vb[len - 3] ^= 0x01;
    assert_int_equal(tu_write_file(vec, vb, len), 0);
    const char *cell_args[] = { "cell", spec, cell_out, NULL };
    assert_int_equal(hf_annlab(f->dir, &log, cell_args), 1);
    snprintf(want, sizeof want, "annlab cell: index-bj/flat/%s/vectors.fbin: sha256 sha256:",
             name);
    if (!strstr(log, want) || !strstr(log, " differs from build.json (sha256:"))
        fail_msg("log \"%s\" lacks \"%s\"", log, want);
    free(log);
    assert_int_equal(access(cell_out, F_OK), -1);
    vb[len - 3] ^= 0x01;
    assert_int_equal(tu_write_file(vec, vb, len), 0);
    free(vb);

    /* the bundle: one flipped byte in base.fbin, caught before any cell */
    char copy[4400], cmd[9000], base[4500];
    snprintf(copy, sizeof copy, "%s/bundle-flipped", f->dir);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", f->bundle, copy);
    assert_int_equal(system(cmd), 0);
    snprintf(base, sizeof base, "%s/base.fbin", copy);
    unsigned char *bytes = tu_read_file(base, &len);
    bytes[len / 2] ^= 0x10;
    assert_int_equal(tu_write_file(base, bytes, len), 0);
    free(bytes);
    json_object_set_new(cfg, "dataset", json_pack("{s:s}", "path", copy));
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    snprintf(out, sizeof out, "%s/out-bj-4", f->dir);
    assert_int_equal(run(f, cfg_path, out, 0, &log), 2);
    snprintf(want, sizeof want, "%s: sha256 sha256:", base);
    if (!strstr(log, want) || !strstr(log, "differs from manifest.json (sha256:"))
        fail_msg("log \"%s\" lacks \"%s\"", log, want);
    free(log);
    char cj[4500];
    snprintf(cj, sizeof cj, "%s/config.json", out);
    assert_int_equal(access(cj, F_OK), -1); /* refused before anything was written */
}

/*
 * Issue 14: a warm cell under a cap smaller than its index is served from
 * the device.  Before, the index's pages were already in the page cache
 * (read by the uncapped cell just before, charged to another group), the
 * capped cell's preload found them there, and the cap never applied: it
 * measured a fully cached index.
 */
static void test_warm_capped_reads_device(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
#if defined(__SANITIZE_ADDRESS__)
    /* ASan's shadow memory and quarantine, anonymous and unreclaimable, alone
     * pass a 32 MiB cap: the cell is OOM-killed before it measures anything.
     * The optimised build (`make test`) runs this test. */
    print_message("ASan build: a 32 MiB cap cannot hold the cell process itself; skipping\n");
    skip();
#endif
    char bundle[4400], cfg_path[4400], out[4400];
    snprintf(bundle, sizeof bundle, "%s/bundle-cap", f->dir);
    /* 200k x 64 floats: a 51 MB index, over a 32 MiB cap */
    assert_int_equal(hf_bundle(bundle, 200000, 64, 20, 50, 10, 11), 0);
    snprintf(cfg_path, sizeof cfg_path, "%s/cap.json", f->dir);
    snprintf(out, sizeof out, "%s/out-cap", f->dir);
    json_t *cfg = json_pack("{s:s, s:{s:s}, s:i, s:[{s:s}], s:[i], s:[s], s:[n, s], s:b, s:i,"
                            " s:i, s:f, s:s}",
                            "name", "cap", "dataset", "path", bundle, "k", 10, "engines", "engine",
                            "flat", "threads", 1, "modes", "warm", "memory_caps", "32MiB",
                            "drop_caches", 0, "queries", 20, "warmup_queries", 10,
                            "qps_min_seconds", 0.01, "index_root", "index-cap");
    json_t *cells = run_cells(f, cfg, cfg_path, out);
    assert_int_equal(json_array_size(cells), 2);
    const json_t *free_cell = json_array_get(cells, 0), *capped = json_array_get(cells, 1);
    assert_true(json_is_null(json_object_get(free_cell, "memory_cap_bytes")));
    const char *st = json_string_value(json_object_get(capped, "status"));
    if (!strcmp(st, "skipped")) {
        print_message("capped cells skipped here: %s\n",
                      json_string_value(json_object_get(capped, "reason")));
        json_decref(cells);
        skip();
    }
    if (strcmp(st, "ok") != 0)
        fail_msg("capped cell: %s: %s", st, json_string_value(json_object_get(capped, "reason")));
    const json_t *ev = json_object_get(capped, "cache_eviction");
    json_int_t index_bytes = json_integer_value(json_object_get(ev, "index_bytes"));
    json_int_t resident = json_integer_value(json_object_get(ev, "resident_at_measure_start_bytes"));
    print_message("capped warm cell: %lld of %lld index bytes resident at the start\n",
                  (long long)resident, (long long)index_bytes);
    assert_true(index_bytes > 40 * 1024 * 1024);
    assert_true(resident < index_bytes - 8 * 1024 * 1024); /* at most the cap's worth */
    /* the queries read the device, counted in the cell's own group */
    const json_t *dev = json_object_get(capped, "device");
    const json_t *cgr = json_object_get(dev, "cgroup");
    double reads = json_number_value(json_object_get(cgr ? cgr : dev, "reads_per_query"));
    print_message("capped warm cell: %.1f device reads per query\n", reads);
    assert_true(reads > 0);
    const json_t *pc = json_object_get(json_object_get(capped, "memory"), "cgroup_page_cache_bytes");
    if (json_is_object(pc))
        assert_true(json_integer_value(json_object_get(pc, "end")) <= 32 * 1024 * 1024);
    assert_non_null(json_object_get(json_object_get(capped, "warm"), "evicted_before_preload"));
    /* the uncapped cell beside it: all of the index cached */
    const json_t *fev = json_object_get(free_cell, "cache_eviction");
    assert_true(json_number_value(json_object_get(fev, "resident_fraction")) == 1.0);
    json_decref(cells);
}

/*
 * A capped cell whose engine needs more memory than its cap: ref-hnswlib
 * holds its whole index in anonymous memory (80k x 128 floats, 41 MB, past
 * a 32 MiB cap), so the OOM killer acts inside the cell's own group.  The
 * cell is recorded "oom" with the cap in its reason, the uncapped cell
 * beside it is "ok", the run counts it (and exits 0: a failed cell is a
 * recorded result); --resume does not run an oom cell again (it is not
 * transient), --retry-failed does.
 */
static void test_capped_cell_oom(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
#if defined(__SANITIZE_ADDRESS__)
    print_message("ASan build: a 32 MiB cap cannot hold the cell process itself; skipping\n");
    skip();
#endif
    if (!ann_engine_find("ref-hnswlib")) {
        print_message("ref-hnswlib not compiled in: skipping\n");
        skip();
    }
    char bundle[4400], cfg_path[4400], out[4400];
    snprintf(bundle, sizeof bundle, "%s/bundle-oom", f->dir);
    assert_int_equal(hf_bundle(bundle, 80000, 128, 20, 10, 10, 12), 0);
    snprintf(cfg_path, sizeof cfg_path, "%s/oom.json", f->dir);
    snprintf(out, sizeof out, "%s/out-oom", f->dir);
    json_t *cfg = json_pack("{s:s, s:{s:s}, s:i, s:[{s:s, s:{s:i, s:i}, s:{s:[i]}}], s:[i], s:[s],"
                            " s:[n, s], s:b, s:i, s:i, s:f, s:s}",
                            "name", "oom", "dataset", "path", bundle, "k", 10, "engines", "engine",
                            "ref-hnswlib", "build", "M", 8, "ef_construction", 32, "search",
                            "ef_search", 20, "threads", 1, "modes", "warm", "memory_caps", "32MiB",
                            "drop_caches", 0, "queries", 20, "warmup_queries", 10,
                            "qps_min_seconds", 0.01, "index_root", "index-oom");
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    char *log = NULL;
    int rc = run(f, cfg_path, out, 0, &log);
    json_t *cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 2);
    const json_t *capped = json_array_get(cells, 1);
    const char *st = json_string_value(json_object_get(capped, "status"));
    if (!strcmp(st, "skipped")) {
        print_message("capped cells skipped here: %s\n",
                      json_string_value(json_object_get(capped, "reason")));
        free(log);
        json_decref(cells);
        skip();
    }
    if (rc != 0)
        print_message("%s\n", log);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(log, "1 ok, 0 error, 0 timeout, 1 oom, 0 skipped, 0 already recorded"));
    free(log);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cells, 0), "status")),
                        "ok");
    assert_string_equal(st, "oom");
    assert_int_equal(json_integer_value(json_object_get(capped, "memory_cap_bytes")),
                     32 * 1024 * 1024);
    const char *reason = json_string_value(json_object_get(capped, "reason"));
    assert_non_null(reason);
    if (!strstr(reason, "under memory cap 33554432 bytes"))
        fail_msg("oom reason \"%s\" does not name the cap", reason);
    json_decref(cells);

    /* --resume: nothing to do (an oom is not transient) */
    rc = run(f, cfg_path, out, 1, &log);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(log, "0 ok, 0 error, 0 timeout, 0 oom, 0 skipped, 2 already recorded"));
    free(log);
    cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 2);
    json_decref(cells);
    /* --retry-failed: the oom cell once more, the ok one left */
    const char *args[] = { "run", cfg_path, "--out", out, "--retry-failed", NULL };
    rc = hf_annlab(f->dir, &log, args);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(log, "0 ok, 0 error, 0 timeout, 1 oom, 0 skipped, 1 already recorded"));
    free(log);
    cells = load_cells(out);
    assert_int_equal(json_array_size(cells), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cells, 2), "status")),
                        "oom");
    json_decref(cells);
}

/*
 * max_cell_seconds: a cell past its bound stops issuing queries and its
 * figures cover the queries it answered.  Flat on 20k x 64 takes about
 * 0.1 ms a query here (300 queries: tens of ms); a bound of 1 ms cuts the
 * first latency pass after the first query or a few.  The unbounded cell
 * beside it answers all 300.
 */
/* "reused" in a cell's index block: the record engines report the artifact
 * cache at the top of engine_report, diskann-sector among its phases (a
 * 2.3 s sector build from cached PQ and graph once showed as a full build). */
static void test_reused_artifacts_shapes(void **state)
{
    (void)state;
    const char *shapes[] = {
        "{\"engine_report\": {\"pq_cached\": true, \"graph_cached\": true}}",
        "{\"engine_report\": {\"phases\": {\"pq_cached\": true, \"graph_cached\": true, \"graph_s\": 0}}}",
        "{\"engine_report\": {\"phases\": {\"pq_cached\": true, \"graph_cached\": false}}}",
        "{\"engine_report\": {\"phases\": {\"pq_cached\": false, \"graph_cached\": false}}}",
        "{}",
    };
    const char *want[] = { "[\"pq\",\"graph\"]", "[\"pq\",\"graph\"]", "[\"pq\"]", "[]", "[]" };
    for (size_t i = 0; i < 5; i++) {
        json_error_t e;
        json_t *info = json_loads(shapes[i], 0, &e);
        assert_non_null(info);
        json_t *r = harness_reused_artifacts(info);
        char *txt = json_dumps(r, JSON_COMPACT | JSON_ENCODE_ANY);
        assert_string_equal(txt, want[i]);
        free(txt);
        json_decref(r);
        json_decref(info);
    }
}

static void test_time_bounded_cell(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char bundle[4400], cfg_path[4400], out[4400], path[4600];
    snprintf(bundle, sizeof bundle, "%s/bundle-tb", f->dir);
    assert_int_equal(hf_bundle(bundle, 20000, 64, 300, 20, 10, 13), 0);
    snprintf(cfg_path, sizeof cfg_path, "%s/tb.json", f->dir);
    snprintf(out, sizeof out, "%s/out-tb", f->dir);
    json_t *cfg = json_pack("{s:s, s:{s:s}, s:i, s:[{s:s}, {s:s, s:s, s:f}], s:[i], s:[s],"
                            " s:b, s:i, s:i, s:f, s:s}",
                            "name", "tb", "dataset", "path", bundle, "k", 10, "engines", "engine",
                            "flat", "engine", "flat", "label", "flat-bounded", "max_cell_seconds",
                            0.001, "threads", 1, "modes", "warm", "drop_caches", 0, "repeats", 2,
                            "warmup_queries", 10, "qps_min_seconds", 0.01, "index_root", "index-tb");
    json_t *cells = run_cells(f, cfg, cfg_path, out);
    assert_int_equal(json_array_size(cells), 2);
    const json_t *full = json_array_get(cells, 0), *cut = json_array_get(cells, 1);
    assert_false(json_is_true(json_object_get(full, "partial")));
    assert_int_equal(json_integer_value(json_object_get(full, "queries_done")), 300);
    assert_int_equal(json_integer_value(json_object_get(full, "repeats")), 2);
    assert_null(json_object_get(full, "time_bound"));

    assert_string_equal(json_string_value(json_object_get(cut, "status")), "ok");
    assert_true(json_is_true(json_object_get(cut, "partial")));
    json_int_t done = json_integer_value(json_object_get(cut, "queries_done"));
    print_message("bounded cell: %lld of 300 queries\n", (long long)done);
    assert_true(done >= 1 && done < 300);
    assert_int_equal(json_integer_value(json_object_get(cut, "queries")), done);
    assert_int_equal(json_integer_value(json_object_get(cut, "repeats")), 1);
    const json_t *tb = json_object_get(cut, "time_bound");
    assert_int_equal(json_integer_value(json_object_get(tb, "queries_asked")), 300);
    assert_int_equal(json_integer_value(json_object_get(tb, "repeats_asked")), 2);
    /* the 10 warm-up queries may be cut too; the latency pass is */
    const json_t *phases = json_object_get(tb, "cut");
    int latency_cut = 0;
    for (size_t i = 0; i < json_array_size(phases); i++)
        latency_cut |= !strcmp(json_string_value(json_array_get(phases, i)), "latency");
    assert_true(latency_cut);
    /* flat is exact: recall 1 over the queries it answered */
    assert_true(json_number_value(json_object_get(cut, "recall")) == 1.0);
    /* the raw files hold those queries and no more */
    snprintf(path, sizeof path, "%s/%s", out,
             json_string_value(json_object_get(cut, "latency_file")));
    size_t len = 0;
    char *lat = tu_read_file(path, &len);
    assert_non_null(lat);
    json_int_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += lat[i] == '\n';
    free(lat);
    assert_int_equal(lines, done + 1); /* and the header */
    snprintf(path, sizeof path, "%s/%s", out,
             json_string_value(json_object_get(cut, "neighbors_file")));
    ann_gt nb = { 0 };
    assert_int_equal(ann_gt_load(path, 20000, &nb), 0);
    assert_int_equal(nb.nq, done);
    ann_gt_free(&nb);
    /* and the table says so */
    snprintf(path, sizeof path, "%s/tables.md", out);
    char *md = tu_read_file(path, &len);
    assert_non_null(md);
    char want[64];
    snprintf(want, sizeof want, "| 1.000, partial %lld/300 |", (long long)done);
    if (!strstr(md, want) || !strstr(md, "time bound: 1 cell reached max_cell_seconds"))
        fail_msg("tables.md lacks \"%s\"", want);
    free(md);
    /* and the figures: a series of its own */
    snprintf(path, sizeof path, "%s/plots/recall_qps.gp", out);
    char *gp = tu_read_file(path, &len);
    assert_non_null(gp);
    assert_non_null(strstr(gp, "\"flat-bounded warm partial\""));
    free(gp);
    json_decref(cells);
}

/*
 * `run --dry-run` lists every parameter, whether each index is built and
 * an estimate from the last run; a build's progress lines reach the
 * runner's output (ANNLAB_PROGRESS_AFTER_S=0 makes a small build long
 * enough to report).
 */
static void test_dry_run_and_build_progress(void **state)
{
    fx *f = *state;
    if (!f)
        skip();
    char cfg_path[4400];
    snprintf(cfg_path, sizeof cfg_path, "%s/dry.json", f->dir);
    json_t *cfg = json_pack("{s:s, s:{s:s}, s:i, s:i, s:[{s:s, s:{s:i, s:i, s:s}, s:{s:s}, s:{s:i}}],"
                            " s:[s], s:b, s:i, s:f}",
                            "name", "dry", "dataset", "path", f->bundle, "k", 10, "queries", 20,
                            "engines", "engine", "hnsw-record", "build", "M", 8, "ef_construction", 16,
                            "kv", "lmdb", "open", "kv", "lmdb", "search", "ef_search", 20, "modes", "warm",
                            "drop_caches", 0, "warmup_queries", 20, "qps_min_seconds", 0.01);
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    char *log = NULL;
    const char *dry1[] = { "run", cfg_path, "--out", "results/dry/run1", "--dry-run", NULL };
    assert_int_equal(hf_annlab(f->dir, &log, dry1), 0);
    if (!strstr(log, " hnsw-record warm T=1 build={\"M\":8,\"ef_construction\":16,\"kv\":\"lmdb\"} "
                     "open={\"kv\":\"lmdb\"} search={\"ef_search\":20}\n") ||
        !strstr(log, "build={\"M\":8,\"ef_construction\":16,\"kv\":\"lmdb\"}: to build into index/hnsw-record/") ||
        !strstr(log, "(never built here: time unknown)\n") ||
        !strstr(log, "1 cells (0 already recorded); 1 builds (0 cached);") ||
        !strstr(log, "estimated time: about <1 s plus what was never timed here: 1 cells, 1 builds (from "
                     "no earlier run of this config)\n"))
        fail_msg("dry run:\n%s", log);
    free(log);
    /* the real run: the build's progress comes through the runner */
    const char *real[] = { "run", cfg_path, "--out", "results/dry/run1", NULL };
    setenv("ANNLAB_PROGRESS_AFTER_S", "0", 1);
    int rc = hf_annlab(f->dir, &log, real);
    unsetenv("ANNLAB_PROGRESS_AFTER_S");
    if (rc != 0 || !strstr(log, "build hnsw-record: hnsw graph (M 8, ef_construction 16): 100% (3000/3000 points, ") ||
        !strstr(log, "build hnsw-record: hnsw graph (M 8, ef_construction 16): done, 3000 points in "))
        fail_msg("exit %d:\n%s", rc, log);
    free(log);
    /* again: the index is cached and the cell was timed */
    const char *dry2[] = { "run", cfg_path, "--out", "results/dry/run2", "--dry-run", NULL };
    assert_int_equal(hf_annlab(f->dir, &log, dry2), 0);
    if (!strstr(log, ": cached in index/hnsw-record/") || !strstr(log, " last time]\n") ||
        !strstr(log, "1 cells (0 already recorded); 1 builds (1 cached);") ||
        !strstr(log, "(from results/dry/run1)\n") || strstr(log, "never timed"))
        fail_msg("second dry run:\n%s", log);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_and_flat_recall),
        cmocka_unit_test(test_resume_skips_finished),
        cmocka_unit_test(test_failed_cells_do_not_stop_the_sweep),
        cmocka_unit_test(test_timeout_recorded),
        cmocka_unit_test(test_interrupt_leaves_resumable_run),
        cmocka_unit_test(test_bad_config_refused_before_work),
        cmocka_unit_test(test_index_per_metric),
        cmocka_unit_test(test_index_per_format),
        cmocka_unit_test(test_sector_cell_reports),
        cmocka_unit_test(test_run_dir_locked),
        cmocka_unit_test(test_index_lock_and_dead_temporaries),
        cmocka_unit_test(test_failure_classes_and_retries),
        cmocka_unit_test(test_full_disk_builds),
        cmocka_unit_test(test_build_json_and_bundle_checked),
        cmocka_unit_test(test_capped_cell_oom),
        cmocka_unit_test(test_time_bounded_cell),
        cmocka_unit_test(test_reused_artifacts_shapes),
        cmocka_unit_test(test_index_keyed_default),
        cmocka_unit_test(test_warm_capped_reads_device),
        cmocka_unit_test(test_dry_run_and_build_progress),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
