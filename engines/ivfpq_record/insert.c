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
 * Departure: there is no merge.  Appended entries stay beside the chunk
 * records and tombstoned entries stay in their lists (skipped), so an id
 * once deleted cannot be inserted again; a rebuild folds everything in.
 * One writer at a time (a mutex); readers take no lock.
 *
 * Errors name the store and the id.  Bad input writes nothing.
 */
#include "engines/ivfpq_record/ivfpq.h"

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
    int rc = kv_iter_create(rd, &prefix, 1, &it), step;
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
    int rc = kv_iter_create(rd, &prefix, 1, &it), step;
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
    if (!e->live.enabled)
        return ann_fail(ANN_ESTATE, "%s: %s: the index was opened without updates (open "
                        "parameter \"updates\": true)", e->store_dir, op);
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
    if (dim != m->dim)
        return ann_fail(ANN_EDATA, "%s: insert id %u: vector of dimension %u, the index has %u",
                        e->store_dir, id, dim, m->dim);
    if (id == UINT32_MAX)
        return ann_fail(ANN_EDATA, "%s: insert id %u: reserved id", e->store_dir, id);
    for (uint32_t j = 0; j < dim; j++)
        if (!isfinite(vec[j]))
            return ann_fail(ANN_EDATA, "%s: insert id %u: component %u is %s", e->store_dir, id,
                            j, isnan(vec[j]) ? "NaN" : "infinite");
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
    rc = pq_encode(e->cb, res, 1, 1, app + 4);
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
        rc = ann_fail(ANN_EDATA, "%s: insert id %u: the id is deleted and its list entry stays "
                      "(ivfpq-record has no merge): rebuild to insert it again", e->store_dir,
                      id);
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
        /* before the commit: a search that sees the record sees the count */
        atomic_fetch_add(&L->app_len[list], 1);
        rc = kv_txn_commit(t);
        t = NULL;
        if (rc)
            atomic_fetch_sub(&L->app_len[list], 1);
        else
            atomic_fetch_add(&L->appended, 1);
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
    kv_txn *t = NULL;
    uint8_t key[KV_KEY_U32_BYTES], zero = 0;
    rc = id_state(e, id, &has_vec, &has_tomb);
    if (!rc && !has_vec)
        rc = ann_fail(ANN_ENOTFOUND, "%s: remove id %u: no such id", e->store_dir, id);
    if (!rc && has_tomb)
        rc = ann_fail(ANN_EDATA, "%s: remove id %u: already deleted", e->store_dir, id);
    if (!rc && !ann_paged_page_(&L->dead, id)) /* so that marking it cannot fail */
        rc = ann_fail(-ENOMEM, "%s: remove id %u: no memory", e->store_dir, id);
    if (!rc)
        rc = kv_txn_begin(e->kv, &t);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, IVFPQ_TABLE_TOMBSTONE, id), &zero, 1);
    if (!rc) {
        rc = kv_txn_commit(t);
        t = NULL;
    }
    kv_txn_abort(t);
    if (!rc) {
        ann_idbits_set(&L->dead, id, 1); /* its page exists: cannot fail */
        atomic_fetch_add(&L->deleted, 1);
    }
    pthread_mutex_unlock(&L->wlock);
    return rc;
}
