/*
 * config.c: validation and deterministic sweep expansion of experiment
 * configs (schema in configs/README.md, contract in harness/config.h).
 *
 * Validation walks the whole document and never stops at the first problem:
 * a config with a misspelt key, a wrong type and an unknown engine gets all
 * three reported, each with its JSON path.  Engine parameters are checked
 * through ann_params_check against the tables each engine declares, element
 * by element for sweeps, so "engines[0].search.L[2]" names the bad value.
 */
#include "harness/config.h"
#include "harness/workload.h"
#include "harness/tune.h"
#include "harness/paper.h"

#include "engines/core/status.h"
#include "engines/engine.h"

#include <ctype.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The schema's top-level keys and their defaults. */
typedef struct cfg_key {
    const char *name;
    const char *type; /* shown in messages */
    double def;
} cfg_key;

/* max_cell_seconds, config-wide or per engine entry: absent means no bound */
#define MAX_CELL_S_MIN 0.001
#define MAX_CELL_S_MAX 1e7

static const cfg_key cfg_keys[] = {
    { "name", "a string", 0 },
    { "description", "a string", 0 },
    { "dataset", "a dataset name or {\"path\": DIR}", 0 },
    { "dataset_root", "a string", 0 },
    { "index_root", "a string", 0 },
    { "k", "an integer", 10 },
    { "queries", "an integer", 0 },
    { "engines", "a non-empty list", 0 },
    { "threads", "a list of integers", 0 },
    { "modes", "a list of \"cold\"/\"warm\"", 0 },
    { "memory_caps", "a list", 0 },
    { "repeats", "an integer", 1 },
    { "warmup_queries", "an integer", 1000 },
    { "timeout_s", "a number", 600 },
    { "build_timeout_s", "a number", 7200 },
    { "qps_min_seconds", "a number", 0.5 },
    { "max_cell_seconds", "a number", 0 },
    { "drop_caches", "true or false", 1 },
    { "pin_threads", "true or false", 0 },
    { "exclude", "a list of objects", 0 },
    { "tables", "a paper table layout (harness/paper.h)", 0 },
    { "baseline", "an engine label", 0 },
    { "workload", "{\"steps\": [...]} or {\"runbook\": FILE}", 0 },
};

static const cfg_key *cfg_key_find(const char *name)
{
    for (size_t i = 0; i < sizeof cfg_keys / sizeof cfg_keys[0]; i++)
        if (!strcmp(cfg_keys[i].name, name))
            return &cfg_keys[i];
    return NULL;
}

void harness_problem(harness_problems *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        char **m = realloc(p->msgs, (size_t)cap * sizeof *m);
        if (!m) {
            p->n++; /* counted, message lost */
            return;
        }
        p->msgs = m;
        p->cap = cap;
    }
    p->msgs[p->n] = strdup(buf);
    p->n++;
}

void harness_problems_fini(harness_problems *p)
{
    for (int i = 0; i < p->n && i < p->cap; i++)
        free(p->msgs[i]);
    free(p->msgs);
    memset(p, 0, sizeof *p);
}

int64_t harness_cfg_int(const json_t *cfg, const char *key)
{
    const json_t *v = json_object_get(cfg, key);
    if (json_is_integer(v))
        return json_integer_value(v);
    const cfg_key *k = cfg_key_find(key);
    return k ? (int64_t)k->def : 0;
}

double harness_cfg_real(const json_t *cfg, const char *key)
{
    const json_t *v = json_object_get(cfg, key);
    if (json_is_number(v))
        return json_number_value(v);
    const cfg_key *k = cfg_key_find(key);
    return k ? k->def : 0;
}

int harness_cfg_bool(const json_t *cfg, const char *key)
{
    const json_t *v = json_object_get(cfg, key);
    if (json_is_boolean(v))
        return json_is_true(v);
    const cfg_key *k = cfg_key_find(key);
    return k ? k->def != 0 : 0;
}

