/*
 * layout.c: encoding and verification of the diskann-sector header sector
 * (see layout.h).  Every field of a header read from disk is untrusted:
 * the geometry is recomputed from n, dim and R and must match.
 */
#include "engines/diskann_sector/layout.h"

#include "engines/core/binio.h"
#include "engines/core/status.h"

#include <string.h>

/* The header frame's identity: magic, version, the frame's length. */
static const ann_binfmt dsec_header_fmt = {
    .magic = DSEC_MAGIC,
    .version = DSEC_VERSION,
    .header_bytes = DSEC_HEADER_BYTES,
    .name = "diskann-sector index",
};

void dsec_header_encode(const dsec_header *h, uint8_t *hdr)
{
    memset(hdr, 0, DSEC_SECTOR_BYTES);
    ann_put_u32(hdr + DSEC_OFF_SECTOR_BYTES, DSEC_SECTOR_BYTES);
    ann_put_u64(hdr + DSEC_OFF_N, h->n);
    ann_put_u32(hdr + DSEC_OFF_DIM, h->dim);
    ann_put_u32(hdr + DSEC_OFF_METRIC, h->metric);
    ann_put_u32(hdr + DSEC_OFF_R, h->R);
    ann_put_u32(hdr + DSEC_OFF_MEDOID, h->medoid);
    ann_put_u32(hdr + DSEC_OFF_NODES_PER_SECTOR, h->nodes_per_sector);
    ann_put_u32(hdr + DSEC_OFF_SECTORS_PER_NODE, h->sectors_per_node);
    ann_put_u32(hdr + DSEC_OFF_NODE_BYTES, h->node_bytes);
    ann_put_u32(hdr + DSEC_OFF_L_BUILD, h->L_build);
    ann_put_f32(hdr + DSEC_OFF_ALPHA, h->alpha);
    ann_put_u32(hdr + DSEC_OFF_PQ_BYTES, h->pq_bytes);
    ann_put_u64(hdr + DSEC_OFF_SEED, h->seed);
    ann_put_u64(hdr + DSEC_OFF_TOTAL_SECTORS, h->total_sectors);
    ann_frame_seal(hdr, DSEC_HEADER_BYTES, DSEC_MAGIC, h->version);
}

int dsec_header_decode(const uint8_t *hdr, uint64_t file_bytes, const char *path, dsec_header *h)
{
    int rc = ann_frame_check(hdr, DSEC_HEADER_BYTES, &dsec_header_fmt, path);
    if (rc)
        return rc;
    h->version = ann_get_u32(hdr + ANN_HDR_VERSION_OFF);
    if (ann_get_u32(hdr + DSEC_OFF_SECTOR_BYTES) != DSEC_SECTOR_BYTES)
        return ann_fail(ANN_ECORRUPT, "%s: header: sector_bytes %u, expected %u", path,
                        ann_get_u32(hdr + DSEC_OFF_SECTOR_BYTES), DSEC_SECTOR_BYTES);
    h->n = ann_get_u64(hdr + DSEC_OFF_N);
    h->dim = ann_get_u32(hdr + DSEC_OFF_DIM);
    h->metric = ann_get_u32(hdr + DSEC_OFF_METRIC);
    h->R = ann_get_u32(hdr + DSEC_OFF_R);
    h->medoid = ann_get_u32(hdr + DSEC_OFF_MEDOID);
    h->L_build = ann_get_u32(hdr + DSEC_OFF_L_BUILD);
    h->alpha = ann_get_f32(hdr + DSEC_OFF_ALPHA);
    h->pq_bytes = ann_get_u32(hdr + DSEC_OFF_PQ_BYTES);
    h->seed = ann_get_u64(hdr + DSEC_OFF_SEED);
    if (h->n == 0 || h->n >= DSEC_NO_ID)
        return ann_fail(ANN_ECORRUPT, "%s: header: n %llu out of range", path,
                        (unsigned long long)h->n);
    if (h->dim == 0 || h->dim > ANN_MAX_DIM)
        return ann_fail(ANN_ECORRUPT, "%s: header: dim %u out of range", path, h->dim);
    if (h->metric > 2)
        return ann_fail(ANN_ECORRUPT, "%s: header: metric %u unknown", path, h->metric);
    if (h->R == 0 || h->R > ANN_MAX_R)
        return ann_fail(ANN_ECORRUPT, "%s: header: R %u out of range", path, h->R);
    if (h->medoid >= h->n)
        return ann_fail(ANN_ECORRUPT, "%s: header: medoid %u not below n %llu", path, h->medoid,
                        (unsigned long long)h->n);
    if (h->pq_bytes == 0 || h->pq_bytes > h->dim)
        return ann_fail(ANN_ECORRUPT, "%s: header: pq_bytes %u out of range", path, h->pq_bytes);
    dsec_header want = *h;
    dsec_geometry(&want);
    uint32_t nps = ann_get_u32(hdr + DSEC_OFF_NODES_PER_SECTOR);
    uint32_t spn = ann_get_u32(hdr + DSEC_OFF_SECTORS_PER_NODE);
    uint32_t nb = ann_get_u32(hdr + DSEC_OFF_NODE_BYTES);
    uint64_t total = ann_get_u64(hdr + DSEC_OFF_TOTAL_SECTORS);
    if (nps != want.nodes_per_sector || spn != want.sectors_per_node || nb != want.node_bytes ||
        total != want.total_sectors)
        return ann_fail(ANN_ECORRUPT,
                        "%s: header: geometry (nodes_per_sector %u, sectors_per_node %u, "
                        "node_bytes %u, total_sectors %llu) disagrees with n, dim and R",
                        path, nps, spn, nb, (unsigned long long)total);
    *h = want;
    if (file_bytes < h->total_sectors * DSEC_SECTOR_BYTES)
        return ann_fail(ANN_ECORRUPT, "%s: truncated: %llu bytes, header says %llu sectors (%llu bytes)",
                        path, (unsigned long long)file_bytes,
                        (unsigned long long)h->total_sectors,
                        (unsigned long long)(h->total_sectors * DSEC_SECTOR_BYTES));
    return 0;
}
