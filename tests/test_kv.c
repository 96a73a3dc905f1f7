/*
 * test_kv.c: the record store (engines/core/kv.h) on both backends, and
 * both profiles for RocksDB: byte-exact round trips, atomic batches, delete,
 * prefix iteration order, not-found versus failure, bulk load (append and
 * non-append paths, abort, out-of-order keys), reopen read-only, LMDB map
 * growth, a full disk under LMDB, concurrent readers, statistics, prefetch hints (values
 * unchanged, counted, and the hinted records read into the page cache
 * without a get), and the key helpers' bytes; and
 * kv_index_open, the record engines' one way to open their index's store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/kv.h"
#include "engines/core/kv_params.h"
#include "engines/core/populate.h"
#include "engines/core/status.h"
#include "cgroups/evict.h"
#include "tests/support/testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    kv_backend backend;
    kv_profile profile;
    const char *name;
} kv_case;

static const kv_case cases[] = {
    { KV_BACKEND_ROCKSDB, KV_PROFILE_SERVER, "rocksdb-server" },
    { KV_BACKEND_ROCKSDB, KV_PROFILE_EMBEDDED, "rocksdb-embedded" },
    { KV_BACKEND_LMDB, KV_PROFILE_EMBEDDED, "lmdb" },
};
#define N_CASES (sizeof cases / sizeof cases[0])

static char *tmp_root;

static int setup(void **state)
{
    (void)state;
    tmp_root = tu_tmpdir("kv");
    return tmp_root ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(tmp_root);
    return 0;
}

static void store_path(char *out, const kv_case *c, const char *tag)
{
    snprintf(out, 4096, "%s/%s-%s", tmp_root, c->name, tag);
}

static kv_store *open_store(const kv_case *c, const char *path, int read_only, int create)
{
    kv_options o = { .backend = c->backend, .profile = c->profile, .block_cache_mb = 8,
                     .read_only = read_only, .create = create };
    kv_store *s = NULL;
    int rc = kv_open(path, &o, &s);
    if (rc)
        fail_msg("%s: open %s: %s", c->name, path, ann_errmsg(rc));
    return s;
}

/* Value of record id: length 1..600 depending on id, bytes a function of id. */
static size_t make_val(uint8_t *buf, uint32_t id)
{
    size_t len = 1 + (id * 37u) % 600u;
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(id * 131u + i * 7u);
    return len;
}

static void expect_record(kv_reader *r, uint8_t table, uint32_t id, const kv_case *c)
{
    uint8_t key[KV_KEY_U32_BYTES], want[600];
    kv_val v = { 0 };
    size_t klen = kv_key_u32(key, table, id), wlen = make_val(want, id);
    int rc = kv_get(r, key, klen, &v);
    if (rc)
        fail_msg("%s: get %u/%u: %s", c->name, table, id, ann_errmsg(rc));
    assert_int_equal(v.len, wlen);
    assert_memory_equal(v.data, want, wlen);
    kv_val_release(&v);
}

static void test_key_helpers(void **state)
{
    (void)state;
    uint8_t k4[KV_KEY_U32_BYTES], k8[KV_KEY_U64_BYTES];
    assert_int_equal(kv_key_u32(k4, 0x07, 0x01020304u), 5);
    assert_memory_equal(k4, "\x07\x01\x02\x03\x04", 5);
    assert_int_equal(kv_key_u64(k8, 0xA0, 0x0102030405060708ull), 9);
    assert_memory_equal(k8, "\xA0\x01\x02\x03\x04\x05\x06\x07\x08", 9);
    uint8_t t = 0;
    uint32_t id = 0;
    uint64_t id64 = 0;
    assert_int_equal(kv_key_parse_u32(k4, 5, &t, &id), 0);
    assert_int_equal(t, 0x07);
    assert_int_equal(id, 0x01020304u);
    assert_int_equal(kv_key_parse_u64(k8, 9, &t, &id64), 0);
    assert_true(id64 == 0x0102030405060708ull && t == 0xA0);
    assert_int_equal(kv_key_parse_u32(k8, 9, &t, &id), ANN_ECORRUPT);
    assert_int_equal(kv_key_parse_u64(k4, 5, &t, &id64), ANN_ECORRUPT);
    /* byte order is numeric order */
    uint8_t a[5], b[5];
    kv_key_u32(a, 1, 255);
    kv_key_u32(b, 1, 256);
    assert_true(memcmp(a, b, 5) < 0);

    kv_backend be;
    kv_profile pr;
    assert_int_equal(kv_backend_parse("lmdb", &be), 0);
    assert_int_equal(be, KV_BACKEND_LMDB);
    assert_int_equal(kv_profile_parse("embedded", &pr), 0);
    assert_int_equal(pr, KV_PROFILE_EMBEDDED);
    assert_int_equal(kv_backend_parse("leveldb", &be), ANN_EPARAM);
    assert_string_equal(ann_errmsg(ANN_EPARAM), "kv: unknown backend \"leveldb\" (rocksdb|lmdb)");
    assert_int_equal(kv_profile_parse("laptop", &pr), ANN_EPARAM);
}

/* Batch put, get, delete, atomic abort, reopen read-only: on every case. */
static void test_round_trip(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        char path[4096];
        store_path(path, c, "rt");
        kv_store *s = open_store(c, path, 0, 1);
        uint8_t key[KV_KEY_U32_BYTES], val[600];
        kv_txn *t = NULL;
        assert_int_equal(kv_txn_begin(s, &t), 0);
        /* a second writer is refused while the batch is open */
        kv_txn *t2 = NULL;
        assert_int_equal(kv_txn_begin(s, &t2), ANN_ESTATE);
        for (uint32_t id = 0; id < 500; id++) {
            uint32_t p = (id * 7919u) % 500u; /* scrambled order */
            assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, p), val, make_val(val, p)), 0);
        }
        assert_int_equal(kv_txn_commit(t), 0);

        /* a batch that is aborted leaves nothing */
        assert_int_equal(kv_txn_begin(s, &t), 0);
        assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, 9999), "x", 1), 0);
        assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 3)), 0);
        kv_txn_abort(t);

        /* delete 3 and 77, overwrite 5 with a short value, in one batch */
        assert_int_equal(kv_txn_begin(s, &t), 0);
        assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 3)), 0);
        assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 77)), 0);
        assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 123456)), 0); /* absent: fine */
        assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, 5), "five", 4), 0);
        assert_int_equal(kv_txn_commit(t), 0);
        assert_int_equal(kv_put(s, key, kv_key_u32(key, 2, 0), "", 0), 0); /* empty value */

        kv_reader *r = NULL;
        assert_int_equal(kv_reader_create(s, &r), 0);
        assert_int_equal(kv_reader_begin(r), 0);
        for (uint32_t id = 0; id < 500; id++)
            if (id != 3 && id != 77 && id != 5)
                expect_record(r, 1, id, c);
        kv_val v = { 0 };
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 3), &v), ANN_ENOTFOUND);
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 9999), &v), ANN_ENOTFOUND);
        assert_null(v.data);
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 5), &v), 0);
        assert_int_equal(v.len, 4);
        assert_memory_equal(v.data, "five", 4);
        kv_val_release(&v);
        kv_val_release(&v); /* twice is fine */
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 2, 0), &v), 0);
        assert_int_equal(v.len, 0);
        kv_val_release(&v);
        kv_reader_end(r);
        kv_reader_destroy(r);
        assert_int_equal(kv_close(s), 0);

        /* reopen read-only: the same records; writes refused */
        s = open_store(c, path, 1, 0);
        assert_int_equal(kv_put(s, key, kv_key_u32(key, 1, 1), "y", 1), ANN_ESTATE);
        kv_bulk *b = NULL;
        assert_int_equal(kv_bulk_begin(s, 0, &b), ANN_ESTATE);
        assert_int_equal(kv_reader_create(s, &r), 0);
        assert_int_equal(kv_reader_begin(r), 0);
        for (uint32_t id = 0; id < 500; id += 7)
            if (id != 3 && id != 77 && id != 5)
                expect_record(r, 1, id, c);
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 77), &v), ANN_ENOTFOUND);
        kv_reader_end(r);
        kv_reader_destroy(r);
        assert_int_equal(kv_close(s), 0);
    }
}

/* RocksDB batches past ingest_above_bytes go in as one ingested SST file:
 * the same answers as a write batch (the last operation on a key wins,
 * deletes delete), atomically, and a reader's snapshot taken before the
 * commit still sees the records as they were. */
