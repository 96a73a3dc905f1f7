/*
 * test_tune.c: target-recall search.  A fake engine whose recall is known
 * for every effort (it returns the first effort/10 true neighbours, then
 * points beyond the k-th) shows that the search finds the smallest effort
 * reaching the target by doubling and bisection, stops when recall stops
 * growing and says the target was not reached, and frees each context
 * before the next; its effort parameter is "depth", a name no engine of
 * the registry uses, so the target applies to whatever an engine declares
 * (ann_engine_ops.effort_param) and to nothing else; the config checks
 * name a bad target exactly; and a real run tunes hnsw-record on the
 * warm-up queries and measures what it found.
 */
#include "datasets/bundle.h"
#include "engines/core/status.h"
#include "harness/config.h"
#include "harness/tune.h"
#include "tests/support/harness_fixture.h"
#include "tests/support/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- the fake engine ---------------------------------------------------- */

struct ann_engine {
    const ann_gt *gt;
    uint32_t cap;   /* recall never exceeds cap/10 */
    int live;       /* contexts alive */
    int max_live;
};

struct ann_ctx {
    struct ann_engine *e;
    int64_t effort;
    uint32_t next; /* queries come in order */
};

static int fake_ctx_new(ann_engine *eng, const json_t *search, uint32_t k_max, ann_ctx **out)
{
    (void)k_max;
    ann_ctx *c = calloc(1, sizeof *c);
    c->e = eng;
    c->effort = json_integer_value(json_object_get(search, "depth"));
    if (++eng->live > eng->max_live)
        eng->max_live = eng->live;
    *out = c;
    return 0;
}

static void fake_ctx_free(ann_ctx *c)
{
    c->e->live--;
    free(c);
}

static int fake_search(ann_ctx *c, const float *q, uint32_t k, uint32_t *ids, float *dists, ann_stats *st)
{
    (void)q;
    (void)dists;
    (void)st;
    const ann_gt *gt = c->e->gt;
    uint32_t good = (uint32_t)(c->effort / 10);
    if (good > c->e->cap)
        good = c->e->cap;
    if (good > k)
        good = k;
    const int32_t *row = gt->ids + (size_t)c->next++ * gt->k;
    for (uint32_t r = 0; r < k; r++)
        ids[r] = (uint32_t)(r < good ? row[r] : row[k + r]); /* ranks k.. are beyond the k-th */
    return (int)k;
}

static const ann_param_spec fake_search_params[] = {
    { .name = "width", .type = ANN_PARAM_INT, .min = 1, .max = 64, .def = 4 },
    { .name = "depth", .type = ANN_PARAM_INT, .min = 1, .max = 100000, .def = 100 },
    ANN_PARAM_END,
};

static const ann_engine_ops fake_ops = {
    .name = "fake",
    .search_params = fake_search_params,
    .effort_param = "depth",
    .ctx_new = fake_ctx_new,
    .ctx_free = fake_ctx_free,
    .search = fake_search,
};

typedef struct fx {
    char *dir;
    ann_bundle b;
    ann_gt gt;
    float *queries;
    ann_vecsrc *base;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir("tune");
    char p[4200];
    snprintf(p, sizeof p, "%s/bundle", f->dir);
    if (hf_bundle(p, 1000, 8, 40, 40, 20, 3) || ann_bundle_open(p, &f->b) || ann_bundle_gt(&f->b, &f->gt) ||
        ann_bundle_queries(&f->b, &f->queries) || ann_bundle_base(&f->b, &f->base))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    ann_vecsrc_destroy(f->base);
    free(f->queries);
    ann_gt_free(&f->gt);
    ann_bundle_close(&f->b);
    tu_rmdir(f->dir);
    free(f);
    return 0;
}

static json_t *tune(fx *f, uint32_t cap, double target, int64_t *found, struct ann_engine *eng)
{
    *eng = (struct ann_engine){ .gt = &f->gt, .cap = cap };
    json_t *search = json_pack("{s:{s:f}}", "depth", "target_recall", target);
    const ann_param_spec *spec = harness_tune_effort_spec(&fake_ops);
    assert_ptr_equal(spec, &fake_search_params[1]);
    harness_tune_in in = { .ops = &fake_ops, .eng = eng, .search = search, .param = spec->name, .target = target,
                           .spec = spec, .k = 10, .queries = f->queries, .nq = 40,
                           .gt = &f->gt, .base = f->base };
    json_t *report = NULL;
    int rc = harness_tune_run(&in, found, &report);
    if (rc)
        fail_msg("%s", ann_errmsg(rc));
    json_decref(search);
    return report;
}

