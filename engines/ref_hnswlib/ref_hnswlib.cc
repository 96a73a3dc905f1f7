/*
 * ref_hnswlib.cc: the `ref-hnswlib` reference peer, a thin C++17 shim over
 * Debian's header-only hnswlib (libhnswlib-dev 0.6.x), compiled here with the
 * project's flags.  The index lives in memory; it is built with hnswlib's
 * own HierarchicalNSW (Malkov & Yashunin's HNSW: M, ef_construction, the
 * heuristic neighbour selection, M0 = 2M) and saved with saveIndex into the
 * index directory; open() reads it back with loadIndex.
 *
 * Deliberate departures from calling hnswlib's searchKnn:
 *  - searchKnn reads ef from the index (setEf), shared by every thread; a
 *    context here carries its own ef_search, so search() descends the upper
 *    layers greedily exactly as searchKnn does and then calls hnswlib's
 *    searchBaseLayerST with the context's ef.  Results are identical to
 *    searchKnn with that ef.
 *  - loadIndex trusts the file's link lists; open() checks every id, count
 *    and level after loading, so a damaged file is ANN_ECORRUPT rather than
 *    an out-of-bounds read during a search.
 * Cosine is hnswlib's InnerProductSpace on unit vectors (distance 1 - ip,
 * already annlab's convention); for ip the shim subtracts 1 to return -ip.
 * Per-query stats: only cpu_ns (hnswlib's counters are index-wide atomics).
 * hnswlib picks its distance kernels at compile time: with the project's
 * flags (no -march) that is its SSE path, not AVX, which understates it
 * next to annlab's runtime-dispatched AVX-512 kernels.
 * No exception crosses into C (engines/core/cxx_shim.hh).
 *
 * Live updates, as hnswlib takes them, in memory only (close or a crash
 * loses them; the index file is never rewritten, so durability does not
 * apply): insert is addPoint (the index grown with resizeIndex when full),
 * remove is markDelete (the node stays in the graph, searched through and
 * never returned: searchBaseLayerST with deletions).  A deleted id may be
 * inserted again: addPoint then unmarks it and replaces its vector, as
 * hnswlib does.  Nothing to merge.  A shared mutex: searches share it, an
 * update holds it alone (resizeIndex replaces the structures a search
 * reads).
 */
#if defined(__SANITIZE_ADDRESS__)
/* hnswlib 0.6's SSE path reads one link past the end of a list to compute
 * prefetch addresses (nmslib/hnswlib#578): harmless, but ASan stops on it.
 * The sanitizer build therefore compiles hnswlib's portable path; the
 * optimised build keeps its SSE kernels. */
#define NO_MANUAL_VECTORIZATION
#endif
#include <hnswlib/hnswlib.h>

extern "C" {
#include "engines/core/idxmeta.h"
#include "engines/core/status.h"
#include "engines/engine.h"
}
#include "engines/core/cxx_shim.hh"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <mutex>
#include <shared_mutex>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace {

const char *const RH_META_FILE = "ref_hnswlib.json";
const char *const RH_INDEX_FILE = "hnswlib.bin";
const char *const RH_FORMAT = "annlab-ref-hnswlib";
const int RH_VERSION = 1;
const int RH_M_MAX = 2048; /* hnswlib itself caps M at 10000 with a warning */

const ann_param_spec rh_build_params[] = {
    ann_cxx_param_int("M", 2, RH_M_MAX, 16, "links per node above layer 0 (2M at layer 0)"),
    ann_cxx_param_int("ef_construction", 1, 1 << 20, 128, "candidate list size while building"),
    ann_cxx_param_int("threads", 0, 1024, 0, "build threads (0 = all cores)"),
    ann_cxx_param_end("ref-hnswlib build"),
};
const ann_param_spec rh_no_params[] = { ann_cxx_param_end("ref-hnswlib open") };
const ann_param_spec rh_search_params[] = {
    ann_cxx_param_int_k("ef_search", 1, 1 << 20, 64, "candidate list size at layer 0 (must be >= k)"),
    ann_cxx_param_end("ref-hnswlib search"),
};

