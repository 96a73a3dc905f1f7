/*
 * layout.h: the flat engine's index directory.
 *
 *   <dir>/vectors.fbin   big-ann float32 file: uint32 n, uint32 dim, n*dim
 *                        float32 (the base as built, already normalised for
 *                        cosine); memory-mapped read-only at open
 *   <dir>/flat.json      {"format": "annlab-flat", "version": 2,
 *                         "metric": "l2"|"ip"|"cosine", "n": N, "dim": D,
 *                         "block_rows": 4096, "block_checksums": [u32, ...]}
 *                        block_checksums[b] is ann_checksum
 *                        (engines/core/crc32c.h) of rows [b*4096, (b+1)*4096)
 *                        of vectors.fbin (the last block shorter), checked
 *                        at open before a row is trusted
 *   <dir>/build.json     written by ann_engine_build (see engines/engine.h)
 *
 * Version history:
 *   1  initial.
 *   2  block checksums in flat.json (a flipped byte in vectors.fbin changed
 *      recall without an error); version-1 indexes are refused: rebuild.
 */
#ifndef ANNLAB_FLAT_LAYOUT_H
#define ANNLAB_FLAT_LAYOUT_H

#define FLAT_FORMAT "annlab-flat"
#define FLAT_VERSION 2
#define FLAT_VECTORS_FILE "vectors.fbin"
#define FLAT_META_FILE "flat.json"
#define FLAT_COPY_ROWS 4096 /* rows per chunk when copying the base */

#endif