static void test_ingest_commit(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < 2; ci++) { /* the two RocksDB profiles */
        const kv_case *c = &cases[ci];
        assert_int_equal(c->backend, KV_BACKEND_ROCKSDB);
        char path[4096];
        store_path(path, c, "ingest");
        kv_options o = { .backend = c->backend, .profile = c->profile, .block_cache_mb = 8,
                         .create = 1, .ingest_above_bytes = 1 };
        kv_store *s = NULL;
        assert_int_equal(kv_open(path, &o, &s), 0);
        uint8_t key[KV_KEY_U32_BYTES], val[600];
        for (uint32_t id = 0; id < 300; id++) /* each batch ingested too (past 1 byte) */
            assert_int_equal(kv_put(s, key, kv_key_u32(key, 1, id), val, make_val(val, id)), 0);
        kv_reader *old = NULL, *r = NULL;
        assert_int_equal(kv_reader_create(s, &old), 0);
        assert_int_equal(kv_reader_begin(old), 0);
        kv_txn *t = NULL;
        assert_int_equal(kv_txn_begin(s, &t), 0);
        /* out of key order; 7 written twice (the second wins); 9 put then
         * deleted; 11 deleted then put; 13 deleted; 5000 absent, deleted */
        for (uint32_t n = 0; n < 300; n++) {
            uint32_t id = (n * 7919u) % 300u + 300u;
            assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, id), val, make_val(val, id)), 0);
        }
        assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, 7), "first", 5), 0);
        assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, 9), "gone", 4), 0);
        assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 11)), 0);
        assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, 7), "second", 6), 0);
        assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 9)), 0);
        assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, 11), "back", 4), 0);
        assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 13)), 0);
        assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 5000)), 0);
        assert_int_equal(kv_txn_commit(t), 0);
        for (int pass = 0; pass < 2; pass++) {
            assert_int_equal(kv_reader_create(s, &r), 0);
            assert_int_equal(kv_reader_begin(r), 0);
            for (uint32_t id = 0; id < 600; id++)
                if (id != 7 && id != 9 && id != 11 && id != 13)
                    expect_record(r, 1, id, c);
            kv_val v = { 0 };
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 7), &v), 0);
            assert_int_equal(v.len, 6);
            assert_memory_equal(v.data, "second", 6);
            kv_val_release(&v);
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 11), &v), 0);
            assert_int_equal(v.len, 4);
            assert_memory_equal(v.data, "back", 4);
            kv_val_release(&v);
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 9), &v), ANN_ENOTFOUND);
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 13), &v), ANN_ENOTFOUND);
            kv_reader_end(r);
            kv_reader_destroy(r);
            if (pass == 0) {
                /* the snapshot from before the commit: the old records only */
                for (uint32_t id = 0; id < 300; id++)
                    expect_record(old, 1, id, c);
                kv_val v2 = { 0 };
                assert_int_equal(kv_get(old, key, kv_key_u32(key, 1, 300), &v2), ANN_ENOTFOUND);
                kv_reader_end(old);
                kv_reader_destroy(old);
                /* and the same after a reopen */
                assert_int_equal(kv_close(s), 0);
                o.create = 0;
                assert_int_equal(kv_open(path, &o, &s), 0);
            }
        }
        assert_int_equal(kv_close(s), 0);
        /* no SST file of the batch is left outside the store's own */
        assert_int_equal(tu_count_files(path, "txn-"), 0);
    }
}

/* Resident bytes and total bytes of dir's *.sst files. */
static void sst_residency(const char *dir, uint64_t *resident, uint64_t *total)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    *resident = *total = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (n < 4 || strcmp(de->d_name + n - 4, ".sst") != 0)
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        uint64_t r = 0, b = 0;
        assert_int_equal(evict_residency(path, &r, &b), 0);
        *resident += r;
        *total += b;
    }
    closedir(d);
}

/* A large batch that RocksDB ingests as a file (buffered, or a sorted batch
 * streamed) leaves that file in the page cache: it is what the next reads
 * want (a merge rewrites the graph's records).  The C API's SST writer
 * drops every megabyte it writes from the cache: 0.5 of 12.2 MB stayed
 * resident. */
static void test_ingest_cached(void **state)
{
    (void)state;
    for (int sorted = 0; sorted < 2; sorted++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/ingest-cached-%d", tmp_root, sorted);
        kv_options o = { .backend = KV_BACKEND_ROCKSDB, .profile = KV_PROFILE_SERVER,
                         .block_cache_mb = 8, .create = 1, .ingest_above_bytes = 1 << 20 };
        kv_store *s = NULL;
        assert_int_equal(kv_open(path, &o, &s), 0);
        static uint8_t val[4000];
        uint8_t key[KV_KEY_U32_BYTES];
        kv_txn *t = NULL;
        assert_int_equal(sorted ? kv_txn_begin_sorted(s, 3000u * sizeof val, &t)
                                : kv_txn_begin(s, &t),
                         0);
        for (uint32_t id = 0; id < 3000; id++) {
            for (size_t i = 0; i < sizeof val; i += 4)
                memcpy(val + i, &(uint32_t){ id * 2654435761u + (uint32_t)i }, 4);
            assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, id), val, sizeof val), 0);
        }
        assert_int_equal(kv_txn_commit(t), 0);
        uint64_t res = 0, total = 0;
        sst_residency(path, &res, &total);
        print_message("%s batch: %.1f of %.1f MB of SST files resident after the commit\n",
                      sorted ? "sorted" : "buffered", res / 1e6, total / 1e6);
        assert_true(total >= 3000u * sizeof val);
        assert_true(res >= total / 10 * 9);
        assert_int_equal(kv_close(s), 0);
    }
}

/* A sorted batch (kv_txn_begin_sorted) refuses a key not above the last
 * one, naming it, and goes on; it commits atomically (a snapshot from
 * before sees none of it) with its puts and deletes, or aborts leaving
 * nothing.  On RocksDB past ingest_above_bytes it is streamed: its SST
 * file is in the store directory while the batch is open, and gone after
 * the commit or the abort.  On LMDB, and on RocksDB when expected to be
 * small, it is buffered. */
static void test_sorted_batch(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        const int rocks = c->backend == KV_BACKEND_ROCKSDB;
        for (int big = 0; big < 2; big++) {
            char path[4096], tag[32];
            snprintf(tag, sizeof tag, "sorted-%d", big);
            store_path(path, c, tag);
            kv_options o = { .backend = c->backend, .profile = c->profile, .block_cache_mb = 8,
                             .create = 1, .ingest_above_bytes = 100000 };
            kv_store *s = NULL;
            assert_int_equal(kv_open(path, &o, &s), 0);
            uint8_t key[KV_KEY_U32_BYTES], val[600];
            for (uint32_t id = 0; id < 300; id++)
                assert_int_equal(kv_put(s, key, kv_key_u32(key, 1, id), val, make_val(val, id)),
                                 0);
            kv_reader *old = NULL;
            assert_int_equal(kv_reader_create(s, &old), 0);
            assert_int_equal(kv_reader_begin(old), 0);
            kv_txn *t = NULL;
            assert_int_equal(kv_txn_begin_sorted(s, big ? 1000000 : 10, &t), 0);
            const int streamed = rocks && big;
            assert_int_equal(tu_count_files(path, "txn-"), streamed);
            /* table 1: 7 rewritten, 13 deleted, 300..599 added; table 2: an
             * absent key deleted */
            assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, 7), "second", 6), 0);
            assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 13)), 0);
            for (uint32_t id = 300; id < 600; id++) {
                assert_int_equal(
                    kv_txn_put(t, key, kv_key_u32(key, 1, id), val, make_val(val, id)), 0);
                if (id == 400) { /* the same key again, then a lower one: refused */
                    char want[4300];
                    snprintf(want, sizeof want,
                             "%s: sorted write batch: operation 103's key is not above the "
                             "previous",
                             path);
                    assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, 400), "x", 1),
                                     ANN_EPARAM);
                    assert_string_equal(ann_errmsg(ANN_EPARAM), want);
                    assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 1, 8)), ANN_EPARAM);
                    assert_string_equal(ann_errmsg(ANN_EPARAM), want);
                }
            }
            assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 2, 5)), 0);
            assert_int_equal(kv_txn_commit(t), 0);
            assert_int_equal(tu_count_files(path, "txn-"), 0);
            kv_reader *r = NULL;
            assert_int_equal(kv_reader_create(s, &r), 0);
            assert_int_equal(kv_reader_begin(r), 0);
            for (uint32_t id = 0; id < 600; id++)
                if (id != 7 && id != 13)
                    expect_record(r, 1, id, c);
            kv_val v = { 0 };
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 7), &v), 0);
            assert_int_equal(v.len, 6);
            assert_memory_equal(v.data, "second", 6);
            kv_val_release(&v);
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 13), &v), ANN_ENOTFOUND);
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 8), &v), 0); /* refused delete */
            kv_val_release(&v);
            kv_reader_end(r);
            /* the snapshot from before: as it was */
            for (uint32_t id = 0; id < 300; id++)
                expect_record(old, 1, id, c);
            assert_int_equal(kv_get(old, key, kv_key_u32(key, 1, 300), &v), ANN_ENOTFOUND);
            kv_reader_end(old);
            kv_reader_destroy(old);
            /* an aborted sorted batch leaves nothing, file included */
            assert_int_equal(kv_txn_begin_sorted(s, big ? 1000000 : 10, &t), 0);
            for (uint32_t id = 600; id < 700; id++)
                assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, id), "y", 1), 0);
            assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 3, 0)), 0);
            kv_txn_abort(t);
            assert_int_equal(tu_count_files(path, "txn-"), 0);
            assert_int_equal(kv_reader_begin(r), 0);
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 600), &v), ANN_ENOTFOUND);
            expect_record(r, 1, 599, c);
            kv_reader_end(r);
            kv_reader_destroy(r);
            /* an empty streamed batch commits as nothing */
            assert_int_equal(kv_txn_begin_sorted(s, big ? 1000000 : 10, &t), 0);
            assert_int_equal(kv_txn_commit(t), 0);
            assert_int_equal(tu_count_files(path, "txn-"), 0);
            assert_int_equal(kv_close(s), 0);
        }
    }
}

