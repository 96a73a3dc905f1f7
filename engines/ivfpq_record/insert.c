/*
 * insert.c: live updates of ivfpq-record, the way an inverted-file index
 * takes them (IVFADC, Jégou et al. 2011; FAISS's add_with_ids and
 * remove_ids do the same in memory):
 *
 * insert(id, x): x goes to the list of its nearest coarse centroid, chosen
 *   as the build files vectors (L2 for l2 and cosine, largest inner product
 *   for ip); its residual x - c is PQ-encoded with the index's codebook and
 *   its beta computed from the decoded residual exactly as build.c does.
 *   The full-vector record (table 0x03) and the appended entry (table 0x05,
 *   keyed by list then id) are one write batch: durable and atomic when the
 *   call returns.  The list's chunk records are not rewritten.
 * remove(id): a tombstone record (table 0x06); the id joins the in-memory
 *   deleted set before the call returns, and searches skip it from then on.
 *
 * Searches (search.c) scan a probed list's chunk records, then, when the
 * list has appended entries, iterate them (one prefix iteration per such
 * list, in the query's snapshot), skipping deleted ids in both.
 *
 * merge(): one write batch that rewrites every list with appended or
 *   deleted entries (its chunk records, ids ascending, and the list
 *   directory) and removes the appended entries, the tombstones and the
 *   deleted ids' vector records; a deleted id may then be inserted again.
 *   It reads every chunk record once (deleted entries are found by
 *   scanning, as FreshDiskANN's delete phase reads every node).  Searches
 *   of an index opened with updates read each list's chunks from their own
 *   snapshot, so a merge meanwhile shows them the lists before or after it.
 *
 * One writer at a time (a mutex); readers take no lock.
 *
 * Errors name the store and the id.  Bad input writes nothing.
 */
#include "engines/ivfpq_record/ivfpq.h"
#include "engines/core/update.h"

#include "engines/core/binio.h"
#include "engines/core/distance.h"
#include "engines/core/status.h"
#include "engines/ivfpq_record/layout.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- open / close ------------------------------------------------------ */

static int load_appended(ann_engine *e, kv_reader *rd)
{
    uint8_t prefix = IVFPQ_TABLE_APPENDED;
    kv_iter *it = NULL;
    kv_val k, v;
    int rc = kv_iter_create_scan(rd, &prefix, 1, &it), step;
    if (rc)
        return rc;
    while ((step = kv_iter_next(it, &k, &v)) == 1) {
        uint64_t key = 0;
        if (kv_key_parse_u64(k.data, k.len, NULL, &key) != 0 ||
            (uint32_t)(key >> 32) >= e->meta.lists ||
            v.len != IVFPQ_APPENDED_BYTES(e->meta.pq_bytes) || !isfinite(ann_get_f32(v.data))) {
            rc = ann_fail(ANN_ECORRUPT, "%s: appended entry record (key of %zu bytes, value of "
                          "%zu): bad key, list, length or beta", e->store_dir, k.len, v.len);
            break;
        }
        atomic_fetch_add(&e->live.app_len[key >> 32], 1);
        atomic_fetch_add(&e->live.appended, 1);
        if ((uint32_t)key >= atomic_load(&e->live.id_bound))
            atomic_store(&e->live.id_bound, (uint32_t)key + 1);
    }
    if (!rc && step < 0)
        rc = step;
    kv_iter_destroy(it);
    return rc;
}

