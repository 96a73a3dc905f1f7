/*
 * test_workload.c: streaming workloads (harness/workload.h): the JSON steps
 * and big-ann runbooks (YAML) read into the same steps, every problem with
 * its exact message (JSON path or file and line), the steps played against
 * the dataset (ranges, deletes of ids not live), and what a workload asks
 * of the rest of the config.
 */
#include "engines/core/status.h"
#include "harness/config.h"
#include "harness/workload.h"
#include "harness/workload_gt.h"
#include "tests/support/harness_fixture.h"
#include "tests/support/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad test JSON: %s", e.text);
    return v;
}

static void print_problems(const harness_problems *p)
{
    for (int i = 0; i < p->n; i++)
        print_message("  problem: %s\n", p->msgs[i]);
}

static int has_problem(const harness_problems *p, const char *msg)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->msgs[i], msg))
            return 1;
    print_problems(p);
    print_message("  wanted:  %s\n", msg);
    return 0;
}

/* Parse the "workload" object text (config_dir for runbooks); the problems. */
static int wl_parse(const char *text, const char *dir, harness_workload *w, harness_problems *p)
{
    json_t *wl = parse(text);
    int n = harness_workload_parse(wl, dir, w, p);
    json_decref(wl);
    return n;
}

static void test_json_steps(void **state)
{
    (void)state;
    harness_problems p = { 0 };
    harness_workload w;
    assert_int_equal(wl_parse("{\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 100},"
                              " {\"op\": \"search\"}, {\"op\": \"delete\", \"start\": 10, \"end\": 20},"
                              " {\"op\": \"merge\"}, {\"op\": \"replace\", \"tags_start\": 0,"
                              " \"tags_end\": 5, \"ids_start\": 100, \"ids_end\": 105}],"
                              " \"writers\": 3}",
                              NULL, &w, &p),
                     0);
    assert_int_equal(w.n, 5);
    assert_int_equal(w.writers, 3);
    assert_int_equal(w.steps[0].op, HARNESS_WL_INSERT);
    assert_int_equal(w.steps[0].end, 100);
    assert_int_equal(w.steps[2].op, HARNESS_WL_DELETE);
    assert_int_equal(w.steps[2].start, 10);
    assert_int_equal(w.steps[4].op, HARNESS_WL_REPLACE);
    assert_int_equal(w.steps[4].ids_start, 100);
    assert_int_equal(w.steps[4].end, 5);
    assert_string_equal(w.steps[3].where, "workload.steps[3]");
    assert_int_equal(strlen(w.hash), 16);
    assert_int_equal(harness_workload_check(&w, 200, 0, &p), 0);
    harness_workload_fini(&w);

    /* every problem of the JSON form, at once, with its path */
    assert_int_equal(wl_parse("{\"steps\": [{\"op\": \"upsert\"}, {\"start\": 1},"
                              " {\"op\": \"insert\", \"start\": 0}, {\"op\": \"search\", \"k\": 3},"
                              " {\"op\": \"delete\", \"start\": -1, \"end\": 2}, 7],"
                              " \"writers\": 0, \"color\": 1}",
                              NULL, &w, &p),
                     8);
    assert_true(has_problem(&p, "workload.color: unknown key (known: steps, runbook, dataset, "
                                "writers, search_during_inserts, live_build)"));
    assert_true(has_problem(&p, "workload.writers: expected an integer in [1, 1024]"));
    assert_true(has_problem(&p, "workload.steps[0].op: unknown operation \"upsert\" (known: insert, "
                                "delete, search, merge, replace)"));
    assert_true(has_problem(&p, "workload.steps[1].op: missing (one of insert, delete, search, "
                                "merge, replace)"));
    assert_true(has_problem(&p, "workload.steps[2].end: missing"));
    assert_true(has_problem(&p, "workload.steps[3].k: unknown key for search (its fields: none)"));
    assert_true(has_problem(&p, "workload.steps[4].start: expected an integer >= 0"));
    assert_true(has_problem(&p, "workload.steps[5]: expected an object {\"op\": ...}"));
    assert_int_equal(w.n, 0); /* nothing half-read is kept */
    harness_problems_fini(&p);

    /* merge_every on an insert: one writer, and not on a built-over first step */
    assert_int_equal(wl_parse("{\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 100,"
                              " \"merge_every\": 10}, {\"op\": \"delete\", \"start\": 0,"
                              " \"end\": 5, \"merge_every\": 2}], \"writers\": 2}",
                              NULL, &w, &p),
                     3);
    assert_true(has_problem(&p, "workload.steps[0].merge_every: needs one writer "
                                "(workload.writers is 2)"));
    assert_true(has_problem(&p, "workload.steps[0].merge_every: the first step's vectors are "
                                "built over, not inserted (live_build: true inserts them)"));
    assert_true(has_problem(&p, "workload.steps[1].merge_every: unknown key for delete (its "
                                "fields: start, end)"));
    harness_problems_fini(&p);
    char plain[17];
    assert_int_equal(wl_parse("{\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 100}],"
                              " \"live_build\": true}",
                              NULL, &w, &p),
                     0);
    memcpy(plain, w.hash, sizeof plain);
    harness_workload_fini(&w);
    assert_int_equal(wl_parse("{\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 100,"
                              " \"merge_every\": 10}], \"live_build\": true}",
                              NULL, &w, &p),
                     0);
    assert_int_equal(w.steps[0].merge_every, 10);
    assert_string_not_equal(w.hash, plain); /* a different workload, its own ground truth */
    harness_workload_fini(&w);

    assert_int_equal(wl_parse("{\"steps\": [], \"runbook\": \"x.yaml\"}", NULL, &w, &p), 1);
    assert_true(has_problem(&p, "workload: give \"steps\" or \"runbook\", not both"));
    harness_problems_fini(&p);
    assert_int_equal(wl_parse("{\"dataset\": \"a\"}", NULL, &w, &p), 2);
    assert_true(has_problem(&p, "workload: missing \"steps\" (a list) or \"runbook\" (a YAML file)"));
    assert_true(has_problem(&p, "workload.dataset: expected a string naming an entry of the runbook"));
    harness_problems_fini(&p);
}