struct rh_engine {
    std::unique_ptr<hnswlib::SpaceInterface<float>> space;
    std::unique_ptr<hnswlib::HierarchicalNSW<float>> index;
    ann_metric metric = ANN_METRIC_L2;
    uint64_t n = 0;
    uint32_t dim = 0;
    mutable std::shared_mutex mu; /* live updates (see the file comment) */
    std::atomic<uint64_t> live{ 0 };
};

struct rh_ctx {
    const rh_engine *eng = nullptr;
    size_t ef = 0;
    uint32_t k_max = 0;
};

std::unique_ptr<hnswlib::SpaceInterface<float>> rh_space(ann_metric metric, uint32_t dim)
{
    if (metric == ANN_METRIC_L2)
        return std::make_unique<hnswlib::L2Space>(dim);
    return std::make_unique<hnswlib::InnerProductSpace>(dim);
}

uint64_t rh_thread_cpu_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rh_build_body(const ann_vecsrc *src, const json_t *params, const char *dir, json_t *report)
{
    size_t M = (size_t)ann_param_int(params, rh_build_params, "M");
    size_t efc = (size_t)ann_param_int(params, rh_build_params, "ef_construction");
    unsigned threads = (unsigned)ann_param_int(params, rh_build_params, "threads");
    if (threads == 0)
        threads = std::max(1u, std::thread::hardware_concurrency());

    std::vector<float> data((size_t)src->n * src->dim);
    int rc = src->n ? ann_vecsrc_read(src, 0, src->n, data.data()) : 0;
    if (rc)
        return rc;
    auto space = rh_space(src->metric, src->dim);
    /* hnswlib cannot allocate an index of 0 elements: keep room for one. */
    hnswlib::HierarchicalNSW<float> index(space.get(), std::max<size_t>(src->n, 1), M, efc);
    if (src->n > 0)
        index.addPoint(data.data(), 0);
    /* addPoint is thread-safe in hnswlib; points are dealt out in blocks. */
    std::vector<std::thread> pool;
    std::vector<std::string> errors(threads);
    std::atomic<uint64_t> next(1);
    for (unsigned t = 0; t < threads; t++)
        pool.emplace_back([&, t]() {
            try {
                for (;;) {
                    uint64_t i0 = next.fetch_add(256);
                    if (i0 >= src->n)
                        break;
                    for (uint64_t i = i0; i < std::min<uint64_t>(i0 + 256, src->n); i++)
                        index.addPoint(&data[(size_t)i * src->dim], (hnswlib::labeltype)i);
                }
            } catch (const std::exception &e) {
                errors[t] = e.what();
                next.store(src->n);
            }
        });
    for (auto &th : pool)
        th.join();
    for (auto &e : errors)
        if (!e.empty())
            return ann_fail(ANN_EINTERNAL, "ref-hnswlib build: %s", e.c_str());

    std::string path = std::string(dir) + "/" + RH_INDEX_FILE;
    index.saveIndex(path);
    json_t *extra = json_pack("{s:I, s:I, s:i}", "M", (json_int_t)M, "ef_construction",
                              (json_int_t)efc, "max_level", index.maxlevel_);
    rc = ann_idxmeta_write(dir, RH_META_FILE, RH_FORMAT, RH_VERSION, src->metric, src->n,
                           src->dim, extra);
    json_decref(extra);
    if (rc)
        return rc;
    json_object_set_new(report, "library", json_string("hnswlib (Debian libhnswlib-dev, header-only)"));
    json_object_set_new(report, "build_threads", json_integer(threads));
    return 0;
}

int rh_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *, const char *dir,
             json_t *report)
{
    return ann_cxx_guard(ANN_EINTERNAL, "ref-hnswlib build",
                         [&]() { return rh_build_body(src, params, dir, report); });
}

