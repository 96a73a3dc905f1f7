/*
 * hdf5.c: ann-benchmarks HDF5 files (Aumüller et al., "ANN-Benchmarks"),
 * read with libhdf5.
 *
 * Layout: datasets train (n x d), test (nq x d), neighbors (nq x k, int32
 * or int64), distances (nq x k, optional), and the root attribute
 * "distance" (euclidean | angular), with "type", "point_type" and
 * "dimension" in files written since 2023.  String attributes are read
 * in whichever form they were written: h5py writes variable-length UTF-8,
 * older tools fixed-length ASCII.  Rows are read by hyperslab into
 * float32 (libhdf5 converts float64 files), so a 1M x 960 train set is
 * streamed, never loaded.  Debian's libhdf5 is built without thread
 * safety, so every HDF5 call in this file is serialised by one mutex.
 * Opening a file turns off libhdf5's automatic error printing for the
 * process (H5Eset_auto2): failures are reported through ann_fail instead.
 */
#include "datasets/readers.h"

#include "datasets/dsutil.h"
#include "engines/core/fileio.h"
#include "engines/core/status.h"

#include <errno.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static pthread_mutex_t h5_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct h5_matrix {
    hid_t dset;     /* -1 when absent */
    uint64_t rows;
    uint32_t cols;
    const char *name;
    const char *path;
} h5_matrix;

struct ds_hdf5 {
    hid_t file;
    char path[4096];
    h5_matrix train, test, neighbors;
    int has_distances;
    ann_vecsrc train_src, test_src;
};

/* Open a two-dimensional dataset by name.  Caller holds h5_lock. */
static int open_matrix(ds_hdf5 *h, const char *name, h5_matrix *m)
{
    int rc = 0;
    hid_t space = -1;
    m->dset = -1;
    m->name = name;
    m->path = h->path;
    if (H5Lexists(h->file, name, H5P_DEFAULT) <= 0)
        return ann_fail(ANN_EFORMAT,
                        "%s: no dataset '%s' (an ann-benchmarks file has train, test and "
                        "neighbors)",
                        h->path, name);
    m->dset = H5Dopen2(h->file, name, H5P_DEFAULT);
    if (m->dset < 0)
        return ann_fail(ANN_EFORMAT, "%s: dataset '%s' cannot be opened", h->path, name);
    space = H5Dget_space(m->dset);
    hsize_t dims[2] = { 0, 0 };
    if (space < 0 || H5Sget_simple_extent_ndims(space) != 2 ||
        H5Sget_simple_extent_dims(space, dims, NULL) != 2) {
        rc = ann_fail(ANN_EFORMAT, "%s: dataset '%s' is not two-dimensional", h->path, name);
        goto out;
    }
    if (dims[1] == 0 || dims[1] > UINT32_MAX || dims[0] > UINT32_MAX) {
        rc = ann_fail(ANN_EFORMAT, "%s: dataset '%s' has shape %llu x %llu", h->path, name,
                      (unsigned long long)dims[0], (unsigned long long)dims[1]);
        goto out;
    }
    m->rows = dims[0];
    m->cols = (uint32_t)dims[1];
out:
    if (space >= 0)
        H5Sclose(space);
    return rc;
}

/* Read rows [first, first+count) of m as mem_type into out.  Caller holds h5_lock. */
static int read_rows(const h5_matrix *m, hid_t mem_type, uint64_t first, uint64_t count,
                     void *out)
{
    int rc = 0;
    hid_t fspace = -1, mspace = -1;
    hsize_t start[2] = { first, 0 }, cnt[2] = { count, m->cols };
    if (first > m->rows || count > m->rows - first)
        return ann_fail(ANN_EPARAM, "%s: '%s' rows [%llu, %llu) beyond %llu", m->path, m->name,
                        (unsigned long long)first, (unsigned long long)(first + count),
                        (unsigned long long)m->rows);
    if (count == 0)
        return 0;
    fspace = H5Dget_space(m->dset);
    mspace = H5Screate_simple(2, cnt, NULL);
    if (fspace < 0 || mspace < 0 ||
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0 ||
        H5Dread(m->dset, mem_type, mspace, fspace, H5P_DEFAULT, out) < 0)
        rc = ann_fail(ANN_EFORMAT, "%s: reading '%s' rows [%llu, %llu) failed in libhdf5",
                      m->path, m->name, (unsigned long long)first,
                      (unsigned long long)(first + count));
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    return rc;
}

