/*
 * import.c: `annlab import-graph`, an index of a DiskANN engine built on a
 * graph another tool made (today: Microsoft DiskANN's disk index,
 * engines/core/msdiskann.h), so annlab's search can be run on the
 * reference's graph and the two tools' recall compared on one graph.
 *
 *   annlab import-graph ENGINE DATASET_DIR DISK_INDEX INDEX_DIR
 *       [--build JSON] [--artifacts DIR]
 *
 * The engine's own build runs with ann_build_ctx.graph_import set: it
 * trains its PQ (or takes it from the artifact cache under --artifacts)
 * and lays out the imported graph, written through ann_engine_build, so
 * INDEX_DIR appears only when complete and build.json records the import
 * ("engine_report": {"graph_imported": ...}).  R defaults to the file's
 * max degree; other --build parameters as the engine's build (`annlab
 * engines -v`); L_build, alpha and the graph options describe nothing of
 * an imported graph and are recorded only as given.
 *
 *   annlab export-graph DATASET_DIR GRAPH.vamana OUT_disk.index [--force]
 *
 * The other way: a graph of annlab's artifact cache written as Microsoft
 * DiskANN's disk index, for its search beside its own PQ files.
 */
#include "harness/run.h"

#include "datasets/bundle.h"
#include "engines/core/msdiskann.h"
#include "engines/core/status.h"
#include "engines/engine.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char import_usage[] =
    "usage: annlab import-graph ENGINE DATASET_DIR DISK_INDEX INDEX_DIR [--build JSON] "
    "[--artifacts DIR] [--ms-pq]\n"
    "Build INDEX_DIR for ENGINE (diskann-sector, diskann-record, diskann-resident) on the\n"
    "graph of DISK_INDEX, a Microsoft DiskANN `<prefix>_disk.index` (--data_type float)\n"
    "built on the base vectors of the prepared dataset DATASET_DIR.\n"
    "  --build JSON     the engine's build parameters (R defaults to the file's max degree)\n"
    "  --artifacts DIR  the shared DiskANN artifact cache (PQ codebook and codes)\n"
    "  --ms-pq          take the PQ too: <prefix>_pq_pivots.bin and <prefix>_pq_compressed.bin\n"
    "                   beside DISK_INDEX (pq_bytes must be its chunk count)\n"
    "Exit: 0 written, 1 failure (nothing written), 2 usage.\n";

int harness_import_main(int argc, char **argv)
{
    const char *pos[4] = { 0 }, *build_json = NULL, *artifacts = NULL;
    int npos = 0, ms_pq = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(import_usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--build") && i + 1 < argc) {
            build_json = argv[++i];
        } else if (!strcmp(argv[i], "--artifacts") && i + 1 < argc) {
            artifacts = argv[++i];
        } else if (!strcmp(argv[i], "--ms-pq")) {
            ms_pq = 1;
        } else if (argv[i][0] == '-' || npos == 4) {
            fprintf(stderr, "annlab import-graph: unexpected argument '%s'\n%s", argv[i],
                    import_usage);
            return 2;
        } else {
            pos[npos++] = argv[i];
        }
    }
    if (npos != 4) {
        fputs(import_usage, stderr);
        return 2;
    }
    const char *engine = pos[0], *dataset_dir = pos[1], *disk_index = pos[2],
               *index_dir = pos[3];
    const ann_engine_ops *ops = ann_engine_find(engine);
    if (!ops) {
        fprintf(stderr, "annlab import-graph: unknown engine '%s' (`annlab engines` lists them)\n",
                engine);
        return 2;
    }
    if (!ops->imports_graph) {
        fprintf(stderr, "annlab import-graph: %s does not search a Vamana graph; the import "
                        "takes diskann-sector, diskann-record or diskann-resident\n",
                engine);
        return 2;
    }
    json_t *params = NULL;
    if (build_json) {
        json_error_t jerr;
        params = json_loads(build_json, 0, &jerr);
        if (!params || !json_is_object(params)) {
            fprintf(stderr, "annlab import-graph: --build: %s\n",
                    params ? "not a JSON object" : jerr.text);
            json_decref(params);
            return 2;
        }
    } else {
        params = json_object();
    }

    int rc = 0;
    ann_bundle ds = { 0 };
    ann_vecsrc *src = NULL;
    json_t *report = NULL;
    msda_header h;
    rc = msda_header_read(disk_index, &h);
    if (rc)
        goto out;
    if (!json_object_get(params, "R"))
        json_object_set_new(params, "R", json_integer(h.max_degree));
    rc = ann_bundle_open(dataset_dir, &ds);
    if (!rc)
        rc = ann_bundle_base(&ds, &src);
    if (rc)
        goto out;
    ann_build_ctx bctx = {
        .artifact_dir = artifacts, .graph_import = disk_index, .pq_import = ms_pq
    };
    rc = ann_engine_build(ops, src, params, index_dir, &bctx, &report);
    if (rc)
        goto out;
    const json_t *gi = json_object_get(json_object_get(report, "engine_report"), "graph_imported");
    printf("%s: %s index of %llu x %u on the graph of %s (medoid %lld, degree max %lld, mean "
           "%.2f; %lld self-loops, %lld repeated ids, %lld nodes the medoid does not reach), "
           "built in %.1f s\n",
           index_dir, engine, (unsigned long long)src->n, src->dim, disk_index,
           json_integer_value(json_object_get(gi, "medoid")),
           json_integer_value(json_object_get(gi, "max_degree")),
           json_real_value(json_object_get(gi, "mean_degree")),
           json_integer_value(json_object_get(gi, "self_loops")),
           json_integer_value(json_object_get(gi, "repeated_ids")),
           json_integer_value(json_object_get(gi, "unreachable")),
           json_real_value(json_object_get(report, "build_seconds")));
