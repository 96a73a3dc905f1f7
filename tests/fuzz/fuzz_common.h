/*
 * fuzz_common.h: what the libFuzzer targets share: a scratch directory,
 * writing an input to a file, a small seeded data set, and building a
 * valid index of an engine to mutate.  Targets abort only when the
 * harness itself cannot start (not library code); every input the fuzzer
 * makes must end in an error code or a valid answer, never a crash, a
 * sanitizer report or a hang.
 */
#ifndef ANNLAB_FUZZ_COMMON_H
#define ANNLAB_FUZZ_COMMON_H

#include "engines/core/status.h"
#include "engines/engine.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FZ_N
#define FZ_N 300 /* a target may ask for more (before including this file) */
#endif
#define FZ_DIM 8
#define FZ_K 5

static float fz_data[FZ_N * FZ_DIM];
static char fz_dir[4096];

static inline int fz_write(const char *path, const uint8_t *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    size_t w = len ? fwrite(data, 1, len, fp) : 0;
    return (fclose(fp) == 0 && w == len) ? 0 : -1;
}

/* The scratch directory and the data, once per process. */
static inline void fz_init(const char *tag)
{
    char tmpl[128];
    snprintf(tmpl, sizeof tmpl, "/tmp/annlab-fuzz-%s-XXXXXX", tag);
    if (!mkdtemp(tmpl))
        abort();
    snprintf(fz_dir, sizeof fz_dir, "%s", tmpl);
    uint64_t s = 12345;
    for (size_t i = 0; i < FZ_N * FZ_DIM; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        fz_data[i] = (float)((s >> 40) % 1000) / 100.0f;
    }
}

/* Build a valid index of engine with params (JSON) into fz_dir/name. */
static inline void fz_build(const char *engine, const char *params, const char *name, char *path,
                     size_t len)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    ann_vecsrc *src = NULL;
    json_error_t jerr;
    json_t *bp = json_loads(params, 0, &jerr);
    snprintf(path, len, "%s/%s", fz_dir, name);
    if (!ops || !bp || ann_vecsrc_from_memory(fz_data, FZ_N, FZ_DIM, ANN_METRIC_L2, &src) != 0 ||
        ann_engine_build(ops, src, bp, path, NULL, NULL) != 0) {
        fprintf(stderr, "fuzz: cannot build the seed %s index: %s\n", engine, ann_errmsg(-1));
        abort();
    }
    json_decref(bp);
    ann_vecsrc_destroy(src);
}

/* Open the index and run a few queries; every id returned must be in range. */
static inline void fz_open_search(const char *engine, const char *path, const char *open_p,
                           const char *search_p)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    json_t *op = json_loads(open_p, 0, NULL), *sp = json_loads(search_p, 0, NULL);
    ann_engine *eng = NULL;
    ann_ctx *ctx = NULL;
    if (ann_engine_open(ops, path, op, &eng, NULL) == 0 && ann_engine_ctx_new(ops, eng, sp, FZ_K, &ctx) == 0) {
        uint64_t n = ops->size(eng);
        for (int q = 0; q < 4; q++) {
            uint32_t ids[FZ_K];
            float d[FZ_K];
            ann_stats st = { 0 };
            int got = ops->search(ctx, fz_data + (size_t)q * 71 * FZ_DIM, FZ_K, ids, d, &st);
            for (int i = 0; i < got; i++)
                if (ids[i] >= n)
                    abort(); /* an id out of range escaped the checks: a bug */
            if (got < 0)
                break;
        }
    }
    ops->ctx_free(ctx);
    ops->close(eng);
    json_decref(op);
    json_decref(sp);
}

#endif
