/*
 * test_harness_config.c: experiment configs: sweep expansion (order,
 * count, exclusion, stable ids), validation (every problem reported with
 * its JSON path, several at once), sizes of memory caps.
 */
#include "engines/core/params.h"
#include "engines/core/status.h"
#include "harness/config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad test JSON: %s", e.text);
    return v;
}

static int has_problem(const harness_problems *p, const char *msg)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->msgs[i], msg))
            return 1;
    return 0;
}

static int has_prefix(const harness_problems *p, const char *prefix)
{
    for (int i = 0; i < p->n; i++)
        if (!strncmp(p->msgs[i], prefix, strlen(prefix)))
            return 1;
    return 0;
}

static void print_problems(const harness_problems *p)
{
    for (int i = 0; i < p->n; i++)
        print_message("  problem: %s\n", p->msgs[i]);
}

static void test_expand_order_count_exclude(void **state)
{
    (void)state;
    json_t *cfg = parse("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": ["
                        " {\"engine\": \"flat\", \"build\": {\"R\": 32},"
                        "  \"search\": {\"L\": [10, 20, 40], \"beam_width\": [1, 2]}}],"
                        " \"threads\": [1, 4], \"modes\": [\"cold\", \"warm\"],"
                        " \"memory_caps\": [null, \"1GiB\"],"
                        " \"exclude\": [{\"mode\": \"cold\", \"threads\": 4}]}");
    json_t *cells = harness_config_expand(cfg);
    /* 3 L x 2 beam x 2 threads x 2 modes x 2 caps = 48, minus cold x T=4 (12) */
    assert_int_equal(json_array_size(cells), 36);
    json_t *c0 = json_array_get(cells, 0), *c1 = json_array_get(cells, 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c0, "search"), "L")), 10);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c0, "search"), "beam_width")), 1);
    assert_string_equal(json_string_value(json_object_get(c0, "mode")), "cold");
    assert_true(json_is_null(json_object_get(c0, "memory_cap_bytes")));
    /* the memory cap varies fastest */
    assert_int_equal(json_integer_value(json_object_get(c1, "memory_cap_bytes")), 1073741824);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c1, "search"), "L")), 10);
    /* the last search key in sorted order ("beam_width" after "L") varies fastest of the sweep */
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        assert_false(!strcmp(json_string_value(json_object_get(c, "mode")), "cold") &&
                     json_integer_value(json_object_get(c, "threads")) == 4);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "build"), "R")), 32);
    }
    /* ids: unique, and the same on a second expansion */
    json_t *again = harness_config_expand(cfg);
    json_array_foreach(cells, i, c) {
        const char *id = json_string_value(json_object_get(c, "id"));
        assert_non_null(id);
        assert_int_equal(strlen(id), 16);
        assert_string_equal(id, json_string_value(json_object_get(json_array_get(again, i), "id")));
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(id, json_string_value(json_object_get(json_array_get(cells, j), "id")));
    }
    json_decref(again);
    json_decref(cells);
    json_decref(cfg);
}

static void test_expand_defaults(void **state)
{
    (void)state;
    json_t *cfg = parse("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\"},"
                        " {\"engine\": \"flat\", \"label\": \"flat2\"}]}");
    json_t *cells = harness_config_expand(cfg);
    /* defaults: threads [1], modes [cold, warm], caps [null] */
    assert_int_equal(json_array_size(cells), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cells, 0), "label")), "flat");
    assert_string_equal(json_string_value(json_object_get(json_array_get(cells, 2), "label")), "flat2");
    assert_string_equal(json_string_value(json_object_get(json_array_get(cells, 1), "mode")), "warm");
    json_decref(cells);
    json_decref(cfg);
}

