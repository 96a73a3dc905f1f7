/*
 * artifacts.c: get-or-build of a DiskANN build's intermediate products (PQ
 * codebook, PQ codes, Vamana graph), cached under the build's artifact
 * directory (ann_artifacts_params.cache_dir) so
 * the record and sector engines are built on the very same graph and
 * codes.  Keys, file names and guarantees are described in artifacts.h.
 */
#include "engines/core/artifacts.h"

#include "engines/core/binio.h"
#include "engines/core/fileio.h"
#include "engines/core/msdiskann.h"
#include "engines/core/status.h"
#include "engines/core/ticks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CODES_MAGIC "ANNPQCD"
#define CODES_VERSION 1u
#define CODES_HEADER_BYTES 24
#define CODES_OFF_M 12 /* the codes file's fields (artifacts.h) */
#define CODES_OFF_N 16

static const ann_binfmt codes_binfmt = {
    .magic = CODES_MAGIC,
    .version = CODES_VERSION,
    .header_bytes = CODES_HEADER_BYTES,
    .name = "PQ codes file",
};

void ann_artifacts_params_default(ann_artifacts_params *p, uint32_t dim)
{
    memset(p, 0, sizeof *p);
    vamana_params_default(&p->graph);
    pq_params_default(&p->pq, dim);
    p->want_graph = 1;
}

/* The PQ parameters in effect (seed 0 borrows the graph seed). */
static pq_params pq_effective(const ann_artifacts_params *p)
{
    pq_params q = p->pq;
    if (q.seed == 0)
        q.seed = p->graph.seed;
    if (q.iters == 0)
        q.iters = 12;
    return q;
}

