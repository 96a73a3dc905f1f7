/*
 * drec.h: internals shared by the files of the diskann-record and
 * diskann-resident engines (one folder, two vtables, one search loop).
 *
 * The two engines differ only in where a neighbour's PQ code comes from:
 * diskann-record reads it from the expanded node's record (every edge of a
 * node is ranked with the one read), diskann-resident from an array of all
 * codes loaded at open (records hold only ids).  The layout flag in the
 * engine selects the source; everything else is the same code.
 */
#ifndef ANNLAB_DISKANN_RECORD_DREC_H
#define ANNLAB_DISKANN_RECORD_DREC_H

#include "engines/core/candlist.h"
#include "engines/core/kv.h"
#include "engines/core/paged.h"
#include "engines/core/pq.h"
#include "engines/core/pq_lb.h"
#include "engines/core/visited.h"
#include "engines/diskann_record/layout.h"
#include "engines/engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/*
 * Live updates (live.c).  Writers (insert, remove, each merge batch) are
 * serialised by wlock, around their one kv_txn each; one merge runs at a
 * time (mlock), reading the store through its own reader and committing
 * in batches.  What searches share with writers, all lock-free: id_bound
 * (every id a search can meet is below it; raised before the commit that
 * publishes a larger id, read after a search takes its snapshot), the
 * deleted-id set (set after the tombstone commits, before remove returns)
 * and, resident layout, the codes of merged nodes (written before the
 * commit that links the node).
 *
 * Live build (layout.h version 3): while untrained, mode is
 * DREC_MODE_SCAN and scan_rows counts the vector records (deleted ones
 * included until a merge drops them).  The insert that trains (under
 * wlock) commits, then fills the engine's codebook, metadata and codes,
 * then stores mode DREC_MODE_GRAPH with release order; a search loads
 * mode once (drec_mode, acquire) before its snapshot, so it either scans
 * (correct in any snapshot: every live vector has its vector record) or
 * walks a graph that was committed and published before it looked.
 */
typedef struct drec_live {
    int inited;            /* drec_live_open ran: locks and sets exist */
    int enabled;           /* opened with "updates": true (store writable) */
    uint32_t merge_every;  /* background merge after this many pending (0: never) */
    uint32_t merge_threads; /* threads a merge links with (>= 1) */
    size_t merge_cache_bytes; /* the link workers' record caches, in all */
    size_t merge_snapshot_bytes; /* the largest graph a merge copies into memory */
    int compact_after_merge; /* kv_compact after every merge */
    pthread_mutex_t wlock; /* one kv_txn at a time */
    pthread_mutex_t mlock; /* one merge at a time */
    kv_reader *wrd;        /* the writers' reader (existence checks), under wlock */
    _Atomic uint32_t id_bound;
    _Atomic uint32_t mode;  /* DREC_MODE_*: scan until trained (drec_mode) */
    _Atomic uint64_t pending, deleted, graph_nodes, merges;
    _Atomic uint64_t snap_merges; /* merges that read the graph into memory (mg_snap) */
    _Atomic uint64_t snap_vec_merges; /* of those, merges that kept the vectors too */
    _Atomic uint64_t scan_rows; /* scan mode: vector records */
    ann_idbits dead;       /* ids with a tombstone, or consolidated */
    ann_idrows codes;      /* resident: PQ codes of merged nodes, by id */
    /* The shared in-memory copy of the pending codes: slot s (a sequence
     * number, rows by s mod 2^32) holds a u32 id and the id's m code
     * bytes; slots [pc_head, pc_tail) are the pending inserts when
     * pc_complete (an insert appends after its commit, a merge advances
     * pc_head past what it linked).  Past pending_cache_mb, or without
     * it, pc_complete is 0 and searches scan the pending records of the
     * store instead, until a merge leaves room to reload them.  Pages
     * below pc_head are freed only while no search is in flight
     * (pc_active). */
    ann_idrows pc_rows;
    /* With pc_lb (L2 and cosine, a CPU with AVX-512 VBMI: pq_lb_fast), the
     * same codes again in blocks of 64 slots for the byte-table filter
     * (pq_lb.h): slot s is lane s % 64 of block s / 64, whose row j (64
     * bytes, lanes at pq_lb_pos) is row (s / 64) * m + j of pc_blocks,
     * taken mod 2^32 like the slots.  A block is read as a block only once
     * all 64 of its slots are below pc_tail and at or above pc_head; the
     * slots of a partly filled or partly merged block are scored from
     * pc_rows. */
    int pc_lb;
    ann_idrows pc_blocks;
    uint64_t pcb_freed;     /* pages of pc_blocks below this one are freed */
    uint64_t pc_cap;        /* slots pending_cache_mb allows */
    _Atomic uint64_t pc_head, pc_tail;
    _Atomic int pc_complete, pc_active;
    uint64_t pc_freed;      /* pages of pc_rows below this one are freed */
    /* the background merger */
    pthread_t thread;
    int thread_started, stop, kick;
    pthread_cond_t cond;   /* under wlock: kick or stop */
    int bg_error;          /* the last background merge's error code (0: none) */
} drec_live;

