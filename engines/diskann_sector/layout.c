/*
 * layout.c: encoding and verification of the diskann-sector header sector
 * (see layout.h).  Every field of a header read from disk is untrusted:
 * the geometry is recomputed from n, dim and R and must match.
 */
#include "engines/diskann_sector/layout.h"

#include "engines/core/binio.h"
#include "engines/core/status.h"

#include <stddef.h>
#include <string.h>

/* The header frame's identity: magic, version, the frame's length. */
static const ann_binfmt dsec_header_fmt = {
    .magic = DSEC_MAGIC,
    .version = DSEC_VERSION,
    .header_bytes = DSEC_HEADER_BYTES,
    .name = "diskann-sector index",
};

/* The header's fields but sector_bytes (a constant, checked apart). */
static const ann_field dsec_fields[] = {
    ANN_FIELD(DSEC_OFF_N, U64, dsec_header, n),
    ANN_FIELD(DSEC_OFF_DIM, U32, dsec_header, dim),
    ANN_FIELD(DSEC_OFF_METRIC, U32, dsec_header, metric),
    ANN_FIELD(DSEC_OFF_R, U32, dsec_header, R),
    ANN_FIELD(DSEC_OFF_MEDOID, U32, dsec_header, medoid),
    ANN_FIELD(DSEC_OFF_NODES_PER_SECTOR, U32, dsec_header, nodes_per_sector),
    ANN_FIELD(DSEC_OFF_SECTORS_PER_NODE, U32, dsec_header, sectors_per_node),
    ANN_FIELD(DSEC_OFF_NODE_BYTES, U32, dsec_header, node_bytes),
    ANN_FIELD(DSEC_OFF_L_BUILD, U32, dsec_header, L_build),
    ANN_FIELD(DSEC_OFF_ALPHA, F32, dsec_header, alpha),
    ANN_FIELD(DSEC_OFF_PQ_BYTES, U32, dsec_header, pq_bytes),
    ANN_FIELD(DSEC_OFF_SEED, U64, dsec_header, seed),
    ANN_FIELD(DSEC_OFF_TOTAL_SECTORS, U64, dsec_header, total_sectors),
};
#define DSEC_FIELDS (sizeof dsec_fields / sizeof dsec_fields[0])

void dsec_header_encode(const dsec_header *h, uint8_t *hdr)
{
    memset(hdr, 0, DSEC_SECTOR_BYTES);
    ann_put_u32(hdr + DSEC_OFF_SECTOR_BYTES, DSEC_SECTOR_BYTES);
    ann_fields_put(hdr, dsec_fields, DSEC_FIELDS, h);
    ann_frame_seal(hdr, DSEC_HEADER_BYTES, DSEC_MAGIC, h->version);
}

int dsec_header_decode(const uint8_t *hdr, uint64_t file_bytes, const char *path, dsec_header *h)
{
    int rc = ann_frame_check(hdr, DSEC_HEADER_BYTES, &dsec_header_fmt, path);
    if (rc)
        return rc;
    if (ann_get_u32(hdr + DSEC_OFF_SECTOR_BYTES) != DSEC_SECTOR_BYTES)
        return ann_fail(ANN_ECORRUPT, "%s: header: sector_bytes %u, expected %u", path,
                        ann_get_u32(hdr + DSEC_OFF_SECTOR_BYTES), DSEC_SECTOR_BYTES);
    dsec_header got = { .version = ann_get_u32(hdr + ANN_HDR_VERSION_OFF) };
    ann_fields_get(hdr, dsec_fields, DSEC_FIELDS, &got);
    *h = got;
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
    dsec_header want = got;
    dsec_geometry(&want);
    if (got.nodes_per_sector != want.nodes_per_sector ||
        got.sectors_per_node != want.sectors_per_node || got.node_bytes != want.node_bytes ||
        got.total_sectors != want.total_sectors)
        return ann_fail(ANN_ECORRUPT,
                        "%s: header: geometry (nodes_per_sector %u, sectors_per_node %u, "
                        "node_bytes %u, total_sectors %llu) disagrees with n, dim and R",
                        path, got.nodes_per_sector, got.sectors_per_node, got.node_bytes,
                        (unsigned long long)got.total_sectors);
    if (file_bytes < h->total_sectors * DSEC_SECTOR_BYTES)
        return ann_fail(ANN_ECORRUPT, "%s: truncated: %llu bytes, header says %llu sectors (%llu bytes)",
                        path, (unsigned long long)file_bytes,
                        (unsigned long long)h->total_sectors,
                        (unsigned long long)(h->total_sectors * DSEC_SECTOR_BYTES));
    return 0;
}
