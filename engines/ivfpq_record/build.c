/*
 * build.c: ivfpq-record's build, IVFADC of Jégou, Douze & Schmid, "Product
 * quantization for nearest neighbor search" (TPAMI 2011): a coarse k-means
 * quantizer of `nlist` centroids, each vector filed in the list of its
 * nearest centroid, and the residual x - c encoded by product quantization
 * (pq_bytes sub-quantizers of 256 centroids).  Both quantizers are the
 * core's (engines/core/kmeans.h, pq.h); this file only samples, assigns,
 * encodes and writes the records.
 *
 * Choices: the coarse quantizer trains on an evenly strided sample of at
 * most 256 rows per list (FAISS's default cap).  For l2 and cosine it is
 * plain k-means and vectors are filed by nearest centroid (L2), the
 * distance the search ranks lists by (|q - c|^2, halved for cosine), so a
 * cosine build of unit vectors holds the same centroids, codes and betas
 * as the l2 build of the same vectors and ranks identically up to the
 * factor 1/2.  Format version 2 trained cosine centroids spherically (unit)
 * and ranked lists by 1 - <q, c>; the mean of a list's unit vectors is
 * shorter than 1 and minimises the sum of its squared residuals, so putting
 * it on the sphere lengthens the residuals the PQ codes encode (their sum
 * of squares grows by n (1 - |c|)^2 for n members of mean c; that build was
 * 0.008 to 0.009 below l2 in ADC-only recall@10 at 20,000 x 768,
 * search.c).  For ip data it stays spherical k-means with vectors filed by
 * largest inner product, the ranking the search uses for ip.  The residual
 * codebook trains on a strided sample of pq_sample_rows() residuals.  Each
 * entry also stores beta = <c, r'> + |r'|^2 / 2 of its decoded residual r'
 * and list centroid c, so the search ranks l2 and cosine entries by
 * |q - c - r'|^2 with one inner-product table per query (search.c).  Lists
 * hold ids in ascending order, split into chunk records of
 * IVFPQ_CHUNK_ENTRIES (layout.h).
 *
 * The base is streamed, never copied whole: assignment, encoding and the
 * vector records take it in blocks of IVFPQ_STREAM_ROWS through
 * ann_vecsrc_view (a bundle's .fbin lends its rows from a read-only
 * mapping; other sources are read into one block buffer), and the samples
 * take their rows one by one.  Only when the coarse sample is the whole
 * base (n <= 256 nlist, e.g. 1M rows at nlist 4,000) is the base held at
 * once (ann_vecsrc_hold: lent, or copied for sources that cannot lend).
 * Encoding runs blocks of IVFPQ_ENCODE_ROWS on `threads` workers, each
 * row's code and beta written by one worker, so codes do not depend on the
 * thread count.
 */
#include "engines/ivfpq_record/ivfpq.h"

#include "engines/core/binio.h"
#include "engines/core/crc32c.h"
#include "engines/core/distance.h"
#include "engines/core/ivf_defaults.h"
#include "engines/core/kmeans.h"
#include "engines/core/kv_params.h"
#include "engines/core/parallel.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/ivfpq_record/layout.h"
#include "engines/core/ticks.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const ann_param_spec ivfpq_build_params[] = {
    { .name = "nlist", .type = ANN_PARAM_INT, .min = 0, .max = 1 << 22, .def = 0,
      .help = "inverted lists (0 = round(4 sqrt(n)))" },
    { .name = "pq_bytes", .type = ANN_PARAM_INT, .min = 0, .max = 4096, .def = 0,
      .help = "PQ code bytes per vector (0 = pq.h default, dim/8 rounded up)" },
    { .name = "seed", .type = ANN_PARAM_INT, .min = 0, .max = 9007199254740991.0, .def = 1,
      .help = "seed of k-means and PQ training" },
    { .name = "threads", .type = ANN_PARAM_INT, .min = 0, .max = 1024, .def = 0,
      .help = "build threads (0 = all cores)" },
    { .name = "kv", .type = ANN_PARAM_ENUM, .choices = kv_build_choices,
      .def_str = KV_BUILD_DEFAULT, .help = "record stores to write" },
    ANN_PARAM_END_OF("ivfpq-record build"),
};

