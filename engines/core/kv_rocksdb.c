/*
 * kv_rocksdb.c: the record store over RocksDB (an LSM tree), through its C
 * API (librocksdb-dev 7.x).
 *
 * Reads use rocksdb_get_pinned: the value stays pinned in its block-cache
 * block (server profile) until kv_val_release, so nothing is copied out of
 * the cache; with the embedded profile (no block cache) RocksDB reads the
 * block through the page cache into the slice's own buffer.  Per-query
 * cache hits and misses come from RocksDB's per-thread perf context
 * (block_cache_hit_count, block_read_count, block_read_byte), enabled at
 * counting level on the reading thread at kv_reader_begin and read back at
 * kv_reader_end, so concurrent readers never share a counter.
 *
 * kv_prefetch hints go to a ring of KV_PREFETCH_QUEUE keys served by
 * KV_PREFETCH_THREADS helper threads, started at the first hint and joined
 * at close; each does a pinned get without a snapshot and drops it.
 *
 * Bulk loads write sorted SST files with the SST file writer (a new file
 * every KV_ROCKSDB_SST_BYTES) and ingest them at the end by moving them
 * into the database, RocksDB's fastest load path (no WAL, no memtable, no
 * compaction for non-overlapping files).  A write batch of at least
 * ingest_above_bytes of puts (a merge rewriting much of a graph) takes the
 * same path: its operations sorted by key (the last one on a key wins),
 * deletes as SST tombstones, one file ingested atomically with a sequence
 * number above every write before it, so a reader's older snapshot still
 * sees the records as they were.  A sorted batch (kv_txn_begin_sorted)
 * expected to be that large writes the file as its operations come.  A
 * batch's file is written through the page cache and left there
 * (kv_rocksdb_sst.cc: the C API's writer drops each megabyte it writes,
 * so the first searches after a merge read the records it rewrote from
 * the device); a bulk load's files keep the C API's behaviour.  Applying such a batch through the WAL
 * and the memtable copies it three times and was measured at about
 * 50 MB/s (bench_merge, 630 MB in 12.4 s).  Tables use a bloom filter (10
 * bits per key), no compression, and index/filter blocks held by the table
 * readers rather than competing for the block cache.
 */
#include "engines/core/kv_impl.h"

#include "engines/core/status.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KV_ROCKSDB_SST_BYTES (256ull << 20) /* roll to a new SST file past this */

/* kv_prefetch's helpers: a ring of keys under mu, served by threads
 * started at the first hint and joined at close. */
typedef struct rdb_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready;         /* mu and cv initialised */
    int started, stop; /* under mu */
    unsigned n_threads;
    pthread_t th[KV_PREFETCH_THREADS];
    rocksdb_readoptions_t *ropts; /* the helpers' (no snapshot) */
    size_t head, count;
    uint8_t key_len[KV_PREFETCH_QUEUE];
    uint8_t keys[KV_PREFETCH_QUEUE][KV_KEY_MAX_BYTES];
} rdb_pool;

typedef struct rdb_store {
    rocksdb_t *db;
    rdb_pool pool;
    rocksdb_options_t *opts;
    rocksdb_block_based_table_options_t *table;
    rocksdb_cache_t *cache; /* server profile only */
    rocksdb_filterpolicy_t *filter;
    rocksdb_writeoptions_t *wopts;
    atomic_uint bulk_seq; /* names of bulk-load SST files */
    atomic_int write_failed; /* a write failed with an I/O error (a full disk): see rdb_free */
} rdb_store;

typedef struct rdb_reader {
    rocksdb_readoptions_t *ropts;
    const rocksdb_snapshot_t *snap; /* writable stores, between begin and end */
    rocksdb_perfcontext_t *perf; /* this thread's perf context at begin */
    uint64_t hits0, reads0, bytes0;
} rdb_reader;

typedef struct rdb_iter {
    rocksdb_readoptions_t *ropts;
    rocksdb_iterator_t *it;
    uint8_t upper[KV_KEY_MAX_BYTES]; /* the iterate_upper_bound slice's bytes */
} rdb_iter;

typedef struct rdb_bulk {
    rocksdb_envoptions_t *env;
    rocksdb_sstfilewriter_t *w; /* the open file, NULL between files */
    uint64_t file_bytes;        /* key + value bytes in the open file */
    char **files;               /* finished and open files, in key order */
    size_t n_files, cap_files;
} rdb_bulk;

