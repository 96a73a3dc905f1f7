/*
 * digest.h: whole-file sha256 digests of a directory's files, and their
 * verification with a cache, for the files whose bytes annlab cannot check
 * as it reads them (a RocksDB or LMDB store, a FAISS or hnswlib file, JSON
 * metadata) and for dataset bundles.
 *
 * ann_engine_build records the digests of an index's files in build.json
 * ("files"), the bundle writer in manifest.json ("files"); `annlab run`
 * verifies them once per run before the first use of an index or bundle.
 * Hashing gigabytes on every run would cost more than the run, so a
 * verified file is remembered in <dir>/.verified.json by (size, mtime,
 * inode, digest): a file changed since (a flipped byte written in place
 * changes its mtime) is hashed again.  The cache is advisory: when it
 * cannot be written (a read-only dataset), files are hashed every run.
 *
 * Not covered, by design: files a reader itself rewrites (LMDB's lock.mdb,
 * RocksDB's LOCK and LOG files), build.json, and the cache.
 */
#ifndef ANNLAB_CORE_DIGEST_H
#define ANNLAB_CORE_DIGEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define ANN_DIGEST_CACHE ".verified.json"

/*
 * sha256 of the regular file path, streamed, as "sha256:<64 hex>" into out
 * (at least 72 bytes); *bytes (may be NULL) receives its size.  Errors:
 * -errno naming the file, ANN_EFORMAT for a file that is not regular,
 * ANN_EINTERNAL when libcrypto fails.
 */
int ann_sha256_file(const char *path, char *out, uint64_t *bytes);

/* The sha256 of len bytes at buf, as ann_sha256_file writes it. */
int ann_sha256_buf(const void *buf, size_t len, char *out);

/* 1 when a file of this name is left out of digests (see above). */
int ann_digest_skips(const char *name);

/*
 * Digests of every regular file under dir, recursively, but those
 * ann_digest_skips: a new object {"<relative path>": {"bytes": N,
 * "sha256": "sha256:..."}} in *files (caller decrefs).  Errors: those of
 * ann_sha256_file, -errno for a directory that cannot be read.
 */
int ann_digest_tree(const char *dir, json_t **files);

/*
 * Check that every file listed in files (as ann_digest_tree makes, or a
 * bundle manifest's "files") under dir has its recorded size and digest.
 * what names the record in messages ("build.json", "manifest.json").
 * Files verified before and unchanged since (the cache) are not hashed
 * again; newly verified ones are added to the cache.  *hashed (may be
 * NULL) receives how many files were hashed.
 * Errors: ANN_ECORRUPT "<path>: sha256 X differs from <what> (Y)" or
 * "<path>: N bytes, <what> records M"; ANN_EFORMAT for a malformed entry
 * or a file that is not regular; -ENOENT "<path>: listed in <what> but
 * missing"; -errno reading.
 */
int ann_digest_verify(const char *dir, const json_t *files, const char *what, unsigned *hashed);

#endif
