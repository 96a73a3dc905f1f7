/*
 * layout.h: the on-disk form of the diskann-record and diskann-resident
 * indexes: an index directory holding a PQ codebook file and one record
 * store per backend, each store holding the same records.
 *
 *   <dir>/pq.pqcb      PQ codebook (engines/core/pq.h format; absent for a scan index)
 *   <dir>/rocksdb/     RocksDB store   } either or both, by the build
 *   <dir>/lmdb/        LMDB store      } parameter `kv` (default both)
 *   <dir>/build.json   written by ann_engine_build
 *
 * Keys are kv_key_u32(table, id): one table byte, then the id as a 4-byte
 * big-endian integer, so each table is contiguous and in id order.
 * Record values are little-endian.
 *
 * Table 0x00, id 0: the metadata record, written last by a build (after
 * every other record is in the store), so a store without it is an
 * incomplete build and does not open.
 *
 *     0  char[8]  magic "ANNDREC\0"
 *     8  u32      format version (DREC_VERSION)
 *    12  char[20] engine name, NUL-padded: "diskann-record" | "diskann-resident"
 *    32  u32      layout: 0 = full node records, 1 = resident codes
 *    36  u32      mode: 0 = graph, 1 = scan (n < DREC_SCAN_BELOW)
 *    40  u64      n (vectors; ids 0..n-1)
 *    48  u32      dim
 *    52  u32      metric (ann_metric)
 *    56  u32      medoid (entry node; 0 in scan mode)
 *    60  u32      R (max degree)
 *    64  u32      L_build
 *    68  f32      alpha
 *    72  u32      pq_bytes m (0 in scan mode)
 *    76  u32      code chunk rows (resident layout; 0 otherwise)
 *    80  u8[m]    the medoid's PQ code (so the walk starts without a read)
 *  80+m  u32      crc32 (zlib) of every byte before it
 *
 * Version 3 (live build: an index built over fewer than DREC_SCAN_BELOW
 * vectors, zero included, is untrained and takes inserts) has the same
 * fields with other rules, and one more before the crc:
 *
 *    36  u32      mode: 1 = untrained (no codebook, no graph: searches scan
 *                 the vector records exactly, tombstones skipped),
 *                 0 = trained live (below)
 *    40  u64      n: untrained, the vectors the build wrote (ids 0..n-1;
 *                 inserts add others); trained live, 0 (no id has its code
 *                 in a code chunk: node records or table 0x06 hold them all)
 *    56  u32      medoid: trained live, the entry node's id; else 0
 *    72  u32      pq_bytes m: the code length training will use (>= 1)
 *    76  u32      code chunk rows: 0
 *    80  u8[m]    the medoid's PQ code (zeros while untrained)
 *  80+m  u64      pq_seed: the seed of PQ training and of the first graph's
 *                 insertion order (the build's seed)
 *  88+m  u32      crc32 (zlib) of every byte before it
 *
 * The insert that brings the live vectors (vector records without a
 * tombstone) to DREC_SCAN_BELOW trains the codebook on all of them (the
 * build's trainer, sample capped at 128 MiB), encodes them, builds the
 * first Vamana graph over them (R, L_build, alpha, pq_seed of this record;
 * all threads, f16 build distances) and commits in one write batch: its
 * own vector record, every node record (resident: every code in table
 * 0x06), the removal of deleted vectors and their tombstones, the
 * live-state record (graph_nodes = the live vectors) and this record in
 * mode 0.  The codebook is the file <dir>/<backend>.pqcb (DREC_LIVE_PQ_SUFFIX
 * after the store's directory), written atomically before that batch, so
 * each store of a two-store index trains its own; a crash before the
 * commit leaves the untrained index (the stray file is ignored, and
 * replaced by the next training).  From then on the index is a graph index
 * with live updates, exactly as a version-2 one (the tables below).
 *
 * Table 0x01, id v: node v.  Full layout (diskann-record), R 64 and
 * m 96 give 6,500 bytes at full degree:
 *
 *     0        u8[m]      v's own PQ code
 *     m        u32        degree d (<= R; <= ceil(1.3 R) after a merge)
 *     m+4      u32[d]     neighbour ids
 *     m+4+4d   u8[d*m]    the neighbours' PQ codes, in neighbour order
 *     length = m + 4 + d*(4 + m) exactly
 *
 * Resident layout (diskann-resident): ids only, codes are in memory.
 *
 *     0        u32        degree d (<= R; <= ceil(1.3 R) after a merge)
 *     4        u32[d]     neighbour ids
 *     length = 4 + 4d exactly
 *
 * Table 0x02, id v: v's full vector, dim float32 (length 4*dim exactly),
 * read only to re-rank the best candidates at the end of a search (and by
 * the scan of a small index).
 *
 * Table 0x03, id c (resident layout only): PQ codes of nodes
 * [c*rows, min(n, (c+1)*rows)), rows = the metadata's code chunk rows,
 * m bytes per node in id order; all chunks are read into one array at
 * open, indexed by node id.
 *
 * Live updates (FreshDiskANN, Singh et al. 2021; engine.h insert/remove/
 * merge).  Four more tables, written only by an index opened with
 * "updates": true; a freshly built index has none of them, and reads as
 * "nothing pending, nothing deleted":
 *
 * Table 0x04, id v: v is pending (inserted, not yet in the graph).  Value:
 * v's PQ code, m bytes exactly.  The insert writes it and v's vector
 * record (table 0x02) in one batch.  Searches score every pending code
 * and re-rank pending and graph candidates together.  The merge batch that
 * links v into the graph deletes it.
 *
 *     0  u8[m]  v's PQ code
 *
 * Table 0x05, id v: v is deleted (a tombstone), written by remove; never
 * returned by a search from then on.  The merge that consolidates v
 * deletes v's node, vector, pending, live-code and tombstone records in
 * one batch, after every node that pointed at v has been re-linked.  The
 * entry node (the medoid) is never removed: deleted, it stays in the
 * graph as a frozen navigation point with its tombstone.
 *
 *     0  u8  1 when v was pending at the delete, 0 when a graph node
 *
 * Table 0x06, id v (resident layout only): the PQ code of node v linked
 * into the graph by a merge (m bytes exactly); read into memory at open
 * beside the code chunks (it takes precedence over a chunk's row for an
 * id deleted and inserted again).  The full layout keeps codes in node
 * records as before.
 *
 * Table 0x07, id 0: the live state, rewritten by every merge batch
 * (absent: id_bound = n, graph_nodes = n, merges = 0):
 *
 *     0  u32  id_bound: one past the largest id ever linked into the graph
 *     4  u64  graph_nodes: node records in the graph
 *    12  u64  merge batches committed
 *    20  u32  crc32 (zlib) of bytes 0..19
 *
 * Node records of merged nodes have the layout above, with two
 * differences: neighbour ids may be >= n, and the degree may reach
 * drec_max_degree(R) = ceil(1.3 R) (84 for R 64).  A merge links a pending
 * vector to at most R neighbours and adds the back-edges with Microsoft
 * DiskANN's slack rule: a node takes a back-edge while it has fewer than
 * ceil(1.3 R) neighbours and is re-pruned to R by RobustPrune only when it
 * would exceed that, as that library's dynamic (in-memory) index keeps its
 * lists.  A one-pass build writes degree <= R.  (Until 2026-12-02 a merge
 * re-pruned every node it touched to R before writing it, which with 256
 * vectors to a batch cost about one RobustPrune per back-edge and made a
 * merge about 20x slower than the build; see bench_merge.)  A reader older than that change rejects a merged record of
 * degree > R as corrupt, never misreads it.
 *
 * Live updates kept the format version at 2: no existing record changed
 * layout or meaning, a built index stayed byte-identical, and a version-2
 * index without the new tables is exactly an index with nothing pending
 * or deleted.  The one cost is that a binary
 * older than live updates, opening an index that received them, would
 * ignore the new tables; such indexes are made only by runs that insert
 * into their own copy, never by a build.
 *
 * Version history:
 *   1  initial.
 *   2  the same records; the record store checksums every value and carries
 *      its format file (engines/core/kv.h: KV_FORMAT_VERSION 2), so a
 *      flipped byte in a record is an error instead of a wrong answer or a
 *      crash.  Version-1 stores are refused: rebuild the index.
 *   3  live build: a build below DREC_SCAN_BELOW vectors writes a version-3
 *      metadata record (untrained, above) and the index trains itself on
 *      the insert that reaches the threshold.  Builds of DREC_SCAN_BELOW
 *      vectors or more still write version-2 records, byte for byte as
 *      before; both versions open.  A version-2 scan index (built small
 *      before version 3) opens and searches but takes no updates.
 */