/*
 * The children that write to a store run in a fresh image of this test
 * (main's --child), not in a forked copy of this multi-threaded process:
 * such a copy inherits RocksDB's thread-pool condition variables with the
 * parent's waiters counted in them, and its first flush signal can wait for
 * them forever (test_drec_live hung so in CI, 2026-12-05).  The pipe's
 * write end is inherited across the exec.
 */
static void child_exec(const char *what, int case_index, const char *path, int wfd)
{
    char ca[16], fa[16];
    snprintf(ca, sizeof ca, "%d", case_index);
    snprintf(fa, sizeof fa, "%d", wfd);
    execl("/proc/self/exe", "test_kv", "--child", what, ca, path, fa, (char *)NULL);
    _exit(4);
}

/* test_ingest_crash's child: commits ingested batches until killed. */
static void ingest_child(const kv_case *c, const char *path, int wfd)
{
    kv_options o = { .backend = c->backend, .profile = c->profile, .create = 1,
                     .ingest_above_bytes = 1 };
    kv_store *s = NULL;
    if (kv_open(path, &o, &s))
        _exit(3);
    uint8_t key[KV_KEY_U32_BYTES], val[4096];
    for (uint32_t b = 0;; b++) {
        kv_txn *t = NULL;
        if (kv_txn_begin(s, &t))
            _exit(4);
        memset(val, (int)(b & 0xff), sizeof val);
        for (uint32_t i = 0; i < 64; i++) {
            if (kv_txn_put(t, key, kv_key_u32(key, 3, b * 64 + i), val, sizeof val))
                _exit(5);
            if (b > 0 && kv_txn_delete(t, key, kv_key_u32(key, 3, (b - 1) * 64 + i)))
                _exit(5);
        }
        if (kv_txn_commit(t))
            _exit(6);
        if (write(wfd, &b, sizeof b) != sizeof b)
            _exit(7);
    }
}

/* kill -9 while RocksDB ingests batches: a child commits batch after
 * batch, each ingested (ingest_above_bytes 1): batch b puts keys (3, b*64
 * .. b*64+63) with value b and deletes batch b-1's keys; it reports each
 * committed b on a pipe.  After the kill, the reopened store holds exactly
 * one batch's keys whole (the last committed, or the next if its commit had
 * begun: never a part), and the writable reopen removed any txn-*.sst the
 * kill left between writing a batch's file and ingesting it. */
static void test_ingest_crash(void **state)
{
    (void)state;
    const kv_case *c = &cases[1];
    char path[4096];
    store_path(path, c, "ingest-crash");
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        child_exec("ingest", 1, path, fd[1]);
    }
    close(fd[1]);
    uint32_t last = UINT32_MAX, b;
    while (read(fd[0], &b, sizeof b) == sizeof b) {
        last = b;
        if (b >= 20)
            break;
    }
    struct timespec ts = { 0, 3 * 1000 * 1000 }; /* into the next commit */
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    close(fd[0]);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(last, 20);
    /* and files such a kill can leave (planted, as the kill's timing decides) */
    const char *planted[2] = { "txn-999999-0.sst", "bulk-999999-1.sst" };
    for (int i = 0; i < 2; i++) {
        char f[4300];
        snprintf(f, sizeof f, "%s/%s", path, planted[i]);
        FILE *fp = fopen(f, "w");
        assert_non_null(fp);
        fputs("half an SST file", fp);
        fclose(fp);
    }
    kv_options o = { .backend = c->backend, .profile = c->profile };
    kv_store *s = NULL;
    assert_int_equal(kv_open(path, &o, &s), 0);
    kv_reader *r = NULL;
    kv_iter *it = NULL;
    assert_int_equal(kv_reader_create(s, &r), 0);
    assert_int_equal(kv_reader_begin(r), 0);
    uint8_t t3 = 3;
    assert_int_equal(kv_iter_create(r, &t3, 1, &it), 0);
    kv_val k, v;
    uint32_t n = 0, first = UINT32_MAX;
    while (kv_iter_next(it, &k, &v) == 1) {
        uint32_t id;
        assert_int_equal(kv_key_parse_u32(k.data, k.len, NULL, &id), 0);
        if (first == UINT32_MAX)
            first = id;
        assert_int_equal(id, first + n); /* one run of consecutive keys */
        assert_int_equal(v.len, 4096);
        assert_int_equal(((const uint8_t *)v.data)[0], (id / 64) & 0xff);
        n++;
    }
    kv_iter_destroy(it);
    kv_reader_end(r);
    kv_reader_destroy(r);
    assert_int_equal(kv_close(s), 0);
    print_message("killed after batch %u was committed: the store holds batch %u whole\n", last,
                  first / 64);
    assert_int_equal(n, 64);
    assert_int_equal(first % 64, 0);
    assert_true(first / 64 >= last); /* the last reported, or one committed after it */
    DIR *dir = opendir(path);
    assert_non_null(dir);
    for (struct dirent *de; (de = readdir(dir));)
        if (!strncmp(de->d_name, "txn-", 4) || !strncmp(de->d_name, "bulk-", 5))
            fail_msg("%s: %s left after a writable reopen", path, de->d_name);
    closedir(dir);
}

/* kv_compact keeps exactly the live records (the latest value of each,
 * none of the deleted), also across a reopen; a read-only store refuses it. */
static void test_compact(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        char path[4096];
        store_path(path, c, "compact");
        kv_store *s = open_store(c, path, 0, 1);
        uint8_t key[KV_KEY_U32_BYTES], val[600];
        for (int round = 0; round < 2; round++) {
            kv_txn *t = NULL;
            assert_int_equal(kv_txn_begin(s, &t), 0);
            for (uint32_t id = 0; id < 1000; id++) {
                size_t len = make_val(val, id);
                if (round == 0)
                    val[0] ^= 0xff; /* overwritten in round 1 with make_val's bytes */
                assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, id), val, len), 0);
            }
            assert_int_equal(kv_txn_commit(t), 0);
        }
        for (uint32_t id = 0; id < 1000; id += 4)
            assert_int_equal(kv_delete(s, key, kv_key_u32(key, 1, id)), 0);
        assert_int_equal(kv_compact(s), 0);
        for (int reopen = 0; reopen < 2; reopen++) {
            kv_reader *r = NULL;
            assert_int_equal(kv_reader_create(s, &r), 0);
            assert_int_equal(kv_reader_begin(r), 0);
            for (uint32_t id = 0; id < 1000; id++) {
                if (id % 4) {
                    expect_record(r, 1, id, c);
                } else {
                    kv_val v = { 0 };
                    assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, id), &v), ANN_ENOTFOUND);
                }
            }
            kv_reader_end(r);
            kv_reader_destroy(r);
            assert_int_equal(kv_close(s), 0);
            s = open_store(c, path, 1, 0);
        }
        assert_int_equal(kv_compact(s), ANN_ESTATE);
        char want[4200];
        snprintf(want, sizeof want, "%s: compact: the store is open read-only", path);
        assert_string_equal(ann_errmsg(ANN_ESTATE), want);
        assert_int_equal(kv_close(s), 0);
    }
}

/* Not found is an answer; misuse and missing stores are distinct errors. */
static void test_errors(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        char path[4096];
        store_path(path, c, "absent");
        kv_options o = { .backend = c->backend, .profile = c->profile };
        kv_store *s = NULL;
        assert_int_equal(kv_open(path, &o, &s), ANN_ENOTFOUND);
        assert_null(s);
        o.read_only = 1;
        assert_int_equal(kv_open(path, &o, &s), ANN_ENOTFOUND);
        assert_non_null(strstr(ann_errmsg(ANN_ENOTFOUND), path));

        store_path(path, c, "err");
        s = open_store(c, path, 0, 1);
        uint8_t key[KV_KEY_U32_BYTES];
        kv_reader *r = NULL;
        kv_val v = { 0 };
        assert_int_equal(kv_reader_create(s, &r), 0);
        /* outside begin/end */
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 1), &v), ANN_ESTATE);
        assert_int_equal(kv_reader_begin(r), 0);
        assert_int_equal(kv_reader_begin(r), ANN_ESTATE);
        /* a missing key records no failure message */
        ann_err_clear();
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 1), &v), ANN_ENOTFOUND);
        assert_string_equal(ann_errmsg(ANN_ENOTFOUND), ann_strerror(ANN_ENOTFOUND));
        /* bad keys */
        uint8_t big[KV_KEY_MAX_BYTES + 1] = { 0 };
        assert_int_equal(kv_get(r, key, 0, &v), ANN_EPARAM);
        assert_int_equal(kv_get(r, big, sizeof big, &v), ANN_EPARAM);
        kv_reader_end(r);
        kv_reader_destroy(r);
        assert_int_equal(kv_put(s, key, 0, "x", 1), ANN_EPARAM);
        assert_int_equal(kv_close(s), 0);

        /* the other backend's store is not silently opened as empty */
        const kv_case *other = c->backend == KV_BACKEND_LMDB ? &cases[0] : &cases[2];
        kv_options oo = { .backend = other->backend, .profile = other->profile, .read_only = 1 };
        assert_true(kv_open(path, &oo, &s) < 0);
    }
}