static int h5_src_read(const ann_vecsrc *src, uint64_t first, uint64_t count, float *out)
{
    const h5_matrix *m = src->impl;
    pthread_mutex_lock(&h5_lock);
    int rc = read_rows(m, H5T_NATIVE_FLOAT, first, count, out);
    pthread_mutex_unlock(&h5_lock);
    if (!rc) {
        char what[4200];
        snprintf(what, sizeof what, "%s: dataset '%s'", m->path, m->name);
        rc = ds_check_finite(what, out, count, m->cols, first);
    }
    return rc;
}

static void h5_src_destroy(ann_vecsrc *src)
{
    (void)src; /* owned by the ds_hdf5 */
}

/*
 * Read the root attribute `name` as a string into buf (len bytes, NUL-
 * terminated).  h5py writes a Python str as a scalar variable-length UTF-8
 * string; older files and numpy bytes give fixed-length ASCII; either may be
 * a one-element array.  libhdf5 converts between string types only within
 * one character set, so the memory type takes the file's character set.
 * ANN_ENOTFOUND when the attribute is absent.  Caller holds h5_lock.
 */
static int read_str_attr(ds_hdf5 *h, const char *name, char *buf, size_t len)
{
    int rc = 0;
    hid_t attr = -1, ftype = -1, mtype = -1, space = -1;
    char *vstr = NULL, *fixed = NULL;
    buf[0] = '\0';
    if (H5Aexists(h->file, name) <= 0)
        return ANN_ENOTFOUND;
    attr = H5Aopen(h->file, name, H5P_DEFAULT);
    ftype = attr >= 0 ? H5Aget_type(attr) : -1;
    space = attr >= 0 ? H5Aget_space(attr) : -1;
    if (ftype < 0 || H5Tget_class(ftype) != H5T_STRING) {
        rc = ann_fail(ANN_EFORMAT, "%s: attribute '%s' is not a string", h->path, name);
        goto out;
    }
    if (space < 0 || H5Sget_simple_extent_npoints(space) != 1) {
        rc = ann_fail(ANN_EFORMAT, "%s: attribute '%s' is not a single string", h->path, name);
        goto out;
    }
    H5T_cset_t cset = H5Tget_cset(ftype);
    mtype = H5Tcopy(H5T_C_S1);
    if (mtype < 0 || H5Tset_cset(mtype, cset) < 0) {
        rc = ann_fail(ANN_EFORMAT, "%s: attribute '%s': unknown character set", h->path, name);
        goto out;
    }
    if (H5Tis_variable_str(ftype) > 0) {
        if (H5Tset_size(mtype, H5T_VARIABLE) < 0 || H5Aread(attr, mtype, &vstr) < 0 || !vstr) {
            rc = ann_fail(ANN_EFORMAT, "%s: attribute '%s' cannot be read", h->path, name);
            goto out;
        }
        snprintf(buf, len, "%s", vstr);
    } else {
        size_t sz = H5Tget_size(ftype);
        fixed = sz ? calloc(1, sz + 1) : NULL;
        if (!fixed || H5Tset_size(mtype, sz) < 0 || H5Tset_strpad(mtype, H5T_STR_NULLPAD) < 0 ||
            H5Aread(attr, mtype, fixed) < 0) {
            rc = ann_fail(ANN_EFORMAT, "%s: attribute '%s' cannot be read (fixed length %zu)",
                          h->path, name, sz);
            goto out;
        }
        snprintf(buf, len, "%s", fixed);
    }
out:
    if (vstr)
        H5free_memory(vstr);
    free(fixed);
    if (mtype >= 0)
        H5Tclose(mtype);
    if (space >= 0)
        H5Sclose(space);
    if (ftype >= 0)
        H5Tclose(ftype);
    if (attr >= 0)
        H5Aclose(attr);
    return rc;
}

/* The root attribute `name` as an integer (any integer type, scalar).
 * ANN_ENOTFOUND when absent.  Caller holds h5_lock. */
static int read_int_attr(ds_hdf5 *h, const char *name, long long *v)
{
    int rc = 0;
    hid_t attr = -1, ftype = -1, space = -1;
    int64_t x = 0;
    if (H5Aexists(h->file, name) <= 0)
        return ANN_ENOTFOUND;
    attr = H5Aopen(h->file, name, H5P_DEFAULT);
    ftype = attr >= 0 ? H5Aget_type(attr) : -1;
    space = attr >= 0 ? H5Aget_space(attr) : -1;
    if (ftype < 0 || H5Tget_class(ftype) != H5T_INTEGER || space < 0 ||
        H5Sget_simple_extent_npoints(space) != 1 || H5Aread(attr, H5T_NATIVE_INT64, &x) < 0)
        rc = ann_fail(ANN_EFORMAT, "%s: attribute '%s' is not an integer", h->path, name);
    else
        *v = (long long)x;
    if (space >= 0)
        H5Sclose(space);
    if (ftype >= 0)
        H5Tclose(ftype);
    if (attr >= 0)
        H5Aclose(attr);
    return rc;
}

