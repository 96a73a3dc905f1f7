/*
 * cli.c: `annlab dataset list | fetch | prepare | import | verify | generate`.
 *
 * Exit codes: 0 success, 1 failure (the detail message of the error model
 * on stderr, naming the file and what is wrong), 2 usage errors.
 *
 * import's argument convention: files are classified by extension.  One
 * .hdf5 file is an ann-benchmarks set.  Otherwise the first vector file
 * (.fvecs .bvecs .fbin .u8bin .i8bin) is the base, the second the queries,
 * and an .ivecs/.ibin file the ground truth (ids; distances are always
 * recomputed).  --base/--query/--gt/--warmup name them explicitly instead.
 */
#include "datasets/cli.h"

#include "datasets/bundle.h"
#include "datasets/generate.h"
#include "datasets/import.h"
#include "datasets/parquet.h"
#include "datasets/prepare.h"
#include "engines/core/fileio.h"
#include "engines/core/stagedir.h"
#include "engines/core/status.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_ROOT "datasets/data"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: annlab dataset list [--root DIR]\n"
            "       annlab dataset fetch NAME [--downloads DIR]\n"
            "       annlab dataset prepare NAME [--root DIR] [--from FILE|DIR] [--downloads DIR]\n"
            "                 [--force]\n"
            "       annlab dataset import FILE... --out DIR [--metric l2|ip|cosine] [--name N]\n"
            "                 [--base F] [--query F] [--gt F] [--warmup F | --warmup-sample N]\n"
            "                 [--gt-k K] [--force]\n"
            "       annlab dataset verify DIR [--sample N]\n"
            "       annlab dataset generate ... (see annlab dataset generate --help)\n"
            "fetch:  the files of a download-kind dataset into DIR/NAME (default\n"
            "        " DS_DOWNLOADS_DEFAULT "): resumes FILE.part, checks sizes and sha256s;\n"
            "        ANNLAB_MIRROR=BASEURL fetches BASEURL/FILE instead of each URL.\n"
            "prepare: a download-kind dataset without --from is fetched first.\n"
            "import: one .hdf5 (ann-benchmarks), or base + query (.fvecs .bvecs .fbin .u8bin\n"
            "        .i8bin) in that order, plus optional ground truth (.ivecs .ibin);\n"
            "        --metric is required unless the file is .hdf5 (whose attribute names it).\n"
            "        An existing --out is refused; --force replaces it once the new bundle\n"
            "        is complete (a failed import leaves it as it was).\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "annlab dataset: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    usage(stderr);
    return 2;
}

static int fail(int rc)
{
    fprintf(stderr, "annlab dataset: %s\n", ann_errmsg(rc));
    return 1;
}

static int is_vector_file(const char *p)
{
    return ann_str_ends_with(p, ".fvecs") || ann_str_ends_with(p, ".bvecs") ||
           ann_str_ends_with(p, ".fbin") || ann_str_ends_with(p, ".u8bin") ||
           ann_str_ends_with(p, ".i8bin");
}

/* Parse a non-negative integer option value; -1 when malformed. */
static long long parse_count(const char *s)
{
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    return end && *end == '\0' && end != s && v >= 0 && v <= UINT32_MAX ? v : -1;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Print the bundles under root that the registry does not name (sorted by
 * name): their manifest says what they hold.  Returns how many. */
static int list_imported(const ds_registry *reg, const char *root)
{
    DIR *d = opendir(root);
    if (!d)
        return 0;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || ds_registry_find(reg, e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn)
                break;
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    int shown = 0;
    for (size_t i = 0; i < n; i++) {
        char dir[4096], what[512];
        ann_bundle b;
        snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
        if (ann_bundle_open(dir, &b) == 0) {
            const json_t *made = json_object_get(b.manifest, "made_by");
            const char *from = json_string_value(json_object_get(made, "base_from"));
            snprintf(what, sizeof what, "%llu x %u, %u queries%s%s",
                     (unsigned long long)b.n, b.dim, b.nq, from ? ", from " : "", from ? from : "");
            printf("%-30s %-9s %-16s %-7s %s\n", names[i], "yes", "imported",
                   ann_metric_name(b.metric), what);
            ann_bundle_close(&b);
            shown++;
        }
        free(names[i]);
    }
    free(names);
    return shown;
}

static int cmd_list(int argc, char **argv)
{
    const char *root = DEFAULT_ROOT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--root") && i + 1 < argc)
            root = argv[++i];
        else
            return usage_error("list: unexpected argument '%s'", argv[i]);
    }
    ds_registry reg;
    int rc = ds_registry_load(NULL, &reg);
    if (rc)
        return fail(rc);
    printf("%-30s %-9s %-16s %-7s %s\n", "NAME", "PREPARED", "KIND", "METRIC", "WHAT");
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(reg.root, "datasets"), i, e)
    {
        char dir[4096];
        const char *name = json_string_value(json_object_get(e, "name"));
        ann_bundle b;
        snprintf(dir, sizeof dir, "%s/%s", root, name);
        int prepared = ann_bundle_open(dir, &b) == 0;
        if (prepared)
            ann_bundle_close(&b);
        printf("%-30s %-9s %-16s %-7s %s\n", name, prepared ? "yes" : "no",
               json_string_value(json_object_get(e, "kind")),
               json_string_value(json_object_get(e, "metric")),
               json_string_value(json_object_get(e, "description")));
    }
    /* bundles under root that the registry does not name: imported ones */
    int imported = list_imported(&reg, root);
    printf("(registry: %s; bundles under %s/%s)\n", reg.path, root,
           imported ? "; imported: made by `annlab dataset import`" : "");
    ds_registry_free(&reg);
    return 0;
}