/* Prefix iteration: one table only, ascending id order, edge prefixes. */
static void test_prefix_iteration(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        char path[4096];
        store_path(path, c, "iter");
        kv_store *s = open_store(c, path, 0, 1);
        uint8_t key[KV_KEY_U32_BYTES], val[600];
        kv_txn *t = NULL;
        assert_int_equal(kv_txn_begin(s, &t), 0);
        for (uint32_t i = 0; i < 300; i++) {
            uint32_t id = (i * 104729u) % 1000u; /* 300 distinct ids, scrambled */
            assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 2, id), val, make_val(val, id)), 0);
            assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, id), "a", 1), 0);
            assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 3, id), "c", 1), 0);
        }
        assert_int_equal(kv_txn_put(t, "\xff\xff", 2, "z", 1), 0);
        assert_int_equal(kv_txn_put(t, "\xff\xff\x01", 3, "z", 1), 0);
        assert_int_equal(kv_txn_commit(t), 0);

        kv_reader *r = NULL;
        kv_iter *it = NULL;
        kv_val k, v;
        assert_int_equal(kv_reader_create(s, &r), 0);
        assert_int_equal(kv_iter_create(r, "\x02", 1, &it), ANN_ESTATE);
        assert_int_equal(kv_reader_begin(r), 0);
        int n = 0, rc;
        /* table 2 with kv_iter_create, then with kv_iter_create_scan (reads
         * ahead, bypasses RocksDB's block cache): the same records */
        for (int scan = 0; scan < 2; scan++) {
            assert_int_equal(scan ? kv_iter_create_scan(r, "\x02", 1, &it)
                                  : kv_iter_create(r, "\x02", 1, &it),
                             0);
            n = 0;
            int64_t prev = -1;
            while ((rc = kv_iter_next(it, &k, &v)) == 1) {
                uint8_t table;
                uint32_t id;
                assert_int_equal(kv_key_parse_u32(k.data, k.len, &table, &id), 0);
                assert_int_equal(table, 2);
                assert_true((int64_t)id > prev);
                prev = id;
                uint8_t want[600];
                size_t wl = make_val(want, id);
                assert_int_equal(v.len, wl);
                assert_memory_equal(v.data, want, wl);
                n++;
            }
            assert_int_equal(rc, 0);
            assert_int_equal(n, 300);
            assert_int_equal(kv_iter_next(it, &k, &v), 0); /* stays at the end */
            kv_iter_destroy(it);
        }

        /* all-0xff prefix (no upper bound) and an empty table */
        assert_int_equal(kv_iter_create(r, "\xff\xff", 2, &it), 0);
        n = 0;
        while (kv_iter_next(it, &k, &v) == 1)
            n++;
        assert_int_equal(n, 2);
        kv_iter_destroy(it);
        assert_int_equal(kv_iter_create(r, "\x09", 1, &it), 0);
        assert_int_equal(kv_iter_next(it, &k, &v), 0);
        kv_iter_destroy(it);
        /* the whole store */
        assert_int_equal(kv_iter_create(r, NULL, 0, &it), 0);
        n = 0;
        while (kv_iter_next(it, &k, &v) == 1)
            n++;
        assert_int_equal(n, 902);
        kv_iter_destroy(it);

        kv_stats st;
        kv_reader_stats(r, &st);
        assert_int_equal(st.iter_items, 2 * 300 + 2 + 902);
        kv_reader_end(r);
        kv_reader_destroy(r);
        assert_int_equal(kv_close(s), 0);
    }
}

/* Bulk load: many records, verified after reopen; rules enforced. */
static void test_bulk_load(void **state)
{
    (void)state;
    enum { NB = 20000 };
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        char path[4096];
        store_path(path, c, "bulk");
        kv_store *s = open_store(c, path, 0, 1);
        uint8_t key[KV_KEY_U32_BYTES], val[600];
        /* a record of a higher table already there: LMDB cannot append */
        assert_int_equal(kv_put(s, key, kv_key_u32(key, 9, 0), "high", 4), 0);

        kv_bulk *b = NULL;
        assert_int_equal(kv_bulk_begin(s, (uint64_t)NB * 305, &b), 0);
        for (uint32_t id = 0; id < NB; id++)
            assert_int_equal(kv_bulk_add(b, key, kv_key_u32(key, 1, id), val, make_val(val, id)), 0);
        /* keys must ascend strictly */
        assert_int_equal(kv_bulk_add(b, key, kv_key_u32(key, 1, NB - 1), val, 1), ANN_EPARAM);
        assert_int_equal(kv_bulk_add(b, key, kv_key_u32(key, 1, 5), val, 1), ANN_EPARAM);
        assert_int_equal(kv_bulk_finish(b), 0);

        /* an aborted load leaves nothing; an empty load is fine */
        assert_int_equal(kv_bulk_begin(s, 0, &b), 0);
        for (uint32_t id = 0; id < 100; id++)
            assert_int_equal(kv_bulk_add(b, key, kv_key_u32(key, 10, id), "v", 1), 0);
        kv_bulk_abort(b);
        assert_int_equal(kv_bulk_begin(s, 0, &b), 0);
        assert_int_equal(kv_bulk_finish(b), 0);
        kv_stats st;
        kv_store_stats(s, &st);
        assert_int_equal(st.puts, NB + 1);
        assert_int_equal(kv_close(s), 0);

        s = open_store(c, path, 1, 0);
        kv_reader *r = NULL;
        kv_val v = { 0 };
        assert_int_equal(kv_reader_create(s, &r), 0);
        assert_int_equal(kv_reader_begin(r), 0);
        for (uint32_t id = 0; id < NB; id++)
            expect_record(r, 1, id, c);
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, NB), &v), ANN_ENOTFOUND);
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 10, 0), &v), ANN_ENOTFOUND);
        assert_int_equal(kv_get(r, key, kv_key_u32(key, 9, 0), &v), 0);
        assert_memory_equal(v.data, "high", 4);
        kv_val_release(&v);
        kv_reader_end(r);
        kv_reader_destroy(r);
        assert_int_equal(kv_close(s), 0);
    }
}

/* LMDB: a batch larger than the initial map grows it and still commits;
 * an aborted multi-piece bulk load is undone. */
static void test_lmdb_map_growth(void **state)
{
    (void)state;
    const kv_case *c = &cases[2];
    char path[4096];
    store_path(path, c, "grow");
    kv_store *s = open_store(c, path, 0, 1);
    enum { NR = 80, LEN = 1 << 20 };
    uint8_t *val = malloc(LEN), key[KV_KEY_U32_BYTES];
    assert_non_null(val);
    kv_txn *t = NULL;
    assert_int_equal(kv_txn_begin(s, &t), 0);
    for (uint32_t i = 0; i < NR; i++) {
        memset(val, (int)i, LEN);
        assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, i), val, LEN), 0);
    }
    int rc = kv_txn_commit(t);
    if (rc)
        fail_msg("80 MiB batch: %s", ann_errmsg(rc));
    kv_reader *r = NULL;
    kv_val v = { 0 };
    assert_int_equal(kv_reader_create(s, &r), 0);
    assert_int_equal(kv_reader_begin(r), 0);
    assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, NR - 1), &v), 0);
    assert_int_equal(v.len, LEN);
    memset(val, NR - 1, LEN);
    assert_memory_equal(v.data, val, LEN);
    kv_val_release(&v);
    kv_reader_end(r);

    /* A bulk load big enough to commit in pieces, then aborted: the pieces
     * already committed are deleted again, the earlier records stay. */
    kv_bulk *b = NULL;
    assert_int_equal(kv_bulk_begin(s, 0, &b), 0);
    for (uint32_t i = 0; i < NR; i++)
        assert_int_equal(kv_bulk_add(b, key, kv_key_u32(key, 3, i), val, LEN), 0);
    kv_bulk_abort(b);
    assert_int_equal(kv_reader_begin(r), 0);
    assert_int_equal(kv_get(r, key, kv_key_u32(key, 3, 0), &v), ANN_ENOTFOUND);
    assert_int_equal(kv_get(r, key, kv_key_u32(key, 3, NR - 1), &v), ANN_ENOTFOUND);
    assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 0), &v), 0);
    kv_val_release(&v);
    kv_reader_end(r);
    kv_reader_destroy(r);
    assert_int_equal(kv_close(s), 0);
    free(val);
}