static const char *const yaml_text =
    "# a small runbook in big-ann-benchmarks' streaming format\n"
    "other-set:\n"
    "  max_pts: 10\n"
    "  1:\n"
    "    operation: search\n"
    "tiny:\n"
    "  max_pts: 150\n"
    "  2:\n"
    "    operation: search\n"
    "  1:\n"
    "    start: 0\n"
    "    end: 100\n"
    "    operation: insert\n"
    "  3:\n"
    "    operation: delete\n"
    "    start: 10\n"
    "    end: 20\n"
    "  4:\n"
    "    operation: merge\n"
    "  5:\n"
    "    operation: replace\n"
    "    tags_start: 0\n"
    "    tags_end: 5\n"
    "    ids_start: 100\n"
    "    ids_end: 105\n"
    "  6:\n"
    "    operation: search\n"
    "  gt_url: \"none\"\n";

static void test_yaml_equals_json(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("workload");
    char path[4200];
    snprintf(path, sizeof path, "%s/rb.yaml", dir);
    assert_int_equal(tu_write_file(path, yaml_text, strlen(yaml_text)), 0);
    harness_problems p = { 0 };
    harness_workload wy, wj;
    /* a relative runbook path is taken from the config's directory */
    assert_int_equal(wl_parse("{\"runbook\": \"rb.yaml\", \"dataset\": \"tiny\"}", dir, &wy, &p), 0);
    assert_int_equal(wl_parse("{\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 100},"
                              " {\"op\": \"search\"}, {\"op\": \"delete\", \"start\": 10, \"end\": 20},"
                              " {\"op\": \"merge\"}, {\"op\": \"replace\", \"tags_start\": 0,"
                              " \"tags_end\": 5, \"ids_start\": 100, \"ids_end\": 105},"
                              " {\"op\": \"search\"}]}",
                              NULL, &wj, &p),
                     0);
    json_t *a = harness_workload_steps_json(&wy), *b = harness_workload_steps_json(&wj);
    assert_true(json_equal(a, b));
    assert_string_equal(wy.hash, wj.hash);
    assert_int_equal(wy.max_pts, 150);
    assert_int_equal(wj.max_pts, 0);
    char want[4300];
    snprintf(want, sizeof want, "%s/rb.yaml:10: step 1", dir);
    assert_string_equal(wy.steps[0].where, want);
    /* max_pts is enforced: 100 live fit in 150, not in 99 */
    assert_int_equal(harness_workload_check(&wy, 1000, 0, &p), 0);
    wy.max_pts = 99;
    assert_int_equal(harness_workload_check(&wy, 1000, 0, &p), 1);
    snprintf(want, sizeof want, "%s/rb.yaml:10: step 1: 100 vectors live, more than the runbook's "
                                "max_pts 99", dir);
    assert_true(has_problem(&p, want));
    harness_problems_fini(&p);
    json_decref(a);
    json_decref(b);
    harness_workload_fini(&wy);
    harness_workload_fini(&wj);

    /* two entries and no "dataset": which one is not guessed */
    assert_int_equal(wl_parse("{\"runbook\": \"rb.yaml\"}", dir, &wy, &p), 1);
    snprintf(want, sizeof want, "%s/rb.yaml: holds 2 runbooks (other-set, tiny); workload.dataset "
                                "must name the one to run", dir);
    assert_true(has_problem(&p, want));
    harness_problems_fini(&p);
    assert_int_equal(wl_parse("{\"runbook\": \"rb.yaml\", \"dataset\": \"big\"}", dir, &wy, &p), 1);
    snprintf(want, sizeof want, "%s/rb.yaml: no runbook named \"big\" (it has: other-set, tiny)", dir);
    assert_true(has_problem(&p, want));
    harness_problems_fini(&p);
    tu_rmdir(dir);
}

static void test_yaml_errors(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("workload");
    char path[4200], want[4400];
    snprintf(path, sizeof path, "%s/bad.yaml", dir);
    static const char bad[] = "set:\n"
                              "  max_pts: many\n"
                              "  1:\n"
                              "    operation: upsert\n"
                              "  2:\n"
                              "    operation: insert\n"
                              "    start: 5\n"
                              "  4:\n"
                              "    operation: delete\n"
                              "    start: 0\n"
                              "    end: -3\n"
                              "    colour: red\n"
                              "  later: 1\n";
    assert_int_equal(tu_write_file(path, bad, strlen(bad)), 0);
    harness_problems p = { 0 };
    harness_workload w;
    assert_int_equal(wl_parse("{\"runbook\": \"bad.yaml\"}", dir, &w, &p), 7);
    static const char *const msgs[] = {
        "%s:2: max_pts: expected an integer >= 1",
        "%s:13: later: unknown key (known: max_pts, gt_url, and steps numbered 1, 2, ...)",
        "%s:4: step 1: unknown operation \"upsert\" (known: insert, delete, search, merge, replace)",
        "%s:5: step 2: end: missing",
        "%s: step 3: missing (steps are numbered 1, 2, ... without gaps; the last is 4)",
        "%s:11: step 4: end: expected an integer >= 0",
        "%s:12: step 4: colour: unknown key for delete (its fields: start, end)",
    };
    for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
        snprintf(want, sizeof want, msgs[i], path);
        assert_true(has_problem(&p, want));
    }
    assert_int_equal(w.n, 0);
    harness_problems_fini(&p);

    static const char broken[] = "set:\n  1:\n    operation: [insert\n";
    assert_int_equal(tu_write_file(path, broken, strlen(broken)), 0);
    assert_int_equal(wl_parse("{\"runbook\": \"bad.yaml\"}", dir, &w, &p), 1);
    assert_true(!strncmp(p.msgs[0], path, strlen(path)) && strstr(p.msgs[0], ": not valid YAML: "));
    harness_problems_fini(&p);
    assert_int_equal(wl_parse("{\"runbook\": \"absent.yaml\"}", dir, &w, &p), 1);
    snprintf(want, sizeof want, "workload.runbook: %s/absent.yaml: No such file or directory", dir);
    assert_true(has_problem(&p, want));
    harness_problems_fini(&p);
    tu_rmdir(dir);
}