#ifndef ANNLAB_DISKANN_RECORD_LAYOUT_H
#define ANNLAB_DISKANN_RECORD_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define DREC_MAGIC "ANNDREC"   /* 7 chars + NUL = 8 bytes */
#define DREC_VERSION 3u       /* the newest format (engine.h format_version) */
#define DREC_VERSION_GRAPH 2u /* what a build of DREC_SCAN_BELOW vectors or more writes */
#define DREC_NAME_BYTES 20
#define DREC_META_FIXED_BYTES 80 /* before the medoid code */

/* The metadata record's fields (the diagram above; layout.c encodes and
 * decodes through these names).  Magic at ANN_HDR_MAGIC_OFF, version at
 * ANN_HDR_VERSION_OFF (engines/core/binio.h); the record is a binio frame,
 * its crc the last 4 bytes. */
#define DREC_OFF_ENGINE 12
#define DREC_OFF_LAYOUT 32
#define DREC_OFF_MODE 36
#define DREC_OFF_N 40
#define DREC_OFF_DIM 48
#define DREC_OFF_METRIC 52
#define DREC_OFF_MEDOID 56
#define DREC_OFF_R 60
#define DREC_OFF_L_BUILD 64
#define DREC_OFF_ALPHA 68
#define DREC_OFF_PQ_BYTES 72
#define DREC_OFF_CHUNK_ROWS 76
#define DREC_OFF_MEDOID_CODE DREC_META_FIXED_BYTES
#define DREC_META_V3_EXTRA_BYTES 8 /* version 3: pq_seed after the medoid code */