/* Check what loadIndex trusted: counts, ids, levels and labels. */
int rh_check_graph(const hnswlib::HierarchicalNSW<float> &ix, const char *path)
{
    size_t n = ix.cur_element_count;
    if (n == 0)
        return 0;
    if (ix.enterpoint_node_ >= n || ix.maxlevel_ < 0 ||
        ix.element_levels_[ix.enterpoint_node_] != ix.maxlevel_)
        return ann_fail(ANN_ECORRUPT, "%s: entry point %u / max level %d invalid", path,
                        ix.enterpoint_node_, ix.maxlevel_);
    for (hnswlib::tableint i = 0; i < n; i++) {
        int levels = ix.element_levels_[i];
        if (levels < 0 || levels > ix.maxlevel_)
            return ann_fail(ANN_ECORRUPT, "%s: node %u: level %d outside [0, %d]", path, i,
                            levels, ix.maxlevel_);
        if (ix.getExternalLabel(i) >= n)
            return ann_fail(ANN_ECORRUPT, "%s: node %u: label %zu >= n %zu", path, i,
                            (size_t)ix.getExternalLabel(i), n);
        for (int l = 0; l <= levels; l++) {
            hnswlib::linklistsizeint *ll = ix.get_linklist_at_level(i, l);
            unsigned cnt = ix.getListCount(ll);
            if (cnt > (l ? ix.maxM_ : ix.maxM0_))
                return ann_fail(ANN_ECORRUPT, "%s: node %u level %d: %u links > max", path, i,
                                l, cnt);
            const hnswlib::tableint *nb = (const hnswlib::tableint *)(ll + 1);
            for (unsigned j = 0; j < cnt; j++)
                if (nb[j] >= n || ix.element_levels_[nb[j]] < l)
                    return ann_fail(ANN_ECORRUPT, "%s: node %u level %d: link %u invalid",
                                    path, i, l, nb[j]);
        }
    }
    return 0;
}

int rh_open_body(const char *dir, rh_engine **out)
{
    ann_idxmeta meta;
    int rc = ann_idxmeta_read(dir, RH_META_FILE, RH_FORMAT, RH_VERSION, &meta);
    std::unique_ptr<rh_engine> e;
    std::string path = std::string(dir) + "/" + RH_INDEX_FILE;
    if (rc)
        goto out;
    if (access(path.c_str(), R_OK) != 0) {
        rc = ann_fail_errno("%s: cannot read", path.c_str());
        goto out;
    }
    e = std::make_unique<rh_engine>();
    e->metric = meta.metric;
    e->n = meta.n;
    e->live = meta.n;
    e->dim = meta.dim;
    e->space = rh_space(meta.metric, meta.dim);
    rc = ann_cxx_guard(ANN_ECORRUPT, path.c_str(), [&]() {
        e->index = std::make_unique<hnswlib::HierarchicalNSW<float>>(e->space.get(), path);
        return 0;
    });
    if (rc)
        goto out;
    if (e->index->cur_element_count != meta.n || e->index->data_size_ != meta.dim * sizeof(float)) {
        rc = ann_fail(ANN_ECORRUPT, "%s: holds %zu vectors of %zu bytes, %s says n=%llu dim=%u",
                      path.c_str(), (size_t)e->index->cur_element_count, e->index->data_size_,
                      RH_META_FILE, (unsigned long long)meta.n, meta.dim);
        goto out;
    }
    rc = rh_check_graph(*e->index, path.c_str());
    if (rc)
        goto out;
    *out = e.release();
out:
    ann_idxmeta_fini(&meta);
    return rc;
}

int rh_open(const char *dir, const json_t *, ann_engine **out, json_t *report)
{
    int rc = 0;
    rh_engine *e = nullptr;
    rc = ann_cxx_guard(ANN_EINTERNAL, "ref-hnswlib open", [&]() { return rh_open_body(dir, &e); });
    if (rc == 0) {
        ann_open_report_set(report, "memory", 0, 0); /* the whole index in RAM */
        *out = reinterpret_cast<ann_engine *>(e);
    }
    return rc;
}

