/*
 * fuzz_buildjson.c: libFuzzer target for an index's build.json as
 * `annlab run` reads it (harness/buildinfo.h: parsed and checked against
 * the cell and the dataset, its engine format read), then the digests it
 * lists verified (engines/core/digest.h), and for the digest cache
 * .verified.json beside them.  A valid flat index is built at start-up;
 * its build.json describes the dataset the checks compare against.  Input
 * byte 0 picks the file (even: build.json, odd: .verified.json with the
 * seed build.json), the rest is its bytes.  Whatever the bytes, the reader
 * must answer (an object or a reason) without crashing, hanging or
 * reading outside the index directory; a build.json that passes every
 * check with its listed files verified must describe files that are
 * there, so the seed index still opens and searches.  The seed files (byte
 * 0 then the seed build.json) are written at start-up into
 * FUZZ_BUILDJSON_SEED=DIR when set.
 *
 *   make fuzz && build-fuzz/fuzz_buildjson -max_total_time=60 CORPUS_DIR
 */
#include "tests/fuzz/fuzz_common.h"

#include "engines/core/digest.h"
#include "harness/buildinfo.h"

#include <unistd.h>

static char g_index[4200], g_json[4400], g_cache[4400];
static char *g_seed; /* the seed build.json's bytes */
static size_t g_seed_len;
static ann_bundle g_ds;  /* the dataset the seed was built from, as build.json says */
static json_t *g_params; /* the seed's build parameters */

static void write_file(const char *path, const uint8_t *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0)
        abort(); /* the harness cannot write its own directory */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init("buildjson");
    fz_build("flat", "{}", "flat", g_index, sizeof g_index);
    snprintf(g_json, sizeof g_json, "%s/build.json", g_index);
    snprintf(g_cache, sizeof g_cache, "%s/%s", g_index, ANN_DIGEST_CACHE);
    FILE *f = fopen(g_json, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0)
        abort();
    g_seed_len = (size_t)ftell(f);
    g_seed = malloc(g_seed_len);
    rewind(f);
    if (fread(g_seed, 1, g_seed_len, f) != g_seed_len)
        abort();
    fclose(f);
    json_t *info = json_loadb(g_seed, g_seed_len, 0, NULL);
    const char *source = json_string_value(json_object_get(info, "source"));
    const char *metric = json_string_value(json_object_get(info, "metric"));
    if (!source || !metric || ann_metric_parse(metric, &g_ds.metric) != 0)
        abort();
    snprintf(g_ds.checksum, sizeof g_ds.checksum, "%s", source);
    g_ds.n = (uint64_t)json_integer_value(json_object_get(info, "n"));
    g_ds.dim = (uint32_t)json_integer_value(json_object_get(info, "dim"));
    g_params = json_incref(json_object_get(info, "params"));
    json_decref(info);
    /* the seed must pass, or the target tests nothing */
    char why[2048];
    info = harness_build_info_load(g_json, "flat", g_params, &g_ds, why, sizeof why);
    if (!info) {
        fprintf(stderr, "fuzz: the seed build.json is refused: %s\n", why);
        abort();
    }
    json_decref(info);
    const char *seed_dir = getenv("FUZZ_BUILDJSON_SEED");
    for (int b = 0; seed_dir && b < 2; b++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/seed-buildjson-%d", seed_dir, b);
        uint8_t *bytes = malloc(g_seed_len + 1);
        bytes[0] = (uint8_t)b; /* 0: build.json; 1: a cache file holding the same JSON */
        memcpy(bytes + 1, g_seed, g_seed_len);
        write_file(path, bytes, g_seed_len + 1);
        free(bytes);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int cache = data[0] & 1;
    unlink(g_cache);
    write_file(cache ? g_cache : g_json, data + 1, size - 1);
    char why[2048] = "";
    json_t *info = harness_build_info_load(g_json, "flat", g_params, &g_ds, why, sizeof why);
    if (info) {
        long long format = harness_build_info_format(info);
        if (format == 0 || format < -1)
            abort(); /* the reader promises a format >= 1 or -1 */
        const json_t *files = json_object_get(info, "files");
        if (files && ann_digest_verify(g_index, files, "build.json", NULL) == 0)
            fz_open_search("flat", g_index, "{}", "{}");
        json_decref(info);
    } else if (!why[0]) {
        abort(); /* refused without a reason */
    }
    write_file(g_json, (const uint8_t *)g_seed, g_seed_len);
    unlink(g_cache);
    return 0;
}
