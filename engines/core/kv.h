/*
 * kv.h: the record store, one interface over RocksDB and LMDB.
 *
 * Engines that keep their index as key-value records (diskann-record,
 * diskann-resident, hnsw-record, ivfpq-record) read and write them through
 * this interface only, so an experiment can swap an LSM tree (RocksDB) for
 * a memory-mapped B-tree (LMDB) with an open parameter.
 *
 * A store lives in a directory the store owns (RocksDB's files, or LMDB's
 * data.mdb + lock.mdb).
 *
 * Keys.  Records of one structure share a one-byte table prefix followed by
 * a fixed-width big-endian integer (kv_key_u32 / kv_key_u64), so byte order
 * equals numeric order and each table's records are contiguous: a prefix
 * iteration walks a table in id order, and a bulk load in id order is
 * sorted.  Other key shapes are allowed (any bytes up to KV_KEY_MAX_BYTES);
 * the helpers are the convention.
 *
 * Reads.  Each search thread holds one kv_reader (in its search context;
 * created once, not per query).  A query brackets its reads with
 * kv_reader_begin / kv_reader_end.  kv_get returns a kv_val pointing at the
 * value without copying where the backend allows it:
 *   - LMDB: a pointer into the memory map, valid until kv_reader_end (the
 *     read transaction is reset there and renewed by the next begin);
 *   - RocksDB: a pinnable slice (pinned block-cache block, or RocksDB's own
 *     copy when the profile has no block cache), valid until kv_val_release.
 * Callers always call kv_val_release (a no-op for LMDB), and must release
 * every value before kv_reader_end.  RocksDB's C API allocates one small
 * pinnable-slice wrapper per get; that is the one allocation on the read
 * path and it is RocksDB's, not ours.
 *
 * Writes.  kv_txn is an atomic batch: puts and deletes are buffered and
 * applied all-or-nothing at kv_txn_commit (RocksDB write batch; LMDB one
 * write transaction, with the memory map grown and the batch retried when
 * it does not fit).  Reads do not see a batch's writes before commit.
 * kv_bulk is the fast path for loading many records with strictly
 * ascending keys into a store: RocksDB writes SST files and ingests them;
 * LMDB appends (MDB_APPEND) in large transactions with the map sized from
 * the data.
 *
 * Profiles.  "server": RocksDB with an LRU block cache of block_cache_mb
 * (default 512 MiB).  "embedded": no block cache of the store's own; reads
 * rely on the operating system's page cache (RocksDB with its block cache
 * disabled; LMDB always works this way, so both profiles mean the same for
 * LMDB and block_cache_mb is ignored there).  RocksDB stores are written
 * without compression (vectors and PQ codes do not compress; decompression
 * would only add CPU to every read).
 *
 * Threads.  A kv_store is thread-safe: many readers on many threads, each
 * kv_reader used by one thread at a time (it may move between threads
 * between queries).  One kv_txn or kv_bulk at a time per store; they may
 * run while readers read (LMDB readers see the snapshot of their begin).
 *
 * Errors.  0 on success, a negative code otherwise (engines/core/status.h),
 * with a detail message naming the store directory: ANN_ENOTFOUND for a
 * missing key (distinct from any failure), -errno for system failures,
 * ANN_EPARAM for bad arguments, ANN_ESTATE for calls out of order,
 * ANN_EUNSUPPORTED for an unknown backend, -EIO for a backend error (the
 * backend's message in the detail).
 */
#ifndef ANNLAB_CORE_KV_H
#define ANNLAB_CORE_KV_H

/*
 * Checksums.  Every value is stored with KV_SUM_BYTES appended
 * (ann_checksum of the value xor crc32c of the key, engines/core/crc32c.h)
 * and checked by kv_get and kv_iter_next before it is returned (the length
 * returned leaves them out): a corrupt record is ANN_ECORRUPT "<store>:
 * record <key in hex>: value checksum ...".  A store declares this in
 * KV_MARKER_FILE, written when it is created; opening a store without it
 * (an earlier annlab's) is ANN_EVERSION "... rebuild the index".
 */
#define KV_FORMAT_VERSION 2
#define KV_MARKER_FILE "annlab-kv.json"
#define KV_SUM_BYTES 4

#include <stddef.h>
#include <stdint.h>

