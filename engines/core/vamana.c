/*
 * vamana.c: the Vamana graph build of DiskANN (Subramanya, Devvrit, Kadekodi,
 * Krishnaswamy, Simhadri, NeurIPS 2019, Algorithms 1-3), the in-memory
 * greedy search, the invariant checker and the graph file.
 *
 * Build: entry = medoid (the point nearest the mean); the graph starts
 * empty (as Microsoft DiskANN's builder does, rather than the paper's
 * random R-regular graph); each pass visits all points in a seeded random
 * order (or in id order with `file_order`, as Microsoft DiskANN's link()
 * and a database loading documents do: on a corpus in document order it
 * finds less, datasets/README.md "File order") and, for point p:
 * GreedySearch(entry, p, L_build) gives the expanded set V;
 * RobustPrune(p, V u N_out(p), alpha, R) sets N_out(p) (with
 * `prune_expanded`, RobustPrune(p, V, alpha, R), as Microsoft DiskANN's
 * link() does: back-edges p took before its turn are dropped); for each new
 * neighbour j, p is appended to N_out(j) while j has fewer than
 * ceil(slack*R) neighbours, else N_out(j) u {p} is re-pruned to R (the
 * slack rule of Microsoft DiskANN, 1.3 R).  A last sweep prunes every node
 * above R to R and compacts the adjacency to stride R.  With `saturate`
 * every prune of the build then fills the list up to R with the nearest
 * candidates alpha dropped, as Microsoft DiskANN's disk build does when the
 * whole graph fits its memory budget (saturate_graph; off by default).
 *
 * RobustPrune follows Microsoft DiskANN's occlude_list: candidates sorted by
 * distance to p, at most 750 of them; each candidate keeps an occlusion
 * factor max_{s selected} d(p,c)/d(s,c) on squared L2 distances, and the
 * selection is repeated with alpha' = 1, 1.2, 1.44, ... up to alpha, so a
 * node stays dense when alpha = 1 alone selects fewer than R.  Prune
 * distances are squared L2 for every metric (for unit vectors the cosine
 * distance is half of it, and the ratio is unchanged; for inner product
 * the geometric rule is the usual choice).
 *
 * Departures from the paper, each deliberate: `passes` defaults to 1 (one
 * pass with alpha, as Microsoft DiskANN builds today; 2 gives the paper's
 * alpha = 1 then alpha); with `build_f16` (default) the build computes its
 * distances on half-precision copies of the rows, because a build is
 * bound by DRAM traffic (each random 768-d row is 3 KiB; half is 1.5 KiB)
 * and a relative error near 1e-3 does not change which edges RobustPrune
 * keeps in any way recall can see (the searches still use float32); with
 * VAMANA_PREC_I8 it computes them on int8 codes (engines/core/i8.h: one
 * step for all dimensions, so a distance is an exact integer times step^2
 * and VNNI sums it from a quarter of float32's bytes); and
 * after the last sweep, any node not reachable
 * from the entry (rare, an artefact of concurrent pruning) gets an edge
 * from the nearest reachable node with spare degree found by a greedy
 * search, so every graph passes vamana_check.
 *
 * Concurrency: striped mutexes guard each node's list (4096 stripes);
 * searches copy a neighbour list under its stripe, and prunes run outside
 * any lock, as in Microsoft DiskANN, so an edge appended concurrently with
 * a re-prune of the same node may be lost (never corrupted).
 */
#include "engines/core/vamana.h"

#include "engines/core/binio.h"
#include "engines/core/candlist.h"
#include "engines/core/distance.h"
#include "engines/core/f16.h"
#include "engines/core/i8.h"
#include "engines/core/limits.h"
#include "engines/core/parallel.h"
#include "engines/core/populate.h"
#include "engines/core/progress.h"
#include "engines/core/status.h"
#include "engines/core/visited.h"
#include "engines/core/ticks.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VAMANA_MAGIC "ANNVAMG"

static const ann_binfmt vamana_binfmt = {
    .magic = VAMANA_MAGIC,
    .version = VAMANA_FILE_VERSION,
    .header_bytes = VAMANA_HEADER_BYTES,
    .name = "Vamana graph",
};
#define VAMANA_STRIPES 4096u
#define VAMANA_MAX_POOL 750u /* RobustPrune candidate cap (Microsoft DiskANN's maxc) */

void vamana_params_default(vamana_params *p)
{
    *p = (vamana_params){ .R = 64, .L_build = 100, .alpha = 1.2f, .passes = 1,
                          .slack = VAMANA_DEFAULT_SLACK, .seed = 1, .threads = 0, .build_f16 = VAMANA_PREC_I8 };
}

const char *vamana_precision_name(int precision)
{
    return precision == VAMANA_PREC_I8 ? "i8" : precision == VAMANA_PREC_F16 ? "f16" : "f32";
}

static uint64_t vm_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- graph object ---------------------------------------------------- */

int vamana_graph_create(uint64_t n, uint32_t R, uint32_t stride, vamana_graph **out)
{
    *out = NULL;
    if (n == 0 || n >= VAMANA_NO_ID || R == 0 || stride < R)
        return ann_fail(ANN_EPARAM, "vamana graph: need 0 < n < 2^32-1 and 0 < R <= stride "
                                    "(n %llu, R %u, stride %u)",
                        (unsigned long long)n, R, stride);
    vamana_graph *g = calloc(1, sizeof *g);
    if (!g)
        return ann_fail(-ENOMEM, "vamana graph: no memory");
    g->n = n;
    g->R = R;
    g->stride = stride;
    /* both read at random for every expansion: on huge pages from 4 MiB
     * (ann_alloc_large), with the half rows: 15% off a 1M build
     * (docs/reproducing.md, "huge pages at 1M") */
    g->degree = ann_alloc_large(n * sizeof *g->degree);
    g->adj = ann_alloc_large(n * stride * sizeof *g->adj);
    if (!g->degree || !g->adj) {
        vamana_graph_destroy(g);
        return ann_fail(-ENOMEM, "vamana graph: no memory for %llu x %u neighbours",
                        (unsigned long long)n, stride);
    }
    memset(g->degree, 0, n * sizeof *g->degree);
    memset(g->adj, 0xff, n * stride * sizeof *g->adj);
    *out = g;
    return 0;
}

void vamana_graph_destroy(vamana_graph *g)
{
    if (!g)
        return;
    free(g->degree);
    free(g->adj);
    free(g);
}