int harness_parse_bytes(const json_t *v, uint64_t *bytes)
{
    if (json_is_null(v)) {
        *bytes = 0;
        return 0;
    }
    if (json_is_integer(v)) {
        if (json_integer_value(v) <= 0)
            return ann_fail(ANN_ECONFIG, "must be a positive number of bytes");
        if (json_integer_value(v) < HARNESS_MIN_CAP_BYTES)
            return ann_fail(ANN_ECONFIG, "%lld bytes is below 4 MiB, too small to run an engine",
                            (long long)json_integer_value(v));
        *bytes = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (!json_is_string(v))
        return ann_fail(ANN_ECONFIG, "expected null, bytes, or a string like \"512MiB\"");
    const char *s = json_string_value(v);
    char *end = NULL;
    double x = strtod(s, &end);
    if (end == s || !isfinite(x) || x <= 0)
        return ann_fail(ANN_ECONFIG, "\"%s\" is not a size like \"512MiB\"", s);
    while (*end == ' ')
        end++;
    static const struct { const char *unit; double mult; } units[] = {
        { "", 1 },     { "B", 1 },      { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
        { "KB", 1e3 }, { "MB", 1e6 },   { "GB", 1e9 },
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!strcmp(end, units[i].unit)) {
            double b = x * units[i].mult;
            if (b < HARNESS_MIN_CAP_BYTES)
                return ann_fail(ANN_ECONFIG, "\"%s\" is below 4 MiB, too small to run an engine", s);
            if (b > 1.8e19)
                return ann_fail(ANN_ECONFIG, "\"%s\" is too large", s);
            *bytes = (uint64_t)b;
            return 0;
        }
    }
    return ann_fail(ANN_ECONFIG, "\"%s\": unknown unit (use B, KiB, MiB, GiB, KB, MB, GB)", s);
}

/* ---- engine parameters ------------------------------------------------- */

/* Equal as parameter values: numbers by value (1 and 1.0 are one alpha). */
static int same_value(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

/* Rewrites "<path>.<key>: msg" from ann_params_check into "<path>.<key>[i]: msg". */
typedef struct param_report {
    harness_problems *probs;
    int index; /* -1 for a scalar */
    size_t prefix_len;
} param_report;

static void param_report_fn(void *user, const char *msg)
{
    param_report *r = user;
    if (r->index < 0 || strlen(msg) < r->prefix_len) {
        harness_problem(r->probs, "%s", msg);
        return;
    }
    harness_problem(r->probs, "%.*s[%d]%s", (int)r->prefix_len, msg, r->index, msg + r->prefix_len);
}

int harness_check_engine_params(const json_t *obj, const ann_param_spec *specs, const ann_engine_ops *ops,
                                const char *path, harness_problems *probs)
{
    int before = probs->n;
    if (obj == NULL)
        return 0;
    if (!json_is_object(obj)) {
        harness_problem(probs, "%s: expected an object of parameters", path);
        return 1;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        char keypath[512];
        snprintf(keypath, sizeof keypath, "%s.%s", path, key);
        param_report r = { .probs = probs, .index = -1, .prefix_len = strlen(keypath) };
        if (json_is_object(v)) { /* {"target_recall": R}: harness/tune.h */
            harness_tune_check(v, key, ops, path, keypath, probs);
            continue;
        }
        if (!json_is_array(v)) {
            json_t *one = json_pack("{sO}", key, v);
            ann_params_check(one, specs, path, param_report_fn, &r);
            json_decref(one);
            continue;
        }
        if (json_array_size(v) == 0) {
            harness_problem(probs, "%s: an empty sweep (give at least one value)", keypath);
            continue;
        }
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (json_is_object(e) && json_object_get(e, "target_recall")) {
                char ip[600];
                snprintf(ip, sizeof ip, "%s[%zu]", keypath, i);
                harness_tune_check(e, key, ops, path, ip, probs);
                continue;
            }
            if (json_is_array(e) || json_is_object(e)) {
                harness_problem(probs, "%s[%zu]: a sweep value must be a scalar", keypath, i);
                continue;
            }
            /* a value twice would run the same cells twice */
            for (size_t j = 0; j < i; j++)
                if (same_value(e, json_array_get(v, j))) {
                    harness_problem(probs, "%s[%zu]: repeats %s[%zu]", keypath, i, keypath, j);
                    break;
                }
            json_t *one = json_pack("{sO}", key, e);
            int known = 0;
            for (const ann_param_spec *sp = specs; sp && sp->name; sp++)
                known |= !strcmp(sp->name, key);
            r.index = known ? (int)i : -1; /* an unknown key: said once, without an index */
            ann_params_check(one, specs, path, param_report_fn, &r);
            json_decref(one);
            if (!known)
                break;
        }
    }
    return probs->n - before;
}

/* ---- the document ------------------------------------------------------ */

static int is_name_ok(const char *s)
{
    if (!*s || strlen(s) > 128 || s[0] == '.')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
            return 0;
    return 1;
}

static void check_int(const json_t *cfg, const char *key, int64_t lo, int64_t hi,
                      harness_problems *probs)
{
    const json_t *v = json_object_get(cfg, key);
    if (!v)
        return;
    if (!json_is_integer(v))
        harness_problem(probs, "%s: expected an integer in [%lld, %lld]", key, (long long)lo,
                        (long long)hi);
    else if (json_integer_value(v) < lo || json_integer_value(v) > hi)
        harness_problem(probs, "%s: %lld is out of range [%lld, %lld]", key,
                        (long long)json_integer_value(v), (long long)lo, (long long)hi);
}

static void check_real(const json_t *cfg, const char *key, double lo, double hi,
                       harness_problems *probs)
{
    const json_t *v = json_object_get(cfg, key);
    if (!v)
        return;
    if (!json_is_number(v))
        harness_problem(probs, "%s: expected a number in [%g, %g]", key, lo, hi);
    else if (!(json_number_value(v) >= lo && json_number_value(v) <= hi))
        harness_problem(probs, "%s: %g is out of range [%g, %g]", key, json_number_value(v), lo, hi);
}

static void check_string(const json_t *cfg, const char *key, harness_problems *probs)
{
    const json_t *v = json_object_get(cfg, key);
    if (v && (!json_is_string(v) || !json_string_length(v)))
        harness_problem(probs, "%s: expected a non-empty string", key);
}

/*
 * Search parameters that must be at least k (ann_param_spec.at_least_k:
 * L, ef_search): every value of the entry, or the default when it gives
 * none.  Engines refuse them in ctx_new too; here every cell is named
 * before anything runs.
 */
static void check_at_least_k(const json_t *cfg, const json_t *e, const ann_engine_ops *ops,
                             const char *path, harness_problems *probs)
{
    const json_t *kv = json_object_get(cfg, "k");
    if (kv && !json_is_integer(kv))
        return; /* reported as k's own problem */
    long long k = (long long)harness_cfg_int(cfg, "k");
    const json_t *search = json_object_get(e, "search");
    for (const ann_param_spec *sp = ops->search_params; sp && sp->name; sp++) {
        if (!sp->at_least_k)
            continue;
        const json_t *v = json_object_get(search, sp->name);
        if (!v) {
            if (sp->def < (double)k)
                harness_problem(probs, "%s.search.%s: the default %.0f is less than k = %lld (give "
                                       "%s >= %lld)",
                                path, sp->name, sp->def, k, sp->name, k);
        } else if (json_is_array(v)) {
            size_t i;
            const json_t *x;
            json_array_foreach(v, i, x)
                if (json_is_integer(x) && json_integer_value(x) < k)
                    harness_problem(probs, "%s.search.%s[%zu]: %lld is less than k = %lld", path,
                                    sp->name, i, (long long)json_integer_value(x), k);
        } else if (json_is_integer(v) && json_integer_value(v) < k) {
            harness_problem(probs, "%s.search.%s: %lld is less than k = %lld", path, sp->name,
                            (long long)json_integer_value(v), k);
        }
    }
}

/* "baseline": the engine (label or engine name) the summary of tables.md
 * takes its ratios against. */
static void check_baseline(const json_t *cfg, harness_problems *probs)
{
    const json_t *v = json_object_get(cfg, "baseline");
    if (!v)
        return;
    if (!json_is_string(v)) {
        harness_problem(probs, "baseline: expected an engine label");
        return;
    }
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(cfg, "engines"), i, e) {
        const char *label = json_string_value(json_object_get(e, "label"));
        const char *engine = json_string_value(json_object_get(e, "engine"));
        if ((label && !strcmp(label, json_string_value(v))) || (engine && !strcmp(engine, json_string_value(v))))
            return;
    }
    harness_problem(probs, "baseline: \"%s\" is not an engine or label of this config",
                    json_string_value(v));
}