/* ---- per-thread perf contexts ------------------------------------------ */

/*
 * rocksdb_perfcontext_create wraps the calling thread's perf context, so one
 * wrapper per thread is kept in thread-local storage and freed at thread
 * exit by a pthread key destructor (the key is created once).
 */
static pthread_key_t perf_key;
static pthread_once_t perf_once = PTHREAD_ONCE_INIT;
static int perf_key_ok;

static void perf_free(void *p)
{
    rocksdb_perfcontext_destroy(p);
}

static void perf_key_init(void)
{
    perf_key_ok = pthread_key_create(&perf_key, perf_free) == 0;
}

static rocksdb_perfcontext_t *thread_perf(void)
{
    pthread_once(&perf_once, perf_key_init);
    if (!perf_key_ok)
        return NULL;
    rocksdb_perfcontext_t *p = pthread_getspecific(perf_key);
    if (!p) {
        p = rocksdb_perfcontext_create();
        if (p && pthread_setspecific(perf_key, p) != 0) {
            rocksdb_perfcontext_destroy(p);
            p = NULL;
        }
    }
    return p;
}

/* ---- store ------------------------------------------------------------- */

static int rdb_fail(const kv_store *s, const char *what, char *err)
{
    int rc = kv_fail_backend(s, what, err);
    free(err);
    return rc;
}

static void rdb_pool_stop(rdb_pool *p)
{
    if (!p->ready)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_join(p->th[i], NULL);
    p->n_threads = 0;
    if (p->ropts)
        rocksdb_readoptions_destroy(p->ropts);
    p->ropts = NULL;
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    p->ready = 0;
}

static void rdb_free(rdb_store *d)
{
    if (!d)
        return;
    rdb_pool_stop(&d->pool); /* before the database its helpers read */
    /* After a failed write-ahead-log append (a full disk), flushing or
     * closing the database closes that log, which trips an assertion in
     * Debian's RocksDB 7.8 (WritableFileWriter::
     * AssertFalseAndGetStatusForPrevError, "sync_without_flush_called_")
     * and aborts the process.  The handle is left open instead: what was
     * written before the failure is in the log, which the next open
     * replays, and the store's LOCK goes with the process. */
    if (d->db && !atomic_load(&d->write_failed))
        rocksdb_close(d->db);
    if (d->wopts)
        rocksdb_writeoptions_destroy(d->wopts);
    if (d->opts)
        rocksdb_options_destroy(d->opts);
    if (d->table)
        rocksdb_block_based_options_destroy(d->table);
    /* the filter policy is owned by the table options once set */
    if (d->cache)
        rocksdb_cache_destroy(d->cache);
    free(d);
}

static void rdb_remove_strays(const char *dir);

