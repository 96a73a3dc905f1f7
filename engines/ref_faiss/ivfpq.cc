/*
 * ivfpq.cc: the `ref-faiss-ivfpq` reference peer, a thin C++17 shim over
 * Debian's libfaiss: IndexIVFPQ (Jégou et al., "Product quantization for
 * nearest neighbor search": IVF coarse quantizer, PQ of residuals with
 * pq_bytes sub-quantizers of 256 centroids) wrapped in IndexRefineFlat, which
 * re-ranks rerank x k candidates by exact distance.  In memory; saved with
 * write_index and loaded with read_index.
 *
 * Small inputs: an index of n < nlist vectors has n lists (nprobe is still
 * bounded by the nlist asked for, then capped to the lists built), and with
 * n < 256 each sub-quantizer has 2^floor(log2 n) centroids; both are recorded
 * in ref_faiss_ivfpq.json ("lists", "pq_bits").  FAISS cannot train on one
 * vector: n = 1 is refused; n = 0 builds an empty index.
 *
 * Deliberate departure: libfaiss 1.7.3's IndexRefine::search takes k_factor
 * from the index object, shared by all threads, and no SearchParameters.  So
 * search() does what IndexRefineFlat::search does, with the context's own
 * parameters: the IVFPQ base index is searched for rerank x k candidates with
 * SearchParametersIVF{nprobe}, then each candidate is scored exactly with
 * the refine index's own FAISS distance computer, and the best k kept.
 * FAISS runs one OpenMP thread inside a search call (the harness runs its
 * own T threads).  Per-query stats: code_dists (candidates scored by PQ, as
 * FAISS counts them: the lengths of the probed lists; IndexIVF::search is
 * split into its quantizer search and search_preassigned for that), full_dists (re-ranked
 * candidates), cpu_ns.
 *
 * Live updates, as FAISS takes them, in memory only (close or a crash
 * loses them; the index file is never rewritten, so durability does not
 * apply): insert is IndexIVFPQ::add_with_ids (the vector filed in its
 * nearest list, its residual PQ-encoded), its full vector kept beside the
 * refine index (IndexRefineFlat stores vectors by position, not id) for
 * the re-ranking; remove is IndexIVFPQ::remove_ids (the entry leaves its
 * list at once; a deleted id may be inserted again).  Nothing to merge.
 * A shared mutex: searches share it, an update holds it alone (FAISS's
 * inverted lists are not safe to grow under a reader).
 */
#include "engines/ref_faiss/common.hh"

extern "C" {
#include "engines/core/ivf_defaults.h"
#include "engines/core/pq.h"
#include "engines/core/topk.h"
}

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexRefine.h>
#include <faiss/impl/AuxIndexStructures.h>
#include <faiss/impl/DistanceComputer.h>
#include <omp.h>

#include <faiss/impl/IDSelector.h>
#include <faiss/utils/distances.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

using namespace ref_faiss;

const char *const RFI_META_FILE = "ref_faiss_ivfpq.json";
const char *const RFI_FORMAT = "annlab-ref-faiss-ivfpq";
const int RFI_VERSION = 1;

const ann_param_spec rfi_build_params[] = {
    ann_cxx_param_int("nlist", 0, 1 << 24, 0, "inverted lists (0 = round(4 sqrt(n)))"),
    ann_cxx_param_int("pq_bytes", 0, 4096, 0,
                      "PQ sub-quantizers of 8 bits, must divide dim (0 = pq.h default, dim/8)"),
    ann_cxx_param_end("ref-faiss-ivfpq build"),
};
const ann_param_spec rfi_no_params[] = { ann_cxx_param_end("ref-faiss-ivfpq open") };
const ann_param_spec rfi_search_params[] = {
    ann_cxx_param_int("nprobe", 1, 1 << 24, 16, "lists scanned per query (<= nlist)"),
    ann_cxx_param_int("rerank", 1, 1000, 10, "candidates re-ranked exactly, per result (k_factor)"),
    ann_cxx_param_end("ref-faiss-ivfpq search"),
};

