/*
 * test_ivfpq_record.c: ivfpq-record through the vtable on seeded 10k
 * clustered data: a recall bound; the oracle (at the same nlist, pq_bytes,
 * nprobe and re-rank depth, recall within 0.01 of FAISS's IVFPQ on the same
 * data, when FAISS is compiled in); the read accounting (list chunks plus
 * one vector per re-ranked candidate; long lists split into chunk records);
 * golden bytes of the records; bad parameters with their exact messages;
 * damaged records (an id out of range, a short vector, a missing chunk, a
 * list directory with a bad checksum).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/binio.h"
#include "engines/core/exact.h"
#include "engines/core/kv.h"
#include "engines/core/status.h"
#include "engines/engine.h"
#include "engines/ivfpq_record/layout.h"
#include "tests/support/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define N 10000
#define DIM 32
#define NQ 500
#define K 10

typedef struct {
    char *dir;
    char index[4096]; /* nlist 100, pq_bytes 8, lmdb + rocksdb */
    float *base, *queries;
    int32_t gt[NQ * K];
    float gd[NQ * K];
} fixture;

static json_t *js(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    if (!j)
        fail_msg("bad JSON in test: %s", text);
    return j;
}

static int build(const char *engine, const float *data, uint64_t n, ann_metric m,
                 const char *params, const char *path)
{
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(data, n, DIM, m, &src), 0);
    json_t *bp = js(params);
    int rc = ann_engine_build(ann_engine_find(engine), src, bp, path, NULL);
    json_decref(bp);
    ann_vecsrc_destroy(src);
    return rc;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir("ivfpqrec");
    /* many overlapping clusters, so lists split neighbourhoods and the
     * recall depends on nprobe */
    f->base = tu_clustered(N, DIM, 400, 777, 0);
    uint64_t s = 3;
    for (size_t i = 0; i < (size_t)N * DIM; i++)
        f->base[i] += 0.8f * tu_gauss(&s);
    f->queries = malloc(NQ * DIM * sizeof(float));
    for (int i = 0; i < NQ; i++)
        for (int j = 0; j < DIM; j++)
            f->queries[i * DIM + j] = f->base[(size_t)(i * 19) * DIM + j] + 0.3f * tu_gauss(&s);
    ann_vecsrc *src = NULL;
    if (ann_vecsrc_from_memory(f->base, N, DIM, ANN_METRIC_L2, &src) != 0 ||
        ann_exact_knn(src, f->queries, NQ, K, 1, f->gt, f->gd) != 0)
        return -1;
    ann_vecsrc_destroy(src);
    snprintf(f->index, sizeof f->index, "%s/ivfpq", f->dir);
    int rc = build("ivfpq-record", f->base, N, ANN_METRIC_L2, "{\"nlist\": 100, \"pq_bytes\": 8}",
                   f->index);
    if (rc) {
        print_error("build: %s\n", ann_errmsg(rc));
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_rmdir(f->dir);
    free(f->base);
    free(f->queries);
    free(f);
    return 0;
}

typedef struct {
    double recall;
    ann_stats st; /* totals over the queries */
} run_result;

static int run(const fixture *f, const char *engine, const char *index, const char *open,
               const char *search, run_result *out)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    ann_engine *eng = NULL;
    ann_ctx *ctx = NULL;
    json_t *op = js(open), *sp = js(search);
    int rc = ops->open(index, op, &eng);
    if (!rc)
        rc = ops->ctx_new(eng, sp, K, &ctx);
    json_decref(op);
    json_decref(sp);
    double hits = 0;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < NQ && !rc; i++) {
        uint32_t ids[K];
        float d[K];
        int got = ops->search(ctx, f->queries + (size_t)i * DIM, K, ids, d, &out->st);
        if (got < 0) {
            rc = got;
            break;
        }
        assert_int_equal(got, K);
        for (int r = 0; r < K; r++)
            for (int g = 0; g < K; g++)
                if ((int32_t)ids[r] == f->gt[i * K + g]) {
                    hits++;
                    break;
                }
    }
    out->recall = hits / (NQ * K);
    ops->ctx_free(ctx);
    ops->close(eng);
    return rc;
}

