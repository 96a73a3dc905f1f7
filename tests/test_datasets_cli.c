/*
 * test_datasets_cli.c: `annlab dataset ...` through the built binary
 * ($ANNLAB_BIN): import + verify end to end, exit codes (0 ok, 1 failure
 * with the detail message, 2 usage), a failed import leaving nothing, the
 * registry's list, prepare of bigann-10k whose shipped ground truth must
 * verify (skipped without the shared data), and the download datasets
 * saying clearly when there is no network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/dsutil.h"
#include "datasets/readers.h"
#include "engines/core/vecfile.h"
#include "tests/support/hdf5_fixture.h"
#include "tests/support/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static char *dir;
static const char *bin;

static int setup(void **state)
{
    (void)state;
    bin = getenv("ANNLAB_BIN");
    dir = tu_tmpdir("dscli");
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(dir);
    return 0;
}

static void path_of(char *buf, const char *name)
{
    snprintf(buf, 4096, "%s/%s", dir, name);
}

/* Run `annlab <args>`; returns the exit code; stdout/stderr kept in files. */
static int run(const char *args)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out.txt' 2>'%s/err.txt'", bin, args, dir, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *captured(const char *which)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s.txt", dir, which);
    size_t len = 0;
    char *s = tu_read_file(p, &len);
    assert_non_null(s);
    char *z = realloc(s, len + 1);
    z[len] = '\0';
    return z;
}

static void assert_captured(const char *which, const char *want)
{
    char *s = captured(which);
    if (!strstr(s, want))
        fail_msg("%s \"%s\" lacks \"%s\"", which, s, want);
    free(s);
}

#define NEED_BIN()                                                     \
    do {                                                               \
        if (!bin || access(bin, X_OK) != 0) {                          \
            print_message("ANNLAB_BIN not set: skipping\n");          \
            skip();                                                    \
        }                                                              \
    } while (0)

static void write_fvecs_set(const char *b, const char *q, const char *g, uint32_t n, uint32_t nq,
                            uint32_t dim, uint32_t k)
{
    float *x = tu_clustered(n, dim, 5, 42, 0), *y = tu_clustered(nq, dim, 5, 43, 0);
    assert_int_equal(ds_texmex_write(b, ANN_ELEM_F32, x, n, dim), 0);
    assert_int_equal(ds_texmex_write(q, ANN_ELEM_F32, y, nq, dim), 0);
    if (g) {
        /* True ground truth by brute force, in the TEXMEX .ivecs layout. */
        int32_t *ids = malloc((size_t)nq * k * sizeof *ids);
        for (uint32_t i = 0; i < nq; i++) {
            double *d = malloc(n * sizeof *d);
            for (uint32_t j = 0; j < n; j++) {
                double s = 0;
                for (uint32_t t = 0; t < dim; t++) {
                    double u = (double)y[i * dim + t] - x[(size_t)j * dim + t];
                    s += u * u;
                }
                d[j] = s;
            }
            for (uint32_t r = 0; r < k; r++) {
                uint32_t best = 0;
                for (uint32_t j = 1; j < n; j++)
                    if (d[j] < d[best])
                        best = j;
                ids[i * k + r] = (int32_t)best;
                d[best] = 1e300;
            }
            free(d);
        }
        assert_int_equal(ds_texmex_write(g, ANN_ELEM_I32, ids, nq, k), 0);
        free(ids);
    }
    free(x);
    free(y);
}

