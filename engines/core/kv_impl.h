/*
 * kv_impl.h: internals of the record store shared by kv.c (the
 * backend-independent half: names, keys, argument checks, counters, write
 * batches) and the two backends, kv_rocksdb.c and kv_lmdb.c.  Nothing
 * outside engines/core/kv*.c includes this header.
 */
#ifndef ANNLAB_CORE_KV_IMPL_H
#define ANNLAB_CORE_KV_IMPL_H

#include "engines/core/kv.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* One operation of a buffered write batch (kv_txn), in the order given. */
typedef enum { KV_OP_PUT = 1, KV_OP_DELETE = 2 } kv_op_kind;

typedef struct kv_op {
    kv_op_kind kind;
    size_t key_off, key_len; /* offsets into the txn's arena */
    size_t val_off, val_len; /* KV_OP_PUT only */
} kv_op;

struct kv_txn {
    kv_store *s;
    kv_op *ops;
    size_t n_ops, cap_ops;
    uint8_t *arena; /* keys and values, packed */
    size_t arena_len, arena_cap;
    size_t arena_mapped; /* the arena is populated below this offset (populate.h) */
    uint64_t put_bytes, n_puts, n_dels;
    /* kv_txn_begin_sorted: every key above the last one */
    int sorted;
    uint8_t last_key[KV_KEY_MAX_BYTES];
    size_t last_len;
    /* a streamed sorted batch: the backend's state (operations go to it,
     * not to ops/arena), or NULL */
    void *stream;
    uint8_t *framed; /* the value being streamed with its checksum appended */
    size_t framed_cap;
};

struct kv_bulk {
    kv_store *s;
    uint8_t last_key[KV_KEY_MAX_BYTES];
    size_t last_len;
    uint64_t n;         /* records added */
    uint64_t put_bytes; /* key + value bytes added */
    uint8_t *framed;    /* the value being added with its checksum appended */
    size_t framed_cap;
    void *impl;         /* backend state */
};

struct kv_reader {
    kv_store *s;
    int begun;
    kv_stats st;       /* cumulative since create */
    kv_stats at_begin; /* st at the last begin, for the store's totals */
    void *impl;        /* backend state */
};

struct kv_iter {
    kv_reader *r;
    uint8_t prefix[KV_KEY_MAX_BYTES];
    size_t prefix_len;
    int started, done;
    int scan; /* kv_iter_create_scan: one pass over a whole table */
    void *impl; /* backend state */
};

typedef struct kv_backend_ops {
    /* Open/create the store in s->dir (s->opt filled); sets s->impl. */
    int (*open)(kv_store *s);
    int (*close)(kv_store *s); /* flush/sync then free s->impl */
    int (*reader_init)(kv_reader *r);
    void (*reader_fini)(kv_reader *r);
    int (*reader_begin)(kv_reader *r);
    void (*reader_end)(kv_reader *r); /* adds cache counters to r->st */
    /* 0, ANN_ENOTFOUND (no message), or a failure with its message. */
    int (*get)(kv_reader *r, const void *key, size_t key_len, kv_val *val);
    /* kv_prefetch (arguments checked; keys packed): start reading, do not
     * wait, drop what cannot be done.  NULL: hints are ignored. */
    void (*prefetch)(kv_reader *r, const void *keys, size_t key_len, size_t n);
    int (*iter_init)(kv_iter *it);
    int (*iter_next)(kv_iter *it, kv_val *key, kv_val *val);
    void (*iter_fini)(kv_iter *it);
    int (*commit)(kv_store *s, const kv_txn *t);
    /* Streamed sorted batches (kv_txn_begin_sorted); NULL: never streamed.
     * begin: 0 with t->stream set, 1 to buffer the batch instead (too
     * small), or a failure.  add gets keys checked ascending and values
     * framed with their checksum.  commit and abort free t->stream and set
     * it NULL whatever the outcome; a failed commit applies nothing. */
    int (*stream_begin)(kv_txn *t, uint64_t expected_bytes);
    int (*stream_add)(kv_txn *t, kv_op_kind kind, const void *key, size_t key_len,
                      const void *val, size_t val_len);
    int (*stream_commit)(kv_txn *t);
    void (*stream_abort)(kv_txn *t);
    /* Bulk loads: begin sets b->impl (nothing to free on failure); add gets
     * keys already checked ascending; finish and abort free b->impl
     * whatever the outcome, and a failed finish leaves the store as it was. */
    int (*bulk_begin)(kv_bulk *b, uint64_t expected_bytes);
    int (*bulk_add)(kv_bulk *b, const void *key, size_t key_len, const void *val, size_t val_len);
    int (*bulk_finish)(kv_bulk *b);
    void (*bulk_abort)(kv_bulk *b);
    /* Reclaim overwritten and deleted records now; NULL: nothing to do. */
    int (*compact)(kv_store *s);
} kv_backend_ops;

/* Store totals, updated at kv_reader_end and at commits (relaxed atomics). */
typedef struct kv_totals {
    _Atomic uint64_t gets, get_bytes, not_found, prefetched, iter_items, iter_bytes;
    _Atomic uint64_t puts, put_bytes, deletes;
    _Atomic uint64_t cache_hits, cache_misses, block_read_bytes;
} kv_totals;

struct kv_store {
    char dir[4096];
    kv_options opt;
    const kv_backend_ops *ops;
    void *impl;
    atomic_int writer_busy;   /* a txn or bulk load is open */
    atomic_int readers_begun; /* readers inside begin/end (LMDB map growth) */
    kv_totals tot;
};

extern const kv_backend_ops kv_rocksdb_ops;
extern const kv_backend_ops kv_lmdb_ops;

/* Unpin a RocksDB value (kv_val.pin). */
void kv_rocksdb_unpin(void *pin);

/* Name of a backend error for messages: "<dir>: <what>: <backend message>".
 * The code is -ENOSPC when the backend's message says the disk is full
 * (RocksDB reports it only in its status text), else -EIO. */
int kv_fail_backend(const kv_store *s, const char *what, const char *msg);

#endif