struct ann_engine {
    char store_dir[4200]; /* <index>/<backend>, named in messages */
    drec_meta meta;  /* mode, n, medoid and its code change once, at live training */
    kv_store *kv;
    pq_codebook *pq; /* graph mode only */
    uint8_t *codes;  /* resident layout: n * m bytes, node v at codes + v*m */
    drec_live live;
};

/* The index's mode as searches and writers see it (drec_live above). */
static inline uint32_t drec_mode(const ann_engine *e)
{
    return atomic_load_explicit(&e->live.mode, memory_order_acquire);
}

/* The resident PQ code of node v: ids below the build's n in the loaded
 * array (a merge that links such an id again, after it was deleted and
 * consolidated, overwrites its row), larger ones in live.codes. */
static inline const uint8_t *drec_resident_code(const ann_engine *e, uint32_t v)
{
    if (v < e->meta.n)
        return e->codes + (size_t)v * e->meta.pq_bytes;
    return ann_idrows_get(&e->live.codes, v);
}

#define DREC_MAX_BEAM 64 /* beam_width's upper bound */

struct ann_ctx {
    ann_engine *eng;
    kv_reader *rd;
    uint32_t L, rerank, k_max;
    uint32_t W;       /* beam_width: records read in parallel */
    int vector_ahead; /* hint an expanded candidate's vector record with its node */
    int pipeline;     /* search_mode "pipeline": W reads in flight without rounds */
    uint32_t *rr;     /* storage max(L, k_max): the ids a re-rank reads */
    float *table;     /* PQ distance table, m * 256 floats */
    float *floor;     /* pq_table_floor of it, m + 1 floats (the pending scan's) */
    uint8_t *lbq;     /* the pending scan's byte table (pq_lb.h), m * 256 bytes */
    uint8_t *lbblk;   /* a block of pc_blocks that spans two pages, copied whole */
    ann_candlist cand; /* storage max(L, k_max) */
    ann_visited visited;
    float *top_dist;  /* k_max */
    uint32_t *top_id; /* k_max */
    float *vec;       /* dim floats: a vector record decoded (big-endian hosts) */
};

/* The declared parameters (engine.c), shared by both vtables. */
extern const ann_param_spec drec_build_params[];
extern const ann_param_spec drec_open_params[];
extern const ann_param_spec drec_search_params[];

/*
 * Build an index of the given layout (DREC_LAYOUT_FULL / _RESIDENT) for
 * engine `name` into dir: PQ codebook and Vamana graph through the shared
 * artifacts (engines/core/artifacts.h), then records into each store the
 * `kv` parameter selects, the metadata record last.
 */
int drec_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report, uint32_t layout, const char *name);

/* Open an index built for engine `name` with the given layout; fills the
 * open report (kv_open_report). */
int drec_open(const char *dir, const json_t *open_params, uint32_t layout, const char *name,
              ann_engine **out, json_t *report);
void drec_close(ann_engine *e);

/* A growing id array (merges and the live build); free ids when done. */
typedef struct drec_id_list {
    uint32_t *ids;
    uint32_t n, cap;
} drec_id_list;
/* Append id; -ENOMEM when the array cannot grow. */
int drec_id_list_add(drec_id_list *l, uint32_t id);

/* Live updates (live.c).  drec_live_open: after the metadata is read,
 * with opts the open parameters: loads tombstones, pending count, the
 * live state and (resident) merged codes, and starts the background
 * merger when merge_every > 0.  drec_live_close stops it; both accept an
 * engine without updates. */
int drec_live_open(ann_engine *e, kv_reader *rd, const json_t *open_params);
void drec_live_close(ann_engine *e);
int drec_insert(ann_engine *e, uint32_t id, const float *vec, uint32_t dim);
int drec_remove(ann_engine *e, uint32_t id);
int drec_merge(ann_engine *e);
/* Live build (livebuild.c), under wlock, on an untrained index.
 * drec_live_train: the insert of id (vec; rec its vector record bytes)
 * that brings the live vectors to DREC_SCAN_BELOW: PQ, codes and the first
 * graph over them all, committed in one batch with the codebook file
 * written before it, then published (drec.h: mode).  drec_scan_merge:
 * drops the deleted vectors and their tombstones in one batch. */
int drec_live_train(ann_engine *e, uint32_t id, const float *vec, const uint8_t *rec);
int drec_scan_merge(ann_engine *e);
/* Live vectors: graph nodes + pending + scanned rows - deleted. */
uint64_t drec_live_size(const ann_engine *e);

/* The search of both engines (search.c); see engine.h for the contract. */
int drec_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats);

#endif
