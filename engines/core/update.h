/*
 * update.h: what every record engine that takes live updates
 * (diskann-record/-resident, hnsw-record, ivfpq-record; engine.h's insert
 * and remove) checks and writes alike, so they refuse the same bad input
 * with the same messages.  Each engine keeps its own record kinds and
 * locking; these are called under its writers' lock where they read state.
 */
#ifndef ANNLAB_CORE_UPDATE_H
#define ANNLAB_CORE_UPDATE_H

#include "engines/core/kv.h"
#include "engines/core/paged.h"

#include <stdint.h>

/* ANN_ESTATE "<store>: <op>: the index was opened without updates (open
 * parameter "updates": true)" unless enabled; else 0. */
int ann_update_writable(const char *store, const char *op, int enabled);

/*
 * An insert's vector: ANN_EDATA "<store>: insert id N: vector of dimension
 * D, the index has E", "...: reserved id" (UINT32_MAX), "...: component J is
 * NaN" / "is infinite"; else 0.
 */
int ann_update_check_insert(const char *store, uint32_t id, const float *vec, uint32_t dim,
                            uint32_t index_dim);

/*
 * A remove of id whose record exists (has) and is (has_tomb) deleted
 * already: ANN_ENOTFOUND "<store>: remove id N: no such id", ANN_EDATA
 * "...: already deleted"; -ENOMEM when dead's page for id cannot be made
 * (made here, so marking id after the commit cannot fail); else 0.
 */
int ann_update_check_remove(const char *store, uint32_t id, int has, int has_tomb,
                            ann_idbits *dead);

/* One write batch putting the 1-byte tombstone record (table, id) = kind;
 * errors of the store. */
int ann_update_put_tombstone(kv_store *kv, uint8_t table, uint32_t id, uint8_t kind);

#endif