/* ---- distances ------------------------------------------------------- */

/*
 * The vectors a search or build reads: float32 rows, or (builds only, when
 * h is set) half-precision copies of them, which halve the DRAM traffic
 * that bounds the build.  Queries passed to vm_dist are rows of the same
 * kind (vm_row).
 */
typedef struct vm_data {
    const float *x;
    const ann_f16 *h; /* NULL: use x */
    const ann_i8_rows *q8; /* int8 codes (builds, L2 only); NULL: none */
    int narrow;       /* h or q8: distances from a row prepared once (vm_widen) */
    ann_i8_dot_fn dot8;
    uint32_t dim;
    ann_metric metric;
    ann_dist_fn l2sq, ip;
    ann_f16_dist_fn hl2sq, hip;
    ann_f16_mixed_fn ml2sq, mip; /* a widened half row against half rows */
    void (*widen)(const ann_f16 *a, size_t count, float *out);
    uint32_t lines; /* cache lines of one row (prefetch) */
} vm_data;

static void vm_data_init(vm_data *d, const float *x, const ann_f16 *h, const ann_i8_rows *q8,
                         uint32_t dim, ann_metric metric)
{
    const ann_dist_kernels *k = ann_dist_active();
    const ann_f16_kernels *hk = ann_f16_active();
    size_t row_bytes = q8  ? q8->stride
                       : h ? (size_t)dim * sizeof(ann_f16)
                           : (size_t)dim * sizeof(float);
    *d = (vm_data){ x, h, q8, h || q8, ann_i8_active()->dot, dim, metric, k->l2sq, k->ip,
                    hk->l2sq, hk->ip, hk->l2sq_mixed, hk->ip_mixed, hk->widen,
                    (uint32_t)((row_bytes + 63) / 64) };
}

static inline const float *vm_vec(const vm_data *d, uint32_t id)
{
    return d->x + (size_t)id * d->dim;
}

/* Row id in the kind this data computes on (float32 or half). */
static inline const void *vm_row(const vm_data *d, uint32_t id)
{
    if (d->q8)
        return d->q8->rows + (size_t)id * d->q8->stride;
    return d->h ? (const void *)(d->h + (size_t)id * d->dim)
                : (const void *)(d->x + (size_t)id * d->dim);
}

/* Squared L2 between rows a and b. */
static inline float vm_l2(const vm_data *d, uint32_t a, uint32_t b)
{
    if (d->q8) { /* not on a build's paths (they use vm_l2_wide); the same value */
        const int8_t *x = vm_row(d, a), *y = vm_row(d, b);
        int32_t t = 0;
        for (uint32_t i = 0; i < d->dim; i++)
            t += ((int32_t)x[i] - y[i]) * ((int32_t)x[i] - y[i]);
        return (float)t * d->q8->step2;
    }
    if (d->h)
        return d->hl2sq(d->h + (size_t)a * d->dim, d->h + (size_t)b * d->dim, d->dim);
    return d->l2sq(vm_vec(d, a), vm_vec(d, b), d->dim);
}

/* Prepare row id as the left operand of vm_l2_wide into wide (dim + 32
 * floats): half rows widened to float32; int8 codes as unsigned bytes
 * (ann_i8_left) followed by their |a|^2. */
static inline void vm_widen(const vm_data *d, uint32_t id, float *wide)
{
    if (d->q8) {
        int32_t na = ann_i8_left(d->q8, id, (uint8_t *)wide);
        memcpy((char *)wide + d->q8->stride, &na, sizeof na);
    } else {
        d->widen(d->h + (size_t)id * d->dim, d->dim, wide);
    }
}

/* The id of a row pointer of the data's kind (vm_row). */
static inline uint32_t vm_row_id(const vm_data *d, const void *row)
{
    if (d->q8)
        return (uint32_t)(((const int8_t *)row - d->q8->rows) / d->q8->stride);
    if (d->h)
        return (uint32_t)(((const ann_f16 *)row - d->h) / d->dim);
    return (uint32_t)(((const float *)row - d->x) / d->dim);
}

/* Squared L2 from a row prepared by vm_widen to row b: vm_l2's value, bit
 * for bit. */
static inline float vm_l2_wide(const vm_data *d, const float *a_wide, uint32_t b)
{
    if (d->q8) {
        int32_t na;
        memcpy(&na, (const char *)a_wide + d->q8->stride, sizeof na);
        return ann_i8_l2(d->q8, d->dot8, (const uint8_t *)a_wide, na, b);
    }
    return d->ml2sq(a_wide, d->h + (size_t)b * d->dim, d->dim);
}

/* The distance searches rank by, as distance.h defines it; q is a row of
 * the data's kind (a float32 query for searches), or with half rows, that
 * row widened to float32 (vm_greedy does it once per search). */
static inline float vm_dist(const vm_data *d, const void *q, uint32_t id)
{
    if (d->q8) /* builds only, whose distances are L2 (vm_build_data) */
        return vm_l2_wide(d, q, id);
    if (d->h) {
        const ann_f16 *v = d->h + (size_t)id * d->dim;
        switch (d->metric) {
        case ANN_METRIC_IP:
            return -d->mip(q, v, d->dim);
        case ANN_METRIC_COSINE:
            return 1.0f - d->mip(q, v, d->dim);
        default:
            return d->ml2sq(q, v, d->dim);
        }
    }
    const float *v = vm_vec(d, id);
    switch (d->metric) {
    case ANN_METRIC_IP:
        return -d->ip(q, v, d->dim);
    case ANN_METRIC_COSINE:
        return 1.0f - d->ip(q, v, d->dim);
    default:
        return d->l2sq(q, v, d->dim);
    }
}

/* Prefetch a whole vector: a 768-d row is 48 lines, and a random row is
 * a DRAM miss the hardware prefetcher cannot predict. */
static inline void vm_prefetch(const vm_data *d, uint32_t id)
{
    const char *p = (const char *)vm_row(d, id);
    for (uint32_t i = 0; i < d->lines; i++)
        __builtin_prefetch(p + 64 * i, 0, 3);
}

/* ---- greedy search (Algorithm 1) ---------------------------------------- */