/* ---- backends and profiles -------------------------------------------- */

typedef enum {
    KV_BACKEND_ROCKSDB = 0,
    KV_BACKEND_LMDB = 1,
} kv_backend;

typedef enum {
    KV_PROFILE_SERVER = 0,   /* RocksDB block cache of block_cache_mb */
    KV_PROFILE_EMBEDDED = 1, /* no block cache of its own: page cache only */
} kv_profile;

/* The names used in parameters: "rocksdb" | "lmdb", "server" | "embedded". */
const char *kv_backend_name(kv_backend b);
const char *kv_profile_name(kv_profile p);
/* Parse a name; 0 or ANN_EPARAM naming the value. */
int kv_backend_parse(const char *name, kv_backend *out);
int kv_profile_parse(const char *name, kv_profile *out);

/* NULL-terminated choice lists, for ann_param_spec ENUM tables. */
extern const char *const kv_backend_choices[];
extern const char *const kv_profile_choices[];

#define KV_DEFAULT_BLOCK_CACHE_MB 512 /* server profile default */

typedef struct kv_options {
    kv_backend backend;
    kv_profile profile;
    /* Server profile, RocksDB: LRU block cache size in MiB; 0 means
     * KV_DEFAULT_BLOCK_CACHE_MB.  Ignored by the embedded profile and LMDB. */
    uint32_t block_cache_mb;
    /* Open read-only: no writes allowed (ANN_ESTATE), several processes
     * may open the same store.  The store must exist (ANN_ENOTFOUND). */
    int read_only;
    /* Writable opens only: create the directory and an empty store when
     * absent.  Without it a missing store is ANN_ENOTFOUND. */
    int create;
    /* Writable opens only.  RocksDB's kv_txn_commit returns once the batch
     * is in its write-ahead log, written but not synced: it survives a
     * crash of the process (kill -9), not necessarily of the machine.
     * LMDB's syncs the batch to the device, unless relaxed_sync is 1
     * (MDB_NOSYNC), which gives it RocksDB's guarantee: the last batches
     * may be lost to a machine crash, half a batch is never applied.
     * kv_close syncs either way.  Ignored by RocksDB. */
    int relaxed_sync;
    /* RocksDB, writable opens: a batch whose puts come to at least this
     * many bytes is written as a sorted SST file and ingested (atomic,
     * synced, no WAL and no memtable copy) instead of applied as a write
     * batch; 0 means KV_INGEST_DEFAULT_BYTES.  Ignored by LMDB. */
    uint64_t ingest_above_bytes;
    /* RocksDB: read SST files with O_DIRECT (use_direct_reads), so a get
     * that misses the block cache reads the device without going through
     * the page cache.  Only a store's own block cache (server profile) then
     * caches anything.  LMDB maps its file and cannot: ANN_EPARAM. */
    int direct_reads;
} kv_options;

#define KV_INGEST_DEFAULT_BYTES (64ull << 20)

/* ---- keys --------------------------------------------------------------- */

#define KV_KEY_MAX_BYTES 64     /* longest key accepted by get/put/delete */
#define KV_KEY_U32_BYTES 5      /* table byte + 4-byte big-endian id */
#define KV_KEY_U64_BYTES 9      /* table byte + 8-byte big-endian id */

/* Write table + big-endian id into out (KV_KEY_U32_BYTES / _U64_BYTES);
 * returns the key length.  Never fails. */
size_t kv_key_u32(uint8_t out[KV_KEY_U32_BYTES], uint8_t table, uint32_t id);
size_t kv_key_u64(uint8_t out[KV_KEY_U64_BYTES], uint8_t table, uint64_t id);

/* Parse a key made by kv_key_u32 / kv_key_u64.  table and id may be NULL.
 * ANN_ECORRUPT when len is not the expected width (no detail message: the
 * caller names the record). */
int kv_key_parse_u32(const void *key, size_t len, uint8_t *table, uint32_t *id);
int kv_key_parse_u64(const void *key, size_t len, uint8_t *table, uint64_t *id);

/* ---- store ------------------------------------------------------------- */

typedef struct kv_store kv_store;

