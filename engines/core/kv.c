/*
 * kv.c: the backend-independent half of the record store (kv.h): backend
 * and profile names, the big-endian key helpers, argument and state checks,
 * per-reader and per-store counters, and write batches buffered in memory
 * so that both backends apply them all-or-nothing at commit (LMDB may have
 * to grow its map and retry a batch, which needs the batch kept).  The
 * backends, kv_rocksdb.c and kv_lmdb.c, implement kv_backend_ops.
 *
 * Value checksums (store format 2): every value is stored with 4 bytes
 * appended, ann_checksum(value) ^ ann_crc32c(key) (crc32c.h), written by
 * kv_txn_put and kv_bulk_add and checked by kv_get and kv_iter_next before
 * the value is handed out, so a flipped byte in a record, or a record
 * under another's key, is ANN_ECORRUPT naming the store and the key,
 * never silently different data.  The format is declared by KV_MARKER_FILE
 * in the store's directory, written when a store is created; a store
 * without it (written by an earlier annlab) is refused (ANN_EVERSION).
 */
#include "engines/core/kv_impl.h"

#include "engines/core/binio.h"
#include "engines/core/crc32c.h"
#include "engines/core/fileio.h"
#include "engines/core/populate.h"
#include "engines/core/status.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const kv_backend_choices[] = { "rocksdb", "lmdb", NULL };
const char *const kv_profile_choices[] = { "server", "embedded", NULL };

const char *kv_backend_name(kv_backend b)
{
    return b == KV_BACKEND_LMDB ? "lmdb" : b == KV_BACKEND_ROCKSDB ? "rocksdb" : NULL;
}

const char *kv_profile_name(kv_profile p)
{
    return p == KV_PROFILE_EMBEDDED ? "embedded" : p == KV_PROFILE_SERVER ? "server" : NULL;
}

int kv_backend_parse(const char *name, kv_backend *out)
{
    if (name && !strcmp(name, "rocksdb"))
        *out = KV_BACKEND_ROCKSDB;
    else if (name && !strcmp(name, "lmdb"))
        *out = KV_BACKEND_LMDB;
    else
        return ann_fail(ANN_EPARAM, "kv: unknown backend \"%s\" (rocksdb|lmdb)",
                        name ? name : "(null)");
    return 0;
}

int kv_profile_parse(const char *name, kv_profile *out)
{
    if (name && !strcmp(name, "server"))
        *out = KV_PROFILE_SERVER;
    else if (name && !strcmp(name, "embedded"))
        *out = KV_PROFILE_EMBEDDED;
    else
        return ann_fail(ANN_EPARAM, "kv: unknown profile \"%s\" (server|embedded)",
                        name ? name : "(null)");
    return 0;
}

/* ---- keys --------------------------------------------------------------- */

size_t kv_key_u32(uint8_t out[KV_KEY_U32_BYTES], uint8_t table, uint32_t id)
{
    out[0] = table;
    for (int i = 0; i < 4; i++)
        out[1 + i] = (uint8_t)(id >> (24 - 8 * i));
    return KV_KEY_U32_BYTES;
}

size_t kv_key_u64(uint8_t out[KV_KEY_U64_BYTES], uint8_t table, uint64_t id)
{
    out[0] = table;
    for (int i = 0; i < 8; i++)
        out[1 + i] = (uint8_t)(id >> (56 - 8 * i));
    return KV_KEY_U64_BYTES;
}

int kv_key_parse_u32(const void *key, size_t len, uint8_t *table, uint32_t *id)
{
    const uint8_t *k = key;
    if (len != KV_KEY_U32_BYTES)
        return ANN_ECORRUPT;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | k[1 + i];
    if (table)
        *table = k[0];
    if (id)
        *id = v;
    return 0;
}

int kv_key_parse_u64(const void *key, size_t len, uint8_t *table, uint64_t *id)
{
    const uint8_t *k = key;
    if (len != KV_KEY_U64_BYTES)
        return ANN_ECORRUPT;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | k[1 + i];
    if (table)
        *table = k[0];
    if (id)
        *id = v;
    return 0;
}

static int check_key(const kv_store *s, size_t key_len)
{
    if (key_len == 0 || key_len > KV_KEY_MAX_BYTES)
        return ann_fail(ANN_EPARAM, "%s: key length %zu (1..%d)", s->dir, key_len,
                        KV_KEY_MAX_BYTES);
    return 0;
}

