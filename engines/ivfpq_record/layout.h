/*
 * layout.h: the on-disk form of the ivfpq-record index: IVF lists of PQ
 * codes of residuals, and full vectors for re-ranking, as records in the
 * record store; the coarse centroids and the PQ codebook are small files
 * held in RAM by an open index.
 *
 *   <dir>/coarse.fbin  coarse centroids: big-ann float32 file, lists x dim
 *   <dir>/pq.pqcb      PQ codebook of the residuals (engines/core/pq.h format;
 *                      trained as inner product for ip/cosine data, L2 for l2)
 *   <dir>/rocksdb/     RocksDB store   } either or both, by the build
 *   <dir>/lmdb/        LMDB store      } parameter `kv` (default both)
 *   <dir>/build.json   written by ann_engine_build
 *
 * Values are little-endian.
 *
 * Table 0x01, kv_key_u32 id 0: the metadata record, written last (a store
 * without it is an incomplete build and does not open).  64 bytes:
 *
 *     0  char[8]  magic "ANNIVFQ\0"
 *     8  u32      format version (IVFPQ_VERSION)
 *    12  u32      metric (ann_metric)
 *    16  u64      n (vectors; ids 0..n-1)
 *    24  u32      dim
 *    28  u32      nlist, as asked at build (bounds nprobe)
 *    32  u32      lists, as built: min(nlist, n)
 *    36  u32      pq_bytes m
 *    40  u32      chunk entries C (IVFPQ_CHUNK_ENTRIES)
 *    44  u32      0
 *    48  u64      training seed
 *    56  u32      0
 *    60  u32      crc32 (zlib) of bytes 0..59
 *
 * Table 0x02, kv_key_u64 id (list << 32 | chunk): one chunk of a list.  A
 * list of len entries is ceil(len / C) records; all but the last hold C.
 *
 *     0        u32        list
 *     4        u32        chunk
 *     8        u32        count (entries in this record)
 *    12        u32        0
 *    16        u32[count] vector ids, ascending
 *    16+4count u8[count*m] their PQ codes, in the same order
 *
 * Table 0x03, kv_key_u32 id v: vector v, dim x f32 (exactly 4 dim bytes).
 *
 * Table 0x04, kv_key_u32 id 0: the list directory: u32 lists, then lists x
 * u32 list lengths (summing to n), then u32 crc32 of the bytes before it.
 *
 * With C = 1024 and m = 96, a full chunk is 102,416 bytes; at 100k vectors
 * and 1,265 lists a list is one record.
 *
 * Version history: 1 (initial).
 */
#ifndef ANNLAB_IVFPQ_RECORD_LAYOUT_H
#define ANNLAB_IVFPQ_RECORD_LAYOUT_H

#define IVFPQ_MAGIC "ANNIVFQ"
#define IVFPQ_VERSION 1u
#define IVFPQ_META_BYTES 64
#define IVFPQ_CHUNK_HEADER_BYTES 16
#define IVFPQ_CHUNK_ENTRIES 1024u
#define IVFPQ_TABLE_META 0x01
#define IVFPQ_TABLE_LIST 0x02
#define IVFPQ_TABLE_VECTOR 0x03
#define IVFPQ_TABLE_DIR 0x04
#define IVFPQ_COARSE_FILE "coarse.fbin"
#define IVFPQ_CODEBOOK_FILE "pq.pqcb"

#endif
