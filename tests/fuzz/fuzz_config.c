/*
 * fuzz_config.c: libFuzzer target for the experiment config loader: any
 * bytes are parsed as JSON (duplicates rejected, as `annlab run` does),
 * checked against the schema and the engine registry
 * (harness_config_check), and a config found valid is expanded into its
 * cells.  Memory sizes go through harness_parse_bytes.  Problems are the
 * expected outcome; a crash, a sanitizer report, a hang or a valid config
 * whose expansion repeats a cell id is a bug.
 *
 *   make fuzz && build-fuzz/fuzz_config -max_total_time=60 CORPUS_DIR
 *   (the configs under configs/ make a good starting corpus)
 */
#include "engines/core/status.h"
#include "harness/config.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *cfg = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!cfg) {
        /* a bare size string */
        json_t *v = json_stringn((const char *)data, size);
        uint64_t b = 0;
        if (v)
            (void)harness_parse_bytes(v, &b);
        json_decref(v);
        return 0;
    }
    harness_problems probs = { 0 };
    if (harness_config_check(cfg, &probs) == 0) {
        json_t *cells = harness_config_expand(cfg);
        size_t n = json_array_size(cells);
        /* cap the work per input: huge sweeps are valid but slow */
        for (size_t i = 0; i < n && i < 2000; i++)
            for (size_t j = 0; j < i && j < 2000; j++)
                if (!strcmp(json_string_value(json_object_get(json_array_get(cells, i), "id")),
                            json_string_value(json_object_get(json_array_get(cells, j), "id"))))
                    abort(); /* two cells with one id passed validation: a bug */
        json_decref(cells);
    }
    harness_problems_fini(&probs);
    json_decref(cfg);
    return 0;
}
