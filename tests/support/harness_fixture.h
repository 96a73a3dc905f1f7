/*
 * harness_fixture.h: helpers for the harness tests: a small dataset bundle
 * written by hand (base, query, warm-up, exact ground truth, manifest), a
 * config file, and running the annlab binary.
 */
#ifndef ANNLAB_TESTS_HARNESS_FIXTURE_H
#define ANNLAB_TESTS_HARNESS_FIXTURE_H

#include <jansson.h>
#include <stdint.h>

/*
 * Write a bundle into dir (created): n x dim clustered base, nq queries,
 * nwarm warm-up queries, exact ground truth of depth gt_k, L2 metric.
 * Returns 0 or a negative code.
 */
int hf_bundle(const char *dir, uint64_t n, uint32_t dim, uint32_t nq, uint32_t nwarm,
              uint32_t gt_k, uint64_t seed);

/* The same with a metric (ann_metric; cosine rows are generated normalised). */
int hf_bundle_metric(const char *dir, uint64_t n, uint32_t dim, uint32_t nq, uint32_t nwarm,
                     uint32_t gt_k, uint64_t seed, int metric);

/* Write cfg to path (JSON).  Returns 0 or -1. */
int hf_write_json(const char *path, const json_t *cfg);

/*
 * Run "$ANNLAB_BIN args..." in cwd (NULL: current directory) with stdout
 * and stderr captured into *out (malloc'd, NUL-terminated; may be NULL).
 * Returns the exit status (0-255), 128+signal, or -1 when ANNLAB_BIN is unset.
 */
int hf_annlab(const char *cwd, char **out, const char *const *args);

/* Path of the annlab binary from ANNLAB_BIN, or NULL. */
const char *hf_bin(void);

#endif