int kv_fail_backend(const kv_store *s, const char *what, const char *msg)
{
    int code = msg && strstr(msg, "No space left on device") ? -ENOSPC : -EIO;
    return ann_fail(code, "%s: %s %s: %s", s->dir, kv_backend_name(s->opt.backend), what,
                    msg ? msg : "failed");
}

/* ---- value checksums ---------------------------------------------------- */

static uint32_t value_sum(const void *key, size_t key_len, const void *val, size_t val_len)
{
    return ann_checksum(val, val_len) ^ ann_crc32c(0, key, key_len);
}

/* key as lower-case hex (at most KV_KEY_MAX_BYTES of it), for messages */
static void key_hex(const void *key, size_t key_len, char hex[2 * KV_KEY_MAX_BYTES + 1])
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *k = key;
    size_t n = key_len < KV_KEY_MAX_BYTES ? key_len : KV_KEY_MAX_BYTES;
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[k[i] >> 4];
        hex[2 * i + 1] = digits[k[i] & 15];
    }
    hex[2 * n] = '\0';
}

/* Check the checksum stored after a value read from the store and take it
 * off val->len.  ANN_ECORRUPT naming the store and the key otherwise (the
 * key is formatted only then: this runs on every read). */
static int value_check(const kv_store *s, const void *key, size_t key_len, kv_val *val)
{
    char hex[2 * KV_KEY_MAX_BYTES + 1];
    if (val->len < KV_SUM_BYTES) {
        key_hex(key, key_len, hex);
        return ann_fail(ANN_ECORRUPT, "%s: record %s: %zu bytes, shorter than its checksum",
                        s->dir, hex, val->len);
    }
    size_t len = val->len - KV_SUM_BYTES;
    uint32_t stored = ann_get_u32((const uint8_t *)val->data + len);
    uint32_t got = value_sum(key, key_len, val->data, len);
    if (stored != got) {
        key_hex(key, key_len, hex);
        return ann_fail(ANN_ECORRUPT, "%s: record %s: value checksum 0x%08x, stored 0x%08x (the "
                                      "record is corrupt)",
                        s->dir, hex, got, stored);
    }
    val->len = len;
    return 0;
}

/* The store's format file: missing on a store an earlier annlab wrote. */
static int marker_check(const char *dir, const kv_options *opt, int *write_it)
{
    char path[4200], probe[4200];
    *write_it = 0;
    snprintf(path, sizeof path, "%s/" KV_MARKER_FILE, dir);
    if (access(path, F_OK) != 0) {
        /* a new store is one whose backend files are not there yet */
        snprintf(probe, sizeof probe, "%s/%s", dir,
                 opt->backend == KV_BACKEND_LMDB ? "data.mdb" : "CURRENT");
        if (opt->create && !opt->read_only && access(probe, F_OK) != 0) {
            *write_it = 1;
            return 0;
        }
        if (access(probe, F_OK) != 0)
            return ann_fail(ANN_ENOTFOUND, "%s: no %s store here", dir,
                            kv_backend_name(opt->backend));
        return ann_fail(ANN_EVERSION, "%s: a store of an earlier annlab (no %s: values without "
                                      "checksums); rebuild the index",
                        dir, KV_MARKER_FILE);
    }
    int rc = ann_check_regular(path);
    if (rc)
        return rc;
    json_error_t jerr;
    json_t *m = json_load_file(path, 0, &jerr);
    if (!m)
        return ann_fail(ANN_ECORRUPT, "%s: unreadable (%s)", path, jerr.text);
    const char *fmt = json_string_value(json_object_get(m, "format"));
    json_int_t ver = json_integer_value(json_object_get(m, "version"));
    if (!fmt || strcmp(fmt, "annlab-kv") != 0)
        rc = ann_fail(ANN_ECORRUPT, "%s: \"format\" is not \"annlab-kv\"", path);
    else if (ver != KV_FORMAT_VERSION)
        rc = ann_fail(ANN_EVERSION, "%s: store format %lld, this annlab reads %d; rebuild the "
                                    "index",
                      path, (long long)ver, KV_FORMAT_VERSION);
    json_decref(m);
    return rc;
}

