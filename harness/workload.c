/*
 * workload.c: a streaming workload read and checked (workload.h): the JSON
 * steps of a config, or a big-ann-benchmarks streaming runbook (YAML, read
 * with libyaml's document API so every problem names its line), into one
 * list of steps; then the steps played against the dataset's size to find
 * ranges that leave it, deletes of ids that are not live, and inserts of
 * ids that are.
 */
#include "harness/workload.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static const char *const op_names[] = { "insert", "delete", "search", "merge", "replace" };
#define OP_COUNT (sizeof op_names / sizeof op_names[0])
#define OPS_KNOWN "insert, delete, search, merge, replace"

const char *harness_wl_op_name(harness_wl_op op)
{
    return (size_t)op < OP_COUNT ? op_names[op] : "?";
}

static int op_parse(const char *s, harness_wl_op *op)
{
    for (size_t i = 0; i < OP_COUNT; i++)
        if (!strcmp(s, op_names[i])) {
            *op = (harness_wl_op)i;
            return 0;
        }
    return -1;
}

void harness_workload_fini(harness_workload *w)
{
    free(w->steps);
    memset(w, 0, sizeof *w);
}

static harness_wl_step *step_add(harness_workload *w)
{
    harness_wl_step *s = realloc(w->steps, (w->n + 1) * sizeof *s);
    if (!s)
        return NULL;
    w->steps = s;
    memset(&s[w->n], 0, sizeof *s);
    return &s[w->n++];
}

/* The fields each operation takes (besides op / operation). */
static int field_wanted(harness_wl_op op, const char *key)
{
    if (op == HARNESS_WL_INSERT && !strcmp(key, "merge_every"))
        return 1;
    if (op == HARNESS_WL_INSERT || op == HARNESS_WL_DELETE)
        return !strcmp(key, "start") || !strcmp(key, "end");
    if (op == HARNESS_WL_REPLACE)
        return !strcmp(key, "tags_start") || !strcmp(key, "tags_end") ||
               !strcmp(key, "ids_start") || !strcmp(key, "ids_end");
    return 0;
}

static const char *fields_of(harness_wl_op op)
{
    if (op == HARNESS_WL_INSERT)
        return "start, end, merge_every";
    if (op == HARNESS_WL_DELETE)
        return "start, end";
    if (op == HARNESS_WL_REPLACE)
        return "tags_start, tags_end, ids_start, ids_end";
    return "none";
}

static uint64_t *field_slot(harness_wl_step *s, const char *key)
{
    if (!strcmp(key, "start") || !strcmp(key, "tags_start"))
        return &s->start;
    if (!strcmp(key, "end") || !strcmp(key, "tags_end"))
        return &s->end;
    if (!strcmp(key, "ids_start"))
        return &s->ids_start;
    if (!strcmp(key, "merge_every"))
        return &s->merge_every;
    return &s->ids_end;
}

/* The fields an operation needs, in order, NULL-terminated. */
static const char *const *fields_needed(harness_wl_op op)
{
    static const char *const range[] = { "start", "end", NULL };
    static const char *const repl[] = { "tags_start", "tags_end", "ids_start", "ids_end", NULL };
    static const char *const none[] = { NULL };
    if (op == HARNESS_WL_INSERT || op == HARNESS_WL_DELETE)
        return range;
    return op == HARNESS_WL_REPLACE ? repl : none;
}

/* ---- the JSON form ----------------------------------------------------- */