/* Value of record id in a large batch: 1..8192 bytes, a function of id. */
static size_t big_val(uint8_t *buf, uint32_t id)
{
    size_t len = 1 + (id * 7919u) % 8192u;
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(id * 29u + i * 13u + (i >> 8));
    return len;
}

/* A write batch of about 24 MiB in 6,000 records of 1..8192 bytes (a
 * merge's batch is of this kind, only larger): every record reads back
 * byte-exact, before and after a reopen, on every backend; a 6 MiB batch
 * aborted writes nothing. */
static void test_large_batch(void **state)
{
    (void)state;
    enum { NR = 6000 }; /* about 24 MiB of values */
    uint8_t *val = malloc(8192), *want = malloc(8192), key[KV_KEY_U32_BYTES];
    assert_non_null(val);
    assert_non_null(want);
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        char path[4096];
        store_path(path, c, "bigbatch");
        kv_store *s = open_store(c, path, 0, 1);
        kv_txn *t = NULL;
        assert_int_equal(kv_txn_begin(s, &t), 0);
        for (uint32_t id = 0; id < 1500; id++) /* 6 MiB, then abandoned */
            assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 2, id), val, big_val(val, id)), 0);
        kv_txn_abort(t);
        assert_int_equal(kv_txn_begin(s, &t), 0);
        for (uint32_t id = 0; id < NR; id++)
            assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 1, id), val, big_val(val, id)), 0);
        int rc = kv_txn_commit(t);
        if (rc)
            fail_msg("%s: large batch: %s", c->name, ann_errmsg(rc));
        for (int pass = 0; pass < 2; pass++) {
            kv_reader *r = NULL;
            kv_val v = { 0 };
            assert_int_equal(kv_reader_create(s, &r), 0);
            assert_int_equal(kv_reader_begin(r), 0);
            for (uint32_t id = 0; id < NR; id++) {
                size_t len = big_val(want, id);
                rc = kv_get(r, key, kv_key_u32(key, 1, id), &v);
                if (rc)
                    fail_msg("%s: get %u: %s", c->name, id, ann_errmsg(rc));
                assert_int_equal(v.len, len);
                assert_memory_equal(v.data, want, len);
                kv_val_release(&v);
            }
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 2, 0), &v), ANN_ENOTFOUND);
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 2, 1499), &v), ANN_ENOTFOUND);
            kv_reader_end(r);
            kv_reader_destroy(r);
            assert_int_equal(kv_close(s), 0);
            s = pass == 0 ? open_store(c, path, 0, 0) : NULL;
        }
    }
    free(val);
    free(want);
}

/* LMDB: a data file cut short is corruption at open, not a SIGBUS later. */
static void test_lmdb_truncated(void **state)
{
    (void)state;
    const kv_case *c = &cases[2];
    char path[4096], file[4200];
    store_path(path, c, "trunc");
    kv_store *s = open_store(c, path, 0, 1);
    uint8_t key[KV_KEY_U32_BYTES], val[600];
    kv_bulk *b = NULL;
    assert_int_equal(kv_bulk_begin(s, 0, &b), 0);
    for (uint32_t id = 0; id < 2000; id++)
        assert_int_equal(kv_bulk_add(b, key, kv_key_u32(key, 1, id), val, make_val(val, id)), 0);
    assert_int_equal(kv_bulk_finish(b), 0);
    assert_int_equal(kv_close(s), 0);
    snprintf(file, sizeof file, "%s/data.mdb", path);
    size_t len = 0;
    free(tu_read_file(file, &len));
    assert_int_equal(truncate(file, (off_t)(len / 2)), 0);
    kv_options o = { .backend = KV_BACKEND_LMDB, .read_only = 1 };
    assert_int_equal(kv_open(path, &o, &s), ANN_ECORRUPT);
    assert_non_null(strstr(ann_errmsg(ANN_ECORRUPT), "data.mdb"));
    assert_non_null(strstr(ann_errmsg(ANN_ECORRUPT), "truncated"));
}

/* A page LMDB allocates and frees in one transaction (a "loose" page) is
 * never written but counts in the last page number, so a store can end
 * short of its last page; committed by annlab, it opens (the tail is
 * filled at each commit and at close), and a cut file is still refused
 * (above).  Here each batch puts a 40 KB value (overflow pages at the end
 * of the file) and deletes it. */
static void test_lmdb_loose_tail(void **state)
{
    (void)state;
    const kv_case *c = &cases[2];
    char path[4096];
    store_path(path, c, "loose");
    kv_store *s = open_store(c, path, 0, 1);
    uint8_t key[KV_KEY_U32_BYTES], k2[KV_KEY_U32_BYTES];
    static uint8_t big[40000];
    for (uint32_t i = 0; i < 20; i++) {
        kv_txn *t = NULL;
        assert_int_equal(kv_txn_begin(s, &t), 0);
        assert_int_equal(kv_txn_put(t, k2, kv_key_u32(k2, 1, i), "kept", 4), 0);
        assert_int_equal(kv_txn_put(t, key, kv_key_u32(key, 2, i), big, sizeof big), 0);
        assert_int_equal(kv_txn_delete(t, key, kv_key_u32(key, 2, i)), 0);
        assert_int_equal(kv_txn_commit(t), 0);
    }
    /* after each commit already, as a kill -9 would leave it: another
     * process opens it */
    kv_options o = { .backend = KV_BACKEND_LMDB, .read_only = 1 };
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        kv_store *ro = NULL;
        _exit(kv_open(path, &o, &ro) == 0 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(kv_close(s), 0);
    int rc = kv_open(path, &o, &s);
    if (rc)
        fail_msg("%s", ann_errmsg(rc));
    kv_reader *r = NULL;
    kv_val v = { 0 };
    assert_int_equal(kv_reader_create(s, &r), 0);
    assert_int_equal(kv_reader_begin(r), 0);
    assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 19), &v), 0);
    assert_memory_equal(v.data, "kept", 4);
    kv_val_release(&v);
    assert_int_equal(kv_get(r, key, kv_key_u32(key, 2, 19), &v), ANN_ENOTFOUND);
    kv_reader_end(r);
    kv_reader_destroy(r);
    assert_int_equal(kv_close(s), 0);
}

/*
 * A full disk under a writable LMDB store is a clear ENOSPC from the
 * commit that did not fit, with nothing of it written, and every batch
 * committed before it reads back whole after a reopen.  The disk is a
 * 24 MiB tmpfs; skipped where mounting one is not allowed.
 */
/* full_disk_case's child: writes until the disk is full, reports the
 * batches committed and closes. */
static void full_disk_child(const kv_case *c, const char *path, int wfd)
{
    signal(SIGBUS, SIG_DFL); /* the default actions: the writer must die of them */
    signal(SIGABRT, SIG_DFL);
    kv_options o = { .backend = c->backend, .profile = c->profile, .block_cache_mb = 8,
                     .create = 1, .relaxed_sync = 1 };
    kv_store *s = NULL;
    if (kv_open(path, &o, &s) != 0)
        _exit(10);
    static uint8_t val[256 << 10];
    uint8_t key[KV_KEY_U32_BYTES];
    for (uint32_t i = 0; i < 1000; i++) {
        kv_txn *t = NULL;
        memset(val, (int)(i & 0xff), sizeof val);
        if (kv_txn_begin(s, &t) || kv_txn_put(t, key, kv_key_u32(key, 3, i), val, sizeof val))
            _exit(11);
        int rc = kv_txn_commit(t);
        if (rc == 0)
            continue;
        /* LMDB: "<store>: lmdb commit: no space left on device (LMDB's
         * write came up short ...)"; RocksDB: "<store>: rocksdb write: IO
         * error: No space left on device: While appending to file: ..." */
        char want[4400];
        snprintf(want, sizeof want, "%s: %s %s", path, kv_backend_name(c->backend),
                 c->backend == KV_BACKEND_LMDB
                     ? "commit: no space left on device (LMDB's write came up short with "
                     : "write: IO error: No space left on device: ");
        if (rc != -ENOSPC || strncmp(ann_errmsg(rc), want, strlen(want)) != 0) {
            fprintf(stderr, "commit %u: %s\n", i, ann_errmsg(rc));
            _exit(12);
        }
        fprintf(stderr, "full disk after %u batches of 256 KiB: %s\n", i, ann_errmsg(rc));
        /* the error was the right one, and i batches are committed */
        if (write(wfd, &i, sizeof i) != (ssize_t)sizeof i)
            _exit(15);
        rc = kv_close(s);
        fprintf(stderr, "close: %s\n", rc ? ann_errmsg(rc) : "ok");
        _exit(i > 10 ? 0 : 13); /* some fitted before the disk filled */
    }
    _exit(14); /* 250 MB fitted on a 24 MiB disk */
}