static void test_recall_bound(void **state)
{
    fixture *f = *state;
    const char *opens[] = { "{\"kv\": \"lmdb\"}", "{\"kv\": \"rocksdb\"}" };
    for (int i = 0; i < 2; i++) {
        run_result r;
        int rc = run(f, "ivfpq-record", f->index, opens[i], "{\"nprobe\": 32, \"rerank\": 10}", &r);
        if (rc)
            fail_msg("%s", ann_errmsg(rc));
        print_message("%s nprobe 32: recall@10 %.3f, %.1f reads/query\n", opens[i], r.recall,
                      (double)r.st.reads / NQ);
        assert_true(r.recall >= 0.95);
    }
}

/* The oracle: FAISS's IVFPQ (+ flat re-rank) at the same shape and effort. */
static void test_oracle_faiss(void **state)
{
    fixture *f = *state;
    if (!ann_engine_find("ref-faiss-ivfpq"))
        skip();
    char path[4096];
    snprintf(path, sizeof path, "%s/faiss", f->dir);
    assert_int_equal(build("ref-faiss-ivfpq", f->base, N, ANN_METRIC_L2,
                           "{\"nlist\": 100, \"pq_bytes\": 8}", path),
                     0);
    const char *efforts[] = { "{\"nprobe\": 1, \"rerank\": 10}", "{\"nprobe\": 4, \"rerank\": 10}",
                              "{\"nprobe\": 16, \"rerank\": 10}",
                              "{\"nprobe\": 16, \"rerank\": 2}" };
    for (size_t i = 0; i < sizeof efforts / sizeof efforts[0]; i++) {
        run_result ours, theirs;
        assert_int_equal(run(f, "ivfpq-record", f->index, "{\"kv\": \"lmdb\"}", efforts[i], &ours),
                         0);
        assert_int_equal(run(f, "ref-faiss-ivfpq", path, "{}", efforts[i], &theirs), 0);
        print_message("%-30s ivfpq-record %.3f  FAISS %.3f\n", efforts[i], ours.recall,
                      theirs.recall);
        if (ours.recall < theirs.recall - 0.01)
            fail_msg("%s: recall %.3f more than 0.01 below FAISS's %.3f", efforts[i], ours.recall,
                     theirs.recall);
    }
}

static void test_read_accounting(void **state)
{
    fixture *f = *state;
    run_result r;
    assert_int_equal(run(f, "ivfpq-record", f->index, "{\"kv\": \"lmdb\"}",
                         "{\"nprobe\": 8, \"rerank\": 5}", &r),
                     0);
    /* one vector read per re-ranked candidate, one read per list chunk */
    assert_int_equal(r.st.full_dists, (uint64_t)NQ * 5 * K);
    assert_int_equal(r.st.hops, (uint64_t)NQ * 8);
    assert_int_equal(r.st.reads - r.st.full_dists, r.st.hops); /* lists < 1024: one chunk each */
    assert_true(r.st.code_dists > 0 && r.st.code_dists < (uint64_t)NQ * N / 4);
    assert_int_equal(r.st.bytes_read, (r.st.full_dists * DIM * 4) +
                                          r.st.hops * IVFPQ_CHUNK_HEADER_BYTES +
                                          r.st.code_dists * (4 + 8));

    /* four lists of ~2,500 entries: each split into chunk records */
    char path[4096];
    snprintf(path, sizeof path, "%s/chunked", f->dir);
    assert_int_equal(build("ivfpq-record", f->base, N, ANN_METRIC_L2,
                           "{\"nlist\": 4, \"pq_bytes\": 8, \"kv\": \"lmdb\"}", path),
                     0);
    assert_int_equal(run(f, "ivfpq-record", path, "{\"kv\": \"lmdb\"}",
                         "{\"nprobe\": 4, \"rerank\": 10}", &r),
                     0);
    uint64_t chunk_reads = (r.st.reads - r.st.full_dists) / NQ;
    print_message("nlist 4: %llu chunk reads per query\n", (unsigned long long)chunk_reads);
    assert_int_equal(r.st.code_dists, (uint64_t)NQ * N); /* every entry scanned */
    assert_true(chunk_reads >= (N + IVFPQ_CHUNK_ENTRIES - 1) / IVFPQ_CHUNK_ENTRIES);
    assert_true(chunk_reads <= N / IVFPQ_CHUNK_ENTRIES + 4);
    assert_true(r.recall >= 0.95);
}

