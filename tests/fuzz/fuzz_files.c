/*
 * fuzz_files.c: libFuzzer target for annlab's file formats read outside an
 * engine's own search: the PQ codebook (pq.pqcb), the Vamana graph
 * (.vamana), the PQ codes file, diskann-sector's index.sums, ground truth
 * (gt.ibin), big-ann vector files (.fbin), and a dataset bundle's
 * manifest.json (opened and verified).  Input byte 0 picks the format, the
 * rest is the file.  Valid seeds are written at start-up into
 * FUZZ_FILES_SEED=DIR when set (one file per format, named by its byte).
 *
 *   make fuzz && build-fuzz/fuzz_files -max_total_time=60 CORPUS_DIR
 */
#include "tests/fuzz/fuzz_common.h"

#include "datasets/bundle.h"
#include "engines/core/artifacts.h"
#include "engines/core/pq.h"
#include "engines/core/vamana.h"
#include "engines/core/vecfile.h"
#include "engines/diskann_sector/dsec.h"

#include <sys/stat.h>

#define FZ_FORMATS 7

static char g_sector[4200], g_bundle[4400];
static dsec_header g_h;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init("files");
    fz_build("diskann-sector",
             "{\"R\": 6, \"L_build\": 20, \"pq_bytes\": 4, \"threads\": 1}", "sector", g_sector,
             sizeof g_sector);
    g_h = (dsec_header){ .n = FZ_N, .dim = FZ_DIM, .R = 6 };
    dsec_geometry(&g_h);
    /* a bundle of the seed data, for the manifest */
    snprintf(g_bundle, sizeof g_bundle, "%s/bundle", fz_dir);
    if (mkdir(g_bundle, 0755) != 0)
        abort();
    char p[4600];
    ann_vecwriter w;
    snprintf(p, sizeof p, "%s/base.fbin", g_bundle);
    if (ann_vecwriter_open(&w, p, FZ_DIM, ANN_ELEM_F32) ||
        ann_vecwriter_append(&w, fz_data, FZ_N) || ann_vecwriter_finish(&w))
        abort();
    snprintf(p, sizeof p, "%s/query.fbin", g_bundle);
    if (ann_vecwriter_open(&w, p, FZ_DIM, ANN_ELEM_F32) || ann_vecwriter_append(&w, fz_data, 10) ||
        ann_vecwriter_finish(&w))
        abort();
    if (ann_bundle_finish(g_bundle, "fuzz", ANN_METRIC_L2, 5, NULL) != 0)
        abort();
    const char *seed = getenv("FUZZ_FILES_SEED");
    if (seed) {
        static const char *const src[FZ_FORMATS] = { "sector/pq.pqcb", NULL, "sector/pq.pqcodes",
                                                     "sector/index.sums", "bundle/gt.ibin",
                                                     "bundle/base.fbin", "bundle/manifest.json" };
        for (int i = 0; i < FZ_FORMATS; i++) {
            if (!src[i])
                continue;
            char cmd[9000];
            snprintf(cmd, sizeof cmd, "(printf '\\%03o'; cat '%s/%s') > '%s/seed-%d'", i, fz_dir,
                     src[i], seed, i);
            if (system(cmd) != 0)
                fprintf(stderr, "fuzz_files: could not write seed %d\n", i);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int fmt = data[0] % FZ_FORMATS;
    static const char *const names[FZ_FORMATS] = { "f.pqcb", "f.vamana", "f.pqcodes", "f.sums",
                                                   "f.ibin", "f.fbin", "manifest.json" };
    char path[4600];
    if (fmt == 6)
        snprintf(path, sizeof path, "%s/manifest.json", g_bundle);
    else
        snprintf(path, sizeof path, "%s/%s", fz_dir, names[fmt]);
    uint8_t *orig = NULL;
    size_t orig_len = 0;
    if (fmt == 6) { /* keep the bundle's own manifest to put it back */
        FILE *fp = fopen(path, "rb");
        if (!fp)
            abort();
        fseek(fp, 0, SEEK_END);
        orig_len = (size_t)ftell(fp);
        fseek(fp, 0, SEEK_SET);
        orig = malloc(orig_len + 1);
        if (!orig || fread(orig, 1, orig_len, fp) != orig_len)
            abort();
        fclose(fp);
    }
    if (fz_write(path, data + 1, size - 1) != 0) {
        free(orig);
        return 0;
    }
    switch (fmt) {
    case 0: {
        pq_codebook *cb = NULL;
        if (pq_codebook_load(path, &cb) == 0)
            pq_codebook_destroy(cb);
        break;
    }
    case 1: {
        vamana_graph *g = NULL;
        if (vamana_graph_load(path, &g) == 0)
            vamana_graph_destroy(g);
        break;
    }
    case 2: {
        uint8_t *codes = NULL;
        if (ann_artifacts_codes_load(path, FZ_N, 4, &codes) == 0)
            free(codes);
        break;
    }
    case 3: {
        uint32_t *sums = NULL;
        if (dsec_sums_load(path, &g_h, &sums) == 0)
            free(sums);
        break;
    }
    case 4: {
        ann_gt gt;
        if (ann_gt_load(path, FZ_N, &gt) == 0)
            ann_gt_free(&gt);
        break;
    }
    case 5: {
        ann_vecfile vf;
        if (ann_vecfile_open(path, &vf) == 0) {
            float row[FZ_DIM * 4];
            if (vf.n && vf.dim <= FZ_DIM * 4)
                (void)ann_vecfile_read_f32(&vf, 0, 1, row);
            ann_vecfile_close(&vf);
        }
        break;
    }
    default: {
        json_t *rep = NULL;
        (void)ann_bundle_verify(g_bundle, 5, &rep);
        json_decref(rep);
        fz_write(path, orig, orig_len);
        break;
    }
    }
    free(orig);
    return 0;
}