static void check_engines(const json_t *cfg, harness_problems *probs)
{
    const json_t *engines = json_object_get(cfg, "engines");
    if (!engines) {
        harness_problem(probs, "engines: missing (a list of {\"engine\": NAME, ...})");
        return;
    }
    if (!json_is_array(engines) || json_array_size(engines) == 0) {
        harness_problem(probs, "engines: expected a non-empty list");
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(engines, i, e) {
        char path[64];
        snprintf(path, sizeof path, "engines[%zu]", i);
        if (!json_is_object(e)) {
            harness_problem(probs, "%s: expected an object {\"engine\": NAME, ...}", path);
            continue;
        }
        const char *key;
        json_t *v;
        json_object_foreach(e, key, v) {
            if (strcmp(key, "engine") && strcmp(key, "label") && strcmp(key, "build") &&
                strcmp(key, "open") && strcmp(key, "search") && strcmp(key, "max_cell_seconds"))
                harness_problem(probs,
                                "%s.%s: unknown key (known: engine, label, build, open, search, "
                                "max_cell_seconds)",
                                path, key);
        }
        const json_t *mcs = json_object_get(e, "max_cell_seconds");
        if (mcs && !(json_is_number(mcs) && json_number_value(mcs) >= MAX_CELL_S_MIN &&
                     json_number_value(mcs) <= MAX_CELL_S_MAX))
            harness_problem(probs, "%s.max_cell_seconds: expected a number in [%g, %g]", path,
                            MAX_CELL_S_MIN, MAX_CELL_S_MAX);
        const json_t *label = json_object_get(e, "label");
        if (label && (!json_is_string(label) || !is_name_ok(json_string_value(label))))
            harness_problem(probs, "%s.label: expected a name of letters, digits, '-', '_', '.'", path);
        const char *name = json_string_value(json_object_get(e, "engine"));
        if (!json_object_get(e, "engine")) {
            harness_problem(probs, "%s.engine: missing", path);
            continue;
        }
        if (!name) {
            harness_problem(probs, "%s.engine: expected a string", path);
            continue;
        }
        const ann_engine_ops *ops = ann_engine_find(name);
        if (!ops) {
            char known[512] = "";
            size_t used = 0;
            for (size_t j = 0; ann_engine_at(j); j++) {
                int w = snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "",
                                 ann_engine_at(j)->name);
                if (w < 0 || (size_t)w >= sizeof known - used)
                    break;
                used += (size_t)w;
            }
            harness_problem(probs, "%s.engine: unknown engine \"%s\" (registered: %s)", path, name,
                            known);
            continue;
        }
        static const char *const sections[] = { "build", "open", "search" };
        for (int s = 0; s < 3; s++) {
            const ann_param_spec *specs = s == 0   ? ops->build_params
                                          : s == 1 ? ops->open_params
                                                   : ops->search_params;
            char spath[96];
            snprintf(spath, sizeof spath, "%s.%s", path, sections[s]);
            harness_check_engine_params(json_object_get(e, sections[s]), specs, ops, spath, probs);
        }
        check_at_least_k(cfg, e, ops, path, probs);
    }
    /* Labels name rows of tables: two entries may not share one. */
    json_array_foreach(engines, i, e) {
        const char *li = json_string_value(json_object_get(e, "label"));
        if (!li)
            continue;
        for (size_t j = 0; j < i; j++) {
            const char *lj = json_string_value(json_object_get(json_array_get(engines, j), "label"));
            if (lj && !strcmp(li, lj))
                harness_problem(probs, "engines[%zu].label: \"%s\" is already used by engines[%zu]",
                                i, li, j);
        }
        /* a label that is an engine's name would merge its rows with that engine's */
        const char *own = json_string_value(json_object_get(e, "engine"));
        if (ann_engine_find(li) && (!own || strcmp(li, own)))
            harness_problem(probs,
                            "engines[%zu].label: \"%s\" is the name of an engine; rows so labelled "
                            "would be taken for that engine's (choose another label)",
                            i, li);
    }
}