static int marker_write(const char *dir)
{
    char path[4200], tmp[4300];
    FILE *fp = NULL;
    snprintf(path, sizeof path, "%s/" KV_MARKER_FILE, dir);
    int rc = ann_tmpfile_create(path, tmp, sizeof tmp, &fp);
    if (rc)
        return rc;
    if (fprintf(fp, "{\"format\": \"annlab-kv\", \"version\": %d, \"value_checksum\": "
                    "\"4 bytes after each value: ann_checksum(value) ^ crc32c(key)\"}\n",
                KV_FORMAT_VERSION) < 0) {
        rc = ann_fail_errno("%s: write", tmp);
        ann_tmpfile_discard(fp, tmp);
        return rc;
    }
    return ann_tmpfile_commit(fp, tmp, path);
}

/* ---- store ------------------------------------------------------------- */

int kv_open(const char *dir, const kv_options *opt, kv_store **out)
{
    int rc = 0;
    kv_store *s = NULL;
    if (!dir || !*dir || !opt || !out)
        return ann_fail(ANN_EPARAM, "kv_open: missing argument");
    if (!kv_backend_name(opt->backend))
        return ann_fail(ANN_EUNSUPPORTED, "%s: kv backend %d unknown", dir, (int)opt->backend);
    if (!kv_profile_name(opt->profile))
        return ann_fail(ANN_EPARAM, "%s: kv profile %d unknown", dir, (int)opt->profile);
    if (strlen(dir) >= sizeof s->dir - 32)
        return ann_fail(ANN_EPARAM, "%s: path too long", dir);
    if (opt->direct_reads && opt->backend == KV_BACKEND_LMDB)
        return ann_fail(ANN_EPARAM, "%s: direct reads: RocksDB only (LMDB maps its file)", dir);
    s = calloc(1, sizeof *s);
    if (!s)
        return ann_fail(-ENOMEM, "%s: no memory for the store", dir);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->opt = *opt;
    if (s->opt.block_cache_mb == 0)
        s->opt.block_cache_mb = KV_DEFAULT_BLOCK_CACHE_MB;
    s->ops = opt->backend == KV_BACKEND_LMDB ? &kv_lmdb_ops : &kv_rocksdb_ops;
    int write_marker = 0;
    if (access(dir, F_OK) == 0 && (rc = marker_check(dir, opt, &write_marker)))
        goto out;
    if (access(dir, F_OK) != 0)
        write_marker = opt->create && !opt->read_only;
    rc = s->ops->open(s);
    if (rc)
        goto out;
    if (write_marker && (rc = marker_write(dir))) {
        s->ops->close(s);
        goto out;
    }
    *out = s;
    s = NULL;
out:
    free(s);
    return rc;
}

int kv_close(kv_store *s)
{
    if (!s)
        return 0;
    int rc = s->ops->close(s);
    free(s);
    return rc;
}

kv_backend kv_store_backend(const kv_store *s)
{
    return s->opt.backend;
}

kv_profile kv_store_profile(const kv_store *s)
{
    return s->opt.profile;
}

const char *kv_store_dir(const kv_store *s)
{
    return s->dir;
}

#define LOAD(f) atomic_load_explicit(&s->tot.f, memory_order_relaxed)
#define ADD(f, v) atomic_fetch_add_explicit(&s->tot.f, (v), memory_order_relaxed)

void kv_store_stats(kv_store *s, kv_stats *out)
{
    memset(out, 0, sizeof *out);
    out->gets = LOAD(gets);
    out->get_bytes = LOAD(get_bytes);
    out->not_found = LOAD(not_found);
    out->prefetched = LOAD(prefetched);
    out->iter_items = LOAD(iter_items);
    out->iter_bytes = LOAD(iter_bytes);
    out->puts = LOAD(puts);
    out->put_bytes = LOAD(put_bytes);
    out->deletes = LOAD(deletes);
    out->has_cache_stats = s->opt.backend == KV_BACKEND_ROCKSDB;
    out->cache_hits = LOAD(cache_hits);
    out->cache_misses = LOAD(cache_misses);
    out->block_read_bytes = LOAD(block_read_bytes);
}

/* ---- reads ------------------------------------------------------------- */