/*
 * Open (or with opt->create, create) the store in dir.
 * out: receives the store; close with kv_close.
 * Errors: ANN_ENOTFOUND (no store in dir), ANN_EPARAM (bad options),
 * -errno, -EIO (backend refuses, e.g. a store of the other backend, or a
 * corrupt one; the backend's message in the detail).  Thread-safe.
 */
int kv_open(const char *dir, const kv_options *opt, kv_store **out);

/*
 * Close the store, making every committed write durable first (RocksDB
 * flushes its memtable, LMDB syncs).  All readers, iterators, txns and
 * bulk loads must be finished.  Accepts NULL.  Returns 0 or the sync's
 * error (the store is closed either way).
 */
int kv_close(kv_store *s);

kv_backend kv_store_backend(const kv_store *s);
kv_profile kv_store_profile(const kv_store *s);
const char *kv_store_dir(const kv_store *s);

/* ---- statistics -------------------------------------------------------- */

typedef struct kv_stats {
    uint64_t gets;          /* kv_get calls that found their key */
    uint64_t get_bytes;     /* value bytes those gets returned */
    uint64_t not_found;     /* kv_get calls that returned ANN_ENOTFOUND */
    uint64_t prefetched;    /* keys hinted with kv_prefetch */
    uint64_t iter_items;    /* records returned by prefix iterators */
    uint64_t iter_bytes;    /* key + value bytes those records carried */
    uint64_t puts;          /* records written (txn puts and bulk adds) */
    uint64_t put_bytes;     /* key + value bytes written */
    uint64_t deletes;       /* deletes committed */
    /* RocksDB only (has_cache_stats = 1): data, index and filter blocks
     * served from the block cache, and blocks read from files (cache
     * misses; with no block cache, every block read).  LMDB has no cache
     * of its own: has_cache_stats = 0 and these stay 0. */
    int has_cache_stats;
    uint64_t cache_hits;
    uint64_t cache_misses;
    uint64_t block_read_bytes; /* bytes of those file block reads */
} kv_stats;

/*
 * Totals for the store since open: every reader's counts up to its last
 * kv_reader_end (each end adds that snapshot's counts to the store's
 * atomic totals), and all committed writes.  Thread-safe.
 */
void kv_store_stats(kv_store *s, kv_stats *out);

/* ---- reads ------------------------------------------------------------- */

typedef struct kv_reader kv_reader;

/* A value returned by kv_get (or an iterator).  data/len are read-only. */
typedef struct kv_val {
    const void *data;
    size_t len;
    void *pin; /* backend handle released by kv_val_release; NULL for LMDB */
} kv_val;

/*
 * Create a read handle for one thread at a time.  Allocates everything a
 * query needs (LMDB: a read transaction, reset until begin; RocksDB: read
 * options).  Errors: -ENOMEM, -EIO (e.g. LMDB reader table full), ANN_ESTATE
 * (store closed for reading).  Thread-safe.
 */
int kv_reader_create(kv_store *s, kv_reader **out);
void kv_reader_destroy(kv_reader *r); /* accepts NULL; must not be inside begin/end */

/*
 * Start a read snapshot (LMDB: renew the transaction; RocksDB: start the
 * reader's per-query counters, and on a writable store take a RocksDB
 * snapshot that every get and iterator until kv_reader_end reads, so a
 * reader never sees half of a batch committed meanwhile; a read-only
 * store cannot change and needs none).  Allocates nothing of ours.
 * ANN_ESTATE when already begun.
 */
int kv_reader_begin(kv_reader *r);
/* End it: every value from this snapshot becomes invalid.  Accepts a
 * reader that was not begun (no-op). */
void kv_reader_end(kv_reader *r);

/*
 * Look up key.  On success *val points at the value (see zero-copy rules
 * above); release it with kv_val_release.  Errors: ANN_ENOTFOUND when the
 * key is absent (no detail message is recorded for it: it is an answer,
 * not a failure), ANN_ESTATE outside begin/end, ANN_EPARAM for an empty or
 * too-long key, -EIO for a backend failure (detail names the store).
 * The reader's counters count the call.
 */
int kv_get(kv_reader *r, const void *key, size_t key_len, kv_val *val);

/* Release a value from kv_get (RocksDB unpins; LMDB nothing).  Accepts a
 * zeroed kv_val and a value already released. */
void kv_val_release(kv_val *val);