static int rdb_open(kv_store *s)
{
    int rc = 0;
    char *err = NULL;
    char path[4200];
    rdb_store *d = calloc(1, sizeof *d);
    if (!d)
        return ann_fail(-ENOMEM, "%s: no memory", s->dir);

    snprintf(path, sizeof path, "%s/CURRENT", s->dir);
    if (access(path, F_OK) != 0) {
        if (s->opt.read_only || !s->opt.create) {
            rc = ann_fail(ANN_ENOTFOUND, "%s: no RocksDB store here (no CURRENT file)", s->dir);
            goto out;
        }
        if (mkdir(s->dir, 0755) != 0 && errno != EEXIST) {
            rc = ann_fail_errno("%s: mkdir", s->dir);
            goto out;
        }
    }

    if (pthread_mutex_init(&d->pool.mu, NULL) != 0) {
        rc = ann_fail(-ENOMEM, "%s: cannot initialise the prefetch queue", s->dir);
        goto out;
    }
    if (pthread_cond_init(&d->pool.cv, NULL) != 0) {
        pthread_mutex_destroy(&d->pool.mu);
        rc = ann_fail(-ENOMEM, "%s: cannot initialise the prefetch queue", s->dir);
        goto out;
    }
    d->pool.ready = 1;
    d->opts = rocksdb_options_create();
    d->table = rocksdb_block_based_options_create();
    d->wopts = rocksdb_writeoptions_create();
    if (!d->opts || !d->table || !d->wopts) {
        rc = ann_fail(-ENOMEM, "%s: no memory for RocksDB options", s->dir);
        goto out;
    }
    rocksdb_options_set_create_if_missing(d->opts, s->opt.create && !s->opt.read_only);
    rocksdb_options_set_compression(d->opts, rocksdb_no_compression);
    rocksdb_options_set_max_open_files(d->opts, -1);
    /* Fatal messages only in RocksDB's info LOG (it was WARN until
     * 2026-12-07).  On a full disk a write's error is also logged there,
     * and that append fails too; the next message, which RocksDB's
     * no-space recovery thread (SstFileManagerImpl::ClearError) writes a
     * moment later, trips the same assertion as a closed log (rdb_free)
     * and aborts the process: a merge that met a full disk died before it
     * could report the error, in two runs of two (test_drec_live
     * test_full_disk).  Every error annlab meets comes back to it through
     * the API, with RocksDB's text. */
    rocksdb_options_set_info_log_level(d->opts, 4 /* FATAL */);
    rocksdb_options_set_keep_log_file_num(d->opts, 2);
    if (s->opt.direct_reads)
        rocksdb_options_set_use_direct_reads(d->opts, 1);
    if (s->opt.profile == KV_PROFILE_SERVER) {
        d->cache = rocksdb_cache_create_lru((size_t)s->opt.block_cache_mb << 20);
        if (!d->cache) {
            rc = ann_fail(-ENOMEM, "%s: no memory for the block cache", s->dir);
            goto out;
        }
        rocksdb_block_based_options_set_block_cache(d->table, d->cache);
    } else {
        rocksdb_block_based_options_set_no_block_cache(d->table, 1);
    }
    d->filter = rocksdb_filterpolicy_create_bloom(10);
    rocksdb_block_based_options_set_filter_policy(d->table, d->filter);
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(d->table, 0);
    rocksdb_options_set_block_based_table_factory(d->opts, d->table);

    if (s->opt.read_only)
        d->db = rocksdb_open_for_read_only(d->opts, s->dir, 0, &err);
    else
        d->db = rocksdb_open(d->opts, s->dir, &err);
    if (err || !d->db) {
        d->db = NULL;
        rc = rdb_fail(s, "open", err);
        goto out;
    }
    if (!s->opt.read_only)
        rdb_remove_strays(s->dir);
    s->impl = d;
    d = NULL;
out:
    rdb_free(d);
    return rc;
}

/*
 * SST files this module writes before ingesting them (txn-*.sst: large
 * write batches, bulk-*.sst: bulk loads) that a process killed between
 * writing and ingesting left in the store directory.  Only a writable
 * open calls this, after RocksDB took the directory's LOCK: no other
 * writer can be between writing such a file and ingesting it.  RocksDB
 * never reads them; best effort (a file that cannot be removed stays).
 */
static void rdb_remove_strays(const char *dir)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    for (struct dirent *de; (de = readdir(dh));) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 4, ".sst") ||
            (strncmp(de->d_name, "txn-", 4) && strncmp(de->d_name, "bulk-", 5)))
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(dh);
}

static int rdb_close(kv_store *s)
{
    rdb_store *d = s->impl;
    int rc = 0;
    if (atomic_load(&d->write_failed)) {
        /* no flush either (it closes the log; see rdb_free) */
        rc = ann_fail(-EIO, "%s: rocksdb: left unflushed after a failed write (the next open "
                      "replays its log)", s->dir);
    } else if (!s->opt.read_only) {
        char *err = NULL;
        rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
        rocksdb_flushoptions_set_wait(fo, 1);
        rocksdb_flush(d->db, fo, &err);
        rocksdb_flushoptions_destroy(fo);
        if (err)
            rc = rdb_fail(s, "flush at close", err);
    }
    rdb_free(d);
    s->impl = NULL;
    return rc;
}

/* ---- reads ------------------------------------------------------------- */

static int rdb_reader_init(kv_reader *r)
{
    rdb_reader *x = calloc(1, sizeof *x);
    if (!x)
        return ann_fail(-ENOMEM, "%s: no memory for a reader", r->s->dir);
    x->ropts = rocksdb_readoptions_create();
    if (!x->ropts) {
        free(x);
        return ann_fail(-ENOMEM, "%s: no memory for a reader", r->s->dir);
    }
    r->impl = x;
    return 0;
}

static void rdb_reader_fini(kv_reader *r)
{
    rdb_reader *x = r->impl;
    if (!x)
        return;
    rocksdb_readoptions_destroy(x->ropts);
    free(x);
    r->impl = NULL;
}

