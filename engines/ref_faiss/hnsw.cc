/*
 * hnsw.cc: the `ref-faiss-hnsw` reference peer, a thin C++17 shim over
 * Debian's libfaiss IndexHNSWFlat (HNSW of Malkov & Yashunin over full
 * float32 vectors, in memory; M, efConstruction at build, efSearch per
 * context through SearchParametersHNSW).  Saved with write_index, loaded
 * with read_index; open() checks the graph read from disk (levels, links,
 * entry point) before any search may follow a link.  FAISS runs one OpenMP
 * thread inside a search call.
 *
 * FAISS 1.7.3 honours SearchParametersHNSW::efSearch only in part: HNSW::
 * search sizes its candidate heap from the index's own hnsw.efSearch (the
 * default 16), so a larger per-call efSearch changes nothing past 16.  The
 * shim therefore sets the index's efSearch at ctx_new (and passes the same
 * value per call); contexts of one open engine must share one ef_search
 * (a second context with another value is ANN_EUNSUPPORTED: open the index
 * again for it).  The harness runs one effort per cell.  Per-query stats: cpu_ns only (FAISS's HNSW
 * counters are a process-wide global).
 */
#include "engines/ref_faiss/common.hh"

#include <faiss/IndexHNSW.h>
#include <omp.h>

#include <cerrno>
#include <mutex>
#include <vector>

namespace {

using namespace ref_faiss;

const char *const RFH_META_FILE = "ref_faiss_hnsw.json";
const char *const RFH_FORMAT = "annlab-ref-faiss-hnsw";
const int RFH_VERSION = 1;

const ann_param_spec rfh_build_params[] = {
    ann_cxx_param_int("M", 2, 2048, 16, "links per node above layer 0 (2M at layer 0)"),
    ann_cxx_param_int("ef_construction", 1, 1 << 20, 128, "candidate list size while building"),
    ann_cxx_param_end("ref-faiss-hnsw build"),
};
const ann_param_spec rfh_no_params[] = { ann_cxx_param_end("ref-faiss-hnsw open") };
const ann_param_spec rfh_search_params[] = {
    ann_cxx_param_int_k("ef_search", 1, 1 << 20, 64, "candidate list size at layer 0 (must be >= k)"),
    ann_cxx_param_end("ref-faiss-hnsw search"),
};

struct rfh_engine {
    std::unique_ptr<faiss::Index> index; /* an IndexHNSWFlat; NULL when n == 0 */
    faiss::IndexHNSW *hnsw = nullptr;
    std::mutex ctx_lock; /* guards live_ctx and the index's efSearch */
    int live_ctx = 0;
    ann_metric metric = ANN_METRIC_L2;
    uint64_t n = 0;
    uint32_t dim = 0;
};

struct rfh_ctx {
    rfh_engine *eng = nullptr;
    uint32_t k_max = 0;
    faiss::SearchParametersHNSW params;
    std::vector<faiss::Index::idx_t> labels;
    std::vector<float> dists;
};

int rfh_build_body(const ann_vecsrc *src, const json_t *params, const char *dir, json_t *report)
{
    int M = (int)ann_param_int(params, rfh_build_params, "M");
    int efc = (int)ann_param_int(params, rfh_build_params, "ef_construction");
    if (src->n > 0) {
        std::vector<float> data;
        int rc = read_all(src, data);
        if (rc)
            return rc;
        faiss::IndexHNSWFlat index(src->dim, M, metric_of(src->metric));
        index.hnsw.efConstruction = efc;
        index.add((faiss::Index::idx_t)src->n, data.data());
        rc = write_index(&index, dir);
        if (rc)
            return rc;
    }
    json_t *extra = json_pack("{s:i, s:i}", "M", M, "ef_construction", efc);
    int rc = ann_idxmeta_write(dir, RFH_META_FILE, RFH_FORMAT, RFH_VERSION, src->metric, src->n,
                               src->dim, extra);
    json_decref(extra);
    if (rc)
        return rc;
    json_object_set_new(report, "machine_note", json_string(ref_faiss_machine_note()));
    return 0;
}

int rfh_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *, const char *dir,
              json_t *report)
{
    return ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-hnsw build",
                         [&]() { return rfh_build_body(src, params, dir, report); });
}

