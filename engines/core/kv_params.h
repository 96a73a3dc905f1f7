/*
 * kv_params.h: the open parameters every record-store engine takes
 * (`kv`, `profile`, `block_cache_mb`), declared once so hnsw-record,
 * ivfpq-record and the DiskANN record engines validate and read them alike.
 */
#ifndef ANNLAB_CORE_KV_PARAMS_H
#define ANNLAB_CORE_KV_PARAMS_H

#include "engines/core/kv.h"
#include "engines/core/params.h"

#include <jansson.h>

/* The parameter table: kv ("rocksdb" | "lmdb", default "rocksdb"), profile
 * ("server" | "embedded", default "server"), block_cache_mb (0..1048576,
 * default 512; server profile with RocksDB only). */
extern const ann_param_spec kv_open_params[];

/*
 * Fill *opt for a read-only open of an existing store from open_params
 * (NULL = {}), already validated against kv_open_params (ann_engine_open
 * does that).  Errors: ANN_EPARAM naming a value kv.h does not know.
 * Thread-safe.
 */
int kv_options_from_params(const json_t *open_params, kv_options *opt);

/* The same three parameters, then the live-update ones of the record
 * engines that accept updates (hnsw-record, ivfpq-record): updates (bool,
 * default false: open the store writable; one process at a time) and sync
 * (bool, default false: LMDB syncs every commit; otherwise a commit survives
 * kill -9, not a machine crash, as RocksDB's unsynced write-ahead log). */
extern const ann_param_spec kv_live_open_params[];

/* kv_options_from_params for open_params validated against
 * kv_live_open_params: read_only unless "updates", relaxed_sync unless
 * "sync".  Errors as kv_options_from_params.  Thread-safe. */
int kv_options_from_live_params(const json_t *open_params, kv_options *opt);

/*
 * The open report (engines/engine.h) of a record engine reading a store
 * opened with *opt: "io" and "kv" the backend, "o_direct" false,
 * "kv_profile", "cache_bytes" (the RocksDB block cache of the server
 * profile, else 0: LMDB and the embedded profile read through the page
 * cache).
 */
void kv_open_report(const kv_options *opt, json_t *report);

/* Build side: which stores a build writes, "rocksdb" | "lmdb" | "both"
 * (default "both", so either backend opens the index without a rebuild);
 * each backend's store lives in <index>/<backend name>/. */
extern const char *const kv_build_choices[];
#define KV_BUILD_DEFAULT "both"

/* Whether the build choice `which` includes backend b. */
int kv_build_includes(const char *which, kv_backend b);

/* "<index_dir>/<backend name>" into buf (bufsz bytes). */
void kv_store_path(char *buf, size_t bufsz, const char *index_dir, kv_backend b);

/*
 * Open the store of backend opt->backend inside an index built by a record
 * engine: its path goes to store_dir (bufsz bytes).  ANN_ENOTFOUND naming
 * the path when the index was built without that backend; otherwise what
 * kv_open returns.
 */
int kv_open_built(const char *index_dir, const kv_options *opt, char *store_dir, size_t bufsz,
                  kv_store **out);

#endif