static void test_finds_smallest_effort(void **state)
{
    fx *f = *state;
    int64_t found = 0;
    struct ann_engine eng;
    /* recall(depth) = min(10, depth/10)/10: 0.75 first reached at depth 80 */
    json_t *r = tune(f, 10, 0.75, &found, &eng);
    assert_int_equal(found, 80);
    assert_true(json_is_true(json_object_get(r, "reached")));
    assert_true(fabs(json_number_value(json_object_get(r, "recall_at_found")) - 0.8) < 1e-12);
    assert_string_equal(json_string_value(json_object_get(r, "source")), "warm-up queries");
    assert_int_equal(json_integer_value(json_object_get(r, "queries")), 40);
    /* doubling from k: 10 20 40 80, then bisection of (40, 80] */
    const json_t *ev = json_object_get(r, "evaluations");
    static const int64_t want[] = { 10, 20, 40, 80, 60, 70, 75, 77, 78, 79 };
    assert_int_equal(json_array_size(ev), sizeof want / sizeof *want);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        assert_int_equal(json_integer_value(json_array_get(json_array_get(ev, i), 0)), want[i]);
    assert_int_equal(eng.max_live, 1); /* one context at a time */
    assert_int_equal(eng.live, 0);
    json_decref(r);
    /* a target reached at the smallest effort */
    r = tune(f, 10, 0.05, &found, &eng);
    assert_int_equal(found, 10);
    json_decref(r);
}

static void test_not_reached(void **state)
{
    fx *f = *state;
    int64_t found = 0;
    struct ann_engine eng;
    /* recall saturates at 0.5 from depth 50 on: doubling stops after two flat steps */
    json_t *r = tune(f, 5, 0.9, &found, &eng);
    assert_true(json_is_false(json_object_get(r, "reached")));
    assert_int_equal(found, 80); /* the smallest effort with the best recall seen (0.5) */
    assert_true(fabs(json_number_value(json_object_get(r, "recall_at_found")) - 0.5) < 1e-12);
    assert_int_equal(json_array_size(json_object_get(r, "evaluations")), 6); /* 10..320 */
    json_decref(r);
}

static void test_config_checks(void **state)
{
    (void)state;
    json_error_t e;
    json_t *cfg = json_loads(
        "{\"name\": \"t\", \"dataset\": \"d\", \"engines\": ["
        " {\"engine\": \"hnsw-record\", \"search\": {\"ef_search\": [{\"target_recall\": 0.95}, 64]}},"
        " {\"engine\": \"hnsw-record\", \"label\": \"b\", \"build\": {\"M\": {\"target_recall\": 0.9}},"
        "  \"search\": {\"ef_search\": {\"target_recall\": 1.5}}},"
        " {\"engine\": \"flat\", \"search\": {\"L\": {\"target_recall\": 0.9}}},"
        " {\"engine\": \"hnsw-record\", \"label\": \"c\", \"search\": {\"ef_search\": {\"recall\": 0.9}}},"
        " {\"engine\": \"diskann-sector\", \"search\": {\"beam_width\": {\"target_recall\": 0.9}}}]}",
        0, &e);
    assert_non_null(cfg);
    harness_problems p = { 0 };
    harness_config_check(cfg, &p);
    for (int i = 0; i < p.n; i++)
        print_message("  problem: %s\n", p.msgs[i]);
    static const char *const want[] = {
        "engines[1].build.M: target_recall applies to search parameters only",
        "engines[1].search.ef_search.target_recall: expected a recall in (0, 1)",
        "engines[2].search.L: target_recall needs an effort parameter, and flat declares none",
        "engines[3].search.ef_search: expected a number or {\"target_recall\": R}",
        "engines[4].search.beam_width: target_recall applies to diskann-sector's effort parameter, L",
    };
    assert_int_equal(p.n, 5);
    for (size_t i = 0; i < 5; i++) {
        int seen = 0;
        for (int j = 0; j < p.n; j++)
            seen |= !strcmp(p.msgs[j], want[i]);
        if (!seen)
            fail_msg("missing problem: %s", want[i]);
    }
    harness_problems_fini(&p);
    /* a target is one value of a sweep: its cells carry the object as their value */
    json_array_remove(json_object_get(cfg, "engines"), 1);
    json_array_remove(json_object_get(cfg, "engines"), 1);
    json_array_remove(json_object_get(cfg, "engines"), 1);
    json_array_remove(json_object_get(cfg, "engines"), 1);
    json_t *cells = harness_config_expand(cfg);
    assert_int_equal(json_array_size(cells), 4); /* (target, 64) x (cold, warm) */
    const char *param;
    double target;
    assert_int_equal(harness_tune_target(json_object_get(json_array_get(cells, 0), "search"), &param, &target), 1);
    assert_string_equal(param, "ef_search");
    assert_true(target == 0.95);
    assert_int_equal(harness_tune_target(json_object_get(json_array_get(cells, 2), "search"), &param, &target), 0);
    json_decref(cells);
    json_decref(cfg);
}

/* The target applies to the engine's declared effort parameter, whatever
 * its name, and to no other of its search parameters. */