static void *get_record(const char *index, int u64, uint8_t table, uint64_t id, size_t *len)
{
    char store[4200];
    snprintf(store, sizeof store, "%s/lmdb", index);
    kv_options o = { .backend = KV_BACKEND_LMDB, .read_only = 1 };
    kv_store *kv;
    kv_reader *rd;
    assert_int_equal(kv_open(store, &o, &kv), 0);
    assert_int_equal(kv_reader_create(kv, &rd), 0);
    assert_int_equal(kv_reader_begin(rd), 0);
    uint8_t key[KV_KEY_U64_BYTES];
    size_t kl = u64 ? kv_key_u64(key, table, id) : kv_key_u32(key, table, (uint32_t)id);
    kv_val v;
    assert_int_equal(kv_get(rd, key, kl, &v), 0);
    void *copy = malloc(v.len);
    memcpy(copy, v.data, v.len);
    *len = v.len;
    kv_val_release(&v);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    kv_close(kv);
    return copy;
}

static void put_record(const char *index, int u64, uint8_t table, uint64_t id, const void *val,
                       size_t len)
{
    char store[4200];
    snprintf(store, sizeof store, "%s/lmdb", index);
    kv_options o = { .backend = KV_BACKEND_LMDB };
    kv_store *kv;
    assert_int_equal(kv_open(store, &o, &kv), 0);
    uint8_t key[KV_KEY_U64_BYTES];
    size_t kl = u64 ? kv_key_u64(key, table, id) : kv_key_u32(key, table, (uint32_t)id);
    if (val)
        assert_int_equal(kv_put(kv, key, kl, val, len), 0);
    else
        assert_int_equal(kv_delete(kv, key, kl), 0);
    assert_int_equal(kv_close(kv), 0);
}

static void test_golden_records(void **state)
{
    fixture *f = *state;
    char path[4096];
    snprintf(path, sizeof path, "%s/golden", f->dir);
    assert_int_equal(build("ivfpq-record", f->base, 3, ANN_METRIC_L2,
                           "{\"nlist\": 1, \"pq_bytes\": 4, \"kv\": \"lmdb\", \"seed\": 9}", path),
                     0);
    size_t len;
    uint8_t *rec = get_record(path, 0, IVFPQ_TABLE_META, 0, &len);
    uint8_t want[64] = { 'A', 'N', 'N', 'I', 'V', 'F', 'Q', 0, 1, 0, 0, 0, /* magic, version */
                         0, 0, 0, 0,                                     /* metric l2 */
                         3, 0, 0, 0, 0, 0, 0, 0,                         /* n */
                         DIM, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,           /* dim, nlist, lists */
                         4, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0,             /* m, chunk 1024, 0 */
                         9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };           /* seed, 0 */
    ann_put_u32(want + 60, (uint32_t)crc32(0L, want, 60));
    assert_int_equal(len, 64);
    assert_memory_equal(rec, want, 64);
    free(rec);

    rec = get_record(path, 1, IVFPQ_TABLE_LIST, 0, &len); /* list 0, chunk 0 */
    uint8_t head[28] = { 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, /* list, chunk, count */
                         0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0 };           /* ids */
    assert_int_equal(len, 16 + 3 * 4 + 3 * 4);
    assert_memory_equal(rec, head, sizeof head);
    for (size_t i = sizeof head; i < len; i++)
        assert_true(rec[i] < 3); /* three training rows: three centroids per sub-quantizer */
    free(rec);

    rec = get_record(path, 0, IVFPQ_TABLE_VECTOR, 2, &len);
    assert_int_equal(len, DIM * 4);
    for (int j = 0; j < DIM; j++)
        assert_true(ann_get_f32(rec + 4 * j) == f->base[2 * DIM + j]);
    free(rec);

    rec = get_record(path, 0, IVFPQ_TABLE_DIR, 0, &len);
    uint8_t dir[12] = { 1, 0, 0, 0, 3, 0, 0, 0 };
    ann_put_u32(dir + 8, (uint32_t)crc32(0L, dir, 8));
    assert_int_equal(len, sizeof dir);
    assert_memory_equal(rec, dir, sizeof dir);
    free(rec);
}