static int cmd_fetch(int argc, char **argv)
{
    ds_prepare_opts o = { .downloads = DS_DOWNLOADS_DEFAULT, .progress = stderr };
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--downloads") && i + 1 < argc)
            o.downloads = argv[++i];
        else if (argv[i][0] == '-' || name)
            return usage_error("fetch: unexpected argument '%s'", argv[i]);
        else
            name = argv[i];
    }
    if (!name)
        return usage_error("fetch: missing dataset NAME%s", "");
    ds_registry reg;
    int rc = ds_registry_load(NULL, &reg);
    if (rc)
        return fail(rc);
    char dir[4096];
    json_t *report = NULL;
    rc = ds_fetch(&reg, name, &o, dir, sizeof dir, &report);
    ds_registry_free(&reg);
    if (rc)
        return fail(rc);
    size_t i;
    const json_t *f;
    json_array_foreach(report, i, f)
    {
        long long resumed = (long long)json_integer_value(json_object_get(f, "resumed_from"));
        printf("%s: %s: %s, %lld bytes, %s%s\n", name,
               json_string_value(json_object_get(f, "path")),
               json_is_true(json_object_get(f, "already")) ? "already downloaded" : "downloaded",
               (long long)json_integer_value(json_object_get(f, "bytes")),
               json_string_value(json_object_get(f, "sha256")),
               resumed ? " (resumed)" : "");
    }
    json_decref(report);
    printf("%s: downloaded into %s\n", name, dir);
    return 0;
}

static int cmd_prepare(int argc, char **argv)
{
    ds_prepare_opts o = { .root = DEFAULT_ROOT, .downloads = DS_DOWNLOADS_DEFAULT,
                          .progress = stderr };
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--root") && i + 1 < argc)
            o.root = argv[++i];
        else if (!strcmp(argv[i], "--from") && i + 1 < argc)
            o.from = argv[++i];
        else if (!strcmp(argv[i], "--downloads") && i + 1 < argc)
            o.downloads = argv[++i];
        else if (!strcmp(argv[i], "--force"))
            o.force = 1;
        else if (argv[i][0] == '-' || name)
            return usage_error("prepare: unexpected argument '%s'", argv[i]);
        else
            name = argv[i];
    }
    if (!name)
        return usage_error("prepare: missing dataset NAME%s", "");
    ds_registry reg;
    int rc = ds_registry_load(NULL, &reg);
    if (rc)
        return fail(rc);
    int already = 0;
    rc = ds_prepare(&reg, name, &o, &already);
    ds_registry_free(&reg);
    if (rc)
        return fail(rc);
    printf("%s: %s %s/%s\n", name, already ? "already prepared at" : "prepared at", o.root, name);
    return 0;
}

