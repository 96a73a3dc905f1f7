/*
 * buildinfo.c: an index's build.json, read and checked (buildinfo.h).
 */
#include "harness/buildinfo.h"

#include "engines/core/vecsrc.h"

#include <stdio.h>
#include <string.h>

long long harness_build_info_format(const json_t *info)
{
    const json_t *f = json_object_get(info, "engine_format");
    if (!f || json_is_null(f))
        return 1;
    return json_is_integer(f) && json_integer_value(f) > 0 ? json_integer_value(f) : -1;
}

/* 1 when info's member key is a string equal to want */
static int str_is(const json_t *info, const char *key, const char *want)
{
    const json_t *v = json_object_get(info, key);
    return json_is_string(v) && want && !strcmp(json_string_value(v), want);
}

json_t *harness_build_info_load(const char *path, const char *engine, const json_t *params,
                                const ann_bundle *ds, char *why, size_t len)
{
    return harness_build_info_load_n(path, engine, params, ds, ds->n, why, len);
}

json_t *harness_build_info_load_n(const char *path, const char *engine, const json_t *params,
                                  const ann_bundle *ds, uint64_t n_rows, char *why, size_t len)
{
    json_error_t jerr;
    json_t *info = json_load_file(path, 0, &jerr);
    if (!info) {
        snprintf(why, len, "%s: unreadable (%s at line %d, byte %d): truncated or corrupt", path,
                 jerr.text, jerr.line, jerr.position);
        return NULL;
    }
    const json_t *n = json_object_get(info, "n"), *dim = json_object_get(info, "dim");
    json_t *none = params ? NULL : json_object(); /* no build parameters: {} */
    const char *bad = NULL;
    if (!json_is_object(info))
        bad = "not a JSON object";
    else if (!str_is(info, "engine", engine))
        bad = "\"engine\" is missing or names another engine";
    else if (!json_is_object(json_object_get(info, "params")) ||
             !json_equal(json_object_get(info, "params"), params ? params : none))
        bad = "\"params\" is missing or differs from the cell's build parameters";
    else if (!str_is(info, "source", ds->checksum))
        bad = "\"source\" is missing or is not the dataset's checksum";
    else if (!str_is(info, "metric", ann_metric_name(ds->metric)))
        bad = "\"metric\" is missing or is not the dataset's metric";
    else if (!json_is_integer(n) || !json_is_integer(dim) ||
             json_integer_value(n) != (json_int_t)n_rows ||
             json_integer_value(dim) != (json_int_t)ds->dim)
        bad = "\"n\" and \"dim\" are missing or are not the dataset's (or the rows the index is "
              "built over)";
    json_decref(none);
    if (bad) {
        snprintf(why, len, "%s: %s; not an index ann_engine_build finished for this cell", path,
                 bad);
        json_decref(info);
        return NULL;
    }
    return info;
}