static void test_effort_param_declared(void **state)
{
    (void)state;
    json_t *search = json_loads("{\"depth\": [{\"target_recall\": 0.9}, 40], \"width\": {\"target_recall\": 0.9}}",
                                0, NULL);
    assert_non_null(search);
    harness_problems p = { 0 };
    int n = harness_check_engine_params(search, fake_search_params, &fake_ops, "engines[0].search", &p);
    for (int i = 0; i < p.n; i++)
        print_message("  problem: %s\n", p.msgs[i]);
    assert_int_equal(n, 1);
    assert_string_equal(p.msgs[0], "engines[0].search.width: target_recall applies to fake's effort parameter, depth");
    harness_problems_fini(&p);
    /* an engine that declares none, or declares a name it does not accept as an integer */
    static const ann_engine_ops none = { .name = "none", .search_params = fake_search_params };
    static const ann_engine_ops wrong = { .name = "wrong", .search_params = fake_search_params,
                                          .effort_param = "L" };
    assert_null(harness_tune_effort_spec(&none));
    assert_null(harness_tune_effort_spec(&wrong));
    assert_null(harness_tune_effort_spec(NULL));
    json_t *v = json_pack("{s:f}", "target_recall", 0.9);
    assert_int_equal(harness_tune_check(v, "depth", &none, "engines[1].search", "engines[1].search.depth", &p), 1);
    assert_string_equal(p.msgs[0], "engines[1].search.depth: target_recall needs an effort parameter, and none declares none");
    harness_problems_fini(&p);
    assert_int_equal(harness_tune_check(v, "depth", &fake_ops, "engines[1].search", "engines[1].search.depth", &p), 0);
    /* every registered engine's effort parameter is a declared integer */
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *ops = ann_engine_at(i);
        if (ops->effort_param && !harness_tune_effort_spec(ops))
            fail_msg("%s: effort_param %s is not an integer search parameter", ops->name, ops->effort_param);
    }
    json_decref(v);
    json_decref(search);
}

/* A real run: hnsw-record tuned to recall 0.9 on the warm-up queries. */
static void test_run_tunes_and_measures(void **state)
{
    fx *f = *state;
    if (!hf_bin())
        skip();
    char cfg_path[4400], out[4400], bundle[4300];
    snprintf(bundle, sizeof bundle, "%s/bundle", f->dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/t.json", f->dir);
    snprintf(out, sizeof out, "%s/out", f->dir);
    json_t *cfg = json_pack("{s:s, s:{s:s}, s:i, s:[{s:s, s:{s:i, s:i, s:s}, s:{s:s}, s:{s:{s:f}}}],"
                            " s:[s], s:b, s:i, s:f}",
                            "name", "tune", "dataset", "path", bundle, "k", 10, "engines", "engine",
                            "hnsw-record", "build", "M", 4, "ef_construction", 8, "kv", "lmdb", "open",
                            "kv", "lmdb", "search", "ef_search", "target_recall", 0.9, "modes", "warm",
                            "drop_caches", 0, "warmup_queries", 40, "qps_min_seconds", 0.01);
    assert_int_equal(hf_write_json(cfg_path, cfg), 0);
    json_decref(cfg);
    const char *args[] = { "run", cfg_path, "--out", out, NULL };
    char *log = NULL;
    int rc = hf_annlab(f->dir, &log, args);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, log);
    char p[4500];
    snprintf(p, sizeof p, "%s/cells.jsonl", out);
    json_error_t e;
    json_t *c = json_load_file(p, JSON_DISABLE_EOF_CHECK, &e);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "status")), "ok");
    const json_t *t = json_object_get(c, "target_recall");
    int64_t found = json_integer_value(json_object_get(t, "found"));
    assert_true(found >= 10);
    /* the cell measured what the tuning found, under its configured identity */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "search_used"), "ef_search")), found);
    assert_true(json_is_object(json_object_get(json_object_get(c, "search"), "ef_search")));
    assert_string_equal(json_string_value(json_object_get(t, "source")), "warm-up queries");
    assert_int_equal(json_integer_value(json_object_get(t, "queries")), 40);
    if (json_is_true(json_object_get(t, "reached")))
        assert_true(json_number_value(json_object_get(t, "recall_at_found")) >= 0.9);
    /* tables.md shows the value found */
    snprintf(p, sizeof p, "%s/tables.md", out);
    size_t len = 0;
    char *md = tu_read_file(p, &len);
    char want[96];
    snprintf(want, sizeof want, "| ef_search=%lld (target recall 0.9", (long long)found);
    if (!md || !memmem(md, len, want, strlen(want)))
        fail_msg("tables.md lacks \"%s\"", want);
    free(md);
    json_decref(c);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finds_smallest_effort),
        cmocka_unit_test(test_not_reached),
        cmocka_unit_test(test_config_checks),
        cmocka_unit_test(test_effort_param_declared),
        cmocka_unit_test(test_run_tunes_and_measures),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