static int rdb_reader_begin(kv_reader *r)
{
    rdb_reader *x = r->impl;
    if (!r->s->opt.read_only) {
        /* a store that can change under the reader: every get and
         * iterator of this begin/end reads one snapshot, as LMDB's do */
        rdb_store *d = r->s->impl;
        x->snap = rocksdb_create_snapshot(d->db);
        rocksdb_readoptions_set_snapshot(x->ropts, x->snap);
    }
    rocksdb_set_perf_level(rocksdb_enable_count);
    x->perf = thread_perf();
    if (x->perf) {
        x->hits0 = rocksdb_perfcontext_metric(x->perf, rocksdb_block_cache_hit_count);
        x->reads0 = rocksdb_perfcontext_metric(x->perf, rocksdb_block_read_count);
        x->bytes0 = rocksdb_perfcontext_metric(x->perf, rocksdb_block_read_byte);
    }
    return 0;
}

static void rdb_reader_end(kv_reader *r)
{
    rdb_reader *x = r->impl;
    if (x->snap) {
        rdb_store *d = r->s->impl;
        rocksdb_readoptions_set_snapshot(x->ropts, NULL);
        rocksdb_release_snapshot(d->db, x->snap);
        x->snap = NULL;
    }
    if (!x->perf)
        return;
    r->st.cache_hits += rocksdb_perfcontext_metric(x->perf, rocksdb_block_cache_hit_count) - x->hits0;
    r->st.cache_misses += rocksdb_perfcontext_metric(x->perf, rocksdb_block_read_count) - x->reads0;
    r->st.block_read_bytes += rocksdb_perfcontext_metric(x->perf, rocksdb_block_read_byte) - x->bytes0;
    x->perf = NULL;
}

static int rdb_get(kv_reader *r, const void *key, size_t key_len, kv_val *val)
{
    rdb_store *d = r->s->impl;
    rdb_reader *x = r->impl;
    char *err = NULL;
    rocksdb_pinnableslice_t *p = rocksdb_get_pinned(d->db, x->ropts, key, key_len, &err);
    if (err) {
        if (p)
            rocksdb_pinnableslice_destroy(p);
        return rdb_fail(r->s, "get", err);
    }
    if (!p)
        return ANN_ENOTFOUND;
    size_t len = 0;
    const char *data = rocksdb_pinnableslice_value(p, &len);
    if (!data) {
        rocksdb_pinnableslice_destroy(p);
        return ANN_ENOTFOUND;
    }
    val->data = data;
    val->len = len;
    val->pin = p;
    return 0;
}

/* ---- prefetch helpers ---------------------------------------------------- */

static void *rdb_prefetch_main(void *arg)
{
    rdb_store *d = arg;
    rdb_pool *p = &d->pool;
    uint8_t key[KV_KEY_MAX_BYTES];
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->count == 0)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        size_t len = p->key_len[p->head];
        memcpy(key, p->keys[p->head], len);
        p->head = (p->head + 1) % KV_PREFETCH_QUEUE;
        p->count--;
        pthread_mutex_unlock(&p->mu);
        char *err = NULL;
        rocksdb_pinnableslice_t *v =
            rocksdb_get_pinned(d->db, p->ropts, (const char *)key, len, &err);
        if (v)
            rocksdb_pinnableslice_destroy(v);
        free(err); /* a hint: a failed read is the caller's get to report */
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Start the helpers (under mu).  Those that cannot be started are done
 * without; with none, hints are dropped. */
static void rdb_pool_start(rdb_pool *p, rdb_store *d)
{
    p->started = 1;
    p->ropts = rocksdb_readoptions_create();
    if (!p->ropts)
        return;
    while (p->n_threads < KV_PREFETCH_THREADS &&
           pthread_create(&p->th[p->n_threads], NULL, rdb_prefetch_main, d) == 0)
        p->n_threads++;
}

static void rdb_prefetch(kv_reader *r, const void *keys, size_t key_len, size_t n)
{
    rdb_store *d = r->s->impl;
    rdb_pool *p = &d->pool;
    pthread_mutex_lock(&p->mu);
    if (!p->started)
        rdb_pool_start(p, d);
    if (p->n_threads > 0 && !p->stop) {
        for (size_t i = 0; i < n && p->count < KV_PREFETCH_QUEUE; i++) {
            size_t tail = (p->head + p->count) % KV_PREFETCH_QUEUE;
            memcpy(p->keys[tail], (const uint8_t *)keys + i * key_len, key_len);
            p->key_len[tail] = (uint8_t)key_len;
            p->count++;
            pthread_cond_signal(&p->cv); /* one helper per key, not a herd per hint */
        }
    }
    pthread_mutex_unlock(&p->mu);
}