static int load_tombstones(ann_engine *e, kv_reader *rd)
{
    uint8_t prefix = IVFPQ_TABLE_TOMBSTONE;
    kv_iter *it = NULL;
    kv_val k, v;
    int rc = kv_iter_create_scan(rd, &prefix, 1, &it), step;
    if (rc)
        return rc;
    while ((step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t id = 0;
        if (kv_key_parse_u32(k.data, k.len, NULL, &id) != 0 || v.len != 1) {
            rc = ann_fail(ANN_ECORRUPT, "%s: tombstone record (key of %zu bytes): bad key or "
                          "length %zu", e->store_dir, k.len, v.len);
            break;
        }
        if (ann_idbits_set(&e->live.dead, id, 1)) {
            rc = ann_fail(-ENOMEM, "%s: no memory for the deleted-id set", e->store_dir);
            break;
        }
        atomic_fetch_add(&e->live.deleted, 1);
        atomic_store(&e->live.any_dead, 1);
    }
    if (!rc && step < 0)
        rc = step;
    kv_iter_destroy(it);
    return rc;
}

int ivfpq_live_open(ann_engine *e, kv_reader *rd, int enabled)
{
    ivfpq_live *L = &e->live;
    pthread_mutex_init(&L->wlock, NULL);
    L->inited = 1;
    L->enabled = enabled;
    L->app_len = calloc(e->meta.lists ? e->meta.lists : 1, sizeof *L->app_len);
    if (!L->app_len || ann_idbits_init(&L->dead))
        return ann_fail(-ENOMEM, "%s: no memory for the live-update state", e->store_dir);
    int rc = load_appended(e, rd);
    if (!rc)
        rc = load_tombstones(e, rd);
    if (!rc && enabled)
        rc = kv_reader_create(e->kv, &L->wrd);
    return rc;
}

void ivfpq_live_close(ann_engine *e)
{
    ivfpq_live *L = &e->live;
    if (!L->inited)
        return;
    kv_reader_destroy(L->wrd);
    L->wrd = NULL;
    ann_paged_fini(&L->dead);
    free(L->app_len);
    L->app_len = NULL;
    pthread_mutex_destroy(&L->wlock);
    L->inited = 0;
}

/* ---- insert / remove --------------------------------------------------- */

static int writable(ann_engine *e, const char *op)
{
    int rc = ann_update_writable(e->store_dir, op, e->live.enabled);
    if (rc)
        return rc;
    if (e->meta.n == 0)
        return ann_fail(ANN_EUNSUPPORTED, "%s: %s: the index is empty (no coarse quantizer or "
                        "codebook to encode with); updates need a built index", e->store_dir, op);
    return 0;
}

/* Whether id has a vector record and a tombstone (under wlock). */
static int id_state(ann_engine *e, uint32_t id, int *has_vector, int *has_tomb)
{
    kv_reader *rd = e->live.wrd;
    uint8_t key[KV_KEY_U32_BYTES];
    kv_val v = { 0 };
    int rc = kv_reader_begin(rd);
    if (rc)
        return rc;
    int *out[2] = { has_vector, has_tomb };
    const uint8_t tables[2] = { IVFPQ_TABLE_VECTOR, IVFPQ_TABLE_TOMBSTONE };
    for (int i = 0; i < 2 && !rc; i++) {
        rc = kv_get(rd, key, kv_key_u32(key, tables[i], id), &v);
        *out[i] = rc == 0;
        kv_val_release(&v);
        if (rc == ANN_ENOTFOUND)
            rc = 0;
    }
    kv_reader_end(rd);
    return rc;
}

/* The list the build would file x in. */
static uint32_t nearest_list(const ann_engine *e, const float *x)
{
    const ivfpq_meta *m = &e->meta;
    uint32_t best = 0;
    float best_d = __builtin_inff();
    for (uint32_t l = 0; l < m->lists; l++) {
        const float *c = e->centroids + (size_t)l * m->dim;
        float d = m->metric == ANN_METRIC_IP ? -ann_ip(x, c, m->dim) : ann_l2sq(x, c, m->dim);
        if (d < best_d) {
            best_d = d;
            best = l;
        }
    }
    return best;
}

int ivfpq_insert(ann_engine *e, uint32_t id, const float *vec, uint32_t dim)
{
    ivfpq_live *L = &e->live;
    const ivfpq_meta *m = &e->meta;
    int rc = writable(e, "insert");
    if (rc)
        return rc;
    rc = ann_update_check_insert(e->store_dir, id, vec, dim, m->dim);
    if (rc)
        return rc;
    uint32_t list = nearest_list(e, vec);
    const float *c = e->centroids + (size_t)list * dim;
    size_t app_bytes = IVFPQ_APPENDED_BYTES(m->pq_bytes);
    float *res = malloc((size_t)dim * sizeof(float));
    uint8_t *rec = malloc((size_t)dim * 4), *app = malloc(app_bytes);
    kv_txn *t = NULL;
    int locked = 0;
    if (!res || !rec || !app) {
        rc = ann_fail(-ENOMEM, "%s: insert id %u: no memory", e->store_dir, id);
        goto out;
    }
    for (uint32_t j = 0; j < dim; j++)
        res[j] = vec[j] - c[j];
    rc = pq_encode_one(e->cb, res, app + 4);
    if (rc)
        goto out;
    pq_decode(e->cb, app + 4, res); /* the decoded residual, as the build's beta */
    float beta = ivfpq_beta(c, res, dim);
    if (!isfinite(beta)) {
        rc = ann_fail(ANN_EDATA, "%s: insert id %u: <c, r'> + |r'|^2 / 2 overflows float",
                      e->store_dir, id);
        goto out;
    }
    ann_put_f32(app, beta);
    for (uint32_t j = 0; j < dim; j++)
        ann_put_f32(rec + 4 * (size_t)j, vec[j]);

    pthread_mutex_lock(&L->wlock);
    locked = 1;
    int has_vec = 0, has_tomb = 0;
    rc = id_state(e, id, &has_vec, &has_tomb);
    if (!rc && has_vec && !has_tomb)
        rc = ann_fail(ANN_EDATA, "%s: insert id %u: the id exists", e->store_dir, id);
    else if (!rc && has_vec)
        rc = ann_fail(ANN_EDATA, "%s: insert id %u: the id is deleted but not merged yet: "
                      "merge before inserting it again", e->store_dir, id);
    if (rc)
        goto out;
    uint8_t key[KV_KEY_U64_BYTES];
    rc = kv_txn_begin(e->kv, &t);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, IVFPQ_TABLE_VECTOR, id), rec, (size_t)dim * 4);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u64(key, IVFPQ_TABLE_APPENDED, (uint64_t)list << 32 | id),
                        app, app_bytes);
    if (!rc) {
        /* before the commit: a search that sees the record sees the count
         * and the bound */
        atomic_fetch_add(&L->app_len[list], 1);
        if (id >= atomic_load(&L->id_bound))
            atomic_store(&L->id_bound, id + 1);
        rc = kv_txn_commit(t);
        t = NULL;
        if (rc) {
            atomic_fetch_sub(&L->app_len[list], 1);
        } else {
            atomic_fetch_add(&L->appended, 1);
            ann_idbits_set(&L->dead, id, 0); /* an id merged away before, live again */
        }
    }
