/*
 * kv_lmdb.c: the record store over LMDB (a copy-on-write B+tree in one
 * memory-mapped file, data.mdb, in the store directory).
 *
 * Reads are zero-copy: mdb_get returns a pointer into the map, valid for
 * the life of the read transaction.  Each kv_reader owns one read
 * transaction, created once and then reset (kv_reader_end) and renewed
 * (kv_reader_begin) per query, LMDB's cheap way to take a fresh snapshot
 * without allocating.  The environment uses MDB_NOTLS so a transaction
 * belongs to its reader, not to a thread (a search context may move between
 * threads), and MDB_NORDAHEAD because index reads are random: readahead
 * would only evict useful pages when the store is larger than memory.
 * LMDB has no cache of its own; both profiles behave the same.
 *
 * The map size is sized from the data.  Write batches that do not fit
 * grow the map (doubling) and are retried whole, which LMDB allows only
 * while no read transaction of this process is active: growth with a
 * reader inside begin/end is refused with ANN_ESTATE.  A bulk load sizes
 * the map from its expected byte count up front, appends (MDB_APPEND: keys
 * in order fill pages completely, no splits) in transactions of
 * KV_LMDB_BULK_TXN_BYTES (LMDB caps the dirty pages of one transaction),
 * without syncing each, and syncs once at the end.  Because it commits in
 * pieces, an aborted or failed bulk load deletes the records it added.
 */
#include "engines/core/kv_impl.h"

#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define KV_LMDB_MIN_MAP_BYTES (64ull << 20)
#define KV_LMDB_WRITE_HEADROOM_BYTES (1ull << 30) /* map beyond the data, writable opens */
#define KV_LMDB_BULK_TXN_BYTES (64ull << 20)
#define KV_LMDB_MAX_READERS 1024

typedef struct lmdb_store {
    MDB_env *env;
    MDB_dbi dbi;
    size_t map_bytes;
    uint64_t file_known; /* data.mdb is at least this long (lmdb_fill_tail) */
} lmdb_store;

typedef struct lmdb_reader {
    MDB_txn *txn; /* reset between queries */
} lmdb_reader;

typedef struct lmdb_bulk {
    MDB_txn *txn;             /* the open write transaction, NULL between pieces */
    uint64_t txn_bytes;       /* bytes added in it */
    uint8_t first_key[KV_KEY_MAX_BYTES];
    size_t first_len;         /* 0 until the first record */
    int committed_any;        /* some piece is committed: abort must delete */
    int append;               /* MDB_APPEND usable: the load starts above the store's last key */
} lmdb_bulk;

static int lmdb_fail(const kv_store *s, const char *what, int mrc)
{
    if (mrc == ENOMEM)
        return ann_fail(-ENOMEM, "%s: lmdb %s: out of memory", s->dir, what);
    if (mrc == ENOSPC)
        return ann_fail(-ENOSPC, "%s: lmdb %s: no space left on device", s->dir, what);
    return kv_fail_backend(s, what, mdb_strerror(mrc));
}

/* A write of about `bytes` that LMDB failed with EIO: LMDB reports a short
 * write (what pwrite does when the disk fills mid-call) as EIO, which would
 * read as a failing device.  When the file system has less than the write
 * plus 1 MiB free, it is reported as the full disk it most likely is. */
static int lmdb_fail_write(const kv_store *s, const char *what, int mrc, uint64_t bytes)
{
    struct statvfs fs;
    if (mrc == EIO && statvfs(s->dir, &fs) == 0 &&
        (uint64_t)fs.f_bavail * fs.f_frsize < bytes + (1u << 20))
        return ann_fail(-ENOSPC,
                        "%s: lmdb %s: no space left on device (LMDB's write came up short with "
                        "%llu bytes free; the batch is not committed)",
                        s->dir, what, (unsigned long long)fs.f_bavail * fs.f_frsize);
    return lmdb_fail(s, what, mrc);
}

static uint64_t file_bytes(const char *dir)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static int lmdb_fill_tail(kv_store *s, lmdb_store *d);