void rh_close(ann_engine *eng)
{
    delete reinterpret_cast<rh_engine *>(eng);
}

uint64_t rh_size(const ann_engine *eng)
{
    return reinterpret_cast<const rh_engine *>(eng)->live;
}

int rh_ctx_new(ann_engine *eng, const json_t *search_params, uint32_t k_max, ann_ctx **out)
{
    int64_t ef = ann_param_int(search_params, rh_search_params, "ef_search"); /* >= k_max (engine.h) */
    rh_ctx *c = new (std::nothrow) rh_ctx;
    if (!c)
        return ann_fail(-ENOMEM, "ref-hnswlib: no memory for a context");
    c->eng = reinterpret_cast<const rh_engine *>(eng);
    c->ef = (size_t)ef;
    c->k_max = k_max;
    *out = reinterpret_cast<ann_ctx *>(c);
    return 0;
}

void rh_ctx_free(ann_ctx *ctx)
{
    delete reinterpret_cast<rh_ctx *>(ctx);
}

/* searchKnn of hnswlib 0.6 with the context's ef (see the file comment). */
int rh_search_body(const rh_ctx *c, const float *query, uint32_t k, uint32_t *ids, float *dists)
{
    std::shared_lock<std::shared_mutex> lock(c->eng->mu);
    const hnswlib::HierarchicalNSW<float> &ix = *c->eng->index;
    if (ix.cur_element_count == 0 || k == 0)
        return 0;
    hnswlib::tableint cur = ix.enterpoint_node_;
    float cur_d = ix.fstdistfunc_(query, ix.getDataByInternalId(cur), ix.dist_func_param_);
    for (int level = ix.maxlevel_; level > 0; level--) {
        bool changed = true;
        while (changed) {
            changed = false;
            const unsigned int *data = (const unsigned int *)ix.get_linklist(cur, level);
            int size = ix.getListCount((hnswlib::linklistsizeint *)data);
            const hnswlib::tableint *nb = (const hnswlib::tableint *)(data + 1);
            for (int i = 0; i < size; i++) {
                float d = ix.fstdistfunc_(query, ix.getDataByInternalId(nb[i]),
                                          ix.dist_func_param_);
                if (d < cur_d) {
                    cur_d = d;
                    cur = nb[i];
                    changed = true;
                }
            }
        }
    }
    size_t ef = std::max<size_t>(c->ef, k);
    auto top = ix.num_deleted_ ? ix.searchBaseLayerST<true, false>(cur, query, ef)
                               : ix.searchBaseLayerST<false, false>(cur, query, ef);
    while (top.size() > k)
        top.pop();
    int got = (int)top.size();
    float shift = c->eng->metric == ANN_METRIC_IP ? 1.0f : 0.0f; /* 1 - ip -> -ip */
    for (int i = got - 1; i >= 0; i--) {
        ids[i] = (uint32_t)ix.getExternalLabel(top.top().second);
        dists[i] = top.top().first - shift;
        top.pop();
    }
    return got;
}

int rh_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
              ann_stats *stats)
{
    const rh_ctx *c = reinterpret_cast<const rh_ctx *>(ctx);
    uint64_t t0 = rh_thread_cpu_ns();
    if (k > c->k_max)
        k = c->k_max;
    int rc = ann_cxx_guard(ANN_EINTERNAL, "ref-hnswlib search",
                           [&]() { return rh_search_body(c, query, k, ids, dists); });
    stats->cpu_ns += rh_thread_cpu_ns() - t0;
    return rc;
}

/* The internal id of a live (not deleted) label, or -1 (under the lock). */
long rh_find(const hnswlib::HierarchicalNSW<float> &ix, uint32_t id, bool *deleted)
{
    auto it = ix.label_lookup_.find(id);
    *deleted = it != ix.label_lookup_.end() && ix.isMarkedDeleted(it->second);
    return it == ix.label_lookup_.end() || *deleted ? -1 : (long)it->second;
}