out:
    kv_txn_abort(t);
    if (locked)
        pthread_mutex_unlock(&L->wlock);
    free(res);
    free(rec);
    free(app);
    return rc;
}

int ivfpq_remove(ann_engine *e, uint32_t id)
{
    ivfpq_live *L = &e->live;
    int rc = writable(e, "remove");
    if (rc)
        return rc;
    pthread_mutex_lock(&L->wlock);
    int has_vec = 0, has_tomb = 0;
    rc = id_state(e, id, &has_vec, &has_tomb);
    if (!rc)
        rc = ann_update_check_remove(e->store_dir, id, has_vec, has_tomb, &L->dead);
    if (!rc)
        rc = ann_update_put_tombstone(e->kv, IVFPQ_TABLE_TOMBSTONE, id, 0);
    if (!rc) {
        atomic_store(&L->any_dead, 1); /* before the bit: a search that sees it filters */
        ann_idbits_set(&L->dead, id, 1); /* its page exists: cannot fail */
        atomic_fetch_add(&L->deleted, 1);
    }
    pthread_mutex_unlock(&L->wlock);
    return rc;
}

/* ---- merge ---------------------------------------------------------------- */

/* One list entry while a list is rewritten. */
typedef struct mentry {
    uint32_t id;
    float beta;
    uint32_t row; /* its code: mlist.codes + row x m */
} mentry;

typedef struct mlist {
    mentry *ents;
    uint32_t n, cap;
    uint8_t *codes; /* copies of the codes (values do not outlive their get) */
} mlist;

static int ml_push(mlist *ml, uint32_t id, float beta, const uint8_t *code, uint32_t m)
{
    if (ml->n == ml->cap) {
        uint32_t cap = ml->cap ? 2 * ml->cap : 1024;
        mentry *ents = realloc(ml->ents, cap * sizeof *ents);
        uint8_t *codes = realloc(ml->codes, (size_t)cap * m);
        if (ents)
            ml->ents = ents;
        if (codes)
            ml->codes = codes;
        if (!ents || !codes)
            return -ENOMEM;
        ml->cap = cap;
    }
    memcpy(ml->codes + (size_t)ml->n * m, code, m);
    ml->ents[ml->n] = (mentry){ id, beta, ml->n };
    ml->n++;
    return 0;
}

static int ment_cmp(const void *a, const void *b)
{
    uint32_t x = ((const mentry *)a)->id, y = ((const mentry *)b)->id;
    return x < y ? -1 : x > y;
}

/* Rewrite list l into t when it has appended or deleted entries; *len_out
 * receives its new length.  Under wlock, inside the writer's snapshot. */
