/*
 * fuzz_sector.c: libFuzzer target for the diskann-sector index file.
 *
 * At start-up a small valid index (300 x 8 floats, R 6, PQ 4 bytes) is
 * built into a temporary directory.  Each input replaces its index.sector
 * byte for byte; when the input is long enough to hold a header, the
 * header checksum is recomputed over the mutated bytes so the fuzzer gets
 * past it and reaches the geometry checks and the node records.  The index
 * is then opened (with a BFS cache, so open reads nodes too) and searched
 * with a few queries.  Any error code is fine; a crash, a sanitizer report,
 * a hang or a result id out of range is a bug.
 *
 *   make fuzz                      builds build-fuzz/fuzz_sector
 *   build-fuzz/fuzz_sector -max_total_time=60 CORPUS_DIR
 *
 * With FUZZ_SECTOR_SEED=DIR set, the valid index file is also written to
 * DIR/seed.sector as a starting corpus.
 */
#include "engines/core/binio.h"
#include "engines/core/status.h"
#include "engines/diskann_sector/layout.h"
#include "engines/engine.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define FZ_N 300
#define FZ_DIM 8
#define FZ_K 5

extern const ann_engine_ops diskann_sector_engine_ops;

static char g_index[4096];
static char g_file[4200];
static float g_data[FZ_N * FZ_DIM];

static int write_file(const char *path, const uint8_t *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    size_t w = fwrite(data, 1, len, fp);
    return (fclose(fp) == 0 && w == len) ? 0 : -1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const ann_engine_ops *ops = &diskann_sector_engine_ops;
    char tmpl[] = "/tmp/annlab-fuzz-sector-XXXXXX";
    if (!mkdtemp(tmpl))
        abort(); /* the harness itself cannot start: not library code */
    snprintf(g_index, sizeof g_index, "%s/index", tmpl);
    uint64_t s = 12345;
    for (size_t i = 0; i < FZ_N * FZ_DIM; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        g_data[i] = (float)((s >> 40) % 1000) / 100.0f;
    }
    ann_vecsrc *src = NULL;
    json_t *bp = json_pack("{s:i, s:i, s:i, s:i}", "R", 6, "L_build", 20, "pq_bytes", 4,
                           "threads", 1);
    if (ann_vecsrc_from_memory(g_data, FZ_N, FZ_DIM, ANN_METRIC_L2, &src) != 0 ||
        ann_engine_build(ops, src, bp, g_index, NULL, NULL) != 0) {
        fprintf(stderr, "fuzz_sector: cannot build the seed index\n");
        abort();
    }
    json_decref(bp);
    ann_vecsrc_destroy(src);
    snprintf(g_file, sizeof g_file, "%s/%s", g_index, DSEC_INDEX_FILE);
    const char *seed_dir = getenv("FUZZ_SECTOR_SEED");
    if (seed_dir) {
        char cmd[8600];
        snprintf(cmd, sizeof cmd, "cp '%s' '%s/seed.sector'", g_file, seed_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "fuzz_sector: could not write the seed corpus\n");
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ann_engine_ops *ops = &diskann_sector_engine_ops;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    if (size >= DSEC_HEADER_CRC_OFFSET + 4)
        ann_put_u32(copy + DSEC_HEADER_CRC_OFFSET,
                    (uint32_t)crc32(0L, copy, DSEC_HEADER_CRC_OFFSET));
    int wrc = write_file(g_file, copy, size);
    free(copy);
    if (wrc)
        return 0;
    json_t *op = json_pack("{s:s, s:i}", "io", "pread", "cache_nodes", 16);
    json_t *sp = json_pack("{s:i, s:i}", "L", 20, "beam_width", 4);
    ann_engine *eng = NULL;
    ann_ctx *ctx = NULL;
    if (ann_engine_open(ops, g_index, op, &eng, NULL) == 0 && ann_engine_ctx_new(ops, eng, sp, FZ_K, &ctx) == 0) {
        uint64_t n = ops->size(eng);
        for (int q = 0; q < 4; q++) {
            uint32_t ids[FZ_K];
            float d[FZ_K];
            ann_stats st = { 0 };
            int got = ops->search(ctx, g_data + (size_t)q * 71 * FZ_DIM, FZ_K, ids, d, &st);
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
    return 0;
}
