/*
 * idxmeta.c: reading and writing an index directory's describing JSON file
 * (see idxmeta.h).  Writes go through a temporary name and rename(2).
 */
#include "engines/core/idxmeta.h"

#include "engines/core/limits.h"
#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int ann_idxmeta_write(const char *dir, const char *file, const char *format, int version,
                      ann_metric metric, uint64_t n, uint32_t dim, const json_t *extra)
{
    int rc = 0;
    char path[4096], tmp[4200];
    int fd = -1;
    json_t *obj = json_pack("{s:s, s:i, s:s, s:I, s:i}", "format", format, "version", version,
                            "metric", ann_metric_name(metric), "n", (json_int_t)n, "dim",
                            (int)dim);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (!obj || (extra && json_object_update(obj, (json_t *)extra) != 0)) {
        rc = ann_fail(-ENOMEM, "%s: cannot assemble", path);
        goto out;
    }
    errno = 0;
    if (json_dump_file(obj, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
        /* jansson's fopen/fwrite/fclose leave errno (a full disk: ENOSPC) */
        rc = errno ? ann_fail_errno("%s: cannot write", tmp)
                   : ann_fail(-EIO, "%s: cannot write", tmp);
        goto out;
    }
    fd = open(tmp, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        rc = ann_fail_errno("%s: fsync", tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        rc = ann_fail_errno("%s: rename to %s", tmp, path);
        goto out;
    }
out:
    if (fd >= 0)
        close(fd);
    if (rc)
        unlink(tmp);
    json_decref(obj);
    return rc;
}

int ann_idxmeta_int(const ann_idxmeta *m, const char *field, int64_t min, int64_t max,
                    int64_t *out)
{
    const json_t *v = json_object_get(m->json, field);
    if (!json_is_integer(v))
        return ann_fail(ANN_ECORRUPT, "%s: field \"%s\" missing or not an integer", m->path,
                        field);
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return ann_fail(ANN_ECORRUPT, "%s: field \"%s\" = %lld outside [%lld, %lld]", m->path,
                        field, (long long)x, (long long)min, (long long)max);
    *out = x;
    return 0;
}

int ann_idxmeta_read(const char *dir, const char *file, const char *format, int version,
                     ann_idxmeta *m)
{
    int rc = 0;
    json_error_t jerr;
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s/%s", dir, file);
    m->json = json_load_file(m->path, 0, &jerr);
    if (!m->json)
        return access(m->path, F_OK) != 0
                   ? ann_fail(ANN_ENOTFOUND, "%s: missing (not a %s index?)", m->path, format)
                   : ann_fail(ANN_ECORRUPT, "%s: %s", m->path, jerr.text);
    const char *fmt = json_string_value(json_object_get(m->json, "format"));
    if (!fmt || strcmp(fmt, format) != 0)
        return ann_fail(ANN_ECORRUPT, "%s: field \"format\" is not \"%s\"", m->path, format);
    int64_t x = 0;
    rc = ann_idxmeta_int(m, "version", INT32_MIN, INT32_MAX, &x);
    if (rc)
        return rc;
    if (x != version)
        return ann_fail(ANN_EVERSION, "%s: version %lld, this build reads %d", m->path,
                        (long long)x, version);
    const char *metric = json_string_value(json_object_get(m->json, "metric"));
    if (!metric || ann_metric_parse(metric, &m->metric) != 0)
        return ann_fail(ANN_ECORRUPT, "%s: field \"metric\" missing or invalid", m->path);
    rc = ann_idxmeta_int(m, "n", 0, INT64_MAX, &x);
    if (rc)
        return rc;
    m->n = (uint64_t)x;
    rc = ann_idxmeta_int(m, "dim", 1, ANN_MAX_DIM, &x);
    if (rc)
        return rc;
    m->dim = (uint32_t)x;
    return 0;
}

void ann_idxmeta_fini(ann_idxmeta *m)
{
    if (!m)
        return;
    json_decref(m->json);
    memset(m, 0, sizeof *m);
}