#define IVFPQ_COARSE_ROWS_PER_LIST 256
#define IVFPQ_ENCODE_ROWS 1024  /* rows per encoding work item */
#define IVFPQ_STREAM_ROWS 16384 /* rows per block of the streamed base */
#define IVFPQ_COARSE_ITERS 20 /* Lloyd iterations of the coarse quantizer */

/* What the build computed, handed to the writers. */
typedef struct ivfpq_built {
    ivfpq_meta meta;
    const ann_vecsrc *src; /* the base, streamed */
    float *block;          /* IVFPQ_STREAM_ROWS x dim: read buffer for sources that cannot lend */
    uint32_t *list_len;   /* lists */
    uint64_t *list_start; /* lists + 1: offsets into order */
    uint32_t *order;      /* n ids, grouped by list, ascending within */
    uint8_t *codes;       /* n x m, by id */
    float *betas;         /* n, by id: <c, r'> + |r'|^2 / 2 (layout.h) */
} ivfpq_built;

/* Rows i * n / s of src for i < s into out (s * dim floats), one row at a time. */
static int strided_sample(const ann_vecsrc *src, uint64_t s, float *out)
{
    for (uint64_t i = 0; i < s; i++) {
        int rc = ann_vecsrc_read(src, i * src->n / s, 1, out + i * src->dim);
        if (rc)
            return rc;
    }
    return 0;
}

/* Rows [r0, r0 + cnt) of the base, cnt <= IVFPQ_STREAM_ROWS. */
static int base_block(const ivfpq_built *b, uint64_t r0, uint64_t cnt, const float **out)
{
    return ann_vecsrc_view(b->src, r0, cnt, b->block, out);
}

/* File each vector in a list: nearest centroid by L2 (l2 and cosine),
 * largest inner product (ip). */
static int assign_lists(const ivfpq_built *b, const float *centroids, int threads,
                        uint32_t *assign)
{
    const ivfpq_meta *m = &b->meta;
    for (uint64_t r0 = 0; r0 < m->n; r0 += IVFPQ_STREAM_ROWS) {
        uint64_t cnt = m->n - r0 < IVFPQ_STREAM_ROWS ? m->n - r0 : IVFPQ_STREAM_ROWS;
        const float *x;
        int rc = base_block(b, r0, cnt, &x);
        if (rc)
            return rc;
        if (m->metric != ANN_METRIC_IP) {
            rc = kmeans_assign(x, cnt, m->dim, centroids, m->lists, threads, assign + r0, NULL);
            if (rc)
                return rc;
            continue;
        }
        for (uint64_t i = 0; i < cnt; i++) {
            const float *v = x + i * m->dim;
            float best = -__builtin_inff();
            assign[r0 + i] = 0;
            for (uint32_t c = 0; c < m->lists; c++) {
                float ip = ann_ip(v, centroids + (size_t)c * m->dim, m->dim);
                if (ip > best) {
                    best = ip;
                    assign[r0 + i] = c;
                }
            }
        }
    }
    return 0;
}

/* Residual encoding of one streamed block: rows x (cnt of them, from row r0). */
typedef struct encode_job {
    ivfpq_built *b;
    const pq_codebook *cb;
    const float *centroids;
    const uint32_t *assign;
    const float *x;
    uint64_t r0, cnt;
    float *enc; /* per worker: IVFPQ_ENCODE_ROWS x dim */
} encode_job;