static void test_import_fvecs_and_verify(void **state)
{
    (void)state;
    NEED_BIN();
    char b[4096], q[4096], g[4096], out[4096], args[20000];
    path_of(b, "s.fvecs");
    path_of(q, "s-q.fvecs");
    path_of(g, "s-gt.ivecs");
    path_of(out, "imported");
    write_fvecs_set(b, q, g, 800, 20, 12, 10);
    snprintf(args, sizeof args, "dataset import '%s' '%s' '%s' --out '%s' --metric l2 --name tiny "
                                "--warmup-sample 50",
             b, q, g, out);
    assert_int_equal(run(args), 0);
    snprintf(args, sizeof args, "dataset verify '%s'", out);
    assert_int_equal(run(args), 0);
    assert_captured("out", "\"verdict\": \"pass\"");
    assert_captured("out", "\"ids_agreed\": 200");

    /* The shipped ids were checked and kept; the manifest says so. */
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/manifest.json", out);
    json_t *m = json_load_file(mp, 0, NULL);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "name")), "tiny");
    assert_int_equal(json_integer_value(json_object_get(m, "n_warmup")), 50);
    json_t *c = json_object_get(m, "gt_check");
    assert_string_equal(json_string_value(json_object_get(c, "source")), "shipped");
    assert_string_equal(json_string_value(json_object_get(c, "verdict")), "pass");
    json_decref(m);

    /* Corrupt base.fbin: verify exits 1 naming the file. */
    snprintf(mp, sizeof mp, "%s/base.fbin", out);
    size_t len = 0;
    unsigned char *bytes = tu_read_file(mp, &len);
    bytes[100] ^= 1;
    assert_int_equal(tu_write_file(mp, bytes, len), 0);
    free(bytes);
    snprintf(args, sizeof args, "dataset verify '%s'", out);
    assert_int_equal(run(args), 1);
    assert_captured("err", "base.fbin: sha256 sha256:");
}

static void test_import_hdf5(void **state)
{
    (void)state;
    NEED_BIN();
    char h[4096], out[4096], args[10000];
    path_of(h, "ab.hdf5");
    path_of(out, "from-hdf5");
    const uint32_t n = 300, nq = 10, dim = 8, k = 5;
    float *x = tu_clustered(n, dim, 4, 7, 0), *y = tu_clustered(nq, dim, 4, 8, 0);
    /* neighbours all 0, wrong on purpose: the check must catch and replace them */
    assert_int_equal(tu_write_ann_hdf5(h, x, n, y, nq, dim, NULL, k, "euclidean"), 0);
    free(x);
    free(y);

    snprintf(args, sizeof args, "dataset import '%s' --out '%s'", h, out);
    assert_int_equal(run(args), 0);
    assert_captured("err", "shipped ground truth failed the check");
    snprintf(args, sizeof args, "dataset verify '%s'", out);
    assert_int_equal(run(args), 0);
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/manifest.json", out);
    json_t *m = json_load_file(mp, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "metric")), "l2");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(m, "gt_check"), "verdict")), "fail");
    json_decref(m);

    /* --metric contradicting the file is refused. */
    snprintf(args, sizeof args, "dataset import '%s' --out '%s-2' --metric cosine", h, out);
    assert_int_equal(run(args), 1);
    assert_captured("err", "--metric cosine contradicts the file's 'distance' attribute (l2)");

    /* an existing --out is refused (the bundle untouched) unless --force */
    snprintf(args, sizeof args, "dataset import '%s' --out '%s'", h, out);
    assert_int_equal(run(args), 2);
    char want_err[4400];
    snprintf(want_err, sizeof want_err,
             "annlab dataset: import: --out %s already exists; give --force to replace what it holds\n",
             out);
    assert_captured("err", want_err);
    snprintf(args, sizeof args, "dataset verify '%s'", out);
    assert_int_equal(run(args), 0);
    snprintf(args, sizeof args, "dataset import '%s' --out '%s' --force", h, out);
    assert_int_equal(run(args), 0);
    assert_captured("out", "imported into ");

    /* dataset list shows imported bundles beside the registry's */
    snprintf(args, sizeof args, "dataset list --root '%s'", dir);
    assert_int_equal(run(args), 0);
    char want[600];
    snprintf(want, sizeof want, "%-30s %-9s %-16s %-7s %s%s: dataset 'train'\n", "from-hdf5", "yes",
             "imported", "l2", "300 x 8, 10 queries, from ", h);
    assert_captured("out", want);
    assert_captured("out", "; imported: made by `annlab dataset import`)");
}