/* The steps played against a dataset of n vectors: the first problem. */
static void check_one(const char *steps, uint64_t n, const char *want)
{
    char text[2048];
    snprintf(text, sizeof text, "{\"steps\": [%s]}", steps);
    harness_problems p = { 0 };
    harness_workload w;
    assert_int_equal(wl_parse(text, NULL, &w, &p), 0);
    assert_int_equal(harness_workload_check(&w, n, 0, &p), 1);
    assert_true(has_problem(&p, want));
    harness_problems_fini(&p);
    harness_workload_fini(&w);
}

#define INS0 "{\"op\": \"insert\", \"start\": 0, \"end\": 100}, "

static void test_check_against_dataset(void **state)
{
    (void)state;
    check_one("{\"op\": \"search\"}", 1000,
              "workload.steps[0]: the first step must insert [0, end): the index is built over "
              "those vectors before the other steps run (or set \"live_build\": true to build "
              "it over none and run every step)");
    check_one("{\"op\": \"insert\", \"start\": 5, \"end\": 100}", 1000,
              "workload.steps[0]: the first step must insert [0, end): the index is built over "
              "those vectors before the other steps run (or set \"live_build\": true to build "
              "it over none and run every step)");
    /* a live build: the index starts empty, so any first step (but a search
     * needs k vectors live, a delete live ids) */
    {
        harness_problems p = { 0 };
        harness_workload w;
        assert_int_equal(wl_parse("{\"steps\": [{\"op\": \"insert\", \"start\": 5, \"end\": 100},"
                                  " {\"op\": \"search\"}], \"live_build\": true}",
                                  NULL, &w, &p),
                         0);
        assert_true(w.live_build);
        assert_int_equal(harness_workload_check(&w, 1000, 10, &p), 0);
        harness_workload_fini(&w);
        assert_int_equal(wl_parse("{\"steps\": [{\"op\": \"search\"}], \"live_build\": true}",
                                  NULL, &w, &p),
                         0);
        assert_int_equal(harness_workload_check(&w, 1000, 10, &p), 1);
        assert_true(has_problem(&p, "workload.steps[0]: 0 vectors live, fewer than k = 10"));
        harness_workload_fini(&w);
        harness_problems_fini(&p);
        assert_int_equal(wl_parse("{\"steps\": [" INS0 "{\"op\": \"search\"}],"
                                  " \"live_build\": 1}", NULL, &w, &p),
                         1);
        assert_true(has_problem(&p, "workload.live_build: expected true or false"));
        harness_problems_fini(&p);
        /* without it the default: a build over the first step */
        assert_int_equal(wl_parse("{\"steps\": [" INS0 "{\"op\": \"search\"}]}", NULL, &w, &p),
                         0);
        assert_false(w.live_build);
        harness_workload_fini(&w);
    }
    check_one(INS0 "{\"op\": \"insert\", \"start\": 900, \"end\": 1001}", 1000,
              "workload.steps[1]: insert [900, 1001) is outside the dataset's 1000 vectors");
    check_one(INS0 "{\"op\": \"insert\", \"start\": 90, \"end\": 110}", 1000,
              "workload.steps[1]: insert [90, 110): id 90 is live already");
    check_one(INS0 "{\"op\": \"delete\", \"start\": 50, \"end\": 50}", 1000,
              "workload.steps[1]: delete [50, 50) is empty (start must be below end)");
    check_one(INS0 "{\"op\": \"delete\", \"start\": 0, \"end\": 10}, {\"op\": \"merge\"},"
                   "{\"op\": \"delete\", \"start\": 5, \"end\": 20}",
              1000, "workload.steps[3]: delete [5, 20): id 5 is not live");
    check_one(INS0 "{\"op\": \"delete\", \"start\": 99, \"end\": 101}", 1000,
              "workload.steps[1]: delete [99, 101): id 100 is not live");
    check_one(INS0 "{\"op\": \"replace\", \"tags_start\": 0, \"tags_end\": 4, \"ids_start\": 200,"
                   " \"ids_end\": 205}",
              1000, "workload.steps[1]: replace: 4 tags but 5 ids (want as many)");
    check_one(INS0 "{\"op\": \"replace\", \"tags_start\": 0, \"tags_end\": 4, \"ids_start\": 98,"
                   " \"ids_end\": 102}",
              1000, "workload.steps[1]: replace ids [98, 102): row 98 is live already (id 98)");
    check_one(INS0 "{\"op\": \"replace\", \"tags_start\": 98, \"tags_end\": 102, \"ids_start\": 200,"
                   " \"ids_end\": 204}",
              1000, "workload.steps[1]: replace tags [98, 102): id 100 is not live");
    /* a replaced id's old row may be inserted again; its new row may not */
    check_one(INS0 "{\"op\": \"replace\", \"tags_start\": 0, \"tags_end\": 2, \"ids_start\": 200,"
                   " \"ids_end\": 202}, {\"op\": \"insert\", \"start\": 200, \"end\": 201}",
              1000,
              "workload.steps[2]: insert [200, 201): id 200 is live already (its row is another "
              "id's, by a replace)");
    /* fewer than k live at a search step */
    harness_problems p = { 0 };
    harness_workload w;
    assert_int_equal(wl_parse("{\"steps\": [" INS0 "{\"op\": \"delete\", \"start\": 0, \"end\": 95},"
                              " {\"op\": \"search\"}]}", NULL, &w, &p), 0);
    assert_int_equal(harness_workload_check(&w, 1000, 10, &p), 1);
    assert_true(has_problem(&p, "workload.steps[2]: 5 vectors live, fewer than k = 10"));
    harness_problems_fini(&p);
    assert_int_equal(harness_workload_check(&w, 1000, 5, &p), 0);
    harness_workload_fini(&w);
    assert_int_equal(wl_parse("{\"steps\": [" INS0 "{\"op\": \"replace\", \"tags_start\": 0,"
                              " \"tags_end\": 2, \"ids_start\": 200, \"ids_end\": 202},"
                              " {\"op\": \"delete\", \"start\": 0, \"end\": 1},"
                              " {\"op\": \"insert\", \"start\": 0, \"end\": 1}]}",
                              NULL, &w, &p),
                     0);
    assert_int_equal(harness_workload_check(&w, 1000, 0, &p), 0);
    harness_workload_fini(&w);
}