/* What read_index trusted: shapes, levels, every link and the entry point. */
int rfh_check(const rfh_engine &e, const ann_idxmeta &m, int64_t M, const char *dir)
{
    std::string path = std::string(dir) + "/" + INDEX_FILE;
    const char *p = path.c_str();
    if (!e.hnsw || !e.hnsw->storage)
        return ann_fail(ANN_ECORRUPT, "%s: not an IndexHNSWFlat", p);
    const faiss::HNSW &g = e.hnsw->hnsw;
    if ((uint64_t)e.hnsw->ntotal != m.n || (uint64_t)e.hnsw->storage->ntotal != m.n ||
        (uint32_t)e.hnsw->d != m.dim || e.hnsw->metric_type != metric_of(m.metric))
        return ann_fail(ANN_ECORRUPT, "%s: n, dim or metric disagree with %s", p, RFH_META_FILE);
    if (g.levels.size() != m.n || g.offsets.size() != m.n + 1 ||
        g.cum_nneighbor_per_level.empty() || g.nb_neighbors(1) != M)
        return ann_fail(ANN_ECORRUPT, "%s: HNSW tables do not match n=%llu, M=%lld", p,
                        (unsigned long long)m.n, (long long)M);
    if (g.entry_point < 0 || (uint64_t)g.entry_point >= m.n || g.max_level < 0 ||
        g.levels[g.entry_point] != g.max_level + 1)
        return ann_fail(ANN_ECORRUPT, "%s: entry point %d / max level %d invalid", p,
                        g.entry_point, g.max_level);
    int max_levels = (int)g.cum_nneighbor_per_level.size() - 1;
    for (uint64_t i = 0; i < m.n; i++) {
        if (g.levels[i] < 1 || g.levels[i] > max_levels || g.levels[i] > g.max_level + 1)
            return ann_fail(ANN_ECORRUPT, "%s: node %llu: level count %d invalid", p,
                            (unsigned long long)i, g.levels[i]);
        size_t lo = g.offsets[i], hi = g.offsets[i + 1];
        if (lo > hi || hi > g.neighbors.size() ||
            hi - lo != (size_t)g.cum_nneighbor_per_level[g.levels[i]])
            return ann_fail(ANN_ECORRUPT, "%s: node %llu: neighbour range invalid", p,
                            (unsigned long long)i);
        for (size_t j = lo; j < hi; j++)
            if (g.neighbors[j] < -1 || (g.neighbors[j] >= 0 && (uint64_t)g.neighbors[j] >= m.n))
                return ann_fail(ANN_ECORRUPT, "%s: node %llu: link %d out of range", p,
                                (unsigned long long)i, g.neighbors[j]);
    }
    return 0;
}

int rfh_open_body(const char *dir, rfh_engine **out)
{
    ann_idxmeta meta;
    int rc = ann_idxmeta_read(dir, RFH_META_FILE, RFH_FORMAT, RFH_VERSION, &meta);
    int64_t M = 0;
    auto e = std::make_unique<rfh_engine>();
    if (rc)
        goto out;
    if ((rc = ann_idxmeta_int(&meta, "M", 2, 2048, &M)) != 0)
        goto out;
    e->metric = meta.metric;
    e->n = meta.n;
    e->dim = meta.dim;
    if (meta.n > 0) {
        rc = read_index(dir, e->index);
        if (rc)
            goto out;
        e->hnsw = dynamic_cast<faiss::IndexHNSWFlat *>(e->index.get());
        rc = rfh_check(*e, meta, M, dir);
        if (rc)
            goto out;
    }
    *out = e.release();
out:
    ann_idxmeta_fini(&meta);
    return rc;
}

int rfh_open(const char *dir, const json_t *, ann_engine **out, json_t *report)
{
    int rc = 0;
    rfh_engine *e = nullptr;
    rc = ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-hnsw open",
                       [&]() { return rfh_open_body(dir, &e); });
    if (rc == 0) {
        ann_open_report_set(report, "memory", 0, 0); /* the whole index in RAM */
        *out = reinterpret_cast<ann_engine *>(e);
    }
    return rc;
}

