/*
 * harness_fixture.c: a tiny bundle written by hand for the harness tests,
 * with exact ground truth from ann_exact_knn, and a way to run the annlab
 * binary and capture what it prints.
 */
#include "tests/support/harness_fixture.h"

#include "engines/core/exact.h"
#include "engines/core/vecfile.h"
#include "engines/core/vecsrc.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
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

static void sha256_file(const char *path, char out[80])
{
    size_t len = 0;
    unsigned char *data = tu_read_file(path, &len);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(data ? data : (unsigned char *)"", data ? len : 0, md, &mdlen, EVP_sha256(), NULL);
    free(data);
    int o = snprintf(out, 80, "sha256:");
    for (unsigned i = 0; i < mdlen && o < 78; i++)
        o += snprintf(out + o, 80 - (size_t)o, "%02x", md[i]);
}

int hf_bundle(const char *dir, uint64_t n, uint32_t dim, uint32_t nq, uint32_t nwarm,
              uint32_t gt_k, uint64_t seed)
{
    int rc = 0;
    float *all = tu_clustered(n + nq + nwarm, dim, 16, seed, 0);
    int32_t *ids = malloc((size_t)nq * gt_k * sizeof *ids);
    float *dists = malloc((size_t)nq * gt_k * sizeof *dists);
    ann_vecsrc *src = NULL;
    json_t *m = NULL;
    if (!all || !ids || !dists) {
        rc = -ENOMEM;
        goto out;
    }
    mkdir(dir, 0755);
    const float *base = all, *queries = all + n * dim, *warm = all + (n + nq) * dim;
    if ((rc = write_rows(dir, "base.fbin", base, n, dim)) ||
        (rc = write_rows(dir, "query.fbin", queries, nq, dim)) ||
        (nwarm && (rc = write_rows(dir, "warmup.fbin", warm, nwarm, dim))))
        goto out;
    if ((rc = ann_vecsrc_from_memory(base, n, dim, ANN_METRIC_L2, &src)) ||
        (rc = ann_exact_knn(src, queries, nq, gt_k, 1, ids, dists)))
        goto out;
    char path[4200];
    snprintf(path, sizeof path, "%s/gt.ibin", dir);
    ann_gt gt = { .nq = nq, .k = gt_k, .ids = ids, .dists = dists };
    if ((rc = ann_gt_save(path, &gt)))
        goto out;
    char sum[80];
    snprintf(path, sizeof path, "%s/base.fbin", dir);
    sha256_file(path, sum);
    m = json_pack("{s:s, s:s, s:I, s:i, s:s, s:i, s:i, s:s, s:s}", "name", "fixture", "metric", "l2",
                  "n", (json_int_t)n, "dim", (int)dim, "element_type", "float32", "nq", (int)nq,
                  "gt_k", (int)gt_k, "checksum", sum, "made_by", "tests/support/harness_fixture.c");
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (json_dump_file(m, path, JSON_INDENT(2)) != 0)
        rc = -EIO;
out:
    json_decref(m);
    ann_vecsrc_destroy(src);
    free(all);
    free(ids);
    free(dists);
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
