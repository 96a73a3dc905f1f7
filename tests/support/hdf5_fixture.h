/*
 * hdf5_fixture.h: ann-benchmarks HDF5 files for tests, written by h5py
 * (Debian python3-h5py, a test-time dependency installed by `make deps`)
 * through tests/support/ann_hdf5.py, so the fixtures are the files the field
 * publishes, not what libhdf5's C API makes of them.
 */
#ifndef ANNLAB_TESTS_HDF5_FIXTURE_H
#define ANNLAB_TESTS_HDF5_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

/* One file to write: see tests/support/ann_hdf5.py for every option. */
typedef struct tu_h5_variant {
    const char *out;       /* path of the .hdf5 file */
    const char *layout;    /* "modern" (NULL) | "legacy" | "binary" | "sparse" */
    const char *distance;  /* NULL: "euclidean" */
    const char *strings;   /* NULL: "vlen-utf8" (h5py's str) | "vlen-ascii" | "fixed-ascii" | "fixed-utf8" */
    const char *omit;      /* NULL, or a dataset/attribute left out */
    int dimension;         /* > 0: the "dimension" attribute's value (default: the real one) */
    int float64;           /* train and test as float64 */
} tu_h5_variant;

/*
 * Write nv files from the same data: train (n x dim), test (nq x dim),
 * neighbors (nq x k ids; all 0 when NULL, which the ground-truth check must
 * catch and replace).  Arrays are borrowed, row-major.  One python3 process
 * writes them all.  Returns 0; -1 when writing failed; -2 when python3 or
 * h5py is missing (the message says to run `make deps`).
 */
int tu_h5py_write(const tu_h5_variant *v, int nv, const float *train, uint64_t n, const float *test,
                  uint64_t nq, uint32_t dim, const int64_t *neighbors, uint32_t k);

/* One file in the modern layout (h5py's variable-length UTF-8 strings) with
 * the attribute "distance" = distance.  Returns as tu_h5py_write. */
int tu_write_ann_hdf5(const char *path, const float *train, uint64_t n, const float *test,
                      uint64_t nq, uint32_t dim, const int64_t *neighbors, uint32_t k,
                      const char *distance);

/* Path of a script in tests/support/ beside the test binary's repository
 * (<exe>/../../tests/support/name) into buf.  Returns 0 or -1. */
int tu_support_script(const char *name, char *buf, size_t len);

/*
 * The Python interpreter the tests run: $ANNLAB_PYTHON when set, else
 * Debian's /usr/bin/python3 (where python3-h5py installs h5py; a python3
 * earlier in PATH, such as a pyenv shim, does not see it), else "python3".
 */
const char *tu_python(void);

/* Whether tu_python() can import the given modules ("h5py", "h5py, numpy"). */
int tu_python_has(const char *modules);

#endif
