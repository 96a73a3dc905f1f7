/*
 * msdiskann.h: reads the graph out of a Microsoft DiskANN disk index, so
 * annlab's DiskANN engines can search a graph that Microsoft's builder
 * made.  The yardstick's build and annlab's search then meet on one graph,
 * and a recall gap between the two tools can be split into the part the
 * graph makes and the part the search makes.
 *
 * The file is `<prefix>_disk.index`, written by Microsoft DiskANN's
 * build_disk_index with --data_type float (the layout below was read from
 * its public source, disk_utils.cpp create_disk_layout and
 * pq_flash_index.cpp load; no code of it is used here).  All fields are
 * little-endian.
 *
 *   sector 0 (4,096 bytes): the metadata, stored as a one-column matrix
 *   +------+-------------------------------------------------------------+
 *   | off  | field                                                       |
 *   +------+-------------------------------------------------------------+
 *   |   0  | u32  nr: how many u64 values follow (>= 9)                  |
 *   |   4  | u32  nc: 1                                                  |
 *   |   8  | u64  npts (nodes)                                           |
 *   |  16  | u64  ndims                                                  |
 *   |  24  | u64  medoid (the search's entry node)                       |
 *   |  32  | u64  max_node_len = 4*ndims + 4*(1 + max_degree) (float)    |
 *   |  40  | u64  nnodes_per_sector = 4096 / max_node_len (0: spans)     |
 *   |  48  | u64  num_frozen_points (0 from a one-shot build)            |
 *   |  56  | u64  frozen point's location                                |
 *   |  64  | u64  append_reorder_data (0; 1 adds 3 values after it)      |
 *   | 8+8(nr-1) | u64 the file's size in bytes (the last value)          |
 *   +------+-------------------------------------------------------------+
 *
 *   sectors 1..: nodes in id order, packed as annlab's own sector file
 *   (engines/diskann_sector/layout.h): node v in sector
 *   1 + v / nnodes_per_sector at byte (v % nnodes_per_sector) *
 *   max_node_len, or, when a node spans sectors (nnodes_per_sector 0),
 *   from sector 1 + v * ceil(max_node_len / 4096).  One node:
 *   +------------------+--------------+--------------------------------+
 *   | f32[ndims] vector| u32 nnbrs    | u32[max_degree] ids (nnbrs used)|
 *   +------------------+--------------+--------------------------------+
 *
 * Integer data (--data_type int8/uint8), frozen points (the streaming
 * index) and the appended re-order data of disk-PQ builds are refused.
 *
 * Beside it, the PQ the search steers by (a "bin" below is u32 rows, u32
 * cols, then rows x cols values, row-major):
 *
 *   <prefix>_pq_pivots.bin
 *     0     bin of u64, 4 x 1: the byte offsets of the three bins below
 *           and the file's size
 *     off0  bin of f32, 256 x ndims: pivot c of every chunk in row c
 *     off1  bin of f32, ndims x 1: the centroid subtracted from every
 *           vector (and query) before it was quantised
 *     off2  bin of u32, (chunks + 1) x 1: chunk j spans dimensions
 *           [off[j], off[j+1])
 *   <prefix>_pq_compressed.bin
 *     bin of u8, npts x chunks: the codes, row v for node v
 *
 * annlab reads it as its own codebook (pq.h) when the chunks are equal,
 * dim / chunks wide: sub-quantizer j's centroid c is pivot c's chunk j
 * plus the centroid's chunk j, so a code's L2 distance to a query is the
 * one Microsoft's search computes on the query minus the centroid (up to
 * rounding).  The old pivots file (5 offsets), unequal chunks and a
 * rotation matrix (`_pq_pivots.bin_rotation_matrix.bin`, OPQ) are refused.
 */
#ifndef ANNLAB_CORE_MSDISKANN_H
#define ANNLAB_CORE_MSDISKANN_H

#include "engines/core/pq.h"
#include "engines/core/vamana.h"
#include "engines/core/vecsrc.h"

#include <jansson.h>
#include <stdint.h>