static void check_list(const json_t *cfg, const char *key, harness_problems *probs,
                       void (*elem)(const json_t *v, const char *path, harness_problems *probs),
                       int (*same)(const json_t *a, const json_t *b))
{
    const json_t *v = json_object_get(cfg, key);
    if (!v)
        return;
    if (!json_is_array(v) || json_array_size(v) == 0) {
        harness_problem(probs, "%s: expected a non-empty list", key);
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        char path[64];
        snprintf(path, sizeof path, "%s[%zu]", key, i);
        int before = probs->n;
        elem(e, path, probs);
        for (size_t j = 0; probs->n == before && j < i; j++)
            if (same(e, json_array_get(v, j))) {
                harness_problem(probs, "%s: repeats %s[%zu]", path, key, j);
                break;
            }
    }
}

static void elem_threads(const json_t *v, const char *path, harness_problems *probs)
{
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1024)
        harness_problem(probs, "%s: expected an integer in [1, 1024]", path);
}

static void elem_mode(const json_t *v, const char *path, harness_problems *probs)
{
    const char *s = json_string_value(v);
    if (!s || (strcmp(s, "cold") && strcmp(s, "warm")))
        harness_problem(probs, "%s: expected \"cold\" or \"warm\"", path);
}

static void elem_cap(const json_t *v, const char *path, harness_problems *probs)
{
    uint64_t b;
    if (harness_parse_bytes(v, &b))
        harness_problem(probs, "%s: %s", path, ann_errmsg(ANN_ECONFIG));
}

/* Caps are the same when they are the same number of bytes ("1GiB", 1073741824). */
static int same_cap(const json_t *a, const json_t *b)
{
    uint64_t x = 0, y = 0;
    return harness_parse_bytes(a, &x) == 0 && harness_parse_bytes(b, &y) == 0 && x == y;
}

static int same_json(const json_t *a, const json_t *b)
{
    return json_equal(a, b);
}

/* 1 when some entry of engines (of engine `only`, when set) declares a
 * parameter `key` in section s (0 build, 1 open, 2 search). */
static int some_engine_declares(const json_t *cfg, const char *only, int s, const char *key)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(cfg, "engines"), i, e) {
        const ann_engine_ops *ops = ann_engine_find(json_string_value(json_object_get(e, "engine")));
        if (!ops || (only && strcmp(only, ops->name)))
            continue;
        const ann_param_spec *specs = s == 0 ? ops->build_params
                                      : s == 1 ? ops->open_params
                                               : ops->search_params;
        for (const ann_param_spec *sp = specs; sp && sp->name; sp++)
            if (!strcmp(sp->name, key))
                return 1;
    }
    return 0;
}

/* 1 when some entry of engines has this engine name, or this label. */
static int config_has(const json_t *cfg, const char *field, const char *value)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(cfg, "engines"), i, e) {
        const char *v = json_string_value(json_object_get(e, field));
        if (v && !strcmp(v, value))
            return 1;
        /* an unlabelled entry's label is its engine's name */
        if (!strcmp(field, "label") && !json_object_get(e, "label") &&
            json_is_string(json_object_get(e, "engine")) &&
            !strcmp(json_string_value(json_object_get(e, "engine")), value))
            return 1;
    }
    return 0;
}