static void test_validate_reports_all_with_paths(void **state)
{
    (void)state;
    json_t *cfg = parse("{\"name\": \"bad name\", \"dataset\": 3, \"k\": \"ten\", \"trheads\": [1],"
                        " \"engines\": [{\"engine\": \"nope\"}, {\"engine\": \"flat\", \"search\": {\"L\": [10, 20]}},"
                        "   {\"engine\": \"flat\", \"colour\": 1}],"
                        " \"threads\": [0, 2, 2], \"modes\": [\"cold\", \"hot\"],"
                        " \"memory_caps\": [null, \"12XB\", \"10KiB\"], \"repeats\": 0,"
                        " \"exclude\": [{\"colour\": \"red\"}], \"pin_threads\": 1, \"baseline\": \"faiss\"}");
    harness_problems p = { 0 };
    int n = harness_config_check(cfg, &p);
    print_problems(&p);
    assert_int_equal(n, p.n);
    assert_true(has_problem(&p, "name: expected a name of letters, digits, '-', '_', '.'"));
    assert_true(has_problem(&p, "dataset: expected a dataset name or {\"path\": DIR}"));
    assert_true(has_problem(&p, "k: expected an integer in [1, 10000]"));
    assert_true(has_problem(&p, "repeats: 0 is out of range [1, 100]"));
    /* the registered list grows as engines land */
    assert_true(has_prefix(&p, "engines[0].engine: unknown engine \"nope\" (registered: flat"));
    assert_true(has_problem(&p, "engines[1].search.L: unknown parameter (known: none)"));
    assert_true(has_problem(&p, "engines[2].colour: unknown key (known: engine, label, build, open, "
                                "search, max_cell_seconds)"));
    assert_true(has_problem(&p, "threads[0]: expected an integer in [1, 1024]"));
    assert_true(has_problem(&p, "threads[2]: repeats threads[1]"));
    assert_true(has_problem(&p, "modes[1]: expected \"cold\" or \"warm\""));
    assert_true(has_problem(&p, "memory_caps[1]: \"12XB\": unknown unit (use B, KiB, MiB, GiB, KB, MB, GB)"));
    assert_true(has_problem(&p, "memory_caps[2]: \"10KiB\" is below 4 MiB, too small to run an engine"));
    assert_true(has_problem(&p,
                            "exclude[0].colour: unknown key (known: engine, label, build, open, search, mode, threads, memory_cap)"));
    assert_true(has_prefix(&p, "trheads: unknown key (known: name, description, dataset, "));
    assert_true(has_problem(&p, "pin_threads: expected true or false"));
    /* the summary's baseline must be one of the engines */
    assert_true(has_problem(&p, "baseline: \"faiss\" is not an engine or label of this config"));
    assert_int_equal(p.n, 16);
    harness_problems_fini(&p);
    json_decref(cfg);
}

static void test_validate_missing_and_valid(void **state)
{
    (void)state;
    harness_problems p = { 0 };
    json_t *cfg = parse("{}");
    harness_config_check(cfg, &p);
    assert_true(has_problem(&p, "name: missing"));
    assert_true(has_problem(&p, "dataset: missing (a dataset name or {\"path\": DIR})"));
    assert_true(has_problem(&p, "engines: missing (a list of {\"engine\": NAME, ...})"));
    assert_int_equal(p.n, 3);
    harness_problems_fini(&p);
    json_decref(cfg);

    cfg = parse("{\"name\": \"ok\", \"dataset\": {\"path\": \"/x\"}, \"k\": 10,"
                " \"engines\": [{\"engine\": \"flat\", \"label\": \"exact\"}], \"threads\": [1, 2],"
                " \"modes\": [\"warm\"], \"memory_caps\": [null, \"512MiB\", 2147483648],"
                " \"timeout_s\": 30, \"drop_caches\": false, \"pin_threads\": true, \"exclude\": [{\"threads\": 2, \"memory_cap\": \"512MiB\"}]}");
    assert_int_equal(harness_config_check(cfg, &p), 0);
    json_t *cells = harness_config_expand(cfg);
    assert_int_equal(json_array_size(cells), 5); /* 2 threads x 3 caps - 1 */
    json_decref(cells);
    harness_problems_fini(&p);
    json_decref(cfg);

    /* k deeper than the ground truth is a dataset-level problem */
    cfg = parse("{\"k\": 100}");
    assert_int_equal(harness_config_check_dataset(cfg, 10, &p), 1);
    assert_string_equal(p.msgs[0], "k: 100 exceeds the dataset's ground-truth depth 10");
    harness_problems_fini(&p);
    json_decref(cfg);
}

static void test_engine_param_sweeps(void **state)
{
    (void)state;
    static const char *const ios[] = { "pread", "io_uring", NULL };
    static const ann_param_spec specs[] = {
        { .name = "L", .type = ANN_PARAM_INT, .min = 1, .max = 1000, .def = 50 },
        { .name = "io", .type = ANN_PARAM_ENUM, .choices = ios, .def_str = "pread" },
        ANN_PARAM_END,
    };
    json_t *obj = parse("{\"L\": [10, 0, 2000, \"x\"], \"io\": \"aio\", \"beam\": [1, 2], \"M\": []}");
    harness_problems p = { 0 };
    int n = harness_check_engine_params(obj, specs, NULL, "engines[3].search", &p);
    print_problems(&p);
    assert_true(has_problem(&p, "engines[3].search.L[1]: 0 is out of range [1, 1000]"));
    assert_true(has_problem(&p, "engines[3].search.L[2]: 2000 is out of range [1, 1000]"));
    assert_true(has_problem(&p, "engines[3].search.L[3]: expected an integer in [1, 1000]"));
    assert_true(has_problem(&p, "engines[3].search.io: \"aio\" is not one of: pread, io_uring"));
    assert_true(has_problem(&p, "engines[3].search.beam: unknown parameter (known: L, io)"));
    assert_true(has_problem(&p, "engines[3].search.M: an empty sweep (give at least one value)"));
    assert_int_equal(n, 6);
    harness_problems_fini(&p);
    json_decref(obj);
}

