/*
 * candlist.h: a fixed-capacity candidate list sorted by (distance, id), the
 * working set of a best-first graph search (Vamana's greedy search, the
 * DiskANN beam search, HNSW's search layer).
 *
 * The list keeps at most `cap` candidates in ascending order of distance
 * (ties by id, so a single-threaded search is deterministic).  Each entry
 * carries an "expanded" flag; ann_candlist_next() returns the closest
 * candidate not yet expanded and flags it, which is the loop of Algorithm 1
 * of the DiskANN paper (Subramanya et al., NeurIPS 2019).  A cursor
 * remembers the first position that may hold an unexpanded entry, so a
 * search costs O(L) per step, not O(L^2) rescans.
 *
 * Storage is caller-provided (ann_candlist_init) or owned
 * (ann_candlist_create); either way nothing is allocated after set-up, so a
 * per-thread search context can own one and reuse it with ann_candlist_reset.
 * Not thread-safe: one list per searching thread.
 */
#ifndef ANNLAB_CORE_CANDLIST_H
#define ANNLAB_CORE_CANDLIST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct ann_cand {
    float dist;
    uint32_t id;
    uint32_t expanded; /* 0 or 1 */
} ann_cand;

typedef struct ann_candlist {
    ann_cand *c;     /* cap entries, c[0..n) sorted ascending */
    uint32_t cap;    /* capacity (the search list size L) */
    uint32_t n;      /* entries held */
    uint32_t cursor; /* no unexpanded entry lies before this position */
    uint32_t storage_cap; /* entries the storage holds (cap <= storage_cap) */
    int owned;       /* c was allocated by ann_candlist_create */
} ann_candlist;

/* Use caller storage of cap entries; the list starts empty. */
static inline void ann_candlist_init(ann_candlist *l, ann_cand *storage, uint32_t cap)
{
    l->c = storage;
    l->cap = cap;
    l->storage_cap = cap;
    l->n = 0;
    l->cursor = 0;
    l->owned = 0;
}

/*
 * Allocate a list of capacity cap (>= 1).  Returns 0, or -ENOMEM (ENOMEM is
 * 12 on Linux; spelled out so this header needs no errno.h).
 * Free with ann_candlist_fini.
 */
static inline int ann_candlist_create(ann_candlist *l, uint32_t cap)
{
    ann_cand *c = malloc((size_t)(cap ? cap : 1) * sizeof *c);
    ann_candlist_init(l, NULL, 0);
    if (!c)
        return -12;
    ann_candlist_init(l, c, cap);
    l->owned = 1;
    return 0;
}

/* Release storage from ann_candlist_create (no-op for caller storage / NULL). */
static inline void ann_candlist_fini(ann_candlist *l)
{
    if (l && l->owned)
        free(l->c);
    if (l) {
        l->c = NULL;
        l->cap = l->storage_cap = l->n = l->cursor = 0;
        l->owned = 0;
    }
}

/* Empty the list (capacity unchanged). */
static inline void ann_candlist_reset(ann_candlist *l)
{
    l->n = 0;
    l->cursor = 0;
}

/*
 * Empty the list and use a working capacity of cap, which must not exceed
 * the storage it was initialised or created with (a search context sized
 * for L_max serves any L <= L_max); a larger cap is clamped to the storage.
 */
static inline void ann_candlist_reset_cap(ann_candlist *l, uint32_t cap)
{
    l->cap = cap < l->storage_cap ? cap : l->storage_cap;
    l->n = 0;
    l->cursor = 0;
}

/* Distance of the worst kept candidate, or +inf while the list is not full. */
static inline float ann_candlist_bound(const ann_candlist *l)
{
    return l->n < l->cap ? __builtin_inff() : l->c[l->n - 1].dist;
}

/*
 * Insert (dist, id) unexpanded.  The caller guarantees id is not already in
 * the list (a visited map does that).  Returns the position inserted at, or
 * -1 when the list is full and the candidate is not better than the worst
 * (ties with the worst lose, as do ties that would land after it by id).
 */
static inline int ann_candlist_insert(ann_candlist *l, float dist, uint32_t id)
{
    if (l->cap == 0)
        return -1;
    uint32_t n = l->n;
    if (n == l->cap) {
        const ann_cand *w = &l->c[n - 1];
        if (dist > w->dist || (dist == w->dist && id >= w->id))
            return -1;
        n--; /* the worst drops off */
    }
    /* binary search for the first entry greater than (dist, id) */
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        const ann_cand *m = &l->c[mid];
        if (m->dist < dist || (m->dist == dist && m->id < id))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t i = n; i > lo; i--)
        l->c[i] = l->c[i - 1];
    l->c[lo] = (ann_cand){ dist, id, 0 };
    l->n = n + 1;
    if (lo < l->cursor)
        l->cursor = lo;
    return (int)lo;
}

/*
 * The closest unexpanded candidate: flags it expanded and returns its
 * position, or -1 when every kept candidate has been expanded (the search
 * has converged).
 */
static inline int ann_candlist_next(ann_candlist *l)
{
    while (l->cursor < l->n && l->c[l->cursor].expanded)
        l->cursor++;
    if (l->cursor >= l->n)
        return -1;
    l->c[l->cursor].expanded = 1;
    return (int)l->cursor++;
}

/* True when an unexpanded candidate remains. */
static inline int ann_candlist_has_next(ann_candlist *l)
{
    while (l->cursor < l->n && l->c[l->cursor].expanded)
        l->cursor++;
    return l->cursor < l->n;
}

#endif
