/*
 * hdf5_fixture.c: ann-benchmarks HDF5 files written by h5py (see
 * hdf5_fixture.h): the arrays go to raw files, a JSON spec names the
 * variants, and tests/support/ann_hdf5.py writes them in one process.
 */
#include "tests/support/hdf5_fixture.h"

#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tu_support_script(const char *name, char *buf, size_t len)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    /* build/tests/test_x -> <repo>/tests/support/name */
    snprintf(buf, len, "%s/../../tests/support/%s", dirname(exe), name);
    return access(buf, R_OK) == 0 ? 0 : -1;
}

const char *tu_python(void)
{
    const char *env = getenv("ANNLAB_PYTHON");
    if (env && *env)
        return env;
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

int tu_python_has(const char *modules)
{
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "'%s' -c 'import %s' >/dev/null 2>&1", tu_python(), modules);
    return system(cmd) == 0;
}

static int write_raw(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = fwrite(data, 1, len, f) == len ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

int tu_h5py_write(const tu_h5_variant *v, int nv, const float *train, uint64_t n, const float *test,
                  uint64_t nq, uint32_t dim, const int64_t *neighbors, uint32_t k)
{
    int rc = -1;
    char script[4200], base[4200], tr[4300], te[4300], nb[4300], spec_path[4300], cmd[9000];
    int64_t *zeros = NULL;
    json_t *spec = NULL;
    if (tu_support_script("ann_hdf5.py", script, sizeof script) != 0 || !tu_python_has("h5py, numpy")) {
        fprintf(stderr, "tests need %s with h5py (Debian python3-h5py): run `make deps`\n", tu_python());
        return -2;
    }
    snprintf(base, sizeof base, "%s", v[0].out);
    snprintf(tr, sizeof tr, "%s.train.f32", base);
    snprintf(te, sizeof te, "%s.test.f32", base);
    snprintf(nb, sizeof nb, "%s.neighbors.i64", base);
    snprintf(spec_path, sizeof spec_path, "%s.spec.json", base);
    if (!neighbors) {
        zeros = calloc(nq * k > 0 ? nq * k : 1, sizeof *zeros);
        if (!zeros)
            goto out;
        neighbors = zeros;
    }
    if (write_raw(tr, train, n * dim * sizeof(float)) || write_raw(te, test, nq * dim * sizeof(float)) ||
        write_raw(nb, neighbors, nq * k * sizeof(int64_t)))
        goto out;
    spec = json_pack("{s:s, s:s, s:s, s:I, s:I, s:i, s:i, s:[]}", "train", tr, "test", te, "neighbors",
                     nb, "n", (json_int_t)n, "nq", (json_int_t)nq, "dim", (int)dim, "k", (int)k,
                     "files");
    for (int i = 0; spec && i < nv; i++) {
        json_t *f = json_pack("{s:s}", "out", v[i].out);
        if (v[i].layout)
            json_object_set_new(f, "layout", json_string(v[i].layout));
        if (v[i].distance)
            json_object_set_new(f, "distance", json_string(v[i].distance));
        if (v[i].strings)
            json_object_set_new(f, "strings", json_string(v[i].strings));
        if (v[i].omit)
            json_object_set_new(f, "omit", json_string(v[i].omit));
        if (v[i].dimension > 0)
            json_object_set_new(f, "dimension", json_integer(v[i].dimension));
        if (v[i].float64)
            json_object_set_new(f, "float64", json_true());
        json_array_append_new(json_object_get(spec, "files"), f);
    }
    if (!spec || json_dump_file(spec, spec_path, 0) != 0)
        goto out;
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", tu_python(), script, spec_path);
    rc = system(cmd) == 0 ? 0 : -1;
out:
    unlink(tr);
    unlink(te);
    unlink(nb);
    unlink(spec_path);
    json_decref(spec);
    free(zeros);
    return rc;
}

int tu_write_ann_hdf5(const char *path, const float *train, uint64_t n, const float *test,
                      uint64_t nq, uint32_t dim, const int64_t *neighbors, uint32_t k,
                      const char *distance)
{
    tu_h5_variant v = { .out = path, .distance = distance };
    return tu_h5py_write(&v, 1, train, n, test, nq, dim, neighbors, k);
}