static int merge_list(ann_engine *e, kv_txn *t, uint32_t l, mlist *ml, uint8_t *buf,
                      uint32_t *len_out)
{
    const ivfpq_meta *m = &e->meta;
    ivfpq_live *L = &e->live;
    const uint32_t C = m->chunk_entries, pq = m->pq_bytes;
    ivfpq_meta cm = *m;
    cm.n = atomic_load(&L->id_bound);
    uint32_t len = e->list_len[l], dropped = 0, appended = 0;
    uint8_t key[KV_KEY_U64_BYTES];
    kv_val val = { 0 };
    int rc = 0;
    ml->n = 0;
    for (uint32_t chunk = 0; (uint64_t)chunk * C < len && !rc; chunk++) {
        uint32_t cnt = len - chunk * C < C ? len - chunk * C : C;
        rc = kv_get(L->wrd, key, kv_key_u64(key, IVFPQ_TABLE_LIST, (uint64_t)l << 32 | chunk),
                    &val);
        if (rc == ANN_ENOTFOUND)
            rc = ann_fail(ANN_ECORRUPT, "%s: merge: list %u chunk %u record missing",
                          e->store_dir, l, chunk);
        if (!rc)
            rc = ivfpq_chunk_check(&cm, e->store_dir, l, chunk, cnt, val.data, val.len);
        const uint8_t *rec = val.data;
        for (uint32_t j = 0; j < cnt && !rc; j++) {
            uint32_t id = ann_get_u32(rec + IVFPQ_CHUNK_HEADER_BYTES + 4 * (size_t)j);
            if (ivfpq_is_dead(e, id)) {
                dropped++;
                continue;
            }
            if (ml_push(ml, id, ann_get_f32(rec + IVFPQ_CHUNK_BETAS_OFF(cnt) + 4 * (size_t)j),
                        rec + IVFPQ_CHUNK_CODES_OFF(cnt) + (size_t)j * pq, pq))
                rc = ann_fail(-ENOMEM, "%s: merge: no memory", e->store_dir);
        }
        kv_val_release(&val);
    }
    if (!rc && atomic_load(&L->app_len[l])) {
        uint8_t prefix[KV_KEY_U64_BYTES];
        kv_key_u64(prefix, IVFPQ_TABLE_APPENDED, (uint64_t)l << 32);
        kv_iter *it = NULL;
        kv_val k, v;
        int step;
        rc = kv_iter_create(L->wrd, prefix, 5, &it);
        while (!rc && (step = kv_iter_next(it, &k, &v)) == 1) {
            uint64_t kk = 0;
            if (kv_key_parse_u64(k.data, k.len, NULL, &kk) != 0 ||
                v.len != IVFPQ_APPENDED_BYTES(pq)) {
                rc = ann_fail(ANN_ECORRUPT, "%s: merge: list %u: appended entry record of %zu "
                              "bytes", e->store_dir, l, v.len);
                break;
            }
            appended++;
            if (!rc)
                rc = kv_txn_delete(t, k.data, k.len);
            if (!rc && !ivfpq_is_dead(e, (uint32_t)kk) &&
                ml_push(ml, (uint32_t)kk, ann_get_f32(v.data), (const uint8_t *)v.data + 4, pq))
                rc = ann_fail(-ENOMEM, "%s: merge: no memory", e->store_dir);
        }
        if (!rc && step < 0)
            rc = step;
        kv_iter_destroy(it);
    }
    *len_out = len;
    if (rc || (dropped == 0 && appended == 0))
        return rc;
    qsort(ml->ents, ml->n, sizeof *ml->ents, ment_cmp); /* ids ascending (layout.h) */
    uint32_t chunks = (ml->n + C - 1) / C, old_chunks = (len + C - 1) / C;
    for (uint32_t c = 0; c < chunks && !rc; c++) {
        uint32_t cnt = ml->n - c * C < C ? ml->n - c * C : C;
        const mentry *src = ml->ents + (size_t)c * C;
        ann_put_u32(buf, l);
        ann_put_u32(buf + 4, c);
        ann_put_u32(buf + 8, cnt);
        ann_put_u32(buf + 12, 0);
        for (uint32_t j = 0; j < cnt; j++) {
            ann_put_u32(buf + IVFPQ_CHUNK_HEADER_BYTES + 4 * (size_t)j, src[j].id);
            ann_put_f32(buf + IVFPQ_CHUNK_BETAS_OFF(cnt) + 4 * (size_t)j, src[j].beta);
            memcpy(buf + IVFPQ_CHUNK_CODES_OFF(cnt) + (size_t)j * pq,
                   ml->codes + (size_t)src[j].row * pq, pq);
        }
        rc = kv_txn_put(t, key, kv_key_u64(key, IVFPQ_TABLE_LIST, (uint64_t)l << 32 | c), buf,
                        IVFPQ_CHUNK_BYTES(cnt, pq));
    }
    for (uint32_t c = chunks; c < old_chunks && !rc; c++)
        rc = kv_txn_delete(t, key, kv_key_u64(key, IVFPQ_TABLE_LIST, (uint64_t)l << 32 | c));
    *len_out = ml->n;
    return rc;
}

