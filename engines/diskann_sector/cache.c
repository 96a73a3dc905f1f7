/*
 * cache.c: the BFS node cache of DiskANN (paper, section 3.3: "cache the
 * nodes within a few hops of the entry point").  At open, the first
 * cache_nodes nodes met by a breadth-first walk from the medoid are read
 * from the sector file, verified like any node read, and kept in RAM as
 * their on-disk records; a search that reaches one skips its read.
 */
#include "engines/diskann_sector/dsec.h"

#include "engines/core/status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int dsec_cache_fill(ann_engine *e, uint32_t count)
{
    int rc = 0;
    const dsec_header *h = &e->h;
    ann_aio_queue *q = NULL;
    uint8_t *buf = ann_aio_buf_alloc(e->read_bytes);
    uint32_t *order = malloc((size_t)count * sizeof *order);
    uint32_t *nbrs = malloc((size_t)h->R * sizeof *nbrs);
    e->cache_slot = malloc(h->n * sizeof *e->cache_slot);
    e->cache_recs = malloc((size_t)count * h->node_bytes);
    if (!buf || !order || !nbrs || !e->cache_slot || !e->cache_recs) {
        rc = ann_fail(-ENOMEM, "%s: no memory for a cache of %u nodes", e->path, count);
        goto out;
    }
    for (uint64_t i = 0; i < h->n; i++)
        e->cache_slot[i] = -1;
    ann_aio_opts o = { .kind = e->io_kind, .strict = 1, .fd = e->fd, .depth = 1 };
    rc = ann_aio_queue_create(&o, &q);
    if (rc)
        goto out;

    uint32_t filled = 1;
    order[0] = h->medoid;
    e->cache_slot[h->medoid] = 0;
    for (uint32_t head = 0; head < filled; head++) {
        uint32_t v = order[head];
        uint64_t off = dsec_node_sector(h, v) * DSEC_SECTOR_BYTES;
        int64_t got = ann_aio_read_sync(q, buf, off, e->read_bytes);
        if (got < 0) {
            rc = ann_fail((int)got, "%s: node %u: read failed: %s", e->path, v,
                          ann_strerror((int)got));
            goto out;
        }
        if ((uint64_t)got < e->read_bytes) {
            rc = ann_fail(ANN_ECORRUPT, "%s: node %u: truncated (read %lld of %u bytes)", e->path,
                          v, (long long)got, e->read_bytes);
            goto out;
        }
        const uint8_t *rec = buf + dsec_node_offset(h, v);
        int deg = dsec_node_decode(e, v, rec, NULL, nbrs);
        if (deg < 0) {
            rc = deg;
            goto out;
        }
        memcpy(e->cache_recs + (size_t)head * h->node_bytes, rec, h->node_bytes);
        for (int i = 0; i < deg && filled < count; i++)
            if (e->cache_slot[nbrs[i]] < 0) {
                e->cache_slot[nbrs[i]] = (int32_t)filled;
                order[filled++] = nbrs[i];
            }
    }
    e->cache_count = filled;
out:
    if (rc) {
        free(e->cache_slot);
        free(e->cache_recs);
        e->cache_slot = NULL;
        e->cache_recs = NULL;
        e->cache_count = 0;
    }
    ann_aio_queue_destroy(q);
    ann_aio_buf_free(buf);
    free(order);
    free(nbrs);
    return rc;
}