static int encode_run(void *arg, uint64_t bb, uint64_t be, int worker)
{
    encode_job *j = arg;
    ivfpq_built *b = j->b;
    const uint32_t dim = b->meta.dim, mb = b->meta.pq_bytes;
    float *enc = j->enc + (size_t)worker * IVFPQ_ENCODE_ROWS * dim;
    for (uint64_t blk = bb; blk < be; blk++) {
        uint64_t i0 = blk * IVFPQ_ENCODE_ROWS;
        uint64_t cnt = j->cnt - i0 < IVFPQ_ENCODE_ROWS ? j->cnt - i0 : IVFPQ_ENCODE_ROWS;
        uint64_t v0 = j->r0 + i0;
        for (uint64_t r = 0; r < cnt; r++) {
            const float *c = j->centroids + (size_t)j->assign[v0 + r] * dim;
            const float *x = j->x + (i0 + r) * dim;
            for (uint32_t d = 0; d < dim; d++)
                enc[r * dim + d] = x[d] - c[d];
        }
        int rc = pq_encode(j->cb, enc, cnt, 1, b->codes + v0 * mb);
        if (rc)
            return rc;
        for (uint64_t r = 0; r < cnt; r++) {
            float *rq = enc + r * dim; /* the residual, now decoded in place */
            pq_decode(j->cb, b->codes + (v0 + r) * mb, rq);
            b->betas[v0 + r] = ivfpq_beta(j->centroids + (size_t)j->assign[v0 + r] * dim, rq, dim);
            if (!isfinite(b->betas[v0 + r]))
                return ann_fail(ANN_EDATA,
                                "ivfpq-record build: vector %llu: <c, r'> + |r'|^2 / 2 "
                                "overflows float",
                                (unsigned long long)(v0 + r));
        }
    }
    return 0;
}

static int write_records(ivfpq_built *b, const char *path, kv_backend backend)
{
    const ivfpq_meta *m = &b->meta;
    int rc = 0;
    kv_store *kv = NULL;
    kv_bulk *bulk = NULL;
    size_t cap = IVFPQ_CHUNK_BYTES(IVFPQ_CHUNK_ENTRIES, m->pq_bytes);
    size_t dir_bytes = ivfpq_dir_bytes(m->lists);
    if (cap < dir_bytes)
        cap = dir_bytes;
    if (cap < (size_t)m->dim * 4)
        cap = (size_t)m->dim * 4;
    uint8_t *buf = malloc(cap);
    uint8_t key[KV_KEY_U64_BYTES], mrec[IVFPQ_META_BYTES];
    kv_options opt = { .backend = backend, .profile = KV_PROFILE_EMBEDDED, .create = 1 };
    if (!buf) {
        rc = ann_fail(-ENOMEM, "%s: no memory for a record", path);
        goto out;
    }
    rc = kv_open(path, &opt, &kv);
    if (rc)
        goto out;
    uint64_t expect = m->n * ((uint64_t)m->dim * 4 + m->pq_bytes + 8 + 2 * KV_KEY_U64_BYTES);
    rc = kv_bulk_begin(kv, expect, &bulk);
    if (rc)
        goto out;
    /* table 0x02: list chunks, in (list, chunk) order */
    for (uint32_t l = 0; l < m->lists; l++) {
        for (uint32_t c = 0; (uint64_t)c * IVFPQ_CHUNK_ENTRIES < b->list_len[l]; c++) {
            uint32_t first = c * IVFPQ_CHUNK_ENTRIES;
            uint32_t cnt = b->list_len[l] - first < IVFPQ_CHUNK_ENTRIES ? b->list_len[l] - first
                                                                        : IVFPQ_CHUNK_ENTRIES;
            const uint32_t *ids = b->order + b->list_start[l] + first;
            ann_put_u32(buf, l);
            ann_put_u32(buf + 4, c);
            ann_put_u32(buf + 8, cnt);
            ann_put_u32(buf + 12, 0);
            uint8_t *betas = buf + IVFPQ_CHUNK_BETAS_OFF(cnt);
            uint8_t *codes = buf + IVFPQ_CHUNK_CODES_OFF(cnt);
            for (uint32_t j = 0; j < cnt; j++) {
                ann_put_u32(buf + IVFPQ_CHUNK_HEADER_BYTES + 4 * (size_t)j, ids[j]);
                ann_put_f32(betas + 4 * (size_t)j, b->betas[ids[j]]);
                memcpy(codes + (size_t)j * m->pq_bytes, b->codes + (size_t)ids[j] * m->pq_bytes,
                       m->pq_bytes);
            }
            kv_key_u64(key, IVFPQ_TABLE_LIST, (uint64_t)l << 32 | c);
            rc = kv_bulk_add(bulk, key, KV_KEY_U64_BYTES, buf,
                             IVFPQ_CHUNK_BYTES(cnt, m->pq_bytes));
            if (rc)
                goto out;
        }
    }
    /* table 0x03: full vectors, streamed from the base */
    for (uint64_t r0 = 0; r0 < m->n; r0 += IVFPQ_STREAM_ROWS) {
        uint64_t cnt = m->n - r0 < IVFPQ_STREAM_ROWS ? m->n - r0 : IVFPQ_STREAM_ROWS;
        const float *blk;
        rc = base_block(b, r0, cnt, &blk);
        if (rc)
            goto out;
        for (uint64_t v = r0; v < r0 + cnt; v++) {
            const float *x = blk + (v - r0) * m->dim;
            for (uint32_t j = 0; j < m->dim; j++)
                ann_put_f32(buf + 4 * (size_t)j, x[j]);
            kv_key_u32(key, IVFPQ_TABLE_VECTOR, (uint32_t)v);
            rc = kv_bulk_add(bulk, key, KV_KEY_U32_BYTES, buf, (size_t)m->dim * 4);
            if (rc)
                goto out;
        }
    }
    /* table 0x04: the list directory */
    ivfpq_dir_encode(b->list_len, m->lists, buf);
    kv_key_u32(key, IVFPQ_TABLE_DIR, 0);
    rc = kv_bulk_add(bulk, key, KV_KEY_U32_BYTES, buf, dir_bytes);
    if (rc)
        goto out;
    rc = kv_bulk_finish(bulk);
    bulk = NULL;
    if (rc)
        goto out;
    ivfpq_meta_encode(m, mrec); /* last: a store without it never opens */
    kv_key_u32(key, IVFPQ_TABLE_META, 0);
    rc = kv_put(kv, key, KV_KEY_U32_BYTES, mrec, sizeof mrec);
out:
    kv_bulk_abort(bulk);
    if (kv) {
        int crc = kv_close(kv);
        if (!rc)
            rc = crc;
    }
    free(buf);
    return rc;
}

