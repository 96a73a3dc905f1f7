/*
 * paged.h: id-indexed arrays that grow while other threads read them,
 * without a lock and without moving what readers hold.
 *
 * Ids (uint32) are split into a page number (id >> ANN_PAGE_BITS) and an
 * offset.  The page directory has one atomic pointer per possible page
 * (65,536 pointers, 512 KiB, allocated once); a page is allocated on the
 * first write to an id in it and published with a release store, and is
 * never freed or moved until the array is destroyed, so a reader that
 * loads a page pointer (acquire) may use it for as long as the array
 * lives.  Memory is proportional to the pages touched, not to the largest
 * id.
 *
 *   ann_idbits   one bit per id (a set of ids: e.g. deleted ids)
 *   ann_idrows   one fixed-width row of bytes per id (e.g. PQ codes)
 *
 * Writers must be serialised by the caller (one writer at a time); any
 * number of readers may read meanwhile.  Bits are read and written with
 * atomic operations; a row is written completely before the caller
 * publishes the id it belongs to (e.g. in a committed record), so readers
 * that learn the id afterwards see the whole row.
 */
#ifndef ANNLAB_CORE_PAGED_H
#define ANNLAB_CORE_PAGED_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ANN_PAGE_BITS 16u
#define ANN_PAGE_IDS (1u << ANN_PAGE_BITS)
#define ANN_PAGE_COUNT (1u << (32 - ANN_PAGE_BITS))

typedef struct ann_paged {
    _Atomic(uint8_t *) *dir; /* ANN_PAGE_COUNT page pointers */
    size_t page_bytes;
    size_t row_bytes; /* bytes per id; 0 for a bit set */
} ann_paged;

typedef ann_paged ann_idbits;
typedef ann_paged ann_idrows;

static inline int ann_paged_init_(ann_paged *p, size_t row_bytes)
{
    p->row_bytes = row_bytes;
    p->page_bytes = row_bytes ? (size_t)ANN_PAGE_IDS * row_bytes : ANN_PAGE_IDS / 8;
    p->dir = calloc(ANN_PAGE_COUNT, sizeof *p->dir);
    return p->dir ? 0 : -12; /* -ENOMEM */
}

/* An empty bit set / row array (rows of row_bytes >= 1).  0 or -ENOMEM. */
static inline int ann_idbits_init(ann_idbits *b)
{
    return ann_paged_init_(b, 0);
}
static inline int ann_idrows_init(ann_idrows *r, size_t row_bytes)
{
    return ann_paged_init_(r, row_bytes ? row_bytes : 1);
}

/* Free every page (no reader may be using it).  A zeroed struct is fine. */
static inline void ann_paged_fini(ann_paged *p)
{
    if (!p->dir)
        return;
    for (uint32_t i = 0; i < ANN_PAGE_COUNT; i++)
        free(atomic_load_explicit(&p->dir[i], memory_order_relaxed));
    free(p->dir);
    p->dir = NULL;
}

/* The page holding id, or NULL when none was written (reader side). */
static inline uint8_t *ann_paged_peek_(const ann_paged *p, uint32_t id)
{
    return atomic_load_explicit(&p->dir[id >> ANN_PAGE_BITS], memory_order_acquire);
}

/* The page holding id, allocated (zeroed) when absent (writer side).
 * NULL only when out of memory. */
static inline uint8_t *ann_paged_page_(ann_paged *p, uint32_t id)
{
    uint8_t *pg = ann_paged_peek_(p, id);
    if (!pg) {
        pg = calloc(1, p->page_bytes);
        if (pg)
            atomic_store_explicit(&p->dir[id >> ANN_PAGE_BITS], pg, memory_order_release);
    }
    return pg;
}

/* 1 when id is in the set.  Any thread. */
static inline int ann_idbits_test(const ann_idbits *b, uint32_t id)
{
    const uint8_t *pg = ann_paged_peek_(b, id);
    if (!pg)
        return 0;
    uint32_t off = id & (ANN_PAGE_IDS - 1);
    uint8_t byte = atomic_load_explicit((const _Atomic uint8_t *)(pg + off / 8),
                                        memory_order_acquire);
    return (byte >> (off % 8)) & 1;
}

/* Add / remove id (the writer).  0 or -ENOMEM (adding only). */
static inline int ann_idbits_set(ann_idbits *b, uint32_t id, int on)
{
    uint8_t *pg = on ? ann_paged_page_(b, id) : ann_paged_peek_(b, id);
    if (!pg)
        return on ? -12 : 0;
    uint32_t off = id & (ANN_PAGE_IDS - 1);
    _Atomic uint8_t *byte = (_Atomic uint8_t *)(pg + off / 8);
    if (on)
        atomic_fetch_or_explicit(byte, (uint8_t)(1u << (off % 8)), memory_order_release);
    else
        atomic_fetch_and_explicit(byte, (uint8_t)~(1u << (off % 8)), memory_order_release);
    return 0;
}

/* Row of id for reading, or NULL when its page was never written. */
static inline const uint8_t *ann_idrows_get(const ann_idrows *r, uint32_t id)
{
    const uint8_t *pg = ann_paged_peek_(r, id);
    return pg ? pg + (size_t)(id & (ANN_PAGE_IDS - 1)) * r->row_bytes : NULL;
}

/* The n rows first .. first+n-1 (n <= ANN_PAGE_IDS, ids mod 2^32) one
 * after another: a pointer into their page when one page holds them all,
 * else copied into buf (n * row_bytes); NULL when a page was never
 * written. */
static inline const uint8_t *ann_idrows_run(const ann_idrows *r, uint32_t first, uint32_t n,
                                            uint8_t *buf)
{
    if ((first & (ANN_PAGE_IDS - 1)) + n <= ANN_PAGE_IDS)
        return ann_idrows_get(r, first);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *row = ann_idrows_get(r, first + i);
        if (!row)
            return NULL;
        memcpy(buf + (size_t)i * r->row_bytes, row, r->row_bytes);
    }
    return buf;
}

/* Row of id for writing (the writer), or NULL when out of memory. */
static inline uint8_t *ann_idrows_put(ann_idrows *r, uint32_t id)
{
    uint8_t *pg = ann_paged_page_(r, id);
    return pg ? pg + (size_t)(id & (ANN_PAGE_IDS - 1)) * r->row_bytes : NULL;
}

#endif