/* The steps of the ground-truth tests: inserts, a delete, a replace, four searches. */
static const char *const gt_steps =
    "{\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 300}, {\"op\": \"search\"},"
    " {\"op\": \"delete\", \"start\": 0, \"end\": 150}, {\"op\": \"search\"},"
    " {\"op\": \"insert\", \"start\": 300, \"end\": 400}, {\"op\": \"merge\"},"
    " {\"op\": \"replace\", \"tags_start\": 150, \"tags_end\": 200, \"ids_start\": 450,"
    "  \"ids_end\": 500}, {\"op\": \"search\"}, {\"op\": \"delete\", \"start\": 160,"
    "  \"end\": 400}, {\"op\": \"search\"}]}";

/*
 * The per-step ground truth against an independent brute force written
 * here: the live rows tracked by hand (not by harness_wl_apply), every
 * distance in double, the k smallest by selection.
 */
static void test_gt_against_brute_force(void **state)
{
    (void)state;
    enum { N = 500, DIM = 8, NQ = 12, K = 10 };
    float *base = tu_clustered(N, DIM, 5, 3, 0), *q = tu_clustered(NQ, DIM, 5, 4, 0);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(base, N, DIM, ANN_METRIC_L2, &src), 0);
    harness_problems p = { 0 };
    harness_workload w;
    assert_int_equal(wl_parse(gt_steps, NULL, &w, &p), 0);
    ann_gt gt;
    assert_int_equal(harness_workload_gt_compute(&w, src, q, NQ, K, &gt), 0);
    assert_int_equal(gt.nq, 4 * NQ);
    assert_int_equal(gt.k, K);
    /* the live rows at each search, by hand */
    static char live[4][N];
    memset(live, 0, sizeof live);
    for (int r = 0; r < 300; r++)
        live[0][r] = 1;
    memcpy(live[1], live[0], N);
    for (int r = 0; r < 150; r++)
        live[1][r] = 0;
    memcpy(live[2], live[1], N);
    for (int r = 300; r < 400; r++)
        live[2][r] = 1;
    for (int r = 150; r < 200; r++) { /* ids 150..199 now hold rows 450..499 */
        live[2][r] = 0;
        live[2][r + 300] = 1;
    }
    memcpy(live[3], live[2], N);
    for (int r = 200; r < 400; r++) /* ids 160..399: rows 200..399 and, by the replace, 460..499 */
        live[3][r] = 0;
    for (int r = 460; r < 500; r++)
        live[3][r] = 0;
    for (int r = 450; r < 460; r++)
        assert_true(live[3][r]); /* ids 150..159 kept their new rows */
    for (int s = 0; s < 4; s++)
        for (int qi = 0; qi < NQ; qi++) {
            double d[N];
            for (int r = 0; r < N; r++) {
                d[r] = INFINITY;
                if (!live[s][r])
                    continue;
                double acc = 0;
                for (int j = 0; j < DIM; j++) {
                    double t = (double)base[r * DIM + j] - q[qi * DIM + j];
                    acc += t * t;
                }
                d[r] = acc;
            }
            const int32_t *ids = gt.ids + ((size_t)s * NQ + qi) * K;
            const float *gd = gt.dists + ((size_t)s * NQ + qi) * K;
            char taken[N] = { 0 };
            for (int rank = 0; rank < K; rank++) {
                int best = -1;
                for (int r = 0; r < N; r++)
                    if (!taken[r] && isfinite(d[r]) && (best < 0 || d[r] < d[best]))
                        best = r;
                taken[best] = 1;
                assert_true(live[s][ids[rank]]); /* never a row not live */
                assert_int_equal(ids[rank], best);
                assert_true(fabs(gd[rank] - d[best]) <= 1e-4 * (1 + d[best]));
            }
        }
    ann_gt_free(&gt);
    /* fewer than k live at a search: an error naming the step */
    harness_workload_fini(&w);
    assert_int_equal(wl_parse("{\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 20},"
                              " {\"op\": \"delete\", \"start\": 0, \"end\": 15}, {\"op\": \"search\"}]}",
                              NULL, &w, &p),
                     0);
    assert_int_equal(harness_workload_gt_compute(&w, src, q, NQ, K, &gt), ANN_ECONFIG);
    assert_string_equal(ann_errmsg(ANN_ECONFIG), "workload.steps[2]: 5 vectors live, fewer than k = 10");
    harness_workload_fini(&w);
    ann_vecsrc_destroy(src);
    free(base);
    free(q);
}