static void test_bad_parameters(void **state)
{
    fixture *f = *state;
    run_result r;
    int rc = run(f, "ivfpq-record", f->index, "{\"kv\": \"lmdb\"}", "{\"nprobe\": 101}", &r);
    assert_int_equal(rc, ANN_EPARAM);
    assert_string_equal(ann_errmsg(rc), "search.nprobe: 101 exceeds nlist = 100 of this index");
    rc = run(f, "ivfpq-record", f->index, "{\"kv\": \"lmdb\"}", "{\"rerank\": 0}", &r);
    assert_int_equal(rc, ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(rc), "search.rerank: 0 is out of range [1, 1000]"));

    char path[4096];
    snprintf(path, sizeof path, "%s/bad", f->dir);
    rc = build("ivfpq-record", f->base, 500, ANN_METRIC_L2, "{\"pq_bytes\": 33}", path);
    assert_int_equal(rc, ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(rc), "build.pq_bytes: 33 exceeds dim 32"));
    rc = build("ivfpq-record", f->base, 500, ANN_METRIC_L2, "{\"nlist\": -1}", path);
    assert_int_equal(rc, ANN_EPARAM);
    assert_non_null(strstr(ann_errmsg(rc), "build.nlist: -1 is out of range [0, 4194304]"));
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
}

static void expect_error(const fixture *f, const char *index, const char *search, int code,
                         const char *frag)
{
    run_result r;
    int rc = run(f, "ivfpq-record", index, "{\"kv\": \"lmdb\"}", search, &r);
    assert_int_equal(rc, code);
    if (!strstr(ann_errmsg(rc), frag))
        fail_msg("message \"%s\" lacks \"%s\"", ann_errmsg(rc), frag);
}

static void test_corrupt_records(void **state)
{
    fixture *f = *state;
    char path[4096];
    snprintf(path, sizeof path, "%s/corrupt", f->dir);
    assert_int_equal(build("ivfpq-record", f->base, 2000, ANN_METRIC_L2,
                           "{\"nlist\": 8, \"pq_bytes\": 8, \"kv\": \"lmdb\"}", path),
                     0);
    /* every list probed and every vector re-ranked, so each record is read */
    const char *all = "{\"nprobe\": 8, \"rerank\": 1000}";
    size_t len;
    uint8_t *chunk = get_record(path, 1, IVFPQ_TABLE_LIST, (uint64_t)3 << 32, &len);
    uint8_t *bad = malloc(len);
    memcpy(bad, chunk, len);
    ann_put_u32(bad + IVFPQ_CHUNK_HEADER_BYTES, 99999);
    put_record(path, 1, IVFPQ_TABLE_LIST, (uint64_t)3 << 32, bad, len);
    expect_error(f, path, all, ANN_ECORRUPT, "lmdb: list 3 chunk 0 record: entry 0 id 99999 >= n 2000");
    put_record(path, 1, IVFPQ_TABLE_LIST, (uint64_t)3 << 32, chunk, len - 1);
    expect_error(f, path, all, ANN_ECORRUPT, "lmdb: list 3 chunk 0 record: header or length");
    put_record(path, 1, IVFPQ_TABLE_LIST, (uint64_t)3 << 32, NULL, 0);
    expect_error(f, path, all, ANN_ECORRUPT, "lmdb: list 3 chunk 0 record missing");
    put_record(path, 1, IVFPQ_TABLE_LIST, (uint64_t)3 << 32, chunk, len);

    uint8_t *vec = get_record(path, 0, IVFPQ_TABLE_VECTOR, 5, &len);
    put_record(path, 0, IVFPQ_TABLE_VECTOR, 5, vec, len - 4);
    expect_error(f, path, all, ANN_ECORRUPT, "lmdb: vector 5 record: 124 bytes, expected 128");
    put_record(path, 0, IVFPQ_TABLE_VECTOR, 5, vec, len);
    run_result ok;
    assert_int_equal(run(f, "ivfpq-record", path, "{\"kv\": \"lmdb\"}", all, &ok), 0);

    uint8_t *dir = get_record(path, 0, IVFPQ_TABLE_DIR, 0, &len);
    dir[4] ^= 1;
    put_record(path, 0, IVFPQ_TABLE_DIR, 0, dir, len);
    expect_error(f, path, all, ANN_ECORRUPT, "lmdb: list directory record: checksum mismatch");
    free(dir);
    free(vec);
    free(bad);
    free(chunk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recall_bound),
        cmocka_unit_test(test_oracle_faiss),
        cmocka_unit_test(test_read_accounting),
        cmocka_unit_test(test_golden_records),
        cmocka_unit_test(test_bad_parameters),
        cmocka_unit_test(test_corrupt_records),
    };
    return cmocka_run_group_tests_name("ivfpq_record", tests, setup, teardown);
}