static int source_dir(const ann_vecsrc *src, const char *root, char *buf, size_t cap)
{
    if (!root || !root[0])
        return ANN_ENOTFOUND;
    char id[sizeof src->id];
    size_t i = 0;
    for (; i + 1 < sizeof id && src->id[i]; i++) {
        char c = src->id[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        id[i] = ok ? c : '_';
    }
    id[i] = '\0';
    if (i == 0 || (id[0] == '.' && (id[1] == '\0' || id[1] == '.')))
        id[0] = '_';
    int len = snprintf(buf, cap, "%s/%s-n%llu-d%u-%s", root, id, (unsigned long long)src->n,
                       src->dim, ann_metric_name(src->metric));
    if (len < 0 || (size_t)len >= cap)
        return ann_fail(ANN_EPARAM, "artifact directory: path too long (%s)", root);
    return 0;
}

int ann_artifacts_path(const ann_vecsrc *src, const ann_artifacts_params *p, const char *what,
                       char *buf, size_t cap)
{
    char dir[4096];
    int rc = source_dir(src, p->cache_dir, dir, sizeof dir);
    if (rc)
        return rc;
    int len;
    if (strcmp(what, "pqcb") == 0 || strcmp(what, "pqcodes") == 0) {
        pq_params q = pq_effective(p);
        len = snprintf(buf, cap, "%s/pq-b%u-s%llu-r%llu-i%u.%s", dir, q.pq_bytes,
                       (unsigned long long)q.seed,
                       (unsigned long long)pq_sample_rows(&q, src->n, src->dim), q.iters, what);
    } else if (strcmp(what, "graph") == 0) {
        const vamana_params *g = &p->graph;
        /* "-file": points inserted in id order; "-sat": lists saturated to
         * R; "-xp": inserts prune the expanded set only (the defaults keep
         * the name they always had) */
        len = snprintf(buf, cap, "%s/vamana-R%u-L%u-a%.6g-p%u-k%.6g-s%llu-%s%s%s%s.vamana", dir,
                       g->R, g->L_build, (double)g->alpha, g->passes, (double)g->slack,
                       (unsigned long long)g->seed, vamana_precision_name(g->build_f16),
                       g->file_order ? "-file" : "", g->saturate ? "-sat" : "",
                       g->prune_expanded ? "-xp" : "");
    } else {
        return ann_fail(ANN_EPARAM, "artifacts: unknown artifact '%s'", what);
    }
    if (len < 0 || (size_t)len >= cap)
        return ann_fail(ANN_EPARAM, "artifacts: path too long under %s", dir);
    return 0;
}

static int ensure_parent(const char *file)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    return ann_mkdir_p(dir, 0775, "cannot create directory");
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int codes_save(const char *path, const uint8_t *codes, uint64_t n, uint32_t m)
{
    ann_awriter w;
    uint8_t h[CODES_HEADER_BYTES] = { 0 };
    ann_put_u32(h + CODES_OFF_M, m);
    ann_put_u64(h + CODES_OFF_N, n);
    int rc = ann_awriter_open_header(&w, path, &codes_binfmt, h);
    if (rc)
        return rc;
    rc = ann_awriter_write(&w, codes, n * m);
    if (rc == 0)
        rc = ann_awriter_finish(&w);
    if (rc)
        ann_awriter_abort(&w);
    return rc;
}

static int codes_load(const char *path, uint64_t n, uint32_t m, uint8_t **out)
{
    ann_rfile r;
    uint8_t h[CODES_HEADER_BYTES];
    uint8_t *codes = NULL;
    *out = NULL;
    int rc = ann_rfile_open_header(&r, path, &codes_binfmt, h);
    if (rc)
        goto out;
    if (ann_get_u32(h + CODES_OFF_M) != m || ann_get_u64(h + CODES_OFF_N) != n) {
        rc = ann_fail(ANN_ECORRUPT, "%s: holds %llu codes of %u bytes, expected %llu of %u",
                      path, (unsigned long long)ann_get_u64(h + CODES_OFF_N), ann_get_u32(h + CODES_OFF_M),
                      (unsigned long long)n, m);
        goto out;
    }
    if (r.size != CODES_HEADER_BYTES + n * m + 4) {
        rc = ann_fail(ANN_EFORMAT, "%s: size %llu, expected %llu", path,
                      (unsigned long long)r.size,
                      (unsigned long long)(CODES_HEADER_BYTES + n * m + 4));
        goto out;
    }
    codes = malloc(n * m + 1);
    if (!codes) {
        rc = ann_fail(-ENOMEM, "%s: no memory for %llu codes", path, (unsigned long long)n);
        goto out;
    }
    rc = ann_rfile_read(&r, codes, n * m, "codes");
    if (rc == 0)
        rc = ann_rfile_check_trailer(&r);
    if (rc)
        goto out;
    *out = codes;
    codes = NULL;
out:
    ann_rfile_close(&r);
    free(codes);
    return rc;
}

static int load_vectors(const ann_vecsrc *src, const ann_artifacts_params *p, ann_artifacts *a)
{
    if (a->vectors)
        return 0;
    double t0 = ann_mono_s();
    int rc = ann_vecsrc_read_all(src, p->graph.threads, &a->vectors);
    a->load_s += ann_mono_s() - t0;
    return rc;
}

static int get_pq(const ann_vecsrc *src, const ann_artifacts_params *p, ann_artifacts *a)
{
    char cb_path[4096], codes_path[4096];
    pq_params q = pq_effective(p);
    if (p->pq_import) {
        if (!p->graph_import || !p->graph_import[0])
            return ann_fail(ANN_EPARAM, "%s: PQ import asked without a graph import", src->id);
        double t0 = ann_mono_s();
        int rc = msda_pq_load(p->graph_import, src, q.pq_bytes, &a->pq, &a->pq_codes,
                              &a->pq_import);
        a->load_s += ann_mono_s() - t0;
        return rc;
    }
    int cache = ann_artifacts_path(src, p, "pqcb", cb_path, sizeof cb_path);
    if (cache != 0 && cache != ANN_ENOTFOUND)
        return cache;
    if (cache == 0) {
        int rc = ann_artifacts_path(src, p, "pqcodes", codes_path, sizeof codes_path);
        if (rc)
            return rc;
        if (file_exists(cb_path) && file_exists(codes_path)) {
            rc = pq_codebook_load(cb_path, &a->pq);
            if (rc)
                return rc;
            if (a->pq->dim != src->dim || a->pq->m != q.pq_bytes ||
                a->pq->metric != src->metric || a->pq->seed != q.seed)
                return ann_fail(ANN_ECORRUPT,
                                "%s: codebook (dim %u, m %u, metric %s, seed %llu) does not "
                                "match its key (dim %u, m %u, metric %s, seed %llu)",
                                cb_path, a->pq->dim, a->pq->m, ann_metric_name(a->pq->metric),
                                (unsigned long long)a->pq->seed, src->dim, q.pq_bytes,
                                ann_metric_name(src->metric), (unsigned long long)q.seed);
            rc = codes_load(codes_path, src->n, a->pq->m, &a->pq_codes);
            if (rc)
                return rc;
            a->pq_cached = 1;
            return 0;
        }
    }
    double t0 = ann_mono_s();
    /* the graph phase already holds every vector: train on them rather
     * than draw the sample from src again (for a file, a second pass over
     * the base on storage: at 1M x 768 a 128 MiB sample read 2.9 GiB,
     * README "PQ training at 1M").  Same rows, same codebook. */
    ann_vecsrc *held = NULL;
    int rc = a->vectors ? ann_vecsrc_from_memory(a->vectors, src->n, src->dim, src->metric, &held)
                        : 0;
    if (rc == 0)
        rc = pq_train(held ? held : src, &q, &a->pq);
    ann_vecsrc_destroy(held);
    if (rc)
        return rc;
    double t1 = ann_mono_s();
    a->pq_train_s = t1 - t0;
    a->pq_codes = malloc(src->n * a->pq->m + 1);
    if (!a->pq_codes)
        return ann_fail(-ENOMEM, "%s: no memory for %llu PQ codes", src->id,
                        (unsigned long long)src->n);
    rc = a->vectors ? pq_encode(a->pq, a->vectors, src->n, q.threads, a->pq_codes)
                    : pq_encode_vecsrc(a->pq, src, q.threads, a->pq_codes);
    if (rc)
        return rc;
    a->pq_encode_s = ann_mono_s() - t1;
    if (cache == 0) {
        rc = ensure_parent(cb_path);
        if (rc == 0)
            rc = pq_codebook_save(a->pq, cb_path);
        if (rc == 0)
            rc = codes_save(codes_path, a->pq_codes, src->n, a->pq->m);
    }
    return rc;
}

static int get_graph(const ann_vecsrc *src, const ann_artifacts_params *p, ann_artifacts *a)
{
    char path[4096];
    if (p->graph_import && p->graph_import[0]) {
        double t0 = ann_mono_s();
        int rc = msda_graph_load(p->graph_import, src, p->graph.R, &a->graph, &a->graph_import);
        a->load_s += ann_mono_s() - t0;
        return rc;
    }
    int cache = ann_artifacts_path(src, p, "graph", path, sizeof path);
    if (cache != 0 && cache != ANN_ENOTFOUND)
        return cache;
    if (cache == 0 && file_exists(path)) {
        int rc = vamana_graph_load(path, &a->graph);
        if (rc)
            return rc;
        if (a->graph->n != src->n || a->graph->R != p->graph.R)
            return ann_fail(ANN_ECORRUPT, "%s: graph of %llu nodes, R %u; expected %llu, R %u",
                            path, (unsigned long long)a->graph->n, a->graph->R,
                            (unsigned long long)src->n, p->graph.R);
        a->graph_cached = 1;
        return 0;
    }
    int rc = load_vectors(src, p, a);
    if (rc)
        return rc;
    double t0 = ann_mono_s();
    rc = vamana_build_from_memory(a->vectors, src->n, src->dim, src->metric, &p->graph, &a->graph,
                                  &a->graph_stats);
    if (rc)
        return rc;
    a->graph_s = ann_mono_s() - t0;
    if (cache == 0) {
        rc = ensure_parent(path);
        if (rc == 0)
            rc = vamana_graph_save(a->graph, path);
    }
    return rc;
}

int ann_artifacts_get(const ann_vecsrc *src, const ann_artifacts_params *p, ann_artifacts *out)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    if (p->want_graph) {
        rc = get_graph(src, p, out);
        if (rc)
            goto out;
    }
    if (p->pq.pq_bytes > 0) {
        rc = get_pq(src, p, out);
        if (rc)
            goto out;
    }
    if (p->keep_vectors) {
        rc = load_vectors(src, p, out);
        if (rc)
            goto out;
    } else {
        free(out->vectors);
        out->vectors = NULL;
    }
out:
    if (rc)
        ann_artifacts_fini(out);
    return rc;
}