int rh_insert_body(rh_engine *e, uint32_t id, const float *vec, uint32_t dim)
{
    const char *name = "ref-hnswlib";
    if (dim != e->dim)
        return ann_fail(ANN_EDATA, "%s: insert id %u: vector of dimension %u, the index has %u",
                        name, id, dim, e->dim);
    for (uint32_t j = 0; j < dim; j++)
        if (!std::isfinite(vec[j]))
            return ann_fail(ANN_EDATA, "%s: insert id %u: component %u is %s", name, id, j,
                            std::isnan(vec[j]) ? "NaN" : "infinite");
    std::unique_lock<std::shared_mutex> lock(e->mu);
    hnswlib::HierarchicalNSW<float> &ix = *e->index;
    bool deleted = false;
    if (rh_find(ix, id, &deleted) >= 0)
        return ann_fail(ANN_EDATA, "%s: insert id %u: the id exists", name, id);
    if (!deleted && ix.cur_element_count >= ix.max_elements_)
        ix.resizeIndex(std::max<size_t>(2 * ix.max_elements_, 1024));
    ix.addPoint(vec, (hnswlib::labeltype)id); /* a deleted id: unmarked, vector replaced */
    e->live++;
    return 0;
}

int rh_insert(ann_engine *eng, uint32_t id, const float *vec, uint32_t dim)
{
    return ann_cxx_guard(ANN_EINTERNAL, "ref-hnswlib insert", [&]() {
        return rh_insert_body(reinterpret_cast<rh_engine *>(eng), id, vec, dim);
    });
}

int rh_remove_body(rh_engine *e, uint32_t id)
{
    const char *name = "ref-hnswlib";
    std::unique_lock<std::shared_mutex> lock(e->mu);
    bool deleted = false;
    if (rh_find(*e->index, id, &deleted) < 0)
        return deleted ? ann_fail(ANN_EDATA, "%s: remove id %u: already deleted", name, id)
                       : ann_fail(ANN_ENOTFOUND, "%s: remove id %u: no such id", name, id);
    e->index->markDelete((hnswlib::labeltype)id);
    e->live--;
    return 0;
}

int rh_remove(ann_engine *eng, uint32_t id)
{
    return ann_cxx_guard(ANN_EINTERNAL, "ref-hnswlib remove", [&]() {
        return rh_remove_body(reinterpret_cast<rh_engine *>(eng), id);
    });
}

} /* namespace */

/* hnswlib picks its SIMD kernels at compile time from -m flags; the project
 * builds without -march (runtime dispatch for its own kernels), so hnswlib
 * gets its SSE path while annlab's kernels use AVX2/AVX-512. */
const char *rh_machine_note(void)
{
    return "hnswlib (Debian libhnswlib-dev, header-only) compiled without -march: its SSE "
           "distance kernels, not AVX/AVX-512, so its figures understate hnswlib";
}

extern "C" const ann_engine_ops ref_hnswlib_engine_ops = {
    .name = "ref-hnswlib",
    .description = "reference peer: hnswlib HNSW in memory (Debian libhnswlib-dev)",
    .title = "HNSW in memory (hnswlib)",
    .reads_unit = nullptr, /* in memory: no reads */
    .build_params = rh_build_params,
    .open_params = rh_no_params,
    .search_params = rh_search_params,
    .effort_param = "ef_search",
    .build = rh_build,
    .open = rh_open,
    .close = rh_close,
    .size = rh_size,
    .ctx_new = rh_ctx_new,
    .ctx_free = rh_ctx_free,
    .search = rh_search,
    .insert = rh_insert,
    .remove = rh_remove,
    .merge = nullptr,
    .machine_note = rh_machine_note,
    .format_version = RH_VERSION,
    .imports_graph = 0,
};
