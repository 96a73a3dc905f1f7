/*
 * harness_fixture.c: a tiny bundle for the harness tests (vectors written
 * here, ground truth and manifest by ann_bundle_finish), and a way to run the annlab
 * binary and capture what it prints.
 */
#include "tests/support/harness_fixture.h"

#include "datasets/bundle.h"
#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_rows(const char *dir, const char *file, const float *rows, uint64_t n, uint32_t dim)
{
    char path[4200];
    ann_vecwriter w;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int rc = ann_vecwriter_open(&w, path, dim, ANN_ELEM_F32);
    if (rc)
        return rc;
    rc = ann_vecwriter_append(&w, rows, n);
    if (rc) {
        ann_vecwriter_abort(&w);
        return rc;
    }
    return ann_vecwriter_finish(&w);
}

int hf_bundle(const char *dir, uint64_t n, uint32_t dim, uint32_t nq, uint32_t nwarm,
              uint32_t gt_k, uint64_t seed)
{
    return hf_bundle_metric(dir, n, dim, nq, nwarm, gt_k, seed, ANN_METRIC_L2);
}

int hf_bundle_metric(const char *dir, uint64_t n, uint32_t dim, uint32_t nq, uint32_t nwarm,
                     uint32_t gt_k, uint64_t seed, int metric)
{
    int rc = 0;
    float *all = tu_clustered(n + nq + nwarm, dim, 16, seed, metric == ANN_METRIC_COSINE);
    if (!all)
        return -ENOMEM;
    mkdir(dir, 0755);
    const float *base = all, *queries = all + n * dim, *warm = all + (n + nq) * dim;
    if ((rc = write_rows(dir, "base.fbin", base, n, dim)) ||
        (rc = write_rows(dir, "query.fbin", queries, nq, dim)) ||
        (nwarm && (rc = write_rows(dir, "warmup.fbin", warm, nwarm, dim))))
        goto out;
    /* exact ground truth and the manifest, by the bundle code itself */
    json_t *extra = json_pack("{s:s}", "made_by", "tests/support/harness_fixture.c");
    rc = ann_bundle_finish(dir, "fixture", (ann_metric)metric, gt_k, extra);
    json_decref(extra);
out:
    free(all);
    return rc;
}

int hf_write_json(const char *path, const json_t *cfg)
{
    return json_dump_file(cfg, path, JSON_INDENT(2)) == 0 ? 0 : -1;
}

const char *hf_bin(void)
{
    const char *b = getenv("ANNLAB_BIN");
    return b && *b ? b : NULL;
}

int hf_annlab(const char *cwd, char **out, const char *const *args)
{
    const char *bin = hf_bin();
    if (!bin)
        return -1;
    char log[] = "/tmp/annlab-test-out-XXXXXX";
    int fd = mkstemp(log);
    if (fd < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        const char *argv[32] = { bin };
        int i = 0;
        for (; args[i] && i < 30; i++)
            argv[i + 1] = args[i];
        argv[i + 1] = NULL;
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    close(fd);
    if (out) {
        size_t len = 0;
        char *data = tu_read_file(log, &len);
        *out = malloc(len + 1);
        if (*out) {
            if (data)
                memcpy(*out, data, len);
            (*out)[len] = '\0';
        }
        free(data);
    }
    unlink(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
