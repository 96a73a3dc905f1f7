/*
 * msdiskann.c: the reader of msdiskann.h.
 */
#include "engines/core/msdiskann.h"

#include "engines/core/binio.h"
#include "engines/core/fileio.h"
#include "engines/core/limits.h"
#include "engines/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int header_decode(const uint8_t *s, uint64_t size, const char *path, msda_header *h)
{
    memset(h, 0, sizeof *h);
    uint32_t nr = ann_get_u32(s + MSDA_OFF_NR), nc = ann_get_u32(s + MSDA_OFF_NC);
    if (nc != 1 || nr < MSDA_MIN_META || 8u + 8u * (uint64_t)nr > MSDA_SECTOR_BYTES)
        return ann_fail(ANN_EFORMAT, "%s: metadata of %u x %u values (a Microsoft DiskANN disk "
                                     "index has at least %u x 1)",
                        path, nr, nc, MSDA_MIN_META);
    h->npts = ann_get_u64(s + MSDA_OFF_NPTS);
    h->ndims = ann_get_u64(s + MSDA_OFF_NDIMS);
    h->medoid = ann_get_u64(s + MSDA_OFF_MEDOID);
    h->max_node_len = ann_get_u64(s + MSDA_OFF_MAX_NODE_LEN);
    h->nodes_per_sector = ann_get_u64(s + MSDA_OFF_NODES_PER_SECTOR);
    uint64_t frozen = ann_get_u64(s + MSDA_OFF_FROZEN);
    uint64_t reorder = ann_get_u64(s + MSDA_OFF_REORDER);
    h->file_bytes = ann_get_u64(s + 8u + 8u * ((uint64_t)nr - 1));
    if (frozen != 0)
        return ann_fail(ANN_EUNSUPPORTED, "%s: num_frozen_points %llu: a streaming index's "
                                          "frozen points are not supported",
                        path, (unsigned long long)frozen);
    if (reorder != 0)
        return ann_fail(ANN_EUNSUPPORTED, "%s: append_reorder_data %llu: disk-PQ re-order data "
                                          "is not supported",
                        path, (unsigned long long)reorder);
    if (h->npts == 0 || h->npts >= 0xFFFFFFFFull)
        return ann_fail(ANN_ECORRUPT, "%s: npts %llu out of range (1 .. 2^32-2)", path,
                        (unsigned long long)h->npts);
    if (h->ndims == 0 || h->ndims > ANN_MAX_DIM)
        return ann_fail(ANN_ECORRUPT, "%s: ndims %llu out of range (1 .. %u)", path,
                        (unsigned long long)h->ndims, (unsigned)ANN_MAX_DIM);
    if (h->medoid >= h->npts)
        return ann_fail(ANN_ECORRUPT, "%s: medoid %llu, but only %llu nodes", path,
                        (unsigned long long)h->medoid, (unsigned long long)h->npts);
    /* float rows: max_node_len = 4*ndims + 4*(1 + max_degree) */
    uint64_t rest = h->max_node_len > 4 * h->ndims ? h->max_node_len - 4 * h->ndims : 0;
    if (rest < 8 || rest % 4 != 0)
        return ann_fail(ANN_EFORMAT, "%s: max_node_len %llu does not hold %llu float coordinates "
                                     "and a neighbour list (only --data_type float is read)",
                        path, (unsigned long long)h->max_node_len, (unsigned long long)h->ndims);
    if (rest / 4 - 1 > ANN_MAX_R)
        return ann_fail(ANN_ECORRUPT, "%s: max degree %llu above annlab's bound %u", path,
                        (unsigned long long)(rest / 4 - 1), (unsigned)ANN_MAX_R);
    h->max_degree = (uint32_t)(rest / 4 - 1);
    uint64_t want_per = MSDA_SECTOR_BYTES / h->max_node_len;
    if (h->nodes_per_sector != want_per)
        return ann_fail(ANN_EFORMAT, "%s: nnodes_per_sector %llu, but %llu-byte nodes pack %llu "
                                     "to a sector",
                        path, (unsigned long long)h->nodes_per_sector,
                        (unsigned long long)h->max_node_len, (unsigned long long)want_per);
    if (h->nodes_per_sector) {
        h->sectors_per_node = 1;
        h->total_sectors = 1 + (h->npts + h->nodes_per_sector - 1) / h->nodes_per_sector;
    } else {
        h->sectors_per_node =
            (uint32_t)((h->max_node_len + MSDA_SECTOR_BYTES - 1) / MSDA_SECTOR_BYTES);
        h->total_sectors = 1 + h->npts * h->sectors_per_node;
    }
    if (h->file_bytes != size || size < h->total_sectors * MSDA_SECTOR_BYTES)
        return ann_fail(ANN_EFORMAT, "%s: %llu bytes on disk; its metadata says %llu and %llu "
                                     "nodes need %llu",
                        path, (unsigned long long)size, (unsigned long long)h->file_bytes,
                        (unsigned long long)h->npts,
                        (unsigned long long)(h->total_sectors * MSDA_SECTOR_BYTES));
    return 0;
}

