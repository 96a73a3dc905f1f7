/*
 * fuzz_runbook.c: libFuzzer target for streaming runbooks as `annlab run`
 * reads them (harness/workload.h): the input's bytes after the first are a
 * YAML file read through libyaml into steps (input byte 0, odd: the config
 * names the runbook entry "tiny"; even: it names none), then the steps are
 * played against a dataset of FZ_N vectors, and a runbook found valid has
 * its ground truth computed over the seeded vectors (workload_gt.h).
 * Problems are the expected outcome; a crash, a sanitizer report, a hang,
 * a valid runbook whose canonical steps differ in number from what was
 * read, whose ground truth fails, or one naming a row that is not live,
 * is a bug.  The
 * seed (a small valid runbook with every operation) is written at start-up
 * into FUZZ_RUNBOOK_SEED=DIR when set.
 *
 *   make fuzz && build-fuzz/fuzz_runbook -max_total_time=60 CORPUS_DIR
 */
#include "tests/fuzz/fuzz_common.h"

#include "harness/workload.h"
#include "harness/workload_gt.h"

static char g_path[4200];

static const char seed[] = "\x01"
                           "tiny:\n"
                           "  max_pts: 300\n"
                           "  1: {operation: insert, start: 0, end: 200}\n"
                           "  2: {operation: search}\n"
                           "  3: {operation: delete, start: 0, end: 50}\n"
                           "  4: {operation: merge}\n"
                           "  5: {operation: replace, tags_start: 50, tags_end: 60, ids_start: 200,"
                           " ids_end: 210}\n"
                           "  6: {operation: search}\n"
                           "  gt_url: none\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init("runbook");
    snprintf(g_path, sizeof g_path, "%s/rb.yaml", fz_dir);
    const char *seed_dir = getenv("FUZZ_RUNBOOK_SEED");
    if (seed_dir) {
        char p[4200];
        snprintf(p, sizeof p, "%s/seed-runbook", seed_dir);
        if (fz_write(p, (const uint8_t *)seed, sizeof seed - 1) != 0)
            abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (fz_write(g_path, data + 1, size - 1) != 0)
        abort();
    json_t *wl = (data[0] & 1) ? json_pack("{s:s, s:s}", "runbook", "rb.yaml", "dataset", "tiny")
                               : json_pack("{s:s}", "runbook", "rb.yaml");
    harness_problems probs = { 0 };
    harness_workload w;
    if (harness_workload_parse(wl, fz_dir, &w, &probs) == 0) {
        json_t *canon = harness_workload_steps_json(&w);
        if (json_array_size(canon) != w.n)
            abort();
        json_decref(canon);
        if (harness_workload_check(&w, FZ_N, FZ_K, &probs) == 0 && w.n <= 64 &&
            harness_workload_search_steps(&w) > 0) {
            ann_vecsrc *src = NULL;
            ann_gt gt;
            if (ann_vecsrc_from_memory(fz_data, FZ_N, FZ_DIM, ANN_METRIC_L2, &src) != 0)
                abort();
            /* queries: the first rows; at least k live at every search (checked) */
            if (harness_workload_gt_compute(&w, src, fz_data, 4, FZ_K, &gt) != 0)
                abort();
            harness_wl_state st;
            if (harness_wl_state_init(&st, FZ_N) != 0)
                abort();
            size_t block = 0;
            char why[512];
            for (size_t i = 0; i < w.n; i++) {
                if (harness_wl_apply(&st, &w.steps[i], why, sizeof why) != 0)
                    abort(); /* checked valid above */
                if (w.steps[i].op != HARNESS_WL_SEARCH)
                    continue;
                for (size_t j = 0; j < 4 * FZ_K; j++) {
                    int32_t row = gt.ids[block * 4 * FZ_K + j];
                    if (row < 0 || row >= FZ_N || st.id_of_row[row] < 0)
                        abort();
                }
                block++;
            }
            harness_wl_state_fini(&st);
            ann_gt_free(&gt);
            ann_err_clear();
            ann_vecsrc_destroy(src);
        }
    }
    harness_workload_fini(&w);
    harness_problems_fini(&probs);
    json_decref(wl);
    return 0;
}