/* The live-state record's fields (table 0x07) */
#define DREC_STATE_OFF_ID_BOUND 0
#define DREC_STATE_OFF_GRAPH_NODES 4
#define DREC_STATE_OFF_MERGES 12
#define DREC_STATE_OFF_CRC 20

#define DREC_TABLE_META 0x00
#define DREC_TABLE_NODE 0x01
#define DREC_TABLE_VECTOR 0x02
#define DREC_TABLE_CODES 0x03
#define DREC_TABLE_PENDING 0x04
#define DREC_TABLE_TOMBSTONE 0x05
#define DREC_TABLE_LIVE_CODE 0x06
#define DREC_TABLE_STATE 0x07

#define DREC_STATE_BYTES 24
#define DREC_TOMBSTONE_BYTES 1

#define DREC_LAYOUT_FULL 0u
#define DREC_LAYOUT_RESIDENT 1u
#define DREC_MODE_GRAPH 0u
#define DREC_MODE_SCAN 1u

/* The PQ threshold: a build of fewer vectors than this is an exact scan
 * (version 3: untrained), and the insert that brings an untrained index's
 * live vectors to it trains PQ and builds the first graph. */
#define DREC_SCAN_BELOW 1024u
#define DREC_LIVE_PQ_SUFFIX ".pqcb" /* a live-trained codebook: <dir>/<backend>.pqcb */
#define DREC_CODE_CHUNK_ROWS 4096u /* nodes per code-chunk record (resident) */
#define DREC_PQ_FILE "pq.pqcb"
#define DREC_MAX_PQ_BYTES 1024u  /* the pq_bytes parameter's upper bound */

/* The decoded metadata record. */
typedef struct drec_meta {
    char engine[DREC_NAME_BYTES + 1];
    uint32_t version, layout, mode;
    uint64_t n;
    uint32_t dim, metric, medoid, R, L_build;
    float alpha;
    uint32_t pq_bytes, chunk_rows;
    uint8_t medoid_code[DREC_MAX_PQ_BYTES]; /* first pq_bytes used */
    uint64_t pq_seed; /* version 3 only */
} drec_meta;

/* The decoded live-state record (table 0x07). */
typedef struct drec_state {
    uint32_t id_bound;
    uint64_t graph_nodes;
    uint64_t merges;
} drec_state;

/* Encode the live-state record into out (DREC_STATE_BYTES). */
void drec_state_encode(const drec_state *st, uint8_t *out);

/* Decode and verify it; ANN_ECORRUPT naming where and the field. */
int drec_state_decode(const uint8_t *rec, size_t len, const char *where, drec_state *out);

/* Bytes of a version-2 metadata record for code length m. */
static inline size_t drec_meta_bytes(uint32_t m)
{
    return DREC_META_FIXED_BYTES + (size_t)m + 4;
}

/* Bytes of the metadata record of the given version for code length m. */
static inline size_t drec_meta_bytes_v(uint32_t version, uint32_t m)
{
    return drec_meta_bytes(m) + (version >= 3 ? DREC_META_V3_EXTRA_BYTES : 0);
}

/* The largest degree a node record may have: ceil(1.3 R), the back-edge
 * slack merges keep (see "Node records of merged nodes" above). */
static inline uint32_t drec_max_degree(uint32_t R)
{
    return (13u * R + 9u) / 10u;
}

/* Bytes of a node record of degree d (full or resident layout). */
static inline size_t drec_node_bytes(uint32_t layout, uint32_t m, uint32_t d)
{
    return layout == DREC_LAYOUT_FULL ? (size_t)m + 4 + (size_t)d * (4 + m) : 4 + (size_t)d * 4;
}

/*
 * Encode the metadata record into out (drec_meta_bytes_v(meta->version,
 * meta->pq_bytes) bytes), in the layout of meta->version (2 or 3).
 * meta->engine and medoid_code are copied as given.
 */
void drec_meta_encode(const drec_meta *meta, uint8_t *out);

/*
 * Decode and verify a metadata record of len bytes read from store `where`
 * (named in messages): the framing first (engines/core/binio.h: checksum,
 * magic, version), then every field, dim up to ANN_MAX_DIM
 * (engines/core/limits.h).  Versions 2 and 3 are read, each by its rules.
 * Errors: ANN_ECORRUPT (length, checksum, field out of range), ANN_EFORMAT
 * (magic), ANN_EVERSION (another format version), each naming "<where>:
 * metadata record" and the field.
 */
int drec_meta_decode(const uint8_t *rec, size_t len, const char *where, drec_meta *out);

/*
 * Encode node v's record into out (drec_node_bytes(layout, m, d) bytes).
 * codes: the PQ code array of every node (node u at codes + u*m); unused
 * by the resident layout.  nbrs: d neighbour ids.
 */
void drec_node_encode(uint32_t layout, uint32_t m, uint32_t v, const uint32_t *nbrs, uint32_t d,
                      const uint8_t *codes, uint8_t *out);

#endif