int kv_reader_create(kv_store *s, kv_reader **out)
{
    kv_reader *r = calloc(1, sizeof *r);
    if (!r)
        return ann_fail(-ENOMEM, "%s: no memory for a reader", s->dir);
    r->s = s;
    r->st.has_cache_stats = s->opt.backend == KV_BACKEND_ROCKSDB;
    int rc = s->ops->reader_init(r);
    if (rc) {
        free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void kv_reader_destroy(kv_reader *r)
{
    if (!r)
        return;
    kv_reader_end(r);
    r->s->ops->reader_fini(r);
    free(r);
}

int kv_reader_begin(kv_reader *r)
{
    if (r->begun)
        return ann_fail(ANN_ESTATE, "%s: kv_reader_begin twice", r->s->dir);
    atomic_fetch_add(&r->s->readers_begun, 1);
    int rc = r->s->ops->reader_begin(r);
    if (rc) {
        atomic_fetch_sub(&r->s->readers_begun, 1);
        return rc;
    }
    r->begun = 1;
    r->at_begin = r->st;
    return 0;
}

void kv_reader_end(kv_reader *r)
{
    if (!r || !r->begun)
        return;
    kv_store *s = r->s;
    s->ops->reader_end(r);
    r->begun = 0;
    atomic_fetch_sub(&s->readers_begun, 1);
    const kv_stats *a = &r->at_begin, *b = &r->st;
    ADD(gets, b->gets - a->gets);
    ADD(get_bytes, b->get_bytes - a->get_bytes);
    ADD(not_found, b->not_found - a->not_found);
    ADD(prefetched, b->prefetched - a->prefetched);
    ADD(iter_items, b->iter_items - a->iter_items);
    ADD(iter_bytes, b->iter_bytes - a->iter_bytes);
    ADD(cache_hits, b->cache_hits - a->cache_hits);
    ADD(cache_misses, b->cache_misses - a->cache_misses);
    ADD(block_read_bytes, b->block_read_bytes - a->block_read_bytes);
}

int kv_get(kv_reader *r, const void *key, size_t key_len, kv_val *val)
{
    kv_store *s = r->s;
    val->data = NULL;
    val->len = 0;
    val->pin = NULL;
    if (!r->begun)
        return ann_fail(ANN_ESTATE, "%s: kv_get outside kv_reader_begin/end", s->dir);
    int rc = check_key(s, key_len);
    if (rc)
        return rc;
    rc = s->ops->get(r, key, key_len, val);
    if (rc == 0 && (rc = value_check(s, key, key_len, val)) != 0) {
        kv_val_release(val);
        val->data = NULL;
        val->len = 0;
    }
    if (rc == 0) {
        r->st.gets++;
        r->st.get_bytes += val->len;
    } else if (rc == ANN_ENOTFOUND) {
        r->st.not_found++;
    }
    return rc;
}

void kv_prefetch(kv_reader *r, const void *keys, size_t key_len, size_t n)
{
    if (!r->begun || n == 0 || key_len == 0 || key_len > KV_KEY_MAX_BYTES ||
        !r->s->ops->prefetch)
        return;
    r->s->ops->prefetch(r, keys, key_len, n);
    r->st.prefetched += n;
}

void kv_ahead_init(kv_ahead *a, kv_reader *r, uint8_t table, const uint32_t *ids, uint32_t n,
                   uint32_t depth)
{
    a->r = r;
    a->table = table;
    a->ids = ids;
    a->n = n;
    a->depth = depth ? depth : 1;
    a->next = 1; /* ids[0] is the caller's first get */
}

void kv_ahead_at(kv_ahead *a, uint32_t i)
{
    if (a->depth <= 1)
        return;
    uint64_t want = (uint64_t)i + a->depth; /* hint ids[next .. want) */
    uint32_t to = want < a->n ? (uint32_t)want : a->n;
    if (a->next <= i)
        a->next = i + 1;
    if (a->next < to) {
        kv_prefetch_u32(a->r, a->table, a->ids + a->next, to - a->next);
        a->next = to;
    }
}

void kv_prefetch_u32(kv_reader *r, uint8_t table, const uint32_t *ids, uint32_t n)
{
    for (uint32_t done = 0; done < n;) {
        uint8_t keys[KV_AHEAD_MAX_BATCH * KV_KEY_U32_BYTES];
        uint32_t nb = n - done < KV_AHEAD_MAX_BATCH ? n - done : KV_AHEAD_MAX_BATCH;
        for (uint32_t j = 0; j < nb; j++)
            kv_key_u32(keys + (size_t)j * KV_KEY_U32_BYTES, table, ids[done + j]);
        kv_prefetch(r, keys, KV_KEY_U32_BYTES, nb);
        done += nb;
    }
}

void kv_val_release(kv_val *val)
{
    if (val && val->pin) {
        kv_rocksdb_unpin(val->pin);
        val->pin = NULL;
    }
}

void kv_reader_stats(const kv_reader *r, kv_stats *out)
{
    *out = r->st;
}

/* ---- iteration --------------------------------------------------------- */

static int iter_create(kv_reader *r, const void *prefix, size_t prefix_len, int scan,
                       kv_iter **out)
{
    kv_store *s = r->s;
    if (!r->begun)
        return ann_fail(ANN_ESTATE, "%s: kv_iter_create outside kv_reader_begin/end", s->dir);
    if (prefix_len > KV_KEY_MAX_BYTES)
        return ann_fail(ANN_EPARAM, "%s: prefix length %zu > %d", s->dir, prefix_len,
                        KV_KEY_MAX_BYTES);
    kv_iter *it = calloc(1, sizeof *it);
    if (!it)
        return ann_fail(-ENOMEM, "%s: no memory for an iterator", s->dir);
    it->r = r;
    if (prefix_len)
        memcpy(it->prefix, prefix, prefix_len);
    it->prefix_len = prefix_len;
    it->scan = scan;
    int rc = s->ops->iter_init(it);
    if (rc) {
        free(it);
        return rc;
    }
    *out = it;
    return 0;
}

int kv_iter_create(kv_reader *r, const void *prefix, size_t prefix_len, kv_iter **out)
{
    return iter_create(r, prefix, prefix_len, 0, out);
}

int kv_iter_create_scan(kv_reader *r, const void *prefix, size_t prefix_len, kv_iter **out)
{
    return iter_create(r, prefix, prefix_len, 1, out);
}

int kv_iter_next(kv_iter *it, kv_val *key, kv_val *val)
{
    if (it->done)
        return 0;
    int rc = it->r->s->ops->iter_next(it, key, val);
    if (rc == 1) {
        int crc = value_check(it->r->s, key->data, key->len, val);
        if (crc) {
            it->done = 1;
            return crc;
        }
        key->pin = val->pin = NULL;
        it->r->st.iter_items++;
        it->r->st.iter_bytes += key->len + val->len;
    } else {
        it->done = 1;
    }
    return rc;
}

void kv_iter_destroy(kv_iter *it)
{
    if (!it)
        return;
    it->r->s->ops->iter_fini(it);
    free(it);
}

/* ---- write batches ----------------------------------------------------- */

static int writer_acquire(kv_store *s, const char *what)
{
    if (s->opt.read_only)
        return ann_fail(ANN_ESTATE, "%s: %s on a store opened read-only", s->dir, what);
    int expected = 0;
    if (!atomic_compare_exchange_strong(&s->writer_busy, &expected, 1))
        return ann_fail(ANN_ESTATE, "%s: %s while another write batch or bulk load is open",
                        s->dir, what);
    return 0;
}

static void writer_release(kv_store *s)
{
    atomic_store(&s->writer_busy, 0);
}

int kv_txn_begin(kv_store *s, kv_txn **out)
{
    int rc = writer_acquire(s, "kv_txn_begin");
    if (rc)
        return rc;
    kv_txn *t = calloc(1, sizeof *t);
    if (!t) {
        writer_release(s);
        return ann_fail(-ENOMEM, "%s: no memory for a write batch", s->dir);
    }
    t->s = s;
    *out = t;
    return 0;
}

static int key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

int kv_txn_begin_sorted(kv_store *s, uint64_t expected_bytes, kv_txn **out)
{
    kv_txn *t = NULL;
    int rc = kv_txn_begin(s, &t);
    if (rc)
        return rc;
    t->sorted = 1;
    rc = s->ops->stream_begin ? s->ops->stream_begin(t, expected_bytes) : 1;
    if (rc < 0) {
        kv_txn_abort(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* One operation of a streamed batch: the value framed with its checksum,
 * as the buffered path stores it, handed to the backend. */
static int txn_stream(kv_txn *t, kv_op_kind kind, const void *key, size_t key_len,
                      const void *val, size_t val_len)
{
    kv_store *s = t->s;
    if (kind == KV_OP_DELETE)
        return s->ops->stream_add(t, kind, key, key_len, NULL, 0);
    if (val_len + KV_SUM_BYTES > t->framed_cap) {
        size_t cap = t->framed_cap ? t->framed_cap : 256;
        while (cap < val_len + KV_SUM_BYTES)
            cap *= 2;
        uint8_t *f = realloc(t->framed, cap);
        if (!f)
            return ann_fail(-ENOMEM, "%s: no memory for a write batch", s->dir);
        t->framed = f;
        t->framed_cap = cap;
    }
    if (val_len)
        memcpy(t->framed, val, val_len);
    ann_put_u32(t->framed + val_len, value_sum(key, key_len, val, val_len));
    return s->ops->stream_add(t, kind, key, key_len, t->framed, val_len + KV_SUM_BYTES);
}

/* Populate a large arena this far ahead of its data (see txn_append). */
#define KV_ARENA_POPULATE_BYTES ((size_t)4 << 20)

static int txn_append(kv_txn *t, kv_op_kind kind, const void *key, size_t key_len,
                      const void *val, size_t val_len)
{
    kv_store *s = t->s;
    int rc = check_key(s, key_len);
    if (rc)
        return rc;
    if (t->sorted) {
        if (t->n_puts + t->n_dels > 0 && key_cmp(t->last_key, t->last_len, key, key_len) >= 0)
            return ann_fail(ANN_EPARAM, "%s: sorted write batch: operation %llu's key is not "
                            "above the previous",
                            s->dir, (unsigned long long)(t->n_puts + t->n_dels));
        memcpy(t->last_key, key, key_len);
        t->last_len = key_len;
    }
    if (t->stream) {
        rc = txn_stream(t, kind, key, key_len, val, val_len);
        if (rc)
            return rc;
        if (kind == KV_OP_PUT) {
            t->n_puts++;
            t->put_bytes += key_len + val_len;
        } else {
            t->n_dels++;
        }
        return 0;
    }
    if (t->n_ops == t->cap_ops) {
        size_t cap = t->cap_ops ? 2 * t->cap_ops : 64;
        kv_op *ops = realloc(t->ops, cap * sizeof *ops);
        if (!ops)
            return ann_fail(-ENOMEM, "%s: no memory for a write batch", s->dir);
        t->ops = ops;
        t->cap_ops = cap;
    }
    size_t need = t->arena_len + key_len + val_len + KV_SUM_BYTES;
    if (need > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 4096;
        while (cap < need)
            cap *= 2;
        uint8_t *a = realloc(t->arena, cap);
        if (!a)
            return ann_fail(-ENOMEM, "%s: no memory for a write batch", s->dir);
        if (a != t->arena && t->arena_mapped > t->arena_len)
            t->arena_mapped = t->arena_len; /* moved: what lies past the data is new */
        t->arena = a;
        t->arena_cap = cap;
    }
    /* A large batch is filled right after its arena grows: fault the next
     * stretch in at once (populate.h), a bounded step past what is needed
     * so that an arena doubled for a little more data is not all touched. */
    if (need > t->arena_mapped && t->arena_cap >= KV_ARENA_POPULATE_BYTES) {
        size_t end = need + KV_ARENA_POPULATE_BYTES;
        if (end > t->arena_cap)
            end = t->arena_cap;
        (void)ann_populate(t->arena + t->arena_mapped, end - t->arena_mapped);
        t->arena_mapped = end;
    }
    kv_op *op = &t->ops[t->n_ops++];
    op->kind = kind;
    op->key_off = t->arena_len;
    op->key_len = key_len;
    memcpy(t->arena + t->arena_len, key, key_len);
    t->arena_len += key_len;
    op->val_off = t->arena_len;
    op->val_len = val_len;
    if (val_len)
        memcpy(t->arena + t->arena_len, val, val_len);
    t->arena_len += val_len;
    if (kind == KV_OP_PUT) {
        t->n_puts++;
        t->put_bytes += key_len + val_len;
        /* the checksum after the value (arena room for it was reserved) */
        ann_put_u32(t->arena + t->arena_len, value_sum(key, key_len, val, val_len));
        t->arena_len += KV_SUM_BYTES;
        op->val_len += KV_SUM_BYTES;
    } else {
        t->n_dels++;
    }
    return 0;
}

int kv_txn_put(kv_txn *t, const void *key, size_t key_len, const void *val, size_t val_len)
{
    if (val_len && !val)
        return ann_fail(ANN_EPARAM, "%s: kv_txn_put: NULL value", t->s->dir);
    return txn_append(t, KV_OP_PUT, key, key_len, val, val_len);
}

int kv_txn_delete(kv_txn *t, const void *key, size_t key_len)
{
    return txn_append(t, KV_OP_DELETE, key, key_len, NULL, 0);
}

void kv_txn_abort(kv_txn *t)
{
    if (!t)
        return;
    if (t->stream)
        t->s->ops->stream_abort(t);
    writer_release(t->s);
    free(t->ops);
    free(t->arena);
    free(t->framed);
    free(t);
}

int kv_txn_commit(kv_txn *t)
{
    kv_store *s = t->s;
    int rc = t->stream ? s->ops->stream_commit(t) : t->n_ops ? s->ops->commit(s, t) : 0;
    if (rc == 0) {
        ADD(puts, t->n_puts);
        ADD(deletes, t->n_dels);
        ADD(put_bytes, t->put_bytes);
    }
    kv_txn_abort(t);
    return rc;
}

int kv_compact(kv_store *s)
{
    if (s->opt.read_only)
        return ann_fail(ANN_ESTATE, "%s: compact: the store is open read-only", s->dir);
    return s->ops->compact ? s->ops->compact(s) : 0;
}

int kv_put(kv_store *s, const void *key, size_t key_len, const void *val, size_t val_len)
{
    kv_txn *t = NULL;
    int rc = kv_txn_begin(s, &t);
    if (rc)
        return rc;
    rc = kv_txn_put(t, key, key_len, val, val_len);
    if (rc) {
        kv_txn_abort(t);
        return rc;
    }
    return kv_txn_commit(t);
}

int kv_delete(kv_store *s, const void *key, size_t key_len)
{
    kv_txn *t = NULL;
    int rc = kv_txn_begin(s, &t);
    if (rc)
        return rc;
    rc = kv_txn_delete(t, key, key_len);
    if (rc) {
        kv_txn_abort(t);
        return rc;
    }
    return kv_txn_commit(t);
}

/* ---- bulk load --------------------------------------------------------- */

int kv_bulk_begin(kv_store *s, uint64_t expected_bytes, kv_bulk **out)
{
    int rc = writer_acquire(s, "kv_bulk_begin");
    if (rc)
        return rc;
    kv_bulk *b = calloc(1, sizeof *b);
    if (!b) {
        writer_release(s);
        return ann_fail(-ENOMEM, "%s: no memory for a bulk load", s->dir);
    }
    b->s = s;
    rc = s->ops->bulk_begin(b, expected_bytes);
    if (rc) {
        writer_release(s);
        free(b);
        return rc;
    }
    *out = b;
    return 0;
}

int kv_bulk_add(kv_bulk *b, const void *key, size_t key_len, const void *val, size_t val_len)
{
    kv_store *s = b->s;
    int rc = check_key(s, key_len);
    if (rc)
        return rc;
    if (b->n && key_cmp(b->last_key, b->last_len, key, key_len) >= 0)
        return ann_fail(ANN_EPARAM, "%s: bulk load: record %llu's key is not above the previous",
                        s->dir, (unsigned long long)b->n);
    if (val_len + KV_SUM_BYTES > b->framed_cap) {
        size_t cap = b->framed_cap ? b->framed_cap : 256;
        while (cap < val_len + KV_SUM_BYTES)
            cap *= 2;
        uint8_t *f = realloc(b->framed, cap);
        if (!f)
            return ann_fail(-ENOMEM, "%s: no memory for a bulk-load value", s->dir);
        b->framed = f;
        b->framed_cap = cap;
    }
    if (val_len)
        memcpy(b->framed, val, val_len);
    ann_put_u32(b->framed + val_len, value_sum(key, key_len, val, val_len));
    rc = s->ops->bulk_add(b, key, key_len, b->framed, val_len + KV_SUM_BYTES);
    if (rc)
        return rc;
    memcpy(b->last_key, key, key_len);
    b->last_len = key_len;
    b->n++;
    b->put_bytes += key_len + val_len;
    return 0;
}

int kv_bulk_finish(kv_bulk *b)
{
    kv_store *s = b->s;
    int rc = s->ops->bulk_finish(b);
    if (rc == 0) {
        ADD(puts, b->n);
        ADD(put_bytes, b->put_bytes);
    }
    writer_release(s);
    free(b->framed);
    free(b);
    return rc;
}

void kv_bulk_abort(kv_bulk *b)
{
    if (!b)
        return;
    b->s->ops->bulk_abort(b);
    writer_release(b->s);
    free(b->framed);
    free(b);
}
