/*
 * testutil.h: small helpers shared by the cmocka tests: temporary
 * directories, seeded clustered data, file helpers.
 */
#ifndef ANNLAB_TESTS_TESTUTIL_H
#define ANNLAB_TESTS_TESTUTIL_H

#include "engines/core/kv.h"
#include "engines/core/vecsrc.h"
#include "engines/engine.h"

#include <stddef.h>
#include <stdint.h>

/* Create a fresh temporary directory (mkdtemp under $TMPDIR or /tmp);
 * returns a malloc'd path.  tu_rmdir removes it recursively and frees. */
char *tu_tmpdir(const char *tag);
void tu_rmdir(char *dir);

/* Deterministic PRNG (splitmix64) for tests. */
uint64_t tu_rand(uint64_t *state);
float tu_uniform(uint64_t *state);  /* [0, 1) */
float tu_gauss(uint64_t *state);    /* N(0, 1) */

/* n x dim floats: `clusters` Gaussian clusters (centre spread 1, member
 * spread 0.3), seeded; normalised rows when normalize != 0.  malloc'd. */
float *tu_clustered(uint64_t n, uint32_t dim, uint32_t clusters, uint64_t seed, int normalize);

/* Mount a tmpfs of size_mb MiB at dir (created here): a small disk to
 * fill.  Skips the test, dir removed, where mounting is not allowed.  The
 * caller unmounts it. */
void tu_mount_tmpfs(const char *dir, unsigned size_mb);

/* The files in dir whose names start with prefix (dir must exist). */
int tu_count_files(const char *dir, const char *prefix);

/* Write/read a whole file. */
int tu_write_file(const char *path, const void *data, size_t len);
void *tu_read_file(const char *path, size_t *len);

/* A source over `over` that only reads: no rows hook, so consumers take
 * their copying path.  `over` must outlive it; nothing to destroy. */
ann_vecsrc tu_copy_only(const ann_vecsrc *over);

/* Build engine `engine` from src with the JSON params into path (a
 * failure fails the test); how[16] gets the build report's base_rows
 * ("lent", "copied", or "?"). */
void tu_build_base_rows(const char *engine, const ann_vecsrc *src, const char *params,
                        const char *path, char how[16]);

/* A thread that creates and deletes a file (churn.tmp, 9 bytes) and a
 * directory (churn.d) in dir until tu_churn_stop: a live store's files
 * coming and going under a directory walk. */
typedef struct tu_churn tu_churn;
tu_churn *tu_churn_start(const char *dir);
void tu_churn_stop(tu_churn *c);

/* Run a shell command (popen), its standard output into out (len bytes,
 * NUL-terminated; add 2>&1 to the command for stderr too); returns the
 * exit code, -1 when it did not exit. */
int tu_run_capture(const char *cmd, char *out, size_t len);

/* Path of the shared real-data folder, or NULL when absent. */
const char *tu_shared_data(void);

/*
 * A search setting that only hints reads (kv_prefetch) against one that
 * does not: open engine `name`'s index with open_json, run nq queries (dim
 * floats each) for k results with search_plain and then search_hinted, and
 * assert that both return the same ids and distances and count the same
 * reads.  st[0] / st[1] get each setting's stats and hinted[0] / [1] the
 * store's kv_prefetch count after it (kv_of returns the engine's store).
 */
void tu_same_answers(const char *name, const char *index, const char *open_json,
                     const char *search_plain, const char *search_hinted, const float *queries,
                     int nq, uint32_t dim, uint32_t k, kv_store *(*kv_of)(ann_engine *),
                     ann_stats st[2], uint64_t hinted[2]);

#endif