static void check_exclude(const json_t *cfg, harness_problems *probs)
{
    const json_t *v = json_object_get(cfg, "exclude");
    if (!v)
        return;
    if (!json_is_array(v)) {
        harness_problem(probs, "exclude: expected a list of objects");
        return;
    }
    static const char *const sections[] = { "build", "open", "search" };
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_object(e) || json_object_size(e) == 0) {
            harness_problem(probs, "exclude[%zu]: expected a non-empty object", i);
            continue;
        }
        const char *only = json_string_value(json_object_get(e, "engine"));
        const char *key;
        json_t *x;
        json_object_foreach(e, key, x) {
            char path[96];
            snprintf(path, sizeof path, "exclude[%zu].%s", i, key);
            if (!strcmp(key, "engine") || !strcmp(key, "label")) {
                int before = probs->n;
                check_string(e, key, probs);
                /* an entry that names nothing of this config excludes nothing, silently */
                if (probs->n == before && !config_has(cfg, key, json_string_value(x)))
                    harness_problem(probs, "%s: \"%s\" is not %s of this config", path,
                                    json_string_value(x),
                                    !strcmp(key, "engine") ? "an engine" : "a label");
            } else if (!strcmp(key, "mode"))
                elem_mode(x, path, probs);
            else if (!strcmp(key, "threads"))
                elem_threads(x, path, probs);
            else if (!strcmp(key, "memory_cap"))
                elem_cap(x, path, probs);
            else if (!strcmp(key, "build") || !strcmp(key, "open") || !strcmp(key, "search")) {
                if (!json_is_object(x)) {
                    harness_problem(probs, "%s: expected an object of parameter values", path);
                    continue;
                }
                int s = key[0] == 'b' ? 0 : key[0] == 'o' ? 1 : 2;
                const char *pk;
                json_t *pv;
                json_object_foreach(x, pk, pv)
                    if (!some_engine_declares(cfg, only, s, pk))
                        harness_problem(probs, "%s.%s: not a %s parameter of %s", path, pk,
                                        sections[s], only ? only : "any engine of this config");
            } else
                harness_problem(probs,
                                "%s: unknown key (known: engine, label, build, open, search, "
                                "mode, threads, memory_cap)",
                                path);
        }
    }
}

static void check_expansion(const json_t *cfg, harness_problems *probs);

/*
 * A workload (harness/workload.h): its shape (a runbook file is read by the
 * runner, which knows the config's directory), and what it needs of the
 * rest of the config: engines that accept insert and remove, opened with
 * updates when they declare that parameter; warm cells only (a step cannot
 * be measured cold: the updates themselves bring the index into memory),
 * uncapped, one repeat (the steps change the index).
 */
static void check_workload(const json_t *cfg, harness_problems *probs)
{
    const json_t *wl = json_object_get(cfg, "workload");
    if (!wl)
        return;
    harness_workload w;
    harness_workload_parse(wl, NULL, &w, probs);
    harness_workload_fini(&w);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(cfg, "modes"), i, e)
        if (json_is_string(e) && !strcmp(json_string_value(e), "cold"))
            harness_problem(probs, "modes[%zu]: a workload runs warm only (each step is measured "
                                   "on the index its updates left in memory)", i);
    json_array_foreach(json_object_get(cfg, "memory_caps"), i, e)
        if (!json_is_null(e))
            harness_problem(probs, "memory_caps[%zu]: a workload runs uncapped (give null)", i);
    if (harness_cfg_int(cfg, "repeats") != 1)
        harness_problem(probs, "repeats: a workload runs once (its steps change the index); give 1");
    json_array_foreach(json_object_get(cfg, "engines"), i, e) {
        const ann_engine_ops *ops = ann_engine_find(json_string_value(json_object_get(e, "engine")));
        if (!ops)
            continue; /* reported by check_engines */
        const json_t *search = json_object_get(e, "search");
        const char *key;
        json_t *sv;
        json_object_foreach((json_t *)search, key, sv) {
            json_t *one = json_pack("{s:O}", key, sv);
            const char *tp;
            double tt;
            int target = harness_tune_target(one, &tp, &tt);
            size_t j;
            json_t *el;
            json_array_foreach(sv, j, el) {
                json_object_set(one, key, el);
                target |= harness_tune_target(one, &tp, &tt);
            }
            json_decref(one);
            if (target)
                harness_problem(probs, "engines[%zu].search.%s: a workload measures the efforts it "
                                       "is given, not a target recall (give a number)",
                                i, key);
        }
        if (!ops->insert || !ops->remove) {
            harness_problem(probs,
                            "engines[%zu]: %s has no insert/remove; a workload needs an engine "
                            "that accepts updates",
                            i, ops->name);
            continue;
        }
        for (const ann_param_spec *p = ops->open_params; p && p->name; p++)
            if (!strcmp(p->name, "updates") &&
                !json_is_true(json_object_get(json_object_get(e, "open"), "updates")))
                harness_problem(probs,
                                "engines[%zu].open.updates: a workload needs true (%s opens its "
                                "index read-only otherwise)",
                                i, ops->name);
    }
}