/* The cache beside the bundle: written once, reused, recomputed when stale or corrupt. */
static void test_gt_cache(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("workload-gt");
    char bdir[4200], path[4400], again[4400], side[4400];
    snprintf(bdir, sizeof bdir, "%s/bundle", dir);
    assert_int_equal(hf_bundle(bdir, 500, 8, 12, 0, 10, 5), 0);
    ann_bundle ds;
    assert_int_equal(ann_bundle_open(bdir, &ds), 0);
    harness_problems p = { 0 };
    harness_workload w;
    assert_int_equal(wl_parse(gt_steps, NULL, &w, &p), 0);
    int computed = -1;
    assert_int_equal(harness_workload_gt_ensure(&w, &ds, 12, 10, path, sizeof path, &computed), 0);
    assert_int_equal(computed, 1);
    char want[4400];
    snprintf(want, sizeof want, "%s/workload-gt/%s-q12-k10.ibin", bdir, w.hash);
    assert_string_equal(path, want);
    size_t len = 0;
    unsigned char *bytes = tu_read_file(path, &len);
    assert_int_equal(len, 8 + 4 * 12 * 10 * 8);
    assert_int_equal(harness_workload_gt_ensure(&w, &ds, 12, 10, again, sizeof again, &computed), 0);
    assert_int_equal(computed, 0);
    /* a flipped byte: recomputed, and the same bytes again */
    bytes[len - 3] ^= 0x40;
    assert_int_equal(tu_write_file(path, bytes, len), 0);
    assert_int_equal(harness_workload_gt_ensure(&w, &ds, 12, 10, again, sizeof again, &computed), 0);
    assert_int_equal(computed, 1);
    bytes[len - 3] ^= 0x40;
    size_t len2 = 0;
    unsigned char *now = tu_read_file(path, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(now, bytes, len);
    free(now);
    /* a truncated sidecar, or one of another depth: recomputed */
    snprintf(side, sizeof side, "%s/workload-gt/%s-q12-k10.json", bdir, w.hash);
    assert_int_equal(tu_write_file(side, "{\"steps_hash\"", 13), 0);
    assert_int_equal(harness_workload_gt_ensure(&w, &ds, 12, 10, again, sizeof again, &computed), 0);
    assert_int_equal(computed, 1);
    assert_int_equal(harness_workload_gt_ensure(&w, &ds, 12, 5, again, sizeof again, &computed), 0);
    assert_int_equal(computed, 1);
    assert_int_equal(harness_workload_gt_ensure(&w, &ds, 12, 10, again, sizeof again, &computed), 0);
    assert_int_equal(computed, 0);
    free(bytes);
    harness_workload_fini(&w);
    ann_bundle_close(&ds);
    tu_rmdir(dir);
}

static void test_config_rules(void **state)
{
    (void)state;
    harness_problems p = { 0 };
    json_t *cfg = parse("{\"name\": \"s\", \"dataset\": \"d\", \"modes\": [\"cold\", \"warm\"],"
                        " \"memory_caps\": [null, \"1GiB\"], \"repeats\": 2,"
                        " \"engines\": [{\"engine\": \"flat\"}, {\"engine\": \"diskann-record\"},"
                        "   {\"engine\": \"diskann-record\", \"label\": \"u\", \"open\": {\"updates\": true}}],"
                        " \"workload\": {\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 10}]}}");
    assert_int_equal(harness_config_check(cfg, &p), 5);
    assert_true(has_problem(&p, "modes[0]: a workload runs warm only (each step is measured on the "
                                "index its updates left in memory)"));
    assert_true(has_problem(&p, "memory_caps[1]: a workload runs uncapped (give null)"));
    assert_true(has_problem(&p, "repeats: a workload runs once (its steps change the index); give 1"));
    assert_true(has_problem(&p, "engines[0]: flat has no insert/remove; a workload needs an engine "
                                "that accepts updates"));
    assert_true(has_problem(&p, "engines[1].open.updates: a workload needs true (diskann-record opens "
                                "its index read-only otherwise)"));
    harness_problems_fini(&p);
    json_decref(cfg);

    /* a target recall is tuned on a static index: not with a workload */
    cfg = parse("{\"name\": \"s\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"diskann-record\","
                " \"open\": {\"updates\": true}, \"search\": {\"L\": [20, {\"target_recall\": 0.9}]}}],"
                " \"workload\": {\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 10}],"
                " \"search_during_inserts\": 1}}");
    assert_int_equal(harness_config_check(cfg, &p), 2);
    assert_true(has_problem(&p, "engines[0].search.L: a workload measures the efforts it is given, "
                                "not a target recall (give a number)"));
    assert_true(has_problem(&p, "workload.search_during_inserts: expected true or false"));
    harness_problems_fini(&p);
    json_decref(cfg);

    /* valid: warm only by default; the workload is part of each cell's identity */
    cfg = parse("{\"name\": \"s\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"diskann-record\","
                " \"open\": {\"updates\": true}, \"search\": {\"L\": [20, 40]}}],"
                " \"workload\": {\"steps\": [{\"op\": \"insert\", \"start\": 0, \"end\": 10}]}}");
    assert_int_equal(harness_config_check(cfg, &p), 0);
    json_t *cells = harness_config_expand(cfg);
    assert_int_equal(json_array_size(cells), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cells, 0), "mode")), "warm");
    char before[17], after[17];
    json_t *c = json_array_get(cells, 0);
    harness_cell_id(c, before);
    json_object_set_new(c, "workload", json_string("0123456789abcdef"));
    harness_cell_id(c, after);
    assert_string_not_equal(before, after);
    json_decref(cells);
    json_decref(cfg);
}

/* ---- end to end: `annlab run` with a runbook ------------------------------ */

