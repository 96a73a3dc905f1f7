/*
 * hdf5_fixture.c: an ann-benchmarks HDF5 file for tests (see hdf5_fixture.h).
 */
#include "tests/support/hdf5_fixture.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

static int write_2d(hid_t f, const char *name, hid_t file_type, hid_t mem_type, uint64_t rows,
                    uint64_t cols, const void *data)
{
    hsize_t d[2] = { rows, cols };
    hid_t s = H5Screate_simple(2, d, NULL);
    hid_t a = s < 0 ? -1 : H5Dcreate2(f, name, file_type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Dwrite(a, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0 ? 0 : -1;
    if (a >= 0)
        H5Dclose(a);
    if (s >= 0)
        H5Sclose(s);
    return rc;
}

int tu_write_ann_hdf5(const char *path, const float *train, uint64_t n, const float *test,
                      uint64_t nq, uint32_t dim, const int64_t *neighbors, uint32_t k,
                      const char *distance)
{
    int rc = -1;
    int64_t *zeros = NULL;
    hid_t t = -1, sc = -1, a = -1;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0)
        goto out;
    if (!neighbors) {
        zeros = calloc(nq * k, sizeof *zeros);
        if (!zeros)
            goto out;
        neighbors = zeros;
    }
    if (write_2d(f, "train", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, n, dim, train) ||
        write_2d(f, "test", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, nq, dim, test) ||
        write_2d(f, "neighbors", H5T_STD_I64LE, H5T_NATIVE_INT64, nq, k, neighbors))
        goto out;
    t = H5Tcopy(H5T_C_S1);
    if (t < 0 || H5Tset_size(t, strlen(distance)) < 0) /* fixed-length, unterminated */
        goto out;
    sc = H5Screate(H5S_SCALAR);
    a = sc < 0 ? -1 : H5Acreate2(f, "distance", t, sc, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, t, distance) < 0)
        goto out;
    rc = 0;
out:
    if (a >= 0)
        H5Aclose(a);
    if (sc >= 0)
        H5Sclose(sc);
    if (t >= 0)
        H5Tclose(t);
    if (f >= 0 && H5Fclose(f) < 0)
        rc = -1;
    free(zeros);
    return rc;
}
