/*
 * hdf5_fixture.h: a small HDF5 file in the ann-benchmarks layout, for the
 * tests that import one (directly, through prepare --from, or downloaded).
 */
#ifndef ANNLAB_TESTS_HDF5_FIXTURE_H
#define ANNLAB_TESTS_HDF5_FIXTURE_H

#include <stdint.h>

/*
 * Write path: datasets "train" (n x dim) and "test" (nq x dim) of float32,
 * "neighbors" (nq x k int64: neighbors, or all 0 when NULL, which the
 * ground-truth check must catch and replace), and the attribute "distance"
 * = distance as a fixed-length string.  Arrays are borrowed, row-major.
 * Returns 0, or -1 when an HDF5 call fails.
 */
int tu_write_ann_hdf5(const char *path, const float *train, uint64_t n, const float *test,
                      uint64_t nq, uint32_t dim, const int64_t *neighbors, uint32_t k,
                      const char *distance);

#endif