static const char *const e2e_runbook =
    "tiny:\n"
    "  max_pts: 3000\n"
    "  1: {operation: insert, start: 0, end: 1500}\n"
    "  2: {operation: search}\n"
    "  3: {operation: insert, start: 1500, end: 2200}\n"
    "  4: {operation: search}\n"
    "  5: {operation: delete, start: 0, end: 600}\n"
    "  6: {operation: search}\n"
    "  7: {operation: merge}\n"
    "  8: {operation: search}\n"
    "  9: {operation: replace, tags_start: 600, tags_end: 700, ids_start: 2200, ids_end: 2300}\n"
    "  10: {operation: search}\n"
    "  11: {operation: delete, start: 700, end: 1500}\n"
    "  12: {operation: search}\n";

static json_t *load_lines(const char *path)
{
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    json_t *cells = json_array();
    static char line[1 << 20];
    while (fgets(line, sizeof line, fp)) {
        json_error_t e;
        json_t *c = json_loads(line, 0, &e);
        assert_non_null(c);
        json_array_append_new(cells, c);
    }
    fclose(fp);
    return cells;
}

static double num(const json_t *o, const char *k1, const char *k2)
{
    const json_t *v = json_object_get(o, k1);
    if (k2)
        v = json_object_get(v, k2);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static void test_end_to_end(void **state)
{
    (void)state;
    if (!hf_bin()) {
        print_message("ANNLAB_BIN unset: skipping the end-to-end run\n");
        skip();
    }
    char *dir = tu_tmpdir("workload-run");
    char bundle[4200], cfg_path[4200], rb[4200], out[4200], out2[4200], path[4400];
    snprintf(bundle, sizeof bundle, "%s/bundle", dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/stream.json", dir);
    snprintf(rb, sizeof rb, "%s/tiny.yaml", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(out2, sizeof out2, "%s/out2", dir);
    assert_int_equal(hf_bundle(bundle, 3000, 32, 40, 0, 10, 21), 0);
    assert_int_equal(tu_write_file(rb, e2e_runbook, strlen(e2e_runbook)), 0);
    json_t *cfg = json_pack(
        "{s:s, s:{s:s}, s:i, s:i, s:[{s:s, s:{s:i, s:i, s:f, s:i}, s:{s:s, s:b}, s:{s:i}}],"
        " s:[i], s:i, s:b, s:{s:s, s:i, s:b}}",
        "name", "stream", "dataset", "path", bundle, "k", 10, "queries", 40, "engines", "engine",
        "diskann-record", "build", "R", 24, "L_build", 48, "alpha", 1.2, "pq_bytes", 16, "open",
        "kv", "lmdb", "updates", 1, "search", "L", 40, "threads", 2, "warmup_queries", 0,
        "drop_caches", 0, "workload", "runbook", "tiny.yaml", "writers", 2, "search_during_inserts", 1);
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    char *log = NULL;
    const char *args[] = { "run", cfg_path, "--out", out, NULL };
    int rc = hf_annlab(dir, &log, args);
    if (rc != 0)
        print_message("%s\n", log ? log : "");
    assert_int_equal(rc, 0);
    free(log);
    snprintf(path, sizeof path, "%s/cells.jsonl", out);
    json_t *lines = load_lines(path);
    if (json_array_size(lines) != 12) /* a failed cell is one line: say why */
        print_message("cells.jsonl: %zu lines; the first: %s: %s\n", json_array_size(lines),
                      json_string_value(json_object_get(json_array_get(lines, 0), "status")),
                      json_string_value(json_object_get(json_array_get(lines, 0), "reason")));
    assert_int_equal(json_array_size(lines), 12);
    /* pending and deleted as the steps left them; ops in runbook order */
    static const char *const ops[] = { "insert", "search", "insert", "search", "delete", "search",
                                       "merge", "search", "replace", "search", "delete", "search" };
    static const int pending[12] = { [1] = 0, [3] = 700, [5] = 700, [7] = 0, [9] = 100, [11] = 100 };
    static const int deleted[12] = { [1] = 0, [3] = 0, [5] = 600, [7] = 0, [9] = 0, [11] = 800 };
    char cell[32];
    const char *wc = json_string_value(json_object_get(json_array_get(lines, 0), "workload_cell"));
    assert_non_null(wc);
    snprintf(cell, sizeof cell, "%s", wc);
    double recalls[12] = { 0 };
    for (size_t i = 0; i < 12; i++) {
        const json_t *l = json_array_get(lines, i);
        assert_string_equal(json_string_value(json_object_get(l, "status")), "ok");
        assert_int_equal(json_integer_value(json_object_get(l, "step")), i + 1); /* the runbook's number */
        assert_string_equal(json_string_value(json_object_get(l, "op")), ops[i]);
        assert_string_equal(json_string_value(json_object_get(l, "workload_cell")), cell);
        char id[64];
        snprintf(id, sizeof id, "%s.%zu", cell, i + 1);
        assert_string_equal(json_string_value(json_object_get(l, "id")), id);
        assert_true(num(l, "store_bytes", NULL) > 0);
        if (!strcmp(ops[i], "search")) {
            recalls[i] = num(l, "recall", NULL);
            print_message("step %zu: recall %.3f pending %d deleted %d\n", i, recalls[i],
                          pending[i], deleted[i]);
            /* the ids the engine returned, read here: none deleted, none never inserted */
            char nb[4400];
            snprintf(nb, sizeof nb, "%s/%s", out, json_string_value(json_object_get(l, "neighbors_file")));
            size_t nb_len = 0;
            unsigned char *raw = tu_read_file(nb, &nb_len);
            assert_non_null(raw);
            uint32_t hdr[2];
            memcpy(hdr, raw, 8);
            assert_int_equal(hdr[0], 40);
            assert_int_equal(hdr[1], 10);
            assert_int_equal(nb_len, 8 + 40 * 10 * 4);
            size_t returned = 0;
            for (size_t j = 0; j < 400; j++) {
                int32_t id;
                memcpy(&id, raw + 8 + 4 * j, 4);
                if (id < 0)
                    continue;
                returned++;
                assert_true(id < 2200);                 /* ids 2200.. were never inserted */
                if (i >= 5)
                    assert_true(id >= 600);             /* deleted at step 5 */
                if (i >= 11)
                    assert_true(id < 700 || id >= 1500); /* deleted at step 11 */
            }
            assert_int_equal(returned, 400);
            free(raw);
            /* measured 0.995-1.000 at L 40 (2026-12-02) */
            assert_true(recalls[i] >= 0.95);
            /* a deleted id is never returned */
            assert_int_equal(json_integer_value(json_object_get(l, "returned_not_live")), 0);
            assert_int_equal(json_integer_value(json_object_get(l, "pending")), pending[i]);
            assert_int_equal(json_integer_value(json_object_get(l, "deleted")), deleted[i]);
            assert_true(num(l, "latency_us", "p50") > 0);
            assert_true(num(l, "latency_us", "p99") >= num(l, "latency_us", "p50"));
            assert_true(num(l, "qps", NULL) > 0);
        } else if (i > 0 && (!strcmp(ops[i], "insert") || !strcmp(ops[i], "replace"))) {
            assert_true(num(l, "insert_latency_us", "p99") >= num(l, "insert_latency_us", "p50"));
            assert_true(num(l, "inserts_per_s", NULL) > 0);
            if (!strcmp(ops[i], "insert")) {
                /* the cell's two search threads queried while the writers inserted */
                const json_t *during = json_object_get(l, "search_during_inserts");
                assert_int_equal(json_integer_value(json_object_get(during, "threads")), 2);
                assert_true(num(during, "queries", NULL) > 0);
                assert_true(num(during, "latency_us", "p99") > 0);
                assert_int_equal(num(l, "pending_before", NULL), 0); /* step 3 follows the build */
            }
        } else if (!strcmp(ops[i], "merge")) {
            assert_true(num(l, "merge_seconds", NULL) >= 0);
        }
    }
    assert_true(json_is_true(json_object_get(json_array_get(lines, 0), "built")));
    assert_null(json_object_get(json_array_get(lines, 0), "insert_latency_us")); /* built, not inserted */
    json_decref(lines);
    /* the tables show the workload */
    snprintf(path, sizeof path, "%s/tables.md", out);
    char *md = tu_read_file(path, NULL);
    assert_non_null(md);
    assert_non_null(strstr(md, "## Workload steps"));
    assert_non_null(strstr(md, "| 5 | delete | [0, 600) |"));
    assert_non_null(strstr(md, "| 9 | replace | ids [600, 700) <- rows [2200, 2300) |"));
    free(md);
    /* and the figures over steps, where gnuplot is installed (scripts/deps.sh) */
    if (access("/usr/bin/gnuplot", X_OK) == 0) {
        static const char *const figs[] = { "workload_recall", "workload_latency",
                                            "workload_insert_latency", "workload_insert_vs_pending" };
        for (size_t i = 0; i < 4; i++) {
            snprintf(path, sizeof path, "%s/%s.png", out, figs[i]);
            assert_int_equal(access(path, F_OK), 0);
        }
    }
    /* --resume: the workload cell is recorded (by its step lines), nothing runs again */
    const char *args_r[] = { "run", cfg_path, "--out", out, "--resume", NULL };
    rc = hf_annlab(dir, &log, args_r);
    if (rc != 0 || !strstr(log, "1 already recorded"))
        print_message("%s\n", log ? log : "");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(log, "0 ok, 0 error, 0 timeout, 0 oom, 0 skipped, 1 already recorded"));
    free(log);
    snprintf(path, sizeof path, "%s/cells.jsonl", out);
    lines = load_lines(path);
    assert_int_equal(json_array_size(lines), 12);
    json_decref(lines);
    /* a second run reuses the cached build: it was copied, never written
     * (its files still have the sha256s build.json records) */
    const char *args2[] = { "run", cfg_path, "--out", out2, NULL };
    rc = hf_annlab(dir, &log, args2);
    if (rc != 0)
        print_message("%s\n", log ? log : "");
    assert_int_equal(rc, 0);
    free(log);
    snprintf(path, sizeof path, "%s/cells.jsonl", out2);
    lines = load_lines(path);
    assert_int_equal(json_array_size(lines), 12);
    const json_t *l1 = json_array_get(lines, 1);
    assert_true(json_is_true(json_object_get(json_object_get(l1, "index"), "cached_at_run")));
    assert_true(fabs(num(l1, "recall", NULL) - recalls[1]) < 1e-12);
    json_decref(lines);
    /* a paper layout over a workload run (paper-cohere-updates): drawn from
     * the step lines, before the generic workload table */
    {
        char cj[4400];
        snprintf(cj, sizeof cj, "%s/config.json", out2);
        json_error_t je;
        json_t *rc_cfg = json_load_file(cj, 0, &je);
        assert_non_null(rc_cfg);
        json_object_set_new(rc_cfg, "tables", json_string("paper-cohere-updates"));
        assert_int_equal(hf_write_json(cj, rc_cfg), 0);
        json_decref(rc_cfg);
        const char *args_t[] = { "table", out2, NULL };
        rc = hf_annlab(dir, &log, args_t);
        if (rc != 0)
            print_message("%s\n", log ? log : "");
        assert_int_equal(rc, 0);
        free(log);
        snprintf(path, sizeof path, "%s/tables.md", out2);
        md = tu_read_file(path, NULL);
        assert_non_null(md);
        const char *upd = strstr(md, "## Updates: searches with pending inserts");
        const char *gen = strstr(md, "## Workload steps");
        assert_non_null(upd);
        assert_non_null(gen);
        assert_true(upd < gen);
        assert_non_null(strstr(md, "| DiskANN (records) | 1 | insert | 1500 | built over them | | | | |"));
        assert_non_null(strstr(md, "| DiskANN (records) | 5 | delete | 600 |"));
        free(md);
    }
    /* a cell killed at its timeout: one line with its status, and its copy
     * of the index removed by the runner (the child could not) */
    json_object_set_new(cfg, "timeout_s", json_real(0.001));
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    char out3[4200];
    snprintf(out3, sizeof out3, "%s/out3", dir);
    const char *args3[] = { "run", cfg_path, "--out", out3, NULL };
    rc = hf_annlab(dir, &log, args3);
    free(log);
    snprintf(path, sizeof path, "%s/cells.jsonl", out3);
    lines = load_lines(path);
    assert_int_equal(json_array_size(lines), 1);
    const json_t *t = json_array_get(lines, 0);
    assert_string_equal(json_string_value(json_object_get(t, "status")), "timeout");
    assert_string_equal(json_string_value(json_object_get(t, "id")), cell);
    snprintf(path, sizeof path, "%s/work", out3);
    assert_int_not_equal(access(path, F_OK), 0);
    json_decref(lines);
    json_decref(cfg);
    tu_rmdir(dir);
}

/*
 * "live_build": true: the cell's index is built over no vectors and the
 * first step is inserted through the engine (diskann-record trains PQ and
 * builds its first graph on the insert that reaches 1,024 live vectors,
 * the rest go through its pending list and the merge).
 */
static void test_live_build_end_to_end(void **state)
{
    (void)state;
    if (!hf_bin()) {
        print_message("ANNLAB_BIN unset: skipping the end-to-end run\n");
        skip();
    }
    char *dir = tu_tmpdir("workload-live");
    char bundle[4200], cfg_path[4200], out[4200], path[4400];
    snprintf(bundle, sizeof bundle, "%s/bundle", dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/live.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    assert_int_equal(hf_bundle(bundle, 3000, 32, 40, 0, 10, 21), 0);
    /* merged after every 500 inserts: twice while it scans, once after
     * the graph is built (at 1,024) */
    json_t *steps = parse("[{\"op\": \"insert\", \"start\": 0, \"end\": 1500,"
                          " \"merge_every\": 500},"
                          " {\"op\": \"search\"}, {\"op\": \"delete\", \"start\": 0,"
                          " \"end\": 300}, {\"op\": \"merge\"}, {\"op\": \"search\"}]");
    json_t *cfg = json_pack(
        "{s:s, s:{s:s}, s:i, s:i, s:[{s:s, s:{s:i, s:i, s:f, s:i}, s:{s:s, s:b}, s:{s:i}}],"
        " s:[i], s:i, s:b, s:{s:o, s:b}}",
        "name", "live", "dataset", "path", bundle, "k", 10, "queries", 40, "engines", "engine",
        "diskann-record", "build", "R", 24, "L_build", 48, "alpha", 1.2, "pq_bytes", 16, "open",
        "kv", "lmdb", "updates", 1, "search", "L", 40, "threads", 1, "warmup_queries", 0,
        "drop_caches", 0, "workload", "steps", steps, "live_build", 1);
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    char *log = NULL;
    const char *args[] = { "run", cfg_path, "--out", out, NULL };
    int rc = hf_annlab(dir, &log, args);
    if (rc != 0)
        print_message("%s\n", log ? log : "");
    assert_int_equal(rc, 0);
    free(log);
    snprintf(path, sizeof path, "%s/cells.jsonl", out);
    json_t *lines = load_lines(path);
    if (json_array_size(lines) != 5)
        print_message("cells.jsonl: %zu lines; the first: %s: %s\n", json_array_size(lines),
                      json_string_value(json_object_get(json_array_get(lines, 0), "status")),
                      json_string_value(json_object_get(json_array_get(lines, 0), "reason")));
    assert_int_equal(json_array_size(lines), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(lines, i), "status")),
                            "ok");
    /* the first step was inserted, not built */
    const json_t *first = json_array_get(lines, 0);
    assert_null(json_object_get(first, "built"));
    assert_true(num(first, "insert_latency_us", "p99") > 0);
    assert_int_equal(json_integer_value(json_object_get(first, "merges")), 3);
    assert_true(num(first, "merge_seconds", NULL) > 0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 1), "pending")), 0);
    for (size_t i = 1; i < 5; i += 3) {
        const json_t *l = json_array_get(lines, i);
        print_message("live build, step %zu: recall %.3f\n", i + 1, num(l, "recall", NULL));
        assert_true(num(l, "recall", NULL) >= 0.90);
        assert_int_equal(json_integer_value(json_object_get(l, "returned_not_live")), 0);
    }
    /* the cached build is the empty index */
    const char *ixd = json_string_value(json_object_get(json_object_get(first, "index"), "dir"));
    assert_non_null(ixd);
    if (ixd[0] == '/') /* else relative to the run's directory */
        snprintf(path, sizeof path, "%s/build.json", ixd);
    else
        snprintf(path, sizeof path, "%s/%s/build.json", dir, ixd);
    json_error_t jerr;
    json_t *info = json_load_file(path, 0, &jerr);
    assert_non_null(info);
    assert_int_equal(json_integer_value(json_object_get(info, "n")), 0);
    json_decref(info);
    json_decref(lines);
    tu_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_steps),
        cmocka_unit_test(test_yaml_equals_json),
        cmocka_unit_test(test_yaml_errors),
        cmocka_unit_test(test_check_against_dataset),
        cmocka_unit_test(test_gt_against_brute_force),
        cmocka_unit_test(test_gt_cache),
        cmocka_unit_test(test_config_rules),
        cmocka_unit_test(test_end_to_end),
        cmocka_unit_test(test_live_build_end_to_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