static void test_failed_import_leaves_nothing(void **state)
{
    (void)state;
    NEED_BIN();
    char b[4096], q[4096], out[4096], args[20000];
    path_of(b, "f.fvecs");
    path_of(q, "f-q.fvecs");
    path_of(out, "failed");
    float *x = tu_clustered(50, 6, 2, 1, 0);
    x[40 * 6 + 2] = 0.0f / 0.0f;
    assert_int_equal(ds_texmex_write(b, ANN_ELEM_F32, x, 50, 6), 0);
    assert_int_equal(ds_texmex_write(q, ANN_ELEM_F32, x, 3, 6), 0);
    free(x);
    snprintf(args, sizeof args, "dataset import '%s' '%s' --out '%s' --metric l2", b, q, out);
    assert_int_equal(run(args), 1);
    assert_captured("err", "f.fvecs: row 40, component 2 is NaN");
    assert_int_equal(access(out, F_OK), -1); /* no directory, so no manifest, no temp files */
}

/* Run a shell command line; its exit code. */
static int run_sh(const char *cmd)
{
    char full[24000];
    snprintf(full, sizeof full, "%s >'%s/out.txt' 2>'%s/err.txt'", cmd, dir, dir);
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* 1 when a and b hold the same bytes. */
static int same_file(const char *a, const char *b)
{
    size_t la = 0, lb = 0;
    unsigned char *x = tu_read_file(a, &la), *y = tu_read_file(b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* No "<name>.tmp.*" left beside a bundle. */
static void assert_no_temporaries(const char *parent)
{
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q '\\.tmp\\.'", parent);
    if (system(cmd) == 0)
        fail_msg("a temporary was left in %s", parent);
}

/*
 * Issue 14: an import into an existing bundle never loses it.  Refused
 * without --force; with --force, bad data (a NaN row) or a write that fails
 * mid-way (a file-size limit standing in for a full disk) leave the old
 * bundle byte for byte, and a good import replaces it whole.  Inputs that
 * are not regular files are refused at once (before, --base /dev/zero was
 * hashed forever and verify blocked on a FIFO).
 */
static void test_import_over_an_existing_bundle(void **state)
{
    (void)state;
    NEED_BIN();
    char b[4096], q[4096], bad[4096], big[4096], out[4096], keep[4096], args[20000];
    path_of(b, "e.fvecs");
    path_of(q, "e-q.fvecs");
    path_of(bad, "e-nan.fvecs");
    path_of(big, "e-big.fvecs");
    path_of(out, "existing");
    path_of(keep, "existing-copy");
    write_fvecs_set(b, q, NULL, 400, 10, 8, 0);
    float *x = tu_clustered(400, 8, 3, 5, 0);
    x[399 * 8 + 1] = 0.0f / 0.0f;
    assert_int_equal(ds_texmex_write(bad, ANN_ELEM_F32, x, 400, 8), 0);
    free(x);
    x = tu_clustered(20000, 8, 3, 6, 0);
    assert_int_equal(ds_texmex_write(big, ANN_ELEM_F32, x, 20000, 8), 0);
    free(x);
    snprintf(args, sizeof args, "dataset import '%s' '%s' --out '%s' --metric l2 --gt-k 5", b, q, out);
    assert_int_equal(run(args), 0);
    snprintf(args, sizeof args, "cp -r '%s' '%s'", out, keep);
    assert_int_equal(system(args), 0);
    static const char *const members[] = { "manifest.json", "base.fbin", "query.fbin", "gt.ibin" };
#define ASSERT_KEPT()                                                                  \
    for (size_t m = 0; m < 4; m++) {                                                   \
        char pa[4200], pb[4200];                                                       \
        snprintf(pa, sizeof pa, "%s/%s", out, members[m]);                             \
        snprintf(pb, sizeof pb, "%s/%s", keep, members[m]);                            \
        if (!same_file(pa, pb))                                                        \
            fail_msg("%s changed", pa);                                                \
    }                                                                                  \
    assert_no_temporaries(dir)

    /* 1. exists: refused before any input is read (a usage error), naming --force */
    snprintf(args, sizeof args, "dataset import '%s' '%s' --out '%s' --metric l2", b, q, out);
    assert_int_equal(run(args), 2);
    char want[4400];
    snprintf(want, sizeof want, "import: --out %s already exists; give --force to replace what it holds", out);
    assert_captured("err", want);
    ASSERT_KEPT();

    /* 2. forced, but a NaN row: the old bundle stays */
    snprintf(args, sizeof args, "dataset import '%s' '%s' --out '%s' --metric l2 --force", bad, q, out);
    assert_int_equal(run(args), 1);
    assert_captured("err", "e-nan.fvecs: row 399, component 1 is NaN");
    ASSERT_KEPT();

    /* 3. forced, and the disk "fills" while base.fbin is written (a file-size
     * limit of 64 KiB: writes beyond it fail with EFBIG, SIGXFSZ ignored) */
    snprintf(args, sizeof args,
             "sh -c \"trap '' XFSZ; ulimit -f 128; exec '%s' dataset import '%s' '%s' --out '%s' "
             "--metric l2 --force\"",
             bin, big, q, out);
    assert_int_equal(run_sh(args), 1);
    assert_captured("err", "File too large");
    ASSERT_KEPT();
    snprintf(args, sizeof args, "dataset verify '%s'", out);
    assert_int_equal(run(args), 0);

    /* 4. forced and good: replaced whole */
    snprintf(args, sizeof args, "dataset import '%s' '%s' --out '%s' --metric l2 --force", big, q, out);
    assert_int_equal(run(args), 0);
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/manifest.json", out);
    json_t *m = json_load_file(mp, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(m, "n")), 20000);
    json_decref(m);
    assert_no_temporaries(dir);
    snprintf(args, sizeof args, "dataset verify '%s'", out);
    assert_int_equal(run(args), 0);
#undef ASSERT_KEPT

    /* 5. a device as input: refused at once, not hashed forever */
    char fresh[4096];
    path_of(fresh, "from-dev-zero");
    snprintf(args, sizeof args,
             "timeout 60 '%s' dataset import --base /dev/zero --query '%s' --out '%s' --metric l2", bin, q,
             fresh);
    assert_int_equal(run_sh(args), 1);
    assert_captured("err", "/dev/zero: not a regular file (a character device)");
    assert_int_equal(access(fresh, F_OK), -1);

    /* 6. verify on a bundle whose member is a FIFO: an error, not a hang */
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/query.fbin", keep);
    assert_int_equal(unlink(fifo), 0);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    snprintf(args, sizeof args, "timeout 60 '%s' dataset verify '%s'", bin, keep);
    assert_int_equal(run_sh(args), 1);
    snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", fifo);
    assert_captured("err", want);
}

/* Steps longer than the quiet start print progress: on a pipe, lines per
 * 10% with the rate, and a closing line (ANNLAB_PROGRESS_AFTER_S=0 makes
 * this small import long enough); within the default two seconds, nothing. */
static void test_progress_lines(void **state)
{
    (void)state;
    NEED_BIN();
    char b[4096], q[4096], g[4096], out[4096], args[20000];
    path_of(b, "p.fvecs");
    path_of(q, "p-q.fvecs");
    path_of(g, "p-gt.ivecs");
    path_of(out, "progress");
    write_fvecs_set(b, q, g, 800, 20, 12, 10);
    snprintf(args, sizeof args, "dataset import '%s' '%s' '%s' --out '%s' --metric l2", b, q, g, out);
    setenv("ANNLAB_PROGRESS_AFTER_S", "0", 1);
    int rc = run(args);
    unsetenv("ANNLAB_PROGRESS_AFTER_S");
    assert_int_equal(rc, 0);
    assert_captured("err", "progress: write base.fbin: 100% (800/800 vectors, ");
    assert_captured("err", "progress: write base.fbin: done, 800 vectors in ");
    assert_captured("err", "progress: ground-truth check (20 sampled queries): done, 800 vectors in ");
    /* the same import finishes within two seconds: not a word */
    snprintf(args, sizeof args, "dataset import '%s' '%s' '%s' --out '%s-2' --metric l2", b, q, g, out);
    assert_int_equal(run(args), 0);
    char *err = captured("err");
    assert_null(strstr(err, "progress:"));
    free(err);
}

static void test_usage_errors_exit_2(void **state)
{
    (void)state;
    NEED_BIN();
    assert_int_equal(run("dataset"), 2);
    assert_int_equal(run("dataset frobnicate"), 2);
    assert_captured("err", "unknown subcommand 'frobnicate'");
    assert_int_equal(run("dataset import a.fvecs b.fvecs"), 2);
    assert_captured("err", "--out DIR is required");
    assert_int_equal(run("dataset import a.fvecs b.fvecs --out x --metric manhattan"), 2);
    assert_int_equal(run("dataset import a.txt --out x"), 2);
    assert_captured("err", "'a.txt': unknown extension");
    /* vector files do not say which metric they were made for: no default */
    assert_int_equal(run("dataset import a.fvecs b.fvecs --out x"), 2);
    assert_captured("err", "annlab dataset: import: a.fvecs and b.fvecs do not say which metric "
                           "their vectors are compared with: give --metric l2, ip or cosine\n");
    assert_int_equal(run("dataset verify"), 2);
    assert_int_equal(run("dataset prepare"), 2);
    char args[8192];
    snprintf(args, sizeof args, "dataset verify '%s/nothing-here'", dir);
    assert_int_equal(run(args), 1);
    assert_captured("err", "nothing-here: not a prepared dataset (no manifest.json)");
}

static void test_list_and_download_entries(void **state)
{
    (void)state;
    NEED_BIN();
    char args[8192];
    snprintf(args, sizeof args, "dataset list --root '%s'", dir);
    assert_int_equal(run(args), 0);
    const char *names[] = { "fashion-mnist-784-euclidean", "glove-100-angular-wink", "bigann-10k",
                            "gist-960-euclidean", "cohere-768-cosine-1m", "synth-768-cosine-10k",
                            "synth-768-cosine-100k", "synth-768-cosine-1m", "synth-960-l2-10k",
                            "synth-960-l2-100k", "synth-960-l2-1m" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_captured("out", names[i]);

    /* Without --from they are downloaded: a mirror on a closed loopback port stands for
     * a machine without a network (test_fetch.c covers the downloads themselves). */
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "env ANNLAB_MIRROR=http://127.0.0.1:1/x '%s' dataset prepare gist-960-euclidean "
             "--root '%s' --downloads '%s/dl' >'%s/out.txt' 2>'%s/err.txt'",
             bin, dir, dir, dir, dir);
    assert_int_equal(WEXITSTATUS(system(cmd)), 1);
    assert_captured("err", "gist-960-euclidean: cannot download "
                           "http://127.0.0.1:1/x/gist-960-euclidean.hdf5: no network (could not "
                           "connect to '127.0.0.1'); download it elsewhere and run `annlab "
                           "dataset prepare gist-960-euclidean --from FILE.hdf5`\n");
    snprintf(cmd, sizeof cmd,
             "env ANNLAB_MIRROR=http://127.0.0.1:1/x '%s' dataset prepare cohere-768-cosine-1m "
             "--root '%s' --downloads '%s/dl' >'%s/out.txt' 2>'%s/err.txt'",
             bin, dir, dir, dir, dir);
    assert_int_equal(WEXITSTATUS(system(cmd)), 1);
    assert_captured("err", "cohere-768-cosine-1m: cannot download "
                           "http://127.0.0.1:1/x/shuffle_train.parquet: no network (could not "
                           "connect to '127.0.0.1'); download them elsewhere and run `annlab "
                           "dataset prepare cohere-768-cosine-1m --from DIR` (DIR holding "
                           "shuffle_train.parquet, test.parquet, neighbors.parquet)\n");
    path_of(cmd, "dl/gist-960-euclidean");
    assert_int_equal(access(cmd, F_OK), -1); /* nothing was left behind */
    path_of(cmd, "dl/cohere-768-cosine-1m");
    assert_int_equal(access(cmd, F_OK), -1);
    snprintf(args, sizeof args, "dataset prepare no-such-set --root '%s'", dir);
    assert_int_equal(run(args), 1);
    assert_captured("err", "no-such-set: no such dataset");

    /* --from takes an ann-benchmarks file, checked against the registry's shape. */
    char h[4096];
    path_of(h, "ab.hdf5");
    if (access(h, R_OK) == 0) {
        snprintf(args, sizeof args, "dataset prepare gist-960-euclidean --root '%s' --from '%s'",
                 dir, h);
        assert_int_equal(run(args), 1);
        assert_captured("err", "base holds 300 x 8, but gist-960-euclidean is 1000000 x 960");
        char gd[4200];
        snprintf(gd, sizeof gd, "%s/gist-960-euclidean", dir);
        assert_int_equal(access(gd, F_OK), -1);
    }
}

/* A gzipped idx3-ubyte file of n images of r x c pixels. */
static void write_idx_gz(const char *p, uint32_t n, uint32_t r, uint32_t c, uint64_t seed)
{
    unsigned char hdr[16];
    uint32_t v[4] = { 0x803, n, r, c };
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 4; b++)
            hdr[4 * i + b] = (unsigned char)(v[i] >> (24 - 8 * b));
    gzFile gz = gzopen(p, "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, hdr, 16), 16);
    uint64_t st = seed;
    for (uint32_t i = 0; i < n * r * c; i++) {
        unsigned char px = (unsigned char)(tu_rand(&st) % 256);
        assert_int_equal(gzwrite(gz, &px, 1), 1);
    }
    assert_int_equal(gzclose(gz), Z_OK);
}

static void test_prepare_from_a_registry(void **state)
{
    (void)state;
    NEED_BIN();
    char tr[4096], te[4096], reg[4096], root[4096], args[16384];
    char sum_tr[80], sum_te[80];
    path_of(tr, "train-images-idx3-ubyte.gz");
    path_of(te, "t10k-images-idx3-ubyte.gz");
    path_of(reg, "registry.json");
    path_of(root, "prepared");
    write_idx_gz(tr, 300, 4, 5, 1);
    write_idx_gz(te, 12, 4, 5, 2);
    assert_int_equal(ds_sha256_file(tr, sum_tr, NULL), 0);
    assert_int_equal(ds_sha256_file(te, sum_te, NULL), 0);
    FILE *fp = fopen(reg, "w");
    assert_non_null(fp);
    fprintf(fp,
            "{\"format\": \"annlab-dataset-registry\", \"version\": 1, \"datasets\": ["
            "{\"name\": \"mini-idx\", \"description\": \"test\", \"kind\": \"idx\", \"metric\": "
            "\"l2\", \"n\": 300, \"dim\": 20, \"gt_k\": 7, \"source\": {\"debian_package\": "
            "\"none\", \"base\": {\"path\": \"%s\", \"sha256\": \"%s\"}, \"query\": {\"path\": "
            "\"t10k-images-idx3-ubyte.gz\", \"sha256\": \"%s\"}}, \"warmup\": {\"rule\": "
            "\"base-sample\", \"count\": 9, \"seed\": 7}},"
            "{\"name\": \"bad-sum\", \"description\": \"test\", \"kind\": \"idx\", \"metric\": "
            "\"l2\", \"source\": {\"base\": {\"path\": \"%s\", \"sha256\": \"00\"}, \"query\": "
            "{\"path\": \"%s\"}}},"
            "{\"name\": \"bad-kind\", \"description\": \"x\", \"kind\": \"ftp\", \"metric\": "
            "\"l2\"}]}",
            tr, sum_tr + 7, sum_te + 7, tr, te);
    fclose(fp);

    /* An unknown kind is refused when the registry loads, naming the entry. */
    snprintf(args, sizeof args, "env ANNLAB_REGISTRY='%s' '%s' dataset prepare mini-idx --root '%s'",
             reg, bin, root);
    char cmd[20000];
    snprintf(cmd, sizeof cmd, "%s >'%s/out.txt' 2>'%s/err.txt'", args, dir, dir);
    int st = system(cmd);
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_captured("err", "registry.json: datasets[2] (bad-kind): unknown kind \"ftp\"");

    /* Without it: prepare, verify, and a sha256 mismatch refused. */
    fp = fopen(reg, "r+");
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    char *text = calloc((size_t)len + 1, 1);
    fseek(fp, 0, SEEK_SET);
    assert_int_equal(fread(text, 1, (size_t)len, fp), (size_t)len);
    fclose(fp);
    char *cut = strstr(text, ",{\"name\": \"bad-kind\"");
    assert_non_null(cut);
    strcpy(cut, "]}");
    assert_int_equal(tu_write_file(reg, text, strlen(text)), 0);
    free(text);
    assert_int_equal(system(cmd) == 0, 1);
    assert_captured("out", "mini-idx: prepared at");
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/mini-idx/manifest.json", root);
    json_t *m = json_load_file(mp, 0, NULL);
    assert_non_null(m);
    assert_int_equal(json_integer_value(json_object_get(m, "n")), 300);
    assert_int_equal(json_integer_value(json_object_get(m, "dim")), 20);
    assert_int_equal(json_integer_value(json_object_get(m, "nq")), 12);
    assert_int_equal(json_integer_value(json_object_get(m, "gt_k")), 7);
    assert_int_equal(json_integer_value(json_object_get(m, "n_warmup")), 9);
    json_decref(m);
    snprintf(args, sizeof args, "dataset verify '%s/mini-idx'", root);
    assert_int_equal(run(args), 0);

    snprintf(cmd, sizeof cmd,
             "env ANNLAB_REGISTRY='%s' '%s' dataset prepare bad-sum --root '%s' >'%s/out.txt' "
             "2>'%s/err.txt'",
             reg, bin, root, dir, dir);
    st = system(cmd);
    assert_int_equal(WEXITSTATUS(st), 1);
    char want[4400];
    snprintf(want, sizeof want, "bad-sum: %s: sha256 %s differs from the registry's 00", tr,
             sum_tr + 7);
    assert_captured("err", want);
    snprintf(mp, sizeof mp, "%s/bad-sum", root);
    assert_int_equal(access(mp, F_OK), -1);
}

static void test_prepare_parquet_from_dir(void **state)
{
    (void)state;
    NEED_BIN();
    char fix[4096], reg[4096], root[4096], cmd[20000], nodedir[4096];
    const char *nd = getenv("ANNLAB_NODE_DIR");
    snprintf(nodedir, sizeof nodedir, "%s", nd && *nd ? nd : "datasets/node");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/node_modules/hyparquet-writer", nodedir);
    if (system("node --version >/dev/null 2>&1") != 0 || access(probe, R_OK) != 0) {
        print_message("node or hyparquet-writer absent: skipping\n");
        skip();
    }
    path_of(fix, "vdb");
    path_of(reg, "registry-pq.json");
    path_of(root, "prepared-pq");
    snprintf(cmd, sizeof cmd,
             "node %s/make_test_parquet.mjs '%s' --n 300 --nq 10 --dim 8 --k 100 --seed 3 "
             ">/dev/null",
             nodedir, fix);
    assert_int_equal(system(cmd), 0);

    /* The real entry: the shape check refuses a file that is not the 1M set. */
    snprintf(cmd, sizeof cmd,
             "'%s' dataset prepare cohere-768-cosine-1m --root '%s' --from '%s' >'%s/out.txt' "
             "2>'%s/err.txt'",
             bin, root, fix, dir, dir);
    int st = system(cmd);
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_captured("err", "base holds 300 x 8, but cohere-768-cosine-1m is 1000000 x 768");
    char gone[4200];
    snprintf(gone, sizeof gone, "%s/cohere-768-cosine-1m", root);
    assert_int_equal(access(gone, F_OK), -1);

    /* An entry of the fixture's shape: prepared, with warm-up, and it verifies. */
    FILE *fp = fopen(reg, "w");
    assert_non_null(fp);
    fprintf(fp, "{\"datasets\": [{\"name\": \"vdb-mini\", \"description\": \"t\", \"kind\": "
                "\"download-parquet\", \"metric\": \"l2\", \"n\": 300, \"dim\": 8, "
                "\"gt_k\": 100, \"source\": {\"vectordbbench_case\": \"mini\"}, \"warmup\": "
                "{\"rule\": \"base-sample\", \"count\": 11, \"seed\": 7}}]}");
    fclose(fp);
    snprintf(cmd, sizeof cmd,
             "env ANNLAB_REGISTRY='%s' '%s' dataset prepare vdb-mini --root '%s' --from '%s' "
             ">'%s/out.txt' 2>'%s/err.txt'",
             reg, bin, root, fix, dir, dir);
    st = system(cmd);
    if (WEXITSTATUS(st) != 0) {
        char *e = captured("err");
        fail_msg("prepare vdb-mini failed: %s", e);
    }
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/vdb-mini/manifest.json", root);
    json_t *m = json_load_file(mp, 0, NULL);
    assert_non_null(m);
    assert_int_equal(json_integer_value(json_object_get(m, "n_warmup")), 11);
    assert_string_equal(json_string_value(json_object_get(m, "metric")), "l2");
    json_t *gi = json_object_get(json_object_get(m, "gt_check_at_import"), "verdict");
    assert_non_null(gi);
    assert_string_equal(json_string_value(gi), "pass"); /* the fixture's exact L2 neighbours */
    json_decref(m);
    char args[8192];
    snprintf(args, sizeof args, "dataset verify '%s/vdb-mini'", root);
    assert_int_equal(run(args), 0);
}

static void test_prepare_bigann_10k_gt_verifies(void **state)
{
    (void)state;
    NEED_BIN();
    const char *shared = tu_shared_data();
    char p[4200];
    if (shared)
        snprintf(p, sizeof p, "%s/bigann-10k/base.10k.u8bin", shared);
    if (!shared || access(p, R_OK) != 0) {
        print_message("shared bigann-10k absent: skipping\n");
        skip();
    }
    char args[8192];
    snprintf(args, sizeof args, "dataset prepare bigann-10k --root '%s'", dir);
    assert_int_equal(run(args), 0);
    snprintf(p, sizeof p, "%s/bigann-10k/manifest.json", dir);
    json_t *m = json_load_file(p, 0, NULL);
    assert_non_null(m);
    json_t *c = json_object_get(m, "gt_check");
    assert_string_equal(json_string_value(json_object_get(c, "source")), "shipped");
    assert_string_equal(json_string_value(json_object_get(c, "verdict")), "pass");
    assert_int_equal(json_integer_value(json_object_get(c, "ids_checked")), 100 * 100);
    assert_int_equal(json_integer_value(json_object_get(m, "n")), 10000);
    assert_int_equal(json_integer_value(json_object_get(m, "dim")), 128);
    json_decref(m);
    snprintf(args, sizeof args, "dataset verify '%s/bigann-10k' --sample 100", dir);
    assert_int_equal(run(args), 0);
    assert_captured("out", "\"agreement\": 1.0");
    /* A second prepare finds it done. */
    snprintf(args, sizeof args, "dataset prepare bigann-10k --root '%s'", dir);
    assert_int_equal(run(args), 0);
    assert_captured("out", "already prepared");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_fvecs_and_verify),
        cmocka_unit_test(test_import_hdf5),
        cmocka_unit_test(test_progress_lines),
        cmocka_unit_test(test_failed_import_leaves_nothing),
        cmocka_unit_test(test_import_over_an_existing_bundle),
        cmocka_unit_test(test_usage_errors_exit_2),
        cmocka_unit_test(test_list_and_download_entries),
        cmocka_unit_test(test_prepare_from_a_registry),
        cmocka_unit_test(test_prepare_parquet_from_dir),
        cmocka_unit_test(test_prepare_bigann_10k_gt_verifies),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
