/*
 * dsec.h: internals shared by the diskann-sector engine's files
 * (build.c, engine.c, cache.c, search.c).  Not a public interface.
 */
#ifndef ANNLAB_DISKANN_SECTOR_DSEC_H
#define ANNLAB_DISKANN_SECTOR_DSEC_H

#include "engines/core/aio.h"
#include "engines/core/candlist.h"
#include "engines/core/pq.h"
#include "engines/core/vamana.h"
#include "engines/core/visited.h"
#include "engines/diskann_sector/layout.h"
#include "engines/engine.h"

#include <stdint.h>

/* The `io` open parameter: how node records are read. */
typedef enum {
    DSEC_IO_URING = 0,  /* O_DIRECT, io_uring (falls back to libaio, then pread) */
    DSEC_IO_LIBAIO,     /* O_DIRECT, Linux AIO */
    DSEC_IO_PREAD,      /* O_DIRECT, pread */
    DSEC_IO_BUFFERED,   /* through the page cache, pread */
    DSEC_IO_MMAP,       /* through the page cache, the file mapped read-only */
} dsec_io;

/* search_mode: DiskANN's rounds or the pipelined schedule (search.c). */
typedef enum {
    DSEC_MODE_PIPELINE = 0,
    DSEC_MODE_ROUND = 1,
} dsec_mode;

/* Reads in flight at the start of an adaptive pipelined search. */
#define DSEC_BEAM_START 2u

struct ann_engine {
    char path[4096];       /* index.sector, for messages */
    dsec_header h;
    ann_metric metric;
    int fd;                /* index.sector, O_DIRECT for the O_DIRECT backends
                              when the filesystem allows */
    int direct;            /* 1: fd is O_DIRECT */
    dsec_io io;            /* the io asked for (after fallback: see io_kind) */
    ann_aio_kind io_kind;  /* backend every context uses (after fallback at open) */
    int sqpoll;            /* io_uring contexts poll submissions (open param sqpoll, after fallback) */
    const uint8_t *map;    /* io mmap: the whole file, read-only; else NULL */
    uint64_t map_bytes;
    uint32_t read_bytes;   /* bytes of one node read: sectors_per_node * 4096 */
    uint32_t *sums;        /* n node-record checksums (index.sums) */
    pq_codebook *pq;       /* in RAM */
    uint8_t *codes;        /* n * pq->m bytes */
    /* BFS cache around the medoid, filled at open */
    uint32_t cache_count;
    uint8_t *cache_recs;   /* cache_count * node_bytes: node records as on disk */
    int32_t *cache_slot;   /* n entries: slot in cache_recs, or -1; NULL when no cache */
};

struct ann_ctx {
    ann_engine *eng;
    uint32_t k_max;
    uint32_t L;            /* search list size */
    uint32_t W;            /* beam width: reads per round, or most in flight */
    dsec_mode mode;        /* search_mode */
    int adaptive;          /* adaptive_beam (pipeline only) */
    uint32_t group;        /* submit_group: most reads per submission (pipeline), 1..W */
    uint32_t *free_slots;  /* W: request slots not in flight (pipeline) */
    ann_aio_queue *q;      /* this context's own queue, depth W */
    uint8_t *bufs;         /* W * read_bytes, 4096-aligned */
    ann_aio_req *reqs;     /* W */
    ann_aio_req **req_ptrs;/* W */
    ann_aio_req **done;    /* W */
    uint32_t *sel;         /* W: nodes chosen this round */
    float *table;          /* PQ distance table */
    ann_cand *cand;        /* max(L, k_max) */
    ann_candlist cl;
    ann_visited visited;
    float *vec;            /* dim: the node vector being ranked */
    uint32_t *nbrs;        /* R: its neighbours */
    uint32_t *fresh;       /* R: neighbours not visited before */
    float *fresh_dist;     /* R: their PQ distances */
    float *top_dist;       /* max(L, k_max): exact distances of nodes read */
    uint32_t *top_id;
};

/* Decode node id's record rec (node_bytes bytes) into ctx->vec and
 * ctx->nbrs, checking degree and ids, then the record's checksum
 * (e->sums; not for records of the BFS cache, checked when it was
 * filled); returns the degree, or ANN_ECORRUPT naming the file and node.
 * vec/nbrs may be NULL to check only. */
int dsec_node_decode(const ann_engine *e, uint32_t id, const uint8_t *rec, float *vec,
                     uint32_t *nbrs);

/* Fill e's BFS cache with up to count nodes around the medoid. */
int dsec_cache_fill(ann_engine *e, uint32_t count);

/*
 * Write index.sector at path: h's header sector (geometry already set by
 * dsec_geometry), then every node of g with its vector (n rows of dim
 * floats) in id order.  On failure the file is removed.  Errors: -errno
 * naming the file.  Used by dsec_build and by the golden-byte test.
 */
int dsec_write_sector_file(const char *path, const dsec_header *h, const float *vectors,
                           const vamana_graph *g);

/*
 * Write index.sums at path: the checksum of every node record exactly as
 * dsec_write_sector_file lays it out.  Errors: -errno naming the file.
 */
int dsec_write_sums_file(const char *path, const dsec_header *h, const float *vectors,
                         const vamana_graph *g);

/* Load and check index.sums (against h's n and node_bytes) into *sums
 * (malloc'd, n entries).  ANN_ECORRUPT / ANN_EVERSION naming the file;
 * ANN_EVERSION also when it is missing (an index of format 1). */
int dsec_sums_load(const char *path, const dsec_header *h, uint32_t **sums);

int dsec_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report);
int dsec_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
                ann_stats *stats);

extern const ann_param_spec dsec_build_params[];
extern const ann_param_spec dsec_open_params[];
extern const ann_param_spec dsec_search_params[];

#endif