static void parse_json_steps(const json_t *steps, harness_workload *w, harness_problems *probs)
{
    if (!json_is_array(steps) || json_array_size(steps) == 0) {
        harness_problem(probs, "workload.steps: expected a non-empty list of steps");
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(steps, i, e) {
        char where[64];
        snprintf(where, sizeof where, "workload.steps[%zu]", i);
        if (!json_is_object(e)) {
            harness_problem(probs, "%s: expected an object {\"op\": ...}", where);
            continue;
        }
        const json_t *opv = json_object_get(e, "op");
        harness_wl_op op;
        if (!opv) {
            harness_problem(probs, "%s.op: missing (one of " OPS_KNOWN ")", where);
            continue;
        }
        if (!json_is_string(opv) || op_parse(json_string_value(opv), &op)) {
            char *txt = json_dumps(opv, JSON_ENCODE_ANY | JSON_COMPACT);
            harness_problem(probs, "%s.op: unknown operation %s (known: " OPS_KNOWN ")", where,
                            txt ? txt : "?");
            free(txt);
            continue;
        }
        harness_wl_step *s = step_add(w);
        if (!s) {
            harness_problem(probs, "%s: no memory", where);
            return;
        }
        s->op = op;
        snprintf(s->where, sizeof s->where, "%s", where);
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)e, key, v) {
            if (!strcmp(key, "op"))
                continue;
            if (!field_wanted(op, key)) {
                harness_problem(probs, "%s.%s: unknown key for %s (its fields: %s)", where, key,
                                op_names[op], fields_of(op));
                continue;
            }
            if (!json_is_integer(v) || json_integer_value(v) < 0) {
                harness_problem(probs, "%s.%s: expected an integer >= 0", where, key);
                continue;
            }
            *field_slot(s, key) = (uint64_t)json_integer_value(v);
        }
        for (const char *const *f = fields_needed(op); *f; f++)
            if (!json_object_get(e, *f))
                harness_problem(probs, "%s.%s: missing", where, *f);
    }
}

/* ---- the runbook (YAML) ------------------------------------------------ */

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static unsigned line_of(const yaml_node_t *n)
{
    return (unsigned)n->start_mark.line + 1;
}

/* One numbered step of the runbook: a mapping with "operation" and its fields. */
static void yaml_step(yaml_document_t *doc, yaml_node_t *key, yaml_node_t *m, const char *path,
                      uint64_t number, harness_workload *w, harness_problems *probs)
{
    char where[160];
    snprintf(where, sizeof where, "%s:%u: step %llu", path, line_of(key), (unsigned long long)number);
    if (m->type != YAML_MAPPING_NODE) {
        harness_problem(probs, "%s: expected a mapping with \"operation\"", where);
        return;
    }
    yaml_node_t *opn = NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const char *k = scalar(yaml_document_get_node(doc, p->key));
        if (k && !strcmp(k, "operation"))
            opn = yaml_document_get_node(doc, p->value);
    }
    harness_wl_op op;
    if (!opn) {
        harness_problem(probs, "%s: operation: missing (one of " OPS_KNOWN ")", where);
        return;
    }
    if (!scalar(opn) || op_parse(scalar(opn), &op)) {
        harness_problem(probs, "%s:%u: step %llu: unknown operation \"%s\" (known: " OPS_KNOWN ")",
                        path, line_of(opn), (unsigned long long)number,
                        scalar(opn) ? scalar(opn) : "(not a scalar)");
        return;
    }
    harness_wl_step *s = step_add(w);
    if (!s) {
        harness_problem(probs, "%s: no memory", where);
        return;
    }
    s->op = op;
    snprintf(s->where, sizeof s->where, "%s", where);
    unsigned seen = 0;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(doc, p->value);
        const char *k = scalar(kn);
        if (k && !strcmp(k, "operation"))
            continue;
        if (!k || !field_wanted(op, k)) {
            harness_problem(probs, "%s:%u: step %llu: %s: unknown key for %s (its fields: %s)", path,
                            line_of(kn), (unsigned long long)number, k ? k : "(not a scalar)",
                            op_names[op], fields_of(op));
            continue;
        }
        const char *const *f = fields_needed(op);
        for (unsigned i = 0; f[i]; i++)
            if (!strcmp(f[i], k))
                seen |= 1u << i; /* present, even when its value is bad */
        uint64_t v;
        if (parse_u64(scalar(vn), &v)) {
            harness_problem(probs, "%s:%u: step %llu: %s: expected an integer >= 0", path,
                            line_of(vn), (unsigned long long)number, k);
            continue;
        }
        *field_slot(s, k) = v;
    }
    const char *const *f = fields_needed(op);
    for (unsigned i = 0; f[i]; i++)
        if (!(seen & (1u << i)))
            harness_problem(probs, "%s: %s: missing", where, f[i]);
}