static void full_disk_case(const kv_case *c)
{
    char mnt[4096];
    snprintf(mnt, sizeof mnt, "%s/small-fs-%s", tmp_root, c->name);
    tu_mount_tmpfs(mnt, 24);
    char cmd[4300];
    char path[4200];
    snprintf(path, sizeof path, "%s/store", mnt);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_exec("full-disk", (int)(c - cases), path, fds[1]);
    }
    close(fds[1]);
    uint32_t committed = 0;
    ssize_t got = read(fds[0], &committed, sizeof committed);
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    /* the writer exits by itself: Debian's RocksDB 7.8 used to abort it
     * in a background thread a moment after the error (a second append to
     * its info LOG after a failed one; kv_rocksdb.c keeps that log quiet) */
    if (WIFSIGNALED(status)) {
        snprintf(cmd, sizeof cmd, "umount %s", mnt);
        if (system(cmd) != 0)
            print_message("%s failed\n", cmd);
        fail_msg("the writer died of signal %d", WTERMSIG(status));
    }
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(got, sizeof committed);
    /* every committed value is whole: read them back */
    kv_options r = { .backend = c->backend, .profile = c->profile, .block_cache_mb = 8,
                     .read_only = 1 };
    kv_store *s = NULL;
    int rc = kv_open(path, &r, &s);
    if (rc)
        fail_msg("%s", ann_errmsg(rc));
    kv_reader *rd = NULL;
    assert_int_equal(kv_reader_create(s, &rd), 0);
    assert_int_equal(kv_reader_begin(rd), 0);
    uint8_t key[KV_KEY_U32_BYTES];
    uint32_t found = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        kv_val v = { 0 };
        rc = kv_get(rd, key, kv_key_u32(key, 3, i), &v);
        if (rc == ANN_ENOTFOUND)
            break;
        assert_int_equal(rc, 0);
        assert_int_equal(v.len, 256 << 10);
        assert_int_equal(((const uint8_t *)v.data)[0], i & 0xff);
        assert_int_equal(((const uint8_t *)v.data)[v.len - 1], i & 0xff);
        kv_val_release(&v);
        found++;
    }
    assert_int_equal(found, committed);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    assert_int_equal(kv_close(s), 0);
    snprintf(cmd, sizeof cmd, "umount %s", mnt);
    assert_int_equal(system(cmd), 0);
    rmdir(mnt);
}

static void test_full_disk(void **state)
{
    (void)state;
    full_disk_case(&cases[2]);
    full_disk_case(&cases[0]);
}

/*
 * Issue 14: a flipped byte in a value (here one in LMDB's data.mdb) is an
 * error naming the store and the key, from kv_get and from an iterator,
 * never different data; a store without the format file (an earlier
 * annlab's, values without checksums) is refused.
 */
static void test_value_checksums(void **state)
{
    (void)state;
    const kv_case *c = &cases[2];
    char path[4096], file[4200], marker[4200];
    store_path(path, c, "flip");
    kv_store *s = open_store(c, path, 0, 1);
    uint8_t key[KV_KEY_U32_BYTES], val[600];
    memset(val, 0x5a, sizeof val);
    memcpy(val, "NEEDLE-IN-A-VALUE", 17);
    assert_int_equal(kv_put(s, key, kv_key_u32(key, 1, 5), val, 300), 0);
    assert_int_equal(kv_put(s, key, kv_key_u32(key, 1, 6), "other", 5), 0);
    assert_int_equal(kv_close(s), 0);
    snprintf(file, sizeof file, "%s/data.mdb", path);
    size_t len = 0;
    unsigned char *bytes = tu_read_file(file, &len);
    /* every copy: LMDB copies a page on write, so the file may also hold the
     * leaf as the first put left it (a free page), and the live one is later */
    int copies = 0;
    for (unsigned char *at = bytes; (at = memmem(at, len - (size_t)(at - bytes),
                                                 "NEEDLE-IN-A-VALUE", 17)) != NULL;
         at += 17, copies++)
        at[3] ^= 0x01;
    assert_true(copies >= 1);
    assert_int_equal(tu_write_file(file, bytes, len), 0);
    free(bytes);
    kv_options o = { .backend = KV_BACKEND_LMDB, .read_only = 1 };
    assert_int_equal(kv_open(path, &o, &s), 0);
    kv_reader *r = NULL;
    kv_val v = { 0 };
    assert_int_equal(kv_reader_create(s, &r), 0);
    assert_int_equal(kv_reader_begin(r), 0);
    int rc = kv_get(r, key, kv_key_u32(key, 1, 5), &v);
    assert_int_equal(rc, ANN_ECORRUPT);
    char want[4400];
    snprintf(want, sizeof want, "%s: record 0100000005: value checksum 0x", path);
    if (strncmp(ann_errmsg(rc), want, strlen(want)) != 0)
        fail_msg("message \"%s\"", ann_errmsg(rc));
    assert_non_null(strstr(ann_errmsg(rc), "(the record is corrupt)"));
    assert_null(v.data);
    /* the other record is intact and keeps its length */
    assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 6), &v), 0);
    assert_int_equal(v.len, 5);
    assert_memory_equal(v.data, "other", 5);
    kv_val_release(&v);
    kv_iter *it = NULL;
    uint8_t prefix = 1;
    assert_int_equal(kv_iter_create(r, &prefix, 1, &it), 0);
    kv_val k2, v2;
    assert_int_equal(kv_iter_next(it, &k2, &v2), ANN_ECORRUPT);
    kv_iter_destroy(it);
    kv_reader_end(r);
    kv_reader_destroy(r);
    assert_int_equal(kv_close(s), 0);

    /* without its format file: an earlier annlab's store */
    snprintf(marker, sizeof marker, "%s/" KV_MARKER_FILE, path);
    assert_int_equal(unlink(marker), 0);
    rc = kv_open(path, &o, &s);
    assert_int_equal(rc, ANN_EVERSION);
    assert_non_null(strstr(ann_errmsg(rc), "values without checksums); rebuild the index"));
    o.read_only = 0;
    o.create = 1; /* create never adopts an existing store */
    assert_int_equal(kv_open(path, &o, &s), ANN_EVERSION);
}

/* Readers on several threads at once, each with its own handle. */
typedef struct {
    kv_store *s;
    const kv_case *c;
    uint32_t seed;
    int errors;
} reader_arg;

static void *reader_thread(void *p)
{
    reader_arg *a = p;
    kv_reader *r = NULL;
    if (kv_reader_create(a->s, &r)) {
        a->errors++;
        return NULL;
    }
    uint8_t key[KV_KEY_U32_BYTES], want[600];
    for (int q = 0; q < 200; q++) {
        if (kv_reader_begin(r)) {
            a->errors++;
            break;
        }
        for (int i = 0; i < 20; i++) {
            uint32_t id = (a->seed + (uint32_t)q * 31u + (uint32_t)i * 17u) % 2000u;
            kv_val v;
            size_t wl = make_val(want, id);
            if (kv_get(r, key, kv_key_u32(key, 1, id), &v) || v.len != wl ||
                memcmp(v.data, want, wl) != 0)
                a->errors++;
            kv_val_release(&v);
        }
        kv_reader_end(r);
    }
    kv_reader_destroy(r);
    return NULL;
}