void ann_artifacts_fini(ann_artifacts *a)
{
    if (!a)
        return;
    pq_codebook_destroy(a->pq);
    free(a->pq_codes);
    vamana_graph_destroy(a->graph);
    json_decref(a->graph_import);
    json_decref(a->pq_import);
    free(a->vectors);
    memset(a, 0, sizeof *a);
}

int ann_artifacts_codes_save(const char *path, const uint8_t *codes, uint64_t n, uint32_t m)
{
    return codes_save(path, codes, n, m);
}

int ann_artifacts_codes_load(const char *path, uint64_t n, uint32_t m, uint8_t **out)
{
    return codes_load(path, n, m, out);
}

void ann_artifacts_report_graph(const ann_artifacts *a, json_t *report)
{
    if (a->pq_import)
        json_object_set(report, "pq_imported", a->pq_import);
    if (a->graph_import) {
        json_object_set(report, "graph_imported", a->graph_import);
        return;
    }
    if (a->graph_cached)
        return;
    const vamana_build_stats *st = &a->graph_stats;
    json_object_set_new(report, "graph_precision",
                        json_string(vamana_precision_name(st->precision_used)));
    if (st->i8_noise >= 0) /* i8 asked */
        json_object_set_new(report, "graph_i8_noise", json_real(st->i8_noise));
}