static int open_header(const char *path, int *fd_out, struct stat *st, msda_header *h)
{
    *fd_out = -1;
    int fd = -1;
    uint8_t sec[MSDA_SECTOR_BYTES];
    int rc = ann_open_stat(path, &fd, st);
    if (rc)
        return rc;
    if ((uint64_t)st->st_size < sizeof sec)
        rc = ann_fail(ANN_EFORMAT, "%s: %llu bytes, shorter than the metadata sector", path,
                      (unsigned long long)st->st_size);
    if (!rc)
        rc = ann_pread_full(fd, sec, sizeof sec, 0, path);
    if (!rc)
        rc = header_decode(sec, (uint64_t)st->st_size, path, h);
    if (rc) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return 0;
}

int msda_header_read(const char *path, msda_header *h)
{
    int fd;
    struct stat st;
    int rc = open_header(path, &fd, &st, h);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Nodes the entry does not reach (BFS over the lists as stored). */
static int count_unreachable(const vamana_graph *g, uint64_t *out)
{
    uint8_t *seen = calloc(g->n, 1);
    uint32_t *queue = malloc(g->n * sizeof *queue);
    if (!seen || !queue) {
        free(seen);
        free(queue);
        return ann_fail(-ENOMEM, "graph of %llu nodes: no memory for the reachability check",
                        (unsigned long long)g->n);
    }
    uint64_t head = 0, tail = 0;
    queue[tail++] = g->entry;
    seen[g->entry] = 1;
    while (head < tail) {
        uint32_t deg;
        const uint32_t *nb = vamana_neighbors(g, queue[head++], &deg);
        for (uint32_t i = 0; i < deg; i++)
            if (!seen[nb[i]]) {
                seen[nb[i]] = 1;
                queue[tail++] = nb[i];
            }
    }
    *out = g->n - tail;
    free(seen);
    free(queue);
    return 0;
}

int msda_graph_load(const char *path, const ann_vecsrc *src, uint32_t R, vamana_graph **out,
                    json_t **info)
{
    *out = NULL;
    if (info)
        *info = NULL;
    int fd;
    struct stat st;
    msda_header h;
    int rc = open_header(path, &fd, &st, &h);
    if (rc)
        return rc;
    vamana_graph *g = NULL;
    uint8_t *chunk = NULL;
    float *rows = NULL;
    if (h.npts != src->n || h.ndims != src->dim) {
        rc = ann_fail(ANN_EDATA, "%s: %llu x %llu vectors; the dataset %s has %llu x %u", path,
                      (unsigned long long)h.npts, (unsigned long long)h.ndims, src->id,
                      (unsigned long long)src->n, src->dim);
        goto out;
    }
    if (R != 0 && R != h.max_degree) {
        rc = ann_fail(ANN_EPARAM, "build.R: %u, but the graph in %s has max degree %u", R, path,
                      h.max_degree);
        goto out;
    }
    rc = vamana_graph_create(h.npts, h.max_degree, h.max_degree, &g);
    if (rc)
        goto out;
    g->entry = (uint32_t)h.medoid;
    g->dim = (uint32_t)h.ndims;

    /* read whole sectors, a batch of nodes at a time */
    const uint64_t batch = h.nodes_per_sector ? 256 * h.nodes_per_sector : 64;
    const size_t node_span = (size_t)h.sectors_per_node * MSDA_SECTOR_BYTES;
    const size_t chunk_bytes = h.nodes_per_sector ? (size_t)256 * MSDA_SECTOR_BYTES
                                                  : (size_t)batch * node_span;
    chunk = malloc(chunk_bytes);
    rows = malloc((size_t)batch * h.ndims * sizeof *rows);
    if (!chunk || !rows) {
        rc = ann_fail(-ENOMEM, "%s: no memory for a read buffer", path);
        goto out;
    }
    uint64_t edges = 0, self_loops = 0, repeats = 0;
    for (uint64_t first = 0; first < h.npts; first += batch) {
        uint64_t count = h.npts - first < batch ? h.npts - first : batch;
        uint64_t off, len;
        if (h.nodes_per_sector) {
            off = (1 + first / h.nodes_per_sector) * MSDA_SECTOR_BYTES;
            len = (count + h.nodes_per_sector - 1) / h.nodes_per_sector * MSDA_SECTOR_BYTES;
        } else {
            off = (1 + first * h.sectors_per_node) * MSDA_SECTOR_BYTES;
            len = count * node_span;
        }
        rc = ann_pread_full(fd, chunk, (size_t)len, off, path);
        if (!rc)
            rc = ann_vecsrc_read(src, first, count, rows);
        if (rc)
            goto out;
        for (uint64_t j = 0; j < count; j++) {
            uint64_t v = first + j;
            const uint8_t *rec =
                h.nodes_per_sector
                    ? chunk + (j / h.nodes_per_sector) * MSDA_SECTOR_BYTES +
                          (j % h.nodes_per_sector) * h.max_node_len
                    : chunk + j * node_span;
            const float *row = rows + j * h.ndims;
            for (uint64_t d = 0; d < h.ndims; d++) {
                uint32_t a = ann_get_u32(rec + 4 * d), b;
                memcpy(&b, row + d, 4);
                if (a != b) {
                    rc = ann_fail(ANN_EDATA, "%s: node %llu's vector differs from row %llu of %s "
                                             "at coordinate %llu (%g against %g): the index "
                                             "was built on other data",
                                  path, (unsigned long long)v, (unsigned long long)v, src->id,
                                  (unsigned long long)d, (double)ann_get_f32(rec + 4 * d),
                                  (double)row[d]);
                    goto out;
                }
            }
            const uint8_t *p = rec + 4 * h.ndims;
            uint32_t deg = ann_get_u32(p);
            if (deg > h.max_degree) {
                rc = ann_fail(ANN_ECORRUPT, "%s: node %llu: degree %u above the max %u", path,
                              (unsigned long long)v, deg, h.max_degree);
                goto out;
            }
            uint32_t *adj = g->adj + v * g->stride;
            for (uint32_t i = 0; i < deg; i++) {
                uint32_t id = ann_get_u32(p + 4 + 4 * (size_t)i);
                if (id >= h.npts) {
                    rc = ann_fail(ANN_ECORRUPT, "%s: node %llu: neighbour %u is id %u, past the "
                                                "%llu nodes",
                                  path, (unsigned long long)v, i, id,
                                  (unsigned long long)h.npts);
                    goto out;
                }
                self_loops += id == v;
                for (uint32_t k = 0; k < i; k++)
                    if (adj[k] == id) {
                        repeats++;
                        break;
                    }
                adj[i] = id;
            }
            g->degree[v] = deg;
            edges += deg;
        }
    }
    if (info) {
        uint64_t unreachable = 0;
        rc = count_unreachable(g, &unreachable);
        if (rc)
            goto out;
        *info = json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:f, s:I, s:I, s:I}", "format",
                          "microsoft-diskann", "path", path, "bytes", (json_int_t)st.st_size,
                          "mtime", (json_int_t)st.st_mtime, "medoid", (json_int_t)h.medoid,
                          "max_degree", (int)h.max_degree, "mean_degree",
                          (double)edges / (double)h.npts, "self_loops", (json_int_t)self_loops,
                          "repeated_ids", (json_int_t)repeats, "unreachable",
                          (json_int_t)unreachable);
        if (!*info) {
            rc = ann_fail(-ENOMEM, "%s: no memory for the import report", path);
            goto out;
        }
    }
    *out = g;
    g = NULL;
