/*
 * main.c: the `annlab` program's entry: dispatch to subcommands.
 */
#include "datasets/cli.h"
#include "engines/core/status.h"
#include "harness/compare.h"
#include "engines/engine.h"
#include "harness/child.h"
#include "harness/run.h"

#include <stdio.h>
#include <string.h>

static int cmd_engines(void)
{
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *e = ann_engine_at(i);
        printf("%-18s %s\n", e->name, e->description);
    }
    return 0;
}

static void usage(FILE *fp)
{
    fprintf(fp, "usage: annlab engines | dataset ... | compare BASE_RUN NEW_RUN\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "dataset"))
        return ann_dataset_cli(argc - 1, argv + 1);
    if (!strcmp(argv[1], "compare"))
        return cmp_cli(argc - 1, argv + 1);
    if (!strcmp(argv[1], "run"))
        return harness_run_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "table"))
        return harness_table_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "plot"))
        return harness_plot_main(argc - 1, argv + 1);
    /* the runner's children (see harness/child.h) */
    if (!strcmp(argv[1], "cell") && argc == 4)
        return harness_cell_main(argv[2], argv[3]);
    if (!strcmp(argv[1], "build") && argc == 3)
        return harness_build_main(argv[2]);
    if (!strcmp(argv[1], "engines"))
        return cmd_engines();
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "annlab: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