static void parse_runbook(const char *path, const char *dataset, harness_workload *w,
                          harness_problems *probs)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        harness_problem(probs, "workload.runbook: %s: %s", path, strerror(errno));
        return;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    int have_doc = 0;
    yaml_node_t **numbered = NULL, **numbered_key = NULL;
    size_t n_numbered = 0;
    int before = probs->n;
    if (!yaml_parser_initialize(&parser)) {
        harness_problem(probs, "workload.runbook: %s: libyaml: no memory", path);
        fclose(f);
        return;
    }
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        harness_problem(probs, "%s:%zu: not valid YAML: %s", path,
                        (size_t)parser.problem_mark.line + 1,
                        parser.problem ? parser.problem : "parse error");
        goto out;
    }
    have_doc = 1;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        harness_problem(probs, "%s: expected a mapping of dataset names to runbooks", path);
        goto out;
    }
    yaml_node_t *book = NULL;
    size_t entries = 0;
    char names[512] = "";
    size_t used = 0;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(yaml_document_get_node(&doc, p->key));
        entries++;
        if (k && used < sizeof names)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", k);
        if (k && (!dataset || !strcmp(dataset, k)))
            book = yaml_document_get_node(&doc, p->value);
    }
    if (!dataset && entries != 1) {
        harness_problem(probs,
                        "%s: holds %zu runbooks (%s); workload.dataset must name the one to run",
                        path, entries, names);
        goto out;
    }
    if (!book) {
        harness_problem(probs, "%s: no runbook named \"%s\" (it has: %s)", path, dataset, names);
        goto out;
    }
    if (book->type != YAML_MAPPING_NODE) {
        harness_problem(probs, "%s:%u: expected a mapping of max_pts and numbered steps", path,
                        line_of(book));
        goto out;
    }
    /* the numbered steps, in number order, wherever they appear */
    size_t pairs = (size_t)(book->data.mapping.pairs.top - book->data.mapping.pairs.start);
    numbered = calloc(pairs + 1, sizeof *numbered);
    numbered_key = calloc(pairs + 1, sizeof *numbered_key);
    if (!numbered || !numbered_key) {
        harness_problem(probs, "%s: no memory", path);
        goto out;
    }
    for (yaml_node_pair_t *p = book->data.mapping.pairs.start; p < book->data.mapping.pairs.top;
         p++) {
        yaml_node_t *kn = yaml_document_get_node(&doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(&doc, p->value);
        const char *k = scalar(kn);
        uint64_t num;
        if (k && !strcmp(k, "max_pts")) {
            if (parse_u64(scalar(vn), &w->max_pts) || w->max_pts == 0)
                harness_problem(probs, "%s:%u: max_pts: expected an integer >= 1", path,
                                line_of(vn));
        } else if (k && !strcmp(k, "gt_url")) {
            /* big-ann's ground-truth download: annlab computes its own */
        } else if (k && parse_u64(k, &num) == 0) {
            if (num == 0 || num > pairs) {
                harness_problem(probs,
                                "%s:%u: step %s: steps are numbered 1, 2, ... without gaps "
                                "(this runbook has at most %zu)",
                                path, line_of(kn), k, pairs);
            } else if (numbered[num]) {
                harness_problem(probs, "%s:%u: step %s: numbered twice (also line %u)", path,
                                line_of(kn), k, line_of(numbered_key[num]));
            } else {
                numbered[num] = vn;
                numbered_key[num] = kn;
                if (num > n_numbered)
                    n_numbered = num;
            }
        } else {
            harness_problem(probs,
                            "%s:%u: %s: unknown key (known: max_pts, gt_url, and steps numbered 1, "
                            "2, ...)",
                            path, line_of(kn), k ? k : "(not a scalar)");
        }
    }
    if (n_numbered == 0 && probs->n == before)
        harness_problem(probs, "%s: runbook \"%s\" has no steps", path, dataset ? dataset : names);
    for (size_t i = 1; i <= n_numbered; i++) {
        if (!numbered[i]) {
            harness_problem(probs,
                            "%s: step %zu: missing (steps are numbered 1, 2, ... without gaps; the "
                            "last is %zu)",
                            path, i, n_numbered);
            continue;
        }
        yaml_step(&doc, numbered_key[i], numbered[i], path, i, w, probs);
    }
out:
    free(numbered);
    free(numbered_key);
    if (have_doc)
        yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
}