static void test_concurrent_readers(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        char path[4096];
        store_path(path, c, "mt");
        kv_store *s = open_store(c, path, 0, 1);
        uint8_t key[KV_KEY_U32_BYTES], val[600];
        kv_bulk *b = NULL;
        assert_int_equal(kv_bulk_begin(s, 0, &b), 0);
        for (uint32_t id = 0; id < 2000; id++)
            assert_int_equal(kv_bulk_add(b, key, kv_key_u32(key, 1, id), val, make_val(val, id)), 0);
        assert_int_equal(kv_bulk_finish(b), 0);
        pthread_t th[4];
        reader_arg args[4];
        for (int i = 0; i < 4; i++) {
            args[i] = (reader_arg){ .s = s, .c = c, .seed = (uint32_t)i * 1000u };
            assert_int_equal(pthread_create(&th[i], NULL, reader_thread, &args[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            assert_int_equal(args[i].errors, 0);
        }
        kv_stats st;
        kv_store_stats(s, &st);
        assert_int_equal(st.gets, 4 * 200 * 20);
        assert_int_equal(kv_close(s), 0);
    }
}

/* Statistics: gets, bytes and not-found counted; RocksDB cache hits and
 * misses follow the profile (server: a repeated read hits the block cache;
 * embedded: every block is read from the file). */
/* kv_index_open: the backend by parameter or by what was built, the store's
 * path, a begun reader, and the messages of a missing directory or store. */
static void test_index_open(void **state)
{
    (void)state;
    char idx[4200], store[4300], want[4600];
    snprintf(idx, sizeof idx, "%s/index-lmdb-only", tmp_root);
    snprintf(store, sizeof store, "%s/lmdb", idx);
    assert_int_equal(mkdir(idx, 0755), 0);
    kv_options o = { .backend = KV_BACKEND_LMDB, .create = 1 };
    kv_store *s = NULL;
    assert_int_equal(kv_open(store, &o, &s), 0);
    uint8_t key[KV_KEY_U32_BYTES];
    assert_int_equal(kv_put(s, key, kv_key_u32(key, 1, 0), "meta", 4), 0);
    assert_int_equal(kv_close(s), 0);

    const kv_index_spec fixed = { .params = kv_open_params };
    const kv_index_spec built = { .params = kv_open_params, .kv_default_built = 1,
                                  .writable = 1, .relaxed_sync = 1 };
    char dir[4400];
    kv_reader *rd = NULL;
    kv_val v;

    /* kv left to the table's default (rocksdb): not built here */
    assert_int_equal(kv_index_open(idx, NULL, &fixed, &o, dir, sizeof dir, &s, &rd),
                     ANN_ENOTFOUND);
    snprintf(want, sizeof want, "%s/rocksdb: no rocksdb store in this index (see its build "
                                "parameter kv)", idx);
    assert_string_equal(ann_errmsg(ANN_ENOTFOUND), want);
    assert_null(s);
    assert_null(rd);

    /* kv given: read-only, the reader already begun */
    json_t *p = json_pack("{s:s, s:s}", "kv", "lmdb", "profile", "embedded");
    assert_int_equal(kv_index_open(idx, p, &fixed, &o, dir, sizeof dir, &s, &rd), 0);
    json_decref(p);
    assert_string_equal(dir, store);
    assert_int_equal(o.backend, KV_BACKEND_LMDB);
    assert_int_equal(o.profile, KV_PROFILE_EMBEDDED);
    assert_int_equal(o.read_only, 1);
    assert_int_equal(kv_get(rd, key, sizeof key, &v), 0);
    assert_memory_equal(v.data, "meta", 4);
    kv_val_release(&v);
    assert_int_equal(kv_put(s, key, sizeof key, "x", 1), ANN_ESTATE);
    kv_reader_destroy(rd);
    assert_int_equal(kv_close(s), 0);

    /* kv left to what was built, writable */
    assert_int_equal(kv_index_open(idx, NULL, &built, &o, dir, sizeof dir, &s, &rd), 0);
    assert_int_equal(o.backend, KV_BACKEND_LMDB);
    assert_int_equal(o.read_only, 0);
    assert_int_equal(o.relaxed_sync, 1);
    kv_reader_destroy(rd);
    assert_int_equal(kv_put(s, key, sizeof key, "meta", 4), 0);
    assert_int_equal(kv_close(s), 0);

    snprintf(idx, sizeof idx, "%s/no-such-index", tmp_root);
    assert_int_equal(kv_index_open(idx, NULL, &built, &o, dir, sizeof dir, &s, &rd),
                     ANN_ENOTFOUND);
    snprintf(want, sizeof want, "%s: no index directory", idx);
    assert_string_equal(ann_errmsg(ANN_ENOTFOUND), want);
}

static void test_stats(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        char path[4096];
        store_path(path, c, "stats");
        kv_store *s = open_store(c, path, 0, 1);
        uint8_t key[KV_KEY_U32_BYTES], val[600];
        kv_bulk *b = NULL;
        assert_int_equal(kv_bulk_begin(s, 0, &b), 0);
        for (uint32_t id = 0; id < 1000; id++)
            assert_int_equal(kv_bulk_add(b, key, kv_key_u32(key, 1, id), val, make_val(val, id)), 0);
        assert_int_equal(kv_bulk_finish(b), 0);
        assert_int_equal(kv_close(s), 0);
        s = open_store(c, path, 1, 0);

        kv_reader *r = NULL;
        kv_val v;
        uint64_t bytes = 0;
        assert_int_equal(kv_reader_create(s, &r), 0);
        for (int pass = 0; pass < 2; pass++) {
            assert_int_equal(kv_reader_begin(r), 0);
            for (uint32_t id = 100; id < 110; id++) {
                assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, id), &v), 0);
                bytes += v.len;
                kv_val_release(&v);
            }
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, 5000), &v), ANN_ENOTFOUND);
            kv_reader_end(r);
        }
        kv_stats rs, ss;
        kv_reader_stats(r, &rs);
        kv_store_stats(s, &ss);
        assert_int_equal(rs.gets, 20);
        assert_int_equal(rs.get_bytes, bytes);
        assert_int_equal(rs.not_found, 2);
        assert_int_equal(ss.gets, 20);
        assert_int_equal(ss.get_bytes, bytes);
        assert_int_equal(ss.not_found, 2);
        if (c->backend == KV_BACKEND_LMDB) {
            assert_int_equal(rs.has_cache_stats, 0);
            assert_int_equal(rs.cache_hits + rs.cache_misses, 0);
        } else {
            assert_int_equal(rs.has_cache_stats, 1);
            assert_true(rs.cache_misses >= 1);
            assert_true(rs.block_read_bytes >= bytes / 2);
            if (c->profile == KV_PROFILE_SERVER)
                assert_true(rs.cache_hits >= 10); /* the second pass */
            else
                assert_int_equal(rs.cache_hits, 0);
        }
        assert_int_equal(ss.cache_hits, rs.cache_hits);
        assert_int_equal(ss.cache_misses, rs.cache_misses);
        kv_reader_destroy(r);
        assert_int_equal(kv_close(s), 0);
    }
}

/* Bytes of the regular files directly in dir that are in the page cache. */
static uint64_t dir_resident(const char *dir)
{
    DIR *dh = opendir(dir);
    uint64_t total = 0;
    assert_non_null(dh);
    for (struct dirent *de; (de = readdir(dh));) {
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        uint64_t res = 0, size = 0;
        if (evict_residency(path, &res, &size) == 0)
            total += res;
    }
    closedir(dh);
    return total;
}

#define PF_N 3000       /* records of PF_BYTES: larger than a 4 KiB page */
#define PF_BYTES 5000
#define PF_HINT 64      /* keys hinted at once */

static void pf_val(uint8_t *buf, uint32_t id)
{
    for (size_t i = 0; i < PF_BYTES; i++)
        buf[i] = (uint8_t)(id * 29u + i * 13u);
}

/* A new store at path holding records 0..PF_N-1 of table 1 (pf_val), closed. */
static void pf_store_write(const kv_case *c, const char *path)
{
    static uint8_t val[PF_BYTES];
    kv_store *s = open_store(c, path, 0, 1);
    uint8_t key[KV_KEY_U32_BYTES];
    kv_bulk *b = NULL;
    assert_int_equal(kv_bulk_begin(s, (uint64_t)PF_N * PF_BYTES, &b), 0);
    for (uint32_t id = 0; id < PF_N; id++) {
        pf_val(val, id);
        assert_int_equal(kv_bulk_add(b, key, kv_key_u32(key, 1, id), val, PF_BYTES), 0);
    }
    assert_int_equal(kv_bulk_finish(b), 0);
    assert_int_equal(kv_close(s), 0);
}

/* Evict the store's files from the page cache (this file's pages only, no
 * global drop); the bytes still resident afterwards. */
static uint64_t pf_evict(const char *path)
{
    evict_params ep = evict_params_default();
    ep.drop_caches = false;
    evict_report er;
    assert_int_equal(evict_cold_dir(path, &ep, &er), 0);
    return dir_resident(path);
}

/*
 * kv_prefetch: hinted records come back byte-exact, the hints are counted
 * (reader and store), hints outside begin/end or with a bad key length do
 * nothing, missing keys and an overfull RocksDB queue are dropped, and a
 * store closes with hints queued.  And the point of it: with the store
 * evicted from the page cache, a hint alone (no get) brings the hinted
 * records' pages in.
 */
