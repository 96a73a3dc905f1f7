/*
 * main.c: the `annlab` program's entry: dispatch to subcommands, and the
 * help every command answers (`annlab --help`, `annlab COMMAND --help`).
 */
#include "datasets/cli.h"
#include "engines/core/status.h"
#include "harness/compare.h"
#include "engines/engine.h"
#include "harness/child.h"
#include "harness/export.h"
#include "harness/measure.h"
#include "harness/version.h"
#include "engines/core/distance.h"
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
            if (e->effort_param)
                printf("    %-6s %-16s %s\n", "effort", e->effort_param,
                       "the search parameter a recall curve sweeps and a target recall tunes");
        }
    }
    return 0;
}

/* The commands, each with its synopsis and the flags `annlab COMMAND --help`
 * prints.  compare, export and dataset print their own (longer) help. */
typedef struct command_help {
    const char *name, *synopsis, *summary, *flags;
} command_help;

static const command_help commands[] = {
    { "engines", "engines [-v]", "list the engines; -v: every parameter they accept",
      "  -v, --params   each engine's build, open and search parameters: type, range, default\n" },
    { "dataset", "dataset list|fetch|prepare|import|verify|generate ...",
      "known and imported datasets; download, prepare, import, check them", NULL },
    { "run", "run CONFIG.json [--out DIR] [--resume] [--only ENGINE] [--dry-run]",
      "run an experiment: every cell in a fresh process, then tables and figures",
      "  --out DIR      the run directory (default results/<name>/<UTC time>)\n"
      "  --resume       continue a run, skipping the cells in its cells.jsonl (without --out:\n"
      "                 the newest run of this config)\n"
      "  --only ENGINE  only the cells of one engine (name or label)\n"
      "  --dry-run      validate, then show the cells with their open parameters, which builds\n"
      "                 are cached and an estimated time; run nothing\n"
      "Exit: 0, 1 failure, 2 invalid config (nothing was run), 130 interrupted (resumable).\n" },
    { "table", "table RUN_DIR [--baseline LABEL]",
      "write RUN_DIR/tables.md again and print it (summary at matched recall first)",
      "  --baseline LABEL  the engine (label) the summary's ratios are taken against (default:\n"
      "                    the config's \"baseline\", else the first engine of the config)\n" },
    { "plot", "plot RUN_DIR [--recall-axis linear|log|logit] [--template FILE.gp]...",
      "draw the figures of a run again (PNG and SVG, data and gnuplot scripts in plots/)",
      "  --recall-axis A  recall axis: linear (default), log (1 - recall on a log scale: 0.9,\n"
      "                   0.99, 0.999 equally spaced) or logit\n"
      "  --template F     draw the figure kind F declares (\"# annlab figure: KIND\") with F, an\n"
      "                   edited copy of the repository's plots/KIND.gp; once per kind\n"
      "                   (plots/README.md: what a template reads)\n" },
    { "compare", "compare BASE_RUN NEW_RUN [--report R.md] [--plot P.png] [tolerances]",
      "the regression gate between two runs: exit 1 on a regression", NULL },
    { "import-graph", "import-graph ENGINE DATASET_DIR DISK_INDEX INDEX_DIR [--build JSON]",
      "a DiskANN index on the graph of a Microsoft DiskANN disk index", NULL },
    { "export-graph", "export-graph DATASET_DIR GRAPH.vamana OUT_disk.index [--force]",
      "an annlab Vamana graph as a Microsoft DiskANN disk index", NULL },
    { "export", "export RUN_DIR --format ann-benchmarks|big-ann|vectordbbench [--out DIR] [--force]",
      "a run's cells as the result files of other benchmark tools", NULL },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *fp)
{
    fprintf(fp, "usage: annlab COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(fp, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(fp, "\n  --version  the version, the source commit and the SIMD kernels in use\n"
                "\n`annlab COMMAND --help` lists a command's flags.\n");
}

static int is_help(const char *a)
{
    return !strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help");
}

static int command_usage(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name) && commands[i].flags) {
            printf("usage: annlab %s\n%s.\n\n%s", commands[i].synopsis, commands[i].summary,
                   commands[i].flags);
            return 1;
        }
    return 0;
}

static int print_version(void)
{
    char commit[128];
    int dirty = 0;
    if (harness_source_commit(commit, sizeof commit, &dirty) != 0 || !commit[0])
        snprintf(commit, sizeof commit, "unknown (not run from a git checkout)");
    printf("annlab %s\ncommit %s%s\nSIMD kernels: %s\n", ANNLAB_VERSION, commit,
           dirty ? " (with uncommitted changes)" : "", ann_dist_active()->name);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))
        return print_version();
    /* `annlab COMMAND --help` (compare, export and dataset answer it themselves) */
    if (argc >= 3 && is_help(argv[2]) && command_usage(argv[1]))
        return 0;
    if (!strcmp(argv[1], "dataset"))
        return ann_dataset_cli(argc - 1, argv + 1);
    if (!strcmp(argv[1], "compare"))
        return cmp_cli(argc - 1, argv + 1);
    if (!strcmp(argv[1], "export"))
        return harness_export_main(argc - 1, argv + 1);
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
    if (!strcmp(argv[1], "import-graph"))
        return harness_import_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "export-graph"))
        return harness_export_graph_main(argc - 1, argv + 1);
    fprintf(stderr, "annlab: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
