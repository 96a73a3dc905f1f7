/*
 * vecfile.h: the big-ann binary vector files, the format of every bundle.
 *
 *   offset 0: uint32 n (little-endian)
 *   offset 4: uint32 dim
 *   offset 8: n * dim elements, row-major
 *
 * Element type by extension: .fbin float32, .u8bin uint8, .i8bin int8,
 * .ibin int32 (ground truth ids).  The file size must equal
 * 8 + n * dim * itemsize exactly.  A bundle's base.fbin and query.fbin are
 * byte-compatible with Microsoft DiskANN's .bin tools.
 *
 * Ground truth (gt.ibin) extends .ibin as big-ann does: after the n*k int32
 * ids come n*k float32 distances (file size 8 + n*k*8).
 */
#ifndef ANNLAB_CORE_VECFILE_H
#define ANNLAB_CORE_VECFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    ANN_ELEM_F32 = 0,
    ANN_ELEM_U8 = 1,
    ANN_ELEM_I8 = 2,
    ANN_ELEM_I32 = 3,
} ann_elem;

/* Element type from the path's extension; ANN_EFORMAT when unknown. */
int ann_elem_from_path(const char *path, ann_elem *out);
size_t ann_elem_size(ann_elem e);
const char *ann_elem_name(ann_elem e); /* "float32", "uint8", "int8", "int32" */

typedef struct ann_vecfile {
    int fd;
    uint64_t n;
    uint32_t dim;
    ann_elem elem;
    char path[4096];
    const unsigned char *map; /* the whole file, after ann_vecfile_map; else NULL */
    size_t map_bytes;
} ann_vecfile;

/*
 * Open a vector file for reading and validate its header against its size.
 * Errors: -errno (open/stat), ANN_EFORMAT (short header, size mismatch,
 * dim 0 or above ANN_MAX_DIM, engines/core/limits.h), each naming the
 * file.  The caller closes with ann_vecfile_close.
 */
int ann_vecfile_open(const char *path, ann_vecfile *vf);

/*
 * Read rows [first, first+count) converted to float32 into out.  Rows are
 * checked for NaN/Inf (ANN_EDATA naming file and row).  Thread-safe (pread).
 */
int ann_vecfile_read_f32(const ann_vecfile *vf, uint64_t first, uint64_t count, float *out);

/*
 * Map a float32 file read-only (MAP_SHARED) for ann_vecfile_rows_f32; the
 * mapping lives until ann_vecfile_close.  Only .fbin rows are float32 as
 * stored: .u8bin/.i8bin need conversion and .ibin holds ids, so those are
 * refused (ANN_EFORMAT naming the file), as is a big-endian host.  Errors:
 * -errno of mmap naming the file.  Not thread-safe (call before sharing vf).
 */
int ann_vecfile_map(ann_vecfile *vf);

/*
 * Rows [first, first+count) of a mapped file as a pointer into the mapping
 * (no copy; valid until ann_vecfile_close).  The rows are checked for
 * NaN/Inf as ann_vecfile_read_f32 checks them (ANN_EDATA naming file, row
 * and component), which also faults them in.  Errors: ANN_EPARAM (range,
 * or the file is not mapped).  Thread-safe.
 */
int ann_vecfile_rows_f32(const ann_vecfile *vf, uint64_t first, uint64_t count,
                         const float **out);

/* Close the file and drop its mapping (NULL or closed is fine). */
void ann_vecfile_close(ann_vecfile *vf);

/*
 * Streaming writer: writes to "<path>.tmp.<pid>", renames over path on
 * ann_vecwriter_finish (after fsync), removes the temporary on abort.
 * n is written at finish, so the number of rows need not be known up front.
 */
typedef struct ann_vecwriter {
    FILE *fp;
    uint64_t n;
    uint32_t dim;
    ann_elem elem;
    char path[4096];
    char tmp[4096];
} ann_vecwriter;

int ann_vecwriter_open(ann_vecwriter *w, const char *path, uint32_t dim, ann_elem elem);
/* Append count rows of dim elements of the writer's type. */
int ann_vecwriter_append(ann_vecwriter *w, const void *rows, uint64_t count);
int ann_vecwriter_finish(ann_vecwriter *w);
void ann_vecwriter_abort(ann_vecwriter *w);

/* Ground truth: ids (int32) and distances (float32), nq x k each. */
typedef struct ann_gt {
    uint32_t nq, k;
    int32_t *ids;  /* nq*k, row-major */
    float *dists;  /* nq*k, or NULL when the file has ids only */
} ann_gt;

/*
 * Load a ground-truth file: 8 + nq*k*4 (ids only) or 8 + nq*k*8 (ids and
 * distances).  Ids are checked to lie in [0, n_base) when n_base > 0
 * (ANN_EDATA naming file, query and rank otherwise).
 */
int ann_gt_load(const char *path, uint64_t n_base, ann_gt *gt);
/* Write atomically (temporary + rename); dists may be NULL. */
int ann_gt_save(const char *path, const ann_gt *gt);
void ann_gt_free(ann_gt *gt);

#endif
