/*
 * test_ivfpq_record.c: ivfpq-record through the vtable on seeded 10k
 * clustered data: a recall bound; the oracle (at the same nlist, pq_bytes,
 * nprobe and re-rank depth, recall within 0.01 of FAISS's IVFPQ on the same
 * data, when FAISS is compiled in); the read accounting (list chunks plus
 * one vector per re-ranked candidate; long lists split into chunk records);
 * golden bytes of the records (version 2: ids, betas, codes); the
 * estimated distance of every scanned entry against |q - c - r'|^2 (l2),
 * its half (cosine) and -<q, c + r'> (ip) computed here on decoded
 * vectors; on unit vectors, a cosine build and an l2 build of the same
 * vectors hold the same centroids and records and return the same ids;
 * stores of versions 1 and 2 refused with their exact message; bad
 * parameters with their exact messages; damaged records (an id out of
 * range, a non-finite beta, a short vector, a missing chunk, a list
 * directory with a bad checksum).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/generate.h"
#include "engines/core/binio.h"
#include "engines/core/crc32c.h"
#include "engines/core/distance.h"
#include "engines/core/exact.h"
#include "engines/core/kv.h"
#include "engines/core/status.h"
#include "engines/core/topk.h"
#include "engines/core/vecfile.h"
#include "engines/engine.h"
#include "engines/ivfpq_record/ivfpq.h"
#include "engines/ivfpq_record/layout.h"
#include "tests/support/testutil.h"

#include <math.h>
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

static int build_dim(const char *engine, const float *data, uint64_t n, uint32_t dim,
                     ann_metric m, const char *params, const char *path)
{
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(data, n, dim, m, &src), 0);
    json_t *bp = js(params);
    int rc = ann_engine_build(ann_engine_find(engine), src, bp, path, NULL, NULL);
    json_decref(bp);
    ann_vecsrc_destroy(src);
    return rc;
}

static int build(const char *engine, const float *data, uint64_t n, ann_metric m,
                 const char *params, const char *path)
{
    return build_dim(engine, data, n, DIM, m, params, path);
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

/* Queries with their exact top K. */
typedef struct {
    const float *q;
    uint32_t dim;
    int nq;
    const int32_t *gt; /* nq x K */
} query_set;

/* Recall and stats of qs on index; ids (optional, nq x K) receives every
 * query's result. */
static int run_set(const query_set *qs, const char *engine, const char *index, const char *open,
                   const char *search, run_result *out, uint32_t *all_ids)
{
    const ann_engine_ops *ops = ann_engine_find(engine);
    ann_engine *eng = NULL;
    ann_ctx *ctx = NULL;
    json_t *op = js(open), *sp = js(search);
    int rc = ann_engine_open(ops, index, op, &eng, NULL);
    if (!rc)
        rc = ann_engine_ctx_new(ops, eng, sp, K, &ctx);
    json_decref(op);
    json_decref(sp);
    double hits = 0;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < qs->nq && !rc; i++) {
        uint32_t ids[K];
        float d[K];
        int got = ops->search(ctx, qs->q + (size_t)i * qs->dim, K, ids, d, &out->st);
        if (got < 0) {
            rc = got;
            break;
        }
        assert_int_equal(got, K);
        if (all_ids)
            memcpy(all_ids + (size_t)i * K, ids, sizeof ids);
        for (int r = 0; r < K; r++)
            for (int g = 0; g < K; g++)
                if ((int32_t)ids[r] == qs->gt[i * K + g]) {
                    hits++;
                    break;
                }
    }
    out->recall = hits / (qs->nq * K);
    ops->ctx_free(ctx);
    ops->close(eng);
    return rc;
}

