/*
 * visited.h: an epoch-stamped visited map for graph searches.
 *
 * One uint32 stamp per node.  A node is visited in the current search when
 * its stamp equals the current epoch; starting a new search only increments
 * the epoch, so nothing is cleared per query (the map is cleared once every
 * 2^32 - 1 searches, when the epoch wraps).  This is the per-reader visited
 * epoch of Redis vector sets, in place of a per-query bitmap or hash set.
 *
 * Memory: 4 bytes per node per searching thread (4 MiB for 1M nodes).
 * Not thread-safe: one map per searching thread.
 */
#ifndef ANNLAB_CORE_VISITED_H
#define ANNLAB_CORE_VISITED_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ann_visited {
    uint32_t *stamp; /* n stamps */
    uint64_t n;      /* nodes covered: ids in [0, n) */
    uint32_t epoch;  /* current search's stamp, never 0 */
} ann_visited;

/*
 * Allocate a map for ids in [0, n).  Returns 0 or -ENOMEM (-12).
 * The map starts with a fresh epoch (nothing visited).
 */
static inline int ann_visited_init(ann_visited *v, uint64_t n)
{
    v->stamp = calloc(n ? n : 1, sizeof *v->stamp);
    v->n = n;
    v->epoch = 1;
    return v->stamp ? 0 : -12;
}

/*
 * Cover ids in [0, n) when the map covers fewer (ids of an index that
 * grows while it is searched); stamps already set are kept.  Returns 0 or
 * -ENOMEM (-12), leaving the map as it was.
 */
static inline int ann_visited_grow(ann_visited *v, uint64_t n)
{
    if (n <= v->n)
        return 0;
    uint64_t cap = n + n / 4;
    uint32_t *s = realloc(v->stamp, cap * sizeof *s);
    if (!s)
        return -12;
    memset(s + v->n, 0, (cap - v->n) * sizeof *s);
    v->stamp = s;
    v->n = cap;
    return 0;
}

/* Free the stamps (NULL and a zeroed struct are fine). */
static inline void ann_visited_fini(ann_visited *v)
{
    if (!v)
        return;
    free(v->stamp);
    v->stamp = NULL;
    v->n = 0;
}

/* Start a new search: everything becomes unvisited in O(1). */
static inline void ann_visited_reset(ann_visited *v)
{
    if (++v->epoch == 0) {
        memset(v->stamp, 0, v->n * sizeof *v->stamp);
        v->epoch = 1;
    }
}

/* True when id was marked in the current search.  id < n (unchecked). */
static inline int ann_visited_test(const ann_visited *v, uint32_t id)
{
    return v->stamp[id] == v->epoch;
}

/* Mark id; returns 1 when it was already marked, 0 when newly marked. */
static inline int ann_visited_test_and_set(ann_visited *v, uint32_t id)
{
    if (v->stamp[id] == v->epoch)
        return 1;
    v->stamp[id] = v->epoch;
    return 0;
}

#endif
