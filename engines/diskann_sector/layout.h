/*
 * layout.h: the diskann-sector index, the on-disk layout of the DiskANN
 * paper (Subramanya et al., NeurIPS 2019, section 3.3): each node's full
 * vector and its neighbour list stored together, so one sector read both
 * re-ranks the node exactly and expands it.
 *
 * Index directory:
 *   <dir>/index.sector   the sector file below (read with O_DIRECT)
 *   <dir>/index.sums     node-record checksums (below), loaded into RAM at open
 *   <dir>/pq.pqcb        PQ codebook (engines/core/pq.h format)
 *   <dir>/pq.pqcodes     PQ codes, n x pq_bytes (engines/core/artifacts.h
 *                        codes format); both loaded into RAM at open
 *   <dir>/build.json     written by ann_engine_build
 *
 * index.sector is a sequence of 4,096-byte sectors, all fields
 * little-endian:
 *
 *   sector 0: header
 *   +--------+------------------------------------------------------------+
 *   | off    | field                                                      |
 *   +--------+------------------------------------------------------------+
 *   |   0    | char[8]  magic "ANNDSEC\0"                                 |
 *   |   8    | u32      version (DSEC_VERSION)                            |
 *   |  12    | u32      sector_bytes (4096)                               |
 *   |  16    | u64      n (nodes)                                         |
 *   |  24    | u32      dim                                               |
 *   |  28    | u32      metric (ann_metric: 0 l2, 1 ip, 2 cosine)         |
 *   |  32    | u32      R (max degree = neighbour slots per node)         |
 *   |  36    | u32      medoid (entry node)                               |
 *   |  40    | u32      nodes_per_sector (>= 1; 1 when a node spans)      |
 *   |  44    | u32      sectors_per_node (>= 1; > 1 only when it spans)   |
 *   |  48    | u32      node_bytes = 4*dim + 4 + 4*R                      |
 *   |  52    | u32      L_build                                           |
 *   |  56    | f32      alpha                                             |
 *   |  60    | u32      pq_bytes                                          |
 *   |  64    | u64      seed                                              |
 *   |  72    | u64      total_sectors (header included)                   |
 *   |  80    | u32      crc32 (zlib) of bytes [0, 80)                     |
 *   |  84    | zero to the end of the sector                              |
 *   +--------+------------------------------------------------------------+
 *
 *   sectors 1..: nodes in id order.  One node record:
 *   +---------------------+-------------+-----------------------------+
 *   | f32[dim] vector     | u32 degree  | u32[R] neighbour ids        |
 *   +---------------------+-------------+-----------------------------+
 *     ids past `degree` are 0xFFFFFFFF.
 *
 *   When node_bytes <= 4096, nodes_per_sector = 4096 / node_bytes records
 *   are packed from the start of each sector and the rest is zero; node v
 *   lives in sector 1 + v / nodes_per_sector at byte
 *   (v % nodes_per_sector) * node_bytes.  When node_bytes > 4096, each node
 *   starts a sector and spans sectors_per_node = ceil(node_bytes / 4096)
 *   sectors; node v starts at sector 1 + v * sectors_per_node.
 *
 *     768-d float, R 64: 3072 + 4 + 256 = 3332 B -> 1 node per sector
 *     960-d float, R 64: 3840 + 4 + 256 = 4100 B -> spans 2 sectors
 *     128-d float, R 32:  512 + 4 + 128 =  644 B -> 6 nodes per sector
 *
 * index.sums, written with engines/core/binio.h's checksummed writer:
 *
 *      0  char[8]  magic "ANNDSUM\0"
 *      8  u32      version (DSEC_SUMS_VERSION)
 *     12  u32      node_bytes (as index.sector's header)
 *     16  u64      n
 *     24  u32[n]   ann_checksum (engines/core/crc32c.h) of each node record
 *    end  u32      crc32 (zlib) of every byte before it
 *
 * Every node record is checked against its sum after its degree and
 * neighbour ids (search.c, dsec_node_decode) and before its vector or
 * neighbours are used, whichever backend read it; records of the BFS cache
 * once, when the cache is filled.  RAM: 4 bytes per node.
 *
 * Version history of index.sector:
 *   1  initial: header sector with crc32, packed or spanning node records.
 * The index directory's format (the engine's format_version, DSEC_FORMAT):
 *   1  index.sector v1, pq.pqcb, pq.pqcodes.
 *   2  index.sums added (index.sector unchanged): before, a flipped byte in a
 *      node's vector changed recall without an error.  An index without
 *      index.sums is refused: rebuild it.
 */
#ifndef ANNLAB_DISKANN_SECTOR_LAYOUT_H
#define ANNLAB_DISKANN_SECTOR_LAYOUT_H

#include "engines/core/limits.h"

#include <stdint.h>