int harness_config_check(const json_t *cfg, harness_problems *probs)
{
    int before = probs->n;
    if (!json_is_object(cfg)) {
        harness_problem(probs, "(top level): expected a JSON object");
        return probs->n - before;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)cfg, key, v) {
        if (!cfg_key_find(key)) {
            char known[512] = "";
            size_t used = 0;
            for (size_t i = 0; i < sizeof cfg_keys / sizeof cfg_keys[0]; i++)
                used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "",
                                         cfg_keys[i].name);
            harness_problem(probs, "%s: unknown key (known: %s)", key, known);
        }
    }
    const json_t *name = json_object_get(cfg, "name");
    if (!name)
        harness_problem(probs, "name: missing");
    else if (!json_is_string(name) || !is_name_ok(json_string_value(name)))
        harness_problem(probs, "name: expected a name of letters, digits, '-', '_', '.'");
    check_string(cfg, "description", probs);
    check_baseline(cfg, probs);
    const json_t *ds = json_object_get(cfg, "dataset");
    if (!ds)
        harness_problem(probs, "dataset: missing (a dataset name or {\"path\": DIR})");
    else if (json_is_string(ds)) {
        if (!is_name_ok(json_string_value(ds)))
            harness_problem(probs, "dataset: \"%s\" is not a dataset name", json_string_value(ds));
    } else if (json_is_object(ds)) {
        json_object_foreach((json_t *)ds, key, v)
            if (strcmp(key, "path"))
                harness_problem(probs, "dataset.%s: unknown key (known: path)", key);
        check_string(ds, "path", probs);
        if (!json_object_get(ds, "path"))
            harness_problem(probs, "dataset.path: missing");
    } else
        harness_problem(probs, "dataset: expected a dataset name or {\"path\": DIR}");
    check_string(cfg, "dataset_root", probs);
    check_string(cfg, "index_root", probs);
    check_int(cfg, "k", 1, 10000, probs);
    check_int(cfg, "queries", 0, 100000000, probs);
    check_int(cfg, "repeats", 1, 100, probs);
    check_int(cfg, "warmup_queries", 0, 100000000, probs);
    check_real(cfg, "timeout_s", 0.001, 1e7, probs);
    check_real(cfg, "build_timeout_s", 0.001, 1e7, probs);
    check_real(cfg, "qps_min_seconds", 0, 3600, probs);
    check_real(cfg, "max_cell_seconds", MAX_CELL_S_MIN, MAX_CELL_S_MAX, probs);
    const json_t *dc = json_object_get(cfg, "drop_caches");
    if (dc && !json_is_boolean(dc))
        harness_problem(probs, "drop_caches: expected true or false");
    const json_t *pt = json_object_get(cfg, "pin_threads");
    if (pt && !json_is_boolean(pt))
        harness_problem(probs, "pin_threads: expected true or false");
    check_engines(cfg, probs);
    check_list(cfg, "threads", probs, elem_threads, same_json);
    check_list(cfg, "modes", probs, elem_mode, same_json);
    check_list(cfg, "memory_caps", probs, elem_cap, same_cap);
    check_exclude(cfg, probs);
    check_workload(cfg, probs);
    harness_paper_check(cfg, probs);
    if (probs->n == before)
        check_expansion(cfg, probs); /* needs a config valid in every other respect */
    return probs->n - before;
}

int harness_config_check_dataset(const json_t *cfg, uint32_t gt_k, harness_problems *probs)
{
    int before = probs->n;
    int64_t k = harness_cfg_int(cfg, "k");
    if (k > (int64_t)gt_k)
        harness_problem(probs, "k: %lld exceeds the dataset's ground-truth depth %u", (long long)k,
                        gt_k);
    return probs->n - before;
}

/* ---- expansion --------------------------------------------------------- */

void harness_json_hash16(const json_t *v, char out[17])
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(s ? s : "", s ? strlen(s) : 0, md, &len, EVP_sha256(), NULL);
    free(s);
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

void harness_cell_id(const json_t *cell, char out[17])
{
    json_t *ident = json_object();
    static const char *const keys[] = { "engine", "label", "build", "open", "search",
                                        "mode", "threads", "memory_cap_bytes",
                                        "max_cell_seconds", "workload" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(cell, keys[i]);
        if (v)
            json_object_set(ident, keys[i], v);
    }
    harness_json_hash16(ident, out);
    json_decref(ident);
}

/*
 * All combinations of a parameter object whose list values are sweeps:
 * *combos a new array of objects; *paths (when wanted) a parallel array of
 * strings naming the sweep elements each combination took
 * ("<section>.L[2] <section>.W[0]"; "" without sweeps).
 */
static void product(const json_t *params, const char *section, json_t **combos, json_t **paths)
{
    json_t *out = json_array(), *outp = json_array();
    json_array_append_new(out, json_object());
    json_array_append_new(outp, json_string(""));
    if (json_is_object(params)) {
        /* keys in sorted order for a deterministic expansion */
        size_t nkeys = json_object_size(params);
        const char **keys = calloc(nkeys ? nkeys : 1, sizeof *keys);
        size_t n = 0;
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)params, key, v)
            keys[n++] = key;
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
                const char *t = keys[j];
                keys[j] = keys[j - 1];
                keys[j - 1] = t;
            }
        for (size_t i = 0; i < n; i++) {
            json_t *vals = json_object_get(params, keys[i]);
            json_t *next = json_array(), *nextp = json_array();
            size_t a, b;
            json_t *partial, *val;
            json_array_foreach(out, a, partial) {
                const char *pp = json_string_value(json_array_get(outp, a));
                if (json_is_array(vals)) {
                    json_array_foreach(vals, b, val) {
                        json_t *c = json_deep_copy(partial);
                        json_object_set(c, keys[i], val);
                        json_array_append_new(next, c);
                        json_array_append_new(nextp, json_sprintf("%s%s%s.%s[%zu]", pp,
                                                                  pp[0] ? " " : "", section,
                                                                  keys[i], b));
                    }
                } else {
                    json_t *c = json_deep_copy(partial);
                    json_object_set(c, keys[i], vals);
                    json_array_append_new(next, c);
                    json_array_append_new(nextp, json_string(pp));
                }
            }
            json_decref(out);
            json_decref(outp);
            out = next;
            outp = nextp;
        }
        free(keys);
    }
    *combos = out;
    if (paths)
        *paths = outp;
    else
        json_decref(outp);
}