struct rfi_engine {
    std::unique_ptr<faiss::Index> index; /* an IndexRefineFlat; NULL when n == 0 */
    const faiss::IndexIVFPQ *ivf = nullptr;
    const faiss::IndexFlat *flat = nullptr;
    ann_metric metric = ANN_METRIC_L2;
    uint64_t n = 0;
    uint32_t dim = 0;
    uint32_t nlist = 0; /* as asked at build: bounds nprobe */
    uint32_t lists = 0; /* as built: min(nlist, n) */
    uint32_t pq_bits = 0;
    /* live updates (see the file comment) */
    mutable std::shared_mutex mu;
    std::unordered_map<uint32_t, std::vector<float>> inserted; /* id -> vector */
    std::unordered_set<uint32_t> deleted;                      /* ids removed (not since inserted) */
    std::atomic<uint64_t> live{ 0 };
};

struct rfi_ctx {
    const rfi_engine *eng = nullptr;
    uint32_t k_max = 0, nprobe = 0, rerank = 0;
    faiss::SearchParametersIVF params;
    std::unique_ptr<faiss::DistanceComputer> dc;
    std::vector<faiss::Index::idx_t> coarse_ids, cand_ids;
    std::vector<float> coarse_dists, cand_dists, heap_dist;
    std::vector<uint32_t> heap_id;
};

int rfi_build_body(const ann_vecsrc *src, const json_t *params, const char *dir, json_t *report)
{
    uint32_t nlist = (uint32_t)ann_param_int(params, rfi_build_params, "nlist");
    bool nlist_auto = nlist == 0;
    uint32_t pq_bytes = (uint32_t)ann_param_int(params, rfi_build_params, "pq_bytes");
    if (nlist_auto)
        nlist = src->n ? ann_ivf_default_nlist(src->n) : 1;
    if (pq_bytes == 0)
        pq_bytes = pq_default_bytes(src->dim);
    if (src->dim % pq_bytes != 0)
        return ann_fail(ANN_EPARAM, "build.pq_bytes: %u does not divide dim %u (FAISS needs it)",
                        pq_bytes, src->dim);
    if (src->n == 1)
        return ann_fail(ANN_EDATA, "ref-faiss-ivfpq: FAISS cannot train PQ on a single vector");
    /* Fewer vectors than lists or than PQ centroids: shrink to what can be
     * trained (n lists; 2^floor(log2 n) centroids per sub-quantizer). */
    uint32_t lists = src->n < nlist ? (uint32_t)src->n : nlist;
    uint32_t pq_bits = 8;
    while (pq_bits > 1 && ((uint64_t)1 << pq_bits) > src->n)
        pq_bits--;
    if (src->n > 0) {
        std::vector<float> data;
        int rc = read_all(src, data);
        if (rc)
            return rc;
        faiss::MetricType mt = metric_of(src->metric);
        auto *quantizer = new faiss::IndexFlat(src->dim, mt);
        auto *ivf = new faiss::IndexIVFPQ(quantizer, src->dim, lists, pq_bytes, pq_bits, mt);
        ivf->own_fields = true;
        faiss::IndexRefineFlat refine(ivf);
        refine.own_fields = true;
        refine.train((faiss::Index::idx_t)src->n, data.data());
        refine.add((faiss::Index::idx_t)src->n, data.data());
        rc = write_index(&refine, dir);
        if (rc)
            return rc;
    }
    json_t *extra = json_pack("{s:i, s:i, s:i, s:i}", "nlist", (int)nlist, "lists", (int)lists,
                              "pq_bytes", (int)pq_bytes, "pq_bits", (int)pq_bits);
    int rc = ann_idxmeta_write(dir, RFI_META_FILE, RFI_FORMAT, RFI_VERSION, src->metric, src->n,
                               src->dim, extra);
    json_decref(extra);
    if (rc)
        return rc;
    json_object_set_new(report, "machine_note", json_string(ref_faiss_machine_note()));
    json_object_set_new(report, "nlist", json_integer(nlist));
    json_object_set_new(report, "lists", json_integer(lists));
    json_object_set_new(report, "pq_bytes", json_integer(pq_bytes));
    return 0;
}

int rfi_build(const ann_vecsrc *src, const json_t *params, const ann_build_ctx *, const char *dir,
              json_t *report)
{
    return ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-ivfpq build",
                         [&]() { return rfi_build_body(src, params, dir, report); });
}

