/*
 * bench_insert.c: what a live insert into diskann-record costs against the
 * store write it is made of.  FreshDiskANN's insert, as diskann-record does
 * it after training, encodes the vector with the index's PQ codebook and
 * writes the vector and its code in one write batch to a pending list; the
 * graph is not touched until a merge.  So an insert should cost about one
 * batch of two records in the store.  This prints both, side by side:
 *
 *   build/bench/bench_insert BUNDLE_DIR WORK_DIR [--n-build 20000]
 *       [--inserts 1000] [--repeats 3] [--kv rocksdb,lmdb] [--R 64]
 *       [--L-build 100] [--pq-bytes 96]
 *
 * WORK_DIR must not exist: the bench makes it, builds a diskann-record index
 * over the bundle's first n-build vectors in WORK_DIR/index (both stores),
 * then per store and repeat, interleaved: `inserts` inserts of the
 * next rows, one at a time on one thread (ids continue from the previous
 * repeat, so every insert is new), and `inserts` batches of the same two
 * records (the vector, 4 x dim bytes, and a code of pq_bytes) written
 * straight to a scratch store of the same backend opened the same way (an
 * unsynced RocksDB WAL; LMDB without a sync per commit, as the engine's
 * default `sync: false`).  Latency per call (CLOCK_MONOTONIC): p50, p99,
 * mean; median over repeats, and the ratio insert / store write.  WORK_DIR
 * is left for inspection (remove it before the next run).
 */
#include "datasets/bundle.h"
#include "engines/core/kv.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"
#include "engines/engine.h"
#include "bench/benchutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_REPEATS 15

typedef struct {
    const char *bundle, *work, *kvs;
    int n_build, inserts, repeats, R, L_build, pq_bytes;
} opts;

/* p50, p99 and mean of n latencies (sorts them). */
static void summarize(double *lat, int n, double out[3])
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += lat[i];
    qsort(lat, (size_t)n, sizeof *lat, bench_cmp_double);
    out[0] = lat[n / 2];
    out[1] = lat[(size_t)((n - 1) * 0.99)];
    out[2] = sum / n;
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){ .kvs = "rocksdb,lmdb", .n_build = 20000, .inserts = 1000, .repeats = 3,
                 .R = 64, .L_build = 100, .pq_bytes = 96 };
    int pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (pos == 0)
                o->bundle = a;
            else if (pos == 1)
                o->work = a;
            pos++;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (!strcmp(a, "--n-build"))
            o->n_build = atoi(v);
        else if (!strcmp(a, "--inserts"))
            o->inserts = atoi(v);
        else if (!strcmp(a, "--repeats"))
            o->repeats = atoi(v);
        else if (!strcmp(a, "--kv"))
            o->kvs = v;
        else if (!strcmp(a, "--R"))
            o->R = atoi(v);
        else if (!strcmp(a, "--L-build"))
            o->L_build = atoi(v);
        else if (!strcmp(a, "--pq-bytes"))
            o->pq_bytes = atoi(v);
        else
            return -1;
    }
    return pos == 2 && o->n_build > 0 && o->inserts > 0 && o->repeats >= 1 &&
                   o->repeats <= MAX_REPEATS
               ? 0
               : -1;
}