static int run(const fixture *f, const char *engine, const char *index, const char *open,
               const char *search, run_result *out)
{
    query_set qs = { f->queries, DIM, NQ, f->gt };
    return run_set(&qs, engine, index, open, search, out, NULL);
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

static kv_store *store_of(ann_engine *e)
{
    return e->kv;
}

/* reads_in_flight only hints reads: the same answers and reads; the next
 * lists and the re-rank candidates are hinted. */
static void test_reads_in_flight(void **state)
{
    fixture *f = *state;
    const char *opens[] = { "{\"kv\": \"lmdb\"}", "{\"kv\": \"rocksdb\", \"profile\": \"embedded\"}" };
    for (int i = 0; i < 2; i++) {
        ann_stats st[2];
        uint64_t hinted[2];
        tu_same_answers("ivfpq-record", f->index, opens[i], "{\"nprobe\": 8, \"rerank\": 5}",
                        "{\"nprobe\": 8, \"rerank\": 5, \"reads_in_flight\": 4}", f->queries,
                        NQ, DIM, K, store_of, st, hinted);
        assert_int_equal(hinted[0], 0);
        /* all lists but the first (one chunk each here), all candidates but the first */
        assert_int_equal(hinted[1], (uint64_t)NQ * ((8 - 1) + (5 * K - 1)));
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
                                          r.st.code_dists * (4 + 4 + 8)); /* id, beta, code */

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

static ann_engine *open_index(const char *index)
{
    json_t *op = js("{\"kv\": \"lmdb\"}");
    ann_engine *e = NULL;
    int rc = ann_engine_open(ann_engine_find("ivfpq-record"), index, op, &e, NULL);
    json_decref(op);
    if (rc)
        fail_msg("open %s: %s", index, ann_errmsg(rc));
    return e;
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
    uint8_t want[64] = { 'A', 'N', 'N', 'I', 'V', 'F', 'Q', 0, 3, 0, 0, 0, /* magic, version */
                         0, 0, 0, 0,                                     /* metric l2 */
                         3, 0, 0, 0, 0, 0, 0, 0,                         /* n */
                         DIM, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,           /* dim, nlist, lists */
                         4, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0,             /* m, chunk 1024, 0 */
                         9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };           /* seed, 0 */
    ann_put_u32(want + 8, IVFPQ_VERSION);
    /* offset 44: the checksum of coarse.fbin's rows (version 4) */
    char coarse[4200];
    snprintf(coarse, sizeof coarse, "%s/coarse.fbin", path);
    size_t clen = 0;
    uint8_t *cbytes = tu_read_file(coarse, &clen);
    assert_non_null(cbytes);
    ann_put_u32(want + 44, ann_checksum(cbytes + 8, clen - 8));
    free(cbytes);
    ann_put_u32(want + 60, (uint32_t)crc32(0L, want, 60));
    assert_int_equal(len, 64);
    assert_memory_equal(rec, want, 64);
    free(rec);

    rec = get_record(path, 1, IVFPQ_TABLE_LIST, 0, &len); /* list 0, chunk 0 */
    uint8_t head[28] = { 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, /* list, chunk, count */
                         0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0 };           /* ids */
    assert_int_equal(len, 16 + 3 * 4 + 3 * 4 + 3 * 4); /* header, ids, betas, codes */
    assert_int_equal(len, IVFPQ_CHUNK_BYTES(3, 4));
    assert_memory_equal(rec, head, sizeof head);
    for (size_t i = 40; i < len; i++)
        assert_true(rec[i] < 3); /* three training rows: three centroids per sub-quantizer */
    /* bytes 28..39: f32 beta = sum over coordinates of c r' + r'^2 / 2 (r' the
     * decoded residual, c the list's centroid), summed in double */
    ann_engine *e = open_index(path);
    for (int j = 0; j < 3; j++) {
        float r[DIM];
        pq_decode(e->cb, rec + 40 + 4 * j, r);
        double beta = 0, xx = 0, cc = 0;
        for (int d = 0; d < DIM; d++) {
            double c = e->centroids[d], x = f->base[j * DIM + d];
            beta += c * r[d] + 0.5 * (double)r[d] * r[d];
            xx += x * x;
            cc += c * c;
        }
        uint8_t le[4];
        ann_put_f32(le, (float)beta);
        assert_memory_equal(rec + 28 + 4 * j, le, 4);
        /* three rows are three codewords: r' = x - c, beta = (|x|^2 - |c|^2) / 2 */
        double want_beta = (xx - cc) / 2;
        if (fabs(beta - want_beta) > 1e-5 * (xx + cc))
            fail_msg("entry %d: beta %.7g, (|x|^2 - |c|^2) / 2 = %.7g", j, beta, want_beta);
    }
    ann_engine_find("ivfpq-record")->close(e);
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

/* CRC of every key and value of an index's LMDB store, in key order. */
static uint32_t whole_store_crc(const char *index)
{
    char store[4200];
    snprintf(store, sizeof store, "%s/lmdb", index);
    kv_options o = { .backend = KV_BACKEND_LMDB, .read_only = 1 };
    kv_store *kv;
    kv_reader *rd;
    kv_iter *it;
    assert_int_equal(kv_open(store, &o, &kv), 0);
    assert_int_equal(kv_reader_create(kv, &rd), 0);
    assert_int_equal(kv_reader_begin(rd), 0);
    assert_int_equal(kv_iter_create(rd, NULL, 0, &it), 0);
    uLong crc = crc32(0L, Z_NULL, 0);
    kv_val k, v;
    int rc, records = 0;
    while ((rc = kv_iter_next(it, &k, &v)) == 1) {
        crc = crc32(crc, k.data, (uInt)k.len);
        crc = crc32(crc, v.data, (uInt)v.len);
        records++;
    }
    assert_int_equal(rc, 0);
    assert_true(records > 0);
    kv_iter_destroy(it);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    kv_close(kv);
    return (uint32_t)crc;
}


/* The streamed base (20,000 rows: two stream blocks) gives byte-identical
 * records whether a mapped .fbin lends it, memory lends it or it is copied
 * through read(), on 1 or 2 threads; with nlist 16 the coarse sample is
 * strided, with the default nlist (80 x 256 > n) it is the whole base. */
static void test_base_sources(void **state)
{
    fixture *f = *state;
    const uint64_t n = 20000;
    float *x = tu_clustered(n, DIM, 40, 777, 0);
    char fbin[4200], a[4200], how[16];
    snprintf(fbin, sizeof fbin, "%s/base20k.fbin", f->dir);
    ann_vecwriter w;
    assert_int_equal(ann_vecwriter_open(&w, fbin, DIM, ANN_ELEM_F32), 0);
    assert_int_equal(ann_vecwriter_append(&w, x, n), 0);
    assert_int_equal(ann_vecwriter_finish(&w), 0);
    ann_vecsrc *file = NULL, *mem = NULL;
    assert_int_equal(ann_vecsrc_open_file(fbin, ANN_METRIC_L2, &file), 0);
    assert_int_equal(ann_vecsrc_from_memory(x, n, DIM, ANN_METRIC_L2, &mem), 0);
    ann_vecsrc copy = tu_copy_only(file);
    const char *params[2][2] = {
        { "{\"nlist\": 16, \"pq_bytes\": 8, \"threads\": 1, \"kv\": \"lmdb\"}",
          "{\"nlist\": 16, \"pq_bytes\": 8, \"threads\": 2, \"kv\": \"lmdb\"}" },
        { "{\"pq_bytes\": 8, \"threads\": 1, \"kv\": \"lmdb\"}",
          "{\"pq_bytes\": 8, \"threads\": 2, \"kv\": \"lmdb\"}" },
    };
    for (int p = 0; p < 2; p++) {
        const ann_vecsrc *srcs[3] = { file, mem, &copy };
        const char *want[3] = { "lent", "lent", "copied" };
        uint32_t crc0 = 0;
        for (int i = 0; i < 3; i++)
            for (int t = 0; t < 2; t++) {
                snprintf(a, sizeof a, "%s/src-%d-%d-%d", f->dir, p, i, t);
                tu_build_base_rows("ivfpq-record", srcs[i], params[p][t], a, how);
                assert_string_equal(how, want[i]);
                uint32_t crc = whole_store_crc(a);
                if (i == 0 && t == 0)
                    crc0 = crc;
                else
                    assert_int_equal(crc, crc0);
                tu_rmdir(strdup(a));
            }
    }
    ann_vecsrc_destroy(file);
    ann_vecsrc_destroy(mem);
    free(x);
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
    memcpy(bad, chunk, len);
    ann_put_f32(bad + IVFPQ_CHUNK_BETAS_OFF(ann_get_u32(chunk + 8)) + 4, NAN);
    put_record(path, 1, IVFPQ_TABLE_LIST, (uint64_t)3 << 32, bad, len);
    char msg[160];
    snprintf(msg, sizeof msg, "lmdb: list 3 chunk 0 record: entry 1 (id %u) beta nan is not finite",
             ann_get_u32(chunk + IVFPQ_CHUNK_HEADER_BYTES + 4));
    expect_error(f, path, all, ANN_ECORRUPT, msg);
    ann_put_f32(bad + IVFPQ_CHUNK_BETAS_OFF(ann_get_u32(chunk + 8)) + 4, -INFINITY);
    put_record(path, 1, IVFPQ_TABLE_LIST, (uint64_t)3 << 32, bad, len);
    expect_error(f, path, all, ANN_ECORRUPT, "beta -inf is not finite");
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

/* Chunk record `chunk` of `list`, checked; release with kv_val_release. */
static void get_chunk(const ann_engine *e, kv_reader *rd, uint32_t list, uint32_t chunk,
                      uint32_t count, kv_val *val)
{
    uint8_t key[KV_KEY_U64_BYTES];
    kv_key_u64(key, IVFPQ_TABLE_LIST, (uint64_t)list << 32 | chunk);
    assert_int_equal(kv_get(rd, key, sizeof key, val), 0);
    int rc = ivfpq_chunk_check(&e->meta, e->store_dir, list, chunk, count, val->data, val->len);
    if (rc)
        fail_msg("%s", ann_errmsg(rc));
}

/*
 * For nq queries, every entry of every list of the index at `index`: the
 * engine's estimate (search.c's three steps) against the distance computed
 * here in double on the decoded vector c + r': |q - c - r'|^2 (l2), half of
 * it (cosine), -<q, c + r'> (ip).  Tolerance: 1e-5 of the largest term's
 * scale (|q - c|^2 + 2 (|q| + |c|) |r'| + |r'|^2), float rounding; a
 * missing beta, a wrong factor or a wrong sign is off by the order of that
 * scale.  Returns the largest relative error.
 */
static double check_estimates(const char *index, const float *queries, int nq)
{
    ann_engine *e = open_index(index);
    const ivfpq_meta *m = &e->meta;
    kv_reader *rd = NULL;
    assert_int_equal(kv_reader_create(e->kv, &rd), 0);
    assert_int_equal(kv_reader_begin(rd), 0);
    float *table = malloc(pq_table_floats(e->cb) * sizeof(float));
    float *est = malloc(IVFPQ_CHUNK_ENTRIES * sizeof(float));
    float *r = malloc(m->dim * sizeof(float));
    double worst = 0;
    uint64_t checked = 0;
    for (int qi = 0; qi < nq; qi++) {
        const float *q = queries + (size_t)qi * m->dim;
        ivfpq_query_table(e, q, table);
        for (uint32_t l = 0; l < m->lists; l++) {
            const float *c = e->centroids + (size_t)l * m->dim;
            float term = ivfpq_list_term(e, q, l);
            for (uint32_t ch = 0; (uint64_t)ch * IVFPQ_CHUNK_ENTRIES < e->list_len[l]; ch++) {
                uint32_t left = e->list_len[l] - ch * IVFPQ_CHUNK_ENTRIES;
                uint32_t cnt = left < IVFPQ_CHUNK_ENTRIES ? left : IVFPQ_CHUNK_ENTRIES;
                kv_val val;
                get_chunk(e, rd, l, ch, cnt, &val);
                ivfpq_chunk_estimate(e, table, term, val.data, cnt, est);
                for (uint32_t j = 0; j < cnt; j++) {
                    pq_decode(e->cb, (const uint8_t *)val.data + IVFPQ_CHUNK_CODES_OFF(cnt) +
                                         (size_t)j * m->pq_bytes,
                              r);
                    double d2 = 0, ip = 0, qq = 0, cc = 0, rr = 0, qc = 0;
                    for (uint32_t d = 0; d < m->dim; d++) {
                        double x = (double)c[d] + r[d], diff = (double)q[d] - x;
                        d2 += diff * diff;
                        ip += (double)q[d] * x;
                        qq += (double)q[d] * q[d];
                        cc += (double)c[d] * c[d];
                        rr += (double)r[d] * r[d];
                        qc += ((double)q[d] - c[d]) * ((double)q[d] - c[d]);
                    }
                    double want = m->metric == ANN_METRIC_L2       ? d2
                                  : m->metric == ANN_METRIC_COSINE ? d2 / 2
                                                                   : -ip;
                    double scale = qc + 2 * (sqrt(qq) + sqrt(cc)) * sqrt(rr) + rr;
                    double err = fabs(est[j] - want) / scale;
                    if (err > 1e-5)
                        fail_msg("%s: query %d list %u entry %u: estimate %.7g, exact %.7g "
                                 "(scale %.3g)",
                                 ann_metric_name(m->metric), qi, l, j, est[j], want, scale);
                    worst = err > worst ? err : worst;
                    checked++;
                }
                kv_val_release(&val);
            }
        }
    }
    print_message("%s: %llu estimates, largest error %.2g of the scale\n",
                  ann_metric_name(m->metric), (unsigned long long)checked, worst);
    assert_true(checked > 0);
    free(r);
    free(est);
    free(table);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
    ann_engine_find("ivfpq-record")->close(e);
    return worst;
}

static void test_estimate_exact(void **state)
{
    fixture *f = *state;
    /* l2: the fixture's clustered data (not unit) */
    check_estimates(f->index, f->queries, 5);

    /* cosine: the same rows and queries normalised; ip: the raw rows */
    enum { n = 2000, nq = 5 };
    float *unit = malloc((size_t)n * DIM * sizeof(float));
    float *uq = malloc((size_t)nq * DIM * sizeof(float));
    memcpy(unit, f->base, (size_t)n * DIM * sizeof(float));
    memcpy(uq, f->queries, (size_t)nq * DIM * sizeof(float));
    for (int i = 0; i < n; i++)
        ann_normalize(unit + (size_t)i * DIM, DIM);
    for (int i = 0; i < nq; i++)
        ann_normalize(uq + (size_t)i * DIM, DIM);
    char path[4096];
    snprintf(path, sizeof path, "%s/est-cos", f->dir);
    assert_int_equal(build("ivfpq-record", unit, n, ANN_METRIC_COSINE,
                           "{\"nlist\": 16, \"pq_bytes\": 8, \"kv\": \"lmdb\"}", path),
                     0);
    check_estimates(path, uq, nq);
    snprintf(path, sizeof path, "%s/est-ip", f->dir);
    assert_int_equal(build("ivfpq-record", f->base, n, ANN_METRIC_IP,
                           "{\"nlist\": 16, \"pq_bytes\": 8, \"kv\": \"lmdb\"}", path),
                     0);
    check_estimates(path, f->queries, nq);
    free(unit);
    free(uq);
}

/*
 * Unit vectors: the generator's cosine distribution (Cohere-shaped; seed
 * 42), exact ground truth computed here.  UDIM / 8 code bytes (8 floats
 * per sub-quantizer, as 768-d data at 96 bytes).
 *
 * test_cosine_l2_parity builds the same vectors as cosine and as l2.  Both
 * coarse quantizers are plain k-means and the cosine estimate is the l2 one
 * halved (exact in float), so the two indexes hold the same centroids and
 * the same chunk records (ids, betas, codes), and at rerank 1 (the ADC
 * ranking alone picks the ids) every query returns the same ids in the same
 * order.  With rerank > 1 the exact re-rank computes 1 - <q, x> for cosine
 * and |q - x|^2 for l2, whose float roundings differ, so the order of
 * near-ties could too: asserted there are the same lists scanned and recall
 * within 0.001.  Measured (AVX-512 kernels; ANNLAB_SIMD=scalar in brackets):
 * every query's ids identical at both depths; recall@10 at nprobe 2 / 8,
 * rerank 1: 0.6228 / 0.7602 (0.6256 / 0.7642), rerank 10: 0.7344 / 0.9390
 * (0.7332 / 0.9396), cosine and l2 alike.  Version 2 trained spherical
 * cosine centroids: another coarse.fbin, and rerank-1 recall 0.6226 /
 * 0.7634 against l2's 0.6228 / 0.7602.
 */
#define UN 10000
#define UDIM 256
#define UNQ 500
#define ULISTS 50

/* The whole file at path; *len its size (caller frees). */
static uint8_t *slurp(const char *path, size_t *len)
{
    uint8_t *bytes = tu_read_file(path, len);
    if (!bytes)
        fail_msg("%s: cannot read", path);
    return bytes;
}

static void test_cosine_l2_parity(void **state)
{
    fixture *f = *state;
    ann_gen_params gp = { .dim = UDIM, .metric = ANN_METRIC_COSINE, .seed = 42 };
    ann_generator *g = NULL;
    float *base = malloc((size_t)UN * UDIM * sizeof(float));
    float *q = malloc((size_t)UNQ * UDIM * sizeof(float));
    int32_t *gt = malloc((size_t)UNQ * K * sizeof(int32_t));
    float *gd = malloc((size_t)UNQ * K * sizeof(float));
    uint32_t *ids_cos = malloc((size_t)UNQ * K * sizeof(uint32_t));
    uint32_t *ids_l2 = malloc((size_t)UNQ * K * sizeof(uint32_t));
    assert_int_equal(ann_generator_create(&gp, &g), 0);
    assert_int_equal(ann_generator_rows(g, ANN_GEN_BASE, 0, UN, base), 0);
    assert_int_equal(ann_generator_rows(g, ANN_GEN_QUERY, 0, UNQ, q), 0);
    ann_generator_destroy(g);
    ann_vecsrc *src = NULL;
    assert_int_equal(ann_vecsrc_from_memory(base, UN, UDIM, ANN_METRIC_COSINE, &src), 0);
    assert_int_equal(ann_exact_knn(src, q, UNQ, K, 0, gt, gd), 0);
    ann_vecsrc_destroy(src);

    char cos_path[4096], l2_path[4096], params[128];
    snprintf(cos_path, sizeof cos_path, "%s/unit-cos", f->dir);
    snprintf(l2_path, sizeof l2_path, "%s/unit-l2", f->dir);
    snprintf(params, sizeof params, "{\"nlist\": %d, \"pq_bytes\": %d, \"kv\": \"lmdb\"}", ULISTS,
             UDIM / 8);
    assert_int_equal(build_dim("ivfpq-record", base, UN, UDIM, ANN_METRIC_COSINE, params,
                               cos_path),
                     0);
    assert_int_equal(build_dim("ivfpq-record", base, UN, UDIM, ANN_METRIC_L2, params, l2_path),
                     0);

    /* the same coarse quantizer, byte for byte */
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/%s", cos_path, IVFPQ_COARSE_FILE);
    snprintf(b, sizeof b, "%s/%s", l2_path, IVFPQ_COARSE_FILE);
    size_t la, lb;
    uint8_t *ca = slurp(a, &la), *cb = slurp(b, &lb);
    assert_int_equal(la, lb);
    if (memcmp(ca, cb, la) != 0)
        fail_msg("%s and %s differ: the cosine coarse quantizer is not the l2 one", a, b);
    free(ca);
    free(cb);
    /* the same chunk records (ids, betas, codes) */
    ann_engine *ec = open_index(cos_path), *el = open_index(l2_path);
    assert_int_equal(ec->meta.lists, el->meta.lists);
    for (uint32_t l = 0; l < ec->meta.lists; l++) {
        assert_int_equal(ec->list_len[l], el->list_len[l]);
        for (uint32_t ch = 0; (uint64_t)ch * IVFPQ_CHUNK_ENTRIES < ec->list_len[l]; ch++) {
            size_t lc, ll;
            uint8_t *rc_ = get_record(cos_path, 1, IVFPQ_TABLE_LIST, (uint64_t)l << 32 | ch, &lc);
            uint8_t *rl_ = get_record(l2_path, 1, IVFPQ_TABLE_LIST, (uint64_t)l << 32 | ch, &ll);
            assert_int_equal(lc, ll);
            if (memcmp(rc_, rl_, lc) != 0)
                fail_msg("list %u chunk %u: the cosine and l2 records differ", l, ch);
            free(rc_);
            free(rl_);
        }
    }
    ann_engine_find("ivfpq-record")->close(ec);
    ann_engine_find("ivfpq-record")->close(el);

    query_set qs = { q, UDIM, UNQ, gt };
    const uint32_t nprobes[] = { 2, 8 }, reranks[] = { 1, 10 };
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            char sp[64];
            snprintf(sp, sizeof sp, "{\"nprobe\": %u, \"rerank\": %u}", nprobes[i], reranks[j]);
            run_result r_cos, r_l2;
            assert_int_equal(run_set(&qs, "ivfpq-record", cos_path, "{\"kv\": \"lmdb\"}", sp,
                                     &r_cos, ids_cos),
                             0);
            assert_int_equal(run_set(&qs, "ivfpq-record", l2_path, "{\"kv\": \"lmdb\"}", sp,
                                     &r_l2, ids_l2),
                             0);
            int differ = 0;
            for (int k = 0; k < UNQ; k++)
                differ += memcmp(ids_cos + (size_t)k * K, ids_l2 + (size_t)k * K,
                                 K * sizeof(uint32_t)) != 0;
            print_message("nprobe %u, rerank %u: recall@10 cosine %.4f, l2 %.4f; %d of %d "
                          "queries with other ids or order\n",
                          nprobes[i], reranks[j], r_cos.recall, r_l2.recall, differ, UNQ);
            assert_int_equal(r_cos.st.code_dists, r_l2.st.code_dists); /* the same lists */
            if (reranks[j] == 1 && differ)
                fail_msg("nprobe %u, rerank 1: %d queries return other ids than l2", nprobes[i],
                         differ);
            if (fabs(r_cos.recall - r_l2.recall) > 0.001)
                fail_msg("nprobe %u, rerank %u: cosine recall %.4f, l2 %.4f: more than 0.001 "
                         "apart",
                         nprobes[i], reranks[j], r_cos.recall, r_l2.recall);
        }
    }
    free(ids_cos);
    free(ids_l2);
    free(base);
    free(q);
    free(gt);
    free(gd);
}

/* Issue 14: a flipped byte in coarse.fbin probed the wrong lists without
 * an error; version 4 checks the centroids against the metadata record. */
static void test_coarse_file_checked(void **state)
{
    fixture *f = *state;
    char path[4096], coarse[4200];
    snprintf(path, sizeof path, "%s/coarse-flip", f->dir);
    assert_int_equal(build("ivfpq-record", f->base, 500, ANN_METRIC_L2,
                           "{\"nlist\": 8, \"pq_bytes\": 8, \"kv\": \"lmdb\"}", path),
                     0);
    snprintf(coarse, sizeof coarse, "%s/coarse.fbin", path);
    size_t len = 0;
    uint8_t *bytes = tu_read_file(coarse, &len);
    bytes[8 + 4 * 5 + 1] ^= 0x04; /* a low mantissa bit of one coordinate: still finite */
    assert_int_equal(tu_write_file(coarse, bytes, len), 0);
    free(bytes);
    json_t *op = js("{\"kv\": \"lmdb\"}");
    ann_engine *e = NULL;
    int rc = ann_engine_open(ann_engine_find("ivfpq-record"), path, op, &e, NULL);
    json_decref(op);
    assert_int_equal(rc, ANN_ECORRUPT);
    assert_null(e);
    char want[4400];
    snprintf(want, sizeof want, "%s: centroids checksum 0x", coarse);
    if (strncmp(ann_errmsg(rc), want, strlen(want)) != 0)
        fail_msg("message \"%s\"", ann_errmsg(rc));
}

/* Stores of earlier versions, the same frame with each earlier version. */
static void test_old_versions_refused(void **state)
{
    fixture *f = *state;
    char path[4096];
    snprintf(path, sizeof path, "%s/old-version", f->dir);
    assert_int_equal(build("ivfpq-record", f->base, 500, ANN_METRIC_COSINE,
                           "{\"nlist\": 4, \"pq_bytes\": 8, \"kv\": \"lmdb\"}", path),
                     0);
    size_t len;
    uint8_t *meta = get_record(path, 0, IVFPQ_TABLE_META, 0, &len);
    assert_int_equal(len, IVFPQ_META_BYTES);
    for (uint32_t v = 1; v < IVFPQ_VERSION; v++) {
        ann_frame_seal(meta, len, IVFPQ_MAGIC, v);
        put_record(path, 0, IVFPQ_TABLE_META, 0, meta, len);
        json_t *op = js("{\"kv\": \"lmdb\"}");
        ann_engine *e = NULL;
        int rc = ann_engine_open(ann_engine_find("ivfpq-record"), path, op, &e, NULL);
        json_decref(op);
        assert_int_equal(rc, ANN_EVERSION);
        assert_null(e);
        char want[4400];
        snprintf(want, sizeof want,
                 "%s/lmdb: metadata record: ivfpq-record index version %u, this build reads "
                 "%u; rebuild the index",
                 path, v, IVFPQ_VERSION);
        assert_string_equal(ann_errmsg(rc), want);
    }
    free(meta);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recall_bound),
        cmocka_unit_test(test_oracle_faiss),
        cmocka_unit_test(test_read_accounting),
        cmocka_unit_test(test_reads_in_flight),
        cmocka_unit_test(test_golden_records),
        cmocka_unit_test(test_estimate_exact),
        cmocka_unit_test(test_cosine_l2_parity),
        cmocka_unit_test(test_coarse_file_checked),
        cmocka_unit_test(test_old_versions_refused),
        cmocka_unit_test(test_bad_parameters),
        cmocka_unit_test(test_base_sources),
        cmocka_unit_test(test_corrupt_records),
    };
    return cmocka_run_group_tests_name("ivfpq_record", tests, setup, teardown);
}