#define MSDA_SECTOR_BYTES 4096u
#define MSDA_MIN_META 9u            /* npts .. append_reorder_data, file size */
#define MSDA_OFF_NR 0u
#define MSDA_OFF_NC 4u
#define MSDA_OFF_NPTS 8u
#define MSDA_OFF_NDIMS 16u
#define MSDA_OFF_MEDOID 24u
#define MSDA_OFF_MAX_NODE_LEN 32u
#define MSDA_OFF_NODES_PER_SECTOR 40u
#define MSDA_OFF_FROZEN 48u
#define MSDA_OFF_FROZEN_LOC 56u
#define MSDA_OFF_REORDER 64u

/* The decoded header. */
typedef struct msda_header {
    uint64_t npts, ndims, medoid, max_node_len, nodes_per_sector;
    uint64_t file_bytes;       /* the metadata's last value */
    uint32_t max_degree;       /* from max_node_len and ndims */
    uint32_t sectors_per_node; /* 1 when packed */
    uint64_t total_sectors;    /* header sector included */
} msda_header;

/*
 * Read and check the header of path (its size on disk: file_bytes):
 * ANN_EFORMAT (nr/nc, geometry that is not float data, a size other than
 * the metadata's), ANN_EUNSUPPORTED (frozen points, re-order data),
 * ANN_ECORRUPT (medoid >= npts, npts or max_degree out of annlab's range),
 * each naming the file and field.  -errno on I/O.
 */
int msda_header_read(const char *path, msda_header *h);

/*
 * Load the graph of the disk index at path over the vectors of src: npts
 * and ndims must equal src's n and dim, and every node's stored vector
 * must equal src's row bit for bit (ANN_EDATA naming the first row that
 * differs: the index was built on other data).  Degrees above max_degree
 * and neighbour ids >= npts are ANN_ECORRUPT naming the node.  R: the
 * degree bound the caller asked for; 0 takes the file's max_degree, any
 * other value must equal it (ANN_EPARAM).  *out has R = stride =
 * max_degree, entry = the medoid, and the lists as stored (self-loops and
 * repeated ids are kept and counted).  info, when not NULL, receives a
 * JSON object: format, path, bytes, mtime, medoid, max_degree,
 * mean_degree, self_loops, repeated_ids, unreachable (nodes the medoid
 * does not reach).
 */
int msda_graph_load(const char *path, const ann_vecsrc *src, uint32_t R, vamana_graph **out,
                    json_t **info);

/*
 * Load the PQ beside the disk index disk_index (`<prefix>_disk.index`:
 * `<prefix>_pq_pivots.bin` and `<prefix>_pq_compressed.bin`) as an annlab
 * codebook (*cb, metric src's, seed 0, n_train 0: not known) and n x m
 * codes (*codes, malloc'd).  The pivots' ndims and the codes' npts must be
 * src's dim and n (ANN_EDATA); m, the code bytes the build asked for, must
 * be the file's chunk count (ANN_EPARAM "build.pq_bytes: ...").  Errors
 * also: ANN_EFORMAT (a bin's shape, offsets or size), ANN_EUNSUPPORTED
 * (see above), ANN_EDATA (a non-finite pivot), each naming the file.
 * info, when not NULL: a JSON object with both paths and the chunk count.
 */
int msda_pq_load(const char *disk_index, const ann_vecsrc *src, uint32_t m, pq_codebook **cb,
                 uint8_t **codes, json_t **info);

/*
 * Write g over the rows of src as a disk index at path, in the layout
 * above (max_degree: g's largest degree; nine metadata values, no frozen
 * point, no re-order data), for Microsoft DiskANN's search_disk_index to
 * search beside the PQ files of its own build on the same data.  Written
 * to a temporary and renamed over path when complete.  Errors: ANN_EPARAM
 * (g->n != src->n, a graph without edges), read errors of src, -errno
 * naming the file.
 */
int msda_graph_save(const char *path, const ann_vecsrc *src, const vamana_graph *g);

#endif
