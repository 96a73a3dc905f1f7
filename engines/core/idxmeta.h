/*
 * idxmeta.h: the small JSON file that names an index directory's format.
 *
 * Engines whose index lives in files (rather than kv records) describe it
 * with one JSON object: {"format": F, "version": V, "metric": "l2"|"ip"|
 * "cosine", "n": N, "dim": D, ...engine fields}.  Opening checks the format
 * and version before anything else is read, and every later field read is
 * checked too, so a damaged or foreign directory is a clear error naming the
 * file and the field.
 */
#ifndef ANNLAB_CORE_IDXMETA_H
#define ANNLAB_CORE_IDXMETA_H

#include "engines/core/vecsrc.h"

#include <jansson.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ann_idxmeta {
    ann_metric metric;
    uint64_t n;
    uint32_t dim;
    json_t *json;     /* the whole object (owned) */
    char path[4096];  /* the file, for messages */
} ann_idxmeta;

/*
 * Write <dir>/<file> with format, version, metric, n, dim and every key of
 * extra (may be NULL; not stolen).  Written to a temporary name, fsynced and
 * renamed, so a crash leaves no half-written file.  Returns 0, -errno or
 * -ENOMEM, with the message naming the file.
 */
int ann_idxmeta_write(const char *dir, const char *file, const char *format, int version,
                      ann_metric metric, uint64_t n, uint32_t dim, const json_t *extra);

/*
 * Read and check <dir>/<file>: ANN_ENOTFOUND when absent, ANN_ECORRUPT when
 * unparsable or when format, metric, n or dim are missing or invalid,
 * ANN_EVERSION when the version differs.  On success *m holds the fields and
 * the object; release with ann_idxmeta_fini (also after a failure: safe).
 */
int ann_idxmeta_read(const char *dir, const char *file, const char *format, int version,
                     ann_idxmeta *m);

/* An integer field in [min, max], or ANN_ECORRUPT naming file and field. */
int ann_idxmeta_int(const ann_idxmeta *m, const char *field, int64_t min, int64_t max,
                    int64_t *out);

/* Release m's object (NULL-safe; leaves m zeroed). */
void ann_idxmeta_fini(ann_idxmeta *m);

#ifdef __cplusplus
}
#endif

#endif