out:
    if (rc)
        fprintf(stderr, "annlab import-graph: %s\n", ann_errmsg(rc));
    json_decref(report);
    json_decref(params);
    ann_vecsrc_destroy(src);
    ann_bundle_close(&ds);
    return rc ? 1 : 0;
}

static const char export_usage[] =
    "usage: annlab export-graph DATASET_DIR GRAPH.vamana OUT_disk.index [--force]\n"
    "Write a Vamana graph of annlab's artifact cache (<index root>/artifacts/<source>/vamana-*)\n"
    "over the base vectors of DATASET_DIR as a Microsoft DiskANN disk index, for its\n"
    "search_disk_index beside the PQ files of its own build on the same data.\n"
    "  --force  replace OUT (written whole, then renamed over it)\n"
    "Exit: 0 written, 1 failure (nothing written), 2 usage.\n";

int harness_export_graph_main(int argc, char **argv)
{
    const char *pos[3] = { 0 };
    int npos = 0, force = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(export_usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--force")) {
            force = 1;
        } else if (argv[i][0] == '-' || npos == 3) {
            fprintf(stderr, "annlab export-graph: unexpected argument '%s'\n%s", argv[i],
                    export_usage);
            return 2;
        } else {
            pos[npos++] = argv[i];
        }
    }
    if (npos != 3) {
        fputs(export_usage, stderr);
        return 2;
    }
    const char *dataset_dir = pos[0], *graph_path = pos[1], *out = pos[2];
    if (!force && access(out, F_OK) == 0) {
        fprintf(stderr, "annlab export-graph: %s: already exists (--force replaces it)\n", out);
        return 1;
    }
    ann_bundle ds = { 0 };
    ann_vecsrc *src = NULL;
    vamana_graph *g = NULL;
    int rc = vamana_graph_load(graph_path, &g);
    if (!rc)
        rc = ann_bundle_open(dataset_dir, &ds);
    if (!rc)
        rc = ann_bundle_base(&ds, &src);
    if (!rc)
        rc = msda_graph_save(out, src, g);
    if (rc)
        fprintf(stderr, "annlab export-graph: %s\n", ann_errmsg(rc));
    else
        printf("%s: the graph of %s (%llu nodes, entry %u) over %s as a Microsoft DiskANN disk "
               "index\n",
               out, graph_path, (unsigned long long)g->n, g->entry, dataset_dir);
    vamana_graph_destroy(g);
    ann_vecsrc_destroy(src);
    ann_bundle_close(&ds);
    return rc ? 1 : 0;
}