static int subset_matches(const json_t *want, const json_t *have)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)want, key, v) {
        const json_t *h = json_object_get(have, key);
        if (!h || !json_equal(v, h))
            return 0;
    }
    return 1;
}

/* The index of the first exclude entry matching cell, or -1. */
static long excluded(const json_t *cfg, const json_t *cell)
{
    size_t i;
    json_t *ex;
    json_array_foreach(json_object_get(cfg, "exclude"), i, ex) {
        int match = 1;
        const char *key;
        json_t *v;
        json_object_foreach(ex, key, v) {
            if (!strcmp(key, "build") || !strcmp(key, "open") || !strcmp(key, "search"))
                match = subset_matches(v, json_object_get(cell, key));
            else if (!strcmp(key, "memory_cap")) {
                uint64_t b = 0;
                harness_parse_bytes(v, &b);
                json_t *c = json_object_get(cell, "memory_cap_bytes");
                match = b == 0 ? json_is_null(c) : (json_is_integer(c) && (uint64_t)json_integer_value(c) == b);
            } else
                match = json_equal(v, json_object_get(cell, key));
            if (!match)
                break;
        }
        if (match)
            return (long)i;
    }
    return -1;
}

/*
 * The expansion (harness_config_expand); with paths non-NULL also the JSON
 * paths each cell comes from (parallel array of strings), and with hits
 * non-NULL how many cells each exclude entry dropped.
 */
static json_t *expand(const json_t *cfg, json_t **paths, size_t *hits)
{
    json_t *cells = json_array(), *cell_paths = json_array();
    json_t *threads = json_object_get(cfg, "threads");
    json_t *modes = json_object_get(cfg, "modes");
    json_t *caps = json_object_get(cfg, "memory_caps");
    json_t *def_threads = json_pack("[i]", 1);
    /* a workload runs warm only (see check_workload) */
    json_t *def_modes = json_object_get(cfg, "workload") ? json_pack("[s]", "warm")
                                                          : json_pack("[ss]", "cold", "warm");
    json_t *def_caps = json_pack("[n]");
    int lt = threads != NULL, lm = modes != NULL, lc = caps != NULL;
    if (!threads)
        threads = def_threads;
    if (!modes)
        modes = def_modes;
    if (!caps)
        caps = def_caps;
    size_t ei;
    json_t *e;
    json_array_foreach(json_object_get(cfg, "engines"), ei, e) {
        const char *engine = json_string_value(json_object_get(e, "engine"));
        const char *label = json_string_value(json_object_get(e, "label"));
        char sec[3][64];
        snprintf(sec[0], sizeof sec[0], "engines[%zu].build", ei);
        snprintf(sec[1], sizeof sec[1], "engines[%zu].open", ei);
        snprintf(sec[2], sizeof sec[2], "engines[%zu].search", ei);
        json_t *builds, *opens, *searches, *bp, *op, *sp;
        product(json_object_get(e, "build"), sec[0], &builds, &bp);
        product(json_object_get(e, "open"), sec[1], &opens, &op);
        product(json_object_get(e, "search"), sec[2], &searches, &sp);
        size_t bi, oi, si, ti, mi, ci;
        json_t *b, *o, *s, *t, *m, *c;
        json_array_foreach(builds, bi, b) json_array_foreach(opens, oi, o)
            json_array_foreach(searches, si, s) json_array_foreach(threads, ti, t)
                json_array_foreach(modes, mi, m) json_array_foreach(caps, ci, c) {
            uint64_t cap = 0;
            harness_parse_bytes(c, &cap);
            json_t *cell = json_pack("{s:s, s:s, s:O, s:O, s:O, s:O, s:O}", "engine", engine,
                                     "label", label ? label : engine, "build", b, "open", o,
                                     "search", s, "mode", m, "threads", t);
            json_object_set_new(cell, "memory_cap_bytes",
                                cap ? json_integer((json_int_t)cap) : json_null());
            /* part of the cell (and its id) only when bounded: unbounded
             * cells keep the ids they always had */
            const json_t *mcs = json_object_get(e, "max_cell_seconds");
            if (!mcs)
                mcs = json_object_get(cfg, "max_cell_seconds");
            if (mcs)
                json_object_set_new(cell, "max_cell_seconds", json_real(json_number_value(mcs)));
            long ex = excluded(cfg, cell);
            if (ex >= 0) {
                if (hits)
                    hits[ex]++;
                json_decref(cell);
                continue;
            }
            char id[17];
            harness_cell_id(cell, id);
            json_object_set_new(cell, "id", json_string(id));
            json_array_append_new(cells, cell);
            if (paths) {
                char where[1024];
                const char *parts[3] = { json_string_value(json_array_get(bp, bi)),
                                         json_string_value(json_array_get(op, oi)),
                                         json_string_value(json_array_get(sp, si)) };
                /* the sweep elements it took ("engines[0].search.L[2]"), else the entry */
                int w = 0;
                where[0] = '\0';
                for (int k = 0; k < 3; k++)
                    if (parts[k] && parts[k][0] && w < (int)sizeof where)
                        w += snprintf(where + w, sizeof where - (size_t)w, "%s%s", w ? " " : "",
                                      parts[k]);
                if (!w)
                    w = snprintf(where, sizeof where, "engines[%zu]", ei);
                if (lt && w < (int)sizeof where)
                    w += snprintf(where + w, sizeof where - (size_t)w, " threads[%zu]", ti);
                if (lm && w < (int)sizeof where)
                    w += snprintf(where + w, sizeof where - (size_t)w, " modes[%zu]", mi);
                if (lc && w < (int)sizeof where)
                    snprintf(where + w, sizeof where - (size_t)w, " memory_caps[%zu]", ci);
                json_array_append_new(cell_paths, json_string(where));
            }
        }
        json_decref(builds);
        json_decref(opens);
        json_decref(searches);
        json_decref(bp);
        json_decref(op);
        json_decref(sp);
    }
    json_decref(def_threads);
    json_decref(def_modes);
    json_decref(def_caps);
    if (paths)
        *paths = cell_paths;
    else
        json_decref(cell_paths);
    return cells;
}

