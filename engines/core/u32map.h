/*
 * u32map.h: an open-addressing hash map from uint32 keys to uint32
 * values (linear probing, power-of-two capacity, grown at 1/2 load), for
 * working sets keyed by node id whose ids are too sparse for an array.
 * Key 0xFFFFFFFF is reserved (the empty slot).  Not thread-safe.
 */
#ifndef ANNLAB_CORE_U32MAP_H
#define ANNLAB_CORE_U32MAP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ANN_U32MAP_EMPTY 0xFFFFFFFFu

typedef struct ann_u32map {
    uint32_t *keys, *vals;
    uint32_t cap, n; /* cap: a power of two, or 0 before the first put */
} ann_u32map;

static inline uint32_t ann_u32map_hash_(uint32_t k)
{
    k ^= k >> 16;
    k *= 0x7feb352dU;
    k ^= k >> 15;
    k *= 0x846ca68bU;
    k ^= k >> 16;
    return k;
}

/* Free the map's storage; it is empty and reusable afterwards. */
static inline void ann_u32map_fini(ann_u32map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* Remove every key, keeping the storage. */
static inline void ann_u32map_clear(ann_u32map *m)
{
    if (m->keys)
        memset(m->keys, 0xff, (size_t)m->cap * sizeof *m->keys);
    m->n = 0;
}

/* 1 and *val when key is present, else 0. */
static inline int ann_u32map_get(const ann_u32map *m, uint32_t key, uint32_t *val)
{
    if (!m->cap)
        return 0;
    for (uint32_t i = ann_u32map_hash_(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            if (val)
                *val = m->vals[i];
            return 1;
        }
        if (m->keys[i] == ANN_U32MAP_EMPTY)
            return 0;
    }
}

/* Ask the cache for the slot where a lookup of key starts (a hint: the
 * map may grow before the lookup). */
static inline void ann_u32map_prefetch(const ann_u32map *m, uint32_t key)
{
    if (m->cap)
        __builtin_prefetch(&m->keys[ann_u32map_hash_(key) & (m->cap - 1)]);
}

/* Insert or overwrite.  0, or -ENOMEM (-12). */
static inline int ann_u32map_put(ann_u32map *m, uint32_t key, uint32_t val)
{
    if (2 * (m->n + 1) > m->cap) {
        ann_u32map old = *m;
        uint32_t cap = m->cap ? 2 * m->cap : 64;
        m->keys = malloc((size_t)cap * sizeof *m->keys);
        m->vals = malloc((size_t)cap * sizeof *m->vals);
        if (!m->keys || !m->vals) {
            free(m->keys);
            free(m->vals);
            *m = old;
            return -12;
        }
        memset(m->keys, 0xff, (size_t)cap * sizeof *m->keys);
        m->cap = cap;
        m->n = 0;
        for (uint32_t i = 0; i < old.cap; i++)
            if (old.keys[i] != ANN_U32MAP_EMPTY)
                ann_u32map_put(m, old.keys[i], old.vals[i]);
        free(old.keys);
        free(old.vals);
    }
    for (uint32_t i = ann_u32map_hash_(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return 0;
        }
        if (m->keys[i] == ANN_U32MAP_EMPTY) {
            m->keys[i] = key;
            m->vals[i] = val;
            m->n++;
            return 0;
        }
    }
}

#endif
