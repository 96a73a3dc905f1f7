/*
 * fuzz_flat.c: libFuzzer target for the flat engine's index (vectors.fbin
 * and flat.json with its block checksums).  The first input byte picks the
 * file (even: vectors.fbin, odd: flat.json); the rest replaces it.  The
 * index is opened and searched, then the file restored.
 *
 *   make fuzz && build-fuzz/fuzz_flat -max_total_time=60 CORPUS_DIR
 */
#include "tests/fuzz/fuzz_common.h"

static char g_index[4200];
static uint8_t *g_orig[2];
static size_t g_len[2];
static const char *const g_files[2] = { "vectors.fbin", "flat.json" };

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        abort();
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, fp) != (size_t)n)
        abort();
    fclose(fp);
    *len = (size_t)n;
    return b;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init("flat");
    fz_build("flat", "{}", "index", g_index, sizeof g_index);
    for (int i = 0; i < 2; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", g_index, g_files[i]);
        g_orig[i] = slurp(p, &g_len[i]);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] & 1;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", g_index, g_files[which]);
    if (fz_write(p, data + 1, size - 1) == 0)
        fz_open_search("flat", g_index, "{}", "{}");
    fz_write(p, g_orig[which], g_len[which]);
    return 0;
}
