/*
 * update.c: the checks and the tombstone write the record engines' live
 * updates share (update.h).
 */
#include "engines/core/update.h"

#include "engines/core/status.h"

#include <errno.h>
#include <math.h>

int ann_update_writable(const char *store, const char *op, int enabled)
{
    if (!enabled)
        return ann_fail(ANN_ESTATE, "%s: %s: the index was opened without updates (open "
                        "parameter \"updates\": true)", store, op);
    return 0;
}

int ann_update_check_insert(const char *store, uint32_t id, const float *vec, uint32_t dim,
                            uint32_t index_dim)
{
    if (dim != index_dim)
        return ann_fail(ANN_EDATA, "%s: insert id %u: vector of dimension %u, the index has %u",
                        store, id, dim, index_dim);
    if (id == UINT32_MAX)
        return ann_fail(ANN_EDATA, "%s: insert id %u: reserved id", store, id);
    for (uint32_t j = 0; j < dim; j++)
        if (!isfinite(vec[j]))
            return ann_fail(ANN_EDATA, "%s: insert id %u: component %u is %s", store, id, j,
                            isnan(vec[j]) ? "NaN" : "infinite");
    return 0;
}

int ann_update_check_remove(const char *store, uint32_t id, int has, int has_tomb,
                            ann_idbits *dead)
{
    if (!has)
        return ann_fail(ANN_ENOTFOUND, "%s: remove id %u: no such id", store, id);
    if (has_tomb)
        return ann_fail(ANN_EDATA, "%s: remove id %u: already deleted", store, id);
    if (!ann_paged_page_(dead, id))
        return ann_fail(-ENOMEM, "%s: remove id %u: no memory", store, id);
    return 0;
}

int ann_update_put_tombstone(kv_store *kv, uint8_t table, uint32_t id, uint8_t kind)
{
    kv_txn *t = NULL;
    uint8_t key[KV_KEY_U32_BYTES];
    int rc = kv_txn_begin(kv, &t);
    if (!rc)
        rc = kv_txn_put(t, key, kv_key_u32(key, table, id), &kind, 1);
    if (!rc) {
        rc = kv_txn_commit(t);
        t = NULL;
    }
    kv_txn_abort(t);
    return rc;
}