/*
 * The root attributes ann-benchmarks writes: "distance" (required), and
 * since 2023 "type" (dense | sparse), "point_type" (float | bit) and
 * "dimension".  Binary sets (jaccard, hamming; sparse or bit points) are
 * refused by name: annlab measures float vectors.  Caller holds h5_lock.
 */
static int read_metric(ds_hdf5 *h, ann_metric *metric)
{
    char buf[64];
    int rc = read_str_attr(h, "distance", buf, sizeof buf);
    if (rc == ANN_ENOTFOUND)
        return ann_fail(ANN_EFORMAT, "%s: no root attribute 'distance' (euclidean or angular)",
                        h->path);
    if (rc)
        return rc;
    if (!strcasecmp(buf, "jaccard") || !strcasecmp(buf, "hamming"))
        return ann_fail(ANN_EUNSUPPORTED,
                        "%s: distance '%s' is not supported: ann-benchmarks' %s sets are binary "
                        "(%s); annlab imports dense float vectors under euclidean, angular or dot",
                        h->path, buf, buf,
                        !strcasecmp(buf, "jaccard") ? "sparse sets of item ids" : "bit vectors");
    if (!strcasecmp(buf, "euclidean") || !strcasecmp(buf, "l2"))
        *metric = ANN_METRIC_L2;
    else if (!strcasecmp(buf, "angular") || !strcasecmp(buf, "cosine"))
        *metric = ANN_METRIC_COSINE;
    else if (!strcasecmp(buf, "dot") || !strcasecmp(buf, "ip"))
        *metric = ANN_METRIC_IP;
    else
        return ann_fail(ANN_EFORMAT, "%s: attribute 'distance' is \"%s\" (want euclidean or "
                                     "angular)",
                        h->path, buf);
    char what[64];
    rc = read_str_attr(h, "type", what, sizeof what);
    if (!rc && strcasecmp(what, "dense") != 0)
        return ann_fail(ANN_EUNSUPPORTED,
                        "%s: type '%s' is not supported: annlab imports dense vectors only",
                        h->path, what);
    if (rc && rc != ANN_ENOTFOUND)
        return rc;
    rc = read_str_attr(h, "point_type", what, sizeof what);
    if (!rc && strcasecmp(what, "float") != 0)
        return ann_fail(ANN_EUNSUPPORTED,
                        "%s: point_type '%s' is not supported: annlab imports float vectors only",
                        h->path, what);
    return rc == ANN_ENOTFOUND ? 0 : rc;
}

static void setup_src(ann_vecsrc *s, h5_matrix *m, ann_metric metric)
{
    s->n = m->rows;
    s->dim = m->cols;
    s->metric = metric;
    snprintf(s->id, sizeof s->id, "hdf5-%s-%llux%u", m->name, (unsigned long long)m->rows,
             m->cols);
    s->read = h5_src_read;
    s->destroy = h5_src_destroy;
    s->impl = m;
}