void rfh_close(ann_engine *eng)
{
    delete reinterpret_cast<rfh_engine *>(eng);
}

uint64_t rfh_size(const ann_engine *eng)
{
    return reinterpret_cast<const rfh_engine *>(eng)->n;
}

int rfh_ctx_new(ann_engine *eng, const json_t *search_params, uint32_t k_max, ann_ctx **out)
{
    int rc = 0;
    int64_t ef = ann_param_int(search_params, rfh_search_params, "ef_search"); /* >= k_max (engine.h) */
    rfh_engine *e = reinterpret_cast<rfh_engine *>(eng);
    rfh_ctx *c = nullptr;
    rc = ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-hnsw ctx_new", [&]() {
        std::lock_guard<std::mutex> guard(e->ctx_lock);
        if (e->hnsw) {
            if (e->live_ctx > 0 && e->hnsw->hnsw.efSearch != (int)ef)
                return ann_fail(ANN_EUNSUPPORTED,
                                "search.ef_search: %lld differs from the %d of a live context on "
                                "this engine (FAISS 1.7.3 reads efSearch from the index)",
                                (long long)ef, e->hnsw->hnsw.efSearch);
            e->hnsw->hnsw.efSearch = (int)ef;
        }
        auto cx = std::make_unique<rfh_ctx>();
        cx->eng = e;
        cx->k_max = k_max ? k_max : 1;
        cx->params.efSearch = (int)ef;
        cx->labels.resize(cx->k_max);
        cx->dists.resize(cx->k_max);
        c = cx.release();
        e->live_ctx++;
        return 0;
    });
    if (rc == 0)
        *out = reinterpret_cast<ann_ctx *>(c);
    return rc;
}

void rfh_ctx_free(ann_ctx *ctx)
{
    rfh_ctx *c = reinterpret_cast<rfh_ctx *>(ctx);
    if (!c)
        return;
    rfh_engine *e = c->eng;
    {
        std::lock_guard<std::mutex> guard(e->ctx_lock);
        e->live_ctx--;
    }
    delete c;
}

int rfh_search_body(rfh_ctx *c, const float *query, uint32_t k, uint32_t *ids, float *dists)
{
    const rfh_engine *e = c->eng;
    if (!e->index || k == 0)
        return 0;
    omp_set_num_threads(1);
    e->hnsw->search(1, query, k, c->dists.data(), c->labels.data(), &c->params);
    uint32_t got = 0;
    for (uint32_t j = 0; j < k; j++) {
        if (c->labels[j] < 0)
            break; /* FAISS pads with -1 when fewer were found */
        ids[got] = (uint32_t)c->labels[j];
        dists[got++] = to_ann_distance(e->metric, c->dists[j]);
    }
    return (int)got;
}

int rfh_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
               ann_stats *stats)
{
    rfh_ctx *c = reinterpret_cast<rfh_ctx *>(ctx);
    uint64_t t0 = thread_cpu_ns();
    if (k > c->k_max)
        k = c->k_max;
    int rc = ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-hnsw search",
                           [&]() { return rfh_search_body(c, query, k, ids, dists); });
    stats->cpu_ns += thread_cpu_ns() - t0;
    return rc;
}

} /* namespace */

extern "C" const ann_engine_ops ref_faiss_hnsw_engine_ops = {
    .name = "ref-faiss-hnsw",
    .description = "reference peer: FAISS IndexHNSWFlat in memory (Debian libfaiss)",
    .title = "HNSW in memory (FAISS)",
    .reads_unit = nullptr, /* in memory: no reads */
    .build_params = rfh_build_params,
    .open_params = rfh_no_params,
    .search_params = rfh_search_params,
    .effort_param = "ef_search",
    .build = rfh_build,
    .open = rfh_open,
    .close = rfh_close,
    .size = rfh_size,
    .ctx_new = rfh_ctx_new,
    .ctx_free = rfh_ctx_free,
    .search = rfh_search,
    .insert = nullptr,
    .remove = nullptr,
    .merge = nullptr,
    .machine_note = ref_faiss_machine_note,
    .format_version = RFH_VERSION,
    .imports_graph = 0,
};