static int cmd_import(int argc, char **argv)
{
    ds_import_files f = { 0 };
    int n_vec = 0, force = 0;
    const char *parquet[3];
    size_t n_parquet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--out") && has_val)
            f.out_dir = argv[++i];
        else if (!strcmp(a, "--force")) {
            f.out_flags |= ANN_OUT_FORCE;
            force = 1;
        } else if (!strcmp(a, "--name") && has_val)
            f.name = argv[++i];
        else if (!strcmp(a, "--metric") && has_val) {
            if (ann_metric_parse(argv[++i], &f.metric))
                return usage_error("import: --metric '%s' is not one of l2, ip, cosine", argv[i]);
            f.metric_set = 1;
        } else if (!strcmp(a, "--base") && has_val)
            f.base = argv[++i];
        else if (!strcmp(a, "--query") && has_val)
            f.query = argv[++i];
        else if (!strcmp(a, "--gt") && has_val)
            f.gt = argv[++i];
        else if (!strcmp(a, "--warmup") && has_val)
            f.warmup = argv[++i];
        else if ((!strcmp(a, "--warmup-sample") || !strcmp(a, "--gt-k")) && has_val) {
            long long v = parse_count(argv[++i]);
            if (v < 0 || (a[2] == 'g' && v == 0))
                return usage_error("import: bad count '%s'", argv[i]);
            if (a[2] == 'g')
                f.gt_k = (uint32_t)v;
            else
                f.warmup_sample = (uint32_t)v;
        } else if (a[0] == '-')
            return usage_error("import: unknown option or missing value '%s'", a);
        else if (ann_str_ends_with(a, ".parquet")) {
            if (n_parquet == 3)
                return usage_error("import: more than three parquet files ('%s')", a);
            parquet[n_parquet++] = a;
        } else if (ann_str_ends_with(a, ".hdf5") || ann_str_ends_with(a, ".h5")) {
            if (f.hdf5)
                return usage_error("import: more than one HDF5 file ('%s')", a);
            f.hdf5 = a;
        } else if (ann_str_ends_with(a, ".ivecs") || ann_str_ends_with(a, ".ibin")) {
            if (f.gt)
                return usage_error("import: more than one ground-truth file ('%s')", a);
            f.gt = a;
        } else if (is_vector_file(a)) {
            if (n_vec == 0 && !f.base)
                f.base = a;
            else if (!f.query)
                f.query = a;
            else
                return usage_error("import: a third vector file ('%s'); use --warmup", a);
            n_vec++;
        } else
            return usage_error("import: '%s': unknown extension (want .hdf5, .fvecs, .bvecs, "
                               ".ivecs, .fbin, .u8bin, .i8bin, .ibin, .parquet)",
                               a);
    }
    if (!f.out_dir)
        return usage_error("import: --out DIR is required%s", "");
    /* an import replaces what --out holds: never a bundle by accident */
    if (!force && ann_exists_nonempty(f.out_dir)) {
        fprintf(stderr, "annlab dataset: import: --out %s already exists; give --force to replace "
                        "what it holds\n",
                f.out_dir);
        return 2;
    }
    if (n_parquet) {
        if (f.hdf5 || f.base || f.query || f.gt || f.warmup)
            return usage_error("import: VectorDBBench parquet files cannot be mixed with other "
                               "files%s", "");
        if (!f.metric_set)
            return usage_error("import: parquet files carry no metric: give --metric l2, ip "
                               "or cosine%s", "");
        int rc = ann_import_parquet(parquet, n_parquet, f.out_dir, f.name, f.metric, f.gt_k,
                                    f.out_flags);
        if (rc)
            return fail(rc);
        printf("imported into %s\n", f.out_dir);
        return 0;
    }
    if (f.hdf5 && (f.base || f.query || f.gt))
        return usage_error("import: an .hdf5 file carries base, queries and ground truth; give "
                           "no other files (%s)",
                           f.hdf5);
    if (!f.hdf5 && (!f.base || !f.query))
        return usage_error("import: need an .hdf5 file, or a base and a query file%s", "");
    if (!f.hdf5 && !f.metric_set) {
        /* only an ann-benchmarks file names its metric; guessing l2 for the
         * others would measure cosine data as Euclidean without a word */
        fprintf(stderr,
                "annlab dataset: import: %s and %s do not say which metric their vectors are "
                "compared with: give --metric l2, ip or cosine\n",
                f.base, f.query);
        usage(stderr);
        return 2;
    }
    if (f.warmup && f.warmup_sample)
        return usage_error("import: --warmup and --warmup-sample exclude each other%s", "");
    int rc = ds_import_from_files(&f);
    if (rc)
        return fail(rc);
    printf("imported into %s\n", f.out_dir);
    return 0;
}

static int cmd_verify(int argc, char **argv)
{
    const char *dir = NULL;
    uint32_t sample = ANN_GT_SAMPLE_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sample") && i + 1 < argc) {
            long long v = parse_count(argv[++i]);
            if (v <= 0)
                return usage_error("verify: bad --sample '%s'", argv[i]);
            sample = (uint32_t)v;
        } else if (argv[i][0] == '-' || dir)
            return usage_error("verify: unexpected argument '%s'", argv[i]);
        else
            dir = argv[i];
    }
    if (!dir)
        return usage_error("verify: missing bundle DIR%s", "");
    json_t *report = NULL;
    int rc = ann_bundle_verify(dir, sample, &report);
    if (report) {
        json_dumpf(report, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("\n");
        json_decref(report);
    }
    if (rc)
        return fail(rc);
    return 0;
}

int ann_dataset_cli(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "list"))
        return cmd_list(argc - 1, argv + 1);
    if (!strcmp(sub, "fetch"))
        return cmd_fetch(argc - 1, argv + 1);
    if (!strcmp(sub, "prepare"))
        return cmd_prepare(argc - 1, argv + 1);
    if (!strcmp(sub, "import"))
        return cmd_import(argc - 1, argv + 1);
    if (!strcmp(sub, "verify"))
        return cmd_verify(argc - 1, argv + 1);
    if (!strcmp(sub, "generate"))
        return ann_generate_cli(argc - 1, argv + 1);
    if (!strcmp(sub, "--help") || !strcmp(sub, "help")) {
        usage(stdout);
        return 0;
    }
    return usage_error("unknown subcommand '%s'", sub);
}
