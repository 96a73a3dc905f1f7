/*
 * cli.c: `annlab dataset ...` (placeholder until the dataset commands land).
 */
#include "datasets/cli.h"

#include <stdio.h>

int ann_dataset_cli(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "annlab dataset: no subcommands are built yet\n");
    return 2;
}
