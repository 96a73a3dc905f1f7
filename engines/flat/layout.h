/*
 * layout.h: the flat engine's index directory.
 *
 *   <dir>/vectors.fbin   big-ann float32 file: uint32 n, uint32 dim, n*dim
 *                        float32 (the base as built, already normalised for
 *                        cosine); memory-mapped read-only at open
 *   <dir>/flat.json      {"format": "annlab-flat", "version": 1,
 *                         "metric": "l2"|"ip"|"cosine", "n": N, "dim": D}
 *   <dir>/build.json     written by ann_engine_build (see engines/engine.h)
 *
 * Version history: 1 (initial).
 */
#ifndef ANNLAB_FLAT_LAYOUT_H
#define ANNLAB_FLAT_LAYOUT_H

#define FLAT_FORMAT "annlab-flat"
#define FLAT_VERSION 1
#define FLAT_VECTORS_FILE "vectors.fbin"
#define FLAT_META_FILE "flat.json"
#define FLAT_COPY_ROWS 4096 /* rows per chunk when copying the base */

#endif