out:
    close(fd);
    free(chunk);
    free(rows);
    vamana_graph_destroy(g);
    return rc;
}

int msda_graph_save(const char *path, const ann_vecsrc *src, const vamana_graph *g)
{
    if (g->n != src->n)
        return ann_fail(ANN_EPARAM, "%s: a graph of %llu nodes over %llu vectors of %s", path,
                        (unsigned long long)g->n, (unsigned long long)src->n, src->id);
    uint32_t maxdeg = 0;
    for (uint64_t v = 0; v < g->n; v++)
        maxdeg = g->degree[v] > maxdeg ? g->degree[v] : maxdeg;
    if (maxdeg == 0)
        return ann_fail(ANN_EPARAM, "%s: the graph has no edges", path);
    const uint64_t node_len = 4ull * src->dim + 4ull * (1 + maxdeg);
    const uint64_t per = MSDA_SECTOR_BYTES / node_len;
    const uint64_t spn = per ? 1 : (node_len + MSDA_SECTOR_BYTES - 1) / MSDA_SECTOR_BYTES;
    const uint64_t sectors = 1 + (per ? (g->n + per - 1) / per : g->n * spn);
    /* one unit of output at a time: a sector of packed nodes, or one node's sectors */
    const uint64_t unit_nodes = per ? per : 1;
    const size_t unit_bytes = (size_t)(per ? MSDA_SECTOR_BYTES : spn * MSDA_SECTOR_BYTES);
    char tmp[4200];
    FILE *fp = NULL;
    uint8_t *buf = calloc(1, unit_bytes > MSDA_SECTOR_BYTES ? unit_bytes : MSDA_SECTOR_BYTES);
    float *rows = malloc(unit_nodes * src->dim * sizeof *rows);
    int rc = buf && rows ? 0 : ann_fail(-ENOMEM, "%s: no memory", path);
    if (!rc)
        rc = ann_tmpfile_create(path, tmp, sizeof tmp, &fp);
    if (rc)
        goto out;
    /* the metadata, as msdiskann.h draws it: nine values, the file's size last */
    const uint64_t meta[MSDA_MIN_META] = { g->n, src->dim, g->entry, node_len, per, 0, 0, 0,
                                           sectors * MSDA_SECTOR_BYTES };
    ann_put_u32(buf + MSDA_OFF_NR, MSDA_MIN_META);
    ann_put_u32(buf + MSDA_OFF_NC, 1);
    for (uint32_t i = 0; i < MSDA_MIN_META; i++)
        ann_put_u64(buf + MSDA_OFF_NPTS + 8 * i, meta[i]);
    if (fwrite(buf, 1, MSDA_SECTOR_BYTES, fp) != MSDA_SECTOR_BYTES) {
        rc = ann_fail_errno("%s: write", tmp);
        goto out;
    }
    for (uint64_t first = 0; first < g->n; first += unit_nodes) {
        uint64_t count = g->n - first < unit_nodes ? g->n - first : unit_nodes;
        rc = ann_vecsrc_read(src, first, count, rows);
        if (rc)
            goto out;
        memset(buf, 0, unit_bytes);
        for (uint64_t j = 0; j < count; j++) {
            uint8_t *p = buf + j * node_len;
            for (uint32_t d = 0; d < src->dim; d++)
                ann_put_f32(p + 4 * d, rows[j * src->dim + d]);
            uint32_t deg;
            const uint32_t *nb = vamana_neighbors(g, (uint32_t)(first + j), &deg);
            ann_put_u32(p + 4 * src->dim, deg);
            for (uint32_t i = 0; i < deg; i++)
                ann_put_u32(p + 4 * src->dim + 4 + 4 * (size_t)i, nb[i]);
        }
        if (fwrite(buf, 1, unit_bytes, fp) != unit_bytes) {
            rc = ann_fail_errno("%s: write", tmp);
            goto out;
        }
    }
    rc = ann_tmpfile_commit(fp, tmp, path);
    fp = NULL;
out:
    if (fp)
        ann_tmpfile_discard(fp, tmp);
    free(buf);
    free(rows);
    return rc;
}