int harness_workload_parse(const json_t *wl, const char *config_dir, harness_workload *out,
                           harness_problems *probs)
{
    int before = probs->n;
    memset(out, 0, sizeof *out);
    out->writers = 1;
    if (!json_is_object(wl)) {
        harness_problem(probs, "workload: expected an object with \"steps\" or \"runbook\"");
        return probs->n - before;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)wl, key, v)
        if (strcmp(key, "steps") && strcmp(key, "runbook") && strcmp(key, "dataset") &&
            strcmp(key, "writers") && strcmp(key, "search_during_inserts") &&
            strcmp(key, "live_build"))
            harness_problem(probs, "workload.%s: unknown key (known: steps, runbook, dataset, "
                                   "writers, search_during_inserts, live_build)",
                            key);
    const json_t *sdi = json_object_get(wl, "search_during_inserts");
    if (sdi && !json_is_boolean(sdi))
        harness_problem(probs, "workload.search_during_inserts: expected true or false");
    else
        out->search_during_inserts = json_is_true(sdi);
    const json_t *lb = json_object_get(wl, "live_build");
    if (lb && !json_is_boolean(lb))
        harness_problem(probs, "workload.live_build: expected true or false");
    else
        out->live_build = json_is_true(lb);
    const json_t *steps = json_object_get(wl, "steps"), *rb = json_object_get(wl, "runbook");
    const json_t *ds = json_object_get(wl, "dataset"), *wr = json_object_get(wl, "writers");
    if (wr) {
        if (!json_is_integer(wr) || json_integer_value(wr) < 1 || json_integer_value(wr) > 1024)
            harness_problem(probs, "workload.writers: expected an integer in [1, 1024]");
        else
            out->writers = (uint32_t)json_integer_value(wr);
    }
    if (ds && (!json_is_string(ds) || !rb))
        harness_problem(probs, "workload.dataset: expected a string naming an entry of the runbook");
    if (steps && rb)
        harness_problem(probs, "workload: give \"steps\" or \"runbook\", not both");
    else if (!steps && !rb)
        harness_problem(probs, "workload: missing \"steps\" (a list) or \"runbook\" (a YAML file)");
    else if (steps)
        parse_json_steps(steps, out, probs);
    else if (!json_is_string(rb) || !json_string_value(rb)[0])
        harness_problem(probs, "workload.runbook: expected the path of a YAML runbook");
    else if (config_dir) {
        const char *p = json_string_value(rb);
        char path[PATH_MAX];
        int len = p[0] == '/' || !config_dir[0]
                      ? snprintf(path, sizeof path, "%s", p)
                      : snprintf(path, sizeof path, "%s/%s", config_dir, p);
        if (len < 0 || (size_t)len >= sizeof path)
            harness_problem(probs, "workload.runbook: path too long");
        else
            parse_runbook(path, json_string_value(ds), out, probs);
    }
    for (size_t i = 0; i < out->n; i++) {
        const harness_wl_step *st = &out->steps[i];
        if (!st->merge_every)
            continue;
        if (out->writers > 1)
            harness_problem(probs, "%s.merge_every: needs one writer (workload.writers is %u)",
                            st->where, out->writers);
        if (i == 0 && !out->live_build)
            harness_problem(probs, "%s.merge_every: the first step's vectors are built over, "
                                   "not inserted (live_build: true inserts them)",
                            st->where);
    }
    if (probs->n != before) {
        harness_workload_fini(out);
        out->writers = 1;
        return probs->n - before;
    }
    json_t *canon = harness_workload_steps_json(out);
    harness_json_hash16(canon, out->hash);
    json_decref(canon);
    return 0;
}

