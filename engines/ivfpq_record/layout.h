/*
 * layout.h: the on-disk form of the ivfpq-record index: IVF lists of PQ
 * codes of residuals, and full vectors for re-ranking, as records in the
 * record store; the coarse centroids and the PQ codebook are small files
 * held in RAM by an open index.
 *
 *   <dir>/coarse.fbin  coarse centroids: big-ann float32 file, lists x dim
 *                      (k-means means for l2 and cosine, unit vectors of
 *                      spherical k-means for ip; build.c)
 *   <dir>/pq.pqcb      PQ codebook of the residuals (engines/core/pq.h format;
 *                      its metric field says ip for ip/cosine data, l2 for
 *                      l2; the training is the same k-means either way, and
 *                      the search uses its inner-product table for every
 *                      metric, so the field is a label only)
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
 *    44  u32      ann_checksum (engines/core/crc32c.h) of coarse.fbin's rows:
 *                 the lists x dim float32 after its 8-byte header
 *    48  u64      training seed
 *    56  u32      0
 *    60  u32      crc32 (zlib) of bytes 0..59
 *
 * Table 0x02, kv_key_u64 id (list << 32 | chunk): one chunk of a list.  A
 * list of len entries is ceil(len / C) records; all but the last hold C.
 * Record length 16 + count * (8 + m).
 *
 *     0        u32        list
 *     4        u32        chunk
 *     8        u32        count (entries in this record)
 *    12        u32        0
 *    16        u32[count] vector ids, ascending
 *    16+4count f32[count] beta of each entry, in the same order (finite)
 *    16+8count u8[count*m] their PQ codes, in the same order
 *
 * beta is the query-independent part of the entry's distance: with c the
 * list's centroid and r' the decoded residual (pq_decode of the code),
 *     beta = <c, r'> + |r'|^2 / 2 = (|c + r'|^2 - |c|^2) / 2,
 * summed in double at build and stored rounded to f32, so that
 * |q - c - r'|^2 = |q - c|^2 + 2 (beta - <q, r'>) needs one inner-product
 * table per query (search.c).  ip indexes store it too and do not use it.
 * The betas come before the codes so they sit 4-byte aligned in the record
 * whatever m is.
 *
 * Table 0x03, kv_key_u32 id v: vector v, dim x f32 (exactly 4 dim bytes).
 *
 * Table 0x04, kv_key_u32 id 0: the list directory: u32 lists, then lists x
 * u32 list lengths (summing to n), then u32 crc32 of the bytes before it.
 *
 * Live updates (insert.c; written only by an index opened with the open
 * parameter "updates", never by a build, so a built store is unchanged):
 *
 * Table 0x03 also holds the vector record of every inserted id.
 *
 * Table 0x05, kv_key_u64 id (list << 32 | v): an appended entry of list
 * `list`, vector v inserted after the build (a prefix iteration of the
 * table byte and the list's 4 big-endian bytes walks a list's appended
 * entries).  4 + m bytes:
 *
 *     0  f32      beta of the entry (as in a chunk record; finite)
 *     4  u8[m]    PQ code of its residual v - c
 *
 * Table 0x06, kv_key_u32 id v: a tombstone: v is deleted.  1 byte, 0.
 * Its vector record and its list entry (chunk or appended) stay, skipped
 * by searches, until a merge.
 *
 * Table 0x07, kv_key_u32 id 0: the live state, written by every merge
 * (absent: the metadata record's n holds).  32 bytes:
 *
 *     0  char[8]  magic "ANNILIV\0"
 *     8  u32      format version (IVFPQ_VERSION)
 *    12  u32      id_bound: every id in a chunk record is below it
 *    16  u64      entries: the lengths in the list directory sum to it
 *    24  u32      merges done
 *    28  u32      crc32 (zlib) of bytes 0..27
 *
 * An insert writes v's vector record and appended entry in one write
 * batch; a remove writes the tombstone alone.  A merge, one write batch,
 * rewrites every list that has appended or deleted entries (its chunk
 * records, ids ascending, and the list directory), and deletes the
 * appended entries, the tombstones and the deleted ids' vector records.
 * A store that received updates holds ids >= n (the metadata record's n
 * stays the built count).
 *
 * With C = 1024 and m = 96, a full chunk is 16 + 1024 * 104 = 106,512
 * bytes; at 100k vectors and 1,265 lists a list is one record.
 *
 * Version history:
 *   1  initial: chunk = ids, codes; cosine and ip ranked by base - <q, r'>,
 *      l2 by one L2 table per probed list.
 *   2  chunk records carry beta per entry, so l2 and cosine rank by
 *      |q - c - r'|^2 (halved for cosine) with one inner-product table per
 *      query.  Cosine centroids unit (spherical k-means), lists ranked by
 *      1 - <q, c>.
 *   3  the same record shapes; cosine centroids are plain k-means means
 *      (not unit) and lists are ranked by |q - c|^2 / 2, so a cosine index
 *      of unit vectors ranks as the l2 index of the same vectors.  Bumped
 *      although no record changed shape, because coarse.fbin of a cosine
 *      index means something else: a version-2 reader would rank these
 *      shorter-than-unit centroids by 1 - <q, c>, which favours the longer
 *      ones, and probe the wrong lists without an error; the bump turns
 *      that into a refusal.  The other way round, this reader would rank a
 *      version-2 cosine index correctly (|q - c|^2 / 2 = 1 - <q, c> for
 *      unit c) but would measure the old build under the new name; refused
 *      too, and `annlab run` builds version 3 into a directory of its own
 *      (<hash>-f3) and leaves version-2 indexes where they are
 *      (harness/run.c).  l2 and ip indexes of versions 2 and 3 differ only
 *      in the version field.
 *   4  the same record shapes; the metadata record carries the checksum of
 *      the coarse centroids (offset 44, was 0), checked at open (a flipped
 *      byte in coarse.fbin probed the wrong lists silently), and the record
 *      store checksums every value (engines/core/kv.h, KV_FORMAT_VERSION 2).
 * A store of any other version is refused at open (ANN_EVERSION, naming the
 * store and both versions: rebuild the index).
 */