/*
 * Hint that the n records whose keys are packed in keys (n keys of key_len
 * bytes each, e.g. kv_key_u32 keys) will be read with kv_get soon, in this
 * snapshot, and start reading them from the device now, in parallel,
 * without waiting: the way a search keeps several reads in flight (a
 * DiskANN beam) through a store whose gets block.  Never changes what a
 * get returns; a hint that cannot be acted on is dropped.
 *   - LMDB: each key is looked up in the caller's thread (B-tree pages
 *     only; a large value's overflow pages are not touched) and the
 *     value's pages are handed to the kernel's readahead
 *     (madvise MADV_WILLNEED), which queues the device reads and returns.
 *   - RocksDB: the keys go to a queue served by KV_PREFETCH_THREADS helper
 *     threads of the store (started at the first hint), each doing a get
 *     of its own and dropping the value: the blocks land in the page cache
 *     (embedded profile) or the block cache (server profile), and a get of
 *     the same block meanwhile waits for that read rather than issuing a
 *     second one (page cache).  The helpers read the latest committed
 *     records, not the caller's snapshot (a hint only).  A full queue
 *     (KV_PREFETCH_QUEUE keys) drops the rest of the hint.
 * Outside begin/end, or with a key length of 0 or above KV_KEY_MAX_BYTES,
 * nothing happens.  The reader's `prefetched` counter counts hinted keys.
 */
#define KV_PREFETCH_THREADS 16
#define KV_PREFETCH_QUEUE 1024
void kv_prefetch(kv_reader *r, const void *keys, size_t key_len, size_t n);

/* kv_prefetch of the n records keyed kv_key_u32(table, ids[i]). */
void kv_prefetch_u32(kv_reader *r, uint8_t table, const uint32_t *ids, uint32_t n);

/*
 * Reads in flight over a known sequence of records keyed kv_key_u32(table,
 * ids[i]) read one after another (a re-rank): before reading ids[i], call
 * kv_ahead_at(a, i), which hints the records up to ids[i + depth - 1] not
 * hinted yet, so depth reads are in flight (ids[i] itself is the caller's
 * get; depth 1 hints nothing).  ids must stay valid while in use.
 */
typedef struct kv_ahead {
    kv_reader *r;
    uint8_t table;
    const uint32_t *ids;
    uint32_t n, depth, next; /* next: the first id not hinted yet */
} kv_ahead;

#define KV_AHEAD_MAX_BATCH 64 /* ids hinted per call at most */

void kv_ahead_init(kv_ahead *a, kv_reader *r, uint8_t table, const uint32_t *ids, uint32_t n,
                   uint32_t depth);
void kv_ahead_at(kv_ahead *a, uint32_t i);

/*
 * The reader's own counters since it was created (gets, bytes, not found,
 * iterator items, and for RocksDB block-cache hits/misses measured with
 * RocksDB's per-thread perf context between begin and end).  Not
 * thread-safe: call from the thread using the reader, outside a query or
 * after kv_reader_end to include that query.
 */
void kv_reader_stats(const kv_reader *r, kv_stats *out);

/* ---- prefix iteration -------------------------------------------------- */

typedef struct kv_iter kv_iter;

/*
 * Iterate, in ascending key order, every record whose key starts with
 * prefix (prefix_len 0: the whole store).  Must be created inside
 * kv_reader_begin/end and destroyed before kv_reader_end.  Allocates (not
 * for hot paths).  Errors: -ENOMEM, -EIO, ANN_ESTATE outside begin/end.
 */
int kv_iter_create(kv_reader *r, const void *prefix, size_t prefix_len, kv_iter **out);

/*
 * The same, for one pass over a large range (a whole table read into
 * memory): RocksDB reads ahead KV_SCAN_READAHEAD_BYTES at a time and does
 * not put the blocks it passes in its block cache, where they would
 * displace the ones point reads come back to; LMDB reads its map in place
 * either way.  A merge's scan of 20,000 node records of 6.6 KB took 0.58 s
 * with kv_iter_create and 0.08 s with this (bench_merge, 2026-12-03).  The
 * engines use it for every table they read whole (at open, in merges and
 * consolidations); a search's per-query scans keep kv_iter_create.
 */
int kv_iter_create_scan(kv_reader *r, const void *prefix, size_t prefix_len, kv_iter **out);
#define KV_SCAN_READAHEAD_BYTES ((size_t)2 << 20)

