/*
 * build.c: writes a diskann-sector index.  The PQ codebook, the PQ codes
 * and the Vamana graph (DiskANN's RobustPrune graph from the medoid) come
 * from the shared build cache (engines/core/artifacts.h), so this engine
 * and diskann-record search the same graph; this file only lays the nodes
 * out in sectors (layout.h) and writes the PQ files beside them.
 */
#include "engines/diskann_sector/dsec.h"

#include "engines/core/artifacts.h"
#include "engines/core/binio.h"
#include "engines/core/crc32c.h"
#include "engines/core/diskann_params.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The DiskANN build parameters (engines/core/diskann_params.h), no others. */
const ann_param_spec dsec_build_params[] = {
    ANN_DISKANN_BUILD_PARAMS,
    ANN_PARAM_END_OF("diskann-sector build"),
};

/* Encode node v (vector, degree, neighbours; unused slots DSEC_NO_ID) at rec. */
static void encode_node(const dsec_header *h, const float *vec, const vamana_graph *g, uint32_t v,
                        uint8_t *rec)
{
    uint8_t *p = rec;
    for (uint32_t i = 0; i < h->dim; i++, p += 4)
        ann_put_f32(p, vec[i]);
    uint32_t deg = 0;
    const uint32_t *nb = vamana_neighbors(g, v, &deg);
    ann_put_u32(p, deg);
    p += 4;
    for (uint32_t i = 0; i < h->R; i++, p += 4)
        ann_put_u32(p, i < deg ? nb[i] : DSEC_NO_ID);
}

int dsec_write_sector_file(const char *path, const dsec_header *h, const float *vectors,
                             const vamana_graph *g)
{
    int rc = 0;
    FILE *fp = NULL;
    size_t chunk_bytes = (size_t)h->sectors_per_node * DSEC_SECTOR_BYTES;
    uint8_t *buf = calloc(1, chunk_bytes > DSEC_SECTOR_BYTES ? chunk_bytes : DSEC_SECTOR_BYTES);
    if (!buf) {
        rc = ann_fail(-ENOMEM, "%s: no memory", path);
        goto out;
    }
    fp = fopen(path, "wb");
    if (!fp) {
        rc = ann_fail_errno("%s: create", path);
        goto out;
    }
    dsec_header_encode(h, buf);
    if (fwrite(buf, 1, DSEC_SECTOR_BYTES, fp) != DSEC_SECTOR_BYTES) {
        rc = ann_fail_errno("%s: write", path);
        goto out;
    }
    uint64_t written = 1;
    for (uint64_t v = 0; v < h->n;) {
        memset(buf, 0, chunk_bytes);
        uint32_t per = h->sectors_per_node > 1 ? 1 : h->nodes_per_sector;
        for (uint32_t j = 0; j < per && v < h->n; j++, v++)
            encode_node(h, vectors + v * h->dim, g, (uint32_t)v, buf + (size_t)j * h->node_bytes);
        if (fwrite(buf, 1, chunk_bytes, fp) != chunk_bytes) {
            rc = ann_fail_errno("%s: write", path);
            goto out;
        }
        written += h->sectors_per_node;
    }
    if (written != h->total_sectors) {
        rc = ann_fail(ANN_EINTERNAL, "%s: wrote %llu sectors, header says %llu", path,
                      (unsigned long long)written, (unsigned long long)h->total_sectors);
        goto out;
    }
    if (fflush(fp) != 0 || fsync(fileno(fp)) != 0) {
        rc = ann_fail_errno("%s: write", path);
        goto out;
    }
    rc = fclose(fp) == 0 ? 0 : ann_fail_errno("%s: close", path);
    fp = NULL;
out:
    if (fp)
        fclose(fp);
    if (rc)
        unlink(path);
    free(buf);
    return rc;
}

static const ann_binfmt sums_binfmt = {
    .magic = DSEC_SUMS_MAGIC,
    .version = DSEC_SUMS_VERSION,
    .header_bytes = DSEC_SUMS_HEADER_BYTES,
    .name = "diskann-sector checksum file",
};

int dsec_write_sums_file(const char *path, const dsec_header *h, const float *vectors,
                         const vamana_graph *g)
{
    int rc = 0;
    ann_awriter w;
    memset(&w, 0, sizeof w);
    uint8_t hdr[DSEC_SUMS_HEADER_BYTES] = { 0 }, sum[4];
    uint8_t *rec = calloc(1, h->node_bytes);
    if (!rec)
        return ann_fail(-ENOMEM, "%s: no memory", path);
    ann_put_u32(hdr + DSEC_SUMS_OFF_NODE_BYTES, h->node_bytes);
    ann_put_u64(hdr + DSEC_SUMS_OFF_N, h->n);
    rc = ann_awriter_open_header(&w, path, &sums_binfmt, hdr);
    if (rc)
        goto out;
    for (uint64_t v = 0; v < h->n && !rc; v++) {
        memset(rec, 0, h->node_bytes);
        encode_node(h, vectors + v * h->dim, g, (uint32_t)v, rec);
        ann_put_u32(sum, ann_checksum(rec, h->node_bytes));
        rc = ann_awriter_write(&w, sum, 4);
    }
    if (!rc)
        rc = ann_awriter_finish(&w);
    else
        ann_awriter_abort(&w);
out:
    free(rec);
    return rc;
}

