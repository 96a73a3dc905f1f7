/*
 * topk.h: a bounded max-heap keeping the k smallest (distance, id) pairs.
 *
 * Storage is caller-provided (k entries), so a search context allocates it
 * once.  Push is O(log k) only when the candidate beats the current worst.
 */
#ifndef ANNLAB_CORE_TOPK_H
#define ANNLAB_CORE_TOPK_H

#include <stddef.h>
#include <stdint.h>

typedef struct ann_topk {
    float *dist;
    uint32_t *id;
    uint32_t k, n;
} ann_topk;

static inline void ann_topk_init(ann_topk *t, float *dist, uint32_t *id, uint32_t k)
{
    t->dist = dist;
    t->id = id;
    t->k = k;
    t->n = 0;
}

/* Worst distance kept, or +inf while not full. */
static inline float ann_topk_bound(const ann_topk *t)
{
    return t->n < t->k ? __builtin_inff() : t->dist[0];
}

static inline void ann_topk__sift_down(ann_topk *t, uint32_t i)
{
    float d = t->dist[i];
    uint32_t v = t->id[i];
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        float md = d;
        if (l < t->n && t->dist[l] > md)
            m = l, md = t->dist[l];
        if (r < t->n && t->dist[r] > md)
            m = r, md = t->dist[r];
        if (m == i)
            break;
        t->dist[i] = t->dist[m];
        t->id[i] = t->id[m];
        i = m;
    }
    t->dist[i] = d;
    t->id[i] = v;
}

/* Offer a candidate; ties with the bound are rejected (first come wins). */
static inline void ann_topk_push(ann_topk *t, float d, uint32_t id)
{
    if (t->k == 0)
        return;
    if (t->n < t->k) {
        uint32_t i = t->n++;
        while (i > 0) {
            uint32_t p = (i - 1) / 2;
            if (t->dist[p] >= d)
                break;
            t->dist[i] = t->dist[p];
            t->id[i] = t->id[p];
            i = p;
        }
        t->dist[i] = d;
        t->id[i] = id;
    } else if (d < t->dist[0]) {
        t->dist[0] = d;
        t->id[0] = id;
        ann_topk__sift_down(t, 0);
    }
}

/*
 * Sort the kept entries ascending by (distance, id) into out arrays (which
 * may alias the heap's own).  Destroys the heap.  Returns the count.
 */
static inline uint32_t ann_topk_sorted(ann_topk *t, uint32_t *ids, float *dists)
{
    uint32_t n = t->n;
    /* heap-sort: repeatedly move the max to the end */
    while (t->n > 1) {
        uint32_t last = --t->n;
        float d = t->dist[0];
        uint32_t v = t->id[0];
        t->dist[0] = t->dist[last];
        t->id[0] = t->id[last];
        t->dist[last] = d;
        t->id[last] = v;
        ann_topk__sift_down(t, 0);
    }
    t->n = 0;
    /* equal distances: order by id for determinism (insertion sort on runs) */
    for (uint32_t i = 1; i < n; i++) {
        float d = t->dist[i];
        uint32_t v = t->id[i];
        uint32_t j = i;
        while (j > 0 && (t->dist[j - 1] > d || (t->dist[j - 1] == d && t->id[j - 1] > v))) {
            t->dist[j] = t->dist[j - 1];
            t->id[j] = t->id[j - 1];
            j--;
        }
        t->dist[j] = d;
        t->id[j] = v;
    }
    for (uint32_t i = 0; i < n; i++) {
        ids[i] = t->id[i];
        dists[i] = t->dist[i];
    }
    return n;
}

#endif