/*
 * Step: returns 1 with *key and *val set to the next record (valid until
 * the next kv_iter_next or kv_iter_destroy; do not kv_val_release them),
 * 0 at the end, or a negative code on failure.
 */
int kv_iter_next(kv_iter *it, kv_val *key, kv_val *val);
void kv_iter_destroy(kv_iter *it); /* accepts NULL */

/* ---- atomic write batches ---------------------------------------------- */

typedef struct kv_txn kv_txn;

/* Start a batch.  Errors: ANN_ESTATE (read-only store, or another
 * txn/bulk open), -ENOMEM.  Thread-safe against readers. */
int kv_txn_begin(kv_store *s, kv_txn **out);

/*
 * Start a batch whose operations will come in strictly ascending key
 * order (kv_txn_put / kv_txn_delete refuse any other with ANN_EPARAM),
 * expected_bytes being an estimate of its puts' key + value bytes.  It
 * commits atomically like any batch.  When the batch is large enough for
 * RocksDB to take it as one ingested SST file (ingest_above_bytes), the
 * operations go into that file as they come, and the batch is never held
 * in memory (a merge rewriting much of a graph: 134 MB for 20,000 node
 * records, whose fresh pages cost more than writing them); otherwise, and
 * on LMDB, it is buffered like kv_txn_begin's.  Errors as kv_txn_begin,
 * and -EIO opening the file.
 */
int kv_txn_begin_sorted(kv_store *s, uint64_t expected_bytes, kv_txn **out);

/* Buffer a put (key and value are copied) or a delete of a key (deleting
 * an absent key is not an error).  Errors: ANN_EPARAM (empty or too-long
 * key; in a sorted batch, a key not above the previous), -ENOMEM, and in a
 * streamed sorted batch -EIO. */
int kv_txn_put(kv_txn *t, const void *key, size_t key_len, const void *val, size_t val_len);
int kv_txn_delete(kv_txn *t, const void *key, size_t key_len);

/* Apply the whole batch atomically and free the txn (also on failure:
 * nothing of the batch is applied then).  Errors: -EIO, -ENOSPC, -errno. */
int kv_txn_commit(kv_txn *t);
/* Drop the batch and free the txn.  Accepts NULL. */
void kv_txn_abort(kv_txn *t);

/*
 * Reclaim the space of overwritten and deleted records now.  RocksDB: a
 * manual compaction of every key (memtable flushed, every level rewritten
 * into the bottom one), returning when it is done; readers and writers may
 * go on meanwhile.  LMDB: nothing to do (pages freed by a commit are
 * reused by later ones; the file never shrinks).  Errors: ANN_ESTATE on a
 * read-only store, -EIO.
 */
int kv_compact(kv_store *s);

/* One-record conveniences: a batch of one put / one delete. */
int kv_put(kv_store *s, const void *key, size_t key_len, const void *val, size_t val_len);
int kv_delete(kv_store *s, const void *key, size_t key_len);

/* ---- bulk load --------------------------------------------------------- */

typedef struct kv_bulk kv_bulk;

/*
 * Start a bulk load into s.  expected_bytes: an estimate of the total key +
 * value bytes to come (0 if unknown); LMDB sizes its memory map from it
 * (and grows it if the estimate was low), RocksDB ignores it.  Records
 * become visible only at kv_bulk_finish; a failed or aborted load leaves
 * the store as it was (temporary SST files are removed).  Keys must not
 * already exist in the store (loads go into fresh tables).
 * Errors: ANN_ESTATE (read-only, or another txn/bulk open), -errno, -EIO.
 */
int kv_bulk_begin(kv_store *s, uint64_t expected_bytes, kv_bulk **out);

/* Add one record; keys strictly ascending (ANN_EPARAM naming the position
 * otherwise).  Copies what it needs before returning. */
int kv_bulk_add(kv_bulk *b, const void *key, size_t key_len, const void *val, size_t val_len);

/* Make everything added visible and durable (RocksDB: ingest the SST
 * files; LMDB: commit and sync) and free b (also on failure). */
int kv_bulk_finish(kv_bulk *b);
/* Drop everything added and free b.  Accepts NULL. */
void kv_bulk_abort(kv_bulk *b);

#endif