json_t *harness_config_expand(const json_t *cfg)
{
    return expand(cfg, NULL, NULL);
}

/* Parameters as the engine will see them: every declared parameter, the
 * default where not given, numbers of the declared type. */
static json_t *with_defaults(const json_t *params, const ann_param_spec *specs)
{
    json_t *out = json_is_object(params) ? json_deep_copy(params) : json_object();
    for (const ann_param_spec *sp = specs; sp && sp->name; sp++) {
        const json_t *v = json_object_get(out, sp->name);
        switch (sp->type) {
        case ANN_PARAM_INT:
            json_object_set_new(out, sp->name,
                                json_integer(v ? (json_int_t)json_number_value(v) : (json_int_t)sp->def));
            break;
        case ANN_PARAM_REAL:
            json_object_set_new(out, sp->name, json_real(v ? json_number_value(v) : sp->def));
            break;
        case ANN_PARAM_BOOL:
            if (!v)
                json_object_set_new(out, sp->name, json_boolean(sp->def != 0));
            break;
        case ANN_PARAM_ENUM:
            if (!v && sp->def_str)
                json_object_set_new(out, sp->name, json_string(sp->def_str));
            break;
        }
    }
    return out;
}

/*
 * What only the expansion shows: two cells that are the same cell (they
 * would run twice and their rows collide), and exclude entries that drop
 * nothing.  Runs on a config valid in every other respect.
 */
static void check_expansion(const json_t *cfg, harness_problems *probs)
{
    size_t nex = json_array_size(json_object_get(cfg, "exclude"));
    size_t *hits = calloc(nex ? nex : 1, sizeof *hits);
    json_t *paths = NULL;
    json_t *cells = expand(cfg, &paths, hits);
    json_t *seen = json_object(); /* canonical identity -> index of its first cell */
    json_t *reported = json_object();
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c) {
        const ann_engine_ops *ops = ann_engine_find(json_string_value(json_object_get(c, "engine")));
        if (!ops)
            continue;
        json_t *ident = json_pack("{s:O, s:O, s:o, s:o, s:o, s:O, s:O, s:O}", "engine",
                                  json_object_get(c, "engine"), "label", json_object_get(c, "label"),
                                  "build", with_defaults(json_object_get(c, "build"), ops->build_params),
                                  "open", with_defaults(json_object_get(c, "open"), ops->open_params),
                                  "search", with_defaults(json_object_get(c, "search"), ops->search_params),
                                  "mode", json_object_get(c, "mode"), "threads",
                                  json_object_get(c, "threads"), "memory_cap_bytes",
                                  json_object_get(c, "memory_cap_bytes"));
        char *key = json_dumps(ident, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        json_decref(ident);
        if (!key)
            continue;
        const json_t *first = json_object_get(seen, key);
        size_t j = first ? (size_t)json_integer_value(first) : 0;
        unsigned ei = 0, ej = 0;
        char pair[48];
        if (first) {
            /* one problem per pair of entries, not one per repeated cell */
            sscanf(json_string_value(json_array_get(paths, i)), "engines[%u]", &ei);
            sscanf(json_string_value(json_array_get(paths, j)), "engines[%u]", &ej);
            snprintf(pair, sizeof pair, "%u/%u", ei, ej);
        }
        if (first && !json_object_get(reported, pair)) {
            json_object_set_new(reported, pair, json_true());
            harness_problem(probs,
                            "%s: the same %s %s cell as %s (parameters equal once defaults are "
                            "filled in); it would run twice: remove one, or label the entries apart",
                            json_string_value(json_array_get(paths, i)),
                            json_string_value(json_object_get(c, "label")),
                            json_string_value(json_object_get(c, "mode")),
                            json_string_value(json_array_get(paths, j)));
        } else if (!first)
            json_object_set_new(seen, key, json_integer((json_int_t)i));
        free(key);
    }
    for (size_t x = 0; x < nex; x++)
        if (hits[x] == 0)
            harness_problem(probs, "exclude[%zu]: matches no cell of this config (it excludes "
                                   "nothing)",
                            x);
    json_decref(seen);
    json_decref(reported);
    json_decref(cells);
    json_decref(paths);
    free(hits);
}