int ds_hdf5_open(const char *path, ds_hdf5 **out, ann_metric *metric_out)
{
    int rc = 0;
    ann_metric metric = ANN_METRIC_L2;
    *out = NULL;
    if ((rc = ann_check_regular(path))) /* a FIFO or device: refused, never waited on */
        return rc;
    ds_hdf5 *h = calloc(1, sizeof *h);
    if (!h)
        return ann_fail(-ENOMEM, "%s: no memory", path);
    h->file = -1;
    h->train.dset = h->test.dset = h->neighbors.dset = -1;
    snprintf(h->path, sizeof h->path, "%s", path);

    pthread_mutex_lock(&h5_lock);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported through ann_fail */
    htri_t is_h5 = access(path, R_OK) == 0 ? H5Fis_hdf5(path) : -1;
    if (is_h5 <= 0) {
        rc = access(path, R_OK) != 0 ? ann_fail_errno("%s: open", path)
                                     : ann_fail(ANN_EFORMAT, "%s: not an HDF5 file", path);
        goto out;
    }
    h->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (h->file < 0) {
        rc = ann_fail(ANN_EFORMAT, "%s: libhdf5 cannot open it", path);
        goto out;
    }
    /* the attributes first: a binary set is refused by name, not by shape */
    if ((rc = read_metric(h, &metric)))
        goto out;
    if ((rc = open_matrix(h, "train", &h->train)) || (rc = open_matrix(h, "test", &h->test)) ||
        (rc = open_matrix(h, "neighbors", &h->neighbors)))
        goto out;
    long long dimension = 0;
    rc = read_int_attr(h, "dimension", &dimension);
    if (rc == ANN_ENOTFOUND)
        rc = 0;
    else if (!rc && dimension != (long long)h->train.cols)
        rc = ann_fail(ANN_EFORMAT, "%s: attribute 'dimension' is %lld but 'train' has %u columns",
                      path, dimension, h->train.cols);
    if (rc)
        goto out;
    if (h->train.cols != h->test.cols) {
        rc = ann_fail(ANN_EFORMAT, "%s: dim mismatch: 'train' has dim %u but 'test' has dim %u",
                      path, h->train.cols, h->test.cols);
        goto out;
    }
    if (h->neighbors.rows != h->test.rows) {
        rc = ann_fail(ANN_EFORMAT, "%s: 'neighbors' has %llu rows but 'test' has %llu", path,
                      (unsigned long long)h->neighbors.rows, (unsigned long long)h->test.rows);
        goto out;
    }
    hid_t t = H5Dget_type(h->neighbors.dset);
    int int_ok = t >= 0 && H5Tget_class(t) == H5T_INTEGER;
    if (t >= 0)
        H5Tclose(t);
    if (!int_ok) {
        rc = ann_fail(ANN_EFORMAT, "%s: dataset 'neighbors' is not an integer type", path);
        goto out;
    }
    for (int i = 0; i < 2; i++) {
        hid_t d = i == 0 ? h->train.dset : h->test.dset;
        hid_t ty = H5Dget_type(d);
        int ok = ty >= 0 && H5Tget_class(ty) == H5T_FLOAT;
        if (ty >= 0)
            H5Tclose(ty);
        if (!ok) {
            rc = ann_fail(ANN_EFORMAT, "%s: dataset '%s' is not a floating-point type", path,
                          i == 0 ? "train" : "test");
            goto out;
        }
    }
    h->has_distances = H5Lexists(h->file, "distances", H5P_DEFAULT) > 0;
    setup_src(&h->train_src, &h->train, metric);
    setup_src(&h->test_src, &h->test, metric);
    if (metric_out)
        *metric_out = metric;
out:
    pthread_mutex_unlock(&h5_lock);
    if (rc)
        ds_hdf5_close(h);
    else
        *out = h;
    return rc;
}

const ann_vecsrc *ds_hdf5_train(const ds_hdf5 *h)
{
    return &h->train_src;
}

const ann_vecsrc *ds_hdf5_test(const ds_hdf5 *h)
{
    return &h->test_src;
}

int ds_hdf5_has_distances(const ds_hdf5 *h)
{
    return h->has_distances;
}

int ds_hdf5_gt(ds_hdf5 *h, ann_gt *gt)
{
    int rc = 0;
    int64_t *ids64 = NULL;
    memset(gt, 0, sizeof *gt);
    uint64_t cells = h->neighbors.rows * h->neighbors.cols;
    ids64 = malloc((cells ? cells : 1) * sizeof *ids64);
    gt->ids = malloc((cells ? cells : 1) * sizeof *gt->ids);
    if (!ids64 || !gt->ids) {
        rc = ann_fail(-ENOMEM, "%s: no memory for 'neighbors'", h->path);
        goto out;
    }
    pthread_mutex_lock(&h5_lock);
    rc = read_rows(&h->neighbors, H5T_NATIVE_INT64, 0, h->neighbors.rows, ids64);
    pthread_mutex_unlock(&h5_lock);
    if (rc)
        goto out;
    gt->nq = (uint32_t)h->neighbors.rows;
    gt->k = h->neighbors.cols;
    for (uint64_t i = 0; i < cells; i++) {
        if (ids64[i] < 0 || (uint64_t)ids64[i] >= h->train.rows) {
            rc = ann_fail(ANN_EDATA,
                          "%s: dataset 'neighbors': query %llu rank %llu: id %lld out of range "
                          "[0, %llu)",
                          h->path, (unsigned long long)(i / gt->k),
                          (unsigned long long)(i % gt->k), (long long)ids64[i],
                          (unsigned long long)h->train.rows);
            goto out;
        }
        gt->ids[i] = (int32_t)ids64[i];
    }
out:
    free(ids64);
    if (rc)
        ann_gt_free(gt);
    return rc;
}

void ds_hdf5_close(ds_hdf5 *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h5_lock);
    if (h->train.dset >= 0)
        H5Dclose(h->train.dset);
    if (h->test.dset >= 0)
        H5Dclose(h->test.dset);
    if (h->neighbors.dset >= 0)
        H5Dclose(h->neighbors.dset);
    if (h->file >= 0)
        H5Fclose(h->file);
    pthread_mutex_unlock(&h5_lock);
    free(h);
}