/* Set the map to at least want bytes (no active transaction in this process). */
static int lmdb_grow(kv_store *s, uint64_t want)
{
    lmdb_store *d = s->impl;
    if (want <= d->map_bytes)
        return 0;
    if (atomic_load(&s->readers_begun) > 0)
        return ann_fail(ANN_ESTATE, "%s: lmdb map must grow to %llu bytes while readers are active",
                        s->dir, (unsigned long long)want);
    uint64_t page = 1u << 20;
    want = (want + page - 1) / page * page;
    int mrc = mdb_env_set_mapsize(d->env, (size_t)want);
    if (mrc)
        return lmdb_fail(s, "set map size", mrc);
    d->map_bytes = (size_t)want;
    return 0;
}

static int lmdb_open(kv_store *s)
{
    int rc = 0, mrc = 0;
    char path[4200];
    MDB_txn *txn = NULL;
    lmdb_store *d = calloc(1, sizeof *d);
    if (!d)
        return ann_fail(-ENOMEM, "%s: no memory", s->dir);

    snprintf(path, sizeof path, "%s/data.mdb", s->dir);
    if (access(path, F_OK) != 0) {
        if (s->opt.read_only || !s->opt.create) {
            rc = ann_fail(ANN_ENOTFOUND, "%s: no LMDB store here (no data.mdb)", s->dir);
            goto out;
        }
        if (mkdir(s->dir, 0755) != 0 && errno != EEXIST) {
            rc = ann_fail_errno("%s: mkdir", s->dir);
            goto out;
        }
    }
    mrc = mdb_env_create(&d->env);
    if (mrc) {
        d->env = NULL;
        rc = lmdb_fail(s, "env create", mrc);
        goto out;
    }
    mdb_env_set_maxreaders(d->env, KV_LMDB_MAX_READERS);
    if (!s->opt.read_only) {
        /* Room for what is there plus as much again and 1 GiB (address
         * space only: the file grows as pages are used), grown on demand;
         * growing needs no reader inside begin/end, which a store updated
         * while it is searched rarely has, hence the headroom. */
        uint64_t have = file_bytes(s->dir);
        uint64_t want = 2 * have + KV_LMDB_WRITE_HEADROOM_BYTES;
        mdb_env_set_mapsize(d->env, (size_t)want);
    }
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD | (s->opt.read_only ? MDB_RDONLY : 0) |
                     (!s->opt.read_only && s->opt.relaxed_sync ? MDB_NOSYNC : 0);
    mrc = mdb_env_open(d->env, s->dir, flags, 0644);
    if (mrc) {
        rc = lmdb_fail(s, "open", mrc);
        goto out;
    }
    MDB_envinfo info;
    MDB_stat est;
    mdb_env_info(d->env, &info);
    mdb_env_stat(d->env, &est);
    d->map_bytes = info.me_mapsize;
    /* A data file shorter than its last page would fault (SIGBUS) on
     * read through the map: check it here, as corruption. */
    uint64_t need = ((uint64_t)info.me_last_pgno + 1) * est.ms_psize;
    uint64_t have = file_bytes(s->dir);
    if (have < need) {
        rc = ann_fail(ANN_ECORRUPT, "%s/data.mdb: %llu bytes, its pages need %llu (truncated)",
                      s->dir, (unsigned long long)have, (unsigned long long)need);
        goto out;
    }
    mrc = mdb_txn_begin(d->env, NULL, s->opt.read_only ? MDB_RDONLY : 0, &txn);
    if (!mrc)
        mrc = mdb_dbi_open(txn, NULL, 0, &d->dbi);
    if (!mrc) {
        mrc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (mrc) {
        rc = lmdb_fail(s, "open database", mrc);
        goto out;
    }
    s->impl = d;
    d = NULL;
out:
    if (txn)
        mdb_txn_abort(txn);
    if (d) {
        if (d->env)
            mdb_env_close(d->env);
        free(d);
    }
    return rc;
}

static int lmdb_close(kv_store *s)
{
    lmdb_store *d = s->impl;
    int rc = 0;
    if (!s->opt.read_only) {
        int mrc = mdb_env_sync(d->env, 1);
        if (mrc)
            rc = lmdb_fail(s, "sync at close", mrc);
        if (!rc)
            rc = lmdb_fill_tail(s, d);
    }
    mdb_env_close(d->env);
    free(d);
    s->impl = NULL;
    return rc;
}

/* ---- reads ------------------------------------------------------------- */

static int lmdb_reader_init(kv_reader *r)
{
    lmdb_store *d = r->s->impl;
    lmdb_reader *x = calloc(1, sizeof *x);
    if (!x)
        return ann_fail(-ENOMEM, "%s: no memory for a reader", r->s->dir);
    int mrc = mdb_txn_begin(d->env, NULL, MDB_RDONLY, &x->txn);
    if (mrc) {
        free(x);
        return lmdb_fail(r->s, "read transaction", mrc);
    }
    mdb_txn_reset(x->txn);
    r->impl = x;
    return 0;
}

static void lmdb_reader_fini(kv_reader *r)
{
    lmdb_reader *x = r->impl;
    if (!x)
        return;
    mdb_txn_abort(x->txn);
    free(x);
    r->impl = NULL;
}

static int lmdb_reader_begin(kv_reader *r)
{
    lmdb_reader *x = r->impl;
    int mrc = mdb_txn_renew(x->txn);
    return mrc ? lmdb_fail(r->s, "renew read transaction", mrc) : 0;
}

static void lmdb_reader_end(kv_reader *r)
{
    lmdb_reader *x = r->impl;
    mdb_txn_reset(x->txn);
}

static int lmdb_get(kv_reader *r, const void *key, size_t key_len, kv_val *val)
{
    lmdb_store *d = r->s->impl;
    lmdb_reader *x = r->impl;
    MDB_val k = { .mv_size = key_len, .mv_data = (void *)key }, v = { 0 };
    int mrc = mdb_get(x->txn, d->dbi, &k, &v);
    if (mrc == MDB_NOTFOUND)
        return ANN_ENOTFOUND;
    if (mrc)
        return lmdb_fail(r->s, "get", mrc);
    val->data = v.mv_data;
    val->len = v.mv_size;
    val->pin = NULL;
    return 0;
}

/*
 * kv_prefetch: look each key up (its B-tree pages are touched; a value of
 * more than about half a page lives in overflow pages that mdb_get only
 * points at) and ask the kernel to read the value's pages in
 * (MADV_WILLNEED queues the reads and returns; MDB_NORDAHEAD's
 * MADV_RANDOM does not stop it).  Missing keys and failures are dropped.
 */
static void lmdb_prefetch(kv_reader *r, const void *keys, size_t key_len, size_t n)
{
    lmdb_store *d = r->s->impl;
    lmdb_reader *x = r->impl;
    long page = sysconf(_SC_PAGESIZE); /* glibc: a cached value, no system call */
    if (page <= 0)
        return;
    for (size_t i = 0; i < n; i++) {
        MDB_val k = { .mv_size = key_len, .mv_data = (uint8_t *)keys + i * key_len }, v = { 0 };
        if (mdb_get(x->txn, d->dbi, &k, &v) != 0 || v.mv_size == 0)
            continue;
        uintptr_t a = (uintptr_t)v.mv_data & ~(uintptr_t)(page - 1);
        uintptr_t b = (uintptr_t)v.mv_data + v.mv_size;
        (void)madvise((void *)a, b - a, MADV_WILLNEED);
    }
}

/* ---- iteration --------------------------------------------------------- */

static int lmdb_iter_init(kv_iter *it)
{
    lmdb_store *d = it->r->s->impl;
    lmdb_reader *x = it->r->impl;
    MDB_cursor *c = NULL;
    int mrc = mdb_cursor_open(x->txn, d->dbi, &c);
    if (mrc)
        return lmdb_fail(it->r->s, "cursor open", mrc);
    it->impl = c;
    return 0;
}

static int lmdb_iter_next(kv_iter *it, kv_val *key, kv_val *val)
{
    MDB_cursor *c = it->impl;
    MDB_val k = { 0 }, v = { 0 };
    int mrc;
    if (!it->started) {
        it->started = 1;
        if (it->prefix_len) {
            k.mv_size = it->prefix_len;
            k.mv_data = it->prefix;
            mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        } else {
            mrc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
        }
    } else {
        mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    if (mrc == MDB_NOTFOUND)
        return 0;
    if (mrc)
        return lmdb_fail(it->r->s, "iterate", mrc);
    if (k.mv_size < it->prefix_len || memcmp(k.mv_data, it->prefix, it->prefix_len) != 0)
        return 0;
    key->data = k.mv_data;
    key->len = k.mv_size;
    val->data = v.mv_data;
    val->len = v.mv_size;
    return 1;
}

static void lmdb_iter_fini(kv_iter *it)
{
    if (it->impl)
        mdb_cursor_close(it->impl);
    it->impl = NULL;
}

/* ---- writes ------------------------------------------------------------ */

/*
 * LMDB does not write a page that a transaction allocated and freed again
 * (a "loose" page), yet counts it in the last page number, so a store it
 * committed can end a page or more short of its last page (seen after
 * live-build merges: 3,379,200 bytes, pages needing 3,383,296).  Those
 * pages are free, but the open-time check cannot tell them from a cut
 * file, so every commit (best effort) and a writable close extend the
 * file to its last page (zeros; an fstat when the file has grown), and a
 * store reopened after a kill -9 is not mistaken for a truncated one.
 */
static int lmdb_fill_tail(kv_store *s, lmdb_store *d)
{
    MDB_envinfo info;
    MDB_stat st;
    mdb_env_info(d->env, &info);
    mdb_env_stat(d->env, &st);
    uint64_t need = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    if (need <= d->file_known)
        return 0;
    int fd = -1;
    struct stat fs;
    if (mdb_env_get_fd(d->env, &fd) != 0 || fstat(fd, &fs) != 0)
        return ann_fail_errno("%s/data.mdb: fstat", s->dir);
    if ((uint64_t)fs.st_size < need) {
        /* posix_fallocate only ever extends: a writer in another process
         * that has grown the file meanwhile loses nothing */
        int err = posix_fallocate(fd, 0, (off_t)need);
        if (err)
            return ann_fail(-err, "%s/data.mdb: extend to its last page: %s", s->dir,
                            strerror(err));
    }
    d->file_known = (uint64_t)fs.st_size > need ? (uint64_t)fs.st_size : need;
    return 0;
}

static int lmdb_apply(kv_store *s, const kv_txn *t)
{
    lmdb_store *d = s->impl;
    MDB_txn *txn = NULL;
    int mrc = mdb_txn_begin(d->env, NULL, 0, &txn);
    for (size_t i = 0; !mrc && i < t->n_ops; i++) {
        const kv_op *op = &t->ops[i];
        MDB_val k = { .mv_size = op->key_len, .mv_data = t->arena + op->key_off };
        if (op->kind == KV_OP_PUT) {
            MDB_val v = { .mv_size = op->val_len, .mv_data = t->arena + op->val_off };
            mrc = mdb_put(txn, d->dbi, &k, &v, 0);
        } else {
            mrc = mdb_del(txn, d->dbi, &k, NULL);
            if (mrc == MDB_NOTFOUND)
                mrc = 0;
        }
    }
    if (!mrc) {
        mrc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (txn)
        mdb_txn_abort(txn);
    return mrc;
}

static int lmdb_commit(kv_store *s, const kv_txn *t)
{
    lmdb_store *d = s->impl;
    for (;;) {
        int mrc = lmdb_apply(s, t);
        if (mrc && mrc != MDB_MAP_FULL)
            return lmdb_fail_write(s, "commit", mrc, t->arena_len);
        if (!mrc) {
            /* the batch is committed whatever happens here, so a failure
             * to fill the tail (a full disk) is not the commit's: a later
             * commit tries again, and the close reports it */
            if (lmdb_fill_tail(s, d))
                ann_err_clear();
            return 0;
        }
        int rc = lmdb_grow(s, 2 * (uint64_t)d->map_bytes + 2 * t->arena_len);
        if (rc)
            return rc;
    }
}

/* ---- bulk load --------------------------------------------------------- */

static int lmdb_bulk_begin(kv_bulk *b, uint64_t expected_bytes)
{
    kv_store *s = b->s;
    lmdb_store *d = s->impl;
    lmdb_bulk *x = calloc(1, sizeof *x);
    if (!x)
        return ann_fail(-ENOMEM, "%s: no memory for a bulk load", s->dir);
    /* Overflow pages round large values up to whole pages, and branch
     * pages add a little: 1.25 x the data plus what is already there. */
    uint64_t want = file_bytes(s->dir) + expected_bytes + expected_bytes / 4 +
                    KV_LMDB_MIN_MAP_BYTES;
    int rc = lmdb_grow(s, want);
    if (rc) {
        free(x);
        return rc;
    }
    int mrc = mdb_env_set_flags(d->env, MDB_NOSYNC, 1);
    if (mrc) {
        free(x);
        return lmdb_fail(s, "set MDB_NOSYNC", mrc);
    }
    b->impl = x;
    return 0;
}

static int lmdb_bulk_commit_piece(kv_bulk *b)
{
    lmdb_bulk *x = b->impl;
    if (!x->txn)
        return 0;
    int mrc = mdb_txn_commit(x->txn);
    uint64_t bytes = x->txn_bytes;
    x->txn = NULL;
    x->txn_bytes = 0;
    if (mrc)
        return lmdb_fail_write(b->s, "bulk commit", mrc, bytes);
    x->committed_any = 1;
    return 0;
}

/* Pages in use, from the last page number of the environment. */
static uint64_t lmdb_used_bytes(const lmdb_store *d)
{
    MDB_envinfo info;
    MDB_stat st;
    mdb_env_info(d->env, &info);
    mdb_env_stat(d->env, &st);
    return ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
}

static int lmdb_bulk_add(kv_bulk *b, const void *key, size_t key_len, const void *val,
                         size_t val_len)
{
    kv_store *s = b->s;
    lmdb_store *d = s->impl;
    lmdb_bulk *x = b->impl;
    int rc = 0, mrc = 0;
    if (x->txn && x->txn_bytes >= KV_LMDB_BULK_TXN_BYTES) {
        rc = lmdb_bulk_commit_piece(b);
        if (rc)
            return rc;
    }
    if (!x->txn) {
        /* A piece never hits a full map: before it starts, make room for
         * twice its bytes beyond the pages in use (a failed put inside a
         * transaction would lose the whole piece). */
        rc = lmdb_grow(s, lmdb_used_bytes(d) + 2 * (KV_LMDB_BULK_TXN_BYTES + key_len + val_len));
        if (rc)
            return rc;
        mrc = mdb_txn_begin(d->env, NULL, 0, &x->txn);
        if (mrc) {
            x->txn = NULL;
            return lmdb_fail(s, "bulk transaction", mrc);
        }
    }
    MDB_val k = { .mv_size = key_len, .mv_data = (void *)key };
    MDB_val v = { .mv_size = val_len, .mv_data = (void *)val };
    if (x->first_len == 0) {
        /* Appending needs the load to start above every key in the store
         * (a table loaded after a higher one falls back to ordinary puts,
         * still in key order). */
        MDB_cursor *c = NULL;
        MDB_val lk = { 0 }, lv = { 0 };
        mrc = mdb_cursor_open(x->txn, d->dbi, &c);
        if (mrc)
            return lmdb_fail(s, "cursor open", mrc);
        mrc = mdb_cursor_get(c, &lk, &lv, MDB_LAST);
        mdb_cursor_close(c);
        if (mrc && mrc != MDB_NOTFOUND)
            return lmdb_fail(s, "last key", mrc);
        x->append = mrc == MDB_NOTFOUND;
        if (!x->append) {
            size_t m = lk.mv_size < key_len ? lk.mv_size : key_len;
            int cmp = memcmp(lk.mv_data, key, m);
            x->append = cmp < 0 || (cmp == 0 && lk.mv_size < key_len);
        }
    }
    mrc = mdb_put(x->txn, d->dbi, &k, &v, x->append ? MDB_APPEND : MDB_NOOVERWRITE);
    if (mrc == MDB_KEYEXIST)
        return ann_fail(ANN_EPARAM, "%s: bulk load: key already in the store", s->dir);
    if (mrc)
        return lmdb_fail(s, "bulk put", mrc);
    if (x->first_len == 0) {
        memcpy(x->first_key, key, key_len);
        x->first_len = key_len;
    }
    x->txn_bytes += key_len + val_len;
    return 0;
}

/* Delete every record from the load's first key to its last (both included). */
static void lmdb_bulk_undo(kv_bulk *b)
{
    lmdb_bulk *x = b->impl;
    lmdb_store *d = b->s->impl;
    if (!x->committed_any || x->first_len == 0)
        return;
    for (int more = 1; more;) {
        MDB_txn *txn = NULL;
        MDB_cursor *c = NULL;
        more = 0;
        if (mdb_txn_begin(d->env, NULL, 0, &txn))
            return;
        if (mdb_cursor_open(txn, d->dbi, &c)) {
            mdb_txn_abort(txn);
            return;
        }
        MDB_val k = { .mv_size = x->first_len, .mv_data = x->first_key }, v;
        int mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        uint64_t n = 0;
        while (!mrc) {
            size_t m = k.mv_size < b->last_len ? k.mv_size : b->last_len;
            int cmp = memcmp(k.mv_data, b->last_key, m);
            if (cmp > 0 || (cmp == 0 && k.mv_size > b->last_len))
                break;
            if (mdb_cursor_del(c, 0))
                break;
            if (++n == 100000) {
                more = 1;
                break;
            }
            mrc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT);
            if (mrc == MDB_NOTFOUND || mrc == EINVAL)
                mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        }
        mdb_cursor_close(c);
        if (mdb_txn_commit(txn))
            return;
    }
}

static void lmdb_bulk_free(kv_bulk *b)
{
    lmdb_store *d = b->s->impl;
    lmdb_bulk *x = b->impl;
    if (x->txn)
        mdb_txn_abort(x->txn);
    mdb_env_set_flags(d->env, MDB_NOSYNC, b->s->opt.relaxed_sync);
    free(x);
    b->impl = NULL;
}

static int lmdb_bulk_finish(kv_bulk *b)
{
    lmdb_store *d = b->s->impl;
    int rc = lmdb_bulk_commit_piece(b);
    if (rc == 0) {
        int mrc = mdb_env_sync(d->env, 1);
        if (mrc)
            rc = lmdb_fail(b->s, "sync after bulk load", mrc);
    }
    if (rc)
        lmdb_bulk_undo(b);
    lmdb_bulk_free(b);
    return rc;
}

static void lmdb_bulk_abort(kv_bulk *b)
{
    lmdb_bulk *x = b->impl;
    if (x->txn) {
        mdb_txn_abort(x->txn);
        x->txn = NULL;
    }
    lmdb_bulk_undo(b);
    lmdb_bulk_free(b);
}

const kv_backend_ops kv_lmdb_ops = {
    .open = lmdb_open,
    .close = lmdb_close,
    .reader_init = lmdb_reader_init,
    .reader_fini = lmdb_reader_fini,
    .reader_begin = lmdb_reader_begin,
    .reader_end = lmdb_reader_end,
    .get = lmdb_get,
    .prefetch = lmdb_prefetch,
    .iter_init = lmdb_iter_init,
    .iter_next = lmdb_iter_next,
    .iter_fini = lmdb_iter_fini,
    .commit = lmdb_commit,
    .bulk_begin = lmdb_bulk_begin,
    .bulk_add = lmdb_bulk_add,
    .bulk_finish = lmdb_bulk_finish,
    .bulk_abort = lmdb_bulk_abort,
};