json_t *harness_workload_steps_json(const harness_workload *w)
{
    json_t *a = json_array();
    for (size_t i = 0; i < w->n; i++) {
        const harness_wl_step *s = &w->steps[i];
        json_t *o = json_pack("{s:s}", "op", op_names[s->op]);
        if (s->op == HARNESS_WL_INSERT || s->op == HARNESS_WL_DELETE) {
            json_object_set_new(o, "start", json_integer((json_int_t)s->start));
            json_object_set_new(o, "end", json_integer((json_int_t)s->end));
            if (s->merge_every)
                json_object_set_new(o, "merge_every", json_integer((json_int_t)s->merge_every));
        } else if (s->op == HARNESS_WL_REPLACE) {
            json_object_set_new(o, "tags_start", json_integer((json_int_t)s->start));
            json_object_set_new(o, "tags_end", json_integer((json_int_t)s->end));
            json_object_set_new(o, "ids_start", json_integer((json_int_t)s->ids_start));
            json_object_set_new(o, "ids_end", json_integer((json_int_t)s->ids_end));
        }
        json_array_append_new(a, o);
    }
    return a;
}

/* ---- the live set ------------------------------------------------------ */

int harness_wl_state_init(harness_wl_state *s, uint64_t n_base)
{
    memset(s, 0, sizeof *s);
    s->n_base = n_base;
    s->row_of_id = malloc((n_base ? n_base : 1) * sizeof *s->row_of_id);
    s->id_of_row = malloc((n_base ? n_base : 1) * sizeof *s->id_of_row);
    if (!s->row_of_id || !s->id_of_row) {
        harness_wl_state_fini(s);
        return -ENOMEM;
    }
    memset(s->row_of_id, 0xff, n_base * sizeof *s->row_of_id);
    memset(s->id_of_row, 0xff, n_base * sizeof *s->id_of_row);
    return 0;
}

void harness_wl_state_fini(harness_wl_state *s)
{
    free(s->row_of_id);
    free(s->id_of_row);
    memset(s, 0, sizeof *s);
}

/* [a, b) a non-empty range inside [0, n); else why[] says what is wrong. */
static int range_bad(const char *what, uint64_t a, uint64_t b, uint64_t n, char *why, size_t len)
{
    if (a >= b) {
        snprintf(why, len, "%s [%llu, %llu) is empty (start must be below end)", what,
                 (unsigned long long)a, (unsigned long long)b);
        return 1;
    }
    if (b > n) {
        snprintf(why, len, "%s [%llu, %llu) is outside the dataset's %llu vectors", what,
                 (unsigned long long)a, (unsigned long long)b, (unsigned long long)n);
        return 1;
    }
    return 0;
}