void kv_rocksdb_unpin(void *pin)
{
    rocksdb_pinnableslice_destroy(pin);
}

/* ---- iteration --------------------------------------------------------- */

static void rdb_iter_fini(kv_iter *it)
{
    rdb_iter *x = it->impl;
    if (!x)
        return;
    if (x->it)
        rocksdb_iter_destroy(x->it);
    if (x->ropts)
        rocksdb_readoptions_destroy(x->ropts);
    free(x);
    it->impl = NULL;
}

static int rdb_iter_init(kv_iter *it)
{
    rdb_store *d = it->r->s->impl;
    rdb_iter *x = calloc(1, sizeof *x);
    if (!x)
        return ann_fail(-ENOMEM, "%s: no memory for an iterator", it->r->s->dir);
    it->impl = x;
    x->ropts = rocksdb_readoptions_create();
    if (!x->ropts) {
        rdb_iter_fini(it);
        return ann_fail(-ENOMEM, "%s: no memory for an iterator", it->r->s->dir);
    }
    /* Upper bound: the prefix with its last non-0xff byte incremented and
     * the rest dropped; a prefix of all 0xff bytes has none. */
    size_t n = it->prefix_len;
    memcpy(x->upper, it->prefix, n);
    while (n > 0 && x->upper[n - 1] == 0xff)
        n--;
    if (n > 0) {
        x->upper[n - 1]++;
        rocksdb_readoptions_set_iterate_upper_bound(x->ropts, (const char *)x->upper, n);
    }
    if (it->scan) { /* kv_iter_create_scan */
        rocksdb_readoptions_set_readahead_size(x->ropts, KV_SCAN_READAHEAD_BYTES);
        rocksdb_readoptions_set_fill_cache(x->ropts, 0);
    }
    const rdb_reader *rx = it->r->impl;
    if (rx->snap)
        rocksdb_readoptions_set_snapshot(x->ropts, rx->snap);
    x->it = rocksdb_create_iterator(d->db, x->ropts);
    if (!x->it) {
        rdb_iter_fini(it);
        return ann_fail(-ENOMEM, "%s: no memory for an iterator", it->r->s->dir);
    }
    return 0;
}

static int rdb_iter_next(kv_iter *it, kv_val *key, kv_val *val)
{
    rdb_iter *x = it->impl;
    if (!it->started) {
        rocksdb_iter_seek(x->it, (const char *)it->prefix, it->prefix_len);
        it->started = 1;
    } else {
        rocksdb_iter_next(x->it);
    }
    if (!rocksdb_iter_valid(x->it)) {
        char *err = NULL;
        rocksdb_iter_get_error(x->it, &err);
        return err ? rdb_fail(it->r->s, "iterate", err) : 0;
    }
    size_t klen = 0, vlen = 0;
    const char *k = rocksdb_iter_key(x->it, &klen);
    if (klen < it->prefix_len || memcmp(k, it->prefix, it->prefix_len) != 0)
        return 0;
    key->data = k;
    key->len = klen;
    val->data = rocksdb_iter_value(x->it, &vlen);
    val->len = vlen;
    return 1;
}

/* ---- writes ------------------------------------------------------------ */

static int rdb_commit_ingest(kv_store *s, const kv_txn *t);

/* Batches of at least this many bytes of puts are ingested as a file. */
static uint64_t rdb_ingest_above(const kv_store *s)
{
    return s->opt.ingest_above_bytes ? s->opt.ingest_above_bytes : KV_INGEST_DEFAULT_BYTES;
}

static int rdb_commit(kv_store *s, const kv_txn *t)
{
    rdb_store *d = s->impl;
    char *err = NULL;
    if (t->put_bytes >= rdb_ingest_above(s))
        return rdb_commit_ingest(s, t);
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    if (!wb)
        return ann_fail(-ENOMEM, "%s: no memory for a write batch", s->dir);
    for (size_t i = 0; i < t->n_ops; i++) {
        const kv_op *op = &t->ops[i];
        const char *k = (const char *)t->arena + op->key_off;
        if (op->kind == KV_OP_PUT)
            rocksdb_writebatch_put(wb, k, op->key_len, (const char *)t->arena + op->val_off,
                                   op->val_len);
        else
            rocksdb_writebatch_delete(wb, k, op->key_len);
    }
    rocksdb_write(d->db, d->wopts, wb, &err);
    rocksdb_writebatch_destroy(wb);
    if (err && strncmp(err, "IO error", 8) == 0)
        atomic_store(&d->write_failed, 1);
    return err ? rdb_fail(s, "write", err) : 0;
}