/* What read_index trusted: shapes, parameters and every stored id. */
int rfi_check(const rfi_engine &e, const ann_idxmeta &m, int64_t pq_bytes, const char *dir)
{
    std::string path = std::string(dir) + "/" + INDEX_FILE;
    const char *p = path.c_str();
    const auto *refine = dynamic_cast<const faiss::IndexRefine *>(e.index.get());
    if (!refine || !e.ivf || !e.flat)
        return ann_fail(ANN_ECORRUPT, "%s: not an IndexRefineFlat over an IndexIVFPQ", p);
    if ((uint64_t)refine->ntotal != m.n || (uint64_t)e.ivf->ntotal != m.n ||
        (uint64_t)e.flat->ntotal != m.n || (uint32_t)e.ivf->d != m.dim ||
        (uint32_t)e.flat->d != m.dim)
        return ann_fail(ANN_ECORRUPT, "%s: n or dim disagree with %s", p, RFI_META_FILE);
    if (e.ivf->nlist != e.lists || (int64_t)e.ivf->pq.M != pq_bytes ||
        e.ivf->pq.nbits != e.pq_bits ||
        e.ivf->metric_type != metric_of(m.metric) || e.flat->metric_type != metric_of(m.metric))
        return ann_fail(ANN_ECORRUPT, "%s: nlist, pq_bytes or metric disagree with %s", p,
                        RFI_META_FILE);
    if (!e.ivf->quantizer || (size_t)e.ivf->quantizer->ntotal != e.lists || !e.ivf->invlists ||
        e.ivf->invlists->nlist != e.lists)
        return ann_fail(ANN_ECORRUPT, "%s: coarse quantizer or inverted lists damaged", p);
    uint64_t total = 0;
    for (size_t l = 0; l < e.lists; l++) {
        size_t sz = e.ivf->invlists->list_size(l);
        faiss::InvertedLists::ScopedIds ids(e.ivf->invlists, l);
        for (size_t j = 0; j < sz; j++)
            if (ids[j] < 0 || (uint64_t)ids[j] >= m.n)
                return ann_fail(ANN_ECORRUPT, "%s: list %zu entry %zu: id %lld out of range", p,
                                l, j, (long long)ids[j]);
        total += sz;
    }
    if (total != m.n)
        return ann_fail(ANN_ECORRUPT, "%s: lists hold %llu ids, expected %llu", p,
                        (unsigned long long)total, (unsigned long long)m.n);
    return 0;
}

int rfi_open_body(const char *dir, rfi_engine **out)
{
    ann_idxmeta meta;
    int rc = ann_idxmeta_read(dir, RFI_META_FILE, RFI_FORMAT, RFI_VERSION, &meta);
    int64_t nlist = 0, lists = 0, pq_bytes = 0, pq_bits = 0;
    auto e = std::make_unique<rfi_engine>();
    if (rc)
        goto out;
    if ((rc = ann_idxmeta_int(&meta, "nlist", 1, 1 << 24, &nlist)) != 0 ||
        (rc = ann_idxmeta_int(&meta, "lists", 0, nlist, &lists)) != 0 ||
        (rc = ann_idxmeta_int(&meta, "pq_bytes", 1, meta.dim, &pq_bytes)) != 0 ||
        (rc = ann_idxmeta_int(&meta, "pq_bits", 1, 8, &pq_bits)) != 0)
        goto out;
    e->lists = (uint32_t)lists;
    e->pq_bits = (uint32_t)pq_bits;
    e->metric = meta.metric;
    e->n = meta.n;
    e->dim = meta.dim;
    e->nlist = (uint32_t)nlist;
    e->live = meta.n;
    if (meta.n > 0) {
        rc = read_index(dir, e->index);
        if (rc)
            goto out;
        if (auto *refine = dynamic_cast<const faiss::IndexRefine *>(e->index.get())) {
            e->ivf = dynamic_cast<const faiss::IndexIVFPQ *>(refine->base_index);
            e->flat = dynamic_cast<const faiss::IndexFlat *>(refine->refine_index);
        }
        rc = rfi_check(*e, meta, pq_bytes, dir);
        if (rc)
            goto out;
    }
    *out = e.release();
out:
    ann_idxmeta_fini(&meta);
    return rc;
}

int rfi_open(const char *dir, const json_t *, ann_engine **out, json_t *report)
{
    int rc = 0;
    rfi_engine *e = nullptr;
    rc = ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-ivfpq open",
                       [&]() { return rfi_open_body(dir, &e); });
    if (rc == 0) {
        ann_open_report_set(report, "memory", 0, 0); /* the whole index in RAM */
        *out = reinterpret_cast<ann_engine *>(e);
    }
    return rc;
}

