/*
 * params.c: validation and typed access for engine parameter tables.
 */
#include "engines/core/params.h"

#include "engines/core/status.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ann_param_spec *find_spec(const ann_param_spec *specs, const char *name)
{
    for (; specs && specs->name; specs++)
        if (strcmp(specs->name, name) == 0)
            return specs;
    return NULL;
}

static void reportf(ann_param_report_fn report, void *user, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reportf(ann_param_report_fn report, void *user, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    report(user, msg);
}

static void fmt_bound(char *buf, size_t n, double v, ann_param_type t)
{
    if (t == ANN_PARAM_INT)
        snprintf(buf, n, "%.0f", v);
    else
        snprintf(buf, n, "%g", v);
}

static int check_one(const char *path, const char *key, const json_t *v, const ann_param_spec *s,
                     ann_param_report_fn report, void *user)
{
    char lo[32], hi[32];
    fmt_bound(lo, sizeof lo, s->min, s->type);
    fmt_bound(hi, sizeof hi, s->max, s->type);
    switch (s->type) {
    case ANN_PARAM_INT: {
        if (!json_is_integer(v)) {
            reportf(report, user, "%s.%s: expected an integer in [%s, %s]", path, key, lo, hi);
            return 1;
        }
        double x = (double)json_integer_value(v);
        if (x < s->min || x > s->max) {
            reportf(report, user, "%s.%s: %" JSON_INTEGER_FORMAT " is out of range [%s, %s]", path,
                    key, json_integer_value(v), lo, hi);
            return 1;
        }
        return 0;
    }
    case ANN_PARAM_REAL: {
        if (!json_is_number(v)) {
            reportf(report, user, "%s.%s: expected a number in [%s, %s]", path, key, lo, hi);
            return 1;
        }
        double x = json_number_value(v);
        if (!isfinite(x) || x < s->min || x > s->max) {
            reportf(report, user, "%s.%s: %g is out of range [%s, %s]", path, key, x, lo, hi);
            return 1;
        }
        return 0;
    }
    case ANN_PARAM_BOOL:
        if (!json_is_boolean(v)) {
            reportf(report, user, "%s.%s: expected true or false", path, key);
            return 1;
        }
        return 0;
    case ANN_PARAM_ENUM: {
        char allowed[256] = "";
        size_t used = 0;
        for (const char *const *c = s->choices; c && *c; c++) {
            int w = snprintf(allowed + used, sizeof allowed - used, "%s%s", used ? ", " : "", *c);
            if (w < 0 || (size_t)w >= sizeof allowed - used)
                break;
            used += (size_t)w;
        }
        if (!json_is_string(v)) {
            reportf(report, user, "%s.%s: expected one of: %s", path, key, allowed);
            return 1;
        }
        for (const char *const *c = s->choices; c && *c; c++)
            if (strcmp(*c, json_string_value(v)) == 0)
                return 0;
        reportf(report, user, "%s.%s: \"%s\" is not one of: %s", path, key, json_string_value(v),
                allowed);
        return 1;
    }
    }
    return 0;
}

int ann_params_check(const json_t *obj, const ann_param_spec *specs, const char *path,
                     ann_param_report_fn report, void *user)
{
    if (obj == NULL || json_is_null(obj))
        return 0;
    if (!json_is_object(obj)) {
        reportf(report, user, "%s: expected an object", path);
        return 1;
    }
    int problems = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        const ann_param_spec *s = find_spec(specs, key);
        if (!s) {
            char known[384] = "";
            size_t used = 0;
            for (const ann_param_spec *p = specs; p && p->name; p++) {
                int w = snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "",
                                 p->name);
                if (w < 0 || (size_t)w >= sizeof known - used)
                    break;
                used += (size_t)w;
            }
            reportf(report, user, "%s.%s: unknown parameter (known: %s)", path, key,
                    used ? known : "none");
            problems++;
            continue;
        }
        problems += check_one(path, key, v, s, report, user);
    }
    return problems;
}

static void first_only(void *user, const char *msg)
{
    int *seen = user;
    if (!*seen)
        ann_fail(ANN_EPARAM, "%s", msg);
    *seen = 1;
}

int ann_params_validate(const json_t *obj, const ann_param_spec *specs, const char *path)
{
    int seen = 0;
    return ann_params_check(obj, specs, path, first_only, &seen) ? ANN_EPARAM : 0;
}

static const json_t *get(const json_t *obj, const char *name);

int ann_params_check_k(const json_t *obj, const ann_param_spec *specs, uint32_t k,
                       const char *path)
{
    for (const ann_param_spec *s = specs; s && s->name; s++) {
        if (!s->at_least_k)
            continue;
        int64_t v = ann_param_int(obj, specs, s->name);
        if (v < (int64_t)k)
            return ann_fail(ANN_EPARAM, "%s.%s: %lld is less than k = %u", path, s->name,
                            (long long)v, k);
    }
    return 0;
}

static const json_t *get(const json_t *obj, const char *name)
{
    return json_is_object(obj) ? json_object_get(obj, name) : NULL;
}

/* The spec of a name the caller must have declared (params.h: abort). */
static const ann_param_spec *declared(const ann_param_spec *specs, const char *name)
{
    const ann_param_spec *s = find_spec(specs, name);
    if (s)
        return s;
    const ann_param_spec *end = specs;
    while (end && end->name)
        end++;
    fprintf(stderr, "annlab: programming error: parameter \"%s\" is not declared by %s (declared:",
            name, end && end->owner ? end->owner : "an unnamed parameter table");
    for (const ann_param_spec *p = specs; p && p->name; p++)
        fprintf(stderr, "%s %s", p == specs ? "" : ",", p->name);
    fprintf(stderr, "%s)\n", specs && specs->name ? "" : " none");
    abort();
}

int64_t ann_param_int(const json_t *obj, const ann_param_spec *specs, const char *name)
{
    const ann_param_spec *s = declared(specs, name);
    const json_t *v = get(obj, name);
    if (json_is_integer(v))
        return json_integer_value(v);
    return (int64_t)s->def;
}

double ann_param_real(const json_t *obj, const ann_param_spec *specs, const char *name)
{
    const ann_param_spec *s = declared(specs, name);
    const json_t *v = get(obj, name);
    if (json_is_number(v))
        return json_number_value(v);
    return s->def;
}

int ann_param_bool(const json_t *obj, const ann_param_spec *specs, const char *name)
{
    const ann_param_spec *s = declared(specs, name);
    const json_t *v = get(obj, name);
    if (json_is_boolean(v))
        return json_is_true(v);
    return s->def != 0.0;
}

const char *ann_param_enum(const json_t *obj, const ann_param_spec *specs, const char *name)
{
    const ann_param_spec *s = declared(specs, name);
    const json_t *v = get(obj, name);
    if (json_is_string(v))
        return json_string_value(v);
    return s->def_str;
}

int ann_param_is_set(const json_t *obj, const char *name)
{
    return get(obj, name) != NULL;
}