#ifndef ANNLAB_IVFPQ_RECORD_LAYOUT_H
#define ANNLAB_IVFPQ_RECORD_LAYOUT_H

#define IVFPQ_MAGIC "ANNIVFQ"
#define IVFPQ_VERSION 4u
#define IVFPQ_META_BYTES 64
/* The metadata record's fields (the diagram above; record.c encodes and
 * decodes through these names); magic, version and the crc ending it are
 * its binio frame (engines/core/binio.h). */
#define IVFPQ_OFF_METRIC 12
#define IVFPQ_OFF_N 16
#define IVFPQ_OFF_DIM 24
#define IVFPQ_OFF_NLIST 28
#define IVFPQ_OFF_LISTS 32
#define IVFPQ_OFF_PQ_BYTES 36
#define IVFPQ_OFF_CHUNK_ENTRIES 40
#define IVFPQ_OFF_COARSE_SUM 44
#define IVFPQ_OFF_SEED 48
#define IVFPQ_CHUNK_HEADER_BYTES 16
/* a chunk record of count entries: offsets of its arrays, and its length */
#define IVFPQ_CHUNK_BETAS_OFF(count) (IVFPQ_CHUNK_HEADER_BYTES + 4 * (size_t)(count))
#define IVFPQ_CHUNK_CODES_OFF(count) (IVFPQ_CHUNK_HEADER_BYTES + 8 * (size_t)(count))
#define IVFPQ_CHUNK_BYTES(count, m) (IVFPQ_CHUNK_CODES_OFF(count) + (size_t)(count) * (m))
#define IVFPQ_CHUNK_ENTRIES 1024u
#define IVFPQ_TABLE_META 0x01
#define IVFPQ_TABLE_LIST 0x02
#define IVFPQ_TABLE_VECTOR 0x03
#define IVFPQ_TABLE_DIR 0x04
#define IVFPQ_TABLE_APPENDED 0x05
#define IVFPQ_TABLE_TOMBSTONE 0x06
#define IVFPQ_TABLE_STATE 0x07
#define IVFPQ_APPENDED_BYTES(m) (4 + (size_t)(m))
#define IVFPQ_STATE_MAGIC "ANNILIV"
#define IVFPQ_STATE_BYTES 32
#define IVFPQ_COARSE_FILE "coarse.fbin"
#define IVFPQ_CODEBOOK_FILE "pq.pqcb"

#endif