int harness_wl_apply(harness_wl_state *s, const harness_wl_step *st, char *why, size_t len)
{
    const uint64_t a = st->start, b = st->end;
    switch (st->op) {
    case HARNESS_WL_SEARCH:
    case HARNESS_WL_MERGE:
        return 0;
    case HARNESS_WL_INSERT:
        if (range_bad("insert", a, b, s->n_base, why, len))
            return 1;
        for (uint64_t i = a; i < b; i++) {
            if (s->row_of_id[i] >= 0 || s->id_of_row[i] >= 0) {
                snprintf(why, len, "insert [%llu, %llu): id %llu is live already%s",
                         (unsigned long long)a, (unsigned long long)b, (unsigned long long)i,
                         s->row_of_id[i] >= 0 ? "" : " (its row is another id's, by a replace)");
                return 1;
            }
        }
        for (uint64_t i = a; i < b; i++)
            s->row_of_id[i] = s->id_of_row[i] = (int64_t)i;
        s->live += b - a;
        return 0;
    case HARNESS_WL_DELETE:
        if (range_bad("delete", a, b, s->n_base, why, len))
            return 1;
        for (uint64_t i = a; i < b; i++)
            if (s->row_of_id[i] < 0) {
                snprintf(why, len, "delete [%llu, %llu): id %llu is not live",
                         (unsigned long long)a, (unsigned long long)b, (unsigned long long)i);
                return 1;
            }
        for (uint64_t i = a; i < b; i++) {
            s->id_of_row[s->row_of_id[i]] = -1;
            s->row_of_id[i] = -1;
        }
        s->live -= b - a;
        return 0;
    case HARNESS_WL_REPLACE:
        if (range_bad("replace tags", a, b, s->n_base, why, len) ||
            range_bad("replace ids", st->ids_start, st->ids_end, s->n_base, why, len))
            return 1;
        if (b - a != st->ids_end - st->ids_start) {
            snprintf(why, len, "replace: %llu tags but %llu ids (want as many)",
                     (unsigned long long)(b - a), (unsigned long long)(st->ids_end - st->ids_start));
            return 1;
        }
        for (uint64_t i = a; i < b; i++)
            if (s->row_of_id[i] < 0) {
                snprintf(why, len, "replace tags [%llu, %llu): id %llu is not live",
                         (unsigned long long)a, (unsigned long long)b, (unsigned long long)i);
                return 1;
            }
        for (uint64_t r = st->ids_start; r < st->ids_end; r++)
            if (s->id_of_row[r] >= 0) {
                snprintf(why, len, "replace ids [%llu, %llu): row %llu is live already (id %lld)",
                         (unsigned long long)st->ids_start, (unsigned long long)st->ids_end,
                         (unsigned long long)r, (long long)s->id_of_row[r]);
                return 1;
            }
        for (uint64_t i = a; i < b; i++) {
            int64_t r = (int64_t)(st->ids_start + (i - a));
            s->id_of_row[s->row_of_id[i]] = -1;
            s->row_of_id[i] = r;
            s->id_of_row[r] = (int64_t)i;
        }
        return 0;
    }
    snprintf(why, len, "unknown operation %d", (int)st->op);
    return 1;
}

int harness_workload_check(const harness_workload *w, uint64_t n_base, uint32_t k,
                           harness_problems *probs)
{
    int before = probs->n;
    if (w->n == 0) {
        harness_problem(probs, "workload: no steps");
        return probs->n - before;
    }
    const harness_wl_step *first = &w->steps[0];
    if (!w->live_build && (first->op != HARNESS_WL_INSERT || first->start != 0)) {
        harness_problem(probs,
                        "%s: the first step must insert [0, end): the index is built over those "
                        "vectors before the other steps run (or set \"live_build\": true to "
                        "build it over none and run every step)",
                        first->where);
        return probs->n - before;
    }
    harness_wl_state s;
    if (harness_wl_state_init(&s, n_base)) {
        harness_problem(probs, "workload: no memory for the live set of %llu vectors",
                        (unsigned long long)n_base);
        return probs->n - before;
    }
    char why[512];
    for (size_t i = 0; i < w->n; i++) {
        if (harness_wl_apply(&s, &w->steps[i], why, sizeof why)) {
            harness_problem(probs, "%s: %s", w->steps[i].where, why);
            break;
        }
        if (k && w->steps[i].op == HARNESS_WL_SEARCH && s.live < k) {
            harness_problem(probs, "%s: %llu vectors live, fewer than k = %u", w->steps[i].where,
                            (unsigned long long)s.live, k);
            break;
        }
        if (w->max_pts && s.live > w->max_pts) {
            harness_problem(probs, "%s: %llu vectors live, more than the runbook's max_pts %llu",
                            w->steps[i].where, (unsigned long long)s.live,
                            (unsigned long long)w->max_pts);
            break;
        }
    }
    harness_wl_state_fini(&s);
    return probs->n - before;
}