int ivfpq_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
                const char *dir, json_t *report)
{
    (void)bctx; /* no shared artifacts */
    int rc = 0;
    if (src->n > UINT32_MAX)
        return ann_fail(ANN_EPARAM, "ivfpq-record: %llu vectors, at most %u",
                        (unsigned long long)src->n, UINT32_MAX);
    ivfpq_built b = { .meta = { .metric = src->metric, .n = src->n, .dim = src->dim,
                                .chunk_entries = IVFPQ_CHUNK_ENTRIES },
                      .src = src };
    ivfpq_meta *m = &b.meta;
    uint32_t nlist = (uint32_t)ann_param_int(params, ivfpq_build_params, "nlist");
    uint32_t pq_bytes = (uint32_t)ann_param_int(params, ivfpq_build_params, "pq_bytes");
    int threads = (int)ann_param_int(params, ivfpq_build_params, "threads");
    m->seed = (uint64_t)ann_param_int(params, ivfpq_build_params, "seed");
    const char *which = ann_param_enum(params, ivfpq_build_params, "kv");
    m->nlist = nlist ? nlist : ann_ivf_default_nlist(src->n);
    m->lists = src->n < m->nlist ? (uint32_t)src->n : m->nlist;
    m->pq_bytes = pq_bytes ? pq_bytes : pq_default_bytes(src->dim);
    if (m->pq_bytes > src->dim)
        return ann_fail(ANN_EPARAM, "build.pq_bytes: %u exceeds dim %u", m->pq_bytes, src->dim);

    float *sample = NULL, *centroids = NULL, *res = NULL, *enc = NULL;
    ann_vecsrc_held held = { 0 };
    uint32_t *assign = NULL;
    ann_vecsrc *res_src = NULL;
    pq_codebook *cb = NULL;
    ann_vecwriter w = { 0 };
    int writer_open = 0;
    char path[4200];
    double t0 = ann_mono_s(), t_coarse = t0, t_pq = t0, t_encode = t0;

    if (threads <= 0)
        threads = ann_ncores();
    if (!src->rows)
        b.block = malloc((size_t)IVFPQ_STREAM_ROWS * src->dim * sizeof(float));
    centroids = malloc(((size_t)m->lists ? m->lists : 1) * src->dim * sizeof(float));
    assign = malloc((src->n ? src->n : 1) * sizeof *assign);
    b.list_len = calloc(m->lists ? m->lists : 1, sizeof *b.list_len);
    b.list_start = calloc((size_t)m->lists + 1, sizeof *b.list_start);
    b.order = malloc((src->n ? src->n : 1) * sizeof *b.order);
    b.codes = malloc((src->n ? src->n : 1) * (size_t)m->pq_bytes);
    b.betas = malloc((src->n ? src->n : 1) * sizeof *b.betas);
    if ((!src->rows && !b.block) || !centroids || !assign || !b.list_len || !b.list_start || !b.order || !b.codes ||
        !b.betas) {
        rc = ann_fail(-ENOMEM, "ivfpq-record build: no memory for %llu vectors",
                      (unsigned long long)src->n);
        goto out;
    }

    if (src->n > 0) {
        /* coarse quantizer */
        uint64_t s = (uint64_t)m->lists * IVFPQ_COARSE_ROWS_PER_LIST;
        if (s > src->n)
            s = src->n;
        const float *ksample;
        if (s == src->n) { /* the whole base: held (lent when the source can) */
            rc = ann_vecsrc_hold(src, threads, &held);
            if (rc)
                goto out;
            ksample = held.x;
        } else {
            sample = malloc(s * (size_t)src->dim * sizeof(float));
            if (!sample) {
                rc = ann_fail(-ENOMEM, "ivfpq-record build: no memory for the k-means sample");
                goto out;
            }
            rc = strided_sample(src, s, sample);
            if (rc)
                goto out;
            ksample = sample;
        }
        kmeans_params kp;
        kmeans_params_default(&kp, m->lists);
        kp.seed = m->seed;
        kp.threads = threads;
        kp.spherical = src->metric == ANN_METRIC_IP; /* cosine: plain means, as l2 */
        kp.iters = IVFPQ_COARSE_ITERS;
        rc = kmeans_train(ksample, s, src->dim, &kp, centroids, NULL);
        if (rc)
            goto out;
        ann_vecsrc_unhold(&held); /* a copy, when there was one, goes before the encoding */
        free(sample);
        sample = NULL;
        rc = assign_lists(&b, centroids, threads, assign);
        if (rc)
            goto out;
        t_coarse = ann_mono_s();

        /* residual codebook, trained on a strided sample of residuals */
        pq_params pp;
        pq_params_default(&pp, src->dim);
        pp.pq_bytes = m->pq_bytes;
        pp.seed = m->seed;
        pp.threads = threads;
        uint64_t rs = pq_sample_rows(&pp, src->n, src->dim);
        res = malloc(rs * (size_t)src->dim * sizeof(float));
        if (!res) {
            rc = ann_fail(-ENOMEM, "ivfpq-record build: no memory for the PQ sample");
            goto out;
        }
        rc = strided_sample(src, rs, res);
        if (rc)
            goto out;
        for (uint64_t i = 0; i < rs; i++) {
            uint64_t v = i * src->n / rs;
            const float *c = centroids + (size_t)assign[v] * src->dim;
            for (uint32_t j = 0; j < src->dim; j++)
                res[i * src->dim + j] -= c[j];
        }
        ann_metric pq_metric = src->metric == ANN_METRIC_L2 ? ANN_METRIC_L2 : ANN_METRIC_IP;
        rc = ann_vecsrc_from_memory(res, rs, src->dim, pq_metric, &res_src);
        if (rc)
            goto out;
        rc = pq_train(res_src, &pp, &cb);
        if (rc)
            goto out;
        t_pq = ann_mono_s();

        /* encode residuals: streamed blocks, each split over the workers */
        enc = malloc((size_t)threads * IVFPQ_ENCODE_ROWS * src->dim * sizeof(float));
        if (!enc) {
            rc = ann_fail(-ENOMEM, "ivfpq-record build: no memory for %d encoding blocks",
                          threads);
            goto out;
        }
        for (uint64_t r0 = 0; r0 < src->n; r0 += IVFPQ_STREAM_ROWS) {
            uint64_t cnt = src->n - r0 < IVFPQ_STREAM_ROWS ? src->n - r0 : IVFPQ_STREAM_ROWS;
            const float *xb;
            rc = base_block(&b, r0, cnt, &xb);
            if (rc)
                goto out;
            encode_job ej = { .b = &b, .cb = cb, .centroids = centroids, .assign = assign,
                              .x = xb, .r0 = r0, .cnt = cnt, .enc = enc };
            rc = ann_parallel_for(threads, (cnt + IVFPQ_ENCODE_ROWS - 1) / IVFPQ_ENCODE_ROWS, 1,
                                  encode_run, &ej);
            if (rc)
                goto out;
        }
        t_encode = ann_mono_s();

        /* lists: counting sort of ids by list, ascending within a list */
        for (uint64_t v = 0; v < src->n; v++)
            b.list_len[assign[v]]++;
        for (uint32_t l = 0; l < m->lists; l++)
            b.list_start[l + 1] = b.list_start[l] + b.list_len[l];
        for (uint64_t v = 0; v < src->n; v++)
            b.order[b.list_start[assign[v]]++] = (uint32_t)v;
        for (uint32_t l = m->lists; l > 0; l--)
            b.list_start[l] = b.list_start[l - 1];
        b.list_start[0] = 0;
    }

    /* RAM-resident parts: coarse centroids and the codebook; the centroids'
     * checksum goes into the metadata record, which open checks them against */
    m->coarse_sum = ann_checksum(centroids, (size_t)m->lists * m->dim * sizeof(float));
    snprintf(path, sizeof path, "%s/%s", dir, IVFPQ_COARSE_FILE);
    rc = ann_vecwriter_open(&w, path, src->dim, ANN_ELEM_F32);
    if (rc)
        goto out;
    writer_open = 1;
    rc = ann_vecwriter_append(&w, centroids, m->lists);
    if (rc)
        goto out;
    rc = ann_vecwriter_finish(&w);
    writer_open = 0;
    if (rc)
        goto out;
    if (cb) {
        snprintf(path, sizeof path, "%s/%s", dir, IVFPQ_CODEBOOK_FILE);
        rc = pq_codebook_save(cb, path);
        if (rc)
            goto out;
    }
    for (int bi = 0; bi < 2; bi++) {
        kv_backend be = bi == 0 ? KV_BACKEND_ROCKSDB : KV_BACKEND_LMDB;
        if (!kv_build_includes(which, be))
            continue;
        kv_store_path(path, sizeof path, dir, be);
        rc = write_records(&b, path, be);
        if (rc)
            goto out;
    }
    uint32_t longest = 0;
    for (uint32_t l = 0; l < m->lists; l++)
        longest = b.list_len[l] > longest ? b.list_len[l] : longest;
    json_object_set_new(report, "phases",
                        json_pack("{s:f, s:f, s:f, s:f}", "coarse_s", t_coarse - t0, "pq_train_s",
                                  t_pq - t_coarse, "encode_s", t_encode - t_pq, "records_s",
                                  ann_mono_s() - t_encode));
    json_object_set_new(report, "nlist", json_integer(m->nlist));
    json_object_set_new(report, "lists", json_integer(m->lists));
    json_object_set_new(report, "pq_bytes", json_integer(m->pq_bytes));
    json_object_set_new(report, "longest_list", json_integer(longest));
    json_object_set_new(report, "threads", json_integer(threads));
    json_object_set_new(report, "base_rows", json_string(src->rows ? "lent" : "copied"));
out:
    if (writer_open)
        ann_vecwriter_abort(&w);
    pq_codebook_destroy(cb);
    ann_vecsrc_destroy(res_src);
    free(res);
    free(enc);
    free(sample);
    free(centroids);
    free(assign);
    free(b.list_len);
    free(b.list_start);
    free(b.order);
    free(b.codes);
    free(b.betas);
    free(b.block);
    ann_vecsrc_unhold(&held);
    return rc;
}