void rfi_close(ann_engine *eng)
{
    delete reinterpret_cast<rfi_engine *>(eng);
}

uint64_t rfi_size(const ann_engine *eng)
{
    return reinterpret_cast<const rfi_engine *>(eng)->live;
}

int rfi_ctx_new_body(const rfi_engine *e, const json_t *sp, uint32_t k_max, rfi_ctx **out)
{
    auto c = std::make_unique<rfi_ctx>();
    c->eng = e;
    c->k_max = k_max ? k_max : 1;
    c->nprobe = (uint32_t)ann_param_int(sp, rfi_search_params, "nprobe");
    c->rerank = (uint32_t)ann_param_int(sp, rfi_search_params, "rerank");
    if (c->nprobe > e->nlist)
        return ann_fail(ANN_EPARAM, "search.nprobe: %u exceeds nlist = %u of this index",
                        c->nprobe, e->nlist);
    if (c->nprobe > e->lists) /* an index of fewer vectors than nlist has n lists */
        c->nprobe = e->lists;
    c->params.nprobe = c->nprobe;
    size_t kb = (size_t)c->k_max * c->rerank;
    c->coarse_ids.resize(c->nprobe);
    c->coarse_dists.resize(c->nprobe);
    c->cand_ids.resize(kb);
    c->cand_dists.resize(kb);
    c->heap_dist.resize(c->k_max);
    c->heap_id.resize(c->k_max);
    if (e->flat)
        c->dc.reset(e->flat->get_distance_computer());
    *out = c.release();
    return 0;
}

int rfi_ctx_new(ann_engine *eng, const json_t *search_params, uint32_t k_max, ann_ctx **out)
{
    int rc = 0;
    rfi_ctx *c = nullptr;
    rc = ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-ivfpq ctx_new", [&]() {
        return rfi_ctx_new_body(reinterpret_cast<const rfi_engine *>(eng), search_params, k_max,
                                &c);
    });
    if (rc == 0)
        *out = reinterpret_cast<ann_ctx *>(c);
    return rc;
}

void rfi_ctx_free(ann_ctx *ctx)
{
    delete reinterpret_cast<rfi_ctx *>(ctx);
}

int rfi_search_body(rfi_ctx *c, const float *query, uint32_t k, uint32_t *ids, float *dists,
                    ann_stats *stats)
{
    const rfi_engine *e = c->eng;
    if (!e->index || k == 0)
        return 0;
    omp_set_num_threads(1);
    std::shared_lock<std::shared_mutex> lock(e->mu);
    faiss::Index::idx_t kb = (faiss::Index::idx_t)k * c->rerank;
    /* IndexIVF::search in two steps, so the PQ work is counted per query
     * (FAISS's indexIVF_stats is one global shared by all threads). */
    e->ivf->quantizer->search(1, query, c->nprobe, c->coarse_dists.data(), c->coarse_ids.data());
    faiss::IndexIVFStats ivf_stats;
    e->ivf->search_preassigned(1, query, kb, c->coarse_ids.data(), c->coarse_dists.data(),
                               c->cand_dists.data(), c->cand_ids.data(), false, &c->params,
                               &ivf_stats);
    stats->code_dists += ivf_stats.ndis;
    c->dc->set_query(query);
    ann_topk top;
    ann_topk_init(&top, c->heap_dist.data(), c->heap_id.data(), k);
    for (faiss::Index::idx_t j = 0; j < kb; j++) {
        faiss::Index::idx_t id = c->cand_ids[j];
        if (id < 0)
            continue; /* fewer candidates than asked (small lists) */
        float d;
        auto ins = e->inserted.empty() ? e->inserted.end() : e->inserted.find((uint32_t)id);
        if (ins == e->inserted.end())
            d = to_ann_distance(e->metric, (*c->dc)(id));
        else if (e->metric == ANN_METRIC_L2)
            d = faiss::fvec_L2sqr(query, ins->second.data(), e->dim);
        else
            d = to_ann_distance(e->metric,
                                faiss::fvec_inner_product(query, ins->second.data(), e->dim));
        ann_topk_push(&top, d, (uint32_t)id);
        stats->full_dists++;
    }
    return (int)ann_topk_sorted(&top, ids, dists);
}