static void test_parse_bytes(void **state)
{
    (void)state;
    uint64_t b = 1;
    json_t *v = json_null();
    assert_int_equal(harness_parse_bytes(v, &b), 0);
    assert_int_equal(b, 0);
    json_decref(v);
    struct { const char *s; uint64_t want; } ok[] = {
        { "512MiB", 536870912ull }, { "2GiB", 2147483648ull }, { "1GB", 1000000000ull },
        { "1.5 GiB", 1610612736ull }, { "4096KiB", 4194304ull },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        v = json_string(ok[i].s);
        assert_int_equal(harness_parse_bytes(v, &b), 0);
        assert_int_equal(b, ok[i].want);
        json_decref(v);
    }
    v = json_string("lots");
    assert_int_equal(harness_parse_bytes(v, &b), ANN_ECONFIG);
    assert_string_equal(ann_errmsg(ANN_ECONFIG), "\"lots\" is not a size like \"512MiB\"");
    json_decref(v);
    v = json_integer(-5);
    assert_int_equal(harness_parse_bytes(v, &b), ANN_ECONFIG);
    json_decref(v);
}

/* Issue 14: configs that ran something other than they said, or the same
 * cell twice, or excluded nothing, are refused with the JSON paths. */
static void check_one(const char *text, const char *want)
{
    json_t *cfg = parse(text);
    harness_problems p = { 0 };
    harness_config_check(cfg, &p);
    if (!has_problem(&p, want)) {
        print_problems(&p);
        fail_msg("no problem \"%s\"", want);
    }
    harness_problems_fini(&p);
    json_decref(cfg);
}

static void test_validate_semantics(void **state)
{
    (void)state;
    /* L < k: the engine used to run at L = k while the cell said L */
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"diskann-sector\","
              " \"search\": {\"L\": [5, 20]}}]}",
              "engines[0].search.L[0]: 5 is less than k = 10");
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"k\": 200, \"engines\": [{\"engine\":"
              " \"diskann-record\"}]}",
              "engines[0].search.L: the default 100 is less than k = 200 (give L >= 200)");
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"hnsw-record\","
              " \"search\": {\"ef_search\": 4}}]}",
              "engines[0].search.ef_search: 4 is less than k = 10");
    /* a sweep value twice, numbers by value */
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"diskann-sector\","
              " \"search\": {\"L\": [20, 20]}}]}",
              "engines[0].search.L[1]: repeats engines[0].search.L[0]");
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"diskann-sector\","
              " \"build\": {\"alpha\": [1, 1.0]}}]}",
              "engines[0].build.alpha[1]: repeats engines[0].build.alpha[0]");
    /* caps equal in bytes, spelt differently; caps below 4 MiB */
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\"}],"
              " \"memory_caps\": [\"1GiB\", 1073741824, 1048576]}",
              "memory_caps[1]: repeats memory_caps[0]");
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\"}],"
              " \"memory_caps\": [\"1GiB\", 1073741824, 1048576]}",
              "memory_caps[2]: 1048576 bytes is below 4 MiB, too small to run an engine");
    /* a label that is another engine's name */
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\"},"
              " {\"engine\": \"diskann-record\", \"label\": \"flat\"}]}",
              "engines[1].label: \"flat\" is the name of an engine; rows so labelled would be taken "
              "for that engine's (choose another label)");
    /* exclude entries that name nothing of the config */
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\"}],"
              " \"exclude\": [{\"engine\": \"flt\"}, {\"search\": {\"Lx\": 3}}, {\"label\": \"z\"}]}",
              "exclude[0].engine: \"flt\" is not an engine of this config");
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\"}],"
              " \"exclude\": [{\"engine\": \"flt\"}, {\"search\": {\"Lx\": 3}}, {\"label\": \"z\"}]}",
              "exclude[1].search.Lx: not a search parameter of any engine of this config");
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\"}],"
              " \"exclude\": [{\"engine\": \"flt\"}, {\"search\": {\"Lx\": 3}}, {\"label\": \"z\"}]}",
              "exclude[2].label: \"z\" is not a label of this config");
    /* ... and an entry valid in itself that matches no cell */
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\"}],"
              " \"modes\": [\"warm\"], \"exclude\": [{\"mode\": \"cold\"}]}",
              "exclude[0]: matches no cell of this config (it excludes nothing)");
    /* the same cell twice after expansion: unlabelled twins, a default given explicitly */
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\"},"
              " {\"engine\": \"flat\"}]}",
              "engines[1]: the same flat cold cell as engines[0] (parameters equal once defaults are "
              "filled in); it would run twice: remove one, or label the entries apart");
    check_one("{\"name\": \"x\", \"dataset\": \"d\", \"modes\": [\"warm\"], \"engines\": ["
              " {\"engine\": \"diskann-sector\", \"search\": {\"L\": [50, 100]}},"
              " {\"engine\": \"diskann-sector\", \"search\": {\"beam_width\": 4}}]}",
              "engines[1] modes[0]: the same diskann-sector warm cell as "
              "engines[0].search.L[1] modes[0] (parameters equal once defaults are filled in); it "
              "would run twice: remove one, or label the entries apart");
    /* labelled apart, the same parameters are two rows, deliberately */
    json_t *cfg = parse("{\"name\": \"x\", \"dataset\": \"d\", \"engines\": [{\"engine\": \"flat\","
                        " \"label\": \"a\"}, {\"engine\": \"flat\", \"label\": \"b\"}]}");
    harness_problems p = { 0 };
    assert_int_equal(harness_config_check(cfg, &p), 0);
    harness_problems_fini(&p);
    json_decref(cfg);
}

