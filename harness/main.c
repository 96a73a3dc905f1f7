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

static void print_params(const char *kind, const ann_param_spec *p)
{
    for (; p && p->name; p++) {
        char range[96] = "";
        if (p->type == ANN_PARAM_INT)
            snprintf(range, sizeof range, "int [%.0f, %.0f], default %.0f", p->min, p->max, p->def);
        else if (p->type == ANN_PARAM_REAL)
            snprintf(range, sizeof range, "real [%g, %g], default %g", p->min, p->max, p->def);
        else if (p->type == ANN_PARAM_BOOL)
            snprintf(range, sizeof range, "bool, default %s", p->def != 0 ? "true" : "false");
        else {
            size_t used = 0;
            for (const char *const *c = p->choices; c && *c && used < sizeof range; c++)
                used += (size_t)snprintf(range + used, sizeof range - used, "%s%s",
                                         c == p->choices ? "" : "|", *c);
            if (used < sizeof range)
                snprintf(range + used, sizeof range - used, ", default %s",
                         p->def_str ? p->def_str : "-");
        }
        printf("    %-6s %-16s %-40s %s\n", kind, p->name, range, p->help ? p->help : "");
    }
}

/* `annlab engines [-v]`: the registry, with each engine's parameters when -v. */
static int cmd_engines(int argc, char **argv)
{
    int verbose = argc > 1 && (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--params"));
    for (size_t i = 0; ann_engine_at(i); i++) {
        const ann_engine_ops *e = ann_engine_at(i);
        printf("%-18s %s\n", e->name, e->description);
        if (verbose) {
            print_params("build", e->build_params);
            print_params("open", e->open_params);
            print_params("search", e->search_params);
        }
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
        return cmd_engines(argc - 1, argv + 1);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "annlab: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
