/*
 * layout.c: encoding and verification of the diskann-sector header sector
 * (see layout.h).  Every field of a header read from disk is untrusted:
 * the geometry is recomputed from n, dim and R and must match.
 */
#include "engines/diskann_sector/layout.h"

#include "engines/core/binio.h"
#include "engines/core/status.h"

#include <string.h>
#include <zlib.h>

void dsec_header_encode(const dsec_header *h, uint8_t *hdr)
{
    memset(hdr, 0, DSEC_SECTOR_BYTES);
    memcpy(hdr, DSEC_MAGIC, 8);
    ann_put_u32(hdr + 8, h->version);
    ann_put_u32(hdr + 12, DSEC_SECTOR_BYTES);
    ann_put_u64(hdr + 16, h->n);
    ann_put_u32(hdr + 24, h->dim);
    ann_put_u32(hdr + 28, h->metric);
    ann_put_u32(hdr + 32, h->R);
    ann_put_u32(hdr + 36, h->medoid);
    ann_put_u32(hdr + 40, h->nodes_per_sector);
    ann_put_u32(hdr + 44, h->sectors_per_node);
    ann_put_u32(hdr + 48, h->node_bytes);
    ann_put_u32(hdr + 52, h->L_build);
    ann_put_f32(hdr + 56, h->alpha);
    ann_put_u32(hdr + 60, h->pq_bytes);
    ann_put_u64(hdr + 64, h->seed);
    ann_put_u64(hdr + 72, h->total_sectors);
    ann_put_u32(hdr + DSEC_HEADER_CRC_OFFSET,
                (uint32_t)crc32(0L, hdr, DSEC_HEADER_CRC_OFFSET));
}

int dsec_header_decode(const uint8_t *hdr, uint64_t file_bytes, const char *path, dsec_header *h)
{
    if (memcmp(hdr, DSEC_MAGIC, 8) != 0)
        return ann_fail(ANN_ECORRUPT, "%s: bad magic (not a diskann-sector index)", path);
    uint32_t crc = (uint32_t)crc32(0L, hdr, DSEC_HEADER_CRC_OFFSET);
    h->version = ann_get_u32(hdr + 8);
    if (h->version != DSEC_VERSION)
        return ann_fail(ANN_EVERSION, "%s: version %u, this build reads %u", path, h->version,
                        DSEC_VERSION);
    if (ann_get_u32(hdr + DSEC_HEADER_CRC_OFFSET) != crc)
        return ann_fail(ANN_ECORRUPT, "%s: header checksum mismatch", path);
    if (ann_get_u32(hdr + 12) != DSEC_SECTOR_BYTES)
        return ann_fail(ANN_ECORRUPT, "%s: header: sector_bytes %u, expected %u", path,
                        ann_get_u32(hdr + 12), DSEC_SECTOR_BYTES);
    h->n = ann_get_u64(hdr + 16);
    h->dim = ann_get_u32(hdr + 24);
    h->metric = ann_get_u32(hdr + 28);
    h->R = ann_get_u32(hdr + 32);
    h->medoid = ann_get_u32(hdr + 36);
    h->L_build = ann_get_u32(hdr + 52);
    h->alpha = ann_get_f32(hdr + 56);
    h->pq_bytes = ann_get_u32(hdr + 60);
    h->seed = ann_get_u64(hdr + 64);
    if (h->n == 0 || h->n >= DSEC_NO_ID)
        return ann_fail(ANN_ECORRUPT, "%s: header: n %llu out of range", path,
                        (unsigned long long)h->n);
    if (h->dim == 0 || h->dim > DSEC_MAX_DIM)
        return ann_fail(ANN_ECORRUPT, "%s: header: dim %u out of range", path, h->dim);
    if (h->metric > 2)
        return ann_fail(ANN_ECORRUPT, "%s: header: metric %u unknown", path, h->metric);
    if (h->R == 0 || h->R > DSEC_MAX_R)
        return ann_fail(ANN_ECORRUPT, "%s: header: R %u out of range", path, h->R);
    if (h->medoid >= h->n)
        return ann_fail(ANN_ECORRUPT, "%s: header: medoid %u not below n %llu", path, h->medoid,
                        (unsigned long long)h->n);
    if (h->pq_bytes == 0 || h->pq_bytes > h->dim)
        return ann_fail(ANN_ECORRUPT, "%s: header: pq_bytes %u out of range", path, h->pq_bytes);
    dsec_header want = *h;
    dsec_geometry(&want);
    if (ann_get_u32(hdr + 40) != want.nodes_per_sector ||
        ann_get_u32(hdr + 44) != want.sectors_per_node ||
        ann_get_u32(hdr + 48) != want.node_bytes || ann_get_u64(hdr + 72) != want.total_sectors)
        return ann_fail(ANN_ECORRUPT,
                        "%s: header: geometry (nodes_per_sector %u, sectors_per_node %u, "
                        "node_bytes %u, total_sectors %llu) disagrees with n, dim and R",
                        path, ann_get_u32(hdr + 40), ann_get_u32(hdr + 44),
                        ann_get_u32(hdr + 48), (unsigned long long)ann_get_u64(hdr + 72));
    *h = want;
    if (file_bytes < h->total_sectors * DSEC_SECTOR_BYTES)
        return ann_fail(ANN_ECORRUPT, "%s: truncated: %llu bytes, header says %llu sectors (%llu bytes)",
                        path, (unsigned long long)file_bytes,
                        (unsigned long long)h->total_sectors,
                        (unsigned long long)(h->total_sectors * DSEC_SECTOR_BYTES));
    return 0;
}