int rfi_search(ann_ctx *ctx, const float *query, uint32_t k, uint32_t *ids, float *dists,
               ann_stats *stats)
{
    rfi_ctx *c = reinterpret_cast<rfi_ctx *>(ctx);
    uint64_t t0 = thread_cpu_ns();
    if (k > c->k_max)
        k = c->k_max;
    int rc = ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-ivfpq search",
                           [&]() { return rfi_search_body(c, query, k, ids, dists, stats); });
    stats->cpu_ns += thread_cpu_ns() - t0;
    return rc;
}

/* Whether id is in the index (under the lock). */
bool rfi_has(const rfi_engine *e, uint32_t id)
{
    return e->inserted.count(id) || (id < e->n && !e->deleted.count(id));
}

int rfi_insert_body(rfi_engine *e, uint32_t id, const float *vec, uint32_t dim)
{
    const char *name = "ref-faiss-ivfpq";
    if (dim != e->dim)
        return ann_fail(ANN_EDATA, "%s: insert id %u: vector of dimension %u, the index has %u",
                        name, id, dim, e->dim);
    for (uint32_t j = 0; j < dim; j++)
        if (!std::isfinite(vec[j]))
            return ann_fail(ANN_EDATA, "%s: insert id %u: component %u is %s", name, id, j,
                            std::isnan(vec[j]) ? "NaN" : "infinite");
    if (!e->index)
        return ann_fail(ANN_EUNSUPPORTED, "%s: insert: the index is empty (nothing trained to "
                        "encode with); updates need a built index", name);
    std::unique_lock<std::shared_mutex> lock(e->mu);
    if (rfi_has(e, id))
        return ann_fail(ANN_EDATA, "%s: insert id %u: the id exists", name, id);
    std::vector<float> v(vec, vec + dim);
    faiss::Index::idx_t fid = id;
    const_cast<faiss::IndexIVFPQ *>(e->ivf)->add_with_ids(1, v.data(), &fid);
    e->inserted.emplace(id, std::move(v));
    e->deleted.erase(id);
    e->live++;
    return 0;
}

int rfi_insert(ann_engine *eng, uint32_t id, const float *vec, uint32_t dim)
{
    return ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-ivfpq insert", [&]() {
        return rfi_insert_body(reinterpret_cast<rfi_engine *>(eng), id, vec, dim);
    });
}

int rfi_remove_body(rfi_engine *e, uint32_t id)
{
    const char *name = "ref-faiss-ivfpq";
    std::unique_lock<std::shared_mutex> lock(e->mu);
    if (!rfi_has(e, id)) {
        if (e->deleted.count(id))
            return ann_fail(ANN_EDATA, "%s: remove id %u: already deleted", name, id);
        return ann_fail(ANN_ENOTFOUND, "%s: remove id %u: no such id", name, id);
    }
    faiss::Index::idx_t fid = id;
    faiss::IDSelectorBatch sel(1, &fid);
    const_cast<faiss::IndexIVFPQ *>(e->ivf)->remove_ids(sel);
    e->inserted.erase(id);
    e->deleted.insert(id);
    e->live--;
    return 0;
}

int rfi_remove(ann_engine *eng, uint32_t id)
{
    return ann_cxx_guard(ANN_EINTERNAL, "ref-faiss-ivfpq remove", [&]() {
        return rfi_remove_body(reinterpret_cast<rfi_engine *>(eng), id);
    });
}

} /* namespace */

extern "C" const ann_engine_ops ref_faiss_ivfpq_engine_ops = {
    .name = "ref-faiss-ivfpq",
    .description = "reference peer: FAISS IndexIVFPQ + IndexRefineFlat in memory (Debian libfaiss)",
    .title = "IVF-PQ in memory (FAISS)",
    .reads_unit = nullptr, /* in memory: no reads */
    .build_params = rfi_build_params,
    .open_params = rfi_no_params,
    .search_params = rfi_search_params,
    .effort_param = "nprobe",
    .build = rfi_build,
    .open = rfi_open,
    .close = rfi_close,
    .size = rfi_size,
    .ctx_new = rfi_ctx_new,
    .ctx_free = rfi_ctx_free,
    .search = rfi_search,
    .insert = rfi_insert,
    .remove = rfi_remove,
    .merge = nullptr,
    .machine_note = ref_faiss_machine_note,
    .format_version = RFI_VERSION,
    .imports_graph = 0,
};