/* Build WORK/index over the first n_build rows unless it exists. */
static int build_index(const opts *o, const ann_bundle *b, const ann_engine_ops *ops,
                       const char *dir)
{
    float *x = malloc((size_t)o->n_build * b->dim * sizeof(float));
    ann_vecsrc *base = NULL, *src = NULL;
    json_t *bp = NULL, *report = NULL;
    int rc = x ? ann_bundle_base(b, &base) : -12;
    if (!rc)
        rc = ann_vecsrc_read(base, 0, (uint64_t)o->n_build, x);
    if (!rc)
        rc = ann_vecsrc_from_memory(x, (uint64_t)o->n_build, b->dim, base->metric, &src);
    if (!rc) {
        bp = json_pack("{s:i, s:i, s:f, s:i, s:s}", "R", o->R, "L_build", o->L_build, "alpha",
                       1.2, "pq_bytes", o->pq_bytes, "kv", "both");
        printf("building %s over %d vectors (R %d, L_build %d, %d-byte PQ) ...\n", dir,
               o->n_build, o->R, o->L_build, o->pq_bytes);
        fflush(stdout);
        double t0 = ann_mono_s();
        rc = ann_engine_build(ops, src, bp, dir, NULL, &report);
        printf("built in %.1f s\n", ann_mono_s() - t0);
    }
    json_decref(bp);
    json_decref(report);
    ann_vecsrc_destroy(src);
    ann_vecsrc_destroy(base);
    free(x);
    return rc;
}

/* `count` inserts of rows [first, first + count) into eng; latencies in lat. */
static int time_inserts(const ann_engine_ops *ops, ann_engine *eng, const ann_vecsrc *base,
                        uint32_t first, int count, float *vecs, double *lat)
{
    int rc = ann_vecsrc_read(base, first, (uint64_t)count, vecs);
    for (int i = 0; !rc && i < count; i++) {
        double t0 = ann_mono_s();
        rc = ops->insert(eng, first + (uint32_t)i, vecs + (size_t)i * base->dim, base->dim);
        lat[i] = ann_mono_s() - t0;
    }
    return rc;
}