/* The deleted ids: their tombstones and vector records go (under wlock,
 * inside the writer's snapshot); *n receives how many. */
static int drop_deleted(ann_engine *e, kv_txn *t, uint64_t *n)
{
    uint8_t prefix = IVFPQ_TABLE_TOMBSTONE, key[KV_KEY_U32_BYTES];
    kv_iter *it = NULL;
    kv_val k, v;
    int rc = kv_iter_create_scan(e->live.wrd, &prefix, 1, &it), step = 0;
    *n = 0;
    while (!rc && (step = kv_iter_next(it, &k, &v)) == 1) {
        uint32_t id = 0;
        if (kv_key_parse_u32(k.data, k.len, NULL, &id) != 0) {
            rc = ann_fail(ANN_ECORRUPT, "%s: merge: a tombstone key of %zu bytes", e->store_dir,
                          k.len);
            break;
        }
        rc = kv_txn_delete(t, k.data, k.len);
        if (!rc)
            rc = kv_txn_delete(t, key, kv_key_u32(key, IVFPQ_TABLE_VECTOR, id));
        (*n)++;
    }
    if (!rc && step < 0)
        rc = step;
    kv_iter_destroy(it);
    return rc;
}

int ivfpq_merge(ann_engine *e)
{
    ivfpq_live *L = &e->live;
    const ivfpq_meta *m = &e->meta;
    int rc = writable(e, "merge");
    if (rc)
        return rc;
    pthread_mutex_lock(&L->wlock);
    kv_txn *t = NULL;
    mlist ml = { 0 };
    uint32_t *lens = malloc(((size_t)m->lists ? m->lists : 1) * sizeof *lens);
    size_t cap = IVFPQ_CHUNK_BYTES(m->chunk_entries, m->pq_bytes);
    if (cap < ivfpq_dir_bytes(m->lists))
        cap = ivfpq_dir_bytes(m->lists);
    uint8_t *buf = malloc(cap), key[KV_KEY_U32_BYTES], srec[IVFPQ_STATE_BYTES];
    int begun = 0;
    uint64_t entries = 0, gone = 0;
    if (!lens || !buf) {
        rc = ann_fail(-ENOMEM, "%s: merge: no memory", e->store_dir);
        goto out;
    }
    if (atomic_load(&L->appended) == 0 && atomic_load(&L->deleted) == 0)
        goto out; /* nothing to fold in */
    rc = kv_txn_begin(e->kv, &t);
    if (!rc)
        rc = kv_reader_begin(L->wrd);
    begun = rc == 0;
    for (uint32_t l = 0; l < m->lists && !rc; l++) {
        rc = merge_list(e, t, l, &ml, buf, &lens[l]);
        entries += lens[l];
    }
    if (!rc)
        rc = drop_deleted(e, t, &gone);
    if (begun)
        kv_reader_end(L->wrd);
    begun = 0;
    if (rc)
        goto out;
    ivfpq_dir_encode(lens, m->lists, buf);
    rc = kv_txn_put(t, key, kv_key_u32(key, IVFPQ_TABLE_DIR, 0), buf, ivfpq_dir_bytes(m->lists));
    ivfpq_state_encode(atomic_load(&L->id_bound), entries, L->merges + 1, srec);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, IVFPQ_TABLE_STATE, 0), srec, sizeof srec);
    if (rc)
        goto out;
    rc = kv_txn_commit(t);
    t = NULL;
    if (rc)
        goto out;
    /* searches of a writable index read the lists from their snapshot; the
     * directory in memory serves the writer only */
    memcpy(e->list_len, lens, (size_t)m->lists * sizeof *lens);
    for (uint32_t l = 0; l < m->lists; l++)
        atomic_store(&L->app_len[l], 0);
    atomic_store(&L->entries, entries);
    atomic_store(&L->appended, 0);
    atomic_fetch_sub(&L->deleted, gone);
    L->merges++;
out:
    if (begun)
        kv_reader_end(L->wrd);
    kv_txn_abort(t);
    free(ml.ents);
    free(ml.codes);
    free(lens);
    free(buf);
    pthread_mutex_unlock(&L->wlock);
    return rc;
}