/* Every key, every level; rocksdb_compact_range flushes the memtable first
 * and blocks until the compaction is done (its C API reports no error). */
static int rdb_compact(kv_store *s)
{
    rdb_store *d = s->impl;
    rocksdb_compact_range(d->db, NULL, 0, NULL, 0);
    return 0;
}

/* A large batch as one ingested SST file (see the top of the file). */
typedef struct {
    uint64_t head; /* the key's first 8 bytes, big-endian, zero-padded */
    const uint8_t *k;
    size_t len, i;
} rdb_sop;

static uint64_t key_head(const uint8_t *k, size_t len)
{
    uint64_t h = 0;
    for (size_t j = 0; j < 8; j++)
        h = h << 8 | (j < len ? k[j] : 0);
    return h;
}

/* Bytewise key order (RocksDB's default comparator), then batch order.
 * Heads that differ decide it without touching the keys, which lie all
 * over a large batch's arena (a cache miss each): where they differ, a
 * padding zero stands for "the key ended", which the bytewise order puts
 * first, so the heads order the keys as memcmp would. */
static int sop_cmp(const void *a, const void *b)
{
    const rdb_sop *x = a, *y = b;
    if (x->head != y->head)
        return x->head < y->head ? -1 : 1;
    int c = memcmp(x->k, y->k, x->len < y->len ? x->len : y->len);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* One SST file being written for ingestion (a large batch, buffered or
 * streamed). */
typedef struct rdb_sst {
    rocksdb_envoptions_t *env;
    rocksdb_sstfilewriter_t *w;
    char path[4300];
    int opened;
    uint64_t n; /* entries written */
} rdb_sst;

static void rdb_sst_free(rdb_sst *x)
{
    if (!x)
        return;
    if (x->w)
        rocksdb_sstfilewriter_destroy(x->w);
    if (x->env)
        rocksdb_envoptions_destroy(x->env);
    if (x->opened)
        unlink(x->path); /* moved into the store on success; on failure, gone */
    free(x);
}

/* kv_rocksdb_sst.cc: an SST file writer that keeps its pages cached. */
rocksdb_sstfilewriter_t *kv_rocksdb_sst_writer_keep_cache(const rocksdb_envoptions_t *env,
                                                          const rocksdb_options_t *opts);

static int rdb_sst_open(kv_store *s, rdb_sst **out)
{
    rdb_store *d = s->impl;
    char *err = NULL;
    rdb_sst *x = calloc(1, sizeof *x);
    if (x) {
        x->env = rocksdb_envoptions_create();
        x->w = x->env ? kv_rocksdb_sst_writer_keep_cache(x->env, d->opts) : NULL;
    }
    if (!x || !x->w) {
        rdb_sst_free(x);
        return ann_fail(-ENOMEM, "%s: no memory for a write batch", s->dir);
    }
    snprintf(x->path, sizeof x->path, "%s/txn-%ld-%u.sst", s->dir, (long)getpid(),
             atomic_fetch_add(&d->bulk_seq, 1));
    rocksdb_sstfilewriter_open(x->w, x->path, &err);
    if (err) {
        rdb_sst_free(x);
        return rdb_fail(s, "SST file open", err);
    }
    x->opened = 1;
    *out = x;
    return 0;
}

static int rdb_sst_add(kv_store *s, rdb_sst *x, kv_op_kind kind, const void *key,
                       size_t key_len, const void *val, size_t val_len)
{
    char *err = NULL;
    if (kind == KV_OP_PUT)
        rocksdb_sstfilewriter_put(x->w, key, key_len, val, val_len, &err);
    else
        rocksdb_sstfilewriter_delete(x->w, key, key_len, &err);
    if (err)
        return rdb_fail(s, "SST file write", err);
    x->n++;
    return 0;
}

/* Finish x's file and ingest it (nothing when it is empty); frees x. */
static int rdb_sst_ingest(kv_store *s, rdb_sst *x)
{
    rdb_store *d = s->impl;
    char *err = NULL;
    int rc = 0;
    if (x->n == 0)
        goto out;
    rocksdb_sstfilewriter_finish(x->w, &err);
    if (err) {
        rc = rdb_fail(s, "SST file finish", err);
        goto out;
    }
    rocksdb_ingestexternalfileoptions_t *io = rocksdb_ingestexternalfileoptions_create();
    if (!io) {
        rc = ann_fail(-ENOMEM, "%s: no memory for ingestion options", s->dir);
        goto out;
    }
    rocksdb_ingestexternalfileoptions_set_move_files(io, 1);
    const char *files[1] = { x->path };
    rocksdb_ingest_external_file(d->db, files, 1, io, &err);
    rocksdb_ingestexternalfileoptions_destroy(io);
    if (err)
        rc = rdb_fail(s, "SST ingestion", err);
out:
    rdb_sst_free(x);
    return rc;
}

static int rdb_commit_ingest(kv_store *s, const kv_txn *t)
{
    rdb_sop *ops = malloc(t->n_ops * sizeof *ops);
    rdb_sst *x = NULL;
    if (!ops)
        return ann_fail(-ENOMEM, "%s: no memory for a write batch", s->dir);
    for (size_t i = 0; i < t->n_ops; i++)
        ops[i] = (rdb_sop){ key_head(t->arena + t->ops[i].key_off, t->ops[i].key_len),
                            t->arena + t->ops[i].key_off, t->ops[i].key_len, i };
    qsort(ops, t->n_ops, sizeof *ops, sop_cmp);
    int rc = rdb_sst_open(s, &x);
    for (size_t j = 0; !rc && j < t->n_ops; j++) {
        if (j + 1 < t->n_ops && ops[j + 1].len == ops[j].len &&
            !memcmp(ops[j + 1].k, ops[j].k, ops[j].len))
            continue; /* a later operation on the same key wins */
        const kv_op *op = &t->ops[ops[j].i];
        rc = rdb_sst_add(s, x, op->kind, ops[j].k, ops[j].len, t->arena + op->val_off,
                         op->val_len);
    }
    free(ops);
    if (rc) {
        rdb_sst_free(x);
        return rc;
    }
    return rdb_sst_ingest(s, x);
}

/* Streamed sorted batches (kv_txn_begin_sorted): the same file, written
 * as the operations come, when the batch is expected to be large enough
 * to be ingested anyway. */
static int rdb_stream_begin(kv_txn *t, uint64_t expected_bytes)
{
    kv_store *s = t->s;
    if (expected_bytes < rdb_ingest_above(s))
        return 1;
    rdb_sst *x = NULL;
    int rc = rdb_sst_open(s, &x);
    if (!rc)
        t->stream = x;
    return rc;
}

static int rdb_stream_add(kv_txn *t, kv_op_kind kind, const void *key, size_t key_len,
                          const void *val, size_t val_len)
{
    return rdb_sst_add(t->s, t->stream, kind, key, key_len, val, val_len);
}

static int rdb_stream_commit(kv_txn *t)
{
    rdb_sst *x = t->stream;
    t->stream = NULL;
    return rdb_sst_ingest(t->s, x);
}

static void rdb_stream_abort(kv_txn *t)
{
    rdb_sst_free(t->stream);
    t->stream = NULL;
}

/* ---- bulk load --------------------------------------------------------- */

static void rdb_bulk_free(kv_bulk *b, int unlink_files)
{
    rdb_bulk *x = b->impl;
    if (!x)
        return;
    if (x->w)
        rocksdb_sstfilewriter_destroy(x->w);
    for (size_t i = 0; i < x->n_files; i++) {
        if (unlink_files)
            unlink(x->files[i]);
        free(x->files[i]);
    }
    free(x->files);
    if (x->env)
        rocksdb_envoptions_destroy(x->env);
    free(x);
    b->impl = NULL;
}

static int rdb_bulk_begin(kv_bulk *b, uint64_t expected_bytes)
{
    (void)expected_bytes;
    rdb_bulk *x = calloc(1, sizeof *x);
    if (!x)
        return ann_fail(-ENOMEM, "%s: no memory for a bulk load", b->s->dir);
    b->impl = x;
    x->env = rocksdb_envoptions_create();
    if (!x->env) {
        rdb_bulk_free(b, 1);
        return ann_fail(-ENOMEM, "%s: no memory for a bulk load", b->s->dir);
    }
    return 0;
}

/* Finish the open SST file, if any. */
static int rdb_bulk_close_file(kv_bulk *b)
{
    rdb_bulk *x = b->impl;
    if (!x->w)
        return 0;
    char *err = NULL;
    rocksdb_sstfilewriter_finish(x->w, &err);
    rocksdb_sstfilewriter_destroy(x->w);
    x->w = NULL;
    x->file_bytes = 0;
    return err ? rdb_fail(b->s, "SST file finish", err) : 0;
}

static int rdb_bulk_add(kv_bulk *b, const void *key, size_t key_len, const void *val,
                        size_t val_len)
{
    rdb_store *d = b->s->impl;
    rdb_bulk *x = b->impl;
    char *err = NULL;
    int rc = 0;
    if (x->w && x->file_bytes >= KV_ROCKSDB_SST_BYTES) {
        rc = rdb_bulk_close_file(b);
        if (rc)
            return rc;
    }
    if (!x->w) {
        if (x->n_files == x->cap_files) {
            size_t cap = x->cap_files ? 2 * x->cap_files : 8;
            char **f = realloc(x->files, cap * sizeof *f);
            if (!f)
                return ann_fail(-ENOMEM, "%s: no memory for a bulk load", b->s->dir);
            x->files = f;
            x->cap_files = cap;
        }
        char path[4300];
        snprintf(path, sizeof path, "%s/bulk-%ld-%u.sst", b->s->dir, (long)getpid(),
                 atomic_fetch_add(&d->bulk_seq, 1));
        x->files[x->n_files] = strdup(path);
        if (!x->files[x->n_files])
            return ann_fail(-ENOMEM, "%s: no memory for a bulk load", b->s->dir);
        x->n_files++;
        x->w = rocksdb_sstfilewriter_create(x->env, d->opts);
        if (!x->w)
            return ann_fail(-ENOMEM, "%s: no memory for an SST writer", b->s->dir);
        rocksdb_sstfilewriter_open(x->w, path, &err);
        if (err)
            return rdb_fail(b->s, "SST file open", err);
    }
    rocksdb_sstfilewriter_put(x->w, key, key_len, val, val_len, &err);
    if (err)
        return rdb_fail(b->s, "SST file put", err);
    x->file_bytes += key_len + val_len;
    return 0;
}

static int rdb_bulk_finish(kv_bulk *b)
{
    rdb_store *d = b->s->impl;
    rdb_bulk *x = b->impl;
    int rc = rdb_bulk_close_file(b);
    if (rc == 0 && x->n_files > 0) {
        char *err = NULL;
        rocksdb_ingestexternalfileoptions_t *io = rocksdb_ingestexternalfileoptions_create();
        if (!io) {
            rc = ann_fail(-ENOMEM, "%s: no memory for ingestion options", b->s->dir);
        } else {
            rocksdb_ingestexternalfileoptions_set_move_files(io, 1);
            rocksdb_ingest_external_file(d->db, (const char *const *)x->files, x->n_files, io,
                                         &err);
            rocksdb_ingestexternalfileoptions_destroy(io);
            if (err)
                rc = rdb_fail(b->s, "SST ingestion", err);
        }
    }
    /* moved files are gone from their old names; on failure remove them */
    rdb_bulk_free(b, 1);
    return rc;
}

static void rdb_bulk_abort(kv_bulk *b)
{
    rdb_bulk_free(b, 1);
}

const kv_backend_ops kv_rocksdb_ops = {
    .open = rdb_open,
    .close = rdb_close,
    .reader_init = rdb_reader_init,
    .reader_fini = rdb_reader_fini,
    .reader_begin = rdb_reader_begin,
    .reader_end = rdb_reader_end,
    .get = rdb_get,
    .prefetch = rdb_prefetch,
    .iter_init = rdb_iter_init,
    .iter_next = rdb_iter_next,
    .iter_fini = rdb_iter_fini,
    .commit = rdb_commit,
    .stream_begin = rdb_stream_begin,
    .stream_add = rdb_stream_add,
    .stream_commit = rdb_stream_commit,
    .stream_abort = rdb_stream_abort,
    .bulk_begin = rdb_bulk_begin,
    .bulk_add = rdb_bulk_add,
    .bulk_finish = rdb_bulk_finish,
    .bulk_abort = rdb_bulk_abort,
    .compact = rdb_compact,
};