typedef struct vm_scratch {
    ann_candlist cl;
    ann_visited vis;
    uint32_t *nbuf;    /* a copy of one neighbour list (stride) */
    uint32_t *unvisited;    /* unvisited neighbours of one expansion (stride) */
    ann_cand *pool;    /* expanded nodes (pool_cap) */
    uint32_t pool_cap, pool_n;
    uint32_t pool_reserve; /* pool slots kept free by the search (stride + 1) */
    float *occl;       /* prune: occlusion factors (pool_cap + stride + 1) */
    uint32_t *result;  /* prune output (stride + 1) */
    float *wide;       /* one half row widened (dim floats; half-row builds) */
    uint64_t dist_evals;
    uint64_t prune_evals; /* of which in RobustPrune (insertions and re-prunes) */
    uint64_t reprunes;    /* back-edge overflows re-pruned */
} vm_scratch;

static void vm_scratch_fini(vm_scratch *s)
{
    ann_candlist_fini(&s->cl);
    ann_visited_fini(&s->vis);
    free(s->nbuf);
    free(s->unvisited);
    free(s->pool);
    free(s->occl);
    free(s->result);
    free(s->wide);
    memset(s, 0, sizeof *s);
}

static int vm_scratch_init(vm_scratch *s, uint64_t n, uint32_t L, uint32_t stride, uint32_t dim,
                           int for_build)
{
    memset(s, 0, sizeof *s);
    int rc = ann_candlist_create(&s->cl, L);
    if (rc == 0)
        rc = ann_visited_init(&s->vis, n);
    s->nbuf = malloc(((size_t)stride + 1) * sizeof *s->nbuf);
    s->unvisited = malloc(((size_t)stride + 1) * sizeof *s->unvisited);
    s->wide = malloc(((size_t)dim + 32) * sizeof *s->wide); /* vm_widen */
    if (for_build) {
        s->pool_reserve = stride + 1;
        s->pool_cap = (4 * L > VAMANA_MAX_POOL ? 4 * L : VAMANA_MAX_POOL) + s->pool_reserve;
        s->pool = malloc((size_t)s->pool_cap * sizeof *s->pool);
        s->occl = malloc((size_t)s->pool_cap * sizeof *s->occl);
        s->result = malloc(((size_t)stride + 1) * sizeof *s->result);
    }
    if (rc || !s->nbuf || !s->unvisited || !s->wide ||
        (for_build && (!s->pool || !s->occl || !s->result))) {
        vm_scratch_fini(s);
        return ann_fail(-ENOMEM, "vamana: no memory for search scratch (n %llu, L %u)",
                        (unsigned long long)n, L);
    }
    return 0;
}

/*
 * Best-first search from g->entry for q with list size L.  With locks, each
 * neighbour list is copied under its stripe (a build in progress); with
 * record_pool, every expanded node goes to s->pool.  Returns hops.
 */
static uint32_t vm_greedy(const vamana_graph *g, const vm_data *d, pthread_mutex_t *locks,
                          const void *q, uint32_t L, vm_scratch *s, int record_pool)
{
    uint32_t hops = 0;
    if (d->narrow) { /* widened once, not at every distance */
        vm_widen(d, vm_row_id(d, q), s->wide);
        q = s->wide;
    }
    ann_candlist_reset_cap(&s->cl, L);
    ann_visited_reset(&s->vis);
    s->pool_n = 0;
    ann_visited_test_and_set(&s->vis, g->entry);
    ann_candlist_insert(&s->cl, vm_dist(d, q, g->entry), g->entry);
    s->dist_evals++;
    int pos;
    while ((pos = ann_candlist_next(&s->cl)) >= 0) {
        const ann_cand v = s->cl.c[pos];
        hops++;
        /* room is kept for the node's own neighbours, added before a prune */
        if (record_pool && s->pool_n + s->pool_reserve < s->pool_cap)
            s->pool[s->pool_n++] = v;
        uint32_t deg;
        const uint32_t *nb;
        if (locks) {
            pthread_mutex_t *lk = &locks[v.id % VAMANA_STRIPES];
            pthread_mutex_lock(lk);
            deg = g->degree[v.id];
            memcpy(s->nbuf, g->adj + (size_t)v.id * g->stride, deg * sizeof *s->nbuf);
            pthread_mutex_unlock(lk);
            nb = s->nbuf;
        } else {
            nb = vamana_neighbors(g, v.id, &deg);
        }
        uint32_t nt = 0;
        for (uint32_t i = 0; i < deg; i++) {
            uint32_t u = nb[i];
            if (!ann_visited_test_and_set(&s->vis, u)) {
                s->unvisited[nt++] = u;
                if (nt <= 2)
                    vm_prefetch(d, u);
            }
        }
        float bound = ann_candlist_bound(&s->cl);
        for (uint32_t i = 0; i < nt; i++) {
            if (i + 2 < nt)
                vm_prefetch(d, s->unvisited[i + 2]);
            float du = vm_dist(d, q, s->unvisited[i]);
            if (du <= bound) {
                ann_candlist_insert(&s->cl, du, s->unvisited[i]);
                bound = ann_candlist_bound(&s->cl);
            }
        }
        s->dist_evals += nt;
    }
    return hops;
}

/* ---- RobustPrune (Algorithm 2) ------------------------------------------ */