int dsec_sums_load(const char *path, const dsec_header *h, uint32_t **sums)
{
    int rc = 0;
    ann_rfile r;
    uint8_t hdr[DSEC_SUMS_HEADER_BYTES];
    uint32_t *s = NULL;
    *sums = NULL;
    if (access(path, F_OK) != 0)
        return ann_fail(ANN_EVERSION, "%s: missing: an index of an earlier format (no node "
                                      "checksums); rebuild the index",
                        path);
    rc = ann_rfile_open_header(&r, path, &sums_binfmt, hdr);
    if (rc) {
        if (rc == ANN_EFORMAT)
            rc = ANN_ECORRUPT;
        goto out;
    }
    uint32_t node_bytes = ann_get_u32(hdr + DSEC_SUMS_OFF_NODE_BYTES);
    uint64_t n = ann_get_u64(hdr + DSEC_SUMS_OFF_N);
    if (node_bytes != h->node_bytes || n != h->n ||
        r.size != DSEC_SUMS_HEADER_BYTES + 4 * h->n + 4) {
        rc = ann_fail(ANN_ECORRUPT, "%s: %llu sums of %u-byte records in %llu bytes; the index has "
                                    "%llu nodes of %u bytes",
                      path, (unsigned long long)n, node_bytes,
                      (unsigned long long)r.size, (unsigned long long)h->n, h->node_bytes);
        goto out;
    }
    s = malloc(h->n * sizeof *s);
    if (!s) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %llu sums", path, (unsigned long long)h->n);
        goto out;
    }
    rc = ann_rfile_read_u32s(&r, s, h->n, "node checksums");
    if (!rc)
        rc = ann_rfile_check_trailer(&r);
    if (rc) {
        if (rc == ANN_EFORMAT)
            rc = ANN_ECORRUPT;
        goto out;
    }
    *sums = s;
    s = NULL;
out:
    free(s);
    ann_rfile_close(&r);
    return rc;
}

int dsec_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *bctx,
               const char *dir, json_t *report)
{
    int rc = 0;
    char path[4096];
    ann_artifacts art = { 0 };
    ann_artifacts_params ap;
    rc = ann_diskann_build_read(params, dsec_build_params, src, bctx, &ap);
    if (rc)
        return rc;
    if (src->n == 0 || src->n >= DSEC_NO_ID)
        return ann_fail(ANN_EPARAM, "diskann-sector build: %llu vectors (need 1 .. 2^32-2)",
                        (unsigned long long)src->n);

    rc = ann_artifacts_get(src, &ap, &art);
    if (rc)
        goto out;
    double t0 = ann_mono_s();
    dsec_header h = {
        .version = DSEC_VERSION,
        .n = src->n,
        .dim = src->dim,
        .metric = (uint32_t)src->metric,
        .R = art.graph->R,
        .medoid = art.graph->entry,
        .L_build = ap.graph.L_build,
        .alpha = ap.graph.alpha,
        .pq_bytes = art.pq->m,
        .seed = ap.graph.seed,
    };
    dsec_geometry(&h);
    snprintf(path, sizeof path, "%s/%s", dir, DSEC_INDEX_FILE);
    rc = dsec_write_sector_file(path, &h, art.vectors, art.graph);
    if (rc)
        goto out;
    snprintf(path, sizeof path, "%s/%s", dir, DSEC_SUMS_FILE);
    rc = dsec_write_sums_file(path, &h, art.vectors, art.graph);
    if (rc)
        goto out;
    snprintf(path, sizeof path, "%s/%s", dir, DSEC_PQ_CODEBOOK_FILE);
    rc = pq_codebook_save(art.pq, path);
    if (rc)
        goto out;
    snprintf(path, sizeof path, "%s/%s", dir, DSEC_PQ_CODES_FILE);
    rc = ann_artifacts_codes_save(path, art.pq_codes, src->n, art.pq->m);
    if (rc)
        goto out;
    if (report) {
        json_t *ph = json_pack("{s:f, s:f, s:f, s:f, s:f, s:b, s:b}", "load_s", art.load_s,
                               "pq_train_s", art.pq_train_s, "pq_encode_s", art.pq_encode_s,
                               "graph_s", art.graph_s, "layout_s", ann_mono_s() - t0, "pq_cached",
                               art.pq_cached, "graph_cached", art.graph_cached);
        if (ph)
            json_object_set_new(report, "phases", ph);
        ann_artifacts_report_graph(&art, report); /* what the graph was computed on */
        json_object_set_new(report, "nodes_per_sector", json_integer(h.nodes_per_sector));
        json_object_set_new(report, "sectors_per_node", json_integer(h.sectors_per_node));
        json_object_set_new(report, "medoid", json_integer(h.medoid));
    }
out:
    ann_artifacts_fini(&art);
    return rc;
}