static void test_prefetch(void **state)
{
    (void)state;
    static uint8_t val[PF_BYTES], keys[PF_N * KV_KEY_U32_BYTES];
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const kv_case *c = &cases[ci];
        char path[4096];
        store_path(path, c, "prefetch");
        pf_store_write(c, path);
        kv_store *s = open_store(c, path, 1, 0);
        uint8_t key[KV_KEY_U32_BYTES];

        /* every 40th record: PF_HINT records spread over the store */
        for (uint32_t i = 0; i < PF_HINT; i++)
            kv_key_u32(keys + (size_t)i * KV_KEY_U32_BYTES, 1, i * 40);
        uint64_t before = pf_evict(path);

        kv_reader *r = NULL;
        assert_int_equal(kv_reader_create(s, &r), 0);
        kv_prefetch(r, keys, KV_KEY_U32_BYTES, PF_HINT); /* outside begin: nothing */
        assert_int_equal(kv_reader_begin(r), 0);
        kv_prefetch(r, keys, 0, PF_HINT);                       /* bad key lengths: nothing */
        kv_prefetch(r, keys, KV_KEY_MAX_BYTES + 1, 1);
        kv_stats rs;
        kv_reader_stats(r, &rs);
        assert_int_equal(rs.prefetched, 0);
        kv_prefetch(r, keys, KV_KEY_U32_BYTES, PF_HINT);
        /* the hinted pages arrive without a get (up to 5 s) */
        uint64_t after = before;
        for (int t = 0; t < 500 && after < before + (uint64_t)PF_HINT * 4096; t++) {
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            after = dir_resident(path);
        }
        print_message("%-16s resident %llu -> %llu bytes after hinting %d records of %d bytes\n",
                      c->name, (unsigned long long)before, (unsigned long long)after, PF_HINT,
                      PF_BYTES);
        if (before < (uint64_t)PF_N * PF_BYTES / 4) /* eviction works on this file system */
            assert_true(after >= before + (uint64_t)PF_HINT * 4096);
        else
            print_message("%-16s the page cache could not be emptied here: residency not "
                          "checked\n", c->name);
        for (uint32_t i = 0; i < PF_HINT; i++) {
            kv_val v = { 0 };
            assert_int_equal(kv_get(r, key, kv_key_u32(key, 1, i * 40), &v), 0);
            pf_val(val, i * 40);
            assert_int_equal(v.len, PF_BYTES);
            assert_memory_equal(v.data, val, PF_BYTES);
            kv_val_release(&v);
        }
        /* missing keys, then more than a queue's worth, then close at once */
        kv_key_u32(key, 1, PF_N + 7);
        kv_prefetch(r, key, KV_KEY_U32_BYTES, 1);
        for (uint32_t i = 0; i < PF_N; i++)
            kv_key_u32(keys + (size_t)i * KV_KEY_U32_BYTES, 1, PF_N - 1 - i);
        kv_prefetch(r, keys, KV_KEY_U32_BYTES, PF_N);
        kv_reader_end(r);
        kv_reader_stats(r, &rs);
        assert_int_equal(rs.prefetched, PF_HINT + 1 + PF_N);
        assert_int_equal(rs.gets, PF_HINT);
        kv_stats ss;
        kv_store_stats(s, &ss);
        assert_int_equal(ss.prefetched, PF_HINT + 1 + PF_N);
        kv_reader_destroy(r);
        assert_int_equal(kv_close(s), 0);
    }
}

/*
 * kv_options.direct_reads: RocksDB reads its SST files with O_DIRECT, so
 * gets on an evicted store return every record byte-exact and leave the
 * store's files out of the page cache (buffered gets bring them in, the
 * control); LMDB, which maps its file, refuses the option by name.
 */
static void test_direct_reads(void **state)
{
    (void)state;
    static uint8_t val[PF_BYTES];
    const kv_case *c = &cases[1]; /* rocksdb-embedded: no block cache either */
    char path[4096];
    store_path(path, c, "direct");
    pf_store_write(c, path);
    kv_store *s = NULL;
    uint8_t key[KV_KEY_U32_BYTES];

    uint64_t resident[2];
    for (int direct = 1; direct >= 0; direct--) {
        kv_options o = { .backend = KV_BACKEND_ROCKSDB, .profile = KV_PROFILE_EMBEDDED,
                         .read_only = 1, .direct_reads = direct };
        int rc = kv_open(path, &o, &s);
        if (rc)
            fail_msg("open %s (direct_reads %d): %s", path, direct, ann_errmsg(rc));
        uint64_t before = pf_evict(path);
        kv_reader *r = NULL;
        assert_int_equal(kv_reader_create(s, &r), 0);
        assert_int_equal(kv_reader_begin(r), 0);
        for (uint32_t id = 0; id < PF_N; id += 3) {
            kv_val v = { 0 };
            rc = kv_get(r, key, kv_key_u32(key, 1, id), &v);
            if (rc) /* a file system without O_DIRECT fails here, with the reason */
                fail_msg("get %u (direct_reads %d): %s", id, direct, ann_errmsg(rc));
            pf_val(val, id);
            assert_int_equal(v.len, PF_BYTES);
            assert_memory_equal(v.data, val, PF_BYTES);
            kv_val_release(&v);
        }
        kv_reader_end(r);
        kv_reader_destroy(r);
        resident[direct] = dir_resident(path) - before;
        print_message("direct_reads %d: %llu bytes resident before, +%llu after %d gets\n",
                      direct, (unsigned long long)before, (unsigned long long)resident[direct],
                      (PF_N + 2) / 3);
        assert_int_equal(kv_close(s), 0);
    }
    /* a third of the records read: buffered brings most of them in, direct
     * none of the data (RocksDB's open may read the files' tails) */
    assert_true(resident[0] >= (uint64_t)PF_N / 3 * PF_BYTES / 2);
    assert_true(resident[1] < resident[0] / 8);

    kv_options o = { .backend = KV_BACKEND_LMDB, .profile = KV_PROFILE_EMBEDDED, .read_only = 1,
                     .direct_reads = 1 };
    s = NULL;
    assert_int_equal(kv_open(path, &o, &s), ANN_EPARAM);
    assert_null(s);
    char want[4200];
    snprintf(want, sizeof want, "%s: direct reads: RocksDB only (LMDB maps its file)", path);
    assert_string_equal(ann_errmsg(ANN_EPARAM), want);
}

/* ann_populate (the write batch's arena, populate.h): a fresh anonymous
 * range is resident afterwards (mincore), written bytes are unchanged,
 * unaligned ends are fine and a small range is left alone. */
/* ann_alloc_large: from 4 MiB up, a buffer on a 2 MiB boundary, marked
 * for huge pages (the kernel's AnonHugePages are not asserted: the THP
 * policy may be "never"); below, plain memory; both wholly usable. */
static void test_alloc_large(void **state)
{
    (void)state;
    const size_t sizes[] = { 0, 100, ANN_LARGE_BYTES - 1, ANN_LARGE_BYTES, (5u << 20) + 3 };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint8_t *p = ann_alloc_large(sizes[k]);
        assert_non_null(p);
        if (sizes[k] >= ANN_LARGE_BYTES)
            assert_int_equal((uintptr_t)p % ((uintptr_t)2 << 20), 0);
        for (size_t i = 0; i < sizes[k]; i++)
            p[i] = (uint8_t)(i * 13 + k);
        for (size_t i = 0; i < sizes[k]; i += 4093)
            assert_int_equal(p[i], (uint8_t)(i * 13 + k));
        free(p);
    }
    assert_null(ann_alloc_large(SIZE_MAX - 100)); /* rounding would wrap: refused */
}

static void test_populate(void **state)
{
    (void)state;
    const size_t page = 4096, bytes = 4u << 20;
    uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    unsigned char vec[(4u << 20) / 4096];
    assert_int_equal(mincore(m, bytes, vec), 0);
    size_t resident = 0;
    for (size_t i = 0; i < bytes / page; i++)
        resident += vec[i] & 1;
    assert_int_equal(resident, 0);
    for (size_t i = 0; i < 3 * page; i++)
        m[i] = (uint8_t)(i * 7 + 1);
    assert_int_equal(ann_populate(m + 3, 1000), 1); /* below the minimum: untouched */
    int rc = ann_populate(m + 100, bytes - 200);
    if (rc == -EINVAL) {
        munmap(m, bytes);
        skip(); /* a kernel before 5.14 */
    }
    assert_int_equal(rc, 0);
    assert_int_equal(mincore(m, bytes, vec), 0);
    resident = 0;
    for (size_t i = 0; i < bytes / page; i++)
        resident += vec[i] & 1;
    /* the whole pages inside [m + 100, m + bytes - 100), plus the three written */
    assert_true(resident >= bytes / page - 2);
    for (size_t i = 0; i < 3 * page; i++)
        if (m[i] != (uint8_t)(i * 7 + 1))
            fail_msg("byte %zu changed by ann_populate", i);
    for (size_t i = 3 * page; i < bytes; i += 997)
        assert_int_equal(m[i], 0);
    munmap(m, bytes);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--child")) { /* never the suite again */
        int ci = argc == 6 ? atoi(argv[3]) : -1;
        if (ci < 0 || ci >= (int)N_CASES)
            return 5;
        if (!strcmp(argv[2], "ingest"))
            ingest_child(&cases[ci], argv[4], atoi(argv[5]));
        else if (!strcmp(argv[2], "full-disk"))
            full_disk_child(&cases[ci], argv[4], atoi(argv[5]));
        return 5;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_helpers),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_compact),
        cmocka_unit_test(test_ingest_commit),
        cmocka_unit_test(test_sorted_batch),
        cmocka_unit_test(test_ingest_cached),
        cmocka_unit_test(test_ingest_crash),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_prefix_iteration),
        cmocka_unit_test(test_bulk_load),
        cmocka_unit_test(test_lmdb_map_growth),
        cmocka_unit_test(test_large_batch),
        cmocka_unit_test(test_lmdb_truncated),
        cmocka_unit_test(test_lmdb_loose_tail),
        cmocka_unit_test(test_full_disk),
        cmocka_unit_test(test_value_checksums),
        cmocka_unit_test(test_concurrent_readers),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_prefetch),
        cmocka_unit_test(test_direct_reads),
        cmocka_unit_test(test_index_open),
        cmocka_unit_test(test_populate),
        cmocka_unit_test(test_alloc_large),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
