/*
 * kv_params.h: the open parameters every record-store engine takes
 * (`kv`, `profile`, `block_cache_mb`), declared once so hnsw-record,
 * ivfpq-record and the DiskANN record engines validate and read them alike,
 * and the one way those engines open their index's store (kv_index_open).
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
 * The open report (engines/engine.h) of a record engine reading a store
 * opened with *opt: "io" and "kv" the backend, "o_direct" its direct_reads,
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

/* How a record engine opens its index's store (kv_index_open). */
typedef struct kv_index_spec {
    /* The engine's open table, declaring kv, profile and block_cache_mb as
     * kv_open_params does (it may add its own parameters). */
    const ann_param_spec *params;
    /* kv not given: the rocksdb store when the index has one, else lmdb
     * (0: the table's default). */
    int kv_default_built;
    int writable;     /* open read-write (live updates); else read-only */
    int relaxed_sync; /* kv_options.relaxed_sync, for a writable open */
    uint64_t ingest_above_bytes; /* kv_options.ingest_above_bytes (0: the default) */
} kv_index_spec;

/*
 * Open the record store of the index a record engine built in index_dir,
 * as the engine's open does: the options from open_params (already
 * validated against spec->params: ann_engine_open does that), the store
 * <index_dir>/<backend> (kv_store_path), and a reader of it with its read
 * transaction begun, for the engine to read its metadata.  On success *opt
 * holds the options used (for kv_open_report), store_dir (bufsz bytes) the
 * store's path, *kv the store and *rd the reader, both the caller's
 * (kv_reader_destroy, then kv_close); on failure nothing is left open.
 * Errors: ANN_ENOTFOUND "<index_dir>: no index directory", "<store>: no
 * <backend> store in this index (see its build parameter kv)"; ANN_EPARAM
 * naming a value kv.h does not know; what kv_open, kv_reader_create and
 * kv_reader_begin return.  Thread-safe.
 */
int kv_index_open(const char *index_dir, const json_t *open_params, const kv_index_spec *spec,
                  kv_options *opt, char *store_dir, size_t bufsz, kv_store **kv, kv_reader **rd);

/* kv_open_params, then the live-update ones of the record engines that
 * accept updates (hnsw-record, ivfpq-record): updates (bool, default false:
 * open the store writable; one process at a time) and sync (bool, default
 * false: LMDB syncs every commit; otherwise a commit survives kill -9, not a
 * machine crash, as RocksDB's unsynced write-ahead log). */
extern const ann_param_spec kv_live_open_params[];

/* The kv_index_spec of an engine whose open table is kv_live_open_params:
 * writable when "updates", relaxed_sync unless "sync" (open_params already
 * validated against it).  kv_default_built is left as it is. */
void kv_index_spec_live(const json_t *open_params, kv_index_spec *spec);

#endif