#define DSEC_MAGIC "ANNDSEC"          /* 8 bytes with the terminating NUL */
#define DSEC_VERSION 1u              /* index.sector */
#define DSEC_FORMAT 2u               /* the index directory (engine format_version) */
#define DSEC_SUMS_MAGIC "ANNDSUM"
#define DSEC_SUMS_VERSION 1u
#define DSEC_SUMS_HEADER_BYTES 24u
#define DSEC_SECTOR_BYTES 4096u

/* The header sector's fields (the diagram above; layout.c encodes and
 * decodes through these names).  Magic at ANN_HDR_MAGIC_OFF, version at
 * ANN_HDR_VERSION_OFF (engines/core/binio.h); the header is a binio frame
 * of DSEC_HEADER_BYTES whose crc ends it, zero-padded to the sector. */
#define DSEC_OFF_SECTOR_BYTES 12u
#define DSEC_OFF_N 16u
#define DSEC_OFF_DIM 24u
#define DSEC_OFF_METRIC 28u
#define DSEC_OFF_R 32u
#define DSEC_OFF_MEDOID 36u
#define DSEC_OFF_NODES_PER_SECTOR 40u
#define DSEC_OFF_SECTORS_PER_NODE 44u
#define DSEC_OFF_NODE_BYTES 48u
#define DSEC_OFF_L_BUILD 52u
#define DSEC_OFF_ALPHA 56u
#define DSEC_OFF_PQ_BYTES 60u
#define DSEC_OFF_SEED 64u
#define DSEC_OFF_TOTAL_SECTORS 72u
#define DSEC_HEADER_CRC_OFFSET 80u    /* the crc covers bytes [0, 80) */
#define DSEC_HEADER_BYTES 84u         /* the frame, crc included */

/* index.sums' header fields (magic and version as above) */
#define DSEC_SUMS_OFF_NODE_BYTES 12u
#define DSEC_SUMS_OFF_N 16u
#define DSEC_NO_ID 0xFFFFFFFFu        /* unused neighbour slot */

#define DSEC_INDEX_FILE "index.sector"
#define DSEC_SUMS_FILE "index.sums"
#define DSEC_PQ_CODEBOOK_FILE "pq.pqcb"
#define DSEC_PQ_CODES_FILE "pq.pqcodes"

/* The decoded header. */
typedef struct dsec_header {
    uint32_t version;
    uint64_t n;
    uint32_t dim;
    uint32_t metric;
    uint32_t R;
    uint32_t medoid;
    uint32_t nodes_per_sector;
    uint32_t sectors_per_node;
    uint32_t node_bytes;
    uint32_t L_build;
    float alpha;
    uint32_t pq_bytes;
    uint64_t seed;
    uint64_t total_sectors;
} dsec_header;

/* Derived geometry for dim and R: node_bytes, nodes_per_sector,
 * sectors_per_node and total_sectors for n nodes. */
static inline void dsec_geometry(dsec_header *h)
{
    h->node_bytes = 4u * h->dim + 4u + 4u * h->R;
    if (h->node_bytes <= DSEC_SECTOR_BYTES) {
        h->nodes_per_sector = DSEC_SECTOR_BYTES / h->node_bytes;
        h->sectors_per_node = 1;
        h->total_sectors = 1 + (h->n + h->nodes_per_sector - 1) / h->nodes_per_sector;
    } else {
        h->nodes_per_sector = 1;
        h->sectors_per_node = (h->node_bytes + DSEC_SECTOR_BYTES - 1) / DSEC_SECTOR_BYTES;
        h->total_sectors = 1 + h->n * h->sectors_per_node;
    }
}

/* First sector of node v, and its byte offset within that sector. */
static inline uint64_t dsec_node_sector(const dsec_header *h, uint32_t v)
{
    return h->sectors_per_node > 1 ? 1 + (uint64_t)v * h->sectors_per_node
                                   : 1 + (uint64_t)v / h->nodes_per_sector;
}
static inline uint32_t dsec_node_offset(const dsec_header *h, uint32_t v)
{
    return h->sectors_per_node > 1 ? 0 : (v % h->nodes_per_sector) * h->node_bytes;
}

/* Encode h into the 4096-byte sector hdr (zeroed first, crc included). */
void dsec_header_encode(const dsec_header *h, uint8_t *hdr);

/*
 * Decode and verify the header sector read from path (file_bytes: the
 * file's size), the header framing first (engines/core/binio.h:
 * checksum, magic, version), then every field: dim up to ANN_MAX_DIM and R
 * up to ANN_MAX_R (engines/core/limits.h).  Errors name the file and
 * field: ANN_ECORRUPT (checksum, geometry, n/dim/R/medoid out of range,
 * file shorter than total_sectors), ANN_EFORMAT (magic), ANN_EVERSION
 * (version other than DSEC_VERSION).
 */
int dsec_header_decode(const uint8_t *hdr, uint64_t file_bytes, const char *path, dsec_header *h);

#endif