static int cand_cmp(const void *a, const void *b)
{
    const ann_cand *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Prune pool[0..np) (distances to p in .dist, squared L2) to at most R
 * neighbours of p into out; returns the count.  Sorts and dedupes pool.
 */
static uint32_t vm_prune(const vm_data *d, uint32_t p, ann_cand *pool, uint32_t np, float alpha,
                         uint32_t R, int saturate, float *occl, float *wide, uint32_t *out,
                         uint64_t *evals)
{
    qsort(pool, np, sizeof *pool, cand_cmp);
    uint32_t m = 0;
    for (uint32_t i = 0; i < np; i++) {
        if (pool[i].id == p || (m > 0 && pool[m - 1].id == pool[i].id))
            continue;
        /* equal ids have equal distances, so duplicates are adjacent */
        pool[m++] = pool[i];
    }
    if (m > VAMANA_MAX_POOL)
        m = VAMANA_MAX_POOL;
    for (uint32_t i = 0; i < m; i++)
        occl[i] = 0.0f;
    uint32_t nout = 0;
    float cur = 1.0f;
    for (;;) {
        for (uint32_t i = 0; i < m && nout < R; i++) {
            if (occl[i] > cur)
                continue;
            occl[i] = INFINITY; /* selected */
            out[nout++] = pool[i].id;
            /* half rows: the selected one widened once for the rest */
            int widened = d->narrow && wide && i + 1 < m;
            if (widened)
                vm_widen(d, pool[i].id, wide);
            uint32_t ahead = i + 1;
            for (uint32_t t = i + 1; t < m; t++) {
                if (occl[t] > alpha)
                    continue;
                /* prefetch the next live candidate two ahead of use */
                if (ahead <= t)
                    ahead = t + 1;
                for (int got = 0; ahead < m && got < 1; ahead++)
                    if (occl[ahead] <= alpha) {
                        vm_prefetch(d, pool[ahead].id);
                        got = 1;
                    }
                float djk = widened ? vm_l2_wide(d, wide, pool[t].id)
                                    : vm_l2(d, pool[i].id, pool[t].id);
                (*evals)++;
                float f = djk == 0.0f ? INFINITY : pool[t].dist / djk;
                if (f > occl[t])
                    occl[t] = f;
            }
        }
        if (nout >= R || cur >= alpha)
            break;
        cur *= 1.2f;
        if (cur > alpha)
            cur = alpha;
    }
    /* saturate: the nearest candidates alpha dropped, up to R (selected
     * ones, and any at distance 0 from a selected one, hold INFINITY) */
    if (saturate && alpha > 1.0f)
        for (uint32_t i = 0; i < m && nout < R; i++)
            if (occl[i] != INFINITY)
                out[nout++] = pool[i].id;
    return nout;
}

/* Squared L2 from p to each pool entry (for IP, where search distances are -ip). */
static void vm_pool_l2(const vm_data *d, uint32_t p, ann_cand *pool, uint32_t np, uint64_t *evals)
{
    for (uint32_t i = 0; i < np; i++)
        pool[i].dist = vm_l2(d, p, pool[i].id);
    *evals += np;
}

uint32_t vamana_slack_degree(uint32_t R, float slack)
{
    return (uint32_t)ceil((double)slack * R - 1e-6);
}

int vamana_prune_rows(const float *rows, uint32_t dim, const float *dist, uint32_t np,
                      float alpha, uint32_t R, uint32_t *out)
{
    if (np == 0 || R == 0)
        return 0;
    ann_cand *pool = malloc((size_t)np * sizeof *pool);
    float *occl = malloc((size_t)np * sizeof *occl);
    if (!pool || !occl) {
        free(pool);
        free(occl);
        return ann_fail(-ENOMEM, "vamana: no memory to prune a pool of %u", np);
    }
    vm_data d;
    vm_data_init(&d, rows, NULL, NULL, dim, ANN_METRIC_L2);
    for (uint32_t i = 0; i < np; i++)
        pool[i] = (ann_cand){ dist[i], i, 0 };
    uint64_t evals = 0;
    uint32_t cnt = vm_prune(&d, VAMANA_NO_ID, pool, np, alpha, R, 0, occl, NULL, out, &evals);
    free(pool);
    free(occl);
    return (int)cnt;
}

/* ---- build -------------------------------------------------------------- */

typedef struct vm_build {
    vamana_graph *g;
    vm_data d;
    const vamana_params *p;
    pthread_mutex_t *locks;
    const uint32_t *order;
    float alpha; /* this pass */
    vm_scratch *scratch; /* per worker */
    ann_progress *prog;  /* points inserted, over all passes */
} vm_build;

/* Build distances: squared L2 for L2 and cosine (same order as 1 - ip on
 * unit vectors, and what RobustPrune needs), -ip for inner product. */
static void vm_build_data(vm_data *bd, const vm_data *d)
{
    *bd = *d;
    if (d->metric == ANN_METRIC_COSINE)
        bd->metric = ANN_METRIC_L2;
}

/* Set N_out(j) to the pruned pool under j's stripe. */
static void vm_set_list(vm_build *b, uint32_t j, const uint32_t *ids, uint32_t cnt)
{
    pthread_mutex_t *lk = &b->locks[j % VAMANA_STRIPES];
    pthread_mutex_lock(lk);
    memcpy(b->g->adj + (size_t)j * b->g->stride, ids, cnt * sizeof *ids);
    b->g->degree[j] = cnt;
    pthread_mutex_unlock(lk);
}

/* Re-prune node j's list (plus extra, when not VAMANA_NO_ID) to R. */
static void vm_reprune(vm_build *b, vm_scratch *s, uint32_t j, uint32_t extra)
{
    vamana_graph *g = b->g;
    pthread_mutex_t *lk = &b->locks[j % VAMANA_STRIPES];
    pthread_mutex_lock(lk);
    uint32_t deg = g->degree[j];
    memcpy(s->nbuf, g->adj + (size_t)j * g->stride, deg * sizeof *s->nbuf);
    pthread_mutex_unlock(lk);
    if (extra != VAMANA_NO_ID)
        s->nbuf[deg++] = extra;
    if (b->d.narrow) {
        vm_widen(&b->d, j, s->wide);
        for (uint32_t i = 0; i < deg; i++)
            s->pool[i] = (ann_cand){ vm_l2_wide(&b->d, s->wide, s->nbuf[i]), s->nbuf[i], 0 };
    } else {
        for (uint32_t i = 0; i < deg; i++)
            s->pool[i] = (ann_cand){ vm_l2(&b->d, j, s->nbuf[i]), s->nbuf[i], 0 };
    }
    s->dist_evals += deg;
    s->reprunes++;
    uint64_t before = s->dist_evals;
    uint32_t cnt = vm_prune(&b->d, j, s->pool, deg, b->alpha, g->R, b->p->saturate, s->occl,
                            s->wide, s->result, &s->dist_evals);
    s->prune_evals += s->dist_evals - before + deg;
    vm_set_list(b, j, s->result, cnt);
}

static void vm_insert(vm_build *b, vm_scratch *s, uint32_t p)
{
    vamana_graph *g = b->g;
    vm_data bd;
    vm_build_data(&bd, &b->d);
    vm_greedy(g, &bd, b->locks, vm_row(&b->d, p), b->p->L_build, s, 1);

    /* pool = expanded nodes u current neighbours of p (expanded nodes only
     * with prune_expanded) */
    pthread_mutex_t *lk = &b->locks[p % VAMANA_STRIPES];
    pthread_mutex_lock(lk);
    uint32_t deg = b->p->prune_expanded ? 0 : g->degree[p];
    memcpy(s->nbuf, g->adj + (size_t)p * g->stride, deg * sizeof *s->nbuf);
    pthread_mutex_unlock(lk);
    uint32_t np = s->pool_n;
    /* with half rows, the search left p widened in s->wide */
    for (uint32_t i = 0; i < deg && np < s->pool_cap; i++) {
        float dist = b->d.narrow ? vm_l2_wide(&b->d, s->wide, s->nbuf[i]) : vm_l2(&b->d, p, s->nbuf[i]);
        s->pool[np++] = (ann_cand){ dist, s->nbuf[i], 0 };
        s->dist_evals++;
    }
    if (b->d.metric == ANN_METRIC_IP)
        vm_pool_l2(&b->d, p, s->pool, s->pool_n, &s->dist_evals);
    uint64_t before = s->dist_evals;
    uint32_t cnt = vm_prune(&b->d, p, s->pool, np, b->alpha, g->R, b->p->saturate, s->occl,
                            s->wide, s->result, &s->dist_evals);
    s->prune_evals += s->dist_evals - before;
    vm_set_list(b, p, s->result, cnt);

    /* back-edges with the slack rule; the result list is reused by prunes,
     * so walk a copy */
    uint32_t nn = cnt;
    memcpy(s->unvisited, s->result, nn * sizeof *s->unvisited);
    for (uint32_t i = 0; i < nn; i++) {
        uint32_t j = s->unvisited[i];
        pthread_mutex_t *lj = &b->locks[j % VAMANA_STRIPES];
        pthread_mutex_lock(lj);
        uint32_t dj = g->degree[j];
        uint32_t *nj = g->adj + (size_t)j * g->stride;
        int present = 0;
        for (uint32_t t = 0; t < dj; t++)
            if (nj[t] == p) {
                present = 1;
                break;
            }
        if (!present && dj < g->stride) {
            nj[dj] = p;
            g->degree[j] = dj + 1;
            present = 1;
        }
        pthread_mutex_unlock(lj);
        if (!present)
            vm_reprune(b, s, j, p);
    }
}

static int vm_pass_run(void *arg, uint64_t bgn, uint64_t end, int worker)
{
    vm_build *b = arg;
    vm_scratch *s = &b->scratch[worker];
    for (uint64_t i = bgn; i < end; i++)
        vm_insert(b, s, b->order[i]);
    ann_progress_add(b->prog, end - bgn);
    return 0;
}

static int vm_final_run(void *arg, uint64_t bgn, uint64_t end, int worker)
{
    vm_build *b = arg;
    vm_scratch *s = &b->scratch[worker];
    for (uint64_t v = bgn; v < end; v++)
        if (b->g->degree[v] > b->g->R)
            vm_reprune(b, s, (uint32_t)v, VAMANA_NO_ID);
    return 0;
}

typedef struct medoid_job {
    const float *x;
    uint64_t n;
    uint32_t dim;
    double *partial; /* per block: dim sums */
    const float *mean;
    ann_metric metric;
    float *best_d;   /* per block */
    uint32_t *best_id;
} medoid_job;

#define MEDOID_BLOCK 16384u

static int medoid_sum_run(void *arg, uint64_t b, uint64_t e, int worker)
{
    (void)worker;
    medoid_job *j = arg;
    for (uint64_t blk = b; blk < e; blk++) {
        double *acc = j->partial + blk * j->dim;
        memset(acc, 0, j->dim * sizeof *acc);
        uint64_t r1 = (blk + 1) * MEDOID_BLOCK < j->n ? (blk + 1) * MEDOID_BLOCK : j->n;
        for (uint64_t r = blk * MEDOID_BLOCK; r < r1; r++)
            for (uint32_t t = 0; t < j->dim; t++)
                acc[t] += j->x[r * j->dim + t];
    }
    return 0;
}

static int medoid_near_run(void *arg, uint64_t b, uint64_t e, int worker)
{
    (void)worker;
    medoid_job *j = arg;
    for (uint64_t blk = b; blk < e; blk++) {
        float best = INFINITY;
        uint32_t bi = (uint32_t)(blk * MEDOID_BLOCK);
        uint64_t r1 = (blk + 1) * MEDOID_BLOCK < j->n ? (blk + 1) * MEDOID_BLOCK : j->n;
        for (uint64_t r = blk * MEDOID_BLOCK; r < r1; r++) {
            float dd = ann_distance(j->metric, j->mean, j->x + r * j->dim, j->dim);
            if (dd < best) {
                best = dd;
                bi = (uint32_t)r;
            }
        }
        j->best_d[blk] = best;
        j->best_id[blk] = bi;
    }
    return 0;
}

uint32_t vamana_medoid(const float *vectors, uint64_t n, uint32_t dim, ann_metric metric,
                       int threads)
{
    uint64_t nb = (n + MEDOID_BLOCK - 1) / MEDOID_BLOCK;
    double *partial = malloc(nb * dim * sizeof *partial);
    float *mean = malloc(dim * sizeof *mean);
    float *best_d = malloc(nb * sizeof *best_d);
    uint32_t *best_id = malloc(nb * sizeof *best_id);
    uint32_t medoid = 0;
    if (!partial || !mean || !best_d || !best_id || n == 0)
        goto out; /* no memory: the first point is a valid (if worse) entry */
    medoid_job j = { vectors, n, dim, partial, mean, metric, best_d, best_id };
    ann_parallel_for(threads, nb, 1, medoid_sum_run, &j);
    for (uint32_t t = 0; t < dim; t++) {
        double s = 0;
        for (uint64_t b = 0; b < nb; b++)
            s += partial[b * dim + t];
        mean[t] = (float)(s / (double)n);
    }
    if (metric == ANN_METRIC_COSINE)
        ann_normalize(mean, dim);
    ann_parallel_for(threads, nb, 1, medoid_near_run, &j);
    float best = INFINITY;
    for (uint64_t b = 0; b < nb; b++)
        if (best_d[b] < best) {
            best = best_d[b];
            medoid = best_id[b];
        }
out:
    free(partial);
    free(mean);
    free(best_d);
    free(best_id);
    return medoid;
}

/* Compact the adjacency from stride g->stride to g->R (lists hold <= R). */
static void vm_compact(vamana_graph *g)
{
    if (g->stride == g->R)
        return;
    for (uint64_t v = 0; v < g->n; v++) {
        uint32_t *dst = g->adj + v * g->R;
        memmove(dst, g->adj + v * g->stride, g->degree[v] * sizeof *dst);
        for (uint32_t i = g->degree[v]; i < g->R; i++)
            dst[i] = VAMANA_NO_ID;
    }
    g->stride = g->R;
    uint32_t *shrunk = realloc(g->adj, g->n * g->R * sizeof *shrunk);
    if (shrunk)
        g->adj = shrunk;
}

/*
 * Give every node unreachable from the entry an in-edge from a reachable
 * node near it with spare degree (found by greedy search), then mark what
 * became reachable.  Returns the number of edges added, or a negative code.
 */
static int64_t vm_connect(vamana_graph *g, const vm_data *d, vm_scratch *s, uint32_t L)
{
    int64_t added = 0;
    uint8_t *seen = calloc(g->n, 1);
    uint32_t *queue = malloc(g->n * sizeof *queue);
    if (!seen || !queue) {
        free(seen);
        free(queue);
        return ann_fail(-ENOMEM, "vamana: no memory for the reachability pass");
    }
    uint64_t head = 0, tail = 0;
    seen[g->entry] = 1;
    queue[tail++] = g->entry;
    for (uint64_t next = 0;; next++) {
        while (head < tail) {
            uint32_t v = queue[head++];
            uint32_t deg;
            const uint32_t *nb = vamana_neighbors(g, v, &deg);
            for (uint32_t i = 0; i < deg; i++)
                if (!seen[nb[i]]) {
                    seen[nb[i]] = 1;
                    queue[tail++] = nb[i];
                }
        }
        while (next < g->n && seen[next])
            next++;
        if (next >= g->n)
            break;
        uint32_t u = (uint32_t)next;
        vm_greedy(g, d, NULL, vm_row(d, u), L, s, 1);
        uint32_t from = VAMANA_NO_ID;
        for (uint32_t i = 0; i < s->pool_n && from == VAMANA_NO_ID; i++)
            if (s->pool[i].id != u && seen[s->pool[i].id] && g->degree[s->pool[i].id] < g->R)
                from = s->pool[i].id;
        for (uint64_t w = 0; w < g->n && from == VAMANA_NO_ID; w++)
            if (w != u && seen[w] && g->degree[w] < g->R)
                from = (uint32_t)w; /* any reachable node with room */
        if (from == VAMANA_NO_ID) {
            /* every reachable node is full (not seen in practice): replace
             * the last edge of the nearest; vamana_check afterwards reports
             * any node this disconnects */
            from = s->pool_n && s->pool[0].id != u ? s->pool[0].id : g->entry;
            g->degree[from]--;
        }
        g->adj[(size_t)from * g->stride + g->degree[from]++] = u;
        added++;
        seen[u] = 1;
        queue[tail++] = u;
    }
    free(seen);
    free(queue);
    return added;
}

typedef struct half_job {
    const float *x;
    ann_f16 *h;
    uint32_t dim;
    int unused;
} half_job;

static int half_run(void *arg, uint64_t b, uint64_t e, int worker)
{
    (void)worker;
    half_job *j = arg;
    return ann_f16_from_f32(j->x + b * j->dim, (e - b) * j->dim, j->h + b * j->dim);
}

int vamana_build_from_memory(const float *vectors, uint64_t n, uint32_t dim, ann_metric metric,
                             const vamana_params *p, vamana_graph **out,
                             vamana_build_stats *stats)
{
    int rc = 0;
    vamana_graph *g = NULL;
    pthread_mutex_t *locks = NULL;
    uint32_t *order = NULL;
    vm_scratch *scratch = NULL;
    ann_f16 *half = NULL;
    ann_i8_rows q8 = { 0 };
    int have_q8 = 0;
    int nscratch = 0;
    vamana_build_stats st = { .i8_noise = -1.0 };
    *out = NULL;
    if (p->R == 0 || p->L_build == 0 || !(p->alpha >= 1.0f) || (p->passes != 1 && p->passes != 2) ||
        !(p->slack >= 1.0f) || dim == 0)
        return ann_fail(ANN_EPARAM,
                        "vamana: need R > 0, L_build > 0, alpha >= 1, passes 1 or 2, slack >= 1 "
                        "(R %u, L_build %u, alpha %g, passes %u, slack %g)",
                        p->R, p->L_build, (double)p->alpha, p->passes, (double)p->slack);
    int threads = p->threads <= 0 ? ann_ncores() : p->threads;
    uint32_t stride = (uint32_t)ceil((double)p->slack * p->R - 1e-6);
    if (stride < p->R)
        stride = p->R;
    rc = vamana_graph_create(n, p->R, stride, &g);
    if (rc)
        return rc;
    g->dim = dim;
    g->L_build = p->L_build;
    g->alpha = p->alpha;
    g->seed = p->seed;

    locks = malloc(VAMANA_STRIPES * sizeof *locks);
    order = malloc(n * sizeof *order);
    scratch = calloc((size_t)threads, sizeof *scratch);
    if (!locks || !order || !scratch) {
        rc = ann_fail(-ENOMEM, "vamana: no memory for a build of %llu points",
                      (unsigned long long)n);
        goto out;
    }
    for (uint32_t i = 0; i < VAMANA_STRIPES; i++)
        pthread_mutex_init(&locks[i], NULL);
    for (; nscratch < threads; nscratch++) {
        rc = vm_scratch_init(&scratch[nscratch], n, p->L_build, stride, dim, 1);
        if (rc)
            goto out;
    }

    double t0 = ann_mono_s();
    g->entry = vamana_medoid(vectors, n, dim, metric, threads);
    double t1 = ann_mono_s();
    st.medoid_s = t1 - t0;

    /* int8 only where a vector kernel sums it: the scalar one is slower than half rows */
    if (p->build_f16 == VAMANA_PREC_I8 && metric != ANN_METRIC_IP &&
        strcmp(ann_i8_active()->name, "scalar") != 0) {
        rc = ann_i8_rows_make(vectors, n, dim, threads, &q8, &st.i8_noise);
        if (rc < 0)
            goto out;
        have_q8 = rc == 0; /* 1: rows it cannot code: half precision instead */
        rc = 0;
    }
    if (p->build_f16 != VAMANA_PREC_F32 && !have_q8) {
        /* half copies; data outside the half range keeps float32 */
        half = ann_alloc_large(n * dim * sizeof *half);
        if (!half) {
            rc = ann_fail(-ENOMEM, "vamana: no memory for %llu x %u half-precision rows",
                          (unsigned long long)n, dim);
            goto out;
        }
        half_job hj = { vectors, half, dim, 0 };
        if (ann_parallel_for(threads, n, 4096, half_run, &hj) != 0) {
            free(half);
            half = NULL;
            ann_err_clear();
        }
    }
    st.half_precision = half != NULL;
    st.precision_used = have_q8 ? VAMANA_PREC_I8 : half ? VAMANA_PREC_F16 : VAMANA_PREC_F32;

    ann_progress prog;
    char what[96];
    snprintf(what, sizeof what, "vamana graph (R %u, L %u, %u pass%s)", p->R, p->L_build, p->passes,
             p->passes == 1 ? "" : "es");
    ann_progress_begin(&prog, what, n * p->passes, "points");
    vm_build b = { .g = g, .p = p, .locks = locks, .order = order, .scratch = scratch, .prog = &prog };
    vm_data_init(&b.d, vectors, half, have_q8 ? &q8 : NULL, dim, metric);
    uint64_t rng = p->seed ^ 0x76616d616e61ull; /* "vamana" */
    for (uint32_t pass = 0; pass < p->passes; pass++) {
        for (uint64_t i = 0; i < n; i++)
            order[i] = (uint32_t)i;
        for (uint64_t i = n - 1; i > 0 && !p->file_order; i--) {
            uint64_t r = vm_rand(&rng) % (i + 1);
            uint32_t t = order[i];
            order[i] = order[r];
            order[r] = t;
        }
        b.alpha = (p->passes == 2 && pass == 0) ? 1.0f : p->alpha;
        rc = ann_parallel_for(threads, n, 64, vm_pass_run, &b);
        if (rc)
            break;
    }
    ann_progress_end(&prog);
    if (rc)
        goto out;
    double t2 = ann_mono_s();
    st.graph_s = t2 - t1;

    rc = ann_parallel_for(threads, n, 1024, vm_final_run, &b);
    if (rc)
        goto out;
    vm_compact(g);
    vm_data bd;
    vm_build_data(&bd, &b.d);
    int64_t added = vm_connect(g, &bd, &scratch[0], p->L_build);
    if (added < 0) {
        rc = (int)added;
        goto out;
    }
    st.finalize_s = ann_mono_s() - t2;
    for (int t = 0; t < nscratch; t++) {
        st.dist_evals += scratch[t].dist_evals;
        st.prune_dist_evals += scratch[t].prune_evals;
        st.reprunes += scratch[t].reprunes;
    }
    rc = vamana_check(g, g->R, "vamana build");
    if (rc) {
        rc = ann_fail_wrap(ANN_EINTERNAL, "vamana build produced an invalid graph");
        goto out;
    }
    *out = g;
    g = NULL;
    if (stats)
        *stats = st;
out:
    for (int t = 0; t < nscratch; t++)
        vm_scratch_fini(&scratch[t]);
    free(scratch);
    if (locks)
        for (uint32_t i = 0; i < VAMANA_STRIPES; i++)
            pthread_mutex_destroy(&locks[i]);
    free(locks);
    free(order);
    free(half);
    ann_i8_rows_free(&q8);
    vamana_graph_destroy(g);
    return rc;
}

int vamana_build(const ann_vecsrc *src, const vamana_params *p, vamana_graph **out,
                 float **out_vectors, vamana_build_stats *stats)
{
    float *x = NULL;
    vamana_build_stats st = { 0 };
    *out = NULL;
    if (out_vectors)
        *out_vectors = NULL;
    double t0 = ann_mono_s();
    int rc = ann_vecsrc_read_all(src, p->threads, &x);
    if (rc)
        return rc;
    double load = ann_mono_s() - t0;
    rc = vamana_build_from_memory(x, src->n, src->dim, src->metric, p, out, &st);
    st.load_s = load;
    if (rc == 0 && stats)
        *stats = st;
    if (rc == 0 && out_vectors)
        *out_vectors = x;
    else
        free(x);
    return rc;
}

/* ---- checker ------------------------------------------------------------ */

int vamana_check(const vamana_graph *g, uint32_t max_degree, const char *label)
{
    int rc = 0;
    uint32_t *stamp = NULL, *queue = NULL;
    if (g->n == 0 || g->n >= VAMANA_NO_ID)
        return ann_fail(ANN_ECORRUPT, "%s: node count %llu out of range", label,
                        (unsigned long long)g->n);
    if (g->entry >= g->n)
        return ann_fail(ANN_ECORRUPT, "%s: entry %u out of range (n %llu)", label, g->entry,
                        (unsigned long long)g->n);
    stamp = calloc(g->n, sizeof *stamp);
    queue = malloc(g->n * sizeof *queue);
    if (!stamp || !queue) {
        rc = ann_fail(-ENOMEM, "%s: no memory to check %llu nodes", label,
                      (unsigned long long)g->n);
        goto out;
    }
    for (uint64_t v = 0; v < g->n; v++) {
        uint32_t deg = g->degree[v];
        if (deg > max_degree || deg > g->stride) {
            rc = ann_fail(ANN_ECORRUPT, "%s: node %llu: degree %u exceeds %u", label,
                          (unsigned long long)v, deg, max_degree < g->stride ? max_degree : g->stride);
            goto out;
        }
        const uint32_t *nb = g->adj + v * g->stride;
        for (uint32_t i = 0; i < deg; i++) {
            uint32_t u = nb[i];
            if (u >= g->n) {
                rc = ann_fail(ANN_ECORRUPT, "%s: node %llu: neighbour %u out of range (n %llu)",
                              label, (unsigned long long)v, u, (unsigned long long)g->n);
                goto out;
            }
            if (u == v) {
                rc = ann_fail(ANN_ECORRUPT, "%s: node %llu: self-loop", label,
                              (unsigned long long)v);
                goto out;
            }
            if (stamp[u] == (uint32_t)v + 1) {
                rc = ann_fail(ANN_ECORRUPT, "%s: node %llu: duplicate neighbour %u", label,
                              (unsigned long long)v, u);
                goto out;
            }
            stamp[u] = (uint32_t)v + 1;
        }
    }
    /* reachability: BFS from the entry, stamps reused as marks */
    memset(stamp, 0, g->n * sizeof *stamp);
    uint64_t head = 0, tail = 0;
    stamp[g->entry] = 1;
    queue[tail++] = g->entry;
    while (head < tail) {
        uint32_t v = queue[head++];
        const uint32_t *nb = g->adj + (size_t)v * g->stride;
        for (uint32_t i = 0; i < g->degree[v]; i++)
            if (!stamp[nb[i]]) {
                stamp[nb[i]] = 1;
                queue[tail++] = nb[i];
            }
    }
    if (tail != g->n)
        for (uint64_t v = 0; v < g->n; v++)
            if (!stamp[v]) {
                rc = ann_fail(ANN_ECORRUPT, "%s: node %llu: unreachable from entry %u", label,
                              (unsigned long long)v, g->entry);
                goto out;
            }
out:
    free(stamp);
    free(queue);
    return rc;
}

/* ---- searcher ----------------------------------------------------------- */

struct vamana_searcher {
    const vamana_graph *g;
    vm_data d;
    uint32_t L_max;
    vm_scratch s;
};

int vamana_searcher_create(const vamana_graph *g, const float *vectors, uint32_t dim,
                           ann_metric metric, uint32_t L_max, vamana_searcher **out)
{
    *out = NULL;
    if (L_max == 0)
        return ann_fail(ANN_EPARAM, "vamana search: L must be positive");
    vamana_searcher *s = calloc(1, sizeof *s);
    if (!s)
        return ann_fail(-ENOMEM, "vamana search: no memory");
    s->g = g;
    s->L_max = L_max;
    vm_data_init(&s->d, vectors, NULL, NULL, dim, metric);
    int rc = vm_scratch_init(&s->s, g->n, L_max, g->stride, s->d.dim, 0);
    if (rc) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void vamana_searcher_destroy(vamana_searcher *s)
{
    if (!s)
        return;
    vm_scratch_fini(&s->s);
    free(s);
}

int vamana_search(vamana_searcher *s, const float *query, uint32_t k, uint32_t L,
                  uint32_t *out_ids, float *out_dists, vamana_search_stats *stats)
{
    if (L < k)
        L = k;
    if (L > s->L_max)
        L = s->L_max;
    s->s.dist_evals = 0;
    uint32_t hops = vm_greedy(s->g, &s->d, NULL, query, L, &s->s, 0);
    uint32_t cnt = s->s.cl.n < k ? s->s.cl.n : k;
    for (uint32_t i = 0; i < cnt; i++) {
        out_ids[i] = s->s.cl.c[i].id;
        out_dists[i] = s->s.cl.c[i].dist;
    }
    if (stats) {
        stats->hops = hops;
        stats->dist_evals = (uint32_t)s->s.dist_evals;
    }
    return (int)cnt;
}

/* ---- file --------------------------------------------------------------- */

int vamana_graph_save(const vamana_graph *g, const char *path)
{
    int rc = 0;
    ann_awriter w;
    uint8_t h[VAMANA_HEADER_BYTES] = { 0 };
    if (g->stride != g->R)
        return ann_fail(ANN_ESTATE, "%s: graph not compacted (stride %u, R %u)", path,
                        g->stride, g->R);
    ann_put_u32(h + VAMANA_OFF_R, g->R);
    ann_put_u64(h + VAMANA_OFF_N, g->n);
    ann_put_u32(h + VAMANA_OFF_ENTRY, g->entry);
    ann_put_u32(h + VAMANA_OFF_DIM, g->dim);
    ann_put_u32(h + VAMANA_OFF_L_BUILD, g->L_build);
    ann_put_f32(h + VAMANA_OFF_ALPHA, g->alpha);
    ann_put_u64(h + VAMANA_OFF_SEED, g->seed);
    rc = ann_awriter_open_header(&w, path, &vamana_binfmt, h);
    if (rc)
        return rc;
    rc = ann_awriter_write_u32s(&w, g->degree, g->n);
    if (rc == 0)
        rc = ann_awriter_write_u32s(&w, g->adj, g->n * g->R);
    if (rc == 0)
        rc = ann_awriter_finish(&w);
    if (rc)
        ann_awriter_abort(&w);
    return rc;
}

int vamana_graph_load(const char *path, vamana_graph **out)
{
    int rc = 0;
    ann_rfile r;
    vamana_graph *g = NULL;
    uint8_t h[VAMANA_HEADER_BYTES];
    *out = NULL;
    rc = ann_rfile_open_header(&r, path, &vamana_binfmt, h);
    if (rc)
        goto out;
    uint32_t R = ann_get_u32(h + VAMANA_OFF_R);
    uint64_t n = ann_get_u64(h + VAMANA_OFF_N);
    if (R == 0 || R > ANN_MAX_R) {
        rc = ann_fail(ANN_EFORMAT, "%s: field R = %u out of range [1, %u]", path, R, ANN_MAX_R);
        goto out;
    }
    if (n == 0 || n >= VAMANA_NO_ID) {
        rc = ann_fail(ANN_EFORMAT, "%s: field n = %llu out of range", path,
                      (unsigned long long)n);
        goto out;
    }
    uint64_t want = VAMANA_HEADER_BYTES + 4 * n + 4 * n * R + 4;
    if (r.size != want) {
        rc = ann_fail(ANN_EFORMAT, "%s: size %llu, expected %llu for n %llu R %u", path,
                      (unsigned long long)r.size, (unsigned long long)want,
                      (unsigned long long)n, R);
        goto out;
    }
    rc = vamana_graph_create(n, R, R, &g);
    if (rc)
        goto out;
    g->entry = ann_get_u32(h + VAMANA_OFF_ENTRY);
    g->dim = ann_get_u32(h + VAMANA_OFF_DIM);
    g->L_build = ann_get_u32(h + VAMANA_OFF_L_BUILD);
    g->alpha = ann_get_f32(h + VAMANA_OFF_ALPHA);
    g->seed = ann_get_u64(h + VAMANA_OFF_SEED);
    rc = ann_rfile_read_u32s(&r, g->degree, n, "degrees");
    if (rc == 0)
        rc = ann_rfile_read_u32s(&r, g->adj, n * R, "neighbours");
    if (rc == 0)
        rc = ann_rfile_check_trailer(&r);
    if (rc == 0)
        rc = vamana_check(g, R, path);
    if (rc)
        goto out;
    *out = g;
    g = NULL;
out:
    ann_rfile_close(&r);
    vamana_graph_destroy(g);
    return rc;
}
