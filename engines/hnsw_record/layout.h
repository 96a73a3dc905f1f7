/*
 * layout.h: the on-disk form of the hnsw-record index: an HNSW graph whose
 * nodes, full vector included, are records in the record store.
 *
 *   <dir>/rocksdb/     RocksDB store   } either or both, by the build
 *   <dir>/lmdb/        LMDB store      } parameter `kv` (default both)
 *   <dir>/build.json   written by ann_engine_build
 *
 * Keys are kv_key_u32(table, id): one table byte, then the id as a 4-byte
 * big-endian integer.  Values are little-endian.
 *
 * Table 0x01, id 0: the metadata record, written last (a store without it
 * is an incomplete build and does not open).  64 bytes:
 *
 *     0  char[8]  magic "ANNHNSW\0"
 *     8  u32      format version (HNSW_VERSION)
 *    12  u32      metric (ann_metric)
 *    16  u64      n (vectors; ids 0..n-1)
 *    24  u32      dim
 *    28  u32      M (links per node above layer 0)
 *    32  u32      M0 (links per node at layer 0: M..HNSW_MAX_M0, 2M by default)
 *    36  u32      ef_construction
 *    40  u32      entry point (HNSW_NO_NODE when n = 0)
 *    44  u32      max level (level of the entry point; 0 when n = 0)
 *    48  u64      seed of the level draws
 *    56  u32      reserved, 0
 *    60  u32      crc32 (zlib) of bytes 0..59
 *
 * Table 0x02, id v: node v, read whole by every search that scores v.
 *
 *     0        u32        id v (must equal the key)
 *     4        u8         L, v's top level (<= max level)
 *     5        u8[3]      0
 *     8        f32[dim]   the vector (normalised for cosine)
 *     8+4dim   for l = 0..L:  u32 count_l, then count_l x u32 neighbour ids
 *                             (count_0 <= M0, count_l <= M above)
 *
 * The record length must be exactly 8 + 4 dim + sum_l 4 (1 + count_l).
 * With 768-d and M 16 a layer-0-only node at full degree is 3,208 bytes.
 *
 * Live updates (insert.c; written only by an index opened with the open
 * parameter "updates", never by a build, so a built store is unchanged):
 *
 * Table 0x02 also holds the node record of every inserted id, and the
 * records of the nodes an insert or a merge relinked; their neighbour ids
 * are below the live state's id_bound (not the metadata record's n).
 *
 * Table 0x03, id 0: the live state, written with every insert and merge
 * (absent: the metadata record's entry, max level and n hold).  40 bytes:
 *
 *     0  char[8]  magic "ANNHLIV\0"
 *     8  u32      format version (HNSW_VERSION)
 *    12  u32      entry point (HNSW_NO_NODE when the index is empty)
 *    16  u32      max level (level of the entry point)
 *    20  u32      id_bound: every id in a node record is below it
 *    24  u64      node records
 *    32  u32      merges done
 *    36  u32      crc32 (zlib) of bytes 0..35
 *
 * Table 0x04, id v: a tombstone: v is deleted.  1 byte, 0.  Its node
 * record stays (searches still pass through it, never return it) until a
 * merge relinks every node that points at it and removes both records;
 * the entry point's stays as long as it is the entry point.
 *
 * An insert writes its node record, the records of the neighbours it
 * relinked and the live state in one write batch; a remove writes its
 * tombstone; a merge is one write batch.
 *
 * Version history:
 *   1  initial.
 *   2  the same records; the record store checksums every value and carries
 *      its format file (engines/core/kv.h: KV_FORMAT_VERSION 2).  Version-1
 *      stores are refused: rebuild the index.
 */
#ifndef ANNLAB_HNSW_RECORD_LAYOUT_H
#define ANNLAB_HNSW_RECORD_LAYOUT_H

#define HNSW_MAGIC "ANNHNSW"
#define HNSW_VERSION 2u
#define HNSW_META_BYTES 64
/* The metadata record's fields (the diagram above; record.c encodes and
 * decodes through these names); magic, version and the crc ending it are
 * its binio frame (engines/core/binio.h). */
#define HNSW_OFF_METRIC 12
#define HNSW_OFF_N 16
#define HNSW_OFF_DIM 24
#define HNSW_OFF_M 28
#define HNSW_OFF_M0 32
#define HNSW_OFF_EF_CONSTRUCTION 36
#define HNSW_OFF_ENTRY 40
#define HNSW_OFF_MAX_LEVEL 44
#define HNSW_OFF_SEED 48
#define HNSW_TABLE_META 0x01
#define HNSW_TABLE_NODE 0x02
#define HNSW_TABLE_STATE 0x03
#define HNSW_TABLE_TOMBSTONE 0x04
#define HNSW_STATE_MAGIC "ANNHLIV"
#define HNSW_STATE_BYTES 40
#define HNSW_NODE_HEADER_BYTES 8
#define HNSW_NO_NODE 0xffffffffu
#define HNSW_MAX_LEVEL 31 /* level draws are capped here (p < 16^-31 at M 16) */
#define HNSW_MAX_M0 1024 /* layer-0 links: 2 x the largest M the build takes */

#endif
