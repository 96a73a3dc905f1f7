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

/* The layout of npts nodes of max_node_len bytes (msdiskann.h): how many
 * share a sector, how many sectors one spans, and the file's sectors. */
static void geometry(msda_header *h)
{
    h->nodes_per_sector = MSDA_SECTOR_BYTES / h->max_node_len;
    h->sectors_per_node =
        h->nodes_per_sector
            ? 1
            : (uint32_t)((h->max_node_len + MSDA_SECTOR_BYTES - 1) / MSDA_SECTOR_BYTES);
    h->total_sectors = 1 + (h->nodes_per_sector
                                ? (h->npts + h->nodes_per_sector - 1) / h->nodes_per_sector
                                : h->npts * h->sectors_per_node);
}

/* Nodes in one unit of the file (a sector of packed nodes, or one node's
 * sectors), the unit's bytes, and where record j of a run of whole units
 * starts within it. */
static uint64_t unit_nodes(const msda_header *h)
{
    return h->nodes_per_sector ? h->nodes_per_sector : 1;
}
static size_t unit_bytes(const msda_header *h)
{
    return (size_t)h->sectors_per_node * MSDA_SECTOR_BYTES;
}
static size_t record_at(const msda_header *h, uint64_t j)
{
    return (size_t)(j / unit_nodes(h)) * unit_bytes(h) +
           (size_t)(j % unit_nodes(h)) * h->max_node_len;
}

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
    uint64_t stored_per = ann_get_u64(s + MSDA_OFF_NODES_PER_SECTOR);
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
    geometry(h);
    if (stored_per != h->nodes_per_sector)
        return ann_fail(ANN_EFORMAT, "%s: nnodes_per_sector %llu, but %llu-byte nodes pack %llu "
                                     "to a sector",
                        path, (unsigned long long)stored_per,
                        (unsigned long long)h->max_node_len,
                        (unsigned long long)h->nodes_per_sector);
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

    /* read 256 whole units at a time */
    const uint64_t batch = 256 * unit_nodes(&h);
    chunk = malloc(256 * unit_bytes(&h));
    rows = malloc((size_t)batch * h.ndims * sizeof *rows);
    if (!chunk || !rows) {
        rc = ann_fail(-ENOMEM, "%s: no memory for a read buffer", path);
        goto out;
    }
    uint64_t edges = 0, self_loops = 0, repeats = 0;
    for (uint64_t first = 0; first < h.npts; first += batch) {
        uint64_t count = h.npts - first < batch ? h.npts - first : batch;
        /* first is a multiple of the unit: whole units from its sector on */
        uint64_t off = MSDA_SECTOR_BYTES + first / unit_nodes(&h) * unit_bytes(&h);
        size_t len = (size_t)((count + unit_nodes(&h) - 1) / unit_nodes(&h)) * unit_bytes(&h);
        rc = ann_pread_full(fd, chunk, len, off, path);
        if (!rc)
            rc = ann_vecsrc_read(src, first, count, rows);
        if (rc)
            goto out;
        for (uint64_t j = 0; j < count; j++) {
            uint64_t v = first + j;
            const uint8_t *rec = chunk + record_at(&h, j);
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
    msda_header h = { .npts = g->n, .ndims = src->dim, .medoid = g->entry,
                      .max_node_len = 4ull * src->dim + 4ull * (1 + maxdeg) };
    geometry(&h);
    /* one unit of output at a time: a sector of packed nodes, or one node's sectors */
    const uint64_t unit = unit_nodes(&h);
    const size_t ubytes = unit_bytes(&h);
    char tmp[4200];
    FILE *fp = NULL;
    uint8_t *buf = calloc(1, ubytes);
    float *rows = malloc(unit * src->dim * sizeof *rows);
    int rc = buf && rows ? 0 : ann_fail(-ENOMEM, "%s: no memory", path);
    if (!rc)
        rc = ann_tmpfile_create(path, tmp, sizeof tmp, &fp);
    if (rc)
        goto out;
    /* the metadata, as msdiskann.h draws it: nine values, the file's size last */
    const uint64_t meta[MSDA_MIN_META] = {
        h.npts, h.ndims, h.medoid, h.max_node_len, h.nodes_per_sector, 0, 0, 0,
        h.total_sectors * MSDA_SECTOR_BYTES
    };
    ann_put_u32(buf + MSDA_OFF_NR, MSDA_MIN_META);
    ann_put_u32(buf + MSDA_OFF_NC, 1);
    for (uint32_t i = 0; i < MSDA_MIN_META; i++)
        ann_put_u64(buf + MSDA_OFF_NPTS + 8 * i, meta[i]);
    if (fwrite(buf, 1, MSDA_SECTOR_BYTES, fp) != MSDA_SECTOR_BYTES) {
        rc = ann_fail_errno("%s: write", tmp);
        goto out;
    }
    for (uint64_t first = 0; first < g->n; first += unit) {
        uint64_t count = g->n - first < unit ? g->n - first : unit;
        rc = ann_vecsrc_read(src, first, count, rows);
        if (rc)
            goto out;
        memset(buf, 0, ubytes);
        for (uint64_t j = 0; j < count; j++) {
            uint8_t *p = buf + record_at(&h, j);
            for (uint32_t d = 0; d < src->dim; d++)
                ann_put_f32(p + 4 * d, rows[j * src->dim + d]);
            uint32_t deg;
            const uint32_t *nb = vamana_neighbors(g, (uint32_t)(first + j), &deg);
            ann_put_u32(p + 4 * src->dim, deg);
            for (uint32_t i = 0; i < deg; i++)
                ann_put_u32(p + 4 * src->dim + 4 + 4 * (size_t)i, nb[i]);
        }
        if (fwrite(buf, 1, ubytes, fp) != ubytes) {
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

/* A bin's shape at off of a file already read whole (f, len bytes): rows,
 * cols and where its values start; ANN_EFORMAT naming the file and what. */
static int bin_at(const uint8_t *f, uint64_t len, uint64_t off, uint32_t width, const char *path,
                  const char *what, uint32_t *rows, uint32_t *cols, const uint8_t **values)
{
    if (off > len || len - off < 8)
        return ann_fail(ANN_EFORMAT, "%s: %s at offset %llu, past the end (%llu bytes)", path,
                        what, (unsigned long long)off, (unsigned long long)len);
    *rows = ann_get_u32(f + off);
    *cols = ann_get_u32(f + off + 4);
    if ((uint64_t)*rows * *cols * width > len - off - 8)
        return ann_fail(ANN_EFORMAT, "%s: %s of %u x %u values at offset %llu runs past the end "
                                     "(%llu bytes)",
                        path, what, *rows, *cols, (unsigned long long)off,
                        (unsigned long long)len);
    *values = f + off + 8;
    return 0;
}

/* "<prefix>_disk.index" -> "<prefix><suffix>" into buf. */
static int sibling(const char *disk_index, const char *suffix, char *buf, size_t cap)
{
    static const char tail[] = "_disk.index";
    size_t n = strlen(disk_index), t = sizeof tail - 1;
    if (n < t || strcmp(disk_index + n - t, tail) != 0)
        return ann_fail(ANN_EPARAM, "%s: not named <prefix>%s, so its PQ files cannot be found",
                        disk_index, tail);
    if ((size_t)snprintf(buf, cap, "%.*s%s", (int)(n - t), disk_index, suffix) >= cap)
        return ann_fail(ANN_EPARAM, "%s: path too long", disk_index);
    return 0;
}

int msda_pq_load(const char *disk_index, const ann_vecsrc *src, uint32_t m, pq_codebook **cb,
                 uint8_t **codes, json_t **info)
{
    *cb = NULL;
    *codes = NULL;
    if (info)
        *info = NULL;
    char pivots[4200], compressed[4200], rot[4300];
    int rc = sibling(disk_index, "_pq_pivots.bin", pivots, sizeof pivots);
    if (!rc)
        rc = sibling(disk_index, "_pq_compressed.bin", compressed, sizeof compressed);
    if (rc)
        return rc;
    snprintf(rot, sizeof rot, "%s_rotation_matrix.bin", pivots);
    if (access(rot, F_OK) == 0)
        return ann_fail(ANN_EUNSUPPORTED, "%s: a rotation matrix (OPQ) is not supported", rot);
    uint8_t *f = NULL;
    float *cents = NULL;
    uint8_t *c = NULL;
    int fd = -1;
    struct stat st;
    rc = ann_open_stat(pivots, &fd, &st);
    if (rc)
        goto out;
    uint64_t len = (uint64_t)st.st_size;
    f = malloc(len ? len : 1);
    if (!f) {
        rc = ann_fail(-ENOMEM, "%s: no memory", pivots);
        goto out;
    }
    rc = ann_pread_full(fd, f, len, 0, pivots);
    close(fd);
    fd = -1;
    if (rc)
        goto out;
    uint32_t rows, cols;
    const uint8_t *v;
    rc = bin_at(f, len, 0, 8, pivots, "the offsets", &rows, &cols, &v);
    if (rc)
        goto out;
    if (rows != 4 || cols != 1) {
        rc = ann_fail(rows == 5 ? ANN_EUNSUPPORTED : ANN_EFORMAT,
                      "%s: %u x %u offsets (this reader takes the current file, 4 x 1)", pivots,
                      rows, cols);
        goto out;
    }
    uint64_t off[4];
    for (int i = 0; i < 4; i++)
        off[i] = ann_get_u64(v + 8 * i);
    if (off[3] != len) {
        rc = ann_fail(ANN_EFORMAT, "%s: %llu bytes; its offsets say %llu", pivots,
                      (unsigned long long)len, (unsigned long long)off[3]);
        goto out;
    }
    const uint8_t *piv, *cen, *chk;
    uint32_t pr, pc, cr, cc, kr, kc;
    rc = bin_at(f, len, off[0], 4, pivots, "the pivots", &pr, &pc, &piv);
    if (!rc)
        rc = bin_at(f, len, off[1], 4, pivots, "the centroid", &cr, &cc, &cen);
    if (!rc)
        rc = bin_at(f, len, off[2], 4, pivots, "the chunk offsets", &kr, &kc, &chk);
    if (rc)
        goto out;
    const uint32_t dim = src->dim;
    if (pr != 256 || pc != dim || cr != dim || cc != 1 || kc != 1 || kr < 2) {
        rc = ann_fail(pc != dim || cr != dim ? ANN_EDATA : ANN_EFORMAT,
                      "%s: pivots %u x %u, centroid %u x %u, chunk offsets %u x %u; expected "
                      "256 x %u, %u x 1 and (chunks + 1) x 1 for %s",
                      pivots, pr, pc, cr, cc, kr, kc, dim, dim, src->id);
        goto out;
    }
    const uint32_t chunks = kr - 1;
    if (chunks != m) {
        rc = ann_fail(ANN_EPARAM, "build.pq_bytes: %u, but %s has %u chunks", m, pivots, chunks);
        goto out;
    }
    const uint32_t dsub = dim / chunks;
    for (uint32_t j = 0; j <= chunks; j++)
        if (dim % chunks != 0 || ann_get_u32(chk + 4 * (size_t)j) != j * dsub) {
            rc = ann_fail(ANN_EUNSUPPORTED, "%s: chunk %u starts at dimension %u; annlab's "
                                            "codebook takes %u equal chunks of %u",
                          pivots, j, ann_get_u32(chk + 4 * (size_t)j), chunks, dim / chunks);
            goto out;
        }
    cents = malloc((size_t)chunks * 256 * dsub * sizeof *cents);
    if (!cents) {
        rc = ann_fail(-ENOMEM, "%s: no memory", pivots);
        goto out;
    }
    for (uint32_t j = 0; j < chunks; j++)
        for (uint32_t k = 0; k < 256; k++)
            for (uint32_t d = 0; d < dsub; d++) {
                uint32_t col = j * dsub + d;
                cents[((size_t)j * 256 + k) * dsub + d] =
                    ann_get_f32(piv + 4 * ((size_t)k * dim + col)) +
                    ann_get_f32(cen + 4 * (size_t)col);
            }
    rc = pq_codebook_make(dim, chunks, src->metric, 0, 0, cents, cb);
    if (rc) {
        rc = ann_fail_wrap(rc, "%s", pivots);
        goto out;
    }

    rc = ann_open_stat(compressed, &fd, &st);
    uint8_t hdr[8];
    if (!rc)
        rc = ann_pread_full(fd, hdr, sizeof hdr, 0, compressed);
    if (rc)
        goto out;
    uint32_t npts = ann_get_u32(hdr), ncols = ann_get_u32(hdr + 4);
    if (npts != src->n || ncols != chunks ||
        (uint64_t)st.st_size != 8 + (uint64_t)npts * ncols) {
        rc = ann_fail(npts != src->n ? ANN_EDATA : ANN_EFORMAT,
                      "%s: %u codes of %u bytes in %llu bytes; expected %llu of %u for %s",
                      compressed, npts, ncols, (unsigned long long)st.st_size,
                      (unsigned long long)src->n, chunks, src->id);
        goto out;
    }
    c = malloc((size_t)npts * chunks + 1);
    if (!c) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %u codes", compressed, npts);
        goto out;
    }
    rc = ann_pread_full(fd, c, (size_t)npts * chunks, 8, compressed);
    if (rc)
        goto out;
    if (info) {
        *info = json_pack("{s:s, s:s, s:i}", "pivots", pivots, "codes", compressed, "chunks",
                          (int)chunks);
        if (!*info) {
            rc = ann_fail(-ENOMEM, "%s: no memory for the import report", pivots);
            goto out;
        }
    }
    *codes = c;
    c = NULL;
out:
    if (fd >= 0)
        close(fd);
    if (rc) {
        pq_codebook_destroy(*cb);
        *cb = NULL;
    }
    free(f);
    free(cents);
    free(c);
    return rc;
}