/* `count` batches of a vector record and a code record into s. */
static int time_writes(kv_store *s, uint32_t first, int count, const float *vecs, uint32_t dim,
                       uint32_t m, double *lat)
{
    uint8_t code[4096] = { 0 };
    int rc = 0;
    for (int i = 0; !rc && i < count; i++) {
        uint8_t key[KV_KEY_U32_BYTES];
        uint32_t id = first + (uint32_t)i;
        memcpy(code, vecs + (size_t)i * dim, m < 4 * dim ? m : 4 * dim);
        double t0 = ann_mono_s();
        kv_txn *t = NULL;
        rc = kv_txn_begin(s, &t);
        if (!rc)
            rc = kv_txn_put(t, key, kv_key_u32(key, 0x02, id), vecs + (size_t)i * dim,
                            (size_t)dim * 4);
        if (!rc)
            rc = kv_txn_put(t, key, kv_key_u32(key, 0x05, id), code, m);
        if (!rc) {
            rc = kv_txn_commit(t);
            t = NULL;
        }
        kv_txn_abort(t);
        lat[i] = ann_mono_s() - t0;
    }
    return rc;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_insert BUNDLE_DIR WORK_DIR [--n-build 20000] "
                        "[--inserts 1000] [--repeats 3 (at most %d)] [--kv rocksdb,lmdb] "
                        "[--R 64] [--L-build 100] [--pq-bytes 96]\n",
                MAX_REPEATS);
        return 2;
    }
    const ann_engine_ops *ops = ann_engine_find("diskann-record");
    ann_bundle b = { 0 };
    ann_vecsrc *base = NULL;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/index", o.work);
    int rc = ann_bundle_open(o.bundle, &b);
    if (!rc)
        rc = ann_bundle_base(&b, &base);
    int nstores = 1;
    for (const char *c = o.kvs; *c; c++)
        nstores += *c == ',';
    if (!rc && (uint64_t)o.n_build + 2ull * (uint64_t)nstores * o.repeats * o.inserts > b.n)
        rc = ann_fail(ANN_EPARAM, "%s: %llu vectors, fewer than n-build + 2 x stores x repeats x "
                      "inserts", o.bundle, (unsigned long long)b.n);
    if (!rc && mkdir(o.work, 0755) != 0)
        rc = ann_fail_errno("%s: mkdir (the work directory must not exist)", o.work);
    if (!rc)
        rc = build_index(&o, &b, ops, dir);
    if (rc) {
        fprintf(stderr, "bench_insert: %s\n", ann_errmsg(rc));
        return 1;
    }
    printf("bundle %s: n %llu, dim %u; %d inserts a repeat, %d repeats, one thread\n", b.name,
           (unsigned long long)b.n, b.dim, o.inserts, o.repeats);
    printf("\n%-8s %-14s %9s %9s %9s\n", "store", "operation", "p50_us", "p99_us", "mean_us");
    float *vecs = malloc((size_t)o.inserts * b.dim * sizeof(float));
    double *lat = malloc((size_t)o.inserts * sizeof *lat);
    int nkv = 0;
    char kvlist[64];
    snprintf(kvlist, sizeof kvlist, "%s", o.kvs);
    for (char *save = NULL, *name = strtok_r(kvlist, ",", &save); !rc && name;
         name = strtok_r(NULL, ",", &save), nkv++) {
        kv_backend be;
        rc = kv_backend_parse(name, &be);
        if (rc)
            break;
        json_t *op = json_pack("{s:s, s:s, s:b, s:i}", "kv", name, "profile", "embedded",
                               "updates", 1, "merge_every", 0);
        ann_engine *eng = NULL;
        json_t *orep = NULL;
        rc = ann_engine_open(ops, dir, op, &eng, &orep);
        json_decref(op);
        json_decref(orep);
        char raw[4300];
        snprintf(raw, sizeof raw, "%s/raw-%s", o.work, name);
        kv_options ko = { .backend = be, .profile = KV_PROFILE_EMBEDDED, .create = 1,
                          .relaxed_sync = 1 };
        kv_store *s = NULL;
        if (!rc)
            rc = kv_open(raw, &ko, &s);
        double ins[MAX_REPEATS][3], wr[MAX_REPEATS][3];
        /* rows after the build, two blocks per repeat per store: ids stay new */
        uint32_t next = (uint32_t)o.n_build + (uint32_t)nkv * 2u * (uint32_t)o.repeats *
                                                  (uint32_t)o.inserts;
        for (int r = 0; !rc && r < o.repeats; r++) {
            rc = time_inserts(ops, eng, base, next, o.inserts, vecs, lat);
            if (!rc)
                summarize(lat, o.inserts, ins[r]);
            if (!rc)
                rc = time_writes(s, next, o.inserts, vecs, b.dim, (uint32_t)o.pq_bytes, lat);
            if (!rc)
                summarize(lat, o.inserts, wr[r]);
            next += 2u * (uint32_t)o.inserts;
        }
        if (eng)
            ops->close(eng);
        int crc = kv_close(s);
        if (!rc)
            rc = crc;
        if (rc)
            break;
        double mi[3], mw[3], col[MAX_REPEATS];
        for (int k = 0; k < 3; k++) {
            for (int r = 0; r < o.repeats; r++)
                col[r] = ins[r][k];
            mi[k] = bench_median(col, o.repeats);
            for (int r = 0; r < o.repeats; r++)
                col[r] = wr[r][k];
            mw[k] = bench_median(col, o.repeats);
        }
        printf("%-8s %-14s %9.1f %9.1f %9.1f\n", name, "insert", mi[0] * 1e6, mi[1] * 1e6,
               mi[2] * 1e6);
        printf("%-8s %-14s %9.1f %9.1f %9.1f\n", name, "store write", mw[0] * 1e6,
               mw[1] * 1e6, mw[2] * 1e6);
        printf("%-8s %-14s %9.2f %9.2f %9.2f\n", name, "ratio", mi[0] / mw[0], mi[1] / mw[1],
               mi[2] / mw[2]);
    }
    free(vecs);
    free(lat);
    ann_vecsrc_destroy(base);
    ann_bundle_close(&b);
    if (rc) {
        fprintf(stderr, "bench_insert: %s\n", ann_errmsg(rc));
        return 1;
    }
    return 0;
}