/*
 * max_cell_seconds: config-wide or per engine entry (the entry's wins),
 * checked for range and type; part of a cell (and its id) only when set,
 * so unbounded cells keep their ids.
 */
static void test_max_cell_seconds(void **state)
{
    (void)state;
    json_t *bad = parse("{\"name\": \"x\", \"dataset\": \"d\", \"max_cell_seconds\": 0,"
                        " \"engines\": [{\"engine\": \"flat\", \"max_cell_seconds\": \"1m\"}]}");
    harness_problems p = { 0 };
    harness_config_check(bad, &p);
    print_problems(&p);
    assert_true(has_problem(&p, "max_cell_seconds: 0 is out of range [0.001, 1e+07]"));
    assert_true(
        has_problem(&p, "engines[0].max_cell_seconds: expected a number in [0.001, 1e+07]"));
    assert_int_equal(p.n, 2);
    harness_problems_fini(&p);
    json_decref(bad);

    json_t *plain = parse("{\"name\": \"x\", \"dataset\": \"d\", \"modes\": [\"warm\"],"
                          " \"engines\": [{\"engine\": \"flat\"}]}");
    json_t *cfg = parse("{\"name\": \"x\", \"dataset\": \"d\", \"modes\": [\"warm\"],"
                        " \"max_cell_seconds\": 30, \"engines\": [{\"engine\": \"flat\"},"
                        " {\"engine\": \"flat\", \"label\": \"f2\", \"max_cell_seconds\": 2.5}]}");
    assert_int_equal(harness_config_check(cfg, &p), 0);
    harness_problems_fini(&p);
    json_t *c0 = harness_config_expand(plain), *c1 = harness_config_expand(cfg);
    assert_int_equal(json_array_size(c1), 2);
    const json_t *unb = json_array_get(c0, 0), *b0 = json_array_get(c1, 0),
                 *b1 = json_array_get(c1, 1);
    assert_null(json_object_get(unb, "max_cell_seconds"));
    assert_true(json_number_value(json_object_get(b0, "max_cell_seconds")) == 30.0);
    assert_true(json_number_value(json_object_get(b1, "max_cell_seconds")) == 2.5);
    /* the bound is part of the cell's identity; without one the id is unchanged */
    assert_string_not_equal(json_string_value(json_object_get(unb, "id")),
                            json_string_value(json_object_get(b0, "id")));
    json_t *again = json_deep_copy(b0);
    json_object_del(again, "max_cell_seconds");
    json_object_del(again, "id");
    char id[17];
    harness_cell_id(again, id);
    assert_string_equal(id, json_string_value(json_object_get(unb, "id")));
    json_decref(again);
    json_decref(c0);
    json_decref(c1);
    json_decref(plain);
    json_decref(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expand_order_count_exclude),
        cmocka_unit_test(test_expand_defaults),
        cmocka_unit_test(test_validate_reports_all_with_paths),
        cmocka_unit_test(test_validate_missing_and_valid),
        cmocka_unit_test(test_engine_param_sweeps),
        cmocka_unit_test(test_parse_bytes),
        cmocka_unit_test(test_validate_semantics),
        cmocka_unit_test(test_max_cell_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
