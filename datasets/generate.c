/*
 * generate.c: synthetic datasets (the generator lands with its own change).
 */
#include "datasets/generate.h"

#include "engines/core/status.h"

#include <stdio.h>

int ann_generate_bundle(const ann_gen_params *p, const char *out_dir)
{
    (void)p;
    return ann_fail(ANN_EUNSUPPORTED, "%s: the generator is not in this build yet", out_dir);
}

int ann_generate_preset(const char *name, ann_gen_params *out)
{
    (void)out;
    return ann_fail(ANN_ENOTFOUND, "%s: no generator presets in this build yet", name);
}

int ann_generate_cli(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "annlab dataset generate: the generator is not in this build yet\n");
    return 2;
}
